"""Questions as people phrase them, by class (issue 37; time words alone: test_ask_when.py): each class is a
family of phrasings written here, not taken from a question set, read by the real rules (time words in the
camera's zone, names from the operator's config) and answered by the real router over the real SQLite store.
A class holds when every phrasing of it reads as an ordinary person means it, or is named as not used: never
dropped."""

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
from edgetriage.cloud.config import AnalyzerConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict

ZONE = ZoneInfo("Europe/Berlin")


def at(day: int, hour: int, minute: int = 0) -> int:
    """Local time on a day of December 2026 (0 and below: the days of November before it)."""
    return int((datetime(2026, 12, 1, hour, minute, tzinfo=ZONE) + timedelta(days=day - 1)).timestamp() * 1000)


NOW = at(4, 21, 30)  # Friday 4 December 2026, evening, Berlin


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



@pytest.mark.parametrize(("question", "reading", "words"), [
    ("did anyone look into the car today?", "People", "car"),  # the label said first is the one counted
    ("any teenagers at the back door today?", "People on back_door", "teenagers"),
    ("did the neighbour come over today?", "People", "neighbour"),
    ("how many people on bikes today?", "People", "bikes"),
])
def test_a_second_label_or_a_role_is_named_and_the_first_counted(store, question, reading, words):
    said = ask(store, question)
    assert said["reading"].startswith(reading) and named(said, words), said


def test_an_animal_someone_has_with_them_is_a_look_not_the_label(store):
    said = ask(store, "anyone on the porch with their dog today?")
    assert said["reading"].startswith("People on porch") and "with a dog" in said["reading"]
    assert said["value"] is False and "could not use" not in said["answer"]


@pytest.mark.parametrize(("question", "reading", "kind"), [
    ("yo any1 at the porch 2nite?", "People on porch, today 18:00–now", bool),
    ("any unknown verdicts today?", "Events judged unknown", bool),
    ("is anyone at the porch right now?", "People on porch, today 21:00–now", bool),
    ("who was the last person at the porch?", "People on porch", str),
])
def test_chat_forms_read_as_what_they_say(store, question, reading, kind):
    said = ask(store, question)
    assert said["reading"].startswith(reading) and isinstance(said["value"], kind) and not said["unused"], said


# -- generated: every combination of a lead, a place, a time and a word no rule reads ----------------------
LEADS = ("how many people", "was anyone", "which people were", "# people", "did somebody come", "any visitors")
PLACES = (("at the porch", "porch"), ("on the back dor", "back_door"), ("on the drive", "driveway"),
          ("at the rear entrance", "back_door"), ("on the drivway cam", "driveway"))
TIMES = ("today", "last night", "from half past six until eight", "between 7 and quarter past 9 this morning",
         "since lunch", "in the past 3 hours", "on thursday night", "around 9ish yesterday", "overnight",
         "the night before last", "this evening after 7", "earlier today")
EXTRAS = ("wearing a hi-vis vest", "with a limp", "in a wheelchair", "holding a clipboard", "who looked lost",
          "on crutches", "with a beard", "in a suit", "smoking", "not in uniform")


def _combinations() -> list[tuple[str, str, str, str, str]]:
    """A fixed spread over the product (every lead, place, time and extra at least once)."""
    out = []
    for i in range(60):
        lead, (place, camera) = LEADS[i % len(LEADS)], PLACES[(i // 2) % len(PLACES)]
        out.append((lead, place, camera, TIMES[(i * 7) % len(TIMES)], EXTRAS[(i * 3) % len(EXTRAS)]))
    return out


@pytest.mark.parametrize(("lead", "place", "camera", "time", "extra"), _combinations())
def test_every_word_of_a_generated_question_is_used_or_named(lead, place, camera, time, extra):
    from edgetriage.cloud.ask.reading import read_back
    from edgetriage.cloud.ask.rules import read
    from edgetriage.cloud.ask.vocab import Vocabulary

    vocabulary = Vocabulary({("house", c) for c in NAMES["cameras"]["house"]}, (), NAMES["zones"], devices={"house"})
    question = f"{lead} {extra} {place} {time}?"
    query = read(question, vocabulary, ZONE, NOW)
    line, phrases = read_back(normalise(question), query, ZONE, NOW)
    assert {c for _, c in query.cameras} == {camera}, line
    assert query.window is not None and "any time" not in line, line
    assert query.label == "person" and query.look is None, line
    named_words = " ".join(phrases).split()
    said = set(normalise(extra).split()) - {"a", "an", "who", "not", "with", "in", "on", "wearing"}
    assert said <= set(named_words), (question, phrases)


def test_times_are_read_in_the_named_camera_s_zone_else_the_site_s_and_the_reading_says_which(store):
    event = Event(event_id=uuid7(at(4, 3)), device="lodge", camera="gate", captured_ms=at(4, 3), label="person",
                  score=0.9, track_id=1, detections=[Detection(label="person", score=0.9, box=(0.1, 0.1, 0.5, 0.9))],
                  phash="0123456789abcdef", reason="detector sure", crop=_jpeg(), dwell_s=2.0)
    store.put_event(event, at(4, 3))
    config = AskConfig(timezone="UTC", timezones={"house": "Europe/Berlin", "lodge": "Asia/Tokyo"},
                       cameras={"house": ["porch", "back_door", "driveway"], "lodge": ["gate"]})
    asker = Asker(store, config, AnalyzerConfig(backend="vllm"), clock_ms=lambda: NOW)
    at_gate = asyncio.run(asker.ask("anyone at the gate in the middle of the night?"))
    assert "(Asia/Tokyo, the camera's zone)" in at_gate["reading"]
    anywhere = asyncio.run(asker.ask("anyone in the middle of the night?"))
    assert "(UTC, the site's zone)" in anywhere["reading"]  # two zones among the devices: the site's own


# -- two times in one question ----------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "said", "apart"), [
    ("how many people this morning and this afternoon?", "today 06:00–18:00", []),
    ("people yesterday and today at the porch?", "yesterday 00:00–now", []),
    ("anyone on monday or tuesday?", "Mon 30 Nov 00:00 – Wed 02 Dec 00:00", []),
    ("anyone between 7 and 9 this morning or between 5 and 7 this evening?", "today 07:00–09:00",
     ["between 5 and 7 this evening"]),
    ("anyone at the porch this morning, and at the back door tonight?", "today 18:00–now", ["this morning"]),
])
def test_a_second_time_is_joined_where_it_meets_the_first_else_named(store, question, said, apart):
    answer = ask(store, question)
    assert said in answer["reading"] and answer["unused"] == apart, answer


@pytest.mark.parametrize(("question", "kind", "unused"), [
    ("how long ago was the last person at the porch?", str, []),
    ("how long has it been since someone was at the back door?", str, []),  # a time since, not a stay
    ("what was the total time people spent on the porch today?", float, []),
    ("when did the first person arrive today and when did the last leave?", str, ["and when did the last leave"]),
])
def test_how_long_since_is_a_time_a_stay_is_a_length_and_a_second_question_is_named(store, question, kind, unused):
    said = ask(store, question)
    assert isinstance(said["value"], kind) and said["unused"] == unused, said


# -- people, visits and events --------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "counted", "value"), [
    ("how many different people came to the porch today?", "People", 2),
    ("how many unique visitors did the porch get today?", "People", 2),
    ("how many person events at the porch today?", "Events of people", 2),
    ("how many arrivals at the porch today?", "Visits", 2),
    ("count the visits to the porch today", "Visits", 2),
    ("how many times did the porch cam go off today?", "Events", 2),
    ("how many clips from the driveway today?", "Events", 2),
])
def test_what_a_count_counts_follows_its_words(store, question, counted, value):
    said = ask(store, question)
    assert said["reading"].startswith(counted + " ") and said["value"] == value and not said["unused"], said


EXCLUDING = ("other than at {}", "except {}", "apart from {}", "not on {}", "excluding {}", "but not {}",
             "anywhere except {}", "besides {}")


@pytest.mark.parametrize(("lead", "place", "camera", "time", "excluding"),
                         [(LEADS[i % len(LEADS)], *PLACES[i % len(PLACES)], TIMES[(i * 5) % len(TIMES)],
                           EXCLUDING[i % len(EXCLUDING)]) for i in range(40)])
def test_a_generated_exclusion_leaves_out_that_camera_and_names_nothing(lead, place, camera, time, excluding):
    from edgetriage.cloud.ask.reading import read_back
    from edgetriage.cloud.ask.rules import read
    from edgetriage.cloud.ask.vocab import Vocabulary

    vocabulary = Vocabulary({("house", c) for c in NAMES["cameras"]["house"]}, (), NAMES["zones"], devices={"house"})
    spot = place.split(" ", 1)[1]  # "the porch", "the back dor"
    question = f"{lead} {excluding.format(spot)} {time}?"
    query = read(question, vocabulary, ZONE, NOW)
    line, phrases = read_back(normalise(question), query, ZONE, NOW)
    assert {c for _, c in query.excluded} == {camera} and not query.cameras, (question, line)
    assert query.window is not None and phrases == [], (question, line, phrases)


COMPARED = ("were there more {w} {a} than {b}?", "fewer {w} {a} than {b}?", "as many {w} {a} as {b}?",
            "more {w} {a} or {b}?", "{w} {a} versus {b}?", "did {a} get more {w} than {b}?")
SIDES = (("at the porch today", "at the back door today"), ("today", "yesterday"),
         ("this morning", "this afternoon"), ("on the drive today", "at the front step today"),
         ("in the last 3 hours", "yesterday evening"))


@pytest.mark.parametrize(("form", "what", "a", "b"),
                         [(COMPARED[i % len(COMPARED)], ("people", "alerts", "events")[i % 3], *SIDES[i % len(SIDES)])
                          for i in range(30)])
def test_a_generated_comparison_counts_both_sides_and_shows_both(store, form, what, a, b):
    said = ask(store, form.format(w=what, a=a, b=b))
    assert " vs " in said["reading"] and len(said["counts"]) == 2, said
    first, second = said["counts"]
    assert f"{first} " in said["answer"] and f"against {second}" in said["answer"] and not said["unused"], said


@pytest.mark.parametrize(("question", "counted"), [
    ("how many genuine alerts today?", "Alerts"), ("how many real alarms today?", "Alerts"),
    ("any non-alerts today?", "Events judged benign"), ("how many things were flagged today?", "Alerts"),
    ("how many warnings today?", "Alerts"), ("how many events were marked benign today?", "Events judged benign"),
    ("how many escalations today?", "Events"),  # every stored event was escalated by its device
])
def test_verdict_words_as_people_say_them(store, question, counted):
    said = ask(store, question)
    assert said["reading"].startswith(counted + " on") and not said["unused"], said


def test_a_camera_name_run_together_with_cam_is_that_camera(store):
    said = ask(store, "how many people on the porchcam today?")
    assert said["reading"].startswith("People on porch,") and said["value"] == 2 and not said["unused"], said


# -- the lead words choose the answer; words of who someone is are named, never a reason to guess ----------------
@pytest.mark.parametrize(("question", "value", "words"), [
    ("how many delivery drivers came to the porch today?", 2, "delivery drivers"),  # a number, the role named
    ("how many times did the same person come back to the porch today?", 2, "same"),
    ("how many strangers came to the back door today?", 1, "strangers"),
    ("how many times did a car come speeding up the driveway today?", 1, "speeding"),  # unstored, still a count
    ("did a stranger come to the back door today?", True, "stranger"),
    ("did my son come home today?", True, "my son"),
    ("did more dog walkers come to the driveway today than yesterday?", True, "dog"),  # people, "dog" named
    ("did a stranger try the back door handle today?", True, "back door handle"),  # the handle of the back door
])
def test_a_question_is_answered_as_its_lead_words_ask_and_the_rest_named(store, question, value, words):
    said = ask(store, question)
    assert said["value"] == value and said["route"] == "rules" and named(said, words), said


@pytest.mark.parametrize(("question", "value"), [
    ("since noon, who was first at the porch?", "2026-12-04 13:00"),  # "who" of a first: a person, not open
    ("how many visits to the driveway today?", 2),  # a car's visit is a visit
    ("how many person events on the driveway today?", 1),
    ("how long were people on the porch in the last 14 hours?", 4.0),  # "the last 14 hours" picks no one stay
    ("porch 9ish this morning?", True),  # a place and a time asked: was anything there
    ("back door 3ish this afternoon?", False),
    ("how many events today came back as benign?", 1),
    ("how many events today came back as unknown?", 0),
    ("how many cars did not trigger an alert today?", 1),
    ("leaving cars out, how many driveway events today?", 1),
    ("same number of people at the porch and the back door today?", False),
    ("how many people wearing dark clothes came to the porch today?", 1),
])
def test_lead_words_verdicts_and_left_out_labels_read_as_said(store, question, value):
    said = ask(store, question)
    assert said["value"] == value and "could not use" not in said["answer"], said


def test_a_yes_no_asked_the_negative_way_says_the_facts_plainly(store):
    some = ask(store, "nobody came to the back door today, right?")
    none = ask(store, "did no one come to the porch after 8 tonight?")
    assert some["value"] is True and some["answer"].startswith("Not so, 1 person"), some  # never "Yes, nobody"
    assert none["value"] is False and none["answer"].startswith("Right, none"), none


def test_a_clock_time_in_a_clause_of_its_own_narrows_the_day_said(store):
    said = ask(store, "how many people yesterday, before midnight?")  # not yesterday and today up to midnight
    assert "yesterday 00:00–24:00" in said["reading"] and said["value"] == 0, said


@pytest.mark.parametrize(("question", "value"), [
    ("who came to the porch first today?", "2026-12-04 09:00"),  # a who-question with a pick: its time
    ("who came to the porch last today?", "2026-12-04 13:00"),
])
def test_who_came_first_or_last_is_a_time(store, question, value):
    said = ask(store, question)
    assert said["value"] == value and said["route"] == "rules", said


def test_who_came_in_the_last_hours_is_a_list_not_a_pick(store):
    said = ask(store, "who came to the porch in the last 14 hours?")
    assert isinstance(said["value"], list) and len(said["value"]) == 2, said


# -- "was it quiet?": a yes/no whose yes is that nothing was seen ------------------------------------------
@pytest.mark.parametrize(("question", "seen"), [
    ("Was the back door quiet last night?", False), ("was the back door quiet this morning?", True),
    ("was the driveway quiet today?", True),
    ("nothing happened on the porch today?", True), ("all clear at the back door this morning?", True),
    ("no activity on the driveway this afternoon?", True), ("was there no movement at the back door today?", True),
    ("did the porch stay quiet overnight?", False), ("was it calm on the porch yesterday?", False),
    ("nothing to report from the porch last night?", False), ("everything quiet on the driveway this evening?", False),
    ("did nothing happen at the back door this morning?", True), ("was the porch empty this morning?", True),
    ("was the driveway deserted last night?", False),
])
def test_quiet_is_yes_only_when_nothing_was_seen(store, question, seen):
    said = ask(store, question)
    assert said["value"] is seen and said["answer"].startswith("No, not quiet:" if seen else "Yes, quiet:"), said
    assert "yes only if none" in said["reading"] and "could not use" not in said["answer"], said


# -- "how many more ... than ...": a number, the difference, both counts shown --------------------------------
@pytest.mark.parametrize(("question", "value", "counts", "lead"), [
    ("How many more people came today than yesterday?", 4, [4, 0], "4 more"),
    ("how many people more at the porch than at the back door today?", 1, [2, 1], "1 more"),
    ("how many fewer people came yesterday than today?", 4, [0, 4], "4 fewer"),
    ("how many fewer people on the porch than the driveway today?", -1, [2, 1], "None fewer, 1 more"),
    ("how many more cars than people today?", -3, [1, 4], "None more, 3 fewer"),
    ("how many more people on the back door than on the driveway today?", 0, [1, 1], "None"),
])
def test_how_many_more_is_the_difference_with_both_counts(store, question, value, counts, lead):
    said = ask(store, question)
    assert said["value"] == value and said["counts"] == counts and said["answer"].startswith(lead + ":"), said
    assert f"the difference of {counts[0]} and {counts[1]}" in said["reading"] and " vs " in said["reading"]
    assert all(f"{n} " in said["answer"] for n in counts) and "could not use" not in said["answer"], said


# -- superlatives over groups: each group counted, the most (fewest) named, never a plain total ---------------
@pytest.mark.parametrize(("question", "per", "value", "lead"), [
    ("Which camera saw the most people today?", "People per camera", "porch", "Most people today: porch, 2"),
    ("busiest camera today?", "Events per camera", ["driveway", "porch"], "Most events today: driveway and porch, 2"),
    ("the camera with the most cars today", "Cars per camera", "driveway", "Most cars today: driveway, 1"),
    ("where did most people come today?", "People per camera", "porch", "Most people today: porch, 2"),
    ("which camera was quietest today?", "Events per camera", "back_door", "Fewest events today: back_door, 1"),
    ("which camera had the fewest alerts yesterday", "Alerts per camera", ["back_door", "driveway", "porch"],
     "Fewest alerts yesterday: back_door and driveway and porch, 0 each"),  # a camera that saw nothing counts
    ("which zone was busiest today?", "Events per zone", "front_door", "Most events today: front_door, 1"),
    ("which hour had the most people this morning?", "People per hour",
     ["09:00–10:00", "10:00–11:00", "11:00–12:00"], "Most people this morning: 09:00–10:00 and"),
    ("what day this week had the most visits?", "Visits per day", "Fri 04 Dec", "Most visits this week: Fri 04 Dec, 5"),
    ("most active hour today", "Events per hour", "", "Most events today: "),
    ("how many people did the busiest camera see today?", "People per camera", 2, "Most people today: porch, 2"),
    ("which of the cameras saw the most people today?", "People per camera", "porch", "Most people today: porch, 2"),
    ("when was it busiest today?", "Events per hour", "", "Most events today: 09:00–10:00 and"),  # never the last
    ("which hour was quietest yesterday?", "Events per hour", "", "Fewest events yesterday: 24 hours, 0 each."),
    ("what's the busiest time of day at the porch?", "Events per hour", ["09:00–10:00", "13:00–14:00"],
     "Most events on porch: 09:00–10:00 and 13:00–14:00, 1 each"),
])
def test_a_superlative_counts_each_group_and_names_the_most(store, question, per, value, lead):
    said = ask(store, question)
    assert said["reading"].startswith(per + ", ") and said["answer"].startswith(lead), said
    assert value == "" or said["value"] == value, said
    assert "could not use" not in said["answer"] and said["group_counts"], said
    assert all(f"{k} {n}" in said["answer"] or f"{n} each" in said["answer"] or f"{k}, {n}" in said["answer"]
               for k, n in said["group_counts"].items()), said  # every group's count shown


@pytest.mark.parametrize("question", ["what was the most recent alert?", "at most how many people came today?",
                                      "when did the most recent person come?",
                                      "which camera saw more people today, the porch or the driveway?"])
def test_most_recent_at_most_and_a_comparison_are_no_superlative_over_groups(store, question):
    assert "per camera" not in ask(store, question)["reading"]


@pytest.mark.parametrize(("question", "per", "value", "shown"), [
    ("how many people per camera today?", "People per camera", {"porch": 2, "back_door": 1, "driveway": 1},
     "People per camera today: porch 2, back_door 1, driveway 1 (4 in all)."),
    ("people at each camera yesterday?", "People per camera", {"back_door": 0, "driveway": 0, "porch": 0},
     "People per camera yesterday: back_door 0, driveway 0, porch 0 (0 in all)."),  # a camera that saw none: 0
    ("how many events by hour today", "Events per hour", None,
     "Events per hour today: 09:00–10:00 1, 10:00–11:00 1, 11:00–12:00 1, 12:00–13:00 1, 13:00–14:00 1 (5 in all)."),
    ("alerts broken down by zone today", "Alerts per zone", {"front_door": 1},
     "Alerts per zone today: front_door 1, in no zone 3 (4 in all)."),
])
def test_a_split_per_group_shows_every_group_s_count_and_the_whole(store, question, per, value, shown):
    said = ask(store, question)
    assert said["reading"].startswith(per + ", ") and said["answer"] == shown, said
    assert value is None or said["value"] == value, said


def test_a_split_no_group_here_is_named_never_dropped(store):
    said = ask(store, "how many people per device today")
    assert said["value"] == 4 and named(said, "per device"), said


@pytest.mark.parametrize(("question", "value", "lead"), [
    # a yes/no superlative about a named camera: every camera counted, yes when the named one is among the most
    ("did the porch see the most people today?", True, "Yes: most people today: porch, 2"),
    ("was the porch the busiest camera today?", True, "Yes: most events today: driveway and porch, 2 each"),
    ("was the driveway the quietest today?", False, "No: fewest events today: back_door, 1"),
    ("did the back door have the most people today?", False, "No: most people today: porch, 2"),
    # which cameras saw some, or none: the cameras, each with its count, never a list of events
    ("which cameras saw people today?", ["porch", "back_door", "driveway"],
     "Cameras that saw people today: porch 2, back_door 1, driveway 1."),
    ("which camera saw nobody today?", [], "Cameras with no people today: none (the others: porch 2"),
    ("which camera saw no cars today?", ["back_door", "porch"], "Cameras with no cars today: back_door, porch"),
    ("which zones had nothing yesterday?", ["front_door"], "Zones with no events yesterday: front_door."),
])
def test_a_superlative_or_a_which_about_cameras_answers_about_the_cameras(store, question, value, lead):
    said = ask(store, question)
    assert said["value"] == value and said["answer"].startswith(lead), said
    assert "could not use" not in said["answer"] and "per camera" in said["reading"] or "per zone" in said["reading"]


@pytest.mark.parametrize(("question", "value"), [
    ("how many people in a grey top came to the porch today?", 1),  # a top is clothing, "came" no "cam"
    ("when did the last person in a grey top come to the back door?", "2026-12-04 10:00"),
])
def test_clothing_called_a_top_is_no_superlative(store, question, value):
    said = ask(store, question)
    assert said["value"] == value and " per " not in said["reading"], said


@pytest.mark.parametrize("question", ["when did the biggest car come?", "where was the most recent person seen?",
                                      "was the porch the least bit busy today?"])
def test_a_size_or_a_recency_is_no_superlative_over_groups(store, question):
    assert " per " not in ask(store, question)["reading"]
