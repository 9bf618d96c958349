"""How the words reader (cloud/analysis/policy_words.py) assembles a policy from its sentences: why a sentence is
NOT COMPILED, said to the operator in one line each (check-config shows it), which words each clause was read
from, a sentence joined by ';' against one of its own, hours named after their use, the camera itself as a
place, "nothing else" and the otherwises. Each sentence parsed once per machine (tests/policy_reads.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from edgetriage.cloud.analysis.policy import Cond, Seen, evaluate
from edgetriage.cloud.analysis.policy_check import PolicyRefused
from edgetriage.cloud.analysis.policy_words import compile_policy
from edgetriage.shared.policycell import EventFacts
from policy_reads import remembered


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:
    yield from remembered()


def verdict(text: str, known=(), camera=None, time="12:00", zones=(), label="person", hivis=False) -> str:
    h, m = (int(x) for x in time.split(":"))
    seen = Seen(EventFacts(h * 60 + m, 2, frozenset(zones), 5.0, "", 1), label, hivis)
    return evaluate(compile_policy(text, tuple(known), camera), seen).verdict or "model"


@pytest.mark.parametrize(("text", "known", "camera", "why"), [
    ("Ignore cats. Nothing else.", (), None, "“nothing else”: nothing else is what? (say “everything else is fine”)"),
    ("Alert if anyone is in there after 9pm.", (), None, "“there”: no place named before it"),
    ("Alert on anyone during quiet hours.", (), None, "“during quiet hours”: the words name no quiet hours"),
    ("Alert on anyone at the gate after closing.", ("gate",), None,
     "“after closing”: the words name no opening hours"),
    ("Anyone on the ramp outside those hours is an alert.", ("ramp",), None,
     "“outside those hours”: no hours named before it"),
    ("Anyone in the lift for less than that is fine.", ("lift",), None, "“less than that”: no time named before it"),
    ("The site nurse is fine in the clinic.", ("clinic",), None,
     "who “the site nurse” are: only the picture could tell"),
    ("Alert on anyone not in the shop.", (), "shop", "“not in the shop”: this camera is the shop"),
])
def test_a_sentence_not_compiled_says_why(text, known, camera, why):
    policy = compile_policy(text, known, camera)
    flagged = [c for c in policy.clauses if c.verdict == "model"]
    assert [c.used for c in flagged] == [(f"not compiled: {why}",)]
    assert flagged[0].conds == (Cond("words", flagged[0].source),) and policy.uncompiled == (flagged[0].source,)


def test_a_pronoun_a_sentence_later_and_a_fact_said_not_to_matter_say_why():
    policy = compile_policy("Cars in the yard are an alert. Ignore them at night.", ("yard",))
    assert [c.used for c in policy.clauses] == [("cars", "in the yard"),
                                                ("not compiled: “them”: who? (say who again)",)]
    assert policy.uncompiled == ("Ignore them at night",)
    policy = compile_policy("Alert on anyone in the loft without hi-vis. Hi-vis does not matter.", ("loft",))
    assert policy.clauses[-1].used == ("not compiled: a rule reads it: “Alert on anyone in the loft without hi-vis”",)
    assert policy.clauses[0].used == ("anyone", "in the loft", "without hivis")
    assert compile_policy("Alert on anyone in the loft. Hi-vis doesn't matter.", ("loft",)).uncompiled == ()


def test_the_words_each_clause_was_read_from_with_an_aside_noted():
    text = "Alert on anyone in the yard after 9pm, unless they are in hi-vis (they are the cleaners)."
    policy = compile_policy(text, ("yard",))
    aside = "(they are the cleaners): an aside, no rule"
    assert [(c.verdict, c.used) for c in policy.clauses] == [
        ("benign", ("anyone", "in the yard", "after 9 pm", "in hivis", aside)),
        ("alert", ("anyone", "in the yard", "after 9 pm", aside))]
    assert all(c.source == text.rstrip(".") for c in policy.clauses)
    assert compile_policy("Alert only if someone stays at the door longer than 30 s", ("door",)).clauses[0].used == \
        ("someone", "stays", "at the door", "longer than 30 s")


def test_a_clause_of_times_alone_is_about_the_one_before_only_in_the_same_sentence():
    joined = compile_policy("Dogs in the paddock are fine by day; at night, alert me.", ("paddock",))
    apart = compile_policy("Dogs in the paddock are fine by day. At night, alert me.", ("paddock",))
    assert joined.plain() == ("benign if: label = dog and zone = paddock and local time 06:00–22:00; alert if: "
                              "label = dog and zone = paddock and local time 22:00–06:00; otherwise the model is asked "
                              "(the words give no otherwise)")
    assert apart.plain() == ("benign if: label = dog and zone = paddock and local time 06:00–22:00; alert if: "
                             "local time 22:00–06:00; otherwise the model is asked (the words give no otherwise)")
    assert [c.used for c in apart.clauses] == [("dogs", "in the paddock", "by day"), ("at night",)]


def test_opening_hours_said_after_the_sentence_that_uses_them():
    text = "Alert on anyone at the gate after closing. We are open 9 to 5."
    assert compile_policy(text, ("gate",)).uncompiled == ()
    assert [verdict(text, ("gate",), zones=("gate",), time=t) for t in ("08:59", "09:00", "16:59", "17:00")] == \
        ["alert", "model", "model", "alert"]


def test_the_camera_itself_as_a_place_unless_it_has_a_zone_of_that_name():
    assert compile_policy("Alert on anyone in the shop.", (), "shop").clauses[0].conds == \
        (Cond("label", ("person",)), Cond("place", "shop"))
    assert verdict("Alert on anyone in the shop.", (), "shop") == "alert"
    assert compile_policy("Alert on anyone in the shop.", ("shop",), "shop").clauses[0].conds == \
        (Cond("label", ("person",)), Cond("zone", "shop"))
    assert verdict("Alert on anyone in the shop.", ("shop",), "shop", zones=()) == "model"


def test_nothing_else_and_the_otherwises():
    for text in ("Alert on cars. Nothing else.", "Alert on cars. Everything else is fine."):
        policy = compile_policy(text)
        assert (policy.otherwise, policy.otherwise_said, policy.uncompiled) == ("benign", True, ()), text
        assert verdict(text, label="car") == "alert" and verdict(text, label="dog") == "benign"
    policy = compile_policy("Cars are fine. Nothing else.")  # nothing else is ... what?
    assert (policy.otherwise, policy.otherwise_said, policy.uncompiled) == ("model", False, ("Nothing else",))
    with pytest.raises(PolicyRefused, match="^the words give two otherwises: “Otherwise alert” / “Otherwise benign”$"):
        compile_policy("Alert on cats. Otherwise alert. Otherwise benign.")
    policy = compile_policy("Alert on cats. Otherwise alert. Otherwise alert.")
    assert policy.otherwise == "alert" and policy.otherwise_said is True


def test_only_a_subject_may_be_in_a_place():
    text = "Only cars may be at the gate."
    policy = compile_policy(text, ("gate",))
    assert [(c.verdict, c.used) for c in policy.clauses] == [("benign", ("cars", "at the gate")),
                                                             ("alert", ("at the gate",))]
    assert [verdict(text, ("gate",), zones=z, label=x) for z, x in ((("gate",), "car"), (("gate",), "person"),
                                                                   ((), "person"))] == ["benign", "alert", "model"]


def test_a_fact_said_not_to_matter_is_checked_against_each_rule_that_reads_its_kind():
    gate = ("gate",)
    for fact, rule in (("The time does not matter.", "Alert on anyone at the gate after 9pm."),
                       ("The time does not matter.", "Alert on anyone at the gate on Saturdays."),
                       ("Direction does not matter.", "Alert on anyone at the gate walking towards the camera.")):
        policy = compile_policy(f"{rule} {fact}", gate)
        assert policy.uncompiled == (fact.rstrip("."),), (rule, fact)
        assert policy.clauses[-1].used == (f"not compiled: a rule reads it: “{rule.rstrip('.')}”",)
        assert compile_policy(f"Alert on anyone at the gate. {fact}", gate).uncompiled == ()
    # a rule that reads another kind of fact, or one not compiled, disagrees with nothing
    assert compile_policy("Alert on anyone at the gate after 9pm. Direction does not matter.", gate).uncompiled == ()
    assert compile_policy("Alert on anyone at the gate walking towards the camera. The time does not matter.",
                          gate).uncompiled == ()


def test_a_sentence_with_its_exception_the_exception_first_with_the_other_verdict():
    text = "People at the gate are fine unless they stay longer than 5 minutes."
    policy = compile_policy(text, ("gate",))
    assert policy.plain() == ("alert if: label = person and zone = gate and dwell > 300 s; benign if: label = person "
                              "and zone = gate; otherwise the model is asked (the words give no otherwise)")


def test_they_in_an_exception_is_the_subject_said_before_it():
    # was refused at load ("can never hold": label = person and label = car): "they" read as people
    text = "Cars in the yard are fine unless they stay longer than 5 minutes."
    yard = ("yard",)
    policy = compile_policy(text, yard)
    assert policy.plain() == ("alert if: label = car and zone = yard and dwell > 300 s; benign if: label = car and "
                              "zone = yard; otherwise the model is asked (the words give no otherwise)")
    seen = lambda label, dwell: Seen(EventFacts(720, 2, frozenset(yard), dwell, "", 1), label, False)  # noqa: E731
    assert [evaluate(policy, seen("car", d)).verdict for d in (300.0, 300.5)] == ["benign", "alert"]
    assert evaluate(policy, seen("person", 600.0)).verdict is None  # the words say nothing of people


def test_hours_defined_on_their_own_are_those_hours():
    text = "We are open 9 to 5. Anyone at the gate outside those hours is an alert."
    assert compile_policy(text, ("gate",)).plain() == ("alert if: label = person and zone = gate and local time "
                                                       "outside 09:00–17:00; otherwise the model is asked (the words "
                                                       "give no otherwise)")


def test_anything_else_at_any_time_is_the_otherwise():
    for text in ("Alert on cats. Anything else at any time is fine.", "Alert on cats. Everything else is fine, day or "
                 "night."):
        policy = compile_policy(text)
        assert policy.plain() == "alert if: label = cat; otherwise benign", text


def test_fine_only_somewhere_is_an_alert_elsewhere_for_that_subject():
    text = "Cars are fine only at the gate."
    assert compile_policy(text, ("gate",)).plain() == ("benign if: label = car and zone = gate; alert if: label = car; "
                                                       "otherwise the model is asked (the words give no otherwise)")
    assert [verdict(text, ("gate",), zones=z, label=x) for z, x in ((("gate",), "car"), ((), "car"), ((), "dog"))] \
        == ["benign", "alert", "model"]


def test_those_and_they_after_a_subject_in_the_same_sentence_are_that_subject():
    for text in ("Alert on cars in the yard, but at night those are fine.",
                 "Dogs in the yard are an alert by day; at night they are fine."):
        policy = compile_policy(text, ("yard",))
        assert policy.uncompiled == (), text
        night = [c for c in policy.clauses if c.verdict == "benign"]
        assert len(night) == 1 and Cond("zone", "yard") in night[0].conds and any(
            c.kind == "label" and c.value != ("person",) for c in night[0].conds), text


@pytest.mark.parametrize(("text", "zones", "plain"), [
    # "them" somewhere else: that place instead of the one before; "there": the same one
    ("Alert on cars in the yard, but ignore them at the gate.", ("yard", "gate"),
     "benign if: label = car and zone = gate; alert if: label = car and zone = yard"),
    ("Alert on cars in the yard, but ignore them there at night.", ("yard",),
     "benign if: label = car and zone = yard and local time 22:00–06:00; alert if: label = car and zone = yard"),
    # a clause of named hours alone after a ';' is about the same who and where
    ("We are open 9 to 5. Dogs in the shop are fine during opening hours; outside opening hours, alert me.",
     ("shop",), "benign if: label = dog and zone = shop and local time 09:00–17:00; alert if: label = dog and "
                "zone = shop and local time outside 09:00–17:00"),
    ("Dogs in the shop are fine from 9 to 5; outside those hours, alert me.", ("shop",),
     "benign if: label = dog and zone = shop and local time 09:00–17:00; alert if: label = dog and zone = shop and "
     "local time outside 09:00–17:00"),
    ("Dogs in the shop are fine during opening hours, which are 9 to 5; at other times, alert me.", ("shop",),
     "benign if: label = dog and zone = shop and local time 09:00–17:00; alert if: label = dog and zone = shop and "
     "local time outside 09:00–17:00"),
])
def test_a_later_clause_of_the_same_sentence_keeps_who_and_where_as_its_words_say(text, zones, plain):
    assert compile_policy(text, zones).plain() == f"{plain}; otherwise the model is asked (the words give no otherwise)"


@pytest.mark.parametrize(("text", "look"), [
    ("The site nurse in white trousers is fine in the clinic.", Cond("lower", "white")),
    ("The site nurse carrying a handbag is fine in the clinic.", Cond("carries", ("handbag",))),
])
def test_a_job_noun_is_read_through_any_look_the_words_give(text, look):
    policy = compile_policy(text, ("clinic",))
    assert policy.uncompiled == () and look in policy.clauses[0].conds
