"""The control messages, all JSON: the cloud's load report, a device's remote configuration and the state a
device reports. Decoders raise only ProtocolError (RemoteConfigError for a config), as shared.protocol's do;
shared.protocol re-exports every name here."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from .wire import FreeText, Message, ProtocolError, json_object, validated

MAX_LOAD_BYTES = 4096  # a load report is a few dozen bytes
MAX_CONFIG_BYTES = 256 * 1024  # a remote config message
MAX_STATE_BYTES = 256 * 1024  # a device state message (one entry per camera)
_SHA256_RE = r"^[0-9a-f]{64}$"
_VERSION_RE = r"^[A-Za-z0-9._:+-]{1,64}$"


class LoadReport(Message):
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


def encode_load_report(report: LoadReport) -> bytes:
    return report.model_dump_json(exclude_none=True).encode()


def decode_load_report(data: bytes) -> LoadReport:
    """ProtocolError says what was wrong: {"overloaded": bool, "queue_depth": int, "ts": epoch ms, ...}."""
    return validated(LoadReport, json_object(data, "load report", MAX_LOAD_BYTES), "load report")


class ModelRef(Message):
    """A detector model named by the hash of its file; `entry` describes it when the device's manifest does not."""

    sha256: Annotated[str, Field(pattern=_SHA256_RE)]
    name: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    entry: dict[str, Any] | None = None

    model_config = ConfigDict(extra="forbid", frozen=True)


class RemoteConfig(Message):
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
        doc = json_object(data, "config message", MAX_CONFIG_BYTES)
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
        return validated(RemoteConfig, doc, "config message")
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


class ConfigRefusal(Message):
    version: str | None = None
    reason: FreeText
    ms: int


class AppliedConfig(Message):
    version: str
    source: Literal["file", "remote"]
    applied_ms: int
    refused: ConfigRefusal | None = None


class ModelRefusal(Message):
    name: FreeText
    sha256: str
    reason: FreeText
    ms: int


class RunningModel(Message):
    name: FreeText
    sha256: str
    since_ms: int
    loading: str | None = None  # sha256 of the model being fetched and checked
    refused: ModelRefusal | None = None


class CameraState(Message):
    state: FreeText  # connecting, streaming, reconnecting, stalled, ended, stopped
    source: FreeText  # the camera URL without its password
    reconnects: int
    last_error: FreeText
    frames_read: int
    frames_processed: int
    fps_read: float
    fps_detected: float
    detect_fps: float


class CloudSeen(Message):
    connected: bool
    overloaded: bool
    queue_depth: int | None = None
    load_ts: float | None = None  # epoch seconds of the cloud's last load report
    headroom_per_s: float | None = None  # verdicts/s the cloud could still take, by its last load report


class BudgetState(Message):
    per_minute: int
    per_hour: int
    policy: FreeText
    available: int | None = None  # None: no limit
    waiting: int
    dropped: int
    local: int


class DeviceState(Message):
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
    return validated(DeviceState, json_object(data, "device state", MAX_STATE_BYTES), "device state")
