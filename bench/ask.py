"""Questions benchmark: how well and how fast the question router (cloud.ask) answers a small site's events.

A site (bench/ask_site.json: one device, three cameras, visits at device-local times over two days, in the
device config's time zone) is replayed from the shared clips through the real edge agent, over a Mosquitto
of its own, into the real cloud service (its CPU model judges every event). Then the labelled questions
(bench/ask_questions.jsonl) are asked of the router at the site's `now`, each twice (the second time the
cache answers). Expected answers are written as selections of events (camera, label, verdict, a local
time range such as "D1 18:00".."D2 06:00"), evaluated on the stored events independently of the rules.

    accuracy_query   query-type questions (count, last, first, list, exists) answered right   (goal >= 0.95)
    route_accuracy   questions that took the route they are labelled with (rules, fast, llm)
    without_llm      share of the questions answered without the LLM (first asking; a partial answer,
                     where the LLM path was tried and gave up, does not count)               (goal >= 0.7)
    fast_p50_ms      p50 of answers by a query (routes rules and fast; _p95 too)              (goal <= 50)
    rules_p50_ms / classifier_p50_ms   the same split by route
    llm_p50_ms       p50 of LLM answers (SmolLM2-135M on the CPU; _p95 too)
    cache_p50_ms     p50 of the second asking, answered by the cache (_p95 too)             (goal <= 5)
    bad_citations    cited ids that are not stored events                                       (must be 0)
    citation_recall  of the ids open questions must cite, the share the answers cite        (goal >= 0.8)
                     (citation_recall_llm: the same over the answers the LLM gave)

The complexity classifier is trained on cloud/ask/data/complexity_train.jsonl; the bench refuses to run if
any of its questions is in that file. The router is called in-process (no HTTP), with the site's clock.

    python bench/ask.py [--media DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import cv2

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_cloud", HERE / "cloud.py")
bench_cloud = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_cloud)  # the cloud bench's broker and service harness, reused

from edgetriage.cloud.analysis.transformers import build_engine  # noqa: E402
from edgetriage.cloud.ask.complexity import TRAIN_FILE  # noqa: E402
from edgetriage.cloud.ask.config import AskConfig  # noqa: E402
from edgetriage.cloud.ask.router import Asker  # noqa: E402
from edgetriage.cloud.ask.rules import normalise  # noqa: E402
from edgetriage.cloud.config import AnalyzerConfig  # noqa: E402
from edgetriage.edge.capture import Frame  # noqa: E402

SITE_FILE = HERE / "ask_site.json"
QUESTIONS_FILE = HERE / "ask_questions.jsonl"
FRAME_SIZE = (768, 432)  # every clip is shown to a camera at one size, as a real camera would deliver it
QUERY_KINDS = ("count", "last", "first", "list", "exists")


def say(message: str) -> None:
    print(f"[ask bench] {message}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if q == 0.5:
        return round(statistics.median(values), 2)
    data = sorted(values)
    return round(data[min(len(data) - 1, int(q * len(data)))], 2)


# -- the site's clock ----------------------------------------------------------------------------------
class SiteClock:
    """D1 = the day before yesterday, D2 = yesterday, in the device's zone; "D2 21:30" -> epoch ms."""

    def __init__(self, zone: ZoneInfo) -> None:
        self.zone = zone
        today = datetime.now(zone).date()
        self.days = {"D1": today - timedelta(days=2), "D2": today - timedelta(days=1), "D3": today}

    def ms(self, code: str) -> int:
        day, clock = code.split()
        hour, minute = (int(x) for x in clock.split(":"))
        base: date = self.days[day]
        if hour == 24:
            base, hour = base + timedelta(days=1), 0
        return int(datetime(base.year, base.month, base.day, hour, minute, tzinfo=self.zone).timestamp() * 1000)


# -- filling the store through the real edge and cloud -------------------------------------------------
def play(agent: Any, camera: str, clip: Path, from_s: float, to_s: float, at_ms: int, step: int) -> int:
    """One visit: the clip's [from_s, to_s) through the agent's pipeline for `camera`, its frames stamped
    with the visit's local time. Returns the frames shown."""
    cap = cv2.VideoCapture(str(clip))
    fps = cap.get(cv2.CAP_PROP_FPS) or 10.0
    shown = index = 0
    try:
        while True:
            ok, image = cap.read()
            if not ok:
                break
            pts = index / fps
            index += 1
            if pts < from_s or (index - 1) % step:
                continue
            if pts >= to_s:
                break
            if (image.shape[1], image.shape[0]) != FRAME_SIZE:
                image = cv2.resize(image, FRAME_SIZE, interpolation=cv2.INTER_LINEAR)
            agent.process(camera, Frame(index - 1, pts, at_ms + int((pts - from_s) * 1000), image))
            agent.pump()
            shown += 1
    finally:
        cap.release()
    agent.end_stream(camera)
    agent.pump()
    return shown


def fill(site: dict, clock: SiteClock, media: Path, workdir: Path, broker: Any, analyzer: Any) -> Any:
    from edgetriage.edge.agent import EdgeAgent
    from edgetriage.edge.config import EdgeConfig

    prefix = f"a{uuid.uuid4().hex[:8]}"
    device = EdgeConfig.model_validate({
        **site["device"], "mqtt": {"url": broker.url, "prefix": prefix}, "state_dir": str(workdir / "device"),
        "cameras": [{"id": c, "source": str(media / site["visits"][0]["clip"]), "zones": site.get("zones", {}).get(c, [])}
                    for c in site["cameras"]],
        "rules": {"labels": ["person", "car", "bicycle"], "confirm_labels": ["person", "car", "bicycle"]},
        "budget": {"per_minute": 0, "per_hour": 0}})
    # the cloud reads the device's questions in the device config's zone
    cloud = bench_cloud.Cloud(bench_cloud.cloud_config(broker, workdir, prefix, ask={
        "timezones": {device.device: device.timezone}}), analyzer)
    agent = EdgeAgent(device)
    frames = 0
    started = time.monotonic()
    try:
        for visit in sorted(site["visits"], key=lambda v: clock.ms(v["at"])):
            frames += play(agent, visit["camera"], media / visit["clip"], visit["from_s"], visit["to_s"],
                           clock.ms(visit["at"]), int(visit.get("step", site.get("step", 1))))
            say(f"visit {visit['at']} {visit['camera']:>9}: {agent.stats.escalated} escalated so far")
        if not agent.wait_idle(timeout_s=900):
            say("warning: some verdicts did not arrive")
    finally:
        agent.close()
    say(f"filled: {frames} frames, {agent.stats.escalated} events escalated in {time.monotonic() - started:.0f} s")
    return cloud


# -- expected answers ----------------------------------------------------------------------------------
def select(rows: list[dict], sel: dict, clock: SiteClock) -> list[dict]:
    """The stored events a selection names, newest first: the bench's own reading, not the router's."""
    start = clock.ms(sel["from"]) if "from" in sel else None
    end = clock.ms(sel["to"]) if sel.get("to", "now") != "now" else None
    out = []
    for row in rows:
        verdict = (row.get("verdict") or {}).get("verdict")
        if (sel.get("camera", row["camera"]) == row["camera"] and sel.get("label", row["label"]) == row["label"]
                and ("zone" not in sel or sel["zone"] in (row.get("zones") or ()))
                and sel.get("verdict", verdict) == verdict
                and (start is None or row["captured_ms"] >= start) and (end is None or row["captured_ms"] < end)):
            out.append(row)
    return sorted(out, key=lambda r: r["captured_ms"], reverse=True)


def right(kind: str, expected: list[dict], answer: dict, zone: ZoneInfo) -> bool:
    value = answer.get("value")
    if kind == "count":
        return value == len(expected)
    if kind in ("last", "first"):
        if not expected:
            return value is None
        pick = expected[0] if kind == "last" else expected[-1]
        return value == datetime.fromtimestamp(pick["captured_ms"] / 1000, zone).strftime("%Y-%m-%d %H:%M")
    if kind == "exists":
        return value is (len(expected) > 0)
    return set(answer["events"]) == {r["event_id"] for r in expected}  # list


def ask_all(asker: Asker, questions: list[dict], rows: list[dict], clock: SiteClock, zone: ZoneInfo,
            store: Any) -> dict:
    routes_right = query_right = query_total = 0
    latency: dict[str, list[float]] = {"rules": [], "fast": [], "llm": [], "cache": [], "partial": []}
    without_llm = bad = cite_hits = cite_total = partial = llm_hits = llm_total = 0
    misses = []
    for q in questions:
        answer = asyncio.run(asker.ask(q["q"]))
        again = asyncio.run(asker.ask(q["q"]))
        route = answer["route"]
        latency["partial" if answer["partial"] else route].append(answer["latency_ms"])
        if again["route"] == "cache":
            latency["cache"].append(again["latency_ms"])
        partial += bool(answer["partial"])
        without_llm += route != "llm" and not answer["partial"]  # a partial answer spent LLM time: not counted
        routes_right += route == q["route"]
        bad += sum(1 for event_id in answer["events"] if store.get_event(event_id) is None)
        (kind, sel), = q["expect"].items()
        expected = select(rows, sel, clock)
        if kind in QUERY_KINDS:
            query_total += 1
            ok = right(kind, expected, answer, zone)
            query_right += ok
            if not ok:
                misses.append({"q": q["q"], "expected": kind, "n": len(expected), "got": answer["value"]})
        else:  # cite: the open question's events
            want = {r["event_id"] for r in expected}
            cite_total += len(want)
            cite_hits += len(want & set(answer["events"]))
            if route == "llm":
                llm_total += len(want)
                llm_hits += len(want & set(answer["events"]))
            if want - set(answer["events"]):
                misses.append({"q": q["q"], "expected_ids": len(want), "cited": len(set(answer["events"]) & want)})
        if route != q["route"]:
            misses.append({"q": q["q"], "route": route, "labelled": q["route"]})
        say(f"{route:>5}{'*' if answer['partial'] else ' '} {answer['latency_ms']:8.1f} ms  {q['q']}  ->  "
            f"{answer['answer'][:110]}")
    fast = latency["rules"] + latency["fast"]
    n = len(questions)
    return {
        "accuracy_query": round(query_right / query_total, 3) if query_total else None,
        "route_accuracy": round(routes_right / n, 3),
        "without_llm": round(without_llm / n, 3),
        "fast_p50_ms": pct(fast, 0.5), "fast_p95_ms": pct(fast, 0.95),
        "rules_p50_ms": pct(latency["rules"], 0.5), "classifier_p50_ms": pct(latency["fast"], 0.5),
        "llm_p50_ms": pct(latency["llm"], 0.5), "llm_p95_ms": pct(latency["llm"], 0.95),
        "cache_p50_ms": pct(latency["cache"], 0.5), "cache_p95_ms": pct(latency["cache"], 0.95),
        "partial_p50_ms": pct(latency["partial"], 0.5),
        "bad_citations": bad,
        "citation_recall": round(cite_hits / cite_total, 3) if cite_total else None,
        "citation_recall_llm": round(llm_hits / llm_total, 3) if llm_total else None,  # LLM answers only
        "questions": n, "query_questions": query_total, "open_questions": n - query_total, "partial": partial,
        "misses": misses,
    }


def load_questions() -> list[dict]:
    questions = [json.loads(line) for line in QUESTIONS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    trained = {normalise(json.loads(line)["q"]) for line in TRAIN_FILE.read_text(encoding="utf-8").splitlines()
               if line.strip()}
    overlap = [q["q"] for q in questions if normalise(q["q"]) in trained]
    if overlap:
        raise SystemExit(f"bench questions found in the classifier's training file: {overlap[:3]}")
    return questions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--media", type=Path, default=bench_cloud.DEFAULT_MEDIA,
                        help="folder with the shared clips")
    parser.add_argument("--show-events", action="store_true", help="list the stored events on stderr first")
    args = parser.parse_args(argv)
    site = json.loads(SITE_FILE.read_text(encoding="utf-8"))
    questions = load_questions()
    zone = ZoneInfo(site["device"]["timezone"])
    clock = SiteClock(zone)
    started = time.monotonic()
    say("loading the CPU model (SmolLM2-135M, 1 thread)")
    analyzer = build_engine(AnalyzerConfig(threads=1))
    with tempfile.TemporaryDirectory(prefix="edgetriage-bench-ask-") as tmp:
        workdir = Path(tmp)
        broker = bench_cloud.Broker(workdir)
        try:
            cloud = fill(site, clock, args.media, workdir, broker, analyzer)
            try:
                rows = cloud.store.list_events(limit=100_000)
                days = {datetime.fromtimestamp(r["captured_ms"] / 1000, zone).date() for r in rows}
                cameras = {r["camera"] for r in rows}
                for r in sorted(rows, key=lambda r: r["captured_ms"]) if args.show_events else ():
                    v = r.get("verdict") or {}
                    say(f"  {datetime.fromtimestamp(r['captured_ms'] / 1000, zone):%a %H:%M} {r['camera']:>9} "
                        f"{r['label']:>8} {v.get('verdict')} {v.get('source')}: {v.get('description', '')[:80]}")
                say(f"{len(rows)} events on {len(cameras)} cameras over {len(days)} days; asking {len(questions)} "
                    "questions")
                asker = Asker(cloud.store, AskConfig.model_validate(cloud.service.config.ask.model_dump()),
                              AnalyzerConfig(threads=1), clock_ms=lambda: clock.ms(site["now"]))
                asyncio.run(asker.warm())
                results = ask_all(asker, questions, rows, clock, zone, cloud.store)
                figures = asker.figures()
            finally:
                cloud.stop()
        finally:
            broker.stop()
    results.update(events=len(rows), cameras=len(cameras), days=len(days), alpha=figures["alpha"],
                   L_total_ms=figures["L_total_ms"], L_sched_ms=figures["L_sched_ms"],
                   seconds=round(time.monotonic() - started, 1))
    for miss in results["misses"]:
        say(f"miss: {miss}")
    for key in ("accuracy_query", "route_accuracy", "without_llm", "fast_p50_ms", "llm_p50_ms", "cache_p50_ms",
                "bad_citations", "citation_recall"):
        say(f"{key:>16} = {results[key]}")
    print(json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
