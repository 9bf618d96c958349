"""Questions as an operator asks them in the first week (issue 26), against the real SQLite store and the real
router: a clock time bounds the answer ("after 5 pm"), an object or colour the stored descriptions do not name
is answered "none" (never everyone), "how long" is the stay the device measured (never a clock time read as
a length), "anything unusual?" is answered from the events with citations even without a model, and what the
store does not hold is said in one sentence."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import cv2
import numpy as np
import pytest
from edgetriage.cloud.ask.config import AskConfig
from edgetriage.cloud.ask.router import Asker
from edgetriage.cloud.ask.rules import normalise, time_window
from edgetriage.cloud.config import AnalyzerConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict

ZONE = ZoneInfo("Europe/Berlin")


def at(day: int, hour: int, minute: int = 0) -> int:
    return int(datetime(2026, 12, day, hour, minute, tzinfo=ZONE).timestamp() * 1000)


NOW = at(4, 21, 30)  # Friday evening, Berlin
# camera, label, captured, verdict, description, dwell_s: a week of porch visits by day, one at night, today's
SITE = [
    *[("porch", "person", at(day, hour), "benign", f"A person in a dark top at the door, {hour}:00.", 2.0)
      for day in (1, 2, 3) for hour in (9, 12, 16)],
    ("porch", "person", at(4, 14, 42), "alert", "A person in a dark top at the door, 14:42.", 1.5),
    ("porch", "person", at(4, 14, 50), "alert", "A person in a grey top and grey bottom.", 12.4),
    ("porch", "person", at(4, 15, 5), "benign", "A person in a brown top.", 2.1),
    ("porch", "person", at(4, 3, 10), "alert", "A person in a dark top at the door.", 40.0),
    ("driveway", "car", at(4, 18, 20), "benign", "A car, parked.", 600.0),
]


def _jpeg() -> bytes:
    return cv2.imencode(".jpg", np.full((16, 16, 3), 90, np.uint8))[1].tobytes()


def put(store: SQLiteStore, camera: str, label: str, captured: int, verdict: str, description: str,
        dwell_s: float | None) -> Event:
    event = Event(event_id=uuid7(captured), device="house", camera=camera, captured_ms=captured, label=label,
                  score=0.9, track_id=1, detections=[Detection(label=label, score=0.9, box=(0.1, 0.1, 0.5, 0.9))],
                  phash="0123456789abcdef", reason="detector sure", crop=_jpeg(), dwell_s=dwell_s)
    store.put_event(event, captured)
    store.put_verdict(Verdict(event_id=event.event_id, device="house", camera=camera, label=label, verdict=verdict,
                              confidence=0.8, description=description, model="test", source="llm",
                              created_ms=captured))
    return event


@pytest.fixture
def store(tmp_path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "cloud.db")
    for row in SITE:
        put(s, *row)
    yield s
    s.close()


def ask(store: SQLiteStore, question: str) -> dict:
    asker = Asker(store, AskConfig(timezone="Europe/Berlin"), AnalyzerConfig(backend="vllm"),  # no text model
                  clock_ms=lambda: NOW)
    return asyncio.run(asker.ask(question))


def ids_where(store: SQLiteStore, keep) -> set[str]:
    return {r["event_id"] for r in store.list_events(limit=1000) if keep(r)}


@pytest.mark.parametrize(("words", "start", "end"), [
    ("after 5 pm", at(4, 17), None),  # today, still running at 21:30
    ("after 5", at(4, 17), None),
    ("before 8", at(4, 0), at(4, 8)),
    ("between 9 and noon", at(4, 9), at(4, 12)),
    ("between 9 and 5", at(4, 9), at(4, 17)),
    ("yesterday after 6pm", at(3, 18), at(4, 0)),
    ("last night after 10", at(3, 22), at(4, 6)),
    ("this morning before 9", at(4, 0), at(4, 9)),  # from the day's start, as people mean it
    ("overnight", at(3, 22), at(4, 6)),
    ("in the past two hours", NOW - 2 * 3_600_000, None),
    ("yesterday evening", at(3, 18), at(4, 0)),
    ("on wednesday afternoon", at(2, 12), at(2, 18)),
    ("around 3pm", at(4, 14, 30), at(4, 15, 30)),
    ("in the middle of the night", at(4, 0), at(4, 6)),
])
def test_clock_times_and_parts_of_days_are_ranges_of_local_time(words, start, end):
    window = time_window(normalise(words), ZONE, NOW)
    assert window is not None and (window.start_ms, window.end_ms) == (start, end), window


def test_a_clock_time_bounds_the_answer(store):
    late = ask(store, "was anyone there after 5 pm?")
    assert late["route"] == "rules" and late["value"] is False and late["events"] == [], late["answer"]
    afternoon = ask(store, "was anyone there after 2 pm?")
    assert set(afternoon["events"]) == ids_where(store, lambda r: r["label"] == "person"
                                                  and r["captured_ms"] >= at(4, 14))
    assert "14:00" in afternoon["answer"] and "09:00" not in afternoon["answer"]


def test_an_object_no_description_names_is_answered_none_not_everyone(store):
    bag = ask(store, "did anyone carry a bag?")
    assert bag["route"] == "rules" and bag["value"] is False and bag["events"] == [], bag["answer"]
    assert bag["answer"].startswith("No") and "bag" in bag["answer"]
    backpack = put(store, "porch", "person", at(4, 20), "benign", "A person in a black jacket with a backpack.", 3.0)
    found = ask(store, "did anyone carry a bag?")
    assert found["value"] is True and found["events"] == [backpack.event_id]
    grey = ask(store, "how many people in a grey top came today?")
    assert grey["value"] == 1 and grey["events"] == list(ids_where(store, lambda r: "grey top" in
                                                                   r["verdict"]["description"]))


def test_how_long_someone_stayed_is_the_measured_stay_never_a_clock_time(store):
    answer = ask(store, "how long did the person in the grey top stay?")
    grey = ids_where(store, lambda r: "grey top" in r["verdict"]["description"])
    assert answer["route"] == "rules" and not answer["partial"] and set(answer["events"]) == grey
    assert answer["value"] == 12.4 and "12 s" in answer["answer"]
    assert not re.search(r"\b\d+[.:]\d+ hours\b|stayed for 14", answer["answer"]), answer["answer"]
    car = ask(store, "how long was the car on the driveway?")
    assert car["value"] == 600.0 and "10 min" in car["answer"]


def test_anything_unusual_is_answered_from_the_events_with_citations(store):
    answer = ask(store, "anything unusual?")  # no text model at all
    assert answer["route"] == "rules" and not answer["partial"] and answer["latency_ms"] < 1000
    night = ids_where(store, lambda r: r["captured_ms"] == at(4, 3, 10))
    assert night <= set(answer["value"]) <= set(answer["events"])  # what stands out, cited first
    assert answer["events"][:len(answer["value"])] == answer["value"]
    assert "03:10" in answer["answer"] and "Partial" not in answer["answer"]
    assert all(store.get_event(i) is not None for i in answer["events"])
    quiet = ask(store, "anything unusual on wednesday?")  # the usual hours and numbers: nothing stands out
    assert quiet["answer"].startswith("Nothing out of the ordinary") and len(quiet["events"]) == 3
    assert quiet["value"] == []


def test_what_the_store_cannot_say_is_said_and_the_rest_of_the_question_answered(store):
    answer = ask(store, "what was the number plate of the car on the driveway?")
    cars = ids_where(store, lambda r: r["label"] == "car")
    assert answer["route"] == "rules" and set(answer["events"]) == cars and not answer["partial"]
    assert answer["answer"].startswith("I could not use: 'number plate'")  # the words that asked it, whole
    assert "cannot tell number plates" in answer["answer"]


def test_alerts_and_what_was_not_an_alert_are_told_apart(store):
    benign = ids_where(store, lambda r: r["verdict"]["verdict"] == "benign")
    alerts = ids_where(store, lambda r: r["verdict"]["verdict"] == "alert")
    assert set(ask(store, "how many events were not alerts?")["events"]) == benign
    assert set(ask(store, "how many false alarms were there?")["events"]) == benign
    assert set(ask(store, "how many real alarms were there?")["events"]) == alerts


def test_a_yes_or_no_question_no_rule_knows_is_answered_yes_or_no(store):
    answer = ask(store, "porch visitors after 5 pm, right?")
    assert answer["value"] is False and answer["events"] == [], answer
    guy = ask(store, "did a guy come by after 2 pm?")
    assert guy["route"] == "rules" and guy["value"] is True and len(guy["events"]) == 3


def test_how_long_the_last_visitor_stayed_is_that_one_visit(store):
    last = ask(store, "how long did the last person on the porch stay?")
    assert last["value"] == 2.1 and len(last["events"]) == 1  # 15:05, not the day's stays added up
    first = ask(store, "how long did the first visitor today stay?")
    assert first["value"] == 40.0  # 03:10


def test_a_summary_is_told_from_the_events_with_what_stands_out(store):
    answer = ask(store, "should I be worried about anything today?")
    today = ids_where(store, lambda r: r["captured_ms"] >= at(4, 0))
    assert answer["route"] == "rules" and not answer["partial"] and set(answer["events"]) == today
    assert "03:10" in answer["answer"]  # the night visit stands out
    summary = ask(store, "recap today for me")
    assert summary["route"] == "rules" and not summary["partial"] and set(summary["events"]) == today
    assert summary["answer"].startswith("From the stored events today (5)") and "Stands out" in summary["answer"]
