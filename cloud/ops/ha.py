"""Home Assistant MQTT discovery: every camera that sends an event appears in Home Assistant with no YAML.

Per camera, under the HA device of its edge device (https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery):

    binary_sensor  "<camera> alert"        ON while the camera's last verdict is "alert" (off_delay turns it off)
    sensor         "<camera> last verdict" alert / benign / unknown, with description, confidence... as attributes
    image          "<camera> last event"   the JPEG crop of the camera's latest escalated event

Discovery configs are retained on `<discovery_prefix>/<component>/edgetriage_<device>/<camera>_<what>/config`
and announced again whenever Home Assistant says `online` on `<discovery_prefix>/status` (and after every
reconnect, in case the broker lost its retained messages). Availability is the device's own retained status
topic (`<prefix>/v1/<device>/status`, "online"/"offline", also its last will), so an entity goes unavailable
when its device does. States are published by this bridge under `<prefix>/ha/<device>/<camera>/`:
`verdict` (JSON, retained), `thumbnail` (JPEG, retained), `alert` ("ON" not retained, "OFF" retained, so a
restarted Home Assistant never replays an old alert).

Threads: paho's thread only hands messages to the event loop; everything else runs on the loop, called by
the cloud service's event and verdict listeners.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from importlib import metadata
from typing import Any

from ...shared.config import MQTTConfig
from ...shared.mqtt import Incoming, MQTTLink
from ...shared.protocol import Event, Verdict
from ...shared.topics import Topics
from ..config import HomeAssistantConfig
from .observed import Listened

log = logging.getLogger("edgetriage.cloud.ha")

COMPONENTS = ("binary_sensor", "sensor", "image")
VERDICT_OPTIONS = ["alert", "benign", "unknown"]


def _version() -> str:
    try:
        return metadata.version("edgetriage")
    except metadata.PackageNotFoundError:
        return "0"


class Discovery:
    """The topics and payloads, as pure functions of (device, camera): what Home Assistant reads."""

    def __init__(self, config: HomeAssistantConfig, prefix: str) -> None:
        self.config = config
        self.topics = Topics(prefix)
        self.prefix = prefix
        self.version = _version()

    @property
    def ha_status_topic(self) -> str:
        return f"{self.config.discovery_prefix}/status"

    def state_topic(self, device: str, camera: str, what: str) -> str:
        return f"{self.prefix}/ha/{device}/{camera}/{what}"

    def config_topic(self, component: str, device: str, camera: str) -> str:
        what = {"binary_sensor": "alert", "sensor": "verdict", "image": "thumbnail"}[component]
        return f"{self.config.discovery_prefix}/{component}/edgetriage_{device}/{camera}_{what}/config"

    def _common(self, device: str) -> dict[str, Any]:
        return {
            "availability": [{"topic": self.topics.status(device), "payload_available": "online",
                              "payload_not_available": "offline"}],
            "device": {"identifiers": [f"edgetriage_{device}"], "name": f"edgetriage {device}",
                       "manufacturer": "edgetriage", "model": "edge agent", "sw_version": self.version},
            "origin": {"name": "edgetriage", "sw_version": self.version},
            "qos": 1,
        }

    def configs(self, device: str, camera: str) -> list[tuple[str, dict[str, Any]]]:
        """(topic, payload) of each discovery config for one camera."""
        verdict_topic = self.state_topic(device, camera, "verdict")
        uid = f"edgetriage_{device}_{camera}"
        alert: dict[str, Any] = {
            **self._common(device), "name": f"{camera} alert", "unique_id": f"{uid}_alert",
            "state_topic": self.state_topic(device, camera, "alert"), "payload_on": "ON", "payload_off": "OFF",
            "device_class": "safety", "json_attributes_topic": verdict_topic}
        if self.config.alert_off_delay_s:
            alert["off_delay"] = self.config.alert_off_delay_s
        verdict = {
            **self._common(device), "name": f"{camera} last verdict", "unique_id": f"{uid}_verdict",
            "state_topic": verdict_topic, "value_template": "{{ value_json.verdict }}",
            "device_class": "enum", "options": VERDICT_OPTIONS, "json_attributes_topic": verdict_topic,
            "icon": "mdi:shield-search"}
        out = [(self.config_topic("binary_sensor", device, camera), alert),
               (self.config_topic("sensor", device, camera), verdict)]
        if self.config.thumbnails:
            image = {**self._common(device), "name": f"{camera} last event", "unique_id": f"{uid}_thumbnail",
                     "image_topic": self.state_topic(device, camera, "thumbnail"), "content_type": "image/jpeg"}
            out.append((self.config_topic("image", device, camera), image))
        return out

    @staticmethod
    def verdict_state(verdict: Verdict) -> dict[str, Any]:
        return {"verdict": verdict.verdict, "confidence": round(verdict.confidence, 3),
                "description": verdict.description, "label": verdict.label, "event_id": verdict.event_id,
                "source": verdict.source, "model": verdict.model, "created_ms": verdict.created_ms}


class HomeAssistantBridge:
    """Announces cameras to Home Assistant and keeps their alert, verdict and thumbnail states current.

    Attach it to the service (`attach`), `start()` it on the service's loop, `stop()` it on shutdown;
    `forget(device)` removes a device's entities from Home Assistant (the demo does, on exit)."""

    def __init__(self, config: HomeAssistantConfig, mqtt: MQTTConfig, *, client_id: str,
                 known: Iterable[tuple[str, str]] = ()) -> None:
        self.config = config
        self.discovery = Discovery(config, mqtt.prefix)
        self.cameras: set[tuple[str, str]] = set(known)
        self.announcements = 0  # discovery rounds sent (one per camera per round)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._link = MQTTLink(mqtt, client_id, on_message=self._from_network,
                              on_connected=self._connected_from_network)
        self._link.subscribe(self.discovery.ha_status_topic, qos=1)

    # -- lifecycle ------------------------------------------------------------------------------------
    def attach(self, service: Listened) -> None:
        """Listen to a CloudService's new events and verdicts."""
        service.event_listeners.append(self.add_event)
        service.verdict_listeners.append(self.add_verdict)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._link.start()

    @property
    def connected(self) -> bool:
        return self._link.connected.is_set()

    async def wait_connected(self, timeout: float) -> bool:
        return await asyncio.to_thread(self._link.wait_connected, timeout)

    async def stop(self) -> None:
        link, self._loop = self._link, None
        await asyncio.to_thread(link.stop)

    # -- paho's thread: hand over only ----------------------------------------------------------------
    def _from_network(self, msg: Incoming) -> None:
        if msg.topic == self.discovery.ha_status_topic and msg.payload.strip() == b"online":
            self._post(self.announce_all)

    def _connected_from_network(self, session_present: bool) -> None:
        self._post(self.announce_all)

    def _post(self, fn) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:  # the loop is closed: stopping
            pass

    # -- the loop -------------------------------------------------------------------------------------
    def announce_all(self) -> None:
        for device, camera in sorted(self.cameras):
            self.announce(device, camera)

    def announce(self, device: str, camera: str, *, first: bool = False) -> bool:
        """Publish one camera's discovery configs (retained); the `first` time also a retained alert "OFF", so
        the sensor starts known. Re-announcements leave the states alone (an alert in progress stays on)."""
        ok = True
        for topic, payload in self.discovery.configs(device, camera):
            ok &= self._publish(topic, json.dumps(payload, separators=(",", ":")).encode(), retain=True)
        if first:
            ok &= self._publish(self.discovery.state_topic(device, camera, "alert"), b"OFF", retain=True)
        if ok:
            self.announcements += 1
        return ok

    def add_event(self, event: Event, received_ms: int | None = None) -> None:
        """A new escalated event: learn its camera, show its crop."""
        key = (event.device, event.camera)
        if key not in self.cameras:
            self.cameras.add(key)
            self.announce(*key, first=True)
        if self.config.thumbnails:
            self._publish(self.discovery.state_topic(event.device, event.camera, "thumbnail"), event.crop,
                          retain=True)

    def add_verdict(self, verdict: Verdict) -> None:
        if verdict.provisional and verdict.source == "fallback":
            return  # a first answer (cloud.route.finals), from no model: the sensors wait for the model's verdict
        key = (verdict.device, verdict.camera)
        if key not in self.cameras:
            self.cameras.add(key)
            self.announce(*key, first=True)
        state = json.dumps(self.discovery.verdict_state(verdict), separators=(",", ":")).encode()
        self._publish(self.discovery.state_topic(*key, "verdict"), state, retain=True)
        alert_topic = self.discovery.state_topic(*key, "alert")
        if verdict.verdict == "alert":
            self._publish(alert_topic, b"ON", retain=False)
        else:
            self._publish(alert_topic, b"OFF", retain=True)

    def forget(self, device: str) -> None:
        """Remove a device's entities from Home Assistant: empty retained configs and states."""
        for dev, camera in sorted(self.cameras):
            if dev != device:
                continue
            for topic, _ in self.discovery.configs(dev, camera):
                self._publish(topic, b"", retain=True)
            for what in ("alert", "verdict", "thumbnail"):
                self._publish(self.discovery.state_topic(dev, camera, what), b"", retain=True)
            self.cameras.discard((dev, camera))

    def _publish(self, topic: str, payload: bytes, *, retain: bool) -> bool:
        """QoS 1; False when there is no connection (the next connect announces everything again)."""
        return self._link.publish(topic, payload, qos=1, retain=retain) is not None


def known_cameras(store: Any, limit: int = 1000) -> set[tuple[str, str]]:
    """(device, camera) pairs of the latest stored events, to announce again after a restart."""
    return {(doc["device"], doc["camera"]) for doc in store.list_events(limit=limit)}
