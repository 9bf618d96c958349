"""Fleet benchmark: many devices against one cloud, scaled out over worker processes on one shared subscription.

    devices              virtual devices, each its own MQTT client and device id
    events               events published by all of them (fleet part, 1- and 2-worker runs together)
    lost                 events published - events with a verdict received, after the drain      (must be 0)
    duplicates_analysed  model analyses beyond one per event: the same event answered by the model twice
                         (two differing verdicts for one id, or more model calls than model verdicts)  (must be 0)
    verdict_p50/p95/p99_ms  device publish -> verdict received, the 2-worker fleet run
    alpha                verdicts answered by the cloud cache / all verdicts answered (2-worker fleet run)
    cache_hit_rate       cloud-cache verdicts / events published (2-worker fleet run)
    workers_2_over_1     events/s with 2 workers / with 1, on the cache-miss path with a slow back-end
    server_requests      requests each of the two model servers got (the openai back-end given both)
    model_calls          model calls (verdicts from the model, fallbacks included) over the fleet part's runs
    distinct_crops       distinct (crop, reuse scope key) pairs each fleet run published, summed over its runs:
                         with single flight (cloud.singleflight) no crop costs two model calls, so
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
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from tqdm import tqdm

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from brokers import Mosquitto, free_port, wait_port  # noqa: E402 - bench/brokers.py, beside this script
from edgetriage.shared.ids import uuid7  # noqa: E402
from edgetriage.shared.protocol import ClassScore, Detection, Event, Verdict, decode_verdict, encode_event  # noqa: E402
from edgetriage.shared.reuse import scope_key  # noqa: E402
from edgetriage.shared.topics import Topics  # noqa: E402
from recall import load_labels  # noqa: E402
from repeats import Look, Repeats  # noqa: E402

DEFAULT_MEDIA = Path(__file__).resolve().parents[1] / "models" / "media"  # clips shipped in the repository
CLIPS = ("one-by-one-person-detection.mp4", "face-demographics-walking.gif", "person-bicycle-car-detection.gif")
REDIS_URL = "redis://127.0.0.1:6379/0"
CACHE_DIR = Path.home() / ".cache" / "edgetriage" / "bench-fleet"
SITE = "fleet"


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
def Broker(workdir: Path) -> Mosquitto:  # noqa: N802 - reads like the class it returns
    """A Mosquitto of our own on a free loopback port (the shared one on 1883 is never touched)."""
    try:
        return Mosquitto(None, workdir, max_queued=100000, extra=["max_connections -1"]).start()
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None


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


def _toml(config: dict, table: str = "") -> str:
    scalars, tables = [], []
    for key, value in config.items():
        if isinstance(value, dict):
            tables.append(_toml(value, f"{table}.{key}" if table else key))
        elif value is not None:
            scalars.append(f"{key} = {json.dumps(value)}")
    head = [f"[{table}]"] if table and scalars else []
    return "\n".join(head + scalars + [""] + tables)


class Worker:
    """`edgetriage cloud run --config FILE`, its health endpoint on a free port."""

    def __init__(self, config: dict, workdir: Path, name: str) -> None:
        self.port = free_port()
        config = {**config, "mqtt": {**config["mqtt"], "client_id": f"{config['mqtt']['prefix']}-{name}"},
                  "http": {"host": "127.0.0.1", "port": self.port, "enabled": True}}
        path = workdir / f"{name}.toml"
        path.write_text(_toml(config))
        self.log_path = workdir / f"{name}.log"
        self.log = open(self.log_path, "wb")
        env = {**os.environ, "EDGETRIAGE_STATE": str(workdir / name), "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "edgetriage", "cloud", "run", "--config", str(path)],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def health(self) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as r:
                return json.loads(r.read())
        except OSError:
            return None

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"a cloud worker exited; its log:\n{self.tail()}")
            h = self.health()
            if h and h.get("mqtt_connected"):
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"a cloud worker did not connect within {timeout:g} s; its log:\n{self.tail()}")
            time.sleep(0.5)

    def stats(self) -> dict:
        h = self.health()
        if h is None:
            raise SystemExit(f"a cloud worker stopped answering; its log:\n{self.tail()}")
        return h["stats"]

    def tail(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def _client(port: int, client_id: str, on_message: Any = None, subscribe: str | None = None) -> mqtt.Client:
    ready = threading.Event()
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    client.max_inflight_messages_set(100)
    client.max_queued_messages_set(0)
    if on_message is not None:
        client.on_message = on_message
    client.on_subscribe = lambda *a: ready.set()

    def connected(c: mqtt.Client, u: Any, f: Any, rc: Any, p: Any) -> None:
        if subscribe:
            c.subscribe(subscribe, 1)
        else:
            ready.set()

    client.on_connect = connected
    client.connect("127.0.0.1", port)
    client.loop_start()
    if not ready.wait(20):
        raise SystemExit(f"MQTT client {client_id} could not connect")
    return client


class Tap:
    """Every verdict to every device (one wildcard subscriber), with the time it arrived."""

    def __init__(self, port: int, topics: Topics) -> None:
        self.lock = threading.Lock()
        self.first: dict[str, float] = {}
        self.copies: dict[str, set[tuple]] = {}
        self.sources: dict[str, str] = {}
        self.verdicts: dict[str, Verdict] = {}  # the first per event id
        self.offers = 0
        self.client = _client(port, f"fleet-tap-{uuid.uuid4().hex[:6]}", self._on_message, topics.all_verdicts())

    def _on_message(self, c: Any, u: Any, m: mqtt.MQTTMessage) -> None:
        t = time.perf_counter()
        v = decode_verdict(m.payload)
        with self.lock:
            if v.reused_from == v.event_id:  # a site offer to another device, not an answer to its sender
                self.offers += 1
                return
            self.first.setdefault(v.event_id, t)
            self.sources.setdefault(v.event_id, v.source)
            self.verdicts.setdefault(v.event_id, v)
            self.copies.setdefault(v.event_id, set()).add((v.created_ms, v.description, v.source, v.verdict))

    def count(self, ids: set[str]) -> int:
        with self.lock:
            return sum(1 for i in ids if i in self.first)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


# -- one run -------------------------------------------------------------------------------------------------
@dataclass
class Schedule:
    """(seconds from start, device index, recorded event, camera id) in time order."""

    items: list[tuple[float, int, Recorded, str]] = field(default_factory=list)


def fleet_schedule(recorded: list[Recorded], devices: int, spread_s: float, speed: float) -> Schedule:
    """Device k starts k/devices of `spread_s` in and replays the recording `speed` times faster than real."""
    t0 = min(r.offset_s for r in recorded)
    items = [(k * spread_s / devices + (r.offset_s - t0) / speed, k, r, "cam0")
             for k in range(devices) for r in recorded]
    return Schedule(sorted(items, key=lambda x: x[0]))


def burst_schedule(recorded: list[Recorded], devices: int, n: int) -> Schedule:
    """n events at once, round the devices, each on a camera of its own (so no verdict can be reused)."""
    return Schedule([(0.0, i % devices, recorded[i % len(recorded)], f"c{i}") for i in range(n)])


def run_phase(name: str, schedule: Schedule, base: dict, workers: int, clients: list[mqtt.Client],
              topics: Topics, broker: Broker, workdir: Path, drain_s: float,
              labels: dict[str, list[tuple[float, float]]] | None = None) -> dict[str, Any]:
    """Start `workers` cloud processes, publish the schedule, wait for the verdicts, stop them; the figures."""
    procs = [Worker(base, workdir, f"{name}-w{k}") for k in range(workers)]
    tap = Tap(broker.port, topics)
    try:
        for w in procs:
            w.wait_ready()
        sent: dict[str, float] = {}
        repeats = Repeats(labels or {}, base["reuse"].get("ttl_s", 3600))
        bar = tqdm(total=len(schedule.items), desc=f"{name}: verdicts", unit="ev", file=sys.stderr, leave=False)
        start = time.perf_counter()
        for offset, k, rec, camera in schedule.items:
            delay = start + offset - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            device = f"fleet-{k:03d}"
            event = rec.event(device, camera, int(time.time() * 1000))
            sent[event.event_id] = time.perf_counter()
            repeats.add(Look(rec.clip, name, int(time.time() * 1000), rec.offset_s, rec.last_s, rec.x, event.event_id,
                             event))
            clients[k].publish(topics.events(device), encode_event(event), qos=1)
            if len(sent) % 50 == 0:
                bar.n = tap.count(list(sent))
                bar.refresh()
        published_at = time.perf_counter()
        ids = set(sent)
        deadline = published_at + drain_s
        while time.perf_counter() < deadline:
            got = tap.count(ids)
            bar.n = got
            bar.refresh()
            if got == len(ids):
                break
            time.sleep(0.25)
        done = max((tap.first[i] for i in ids if i in tap.first), default=published_at)
        bar.close()
        time.sleep(1.0)  # late duplicate answers
        stats = [w.stats() for w in procs]
        with tap.lock:
            latencies = [(tap.first[i] - sent[i]) * 1000 for i in ids if i in tap.first]
            sources = [tap.sources[i] for i in ids if i in tap.sources]
            twice = sum(1 for i in ids if len(tap.copies.get(i, ())) > 1)
            hit_ms = [(tap.first[i] - sent[i]) * 1000 for i in ids if tap.sources.get(i) == "cloud_cache"]
            model_ms = [(tap.first[i] - sent[i]) * 1000 for i in ids if tap.sources.get(i) in ("llm", "fallback")]
            offers = tap.offers
            repeats.verdicts.update({i: tap.verdicts[i] for i in ids if i in tap.verdicts})
        p6 = repeats.figures()  # no model asked again: every reuse from another visit counts as wrong
        model_verdicts = sum(1 for s in sources if s in ("llm", "fallback"))
        model_calls = sum(s["llm"] + s["fallback"] for s in stats)
        hits = sources.count("cloud_cache")
        distinct = {(hashlib.sha256(rec.crop).hexdigest(), _scope(base, k, camera)) for _, k, rec, camera in schedule.items}
        figures = {
            "workers": workers, "events": len(ids), "lost": len(ids) - len(latencies),
            "duplicates_analysed": twice + max(0, model_calls - model_verdicts),
            "seconds": round(done - start, 2), "events_per_s": round(len(latencies) / max(1e-9, done - start), 2),
            "verdict_p50_ms": percentile(latencies, 0.50), "verdict_p95_ms": percentile(latencies, 0.95),
            "verdict_p99_ms": percentile(latencies, 0.99),
            "alpha": round(hits / len(sources), 4) if sources else None,
            "cache_hit_rate": round(hits / len(ids), 4) if ids else None,
            "hit_p50_ms": percentile(hit_ms, 0.5), "model_p50_ms": percentile(model_ms, 0.5),
            "site_offers_received": offers, "model_verdicts": model_verdicts, "fallbacks": sources.count("fallback"),
            "per_worker_received": [s["received"] for s in stats],
            "per_worker_analysed": [s["llm"] + s["fallback"] for s in stats],
            "redelivered_duplicates": sum(s["duplicates"] for s in stats),
            "model_calls": model_calls, "distinct_crops": len(distinct),
            "p6_llm_avoided": p6["llm_avoided"], "p6_wrong_reuse": p6["wrong_reuse"], "p6": p6,
        }
        say(f"{name}: {json.dumps(figures)}")
        return figures
    finally:
        tap.close()
        for w in procs:
            w.stop()


def _scope(base: dict, device_index: int, camera: str) -> str:
    """The reuse scope key the cloud files a verdict for this device's camera under (shared.reuse)."""
    return scope_key(base["reuse"]["scope"], f"fleet-{device_index:03d}", camera, SITE)


# -- main ----------------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer devices and events, shorter drain (< ~3 min)")
    parser.add_argument("--media", type=Path, default=DEFAULT_MEDIA)
    parser.add_argument("--devices", type=int, default=None)
    parser.add_argument("--rerecord", action="store_true", help="run the edge pipeline on the clips again")
    parser.add_argument("--serve-openai", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--delay", type=float, default=1.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_openai is not None:
        serve_openai(args.serve_openai, args.delay)
        return 0

    quick = args.quick
    devices = args.devices or (20 if quick else 100)
    drain_s = 20.0 if quick else 60.0
    spread_s = 20.0 if quick else 60.0
    speed = 3.0
    burst = 48 if quick else 160
    delay_s = 1.0
    in_flight = 2  # per model server and worker: 2 servers x 2 = 4 requests at once per worker
    started = time.monotonic()

    recorded = record(args.media, 600 if quick else None, args.rerecord)
    if not recorded:
        raise SystemExit("the edge pipeline escalated nothing on the shared clips; nothing to replay")
    from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis

    redis_prefix = f"bench-fleet-{uuid.uuid4().hex[:8]}"
    prefix = f"fleet{uuid.uuid4().hex[:6]}"
    topics = Topics(prefix)
    out: dict[str, Any] = {"devices": devices}
    store = RedisStore(connect_redis(REDIS_URL), redis_prefix)  # first: nothing to clean up if Redis is away
    with tempfile.TemporaryDirectory(prefix="edgetriage-fleet-") as tmp:
        workdir = Path(tmp)
        broker = Broker(workdir)
        servers: list[FakeModelServer] = []
        clients: list[mqtt.Client] = []
        try:
            servers += [FakeModelServer(delay_s), FakeModelServer(delay_s)]
            for k in tqdm(range(devices), desc="devices connecting", file=sys.stderr, leave=False):
                clients.append(_client(broker.port, f"fleet-{k:03d}-{prefix}"))
            common = {"delivery": {"shared": True, "redis_url": REDIS_URL, "claim_lease_s": 30.0},
                      "scheduler": {"deadline_s": 600.0}}
            fleet = fleet_schedule(recorded, devices, spread_s, speed)
            scale = burst_schedule(recorded, devices, burst)
            runs: dict[str, dict[str, Any]] = {}
            for workers in (1, 2):
                name = f"fleet{workers}"
                base = {"mqtt": {"url": broker.url, "prefix": prefix}, "group": f"g{uuid.uuid4().hex[:6]}",
                        "analyzer": {"backend": "transformers", "threads": 1, "max_batch": 8},
                        # the site's devices as the operator lists them: the cloud takes no device's word for it
                        "reuse": {"scope": "site", "verify_sample": 0.0,
                                  "sites": {SITE: [f"fleet-{k:03d}" for k in range(devices)]}},
                        **common, "delivery": {**common["delivery"], "redis_prefix": f"{redis_prefix}-{name}"}}
                say(f"{name}: {devices} devices, {len(fleet.items)} events, {workers} worker(s), real CPU model")
                runs[name] = run_phase(name, fleet, base, workers, clients, topics, broker, workdir, drain_s,
                                       load_labels(args.media))
            before = [s.requests() for s in servers]
            for workers in (1, 2):
                name = f"scale{workers}"
                base = {"mqtt": {"url": broker.url, "prefix": prefix}, "group": f"g{uuid.uuid4().hex[:6]}",
                        "analyzer": {"backend": "openai", "max_batch": 1, "timeout_s": 30.0,
                                     "openai": {"base_urls": [s.base_url for s in servers], "model": "fixed-delay",
                                                "max_in_flight": in_flight, "balance": "least_loaded"}},
                        "reuse": {"scope": "camera", "max_distance": 0, "verify_sample": 0.0},
                        **common, "delivery": {**common["delivery"], "redis_prefix": f"{redis_prefix}-{name}"}}
                say(f"{name}: {burst} cache-miss events at once, {workers} worker(s), openai back-end on 2 "
                    f"fixed-latency servers ({delay_s:g} s each answer)")
                runs[name] = run_phase(name, scale, base, workers, clients, topics, broker, workdir, drain_s)
            per_server = [s.requests() - b for s, b in zip(servers, before, strict=True)]
        finally:
            for c in clients:
                c.loop_stop()
                c.disconnect()
            for s in servers:
                s.stop()
            broker.stop()
            deleted = 0
            for name in ("fleet1", "fleet2", "scale1", "scale2"):
                other = RedisStore(store.client, f"{redis_prefix}-{name}")
                deleted += other.delete_all()
            store.close()
            say(f"deleted {deleted} Redis keys under {redis_prefix}-*")

    f1, f2, s1, s2 = runs["fleet1"], runs["fleet2"], runs["scale1"], runs["scale2"]
    out.update({
        "events": sum(r["events"] for r in runs.values()),
        "lost": sum(r["lost"] for r in runs.values()),
        "duplicates_analysed": sum(r["duplicates_analysed"] for r in runs.values()),
        "verdict_p50_ms": f2["verdict_p50_ms"], "verdict_p95_ms": f2["verdict_p95_ms"],
        "verdict_p99_ms": f2["verdict_p99_ms"], "alpha": f2["alpha"], "cache_hit_rate": f2["cache_hit_rate"],
        "workers_2_over_1": round(s2["events_per_s"] / s1["events_per_s"], 3) if s1["events_per_s"] else None,
        "fleet_events_per_run": f2["events"],
        "fleet_1_worker": f1, "fleet_2_workers": f2, "scale_1_worker": s1, "scale_2_workers": s2,
        "model_calls": f1["model_calls"] + f2["model_calls"],
        "distinct_crops": f1["distinct_crops"] + f2["distinct_crops"],
        "p6_llm_avoided": f2["p6_llm_avoided"], "p6_wrong_reuse": f2["p6_wrong_reuse"],
        "model_calls_per_distinct_crop": round((f1["model_calls"] + f2["model_calls"])
                                               / max(1, f1["distinct_crops"] + f2["distinct_crops"]), 3),
        "server_requests": per_server,
        "server_share_min": round(min(per_server) / max(1, sum(per_server)), 3),
        "slow_backend": f"fixed-latency OpenAI-compatible server ({delay_s:g} s per answer, bench/fleet.py "
                        f"--serve-openai), two of them, max_in_flight {in_flight} each per worker",
        "quick": quick, "seconds": round(time.monotonic() - started, 1),
    })
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
