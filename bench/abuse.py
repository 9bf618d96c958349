"""Issue 25's attacks, each against a real cloud, as a device with one device's rights (or an operator asking
questions) would make them: only through the public interfaces (MQTT topics of its own, the HTTP API).

Everything runs on loopback and is the bench's own: a Mosquitto on a free port (bench/brokers.py), a
redis-server on a free port (killed and started again for the outage; the shared one on 6379 is never
touched), a fake OpenAI-compatible model server (this file, --serve-model: a verdict from the crop it is shown,
"alert" for a textured crop, "benign" for a blank one; plain text for questions), and `edgetriage cloud run`
as a process with `[reuse] scope = "site"`, the openai back-end (vision) and the Redis store.

Devices: dev-b and dev-c are the site "home"'s configured devices; dev-a (the attacker) is not.

    poisoned_victims             victims' events answered from a key the attacker chose (its hash copied from a
                                 victim, or an embedding crafted between several people), by `reused_from`
    foreign_verdicts_read        verdicts about other devices' events arriving on dev-a's own verdict topic
    ask_hijacked                 questions whose answer value changed after dev-a named a camera "today" and
                                 zones "people", "alert" (its events are cars on blank crops: no answer should move)
    ask_5xx                      5xx answers to questions after dev-a sent captured_ms = 2^53-1
    event_p99_ratio_under_asks   event verdict p99 while 50 questions run at once / p99 idle (sequential events)
    vocab_event_ms_ratio         event latency (each with 16 new zone names) after 6,400 device zone names / at 16
    redis_outage_unanswered      events of a flow (Redis killed at 1/4, started again empty at 3/4) without a
                                 verdict 60 s after Redis is back
    healthz_truthful             /healthz said 503 while Redis was away, 200 before and after

Issue 40's (bench/abuse_trust.py says how each is made): site_member_victims, taught_by_policy_benign,
taught_by_reuse, feedback_reaches_learner, share_stolen_events, audio_5xx, event_p99_ratio_under_audio,
event_p99_ratio_under_msgpack_flood, crop_store_quota_held.

Usage: python bench/abuse.py [--quick] [--keep]   (ends with one JSON line; < 5 min, --quick < 2 min)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import paho.mqtt.client as mqtt
from abuse_trust import (
    attack_audio,
    attack_crop_store,
    attack_msgpack_flood,
    attack_site_member,
    frame_at,
    honest_teaching,
    share_theft,
)
from brokers import Mosquitto, RedisServer, free_port, wait_port
from edgetriage.edge.vision.crops import phash_dct64
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, decode_verdict, encode_event
from edgetriage.shared.topics import Topics
from harness import CloudProcess
from paho.mqtt.enums import CallbackAPIVersion

MEDIA = Path(__file__).resolve().parents[1] / "models" / "media" / "one-by-one-person-detection.mp4"
BOX = (370, 0, 560, 400)  # where each visitor of the one-by-one clip stands (768x432 frames)
VISIT_TIMES = (8, 12, 16, 26, 32, 40, 55, 62)  # seconds into the clip with a person in view, 8 different people
OPERATOR = "abuse-operator-token"
SITE = "home"
ATTACKER, VICTIM, NEIGHBOUR = "dev-a", "dev-b", "dev-c"
CROP_QUOTA_MB = 20.0  # the bench cloud's [retention] crop_quota_mb
QUESTIONS = ("How many people came today?", "When was the last alert?", "How many alerts today?")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))] if ordered else float("nan")


# -- the fake model server ------------------------------------------------------------------------------
def serve_model(port: int) -> None:
    """A verdict from the crop shown (textured: alert, blank: benign); plain text for anything else."""
    from aiohttp import web

    def verdict_of(messages: list[dict]) -> str | None:
        for message in messages:
            content = message.get("content")
            for part in content if isinstance(content, list) else ():
                url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
                if url.startswith("data:image"):
                    raw = base64.b64decode(url.split(",", 1)[1])
                    image = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_GRAYSCALE)
                    return "benign" if image is None or float(image.std()) < 8.0 else "alert"
        return None

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        verdict = verdict_of(body.get("messages", []))
        if verdict is not None or "response_format" in body or "structured_outputs" in body:
            verdict = verdict or "unknown"
            content = json.dumps({"verdict": verdict, "description": "a person near the door" if verdict == "alert"
                                  else "an empty view", "confidence": 0.8})
        else:
            content = "There were some people today."
        await asyncio.sleep(0.005)
        return web.json_response({"id": "c", "object": "chat.completion", "model": "fake",
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": content}}],
                                  "usage": {"prompt_tokens": 100, "completion_tokens": 20}})

    app = web.Application(client_max_size=8 << 20)
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


class ModelServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-model", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "the fake model server")
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# -- the cloud ------------------------------------------------------------------------------------------
class Cloud(CloudProcess):
    """`edgetriage -v cloud run` (bench/harness.py) with the operator's token, and its questions."""

    def __init__(self, config: dict, workdir: Path) -> None:
        super().__init__(config, workdir, "cloud", token=OPERATOR, verbose=True)

    def ask(self, question: str, since_ms: int | None = None) -> tuple[int, dict]:
        body: dict[str, Any] = {"question": question}
        if since_ms is not None:
            body["since"] = since_ms
        return self.request("POST", "/v1/ask", body, timeout=60)


# -- devices --------------------------------------------------------------------------------------------
class Device:
    """One device's MQTT client: publishes on its own events topic, reads its own verdicts topic only."""

    def __init__(self, name: str, port: int, topics: Topics) -> None:
        self.name = name
        self.topics = topics
        self.sent: dict[str, float] = {}  # event id -> when published (monotonic)
        self.answers: dict[str, tuple[Any, float]] = {}  # event id -> (verdict, when it arrived)
        self.received: list[Any] = []  # every verdict message on our topic (answers and offers)
        self._lock = threading.Lock()
        ready = threading.Event()
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"{name}-{uuid.uuid4().hex[:6]}",
                             protocol=mqtt.MQTTv5)
        client.on_message = self._message
        client.on_subscribe = lambda *a: ready.set()
        client.on_connect = lambda c, u, f, rc, p: c.subscribe(topics.verdicts(name), 1)
        client.max_inflight_messages_set(200)
        client.connect("127.0.0.1", port)
        client.loop_start()
        if not ready.wait(10):
            raise SystemExit(f"{name} could not subscribe")
        self.client = client

    def _message(self, client: Any, userdata: Any, message: Any) -> None:
        now = time.monotonic()
        try:
            verdict = decode_verdict(bytes(message.payload))
        except ValueError:
            return
        with self._lock:
            self.received.append(verdict)
            if verdict.event_id in self.sent and verdict.event_id not in self.answers:
                self.answers[verdict.event_id] = (verdict, now)

    def send(self, event: Event) -> None:
        with self._lock:
            self.sent[event.event_id] = time.monotonic()
        self.client.publish(self.topics.events(self.name), encode_event(event), qos=1)

    def latency_ms(self, event_id: str) -> float | None:
        with self._lock:
            answer = self.answers.get(event_id)
            return (answer[1] - self.sent[event_id]) * 1000 if answer else None

    def answered(self, ids: list[str]) -> int:
        with self._lock:
            return sum(1 for i in ids if i in self.answers)

    def wait(self, ids: list[str], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.answered(ids) < len(ids):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def person_crops() -> list[bytes]:
    capture = cv2.VideoCapture(str(MEDIA))
    out = []
    x1, y1, x2, y2 = BOX
    for t in VISIT_TIMES:
        capture.set(cv2.CAP_PROP_POS_MSEC, t * 1000.0)
        ok, frame = capture.read()
        if not ok:
            raise SystemExit(f"cannot read {MEDIA} at {t} s")
        ok, jpeg = cv2.imencode(".jpg", frame[y1:y2, x1:x2], [cv2.IMWRITE_JPEG_QUALITY, 85])
        out.append(jpeg.tobytes())
    capture.release()
    return out


def _jpeg(image: np.ndarray) -> bytes:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])
    assert ok
    return data.tobytes()


BLANK = _jpeg(np.full((400, 190, 3), 128, np.uint8))
_NOISE = np.random.default_rng(25)


def noise_crop() -> bytes:
    return _jpeg(_NOISE.integers(0, 255, (48, 32, 3), dtype=np.uint8))


def event(device: str, crop: bytes, *, camera: str = "porch", site: str | None = SITE, label: str = "person",
          phash: str | None = None, embedding: bytes | None = None, zones: list[str] | None = None,
          captured_ms: int | None = None) -> Event:
    image = cv2.imdecode(np.frombuffer(crop, np.uint8), cv2.IMREAD_COLOR)
    now = int(time.time() * 1000)
    return Event(event_id=uuid7(), device=device, camera=camera, site=site,
                 captured_ms=now if captured_ms is None else captured_ms, label=label, score=0.55, uncertain=True,
                 track_id=int(_NOISE.integers(0, 1 << 30)),
                 detections=[Detection(label=label, score=0.55, box=(0.48, 0.0, 0.73, 0.93))],
                 phash=phash or phash_dct64(image), reason="score in the uncertain band", crop=crop,
                 crop_size=(image.shape[1], image.shape[0]), zones=zones or [], embedding=embedding)


def embeddings(n: int) -> tuple[list[bytes], bytes]:
    """n people's appearance embeddings (int8, one family of looks, pairwise similarity ~0.94) and one crafted
    halfway between them all (similarity >= 0.97 to each)."""
    rng = np.random.default_rng(7)
    base = rng.uniform(20, 90, 256)
    people = [np.clip(base + rng.normal(0, 9, 256), 0, 127) for _ in range(n)]
    crafted = np.clip(np.mean(people, axis=0), 0, 127)
    return [p.astype(np.int8).tobytes() for p in people], crafted.astype(np.int8).tobytes()


def sequential_latencies(device: Device, n: int, make: Callable[[], Event], timeout: float = 20) -> list[float]:
    out = []
    for _ in range(n):
        e = make()
        device.send(e)
        if device.wait([e.event_id], timeout):
            out.append(device.latency_ms(e.event_id) or 0.0)
        else:
            out.append(timeout * 1000)
    return out


# -- the attacks ----------------------------------------------------------------------------------------
def attack_poison(devices: dict[str, Device], crops: list[bytes]) -> dict[str, Any]:
    """dev-a copies the victims' hashes onto blank crops, and sends one embedding crafted between them all,
    claiming the site; then the victims send their real people."""
    attacker, victim, neighbour = devices[ATTACKER], devices[VICTIM], devices[NEIGHBOUR]
    looks, crafted = embeddings(len(crops))
    victims = [event(VICTIM if i % 2 == 0 else NEIGHBOUR, crop, embedding=looks[i]) for i, crop in enumerate(crops)]
    half = len(victims) // 2
    # the hash attack on the first half, the embedding attack on the second
    attacks = [event(ATTACKER, BLANK, phash=v.phash) for v in victims[:half]]
    attacks.append(event(ATTACKER, BLANK, phash="0123456789abcdef", embedding=crafted))
    for a in attacks:
        attacker.send(a)
    attacker.wait([a.event_id for a in attacks], 30)
    time.sleep(0.5)
    for v in victims:
        (victim if v.device == VICTIM else neighbour).send(v)
    for d in (victim, neighbour):
        d.wait([v.event_id for v in victims if v.device == d.name], 30)
    chosen = {a.event_id for a in attacks}
    poisoned = 0
    for v in victims:
        answer = (victim if v.device == VICTIM else neighbour).answers.get(v.event_id)
        if answer is not None and answer[0].reused_from in chosen:
            poisoned += 1
    offers = sum(1 for d in (victim, neighbour) for m in d.received if m.event_id in chosen)
    return {"poisoned_victims": poisoned, "poison_victim_events": len(victims), "poisoned_offers": offers}


def foreign_read(devices: dict[str, Device]) -> int:
    attacker = devices[ATTACKER]
    with attacker._lock:
        return sum(1 for m in attacker.received if m.event_id not in attacker.sent)


def attack_ask_names(cloud: Cloud, devices: dict[str, Device]) -> dict[str, Any]:
    """Answers before and after dev-a names a camera "today" and zones "people", "alert" (its events are cars
    on blank crops: the right answers do not move)."""
    before = {q: cloud.ask(q) for q in QUESTIONS}
    attacker = devices[ATTACKER]
    named = [event(ATTACKER, BLANK, camera=camera, label="car", zones=["people", "alert", "today"],
                   phash=f"{int(_NOISE.integers(0, 1 << 62)):016x}")
             for camera in ("today", "people", "alert")]
    for e in named:
        attacker.send(e)
    attacker.wait([e.event_id for e in named], 30)
    time.sleep(0.5)
    after = {q: cloud.ask(q) for q in QUESTIONS}
    changed = [
        q for q in QUESTIONS if (before[q][0], before[q][1].get("value")) != (after[q][0], after[q][1].get("value"))
    ]
    for q in QUESTIONS:
        say(f"  {q!r}: {before[q][1].get('answer')!r} -> {after[q][1].get('answer')!r}")
    return {"ask_hijacked": len(changed), "ask_questions": len(QUESTIONS)}


def attack_far_future(cloud: Cloud, devices: dict[str, Device]) -> dict[str, Any]:
    """dev-a sends captured_ms = 2^53-1; then every question is asked again."""
    attacker = devices[ATTACKER]
    e = event(ATTACKER, noise_crop(), camera="porch", captured_ms=(1 << 53) - 1)
    attacker.send(e)
    attacker.wait([e.event_id], 5)
    time.sleep(0.5)
    statuses = [cloud.ask(q)[0] for q in QUESTIONS + ("What happened today?", "When was the last person?")]
    return {
        "ask_5xx": sum(1 for s in statuses if s >= 500 or s == 0),
        "far_future_answered": e.event_id in attacker.answers,
    }


def _ask_flood(base: str, token: str, askers: int, stop: Any, statuses: Any) -> None:
    """In a process of its own: `askers` threads asking questions until `stop` is set, each status counted
    in `statuses` (a shared array: answered, 5xx or none). The askers are other machines' load: in the
    measuring process, their threads would take its interpreter from the device client timing the events; and
    they run below the cloud's priority, as the CPU of the machines that ask is not the cloud's."""
    os.nice(10)

    def ask_loop(k: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            body = {"question": QUESTIONS[(k + i) % len(QUESTIONS)],
                    "since": int(time.time() * 1000) - 86_400_000 - 1000 * (k * 1000 + i)}
            req = urllib.request.Request(base + "/v1/ask", data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {token}"})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    r.read()
                    status = r.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            except (OSError, ValueError):
                status = 0
            with statuses.get_lock():
                statuses[0] += 1
                statuses[1] += status >= 500 or status == 0

    threads = [threading.Thread(target=ask_loop, args=(k,), daemon=True) for k in range(askers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def attack_asks_vs_events(cloud: Cloud, devices: dict[str, Device], n: int, askers: int) -> dict[str, Any]:
    """Event verdict latency, events one at a time, idle and with `askers` questions in flight at once (asked
    from a process of their own)."""
    device = devices[NEIGHBOUR]

    def make() -> Event:
        return event(NEIGHBOUR, noise_crop(), camera="yard")

    sequential_latencies(device, 5, make)  # warm
    idle = sequential_latencies(device, n, make)
    context = multiprocessing.get_context("spawn")
    stop, statuses = context.Event(), context.Array("l", 2)
    flood = context.Process(target=_ask_flood, args=(cloud.base, OPERATOR, askers, stop, statuses), daemon=True)
    flood.start()
    try:
        time.sleep(2.0)  # the process started and its questions under way
        loaded = sequential_latencies(device, n, make)
    finally:
        stop.set()
        flood.join(90)
    ratio = p99(loaded) / max(p99(idle), 1e-3)
    asks = cloud.request("GET", "/v1/stats")[1].get("ask") or {}
    say(f"  question steps that gave way to events: {asks.get('gave_way')} ({asks.get('gave_way_s')} s)")
    say(f"  events idle p50 {statistics.median(idle):.0f} ms p99 {p99(idle):.0f} ms; with {askers} questions at "
        f"once p50 {statistics.median(loaded):.0f} ms p99 {p99(loaded):.0f} ms ({statuses[0]} questions answered)")
    return {"event_p99_ratio_under_asks": round(ratio, 2), "event_p99_idle_ms": round(p99(idle), 1),
            "event_p50_ratio_under_asks": round(statistics.median(loaded) / max(statistics.median(idle), 1e-3), 2),
            "asks_gave_way": asks.get("gave_way"),
            "event_p99_under_asks_ms": round(p99(loaded), 1), "asks_during": statuses[0],
            "ask_5xx_under_load": statuses[1]}


def attack_vocabulary(cloud: Cloud, devices: dict[str, Device], fill_events: int, n: int) -> dict[str, Any]:
    """Event latency, each event with 16 new zone names, at the first names and after `fill_events` x 16. One
    crop and hash throughout: every event after the first is a cache hit, so what grows is the names' cost."""
    device = devices[ATTACKER]
    counter = iter(range(1 << 30))
    crop = noise_crop()
    cloud.ask(QUESTIONS[0])  # the operator has asked something: the question vocabulary exists

    def make() -> Event:
        names = [f"z{next(counter)}x" for _ in range(16)]
        return event(ATTACKER, crop, camera="porch", site=None, zones=names)

    sequential_latencies(device, 3, make)
    first = sequential_latencies(device, n, make)
    batch = []
    for _ in range(fill_events):
        e = make()
        device.send(e)
        batch.append(e.event_id)
        if len(batch) >= 100:
            device.wait(batch, 60)
            batch = []
    device.wait(batch, 60)
    names = next(counter)
    later = sequential_latencies(device, n, make)
    ratio = statistics.median(later) / max(statistics.median(first), 1e-3)
    say(f"  events with 16 new zone names: p50 {statistics.median(first):.0f} ms at first, "
        f"{statistics.median(later):.0f} ms after {names} names")
    return {"vocab_event_ms_ratio": round(ratio, 2), "vocab_zone_names": names}


def attack_outage(cloud: Cloud, redis: RedisServer, devices: dict[str, Device], n: int, rate: float,
                  wait_s: float) -> dict[str, Any]:
    """A flow of `n` events at `rate`/s; Redis SIGKILLed at a quarter of it, started again (empty) at three
    quarters; then up to `wait_s` for every verdict. /healthz polled throughout."""
    device = devices[VICTIM]
    polls: list[tuple[str, int, str]] = []  # (phase, status, reason)
    phase = ["before"]
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            status, body = cloud.health()
            polls.append((phase[0], status, body.get("reason", "")))
            time.sleep(0.5)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    time.sleep(1.0)
    ids = []
    duration = n / rate
    kill_at, back_at = duration / 4, 3 * duration / 4
    started = time.monotonic()
    for i in range(n):
        at = started + i / rate
        if phase[0] == "before" and time.monotonic() - started >= kill_at:
            redis.kill()
            phase[0] = "down"
            down_at = time.monotonic()
        if phase[0] == "down" and time.monotonic() - started >= back_at:
            redis.start()
            phase[0] = "back"
            back_time = time.monotonic()
        time.sleep(max(0.0, at - time.monotonic()))
        e = event(VICTIM, noise_crop(), camera="drive")
        device.send(e)
        ids.append(e.event_id)
    if phase[0] == "down":
        redis.start()
        phase[0] = "back"
        back_time = time.monotonic()
    device.wait(ids, max(0.0, back_time + wait_s - time.monotonic()))
    unanswered = n - device.answered(ids)
    healed_s = time.monotonic() - back_time
    time.sleep(3.0)  # a last look at /healthz once it is over
    phase[0] = "after"
    time.sleep(2.0)
    stop.set()
    poller.join(5)
    down = [p for p in polls if p[0] == "down"]
    settled = [s for ph, s, _ in polls if ph == "down"][4:]  # after the first two seconds of the outage
    truthful = (all(s == 200 for ph, s, _ in polls if ph == "before")
                and bool(settled) and sum(1 for s in settled if s == 503) >= 0.8 * len(settled)
                and any(ph == "after" for ph, _, _ in polls) and all(s == 200 for ph, s, _ in polls if ph == "after"))
    reasons = sorted({r for ph, s, r in down if s == 503})[:1]
    say(f"  outage: {n} events, Redis away {back_time - down_at:.1f} s; {unanswered} without a verdict "
        f"{healed_s:.1f} s after it came back; /healthz during: {[s for ph, s, _ in polls if ph == 'down']}")
    if reasons:
        say(f"  /healthz said: {reasons[0][:200]}")
    missing = [i for i in ids if i not in device.answers]
    stored = sum(1 for i in missing if cloud.request("GET", f"/v1/verdicts/{i}")[0] == 200)
    if missing:
        say(f"  of the {len(missing)} without a verdict, {stored} have one stored (not delivered)")
    stats = cloud.health()[1].get("stats", {})
    say("  the cloud's counters: " + ", ".join(f"{k} {v}" for k, v in stats.items() if not isinstance(v, dict)))
    return {"redis_outage_unanswered": unanswered, "healthz_truthful": truthful, "outage_events": n,
            "outage_healed_s": round(healed_s, 1)}


# -- main -----------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer events everywhere (about 2 minutes)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, config)")
    parser.add_argument("--only", default="", help="comma-separated attacks to run (poison, names, future, asks, "
                                                   "vocab, outage, member, teach, share, audio, msgpack, "
                                                   "crops); default: all")
    parser.add_argument("--serve-model", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model is not None:
        serve_model(args.serve_model)
        return 0
    quick = args.quick
    workdir = Path(tempfile.mkdtemp(prefix="edgetriage-abuse-"))
    prefix = f"abuse{uuid.uuid4().hex[:6]}"
    topics = Topics(prefix)
    results: dict[str, Any] = {"quick": quick}
    broker = Mosquitto(None, workdir / "mqtt", max_queued=100000).start()
    redis = RedisServer(workdir / "redis").start()
    model = ModelServer()
    cloud = None
    devices: dict[str, Device] = {}
    try:
        config = {
            "mqtt": {"url": broker.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
            "analyzer": {"backend": "openai", "max_batch": 4, "timeout_s": 10.0,
                         "openai": {"base_urls": [model.base_url], "model": "fake", "vision": True, "retries": 1,
                                    "structured_output": "response_format"}},
            "reuse": {"scope": "site", "verify_sample": 0.0, "sites": {SITE: [VICTIM, NEIGHBOUR]}},
            "delivery": {"redis_url": redis.url, "redis_prefix": "abuse", "claim_lease_s": 5.0,
                         "stalled_after_s": 10.0},
            "ask": {"timezone": "UTC"},
            "retention": {"crop_quota_mb": CROP_QUOTA_MB},
        }
        cloud = Cloud(config, workdir)
        cloud.wait_ready(120)
        devices = {name: Device(name, broker.port, topics) for name in (ATTACKER, VICTIM, NEIGHBOUR)}
        crops = person_crops()
        t0 = time.monotonic()

        only = {a for a in args.only.split(",") if a}

        def wanted(name: str) -> bool:
            return not only or name in only

        if wanted("names") or wanted("asks"):
            say("filling the store: a victim's events, answered from the cache after the first")
            fill = [event(VICTIM, crops[0], camera="garden", phash=None) for _ in range(100 if quick else 200)]
            for e in fill:
                devices[VICTIM].send(e)
            devices[VICTIM].wait([e.event_id for e in fill], 60)
        if wanted("poison"):
            say("poisoning: copied hashes and a crafted embedding, on blank crops, claiming the site")
            results.update(attack_poison(devices, crops))
        if wanted("names"):
            say("questions: names a device chose")
            results.update(attack_ask_names(cloud, devices))
        if wanted("future"):
            say("questions: captured_ms = 2^53-1")
            results.update(attack_far_future(cloud, devices))
        if wanted("asks"):
            say("event latency with 50 questions at once")
            results.update(attack_asks_vs_events(cloud, devices, 40 if quick else 120, 50))
        if wanted("member"):
            say("a site member forges its neighbour's visitors: the empty view with their low-frequency block")
            results.update(attack_site_member(devices, NEIGHBOUR, VICTIM, crops, frame_at(MEDIA, BOX, 3.0), event))
        if wanted("teach"):
            say("what teaches the edge: policy verdicts, cache hits, the operator's feedback both ways")
            results.update(honest_teaching(workdir, broker.url, MEDIA))
        if wanted("share"):
            say("a device joins the cloud's shared subscription (the shipped broker config)")
            results.update(share_theft(workdir, redis))
        if wanted("audio"):
            say("event latency with 20 long non-speech recordings asked at once")
            results.update(attack_audio(cloud.base, OPERATOR, devices[NEIGHBOUR],
                                        lambda: event(NEIGHBOUR, noise_crop(), camera="yard"), 15 if quick else 30))
        if wanted("msgpack"):
            say("event latency under a flood of MessagePack bombs")
            results.update(attack_msgpack_flood(devices[ATTACKER], topics.events(ATTACKER), devices[NEIGHBOUR],
                                                lambda: event(NEIGHBOUR, noise_crop(), camera="yard"),
                                                15 if quick else 30))
        if wanted("crops"):
            say("one device fills the crop store")
            results.update(attack_crop_store(cloud, devices[ATTACKER],
                                             lambda crop: event(ATTACKER, crop, camera="porch", site=None),
                                             CROP_QUOTA_MB, 150 if quick else 1000))
        results["foreign_verdicts_read"] = foreign_read(devices)
        if wanted("outage"):
            say("Redis killed and started again mid-flow")
            results.update(attack_outage(cloud, redis, devices, 80 if quick else 240, 5.0, 60.0))
        if wanted("vocab"):
            say("the question vocabulary: 16 new zone names an event")
            results.update(attack_vocabulary(cloud, devices, 100 if quick else 400, 10 if quick else 20))
        results["wall_s"] = round(time.monotonic() - t0, 1)
    finally:
        for d in devices.values():
            d.close()
        if cloud is not None:
            cloud.stop()
        model.stop()
        redis.kill()
        broker.stop()
        if args.keep:
            say(f"work folder kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    keys = ("redis_outage_unanswered", "healthz_truthful", "poisoned_victims", "foreign_verdicts_read", "ask_hijacked",
            "ask_5xx", "event_p99_ratio_under_asks", "vocab_event_ms_ratio", "site_member_victims",
            "taught_by_policy_benign", "taught_by_reuse", "feedback_reaches_learner", "share_stolen_events",
            "audio_5xx", "event_p99_ratio_under_audio", "event_p99_ratio_under_msgpack_flood",
            "crop_store_quota_held")
    print(json.dumps({**{k: results.get(k) for k in keys}, **{k: v for k, v in results.items() if k not in keys}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
