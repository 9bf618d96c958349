"""Cloud benchmark: what the verdict cache saves and what batching buys, measured side by side in one run.

    p4_hit_p50_ms     cache-hit verdict latency over loopback MQTT (device publish -> verdict received), p50
    p4_llm_p50_ms     the same for events the model must answer
    p4_ratio          p4_llm_p50_ms / p4_hit_p50_ms                                   (goal >= 100)
    p5_events_per_s   cache-hit events/s through the whole service (MQTT in, decode, store, cache, verdict out),
                      SQLite store
    p5_relay_per_s    the limit of that path: a do-nothing relay (a paho client that receives each event and
                      publishes a small fixed verdict back in both forms: `answers` and `verdicts`), same broker,
                      payloads and device client. The device reads `answers`, as devices do, and nobody
                      subscribes to `verdicts`: the service then sends no JSON form (cloud.broker.publisher), the relay
                      still does
    p5_ratio          service ÷ relay events/s, the median over 7 rounds of one burst each  (goal >= 0.5)
    p5_redis_events_per_s, p5_ratio_redis   the same with the Redis store (127.0.0.1:6379, own key prefix,
                      deleted after) and its relay measured again beside it             (goal >= 0.5)
    p5_mosquitto_per_s  for reference: Mosquitto alone, QoS 1 publish -> subscribe (the message crosses once)
    p6_llm_avoided    the shared clips replayed three times (later passes 3 and 6 frames later), through the
                      real edge agent and the cloud. A repeat is an escalation (or a device-cache answer in
                      its place) whose labelled visit (labels.json) was already escalated within the TTL,
                      in that pass or an earlier one: repeats answered without the model (device cache or
                      cloud cache) / repeats; the ceiling is 1.0 (bench/repeats.py says how tracks are
                      matched to visits)                                                 (goal >= 0.9)
    p6_wrong_reuse    reused verdicts (device or cloud cache) whose model answer was about another labelled
                      visit and where the model, asked again about the crop, disagrees / reused verdicts
                                                                                       (goal <= 0.01)
    p6_reused_other_visit, p6_reuse_disagreed   the two halves of that: reused from another visit
                      whatever the model says, and the model disagreeing whatever the visit (the old
                      p6_wrong_reuse); p6_answered_share_old: the old p6_llm_avoided (cache answers / all)
    batch_ratio       verdicts/s of the transformers back-end with batching / one at a time (goal >= 3)
    batch_ratio_contexts  the same with every event in a context of its own (zone, stay): no measured lean
                      is shared between events, one at a time or in the batch

Everything runs on loopback against a Mosquitto of its own on a free port and the real CPU model
(SmolLM2-135M, one thread). `--quick` (< ~2 min): fewer events, one clip, fewer frames. The last stdout
line is one JSON object with the figures; progress goes to stderr.

    policy_verdict_p95_ms_busy  policy-decided verdicts while the model is busy (bench/busy.py) (goal <= 1000)

    python bench/cloud.py [--quick] [--media DIR] [--skip p4p5,p6,batch,busy] [--min-similarity X]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import socket
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from brokers import Mosquitto  # noqa: E402 - bench/brokers.py, beside this script
from edgetriage.cloud.analysis import ThreadedBackend  # noqa: E402
from edgetriage.cloud.analysis.transformers import build_engine  # noqa: E402
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import AnalyzerConfig, CloudConfig  # noqa: E402
from edgetriage.cloud.storage.redis_store import RedisStore, open_store  # noqa: E402
from edgetriage.shared.ids import uuid7  # noqa: E402
from edgetriage.shared.protocol import Detection, Event, Verdict, encode_event, encode_verdict  # noqa: E402
from edgetriage.shared.topics import Topics  # noqa: E402
from edgetriage.shared.verdict_forms import decode_device_verdict, encode_device_verdict  # noqa: E402
from recall import load_labels  # noqa: E402
from repeats import Repeats  # noqa: E402

DEFAULT_MEDIA = Path(__file__).resolve().parents[1] / "models" / "media"  # clips shipped in the repository
CLIPS = ("one-by-one-person-detection.mp4", "car-detection.mp4", "face-demographics-walking.gif",
         "person-bicycle-car-detection.gif")
BOX = (370, 0, 560, 400)  # where visitors stand in the one-by-one clip
DEVICE = "bench-1"
REDIS_URL = "redis://127.0.0.1:6379/0"


def say(message: str) -> None:
    print(f"[cloud bench] {message}", file=sys.stderr, flush=True)


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else float("nan")


# -- infrastructure ------------------------------------------------------------------------------------
def Broker(workdir: Path) -> Mosquitto:  # noqa: N802 - reads like the class it returns
    """A Mosquitto of our own on a free loopback port (the shared one on 1883 is never touched)."""
    try:
        return Mosquitto(None, workdir, max_queued=100000, extra=["max_inflight_messages 100"]).start()
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None


class Client:
    """A paho client that publishes QoS 1 and collects what it subscribed to, with receive times."""

    def __init__(self, port: int, subscribe: str | None = None) -> None:
        self.received: queue.Queue[tuple[float, str, bytes]] = queue.Queue()
        ready = threading.Event()
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-{uuid.uuid4().hex[:8]}",
                             protocol=mqtt.MQTTv5)
        client.max_inflight_messages_set(100)
        client.on_message = lambda c, u, m: self.received.put((time.perf_counter(), m.topic, bytes(m.payload)))
        client.on_subscribe = lambda *a: ready.set()

        def connected(c, u, f, rc, p):
            sock = c.socket()
            if sock is not None:  # as devices do (shared.mqtt): no Nagle delay on small messages
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if subscribe:
                c.subscribe(subscribe, 1)
            else:
                ready.set()

        client.on_connect = connected
        client.connect("127.0.0.1", port)
        client.loop_start()
        if not ready.wait(10):
            raise SystemExit("bench client could not connect")
        self.client = client

    def publish(self, topic: str, payload: bytes) -> mqtt.MQTTMessageInfo:
        return self.client.publish(topic, payload, qos=1)

    def get(self, timeout: float) -> tuple[float, str, bytes]:
        return self.received.get(True, timeout)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class Cloud:
    """The cloud service (MQTT intake) on an asyncio loop of its own."""

    def __init__(self, config: CloudConfig, analyzer: Any, backend: Any = None) -> None:
        """`analyzer` runs on a thread (ThreadedBackend); or pass a ready `backend` (several lanes, a server),
        closed on this loop by `stop`."""
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.store = open_store(config)
        self.backend = backend
        self.service = build_service(config, backend if backend is not None else ThreadedBackend(analyzer), self.store)
        self.call(self._start())

    async def _start(self) -> None:
        await self.service.start()
        if not await self.service.wait_connected(10):
            raise SystemExit("the cloud service could not reach the bench broker")
        await asyncio.sleep(0.3)  # let the SUBSCRIBE reach the broker

    def call(self, coro, timeout: float = 600) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.call(self.service.stop())
        if self.backend is not None:  # in the loop its HTTP sessions were opened in
            self.call(self.backend.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        if isinstance(self.store, RedisStore):
            self.store.delete_all()
        self.store.close()


class Relay:
    """The do-nothing cloud: receives each event and publishes one small fixed verdict back (QoS 1), from
    paho's own callback. What the service cannot beat on this broker, these payloads and these cores."""

    def __init__(self, port: int, topics: Topics) -> None:
        verdict = Verdict(event_id=uuid7(), device=DEVICE, camera="hall", label="person", verdict="benign",
                          confidence=0.5, description="relay", model="relay", source="cloud_cache",
                          created_ms=int(time.time() * 1000))
        # as the protocol asks of any cloud: the device's form on `answers`, the subscribers' on `verdicts`
        out = (
            (topics.answers(DEVICE), encode_device_verdict(verdict)),
            (topics.verdicts(DEVICE), encode_verdict(verdict)),
        )
        self.client = Client(port, subscribe=topics.all_events())
        self.client.client.on_message = lambda c, u, m: [c.publish(t, p, qos=1) for t, p in out]

    def close(self) -> None:
        self.client.close()


def p5_side_by_side(device: Client, topics: Topics, relay_device: Client, relay_topics: Topics,
                    payloads: Callable[[], list[bytes]], port: int, rounds: int = 7) -> tuple[float, float, float]:
    """(service events/s, relay events/s, ratio): medians over `rounds` rounds of one burst of each taken in
    turn (new event ids every round); the ratio is the median of each round's service ÷ relay, so a
    neighbour's load on the shared cores, which comes and goes within seconds, falls on both alike."""
    service, relayed = [], []
    relay = Relay(port, relay_topics)
    try:
        for _ in range(rounds):
            burst = payloads()
            service.append(_burst(device, topics.events(DEVICE), burst, expect=len(burst)))
            relayed.append(_burst(relay_device, relay_topics.events(DEVICE), burst, expect=len(burst)))
    finally:
        relay.close()
    ratios = [s / r for s, r in zip(service, relayed, strict=True)]
    return statistics.median(service), statistics.median(relayed), statistics.median(ratios)


def cloud_config(broker: Broker, workdir: Path, prefix: str, **extra: Any) -> CloudConfig:
    return CloudConfig.model_validate({
        "mqtt": {"url": broker.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
        "store_path": str(workdir / f"{prefix}.db"), "http": {"enabled": False},
        "reuse": {"verify_sample": 0.0}, **extra})


# -- real inputs ---------------------------------------------------------------------------------------
def visitor_crops(clip: Path, seconds: list[float]) -> list[tuple[bytes, tuple[int, int], str]]:
    """(jpeg, size, phash) of the spot where visitors stand, at the given times, hashed as devices do."""
    from edgetriage.edge.vision.crops import phash_dct64

    out = []
    cap = cv2.VideoCapture(str(clip))
    try:
        for t in seconds:
            cap.set(cv2.CAP_PROP_POS_MSEC, t * 1000)
            ok, frame = cap.read()
            if not ok:
                raise SystemExit(f"cannot read {clip} at {t} s")
            x1, y1, x2, y2 = BOX
            crop = frame[y1:y2, x1:x2]
            jpeg = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()
            out.append((jpeg, (crop.shape[1], crop.shape[0]), phash_dct64(crop)))
    finally:
        cap.release()
    return out


def make_event(crop: tuple[bytes, tuple[int, int], str], *, phash: str | None = None, n: int = 0) -> Event:
    jpeg, size, own = crop
    now = int(time.time() * 1000)
    return Event(event_id=uuid7(now), device=DEVICE, camera="hall", site="bench", captured_ms=now, label="person",
                 score=0.62, uncertain=True, track_id=n,
                 detections=[Detection(label="person", score=0.62, box=(0.48, 0.0, 0.73, 0.93))],
                 phash=phash or own, reason="detector unsure", crop=jpeg, crop_size=size)


def flip(phash: str, bit: int) -> str:
    return f"{int(phash, 16) ^ (1 << (bit % 64)):016x}"


def spread(crops: list, minimum: int = 11) -> list:
    """Crops whose hashes are further apart than the reuse distance, so the cache answers none with another."""
    from edgetriage.shared.phash import hamming

    kept: list = []
    for crop in crops:
        if all(hamming(crop[2], other[2]) >= minimum for other in kept):
            kept.append(crop)
    return kept


# -- P4 and P5 -----------------------------------------------------------------------------------------
def bench_latency_and_intake(broker: Broker, workdir: Path, analyzer: Any, clip: Path, quick: bool) -> dict:
    prefix = f"b{uuid.uuid4().hex[:8]}"
    topics = Topics(prefix)
    cloud = Cloud(cloud_config(broker, workdir, prefix), analyzer)
    device = Client(broker.port, subscribe=topics.answers(DEVICE))  # as a device reads its verdicts
    try:
        times = [12.0, 30.0, 57.0, 80.0, 100.0, 128.0][: 3 if quick else 6]
        fresh = spread(visitor_crops(clip, times))
        say(f"P4: {len(fresh)} events the model answers, one at a time")
        llm_ms = []
        model_ids = []
        for crop in fresh:
            event = make_event(crop)
            model_ids.append(event.event_id)
            t0 = time.perf_counter()
            device.publish(topics.events(DEVICE), encode_event(event))
            received, _, raw = device.get(300)
            verdict = decode_device_verdict(raw)
            assert verdict.event_id == event.event_id and verdict.source == "llm", verdict
            llm_ms.append((received - t0) * 1000)
        n_hits = 200 if quick else 500
        say(f"P4: {n_hits} cache hits (look-alikes 1-3 bits away), one at a time")
        hit_ms = []
        for i in range(n_hits):
            crop = fresh[i % len(fresh)]
            event = make_event(crop, phash=flip(flip(crop[2], i), i * 7 + 3), n=i)
            t0 = time.perf_counter()
            device.publish(topics.events(DEVICE), encode_event(event))
            received, _, raw = device.get(30)
            verdict = decode_device_verdict(raw)
            assert verdict.event_id == event.event_id and verdict.source == "cloud_cache", verdict
            hit_ms.append((received - t0) * 1000)

        n = 500 if quick else 1000

        def hits() -> list[bytes]:  # new event ids each time, crops 1 bit from a model-answered one
            return [encode_event(make_event(fresh[i % len(fresh)], phash=flip(fresh[i % len(fresh)][2], i), n=i))
                    for i in range(n)]

        payloads = hits()
        say(f"P5: {n} cache-hit events ({sum(map(len, payloads)) // n} bytes each) as fast as they go, "
            "vs a do-nothing relay, SQLite store")
        relay_topics = Topics(f"r{prefix}")
        relay_device = Client(broker.port, subscribe=relay_topics.answers(DEVICE))
        service_rate, relay_rate, ratio = p5_side_by_side(device, topics, relay_device, relay_topics, hits,
                                                          broker.port)
        echo = Client(broker.port, subscribe=f"{prefix}/echo")
        try:
            broker_rate = _burst(echo, f"{prefix}/echo", payloads, expect=n)
        finally:
            echo.close()
        figures = cloud.service.figures.compute()
        answered = [v for v in (cloud.store.get_verdict(i) for i in model_ids) if v is not None]
    finally:
        device.close()
        cloud.stop()
    say("P5: the same with the Redis store, the model's verdicts copied over")
    rprefix = f"b{uuid.uuid4().hex[:8]}"
    rtopics = Topics(rprefix)
    rcloud = Cloud(cloud_config(broker, workdir, rprefix, delivery={"redis_url": REDIS_URL,
                                                                    "redis_prefix": f"bench-cloud-{rprefix}"}),
                   analyzer)
    rdevice = Client(broker.port, subscribe=rtopics.answers(DEVICE))
    try:
        for verdict in answered:
            rcloud.store.put_verdict(verdict)
        redis_rate, redis_relay_rate, redis_ratio = p5_side_by_side(rdevice, rtopics, relay_device, relay_topics,
                                                                    hits, broker.port)
    finally:
        rdevice.close()
        relay_device.close()
        rcloud.stop()
    return {"p4_hit_p50_ms": p50(hit_ms), "p4_llm_p50_ms": p50(llm_ms),
            "p4_ratio": round(p50(llm_ms) / p50(hit_ms), 1),
            "p5_events_per_s": round(service_rate, 1), "p5_relay_per_s": round(relay_rate, 1),
            "p5_ratio": round(ratio, 3), "p5_mosquitto_per_s": round(broker_rate, 1),
            "p5_redis_events_per_s": round(redis_rate, 1), "p5_redis_relay_per_s": round(redis_relay_rate, 1),
            "p5_ratio_redis": round(redis_ratio, 3),
            "service_alpha": figures["alpha"], "service_L_total_ms": figures["L_total_ms"],
            "service_measured_total_p50_ms": figures["measured_total_p50_ms"]}


def _burst(client: Client, topic: str, payloads: list[bytes], expect: int) -> float:
    """Messages per second from the first publish to the `expect`-th message received."""
    while not client.received.empty():
        client.received.get_nowait()
    t0 = time.perf_counter()
    for payload in payloads:
        client.publish(topic, payload)
    last = t0
    for _ in range(expect):
        last, _, _ = client.get(120)
    return expect / (last - t0)


# -- P6 ------------------------------------------------------------------------------------------------
def bench_replay(broker: Broker, workdir: Path, analyzer: Any, media: Path, quick: bool,
                 min_similarity: float | None = None) -> dict:
    """The shared clips through the real edge agent, three passes each (the later ones a few frames later),
    against the cloud; repeats of labelled visits and where their answers came from (bench/repeats.py)."""
    from edgetriage.edge.agent import EdgeAgent
    from edgetriage.edge.config import CameraConfig, EdgeConfig

    prefix = f"b{uuid.uuid4().hex[:8]}"
    reuse = (
        {"verify_sample": 0.0} if min_similarity is None else {"verify_sample": 0.0, "min_similarity": min_similarity}
    )
    config = cloud_config(broker, workdir, prefix, reuse=reuse)
    cloud = Cloud(config, analyzer)
    repeats = Repeats(load_labels(media), config.reuse.ttl_s)
    clips = [media / c for c in (CLIPS[:1] if quick else CLIPS) if (media / c).exists()]
    max_frames = 450 if quick else None
    totals = {"escalated": 0, "device_cache": 0, "cloud_cache": 0, "llm": 0, "fallback": 0}
    per_clip: dict[str, dict[str, int]] = {}
    try:
        for clip in clips:
            device = f"bench-{clip.stem[:20].lower().replace('_', '-')}"
            edge = EdgeConfig.model_validate({
                "device": device, "site": "bench", "mqtt": {"url": broker.url, "prefix": prefix},
                "state_dir": str(workdir / device), "cameras": [{"id": "cam0", "source": str(clip)}],
                "budget": {"per_minute": 0, "per_hour": 0}})

            def on_decision(track, decision, event_id, clip=clip.name, device=device) -> None:
                repeats.decision(clip, device, track, decision, event_id, device)

            agent = EdgeAgent(edge, on_decision=on_decision, on_verdict=repeats.verdict)
            try:
                for offset in (0, 3, 6):
                    say(f"P6: {clip.name} pass from frame {offset}")
                    agent.run_source(CameraConfig(id="cam0", source=str(clip), start_frame=offset),
                                     max_frames=max_frames)
                    if not agent.wait_idle(timeout_s=600):
                        say("warning: some verdicts did not arrive")
                s = agent.stats
                counts = {"escalated": s.escalated, "device_cache": s.verdicts_device_cache,
                          "cloud_cache": s.verdicts_cloud_cache, "llm": s.verdicts_llm, "fallback": s.verdicts_fallback}
                per_clip[clip.name] = counts
                for key, value in counts.items():
                    totals[key] += value
            finally:
                agent.close()
    finally:
        cloud.stop()
    answered = totals["device_cache"] + totals["cloud_cache"] + totals["llm"] + totals["fallback"]
    say(f"P6: {answered} escalations answered ({totals}); asking the model again about every reused crop")

    def ask(events: list[Event]) -> list[str]:
        return [
            a.verdict for start in range(0, len(events), 8) for a in analyzer.analyze_batch(events[start : start + 8])
        ]

    figures = repeats.figures(ask)
    say(f"P6: {figures}")
    return {"p6_llm_avoided": figures["llm_avoided"], "p6_wrong_reuse": figures["wrong_reuse"],
            "p6_repeats": figures["repeats"], "p6_reused": figures["reused"],
            "p6_reused_other_visit": figures["other_visit"], "p6_reuse_disagreed": figures["disagreed"],
            "p6_answered_share_old": round((totals["device_cache"] + totals["cloud_cache"]) / answered, 3)
            if answered else None, "p6_figures": figures, "p6_counts": totals, "p6_per_clip": per_clip}


# -- batching ------------------------------------------------------------------------------------------
def bench_batching(analyzer: Any, clip: Path, quick: bool) -> dict:
    size = 8 if quick else 16
    crops = visitor_crops(clip, [8.0 + 120 * i / size for i in range(size)])
    events = [make_event(c, n=i) for i, c in enumerate(crops)]
    analyzer.analyze(events[0])  # the template's prefix cache is built once per process, not timed
    analyzer.max_batch = max(analyzer.max_batch, size)
    results = _one_vs_batch(analyzer, events, "", forget=False)
    # The same crops, each with a context of its own (zone and stay), so that no event shares the model's
    # measured lean with another: each one-at-a-time event measures its own, the batch measures all in one pass.
    zones = ("door", "yard", "drive", "hall")
    varied = [e.model_copy(update={"zones": [zones[i % 4]], "dwell_s": float(3 + 7 * i)}) for i, e in enumerate(events)]
    results.update(_one_vs_batch(analyzer, varied, "_contexts", forget=True))
    return results


def _one_vs_batch(analyzer: Any, events: list[Event], suffix: str, forget: bool) -> dict:
    leans = analyzer.runtime.leans
    say(f"batch{suffix}: {len(events)} events one at a time")
    if forget:
        leans.clear()
    t0 = time.perf_counter()
    single = [analyzer.analyze(e) for e in events]
    one_s = time.perf_counter() - t0
    say(f"batch{suffix}: the same {len(events)} events in one batch")
    if forget:
        leans.clear()
    t0 = time.perf_counter()
    batched = analyzer.analyze_batch(events)
    batch_s = time.perf_counter() - t0
    same = sum(a.verdict == b.verdict for a, b in zip(single, batched, strict=True))
    return {
        f"batch_ratio{suffix}": round(one_s / batch_s, 2),
        f"batch_single_s{suffix}": round(one_s, 2),
        f"batch_batched_s{suffix}": round(batch_s, 2),
        f"batch_size{suffix}": len(events),
        f"batch_same_verdicts{suffix}": same,
        f"batch_errors{suffix}": sum(a.error is not None for a in single + batched),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a run of under ~2 minutes")
    parser.add_argument("--media", type=Path, default=DEFAULT_MEDIA,
                        help="folder with the shared clips")
    parser.add_argument("--skip", default="", help="comma-separated parts to leave out: p4p5,p6,batch,busy")
    parser.add_argument("--min-similarity", type=float, default=None,
                        help="P6 with this reuse.min_similarity (1.0: reuse by hash alone, as before the embedding)")
    args = parser.parse_args(argv)
    clip = args.media / CLIPS[0]
    if not clip.exists():
        from edgetriage.shared.modelfiles import bundled_clip

        clip = bundled_clip()
        args.media = clip.parent
    skip = set(filter(None, args.skip.split(",")))
    started = time.monotonic()
    say("loading the CPU model (SmolLM2-135M, 1 thread)")
    analyzer = build_engine(AnalyzerConfig(threads=1))
    results: dict[str, Any] = {"quick": args.quick, "model": analyzer.name}
    with tempfile.TemporaryDirectory(prefix="edgetriage-bench-cloud-") as tmp:
        workdir = Path(tmp)
        broker = Broker(workdir)
        try:
            if "p4p5" not in skip:
                results.update(bench_latency_and_intake(broker, workdir, analyzer, clip, args.quick))
            if "p6" not in skip:
                results.update(bench_replay(broker, workdir, analyzer, args.media, args.quick, args.min_similarity))
            if "batch" not in skip:
                results.update(bench_batching(analyzer, clip, args.quick))
            if "busy" not in skip:
                from busy import bench_busy

                results.update(bench_busy(broker, workdir, clip, args.quick, client=Client,
                                          crops=visitor_crops(clip, [12.0, 1.0]), make_event=make_event,
                                          flip=flip, say=say))
        finally:
            broker.stop()
    results["seconds"] = round(time.monotonic() - started, 1)
    for key in ("p4_hit_p50_ms", "p4_llm_p50_ms", "p4_ratio", "p5_events_per_s", "p5_relay_per_s", "p5_ratio",
                "p5_redis_events_per_s", "p5_ratio_redis",
                "p6_llm_avoided", "p6_wrong_reuse", "batch_ratio", "batch_ratio_contexts",
                "policy_verdict_p95_ms_busy"):
        if key in results:
            say(f"{key:>20} = {results[key]}")
    print(json.dumps(results, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
