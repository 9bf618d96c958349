"""The cloud service end to end: a real Mosquitto, the real small LLM, real crops from the sample clip, an
MQTT 5 client on the device side, SQLite on disk and the HTTP API on a real port.

LLM calls in this file: 5 (three in the pipeline test, two in the redelivery test)."""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import aiohttp
import cv2
import numpy as np
import paho.mqtt.client as mqtt
import pytest
from edgetriage.cloud.compose import build_app, build_service
from edgetriage.cloud.config import CloudConfig, HTTPConfig, ReusePolicy
from edgetriage.cloud.http.api import run_api
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.pipeline.service import CloudService
from edgetriage.cloud.storage.store import SQLiteStore as Store
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.ids import uuid7
from edgetriage.shared.phash import hamming
from edgetriage.shared.protocol import (
    Detection,
    Event,
    ProtocolError,
    ReuseRule,
    Verdict,
    decode_load_report,
    decode_verdict,
    encode_event,
)
from edgetriage.shared.reuse import scope_key
from edgetriage.shared.topics import Topics
from edgetriage.shared.verdict_forms import decode_device_verdict
from paho.mqtt.enums import CallbackAPIVersion

BOX = (370, 0, 560, 400)  # x1, y1, x2, y2 in the 768x432 frame: where each visitor stands
DEVICE = "pi-lab-1"


# -- real inputs ---------------------------------------------------------------------------------------
def _crop_at(clip: Path, seconds: float) -> tuple[bytes, tuple[int, int], np.ndarray]:
    cap = cv2.VideoCapture(str(clip))
    try:
        cap.set(cv2.CAP_PROP_POS_MSEC, seconds * 1000)
        ok, frame = cap.read()
    finally:
        cap.release()
    assert ok, f"cannot read {clip} at {seconds}s"
    x1, y1, x2, y2 = BOX
    crop = frame[y1:y2, x1:x2]
    ok, jpeg = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, 85])
    assert ok
    return jpeg.tobytes(), (crop.shape[1], crop.shape[0]), crop


def _dct64(image: np.ndarray) -> str:
    """The 64-bit DCT perceptual hash the device sends (32x32 grey, low 8x8 frequencies, above the median)."""
    grey = cv2.resize(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), (32, 32), interpolation=cv2.INTER_AREA)
    low = cv2.dct(grey.astype(np.float32))[:8, :8].flatten()
    bits = low > np.median(low[1:])
    return f"{int(''.join('1' if b else '0' for b in bits), 2):016x}"


def _flip(phash: str, bits: int) -> str:
    return f"{int(phash, 16) ^ ((1 << bits) - 1):016x}"


@pytest.fixture(scope="module")
def crops(clip_one_by_one) -> dict[str, tuple[bytes, tuple[int, int], str]]:
    """Three visitors, as (jpeg, (w, h), phash)."""
    out = {}
    for name, t in (("first", 12.0), ("second", 30.0), ("third", 60.0)):
        jpeg, size, image = _crop_at(clip_one_by_one, t)
        out[name] = (jpeg, size, _dct64(image))
    for a, b in (("first", "second"), ("first", "third"), ("second", "third")):
        assert hamming(out[a][2], out[b][2]) > 10, f"the {a} and {b} visitors must not look alike to the cache"
    return out


def _event(crop: tuple[bytes, tuple[int, int], str], n: int, *, phash: str | None = None, device: str = DEVICE,
           camera: str = "hall") -> Event:
    jpeg, size, own_phash = crop
    t = int(time.time() * 1000) + n  # event ids sort in the order the test makes them
    return Event(event_id=uuid7(t), device=device, camera=camera, site="lab", captured_ms=t, label="person",
                 score=0.62, uncertain=True, track_id=n,
                 detections=[Detection(label="person", score=0.62, box=(0.48, 0.0, 0.73, 0.93))],
                 phash=phash or own_phash, reason="detector unsure", crop=jpeg, crop_size=size)


# -- the device side -----------------------------------------------------------------------------------
class DeviceClient:
    """What a device (or any subscriber) sees: a paho client publishing events and collecting verdicts."""

    def __init__(self, url: str, prefix: str, protocol: int = mqtt.MQTTv5, kind: str = "verdicts") -> None:
        parsed = urlparse(url)
        self.topics = Topics(prefix)
        self.verdicts: queue.Queue[tuple[str, bytes]] = queue.Queue()
        ready = threading.Event()
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"dev-{uuid.uuid4().hex[:8]}", protocol=protocol)
        client.on_message = lambda c, u, m: self.verdicts.put((m.topic, bytes(m.payload)))
        client.on_subscribe = lambda *a: ready.set()
        client.on_connect = lambda c, u, f, rc, p: c.subscribe(f"{prefix}/v1/+/{kind}", 1)
        client.connect(parsed.hostname, parsed.port)
        client.loop_start()
        assert ready.wait(10), "test client could not subscribe"
        self.client = client

    def publish(self, device: str, payload: bytes) -> None:
        info = self.client.publish(self.topics.events(device), payload, qos=1)
        info.wait_for_publish(10)

    async def next_verdict(self, timeout: float = 180) -> tuple[str, bytes]:
        return await asyncio.to_thread(self.verdicts.get, True, timeout)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


async def _until(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


def _config(mosquitto, prefix: str, tmp_path: Path, **kw) -> CloudConfig:
    protocol = kw.pop("protocol", "5")
    return CloudConfig(
        mqtt=MQTTConfig(url=mosquitto.url, prefix=prefix, client_id=f"{prefix}-cloud", protocol=protocol),
        store_path=str(tmp_path / "state" / "cloud.db"),
        http=HTTPConfig(port=0),
        **kw,
    )


# -- tests ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_events_in_verdicts_out_with_dedupe_cache_rejects_and_api(mosquitto, prefix, llm_analyzer, crops, tmp_path,
                                                                   caplog):
    config = _config(mosquitto, prefix, tmp_path)
    store = Store(config.store_path)
    announced: list[Verdict] = []
    service = build_service(config, llm_analyzer, store, on_verdict=announced.append)
    first = _event(crops["first"], 1)
    near = _event(crops["first"], 2, phash=_flip(first.phash, 3))  # the same visitor, a slightly different crop
    other = _event(crops["second"], 3)
    third = _event(crops["third"], 5)
    third_near = _event(crops["third"], 6, phash=_flip(third.phash, 4))

    async def scenario() -> None:
        await service.start()
        assert await service.wait_connected(10)
        device = DeviceClient(mosquitto.url, prefix)
        try:
            # garbage first: once it is counted the subscription is live; the service must carry on
            with caplog.at_level(logging.WARNING, logger="edgetriage.cloud.service"):
                device.publish(DEVICE, b"\xc1 definitely not msgpack")
                await _until(lambda: service.stats.rejected == 1)
            assert "not valid MessagePack" in caplog.text

            device.publish(DEVICE, encode_event(first))
            topic, raw = await device.next_verdict()
            verdict = decode_verdict(raw)
            assert topic == f"{prefix}/v1/{DEVICE}/verdicts"
            assert (verdict.event_id, verdict.source, verdict.device, verdict.camera) == (
                first.event_id,
                "llm",
                DEVICE,
                "hall",
            )
            # the model's own answer: named after it, and a description, not a fallback's reason
            assert verdict.model == llm_analyzer.name and verdict.description.strip()
            assert not verdict.description.startswith("no model verdict")
            assert verdict.timings.analyze_ms > 0 and verdict.timings.total_ms >= verdict.timings.analyze_ms
            assert verdict.cache is not None
            assert (verdict.cache.phash, verdict.cache.scope, verdict.cache.ttl_s) == (first.phash, "camera", 3600)
            assert verdict.cache.prompt_version == llm_analyzer.prompt_version(first)
            assert store.get_verdict(first.event_id) == verdict  # stored before it was published
            assert service.stats.llm == 1

            # the same event again (a device retry): the stored verdict again, the model not asked
            device.publish(DEVICE, encode_event(first))
            _, raw_again = await device.next_verdict(30)
            assert raw_again == raw
            assert (service.stats.duplicates, service.stats.llm) == (1, 1)

            # a look-alike crop 3 bits away: answered from the cache, pointing at the model's answer
            device.publish(DEVICE, encode_event(near))
            reused = decode_verdict((await device.next_verdict(30))[1])
            assert (reused.event_id, reused.source, reused.reused_from) == (
                near.event_id,
                "cloud_cache",
                first.event_id,
            )
            assert (reused.verdict, reused.confidence, reused.description, reused.model) == (
                verdict.verdict, verdict.confidence, verdict.description, verdict.model)
            assert reused.cache is not None and reused.cache.phash == near.phash
            assert (service.stats.cache_hits, service.stats.llm) == (1, 1)

            # an event claiming another device's identity is refused
            device.publish(DEVICE, encode_event(_event(crops["first"], 4, device="pi-lab-2")))
            await _until(lambda: service.stats.rejected == 2)

            # a different visitor: the cache must not answer it
            device.publish(DEVICE, encode_event(other))
            fresh = decode_verdict((await device.next_verdict())[1])
            assert (fresh.event_id, fresh.source) == (other.event_id, "llm")
            assert service.stats.llm == 2
            assert device.verdicts.empty()  # rejected messages got no verdict

            # a burst before any answer exists: a retry of an event still being analysed waits for that
            # analysis, and a look-alike queued behind it is answered by its verdict, so one model call
            for payload in (encode_event(third), encode_event(third), encode_event(third_near)):
                device.publish(DEVICE, payload)
            burst = [decode_verdict((await device.next_verdict())[1]) for _ in range(3)]
            by_id = {v.event_id: v for v in burst}
            assert sorted(v.event_id for v in burst) == sorted([third.event_id, third.event_id, third_near.event_id])
            assert by_id[third.event_id].source == "llm" and burst.count(by_id[third.event_id]) == 2
            assert (by_id[third_near.event_id].source, by_id[third_near.event_id].reused_from) == (
                "cloud_cache", third.event_id)
            assert (service.stats.llm, service.stats.duplicates, service.stats.cache_hits) == (3, 2, 2)
            assert [v.event_id for v in announced] == [first.event_id, near.event_id, other.event_id,
                                                       third.event_id, third_near.event_id]

            await _check_api(store, service, first, near, other, [third_near, third])
        finally:
            device.close()
            await service.stop()

    asyncio.run(scenario())
    store.close()


async def _check_api(store: Store, service: CloudService, first: Event, near: Event, other: Event,
                     newer: list[Event]) -> None:
    runner = await run_api(build_app(store, service, auth=ApiAuth("operator-token")), "127.0.0.1", 0)
    port = runner.addresses[0][1]
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer operator-token"}) as http:
            async with http.get(f"{base}/healthz") as r:
                health = await r.json()
                assert r.status == 200 and health["status"] == "ok" and health["mqtt_connected"] is True
                assert health["mqtt_subscribed"] is True and "mqtt_error" not in health
                assert health["stats"]["llm"] == 3 and health["stats"]["rejected"] == 2

            async with http.get(f"{base}/v1/events") as r:
                listed = await r.json()
            assert r.status == 200
            oldest = [other.event_id, near.event_id, first.event_id]
            assert [e["event_id"] for e in listed] == [e.event_id for e in newer] + oldest  # newest first
            assert [e["verdict"]["source"] for e in listed] == ["cloud_cache", "llm", "llm", "cloud_cache", "llm"]

            async with http.get(
                f"{base}/v1/events", params={"device": DEVICE, "before": newer[-1].event_id, "limit": "1"}
            ) as r:
                page = await r.json()
            async with http.get(f"{base}/v1/events", params={"limit": "5", "before": page[0]["event_id"]}) as r:
                rest = await r.json()
            assert [e["event_id"] for e in page + rest] == oldest
            async with http.get(f"{base}/v1/events", params={"device": "pi-lab-2"}) as r:
                assert await r.json() == []

            async with http.get(f"{base}/v1/events/{first.event_id}") as r:
                one = await r.json()
            assert r.status == 200
            assert (one["event_id"], one["label"], one["phash"], one["crop_bytes"]) == (
                first.event_id, "person", first.phash, len(first.crop))
            assert "crop" not in one and one["verdict"]["source"] == "llm"
            async with http.get(f"{base}/v1/events/{first.event_id}/crop") as r:
                assert r.content_type == "image/jpeg" and await r.read() == first.crop

            for path, status in ((f"/v1/events/{uuid7()}", 404), ("/v1/events?limit=many", 400),
                                 ("/v1/events?device=Not_A_Device", 400), ("/nowhere", 404)):
                async with http.get(base + path) as r:
                    body = await r.json()
                    assert r.status == status and body["error"], (path, body)
    finally:
        await runner.cleanup()


@pytest.mark.slow
@pytest.mark.faults
def test_event_abandoned_mid_analysis_is_redelivered_and_answered(mosquitto, prefix, llm_analyzer, crops, tmp_path):
    """Stopping mid-analysis ends the event's claim (it was acknowledged once claimed); the next service
    start finds the claim run out and the event stored without a verdict, takes it over and answers it."""
    config = _config(mosquitto, prefix, tmp_path, drain_timeout_s=0.0)
    store = Store(config.store_path)
    event = _event(crops["second"], 1)

    async def scenario() -> None:
        device = DeviceClient(mosquitto.url, prefix)
        try:
            first = build_service(config, llm_analyzer, store)
            await first.start()
            assert await first.wait_connected(10)
            # the broker granted the SUBSCRIBE (SUBACK) before the event is published
            assert await asyncio.to_thread(first.publisher.link.subscribed.wait, 10), first.publisher.error
            device.publish(DEVICE, encode_event(event))
            await _until(lambda: store.get_event(event.event_id) is not None)
            await first.stop()  # drain_timeout_s=0: the analysis is abandoned, its claim ended
            assert store.get_verdict(event.event_id) is None and device.verdicts.empty()

            second = build_service(config, llm_analyzer, store)
            await second.start()
            try:
                verdict = decode_verdict((await device.next_verdict())[1])
                assert (verdict.event_id, verdict.source) == (event.event_id, "llm")
                assert (second.stats.taken_over, second.stats.llm) == (1, 1)
                assert store.get_verdict(event.event_id) == verdict
            finally:
                await second.stop()
        finally:
            device.close()

    asyncio.run(scenario())
    store.close()


@pytest.mark.slow
def test_mqtt311_service_answers_from_the_cache_with_a_bounded_rule(mosquitto, prefix, llm_analyzer, crops, tmp_path):
    """The embedded demo broker speaks 3.1.1: the same pipeline runs. A verdict made 50 minutes ago under a
    1-hour ttl answers a look-alike, and the rule it hands out expires with the original."""
    config = _config(mosquitto, prefix, tmp_path, protocol="3.1.1", reuse=ReusePolicy(max_distance=6))
    store = Store(config.store_path)
    made = _event(crops["first"], 1)
    created = int(time.time() * 1000) - 50 * 60 * 1000
    rule = ReuseRule(scope="camera", device=DEVICE, camera="hall", site="lab", label="person", phash=made.phash,
                     max_distance=6, prompt_version=llm_analyzer.prompt_version(made), ttl_s=3600)
    original = Verdict(event_id=made.event_id, device=DEVICE, camera="hall", label="person", verdict="benign",
                       confidence=0.9, description="a visitor standing at the table", model="earlier-model",
                       created_ms=created, cache=rule)
    assert store.put_event(made, created)
    store.put_verdict(original)
    look_alike = _event(crops["first"], 2, phash=_flip(made.phash, 5))

    async def scenario() -> None:
        service = build_service(config, llm_analyzer, store)
        await service.start()
        device = DeviceClient(mosquitto.url, prefix, protocol=mqtt.MQTTv311)
        try:
            assert await service.wait_connected(10)
            assert await asyncio.to_thread(service.publisher.link.subscribed.wait, 10), service.publisher.error
            device.publish(DEVICE, encode_event(look_alike))
            verdict = decode_verdict((await device.next_verdict(30))[1])
            assert (verdict.source, verdict.reused_from, verdict.verdict) == ("cloud_cache", made.event_id, "benign")
            assert verdict.cache is not None and 0 < verdict.cache.ttl_s <= 600
            assert service.stats.llm == 0
        finally:
            device.close()
            await service.stop()

    asyncio.run(scenario())
    store.close()


# -- the store on its own (no broker, no model) ---------------------------------------------------------
def _verdict_for(event: Event, *, created_ms: int, rule: ReuseRule | None, source: str = "llm") -> Verdict:
    return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                   verdict="alert", confidence=0.7, description="someone at the door", model="m",
                   source=source, created_ms=created_ms, cache=rule)


def _rule_for(event: Event, *, scope: str = "camera", max_distance: int = 10, ttl_s: int = 3600,
              prompt_version: str = "p1") -> ReuseRule:
    return ReuseRule(scope=scope, device=event.device, camera=event.camera, site=event.site, label=event.label,
                     phash=event.phash, max_distance=max_distance, prompt_version=prompt_version, ttl_s=ttl_s)


def test_store_lookup_follows_the_reuse_rule(crops, tmp_path):
    store = Store(tmp_path / "a" / "cloud.db")
    now = int(time.time() * 1000)
    base = _event(crops["first"], 1, phash="0f0f0f0f0f0f0f0f")
    near = _event(crops["first"], 2, phash=_flip(base.phash, 2))  # 2 bits from base
    assert store.put_event(base, now) and not store.put_event(base, now)
    store.put_verdict(_verdict_for(base, created_ms=now, rule=_rule_for(base)))
    store.put_verdict(_verdict_for(near, created_ms=now, rule=_rule_for(near)))
    camera_key = scope_key("camera", DEVICE, "hall", "lab")
    ask = {"scope_key": camera_key, "label": "person", "phash_alg": "dct64", "prompt_version": "p1", "now_ms": now}

    assert store.lookup(phash=_flip(base.phash, 3), **ask).event_id == near.event_id  # 1 bit from near, 3 from base
    assert store.lookup(phash=base.phash, **ask).event_id == base.event_id
    assert store.lookup(phash=_flip(base.phash, 13), **ask) is None  # 11 bits from near: too far
    assert store.lookup(phash=base.phash, **{**ask, "label": "car"}) is None
    assert store.lookup(phash=base.phash, **{**ask, "prompt_version": "p2"}) is None
    assert store.lookup(phash=base.phash, **{**ask, "scope_key": scope_key("camera", DEVICE, "yard", "lab")}) is None
    assert store.lookup(phash=base.phash, **{**ask, "now_ms": now + 3601 * 1000}) is None  # expired

    # a site-wide rule answers another camera of the same site; a fallback verdict is never reused
    yard = _event(crops["second"], 3, camera="yard")
    store.put_verdict(_verdict_for(yard, created_ms=now, rule=_rule_for(yard, scope="site")))
    site_ask = {**ask, "scope_key": scope_key("site", DEVICE, "door", "lab")}
    assert store.lookup(phash=yard.phash, **site_ask).event_id == yard.event_id
    store.put_verdict(_verdict_for(yard, created_ms=now, rule=None, source="fallback"))  # replaced: rule gone
    assert store.lookup(phash=yard.phash, **site_ask) is None
    assert store.get_verdict(yard.event_id).source == "fallback"
    store.close()

    reopened = Store(tmp_path / "a" / "cloud.db")  # durable across a restart
    assert reopened.lookup(phash=base.phash, **ask).event_id == base.event_id
    assert reopened.get_event(base.event_id)["verdict"]["verdict"] == "alert"
    assert reopened.get_event(near.event_id) is None  # its verdict was stored, the event itself never was
    reopened.close()


def test_store_refuses_a_file_that_is_not_a_database(tmp_path):
    bad = tmp_path / "cloud.db"
    bad.write_bytes(b"this is not SQLite" * 100)
    from edgetriage.cloud.storage.store import StoreError

    with pytest.raises(StoreError, match="cloud.db"):
        Store(bad)


@pytest.mark.slow
def test_process_without_a_broker_rejects_and_counts(tmp_path, crops, llm_analyzer):
    """`process` is the pipeline without MQTT (the HTTP intake calls it): a reject raises ProtocolError with
    the reason, is counted, stores nothing and never reaches the model."""
    config = CloudConfig(store_path=str(tmp_path / "cloud.db"))
    store = Store(config.store_path)
    service = build_service(config, llm_analyzer, store)
    topic = Topics(config.mqtt.prefix).events(DEVICE)

    async def scenario() -> None:
        for payload, on in ((b"", topic), (json.dumps({"v": 1}).encode(), topic),
                            (encode_event(_event(crops["first"], 1)), "elsewhere/v1/pi-lab-1/events")):
            with pytest.raises(ProtocolError):
                await service.process(payload, on)

    asyncio.run(scenario())
    assert (service.stats.received, service.stats.rejected) == (3, 3)
    assert (service.stats.llm, service.stats.fallback) == (0, 0)
    assert store.list_events() == []
    store.close()



# -- scheduling: bounded queue, priorities, deadlines, budgets, overload ----------------------------------
class LoadWatcher:
    """A subscriber to the retained `<prefix>/v1/_cloud/load` topic, as a device has."""

    def __init__(self, url: str, prefix: str) -> None:
        parsed = urlparse(url)
        self.topic = Topics(prefix).cloud_load()
        self.messages: queue.Queue[tuple[dict, bool]] = queue.Queue()
        ready = threading.Event()
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"load-{uuid.uuid4().hex[:8]}",
                             protocol=mqtt.MQTTv5)
        # read with the decoder a device uses (shared.protocol.LoadReport)
        client.on_message = lambda c, u, m: self.messages.put((decode_load_report(m.payload).model_dump(),
                                                               bool(m.retain)))
        client.on_subscribe = lambda *a: ready.set()
        client.on_connect = lambda c, u, f, rc, p: c.subscribe(self.topic, 1)
        client.connect(parsed.hostname, parsed.port)
        client.loop_start()
        assert ready.wait(10)
        self.client = client

    async def next(self, timeout: float = 15) -> tuple[dict, bool]:
        return await asyncio.to_thread(self.messages.get, True, timeout)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def test_overload_is_announced_and_cleared_a_full_queue_makes_events_wait_not_fail(mosquitto, prefix, crops,
                                                                                   tmp_path):
    """The model side is an OpenAI-compatible endpoint that holds every request until released. One event is
    with it, the queue (3) fills: overload is published retained; a newcomer of the same device and tier
    waits (no verdict), a more urgent one takes the place of the newest of the least urgent (which waits);
    the event with the model gets "unknown" at its deadline. Nothing over capacity is answered with a
    fallback: once the model answers, every waiting event gets the model's verdict, late, and the overload
    is cleared."""
    from edgetriage.cloud.analysis import build_backend

    async def scenario() -> None:
        release = asyncio.Event()
        answer = json.dumps({"description": "a person at the door", "verdict": "benign", "confidence": 0.7})
        body = json.dumps({"id": "c1", "object": "chat.completion", "model": "held", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 20}}).encode()

        async def held(reader, writer):  # a minimal HTTP/1.1 chat-completions server that waits for `release`
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length:"))
                    await reader.readexactly(length)
                    await release.wait()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(body)).encode() + b"\r\n\r\n" + body)
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError, StopIteration):
                writer.close()

        server = await asyncio.start_server(held, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
        config = _config(mosquitto, prefix, tmp_path, analyzer={"backend": "openai", "openai": {"base_urls": [url]}},
                         scheduler={"queue_size": 3, "overload_depth": 2, "clear_depth": 0, "concurrency": 1,
                                    "deadline_s": 5.0, "batch_wait_ms": 0, "load_refresh_s": 1.0,
                                    "priorities": [{"tier": 0, "camera": "door"}]})
        store = Store(config.store_path)
        backend = build_backend(config.analyzer)
        service = build_service(config, backend, store)
        await service.start()
        assert await service.wait_connected(10)
        watcher = LoadWatcher(mosquitto.url, prefix)
        device = DeviceClient(mosquitto.url, prefix)
        try:
            initial, _ = await watcher.next()
            assert initial["overloaded"] is False  # a fresh service clears any stale report

            def ev(n: int, camera: str = "hall") -> Event:
                spread = (0x9E3779B97F4A7C15 * n) & ((1 << 64) - 1)  # ~32 bits apart from any other n
                return _event(crops["first"], n, phash=f"{spread:016x}", camera=camera)

            events = [ev(i) for i in range(1, 5)]  # far apart: the cache never answers one with another
            device.publish(DEVICE, encode_event(events[0]))
            await _until(lambda: service.scheduler.in_flight == 1)
            # the others come 2 s later, so their deadlines (from arrival) leave time to release the model
            # after the first one's runs out; arriving together, the next one dispatched would meet its own
            # deadline within the few ms the test takes to release
            await asyncio.sleep(2.0)
            for event in events[1:]:
                device.publish(DEVICE, encode_event(event))
            load, _ = await watcher.next()
            assert load["overloaded"] is True and load["queue_depth"] >= 2 and load["ts"] > 0
            await _until(lambda: service.scheduler.queue_depth == 3)

            waiting = ev(5)
            device.publish(DEVICE, encode_event(waiting))
            await _until(lambda: service.scheduler.stats.queue_full >= 1)
            urgent = ev(6, camera="door")
            device.publish(DEVICE, encode_event(urgent))
            await _until(lambda: service.scheduler.stats.shed == 1)
            # over capacity, nothing is answered: the first verdict is the model's non-answer at its deadline
            first = decode_verdict((await device.next_verdict(10))[1])
            assert first.event_id == events[0].event_id and first.source == "fallback"
            assert "did not answer within the deadline of 5 s" in first.description
            assert store.get_verdict(waiting.event_id) is None and store.get_verdict(events[-1].event_id) is None

            release.set()  # the model answers from now on: everything that waited is analysed, late
            rest: dict[str, Verdict] = {}
            while len(rest) < 5:
                verdict = decode_verdict((await device.next_verdict(30))[1])
                rest[verdict.event_id] = verdict
            assert set(rest) == {e.event_id for e in events[1:]} | {waiting.event_id, urgent.event_id}
            assert {v.source for v in rest.values()} == {"llm"}
            cleared, _ = await watcher.next()
            while cleared["overloaded"]:  # refreshed reports while it lasted
                cleared, _ = await watcher.next(30)
            capacity = {"verdicts_per_s", "capacity_per_s", "queue_wait_ms"}  # measured once verdicts were made
            assert {k: v for k, v in cleared.items() if k not in capacity} == {"overloaded": False, "queue_depth": 0,
                                                                               "ts": cleared["ts"]}
            assert service.stats.fallback == 1 and service.stats.llm == 5
        finally:
            device.close()
            watcher.close()
            await service.stop()
            await backend.close()
            server.close()
            store.close()
        late = LoadWatcher(mosquitto.url, prefix)  # a device that connects later reads the retained report
        try:
            report, retained = await late.next()
            assert report["overloaded"] is False and retained
        finally:
            late.close()

    asyncio.run(scenario())


def test_token_buckets_refill_by_the_hour_and_say_when():
    from edgetriage.cloud.config import TokenBudgetConfig
    from edgetriage.cloud.scheduling.token_budget import Budgets

    now = [1000.0]
    budgets = Budgets(TokenBudgetConfig(device_tokens_per_hour=3600, fleet_tokens_per_hour=36_000,
                                   devices={"pi-big": 7200}), clock=lambda: now[0])
    assert budgets.refusal("pi-a") is None
    budgets.charge("pi-a", 3600 + 30)  # the last request may overdraw: its size is known only afterwards
    assert "device pi-a is spent (3600 tokens/hour)" in budgets.refusal("pi-a") and "about 31 s" in budgets.refusal(
        "pi-a"
    )
    assert budgets.refusal("pi-big") is None  # its own, larger budget
    now[0] += 31
    assert budgets.refusal("pi-a") is None  # refilled at 1 token/s
    budgets.charge(None, 36_000)  # background work spends only the fleet's budget
    assert "fleet's token budget is spent" in budgets.refusal("pi-big")
    assert budgets.refusal("pi-a", fleet_only=True).startswith("the fleet's")


@pytest.mark.slow
def test_priority_tiers_go_first_and_a_spent_device_budget_answers_at_once(prefix, llm_analyzer, crops, tmp_path):
    """With the real model busy, an event from an urgent camera that arrived last is analysed before an
    earlier one; a device whose budget is 0 gets "unknown" at once without waiting for the model."""
    config = CloudConfig.model_validate({
        "store_path": str(tmp_path / "cloud.db"), "mqtt": {"prefix": prefix},
        "scheduler": {"batch_wait_ms": 0, "priorities": [{"tier": 0, "camera": "door"}],
                      "budget": {"devices": {"pi-greedy": 0}}}})
    store = Store(config.store_path)
    from edgetriage.cloud.analysis import ThreadedBackend

    service = build_service(config, ThreadedBackend(llm_analyzer.engine, max_batch=1), store)
    topic = Topics(prefix).events

    async def scenario() -> list[Verdict]:
        busy = _event(crops["first"], 1)
        early = _event(crops["second"], 2)
        urgent = _event(crops["third"], 3, camera="door")
        greedy = _event(crops["second"], 4, device="pi-greedy")
        first = asyncio.create_task(service.process(encode_event(busy), topic(DEVICE)))
        await _until(lambda: service.scheduler.in_flight == 1)
        tasks = [asyncio.create_task(service.process(encode_event(e), topic(DEVICE))) for e in (early, urgent)]
        await _until(lambda: service.scheduler.queue_depth == 2)
        try:
            refused = await service.process(encode_event(greedy), topic("pi-greedy"))
            # back while both queued events still wait for the model (each needs a whole model call after
            # the busy one): the refusal did not queue for the model
            assert not any(t.done() for t in tasks) and refused.verdict == "unknown"
            assert "token budget of device pi-greedy is spent" in refused.description
            return [await first, *[await t for t in tasks]]
        finally:
            await service.stop()

    busy, early, urgent = asyncio.run(scenario())
    assert busy.source == early.source == urgent.source == "llm"
    assert urgent.timings.queue_ms < early.timings.queue_ms  # arrived later, served first
    assert service.scheduler.stats.budget_refused == 1
    store.close()


@pytest.mark.slow
def test_site_verdicts_are_offered_to_the_other_devices_and_reuse_is_checked(mosquitto, prefix, llm_analyzer,
                                                                             crops, tmp_path):
    """Site scope: a model verdict for one device is offered to the site's other device at once, that
    device's look-alike from another camera is answered from the cache, and (verify_sample = 1) the model
    is asked about that reuse in the background: the figures count the check and the agreement."""
    config = _config(mosquitto, prefix, tmp_path,
                     reuse={"scope": "site", "verify_sample": 1.0, "sites": {"lab": [DEVICE, "pi-lab-2"]}})
    store = Store(config.store_path)
    service = build_service(config, llm_analyzer, store)
    original = _event(crops["first"], 1)
    look_alike = _event(crops["first"], 2, phash=_flip(original.phash, 3), device="pi-lab-2", camera="yard")

    async def scenario() -> None:
        await service.start()
        assert await service.wait_connected(10)
        device = DeviceClient(mosquitto.url, prefix, kind="answers")  # what devices read: offers come only there
        try:
            device.publish(DEVICE, encode_event(original))
            got = {}
            for _ in range(2):
                topic, raw = await device.next_verdict()
                got[topic] = decode_device_verdict(raw)
            answer, offer = got[f"{prefix}/v1/{DEVICE}/answers"], got[f"{prefix}/v1/pi-lab-2/answers"]
            assert answer.source == "llm" and answer.cache.scope == "site" and answer.cache.site == "lab"
            assert (offer.device, offer.event_id, offer.reused_from, offer.source) == (
                "pi-lab-2", original.event_id, original.event_id, "cloud_cache")
            assert (offer.verdict, offer.cache) == (answer.verdict, answer.cache)
            assert service.stats.site_offers == 1

            device.publish("pi-lab-2", encode_event(look_alike))
            reused = decode_device_verdict((await device.next_verdict(30))[1])
            assert (reused.device, reused.source, reused.reused_from) == ("pi-lab-2", "cloud_cache", original.event_id)
            await _until(lambda: service.stats.reuse_checked == 1, timeout=120)
            assert service.stats.reuse_disagreed == 0  # the same crop: the model says what the cache said
            figures = service.figures.compute()
            assert (figures["alpha"], figures["hit_rate"], figures["wrong_reuse_rate"]) == (0.5, 0.5, 0.0)
            expected = figures["L_sched_ms"] + 0.5 * figures["L_light_ms"] + 0.5 * figures["L_llm_ms"]
            assert abs(figures["L_total_ms"] - expected) < 0.05
            assert figures["L_light_ms"] < figures["L_llm_ms"] and 0 < figures["U"] <= 1
        finally:
            device.close()
            await service.stop()

    asyncio.run(scenario())
    store.close()
