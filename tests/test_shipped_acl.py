"""The shipped ACL grants what the code publishes: the cloud run with its default config and with
examples/cloud.toml (only ports and paths rewritten) against the shipped broker config gets no publish
refused, Home Assistant publishing (on by default) included, and Home Assistant's own login reads it all."""

from __future__ import annotations

import asyncio
import logging
import queue
import tomllib
from pathlib import Path

import pytest
from brokers import free_port
from conftest import CLOUD
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.main import serve
from edgetriage.shared.mqtt import Incoming, MQTTLink
from edgetriage.shared.protocol import encode_event
from edgetriage.shared.topics import Topics
from edgetriage.shared.verdict_forms import decode_device_verdict
from fixed_model import FixedDelayModel, noise_events

pytestmark = pytest.mark.faults

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cloud.toml"
TOPICS = Topics("edgetriage")
HA_USER = "edgetriage.homeassistant"


def _example(secure, tmp_path: Path) -> dict:
    data = tomllib.loads(EXAMPLE.read_text())
    shipped = secure.mqtt(CLOUD)
    data["mqtt"]["url"] = data["mqtt"]["url"].replace("broker.lan:8885", f"127.0.0.1:{secure.cloud_port}")
    assert data["mqtt"]["url"] == shipped.url, "examples/cloud.toml no longer points at the cloud's listener"
    for key in ("ca_file", "cert_file", "key_file"):
        data["mqtt"]["tls"][key] = str(getattr(shipped.tls, key))
    return data


def _default(secure, tmp_path: Path) -> dict:
    return {"mqtt": secure.mqtt(CLOUD).model_dump(mode="json", exclude_none=True)}


@pytest.mark.parametrize("make", [_default, _example], ids=["default", "example"])
def test_the_cloud_gets_no_refusal_from_the_shipped_acl(make, secure, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    data = make(secure, tmp_path)
    data.update({"store_path": str(tmp_path / "cloud.db"), "http": {"host": "127.0.0.1", "port": free_port()},
                 "delivery": {}})
    config = CloudConfig.model_validate(data)
    assert config.homeassistant.enabled
    ha_seen: queue.Queue[Incoming] = queue.Queue()
    home_assistant = MQTTLink(secure.mqtt(None, port=secure.password_port, username=HA_USER,
                                          password=secure.passwords[HA_USER]), HA_USER, on_message=ha_seen.put)
    for topic in ("homeassistant/#", "edgetriage/ha/#", TOPICS.status("+")):
        home_assistant.subscribe(topic, 1)
    home_assistant.start()
    verdicts: queue.Queue[Incoming] = queue.Queue()
    device = MQTTLink(secure.mqtt("cam-a"), "cam-a", on_message=verdicts.put)
    device.subscribe(TOPICS.answers("cam-a"), 1)  # what a device reads
    device.start()
    events = noise_events("cam-a", 5)

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(serve(config, backend=FixedDelayModel(0.05, 2), stop=stop))
        try:
            assert await asyncio.to_thread(device.wait_connected, 10), device.last_error
            assert await asyncio.to_thread(home_assistant.wait_connected, 10), home_assistant.last_error
            await asyncio.sleep(2.0)  # the service connects and subscribes
            assert device.publish(TOPICS.status("cam-a"), b"online", retain=True) is not None
            for event in events:
                assert device.publish(TOPICS.events("cam-a"), encode_event(event)) is not None
            got = [decode_device_verdict((await asyncio.to_thread(verdicts.get, True, 30)).payload) for _ in events]
            assert {v.event_id for v in got} == {e.event_id for e in events}
            assert home_assistant.publish("homeassistant/status", b"online") is not None  # HA says it is back
            await asyncio.sleep(2.0)
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)

    try:
        asyncio.run(scenario())
    finally:
        device.stop()
        home_assistant.stop()
    # the broker's refusals (an ACL's, at CONNACK, SUBACK or PUBACK), not a listener that was not up yet: a TCP
    # "Connection refused" is retried with backoff and says nothing of the shipped ACL
    refusals = [r.getMessage() for r in caplog.records
                if "refused" in r.getMessage() and "cannot reach MQTT broker" not in r.getMessage()]
    assert refusals == []
    assert device.refused == 0 and home_assistant.refused == 0
    seen = set()
    while not ha_seen.empty():
        seen.add(ha_seen.get_nowait().topic)
    # Home Assistant's login read the discovery configs, the states the cloud published and the device status
    assert any(t.startswith("homeassistant/binary_sensor/edgetriage_cam-a/") for t in seen), seen
    assert {"edgetriage/ha/cam-a/door/verdict", "edgetriage/ha/cam-a/door/alert", TOPICS.status("cam-a")} <= seen
