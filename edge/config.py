"""The device's one configuration schema (TOML). Every key has a default that works on a development machine:
a broker on localhost, state under $EDGETRIAGE_STATE or ./var, the bundled clip as the camera for code and
tests; `edge run` and `check-config` want the file to name its `[[cameras]]`, each with a source (edge.preflight).

    device = "edge-1"
    [[cameras]]
    id = "door"
    source = "rtsp://192.168.1.20/stream1"
    [mqtt]
    url = "mqtts://broker.example:8883"
    [rules]
    labels = ["person"]
    uncertain_band = [0.2, 0.5]
    [budget]
    per_minute = 10
    policy = "drop_lowest"

Sections `rules`, `vision`, `cache`, `budget`, `overload` and per-camera settings may also be changed remotely
(edge.remote_config); `device`, `mqtt`, `outbox`, `state_dir`, `daemon` and `remote` only in this file.

A component's section is defined beside the component (`[outbox]` in outbox.py, `[budget]` and `[overload]` in
budget.py, `[rules]` in rules.py, `[vision]` in vision.py); this module composes them into `EdgeConfig`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from ..shared.config import MQTTConfig, Strict, default_state_dir, load_config, secret
from ..shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from ..shared.modelfiles import bundled_clip
from ..shared.protocol import DEFAULT_MAX_DISTANCE
from ..shared.suppression import SuppressionsSection
from .delivery.budget import EscalationBudgetConfig, OverloadConfig
from .delivery.outbox import OutboxConfig
from .triage.rules import RulesConfig
from .vision.capture import is_live
from .vision.pipeline import VisionConfig
from .vision.zones import Polygon, ZoneConfig

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


def default_source() -> str:
    """The bundled sample clip when the package ships it, else the first local camera."""
    clip = bundled_clip()
    return str(clip) if clip.is_file() else "0"


Seconds = Annotated[float, Field(gt=0.0, le=86400.0)]
DEVICE_TOKEN_ENV = "EDGETRIAGE_DEVICE_TOKEN"  # the device's bearer token for the cloud API


class CameraConfig(Strict):
    id: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)] = "cam0"
    source: str = Field(default_factory=default_source, description="file, camera index or rtsp:// URL")
    start_frame: Annotated[int, Field(ge=0)] = 0
    zones: list[ZoneConfig] = []  # named areas rules can refer to (edge.vision.zones)
    masks: list[Polygon] = []  # areas where motion and detections are ignored
    # frames per second handed to the vision pipeline; the others are grabbed but not decoded to pixels.
    # 0: every frame.
    detect_fps: Annotated[float, Field(ge=0.0, le=240.0)] = 0.0
    realtime: bool = True  # a file is delivered at its own frame rate, as a camera would deliver it
    open_timeout_s: Seconds = 10.0  # network streams: give up opening after this long
    read_timeout_s: Seconds = 10.0  # network streams: a stream silent this long counts as lost
    # a lost source is retried after a random delay up to min * 2^n (never under 0.1 s: no busy loop) ...
    reconnect_min_s: Annotated[float, Field(ge=0.1, le=3600.0)] = 1.0
    reconnect_max_s: Seconds = 10.0  # ... capped here ("full jitter", so cameras do not retry in step): a
    # camera back from a reboot is read again within ~10 s (bench/live.py reconnect_s)
    detect_source: str | None = Field(
        None, description="the camera's low-resolution sub-stream (e.g. rtsp://.../stream2), read instead of "
                          "`source` for detection and for the crops sent to the cloud; unset: `source`")
    transport: Literal["tcp", "udp"] = Field(
        "tcp", description="RTSP over TCP (no lost packets, so no smeared frames; what most cameras and Frigate "
                           "use) or UDP (where a camera or network wants it)")
    loop: bool = Field(
        False, description="file sources: start the file again when it ends, for ever (demos, soak tests); "
                           "unset: a file that ends says so once and its camera is done")

    @model_validator(mode="after")
    def _backoff(self) -> CameraConfig:
        if self.reconnect_max_s < self.reconnect_min_s:
            raise ValueError("reconnect_max_s must be >= reconnect_min_s")
        if self.loop and is_live(self.read_source):
            raise ValueError(f"camera {self.id}: loop applies to video files; a live source is read for as long "
                             "as it delivers (and reconnected when lost)")
        return self

    @property
    def read_source(self) -> str:
        """What the device reads: the detect sub-stream when there is one, else `source`."""
        return self.detect_source or self.source


class CacheConfig(Strict):
    max_entries: Annotated[int, Field(ge=1, le=1_000_000)] = 1024
    # the most pHash bits a cached crop may differ by on this device; a verdict's rule may ask for fewer.
    # 8, measured on the labelled clips (docs/developers/benchmarks.md, "Verdict reuse"): 80 % of crops of
    # the same person
    # 0.3-1 s apart match, 0.02 % of pairs of different people collide (10: 84 % and 1.4 %)
    default_max_distance: Annotated[int, Field(ge=0, le=32)] = DEFAULT_MAX_DISTANCE


class DaemonConfig(Strict):
    """`edgetriage edge run`: supervision and the metrics endpoint."""

    metrics_host: str = "127.0.0.1"  # "0.0.0.0" to let a Prometheus on another machine scrape it
    metrics_port: Annotated[int, Field(ge=0, le=65535)] = 9464  # 0: no metrics endpoint
    # a camera stuck this long inside one read or one pipeline step stops the systemd watchdog pings
    stall_s: Seconds = 30.0
    state_interval_s: Seconds = 60.0  # the retained state message is refreshed at least this often


class RemoteUpdateConfig(Strict):
    """Remote configuration and model updates through `<prefix>/v1/<device>/config`."""

    enabled: bool = True
    api_url: str = "http://127.0.0.1:8080"  # the cloud API that serves GET /v1/models/{sha256}
    # this device's bearer token for the cloud API ([http] device_tokens there)
    api_token: SecretStr | None = Field(None, description=f"or {DEVICE_TOKEN_ENV}")
    models_dir: str = ""  # empty: <state_dir>/models
    fetch_timeout_s: Seconds = 60.0
    max_model_bytes: Annotated[int, Field(ge=1024, le=4 * 1024**3)] = 256 * 1024 * 1024

    @field_validator("api_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    def secret_token(self) -> str | None:
        return secret(DEVICE_TOKEN_ENV, self.api_token)


class EdgeConfig(Strict):
    device: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)] = "edge-1"
    site: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)] | None = None
    cameras: Annotated[list[CameraConfig], Field(min_length=1)] = Field(default_factory=lambda: [CameraConfig()])
    mqtt: MQTTConfig = Field(default_factory=MQTTConfig)
    vision: VisionConfig = Field(default_factory=VisionConfig)
    rules: RulesConfig = Field(default_factory=RulesConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    outbox: OutboxConfig = Field(default_factory=OutboxConfig)
    budget: EscalationBudgetConfig = Field(default_factory=EscalationBudgetConfig)
    overload: OverloadConfig = Field(default_factory=OverloadConfig)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    remote: RemoteUpdateConfig = Field(default_factory=RemoteUpdateConfig)
    # learned by the cloud, accepted by the operator, sent in the remote config (edge.suppress)
    suppressions: SuppressionsSection = Field(default_factory=SuppressionsSection)
    state_dir: str = Field(default_factory=lambda: str(default_state_dir()))
    timezone: str | None = Field(None, description="IANA zone of the device's local time (e.g. Europe/Berlin): "
                                                   "rule schedules and events' local_time use it, and questions "
                                                   "read \"today\" in it (cloud [ask] timezones); unset: the system's")

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is not None:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {value!r}; an IANA name such as Europe/Berlin or UTC") from None
        return value

    @model_validator(mode="after")
    def _resolve(self) -> EdgeConfig:
        ids = [c.id for c in self.cameras]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"camera ids must be unique; repeated: {', '.join(dupes)}")
        for cam in self.cameras:
            if cam.detect_fps and 1.0 / cam.detect_fps >= self.daemon.stall_s:
                raise ValueError(f"camera {cam.id}: detect_fps {cam.detect_fps} delivers a frame less often than "
                                 f"daemon.stall_s ({self.daemon.stall_s} s); raise one of them")
        if not self.outbox.path:
            self.outbox.path = str(Path(self.state_dir) / "outbox.db")
        if not self.remote.models_dir:
            self.remote.models_dir = str(Path(self.state_dir) / "models")
        return self

    def camera(self, camera_id: str) -> CameraConfig:
        for cam in self.cameras:
            if cam.id == camera_id:
                return cam
        raise KeyError(f"no camera {camera_id!r} in the config (have: {', '.join(c.id for c in self.cameras)})")


def load_edge_config(path: str | Path | None) -> EdgeConfig:
    """Read the device TOML (None: all defaults); raises shared.config.ConfigError naming the bad key."""
    return load_config(EdgeConfig, path)
