"""Fleet benchmark: many devices against one cloud, scaled out over worker processes on one shared subscription.

    devices              virtual devices (bench/devices.py), all in this one asyncio process, each its own
                         MQTT 5 session, user name and password (held to its own topics by the shipped ACL),
                         outbox (re-send after a verdict timeout) and escalation budget
    events               events published by all of them (fleet part, 1- and 2-worker runs together)
    lost                 events published - events with a verdict received, after the drain      (must be 0)
    duplicates_analysed  model analyses beyond one per event: the same event answered by the model twice
                         (two differing verdicts for one id, or more model calls than model verdicts)  (must be 0)
    verdict_p50/p95/p99_ms  device publish -> verdict received on its own answers topic, the 2-worker fleet run
    cache_hit_p99_ms     the same, for the events the cloud answered from its cache with a verdict that had
                         already reached its device when the event was sent                     (goal <= 100)
    flight_waits         cache answers to events sent before the model verdict they reuse had come: they
                         waited for that model call (cloud.reuse.singleflight); flight_wait_p99_ms their p99
    llm_p99_ms           the same, for the events the model answered (the real CPU model: queueing included)
    cloud_rss_mb         each worker's peak resident memory in the 2-worker fleet run (MiB)
    broker_connections   the broker's own count of connected clients at the end of that run ($SYS)
    alpha                verdicts answered by the cloud cache / all verdicts answered (2-worker fleet run)
    cache_hit_rate       cloud-cache verdicts / events published (2-worker fleet run)
    workers_2_over_1     events/s with 2 workers / with 1, on the cache-miss path with a slow back-end
    server_requests      requests each of the two model servers got (the openai back-end given both)
    model_calls          model calls (verdicts from the model, fallbacks included) over the fleet part's runs
    distinct_crops       distinct (crop, reuse scope key) pairs each fleet run published, summed over its runs:
                         with single flight (cloud.reuse.singleflight) no crop costs two model calls, so
                         model_calls <= distinct_crops (below it where look-alike crops share one call)
    model_calls_per_distinct_crop  model_calls / distinct_crops                                  (goal 1.0)
    p6_llm_avoided       P6 as bench/cloud.py defines it (bench/repeats.py), on the 2-worker fleet run: the
                         events whose labelled visit (labels.json) some device of the site already escalated
                         answered from the cloud cache / all such repeats                       (goal >= 0.9)
    p6_wrong_reuse       cloud-cache verdicts whose model answer was about another labelled visit / cloud-cache
                         verdicts (the model is not asked again here: each one counts)          (goal <= 0.01)

How: the sample clips (models/media) go once through the real edge pipeline (edgetriage.edge.replay), and
the escalations it makes (real crops, hashes, detections) are kept (cached under ~/.cache/edgetriage/).
Virtual devices replay them, each starting a little later than the one before, against a Mosquitto of the
bench's own on a free loopback port and `edgetriage cloud run` worker processes on the MQTT 5 shared
subscription, with verdicts, seen ids and claims in Redis (127.0.0.1:6379, a unique key prefix whose keys are
deleted at the end). Fleet part: the real in-process CPU model (SmolLM2-135M) and site-wide verdict reuse,
with 1 and then 2 workers. Scaling part: every event on its own camera, so none can be answered from the
cache, the `openai` back-end pointed at two fixed-latency OpenAI-compatible servers of the bench's own (a
real model on 2 shared cores is CPU-bound, so it would measure the cores, not the scale-out); the JSON says
so in `slow_backend`.

More than 200 devices (`--devices 1000`): the fleet part runs once, with 2 workers: a warm-up first (the first
devices send each recorded escalation once, and the real CPU model answers them: the site as it is once
running), then each device replays a window of the recording (3,000 events in all: 3 a device at 1,000), so
most events are cache hits and the few misses go to the model; the scaling part is unchanged. The open-file limit is
raised for the
devices' sockets and the broker's (`open_file_limit` in the JSON).

    python bench/fleet.py [--quick] [--media DIR] [--devices N] [--rerecord]

The last stdout line is one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from brokers import Mosquitto, free_port, wait_port  # noqa: E402 - bench/brokers.py, beside this script
from devices import Fleet, VirtualDevice  # noqa: E402
from edgetriage.shared.ids import uuid7  # noqa: E402
from edgetriage.shared.protocol import ClassScore, Detection, Event  # noqa: E402
from edgetriage.shared.reuse import scope_key  # noqa: E402
from edgetriage.shared.topics import Topics  # noqa: E402
from harness import (
    CLOUD_USER,
    MONITOR_USER,
    CloudProcess,
    cpu_s,
    fleet_broker,
    peak_rss_mb,
    raise_fd_limit,
    sys_counter,  # noqa: E402
)
from recall import load_labels  # noqa: E402
from repeats import Look, Repeats  # noqa: E402

DEFAULT_MEDIA = Path(__file__).resolve().parents[1] / "models" / "media"  # clips shipped in the repository
CLIPS = ("one-by-one-person-detection.mp4", "face-demographics-walking.gif", "person-bicycle-car-detection.gif")
REDIS_URL = "redis://127.0.0.1:6379/0"
CACHE_DIR = Path.home() / ".cache" / "edgetriage" / "bench-fleet"
SITE = "fleet"
LARGE_FLEET = 200  # above this many devices: one fleet run (2 workers), each device a window of the recording
EVENTS_LARGE = 3000  # events of a large fleet's run in all (3 a device at 1,000)


def say(message: str) -> None:
    tqdm.write(f"[fleet bench] {message}", file=sys.stderr)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))], 1)


# -- the recorded detections ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recorded:
    """One escalation the real edge pipeline made on a shared clip: what a device would send, minus ids."""

    offset_s: float  # when in the clip the track began
    label: str
    score: float
    uncertain: bool
    track_id: int
    detections: tuple[tuple[str, float, tuple[float, float, float, float]], ...]
    phash: str
    reason: str
    crop: bytes
    crop_size: tuple[int, int]
    classes: tuple[tuple[str, float], ...]
    clip: str = ""
    last_s: float = 0.0  # when in the clip the track was escalated
    x: float = 0.5  # horizontal centre of its box (labelled visits side by side are told apart by it)
    embedding: bytes | None = None

    def event(self, device: str, camera: str, now_ms: int) -> Event:
        return Event(event_id=uuid7(now_ms), device=device, camera=camera, site=SITE, captured_ms=now_ms,
                     label=self.label, score=self.score, uncertain=self.uncertain, track_id=self.track_id,
                     detections=[Detection(label=lab, score=s, box=box) for lab, s, box in self.detections],
                     phash=self.phash, reason=self.reason, crop=self.crop, crop_size=self.crop_size,
                     classes=[ClassScore(label=n, score=p) for n, p in self.classes], embedding=self.embedding)


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


def record(media: Path, max_frames: int | None, rerecord: bool) -> list[Recorded]:
    """The escalations of the real edge pipeline on the shared clips, computed once and cached."""
    clips = [media / name for name in CLIPS if (media / name).exists()]
    if not clips:
        raise SystemExit(f"no shared clips in {media} (expected {', '.join(CLIPS)}); pass --media DIR")
    key = hashlib.sha256(json.dumps([[c.name, c.stat().st_size, c.stat().st_mtime_ns] for c in clips]
                                    + [max_frames, "v2: clip, last_s, x, embedding"]).encode()).hexdigest()[:16]
    cached = CACHE_DIR / f"recording-{key}.json"
    if cached.exists() and not rerecord:
        rows = json.loads(cached.read_text())
        say(f"{len(rows)} recorded escalations from {cached}")
        return [_from_row(r) for r in rows]
    from edgetriage.edge.config import EdgeConfig
    from edgetriage.edge.replay import Replayer
    from edgetriage.edge.vision.capture import FrameSource

    replayer = Replayer(EdgeConfig(device="fleet-recorder"))
    rows: list[dict[str, Any]] = []
    for clip in clips:
        source = FrameSource(str(clip))
        source.open()
        try:
            frames = itertools.islice(source, max_frames) if max_frames else source
            result = replayer.run(str(clip), tqdm(frames, desc=f"record {clip.name}", unit="frame",
                                                  file=sys.stderr, leave=False), fps=source.fps)
        finally:
            source.close()
        for replayed in result.events:
            if replayed.decision.kind != "escalate":
                continue
            ev = replayed.event
            rows.append({"offset_s": ev.first_ts, "label": ev.label, "score": _unit(ev.score),
                         "uncertain": bool(ev.uncertain), "track_id": int(ev.track_id),
                         "detections": [[d.label, _unit(d.score), [_unit(v) for v in d.box]]
                                        for d in ev.detections[-16:]],
                         "phash": ev.phash, "reason": replayed.decision.reason[:256],
                         "crop": base64.b64encode(ev.crop_jpeg).decode(), "crop_size": list(ev.crop_size),
                         "classes": [[n[:128], _unit(p)] for n, p in ev.classes[:5]],
                         "clip": clip.name, "last_s": ev.last_ts, "x": (ev.box[0] + ev.box[2]) / 2,
                         "embedding": base64.b64encode(ev.embedding).decode() if ev.embedding else None})
        say(f"recorded {clip.name}: {result.frames} frames, "
            f"{sum(e.decision.kind == 'escalate' for e in result.events)} escalations")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(rows))
    return [_from_row(r) for r in rows]


def _from_row(r: dict[str, Any]) -> Recorded:
    return Recorded(offset_s=float(r["offset_s"]), label=r["label"], score=r["score"], uncertain=r["uncertain"],
                    track_id=r["track_id"], detections=tuple((a, b, tuple(c)) for a, b, c in r["detections"]),
                    phash=r["phash"], reason=r["reason"], crop=base64.b64decode(r["crop"]),
                    crop_size=tuple(r["crop_size"]), classes=tuple((n, p) for n, p in r["classes"]),
                    clip=r["clip"], last_s=float(r["last_s"]), x=float(r["x"]),
                    embedding=base64.b64decode(r["embedding"]) if r["embedding"] else None)


# -- infrastructure ------------------------------------------------------------------------------------------
class FakeModelServer:
    """A fixed-latency OpenAI-compatible chat-completions server of our own (this file, --serve-openai),
    in a process of its own; counts the requests it answered."""

    def __init__(self, delay_s: float) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-openai", str(self.port),
                                      "--delay", str(delay_s)], stdout=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "the fixed-latency model server")
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/count", timeout=5) as r:
            return int(json.loads(r.read())["requests"])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def serve_openai(port: int, delay_s: float) -> None:
    """Answer every chat completion after `delay_s` with a valid verdict; GET /count says how many."""
    from aiohttp import web

    count = 0

    async def chat(request: web.Request) -> web.Response:
        nonlocal count
        await request.read()
        await asyncio.sleep(delay_s)
        count += 1
        content = json.dumps({"description": "a person at the table", "verdict": "benign", "confidence": 0.7})
        return web.json_response({"id": f"c{count}", "object": "chat.completion", "model": "fixed-delay",
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": content}}],
                                  "usage": {"prompt_tokens": 300, "completion_tokens": 20}})

    async def counted(request: web.Request) -> web.Response:
        return web.json_response({"requests": count})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/count", counted)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


# -- one run -------------------------------------------------------------------------------------------------
@dataclass
class Schedule:
    """(seconds from start, device index, recorded event, camera id) in time order."""

    items: list[tuple[float, int, Recorded, str]] = field(default_factory=list)
    warmup: int = 0  # the first items go out at once and are answered before the rest start


def fleet_schedule(recorded: list[Recorded], devices: int, spread_s: float, speed: float,
                   per_device: int | None = None) -> Schedule:
    """Device k starts k/devices of `spread_s` in and replays the recording `speed` times faster than real:
    all of it, or (`per_device`, a large fleet) a window of that many escalations starting at its own place
    in it, after a warm-up in which the first devices send each recorded escalation once and get the model's
    verdicts: the site as it is once running, where the fleet's repeats are cache hits."""
    t0 = min(r.offset_s for r in recorded)
    if per_device is None:
        items = [(k * spread_s / devices + (r.offset_s - t0) / speed, k, r, "cam0")
                 for k in range(devices) for r in recorded]
        return Schedule(sorted(items, key=lambda x: x[0]))
    n = min(per_device, len(recorded))
    warmup = [(0.0, k % devices, r, "cam0") for k, r in enumerate(recorded)]
    items = [(k * spread_s / devices + (r.offset_s - t0) / speed, k, r, "cam0")
             for k in range(devices) for r in [recorded[(k + j) % len(recorded)] for j in range(n)]]
    return Schedule(warmup + sorted(items, key=lambda x: x[0]), warmup=len(warmup))


def burst_schedule(recorded: list[Recorded], devices: int, n: int) -> Schedule:
    """n events at once, round the devices, each on a camera of its own (so no verdict can be reused)."""
    return Schedule([(0.0, i % devices, recorded[i % len(recorded)], f"c{i}") for i in range(n)])


def device_name(k: int) -> str:
    return f"fleet-{k:03d}"


@dataclass
class Cloud:
    """What every worker of a run shares: the broker, its cloud password, the topics' prefix, the work folder."""

    broker: Mosquitto
    passwords: dict[str, str]
    prefix: str
    workdir: Path

    def worker(self, base: dict, name: str) -> CloudProcess:
        config = {**base, "mqtt": {"url": self.broker.url, "prefix": self.prefix, "username": CLOUD_USER,
                                   "client_id": f"{self.prefix}-{name}"}}
        return CloudProcess(config, self.workdir, name, env={"EDGETRIAGE_MQTT_PASSWORD": self.passwords[CLOUD_USER]})

    def connections(self) -> int | None:
        """The broker's own count of connected clients ($SYS/broker/clients/connected)."""
        return sys_counter(self.broker.port, "$SYS/broker/clients/connected", MONITOR_USER,
                           self.passwords[MONITOR_USER])


async def run_phase(name: str, schedule: Schedule, base: dict, workers: int, fleet: Fleet, cloud: Cloud,
                    drain_s: float, labels: dict[str, list[tuple[float, float]]] | None = None,
                    trace: Path | None = None) -> dict[str, Any]:
    """Start `workers` cloud processes, publish the schedule, wait for the verdicts, stop them; the figures."""
    procs = [cloud.worker(base, f"{name}-w{k}") for k in range(workers)]
    try:
        await asyncio.gather(*(asyncio.to_thread(w.wait_ready, 300, healthy=False) for w in procs))
        sent: dict[str, int] = {}  # event id -> device index
        offers0, resent0 = sum(d.offers for d in fleet.devices), sum(d.resent for d in fleet.devices)
        repeats = Repeats(labels or {}, base["reuse"].get("ttl_s", 3600))
        bar = tqdm(total=len(schedule.items), desc=f"{name}: verdicts", unit="ev", file=sys.stderr, leave=False)
        start = time.perf_counter()
        for index, (offset, k, rec, camera) in enumerate(schedule.items):
            if index and index == schedule.warmup:  # the warm-up's verdicts first; then the clock starts
                await _until_answered(fleet, sent, drain_s)
                say(f"{name}: warm-up answered ({len(sent)} events, {fleet.answered(set(sent), sent)} verdicts)")
                start = time.perf_counter()
            delay = start + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            event = rec.event(device_name(k), camera, int(time.time() * 1000))
            sent[event.event_id] = k
            repeats.add(Look(rec.clip, name, int(time.time() * 1000), rec.offset_s, rec.last_s, rec.x,
                             event.event_id, event))
            fleet.send(k, event)
            if len(sent) % 100 == 0:
                bar.n = fleet.answered(set(sent), sent)
                bar.refresh()
        published_at = time.perf_counter()
        ids = set(sent)
        while time.perf_counter() < published_at + drain_s:
            bar.n = got = fleet.answered(ids, sent)
            bar.refresh()
            if got == len(ids):
                break
            await asyncio.sleep(0.25)
        bar.close()
        await asyncio.sleep(1.0)  # late duplicate answers
        stats = [await asyncio.to_thread(w.stats) for w in procs]
        connections = await asyncio.to_thread(cloud.connections)
        rss = [w.peak_rss_mb() for w in procs]
        cpu = [round(cpu_s(w.proc.pid), 1) for w in procs]
    finally:
        for w in procs:
            await asyncio.to_thread(w.stop)
    answers = {i: fleet.devices[k].answers[i] for i, k in sent.items() if i in fleet.devices[k].answers}
    first_sent = {i: fleet.devices[k].sent.get(i, start) for i, k in sent.items()}
    done = max((t for _, t in answers.values()), default=published_at)
    latencies = {i: (t - first_sent[i]) * 1000 for i, (_, t) in answers.items()}
    sources = {i: v.source for i, (v, _) in answers.items()}
    twice = sum(1 for i, k in sent.items() if len(fleet.devices[k].copies.get(i, ())) > 1)
    # a cache answer to an event sent before the model verdict it reuses had come: it waited for that model
    # call (single flight), so its latency is the model's, not the cache's
    model_at = {i: t for i, (v, t) in answers.items() if v.source == "llm"}
    waited = {i for i, (v, _) in answers.items() if v.source == "cloud_cache"
              and first_sent[i] < model_at.get(v.reused_from or "", math.inf)}
    hit_ms = [ms for i, ms in latencies.items() if sources[i] == "cloud_cache" and i not in waited]
    flight_ms = [latencies[i] for i in waited]
    model_ms = [ms for i, ms in latencies.items() if sources[i] in ("llm", "fallback")]
    repeats.verdicts.update({i: v for i, (v, _) in answers.items()})
    p6 = repeats.figures()  # no model asked again: every reuse from another visit counts as wrong
    model_verdicts = sum(1 for s in sources.values() if s in ("llm", "fallback"))
    model_calls = sum(s["llm"] + s["fallback"] for s in stats)
    hits = sum(1 for s in sources.values() if s == "cloud_cache")
    distinct = {(hashlib.sha256(rec.crop).hexdigest(), _scope(base, k, camera)) for _, k, rec, camera in schedule.items}
    figures = {
        "workers": workers, "devices": len({k for _, k, _, _ in schedule.items}), "events": len(ids),
        "lost": len(ids) - len(answers), "duplicates_analysed": twice + max(0, model_calls - model_verdicts),
        "seconds": round(done - start, 2), "events_per_s": round(len(answers) / max(1e-9, done - start), 2),
        "verdict_p50_ms": percentile(list(latencies.values()), 0.50),
        "verdict_p95_ms": percentile(list(latencies.values()), 0.95),
        "verdict_p99_ms": percentile(list(latencies.values()), 0.99),
        "alpha": round(hits / len(sources), 4) if sources else None,
        "cache_hit_rate": round(hits / len(ids), 4) if ids else None,
        "hit_p50_ms": percentile(hit_ms, 0.5), "cache_hit_p99_ms": percentile(hit_ms, 0.99),
        "model_p50_ms": percentile(model_ms, 0.5), "llm_p99_ms": percentile(model_ms, 0.99),
        "flight_waits": len(flight_ms), "flight_wait_p99_ms": percentile(flight_ms, 0.99),
        "site_offers_received": sum(d.offers for d in fleet.devices) - offers0, "model_verdicts": model_verdicts,
        "fallbacks": sum(1 for s in sources.values() if s == "fallback"),
        "per_worker_received": [s["received"] for s in stats],
        "per_worker_analysed": [s["llm"] + s["fallback"] for s in stats],
        "redelivered_duplicates": sum(s["duplicates"] for s in stats),
        "device_resends": sum(d.resent for d in fleet.devices) - resent0,
        "model_calls": model_calls, "distinct_crops": len(distinct),
        "cloud_rss_mb": rss, "cloud_cpu_s": cpu, "broker_connections": connections,
        "broker_rss_mb": peak_rss_mb(cloud.broker.proc.pid) if cloud.broker.proc else None,
        "broker_cpu_s": round(cpu_s(cloud.broker.proc.pid), 1) if cloud.broker.proc else None,
        "p6_llm_avoided": p6["llm_avoided"], "p6_wrong_reuse": p6["wrong_reuse"], "p6": p6,
    }
    say(f"{name}: {json.dumps(figures)}")
    if trace is not None:  # one row per event, for a look at where the time went
        with open(trace / f"{name}.jsonl", "w") as f:
            for i, k in sent.items():
                v, t = answers.get(i, (None, None))
                f.write(json.dumps({"id": i, "device": k, "sent_s": round(first_sent[i] - start, 3),
                                    "ms": latencies.get(i), "source": v.source if v else None,
                                    "waited": i in waited, "cloud_ms": v.timings.total_ms if v else None}) + "\n")
    return figures


async def _until_answered(fleet: Fleet, sent: dict[str, int], timeout_s: float) -> None:
    ids, deadline = set(sent), time.perf_counter() + timeout_s
    while fleet.answered(ids, sent) < len(ids) and time.perf_counter() < deadline:
        await asyncio.sleep(0.25)


def _scope(base: dict, device_index: int, camera: str) -> str:
    """The reuse scope key the cloud files a verdict for this device's camera under (shared.reuse)."""
    return scope_key(base["reuse"]["scope"], device_name(device_index), camera, SITE)


# -- main ----------------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer devices and events, shorter drain (< ~3 min)")
    parser.add_argument("--media", type=Path, default=DEFAULT_MEDIA)
    parser.add_argument("--devices", type=int, default=None)
    parser.add_argument("--rerecord", action="store_true", help="run the edge pipeline on the clips again")
    parser.add_argument("--trace", type=Path, default=None, help="write one JSON line per event to DIR/<run>.jsonl")
    parser.add_argument("--fleet-only", action="store_true", help="skip the scaling part (no workers_2_over_1)")
    parser.add_argument("--serve-openai", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--delay", type=float, default=1.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_openai is not None:
        serve_openai(args.serve_openai, args.delay)
        return 0
    if args.devices is not None and not 1 <= args.devices <= 10_000:
        parser.error("--devices must be 1..10000")
    return asyncio.run(bench(args))


async def bench(args: argparse.Namespace) -> int:
    quick = args.quick
    devices = args.devices or (20 if quick else 100)
    large = devices > LARGE_FLEET
    per_device = max(1, EVENTS_LARGE // devices) if large else None
    drain_s = 20.0 if quick else 60.0 if not large else 120.0
    spread_s = 20.0 if quick else 60.0 if not large else 90.0
    speed = 3.0
    burst = 48 if quick else 160
    delay_s = 1.0
    in_flight = 2  # per model server and worker: 2 servers x 2 = 4 requests at once per worker
    started = time.monotonic()
    fd_limit = raise_fd_limit(2 * devices + 1024)  # the devices' sockets here, as many in the broker

    recorded = record(args.media, 600 if quick else None, args.rerecord)
    if not recorded:
        raise SystemExit("the edge pipeline escalated nothing on the shared clips; nothing to replay")
    from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis

    redis_prefix = f"bench-fleet-{uuid.uuid4().hex[:8]}"
    prefix = f"fleet{uuid.uuid4().hex[:6]}"
    topics = Topics(prefix)
    out: dict[str, Any] = {"devices": devices}
    store = RedisStore(connect_redis(REDIS_URL), redis_prefix)  # first: nothing to clean up if Redis is away
    names = [device_name(k) for k in range(devices)]
    fleet_runs = (2,) if large else (1, 2)
    with tempfile.TemporaryDirectory(prefix="edgetriage-fleet-") as tmp:
        workdir = Path(tmp)
        broker, passwords = fleet_broker(workdir / "mqtt", prefix, names)
        try:
            broker.start()
        except RuntimeError as exc:
            raise SystemExit(str(exc)) from None
        cloud = Cloud(broker, passwords, prefix, workdir)
        servers: list[FakeModelServer] = []
        fleet = Fleet([VirtualDevice(n, passwords[n], topics) for n in names], broker.port)
        runs: dict[str, dict[str, Any]] = {}
        try:
            servers += [FakeModelServer(delay_s), FakeModelServer(delay_s)]
            connect_s = await fleet.connect()
            say(f"{devices} devices connected in {connect_s:.1f} s (open-file limit {fd_limit})")
            common = {"delivery": {"shared": True, "redis_url": REDIS_URL, "claim_lease_s": 30.0},
                      "scheduler": {"deadline_s": 600.0}}
            fleet_plan = fleet_schedule(recorded, devices, spread_s, speed, per_device)
            scale = burst_schedule(recorded, devices, burst)
            for workers in fleet_runs:
                name = f"fleet{workers}"
                base = {"group": f"g{uuid.uuid4().hex[:6]}",
                        "analyzer": {"backend": "transformers", "threads": 1, "max_batch": 8},
                        # the site's devices as the operator lists them: the cloud takes no device's word for it
                        "reuse": {"scope": "site", "verify_sample": 0.0, "sites": {SITE: names}},
                        **common, "delivery": {**common["delivery"], "redis_prefix": f"{redis_prefix}-{name}"}}
                say(f"{name}: {devices} devices, {len(fleet_plan.items)} events, {workers} worker(s), real CPU model")
                runs[name] = await run_phase(name, fleet_plan, base, workers, fleet, cloud, drain_s,
                                             load_labels(args.media), args.trace)
            before = [s.requests() for s in servers]
            for workers in () if args.fleet_only else (1, 2):
                name = f"scale{workers}"
                base = {"group": f"g{uuid.uuid4().hex[:6]}",
                        "analyzer": {"backend": "openai", "max_batch": 1, "timeout_s": 30.0,
                                     "openai": {"base_urls": [s.base_url for s in servers], "model": "fixed-delay",
                                                "max_in_flight": in_flight, "balance": "least_loaded"}},
                        "reuse": {"scope": "camera", "max_distance": 0, "verify_sample": 0.0},
                        **common, "delivery": {**common["delivery"], "redis_prefix": f"{redis_prefix}-{name}"}}
                say(f"{name}: {burst} cache-miss events at once, {workers} worker(s), openai back-end on 2 "
                    f"fixed-latency servers ({delay_s:g} s each answer)")
                runs[name] = await run_phase(name, scale, base, workers, fleet, cloud, drain_s, trace=args.trace)
            per_server = [s.requests() - b for s, b in zip(servers, before, strict=True)]
        finally:
            await fleet.close()
            for s in servers:
                s.stop()
            broker.stop()
            deleted = 0
            for name in ("fleet1", "fleet2", "scale1", "scale2"):
                other = RedisStore(store.client, f"{redis_prefix}-{name}")
                deleted += other.delete_all()
            store.close()
            say(f"deleted {deleted} Redis keys under {redis_prefix}-*")

    fleet_parts = [runs[f"fleet{w}"] for w in fleet_runs]
    f2, s1, s2 = runs["fleet2"], runs.get("scale1", {}), runs.get("scale2", {})
    model_calls = sum(r["model_calls"] for r in fleet_parts)
    distinct = sum(r["distinct_crops"] for r in fleet_parts)
    out.update({
        "events": sum(r["events"] for r in runs.values()),
        "lost": sum(r["lost"] for r in runs.values()),
        "duplicates_analysed": sum(r["duplicates_analysed"] for r in runs.values()),
        "cache_hit_p99_ms": f2["cache_hit_p99_ms"], "llm_p99_ms": f2["llm_p99_ms"],
        "flight_waits": f2["flight_waits"], "flight_wait_p99_ms": f2["flight_wait_p99_ms"],
        "cloud_rss_mb": f2["cloud_rss_mb"], "broker_connections": f2["broker_connections"],
        "broker_rss_mb": f2["broker_rss_mb"],
        "verdict_p50_ms": f2["verdict_p50_ms"], "verdict_p95_ms": f2["verdict_p95_ms"],
        "verdict_p99_ms": f2["verdict_p99_ms"], "alpha": f2["alpha"], "cache_hit_rate": f2["cache_hit_rate"],
        "workers_2_over_1": round(s2["events_per_s"] / s1["events_per_s"], 3) if s1.get("events_per_s") else None,
        "fleet_events_per_run": f2["events"], "events_per_device": per_device or len(recorded),
        **{f"fleet_{w}_worker{'s' if w > 1 else ''}": runs[f"fleet{w}"] for w in fleet_runs},
        "scale_1_worker": s1, "scale_2_workers": s2,
        "model_calls": model_calls, "distinct_crops": distinct,
        "p6_llm_avoided": f2["p6_llm_avoided"], "p6_wrong_reuse": f2["p6_wrong_reuse"],
        "model_calls_per_distinct_crop": round(model_calls / max(1, distinct), 3),
        "server_requests": per_server,
        "server_share_min": round(min(per_server) / max(1, sum(per_server)), 3) if sum(per_server) else None,
        "connect_s": round(connect_s, 1), "open_file_limit": fd_limit,
        "slow_backend": f"fixed-latency OpenAI-compatible server ({delay_s:g} s per answer, bench/fleet.py "
                        f"--serve-openai), two of them, max_in_flight {in_flight} each per worker",
        "quick": quick, "seconds": round(time.monotonic() - started, 1),
    })
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
