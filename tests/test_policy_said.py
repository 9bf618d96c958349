"""Said once, read later. Hours said of someone in a sentence with no verdict, and named later ("those hours"):
the sentence sets no condition of its own; the later words read its window (cloud/analysis/policy_grammar.py
`defn_said`, policy_words.py). A role's look said with no verdict ("our staff wear green tops"): later words
naming the role read that look (`defn_role`); a role no look tells apart stays NOT COMPILED. Hours or a look
that nothing later uses are NOT COMPILED: the sentence may be a rule in words no rule reads ("the cleaners are
here 6 to 9" could mean "so don't alert then"). Phrasings written here. Each sentence parsed once per machine
(tests/policy_reads.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from edgetriage.cloud.analysis.policy import Seen, evaluate
from edgetriage.cloud.analysis.policy_words import compile_policy
from edgetriage.shared.policycell import EventFacts
from policy_reads import remembered

ZONES = ("yard", "gate", "porch", "drive", "office")


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:
    yield from remembered()


def _verdict(text: str, minute: int, zone: str, weekday: int = 2) -> str | None:
    policy = compile_policy(text, ZONES)
    assert not policy.uncompiled, policy.plain()
    return evaluate(policy, Seen(EventFacts(minute, weekday, frozenset({zone}), 5.0, "", 1), "person")).verdict


@pytest.mark.parametrize(("text", "inside", "outside"), [
    ("The cleaners are here from 6pm to 9pm. Alert on anyone in the yard outside those hours.", None, "alert"),
    ("Our porter works 23:00-07:00. Tell me about anybody on the porch outside those hours.", None, "alert"),
    ("Deliveries are between 5am and 7am. Anyone at the gate during those hours is fine.", "benign", None),
    ("The gardener is in the yard from 10am to 2pm. During those hours people in the yard are fine.", "benign",
     None),
])
def test_hours_said_of_someone_are_the_hours_later_words_name(text, inside, outside):
    policy = compile_policy(text, ZONES)
    first = policy.clauses[0]
    zone = next(str(c.value) for c in first.conds if c.kind == "zone")
    times = [c for c in first.conds if c.kind == "time"]
    assert len(times) == 1 and len(first.conds) == 3, policy.plain()  # who, where, and the hours: nothing else
    start, end = times[0].value
    assert _verdict(text, start, zone) == inside  # the window's first minute
    assert _verdict(text, (end - 1) % 1440, zone) == inside  # its last
    assert _verdict(text, end, zone) == outside
    assert _verdict(text, (start - 1) % 1440, zone) == outside


def test_hours_said_with_days_keep_the_days():
    text = "Staff are on the drive from 8am to 6pm, weekdays. Outside those hours, alert on anyone on the drive."
    assert _verdict(text, 9 * 60, "drive", weekday=1) is None
    assert _verdict(text, 9 * 60, "drive", weekday=6) == "alert"  # Sunday: outside the weekdays' hours
    assert _verdict(text, 19 * 60, "drive", weekday=1) == "alert"


@pytest.mark.parametrize("text", [
    "The cleaners are here from 6pm to 9pm.",
    "The vet visits 10am-11am. Alert on anyone in the yard.",
    # the later sentence names hours of its own: "those hours" are its, and the said ones are left unused
    "The cleaners are here from 6pm to 9pm. Alert on anyone in the yard at night, ignore the gate at those times.",
])
def test_hours_said_and_never_used_are_not_compiled(text):
    policy = compile_policy(text, ZONES)
    said = text.split(".")[0]
    assert said in policy.uncompiled
    flag = next(c for c in policy.clauses if c.source == said)
    assert not flag.compiled
    assert flag.used == ("not compiled: hours said, and no later words say what happens in them (“during those "
                         "hours”)",)


@pytest.mark.parametrize("text", [
    "Nobody is here from 6pm to 9pm. Alert on anyone in the yard outside those hours.",  # "nobody": a rule
    "The cleaners are not here from 6pm to 9pm. Alert on anyone in the yard outside those hours.",
    "Only the cleaners are here from 6pm to 9pm. Alert on anyone in the yard outside those hours.",
])
def test_hours_said_with_a_negation_or_only_are_not_read_as_plain_hours(text):
    assert text.split(".")[0] in compile_policy(text, ZONES).uncompiled


def _seen(zone: str, upper: str | None = None, hivis: bool | None = False, minute: int = 720) -> Seen:
    return Seen(EventFacts(minute, 2, frozenset({zone}), 5.0, "", 1), "person", hivis, upper, None)


@pytest.mark.parametrize(("text", "look", "other"), [
    ("Our staff wear green tops. Staff in the yard are fine.", {"upper": "green"}, {"upper": "red"}),
    ("My cleaners are always in white shirts. Cleaners in the office are fine; anyone else in the office is an "
     "alert.", {"upper": "white"}, {"upper": "black"}),
    ("The guards wear hi-vis. Ignore guards at the gate.", {"hivis": True}, {"hivis": False}),
    ("A courier wears a yellow jacket. Couriers on the porch are fine.", {"upper": "yellow"}, {"upper": "blue"}),
])
def test_a_role_s_look_said_once_tells_the_role_apart_later(text, look, other):
    policy = compile_policy(text, ZONES)
    assert not policy.uncompiled, policy.plain()
    zone = next(str(c.value) for c in policy.clauses[0].conds if c.kind == "zone")
    assert evaluate(policy, _seen(zone, **look)).verdict == "benign"
    assert evaluate(policy, _seen(zone, **other)).verdict != "benign"
    assert evaluate(policy, _seen("drive", **look)).verdict is None  # elsewhere: the words say nothing


def test_a_role_s_look_in_an_exception():
    text = "The guards are always in hi-vis. Alert on anyone at the gate at night except the guards."
    policy = compile_policy(text, ZONES)
    assert not policy.uncompiled, policy.plain()
    night = 23 * 60
    assert evaluate(policy, _seen("gate", hivis=True, minute=night)).verdict == "benign"
    assert evaluate(policy, _seen("gate", hivis=False, minute=night)).verdict == "alert"


@pytest.mark.parametrize(("text", "flagged"), [
    ("Our staff wear green tops. Alert on anyone in the yard.", "Our staff wear green tops"),  # never named
    ("Staff in the yard are fine.", "Staff in the yard are fine"),  # no look: only the picture could tell
    ("Our staff wear green tops. Cleaners in the yard are fine.", "Cleaners in the yard are fine"),  # another role
])
def test_a_role_without_its_look_or_a_look_without_its_role_is_not_compiled(text, flagged):
    policy = compile_policy(text, ZONES)
    assert flagged in policy.uncompiled
    why = next(c.used for c in policy.clauses if c.source == flagged)
    assert why == (("not compiled: a look said of a role, and no later words name the role",) if "wear" in flagged
                   else (f"not compiled: who “{flagged.split()[0].lower()}” are: only the picture could tell",))
