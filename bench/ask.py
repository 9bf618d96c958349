"""Questions benchmark: how well and how fast the question router (cloud.ask) answers a small site's events.

A site (bench/ask_site.json: one device, three cameras, visits at device-local times over two days, in the
device config's time zone) is replayed from the shared clips through the real edge agent, over a Mosquitto
of its own, into the real cloud service (its CPU model judges every event). Then the labelled questions
(bench/ask_questions.jsonl, and bench/ask_questions_blind.jsonl: a set written before its author read the
rules, the classifier or the other set, to measure how the router does on phrasings it was not built
around) are asked of the router at the site's `now`, each twice (the second time the cache answers).
Expected answers are written as selections of events (camera, label, verdict, zone, a local time range
such as "D1 18:00".."D2 06:00", `color`: the description gives that colour and names clothing, `carries`: it
names that object), evaluated on the stored events independently of the rules. A question may name a site day
by its date, e.g. "{D1:%A}" (the weekday of D1), filled in when the bench runs. Kinds: count (distinct people:
each visit of the site file with a selected event counts its `people`, labelled by eye, once however many
events it was stored as; narrowed by a colour, object or verdict, at most as many as it selected there; for a
label other than person, one per visit), count_visits (visits with a selected event), count_events (the
selected events), compare ({"a": sel, "b": sel, "measure": "people"|"events", "ask": "more"|"fewer"|"same"}:
the yes/no right and both counts shown in the answer), last, first, list, exists, duration (the selected
events' stays added up, from the dwell each carries: right within 25% or 3 s), cite (an open question must
cite the selection) and open (not partial, citing at least one event of the selection; any stored event when
it is empty). An optional `must_name` list: words the stored facts cannot answer, which the answer must name
after "could not use" (else the question is wrong, and counted in dropped_words).

    accuracy_query   query-type questions (count, last, first, list, exists) answered right   (goal >= 0.95)
    route_accuracy   questions that took the route they are labelled with (rules, fast, llm; a first asking
                     the cache answers, the same question having been asked before, by its first route)
    route_decided_accuracy  the same, a partial answer counted as the llm route the router chose for it (the
                     LLM path gave up under load: the routing was right, the machine slow)
    without_llm      share of the questions answered without the LLM (first asking; a partial answer,
                     where the LLM path was tried and gave up, does not count)               (goal >= 0.7)
    fast_p50_ms      p50 of answers by a query (routes rules and fast; _p95 too)              (goal <= 50)
    rules_p50_ms / classifier_p50_ms   the same split by route
    llm_p50_ms       p50 of LLM answers (SmolLM2-135M on the CPU; _p95 too)
    cache_p50_ms     p50 of the second asking, answered by the cache (_p95 too)             (goal <= 5)
    bad_citations    cited ids that are not stored events                                       (must be 0)
    citation_recall  of the ids open questions must cite, the share the answers cite        (goal >= 0.8)
                     (citation_recall_llm: the same over the answers the LLM gave)
    reading_shown    answers (every set) that carry their `reading` line                     (goal 1.0)
    dropped_words    questions with a `must_name` whose answer did not name it as not used   (goal 0)
    people_vs_events count questions (every set) whose right answer differs between people, visits and
                     events, answered right                                                   (goal >= 0.95)

The plain figures are over the first two files; the same ones over the blind set alone end in `_blind`
(`accuracy_query_blind`, `route_accuracy_blind`, `without_llm_blind`, `citation_recall_blind`, ...), and over
bench/ask_questions_blind2.jsonl (a second blind set, written by someone who had not read the rules, with
durations, looks and open questions; an `open` question counts once in its citation_recall) in `_blind2`
(goals: accuracy_query_blind2 >= 0.9, citation_recall_blind2 >= 0.8), and over
bench/ask_questions_blind3.jsonl (a third, written from the site file and a grammar page alone, with people
vs events, comparisons and words the facts cannot answer; no routes) in `_blind3` (goals >= 0.9 each), and
over bench/ask_questions_blind4.jsonl (a fourth, 98 questions written the same way on 2026-12-07 and held out
from the sessions that worked on the reader: see bench/ask_questions_blind4.md) in `_blind4`, and over
bench/ask_questions_dev6.jsonl (110 questions written the same way on 2026-12-07 as a development set the
reader's work may read: see bench/ask_questions_dev6.md) in `_dev6`, and over bench/ask_questions_blind6.jsonl
(90 questions written the same way on 2026-12-07, night, held out: see bench/ask_questions_blind6.md) in
`_blind6`. A held-out set's questions and answers are not printed: its lines and misses name only the set and
the question's line number, so running it does not show its words.

The complexity classifier is trained on cloud/ask/data/complexity_train.jsonl; the bench refuses to run if
any question of either file is in that file. The router is called in-process (no HTTP), with the site's clock.

    python bench/ask.py [--media DIR] [--sets main,blind,blind2] [--keep-store DIR]

--keep-store DIR keeps the filled site's events and, run again the same day, asks them without replaying
the site (minutes saved: the quick mode for working on the rules; the figures are those of a full run).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
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
from edgetriage.cloud.storage.store import SQLiteStore  # noqa: E402
from edgetriage.edge.vision.capture import Frame  # noqa: E402

SITE_FILE = HERE / "ask_site.json"
QUESTION_SETS = {"main": HERE / "ask_questions.jsonl", "blind": HERE / "ask_questions_blind.jsonl",
                 "blind2": HERE / "ask_questions_blind2.jsonl", "blind3": HERE / "ask_questions_blind3.jsonl",
                 "blind4": HERE / "ask_questions_blind4.jsonl", "blind5": HERE / "ask_questions_blind5.jsonl",
                 "dev6": HERE / "ask_questions_dev6.jsonl", "blind6": HERE / "ask_questions_blind6.jsonl"}
GRAMMAR_SETS = ("blind3", "blind4", "blind5", "dev6", "blind6")  # written from a grammar page and the site file
HELD_OUT = ("blind6",)  # sets whose words the bench never prints
QUESTION_FILES = tuple(QUESTION_SETS.values())
PLACEHOLDER_JPEG = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffd9")  # a kept store's crops
FRAME_SIZE = (768, 432)  # every clip is shown to a camera at one size, as a real camera would deliver it
QUERY_KINDS = ("count", "count_visits", "count_events", "compare", "last", "first", "list", "exists", "duration")
COUNT_KINDS = ("count", "count_visits", "count_events")
VISIT_SLACK_MS = 2000  # an event captured up to this long after its visit's clip ended still belongs to it
BLIND_FIGURES = ("accuracy_query", "route_accuracy", "route_decided_accuracy", "without_llm", "fast_p50_ms",
                 "llm_p50_ms", "bad_citations", "citation_recall", "citation_recall_llm", "questions",
                 "query_questions", "open_questions", "partial", "reading_shown", "dropped_words",
                 "people_vs_events", "people_vs_events_questions")


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

    missing = sorted({v["clip"] for v in site["visits"] if not (media / v["clip"]).is_file()})
    if missing:  # a site filled from no frames answers every question "none" and looks like a bad reader
        raise SystemExit(f"ask bench: no clip {', '.join(missing)} in {media} (--media DIR)")
    prefix = f"a{uuid.uuid4().hex[:8]}"
    device = EdgeConfig.model_validate(
        {
            **site["device"],
            "mqtt": {"url": broker.url, "prefix": prefix},
            "state_dir": str(workdir / "device"),
            "cameras": [
                {"id": c, "source": str(media / site["visits"][0]["clip"]), "zones": site.get("zones", {}).get(c, [])}
                for c in site["cameras"]
            ],
            "rules": {"labels": ["person", "car", "bicycle"], "confirm_labels": ["person", "car", "bicycle"]},
            "budget": {"per_minute": 0, "per_hour": 0},
        }
    )
    # the cloud reads the device's questions in the device config's zone, with the operator's names for its
    # cameras and zones ([ask] cameras, zones: names only a device sends are matched when quoted)
    cloud = bench_cloud.Cloud(bench_cloud.cloud_config(broker, workdir, prefix, ask={
        "timezones": {device.device: device.timezone}, "cameras": {device.device: list(site["cameras"])},
        "zones": sorted({z["name"] for zones in site.get("zones", {}).values() for z in zones})}), analyzer)
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
CLOTHES = frozenset("top shirt jacket coat hoodie sweater jumper trousers pants jeans shorts skirt dress hat cap "
                    "bottom bottoms vest uniform clothes".split())  # the bench's own reading of "clothing"
SAME_COLOUR = {"gray": "grey"}


def _words(text: str) -> list[str]:
    return [SAME_COLOUR.get(w, w) for w in re.findall(r"[a-z]+", text.lower())]


def select(rows: list[dict], sel: dict, clock: SiteClock) -> list[dict]:
    """The stored events a selection names, newest first: the bench's own reading, not the router's.
    `color`: the description gives that colour and names clothing; `carries`: it names the object."""
    start = clock.ms(sel["from"]) if "from" in sel else None
    end = clock.ms(sel["to"]) if sel.get("to", "now") != "now" else None
    out = []
    for row in rows:
        verdict = (row.get("verdict") or {}).get("verdict")
        words = _words((row.get("verdict") or {}).get("description") or "")
        if (sel.get("camera", row["camera"]) == row["camera"] and sel.get("label", row["label"]) == row["label"]
                and ("zone" not in sel or sel["zone"] in (row.get("zones") or ()))
                and sel.get("verdict", verdict) == verdict
                and ("color" not in sel or (SAME_COLOUR.get(sel["color"], sel["color"]) in words
                                            and CLOTHES.intersection(words)))
                and ("carries" not in sel or {sel["carries"], sel["carries"] + "s"}.intersection(words))
                and (start is None or row["captured_ms"] >= start) and (end is None or row["captured_ms"] < end)):
            out.append(row)
    return sorted(out, key=lambda r: r["captured_ms"], reverse=True)


def visits_of(rows: list[dict], site: dict, clock: SiteClock) -> dict[str, int]:
    """event id -> the index of the site's visit it was stored from: same camera, captured while the visit's
    clip played (up to VISIT_SLACK_MS after). The bench's own linkage, from the site file, never the router's."""
    spans = [(i, v["camera"], clock.ms(v["at"]), clock.ms(v["at"]) + int((v["to_s"] - v["from_s"]) * 1000))
             for i, v in enumerate(site["visits"])]
    found = {}
    for row in rows:
        for i, camera, start, end in spans:
            if row["camera"] == camera and start <= row["captured_ms"] <= end + VISIT_SLACK_MS:
                found[row["event_id"]] = i
                break
    return found


def people(expected: list[dict], sel: dict, site: dict, visit_of: dict[str, int]) -> int:
    """Distinct people (or things) a selection covers: each visit with a selected event counts its `people`
    once, however many events it was stored as. A selection narrowed beyond place and time (a colour, an
    object, a verdict) counts at most as many as it selected in that visit; a label other than person counts
    one per visit (a car's visit is one car)."""
    per_visit: dict[int, int] = {}
    for row in expected:
        if row["event_id"] in visit_of:
            per_visit[visit_of[row["event_id"]]] = per_visit.get(visit_of[row["event_id"]], 0) + 1
    if sel.get("label", "person") != "person":
        return len(per_visit)
    narrowed = any(k in sel for k in ("color", "carries", "verdict"))
    return sum(min(site["visits"][i]["people"], n) if narrowed else site["visits"][i]["people"]
               for i, n in per_visit.items())


def visits(expected: list[dict], sel: dict, site: dict, visit_of: dict[str, int]) -> int:
    """Separate visits with a selected event (about people: visits that showed anyone)."""
    seen = {visit_of[r["event_id"]] for r in expected if r["event_id"] in visit_of}
    if sel.get("label") == "person":
        seen = {i for i in seen if site["visits"][i]["people"] > 0}
    return len(seen)


def measure(kind: str, expected: list[dict], sel: dict, site: dict, visit_of: dict[str, int]) -> int:
    if kind == "count_events":
        return len(expected)
    if kind == "count_visits":
        return visits(expected, sel, site, visit_of)
    return people(expected, sel, site, visit_of)


def shows(text: str, n: int) -> bool:
    return re.search(rf"(?<![\d:.]){n}(?![\d:])", text) is not None


def compare_right(spec: dict, rows: list[dict], answer: dict, clock: SiteClock, site: dict,
                  visit_of: dict[str, int]) -> bool:
    """Right when the yes/no is right and both counts are shown in the answer."""
    kind = "count_events" if spec.get("measure") == "events" else "count"
    a, b = (measure(kind, select(rows, spec[side], clock), spec[side], site, visit_of) for side in ("a", "b"))
    truth = {"more": a > b, "fewer": a < b, "same": a == b}[spec["ask"]]
    return answer.get("value") is truth and shows(answer["answer"], a) and shows(answer["answer"], b)


GENERIC = frozenset("the a an any some someone somebody anyone anybody we i you they it cam camera".split())


def named_unused(words: list[str], answer: dict) -> bool:
    """Every phrase of `must_name` is named as not used: its words (articles, pronouns and "cam" aside, which
    carry no filter) appear after "could not use"."""
    text = answer["answer"].lower().replace("-", " ")
    at = text.find("could not use")
    if at < 0:
        return not words
    told = set(re.findall(r"[a-z0-9]+", text[at:]))
    return all(set(re.findall(r"[a-z0-9]+", w.lower().replace("-", " "))) - GENERIC <= told for w in words)


def right(kind: str, expected: list[dict], answer: dict, zone: ZoneInfo, sel: dict | None = None,
          site: dict | None = None, visit_of: dict[str, int] | None = None) -> bool:
    value = answer.get("value")
    if kind in COUNT_KINDS:
        return value == measure(kind, expected, sel or {}, site or {"visits": []}, visit_of or {})
    if kind in ("last", "first"):
        if not expected:
            return value is None
        pick = expected[0] if kind == "last" else expected[-1]
        return value == datetime.fromtimestamp(pick["captured_ms"] / 1000, zone).strftime("%Y-%m-%d %H:%M")
    if kind == "exists":
        return value is (len(expected) > 0)
    if kind == "duration":  # the stays the device measured, added up: within 25% or 3 s
        stays = [float(r["dwell_s"]) for r in expected if r.get("dwell_s") is not None]
        if not stays:
            return value is None
        return isinstance(value, (int, float)) and abs(value - sum(stays)) <= max(3.0, 0.25 * sum(stays))
    return set(answer["events"]) == {r["event_id"] for r in expected}  # list


def open_right(expected: list[dict], answer: dict, store: Any) -> bool:
    """An open question: answered (not partial) and citing at least one stored event of the selection (any
    stored event when the selection is empty)."""
    cited = set(answer["events"])
    if answer["partial"] or not cited:
        return False
    return bool(cited & {r["event_id"] for r in expected}) if expected else all(
        store.get_event(i) is not None for i in cited)


def ask_all(asker: Asker, questions: list[dict], rows: list[dict], clock: SiteClock, zone: ZoneInfo,
            store: Any, site: dict) -> list[dict]:
    """Asks every question twice; one record per question of what happened, for score()."""
    records = []
    visit_of = visits_of(rows, site, clock)
    for q in questions:
        # a held-out set's words are never printed: its lines and misses say the set and the line number
        shown = f"{q['set']}#{q['line']}" if q["set"] in HELD_OUT else q["q"]
        answer = asyncio.run(asker.ask(q["q"]))
        again = asyncio.run(asker.ask(q["q"]))
        route, cited = answer["route"], set(answer["events"])
        # a first asking the cache answers (the same question was asked before, in either file) is judged by
        # the route that answer first took
        taken = answer.get("first_route", route) if route == "cache" else route
        (kind, sel), = q["expect"].items()
        expected = [] if kind == "compare" else select(rows, sel, clock)
        record = {"q": q, "route": route, "taken": taken, "decided": "llm" if answer["partial"] else taken,
                  "partial": bool(answer["partial"]), "latency_ms": answer["latency_ms"],
                  "cache_ms": again["latency_ms"] if again["route"] == "cache" else None,
                  "bad": sum(1 for event_id in cited if store.get_event(event_id) is None),
                  "query": kind in QUERY_KINDS, "misses": [], "reading": bool(answer.get("reading")),
                  "must_name": bool(q.get("must_name")), "named": named_unused(q.get("must_name", []), answer)}
        if kind in COUNT_KINDS:  # a count whose right answer differs between people, visits and events
            values = {k: measure(k, expected, sel, site, visit_of) for k in COUNT_KINDS}
            record["contrast"] = len(set(values.values())) > 1
        if kind == "open":
            hit = open_right(expected, answer, store)
            record.update(want=1, hits=int(hit))
            if not hit:
                record["misses"].append({"q": shown, "expected": "open", "partial": answer["partial"],
                                         "cited": len(cited)})
        elif record["query"]:
            record["right"] = (compare_right(sel, rows, answer, clock, site, visit_of) if kind == "compare"
                               else right(kind, expected, answer, zone, sel, site, visit_of))
            if record["must_name"] and not record["named"]:
                record["right"] = False
                record["misses"].append({"q": shown, "must_name": q["must_name"]})
            if not record["right"]:
                want = measure(kind, expected, sel, site, visit_of) if kind in COUNT_KINDS else None
                record["misses"].append({"q": shown, "expected": kind, "n": len(expected), "want": want,
                                         "got": answer["value"]})
        else:  # cite: the open question's events
            want = {r["event_id"] for r in expected}
            record.update(want=len(want), hits=len(want & cited))
            if want - cited:
                record["misses"].append({"q": shown, "expected_ids": len(want), "cited": len(want & cited)})
        if "route" in q and taken != q["route"]:
            record["misses"].append({"q": shown, "route": taken, "labelled": q["route"]})
        records.append(record)
        say(f"{route:>5}{'*' if answer['partial'] else ' '} {answer['latency_ms']:8.1f} ms  {shown}  ->  "
            f"{'(held out)' if q['set'] in HELD_OUT else answer['answer'][:110]}")
    return records


def score(records: list[dict]) -> dict:
    """The bench's figures over some of ask_all()'s records."""
    latency: dict[str, list[float]] = {"rules": [], "fast": [], "llm": [], "cache": [], "partial": []}
    for r in records:
        latency["partial" if r["partial"] else r["route"]].append(r["latency_ms"])
        if r["cache_ms"] is not None:
            latency["cache"].append(r["cache_ms"])
    query = [r for r in records if r["query"]]
    query_right = sum(r["right"] for r in query)
    cite_total = sum(r["want"] for r in records if not r["query"])
    cite_hits = sum(r["hits"] for r in records if not r["query"])
    llm_total = sum(r["want"] for r in records if not r["query"] and r["route"] == "llm")
    llm_hits = sum(r["hits"] for r in records if not r["query"] and r["route"] == "llm")
    # a partial answer spent LLM time: not counted as answered without the LLM
    without_llm = sum(1 for r in records if r["route"] != "llm" and not r["partial"])
    fast = latency["rules"] + latency["fast"]
    n = len(records)
    routed = [r for r in records if "route" in r["q"]]  # a set written without routes has no route figures
    contrast = [r for r in query if r.get("contrast")]
    return {
        "accuracy_query": round(query_right / len(query), 3) if query else None,
        "route_accuracy": (round(sum(r["taken"] == r["q"]["route"] for r in routed) / len(routed), 3)
                           if routed else None),
        "route_decided_accuracy": (round(sum(r["decided"] == r["q"]["route"] for r in routed) / len(routed), 3)
                                   if routed else None),
        "reading_shown": round(sum(r["reading"] for r in records) / n, 3) if n else None,
        "dropped_words": sum(1 for r in records if r["must_name"] and not r["named"]),
        "people_vs_events": round(sum(r["right"] for r in contrast) / len(contrast), 3) if contrast else None,
        "people_vs_events_questions": len(contrast),
        "without_llm": round(without_llm / n, 3) if n else None,
        "fast_p50_ms": pct(fast, 0.5), "fast_p95_ms": pct(fast, 0.95),
        "rules_p50_ms": pct(latency["rules"], 0.5), "classifier_p50_ms": pct(latency["fast"], 0.5),
        "llm_p50_ms": pct(latency["llm"], 0.5), "llm_p95_ms": pct(latency["llm"], 0.95),
        "cache_p50_ms": pct(latency["cache"], 0.5), "cache_p95_ms": pct(latency["cache"], 0.95),
        "partial_p50_ms": pct(latency["partial"], 0.5),
        "bad_citations": sum(r["bad"] for r in records),
        "citation_recall": round(cite_hits / cite_total, 3) if cite_total else None,
        "citation_recall_llm": round(llm_hits / llm_total, 3) if llm_total else None,  # LLM answers only
        "questions": n, "query_questions": len(query), "open_questions": n - len(query),
        "partial": sum(r["partial"] for r in records),
        "misses": [miss for r in records for miss in r["misses"]],
    }


def results_of(records: list[dict]) -> dict:
    """The figures over every question, and those over the blind set with the suffix `_blind`."""
    results = score([r for r in records
                     if r["q"].get("source") != "blind2" and r["q"]["set"] not in GRAMMAR_SETS])
    for part in ("blind", "blind2", *GRAMMAR_SETS):
        figures = score([r for r in records if (r["q"]["set"] == part if part in GRAMMAR_SETS
                                                else r["q"].get("source") == part)])
        results.update({f"{key}_{part}": figures[key] for key in BLIND_FIGURES})
        results["misses"] += figures["misses"] if part != "blind" else []
    every = score(records)  # the answers' own promises, over every set asked
    results.update({key: every[key] for key in ("reading_shown", "dropped_words", "people_vs_events",
                                                "people_vs_events_questions")})
    return results


def fill_in(text: str, clock: SiteClock) -> str:
    """A question's "{D1:%A}" -> the weekday of D1 (any strftime format of D1, D2 or D3)."""
    return re.sub(r"\{(D[123]):([^}]*)\}", lambda m: clock.days[m.group(1)].strftime(m.group(2)), text)


def load_questions(clock: SiteClock, sets: tuple[str, ...] = tuple(QUESTION_SETS)) -> list[dict]:
    """The questions of the sets asked; every file is checked against the classifier's training file."""
    every = [{**q, "q": fill_in(q["q"], clock), "set": name, "line": number}
             for name, path in QUESTION_SETS.items() if path.exists() or name in sets
             for number, q in enumerate((json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                                         if line.strip()), start=1)]
    trained = {normalise(json.loads(line)["q"]) for line in TRAIN_FILE.read_text(encoding="utf-8").splitlines()
               if line.strip()}
    overlap = [q["q"] for q in every if normalise(q["q"]) in trained]
    if overlap:
        raise SystemExit(f"bench questions found in the classifier's training file: {overlap[:3]}")
    return [q for q in every if q["set"] in sets]


def _kept_store(folder: Path | None, clock: SiteClock) -> Path | None:
    """The store a run earlier today kept in `folder` (the site's days are relative to today)."""
    if folder is None or not (folder / "cloud.db").exists() or not (folder / "day").exists():
        return None
    return folder / "cloud.db" if (folder / "day").read_text().strip() == clock.days["D3"].isoformat() else None


def _keep(store: Any, folder: Path, clock: SiteClock) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    kept = SQLiteStore(folder / "cloud.db.new")
    for row in store.list_events(limit=100_000):
        event, verdict = _stored(row)
        kept.put_event(event, int(row["received_ms"]))
        if verdict is not None:
            kept.put_verdict(verdict)
    kept.close()
    Path(folder / "cloud.db.new").replace(folder / "cloud.db")
    (folder / "day").write_text(clock.days["D3"].isoformat())


def _stored(row: dict) -> tuple[Any, Any]:
    """A stored event row back as the messages it was stored from (the crop a placeholder JPEG)."""
    from edgetriage.shared.protocol import Event, Verdict

    fields = {k: v for k, v in row.items() if k in Event.model_fields}
    event = Event.model_validate({**fields, "crop": PLACEHOLDER_JPEG})
    verdict = Verdict.model_validate(row["verdict"]) if row.get("verdict") else None
    return event, verdict


def _ask(store: Any, site: dict, clock: SiteClock, zone: ZoneInfo, questions: list[dict], show: bool,
         analyzer: Any) -> tuple[dict, list[dict], dict]:
    rows = store.list_events(limit=100_000)
    days = {datetime.fromtimestamp(r["captured_ms"] / 1000, zone).date() for r in rows}
    for r in sorted(rows, key=lambda r: r["captured_ms"]) if show else ():
        v = r.get("verdict") or {}
        say(f"  {datetime.fromtimestamp(r['captured_ms'] / 1000, zone):%a %H:%M} {r['camera']:>9} "
            f"{r['label']:>8} {r.get('zones')} dwell {r.get('dwell_s')} {v.get('verdict')} {v.get('source')}: "
            f"{v.get('description', '')[:80]}")
    say(f"{len(rows)} events on {len({r['camera'] for r in rows})} cameras over {len(days)} days; asking "
        f"{len(questions)} questions")
    device = site["device"]["device"]  # the operator's names for the device's cameras and zones ([ask])
    config = AskConfig.model_validate({
        "timezones": {device: site["device"]["timezone"]}, "cameras": {device: list(site["cameras"])},
        "zones": sorted({z["name"] for zones in site.get("zones", {}).values() for z in zones})})
    asker = Asker(store, config, AnalyzerConfig(threads=1), clock_ms=lambda: clock.ms(site["now"]))
    asyncio.run(asker.warm())
    results = results_of(ask_all(asker, questions, rows, clock, zone, store, site))
    return results, rows, asker.figures()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--media", type=Path, default=bench_cloud.DEFAULT_MEDIA,
                        help="folder with the shared clips")
    parser.add_argument("--show-events", action="store_true", help="list the stored events on stderr first")
    parser.add_argument("--sets", default=",".join(n for n, path in QUESTION_SETS.items() if path.exists()),
                        help="question sets to ask, comma-separated (main, blind, blind2..blind6, dev6; default: all)")
    parser.add_argument("--keep-store", type=Path, default=None, metavar="DIR",
                        help="keep the filled site's store in DIR and, run again the same day, ask its events "
                             "without replaying the site (the quick mode for working on the rules)")
    args = parser.parse_args(argv)
    site = json.loads(SITE_FILE.read_text(encoding="utf-8"))
    zone = ZoneInfo(site["device"]["timezone"])
    clock = SiteClock(zone)
    sets = tuple(name.strip() for name in args.sets.split(",") if name.strip())
    if unknown := set(sets) - set(QUESTION_SETS):
        parser.error(f"--sets: no such set {', '.join(sorted(unknown))} (main, blind, blind2..blind6, dev6)")
    questions = load_questions(clock, sets)
    started = time.monotonic()
    say("loading the CPU model (SmolLM2-135M, 1 thread)")
    analyzer = build_engine(AnalyzerConfig(threads=1))
    with tempfile.TemporaryDirectory(prefix="edgetriage-bench-ask-") as tmp:
        workdir = Path(tmp)
        kept = _kept_store(args.keep_store, clock)
        if kept is not None:
            say(f"the site's events from {kept} (filled earlier today; --keep-store)")
            store = SQLiteStore(kept)
            try:
                results, rows, figures = _ask(store, site, clock, zone, questions, args.show_events, analyzer)
            finally:
                store.close()
        else:
            broker = bench_cloud.Broker(workdir)
            try:
                cloud = fill(site, clock, args.media, workdir, broker, analyzer)
                try:
                    if args.keep_store is not None:
                        _keep(cloud.store, args.keep_store, clock)
                    results, rows, figures = _ask(cloud.store, site, clock, zone, questions, args.show_events,
                                                  analyzer)
                finally:
                    cloud.stop()
            finally:
                broker.stop()
    days = {datetime.fromtimestamp(r["captured_ms"] / 1000, zone).date() for r in rows}
    cameras = {r["camera"] for r in rows}
    results.update(events=len(rows), cameras=len(cameras), days=len(days), alpha=figures["alpha"],
                   L_total_ms=figures["L_total_ms"], L_sched_ms=figures["L_sched_ms"],
                   seconds=round(time.monotonic() - started, 1))
    for miss in results["misses"]:
        say(f"miss: {miss}")
    for key in ("accuracy_query", "route_accuracy", "route_decided_accuracy", "without_llm", "fast_p50_ms",
                "llm_p50_ms", "cache_p50_ms", "bad_citations", "citation_recall", "reading_shown",
                "dropped_words", "people_vs_events"):
        say(f"{key:>22} = {results[key]}   (blind set: {results.get(key + '_blind', '-')}, blind2: "
            f"{results.get(key + '_blind2', '-')}, blind3: {results.get(key + '_blind3', '-')}, "
            f"blind4: {results.get(key + '_blind4', '-')}, blind5: {results.get(key + '_blind5', '-')}, "
            f"dev6: {results.get(key + '_dev6', '-')}, blind6: {results.get(key + '_blind6', '-')})")
    print(json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
