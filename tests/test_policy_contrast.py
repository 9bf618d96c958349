"""Issue 36, two classes of policy words read wrongly before: a pronoun clause that says the opposite of the
clause before on one fact ("Anyone in the aisles without hi-vis is an alert; with hi-vis they're fine": "they"
are the people in the aisles, and "with hi-vis" replaces "without"), which was refused as a contradiction; and
a count that can never hold ("more than four and fewer than three people"), which was not compiled instead of
refused. Each class is a family of phrasings written here; a phrasing either reads as meant or is NOT
COMPILED, never refused wrongly nor compiled wrongly."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from edgetriage.cloud.analysis.policy import evaluate
from edgetriage.cloud.analysis.policy_check import PolicyRefused
from edgetriage.cloud.analysis.policy_words import compile_policy
from policy_reads import remembered
from test_policy_phrasing import seen

ZONES = ("aisles", "yard", "loading_bay")


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:  # each sentence parsed once per machine (bench/mutation.py runs this file)
    yield from remembered()


def verdict(policy, **facts) -> str:
    return evaluate(policy, seen(**facts)).verdict or "model"


# -- a pronoun clause that contrasts one fact of the clause before ---------------------------------------
CONTRASTS = [  # (words, zone, the fact that differs: (alert facts, benign facts))
    ("Anyone in the aisles without hi-vis is an alert; with hi-vis they're fine.", "aisles",
     ({"hivis": False}, {"hivis": True})),
    ("Anyone in the aisles without hi-vis is an alert, with hi-vis they are fine.", "aisles",
     ({"hivis": False}, {"hivis": True})),
    ("Anyone in the aisles without hi-vis is an alert; they're fine with hi-vis.", "aisles",
     ({"hivis": False}, {"hivis": True})),
    ("Anyone in the aisles not wearing hi-vis is an alert; wearing hi-vis they're fine.", "aisles",
     ({"hivis": False}, {"hivis": True})),
    ("Flag anyone in the yard without hi-vis; with hi-vis they're fine.", "yard",
     ({"hivis": False}, {"hivis": True})),
    ("People in the yard wearing hi-vis are fine; without hi-vis they are an alert.", "yard",
     ({"hivis": False}, {"hivis": True})),
    ("Anyone in the aisles without hi-vis is an alert but with hi-vis they're fine.", "aisles",
     ({"hivis": False}, {"hivis": True})),
    ("People in the yard without hi-vis are alerts. With hi-vis they're fine.", "yard",
     ({"hivis": False}, {"hivis": True})),
    ("People staying in the yard longer than 5 minutes are an alert; for less than 5 minutes they're fine.",
     "yard", ({"dwell": 400.0}, {"dwell": 100.0})),
]


@pytest.mark.parametrize(("words", "zone", "facts"), CONTRASTS)
def test_a_pronoun_clause_replaces_the_fact_it_contrasts_and_keeps_who_and_where(words, zone, facts):
    policy = compile_policy(words, ZONES)
    assert policy.uncompiled == (), policy.uncompiled
    alert, benign = facts
    assert verdict(policy, zones=(zone,), **alert) == "alert", words
    assert verdict(policy, zones=(zone,), **benign) == "benign", words
    other = next(z for z in ZONES if z != zone)  # "they" are the people of that place: elsewhere, not said
    assert verdict(policy, zones=(other,), **benign) == "model", words
    assert verdict(policy, zones=(zone,), label="car", **benign) == "model", words


def test_a_contrast_keeps_the_hours_of_the_clause_before_unless_it_says_its_own():
    policy = compile_policy("Anyone in the aisles without hi-vis after 9pm is an alert; with hi-vis they're fine.",
                            ZONES)
    assert verdict(policy, zones=("aisles",), time="22:00", hivis=True) == "benign"
    assert verdict(policy, zones=("aisles",), time="12:00", hivis=True) == "model"  # by day: not said
    assert verdict(policy, zones=("aisles",), time="22:00") == "alert"


@pytest.mark.parametrize("words", [
    "Anyone in the aisles without a hi-vis vest is an alert; with one they're fine.",
    "Anyone in the aisles without hi-vis is an alert, but if they wear hi-vis they're fine.",
    "People in the aisles with hi-vis are fine; without it they're an alert.",
    "Cars in the yard are alerts. Ignore them at night.",
    "People in the yard are alerts. With hi-vis they're fine.",  # no fact contrasted: who? (said again)
    "People in the yard after 10pm are alerts. Before 6am they're fine.",  # a time: who, in a sentence alone
    "People in the yard without hi-vis are alerts. Without hi-vis they're fine at night.",  # the same side
])
def test_a_pronoun_phrasing_not_read_is_not_compiled_never_refused(words):
    policy = compile_policy(words, ZONES)
    assert policy.uncompiled, policy.plain()


# -- conditions that can never hold are refused --------------------------------------------------------------
@pytest.mark.parametrize("words", [
    "More than four and fewer than three people is an alert.",
    "Alert when there are more than four and fewer than three people.",
    "Alert on more than five people but fewer than five people.",
    "Alert on more than five but fewer than five people in the yard.",
    "Alert on more than four people and fewer than three people.",
    "More than 3 people and fewer than 2 people in the yard is an alert.",
    "At least four and at most two people in the aisles are an alert.",
    "Alert on exactly 3 and exactly 4 people.",
    "Alert when more than 6 people are in the yard and fewer than 2 people are in the yard.",
    "Alert on people staying over 10 minutes but under 5 minutes.",
    "People in the yard wearing hi-vis and without hi-vis are an alert.",
    "Alert on people in the yard who are not in the yard.",
    "Alert on more than 10 and fewer than 11 people.",  # no whole number between
    "Alert on fewer than one person in the yard.",  # a person's event shows that person
    "Alert on no more than 0 people.",
    "Alert on anyone alone when there are more than 2 people.",
])
def test_a_condition_that_never_holds_is_refused(words):
    with pytest.raises(PolicyRefused):
        compile_policy(words, ZONES)


@pytest.mark.parametrize(("words", "inside", "outside"), [
    ("Alert on more than two and fewer than five people in the yard.", (3, 4), (2, 5)),
    ("Alert on more than two people but fewer than five people in the yard.", (3, 4), (2, 5)),
    ("At least 2 and at most 3 people in the yard are an alert.", (2, 3), (1, 4)),
])
def test_a_count_range_that_can_hold_compiles_with_both_ends(words, inside, outside):
    policy = compile_policy(words, ZONES)
    assert policy.uncompiled == ()
    for n in inside:
        assert verdict(policy, zones=("yard",), people=n) == "alert", (words, n)
    for n in outside:
        assert verdict(policy, zones=("yard",), people=n) == "model", (words, n)
