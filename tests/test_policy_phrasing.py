"""Issue 36: classes of ordinary phrasing the policy words compile (each with its own phrasings, not the blind
set's), the edge values of each, and the phrasings that must stay NOT COMPILED or be refused: a sentence
compiles only when every word that carries meaning is read with that meaning."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from edgetriage.cloud.analysis.policy import Seen, evaluate
from edgetriage.cloud.analysis.policy_check import PolicyRefused
from edgetriage.cloud.analysis.policy_words import compile_policy
from edgetriage.shared.policycell import EventFacts
from policy_reads import remembered


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:  # each sentence parsed once per machine (tests/policy_reads.py)
    yield from remembered()


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


# -- clock ranges: one bare hour beside a said one; a day part with its range in apposition -----------------
@pytest.mark.parametrize(("words", "window"), [
    ("from 6 to 8 in the evening", ("18:00", "20:00")),
    ("between 7 and half past 8 in the morning", ("07:00", "08:30")),
    ("from 9 to 5pm", ("09:00", "17:00")),
    ("from 11pm to 7", ("23:00", "07:00")),
    ("from 10 till noon", ("10:00", "12:00")),
    ("from 9 in the evening until 7 the next morning", ("21:00", "07:00")),
])
def test_a_bare_hour_beside_a_said_one_takes_the_shorter_window(words, window):
    text = f"Alert on anyone at the kiosk {words}."
    kiosk = ("kiosk",)
    assert compiled(text, kiosk), text
    start, end = window
    before = f"{(int(start[:2]) - 1) % 24:02d}:59"
    last = f"{(int(end[:2]) - 1) % 24:02d}:{59 if end[3:] == '00' else 29}"
    assert [verdict(text, kiosk, zones=kiosk, time=t) for t in (before, start, last, end)] == \
        ["model", "alert", "alert", "model"], words


def test_bare_hours_with_nothing_said_stay_not_compiled():
    assert not compiled("Alert on anyone at the kiosk from 8 to 10.", ("kiosk",))
    text = "Alert on anyone at the kiosk from 6 to 6pm."  # 6pm to 6pm is no window: 6am it is
    assert [verdict(text, ("kiosk",), zones=("kiosk",), time=t) for t in ("05:59", "06:00", "17:59", "18:00")] == \
        ["model", "alert", "alert", "model"]


def test_a_day_part_with_its_range_in_apposition_is_the_range():
    text = "Overnight, 9pm to 5am, anyone on the forecourt is an alert."
    court = ("forecourt",)
    assert compiled(text, court)
    assert [verdict(text, court, zones=court, time=t) for t in ("20:59", "21:00", "04:59", "05:00")] == \
        ["model", "alert", "alert", "model"]  # not 22:00-06:00, the night's own hours
    text = "Anyone on the forecourt during the working day (8am till 6pm, Monday to Friday) is fine."
    assert compiled(text, court)
    assert verdict(text, court, zones=court, time="17:59", day="Fri") == "benign"
    assert verdict(text, court, zones=court, time="18:00", day="Fri") == "model"
    assert verdict(text, court, zones=court, time="12:00", day="Sat") == "model"


def test_a_day_part_whose_range_is_another_time_is_refused_naming_it():
    with pytest.raises(PolicyRefused, match="in the morning"):
        compile_policy("In the morning, 3pm to 5pm, alert on anyone on the forecourt.", ("forecourt",))


# -- motion verbs read as the way they go, or not compiled ---------------------------------------------------
def test_motion_verbs_are_read_as_their_way():
    porch = ("porch",)
    text = "Alert if anyone goes into the porch after 10pm."
    assert [verdict(text, porch, zones=porch, time="23:00", way=w) for w in ("in", "out", "left", "")] == \
        ["alert", "model", "model", "model"]
    text = "Ignore people walking past."
    assert [verdict(text, way=w) for w in ("left", "right", "in", "out")] == ["benign", "benign", "model", "model"]
    text = "Somebody coming home is fine. Somebody leaving home at night is an alert."
    assert verdict(text, way="in", time="23:00") == "benign"
    assert verdict(text, way="out", time="23:00") == "alert" and verdict(text, way="out", time="21:59") == "model"
    text = "Alert if someone uses the porch after 10pm."  # a place with no way said: the place, any way
    assert [verdict(text, porch, zones=porch, time="22:00", way=w) for w in ("in", "out")] == ["alert", "alert"]


def test_motion_words_with_no_rule_leave_the_sentence_not_compiled():
    for text in ("Alert if anyone walks up to the porch.", "Alert on anyone strolling along at night.",
                 "People walking past the porch are fine."):
        assert not compiled(text, ("porch",)), text


# -- zones by a shorter name; a subject with an exception; lists of places and of day-and-hours pairs ---------
def test_a_zone_by_its_head_noun_its_other_number_or_as_one_of_several():
    zones = ("loading bay 1", "loading bay 2", "site cabin", "car parks")
    text = "Alert on any truck at a loading bay after 8pm."
    assert [verdict(text, zones, zones=(z,), label="truck", time="21:00") for z in ("loading bay 1", "loading bay 2",
                                                                                     "site cabin")] == \
        ["alert", "alert", "model"]
    assert verdict("Alert on anyone at the cabin.", zones, zones=("site cabin",)) == "alert"
    assert verdict("Cars in a car park are fine.", zones, zones=("car parks",), label="car") == "benign"
    assert not compiled("Alert on anyone at the loading bay.", zones)  # which of the two?
    assert not compiled("Alert on anyone at the site.", zones)  # "site" is not the cabin's own noun


def test_a_subject_with_its_own_exception():
    text = "Alert if any vehicle other than a bus is at the stop for over 5 minutes."
    stop = ("stop",)
    assert compiled(text, stop)
    assert verdict(text, stop, zones=stop, label="truck", dwell=300.1) == "alert"
    assert verdict(text, stop, zones=stop, label="truck", dwell=300.0) == "model"
    assert verdict(text, stop, zones=stop, label="bus", dwell=900.0) == "model"  # the words say nothing of buses
    assert not compiled("Alert on any vehicle except buses at the stop.", stop)  # the subject's, or the sentence's?


def test_places_joined_by_and_are_either_place():
    text = "Staff in hi-vis are fine in the yard and the shed. Anyone else there is an alert."
    zones = ("yard", "shed", "gate")
    assert compiled(text, zones)
    assert [verdict(text, zones, zones=(z,), hivis=False) for z in zones] == ["alert", "alert", "model"]
    assert verdict(text, zones, zones=("shed",), hivis=True) == "benign"


def test_each_day_with_its_own_hours():
    text = "Deliveries are fine from 6 till 2 on weekdays and 8 till noon on Sundays."
    assert not compiled(text)  # "deliveries": who they are, only the picture could tell
    text = "Trucks at the gate are fine from 6 till 2 on weekdays and 8 till noon on Sundays."
    gate = ("gate",)
    cases = [("Mon", "06:00", "benign"), ("Mon", "13:59", "benign"), ("Mon", "14:00", "model"),
             ("Sun", "11:59", "benign"), ("Sun", "12:00", "model"), ("Sun", "06:30", "model"),
             ("Sat", "09:00", "model")]
    for day, time, want in cases:
        assert verdict(text, gate, zones=gate, label="truck", day=day, time=time) == want, (day, time)


def test_days_with_hours_past_midnight_are_not_compiled_but_a_named_night_is():
    gate = ("gate",)
    assert not compiled("Alert on anyone at the gate on weekdays from 9pm to 5am.", gate)
    text = "Alert on anyone at the gate on Sunday at night."
    assert verdict(text, gate, zones=gate, day="Mon", time="05:59") == "alert"  # Sunday's night
    assert verdict(text, gate, zones=gate, day="Mon", time="06:00") == "model"
    assert verdict(text, gate, zones=gate, day="Sun", time="02:00") == "model"  # Saturday's night


# -- lists in one clause, and the clause lists that are two clauses --------------------------------------------
def test_a_colour_list_is_both_or_either():
    text = "Alert if anyone in a grey hoodie and blue jeans is at the till after 10pm. Otherwise don't alert."
    till = ("till",)
    assert compiled(text, till)
    at = {"zones": till, "time": "22:00"}
    assert verdict(text, till, upper="grey", lower="blue", **at) == "alert"
    assert verdict(text, till, upper="grey", lower="black", **at) == "benign"
    assert verdict(text, till, upper="grey", lower=None, **at) == "model"  # the trousers not seen: unknown
    assert verdict(text, till, upper="grey", lower="blue", zones=till, time="21:59") == "benign"
    text = "Staff in our green uniform shirt are fine at the till."
    assert verdict(text, till, zones=till, upper="green") == "benign"


def test_alert_on_a_or_on_b_is_two_clauses_and_two_subjects_in_one_are_not_compiled():
    till = ("till",)
    text = "Alert on anyone at the till without hi-vis, and on anyone at all at the till after 8pm. Nothing else."
    assert compiled(text, till)
    assert verdict(text, till, zones=till, hivis=False, time="12:00") == "alert"
    assert verdict(text, till, zones=till, hivis=True, time="19:59") == "benign"
    assert verdict(text, till, zones=till, hivis=True, time="20:00") == "alert"
    text = "Alert if there are three or more people at the till, or someone waits there over 10 minutes."
    assert verdict(text, till, zones=till, people=3) == "alert"
    assert verdict(text, till, zones=till, dwell=600.0) == "model" and verdict(text, till, zones=till, dwell=601.0) \
        == "alert"
    assert not compiled("Alert on anyone at the till and anyone at all after 8pm.", till)  # one clause, two whos


def test_nothing_else_after_alerts_is_everything_else_fine_and_otherwise_not_compiled():
    assert compile_policy("Alert on anyone in the shed at night. Nothing else.", ("shed",)).otherwise == "benign"
    assert not compiled("Ignore cats. Nothing else.")


def test_less_than_that_is_the_time_said_before():
    text = "Alert if a person has been in the lift for 3 minutes or more. A person in there for less than that is fine."
    lift = ("lift",)
    assert compiled(text, lift)
    assert [verdict(text, lift, zones=lift, dwell=d) for d in (179.9, 180.0)] == ["benign", "alert"]
    assert not compiled("Anyone in the lift for less than that is fine.", lift)


def test_two_bounds_on_one_time_that_cannot_both_hold_are_refused():
    with pytest.raises(PolicyRefused, match="never hold"):
        compile_policy("Alert if someone waits at the till for under 30 seconds but over 2 minutes.", ("till",))
    text = "Alert if someone waits at the till for over 30 seconds but under 2 minutes."
    assert [verdict(text, ("till",), zones=("till",), dwell=d) for d in (30.0, 30.5, 119.9, 120.0)] == \
        ["model", "alert", "alert", "model"]


def test_not_between_is_outside_and_a_camera_note_is_no_rule():
    text = "Indoor camera. Alert on anyone in the hall when it's not between 8am and 6pm."
    hall = ("hall",)
    assert compiled(text, hall)
    assert [verdict(text, hall, zones=hall, time=t) for t in ("07:59", "08:00", "17:59", "18:00")] == \
        ["alert", "model", "model", "alert"]


def test_a_clause_of_times_alone_after_a_semicolon_is_about_the_same_who_and_where():
    text = "Dogs in the paddock are fine by day; at night, alert me."
    paddock = ("paddock",)
    assert compiled(text, paddock)
    assert verdict(text, paddock, zones=paddock, label="dog", time="21:59") == "benign"
    assert verdict(text, paddock, zones=paddock, label="dog", time="22:00") == "alert"
    assert verdict(text, paddock, zones=paddock, label="person", time="23:00") == "model"  # not anything at night
    assert verdict(text, paddock, zones=(), label="dog", time="23:00") == "model"


# -- asides that say who someone is; job nouns with a word before them ---------------------------------------
def test_an_aside_naming_who_is_no_rule_and_says_so_but_one_with_meaning_is_read_or_refused():
    yard = ("yard",)
    text = "Alert on anyone in the yard after 9pm, unless they're in hi-vis (that's the night watchman)."
    assert not compiled(text, yard)  # "night" is a word a rule reads: no aside
    text = "Alert on anyone in the yard after 9pm, unless they're in hi-vis (they're the cleaners)."
    policy = compile_policy(text, yard)
    assert policy.uncompiled == ()
    assert any("an aside, no rule" in w for c in policy.clauses for w in c.used)
    assert verdict(text, yard, zones=yard, time="21:00", hivis=True) == "benign"
    assert verdict(text, yard, zones=yard, time="21:00", hivis=False) == "alert"
    assert not compiled("Alert on anyone in the yard unless in hi-vis (that's not the patrol).", yard)
    assert not compiled("Alert on anyone in the yard unless in hi-vis (that's the yard crew).", yard)  # a zone word


def test_they_after_a_subject_of_people_or_vehicles_is_that_subject():
    text = "Alert on any person or car in the yard, unless they're wearing hi-vis."
    yard = ("yard",)
    assert compiled(text, yard)
    assert verdict(text, yard, zones=yard, label="car", hivis=False) == "alert"
    assert verdict(text, yard, zones=yard, label="person", hivis=True) == "benign"


def test_a_job_noun_is_read_through_the_look_with_or_without_a_word_before_it():
    text = "The site nurse in the white tunic top is fine in the clinic. Anyone else there is an alert."
    assert not compiled(text, ("clinic",))  # "tunic": no word for it
    text = "The site nurse in a white top is fine in the clinic. Anyone else there is an alert."
    clinic = ("clinic",)
    assert compiled(text, clinic)
    assert verdict(text, clinic, zones=clinic, upper="white") == "benign"
    assert verdict(text, clinic, zones=clinic, upper="red") == "alert"
    assert not compiled("The site nurse is fine in the clinic.", clinic)  # who, without a look: the picture's


# -- more ways to say the verdicts ------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["Cats don't bother me.", "I don't mind cats.", "Don't bother me about cats.",
                                  "Cats are of no concern.", "There's no need to alert on cats."])
def test_ways_to_say_fine(text):
    assert compiled(text), text
    assert verdict(text, label="cat") == "benign" and verdict(text, label="person") == "model"


@pytest.mark.parametrize("text", ["Ring me if anyone is on the jetty after 10pm.",
                                  "Text me if anyone is on the jetty after 10pm.",
                                  "Call me if anyone is on the jetty after 10pm.",
                                  "Wake me up if anyone is on the jetty after 10pm."])
def test_ways_to_say_alert(text):
    jetty = ("jetty",)
    assert compiled(text, jetty)
    assert [verdict(text, jetty, zones=jetty, time=t) for t in ("21:59", "22:00", "05:59", "06:00")] == \
        ["model", "alert", "alert", "model"]


def test_is_there_without_a_time_is_the_place_named_before():
    text = "Alert on people at the jetty. Text me if anyone is there at night."
    jetty = ("jetty",)
    assert compiled(text, jetty)
    assert not compiled("Alert if anyone lingers on the jetty.", jetty)  # lingers for how long?


def test_after_dark_has_no_clock_time_and_is_not_compiled():
    assert not compiled("Ring me if anyone is on the jetty after dark.", ("jetty",))  # dark moves with the season


def test_weekday_ranges_said_with_between_and_weekday_day_parts():
    gate = ("gate",)
    text = "Alert on anyone at the gate between Tuesday and Thursday."
    assert [verdict(text, gate, zones=gate, day=d) for d in ("Mon", "Tue", "Thu", "Fri")] == \
        ["model", "alert", "alert", "model"]
    text = "People at the gate on weekday mornings are fine."
    assert verdict(text, gate, zones=gate, day="Fri", time="11:59") == "benign"
    assert verdict(text, gate, zones=gate, day="Fri", time="12:00") == "model"
    assert verdict(text, gate, zones=gate, day="Sat", time="09:00") == "model"
    assert not compiled("Alert on anyone at the gate on weekend nights.", gate)  # Friday's and Saturday's? or ...


def test_them_after_a_clause_in_the_same_sentence_is_its_subject_and_the_narrower_clause_wins():
    yard = ("yard", "gate")
    text = "Alert on vans and cars in the yard, but at night ignore them."
    assert not compiled(text, yard)  # "vans": no label
    text = "Alert on cars in the yard, but at night ignore them."
    assert compiled(text, yard)
    assert verdict(text, yard, zones=("yard",), label="car", time="21:59") == "alert"
    assert verdict(text, yard, zones=("yard",), label="car", time="22:00") == "benign"  # the narrower first
    assert verdict(text, yard, zones=("yard",), label="person", time="23:00") == "model"  # "them": the cars
    assert not compiled("Cars in the yard are an alert. Ignore them at night.", yard)  # them, a sentence later: who?


def test_a_verdict_about_nothing_said_is_not_compiled():
    text = "Alert on anyone at the gate, except at night, when it's fine."
    assert not compiled(text, ("gate",))  # not "everything is fine"


def test_a_place_list_with_a_comma_before_or_and_a_condition_after_is_not_compiled():
    zones = ("yard", "gate")
    assert not compiled("Alert if anyone is in the yard, or at the gate after 10pm.", zones)  # the gate only?
    text = "After 10pm, alert if anyone is in the yard, or at the gate."
    assert verdict(text, zones, zones=("gate",), time="22:00") == "alert"
    assert verdict(text, zones, zones=("yard",), time="21:59") == "model"
    text = "Alert if anyone comes out of the yard."
    assert [verdict(text, zones, zones=("yard",), way=w) for w in ("out", "in")] == ["alert", "model"]


def test_the_rest_of_the_week_is_never_read_as_monday_to_friday():
    # "the rest of the week" is the days the sentence did not name (here Monday to Friday and Sunday), a complement
    # this grammar does not take: the sentence goes to the model rather than becoming "benign on weekdays"
    bay = ("loading bay",)
    text = "Anyone at the loading bay on a Saturday is an alert; the rest of the week it's fine."
    policy = compile_policy(text, bay)
    assert policy.uncompiled, policy.plain()
    assert verdict(text, bay, day="Sat", zones=("loading bay",)) == "alert"
    for day in ("Mon", "Fri", "Sun"):  # not decided benign by a weekday rule the words never gave
        assert verdict(text, bay, day=day, zones=("loading bay",)) == "model", day
    # after "during" or "in", "the week" is the working week
    for text in ("During the week people at the loading bay are fine.",
                 "People at the loading bay in the week are fine."):
        assert compiled(text, bay), text
        assert verdict(text, bay, day="Wed", zones=("loading bay",)) == "benign"
        assert verdict(text, bay, day="Sat", zones=("loading bay",)) == "model"


# -- a verdict after a dash, an arrow or "=": "bikes in the shed - alert" ------------------------------------
def test_a_verdict_after_a_dash_arrow_or_equals_is_read_with_its_meaning():
    shed = ("shed",)
    for text in ("Bikes in the shed - alert.", "Bikes in the shed = alarm", "bikes in the shed -> alert me",
                 "Bikes in the shed - yes, an alert."):
        assert compiled(text, shed), text
        assert verdict(text, shed, zones=("shed",), label="bicycle") == "alert", text
        assert verdict(text, shed, zones=(), label="bicycle") == "model", text
        assert verdict(text, shed, zones=("shed",), label="person") == "model", text
    for text in ("Cats in the shed - fine.", "Cats in the shed = no alerts, ever", "cats in the shed -> ignore them",
                 "Cats in the shed - don't alert me", "Cats in the shed - never."):
        assert compiled(text, shed), text
        assert verdict(text, shed, zones=("shed",), label="cat") == "benign", text
        assert verdict(text, shed, zones=("shed",), label="dog") == "model", text


def test_a_dash_verdict_keeps_its_exception_and_a_bare_yes_or_no_is_not_compiled():
    shed = ("shed",)
    text = "People in the shed - alert, unless they are wearing hi-vis."
    said = "People in the shed are an alert, unless they are wearing hi-vis."  # the same sentence, spelled out
    assert compiled(text, shed)
    assert verdict(text, shed, zones=("shed",)) == "alert"
    assert verdict(text, shed, zones=("shed",), hivis=True) == verdict(said, shed, zones=("shed",), hivis=True)
    assert verdict(text, shed, zones=("shed",), hivis=True) != "alert"
    for text in ("Cats in the shed - no.", "Cats in the shed - yes.", "Cats in the shed - maybe alert"):
        assert not compiled(text, shed), text  # "no" what? a hi-vis? an alert? not guessed


# -- clock words: "half nine", "half past midnight", "quarter to midnight", "til", "onwards" -----------------
def test_half_an_hour_name_is_thirty_past_it():
    pen = ("pen",)
    text = "Anyone in the pen from half ten at night till 6am - alert."
    assert compiled(text, pen)
    assert [verdict(text, pen, zones=("pen",), time=t) for t in ("22:29", "22:30", "05:59", "06:00")] == [
        "model", "alert", "alert", "model"]
    text = "Alert on anyone in the pen between half 6 and 8 in the morning."
    assert [verdict(text, pen, zones=("pen",), time=t) for t in ("06:29", "06:30", "07:59", "08:00")] == [
        "model", "alert", "alert", "model"]
    assert not compiled("Alert on anyone in the pen from half 8 to 10.", pen)  # morning or evening: not guessed


def test_half_past_and_quarter_to_midnight():
    pen = ("pen",)
    text = "Alert on anyone in the pen between quarter to midnight and half past midnight."
    assert compiled(text, pen)
    assert [verdict(text, pen, zones=("pen",), time=t) for t in ("23:44", "23:45", "00:29", "00:30")] == [
        "model", "alert", "alert", "model"]
    text = "Alert on anyone in the pen from quarter past midnight til 4am."
    assert [verdict(text, pen, zones=("pen",), time=t) for t in ("00:14", "00:15", "03:59", "04:00")] == [
        "model", "alert", "alert", "model"]


def test_a_time_onwards_runs_on_as_after_does():
    pen = ("pen",)
    for text in ("Alert on anyone in the pen from 8pm onwards.", "Alert on anyone in the pen 8pm onwards.",
                 "Anyone in the pen 8pm or later is an alert."):
        assert compiled(text, pen), text
        assert [verdict(text, pen, zones=("pen",), time=t) for t in ("19:59", "20:00", "05:59")] == [
            "model", "alert", "alert"], text


# -- contractions typed without the apostrophe, and "please" ------------------------------------------------
def test_contractions_without_an_apostrophe_keep_their_negation():
    yard = ("yard",)
    for typed, spelled in (("Alert if someone in the yard isnt wearing hi-vis.",
                            "Alert if someone in the yard is not wearing hi-vis."),
                           ("Dont alert on cats in the yard.", "Do not alert on cats in the yard."),
                           ("Dogs in the yard arent a problem.", "Dogs in the yard are not a problem.")):
        assert compiled(typed, yard) == compiled(spelled, yard), typed
        for label, hivis in (("person", False), ("person", True), ("cat", False), ("dog", False)):
            assert verdict(typed, yard, zones=("yard",), label=label, hivis=hivis) == verdict(
                spelled, yard, zones=("yard",), label=label, hivis=hivis), (typed, label, hivis)
    assert verdict("Alert if someone in the yard isnt wearing hi-vis.", yard, zones=("yard",)) == "alert"
    assert not compiled("Alert if someone in the yard with its door open.", yard)  # "its" is no "it is"


def test_please_is_politeness_only():
    yard = ("yard",)
    for text in ("Please alert me if anyone is in the yard after 9pm.", "Alert me please if anyone is in the yard "
                 "after 9pm.", "pls alert on anyone in the yard after 9pm"):
        assert compiled(text, yard), text
        assert [verdict(text, yard, zones=("yard",), time=t) for t in ("20:59", "21:00")] == ["model", "alert"]


# -- symbols: "N+" is N or more (after a number only), "&" is "and"; "I want to know" is an alert -------------
def test_a_number_plus_is_that_number_or_more_and_a_unit_plus_is_not_compiled():
    hall = ("hall",)
    for text in ("If there are 4+ people in the hall, I need to know.", "Groups of 4+ in the hall - alert."):
        assert compiled(text, hall), text
        assert [verdict(text, hall, zones=("hall",), people=n) for n in (3, 4, 9)] == ["model", "alert", "alert"]
    assert not compiled("Anyone in the hall for 10 mins+ - alert.", hall)  # more than, or at least? not guessed


def test_an_ampersand_is_and():
    hall = ("hall",)
    text = "Bikes & motorbikes in the hall are fine."
    assert compiled(text, hall)
    assert [verdict(text, hall, zones=("hall",), label=x) for x in ("bicycle", "motorcycle", "car")] == [
        "benign", "benign", "model"]


def test_a_unit_and_a_half_is_half_a_unit_more():
    hall = ("hall",)
    text = "Alert if anyone stays in the hall longer than an hour and a half."
    assert compiled(text, hall)
    assert [verdict(text, hall, zones=("hall",), dwell=s) for s in (5400, 5401)] == ["model", "alert"]
    text = "Anyone in the hall for 2 minutes and a half or more - alert."
    assert compiled(text, hall)
    assert [verdict(text, hall, zones=("hall",), dwell=s) for s in (149, 150)] == ["model", "alert"]


def test_a_dotted_time_before_am_or_pm_is_a_clock_time():
    hall = ("hall",)
    text = "Alert on anyone in the hall between 9.15pm and 6.45am."
    assert compiled(text, hall)
    assert [verdict(text, hall, zones=("hall",), time=t) for t in ("21:14", "21:15", "06:44", "06:45")] == [
        "model", "alert", "alert", "model"]


def test_the_cameras_name_sharing_a_word_with_one_of_its_zones_is_not_compiled():
    # camera "front yard" with zones "yard" and "steps": "in the front yard" is the camera, or the zone "yard"?
    text = "Alert on anyone in the front yard after 10pm."
    policy = compile_policy(text, ("yard", "steps"), "front yard")
    assert policy.uncompiled, policy.plain()
    policy = compile_policy(text, ("porch", "steps"), "front yard")  # no zone shares its words: the camera
    assert policy.uncompiled == (), policy.plain()


def test_a_sentence_whose_exception_follows_in_words_not_compiled_is_not_compiled_either():
    yard = ("yard",)
    for text in ("Anyone in the yard after 8pm - alert. Except the milkman, who wears a cap.",
                 "Alert on anyone in the yard after 8pm. Not the vet though, she comes by now and then.",
                 "Alert on anyone in the yard after 8pm. Unless they look lost."):
        policy = compile_policy(text, yard)
        assert len(policy.uncompiled) == 2, (text, policy.plain())
        assert verdict(text, yard, zones=("yard",), time="21:00") == "model", text


def test_flag_it_and_tell_me_about_them_after_a_condition_are_alerts():
    yard = ("yard",)
    for text in ("If a car stays in the yard for 10 minutes or more, flag it.",
                 "If a car stays in the yard for 10 minutes or more, let me know about it."):
        assert compiled(text, yard), text
        assert [verdict(text, yard, zones=("yard",), label="car", dwell=s) for s in (599, 600)] == [
            "model", "alert"], text
    text = "Dogs in the yard - alert. Anything else - fine."
    assert compiled(text, yard)
    assert [verdict(text, yard, zones=("yard",), label=x) for x in ("dog", "cat")] == ["alert", "benign"]
    text = "Dogs in the yard - alert. Otherwise nothing."
    assert [verdict(text, yard, zones=("yard",), label=x) for x in ("dog", "cat")] == ["alert", "benign"]
