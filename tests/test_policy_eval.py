"""The compiled policy form (cloud/analysis/policy.py) on its own: the verdict each condition gives on the
facts of an event, at its edges (a window's first and last minute, a night's next morning, each comparison at
its number), what is unknown and who then decides, the plain words check-config shows for every kind and
negation, and the ranges of the facts a verdict is filed with (policy inputs). The form is built here as the
words reader and the config's rules build it; no parsing, no model (under a second)."""

from __future__ import annotations

import pytest
from edgetriage.cloud.analysis.policy import DAYTIME, NIGHT, Clause, Cond, Policy, Seen, evaluate, in_time, inputs
from edgetriage.shared.policycell import EventFacts

MON, TUE, WED, THU, FRI, SAT, SUN, UNKNOWN_DAY = range(8)
WEEKDAYS, WEEKEND, FRIDAY = 0b0011111, 0b1100000, 1 << FRI


def hm(text: str) -> int:
    h, m = text.split(":")
    return int(h) * 60 + int(m)


def facts(time="12:00", day=WED, zones=(), dwell=5.0, direction="", people=1) -> EventFacts:
    return EventFacts(-1 if time is None else hm(time), day, frozenset(zones), dwell, direction, people)


def seen(label="person", hivis=None, upper=None, lower=None, objects=(), **event) -> Seen:
    return Seen(facts(**event), label, hivis, upper, lower, frozenset(objects))


def holds(cond: Cond, **event) -> str | None:
    """The verdict of "alert if: cond; otherwise benign" ("model": the model is asked, the fact unknown)."""
    decision = evaluate(Policy("", (Clause("alert", (cond,), "w"),), "benign"), seen(**event))
    return decision.verdict or "model"


# -- each condition on the facts ------------------------------------------------------------------------------
def test_a_window_holds_from_its_first_minute_to_before_its_end():
    day = Cond("time", (hm("07:00"), hm("19:00")))
    assert [holds(day, time=t) for t in ("06:59", "07:00", "18:59", "19:00")] == \
        ["benign", "alert", "alert", "benign"]
    night = Cond("time", (hm("22:00"), hm("06:00")))
    assert [holds(night, time=t) for t in ("21:59", "22:00", "23:59", "00:00", "05:59", "06:00", "12:00")] == \
        ["benign", "alert", "alert", "alert", "alert", "benign", "benign"]
    assert holds(day, time=None) == "model"  # no local time sent: unknown
    outside = Cond("time", (hm("07:00"), hm("19:00")), True)
    assert [holds(outside, time=t) for t in ("06:59", "07:00", "19:00")] == ["alert", "benign", "alert"]
    assert holds(outside, time=None) == "model"  # not known is not "outside"
    assert holds(Cond("time", (hm("07:00"), hm("19:00"), None)), time="08:00", day=UNKNOWN_DAY) == "alert"
    assert [holds(Cond("time", (hm("07:00"), hm("07:00"))), time=t) for t in ("06:59", "07:00", "12:00")] == \
        ["benign"] * 3  # a window that starts where it ends holds no minute


def test_a_night_on_named_days_is_the_night_it_starts_on():
    friday_night = Cond("time", (hm("22:00"), hm("06:00"), FRIDAY))
    assert holds(friday_night, time="23:00", day=FRI) == "alert"
    assert holds(friday_night, time="02:00", day=SAT) == "alert"  # still Friday night
    assert holds(friday_night, time="02:00", day=FRI) == "benign"  # Thursday night
    assert holds(friday_night, time="23:00", day=SAT) == "benign"
    assert holds(friday_night, time="12:00", day=FRI) == "benign"
    assert holds(friday_night, time="23:00", day=UNKNOWN_DAY) == "model"
    assert holds(friday_night, time="12:00", day=UNKNOWN_DAY) == "benign"  # out of the window whatever the day
    sunday_night = Cond("time", (hm("22:00"), hm("06:00"), 1 << SUN))
    assert holds(sunday_night, time="01:00", day=MON) == "alert"  # the week wraps too
    assert holds(sunday_night, time="23:00", day=MON) == "benign"
    mornings = Cond("time", (hm("06:00"), hm("09:00"), WEEKDAYS))
    assert [holds(mornings, time="07:00", day=d) for d in (MON, FRI, SAT)] == ["alert", "alert", "benign"]
    assert in_time(hm("07:00"), SAT, (hm("06:00"), hm("09:00"), WEEKDAYS)) is False
    assert in_time(hm("07:00"), UNKNOWN_DAY, (hm("06:00"), hm("09:00"), WEEKDAYS)) is None


def test_weekdays_zone_direction_and_label():
    weekend = Cond("weekday", WEEKEND)
    assert [holds(weekend, day=d) for d in (FRI, SAT, SUN, MON, UNKNOWN_DAY)] == \
        ["benign", "alert", "alert", "benign", "model"]
    assert holds(Cond("weekday", 1 << MON), day=MON) == "alert"
    gate = Cond("zone", "gate")
    assert (holds(gate, zones=("gate", "yard")), holds(gate, zones=("yard",)), holds(gate)) == \
        ("alert", "benign", "benign")
    assert holds(Cond("zone", "gate", True), zones=()) == "alert"
    towards = Cond("direction", "towards the camera")
    assert [holds(towards, direction=d) for d in ("towards the camera", "left", "")] == ["alert", "benign", "model"]
    assert holds(Cond("direction", "left", True), direction="") == "model"
    cars = Cond("label", ("car", "truck"))
    assert [holds(cars, label=x) for x in ("car", "Truck", "person")] == ["alert", "alert", "benign"]


@pytest.mark.parametrize(("op", "n", "below", "at", "above"), [
    (">", 30, "benign", "benign", "alert"), (">=", 30, "benign", "alert", "alert"),
    ("<", 30, "alert", "benign", "benign"), ("<=", 30, "alert", "alert", "benign"),
    ("=", 30, "benign", "alert", "benign"),
])
def test_each_comparison_at_its_number(op, n, below, at, above):
    assert [holds(Cond("dwell", (op, n)), dwell=d) for d in (n - 0.1, float(n), n + 0.1)] == [below, at, above]
    assert [holds(Cond("people", (op, n)), people=p) for p in (n - 1, n, n + 1)] == [below, at, above]


def test_a_dwell_not_sent_is_unknown_and_no_dwell_is_zero():
    longer = Cond("dwell", (">", 30))
    assert holds(longer, dwell=-1.0) == "model"
    assert holds(Cond("dwell", ("<", 30)), dwell=0.0) == "alert"
    assert holds(Cond("dwell", ("<", 30), True), dwell=-1.0) == "model"
    assert holds(Cond("people", ("<", 2)), people=0) == "alert"


def test_the_look_hi_vis_colours_and_objects():
    vest = Cond("hivis", True)
    assert [holds(vest, hivis=h) for h in (True, False, None)] == ["alert", "benign", "model"]
    assert [holds(Cond("hivis", True, True), hivis=h) for h in (True, False, None)] == ["benign", "alert", "model"]
    for kind in ("upper", "lower"):
        red = Cond(kind, "red")
        assert [holds(red, **{kind: c}) for c in ("red", "blue", None)] == ["alert", "benign", "model"]
    assert holds(Cond("upper", "red"), lower="red") == "model"  # the top's colour, not the bottom's
    assert holds(Cond("lower", "red"), upper="red") == "model"
    bags = Cond("carries", ("backpack", "handbag"))
    assert [holds(bags, objects=o) for o in (("handbag",), ("umbrella",), ())] == ["alert", "benign", "benign"]
    assert holds(Cond("place", "shop")) == "alert" and holds(Cond("place", "shop", True)) == "benign"
    assert holds(Cond("words", "they look lost")) == "model"


def test_either_and_all_of_with_unknowns():
    vest, gate = Cond("hivis", True), Cond("zone", "gate")
    either, both = Cond("any", (vest, gate)), Cond("all", (vest, gate))
    cases = [(True, ("gate",)), (True, ()), (None, ("gate",)), (None, ()), (False, ())]
    assert [holds(either, hivis=h, zones=z) for h, z in cases] == ["alert", "alert", "alert", "model", "benign"]
    assert [holds(both, hivis=h, zones=z) for h, z in cases] == ["alert", "benign", "model", "benign", "benign"]
    assert [holds(Cond("any", (vest, gate), True), hivis=h, zones=z) for h, z in cases] == \
        ["benign", "benign", "benign", "model", "alert"]  # none of them
    assert holds(Cond("all", (vest, gate), True), hivis=True, zones=()) == "alert"  # not all of them


# -- which clause decides -------------------------------------------------------------------------------------
DOOR = Clause("alert", (Cond("label", ("person",)), Cond("zone", "door"), Cond("dwell", (">", 30.0))), "door")
VEST = Clause("benign", (Cond("hivis", True),), "vest")
LOST = Clause("alert", (Cond("words", "anyone who looks lost"),), "lost")


def test_the_first_clause_that_holds_decides_and_says_which():
    policy = Policy("", (VEST, DOOR), "benign")
    d = evaluate(policy, seen(hivis=True, zones=("door",), dwell=60.0))
    assert (d.verdict, d.index, d.clause) == ("benign", 0, "benign if: hi-vis upper body (measured)")
    d = evaluate(policy, seen(hivis=False, zones=("door",), dwell=60.0))
    assert (d.verdict, d.index, d.clause) == ("alert", 1, "alert if: label = person and zone = door and dwell > 30 s")
    d = evaluate(policy, seen(hivis=False, zones=("door",), dwell=5.0))
    assert (d.verdict, d.index, d.clause) == ("benign", -1, "otherwise benign")


def test_a_clause_that_may_hold_decides_nothing_unless_what_follows_says_the_same():
    policy = Policy("", (VEST, DOOR), "alert")
    # hi-vis unknown: the vest clause may hold (benign); the door clause holds (alert): the model is asked
    d = evaluate(policy, seen(hivis=None, zones=("door",), dwell=60.0))
    assert (d.verdict, d.index, d.clause) == (None, -2, "benign if: … not known: hi-vis upper body (measured)")
    # the same verdict either way: it stands
    d = evaluate(Policy("", (VEST, DOOR), "benign"), seen(hivis=None, zones=("door",), dwell=5.0))
    assert (d.verdict, d.index) == ("benign", -1)
    d = evaluate(Policy("", (LOST, DOOR), "benign"), seen(zones=("door",), dwell=60.0))
    assert (d.verdict, d.index, d.clause) == ("alert", 1, "alert if: label = person and zone = door and dwell > 30 s")
    d = evaluate(Policy("", (LOST, DOOR), "benign"), seen(zones=("door",), dwell=5.0))
    assert (d.verdict, d.clause) == (None, "alert if: … not known: “anyone who looks lost”")
    # every unknown condition named, the known ones not
    two = Clause("alert", (Cond("zone", "door"), Cond("dwell", (">", 30)), Cond("hivis", True, True)), "two")
    d = evaluate(Policy("", (two,), "benign"), seen(zones=("door",), dwell=-1.0, hivis=None))
    assert d.clause == "alert if: … not known: dwell > 30 s, not (hi-vis upper body (measured))"
    # of several that may hold, the first is the one said
    d = evaluate(Policy("", (VEST, LOST, DOOR), "benign"), seen(hivis=None, zones=("door",), dwell=60.0))
    assert (d.verdict, d.clause) == (None, "benign if: … not known: hi-vis upper body (measured)")
    # a clause known not to hold is no open clause; one that holds ends the reading
    d = evaluate(Policy("", (VEST, LOST, DOOR), "benign"), seen(hivis=True))
    assert (d.verdict, d.index) == ("benign", 0)


def test_a_model_verdict_is_the_model_s_to_give():
    ask = Clause("model", (Cond("zone", "door"),), "ask")
    d = evaluate(Policy("", (ask,), "benign"), seen(zones=("door",)))
    assert (d.verdict, d.index, d.clause) == (None, -2, "model if: zone = door")
    d = evaluate(Policy("", (ask,), "model"), seen())
    assert (d.verdict, d.index, d.clause) == (None, -2, "otherwise model")
    assert evaluate(Policy("", (ask,), "benign"), seen()).verdict == "benign"


# -- the plain words ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("cond", "plain", "negated"), [
    (Cond("time", (hm("22:00"), hm("06:00"))), "local time 22:00–06:00", "local time outside 22:00–06:00"),
    (Cond("time", (hm("22:00"), 1440, FRIDAY | 1 << SAT)), "local time 22:00–00:00 starting on Fri, Sat",
     "local time outside 22:00–00:00 starting on Fri, Sat"),
    (Cond("time", (hm("07:05"), hm("19:00"), None)), "local time 07:05–19:00", "local time outside 07:05–19:00"),
    (Cond("weekday", WEEKDAYS), "day in Mon–Fri", "not (day in Mon–Fri)"),
    (Cond("weekday", WEEKEND), "day in Sat–Sun", "not (day in Sat–Sun)"),
    (Cond("weekday", 1 << MON | 1 << SUN), "day in Mon, Sun", "not (day in Mon, Sun)"),
    (Cond("weekday", 1 << TUE | 1 << WED | 1 << THU), "day in Tue, Wed, Thu", "not (day in Tue, Wed, Thu)"),
    (Cond("zone", "gate"), "zone = gate", "zone ≠ gate"),
    (Cond("dwell", (">=", 30)), "dwell >= 30 s", "not (dwell >= 30 s)"),
    (Cond("dwell", ("<", 7.5)), "dwell < 7.5 s", "not (dwell < 7.5 s)"),
    (Cond("people", (">", 2)), "people in frame > 2", "not (people in frame > 2)"),
    (Cond("hivis", True), "hi-vis upper body (measured)", "not (hi-vis upper body (measured))"),
    (Cond("upper", "red"), "top = red", "top ≠ red"),
    (Cond("lower", "blue"), "bottom = blue", "bottom ≠ blue"),
    (Cond("carries", ("backpack", "knife")), "carries backpack or knife", "not (carries backpack or knife)"),
    (Cond("place", "shop"), "camera = shop", "camera ≠ shop"),
    (Cond("direction", "towards the camera"), "direction = towards the camera (entering)",
     "direction ≠ towards the camera (entering)"),
    (Cond("direction", "away from the camera"), "direction = away from the camera (leaving)",
     "direction ≠ away from the camera (leaving)"),
    (Cond("direction", "left"), "direction = left (moving)", "direction ≠ left (moving)"),
    (Cond("label", ("car", "truck")), "label = car or truck", "label ≠ car or truck"),
    (Cond("words", "looks lost"), "[not compiled: “looks lost” — the model is asked]",
     "not ([not compiled: “looks lost” — the model is asked])"),
    (Cond("all", (Cond("zone", "gate"), Cond("hivis", True, True))),
     "zone = gate and not (hi-vis upper body (measured))", "not (zone = gate and not (hi-vis upper body (measured)))"),
    (Cond("any", (Cond("zone", "gate"), Cond("zone", "yard"))), "(zone = gate or zone = yard)",
     "not ((zone = gate or zone = yard))"),
])
def test_each_condition_in_plain_words_and_negated(cond, plain, negated):
    assert cond.words() == plain
    assert Cond(cond.kind, cond.value, True).words() == negated


def test_the_plain_form_of_a_policy():
    assert Policy("", (VEST, DOOR), "benign").plain() == \
        "benign if: hi-vis upper body (measured); alert if: label = person and zone = door and dwell > 30 s; " \
        "otherwise benign"
    assert Policy("", (VEST,), "model").plain() == \
        "benign if: hi-vis upper body (measured); otherwise the model is asked"
    assert Policy("", (), "model", otherwise_said=False).plain() == \
        "otherwise the model is asked (the words give no otherwise)"
    assert Policy("", (), "alert", otherwise_said=False).plain() == "otherwise alert (the words give no otherwise)"
    assert Policy("", (Clause("alert", (), "always"),), "model").plain() == \
        "alert if: anything; otherwise the model is asked"
    assert Policy("", (), "model").uncompiled == () and Policy("", (), "model").otherwise_said is True


def test_what_a_policy_reads_and_how_much_of_it_compiled():
    inner = Cond("any", (Cond("zone", "yard"), Cond("all", (Cond("zone", "gate"), Cond("words", "lost")))))
    nested = Clause("alert", (Cond("zone", "dock"), inner), "nested")
    policy = Policy("", (nested, VEST, DOOR, LOST), "benign")
    assert [c.kind for c in policy.conds()] == ["zone", "any", "hivis", "label", "zone", "dwell", "words", "zone",
                                                "all", "zone", "words"]
    assert policy.zones() == ["dock", "door", "gate", "yard"]
    assert Policy("", (VEST, DOOR, LOST), "benign").compiled_share() == (2, 3)
    assert (VEST.compiled, DOOR.compiled, LOST.compiled) == (True, True, False)
    assert Clause("alert", (Cond("any", (Cond("zone", "a"), Cond("words", "w"))),), "").compiled is False
    assert Clause("alert", (Cond("all", (Cond("zone", "a"), Cond("words", "w"))),), "").compiled is False
    assert Clause("alert", (Cond("any", (Cond("zone", "a"), Cond("zone", "b"))),), "").compiled is True
    assert Seen(facts(), "person").objects == frozenset() and Seen(facts(), "person").hivis is None
    # conditions are values: the reader drops a repeated one (dict.fromkeys), a clause's are compared as such
    assert list(dict.fromkeys([Cond("zone", "a"), Cond("zone", "a"), Cond("zone", "a", True)])) == \
        [Cond("zone", "a"), Cond("zone", "a", True)]


def test_night_and_daytime_are_the_documented_hours():
    # the words reader's "night" and "daytime" (docs/operator/policies.md): 22:00-06:00 and 06:00-22:00
    assert (NIGHT, DAYTIME) == ((hm("22:00"), hm("06:00")), (hm("06:00"), hm("22:00")))


# -- the ranges a verdict is filed with -----------------------------------------------------------------------
def test_a_policy_that_reads_nothing_of_the_event_files_no_ranges():
    assert inputs(Policy("", (Clause("alert", (Cond("label", ("person",)),), ""),), "benign"), facts()) is None
    assert inputs(Policy("", (), "benign"), facts()) is None
    looked = inputs(Policy("", (VEST,), "benign"), facts())
    assert looked is not None and looked.look is True and looked.minutes is None and looked.dwell_s is None
    for cond in (Cond("upper", "red"), Cond("lower", "blue"), Cond("carries", ("knife",))):
        cell = inputs(Policy("", (Clause("alert", (cond,), ""),), "benign"), facts())
        assert cell is not None and cell.look is True, cond
    zone = inputs(Policy("", (Clause("alert", (Cond("zone", "gate"),), ""),), "benign"), facts())
    assert zone.look is False and zone.zones_read == ["gate"]


def test_time_ranges_cut_at_every_window_edge():
    policy = Policy("", (Clause("alert", (Cond("time", (hm("22:00"), hm("06:00"))),), ""),
                         Clause("benign", (Cond("time", (hm("09:00"), hm("17:00")), True),), "")), "benign")
    at = {t: inputs(policy, facts(time=t)) for t in ("00:00", "05:59", "06:00", "12:00", "21:59", "22:00", "23:59")}
    assert at["00:00"].minutes == at["05:59"].minutes == (0, 360)
    assert at["06:00"].minutes == (360, 540)
    assert at["12:00"].minutes == (540, 1020)
    assert at["21:59"].minutes == (1020, 1320)
    assert at["22:00"].minutes == at["23:59"].minutes == (1320, 1440)
    assert inputs(policy, facts(time=None)).minutes == (-1, 0)
    assert at["12:00"].look is False and at["12:00"].weekdays is None and at["12:00"].people is None


def test_day_ranges_group_the_days_a_policy_reads_alike():
    weekend = Policy("", (Clause("alert", (Cond("weekday", WEEKEND),), ""),), "benign")
    assert inputs(weekend, facts(day=MON)).weekdays == WEEKDAYS
    assert inputs(weekend, facts(day=SUN)).weekdays == WEEKEND
    assert inputs(weekend, facts(day=UNKNOWN_DAY)).weekdays == 1 << 7
    friday_night = Policy("", (Clause("alert", (Cond("time", (hm("22:00"), hm("06:00"), FRIDAY)),), ""),), "benign")
    # the night reads the day it starts on and the next: Friday and Saturday each their own, the rest alike
    assert inputs(friday_night, facts(day=FRI)).weekdays == FRIDAY
    assert inputs(friday_night, facts(day=SAT)).weekdays == 1 << SAT
    assert inputs(friday_night, facts(day=TUE)).weekdays == 0b1001111
    sunday_night = Policy("", (Clause("alert", (Cond("time", (hm("22:00"), hm("06:00"), 1 << SUN)),), ""),), "")
    assert inputs(sunday_night, facts(day=MON)).weekdays == 1 << MON  # Sunday night runs into Monday
    assert inputs(sunday_night, facts(day=WED)).weekdays == 0b0111110
    assert inputs(sunday_night, facts(day=WED)).minutes == (360, 1320)
    plain_night = Policy("", (Clause("alert", (Cond("time", (hm("22:00"), hm("06:00"), None)),), ""),), "")
    assert inputs(plain_night, facts(day=WED)).weekdays is None


def test_zone_direction_dwell_and_people_ranges():
    policy = Policy("", (Clause("alert", (Cond("zone", "gate"), Cond("dwell", (">", 30.0)), Cond("people", (">=", 3)),
                                          Cond("direction", "left"), Cond("zone", "yard", True)), ""),), "benign")
    cell = inputs(policy, facts(zones=("gate", "road"), dwell=30.0, people=2, direction="right"))
    assert (cell.zones_read, cell.zones, cell.direction) == (["gate", "yard"], ["gate"], "right")
    assert cell.dwell_s == (0.0, 30.000001) and cell.people == (0, 3)
    cell = inputs(policy, facts(dwell=30.5, people=3))
    assert cell.dwell_s == (30.000001, 1e9) and cell.people == (3, 1 << 16) and cell.zones == []
    assert inputs(policy, facts(dwell=-1.0)).dwell_s == (-1.0, 0.0)
    assert inputs(policy, facts(dwell=2e9, people=1 << 17)).dwell_s == (30.000001, 1e9)  # past the last cut
    assert inputs(policy, facts(people=1 << 17)).people == (3, 1 << 16)


@pytest.mark.parametrize(("test", "cuts"), [  # seconds are floats, as the words reader and the rule form give them
    ((">", 30.0), [0.0, 30.000001, 1e9]), ((">", 30.5), [0.0, 30.500001, 1e9]), ((">=", 30.0), [0.0, 30.0, 1e9]),
    (("<", 30.0), [0.0, 30.0, 1e9]), (("<=", 30.0), [0.0, 30.000001, 1e9]),
    (("=", 30.0), [0.0, 30.0, 30.000001, 1e9]),
])
def test_a_comparison_changes_its_answer_at_its_cut(test, cuts):
    policy = Policy("", (Clause("alert", (Cond("dwell", test),), ""),), "benign")
    cells = {inputs(policy, facts(dwell=d)).dwell_s for d in (0.0, 29.9, 30.0, 30.4, 30.6, 31.0, 1e8)}
    assert sorted({x for cell in cells for x in cell}) == cuts
    # each range holds events the policy reads alike: never one it alerts on beside one it does not
    for d in (29.9, 30.0, 30.4, 30.6, 31.0):  # (to the microsecond: _next_up)
        low, high = inputs(policy, facts(dwell=d)).dwell_s
        assert holds(Cond("dwell", test), dwell=low) == holds(Cond("dwell", test), dwell=d), (d, low, high)


@pytest.mark.parametrize(("test", "cells"), [
    ((">", 2), [(0, 3), (0, 3), (0, 3), (3, 65536)]), ((">=", 2), [(0, 2), (0, 2), (2, 65536), (2, 65536)]),
    (("=", 2), [(0, 2), (0, 2), (2, 3), (3, 65536)]), (("<=", 2), [(0, 3), (0, 3), (0, 3), (3, 65536)]),
])
def test_people_ranges_are_whole_people(test, cells):
    policy = Policy("", (Clause("alert", (Cond("people", test),), ""),), "benign")
    assert [inputs(policy, facts(people=p)).people for p in (0, 1, 2, 3)] == cells
