"""Issue 37, classes of question words that were dropped without a word: two or more cameras left out ("not
counting the porch or the back door"), another label left out of a count of people ("not counting the cars"),
content words no rule reads ("rang the bell", "my son"), and the answer's kind or range from terse or relative
words ("porch visits since 6pm", "latest car before 6 this evening", "how long was the porch busy"). Each class
is a family of phrasings written here (not a question set's), read by the real rules with the operator's names
and, where a value is checked, answered by the real router over the real SQLite store (test_ask_phrasings)."""

from __future__ import annotations

import itertools

import pytest
from edgetriage.cloud.ask.reading import model_unread, read_back
from edgetriage.cloud.ask.rules import normalise, read
from edgetriage.cloud.ask.vocab import Vocabulary
from test_ask_phrasings import NAMES, NOW, ZONE, ask, named, store  # noqa: F401 (store: a fixture)

VOCABULARY = Vocabulary({("house", c) for c in NAMES["cameras"]["house"]}, (), NAMES["zones"], devices={"house"})


def reading(question: str):
    query = read(question, VOCABULARY, ZONE, NOW)
    line, phrases = read_back(normalise(question), query, ZONE, NOW)
    return query, line, phrases


# -- two or more cameras left out ----------------------------------------------------------------------------
MARKERS = ("not counting {}", "not including {}", "except {}", "excluding {}", "apart from {}", "other than {}",
           "ignoring {}", "leaving out {}", "besides {}", "but not {}", "except for {}", "excluding both {}",
           "except those at {}", "aside from {}", "minus {}", "disregarding {}")
PAIRS = ((("the porch", "the back door"), {"porch", "back_door"}),
         (("the driveway", "porch"), {"driveway", "porch"}),
         (("the back door", "the drive"), {"back_door", "driveway"}),
         (("the porch camera", "the driveway camera"), {"porch", "driveway"}))
JOINS = ("{} or {}", "{} and {}", "{}, {}")
LEADS = ("how many people came today {}?", "how many visits {} today?", "count the people {} yesterday",
         "anyone today {}?")


@pytest.mark.parametrize(("marker", "pair", "join", "lead"), [
    (m, PAIRS[i % len(PAIRS)], JOINS[i % len(JOINS)], LEADS[i % len(LEADS)])
    for i, m in enumerate(itertools.islice(itertools.cycle(MARKERS), 48))])
def test_several_cameras_left_out_are_all_left_out_and_none_is_read_as_asked(marker, pair, join, lead):
    (first, second), cameras = pair
    question = lead.format(marker.format(join.format(first, second)))
    query, line, phrases = reading(question)
    assert {c for _, c in query.excluded} == cameras and not query.cameras, (question, line)
    assert phrases == [], (question, phrases)


@pytest.mark.parametrize(("question", "cameras"), [
    ("how many people came today, porch and back door excluded?", {"porch", "back_door"}),
    ("how many people today with the porch and the driveway left out?", {"porch", "driveway"}),
    ("how many people today, the porch and back door not counted?", {"porch", "back_door"}),
    ("how many people today, the drive and the porch not included?", {"porch", "driveway"}),
    ("how many people came, excluding the porch camera as well as the back door?", {"porch", "back_door"}),
])
def test_cameras_left_out_said_after_them_are_left_out(question, cameras):
    query, line, phrases = reading(question)
    assert {c for _, c in query.excluded} == cameras and not query.cameras and phrases == [], (question, line)


@pytest.mark.parametrize("question", ["was anyone ignored at the porch today?",
                                      "did anyone get ignored on the porch today?"])
def test_a_leaving_out_word_that_leaves_out_nothing_said_after_it_is_never_an_exclusion(question):
    query, line, phrases = reading(question)
    assert not query.excluded and phrases, (question, line)


@pytest.mark.parametrize(("question", "people"), [
    ("how many people today not counting the porch or the back door?", 1),
    ("how many people today except those at the driveway and the porch?", 1),
    ("how many people today, ignoring the porch and the driveway?", 1),
    ("how many people today leaving out the back door and the drive?", 2),
])
def test_several_cameras_left_out_count_the_rest(store, question, people):  # noqa: F811
    said = ask(store, question)
    assert said["value"] == people and "except" in said["reading"] and not said["unused"], said


# -- another label left out of a count ------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "shown"), [
    ("how many people today not counting the cars?", "cars left out"),
    ("how many people today, ignoring cars?", "cars left out"),
    ("how many people came today excluding vehicles?", "cars left out"),
    ("how many people today apart from the dogs?", "dogs left out"),
    ("how many visitors today other than cars?", "cars left out"),
    ("how many people today, leaving out the bikes?", "bicycles left out"),
    ("anyone today except cars?", "cars left out"),
])
def test_another_label_left_out_of_a_count_of_people_is_used_and_shown(store, question, shown):  # noqa: F811
    said = ask(store, question)
    assert shown in said["reading"] and not said["unused"], said
    assert said["value"] in (4, True), said  # every person today: no person is a car


@pytest.mark.parametrize(("question", "words"), [
    ("how many people today not counting kids?", "not counting kids"),  # a kind of person: not told apart
])
def test_a_label_left_out_that_the_count_cannot_apply_is_named(store, question, words):  # noqa: F811
    assert named(ask(store, question), words)


@pytest.mark.parametrize(("question", "left", "shown"), [
    ("how many events today not counting the cars?", "car", "cars left out"),
    ("how many events besides people today?", "person", "people left out"),
    ("ignoring cars, how many detections today?", "car", "cars left out"),
])
def test_a_label_left_out_of_events_of_every_label_is_left_out(store, question, left, shown):  # noqa: F811
    said, every = ask(store, question), ask(store, "how many events today?")
    of_label = ask(store, f"how many {left} events today?")
    assert shown in said["reading"] and not said["unused"], said
    assert said["value"] == every["value"] - of_label["value"] and of_label["value"] > 0, said


# -- content words no rule reads: named, on every route --------------------------------------------------------
@pytest.mark.parametrize(("question", "words"), [
    ("who rang the bell today?", ("rang", "bell")),
    ("did anyone ring the doorbell today?", ("ring", "doorbell")),
    ("who knocked at the back door today?", ("knocked",)),
    ("did anyone knock today?", ("knock",)),
    ("did my son come home today?", ("son",)),
    ("how many delivery drivers came today?", ("delivery drivers",)),
    ("did the postman come to the porch today?", ("postman",)),
    ("was the gardener here today?", ("gardener",)),
    ("did anyone call today?", ("call",)),
    ("was the dog walker at the porch today?", ("walker",)),
    ("did someone steal a parcel from the porch?", ("steal",)),
    ("how many people came before the shop opened?", ("before the shop opened",)),
    ("any people after the office closed?", ("after the office closed",)),
])
def test_content_words_no_rule_reads_are_named(question, words):
    _, line, phrases = reading(question)
    said = " ".join(phrases)
    assert all(w in said for w in words), (question, phrases)
    assert all(w in " ".join(model_unread(phrases)) for w in words), (question, "the model route too")


@pytest.mark.parametrize("question", ["how many times did the alarm ring today?",
                                      "how often did the porch camera fire today?",
                                      "did the alert go off on the porch today?"])
def test_an_alarm_s_own_verbs_are_read_with_it(question):
    assert reading(question)[2] == [], question


def test_the_words_that_make_a_question_open_are_left_to_the_model():
    assert model_unread(["describe", "explain", "loitering", "parcel", "clothes", "keep"]) == []
    assert model_unread(["delivery drivers", "son", "who rang"]) == ["delivery drivers", "son", "who rang"]


# -- the kind of answer and its range from terse and relative words ------------------------------------------
@pytest.mark.parametrize("question", ["porhc visits since 6am", "porch visits since 6am?", "prch visits since 6am",
                                      "visits to the porhc since 6am", "number of porhc visits since 6am",
                                      "porch arrivals since 6am"])
def test_terse_visits_with_a_near_spelling_are_counted(store, question):  # noqa: F811
    said = ask(store, question)
    assert said["value"] == 2 and said["reading"].startswith("Visits on porch"), said


@pytest.mark.parametrize(("question", "end"), [
    ("latest car before 6 this evening", 18), ("the last car before 6pm this evening?", 18),
    ("most recent car before 6 in the evening", 18), ("last car before 18:00 this evening", 18),
])
def test_before_a_clock_of_a_part_of_the_day_runs_from_the_day_s_start(store, question, end):  # noqa: F811
    said = ask(store, question)
    assert said["window"] is not None and "today 00:00–" in said["reading"], said
    assert f"{end}:00" in said["reading"] and said["value"] is not None and "12:00" in said["answer"], said


def test_before_a_clock_inside_a_part_of_the_day_is_that_part_up_to_the_clock(store):  # noqa: F811
    said = ask(store, "last person before 5 this afternoon")
    assert "today 12:00–17:00" in said["reading"] and "13:00" in said["answer"], said
    assert "00:00–12:00" in ask(store, "last person before 12 this afternoon")["reading"]  # at its start: the day


@pytest.mark.parametrize("question", ["how long was the porch busy today?", "how long was the porch occupied today?",
                                      "for how long was the porch active today?", "how long was the porch busy?"])
def test_how_long_a_place_was_busy_adds_up_the_stays(store, question):  # noqa: F811
    said = ask(store, question)
    assert "on porch" in said["reading"] and not said["unused"] and "stayed" in said["answer"], said


# -- riding and driving: the verb of a ridden or driven thing, or named -------------------------------------------
@pytest.mark.parametrize("question", ["how many bikes were ridden past the porch today?",
                                      "how many cars drove up the driveway today?",
                                      "did anyone ride a bicycle on the driveway today?"])
def test_a_riding_verb_with_its_vehicle_is_read(question):
    _, _, phrases = reading(question)
    assert not any(w in " ".join(phrases) for w in ("rid", "drove")), phrases


@pytest.mark.parametrize(("question", "word"), [("how many people cycled past the porch today?", "cycled"),
                                                ("did anyone drive in today?", "drive"),
                                                ("how many people rode past today?", "rode")])
def test_a_riding_verb_alone_is_named(question, word):
    _, _, phrases = reading(question)
    assert word in " ".join(phrases), phrases
