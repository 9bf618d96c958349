"""Issue 40's attacks for bench/abuse.py, each with one device's rights (or the operator's token) against the real
cloud, broker and Redis of that bench, or, where the attack needs what that cloud does not have (the shipped
broker with certificates, a learner to teach), against the real parts of one in this process.

    site_member_victims                 the victim's real visitors answered (cloud cache, or its own cache through
                                        the site offer) from a crop a site member forged: the victim's empty view
                                        with the 8x8 low-frequency DCT block of the visitor's crop pasted in
    taught_by_policy_benign             benign events a suppression proposal counted that a policy decided
    taught_by_reuse                     ... that were cache hits (copies of another crop's verdict)
    feedback_reaches_learner            benign feedback proposed a suppression, "that was a person" withdrew it
    share_stolen_events                 of 20 events, those a device's share of the cloud's shared subscription
                                        took (the shipped broker config, `[delivery] shared = true`)
    audio_5xx                           5xx answers to non-speech recordings on /v1/ask
    event_p99_ratio_under_audio         event p99 while 20 long recordings are asked at once / idle
    event_p99_ratio_under_msgpack_flood event p99 while a device floods MessagePack "bombs" / idle
    crop_store_quota_held               one device sent more crops than its quota; the cloud kept no more than it
                                        (its events answered regardless: crop_store_answered)
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cv2
import msgpack
import numpy as np
import requests
from brokers import Mosquitto, RedisServer

CLOUD_USER = "edgetriage.cloud"


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0.0


def _grey32(image: np.ndarray) -> np.ndarray:
    return cv2.resize(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), (32, 32), interpolation=cv2.INTER_AREA).astype(
        np.float32)


def forge(background: np.ndarray, victim: np.ndarray) -> bytes:
    """The background with the victim's 8x8 low-frequency DCT block swapped in, as a smooth shading."""
    dct = cv2.dct(_grey32(background))
    dct[:8, :8] = cv2.dct(_grey32(victim))[:8, :8]
    shading = cv2.resize(cv2.idct(dct) - _grey32(background), (background.shape[1], background.shape[0]),
                         interpolation=cv2.INTER_CUBIC)
    forged = np.clip(background.astype(np.float32) + shading[..., None], 0, 255).astype(np.uint8)
    return cv2.imencode(".jpg", forged, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()


def frame_at(media: Path, box: tuple[int, int, int, int], seconds: float) -> np.ndarray:
    capture = cv2.VideoCapture(str(media))
    capture.set(cv2.CAP_PROP_POS_MSEC, seconds * 1000.0)
    ok, frame = capture.read()
    capture.release()
    if not ok:
        raise SystemExit(f"cannot read {media} at {seconds} s")
    x1, y1, x2, y2 = box
    return frame[y1:y2, x1:x2].copy()


# -- a site member forges its neighbours' answers ---------------------------------------------------------
def attack_site_member(devices: dict, member: str, victim: str, crops: list[bytes], empty: np.ndarray,
                       make_event: Callable[..., Any]) -> dict[str, Any]:
    """`member` (listed in the victim's site) sends, for each of the victim's visitors, the victim's empty view
    with that visitor's low-frequency block; then the victim sends its real visitors with its real embeddings
    (the shipped MobileNetV2, as the device makes them). A victim counts once whether the cloud's cache or the
    offer in the victim's own cache (the edge's VerdictCache) answered it from a forgery."""
    from edgetriage.cloud.config import ReusePolicy
    from edgetriage.cloud.reuse.trust import CloudKeys
    from edgetriage.edge.triage.verdict_cache import VerdictCache
    from edgetriage.shared.policycell import EventFacts

    keys = CloudKeys(ReusePolicy())
    attacker, target = devices[member], devices[victim]
    forged = [make_event(member, forge(empty, cv2.imdecode(np.frombuffer(c, np.uint8), cv2.IMREAD_COLOR)),
                         camera="gate") for c in crops]
    for e in forged:
        attacker.send(e)
    attacker.wait([e.event_id for e in forged], 60)
    time.sleep(1.0)  # the offers reach the victim
    forged_ids = {e.event_id for e in forged}
    benign = sum(1 for e in forged if (a := attacker.answers.get(e.event_id)) and a[0].verdict == "benign")
    with target._lock:
        offers = [m for m in target.received if m.event_id in forged_ids]
    cache = VerdictCache()
    now = int(time.time() * 1000)
    for offer in offers:
        cache.add(offer, now)
    real = [make_event(victim, c, embedding=keys.embedding(c)) for c in crops]
    victims = 0
    for e in real:
        through_offer = cache.lookup(device=victim, camera=e.camera, site=e.site, label=e.label, phash=e.phash,
                                     now_ms=int(time.time() * 1000), embedding=e.embedding,
                                     facts=EventFacts(-1, -1, frozenset(), -1.0, "", 1))
        target.send(e)
        target.wait([e.event_id], 30)
        answer = target.answers.get(e.event_id)
        from_cloud = answer is not None and answer[0].reused_from in forged_ids
        victims += bool(from_cloud or through_offer is not None)
    return {"site_member_victims": victims, "site_member_forged": len(forged), "site_member_forged_benign": benign,
            "site_member_offers": len(offers)}


# -- only honest judgements teach ---------------------------------------------------------------------
class _Instant:
    """A back-end that answers every event "benign" at once (the in-process parts need one; none is asked)."""

    name = "instant"
    max_batch = 8
    concurrency = 2

    def prompt_version(self, event: object) -> str:
        return "instant-1"

    def saturated(self) -> bool:
        return False

    async def analyze_batch(self, events: list) -> list:
        from edgetriage.cloud.analysis import Analysis

        return [Analysis(verdict="benign", confidence=0.9, description="", model=self.name,
                         prompt_version="instant-1", analyze_ms=1.0) for _ in events]

    async def close(self) -> None:
        return None


def honest_teaching(workdir: Path, broker_url: str, media: Path) -> dict[str, Any]:
    """The cloud's learner (auto_accept, 3 alike) on a real SQLite store: the empty doorway said benign five
    times by a daytime policy, five times by cache hits, then three times by the operator; then the operator
    says one of those was a person."""
    from edgetriage.cloud.compose import build_learner, build_service
    from edgetriage.cloud.config import CloudConfig
    from edgetriage.cloud.storage.store import SQLiteStore
    from edgetriage.shared.ids import uuid7
    from edgetriage.shared.protocol import Detection, Event, Verdict

    place = (0.48, 0.0, 0.73, 0.93)
    doorway = [cv2.imencode(".jpg", frame_at(media, (370, 0, 560, 400), s))[1].tobytes()
               for s in (0.2, 0.9, 1.6, 2.3, 3.0, 3.7, 4.4, 5.1)]
    config = CloudConfig.model_validate({
        "store_path": str(workdir / "teach.db"), "mqtt": {"url": broker_url, "prefix": f"t{uuid.uuid4().hex[:6]}"},
        "suppressions": {"min_events": 3, "auto_accept": True, "push_wait_s": 0.5}})
    store = SQLiteStore(config.store_path)
    service = build_service(config, _Instant(), store)
    learner = build_learner(service)
    assert learner is not None

    def said(n: int, crop: bytes, **kw: Any) -> str:
        t = int(time.time() * 1000) - 60_000 + n
        event = Event(event_id=uuid7(t), device="pi-door", camera="porch", captured_ms=t, label="person",
                      score=0.4, uncertain=True, track_id=n, detections=[Detection(label="person", score=0.4,
                                                                                   box=place)],
                      phash="0f0f0f0f0f0f0f0f", reason="uncertain", crop=crop, crop_box=place)
        verdict = Verdict(event_id=event.event_id, device="pi-door", camera="porch", label="person",
                          verdict="benign", confidence=0.9, description="", model="m", created_ms=t,
                          **{"decided_by": "model", **kw})
        store.put_event(event, t)
        store.put_verdict(verdict)
        learner.on_verdict(verdict)
        return event.event_id

    try:
        policy = [said(i, doorway[i % 8], decided_by="policy") for i in range(5)]
        learner.drain()
        by_policy = sum(p.count for p in learner.proposals.all())
        for i in range(5):
            said(10 + i, doorway[(i + 3) % 8], source="cloud_cache", reused_from=uuid7())
        learner.drain()
        by_reuse = sum(p.count for p in learner.proposals.all()) - by_policy
        for event_id in policy[:3]:
            service.feedback.give(event_id, verdict="benign", note="the doorway, empty")
        learner.drain()
        proposed = [p for p in learner.proposals.all() if p.sources.get("feedback")]
        service.feedback.give(policy[1], verdict="alert", note="that was a person")
        learner.drain()
        withdrawn = [p for p in learner.proposals.all() if p.status == "rejected" and p.decided_by == "feedback"]
    finally:
        learner.close()
        store.close()
    return {"taught_by_policy_benign": by_policy, "taught_by_reuse": by_reuse,
            "feedback_reaches_learner": bool(proposed) and bool(withdrawn)}


# -- a device takes the cloud's share ----------------------------------------------------------------------
def share_theft(workdir: Path, redis: RedisServer, n: int = 20) -> dict[str, Any]:
    """The shipped broker config (certificates, the dynamic-security plugin), the cloud on `shared = true`;
    cam-a subscribes to the cloud's share and to every events topic, cam-b sends `n` events."""
    from edgetriage.cloud.compose import build_service
    from edgetriage.cloud.config import CloudConfig
    from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis
    from edgetriage.shared.ids import uuid7
    from edgetriage.shared.mqtt import MQTTLink
    from edgetriage.shared.protocol import Detection, Event, encode_event
    from edgetriage.shared.topics import Topics

    broker = Mosquitto.shipped(workdir / "shipped", ("cam-a", "cam-b")).start()
    prefix = f"share{uuid.uuid4().hex[:6]}"
    topics = Topics("edgetriage")
    config = CloudConfig.model_validate({
        "mqtt": broker.mqtt(CLOUD_USER, client_id=f"{prefix}-cloud").model_dump(mode="json", exclude_none=True),
        "store_path": str(workdir / "share.db"), "http": {"enabled": False}, "homeassistant": {"enabled": False},
        "delivery": {"shared": True, "redis_url": redis.url, "redis_prefix": prefix}})
    store = RedisStore(connect_redis(redis.url), prefix)
    thief = MQTTLink(broker.mqtt("cam-a"), "cam-a", on_message=lambda m: None)
    for topic in ("$share/edgetriage/edgetriage/v1/+/events", topics.all_events()):
        thief.subscribe(topic, 1)
    victim = MQTTLink(broker.mqtt("cam-b"), "cam-b", on_message=lambda m: None)
    service = build_service(config, _Instant(), store)
    crop = cv2.imencode(".jpg", np.random.default_rng(3).integers(0, 255, (48, 32, 3), dtype=np.uint8))[1].tobytes()

    async def run() -> int:
        await service.start()
        try:
            await service.wait_connected(10)
            thief.start()
            victim.start()
            await asyncio.to_thread(thief.wait_connected, 10)
            await asyncio.to_thread(victim.wait_connected, 10)
            await asyncio.sleep(1.0)
            for i in range(n):
                t = int(time.time() * 1000)
                event = Event(event_id=uuid7(t), device="cam-b", camera="door", captured_ms=t, label="person",
                              score=0.5, uncertain=True, track_id=i, detections=[Detection(
                                  label="person", score=0.5, box=(0.1, 0.1, 0.5, 0.9))],
                              phash=f"{i * 0x9E3779B97F4A7C15 & (2 ** 64 - 1):016x}", reason="uncertain", crop=crop)
                victim.publish(topics.events("cam-b"), encode_event(event), qos=1)
            deadline = time.monotonic() + 8
            while service.stats.received < n and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            return service.stats.received
        finally:
            await service.stop()

    try:
        received = asyncio.run(run())
        refused = list(thief.refused_subscriptions)
    finally:
        thief.stop()
        victim.stop()
        store.delete_all()
        store.close()
        broker.stop()
    return {"share_stolen_events": n - received, "share_refused_subscriptions": len(refused)}


# -- voice and payloads cannot stall events ----------------------------------------------------------------
def _sequential(device: Any, n: int, make: Callable[[], Any], timeout: float = 30) -> list[float]:
    out = []
    for _ in range(n):
        e = make()
        device.send(e)
        out.append((device.latency_ms(e.event_id) or timeout * 1000) if device.wait([e.event_id], timeout)
                   else timeout * 1000)
    return out


def _wav(pcm: np.ndarray) -> bytes:
    from edgetriage.cloud.ask.voice.audio import Audio

    return Audio(pcm.astype(np.int16)).wav()


def attack_audio(base: str, token: str, device: Any, make: Callable[[], Any], n: int,
                 clips: int = 20) -> dict[str, Any]:
    """Event latency (cache misses, one at a time) idle and while `clips` 29-second non-speech recordings are
    asked at once, again and again; and the statuses those recordings got."""
    rng = np.random.default_rng(40)
    recordings = [_wav(rng.normal(0, 3000, 29 * 16000)), _wav(np.sin(np.arange(29 * 16000) / 10) * 3000),
                  _wav(np.sin(np.arange(29 * 16000) * 2 * np.pi * 50 / 16000) * 8000)]
    _sequential(device, 3, make)
    idle = _sequential(device, n, make)
    stop = threading.Event()
    statuses: list[int] = []
    failures: list[str] = []  # status 0: no answer at all (the exception's kind, to tell a timeout from a reset)

    def asking(k: int) -> None:
        i = k
        while not stop.is_set():
            i += 1
            try:
                r = requests.post(f"{base}/v1/ask", data=recordings[i % len(recordings)], timeout=120,
                                  headers={"Authorization": f"Bearer {token}", "Content-Type": "audio/wav"})
                statuses.append(r.status_code)
            except requests.RequestException as exc:
                statuses.append(0)
                failures.append(type(exc).__name__)

    with ThreadPoolExecutor(clips) as pool:
        for k in range(clips):
            pool.submit(asking, k)
        time.sleep(2.0)
        loaded = _sequential(device, n, make)
        stop.set()
    counts = {s: statuses.count(s) for s in sorted(set(statuses))}
    return {"audio_5xx": sum(1 for s in statuses if s >= 500 or s == 0), "audio_statuses": counts,
            "audio_no_answer": {kind: failures.count(kind) for kind in sorted(set(failures))},
            "event_p99_ratio_under_audio": round(p99(loaded) / max(p99(idle), 1e-3), 2),
            "event_p99_under_audio_ms": round(p99(loaded), 1), "event_p99_idle_audio_ms": round(p99(idle), 1)}


def bomb() -> bytes:
    """A MessagePack "map bomb" within the event size limit: 216,000 nested values where an event has ~30."""
    return msgpack.packb({"v": 1, "detections": [[[{}] * 60] * 60] * 60})


def attack_msgpack_flood(attacker: Any, topic: str, device: Any, make: Callable[[], Any], n: int,
                         per_s: float = 50.0) -> dict[str, Any]:
    """Event latency idle and while the attacker publishes `per_s` bombs a second on its own events topic."""
    payload = bomb()
    _sequential(device, 3, make)
    idle = _sequential(device, n, make)
    stop = threading.Event()
    sent = [0]

    def flood() -> None:
        while not stop.is_set():
            attacker.client.publish(topic, payload, qos=1)
            sent[0] += 1
            time.sleep(1.0 / per_s)

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    time.sleep(1.0)
    loaded = _sequential(device, n, make)
    stop.set()
    thread.join(5)
    return {"event_p99_ratio_under_msgpack_flood": round(p99(loaded) / max(p99(idle), 1e-3), 2),
            "event_p99_under_msgpack_flood_ms": round(p99(loaded), 1), "msgpack_bombs_sent": sent[0],
            "msgpack_bomb_bytes": len(payload)}


# -- bounded by design ---------------------------------------------------------------------------------
def big_crop(seed: int) -> bytes:
    """A JPEG of about 237 KB (noise at full quality)."""
    image = np.random.default_rng(seed).integers(0, 255, (300, 260, 3), dtype=np.uint8)
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 100])[1].tobytes()


def attack_crop_store(cloud: Any, attacker: Any, make: Callable[[bytes], Any], quota_mb: float,
                      n: int) -> dict[str, Any]:
    """The attacker sends `n` events with big crops; the crops the cloud then holds of it, against its quota."""
    events = [make(big_crop(i)) for i in range(n)]
    started = time.monotonic()
    for e in events:
        attacker.send(e)
    attacker.wait([e.event_id for e in events], 120)
    took = time.monotonic() - started
    stored = 0
    before = None
    while True:
        status, page = cloud.request("GET", f"/v1/events?device={attacker.name}&limit=500"
                                     + (f"&before={before}" if before else ""))
        rows = page if status == 200 and isinstance(page, list) else []
        stored += sum(int(r.get("crop_bytes") or 0) for r in rows)
        if len(rows) < 500:
            break
        before = rows[-1]["event_id"]
    answered = attacker.answered([e.event_id for e in events])
    sent_mb = sum(len(e.crop) for e in events) / (1 << 20)
    return {"crop_store_quota_held": stored <= quota_mb * (1 << 20) and sent_mb > quota_mb,
            "crop_store_sent_mb": round(sent_mb, 1), "crop_store_kept_mb": round(stored / (1 << 20), 1),
            "crop_store_answered": answered, "crop_store_s": round(took, 1),
            "crop_store_median_kb": round(statistics.median(len(e.crop) for e in events) / 1024)}


__all__ = ["attack_audio", "attack_crop_store", "attack_msgpack_flood", "attack_site_member", "frame_at",
           "honest_teaching", "share_theft"]
