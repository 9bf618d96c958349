"""The cloud side's one configuration schema: broker, store, HTTP API, analyzer and the reuse policy.

Every field has a default that works on one machine, so `edgetriage cloud run` needs no file; unknown keys
are refused (see shared.config.Strict) so a misspelt key is reported instead of silently ignored.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from ..shared.config import MQTTConfig, Strict
from .analyzer import AnalyzerConfig


def default_state_dir() -> Path:
    """Where the service keeps its state unless told otherwise: $EDGETRIAGE_STATE, else ./var."""
    return Path(os.environ.get("EDGETRIAGE_STATE") or "var")


def _default_store_path() -> str:
    return str(default_state_dir() / "cloud.db")


class HTTPConfig(Strict):
    """The read-only HTTP API (health, events, verdicts). Loopback by default: it has no authentication."""

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8080
    enabled: bool = True


class ReusePolicy(Strict):
    """Which later events a model verdict may answer without asking the model again.

    scope "camera": only events from the same device and camera; "site": any camera of the same site
    (events without a site fall back to their camera). max_distance is in bits of the 64-bit perceptual
    hash; ttl_s bounds how long a verdict, and anything reused from it, stays valid.
    """

    scope: Literal["camera", "site"] = "camera"
    max_distance: Annotated[int, Field(ge=0, le=32)] = 10
    ttl_s: Annotated[int, Field(ge=0, le=30 * 86400)] = 3600


class CloudConfig(Strict):
    mqtt: MQTTConfig = MQTTConfig()
    store_path: str = Field(default_factory=_default_store_path, description="SQLite file; its folder is created")
    http: HTTPConfig = HTTPConfig()
    analyzer: AnalyzerConfig = AnalyzerConfig()
    reuse: ReusePolicy = ReusePolicy()
    group: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")] = "edgetriage"  # MQTT 5 shared subscriptions (later)
    drain_timeout_s: Annotated[float, Field(ge=0.0, le=600.0)] = 10.0
