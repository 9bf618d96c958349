"""Miscompiles caught as a class on the compiled form (cloud/analysis/policy_sound.py), each with phrasings
written here: two verdicts for one case that the words do not order, two places at once, a clause no case
reaches, a rule said twice, and hours "after"/"before" that would run through the whole day. An event stands
in every zone whose outline holds its foot point (edge/vision/zones.py), so zones may overlap: "in the yard and
in the garden" can hold, and two sentences about two places can both apply. Sentences parsed once per machine
(tests/policy_reads.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from edgetriage.cloud.analysis.policy import Seen, evaluate
from edgetriage.cloud.analysis.policy_check import PolicyRefused
from edgetriage.cloud.analysis.policy_words import compile_policy
from edgetriage.shared.policycell import EventFacts
from policy_reads import remembered

ZONES = ("yard", "garden", "gate", "porch", "drive")


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:
    yield from remembered()


def _seen(zones: tuple[str, ...] = (), minute: int = 720, hivis: bool | None = False, label: str = "person",
          objects: frozenset[str] = frozenset()) -> Seen:
    return Seen(EventFacts(minute, 2, frozenset(zones), 5.0, "", 1), label, hivis, None, None, objects)


def _not_compiled(text: str, why: str) -> None:
    policy = compile_policy(text, ZONES)
    assert policy.uncompiled == (text.rstrip("."),)
    assert all(c.verdict == "model" and not c.compiled for c in policy.clauses)
    reason = " ".join(policy.clauses[0].used)
    assert why in reason, reason


@pytest.mark.parametrize("text", [
    "Alert on anyone in the yard, people in hi-vis are fine.",
    "Tell me about anybody at the gate and ignore people carrying a backpack.",
    "Anyone on the porch is an alert, people wearing hi-vis are ok.",
])
def test_two_verdicts_for_one_case_the_words_do_not_order_are_not_compiled(text):
    # a person in the place who is also the second kind gets both verdicts; by the order of the words alone the
    # first would win, silently: the sentence is not compiled, and the reason says which case and asks "which wins?"
    _not_compiled(text, "which wins? (join them with unless / except)")


@pytest.mark.parametrize(("text", "first"), [
    ("Alert on anyone in the yard unless they are wearing hi-vis.", "benign"),
    ("Anyone at the gate is an alert, cars at the gate are fine.", "alert"),  # a car is no person: no overlap
    ("Alert on cars in the drive, but at night ignore them.", "benign"),  # "them": the later clause narrows
    ("People in hi-vis may be in the yard, anyone else there is an alert.", "benign"),  # "anyone else": after it
    ("People on the porch are fine by day, at night alert.", "alert"),  # day and night never meet
])
def test_clauses_the_words_order_or_that_never_meet_still_compile(text, first):
    policy = compile_policy(text, ZONES)
    assert not policy.uncompiled, policy.plain()
    assert policy.clauses[0].verdict == first


def test_where_two_places_overlap_the_alert_wins_whichever_sentence_comes_first():
    for text in ("People in the garden are fine. Alert on anyone in the yard.",
                 "Alert on anyone in the yard. People in the garden are fine."):
        policy = compile_policy(text, ZONES)
        assert policy.plain().startswith("alert if: label = person and zone = "), policy.plain()
        assert {c.value for c in policy.clauses[0].conds if c.kind == "zone"} == {"yard", "garden"}
        assert "zones may overlap" in policy.clauses[0].used[0] and "the alert wins" in policy.clauses[0].used[0]
        assert not policy.uncompiled
        assert evaluate(policy, _seen(("yard",))).verdict == "alert"
        assert evaluate(policy, _seen(("garden",))).verdict == "benign"
        assert evaluate(policy, _seen(("yard", "garden"))).verdict == "alert"


def test_where_two_places_overlap_a_place_left_to_the_model_leaves_the_overlap_to_it():
    policy = compile_policy("Anyone on the drive is up to the model. People on the porch are fine.", ZONES)
    assert policy.clauses[0].verdict == "model", policy.plain()
    assert evaluate(policy, _seen(("drive", "porch"))).verdict is None
    assert evaluate(policy, _seen(("porch",))).verdict == "benign"


def test_two_sentences_about_two_places_with_one_verdict_or_times_apart_need_no_model():
    for text in ("Alert on anyone in the yard. Alert on anyone in the garden.",
                 "Alert on anyone in the yard at night. People in the garden are fine by day."):
        policy = compile_policy(text, ZONES)
        assert not policy.uncompiled and all(c.verdict != "model" for c in policy.clauses), policy.plain()


@pytest.mark.parametrize("text", [
    "Alert on anyone in the yard and in the garden.",
    "People on the porch and on the drive are fine.",
])
def test_two_places_in_one_clause_are_not_compiled(text):
    # both at once holds only where two zones overlap; the words may as well mean either place
    _not_compiled(text, "in both at once (where the zones overlap), or in either?")


def test_either_of_two_places_compiles():
    policy = compile_policy("Alert on anyone in the yard or the garden.", ZONES)
    assert not policy.uncompiled
    assert evaluate(policy, _seen(("garden",))).verdict == "alert"


@pytest.mark.parametrize("text", [
    "Alert on anyone in the yard unless they are in the yard.",
    "Anyone at the gate is an alert, except people at the gate.",
])
def test_a_clause_that_never_decides_is_refused_naming_the_words(text):
    with pytest.raises(PolicyRefused, match="never decides: the rules before it .* take every case it names"):
        compile_policy(text, ZONES)


def test_a_clause_said_twice_is_flagged_and_still_decides_as_once():
    policy = compile_policy("Alert on anyone at the gate at night. At night, anyone at the gate is an alert.",
                            ZONES)
    assert len(policy.uncompiled) == 1 and "a duplicate rule" in policy.uncompiled[0]
    assert evaluate(policy, _seen(("gate",), minute=23 * 60)).verdict == "alert"


@pytest.mark.parametrize(("words", "why"), [
    ("after 1am", "until when, the end of the night or midnight?"),
    ("after 4:30 am", "until when, the end of the night or midnight?"),
    ("before 11pm", "since when?"),
    ("until 22:00", "since when?"),
])
def test_hours_that_would_run_through_the_whole_day_are_not_compiled(words, why):
    _not_compiled(f"Alert on anyone at the gate {words}.", why)


@pytest.mark.parametrize(("words", "window"), [
    ("after 7am", "07:00–00:00"), ("after 9pm", "21:00–06:00"), ("after midnight", "00:00–06:00"),
    ("before 6am", "00:00–06:00"), ("before 9:30pm", "00:00–21:30"),
])
def test_after_and_before_keep_their_documented_windows(words, window):
    policy = compile_policy(f"Alert on anyone at the gate {words}.", ZONES)
    assert f"local time {window}" in policy.plain()
