"""Protocol v1 messages: escalated events (MessagePack, crop as raw bytes) and verdicts (JSON).

Decoders never raise anything but `ProtocolError`, whose `reason` says what was wrong and whose `code` names
the limit or rule that refused it, so a receiver can log it, count it by kind and carry on. Unknown fields are
ignored (a newer sender may add fields within v1); a different schema version is refused.

Limits a receiver enforces before anything else touches the message: the message size (MAX_EVENT_BYTES,
MAX_VERDICT_BYTES), MessagePack container sizes and nesting, every field's type, range and length, and the
crop's real pixel count read from its JPEG frame header (a small file can declare a huge image; nothing
decodes a crop over MAX_CROP_PIXELS or one whose header disagrees with `crop_size`).

The control messages (load report, remote config, device state) are in shared.control, the base every message
shares and the refusal in shared.wire; all their names are importable from here as well.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import msgpack
from pydantic import BeforeValidator, ConfigDict, Field, field_validator

from .control import (
    MAX_CONFIG_BYTES,
    MAX_LOAD_BYTES,
    MAX_STATE_BYTES,
    AppliedConfig,
    BudgetState,
    CameraState,
    CloudSeen,
    ConfigRefusal,
    DeviceState,
    LoadReport,
    ModelRef,
    ModelRefusal,
    RemoteConfig,
    RemoteConfigError,
    RunningModel,
    decode_device_state,
    decode_load_report,
    decode_remote_config,
    encode_device_state,
    encode_load_report,
    encode_remote_config,
)
from .embedding import Embedding
from .feedbackmark import FeedbackMark
from .ids import CAMERA_ID_RE, DEVICE_ID_RE
from .policycell import PolicyInputs
from .text import plain_or_as_is
from .wire import REJECT_CODES, FreeText, Message, ProtocolError, short, validated, validation_reason

SCHEMA_VERSION = 1
MAX_EVENT_BYTES = 256 * 1024
MAX_VERDICT_BYTES = 16 * 1024
MAX_CROP_PIXELS = 4096 * 4096
MAX_DETECTIONS = 64
MAX_CLASSES = 10
MAX_ZONES = 16
MAX_CONTAINERS = 256  # arrays and maps in one event's MessagePack (a full one: about 150)
CROP_MARGIN = 0.15  # a device cuts a track's crop around its box grown by this share of its size on each side
PHASH_ALGS = ("dct64",)
DEFAULT_MAX_DISTANCE = 8  # bits of the 64-bit hash a reuse rule reaches unless it says otherwise (shared.reuse)
# cosine similarity of appearance embeddings (shared.embedding) a reuse rule needs unless it says otherwise
DEFAULT_MIN_SIMILARITY = 0.97
VERDICTS = ("alert", "benign", "unknown")

Label = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_ .'-]+$")]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
ShortText = Annotated[str, BeforeValidator(plain_or_as_is), Field(max_length=256)]
ZoneName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")]  # as the edge's zone names
MAX_FACTS = 12


class Detection(Message):
    label: Label
    score: Unit
    box: tuple[Unit, Unit, Unit, Unit] = Field(description="x1, y1, x2, y2 normalised to the frame, 0..1")


class ClassScore(Message):
    label: Annotated[str, BeforeValidator(plain_or_as_is), Field(min_length=1, max_length=128)]
    score: Unit


class Event(Message):
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
    # Optional, what the device knows of where and how long (older devices send none; the cloud's verdict
    # must hold without them): zones the object stood in, its longest stay, its way across the picture,
    # and the device's local wall-clock time of the capture.
    zones: Annotated[list[ZoneName], Field(max_length=MAX_ZONES)] = []
    dwell_s: Annotated[float, Field(ge=0.0, le=30 * 86400.0, allow_inf_nan=False)] | None = None
    direction: Literal["left", "right", "towards the camera", "away from the camera", "still"] | None = None
    local_time: Annotated[str, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")] | None = None
    # where the crop was cut, x1, y1, x2, y2 normalised to the frame (None: a sender before it was said)
    crop_box: tuple[Unit, Unit, Unit, Unit] | None = None
    # Optional: the crop's appearance embedding (shared.embedding), a second reuse key (None: reuse by hash only)
    embedding: Embedding | None = Field(None, repr=False)
    embedding_alg: Literal["mnv2avg256"] = "mnv2avg256"

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    @field_validator("crop")
    @classmethod
    def _jpeg(cls, value: bytes) -> bytes:
        if len(value) < 4 or value[:3] != b"\xff\xd8\xff":
            raise ValueError("crop must be JPEG bytes (starting FF D8 FF)")
        return value


class ReuseRule(Message):
    """Which future events a verdict answers: same scope key, label, prompt version, and a crop whose
    perceptual hash lies within `max_distance` bits or (when both carry one) whose appearance embedding has
    a cosine similarity of at least `min_similarity`, until `ttl_s` after the verdict was made."""

    scope: Literal["camera", "site"] = "camera"
    device: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)]
    camera: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
    site: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)] | None = None
    label: Label
    phash: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    phash_alg: Literal["dct64"] = "dct64"
    max_distance: Annotated[int, Field(ge=0, le=32)] = DEFAULT_MAX_DISTANCE
    prompt_version: Annotated[str, Field(max_length=32)]
    ttl_s: Annotated[int, Field(ge=0, le=30 * 86400)] = 3600
    # Optional (older clouds send none: the rule reaches by hash only)
    embedding: Embedding | None = Field(None, repr=False)
    embedding_alg: Literal["mnv2avg256"] = "mnv2avg256"
    min_similarity: Annotated[float, Field(ge=0.5, le=1.0)] = DEFAULT_MIN_SIMILARITY
    policy_inputs: PolicyInputs | None = None  # optional: the ranges of the facts a policy read (shared.policycell)
    operator: bool = False  # optional: the rule of an operator's verdict, which reuse prefers (shared.reuse)
    # optional: whether the cloud's own closer look saw a person in the rule's crop (None: it did not look); a
    # rule whose crop the cloud found person-free never answers another device's person (shared.reuse.agrees)
    person_seen: bool | None = None


class ReusedBy(Message):
    """Which key of the cached verdict's rule reached this crop, and how near it was: the hash (`distance`
    bits, `threshold` its max_distance) or the embedding (`similarity`, `threshold` its min_similarity)."""

    key: Literal["hash", "embedding"]
    threshold: Annotated[float, Field(ge=0.0, le=64.0)]
    distance: Annotated[int, Field(ge=0, le=64)]
    similarity: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None


Millis = Annotated[float, Field(ge=0.0, le=86_400_000.0, allow_inf_nan=False)]


class Timings(Message):
    queue_ms: Millis = 0.0
    analyze_ms: Millis = 0.0
    total_ms: Millis = 0.0


CORRECTED_KINDS = ("person", "colour", "object", "zone", "time", "dwell", "direction")
CorrectedKind = Literal["person", "colour", "object", "zone", "time", "dwell", "direction"]


class Verdict(Message):
    """The cloud's answer to one event, readable by any MQTT subscriber."""

    schema_version: Literal[1] = Field(SCHEMA_VERSION, alias="v")
    event_id: str = Field(max_length=36, pattern=r"^[0-9a-f-]{1,36}$")
    device: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)]
    camera: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
    label: Label
    verdict: Literal["alert", "benign", "unknown"]
    confidence: Unit
    description: Annotated[str, Field(max_length=300)]
    model: Annotated[str, Field(max_length=128)]
    source: Literal["llm", "cloud_cache", "fallback"] = "llm"
    reused_from: str | None = Field(None, max_length=36, pattern=r"^[0-9a-f-]{1,36}$")
    created_ms: Annotated[int, Field(ge=0, lt=1 << 53)]
    timings: Timings = Timings()
    cache: ReuseRule | None = None
    # Optional (older clouds send none): the facts the cloud's closer look gave the model, the model's own
    # verdict, and, when the evidence overruled it (cloud.analysis.check), why.
    facts: Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=MAX_FACTS)] = []
    model_verdict: Literal["alert", "benign", "unknown"] | None = None
    checked: Annotated[str, Field(max_length=200)] | None = None
    # optional: what the check found in the model's description beyond the facts and replaced by their words
    corrected: Annotated[list[CorrectedKind], Field(max_length=len(CORRECTED_KINDS))] = []
    reused_by: ReusedBy | None = None  # optional: for a reused verdict, which reuse key matched
    # Optional (older clouds send none): what decided (the compiled policy, the model, or the check table over
    # the model), the policy in its compiled form, and the clause that decided
    decided_by: Literal["policy", "model", "check", "operator"] | None = None
    policy: Annotated[str, Field(max_length=300)] | None = None
    clause: Annotated[str, Field(max_length=200)] | None = None
    feedback: FeedbackMark | None = None  # optional: set when an operator confirmed or corrected the verdict
    # Optional (older clouds send none; older receivers ignore them): with several model back-ends, why this one
    # answered (cloud.routing.REASONS); `provisional`: a later verdict for the same event id replaces this one
    # (a first answer before the model spoke, or the small model's while the large one was busy); on the verdict
    # that replaced a model's provisional one, `provisional_was` is what that one said.
    routed_by: Annotated[str, Field(max_length=32)] | None = None
    provisional: bool = False
    provisional_was: Literal["alert", "benign", "unknown"] | None = None

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


def crop_region(
    box: tuple[float, float, float, float], margin: float = CROP_MARGIN
) -> tuple[float, float, float, float]:
    """Where, in normalised frame coordinates, a crop around `box` grown by `margin` lies (clipped to the frame)."""
    x1, y1, x2, y2 = box
    mx, my = (x2 - x1) * margin, (y2 - y1) * margin
    return max(0.0, x1 - mx), max(0.0, y1 - my), min(1.0, x2 + mx), min(1.0, y2 + my)


def encode_event(event: Event) -> bytes:
    unset = {"embedding", "embedding_alg"} if event.embedding is None else None  # as a device before them
    data = msgpack.packb(event.model_dump(by_alias=True, exclude=unset), use_bin_type=True)
    if len(data) > MAX_EVENT_BYTES:
        raise ProtocolError(f"event is {len(data)} bytes, over the {MAX_EVENT_BYTES}-byte limit; send a smaller crop")
    return data


_SOF_MARKERS = frozenset((0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF))


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's frame header, without decoding it; None when there is no readable
    header before the image data. Reads at most the marker segments, never the entropy-coded data."""
    i, n = 2, len(data)
    if n < 4 or data[:2] != b"\xff\xd8":
        return None
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # standalone markers carry no length
            i += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image, start of scan: no frame header came first
            return None
        length = (data[i + 2] << 8) | data[i + 3]
        if length < 2:
            return None
        if marker in _SOF_MARKERS:
            if i + 9 > n or length < 7:
                return None
            height = (data[i + 5] << 8) | data[i + 6]
            width = (data[i + 7] << 8) | data[i + 8]
            return width, height
        i += 2 + length
    return None


def _check_crop(event: Event) -> None:
    w, h = event.crop_size
    if w * h > MAX_CROP_PIXELS:
        raise ProtocolError(f"crop of {w}x{h} pixels is over the {MAX_CROP_PIXELS}-pixel limit", "image")
    real = jpeg_size(event.crop)
    if real is None:
        raise ProtocolError("crop is not a complete JPEG: no frame header before the image data", "image")
    rw, rh = real
    if rw == 0 or rh == 0:
        raise ProtocolError(f"crop JPEG declares an empty {rw}x{rh} image", "image")
    if rw * rh > MAX_CROP_PIXELS:
        raise ProtocolError(f"crop JPEG is {rw}x{rh} pixels, over the {MAX_CROP_PIXELS}-pixel limit", "image")
    if (w, h) != (0, 0) and (w, h) != (rw, rh):
        raise ProtocolError(f"crop_size says {w}x{h} but the JPEG is {rw}x{rh}", "image")


class _ContainerBudget:
    """Counts the arrays and maps one event's MessagePack holds (a full event: ~150); past MAX_CONTAINERS the
    unpacking stops (ValueError), so a crafted payload of 200,000 nested maps costs microseconds, not 30 ms."""

    def __init__(self) -> None:
        self.left = MAX_CONTAINERS

    def spend(self, value: Any) -> Any:
        self.left -= 1
        if self.left < 0:
            raise ValueError(f"more than {MAX_CONTAINERS} arrays and maps")
        return value


def decode_event(data: bytes) -> Event:
    if len(data) > MAX_EVENT_BYTES:
        raise ProtocolError(f"event is {len(data)} bytes, over the {MAX_EVENT_BYTES}-byte limit", "too_large")
    budget = _ContainerBudget()
    try:  # no array or map longer, and no more of them, than an event can have: a "map bomb" stops early
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True, max_bin_len=MAX_EVENT_BYTES,
                              max_str_len=MAX_EVENT_BYTES, max_array_len=MAX_DETECTIONS, max_map_len=64,
                              list_hook=budget.spend, object_hook=budget.spend)
    except Exception as exc:  # msgpack raises many types for bad input
        raise ProtocolError(f"event is not valid MessagePack: {type(exc).__name__}", "encoding") from None
    if not isinstance(obj, dict):
        raise ProtocolError("event must be a MessagePack map", "encoding")
    version = obj.get("v")
    if type(version) is not int or version != SCHEMA_VERSION:  # True == 1 and 1.0 == 1 must not pass
        raise ProtocolError(f"event schema version {short(version)} is not supported (this receiver speaks "
                            f"v{SCHEMA_VERSION})", "schema_version")
    event = validated(Event, obj, "event")
    _check_crop(event)
    return event


def encode_verdict(verdict: Verdict) -> bytes:
    data = verdict.__pydantic_serializer__.to_json(verdict, by_alias=True)  # compact JSON, in one step
    if len(data) > MAX_VERDICT_BYTES:
        raise ProtocolError(f"verdict is {len(data)} bytes, over the {MAX_VERDICT_BYTES}-byte limit")
    return data


def decode_verdict(data: bytes) -> Verdict:
    if len(data) > MAX_VERDICT_BYTES:
        raise ProtocolError(f"verdict is {len(data)} bytes, over the {MAX_VERDICT_BYTES}-byte limit", "too_large")
    try:
        obj = json.loads(data)
    except RecursionError:
        raise ProtocolError("verdict is not valid JSON: nested too deeply", "encoding") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"verdict is not valid JSON: {str(exc)[:120]}", "encoding") from None
    if not isinstance(obj, dict):
        raise ProtocolError("verdict must be a JSON object", "encoding")
    version = obj.get("v")
    if type(version) is not int or version != SCHEMA_VERSION:  # True == 1 and 1.0 == 1 must not pass
        raise ProtocolError(f"verdict schema version {short(version)} is not supported", "schema_version")
    return validated(Verdict, obj, "verdict")


# the protocol's public names: its own, the control messages (shared.control) and the base (shared.wire)
__all__ = [
    "AppliedConfig", "BudgetState", "CORRECTED_KINDS", "CROP_MARGIN", "CameraState", "ClassScore", "CloudSeen",
    "ConfigRefusal", "CorrectedKind", "DEFAULT_MAX_DISTANCE", "DEFAULT_MIN_SIMILARITY", "Detection", "DeviceState",
    "Event", "FreeText", "Label", "LoadReport", "MAX_CLASSES", "MAX_CONFIG_BYTES", "MAX_CROP_PIXELS",
    "MAX_DETECTIONS", "MAX_EVENT_BYTES", "MAX_FACTS", "MAX_LOAD_BYTES", "MAX_STATE_BYTES", "MAX_VERDICT_BYTES",
    "MAX_ZONES", "Message", "Millis", "ModelRef", "ModelRefusal", "PHASH_ALGS", "ProtocolError", "REJECT_CODES",
    "RemoteConfig", "RemoteConfigError", "ReuseRule", "ReusedBy", "RunningModel", "SCHEMA_VERSION", "ShortText",
    "Timings", "Unit", "VERDICTS", "Verdict", "ZoneName", "crop_region", "decode_device_state", "decode_event",
    "decode_load_report", "decode_remote_config", "decode_verdict", "encode_device_state", "encode_event",
    "encode_load_report", "encode_remote_config", "encode_verdict", "jpeg_size", "validation_reason",
]
