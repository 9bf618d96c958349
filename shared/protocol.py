"""Protocol v1 messages: escalated events (MessagePack, crop as raw bytes) and verdicts (JSON).

Decoders never raise anything but `ProtocolError`, whose `reason` says what was wrong, so a receiver can
log it, count it and carry on. Unknown fields are ignored (a newer sender may add fields within v1);
a different schema version is refused.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

import msgpack
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .ids import CAMERA_ID_RE, DEVICE_ID_RE

SCHEMA_VERSION = 1
MAX_EVENT_BYTES = 256 * 1024
MAX_VERDICT_BYTES = 16 * 1024
MAX_CROP_PIXELS = 4096 * 4096
MAX_DETECTIONS = 64
MAX_CLASSES = 10
PHASH_ALGS = ("dct64",)
VERDICTS = ("alert", "benign", "unknown")

Label = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_ .'-]+$")]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
ShortText = Annotated[str, Field(max_length=256)]


class ProtocolError(ValueError):
    """A message that cannot be accepted, with the reason a person can act on."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Detection(_Message):
    label: Label
    score: Unit
    box: tuple[Unit, Unit, Unit, Unit] = Field(description="x1, y1, x2, y2 normalised to the frame, 0..1")


class ClassScore(_Message):
    label: Annotated[str, Field(min_length=1, max_length=128)]
    score: Unit


class Event(_Message):
    """One escalated track: what the device saw and the crop it is asking about."""

    schema_version: Literal[1] = Field(SCHEMA_VERSION, alias="v")
    event_id: Annotated[str, Field(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")]
    device: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)]
    camera: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
    site: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)] | None = None
    captured_ms: Annotated[int, Field(ge=0, lt=1 << 53)]
    label: Label
    score: Unit
    uncertain: bool = False
    track_id: Annotated[int, Field(ge=0, lt=1 << 53)]
    detections: Annotated[list[Detection], Field(max_length=MAX_DETECTIONS)]
    classes: Annotated[list[ClassScore], Field(max_length=MAX_CLASSES)] = []
    phash: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    phash_alg: Literal["dct64"] = "dct64"
    reason: ShortText
    crop: bytes = Field(repr=False)
    crop_size: tuple[Annotated[int, Field(ge=0, le=65535)], Annotated[int, Field(ge=0, le=65535)]] = (0, 0)

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    @field_validator("crop")
    @classmethod
    def _jpeg(cls, value: bytes) -> bytes:
        if len(value) < 4 or value[:3] != b"\xff\xd8\xff":
            raise ValueError("crop must be JPEG bytes (starting FF D8 FF)")
        return value


class ReuseRule(_Message):
    """Which future events a verdict answers: same scope key, label, prompt version, and a crop whose
    perceptual hash lies within `max_distance` bits, until `ttl_s` after the verdict was made."""

    scope: Literal["camera", "site"] = "camera"
    device: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)]
    camera: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
    site: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)] | None = None
    label: Label
    phash: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    phash_alg: Literal["dct64"] = "dct64"
    max_distance: Annotated[int, Field(ge=0, le=32)] = 10
    prompt_version: Annotated[str, Field(max_length=32)]
    ttl_s: Annotated[int, Field(ge=0, le=30 * 86400)] = 3600


class Timings(_Message):
    queue_ms: float = 0.0
    analyze_ms: float = 0.0
    total_ms: float = 0.0


class Verdict(_Message):
    """The cloud's answer to one event, readable by any MQTT subscriber."""

    schema_version: Literal[1] = Field(SCHEMA_VERSION, alias="v")
    event_id: str = Field(max_length=36)
    device: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)]
    camera: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
    label: Label
    verdict: Literal["alert", "benign", "unknown"]
    confidence: Unit
    description: Annotated[str, Field(max_length=300)]
    model: Annotated[str, Field(max_length=128)]
    source: Literal["llm", "cloud_cache", "fallback"] = "llm"
    reused_from: str | None = Field(None, max_length=36)
    created_ms: Annotated[int, Field(ge=0)]
    timings: Timings = Timings()
    cache: ReuseRule | None = None

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


def _reason(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "message"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def encode_event(event: Event) -> bytes:
    data = msgpack.packb(event.model_dump(by_alias=True), use_bin_type=True)
    if len(data) > MAX_EVENT_BYTES:
        raise ProtocolError(f"event is {len(data)} bytes, over the {MAX_EVENT_BYTES}-byte limit; send a smaller crop")
    return data


def decode_event(data: bytes) -> Event:
    if len(data) > MAX_EVENT_BYTES:
        raise ProtocolError(f"event is {len(data)} bytes, over the {MAX_EVENT_BYTES}-byte limit")
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True, max_bin_len=MAX_EVENT_BYTES,
                              max_str_len=MAX_EVENT_BYTES, max_array_len=4096, max_map_len=256)
    except Exception as exc:  # msgpack raises many types for bad input
        raise ProtocolError(f"event is not valid MessagePack: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("event must be a MessagePack map")
    version = obj.get("v")
    if version != SCHEMA_VERSION:
        raise ProtocolError(f"event schema version {version!r} is not supported (this receiver speaks v{SCHEMA_VERSION})")
    try:
        event = Event.model_validate(obj)
    except ValidationError as exc:
        raise ProtocolError(f"invalid event: {_reason(exc)}") from None
    w, h = event.crop_size
    if w * h > MAX_CROP_PIXELS:
        raise ProtocolError(f"crop of {w}x{h} pixels is over the {MAX_CROP_PIXELS}-pixel limit")
    return event


def encode_verdict(verdict: Verdict) -> bytes:
    data = json.dumps(verdict.model_dump(by_alias=True, mode="json"), separators=(",", ":")).encode()
    if len(data) > MAX_VERDICT_BYTES:
        raise ProtocolError(f"verdict is {len(data)} bytes, over the {MAX_VERDICT_BYTES}-byte limit")
    return data


def decode_verdict(data: bytes) -> Verdict:
    if len(data) > MAX_VERDICT_BYTES:
        raise ProtocolError(f"verdict is {len(data)} bytes, over the {MAX_VERDICT_BYTES}-byte limit")
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"verdict is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("verdict must be a JSON object")
    if obj.get("v") != SCHEMA_VERSION:
        raise ProtocolError(f"verdict schema version {obj.get('v')!r} is not supported")
    try:
        return Verdict.model_validate(obj)
    except ValidationError as exc:
        raise ProtocolError(f"invalid verdict: {_reason(exc)}") from None
