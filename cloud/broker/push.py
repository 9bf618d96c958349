"""`edgetriage cloud push-config --device D FILE`: publish a device's remote configuration.

FILE is TOML (or JSON) with the sections to change and, optionally, a version and a model:

    version = "2024-06-01.2"          # optional; default: the time of the push
    [rules]
    min_score = 0.3
    [budget]
    per_minute = 10
    [cameras.door]
    detect_fps = 2
    [model]
    name = "ssdlite_person_int8"      # or sha256 = "<64 hex>"; the manifest fills in the rest

It becomes one retained JSON message on `<prefix>/v1/<device>/config`, so a device that is offline gets it
when it returns. The cloud does not know the device's schema (it imports nothing of the edge): the device
validates the message and reports, on its retained `<prefix>/v1/<device>/state`, the version it applied or
why it refused one. `--wait` follows that report.
"""

from __future__ import annotations

import json
import queue
import time
import tomllib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...shared import clock
from ...shared.config import ConfigError, MQTTConfig
from ...shared.modelfiles import manifest
from ...shared.mqtt import Incoming, MQTTLink
from ...shared.protocol import (
    MAX_CONFIG_BYTES,
    ProtocolError,
    RemoteConfig,
    decode_device_state,
    encode_remote_config,
    validation_reason,
)
from ...shared.topics import Topics


@dataclass(frozen=True)
class PushResult:
    version: str
    topic: str
    outcome: str  # "published" (not waited), "applied", "refused", "no answer"
    reason: str = ""


def read_push_file(path: str | Path) -> dict[str, Any]:
    """The document in FILE (TOML, or JSON when it ends in .json); ConfigError names the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        doc = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'TOML'}: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: must hold a table of sections")
    return doc


def config_message(doc: dict[str, Any], *, version: str | None = None) -> tuple[str, bytes]:
    """(version, payload) of the config message for `doc`: its sections under "config", its model completed
    from the manifest (name -> sha256 and entry, or sha256 -> name and entry)."""
    doc = dict(doc)
    version = version or str(doc.pop("version", "") or "") or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    doc.pop("version", None)
    model = doc.pop("model", None)
    for key, value in doc.items():
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: a config section must be a table ([{key}] in TOML)")
    try:
        message = RemoteConfig(version=version, config=doc, issued_ms=clock.now_ms(),
                               model=_complete_model(model) if model is not None else None)
        return version, encode_remote_config(message)
    except ValidationError as exc:
        raise ConfigError(f"the config message is not valid: {validation_reason(exc)}") from None
    except ProtocolError as exc:
        raise ConfigError(f"the {exc.reason}; devices take at most {MAX_CONFIG_BYTES}") from None


def _complete_model(model: Any) -> dict[str, Any]:
    if not isinstance(model, dict) or not (model.get("sha256") or model.get("name")):
        raise ConfigError("model: give name = \"<manifest key>\" or sha256 = \"<64 hex>\"")
    models = manifest()["models"]
    name, sha = model.get("name"), model.get("sha256")
    if sha is None:
        if name not in models:
            raise ConfigError(f"model.name {name!r} is not in models/manifest.json ({', '.join(sorted(models))})")
        sha = models[name]["sha256"]
    elif name is None:
        name = next((k for k, e in models.items() if e.get("sha256") == sha), None)
    out: dict[str, Any] = {"sha256": sha}
    if name is not None:
        out["name"] = name
    entry = model.get("entry") or (models.get(name) if name in models and models[name]["sha256"] == sha else None)
    if entry is not None:
        out["entry"] = entry
    return out


def push_config(mqtt: MQTTConfig, device: str, payload: bytes, *, version: str, wait_s: float = 0.0,
                timeout_s: float = 10.0) -> PushResult:
    """Publish `payload` retained (an empty payload clears the device's remote config) and, with `wait_s`,
    wait for the device's state to show `version` applied or refused."""
    topics = Topics(mqtt.prefix)
    config_topic, state_topic = topics.config(device), topics.state(device)
    acks: queue.SimpleQueue[int] = queue.SimpleQueue()
    states: queue.SimpleQueue[bytes] = queue.SimpleQueue()

    def on_message(msg: Incoming) -> None:
        if msg.topic == state_topic:
            states.put(msg.payload)

    link = MQTTLink(mqtt.model_copy(update={"session_expiry_s": 0}), f"edgetriage-push-{uuid.uuid4().hex[:12]}",
                    on_published=acks.put, on_message=on_message)
    if wait_s > 0:
        link.subscribe(state_topic, 1)
    link.start()
    try:
        if not link.wait_connected(timeout_s):
            raise ConfigError(f"cannot reach the MQTT broker at {mqtt.url} within {timeout_s:.0f} s: "
                              f"{link.last_error or 'no answer'}")
        mid = link.publish(config_topic, payload, qos=1, retain=True)
        if mid is None or not _acknowledged(acks, mid, timeout_s):
            raise ConfigError(f"the broker at {mqtt.url} did not acknowledge the config on {config_topic}")
        if wait_s <= 0 or not payload:
            return PushResult(version, config_topic, "published")
        return _await_state(states, version, config_topic, wait_s)
    finally:
        link.stop()


def _acknowledged(acks: queue.SimpleQueue[int], mid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            if acks.get(timeout=left) == mid:
                return True
        except queue.Empty:
            break
    return False


def _await_state(states: queue.SimpleQueue[bytes], version: str, topic: str, wait_s: float) -> PushResult:
    deadline = time.monotonic() + wait_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            raw = states.get(timeout=left)
        except queue.Empty:
            break
        try:
            config = decode_device_state(raw).config
        except ProtocolError:
            continue
        if config.version == version:
            return PushResult(version, topic, "applied")
        if config.refused is not None and config.refused.version == version:
            return PushResult(version, topic, "refused", config.refused.reason)
    return PushResult(version, topic, "no answer")


__all__ = ["PushResult", "config_message", "push_config", "read_push_file"]
