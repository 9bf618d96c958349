"""Policy-decided verdicts while the model is busy (issue 38), a part of bench/cloud.py:

    policy_verdict_p95_ms_busy   device publish -> verdict received over loopback MQTT, p95, for events the
                                 operator's policy or the check decides, sent while the model is kept busy by a
                                 stream of events no policy covers                          (goal <= 1000)
    policy_verdict_p50_ms_busy   the same, p50
    busy_model_answered          of the model's events, how many it answered meanwhile (it stays busy throughout)
    busy_policy_decide_p50_ms    the policy's own time per event (the translator's closer look and the rules)

The model is bench/fleet.py's fixed-latency OpenAI-compatible server (`--serve-openai`, 2 s an answer, one at
a time), so it is busy for the whole run; the policy's events are the shipped clip's visitor crops with the
device's zone and dwell, the translator the real one.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from pathlib import Path
from typing import Any

from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.protocol import decode_verdict, encode_event
from edgetriage.shared.topics import Topics
from fleet import FakeModelServer

MODEL_DELAY_S = 2.0
SPACING_S = 0.5  # between policy events: a busy site of a few cameras
POLICY = "Alert only if someone stays at the door longer than 30 s"


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else float("nan")


def bench_busy(broker: Any, workdir: Path, clip: Path, quick: bool, *, client: Any, crops: Any, make_event: Any,
               flip: Any, say: Any) -> dict:
    """The figures above; `client`, `crops`, `make_event`, `flip` and `say` are bench/cloud.py's."""
    model = FakeModelServer(MODEL_DELAY_S)
    prefix = f"busy{int(time.time()) % 100000}"
    topics = Topics(prefix)
    config = CloudConfig.model_validate({
        "mqtt": {"url": broker.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
        "store_path": str(workdir / f"{prefix}.db"), "http": {"enabled": False}, "reuse": {"verify_sample": 0.0},
        "analyzer": {"backend": "openai", "openai": {"base_urls": [model.base_url], "max_in_flight": 1},
                     "policies": [{"camera": "front", "text": POLICY}]},
        "scheduler": {"deadline_s": 600, "queue_size": 1000}, "drain_timeout_s": 1.0})
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    store = SQLiteStore(config.store_path)
    service = build_service(config, build_backend(config.analyzer), store)

    def call(coro: Any, timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    async def start() -> None:
        await service.start()
        if not await service.wait_connected(10):
            raise SystemExit("the cloud service could not reach the bench broker")

    call(start())
    device = client(broker.port, subscribe=topics.verdicts("bench-1"))
    n_policy, n_model = (20, 10) if quick else (60, 20)
    sent: dict[str, tuple[float, str]] = {}
    try:
        person, empty = crops
        say(f"busy: {n_model} events for the model ({MODEL_DELAY_S:g} s each, one at a time), "
            f"{n_policy} the policy decides among them")
        for i in range(n_model):  # far apart in hash: the cache answers none of them with another
            event = make_event(person, phash=_far(person[2], i, flip), n=i).model_copy(update={"camera": "yard"})
            sent[event.event_id] = (time.perf_counter(), "model")
            device.publish(topics.events("bench-1"), encode_event(event))
        for i in range(n_policy):
            crop = empty if i % 4 == 3 else person
            event = make_event(crop, phash=_far(crop[2], 1000 + i, flip), n=1000 + i).model_copy(update={
                "camera": "front", "zones": ["door"], "dwell_s": 60.0 if i % 2 else 5.0, "local_time": "12:00"})
            time.sleep(SPACING_S)
            sent[event.event_id] = (time.perf_counter(), "policy")
            device.publish(topics.events("bench-1"), encode_event(event))
        took: dict[str, list[float]] = {"policy": [], "model": []}
        by: dict[str, int] = {}
        deadline = time.monotonic() + 60  # the model's events are not waited for: they only keep it busy
        while len(took["policy"]) < n_policy and time.monotonic() < deadline:
            received, _, raw = device.get(max(0.1, deadline - time.monotonic()))
            verdict = decode_verdict(raw)
            if verdict.event_id in sent:
                t0, kind = sent[verdict.event_id]
                took[kind].append((received - t0) * 1000)
                by[verdict.decided_by or verdict.source] = by.get(verdict.decided_by or verdict.source, 0) + 1
        decide_ms = [v.timings.analyze_ms for v in map(store.get_verdict, sent)
                     if v is not None and v.decided_by in ("policy", "check") and v.model == "policy"]
    finally:
        device.close()
        call(service.stop())
        call(service.backend.close())
        call(_cancel_rest())  # the model's abandoned batch
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        store.close()
        model.stop()
    say(f"busy: policy-decided p95 {_p(took['policy'], 0.95)} ms over {len(took['policy'])}, the model answered "
        f"{len(took['model'])} of {n_model} meanwhile; decided by {by}")
    return {"policy_verdict_p95_ms_busy": _p(took["policy"], 0.95),
            "policy_verdict_p50_ms_busy": _p(took["policy"], 0.5),
            "busy_model_answered": len(took["model"]), "busy_policy_answered": len(took["policy"]),
            "busy_policy_decide_p50_ms": _p(decide_ms, 0.5)}


async def _cancel_rest() -> None:
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


def _far(phash: str, i: int, flip: Any) -> str:
    """`phash` with a random half of its bits flipped, drawn for each `i`: no two reach each other."""
    out = phash
    for bit in random.Random(i).sample(range(64), 32):
        out = flip(out, bit)
    return out
