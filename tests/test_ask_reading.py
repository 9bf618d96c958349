"""Questions answered as asked (issue 37), against the real SQLite store and the real router: people are counted
as people (one visit stored as several events counts once, a crop the cloud judged empty is nobody), times,
events and alerts as such; every answer says how it read the question; words no rule reads are named; spoken
clock times, "tonight" after midnight, near spellings of the operator's names, terse counts and comparisons."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import cv2
import numpy as np
import pytest
from edgetriage.cloud.ask.clockwords import sun_hours
from edgetriage.cloud.ask.config import AskConfig
from edgetriage.cloud.ask.facts import EventFact
from edgetriage.cloud.ask.openapi import ASK_ANSWER
from edgetriage.cloud.ask.router import Asker
from edgetriage.cloud.ask.rules import normalise
from edgetriage.cloud.ask.visits import count, is_person, people_in, visits_of
from edgetriage.cloud.ask.when import time_window
from edgetriage.cloud.config import AnalyzerConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict

ZONE = ZoneInfo("Europe/Berlin")


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> int:
    return int(datetime(2026, 12, day, hour, minute, second, tzinfo=ZONE).timestamp() * 1000)


NOW = at(4, 21, 30)  # Friday evening, Berlin
NAMES = {"cameras": {"house": ["porch", "back_door", "driveway"]}, "zones": ["front_door"]}


def _jpeg() -> bytes:
    return cv2.imencode(".jpg", np.full((16, 16, 3), 90, np.uint8))[1].tobytes()


def put(store: SQLiteStore, camera: str, label: str, captured: int, description: str, *, track: int = 1,
        people_in_frame: int = 1, dwell_s: float = 1.5, verdict: str = "alert", facts: tuple[str, ...] = (),
        reused: bool = False) -> Event:
    dets = [Detection(label=label, score=0.9, box=(0.1, 0.1, 0.5, 0.9))]
    dets += [Detection(label="person", score=0.8, box=(0.5, 0.1, 0.9, 0.9)) for _ in range(people_in_frame - 1)]
    event = Event(event_id=uuid7(captured), device="house", camera=camera, captured_ms=captured, label=label,
                  score=0.9, track_id=track, detections=dets, phash="0123456789abcdef", reason="detector sure",
                  crop=_jpeg(), dwell_s=dwell_s)
    store.put_event(event, captured)
    store.put_verdict(Verdict(event_id=event.event_id, device="house", camera=camera, label=label, verdict=verdict,
                              confidence=0.8, description=description, model="test",
                              source="cloud_cache" if reused else "llm", created_ms=captured, facts=list(facts)))
    return event


@pytest.fixture
def store(tmp_path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "cloud.db")
    # one person at the porch at 14:40, stored as two events (the track lost and found 20 s later)
    put(s, "porch", "person", at(4, 14, 40, 0), "A person in a dark top.", track=3)
    put(s, "porch", "person", at(4, 14, 40, 20), "A person in a dark top.", track=5, dwell_s=0.4)
    # an empty crop the cloud judged person-free, an hour later
    put(s, "porch", "person", at(4, 15, 50), "No person; only the background.", track=8, verdict="benign",
        facts=("Person: no.",))
    # two people side by side at the back door, one event each (their stays overlap), yesterday and today
    for day in (3, 4):
        put(s, "back_door", "person", at(day, 10, 0, 0), "A person in a grey top.", track=1, people_in_frame=2)
        put(s, "back_door", "person", at(day, 10, 0, 1), "A person in a grey top.", track=2, people_in_frame=2)
    # a reused verdict whose description carries another event's time and place
    put(s, "driveway", "person", at(4, 21, 20), "A person in a grey top at the front door, 10:00.", track=9,
        reused=True)
    yield s
    s.close()


def ask(store: SQLiteStore, question: str, now: int = NOW) -> dict:
    asker = Asker(store, AskConfig(timezone="Europe/Berlin", **NAMES), AnalyzerConfig(backend="vllm"),
                  clock_ms=lambda: now)
    return asyncio.run(asker.ask(question))


def test_how_many_people_counts_people_not_events_and_an_empty_crop_is_nobody(store):
    people = ask(store, "how many people came to the porch today?")
    assert people["value"] == 1  # two events of one visit, and a crop judged person-free
    assert ask(store, "how many events on the porch today?")["value"] == 3
    assert ask(store, "how many alerts on the porch today?")["value"] == 2


def test_two_people_side_by_side_are_two_people_in_one_visit(store):
    assert ask(store, "how many people at the back door today?")["value"] == 2
    assert ask(store, "how many times did someone come to the back door today?")["value"] == 1


def test_every_answer_says_how_it_read_the_question_in_the_camera_s_zone(store):
    said = ask(store, "how many people came to the porch from half past two until four?")
    assert said["reading"] == "People on porch, today 14:30–16:00 (Europe/Berlin, the camera's zone)"
    assert said["value"] == 1
    anywhere = ask(store, "any alerts this morning?")
    assert "the site's zone" in anywhere["reading"] and "today 06:00–12:00" in anywhere["reading"]
    assert "reading" in ASK_ANSWER["required"] and "reading" in ASK_ANSWER["properties"]


def test_a_filter_no_rule_reads_is_named_never_dropped(store):
    said = ask(store, "anyone on the porch without a hi-vis vest today?")
    assert "I could not use: 'without a hi-vis vest'" in said["answer"]
    assert said["unused"] == ["without a hi vis vest"]
    assert "could not use" not in ask(store, "how many people came to the porch today?")["answer"]


@pytest.mark.parametrize(("words", "now", "start", "end"), [
    ("from half past six until eight", NOW, at(4, 18, 30), at(4, 20)),
    ("between quarter to seven and nine this evening", NOW, at(4, 18, 45), at(4, 21)),
    ("after half six", NOW, at(4, 18, 30), None),
    ("since breakfast", NOW, at(4, 7), None),
    ("after we closed at six", NOW, at(4, 18), None),
    ("before the shop opened at nine", NOW, at(4, 0), at(4, 9)),
    ("tonight", at(5, 2), at(4, 18), None),  # after midnight: the night in progress, not the next one
])
def test_clock_times_as_people_say_them(words, now, start, end):
    window = time_window(normalise(words), ZONE, now)
    assert (window.start_ms, window.end_ms) == (start, end)


def test_sunrise_is_where_the_zone_lies():
    rise, fall = sun_hours(datetime(2026, 12, 4, 12, tzinfo=ZONE))
    assert 7.8 < rise < 8.3 and 15.7 < fall < 16.1  # Berlin in early December: about 08:05 and 15:55
    rise, _ = sun_hours(datetime(2026, 6, 21, 12, tzinfo=ZoneInfo("Asia/Tokyo")))
    assert 4.2 < rise < 4.8  # Tokyo at midsummer: about 04:25


def test_near_spellings_of_the_operator_s_names_are_read(store):
    said = ask(store, "how many people at the back dor today?")
    assert said["value"] == 2 and "on back_door" in said["reading"]
    assert "could not use" not in said["answer"]


@pytest.mark.parametrize(("question", "kind"), [("# people porch today", int), ("total events today", int),
                                               ("back door, today: anyone there?", bool)])
def test_the_answer_s_type_follows_the_question(store, question, kind):
    assert isinstance(ask(store, question)["value"], kind)


def test_a_comparison_counts_and_shows_both_sides(store):
    said = ask(store, "were there more people at the back door today than yesterday?")
    assert said["value"] is False and "2 people on back_door today" in said["answer"]
    assert "against 2 on back_door yesterday" in said["answer"]
    more = ask(store, "more people at the back door or the porch today?")
    assert more["value"] is True and more["counts"] == [2, 1]


def test_a_reused_description_never_gives_another_event_s_time_or_place(store):
    said = ask(store, "who was on the driveway today?")
    assert "21:20" in said["answer"] and "10:00" not in said["answer"] and "front door" not in said["answer"]


def fact(at_ms: int, *, label: str = "person", track: int | None = 1, dwell_s: float | None = None,
         in_frame: int = 1, riders: int = 0, person_free: bool = False, camera: str = "porch") -> EventFact:
    return EventFact(event_id=f"e{at_ms}-{track}-{label}", device="house", camera=camera, label=label,
                     captured_ms=at_ms, verdict="alert", description="", classes=(), reason="", dwell_s=dwell_s,
                     track_id=track, in_frame=in_frame, riders=riders, person_free=person_free)


T0 = at(4, 12)


@pytest.mark.parametrize(("gap_ms", "visits"), [(60_000, 1), (60_001, 2)])
def test_events_a_minute_apart_are_one_visit_and_no_more(gap_ms, visits):
    assert len(visits_of([fact(T0, track=1), fact(T0 + gap_ms, track=2)])) == visits


@pytest.mark.parametrize(("gap_ms", "track", "visits"), [
    (600_000, 1, 1), (600_001, 1, 2),  # the same track within 10 minutes: one stay
    (120_000, 2, 2), (120_000, None, 2)])  # another track, or none, two minutes on: another visit
def test_the_same_track_links_a_visit_for_ten_minutes(gap_ms, track, visits):
    first = fact(T0, track=1)
    assert len(visits_of([first, fact(T0 + gap_ms, track=track)])) == visits
    assert len(visits_of([fact(T0, track=None), fact(T0 + 120_000, track=None)])) == 2


def test_who_counts_as_a_person():
    assert is_person(fact(T0)) and not is_person(fact(T0, person_free=True))
    assert is_person(fact(T0, label="bicycle", riders=1)) and not is_person(fact(T0, label="bicycle", riders=0))
    assert is_person(fact(T0, label="motorcycle", riders=1))
    assert not is_person(fact(T0, label="car", riders=1))  # someone in a car is not counted from the car
    assert people_in([fact(T0, label="bicycle", riders=1, in_frame=3)]) == 1  # one rider, whatever the frame


def test_people_at_once_are_overlapping_stays_or_one_frame_s_people():
    touching = [fact(T0, track=1, dwell_s=1.0), fact(T0 + 2000, track=2, dwell_s=1.0)]  # stays meet at T0+1 s
    assert people_in(touching) == 2
    apart = [fact(T0, track=1, dwell_s=1.0), fact(T0 + 2001, track=2, dwell_s=1.0)]
    assert people_in(apart) == 1
    moments = [fact(T0, track=1), fact(T0 + 1, track=2)]  # no dwell: moments, a millisecond apart
    assert people_in(moments) == 1
    assert people_in([fact(T0, in_frame=3)]) == 3 and people_in([fact(T0, in_frame=0)]) == 1
    assert people_in([fact(T0, dwell_s=2.0), fact(T0 + 1000, label="bicycle", riders=1, in_frame=5)]) == 2
    assert people_in([fact(T0, person_free=True)]) == 0


def test_objects_of_a_label_are_counted_per_visit():
    cars = [fact(T0, label="car", track=1, dwell_s=2.0), fact(T0 + 1000, label="car", track=2, dwell_s=2.0),
            fact(T0 + 1500, label="person", track=3, in_frame=4)]
    visit, = visits_of(cars)
    assert visit.count("car") == 2 and visit.count("bicycle") == 0 and visit.count(None) == 4
    assert visits_of([fact(T0, label="car", in_frame=2)])[0].count("car") == 2
    assert visits_of([fact(T0, label="car", in_frame=0)])[0].count("car") == 1  # its own box, whatever the frame


def test_a_visit_that_showed_nobody_is_no_visit_of_people():
    number, shown = count([fact(T0, person_free=True), fact(T0 + 600_000, track=7)], "person")
    assert number == 1 and len(shown) == 1
