"""Issue 36: words that set no condition, taken out by a named rule (cloud/analysis/policy_filler.py) so the
rest of the sentence compiles: a reason after the verdict ("- could be a burglar", "so I can ..."), a hedge
("obviously"), "also" / "too" around a sentence with its own verdict, and "X - no" beside "Y - alert". Each
class is a family of phrasings written here, not taken from a set; each has its limits: a reason that holds a
negation, an exception or a time stays, and the sentence is NOT COMPILED, never compiled without it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from edgetriage.cloud.analysis.policy import evaluate
from edgetriage.cloud.analysis.policy_check import PolicyRefused
from edgetriage.cloud.analysis.policy_filler import fillers
from edgetriage.cloud.analysis.policy_words import compile_policy
from policy_reads import remembered
from test_policy_phrasing import seen

ZONES = ("back door", "shed", "lawn", "side gate", "yard")


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:
    yield from remembered()


def verdict(policy, **facts) -> str:
    return evaluate(policy, seen(**facts)).verdict or "model"


# -- a reason after the verdict ------------------------------------------------------------------------------
REASONS = [
    ("Alert if anyone stays at the back door longer than 2 minutes - could be someone trying the handle.",
     "back door", {"dwell": 121.0}, {"dwell": 120.0}),
    ("Tell me about anyone at the side gate after 11pm, we've had bikes taken.", "side gate",
     {"time": "23:00"}, {"time": "22:59"}),
    ("Anyone in the shed for over 10 minutes - alert, they might be stuck.", "shed",
     {"dwell": 601.0}, {"dwell": 600.0}),
    ("Dogs on the lawn -> alert so I can let them in.", "lawn", {"label": "dog"}, {"label": "cat"}),
    ("Flag anybody in the yard at night because we've had break-ins.", "yard",
     {"time": "23:30"}, {"time": "21:59"}),
]


@pytest.mark.parametrize(("words", "zone", "alert", "other"), REASONS)
def test_a_reason_after_the_verdict_is_named_and_the_rest_compiles(words, zone, alert, other):
    policy = compile_policy(words, ZONES)
    assert policy.uncompiled == (), policy.plain()
    assert any("a reason, no rule" in u for c in policy.clauses for u in c.used)  # named, not skipped
    assert verdict(policy, zones=(zone,), **alert) == "alert"
    assert verdict(policy, zones=(zone,), **other) == "model"  # no otherwise said: the model is asked


@pytest.mark.parametrize("words", [
    "Alert on anyone at the side gate - could be fine unless they're in hi-vis.",  # an exception in it
    "Alert on anyone at the side gate, because it's after hours.",  # a time in it
    "Alert on anyone at the side gate, so long as they aren't staff.",  # a condition, not a reason
    "Alert on anyone at the side gate - might be a neighbour at night.",
    "Alert on anyone at the side gate, in case it's not the postman.",
    "Alert on anyone at the side gate so that nobody gets in.",
])
def test_a_reason_that_could_set_or_undo_a_condition_stays_and_is_not_compiled(words):
    assert compile_policy(words, ZONES).uncompiled != ()


def test_a_reason_is_only_taken_at_the_end_after_a_mark():
    assert fillers("Alert if someone who could be a burglar is at the door")[1] == ()
    said, named = fillers("Alert on dogs, so I can shut the gate")
    assert said == "Alert on dogs" and named == ("“so I can shut the gate”: a reason, no rule",)


# -- hedges, "also", "too" -----------------------------------------------------------------------------------
def test_a_hedge_is_named_and_the_verdict_stays():
    for words in ("Cats on the lawn: obviously fine.", "Cats on the lawn are fine, of course.",
                  "Cats on the lawn - definitely fine."):
        policy = compile_policy(words, ZONES)
        assert policy.uncompiled == (), words
        assert verdict(policy, zones=("lawn",), label="cat") == "benign"
        assert verdict(policy, zones=("lawn",), label="dog") == "model"
    policy = compile_policy("Obviously alert on anyone in the shed at night.", ZONES)
    assert verdict(policy, zones=("shed",), time="23:00") == "alert"


def test_also_and_too_around_a_sentence_with_its_own_verdict():
    policy = compile_policy("Alert on anyone in the shed at night. Also alert me if a dog is on the lawn. "
                            "Cats in the yard are fine too.", ZONES)
    assert policy.uncompiled == (), policy.plain()
    assert verdict(policy, zones=("shed",), time="23:00") == "alert"
    assert verdict(policy, zones=("lawn",), label="dog") == "alert"
    assert verdict(policy, zones=("yard",), label="cat") == "benign"
    assert verdict(policy, zones=("yard",), label="dog") == "model"


@pytest.mark.parametrize("words", [
    "Alert on anyone in the shed at night. Also anyone in a red top.",  # "also" with no verdict of its own
    "Alert on anyone in the shed at night. Also at the weekend.",  # in the shed? at night?
    "Alert on anyone in the shed. Cats too.",
])
def test_also_without_a_verdict_of_its_own_is_not_compiled(words):
    assert compile_policy(words, ZONES).uncompiled != ()


# -- "X - no" beside "Y - alert" -----------------------------------------------------------------------------
def test_a_bare_no_beside_a_dash_alert_is_no_alert():
    for words in ("Dogs on the lawn - alert. Cats on the lawn - no.", "Cats on the lawn -> no. Dogs on the lawn "
                  "-> yes alert.", "Dogs on the lawn = alert. Cats on the lawn = no"):
        policy = compile_policy(words, ZONES)
        assert policy.uncompiled == (), words
        assert verdict(policy, zones=("lawn",), label="dog") == "alert"
        assert verdict(policy, zones=("lawn",), label="cat") == "benign"
        assert any("no alert, as" in u for c in policy.clauses for u in c.used)


@pytest.mark.parametrize("words", [
    "Cats on the lawn - no.",  # alone: no alert, or no cats?
    "Cats on the lawn - no. Alert on dogs on the lawn.",  # the alert is not said after a dash
    "Cats on the lawn - no. Dogs on the lawn - yes.",
])
def test_a_bare_no_without_a_dash_alert_beside_it_is_not_compiled(words):
    assert compile_policy(words, ZONES).uncompiled != ()


# -- a comma or a colon before the verdict, "hanging round", "alert me to" ------------------------------------
def test_a_colon_or_comma_before_a_verdict_word_is_a_verdict_mark():
    for words in ("Bikes in the shed: fine.", "Bikes in the shed, fine.", "Dogs in the shed: alert."):
        policy = compile_policy(words, ZONES)
        assert policy.uncompiled == (), words
        assert verdict(policy, zones=("shed",), label="bicycle" if "Bikes" in words else "dog") == (
            "benign" if "fine" in words else "alert")


def test_hanging_round_is_staying_and_alert_me_to_is_alert_me_about():
    policy = compile_policy("Let me know if people are hanging round in the yard for more than 5 minutes.", ZONES)
    assert policy.uncompiled == ()
    assert verdict(policy, zones=("yard",), dwell=301.0) == "alert"
    assert verdict(policy, zones=("yard",), dwell=300.0) == "model"
    policy = compile_policy("Alert me to anyone at the side gate after 11pm.", ZONES)
    assert policy.uncompiled == ()
    assert verdict(policy, zones=("side gate",), time="23:30") == "alert"


# -- a zone named alone after the verdict; "in there" in the same sentence -------------------------------------
def test_a_configured_zone_named_alone_is_that_place():
    policy = compile_policy("Tell me about anyone in the shed at night. Don't bother with the yard.", ZONES)
    assert policy.uncompiled == (), policy.plain()
    assert verdict(policy, zones=("yard",), label="cat") == "benign"
    assert verdict(policy, zones=("shed",), time="23:00") == "alert"
    assert verdict(policy, zones=("lawn",)) == "model"
    policy = compile_policy("Ignore the lawn unless there's a dog in there after 8pm.", ZONES)
    assert policy.uncompiled == (), policy.plain()
    assert verdict(policy, zones=("lawn",), label="dog", time="20:30") == "alert"
    assert verdict(policy, zones=("lawn",), label="dog", time="19:59") == "benign"
    assert verdict(policy, zones=("yard",), label="dog", time="20:30") == "model"
    # a word that is no zone of the camera stays a word: "the pumps" on a camera without them
    assert compile_policy("Don't bother with the pumps.", ZONES).uncompiled != ()


# -- "also X" taking the verdict of the sentence before --------------------------------------------------------
def test_also_without_a_verdict_takes_the_one_before_when_it_says_where_and_when_again():
    policy = compile_policy("Anyone with a knife in the shed - alert. Also anybody in the shed after 10pm. "
                            "That's it - nothing else.", ZONES)
    assert policy.uncompiled == (), policy.plain()
    assert verdict(policy, zones=("shed",), time="22:30") == "alert"
    assert verdict(policy, zones=("shed",), time="21:00") == "benign"
    assert any("the verdict of the sentence before (alert)" in u for c in policy.clauses for u in c.used)
    policy = compile_policy("Cats on the lawn are fine. Also dogs on the lawn.", ZONES)
    assert policy.uncompiled == ()
    assert verdict(policy, zones=("lawn",), label="dog") == "benign"


@pytest.mark.parametrize("words", [
    "Alert on anyone in the shed at night. Also anybody in the yard.",  # at night too, or at any time?
    "Alert on anyone in the shed at night. Also dogs at night.",  # in the shed too?
    "Alert on anyone in the shed unless they are in hi-vis. Also anyone in the yard.",  # the exception too?
    "Anyone in the shed. Also anyone in the yard.",  # no verdict before either
])
def test_also_without_a_verdict_where_the_before_could_carry_over_is_not_compiled(words):
    assert compile_policy(words, ZONES).uncompiled != ()


# -- refused: an impossible time anywhere, fewer than zero -----------------------------------------------------
@pytest.mark.parametrize("words", ["Tell me at 25:30 if anyone is in the yard.", "Ring me about 13pm.",
                                   "Alert on anyone in the yard between 9pm and 9:75pm."])
def test_an_impossible_time_is_refused_wherever_it_stands(words):
    with pytest.raises(PolicyRefused, match="impossible time"):
        compile_policy(words, ZONES)


def test_fewer_than_zero_people_is_refused():
    with pytest.raises(PolicyRefused, match="never hold"):
        compile_policy("Alert when there are fewer than zero people in the yard.", ZONES)
    assert compile_policy("Alert when there are more than zero people in the yard.", ZONES).uncompiled == ()


# -- moving about a place; two times in one list item that never meet ------------------------------------------
def test_walking_on_or_around_a_place_is_being_there():
    policy = compile_policy("Between midnight and 5 I want to know about anybody walking on the lawn.", ZONES)
    assert policy.uncompiled == (), policy.plain()
    assert verdict(policy, zones=("lawn",), time="04:59") == "alert"
    assert verdict(policy, zones=("lawn",), time="05:00") == "model"
    assert verdict(policy, zones=("yard",), time="01:00") == "model"
    policy = compile_policy("Alert if someone is wandering around the yard at night.", ZONES)
    assert verdict(policy, zones=("yard",), time="23:00") == "alert"


def test_a_named_night_with_bare_hours_that_miss_it_is_not_compiled_as_a_list():
    # "10 till 2" with bare hours is 10:00-14:00, which no night holds: this was compiled as "Friday (any
    # time), or Saturday night and 10:00-14:00"
    words = "Alert on anyone in the yard on Friday and Saturday nights from 10 till 2."
    try:
        policy = compile_policy(words, ZONES)
    except PolicyRefused as exc:
        assert "never hold" in str(exc)
    else:
        assert policy.uncompiled != ()
    policy = compile_policy("Alert on anyone in the yard on Saturday night between 11pm and 1am.", ZONES)
    assert verdict(policy, zones=("yard",), time="23:30", day="Sat") == "alert"
    assert verdict(policy, zones=("yard",), time="00:30", day="Sun") == "alert"
    assert verdict(policy, zones=("yard",), time="23:30", day="Fri") == "model"


# -- "Not if B." after "A - alert.": the exception of the sentence before --------------------------------------
@pytest.mark.parametrize(("words", "benign", "alert"), [
    ("Anyone at the back door for over a minute - alert. Not if they're in hi-vis.",
     {"zones": ("back door",), "dwell": 90.0, "hivis": True}, {"zones": ("back door",), "dwell": 90.0}),
    ("Alert on anyone in the yard at night. Unless they are wearing hi-vis, then it's fine.",
     {"zones": ("yard",), "time": "23:00", "hivis": True}, {"zones": ("yard",), "time": "23:00"}),
    ("Alert on people in the shed. Not on Sundays.", {"zones": ("shed",), "day": "Sun"}, {"zones": ("shed",)}),
    ("Cats on the lawn are fine. Not if they stay longer than 5 minutes.",
     {"zones": ("lawn",), "label": "cat", "dwell": 300.0}, {"zones": ("lawn",), "label": "cat", "dwell": 301.0}),
])
def test_a_not_sentence_after_a_verdict_is_its_exception(words, benign, alert):
    policy = compile_policy(words, ZONES)
    assert policy.uncompiled == (), policy.plain()
    assert verdict(policy, **benign) == "benign"
    assert verdict(policy, **alert) == "alert"
    assert any("the exception of the sentence before" in u for c in policy.clauses for u in c.used)


@pytest.mark.parametrize("words", [
    "Alert on people in the shed. Except on Sundays.",  # the other verdict there, or only no alert?
    "Alert on people in the shed. Apart from the cleaners.",
    "Alert on people in the shed unless in hi-vis. Not on Sundays.",  # an exception already
    "Alert on people in the shed. Not if they look like staff.",  # what B says is not read
    "Cats on the lawn are fine. Unless they stay for over 5 minutes, then it's fine.",  # the same verdict again
])
def test_an_exception_sentence_whose_verdict_the_words_do_not_say_is_not_compiled(words):
    assert compile_policy(words, ZONES).uncompiled != ()
