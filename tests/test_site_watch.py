"""`watch` and the page after feedback (issue 38): an operator's correction is the operator's (not "(llm)"), a
verdict the cloud sends again unchanged after a device re-sent its event is printed once, every line of an event
starts with its capture time, and a corrected card no longer shows the clause that said otherwise. Real
Mosquitto, the real cloud service (MQTT intake, API) with a fixed model of the tests' own."""

from __future__ import annotations

import asyncio
import io
import threading
import time

import paho.mqtt.client as mqtt
import pytest
from edgetriage.broker import free_port
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.teach.feedback import operator_copy
from edgetriage.demo import CloudThread
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.feedbackmark import FeedbackMark
from edgetriage.shared.protocol import Verdict, encode_event
from edgetriage.shared.topics import Topics
from edgetriage.watch import _clock, watch
from fixed_model import FixedDelayModel, noise_events

DEVICE = "porch-9"


@pytest.fixture
def cloud(mosquitto, prefix, tmp_path):
    config = CloudConfig.model_validate({"mqtt": {"url": mosquitto.url, "prefix": prefix},
                                         "store_path": str(tmp_path / "cloud.db"), "http": {"port": 0}})
    thread = CloudThread(config, FixedDelayModel(0.05, 1), free_port())
    thread.start()
    deadline = time.monotonic() + 10
    while not thread.service.publisher.subscribed and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield thread
    finally:
        thread.stop()


def _until(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_watch_says_who_decided_once_each_at_capture_time(mosquitto, prefix, cloud):
    out = io.StringIO()
    ready = threading.Event()
    watcher = threading.Thread(target=watch, args=(MQTTConfig(url=mosquitto.url, prefix=prefix),),
                               kwargs={"out": out, "seconds": 20, "count": 6, "ready": ready.set}, daemon=True)
    watcher.start()
    assert ready.wait(20)
    event = noise_events(DEVICE, 1, seed=11)[0].model_copy(update={"captured_ms": int(time.time() * 1000) - 4000})
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.connect("127.0.0.1", mosquitto.port)
    client.loop_start()
    store = cloud.service.store
    try:
        send = lambda: client.publish(Topics(prefix).events(DEVICE), encode_event(event), qos=1).wait_for_publish(10)  # noqa: E731
        send()
        _until(lambda: store.get_verdict(event.event_id) is not None)
        send()  # a device re-sends after a reconnect: the cloud answers with the stored verdict again
        time.sleep(0.5)
        asyncio.run_coroutine_threadsafe(_give(cloud, event.event_id), cloud.loop).result(10)
        _until(lambda: store.get_verdict(event.event_id).decided_by == "operator")
        send()  # and again, after the correction
        _until(lambda: out.getvalue().count("\n") >= 3)
        time.sleep(1.0)  # any repeat would be printed by now
    finally:
        client.disconnect()
        client.loop_stop()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines  # the event, the model's verdict, the operator's: once each
    escalated, model, operator = lines
    assert "escalated" in escalated and "benign 0.80 (model, +" in model
    assert "alert 1.00 (operator: corrected, was benign, +" in operator and "(llm)" not in operator
    assert all(line.startswith(_clock(event.captured_ms)) for line in lines)  # the capture time, on every line


async def _give(cloud, event_id: str) -> None:
    cloud.service.feedback.give(event_id, correct=False, note="a real visitor")


def test_a_corrected_policy_verdict_shows_no_clause_that_said_otherwise():
    policy = Verdict(event_id="01a24e96-f9cc-7541-83a1-b60ec5166705", device=DEVICE, camera="door",
                     label="person", verdict="alert", confidence=0.9, description="a person at the door",
                     model="policy", created_ms=1, decided_by="policy",
                     policy="alert if: zone = door and dwell > 30 s; otherwise benign",
                     clause="alert if: zone = door and dwell > 30 s")
    mark = FeedbackMark(by="operator", at_ms=2, note="the cleaner", was="alert")
    corrected = operator_copy(policy, "benign", mark, 2)
    assert corrected.decided_by == "operator" and corrected.clause is None and corrected.policy == policy.policy
    confirmed = operator_copy(policy, "alert", mark, 2)
    assert confirmed.clause == policy.clause  # the clause still says why it is an alert
