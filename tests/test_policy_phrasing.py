"""Issue 36: classes of ordinary phrasing the policy words compile (each with its own phrasings, not the blind
set's), the edge values of each, and the phrasings that must stay NOT COMPILED or be refused: a sentence
compiles only when every word that carries meaning is read with that meaning."""

from __future__ import annotations

import pytest
from edgetriage.cloud.analysis.policy import Seen, evaluate
from edgetriage.cloud.analysis.policy_check import PolicyRefused
from edgetriage.cloud.analysis.policy_words import compile_policy
from edgetriage.shared.policycell import EventFacts

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
WAYS = {"in": "towards the camera", "out": "away from the camera", "left": "left", "right": "right", "": ""}


def seen(time="12:00", day="Wed", zones=(), dwell=5.0, way="", people=1, label="person", hivis=False,
         upper=None, lower=None) -> Seen:
    h, m = (int(x) for x in time.split(":"))
    return Seen(EventFacts(h * 60 + m, DAYS.index(day), frozenset(zones), dwell, WAYS[way], people), label, hivis,
                upper, lower, frozenset())


def verdict(text: str, known: tuple[str, ...] = (), **facts) -> str:
    return evaluate(compile_policy(text, known), seen(**facts)).verdict or "model"


def compiled(text: str, known: tuple[str, ...] = ()) -> bool:
    return compile_policy(text, known).uncompiled == ()


# -- verdicts left to the model, said in words ----------------------------------------------------------------
def test_leave_it_to_judgement_is_the_models_verdict_said_aloud():
    text = "Alarm on anybody in the loft. For the rest, use your judgement."
    assert not compiled(text, ("loft",))  # "for the rest" is no phrase this grammar reads: not a guess
    for text in ("Alarm on anybody in the loft. Otherwise leave it to judgement.",
                 "Alarm on anybody in the loft. Anyone else, use your judgement.",
                 "Alarm on anybody in the loft. Otherwise it's up to the model."):
        policy = compile_policy(text, ("loft",))
        assert policy.uncompiled == () and policy.otherwise == "model" and policy.otherwise_said, text
        assert verdict(text, ("loft",), zones=("loft",)) == "alert"
        assert verdict(text, ("loft",), zones=()) == "model"


def test_things_left_to_judgement_go_to_the_model_even_before_a_later_rule():
    text = "Dogs and people in the loft are left to judgement. Anything else in the loft is an alert."
    assert compiled(text, ("loft",))
    assert verdict(text, ("loft",), zones=("loft",), label="dog") == "model"
    assert verdict(text, ("loft",), zones=("loft",), label="person") == "model"
    assert verdict(text, ("loft",), zones=("loft",), label="cat") == "alert"


# -- words that add nothing: ever, at all, completely; a fact said not to matter -----------------------------
def test_intensifiers_add_no_condition():
    for text in ("Never alert on cats, ever.", "Ignore cats completely.", "Do not alert on cats at all."):
        assert compiled(text), text
        assert verdict(text, label="cat") == "benign" and verdict(text, label="person") == "model"


def test_a_fact_said_not_to_matter_is_read_by_no_rule_or_the_sentence_is_not_compiled():
    assert compiled("Alert on anyone in the loft. Hi-vis doesn't matter.", ("loft",))
    policy = compile_policy("Alert on anyone in the loft without hi-vis. Hi-vis does not matter.", ("loft",))
    assert policy.uncompiled == ("Hi-vis does not matter",)  # the words disagree with themselves
    text = "Anyone in the loft, hi-vis or not, is an alert."
    assert [verdict(text, ("loft",), zones=("loft",), hivis=h) for h in (True, False, None)] == ["alert"] * 3


# -- fronted conditions, then the verdict: "at weekends it's fine" --------------------------------------------
def test_fronted_conditions_then_it_is_fine():
    text = "At the weekend it's fine. Alert on anyone during the week."
    assert compiled(text)
    assert [verdict(text, day=d) for d in ("Fri", "Sat", "Sun", "Mon")] == ["alert", "benign", "benign", "alert"]


# -- "alert if A, or if B": two clauses with one verdict ------------------------------------------------------
def test_or_if_is_two_conditions_either_of_which_alerts():
    text = "Alert if a person waits at the till for over 4 minutes, or if three or more people are at it."
    till = ("till",)
    assert compiled(text, till)
    assert verdict(text, till, zones=till, dwell=240.0) == "model"  # "over": 4 minutes is not over
    assert verdict(text, till, zones=till, dwell=240.1) == "alert"
    assert verdict(text, till, zones=till, people=2) == "model"
    assert verdict(text, till, zones=till, people=3) == "alert"  # "or more": three itself
    assert verdict(text, till, zones=(), people=3) == "model"  # "at it": at the till


def test_there_and_it_with_no_place_before_are_not_compiled():
    assert not compiled("Alert if anyone is in there after 9pm.")
    assert not compiled("Alert if two people are at it.")


# -- "don't alert unless X" ----------------------------------------------------------------------------------
def test_do_not_alert_unless_is_alert_only_if():
    text = "Don't alert unless somebody's been at the shed for at least 2 minutes."
    shed = ("shed",)
    assert compiled(text, shed)
    assert verdict(text, shed, zones=shed, dwell=119.9) == "benign"
    assert verdict(text, shed, zones=shed, dwell=120.0) == "alert"  # "at least": the bound itself
    assert verdict(text, shed, zones=(), dwell=600.0) == "benign"


# -- a negated subject with an alert predicate: benign for it; and a contradiction refused ----------------------
def test_no_vehicle_should_trigger_an_alert_is_vehicles_are_fine():
    text = "No vehicle on the ramp should ever trigger an alarm."
    ramp = ("ramp",)
    assert compiled(text, ramp)
    assert verdict(text, ramp, zones=ramp, label="truck") == "benign"
    assert verdict(text, ramp, zones=ramp, label="person") == "model"  # a vehicle, not a person
    assert verdict("Bikes never need an alert.", label="bicycle") == "benign"


def test_no_cars_is_cars_not_people():
    text = "No cars should be on the ramp."
    assert verdict(text, ("ramp",), zones=("ramp",), label="car") == "alert"
    assert verdict(text, ("ramp",), zones=("ramp",), label="person") == "model"


def test_always_and_never_about_the_same_people_is_refused_naming_both():
    text = "Alert on anyone on the ramp. Nobody on the ramp should ever cause an alert."
    with pytest.raises(PolicyRefused, match="Nobody on the ramp"):
        compile_policy(text, ("ramp",))


def test_people_and_a_label_in_one_subject_are_either():
    text = "People or dogs on the ramp are an alert."
    ramp = ("ramp",)
    assert [verdict(text, ramp, zones=ramp, label=x) for x in ("person", "dog", "cat")] == ["alert", "alert", "model"]


# -- hours with a name, their days, and "those hours" -------------------------------------------------------
def test_named_hours_with_their_days_and_their_edges():
    text = ("Visiting hours are 2pm to 7:30pm, Tuesday to Saturday. Outside visiting hours, anyone on the ward is "
            "an alert. During visiting hours, alert only if someone stays on the ward over 45 minutes.")
    ward = ("ward",)
    assert compiled(text, ward)
    at = {"zones": ward}
    assert verdict(text, ward, day="Tue", time="13:59", **at) == "alert"  # a minute before the first
    assert verdict(text, ward, day="Tue", time="14:00", **at) == "benign"  # the first minute is inside
    assert verdict(text, ward, day="Sat", time="19:29", **at) == "benign"
    assert verdict(text, ward, day="Sat", time="19:30", **at) == "alert"  # the end is outside
    assert verdict(text, ward, day="Mon", time="15:00", **at) == "alert"  # the hours' days: Monday is not one
    assert verdict(text, ward, day="Wed", time="15:00", dwell=2700.1, **at) == "alert"
    assert verdict(text, ward, day="Wed", time="15:00", dwell=2700.0, **at) == "benign"
    assert verdict(text, ward, day="Wed", time="15:00", zones=()) == "benign"  # "only" within visiting hours
    assert verdict(text, ward, day="Mon", time="15:00", zones=()) == "model"  # outside them: the words say nothing


def test_hours_defined_inline_with_which_are():
    text = "Nobody should be on the ramp outside trading hours, which are 6am to 10pm Monday to Saturday."
    ramp = ("ramp",)
    assert compiled(text, ramp)
    assert verdict(text, ramp, zones=ramp, day="Sun", time="12:00") == "alert"
    assert verdict(text, ramp, zones=ramp, day="Sat", time="21:59") == "model"
    assert verdict(text, ramp, zones=ramp, day="Sat", time="22:00") == "alert"


def test_hours_named_nowhere_are_not_compiled():
    assert not compiled("Alert on anyone during quiet hours.")
    assert not compiled("Anyone on the ramp outside those hours is an alert.", ("ramp",))


def test_those_hours_and_any_other_time_are_the_last_times_said():
    text = ("Between 7am and 9am on weekdays, people at the gate are fine. Outside those hours, anyone at the gate "
            "is an alert.")
    gate = ("gate",)
    assert compiled(text, gate)
    assert verdict(text, gate, zones=gate, day="Mon", time="08:59") == "benign"
    assert verdict(text, gate, zones=gate, day="Mon", time="09:00") == "alert"
    assert verdict(text, gate, zones=gate, day="Sun", time="08:00") == "alert"  # the day is part of "those hours"
    text = "Vans at the gate are fine from 5am to 8am. A van at the gate at any other time is an alert."
    assert len(compile_policy(text, gate).uncompiled) == 2  # "van" is no label: and then no hours before "any other"
    text = "Trucks at the gate are fine from 5am to 8am. A truck at the gate at any other time is an alert."
    assert [verdict(text, gate, zones=gate, label="truck", time=t) for t in ("04:59", "05:00", "07:59", "08:00")] \
        == ["alert", "benign", "benign", "alert"]


def test_only_after_fronted_conditions_holds_within_them():
    text = "At weekends, alert only if someone is in the yard."
    yard = ("yard",)
    assert verdict(text, yard, day="Sat", zones=yard) == "alert"
    assert verdict(text, yard, day="Sat", zones=()) == "benign"
    assert verdict(text, yard, day="Fri", zones=()) == "model"  # a weekday: the words say nothing
