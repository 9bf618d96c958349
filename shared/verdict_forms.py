"""The forms one verdict travels in: who reads which.

    <prefix>/v1/<device>/verdicts   readable JSON for people and their tools (home automation, alerting,
                                    `mosquitto_sub`): the verdict without the appearance embedding
    <prefix>/v1/<device>/answers    compact MessagePack for the device alone: the whole verdict, its reuse rule's
                                    embedding as raw bytes, which the device's cache matches look-alikes by

The JSON form keeps the rest of the reuse rule, so a device that still reads `verdicts` (one older than the
`answers` topic) reuses by hash alone. Decoders raise nothing but `ProtocolError`, as all of shared.protocol's.

`Forms` encodes once: the verdict dumped to a plain map a single time (pydantic's one pass over the model),
packed from it for the device and, where someone reads JSON, serialised from it for the subscribers (pydantic's
own JSON writer over the plain map: the same bytes as `encode_public_verdict`, at a quarter of its cost).
`event_summary` is an event as a person reads it: no crop and no embedding bytes.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pydantic_core
from pydantic import ValidationError

from .protocol import MAX_VERDICT_BYTES, SCHEMA_VERSION, Event, ProtocolError, Verdict, validation_reason

_NOT_FOR_PEOPLE = {"cache": {"embedding", "embedding_alg"}}


def encode_public_verdict(verdict: Verdict) -> bytes:
    """The subscribers' JSON: as `encode_verdict`, without the reuse rule's embedding (344 base64 characters
    no subscriber has a use for). `decode_verdict` reads it."""
    exclude = _NOT_FOR_PEOPLE if verdict.cache is not None else None
    return verdict.model_dump_json(by_alias=True, exclude=exclude).encode()


def encode_device_verdict(verdict: Verdict) -> bytes:
    """The device's MessagePack: every field, the embedding as 256 raw bytes."""
    data = msgpack.packb(verdict.model_dump(by_alias=True), use_bin_type=True)
    if len(data) > MAX_VERDICT_BYTES:
        raise ProtocolError(f"verdict is {len(data)} bytes, over the {MAX_VERDICT_BYTES}-byte limit")
    return data


class Forms:
    """One verdict's two forms from one encoding: `device()` the bytes `encode_device_verdict` makes, `public()`
    those `encode_public_verdict` makes, both from one dump of the verdict, taken when the first is asked."""

    __slots__ = ("verdict", "_map")

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self._map: dict[str, Any] | None = None

    def _dumped(self) -> dict[str, Any]:
        if self._map is None:
            self._map = self.verdict.model_dump(by_alias=True)
        return self._map

    def device(self) -> bytes:
        data = msgpack.packb(self._dumped(), use_bin_type=True)
        if len(data) > MAX_VERDICT_BYTES:
            raise ProtocolError(f"verdict is {len(data)} bytes, over the {MAX_VERDICT_BYTES}-byte limit")
        return data

    def public(self) -> bytes:
        obj = self._dumped()
        rule = obj.get("cache")
        if rule is not None:
            obj = {**obj, "cache": {k: v for k, v in rule.items() if k not in _NOT_FOR_PEOPLE["cache"]}}
        return pydantic_core.to_json(obj)


def decode_device_verdict(data: bytes) -> Verdict:
    if len(data) > MAX_VERDICT_BYTES:
        raise ProtocolError(f"verdict is {len(data)} bytes, over the {MAX_VERDICT_BYTES}-byte limit", "too_large")
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True, max_bin_len=MAX_VERDICT_BYTES,
                              max_str_len=MAX_VERDICT_BYTES, max_array_len=256, max_map_len=64)
    except Exception as exc:  # msgpack raises many types for bad input
        raise ProtocolError(f"verdict is not valid MessagePack: {type(exc).__name__}", "encoding") from None
    if not isinstance(obj, dict):
        raise ProtocolError("verdict must be a MessagePack map", "encoding")
    version = obj.get("v")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise ProtocolError(f"verdict schema version {str(version)[:24]!r} is not supported", "schema_version")
    try:
        return Verdict.model_validate(obj)
    except ValidationError as exc:
        raise ProtocolError(f"invalid verdict: {validation_reason(exc)}") from None
    except RecursionError:
        raise ProtocolError("invalid verdict: values nested too deeply") from None


def event_summary(event: Event) -> dict[str, Any]:
    """An escalated event as JSON-ready values a person reads: what, where, when and why, without the crop's
    and the embedding's bytes (their sizes instead)."""
    out = event.model_dump(mode="json", exclude={"crop", "embedding", "embedding_alg", "detections", "phash_alg",
                                                 "schema_version"})
    out["detections"] = [{"label": d.label, "score": round(d.score, 3)} for d in event.detections]
    out["crop_bytes"] = len(event.crop)
    return out
