"""An operator's policy compiled: clauses over the event's facts that decide a verdict, in order, the first
that holds deciding; `otherwise` when none does. The words become this form once, when the config loads
(policy_words.py); it is shown back (`plain`, `edgetriage cloud check-config`, the page) and evaluated here,
deterministically. The model never overrules it: it is asked only where a clause could not be compiled (a
`words` condition) or a fact the clause needs is missing, and the verdict says so (`decided_by`).

Conditions (`Cond.kind`), all read at the device's local time and from the cloud's own closer look:

| kind      | value                         | reads                                                          |
|-----------|-------------------------------|----------------------------------------------------------------|
| time      | (start, end[, days]) minutes  | the event's local_time; a window wraps midnight; `days` (a bit |
|           |                               | mask) are the days it starts on: "Friday night" is Fri 22:00 - |
|           |                               | Sat 06:00, so Saturday 02:00 is in it                          |
| weekday   | bit mask, bit 0 = Monday      | local date: captured_ms shifted by (local_time - UTC), nearest 15 min |
| zone      | a zone name (zone_word)       | the event's zones, by name only (its wording decides nothing)  |
| dwell     | (op, seconds)                 | the device's dwell_s                                           |
| direction | "towards the camera" ...      | the device's direction                                         |
| people    | (op, n)                       | person detections of the device in the frame (score >= 0.30)   |
| label     | COCO labels (a tuple)         | what the device asked about                                    |
| hivis     | True                          | a bright yellow/orange/green upper body, measured (hivis.py)   |
| upper     | a colour name                 | the translator's upper-body colour                             |
| lower     | a colour name                 | the translator's lower-body colour                             |
| carries   | COCO object names             | other objects in the crop                                      |
| words     | the uncompiled words          | nothing: unknown, the model is asked                           |
| any / all | conditions                    | either of them / all of them (with `negated`: none / not all)  |

Every condition can be negated. A clause's verdict is alert, benign or model (ask the model); `otherwise`
likewise, and where the words give none it is "model", said in the plain form. A sentence the words reader
could not compile is a clause "model if: [the words]": every event that no clause before it decides goes to
the model, exactly as check-config says.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...shared.policycell import DAY, EventFacts, PolicyInputs

NIGHT = (22 * 60, 6 * 60)  # "night": 22:00-06:00
DAYTIME = (6 * 60, 22 * 60)
WEEKDAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
ON_EVENT = ("time", "weekday", "zone", "dwell", "direction", "people")  # facts the event itself carries
LOOK = ("hivis", "upper", "lower", "carries")  # facts of the crop's look


@dataclass(frozen=True)
class Cond:
    kind: str
    value: object
    negated: bool = False

    def words(self) -> str:
        text = _cond_words(self.kind, self.value)
        if not self.negated:
            return text
        if self.kind in ("zone", "label", "upper", "lower", "direction", "place") and " = " in text:
            return text.replace(" = ", " ≠ ", 1)
        if self.kind == "time":
            return text.replace("local time ", "local time outside ", 1)
        return f"not ({text})"


@dataclass(frozen=True)
class Clause:
    verdict: str  # "alert" | "benign" | "model"
    conds: tuple[Cond, ...]
    source: str  # the operator's words it came from
    used: tuple[str, ...] = ()  # the words each condition and the verdict were read from

    @property
    def compiled(self) -> bool:
        return all(c.kind != "words" and (c.kind not in ("all", "any") or all(d.kind != "words" for d in c.value))
                   for c in self.conds)  # type: ignore[attr-defined]

    def words(self) -> str:
        return " and ".join(c.words() for c in self.conds) or "anything"


@dataclass(frozen=True)
class Policy:
    text: str
    clauses: tuple[Clause, ...]
    otherwise: str  # the verdict where no clause holds: alert | benign | model
    uncompiled: tuple[str, ...] = ()  # sentences no rule read: every event that reaches them goes to the model
    otherwise_said: bool = True  # False: the words gave no otherwise, so "model" is the form's, said aloud

    def plain(self) -> str:
        """The form that runs, in plain words, as check-config, `policy explain` and the page show it."""
        parts = [f"{c.verdict} if: {c.words()}" for c in self.clauses]
        tail = f"otherwise {self.otherwise}" if self.otherwise != "model" else "otherwise the model is asked"
        if not self.otherwise_said:
            tail += " (the words give no otherwise)"
        return "; ".join([*parts, tail])

    def conds(self) -> list[Cond]:
        """Every condition, those inside an "except" group too."""
        out: list[Cond] = []
        todo = [c for clause in self.clauses for c in clause.conds]
        while todo:
            cond = todo.pop(0)
            out.append(cond)
            if cond.kind in ("all", "any"):
                todo.extend(cond.value)  # type: ignore[arg-type]
        return out

    def zones(self) -> list[str]:
        return sorted({str(c.value) for c in self.conds() if c.kind == "zone"})

    def compiled_share(self) -> tuple[int, int]:
        """(clauses compiled, clauses): a clause with any uncompiled words counts as not compiled."""
        return sum(c.compiled for c in self.clauses), len(self.clauses)


@dataclass(frozen=True)
class Seen:
    """The facts a policy reads of one event: the event's own (EventFacts) and the closer look's."""

    event: EventFacts
    label: str
    hivis: bool | None = None
    upper: str | None = None
    lower: str | None = None
    objects: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Decision:
    verdict: str | None  # None: the policy cannot decide alone; the model is asked
    clause: str  # which clause decided ("otherwise benign"), or why the model is asked
    index: int  # the clause's number (-1: otherwise; -2: not decided)


def evaluate(policy: Policy, seen: Seen) -> Decision:
    """The first clause that holds decides. A clause that may hold (it needs an uncompiled sentence, or a fact
    the event did not send) decides nothing by itself: where what comes after it comes to its verdict anyway,
    that verdict stands; otherwise the model is asked. A "model" verdict is the model's to give."""
    open_: list[tuple[str, str]] = []  # (verdict, why) of the clauses that may hold
    decided = Decision(policy.otherwise, f"otherwise {policy.otherwise}", -1)
    for i, clause in enumerate(policy.clauses):
        holds = _all(clause.conds, seen)
        if holds is True:
            decided = Decision(clause.verdict, f"{clause.verdict} if: {clause.words()}", i)
            break
        if holds is None:
            missing = [c.words() if c.kind != "words" else f"“{c.value}”" for c in clause.conds
                       if _holds(c, seen) is None]
            open_.append((clause.verdict, f"{clause.verdict} if: … not known: {', '.join(missing)}"))
    if any(verdict != decided.verdict for verdict, _ in open_):
        return Decision(None, open_[0][1], -2)  # a clause before it that may hold would say otherwise
    if decided.verdict == "model":
        return Decision(None, decided.clause, -2)
    return decided


def _all(conds: tuple[Cond, ...], seen: Seen) -> bool | None:
    result: bool | None = True
    for cond in conds:
        value = _holds(cond, seen)
        if value is False:
            return False
        if value is None:
            result = None
    return result


def _holds(cond: Cond, seen: Seen) -> bool | None:
    value = _raw(cond, seen)
    return value if value is None or not cond.negated else not value


def _raw(cond: Cond, seen: Seen) -> bool | None:
    ev, kind, v = seen.event, cond.kind, cond.value
    if kind == "time":
        return None if ev.minute < 0 else in_time(ev.minute, ev.weekday, v)  # type: ignore[arg-type]
    if kind == "weekday":
        return None if ev.weekday > 6 else bool(int(v) >> ev.weekday & 1)  # type: ignore[call-overload]
    if kind == "zone":
        return v in ev.zones
    if kind == "dwell":
        return None if ev.dwell_s < 0 else compare(ev.dwell_s, v)  # type: ignore[arg-type]
    if kind == "direction":
        return None if not ev.direction else ev.direction == v
    if kind == "people":
        return compare(ev.people, v)  # type: ignore[arg-type]
    if kind == "label":
        return seen.label.lower() in v  # type: ignore[operator]
    if kind == "hivis":
        return seen.hivis
    if kind in ("upper", "lower"):
        colour = seen.upper if kind == "upper" else seen.lower
        return None if colour is None else colour == v
    if kind == "carries":
        return bool(seen.objects & set(v))  # type: ignore[call-overload]
    if kind == "all":
        return _all(v, seen)  # type: ignore[arg-type]
    if kind == "any":
        values = [_holds(c, seen) for c in v]  # type: ignore[attr-defined]
        return True if True in values else None if None in values else False
    if kind == "place":
        return True  # the camera itself: the policy is only applied to its events
    return None  # "words": only the model can tell


def in_time(minute: int, weekday: int, value: tuple) -> bool | None:
    """In the window, on a day it starts on: the part after midnight of a wrapping window belongs to the day
    before ("Friday night" holds on Saturday 02:00). None: the day is needed and not known."""
    if not in_window(minute, value[:2]):
        return False
    if len(value) < 3 or value[2] is None:
        return True
    if weekday > 6:
        return None
    start, end = value[:2]
    day = (weekday - 1) % 7 if start > end and minute < end else weekday
    return bool(value[2] >> day & 1)


def in_window(minute: int, window: tuple[int, int]) -> bool:
    start, end = window
    return start <= minute < end if start <= end else minute >= start or minute < end


def compare(value: float, test: tuple[str, float]) -> bool:
    op, n = test
    return {">": value > n, ">=": value >= n, "<": value < n, "<=": value <= n, "=": value == n}[op]


def inputs(policy: Policy, facts: EventFacts) -> PolicyInputs | None:
    """The ranges of the event's facts within which this policy reads them all the same: what a verdict under
    it is filed with (shared.policycell). None for a policy that reads nothing of the event."""
    look = any(c.kind in LOOK for c in policy.conds())
    conds = [c for c in policy.conds() if c.kind in ON_EVENT]
    if not conds and not look:
        return None
    kinds = {c.kind for c in conds}
    days = [int(c.value[2]) for c in conds if c.kind == "time" and len(c.value) > 2 and c.value[2] is not None]
    if days:
        kinds.add("weekday")  # a night of named days reads the day too, the day it starts on and the next
    fields: dict[str, object] = {"look": look}
    if "time" in kinds:
        cuts = sorted({0, DAY} | {m for c in conds if c.kind == "time" for m in c.value[:2]})  # type: ignore[index]
        fields["minutes"] = (-1, 0) if facts.minute < 0 else _cell(facts.minute, cuts)
    if "weekday" in kinds:
        masks = [int(c.value) for c in conds if c.kind == "weekday"]  # type: ignore[call-overload]
        masks += [m for d in days for m in (d, (d << 1 | d >> 6) & 0x7F)]
        if facts.weekday > 6:
            fields["weekdays"] = 1 << 7
        else:
            alike = [d for d in range(7) if all((m >> d & 1) == (m >> facts.weekday & 1) for m in masks)]
            fields["weekdays"] = sum(1 << d for d in alike)
    if "zone" in kinds:
        read = sorted({str(c.value) for c in conds if c.kind == "zone"})
        fields["zones_read"] = read
        fields["zones"] = sorted(facts.zones & set(read))
    if "dwell" in kinds:
        cuts = sorted({0.0, 1e9} | {float(t) for c in conds if c.kind == "dwell" for t in _cuts(c.value)})
        fields["dwell_s"] = (-1.0, 0.0) if facts.dwell_s < 0 else _cell(facts.dwell_s, cuts)
    if "direction" in kinds:
        fields["direction"] = facts.direction
    if "people" in kinds:
        cuts = sorted({0, 1 << 16} | {int(t) for c in conds if c.kind == "people" for t in _cuts(c.value)})
        fields["people"] = _cell(facts.people, cuts)
    return PolicyInputs(**fields)  # type: ignore[arg-type]


def _cuts(test: object) -> tuple[float, ...]:
    """Where a comparison's answer changes, as [low, high) bounds: "> 30" changes after 30, ">= 30" at 30, "= 30"
    at 30 and after it (the next whole person, the next microsecond of a stay: "= 30 s" is not 30.5 s)."""
    op, n = test  # type: ignore[misc]
    return (n, _next_up(n)) if op == "=" else ((n,) if op in (">=", "<") else (_next_up(n),))


def _next_up(n: float) -> float:
    return n + 1 if isinstance(n, int) else n + 1e-6


def _cell(value: float, cuts: list) -> tuple:
    for low, high in zip(cuts, cuts[1:], strict=False):
        if low <= value < high:
            return (low, high)
    return (cuts[-2], cuts[-1])


def _hm(minute: int) -> str:
    return f"{minute // 60 % 24:02d}:{minute % 60:02d}"


def _days(mask: int) -> str:
    days = [WEEKDAY_NAMES[d] for d in range(7) if mask >> d & 1]
    if days == list(WEEKDAY_NAMES[:5]):
        return "Mon–Fri"
    if days == ["Sat", "Sun"]:
        return "Sat–Sun"
    return ", ".join(days)


def _num(n: float) -> str:
    return f"{n:g}"


def _cond_words(kind: str, v: object) -> str:
    if kind == "time":
        on = f" starting on {_days(v[2])}" if len(v) > 2 and v[2] is not None else ""  # type: ignore[arg-type]
        return f"local time {_hm(v[0])}–{_hm(v[1])}{on}"  # type: ignore[index]
    if kind == "weekday":
        return f"day in {_days(int(v))}"  # type: ignore[call-overload]
    if kind == "dwell":
        return f"dwell {v[0]} {_num(v[1])} s"  # type: ignore[index]
    if kind == "people":
        return f"people in frame {v[0]} {_num(v[1])}"  # type: ignore[index]
    if kind == "hivis":
        return "hi-vis upper body (measured)"
    if kind == "upper":
        return f"top = {v}"
    if kind == "lower":
        return f"bottom = {v}"
    if kind == "carries":
        return "carries " + " or ".join(v)  # type: ignore[call-overload]
    if kind == "place":
        return f"camera = {v}"
    if kind == "all":
        return " and ".join(c.words() for c in v)  # type: ignore[attr-defined]
    if kind == "any":
        return "(" + " or ".join(c.words() for c in v) + ")"  # type: ignore[attr-defined]
    if kind == "direction":
        way = {"towards the camera": "entering", "away from the camera": "leaving"}.get(v, "moving")
        return f"direction = {v} ({way})"
    if kind == "label":
        return "label = " + " or ".join(v)  # type: ignore[arg-type]
    if kind == "words":
        return f"[not compiled: “{v}” — the model is asked]"
    return f"{kind} = {v}"


__all__ = ["Clause", "Cond", "Decision", "Policy", "Seen", "evaluate", "in_time", "inputs"]
