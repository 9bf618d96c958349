"""Protocol v1 messages: escalated events (MessagePack, crop as raw bytes) and verdicts (JSON).

Decoders never raise anything but `ProtocolError`, whose `reason` says what was wrong and whose `code` names
the limit or rule that refused it, so a receiver can log it, count it by kind and carry on. Unknown fields are
ignored (a newer sender may add fields within v1); a different schema version is refused.

Limits a receiver enforces before anything else touches the message: the message size (MAX_EVENT_BYTES,
MAX_VERDICT_BYTES), MessagePack container sizes and nesting, every field's type, range and length, and the
crop's real pixel count read from its JPEG frame header (a small file can declare a huge image; nothing
decodes a crop over MAX_CROP_PIXELS or one whose header disagrees with `crop_size`).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

import msgpack
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from .embedding import Embedding
from .feedbackmark import FeedbackMark
from .ids import CAMERA_ID_RE, DEVICE_ID_RE
from .policycell import PolicyInputs
from .text import plain_or_as_is

SCHEMA_VERSION = 1
MAX_EVENT_BYTES = 256 * 1024
MAX_VERDICT_BYTES = 16 * 1024
MAX_CROP_PIXELS = 4096 * 4096
MAX_DETECTIONS = 64
MAX_CLASSES = 10
MAX_ZONES = 16
CROP_MARGIN = 0.15  # a device cuts a track's crop around its box grown by this share of its size on each side
PHASH_ALGS = ("dct64",)
DEFAULT_MAX_DISTANCE = 8  # bits of the 64-bit hash a reuse rule reaches unless it says otherwise (shared.reuse)
# cosine similarity of appearance embeddings (shared.embedding) a reuse rule needs unless it says otherwise
DEFAULT_MIN_SIMILARITY = 0.97
VERDICTS = ("alert", "benign", "unknown")

Label = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_ .'-]+$")]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
# free text a sender writes: made plain (shared.text: NFKC, no zero-width or bidi controls, no NUL) on decoding
FreeText = Annotated[str, BeforeValidator(plain_or_as_is)]
ShortText = Annotated[str, BeforeValidator(plain_or_as_is), Field(max_length=256)]
ZoneName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")]  # as the edge's zone names
MAX_FACTS = 12

REJECT_CODES = ("too_large", "encoding", "schema_version", "invalid", "image", "site")


class ProtocolError(ValueError):
    """A message that cannot be accepted, with the reason a person can act on and a short `code` (one of
    REJECT_CODES) to count rejections by."""

    def __init__(self, reason: str, code: str = "invalid"):
        super().__init__(reason)
        self.reason = reason
        self.code = code


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Detection(_Message):
    label: Label
    score: Unit
    box: tuple[Unit, Unit, Unit, Unit] = Field(description="x1, y1, x2, y2 normalised to the frame, 0..1")


class ClassScore(_Message):
    label: Annotated[str, BeforeValidator(plain_or_as_is), Field(min_length=1, max_length=128)]
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


class ReuseRule(_Message):
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


class ReusedBy(_Message):
    """Which key of the cached verdict's rule reached this crop, and how near it was: the hash (`distance`
    bits, `threshold` its max_distance) or the embedding (`similarity`, `threshold` its min_similarity)."""

    key: Literal["hash", "embedding"]
    threshold: Annotated[float, Field(ge=0.0, le=64.0)]
    distance: Annotated[int, Field(ge=0, le=64)]
    similarity: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None


Millis = Annotated[float, Field(ge=0.0, le=86_400_000.0, allow_inf_nan=False)]


class Timings(_Message):
    queue_ms: Millis = 0.0
    analyze_ms: Millis = 0.0
    total_ms: Millis = 0.0


CORRECTED_KINDS = ("person", "colour", "object", "zone", "time", "dwell", "direction")
CorrectedKind = Literal["person", "colour", "object", "zone", "time", "dwell", "direction"]


class Verdict(_Message):
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

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def _reason(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "message"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def crop_region(box: tuple[float, float, float, float], margin: float = CROP_MARGIN) -> tuple[float, float, float, float]:
    """Where, in normalised frame coordinates, a crop around `box` grown by `margin` lies (clipped to the frame)."""
    x1, y1, x2, y2 = box
    mx, my = (x2 - x1) * margin, (y2 - y1) * margin
    return max(0.0, x1 - mx), max(0.0, y1 - my), min(1.0, x2 + mx), min(1.0, y2 + my)


def validation_reason(exc: ValidationError) -> str:
    """A pydantic error as one line naming the fields, as the decoders say it."""
    return _reason(exc)


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


def decode_event(data: bytes) -> Event:
    if len(data) > MAX_EVENT_BYTES:
        raise ProtocolError(f"event is {len(data)} bytes, over the {MAX_EVENT_BYTES}-byte limit", "too_large")
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True, max_bin_len=MAX_EVENT_BYTES,
                              max_str_len=MAX_EVENT_BYTES, max_array_len=4096, max_map_len=256)
    except Exception as exc:  # msgpack raises many types for bad input
        raise ProtocolError(f"event is not valid MessagePack: {type(exc).__name__}", "encoding") from None
    if not isinstance(obj, dict):
        raise ProtocolError("event must be a MessagePack map", "encoding")
    version = obj.get("v")
    if type(version) is not int or version != SCHEMA_VERSION:  # True == 1 and 1.0 == 1 must not pass
        raise ProtocolError(f"event schema version {_short(version)} is not supported (this receiver speaks "
                            f"v{SCHEMA_VERSION})", "schema_version")
    event = _validated(Event, obj, "event")
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
        raise ProtocolError(f"verdict schema version {_short(version)} is not supported", "schema_version")
    return _validated(Verdict, obj, "verdict")


# -- control messages: the cloud's load report, remote configuration, device state (all JSON) -------------
MAX_LOAD_BYTES = 4096  # a load report is a few dozen bytes
MAX_CONFIG_BYTES = 256 * 1024  # a remote config message
MAX_STATE_BYTES = 256 * 1024  # a device state message (one entry per camera)
_SHA256_RE = r"^[0-9a-f]{64}$"
_VERSION_RE = r"^[A-Za-z0-9._:+-]{1,64}$"


class LoadReport(_Message):
    """The cloud's retained load report on `<prefix>/v1/_cloud/load`; an empty payload clears it. Its capacity
    figures (cloud.capacity) are left out while unmeasured: old clouds' reports decode, old devices ignore them."""

    overloaded: bool
    queue_depth: Annotated[int, Field(ge=0)] = 0
    ts: Annotated[int, Field(ge=0, lt=1 << 53)]  # epoch milliseconds when the cloud wrote it
    verdicts_per_s: Annotated[float, Field(ge=0, le=1e9)] | None = None
    capacity_per_s: Annotated[float, Field(ge=0, le=1e9)] | None = None
    queue_wait_ms: Annotated[float, Field(ge=0, le=1e10)] | None = None

    @property
    def headroom_per_s(self) -> float | None:  # verdicts/s the cloud could still take; None: not measured
        c, v = self.capacity_per_s, self.verdicts_per_s
        return None if c is None or v is None else max(0.0, c - v)


def _json_object(data: bytes, what: str, limit: int) -> dict:
    if len(data) > limit:
        raise ProtocolError(f"{what} is {len(data)} bytes, over the {limit}-byte limit", "too_large")
    try:
        obj = json.loads(data)
    except RecursionError:
        raise ProtocolError(f"{what} is not JSON: nested too deeply", "encoding") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"{what} is not JSON: {str(exc)[:120]}", "encoding") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what} must be a JSON object", "encoding")
    return obj


def _validated(model: type[BaseModel], obj: dict, what: str):
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise ProtocolError(f"invalid {what}: {_reason(exc)}") from None
    except RecursionError:
        raise ProtocolError(f"invalid {what}: values nested too deeply") from None


def encode_load_report(report: LoadReport) -> bytes:
    return report.model_dump_json(exclude_none=True).encode()


def decode_load_report(data: bytes) -> LoadReport:
    """ProtocolError says what was wrong: {"overloaded": bool, "queue_depth": int, "ts": epoch ms, ...}."""
    return _validated(LoadReport, _json_object(data, "load report", MAX_LOAD_BYTES), "load report")


class ModelRef(_Message):
    """A detector model named by the hash of its file; `entry` describes it when the device's manifest does not."""

    sha256: Annotated[str, Field(pattern=_SHA256_RE)]
    name: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    entry: dict[str, Any] | None = None

    model_config = ConfigDict(extra="forbid", frozen=True)


class RemoteConfig(_Message):
    """A device's remote configuration, retained on `<prefix>/v1/<device>/config`: the sections to merge over
    the device's own file (the device validates them against its schema) and, optionally, a model."""

    version: Annotated[str, Field(pattern=_VERSION_RE)]
    config: dict[str, Any] = {}
    model: ModelRef | None = None
    issued_ms: Annotated[int, Field(ge=0, lt=1 << 53)] | None = None

    model_config = ConfigDict(extra="forbid", frozen=True)


class RemoteConfigError(ProtocolError):
    """A remote config that cannot be taken; `version` is its version when that much could be read."""

    def __init__(self, reason: str, version: str | None = None, code: str = "invalid") -> None:
        super().__init__(reason, code)
        self.version = version


def encode_remote_config(message: RemoteConfig) -> bytes:
    fields = {k: v for k, v in message.model_dump(mode="json").items() if v is not None}
    payload = json.dumps(fields, separators=(",", ":")).encode()
    if len(payload) > MAX_CONFIG_BYTES:
        raise RemoteConfigError(f"config message is {len(payload)} bytes, over the {MAX_CONFIG_BYTES}-byte limit",
                                message.version, "too_large")
    return payload


def decode_remote_config(data: bytes) -> RemoteConfig:
    """RemoteConfigError says what was wrong and where, and carries the version when it was readable."""
    try:
        doc = _json_object(data, "config message", MAX_CONFIG_BYTES)
    except ProtocolError as exc:
        reason = exc.reason.replace("must be a JSON object", 'must be a JSON object with "version" and "config"')
        raise RemoteConfigError(reason, None, exc.code) from None
    version = doc.get("version")
    if not isinstance(version, str) or not re.match(_VERSION_RE, version):
        raise RemoteConfigError("version: required, 1-64 characters of A-Z a-z 0-9 . _ : + -")
    unknown = sorted(set(doc) - set(RemoteConfig.model_fields))
    if unknown:
        raise RemoteConfigError(f"{', '.join(unknown)}: unknown key (a config message has version, config, model)",
                                version)
    if not isinstance(doc.get("config", {}), dict):
        raise RemoteConfigError("config: must be an object of sections", version)
    model = doc.get("model")
    if model is not None:
        _check_model(model, version)
    try:
        return _validated(RemoteConfig, doc, "config message")
    except ProtocolError as exc:
        raise RemoteConfigError(exc.reason, version) from None


def _check_model(value: Any, version: str) -> None:
    """The model announcement's own messages (they name the field and what it must be)."""
    if not isinstance(value, dict):
        raise RemoteConfigError("model: must be an object with sha256", version)
    sha = value.get("sha256")
    if not isinstance(sha, str) or not re.match(_SHA256_RE, sha):
        raise RemoteConfigError("model.sha256: must be 64 lowercase hex characters", version)
    name = value.get("name")
    if name is not None and (not isinstance(name, str) or not 0 < len(name) <= 128):
        raise RemoteConfigError("model.name: must be a short string", version)
    entry = value.get("entry")
    if entry is not None and not isinstance(entry, dict):
        raise RemoteConfigError("model.entry: must be a manifest entry object", version)
    unknown = sorted(set(value) - {"sha256", "name", "entry"})
    if unknown:
        raise RemoteConfigError(f"model.{unknown[0]}: unknown key (a model has sha256, name, entry)", version)


class ConfigRefusal(_Message):
    version: str | None = None
    reason: FreeText
    ms: int


class AppliedConfig(_Message):
    version: str
    source: Literal["file", "remote"]
    applied_ms: int
    refused: ConfigRefusal | None = None


class ModelRefusal(_Message):
    name: FreeText
    sha256: str
    reason: FreeText
    ms: int


class RunningModel(_Message):
    name: FreeText
    sha256: str
    since_ms: int
    loading: str | None = None  # sha256 of the model being fetched and checked
    refused: ModelRefusal | None = None


class CameraState(_Message):
    state: FreeText  # connecting, streaming, reconnecting, stalled, ended, stopped
    source: FreeText  # the camera URL without its password
    reconnects: int
    last_error: FreeText
    frames_read: int
    frames_processed: int
    fps_read: float
    fps_detected: float
    detect_fps: float


class CloudSeen(_Message):
    connected: bool
    overloaded: bool
    queue_depth: int | None = None
    load_ts: float | None = None  # epoch seconds of the cloud's last load report
    headroom_per_s: float | None = None  # verdicts/s the cloud could still take, by its last load report


class BudgetState(_Message):
    per_minute: int
    per_hour: int
    policy: FreeText
    available: int | None = None  # None: no limit
    waiting: int
    dropped: int
    local: int


class DeviceState(_Message):
    """A device's retained state on `<prefix>/v1/<device>/state`: what runs, how the cameras are, what was
    applied or refused (the answer `cloud push-config --wait` follows)."""

    device: str
    ts_ms: int
    started_ms: int
    running: bool
    ready: bool
    watchdog_healthy: bool
    config: AppliedConfig
    model: RunningModel
    cameras: dict[str, CameraState]
    cloud: CloudSeen
    budget: BudgetState
    outbox: dict[str, int]


def encode_device_state(state: DeviceState) -> bytes:
    return state.model_dump_json().encode()


def decode_device_state(data: bytes) -> DeviceState:
    return _validated(DeviceState, _json_object(data, "device state", MAX_STATE_BYTES), "device state")
