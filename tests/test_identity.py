"""One identity, one client id, under the shipped broker config (deploy/mosquitto): a device cannot connect
under another client's id (kicking it off, wiping its stored session), while what legitimately runs several
connections keeps working: several cloud workers and the Home Assistant connection."""

from __future__ import annotations

import asyncio
import queue
import re
import threading
import time
import uuid

import paho.mqtt.client as mqtt
import pytest
from conftest import CLOUD
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.ops.ha import HomeAssistantBridge
from edgetriage.cloud.pipeline.service import CloudService
from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis
from edgetriage.shared.mqtt import Incoming, MQTTLink, tls_context
from edgetriage.shared.protocol import decode_verdict, encode_event
from edgetriage.shared.topics import Topics
from fixed_model import FixedDelayModel, noise_events
from paho.mqtt.enums import CallbackAPIVersion

pytestmark = pytest.mark.faults

TOPICS = Topics("edgetriage")


def _link(config, client_id: str, *subscriptions: str, acked: queue.Queue[int] | None = None
          ) -> tuple[MQTTLink, queue.Queue[Incoming]]:
    got: queue.Queue[Incoming] = queue.Queue()
    link = MQTTLink(config, client_id, on_message=got.put, backoff_min_s=0.2, backoff_max_s=1.0,
                    on_published=acked.put if acked is not None else None)
    for topic in subscriptions:
        link.subscribe(topic, 1)
    link.start()
    assert link.wait_connected(10), f"{client_id}: {link.last_error}"
    return link, got


def _impostor(config, client_id: str) -> tuple[mqtt.Client, threading.Event, threading.Event]:
    """A client with a device's own certificate that asks for another client id, with a clean start (which
    would wipe that client's stored session); its events: connected, and answered (connected or refused)."""
    connected, answered = threading.Event(), threading.Event()
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    client.tls_set_context(tls_context(config))

    def on_connect(c, u, f, rc, p) -> None:
        if not rc.is_failure:
            connected.set()
        answered.set()

    client.on_connect = on_connect
    client.on_disconnect = lambda *a: answered.set()  # refused after the handshake (TLS 1.3 checks the
    client.on_connect_fail = lambda *a: answered.set()  # client's certificate after the client is done)
    try:
        client.connect(config.host, config.port, clean_start=True)
    except OSError:  # refused in the TLS handshake: as good as refused
        answered.set()
        return client, connected, answered
    client.loop_start()
    return client, connected, answered


def test_a_device_cannot_take_another_clients_id(secure):
    acked: queue.Queue[int] = queue.Queue()
    cloud, _ = _link(secure.mqtt(CLOUD), "edgetriage-cloud-1", acked=acked)
    b, b_got = _link(secure.mqtt("cam-b"), "cam-b", TOPICS.verdicts("cam-b"))
    assert b.subscribed.wait(10)
    b.stop()  # offline, its session (and subscription) kept by the broker
    try:
        from test_security import _verdict  # a valid verdict payload

        def round_trip() -> None:
            """A verdict for the offline cam-b, PUBACKed: the broker has queued it in cam-b's session."""
            mid = cloud.publish(TOPICS.verdicts("cam-b"), _verdict("cam-b"))
            assert mid is not None
            while acked.get(timeout=10) != mid:
                pass

        for _ in range(3):
            round_trip()
        # device A's certificate asks for cam-b's client id, and for the cloud's
        borrowed = [_impostor(secure.mqtt("cam-a"), "cam-b"), _impostor(secure.mqtt("cam-a"), "edgetriage-cloud-1"),
                    _impostor(secure.mqtt("cam-a", port=secure.cloud_port), "edgetriage-cloud-1")]
        # once the two let in are connected, the broker has done whatever it does to the ids they asked for
        assert borrowed[0][1].wait(10) and borrowed[1][1].wait(10), "the impostors with cam-a's certificate"
        assert borrowed[2][2].wait(10), "the impostor on the cloud's listener got no answer"
        round_trip()  # ... and the cloud's connection still answers: one more verdict queued for cam-b
        assert cloud.connected.is_set() and cloud.reconnects == 0, "the cloud was kicked off by a borrowed id"
        # the impostors that got in did so as cam-a (the broker replaced the id they asked for); the one on
        # the cloud's listener was refused in the TLS handshake (a device certificate is not the cloud's)
        logins = re.findall(r"New client connected from \S+ as (\S+) \(.*u'([^']*)'\)", secure.log_text())
        assert {cid for cid, user in logins if user == "cam-a"} == {"cam-a"}, logins  # (they kick each other)
        assert {cid for cid, user in logins if cid in ("cam-b", "edgetriage-cloud-1")} == {
            "cam-b",
            "edgetriage-cloud-1",
        }
        assert len([1 for cid, _ in logins if cid in ("cam-b", "edgetriage-cloud-1")]) == 2, logins  # the real ones
        assert borrowed[0][1].is_set() and borrowed[1][1].is_set() and not borrowed[2][1].is_set()
        for client, *_ in borrowed:
            client.loop_stop()
            client.disconnect()
        # cam-b's stored session survived: its four queued verdicts arrive when it comes back
        b2, b2_got = _link(secure.mqtt("cam-b"), "cam-b")
        try:
            got = [b2_got.get(timeout=10) for _ in range(4)]
            assert {m.topic for m in got} == {TOPICS.verdicts("cam-b")}
        finally:
            b2.stop()
    finally:
        cloud.stop()


def test_several_cloud_workers_and_home_assistant_share_the_cloud_identity(secure, tmp_path):
    """Two workers on a shared subscription and each one's Home Assistant connection, all with the cloud's
    certificate: every event answered once, nobody kicked off."""
    redis_prefix = f"test-id-{uuid.uuid4().hex[:8]}"
    n = 40
    events = noise_events("cam-a", n)
    device, verdicts = _link(secure.mqtt("cam-a"), "cam-a", TOPICS.verdicts("cam-a"))
    store = RedisStore(connect_redis("redis://127.0.0.1:6379/0"), redis_prefix)

    def config(worker: str) -> CloudConfig:
        return CloudConfig.model_validate({
            "mqtt": secure.mqtt(CLOUD, client_id=f"edgetriage-cloud-{worker}").model_dump(),
            "store_path": str(tmp_path / f"{worker}.db"), "http": {"enabled": False},
            "delivery": {"shared": True, "redis_url": "redis://127.0.0.1:6379/0", "redis_prefix": redis_prefix}})

    async def scenario() -> list[CloudService]:
        workers, bridges = [], []
        for name in ("w1", "w2"):
            cfg = config(name)
            service = build_service(cfg, FixedDelayModel(0.05, 2), RedisStore(connect_redis(cfg.delivery.redis_url),
                                                                              redis_prefix))
            bridge = HomeAssistantBridge(cfg.homeassistant, cfg.mqtt, client_id=f"{cfg.mqtt.client_id}-ha")
            bridge.attach(service)
            bridge.start()
            await service.start()
            workers.append(service)
            bridges.append(bridge)
        try:
            for w in workers:
                assert await w.wait_connected(10), w.publisher.error
            for bridge in bridges:
                assert await bridge.wait_connected(10)
            for w in workers:  # both workers' shared subscriptions granted (SUBACK): each may be handed events
                assert await asyncio.to_thread(w.publisher.link.subscribed.wait, 10), w.publisher.error
            assert await asyncio.to_thread(device.subscribed.wait, 10)
            for event in events:
                assert device.publish(TOPICS.events("cam-a"), encode_event(event)) is not None
            seen: dict[str, int] = {}
            deadline = time.monotonic() + 60
            while len(seen) < n and time.monotonic() < deadline:
                try:
                    v = decode_verdict((await asyncio.to_thread(verdicts.get, True, 1.0)).payload)
                except queue.Empty:
                    continue
                seen[v.event_id] = seen.get(v.event_id, 0) + 1
            assert set(seen) == {e.event_id for e in events} and set(seen.values()) == {1}
            assert all(w.publisher.connected and w.publisher.link.reconnects == 0 for w in workers)
            assert all(b.connected and b._link.reconnects == 0 for b in bridges)
            return workers
        finally:
            for w in workers:
                await w.stop()
            for bridge in bridges:
                await bridge.stop()

    try:
        workers = asyncio.run(scenario())
        assert all(w.stats.llm > 0 for w in workers), [w.stats.llm for w in workers]  # both took their share
        assert "already connected" not in secure.log_text()
    finally:
        device.stop()
        store.delete_all()
        store.close()
