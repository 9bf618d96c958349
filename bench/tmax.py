"""A burst of events against a small and a large model back-end with a latency target (issue 41):

    python bench/tmax.py            # 40 events at once
    python bench/tmax.py --quick    # 16
    python bench/tmax.py --small-standin   # the small one a 0.2-0.6 s stand-in (where the CPU cannot meet T_max)

The small back-end is the CPU default (SmolLM2-135M, transformers); the large one an OpenAI-compatible stand-in
(this file, --serve-openai) that answers each request after 1-3 s (uniform, seeded), `--large-at-once` at a time,
with the labelled crop's expected verdict (bench/verdict_crops.py: it sees the image and knows the label, as a
large model that is always right would). T_max = 5 s. The events are the labelled crops, far apart in hash (no
cache hits), published by one device at once over a Mosquitto of the bench's own; a subscriber on the device's
verdicts topic times every message from the publish. The device (publisher and subscriber) is a process of its own,
as a device is another machine: in the cloud's process its receiving thread waited for the cloud's threads.

    first_answer_p95_ms   publish -> the event's first message (a first answer, provisional, or the verdict), p95
    p95_ms                publish -> the event's first verdict, p95 (goal <= t_max_ms): the large model's within
                          T_max; else the small one's, provisional; else, where neither model could answer
                          within T_max, the light path's (no model: the policy or the check over the cloud's
                          closer look, as the seed's L_total counts α·L_light), provisional. Not a first answer
                          (source "fallback": the device's claim, "the model's verdict follows"), never a verdict
                          that says "unknown" for lack of time: the light path answers only alert or benign
    model_p95_ms          publish -> the event's first verdict of a model (the light path's left out), p95
    final_p95_ms          publish -> the event's last verdict (a final answer replacing a provisional one), p95
    provisional_share     events whose first verdict was provisional (the small one or the light path answered)
    light_share           events whose first verdict was the light path's (`routed_by` neither_in_time)
    light_right           of those, the share whose light verdict was the crop's label
    final_agreement       of the finals that replaced a provisional verdict, the share that said the same
    lost                  events with no model verdict by the end                         (goal 0)
    answered_twice        events with more than one verdict not marked provisional (a final replacing a
                          provisional one is counted apart: finals)                       (goal 0)
    *_routing_off         the same burst, same back-ends, no t_max_ms and no first answer (every event waits
                          for the large one, as one back-end per cloud did), in the same run
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import hashlib
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from brokers import free_port, wait_port  # noqa: E402 - bench/brokers.py, beside this script
from edgetriage.cloud.analysis import build_backend  # noqa: E402
from edgetriage.cloud.analysis.translator import Translator  # noqa: E402
from edgetriage.cloud.config import CloudConfig  # noqa: E402
from edgetriage.shared.ids import uuid7  # noqa: E402
from edgetriage.shared.protocol import Detection, Event, decode_event, decode_verdict, encode_event  # noqa: E402
from edgetriage.shared.stats import percentile  # noqa: E402
from edgetriage.shared.topics import Topics  # noqa: E402
from verdict_crops import Crop, build  # noqa: E402

from cloud import Broker, Client, Cloud, flip  # noqa: E402 - bench/cloud.py

T_MAX_MS = 5000.0
LIGHT_ROUTE = "neither_in_time"  # cloud.route.routing: the light path answered (no model), provisionally
FIRST_ANSWER_MS = 500.0
DEVICE = "bench-1"


def say(message: str) -> None:
    print(f"[tmax bench] {message}", file=sys.stderr, flush=True)


# -- the large stand-in ----------------------------------------------------------------------------------
def image_key(data_url: str) -> str:
    return hashlib.sha256(data_url.split(",", 1)[-1].encode()).hexdigest()[:16]


def serve_openai(port: int, truth_path: str | None, low_s: float, high_s: float, at_once: int) -> None:
    """Answer each chat completion after low_s..high_s, `at_once` at a time: with the expected verdict of the
    attached crop (its key in `truth_path`; "alert" for a crop it does not know), or without a truth file as a
    rule over the prompt's facts (the cloud's closer look): "Person: yes" alert, else benign. GET /count."""
    from aiohttp import web

    truth = json.loads(Path(truth_path).read_text()) if truth_path else None
    draw = random.Random(41)
    count = 0
    gate: asyncio.Semaphore | None = None

    async def chat(request: web.Request) -> web.Response:
        nonlocal count, gate
        body = await request.json()
        gate = gate or asyncio.Semaphore(at_once)
        images = [part["image_url"]["url"] for m in body.get("messages", []) if isinstance(m.get("content"), list)
                  for part in m["content"] if part.get("type") == "image_url"]
        texts = [m["content"] if isinstance(m.get("content"), str) else
                 " ".join(p.get("text", "") for p in m["content"]) for m in body.get("messages", [])]
        if truth is None:
            verdict = "alert" if "Person: yes" in texts[-1] else "benign"
        else:
            verdict = truth.get(image_key(images[0]), "alert") if images else "alert"
        async with gate:
            await asyncio.sleep(draw.uniform(low_s, high_s))
            count += 1
        said = "A person stands there." if verdict == "alert" else "An empty scene, nobody there."
        content = json.dumps({"description": said, "verdict": verdict, "confidence": 0.9})
        return web.json_response({"id": f"c{count}", "object": "chat.completion", "model": "stand-in",
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": content}}],
                                  "usage": {"prompt_tokens": 300, "completion_tokens": 20}})

    async def counted(request: web.Request) -> web.Response:
        return web.json_response({"requests": count})

    app = web.Application(client_max_size=8 << 20)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/count", counted)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


class StandIn:
    def __init__(self, truth: Path | None, low_s: float, high_s: float, at_once: int) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-openai", str(self.port),
                                      *(["--truth", str(truth)] if truth else []), "--large-low-s", str(low_s),
                                      "--large-high-s", str(high_s), "--large-at-once", str(at_once)],
                                     stdout=subprocess.DEVNULL)
        wait_port(self.port, self.proc, "the large stand-in")
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# -- the device, a process of its own --------------------------------------------------------------------
class Device:
    """The device that sends the burst and times every verdict message, in a process of its own (as a device
    is another machine): timed in the same process, its receiving thread would wait for the cloud's threads to
    let go of the interpreter lock, and the bench would time itself. `get` gives (ms since that event's
    publish, the raw message) as they come."""

    def __init__(self, port: int, events_topic: str, verdicts_topic: str, payloads: list[bytes]) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--device", str(port), events_topic, verdicts_topic],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        for payload in payloads:
            self.proc.stdin.write(base64.b64encode(payload).decode() + "\n")
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != "ready":
            raise SystemExit("the bench's device could not connect")
        self.lines: queue.Queue[tuple[float, bytes]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            ms, raw = line.split()
            self.lines.put((float(ms), base64.b64decode(raw)))

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def get(self, timeout: float) -> tuple[float, bytes]:
        return self.lines.get(True, timeout)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def run_device(port: int, events_topic: str, verdicts_topic: str) -> None:
    """The --device child: read the events (base64 lines, then an empty one), connect, say "ready", publish
    them all at "go", then print "<ms since its publish> <base64 message>" for every verdict message."""
    payloads = []
    for line in sys.stdin:
        if not line.strip():
            break
        payloads.append(base64.b64decode(line))
    client = Client(port, subscribe=verdicts_topic)
    print("ready", flush=True)
    sys.stdin.readline()
    sent: dict[str, float] = {}
    for payload in payloads:
        sent[decode_event(payload).event_id] = time.perf_counter()
        client.publish(events_topic, payload)
    while True:
        received, _, raw = client.get(3600)
        event_id = decode_verdict(raw).event_id
        if event_id in sent:
            print(f"{(received - sent[event_id]) * 1000:.1f} {base64.b64encode(raw).decode()}", flush=True)


# -- one burst -------------------------------------------------------------------------------------------
def far_phash(i: int) -> str:
    out = "8f3a6b1c2d4e5f60"
    for bit in random.Random(1000 + i).sample(range(64), 32):
        out = flip(out, bit)
    return out


def event_for(crop: Crop, i: int) -> Event:
    return Event(event_id=uuid7(), device=DEVICE, camera="hall", captured_ms=int(time.time() * 1000),
                 label="person", score=0.45, uncertain=True, track_id=i,
                 detections=[Detection(label="person", score=0.45, box=crop.box)], phash=far_phash(i),
                 reason="score in the uncertain band", crop=crop.jpeg)


def burst(name: str, config: CloudConfig, backend: Any, broker: Any, crops: list[Crop], wait_s: float) -> dict:
    """Publish one event per crop at once; collect every verdict message until each event has its last one."""
    cloud = Cloud(config, None, backend=backend)
    service = cloud.service
    topics = Topics(config.mqtt.prefix)
    events = [event_for(c, i) for i, c in enumerate(crops)]
    sent: dict[str, Crop] = {e.event_id: c for e, c in zip(events, crops, strict=True)}  # the device times them
    got: dict[str, list[tuple[float, Any]]] = {}
    device = Device(broker.port, topics.events(DEVICE), topics.verdicts(DEVICE), [encode_event(e) for e in events])
    try:
        device.go()
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            done = all(got.get(e) and not got[e][-1][1].provisional for e in sent)
            if done and not service.finals.stats.provisional > service.finals.stats.finals + \
                    service.finals.stats.unanswered + service.finals.stats.operator_kept:
                break
            try:
                ms, raw = device.get(0.5)
            except queue.Empty:
                continue
            verdict = decode_verdict(raw)
            if verdict.event_id in sent:
                got.setdefault(verdict.event_id, []).append((ms, verdict))
        computed = service.figures.compute()
        figures, alpha = computed["routing"], computed["alpha"]
    finally:
        device.close()
        cloud.stop()  # the back-end closed in its loop (the next burst opens its own)
    return summarise(name, sent, got, figures, alpha)


def summarise(name: str, sent: dict[str, Crop], got: dict, figures: dict, alpha: float | None) -> dict:
    first, verdicts, model, last, provisional, finals, agreed, twice, lost, right = [], [], [], [], 0, 0, 0, 0, 0, 0
    light, light_right = 0, 0
    for event_id, crop in sent.items():
        messages = got.get(event_id, [])
        judged = [(ms, v) for ms, v in messages if v.source != "fallback" or not v.provisional]
        if not judged:
            lost += 1
            continue
        first.append(messages[0][0])
        verdicts.append(judged[0][0])
        if judged[0][0] > T_MAX_MS:  # where the target was missed, and by which route
            say(f"{name}: over T_max: {judged[0][0]:.0f} ms, routed_by {judged[0][1].routed_by}, "
                f"model {judged[0][1].model}")
        by_model = [ms for ms, v in judged if v.routed_by != LIGHT_ROUTE]
        if by_model:
            model.append(by_model[0])
        if judged[0][1].routed_by == LIGHT_ROUTE:
            light += 1
            light_right += judged[0][1].verdict == crop.expected
        last.append(judged[-1][0])
        provisional += judged[0][1].provisional
        twice += sum(not v.provisional and v.provisional_was is None for _, v in judged) > 1
        final = [v for _, v in judged if v.provisional_was is not None]
        finals += bool(final)
        agreed += bool(final) and final[-1].verdict == final[-1].provisional_was
        right += judged[-1][1].verdict == crop.expected
    n = len(sent)
    result = {"first_answer_p95_ms": _p(first), "p95_ms": _p(verdicts), "p50_ms": _p(verdicts, 0.5),
              "model_p95_ms": _p(model), "final_p95_ms": _p(last),
              "provisional_share": round(provisional / n, 3) if n else None,
              "light_share": round(light / n, 3) if n else None,
              "light_right": round(light_right / light, 3) if light else None,
              "final_agreement": round(agreed / finals, 3) if finals else None, "finals": finals,
              "lost": lost, "answered_twice": twice, "last_verdict_right": round(right / n, 3) if n else None,
              "routed_by": figures["routed_by"], "alpha": alpha,
              "L_llm_ms": {name: lane["L_llm_ms"] for name, lane in figures["backends"].items()},
              "batch_ms": {name: lane["batch_ms"] for name, lane in figures["backends"].items()}}
    say(f"{name}: {json.dumps(result)}")
    return result


def _p(values: list[float], q: float = 0.95) -> float | None:
    value = percentile(sorted(values), q)
    return None if value is None else round(value, 1)


def warm_up(small: Any, labelled: list[Crop]) -> float:
    """The small back-end's prompt cache built (one event, untimed), then one full batch timed, ms."""
    events = [event_for(c, 500 + i) for i, c in enumerate(labelled[:small.max_batch])]

    async def run() -> float:
        await small.analyze_batch(events[:1])
        t0 = time.perf_counter()
        await small.analyze_batch(events)
        took = (time.perf_counter() - t0) * 1000
        await small.close()  # its HTTP session belongs to this loop; the service's loop opens its own
        return took

    return asyncio.run(run())


def config_for(workdir: Path, broker: Any, prefix: str, large_url: str, args: argparse.Namespace,
               routing: bool, small_url: str | None) -> CloudConfig:
    small = {"name": "small", "kind": "transformers", "cost": "small", "threads": args.threads, "latency_ms": 3000}
    if small_url is not None:
        small = {"name": "small", "kind": "openai", "cost": "small", "latency_ms": 600,
                 "openai": {"base_urls": [small_url], "max_in_flight": 4, "retries": 0}}
    return CloudConfig.model_validate({
        "mqtt": {"url": broker.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
        "store_path": str(workdir / f"{prefix}.db"), "http": {"enabled": False},
        "reuse": {"verify_sample": 0.0}, "scheduler": {"deadline_s": 900, "queue_size": 1000},
        "drain_timeout_s": 1.0,
        "analyzer": {"t_max_ms": T_MAX_MS if routing else None, "first_answer_ms": FIRST_ANSWER_MS if routing else 0,
                     "backends": [small,
                         {"name": "large", "kind": "openai", "cost": "large",
                          "latency_ms": args.large_high_s * 1000,  # its slowest answer, until measured
                          "openai": {"base_urls": [large_url], "vision": True, "max_in_flight": args.large_at_once,
                                     "retries": 0}}]}})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="16 events instead of 40")
    parser.add_argument("--events", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2, help="the small back-end's CPU threads")
    parser.add_argument("--small-standin", action="store_true",
                        help="the small back-end a stand-in too: a rule over the closer look's facts (\"Person: yes\" "
                             "alert), 0.2-0.6 s an answer, 4 at a time, for where the CPU model cannot meet T_max")
    parser.add_argument("--large-at-once", type=int, default=2)
    parser.add_argument("--large-low-s", type=float, default=1.0)
    parser.add_argument("--large-high-s", type=float, default=3.0)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/edgetriage-bench-tmax"))
    parser.add_argument("--serve-openai", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--truth", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--device", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.device is not None:
        run_device(int(args.device[0]), args.device[1], args.device[2])
        return 0
    if args.serve_openai is not None:
        serve_openai(args.serve_openai, args.truth, args.large_low_s, args.large_high_s, args.large_at_once)
        return 0
    n = args.events or (16 if args.quick else 40)
    args.workdir.mkdir(parents=True, exist_ok=True)
    labelled = build(Translator().look)
    alerts = [c for c in labelled if c.expected == "alert"]
    benign = [c for c in labelled if c.expected == "benign"]
    crops = [(alerts if i % 2 == 0 else benign)[(i // 2) % len(alerts if i % 2 == 0 else benign)] for i in range(n)]
    truth = args.workdir / "truth.json"
    truth.write_text(json.dumps({image_key("data:image/jpeg;base64," + base64.b64encode(c.jpeg).decode()): c.expected
                                 for c in labelled}))
    say(f"{n} events at once ({sum(c.expected == 'alert' for c in crops)} with a person); large stand-in "
        f"{args.large_low_s:g}-{args.large_high_s:g} s an answer, {args.large_at_once} at a time; small: "
        f"{'a stand-in' if args.small_standin else f'the CPU default, {args.threads} threads'}; T_max "
        f"{T_MAX_MS:g} ms, first answer after {FIRST_ANSWER_MS:g} ms")
    large = StandIn(truth, args.large_low_s, args.large_high_s, args.large_at_once)
    small = StandIn(None, 0.2, 0.6, 4) if args.small_standin else None
    small_url = small.base_url if small is not None else None
    broker = Broker(args.workdir / "broker")
    started = time.monotonic()
    try:
        on = config_for(args.workdir, broker, f"tmax{int(time.time()) % 100000}", large.base_url, args, True,
                        small_url)
        backend = build_backend(on.analyzer)
        small_ms = warm_up(backend.members[0].backend, labelled)
        backend.members[0] = dataclasses.replace(backend.members[0], latency_ms=small_ms)  # as configured
        say(f"back-ends loaded in {time.monotonic() - started:.1f} s; the small one takes {small_ms:.0f} ms for a "
            "full batch here (its latency_ms: what an operator measures and configures)")
        routed = burst("routing on", on, backend, broker, crops, wait_s=60 + 6 * n)
        off = config_for(args.workdir, broker, f"tmaxoff{int(time.time()) % 100000}", large.base_url, args, False,
                         small_url)
        plain = burst("routing off", off, backend, broker, crops, wait_s=60 + 6 * n)
    finally:
        broker.stop()
        large.stop()
        if small is not None:
            small.stop()
    what = "a rule over the closer look's facts (stand-in, 0.2-0.6 s, 4 at once)" if small is not None else \
        f"SmolLM2-135M on {args.threads} CPU threads"
    load = (f"{n} events at once from one device; large: 1 of {args.large_at_once} at a time, "
            f"{args.large_low_s:g}-{args.large_high_s:g} s each; small: {what}")
    result = {"events": n, "t_max_ms": T_MAX_MS, "first_answer_ms": FIRST_ANSWER_MS, "load": load,
              "small_batch_ms_warm": round(small_ms),
              **{k: v for k, v in routed.items()},
              **{f"{k}_routing_off": plain[k] for k in ("first_answer_p95_ms", "p95_ms", "p50_ms", "model_p95_ms",
                                                       "lost", "answered_twice", "last_verdict_right")},
              "wall_s": round(time.monotonic() - started, 1)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
