"""Questions as people phrase them, by class (issue 37): each class is a family of phrasings written here, not
taken from a question set, read by the real rules (time words in the camera's zone, names from the operator's
config) and, where the store matters, answered by the real router over the real SQLite store. A class holds
when every phrasing of it reads as an ordinary person means it, or is named as not used: never dropped."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import cv2
import numpy as np
import pytest
from edgetriage.cloud.ask.config import AskConfig
from edgetriage.cloud.ask.router import Asker
from edgetriage.cloud.ask.rules import normalise
from edgetriage.cloud.ask.when import time_window
from edgetriage.cloud.config import AnalyzerConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict

ZONE = ZoneInfo("Europe/Berlin")


def at(day: int, hour: int, minute: int = 0) -> int:
    """Local time on a day of December 2026 (0 and below: the days of November before it)."""
    return int((datetime(2026, 12, 1, hour, minute, tzinfo=ZONE) + timedelta(days=day - 1)).timestamp() * 1000)


NOW = at(4, 21, 30)  # Friday 4 December 2026, evening, Berlin
HOUR = 3_600_000


def window(words: str, now: int = NOW, zone: ZoneInfo = ZONE) -> tuple[int | None, int | None] | None:
    found = time_window(normalise(words), zone, now)
    return None if found is None else (found.start_ms, found.end_ms)


# -- time words ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("words", "start", "end"), [
    ("from half past six until eight", at(4, 18, 30), at(4, 20)),
    ("between 7 and quarter past 9 this morning", at(4, 7), at(4, 9, 15)),
    ("between half seven and eight this morning", at(4, 7, 30), at(4, 8)),
    ("from 7 till half 8 yesterday", at(3, 7), at(3, 8, 30)),
    ("10-11am", at(4, 10), at(4, 11)),
    ("9 to 5", at(4, 9), at(4, 17)),
    ("from noon to 2", at(4, 12), at(4, 14)),
    ("from 6pm until midnight", at(4, 18), None),  # still running at 21:30
    ("between 10pm and 2am", at(3, 22), at(4, 2)),  # asked at 21:30: the last such night
    ("between 11 and 1 last night", at(3, 23), at(4, 1)),
])
def test_a_range_whose_ends_are_clock_words_is_that_range(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("around 9ish yesterday", at(3, 8, 30), at(3, 9, 30)),
    ("at nineish yesterday", at(3, 8, 30), at(3, 9, 30)),
    ("at quarter to seven", at(4, 18, 15), at(4, 19, 15)),  # a bare 6:45 said at night: the evening's
    ("at noon", at(4, 11, 30), at(4, 12, 30)),
    ("around midnight", at(3, 23, 30), at(4, 0, 30)),  # the last midnight, not tonight's still to come
    ("at lunchtime yesterday", at(3, 12), at(3, 14)),
])
def test_a_clock_moment_said_in_words_is_half_an_hour_either_side(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start"), [
    ("since breakfast", at(4, 7)),
    ("since lunch", at(4, 12)),
    ("since dinner", at(4, 19)),
    ("since 2", at(4, 14)),  # a bare hour at 21:30: the afternoon's, as people say it
    ("since 6 o'clock", at(4, 18)),
    ("since 9", at(4, 9)),
    ("since quarter past 8 this morning", at(4, 8, 15)),
    ("since midnight", at(4, 0)),
    ("since last night", at(3, 18)),
])
def test_since_a_moment_runs_to_now(words, start):
    assert window(words) == (start, None)


@pytest.mark.parametrize(("words", "now", "start", "end"), [
    ("tonight", at(5, 2), at(4, 18), None),  # asked after midnight: the night in progress
    ("tonight", NOW, at(4, 18), None),
    ("last night", NOW, at(3, 18), at(4, 6)),
    ("overnight", NOW, at(3, 22), at(4, 6)),
    ("the night before last", NOW, at(2, 18), at(3, 6)),
    ("on thursday night", NOW, at(3, 18), at(4, 6)),  # a weekday night runs into the next morning
    ("wednesday night", NOW, at(2, 18), at(3, 6)),
    ("last evening", NOW, at(3, 18), at(4, 0)),
    ("yesterday eve", NOW, at(3, 18), at(4, 0)),
    ("from yesterday evening to this morning", NOW, at(3, 18), at(4, 12)),
    ("from thursday night until now", NOW, at(3, 18), None),
])
def test_nights_and_evenings(words, now, start, end):
    assert window(words, now) == (start, end)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("earlier today", at(4, 0), None),
    ("so far", at(4, 0), None),
    ("in the past 45 minutes", NOW - HOUR * 3 // 4, None),
    ("in the last 3 hours", NOW - 3 * HOUR, None),
    ("within the hour", NOW - HOUR, None),
    ("in the last couple of hours", NOW - 2 * HOUR, None),
    ("this weekend", at(-2, 0), at(0, 0)),  # on a Friday: the last weekend, Saturday and Sunday
    ("on the 3rd", at(3, 0), at(4, 0)),
    ("on the morning of the 3rd", at(3, 6), at(3, 12)),
    ("around sunset", None, None),  # checked below: the sun's hour where the zone lies
])
def test_spans_and_dates(words, start, end):
    if words == "around sunset":
        start_ms, end_ms = window(words)
        assert at(4, 15, 20) < start_ms < at(4, 15, 40) and end_ms - start_ms == HOUR  # Berlin, early December
        return
    assert window(words) == (start, end)


def test_times_are_read_in_the_zone_they_are_asked_in():
    tokyo = ZoneInfo("Asia/Tokyo")
    noon_tokyo = int(datetime(2026, 12, 4, 12, tzinfo=tokyo).timestamp() * 1000)
    start, end = window("in the middle of the night", noon_tokyo, tokyo)
    assert start == int(datetime(2026, 12, 4, 0, tzinfo=tokyo).timestamp() * 1000)
    assert end == int(datetime(2026, 12, 4, 6, tzinfo=tokyo).timestamp() * 1000)


# -- the store: a small site, asked through the real router ----------------------------------------------
NAMES = {"cameras": {"house": ["porch", "back_door", "driveway"]}, "zones": ["front_door"]}


def _jpeg() -> bytes:
    return cv2.imencode(".jpg", np.full((16, 16, 3), 90, np.uint8))[1].tobytes()


def put(store: SQLiteStore, camera: str, label: str, captured: int, description: str, zones: tuple[str, ...] = (),
        verdict: str = "alert") -> None:
    event = Event(event_id=uuid7(captured), device="house", camera=camera, captured_ms=captured, label=label,
                  score=0.9, track_id=1, detections=[Detection(label=label, score=0.9, box=(0.1, 0.1, 0.5, 0.9))],
                  phash="0123456789abcdef", reason="detector sure", crop=_jpeg(), dwell_s=2.0, zones=list(zones))
    store.put_event(event, captured)
    store.put_verdict(Verdict(event_id=event.event_id, device="house", camera=camera, label=label, verdict=verdict,
                              confidence=0.8, description=description, model="test", source="llm",
                              created_ms=captured))


@pytest.fixture
def store(tmp_path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "cloud.db")
    put(s, "porch", "person", at(4, 9), "A person in a grey top with a bag.", zones=("front_door",))  # one visit each,
    put(s, "porch", "person", at(4, 13), "A person in a dark top.")  # hours apart
    put(s, "back_door", "person", at(4, 10), "A person in a grey top.")
    put(s, "driveway", "person", at(4, 11), "A person in a blue jacket.")
    put(s, "driveway", "car", at(4, 12), "A car, parked.", verdict="benign")
    yield s
    s.close()


def ask(store: SQLiteStore, question: str, now: int = NOW) -> dict:
    asker = Asker(store, AskConfig(timezone="Europe/Berlin", **NAMES), AnalyzerConfig(backend="vllm"),
                  clock_ms=lambda: now)
    return asyncio.run(asker.ask(question))


def named(answer: dict, words: str) -> bool:
    """The answer names `words` after "could not use"."""
    at_ = answer["answer"].find("could not use")
    return at_ >= 0 and words in answer["answer"][at_:].lower().replace("-", " ")


# -- negation and exclusion -------------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "people", "excluded"), [
    ("how many people other than at the porch today?", 2, "except porch"),
    ("how many people today except the driveway?", 3, "except driveway"),
    ("how many people apart from the drive way today?", 3, "except driveway"),
    ("# people not on the back door today", 3, "except back_door"),
    ("how many people excluding the porch and the back door today?", 1, "except back_door and porch"),
    ("how many people not in the front door zone today?", 3, "outside zone front_door"),
    ("how many people outside the front door zone today?", 3, "outside zone front_door"),
])
def test_an_excluded_place_is_left_out_and_the_reading_says_so(store, question, people, excluded):
    said = ask(store, question)
    assert said["value"] == people and excluded in said["reading"], said
    assert "could not use" not in said["answer"]


@pytest.mark.parametrize(("question", "words"), [
    ("how many people not carrying a bag today?", "not carrying a bag"),
    ("how many people without a bag today?", "without a bag"),
    ("how many people not in a grey top today?", "not in a grey top"),
    ("how many people not wearing hi-vis today?", "not wearing hi vis"),
])
def test_a_negated_look_is_never_applied_as_the_look_and_is_named(store, question, words):
    said = ask(store, question)
    assert said["value"] == 4, said  # all of today's people: the look is not applied either way
    assert named(said, words), said["answer"]


@pytest.mark.parametrize(("question", "value", "words"), [
    ("any non-person events today?", True, "non person"),
    ("any cars but no people on the driveway today?", True, "no people"),
    ("how many events besides people today?", 5, "besides people"),
])
def test_a_negated_label_is_named_and_the_rest_answered(store, question, value, words):
    said = ask(store, question)
    assert said["value"] == value and named(said, words), said


@pytest.mark.parametrize("question", ["nobody at the porch today?", "was there no one on the porch today?",
                                      "any events that were not alerts today?", "was anyone at the porch or not?"])
def test_words_that_only_look_negative_negate_nothing(store, question):
    said = ask(store, question)
    assert said["value"] is True and "could not use" not in said["answer"] and "except" not in said["reading"], said


# -- names: near spellings and the usual other words for the operator's own names ------------------------
@pytest.mark.parametrize(("question", "where", "people"), [
    ("how many people at the prch today?", "on porch", 2),
    ("how many people at the front step today?", "on porch", 2),
    ("how many people on the doorstep today?", "on porch", 2),
    ("how many people on the drive today?", "on driveway", 1),
    ("how many people on the drivway today?", "on driveway", 1),
    ("how many people at the back entrance today?", "on back_door", 1),
    ("how many people at the rear door today?", "on back_door", 1),
    ("how many people in the front-door zone today?", "in zone front_door", 1),
])
def test_a_near_spelling_or_another_word_for_a_configured_name_is_that_name(store, question, where, people):
    said = ask(store, question)
    assert where in said["reading"] and said["value"] == people and "could not use" not in said["answer"], said


@pytest.mark.parametrize(("question", "words"), [("how many people at the door today?", "door"),
                                                 ("how many people in the garden today?", "garden"),
                                                 ("how many people at the side gate today?", "gate")])
def test_a_place_no_configured_name_is_near_is_named_and_never_guessed(store, question, words):
    said = ask(store, question)
    assert said["value"] == 4 and "every camera" in said["reading"] and named(said, words), said


# -- every word used or named ------------------------------------------------------------------------------
@pytest.mark.parametrize("question", [
    "how many people came to the porch today?",
    "do you know if anyone came to the back door this morning?",
    "I want to know how many cars were on the drive yesterday",
    "didn't anyone come to the porch today?",
    "was anyone at the porch or not?",
    "any alerts on the back door since lunch?",
    "no. of people at the front step between 9 and 10 this morning",
    "how long did the person at the back door stay today?",
    "total events except the driveway today",
    "please list the people who came round to the porch in the last 3 hours, thanks",
])
def test_a_question_every_word_of_which_is_read_names_nothing(store, question):
    said = ask(store, question)
    assert said["unused"] == [] and "could not use" not in said["answer"], said


@pytest.mark.parametrize(("question", "words"), [
    ("was the person at the porch someone we know?", "know"),
    ("anyone at the back today?", "the back"),
    ("how many people in the front yard today?", "front yard"),
    ("how many people at the side gate today?", "side gate"),
    ("any people within the fortnight before christmas?", "christmas"),
    ("anyone not at home today?", "not at home"),
    ("how many tall people came to the porch today?", "tall"),
    ("any delivery drivers in a hurry today?", "hurry"),
    ("how many people at the porch last spring?", "spring"),
    ("any people around teatime?", "teatime"),
])
def test_a_word_no_rule_reads_is_named_never_dropped(store, question, words):
    said = ask(store, question)
    assert named(said, words), said


# -- the answer's type follows the question; comparisons count both sides -------------------------------
@pytest.mark.parametrize(("question", "kind"), [
    ("total people today", int), ("no. of people at the porch today", int), ("# of alerts today", int),
    ("number of cars today", int), ("people count today", int), ("how many people today in total?", int),
    ("any people seen today?", bool), ("was there anyone at the back door today", bool),
    ("did someone come to the porch today", bool), ("has anyone been on the driveway today", bool),
    ("didn't anyone come to the porch today?", bool), ("nobody at the porch today?", bool),
    ("which people came to the porch today?", list), ("list the people at the porch today", list),
    ("who came to the back door today?", list), ("show me the alerts today", list),
    ("when did someone come to the porch today?", str), ("what time was the first person today?", str),
    ("how long did the person at the back door stay today?", float),
])
def test_the_answer_s_type_follows_the_question_s_first_words(store, question, kind):
    said = ask(store, question)
    assert isinstance(said["value"], kind) and said["reading"], said


@pytest.mark.parametrize(("question", "value", "counts", "lead"), [
    ("more people at the porch today than at the back door?", True, [2, 1], "Yes"),
    ("were there fewer people on the driveway than at the porch today?", True, [1, 2], "Yes"),
    ("porch vs back door today: which had more people?", True, [2, 1], "On porch"),
    ("which camera saw fewer people today, the porch or the driveway?", False, [2, 1], "On driveway"),
    ("people today versus yesterday?", None, [4, 0], "Compared"),
    ("as many people at the back door as on the driveway today?", True, [1, 1], "Yes"),
])
def test_a_comparison_counts_both_sides_and_shows_both(store, question, value, counts, lead):
    said = ask(store, question)
    assert said["value"] is value and said["counts"] == counts and said["answer"].startswith(lead), said
    assert " vs " in said["reading"] and "could not use" not in said["answer"]
