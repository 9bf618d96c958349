"""No device decides for another (issue 25, "one device poisons its neighbours' verdicts"): against a real cloud
service on its own Mosquitto, with the real SQLite store or Redis, `[reuse] scope = "site"`, a model of the
test's own that tells an empty doorway (benign) from a person (alert) by the crop itself:

- a device's site is what `[reuse] sites` says: an event naming another site is refused, acknowledged, counted;
- a hash or an embedding a device merely claims reaches no other device: not through the cloud's cache, not
  through a look-alike's model call under way, not through a site offer into the other device's own cache;
- a device receives no other device's verdicts, and what reaches it of another device's verdict (an offer, a
  cache hit) carries none of the facts seen there (zones, times).
"""

from __future__ import annotations

import asyncio
import base64
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlparse

import cv2
import numpy as np
import paho.mqtt.client as mqtt
import pytest
import requests
from conftest import free_port
from edgetriage.cloud.analysis import Analysis
from edgetriage.cloud.compose import build_app, build_service
from edgetriage.cloud.config import CloudConfig, HTTPConfig
from edgetriage.cloud.http.api import run_api
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.pipeline.service import CloudService
from edgetriage.cloud.reuse.trust import CloudKeys
from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.edge.triage.verdict_cache import VerdictCache as DeviceCache
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.cropkeys import phash_dct64
from edgetriage.shared.embedding import similarity
from edgetriage.shared.ids import uuid7
from edgetriage.shared.phash import hamming
from edgetriage.shared.protocol import (
    DEFAULT_MIN_SIMILARITY,
    Detection,
    Event,
    ProtocolError,
    Verdict,
    encode_event,
)
from edgetriage.shared.topics import Topics
from edgetriage.shared.verdict_forms import decode_device_verdict
from paho.mqtt.enums import CallbackAPIVersion

REDIS_URL = "redis://127.0.0.1:6379/0"
FACTS = ("stood in zone back-garden for 40 s", "at 23:10 local time")


class ByLook:
    """The scheduler's Backend: "alert" for a crop with anything in it, "benign" for an empty (flat) one, after
    `delay_s`, with facts of the place and time it was seen and the person score, as the real translator gives."""

    name = "by-look"
    max_batch = 1
    concurrency = 4

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.started: list[str] = []  # event ids, as the model got them

    def prompt_version(self, event: object) -> str:
        return "look-1"

    def saturated(self) -> bool:
        return False

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        self.started.extend(e.event_id for e in events)
        await asyncio.sleep(self.delay_s)
        out = []
        for event in events:
            image = cv2.imdecode(np.frombuffer(event.crop, np.uint8), cv2.IMREAD_GRAYSCALE)
            busy = image is not None and float(image.std()) > 5.0
            out.append(Analysis(verdict="alert" if busy else "benign", confidence=0.9,
                                description="a person by the shed at 23:10" if busy else "an empty doorway",
                                model=self.name, prompt_version="look-1", analyze_ms=self.delay_s * 1000,
                                facts=FACTS, extra={"person_score": 0.9 if busy else 0.0}))
        return out

    async def close(self) -> None:
        return None


@pytest.fixture(scope="module")
def person(clip_one_by_one) -> tuple[np.ndarray, bytes]:
    """dev-b's real person (pixels and the JPEG dev-b sends): the first visitor, 12 s into the clip."""
    cap = cv2.VideoCapture(str(clip_one_by_one))
    cap.set(cv2.CAP_PROP_POS_MSEC, 12_000)
    ok, frame = cap.read()
    cap.release()
    assert ok
    crop = frame[0:400, 370:560].copy()
    return crop, cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()


@pytest.fixture(scope="module")
def blank() -> bytes:
    return cv2.imencode(".jpg", np.full((400, 190, 3), 128, np.uint8))[1].tobytes()


@pytest.fixture(scope="module")
def person_embedding(person) -> bytes:
    """The embedding dev-b's device sends with its person (the shipped MobileNetV2, as
    edge.vision.classify makes it)."""
    embedding = CloudKeys(CloudConfig().reuse).embedding(person[1])
    assert embedding is not None
    return embedding


def _event(device: str, jpeg: bytes, phash: str, *, site: str | None = "home", camera: str = "door",
           embedding: bytes | None = None, n: int = 0) -> Event:
    t = int(time.time() * 1000) + n
    return Event(event_id=uuid7(t), device=device, camera=camera, site=site, captured_ms=t, label="person",
                 score=0.6, uncertain=True, track_id=n, reason="detector unsure", phash=phash, crop=jpeg,
                 crop_size=(190, 400), detections=[Detection(label="person", score=0.6, box=(0.4, 0.0, 0.7, 0.9))],
                 zones=["back-garden"], local_time="23:10", embedding=embedding)


class Listener:
    """A subscriber to some devices' answers topics (what those devices are sent), and a publisher of events."""

    def __init__(self, url: str, prefix: str, devices: Sequence[str]) -> None:
        parsed = urlparse(url)
        self.topics = Topics(prefix)
        self.got: queue.Queue[tuple[str, Verdict]] = queue.Queue()
        ready = threading.Event()
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"t-{uuid.uuid4().hex[:8]}",
                             protocol=mqtt.MQTTv5)
        client.on_message = lambda c, u, m: self.got.put((m.topic.split("/")[-2], decode_device_verdict(m.payload)))
        client.on_subscribe = lambda *a: ready.set()
        client.on_connect = lambda c, u, f, rc, p: c.subscribe([(self.topics.answers(d), 1) for d in devices])
        client.connect(parsed.hostname, parsed.port)
        client.loop_start()
        assert ready.wait(10), "test client could not subscribe"
        self.client = client

    def publish(self, event: Event) -> None:
        self.client.publish(self.topics.events(event.device), encode_event(event), qos=1).wait_for_publish(10)

    async def next(self, timeout: float = 20.0) -> tuple[str, Verdict]:
        return await asyncio.to_thread(self.got.get, True, timeout)

    async def verdict_for(self, event: Event, timeout: float = 20.0) -> Verdict:
        """The verdict of this event on its device's topic (other messages are kept for `drained`)."""
        kept = []
        deadline = time.monotonic() + timeout
        try:
            while True:
                device, verdict = await self.next(max(0.1, deadline - time.monotonic()))
                if device == event.device and verdict.event_id == event.event_id:
                    return verdict
                kept.append((device, verdict))
        finally:
            for item in kept:
                self.got.put(item)

    def drained(self) -> list[tuple[str, Verdict]]:
        out = []
        while not self.got.empty():
            out.append(self.got.get_nowait())
        return out

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


async def _until(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


def _service(mosquitto, prefix: str, tmp_path: Path, sites: dict[str, list[str]], model: ByLook,
             redis: bool = False) -> tuple[CloudService, object]:
    config = CloudConfig(mqtt=MQTTConfig(url=mosquitto.url, prefix=prefix, client_id=f"{prefix}-cloud", protocol="5"),
                         store_path=str(tmp_path / "cloud.db"), http=HTTPConfig(port=0),
                         reuse={"scope": "site", "verify_sample": 0.0, "sites": sites})
    store = RedisStore(connect_redis(REDIS_URL), f"{prefix}-trust") if redis else SQLiteStore(config.store_path)
    return build_service(config, model, store), store


def _run(service: CloudService, store, scenario) -> None:
    async def run() -> None:
        await service.start()
        assert await service.wait_connected(10)
        try:
            await scenario()
        finally:
            await service.stop()

    try:
        asyncio.run(run())
    finally:
        if isinstance(store, RedisStore):
            keys = list(store.client.scan_iter(f"{store.prefix}:*"))
            if keys:
                store.client.delete(*keys)
        store.close()


def test_a_site_claim_the_configuration_does_not_make_is_refused_and_acknowledged(mosquitto, prefix, tmp_path,
                                                                                  person, blank):
    """dev-a, in no site, names dev-b's site "home": refused with the reason (MQTT: counted, acknowledged, no
    verdict; HTTP: the same ProtocolError); dev-b naming its own site, or none, is answered in "home"."""
    service, store = _service(mosquitto, prefix, tmp_path, {"home": ["dev-b"]}, ByLook())
    crop, jpeg = person

    async def scenario() -> None:
        bus = Listener(mosquitto.url, prefix, ["dev-a", "dev-b"])
        try:
            bus.publish(_event("dev-a", blank, phash_dct64(crop)))
            await _until(lambda: service.stats.rejected == 1)
            assert service.stats.rejected_by == {"site": 1}
            with pytest.raises(ProtocolError, match="names site 'home', but \\[reuse\\] sites puts it in no site"):
                await service.process(_event("dev-a", blank, phash_dct64(crop), n=1), Topics(prefix).events("dev-a"))
            with pytest.raises(ProtocolError, match="puts it in site 'home'"):
                await service.process(_event("dev-b", jpeg, phash_dct64(crop), site="away", n=2),
                                      Topics(prefix).events("dev-b"))
            own = _event("dev-b", jpeg, phash_dct64(crop), n=3)
            bus.publish(own)
            assert (await bus.verdict_for(own)).cache.site == "home"
            unnamed = _event("dev-b", blank, "0123456789abcdef", site=None, n=4)
            bus.publish(unnamed)
            assert (await bus.verdict_for(unnamed)).cache.site == "home"  # its site is the configuration's
            assert store.get_event(unnamed.event_id)["site"] == "home"
            await _until(lambda: service.pending == 0)
            assert not [v for d, v in bus.drained() if d == "dev-a"]  # the refused events got no verdict
        finally:
            bus.close()

    _run(service, store, scenario)
    # acknowledged: a new session of the cloud is not handed the refused event again
    again, store = _service(mosquitto, prefix, tmp_path, {"home": ["dev-b"]}, ByLook())

    async def redelivered() -> None:
        await asyncio.sleep(1.0)
        assert again.stats.received == 0

    _run(again, store, redelivered)


def test_over_http_a_site_claim_is_a_400_with_the_reason(tmp_path, person, blank):
    """The HTTP intake (a device token, a real port) refuses the same claim the same way, and stores nothing."""
    config = CloudConfig(store_path=str(tmp_path / "cloud.db"), http=HTTPConfig(port=0),
                         reuse={"scope": "site", "sites": {"home": ["dev-b"]}})
    store = SQLiteStore(config.store_path)
    service = build_service(config, ByLook(), store)
    loop = asyncio.new_event_loop()
    port = free_port()
    runner = loop.run_until_complete(run_api(build_app(store, service, auth=ApiAuth("op", {"dev-a": "tok-a"})),
                                             "127.0.0.1", port))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        claim = _event("dev-a", blank, phash_dct64(person[0]))
        body = {**claim.model_dump(mode="json", by_alias=True, exclude={"crop"}),
                "crop": base64.b64encode(claim.crop).decode()}
        answer = requests.post(f"http://127.0.0.1:{port}/v1/events", json=body, timeout=30,
                               headers={"Authorization": "Bearer tok-a"})
        assert answer.status_code == 400 and "names site 'home'" in answer.text, answer.text
        assert store.get_event(claim.event_id) is None and service.stats.rejected_by == {"site": 1}
        mine = _event("dev-a", blank, "0123456789abcdef", site=None, n=1)
        body = {**mine.model_dump(mode="json", by_alias=True, exclude={"crop"}),
                "crop": base64.b64encode(mine.crop).decode()}
        answer = requests.post(f"http://127.0.0.1:{port}/v1/events", json=body, timeout=30,
                               headers={"Authorization": "Bearer tok-a"})
        assert answer.status_code == 200 and answer.json()["cache"]["site"] is None  # in no site: its own
    finally:
        async def down() -> None:
            await service.stop()
            await runner.cleanup()

        asyncio.run_coroutine_threadsafe(down(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        store.close()


@pytest.mark.parametrize("redis", [False, True], ids=["sqlite", "redis"])
def test_a_claimed_hash_answers_no_other_device_nor_enters_its_cache(mosquitto, prefix, tmp_path, person, blank,
                                                                     person_embedding, redis):
    """dev-a (a member of "home") sends an empty crop claiming dev-b's hash and embedding: benign. dev-b's real
    person is still the model's (alert), not the cache's; the offer dev-a's verdict made to dev-b carries the
    cloud's keys of the empty crop, which never answer dev-b's person in dev-b's own cache."""
    model = ByLook()
    service, store = _service(mosquitto, prefix, tmp_path, {"home": ["dev-a", "dev-b"]}, model, redis)
    crop, jpeg = person
    real_hash = phash_dct64(crop)

    async def scenario() -> None:
        bus = Listener(mosquitto.url, prefix, ["dev-a", "dev-b"])
        try:
            bait = _event("dev-a", blank, real_hash, embedding=person_embedding, camera="gate")
            bus.publish(bait)
            assert (await bus.verdict_for(bait)).verdict == "benign"
            offered = await bus.verdict_for(bait.model_copy(update={"device": "dev-b"}))
            cache = DeviceCache()
            assert cache.add(offered, int(time.time() * 1000))
            assert cache.lookup(device="dev-b", camera="door", site="home", label="person", phash=real_hash,
                                now_ms=int(time.time() * 1000), embedding=person_embedding) is None
            victim = _event("dev-b", jpeg, real_hash, embedding=person_embedding, n=1)
            bus.publish(victim)
            answer = await bus.verdict_for(victim)
            assert (answer.verdict, answer.source, answer.reused_from) == ("alert", "llm", None)
            assert model.started == [bait.event_id, victim.event_id]
        finally:
            bus.close()

    _run(service, store, scenario)


def test_a_crafted_embedding_in_flight_holds_back_no_other_device(mosquitto, prefix, tmp_path, person, blank,
                                                                  person_embedding):
    """While the model still looks at dev-a's empty crop claiming dev-b's person's embedding (and a hash of its
    own), dev-b's person does not wait for that call to be answered from it: it gets its own model call."""
    model = ByLook(delay_s=1.0)
    service, store = _service(mosquitto, prefix, tmp_path, {"home": ["dev-a", "dev-b"]}, model)
    crop, jpeg = person
    real_hash = phash_dct64(crop)
    far = f"{int(real_hash, 16) ^ 0xFFFFFFFF:016x}"  # 32 bits away: only the embedding could join them

    async def scenario() -> None:
        bus = Listener(mosquitto.url, prefix, ["dev-b"])
        try:
            bait = _event("dev-a", blank, far, embedding=person_embedding, camera="gate")
            bus.publish(bait)
            await _until(lambda: model.started == [bait.event_id])
            victim = _event("dev-b", jpeg, real_hash, embedding=person_embedding, n=1)
            bus.publish(victim)
            answer = await bus.verdict_for(victim)
            assert (answer.verdict, answer.source) == ("alert", "llm")
            assert service.flights.waited == 0
        finally:
            bus.close()

    _run(service, store, scenario)


def test_a_device_receives_no_other_devices_verdicts_and_no_facts_of_them(mosquitto, prefix, tmp_path, person,
                                                                          blank):
    """dev-a claims dev-b's site: refused, and dev-a is sent nothing of dev-b's verdicts. dev-c, which the
    configuration does put in "home", is offered dev-b's verdict and answered from it for a look-alike, but
    neither carries what was seen at dev-b (its zone, its times, its description)."""
    model = ByLook()
    service, store = _service(mosquitto, prefix, tmp_path, {"home": ["dev-b", "dev-c"]}, model)
    crop, jpeg = person

    async def scenario() -> None:
        bus = Listener(mosquitto.url, prefix, ["dev-a", "dev-b", "dev-c"])
        try:
            bus.publish(_event("dev-a", blank, "0123456789abcdef", camera="gate"))
            await _until(lambda: service.stats.received == 1 and service.pending == 0)
            made = _event("dev-b", jpeg, phash_dct64(crop), n=1)
            bus.publish(made)
            answer = await bus.verdict_for(made)
            assert answer.facts == list(FACTS)  # dev-b's own verdict keeps its facts
            offer = await bus.verdict_for(made.model_copy(update={"device": "dev-c"}))
            look_alike = _event("dev-c", jpeg, phash_dct64(crop), camera="drive", n=2)
            bus.publish(look_alike)
            reused = await bus.verdict_for(look_alike)
            assert (reused.source, reused.reused_from, reused.verdict) == ("cloud_cache", made.event_id, "alert")
            for foreign in (offer, reused):
                assert (foreign.facts, foreign.description, foreign.checked) == ([], "", None)
            stored = store.get_verdict(look_alike.event_id)
            assert (stored.facts, stored.description) == ([], "")
            await asyncio.sleep(0.5)
            assert [v.event_id for d, v in bus.drained() if d == "dev-a"] == []
        finally:
            bus.close()

    _run(service, store, scenario)


def test_the_cloud_keys_are_its_own_and_reach_what_the_devices_keys_reach(person, person_embedding):
    """What the cloud computes from the JPEG a device sent is near what the device computed from its pixels
    (the same rule, shared.cropkeys): a few bits of JPEG noise in the hash, the same person by embedding."""
    crop, jpeg = person
    keys = CloudKeys(CloudConfig(reuse={"scope": "site", "sites": {"home": ["dev-b"]}}).reuse)
    event = keys.keyed(_event("dev-b", jpeg, "0123456789abcdef", embedding=b"\x01" * 256))
    assert hamming(event.phash, phash_dct64(crop)) <= 4 and event.embedding is None
    embedded = asyncio.run(keys.embedded(event))
    assert similarity(embedded.embedding, person_embedding) >= DEFAULT_MIN_SIMILARITY
    assert keys.keyed(_event("dev-b", jpeg, "0123456789abcdef", site=None)).phash == "0123456789abcdef"
    broken = keys.keyed(_event("dev-b", b"\xff\xd8\xff" + b"\x00" * 64, "0123456789abcdef"))
    assert (broken.site, broken.phash) == (None, "0123456789abcdef")  # undecodable: reaches nobody else
