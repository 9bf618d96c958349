"""The compiled policy form (cloud/analysis/policy.py) at the edges test_policy_eval.py leaves: the form's parts
are values that cannot change once built (a verdict, a clause or what was seen, shared between threads and kept
in caches), a negated condition whose name holds " = " turns only its relation, the look not seen is unknown
(never "no colour"), a named night's first minute and a window's last minute on each day. Each case is one
that a one-character slip in policy.py reads differently; its mutation score (bench/mutation.py) is judged
with these and test_policy_eval.py. No parsing, no model (well under a second)."""

from __future__ import annotations

import dataclasses

import pytest
from edgetriage.cloud.analysis.policy import Clause, Cond, Decision, Policy, Seen, evaluate
from test_policy_eval import FRI, FRIDAY, SAT, SUN, THU, facts, hm, holds


def test_the_form_and_its_verdicts_are_values_that_do_not_change():
    clause = Clause("alert", (Cond("zone", "gate"),), "alert at the gate")
    policy = Policy("alert at the gate", (clause,), "benign")
    seen = Seen(facts(zones=("gate",)), "person")
    decision = evaluate(policy, seen)
    for value, name in ((clause, "verdict"), (policy, "otherwise"), (seen, "label"), (decision, "verdict")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, "benign")
    # equal parts are one value: a cache keyed by them finds them again
    assert len({decision, Decision("alert", "alert if: zone = gate", 0)}) == 1
    assert len({policy, Policy("alert at the gate", (clause,), "benign")}) == 1
    assert len({seen, Seen(facts(zones=("gate",)), "person")}) == 1


def test_a_condition_is_not_negated_unless_said():
    assert Cond("zone", "gate").negated is False  # a bool, as the form's JSON and the page show it
    assert Clause("alert", (), "always").used == ()  # no words noted: none, not unknown
    assert Policy("", (), "model").uncompiled == ()


def test_what_was_not_seen_is_unknown():
    plain = Seen(facts(), "person")
    assert (plain.hivis, plain.upper, plain.lower, plain.objects) == (None, None, None, frozenset())
    assert evaluate(Policy("", (Clause("alert", (Cond("upper", "red"),), ""),), "benign"), plain).verdict is None
    assert evaluate(Policy("", (Clause("alert", (Cond("lower", "red"),), ""),), "benign"), plain).verdict is None


@pytest.mark.parametrize(("cond", "negated"), [
    (Cond("zone", "a = b"), "zone ≠ a = b"),  # only the relation turns, not the words of the name
    (Cond("upper", "x = y"), "top ≠ x = y"),
])
def test_a_negated_relation_turns_only_the_relation(cond, negated):
    assert Cond(cond.kind, cond.value, True).words() == negated


def test_a_named_night_from_its_first_minute_to_its_last():
    friday_night = Cond("time", (hm("22:00"), hm("06:00"), FRIDAY))
    assert [holds(friday_night, time=t, day=d) for t, d in (
        ("21:59", FRI), ("22:00", FRI), ("23:59", FRI), ("00:00", SAT), ("05:59", SAT), ("06:00", SAT),
        ("00:00", FRI), ("22:00", THU), ("22:00", SAT))] == \
        ["benign", "alert", "alert", "alert", "alert", "benign", "benign", "benign", "benign"]
    sunday_night = Cond("time", (hm("22:00"), hm("06:00"), 1 << SUN))  # Sunday is a known day (6), not unknown
    assert [holds(sunday_night, time="23:00", day=d) for d in (SUN, SAT)] == ["alert", "benign"]
    evenings = Cond("time", (hm("18:00"), hm("22:00"), FRIDAY))  # no wrap: the day it is on
    assert [holds(evenings, time=t, day=d) for t, d in (("18:00", FRI), ("21:59", FRI), ("22:00", FRI),
                                                        ("18:00", SAT))] == ["alert", "alert", "benign", "benign"]


def test_every_type_the_form_declares_can_be_read():
    # the annotations are strings (from __future__ import annotations): a tool that reads them (typing, pydantic,
    # the docs) must be able to evaluate each one
    import inspect
    import typing

    from edgetriage.cloud.analysis import policy

    read = 0
    for _, thing in inspect.getmembers(policy, lambda m: inspect.isclass(m) or inspect.isfunction(m)):
        if thing.__module__ == policy.__name__:
            for part in (thing, *[f for f in vars(thing).values() if inspect.isfunction(f)]):
                typing.get_type_hints(part)
                read += 1
    assert read >= 20
