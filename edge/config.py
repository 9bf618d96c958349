"""The device's one configuration schema (TOML). Every key has a default that works on a development machine:
the bundled clip as the camera, a broker on localhost, state under $EDGETRIAGE_STATE or ./var.

    device = "edge-1"
    [[cameras]]
    id = "door"
    source = "rtsp://192.168.1.20/stream1"
    [mqtt]
    url = "mqtts://broker.example:8883"
    [rules]
    labels = ["person"]
    uncertain_band = [0.2, 0.5]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from ..shared.config import MQTTConfig, Strict, load_config
from ..shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from ..shared.modelfiles import bundled_clip
from .pipeline import VisionConfig

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


def default_source() -> str:
    """The bundled sample clip when the package ships it, else the first local camera."""
    clip = bundled_clip()
    return str(clip) if clip.is_file() else "0"


def default_state_dir() -> str:
    return os.environ.get("EDGETRIAGE_STATE") or "./var"


class CameraConfig(Strict):
    id: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)] = "cam0"
    source: str = Field(default_factory=default_source, description="file, camera index or rtsp:// URL")
    start_frame: Annotated[int, Field(ge=0)] = 0


class RulesConfig(Strict):
    """Which tracks are worth a verdict. See edge.rules for the order in which these apply."""

    labels: list[str] = ["person"]  # labels that may escalate; others are handled on the device
    min_score: Unit = 0.2  # below this (and not uncertain) a track is dropped
    uncertain_band: tuple[Unit, Unit] = (0.2, 0.5)  # scores in [low, high) escalate unless the cache answers
    escalate: bool = True  # confident tracks of an escalating label escalate too, unless cached

    @field_validator("uncertain_band")
    @classmethod
    def _band(cls, value: tuple[float, float]) -> tuple[float, float]:
        if value[0] > value[1]:
            raise ValueError("must be [low, high] with low <= high")
        return value


class CacheConfig(Strict):
    max_entries: Annotated[int, Field(ge=1, le=1_000_000)] = 1024
    # the most pHash bits a cached crop may differ by on this device; a verdict's rule may ask for fewer
    default_max_distance: Annotated[int, Field(ge=0, le=32)] = 10


class OutboxConfig(Strict):
    path: str = ""  # empty: <state_dir>/outbox.db
    verdict_timeout_s: Annotated[float, Field(gt=0)] = 60.0  # re-send an event whose verdict is this late
    max_bytes: Annotated[int, Field(ge=256 * 1024)] = 64 * 1024 * 1024
    max_age_s: Annotated[int, Field(ge=1)] = 7 * 86400


class EdgeConfig(Strict):
    device: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)] = "edge-1"
    site: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)] | None = None
    cameras: Annotated[list[CameraConfig], Field(min_length=1)] = Field(default_factory=lambda: [CameraConfig()])
    mqtt: MQTTConfig = Field(default_factory=MQTTConfig)
    vision: VisionConfig = Field(default_factory=VisionConfig)
    rules: RulesConfig = Field(default_factory=RulesConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    outbox: OutboxConfig = Field(default_factory=OutboxConfig)
    state_dir: str = Field(default_factory=default_state_dir)

    @model_validator(mode="after")
    def _resolve(self) -> EdgeConfig:
        ids = [c.id for c in self.cameras]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"camera ids must be unique; repeated: {', '.join(dupes)}")
        if not self.outbox.path:
            self.outbox.path = str(Path(self.state_dir) / "outbox.db")
        return self

    def camera(self, camera_id: str) -> CameraConfig:
        for cam in self.cameras:
            if cam.id == camera_id:
                return cam
        raise KeyError(f"no camera {camera_id!r} in the config (have: {', '.join(c.id for c in self.cameras)})")


def load_edge_config(path: str | Path | None) -> EdgeConfig:
    """Read the device TOML (None: all defaults); raises shared.config.ConfigError naming the bad key."""
    return load_config(EdgeConfig, path)
