"""The whole path with real components: a real clip, the real detector, a Mosquitto of the test's own, the
real cloud service with the real small LLM, verdicts back to the device and reused there."""

from __future__ import annotations

import queue
import threading

import paho.mqtt.client as mqtt
import pytest
from edgetriage.broker import free_port
from edgetriage.cloud.config import CloudConfig
from edgetriage.demo import CloudThread
from edgetriage.edge.agent import EdgeAgent
from edgetriage.edge.config import CameraConfig, EdgeConfig

pytestmark = pytest.mark.slow

# The first visitor of the one-by-one clip walks in at about 6 s and stands until about 19 s (10 fps).
FIRST_VISIT = dict(start_frame=40, max_frames=160)


class EventTap:
    """A plain MQTT subscriber counting what appears on a device's events topic."""

    def __init__(self, url_port: int, topic: str) -> None:
        self.messages: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self.ready = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        self.client.on_connect = lambda c, u, f, rc, p: (c.subscribe(topic, 1), self.ready.set())
        self.client.on_message = lambda c, u, m: self.messages.put(m.payload)
        self.client.connect("127.0.0.1", url_port)
        self.client.loop_start()
        assert self.ready.wait(5)

    def drain(self) -> int:
        n = 0
        while not self.messages.empty():
            self.messages.get()
            n += 1
        return n

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


@pytest.fixture
def cloud(mosquitto, prefix, llm_analyzer, tmp_path):
    config = CloudConfig.model_validate({
        "mqtt": {"url": mosquitto.url, "prefix": prefix}, "store_path": str(tmp_path / "cloud.db"),
        "http": {"host": "127.0.0.1", "port": free_port()},
    })
    thread = CloudThread(config, llm_analyzer, config.http.port)
    thread.start()
    yield thread
    thread.stop()


def _agent(mosquitto, prefix, tmp_path, clip, decisions, verdicts) -> EdgeAgent:
    config = EdgeConfig.model_validate({
        "device": "porch-1", "mqtt": {"url": mosquitto.url, "prefix": prefix}, "state_dir": str(tmp_path),
        "cameras": [{"id": "cam0", "source": str(clip)}], "outbox": {"path": str(tmp_path / "outbox.db")},
    })
    return EdgeAgent(config, on_decision=lambda t, d, e: decisions.append((t, d, e)),
                     on_verdict=lambda v, ms: verdicts.append(v))


def test_event_reaches_cloud_and_verdict_is_reused_on_device(mosquitto, prefix, cloud, clip_one_by_one, tmp_path):
    decisions, verdicts = [], []
    tap = EventTap(mosquitto.port, f"{prefix}/v1/porch-1/events")
    agent = _agent(mosquitto, prefix, tmp_path, clip_one_by_one, decisions, verdicts)
    try:
        assert agent.delivery.link.wait_connected(10)
        agent.run_source(CameraConfig(id="cam0", source=str(clip_one_by_one), **{"start_frame": 40}),
                         max_frames=160)
        escalated = [e for _, d, e in decisions if d.kind == "escalate"]
        assert escalated, f"no escalation on the first visit: {[d for _, d, _ in decisions]}"
        assert agent.wait_idle(180), "verdicts did not come back"
        answered = {v.event_id for v in verdicts}
        assert set(escalated) <= answered
        tracks = {e: t for t, d, e in decisions if d.kind == "escalate"}
        by_id = {v.event_id: v for v in verdicts}
        for event_id, track in tracks.items():  # each answer is for the event the device asked about
            v = by_id[event_id]
            assert (v.device, v.camera, v.label) == ("porch-1", "cam0", track.label)
            if v.source == "llm":  # a model's answer names the model and carries a rule that covers this crop
                assert v.model and v.cache is not None and v.cache.phash == track.phash
        assert any(v.source == "llm" for v in verdicts)
        assert tap.drain() >= len(escalated)

        # The same person again, three frames later: near-duplicate crops, answered on the device.
        decisions.clear()
        agent.run_source(CameraConfig(id="cam0", source=str(clip_one_by_one), start_frame=43), max_frames=160)
        assert agent.wait_idle(180)
        cached = [d for _, d, _ in decisions if d.kind == "cached"]
        escalated_again = [e for _, d, e in decisions if d.kind == "escalate"]
        assert cached, f"nothing answered from the device cache: {[(d.kind, d.reason) for _, d, _ in decisions]}"
        assert all(d.verdict is not None and d.verdict.event_id in answered for d in cached)
        # Nothing new on the events topic but the events that were escalated again, if any.
        assert tap.drain() == len(escalated_again)
        assert agent.stats.verdicts_device_cache == len(cached)
    finally:
        tap.close()
        agent.close()


def test_event_survives_broker_restart(mosquitto, prefix, cloud, clip_one_by_one, tmp_path):
    decisions, verdicts = [], []
    agent = _agent(mosquitto, prefix, tmp_path, clip_one_by_one, decisions, verdicts)
    try:
        assert agent.delivery.link.wait_connected(10)
        mosquitto.stop()
        agent.run_source(CameraConfig(id="cam0", source=str(clip_one_by_one), start_frame=40), max_frames=160)
        escalated = [e for _, d, e in decisions if d.kind == "escalate"]
        assert escalated
        assert len(agent.delivery.outbox) == len(escalated)  # held on disk while the broker is away
        mosquitto.start()
        assert agent.wait_idle(180), "events were not delivered after the broker came back"
        assert set(escalated) <= {v.event_id for v in verdicts}
    finally:
        agent.close()
