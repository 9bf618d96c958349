"""Home Assistant MQTT discovery as Home Assistant would see it: retained configs under the discovery prefix,
availability from the device's status topic, states that follow the verdicts, a re-announcement when Home
Assistant comes online, and entities removed when asked. Real broker, real clip, real detector, real LLM."""

from __future__ import annotations

import json
import threading
import time
import uuid

import paho.mqtt.client as mqtt
import pytest
from edgetriage.broker import free_port
from edgetriage.cloud.config import CloudConfig, HomeAssistantConfig
from edgetriage.cloud.ops.ha import Discovery
from edgetriage.demo import CloudThread
from edgetriage.edge.agent import EdgeAgent
from edgetriage.edge.config import CameraConfig, EdgeConfig
from edgetriage.shared.topics import Topics

DEVICE, CAMERA = "porch-1", "cam0"
KINDS = (("binary_sensor", "alert"), ("sensor", "verdict"), ("image", "thumbnail"))


class Watch:
    """A subscriber recording (topic, payload, retain) under the given filters."""

    def __init__(self, port: int, *filters: str) -> None:
        self.messages: list[tuple[str, bytes, bool]] = []
        self._lock = threading.Lock()
        self._marker = f"watch-marker/{uuid.uuid4().hex}"
        self._markers = 0
        subacks: list[int] = []
        ready = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)

        def on_connect(client, userdata, flags, rc, props):
            for f in (*filters, self._marker):
                client.subscribe(f, 1)

        def on_subscribe(client, userdata, mid, reason_codes, props):
            subacks.append(mid)
            if len(subacks) == len(filters) + 1:
                ready.set()

        self.client.on_connect = on_connect
        self.client.on_subscribe = on_subscribe
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        assert ready.wait(10), "the watch got no SUBACK"

    def _on_message(self, client, userdata, msg) -> None:
        with self._lock:
            if msg.topic == self._marker:
                self._markers += 1
            else:
                self.messages.append((msg.topic, bytes(msg.payload), bool(msg.retain)))

    def seen(self, timeout: float = 10.0) -> dict[str, tuple[bytes, bool]]:
        """The last message per topic, once the retained ones have arrived: they are queued to us when we
        subscribe, so a marker we publish afterwards comes back after them (one session's queue is in order)."""
        with self._lock:
            want = self._markers + 1
        self.client.publish(self._marker, b"", qos=1)
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if self._markers >= want:
                    return {t: (p, r) for t, p, r in self.messages}
            assert time.monotonic() < deadline, "the watch's own marker did not come back"
            time.sleep(0.02)

    def wait_until(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(list(self.messages)):
                    return True
            time.sleep(0.1)
        return False

    def clear(self) -> None:
        with self._lock:
            self.messages.clear()

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def test_discovery_payloads_follow_home_assistant_conventions():
    discovery = Discovery(HomeAssistantConfig(), "edgetriage")
    configs = dict(discovery.configs(DEVICE, CAMERA))
    assert set(configs) == {f"homeassistant/{c}/edgetriage_{DEVICE}/{CAMERA}_{w}/config" for c, w in KINDS}
    status = Topics("edgetriage").status(DEVICE)
    for payload in configs.values():
        json.dumps(payload)  # what goes on the wire
        assert payload["availability"] == [{"topic": status, "payload_available": "online",
                                             "payload_not_available": "offline"}]
        assert payload["device"]["identifiers"] == [f"edgetriage_{DEVICE}"]
        assert payload["origin"]["name"] == "edgetriage"
        assert "object_id" not in payload  # deprecated by Home Assistant; unique_id + device name it
    assert len({p["unique_id"] for p in configs.values()}) == 3
    alert = configs[f"homeassistant/binary_sensor/edgetriage_{DEVICE}/{CAMERA}_alert/config"]
    assert (alert["payload_on"], alert["payload_off"], alert["off_delay"]) == ("ON", "OFF", 60)
    assert alert["state_topic"] == f"edgetriage/ha/{DEVICE}/{CAMERA}/alert"
    verdict = configs[f"homeassistant/sensor/edgetriage_{DEVICE}/{CAMERA}_verdict/config"]
    assert verdict["device_class"] == "enum" and verdict["options"] == ["alert", "benign", "unknown"]
    assert verdict["value_template"] == "{{ value_json.verdict }}"
    image = configs[f"homeassistant/image/edgetriage_{DEVICE}/{CAMERA}_thumbnail/config"]
    assert image["content_type"] == "image/jpeg" and "url_topic" not in image

    quiet = Discovery(HomeAssistantConfig(thumbnails=False, alert_off_delay_s=0), "edgetriage")
    kinds = {t.split("/")[1] for t, _ in quiet.configs(DEVICE, CAMERA)}
    assert kinds == {"binary_sensor", "sensor"}
    assert "off_delay" not in dict(quiet.configs(DEVICE, CAMERA))[
        f"homeassistant/binary_sensor/edgetriage_{DEVICE}/{CAMERA}_alert/config"]


def _cloud(mosquitto, prefix, analyzer, store_path, ha: HomeAssistantConfig) -> CloudThread:
    config = CloudConfig.model_validate({"mqtt": {"url": mosquitto.url, "prefix": prefix},
                                         "store_path": str(store_path), "http": {"port": 0}})
    cloud = CloudThread(config, analyzer, free_port(), ha=ha)
    cloud.start()
    return cloud


@pytest.mark.slow
def test_discovery_states_and_reannouncement_during_a_run(mosquitto, prefix, llm_analyzer, clip_one_by_one,
                                                          tmp_path):
    ha = HomeAssistantConfig(discovery_prefix=f"{prefix}-ha")
    discovery = Discovery(ha, prefix)
    config_topics = {discovery.config_topic(c, DEVICE, CAMERA) for c, _ in KINDS}
    state = {what: discovery.state_topic(DEVICE, CAMERA, what) for what in ("alert", "verdict", "thumbnail")}
    status_topic = Topics(prefix).status(DEVICE)
    watch = Watch(mosquitto.port, f"{prefix}-ha/#", f"{prefix}/ha/#")
    cloud = _cloud(mosquitto, prefix, llm_analyzer, tmp_path / "cloud.db", ha)
    edge = EdgeConfig.model_validate({
        "device": DEVICE, "mqtt": {"url": mosquitto.url, "prefix": prefix}, "state_dir": str(tmp_path),
        "cameras": [{"id": CAMERA, "source": str(clip_one_by_one)}], "outbox": {"path": str(tmp_path / "o.db")}})
    verdicts = []
    agent = EdgeAgent(edge, on_verdict=lambda v, ms: verdicts.append(v))
    try:
        assert agent.delivery.link.wait_connected(10)
        agent.run_source(CameraConfig(id=CAMERA, source=str(clip_one_by_one), start_frame=40), max_frames=160)
        assert agent.wait_idle(240), "no verdict came back"
        assert verdicts

        # during the run: the camera was announced and its states follow the events and verdicts
        assert watch.wait_until(lambda m: config_topics <= {t for t, p, _ in m if p}, 10), watch.messages
        last_id = verdicts[-1].event_id.encode()

        def settled(m) -> bool:  # the last verdict's state, then its alert (published in that order)
            at = [i for i, (t, p, _) in enumerate(m) if t == state["verdict"] and last_id in p]
            return bool(at) and any(t == state["alert"] for t, _, _ in m[at[-1]:]) and any(
                t == state["thumbnail"] for t, _, _ in m)

        assert watch.wait_until(settled, 10), "no states for the last verdict"
        last = watch.seen()
        assert last[state["thumbnail"]][0][:3] == b"\xff\xd8\xff"
        published = json.loads(last[state["verdict"]][0])
        assert published["verdict"] == verdicts[-1].verdict and published["event_id"] == verdicts[-1].event_id
        assert last[state["alert"]][0] == (b"ON" if verdicts[-1].verdict == "alert" else b"OFF")

        # what Home Assistant finds when it (re)subscribes: retained configs, the device online, alert OFF
        fresh = Watch(mosquitto.port, f"{prefix}-ha/#", f"{prefix}/ha/#", status_topic)
        retained = fresh.seen()
        fresh.close()
        assert {t for t in retained if retained[t][1] and t in config_topics} == config_topics
        assert retained[status_topic] == (b"online", True)
        assert retained[state["alert"]] == (b"OFF", True), "a restarted Home Assistant must not replay an alert"
        assert json.loads(retained[state["verdict"]][0])["verdict"] == verdicts[-1].verdict

        # Home Assistant restarts: it says "online" and gets every config again
        watch.clear()
        announcer = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        announcer.connect("127.0.0.1", mosquitto.port)
        announcer.loop_start()
        announcer.publish(f"{prefix}-ha/status", b"online", qos=1).wait_for_publish(5)
        announcer.loop_stop()
        announcer.disconnect()
        assert watch.wait_until(lambda m: config_topics <= {t for t, p, _ in m if p}, 10), watch.messages
    finally:
        agent.close()
        cloud.stop()

    # the device went away: its availability topic says so
    fresh = Watch(mosquitto.port, status_topic)
    assert fresh.seen()[status_topic] == (b"offline", True)
    fresh.close()

    # a restarted service knows the camera from its store and announces it again on connect
    watch.clear()
    cloud = _cloud(mosquitto, prefix, llm_analyzer, tmp_path / "cloud.db", ha)
    try:
        assert watch.wait_until(lambda m: config_topics <= {t for t, p, _ in m if p}, 10), watch.messages
    finally:
        cloud.stop(forget_device=DEVICE)
    fresh = Watch(mosquitto.port, f"{prefix}-ha/#", f"{prefix}/ha/#")
    left = {t for t, (p, _) in fresh.seen().items() if p}
    fresh.close()
    watch.close()
    assert not left, f"forget() must remove the device's retained configs and states: {left}"
