"""Where a cache hit's time goes: bursts of cache-hit events through the cloud service (MQTT in, decode, lookup,
store, verdict out, acknowledgement), measured in CPU time per hit, so that other work on a shared machine
(which makes wall-clock profiles swing by a factor of three) hardly moves the figures.

    python bench/hit_profile.py [--redis] [--hits 1000] [--bursts 3]

Prints a Markdown table: the CPU time per hit of the service's two threads (the event loop, where every
decision is made, and paho's network thread, which reads and writes the socket), measured with each thread's
own CPU clock over bursts without a profiler; then the loop thread's time split by stage, from cProfile with a
CPU-time timer over one more burst (the profiler's own overhead inflates Python-heavy stages, so the split is
shown as shares). Network waits (Redis round trips) cost no CPU time: they show in the hits/s line instead.

The service runs as in bench/cloud.py (its own Mosquitto on a free port, the SQLite store in a temp dir, or
Redis at 127.0.0.1:6379 under a key prefix of its own, deleted after), answering look-alikes of verdicts
stored first (a model verdict each, filed as a model answer is; no model runs here).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import pstats
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# (stage, functions whose cumulative time it is: (file suffix, function name)); stages do not nest
STAGES = [
    ("decode and validate the event (MessagePack, pydantic, JPEG header)", [("shared/protocol.py", "decode_event")]),
    (
        "verdict cache lookup (index range, nearest, the stored verdict)",
        [
            ("cloud/storage/store.py", "lookup"),
            ("cloud/storage/store.py", "lookup_many"),
            ("cloud/storage/redis_store.py", "lookup"),
            ("cloud/storage/redis_store.py", "lookup_many"),
        ],
    ),
    ("the hit's verdict (a copy of the stored one)", [("cloud/reuse/verdicts.py", "reused")]),
    (
        "store event + verdict (one transaction / pipeline per loop turn)",
        [("cloud/storage/store.py", "put_answered_many"), ("cloud/storage/redis_store.py", "put_answered_many")],
    ),
    ("publish the verdict (encode, paho queues it)", [("cloud/broker/publisher.py", "verdict")]),
    ("acknowledge the event (paho queues the PUBACK)", [("shared/mqtt.py", "ack")]),
]


def _load_bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_cloud", HERE / "cloud.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_cloud"] = module
    spec.loader.exec_module(module)
    return module


def _cpu_s(thread: threading.Thread) -> float:
    assert thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


class _NoModel:
    """Stands where the model would; the hits never reach it (it fails loudly if one does)."""

    name = "no-model"
    max_batch = 1

    def prompt_version(self, event: object) -> str:
        return "profile-v1"

    def analyze_batch(self, events: list) -> list:
        raise RuntimeError("a cache hit reached the model")


def run(redis: bool, hits: int, bursts: int, dump: Path | None = None) -> None:
    bench = _load_bench()
    from edgetriage.cloud.analysis import Analysis
    from edgetriage.shared.protocol import encode_event
    from edgetriage.shared.topics import Topics

    with tempfile.TemporaryDirectory(prefix="edgetriage-hit-profile-") as tmp:
        workdir = Path(tmp)
        broker = bench.Broker(workdir)
        prefix = f"h{int(time.time() * 1000) % 10**8}"
        extra = {"delivery": {"redis_url": bench.REDIS_URL, "redis_prefix": f"bench-hits-{prefix}"}} if redis else {}
        cloud = bench.Cloud(bench.cloud_config(broker, workdir, prefix, **extra), _NoModel())
        topics = Topics(prefix)
        device = bench.Client(broker.port, subscribe=topics.answers(bench.DEVICE))
        service = cloud.service
        try:
            crops = bench.spread(bench.visitor_crops(bench.DEFAULT_MEDIA / bench.CLIPS[0], [12.0, 30.0, 57.0]))
            for crop in crops:  # the verdicts the hits reuse, filed as a model answer is
                event = bench.make_event(crop)
                analysis = Analysis(verdict="benign", confidence=0.8, description="a visitor", model="profile",
                                    prompt_version=service.backend.prompt_version(event), analyze_ms=1.0)
                cloud.store.put_verdict(service.cache.from_model(event, analysis, analysis.prompt_version,
                                                                 "profile", time.monotonic(), time.monotonic()))

            def burst(b: int) -> float:
                payloads = [encode_event(bench.make_event(crops[i % len(crops)], n=i,
                                                          phash=bench.flip(crops[i % len(crops)][2], i + b)))
                            for i in range(hits)]
                return bench._burst(device, topics.events(bench.DEVICE), payloads, expect=hits)

            link_thread = service.publisher.link._thread
            threads = {"event loop": cloud.thread, "paho network thread": link_thread}
            start = {name: _cpu_s(t) for name, t in threads.items()}
            rates = [burst(b) for b in range(bursts)]
            cpu_us = {name: (_cpu_s(t) - start[name]) / (hits * bursts) * 1e6 for name, t in threads.items()}
            profiler = cProfile.Profile(time.thread_time)
            cloud.call(_in_loop(profiler.enable))
            burst(bursts)
            cloud.call(_in_loop(profiler.disable))
            assert service.stats.llm == 0 and service.stats.cache_hits == hits * (bursts + 1), service.stats
            per_turn = service.answer_hits.stored / max(1, service.answer_hits.turns)
        finally:
            device.close()
            cloud.stop()
            broker.stop()
    store = "Redis" if redis else "SQLite"
    print(f"{store} store: {statistics.median(rates):.0f} hits/s (median of {bursts} bursts of {hits}; "
          f"{', '.join(f'{r:.0f}' for r in rates)}); {per_turn:.0f} hits answered together per loop turn")
    print(f"\n| CPU time per cache hit, {store} store | µs |\n|---|---|")
    for name, us in cpu_us.items():
        print(f"| {name} | {us:.0f} |")
    stats = pstats.Stats(profiler)
    if dump is not None:
        stats.dump_stats(dump)
    total = max(s[3] for s in stats.stats.values())  # type: ignore[attr-defined]
    print(f"\n| event loop, by stage (cProfile, CPU time), {store} store | share |\n|---|---|")
    shown = 0.0
    for stage, functions in STAGES:
        cum = sum(s[3] for (path, _, fn), s in stats.stats.items()  # type: ignore[attr-defined]
                  if any(path.endswith(f) and fn == name for f, name in functions))
        shown += cum
        print(f"| {stage} | {cum / total:.0%} |")
    print(f"| the rest (asyncio's loop, the hand-off, listeners, counting) | {max(0.0, 1 - shown / total):.0%} |")


async def _in_loop(call: Any) -> None:
    call()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", action="store_true", help="the Redis store (127.0.0.1:6379) instead of SQLite")
    parser.add_argument("--hits", type=int, default=1000, help="cache hits per burst")
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--dump", type=Path, help="also write the loop thread's cProfile stats here (pstats)")
    args = parser.parse_args(argv)
    run(args.redis, args.hits, args.bursts, args.dump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
