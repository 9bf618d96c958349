"""Questions against the event path, measured side by side on one `edgetriage cloud run`:

    event_p50_idle_ms / event_p99_idle_ms     device publish -> verdict received, no questions
    event_p50_asks_ms / event_p99_asks_ms     the same while 50 questions are asked at once, over and over
                                              (4 rounds of each in turn, pooled)
    event_p99_ratio_under_asks                event p99 with the questions / idle                 (goal <= 2)
    question_p50_ms                           one question's answer time while 50 run (each scans the store)
    ask_5xx                                   answers with a 5xx among all questions asked (a stored event has
                                              captured_ms = 2^53 - 1)                              (goal 0)
    ask_hijacked                              answers that changed after a device named a camera `today` and
                                              zones `people`, `alert`                              (goal 0)
    vocab_event_ms_ratio                      event latency (16 new zone names each) on a service that has learned
                                              6,400 zone names a device sent (400 events of 16) / on one that has
                                              learned 16, the two asked in turn                    (goal <= 1.2)
    event_p50_ms_names_16 / _6400, healthz_p50_ms_names_16 / _6400, rss_mb_names_16 / _6400
                                              the two side by side

How: a Mosquitto and a fixed-latency OpenAI-compatible model server of the bench's own (bench/fleet.py's,
50 ms), the store filled beforehand with 3,000 answered events of the operator's site (and the one far-future
event), then the cloud service as its own process (`edgetriage cloud run`) with the HTTP API; events are
published one at a time over MQTT, each with its own random crop (a cache miss: the model answers), questions
go over HTTP from this process.

    python bench/ask_load.py [--events N] [--stored N]

The last stdout line is one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import cv2
import numpy as np
from brokers import Mosquitto  # bench/brokers.py, beside this script
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict, decode_verdict, encode_event, encode_verdict
from edgetriage.shared.topics import Topics
from fleet import FakeModelServer, Worker

from cloud import Client

TOKEN = "ask-load-operator"
QUESTIONS = ("how many people came today?", "when was the last alert?", "list the events on the porch",
             "how many people were on the porch in the last 3 hours?", "anyone at the back door this morning?",
             "when was the first person?")
HIJACK = ("how many people came today?", "when was the last alert?")
ROUNDS = 4


def say(message: str) -> None:
    print(f"[ask-load bench] {message}", file=sys.stderr, flush=True)


def p99(values: list[float]) -> float:
    data = sorted(values)
    return data[min(len(data) - 1, int(0.99 * len(data)))]


def jpeg(rng: np.random.Generator) -> bytes:
    return cv2.imencode(".jpg", rng.integers(0, 255, (48, 32, 3), dtype=np.uint8))[1].tobytes()


def event(device: str, camera: str, rng: np.random.Generator, *, captured_ms: int | None = None,
          zones: list[str] | None = None, label: str = "person") -> Event:
    now = int(time.time() * 1000)
    return Event(event_id=uuid7(now), device=device, camera=camera, captured_ms=captured_ms or now, label=label,
                 score=0.6, uncertain=True, track_id=int(rng.integers(1, 1 << 30)),
                 detections=[Detection(label=label, score=0.6, box=(0.2, 0.1, 0.6, 0.9))],
                 phash=f"{int(rng.integers(0, 1 << 62)):016x}", reason="detector unsure", crop=jpeg(rng),
                 zones=zones or [])


def fill(path: Path, n: int, rng: np.random.Generator) -> None:
    """The operator's site: `n` answered events over the last two days, and one captured at 2^53 - 1."""
    store = SQLiteStore(path)
    now = int(time.time() * 1000)
    items = []
    for i in range(n):
        e = event("house", ("porch", "back_door")[i % 2], rng, captured_ms=now - 60_000 - i * 57_000,
                  zones=["front_door"] if i % 3 == 0 else [])
        v = Verdict(event_id=e.event_id, device="house", camera=e.camera, label="person",
                    verdict="alert" if i % 50 == 7 else "benign", confidence=0.8, description=f"visitor {i}",
                    model="fill", source="llm", created_ms=e.captured_ms)
        items.append((e, e.captured_ms, v, encode_verdict(v)))
    far = event("house", "porch", rng, captured_ms=2**53 - 1)
    fv = Verdict(event_id=far.event_id, device="house", camera="porch", label="person", verdict="alert",
                 confidence=0.8, description="a far-future clock", model="fill", source="llm", created_ms=now)
    items.append((far, now, fv, encode_verdict(fv)))
    for start in range(0, len(items), 500):
        store.put_answered_many(items[start:start + 500])
    store.close()


class Device:
    """Publishes one event at a time and times it to its verdict."""

    def __init__(self, port: int, topics: Topics, device: str) -> None:
        self.topics = topics
        self.device = device
        self.client = Client(port, subscribe=topics.verdicts(device))

    def one(self, e: Event, timeout: float = 30.0) -> float:
        begun = time.perf_counter()
        self.client.publish(self.topics.events(self.device), encode_event(e))
        while True:
            at, _, payload = self.client.get(timeout)
            if decode_verdict(payload).event_id == e.event_id:
                return (at - begun) * 1000

    def close(self) -> None:
        self.client.close()


class Asking:
    """50 questions in flight at once over HTTP, each asked again as soon as it is answered."""

    def __init__(self, base: str, concurrency: int = 50) -> None:
        self.base, self.concurrency = base, concurrency
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        import aiohttp

        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            async def loop(i: int) -> None:
                n = i
                while not self._stop.is_set():
                    question = QUESTIONS[n % len(QUESTIONS)] + " " * (n % 7)  # some cache misses
                    begun = time.perf_counter()
                    async with http.post(f"{self.base}/v1/ask", json={"question": question}) as r:
                        await r.read()
                        self.statuses[r.status] = self.statuses.get(r.status, 0) + 1
                    self.latencies.append((time.perf_counter() - begun) * 1000)
                    n += 1

            await asyncio.gather(*(loop(i) for i in range(self.concurrency)))

    def __enter__(self) -> Asking:
        self._thread.start()
        time.sleep(1.0)  # all 50 in flight
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(120)


def http(base: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict, float]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}{path}", data=data, method=method, headers={
        "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    begun = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read()), (time.perf_counter() - begun) * 1000
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}"), (time.perf_counter() - begun) * 1000


def rss_mb(worker: Worker) -> float | None:
    """The resident memory of a service process (Linux), MB."""
    try:
        for line in Path(f"/proc/{worker.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def cloud(workdir: Path, broker: Mosquitto, model: FakeModelServer, name: str, workers: list[Worker]) -> Worker:
    """`edgetriage cloud run` on the store `workdir/<name>.db` with a prefix of its own, ready."""
    prefix = f"{name}{uuid7()[-8:]}"
    worker = Worker({"mqtt": {"url": broker.url, "prefix": prefix}, "store_path": str(workdir / f"{name}.db"),
                     "analyzer": {"backend": "openai", "openai": {"base_urls": [model.base_url], "model": "f"}},
                     "reuse": {"verify_sample": 0.0},
                     "ask": {"cameras": {"house": ["porch", "back_door"]}, "zones": ["front_door"]}}, workdir, name)
    workers.append(worker)
    worker.prefix = prefix
    worker.wait_ready()
    return worker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=120, help="events timed in each of the idle and asking parts")
    parser.add_argument("--stored", type=int, default=3000, help="answered events in the store beforehand")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    os.environ["EDGETRIAGE_API_TOKEN"] = TOKEN
    with tempfile.TemporaryDirectory(prefix="ask-load-") as tmp:
        workdir = Path(tmp)
        fill(workdir / "cloud.db", args.stored, rng)
        broker = Mosquitto(None, workdir, max_queued=100000).start()
        model = FakeModelServer(0.05)
        workers: list[Worker] = []
        devices: list[Device] = []
        try:
            worker = cloud(workdir, broker, model, "cloud", workers)
            topics = Topics(worker.prefix)
            base = f"http://127.0.0.1:{worker.port}"
            house = Device(broker.port, topics, "house")
            devices.append(house)
            for _ in range(5):
                house.one(event("house", "porch", rng))  # warm up
            idle: list[float] = []
            busy: list[float] = []
            latencies: list[float] = []
            statuses: dict[int, int] = {}
            for round_ in range(ROUNDS):  # in turn: a neighbour's load on the cores falls on both parts alike
                say(f"round {round_ + 1}/{ROUNDS}: {args.events // ROUNDS} events idle, then as many with 50 "
                    "questions at once")
                idle += [house.one(event("house", "porch", rng)) for _ in range(args.events // ROUNDS)]
                with Asking(base) as asking:
                    busy += [house.one(event("house", "porch", rng)) for _ in range(args.events // ROUNDS)]
                latencies += asking.latencies
                for status, count in asking.statuses.items():
                    statuses[status] = statuses.get(status, 0) + count
            before = {q: http(base, "POST", "/v1/ask", {"question": q})[1] for q in HIJACK}
            attacker = Device(broker.port, topics, "dev-a")
            devices.append(attacker)
            for _ in range(3):
                attacker.one(event("dev-a", "today", rng, zones=["people", "alert"], label="car"))
            after = {q: http(base, "POST", "/v1/ask", {"question": q})[1] for q in HIJACK}
            hijacked = sum((before[q].get("answer"), before[q].get("value")) != (after[q].get("answer"),
                                                                                 after[q].get("value"))
                           for q in HIJACK)
            say("two more services side by side: one has learned 6,400 zone names from a device, one 16")
            big, small = cloud(workdir, broker, model, "big", workers), cloud(workdir, broker, model, "small", workers)
            big_dev, small_dev = (Device(broker.port, Topics(w.prefix), "dev-v") for w in (big, small))
            devices += [big_dev, small_dev]
            for i in range(400):
                big_dev.one(event("dev-v", "cam", rng, zones=[f"z{i}-{j}" for j in range(16)]))
            small_dev.one(event("dev-v", "cam", rng, zones=[f"z{j}" for j in range(16)]))
            side: dict[str, list[float]] = {"big": [], "small": []}
            healthz: dict[str, list[float]] = {"big": [], "small": []}
            for i in range(args.events):  # in turn, 16 new names each: the machine's load falls on both alike
                for name, w, d in (("small", small, small_dev), ("big", big, big_dev)):
                    side[name].append(d.one(event("dev-v", "cam", rng, zones=[f"n{i}-{j}" for j in range(16)])))
                    healthz[name].append(http(f"http://127.0.0.1:{w.port}", "GET", "/healthz")[2])
            rss = {name: rss_mb(w) for name, w in (("small", small), ("big", big))}
        finally:
            for d in devices:
                d.close()
            for w in workers:
                w.stop()
            model.stop()
            broker.stop()
    out = {
        "event_p50_idle_ms": round(statistics.median(idle), 2),
        "event_p99_idle_ms": round(p99(idle), 2),
        "event_p50_asks_ms": round(statistics.median(busy), 2),
        "event_p99_asks_ms": round(p99(busy), 2),
        "event_p99_ratio_under_asks": round(p99(busy) / p99(idle), 3),
        "question_p50_ms": round(statistics.median(latencies), 2),
        "questions": len(latencies),
        "ask_statuses": statuses,
        "ask_5xx": sum(n for s, n in statuses.items() if s >= 500),
        "ask_hijacked": hijacked,
        "hijack_answers": {q: [before[q].get("answer"), after[q].get("answer")] for q in HIJACK},
        "vocab_event_ms_ratio": round(statistics.median(side["big"]) / statistics.median(side["small"]), 3),
        "event_p50_ms_names_16": round(statistics.median(side["small"]), 2),
        "event_p50_ms_names_6400": round(statistics.median(side["big"]), 2),
        "healthz_p50_ms_names_16": round(statistics.median(healthz["small"]), 2),
        "healthz_p50_ms_names_6400": round(statistics.median(healthz["big"]), 2),
        "rss_mb_names_16": rss["small"],
        "rss_mb_names_6400": rss["big"],
        "stored_events": args.stored,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
