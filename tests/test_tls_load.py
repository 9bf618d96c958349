"""The shipped broker config (TLS, client certificates, ACL) under load: a flood of distinct events from one
device over TLS, each answered exactly once, with no TLS record broken on the way (a TLS socket written from
two threads at once corrupts records: Mosquitto logs "bad record mac" and drops the connection)."""

from __future__ import annotations

import asyncio
import os
import queue
import time

import pytest
from conftest import CLOUD
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.mqtt import Incoming, MQTTLink
from edgetriage.shared.protocol import decode_verdict, encode_event
from edgetriage.shared.topics import Topics
from fixed_model import FixedDelayModel, noise_events

pytestmark = pytest.mark.faults

TOPICS = Topics("edgetriage")  # the shipped ACL is written for the default prefix
BROKEN = ("bad record mac", "decryption failed", "protocol error")  # what a corrupted TLS record leaves


def test_tls_flood_from_one_device_gets_exactly_one_verdict_each(secure, tmp_path):
    """1,000 distinct events from one device over the shipped TLS config, a model answering in 0.2 s: every
    event gets exactly one verdict at the device within 180 s, the model's (over the queue's capacity an
    event waits, it does not fail), and the broker logs no broken TLS record and drops no connection."""
    n = int(os.environ.get("EDGETRIAGE_FLOOD_EVENTS", "1000"))
    events = noise_events("cam-a", n)
    verdicts: queue.Queue[Incoming] = queue.Queue()
    sources: dict[str, int] = {}
    acked: queue.Queue[int] = queue.Queue()
    device = MQTTLink(secure.mqtt("cam-a"), "cam-a", on_message=verdicts.put, on_published=acked.put)
    device.subscribe(TOPICS.verdicts("cam-a"), 1)
    device.start()
    model = FixedDelayModel(0.2, concurrency=8)
    config = CloudConfig.model_validate({
        "mqtt": secure.mqtt(CLOUD, client_id="edgetriage.cloud").model_dump(),
        "store_path": str(tmp_path / "cloud.db"), "http": {"enabled": False}})
    store = SQLiteStore(tmp_path / "cloud.db")

    async def scenario() -> dict[str, int]:
        service = build_service(config, model, store)
        await service.start()
        try:
            assert await service.wait_connected(10), service.publisher.error
            assert await asyncio.to_thread(device.wait_connected, 10), device.last_error
            assert await asyncio.to_thread(service.publisher.link.subscribed.wait, 10), service.publisher.error
            assert await asyncio.to_thread(device.subscribed.wait, 10)
            started = time.monotonic()

            def flood() -> None:  # the device's own thread side, as the edge agent publishes
                for event in events:
                    while device.publish(TOPICS.events("cam-a"), encode_event(event)) is None:
                        time.sleep(0.05)  # not connected right now: the test's device simply waits

            await asyncio.to_thread(flood)
            counts: dict[str, int] = {}
            deadline = started + 180
            while len(counts) < n and time.monotonic() < deadline:
                try:
                    got = await asyncio.to_thread(verdicts.get, True, 1.0)
                except queue.Empty:
                    continue
                verdict = decode_verdict(got.payload)
                counts[verdict.event_id] = counts.get(verdict.event_id, 0) + 1
                sources[verdict.source] = sources.get(verdict.source, 0) + 1
            await asyncio.sleep(2.0)  # any duplicate still on its way arrives now
            while not verdicts.empty():
                verdict = decode_verdict(verdicts.get_nowait().payload)
                counts[verdict.event_id] = counts.get(verdict.event_id, 0) + 1
            return counts
        finally:
            await service.stop()

    try:
        counts = asyncio.run(scenario())
    finally:
        device.stop()
        store.close()
    log = secure.log_text().lower()
    missing = [e.event_id for e in events if e.event_id not in counts]
    repeated = {k: v for k, v in counts.items() if v > 1}
    assert not missing, f"{len(missing)} of {n} events got no verdict within 180 s; broker log:\n{log[-2000:]}"
    assert not repeated, f"{len(repeated)} events got more than one verdict ({sum(repeated.values())} copies)"
    assert set(counts) == {e.event_id for e in events}
    # the queue (256) is far smaller than the flood: what did not fit waited and was analysed, not failed
    assert sources == {"llm": n}, sources
    assert device.reconnects == 0, f"the device reconnected {device.reconnects} times"
    broken = [line for line in log.splitlines() if any(word in line for word in BROKEN)]
    assert not broken, "the broker saw broken TLS or protocol errors:\n" + "\n".join(broken[:20])
