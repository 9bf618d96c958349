"""The cloud's queue is the cloud's (issue 40): with `[delivery] shared = true` the cloud takes events through the
shared subscription `$share/edgetriage/edgetriage/v1/+/events`. Mosquitto's plain acl_file grants any SUBSCRIBE
and filters on delivery, so a device that joins that share takes its round-robin turn of every device's events
and the broker drops them. Against the shipped broker config (deploy/mosquitto: TLS, certificates, the
dynamic-security plugin with a role per device) and the real cloud service: the device's subscriptions to any
events topic, shared or not, are refused at SUBACK, and every event of another device reaches the cloud. The
same attack against the plain `acl` file shows the hole the plugin closes.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from brokers import DEPLOY, Mosquitto, free_port
from conftest import CLOUD
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis
from edgetriage.shared.mqtt import MQTTLink
from edgetriage.shared.protocol import encode_event
from edgetriage.shared.topics import Topics
from fixed_model import FixedDelayModel, noise_events

TOPICS = Topics("edgetriage")
REDIS_URL = "redis://127.0.0.1:6379/0"
STOLEN = ("$share/edgetriage/edgetriage/v1/+/events", "$share/other/edgetriage/v1/cam-b/events",
          "edgetriage/v1/+/events", "edgetriage/v1/cam-b/events")


def _received_by_the_cloud(broker: Mosquitto, tmp_path: Path, thief_subscriptions: tuple[str, ...]) -> tuple[int, list]:
    """(events of cam-b the shared-subscription cloud received of 20, the thief's refused subscriptions)."""
    prefix = f"test-share-{uuid.uuid4().hex[:8]}"
    config = CloudConfig.model_validate({
        "mqtt": broker.mqtt(CLOUD, client_id=f"{prefix}-cloud").model_dump(mode="json", exclude_none=True),
        "store_path": str(tmp_path / "c.db"),
        "http": {"host": "127.0.0.1", "port": free_port()},
        "delivery": {"shared": True, "redis_url": REDIS_URL, "redis_prefix": prefix},
        "homeassistant": {"enabled": False}})
    thief = MQTTLink(broker.mqtt("cam-a"), "cam-a", on_message=lambda m: None)
    for topic in thief_subscriptions:
        thief.subscribe(topic, 1)
    victim = MQTTLink(broker.mqtt("cam-b"), "cam-b", on_message=lambda m: None)
    events = noise_events("cam-b", 20)
    store = RedisStore(connect_redis(REDIS_URL), prefix)
    service = build_service(config, FixedDelayModel(0.0, 4), store)

    async def scenario() -> int:
        await service.start()
        try:
            assert await service.wait_connected(10)
            thief.start()
            victim.start()
            assert await asyncio.to_thread(thief.wait_connected, 10), thief.last_error
            assert await asyncio.to_thread(victim.wait_connected, 10), victim.last_error
            await asyncio.sleep(1.0)  # the thief's SUBACKs are in
            for event in events:
                assert victim.publish(TOPICS.events("cam-b"), encode_event(event), qos=1) is not None
            deadline = time.monotonic() + 8  # well before a device's 60 s re-send
            while service.stats.received < len(events) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
            return service.stats.received
        finally:
            await service.stop()

    try:
        received = asyncio.run(scenario())
    finally:
        thief.stop()
        victim.stop()
        store.delete_all()
        store.close()
    return received, list(thief.refused_subscriptions)


def test_a_devices_subscription_to_any_events_topic_is_refused_and_the_cloud_gets_every_event(secure, tmp_path):
    received, refused = _received_by_the_cloud(secure, tmp_path, STOLEN)
    assert sorted(refused) == sorted(STOLEN)
    assert received == 20


@pytest.mark.faults
def test_the_plain_acl_file_grants_the_share_and_loses_events(tmp_path):
    """Why the shipped config loads the plugin: with the acl_file alone the same device takes its share."""
    broker = Mosquitto.shipped(tmp_path / "broker", ("cam-a", "cam-b"), acl=(DEPLOY / "acl").read_text()).start()
    try:
        received, refused = _received_by_the_cloud(broker, tmp_path, STOLEN[:1])
    finally:
        broker.stop()
    assert refused == [] and received < 20
