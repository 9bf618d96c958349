"""The pieces a policy sentence is read into (policy_tree.py reads the parse tree, policy_words.py assembles the
clauses): a condition, a subject, a sentence's kind and verdict; and the meanings of the grammar's lower half:
clock times and windows, day parts, days, dwell, direction, the look and what is carried."""

from __future__ import annotations

from dataclasses import dataclass

from .policy import DAYTIME, NIGHT, Cond, in_window
from .policy_check import PolicyRefused
from .policy_lexicon import Tok

_PARTS = {"morning": (360, 720), "afternoon": (720, 1080), "evening": (1080, 1320), "night": NIGHT,
          "daytime": DAYTIME}
_OPS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "="}


class Flag(Exception):  # noqa: N818 - a sentence not compiled, and why
    pass


@dataclass(frozen=True)
class Piece:
    kind: str  # cond person label role only there dwell_verb opening none
    value: object = None
    words: str = ""
    night_of: bool = False  # "Friday or Saturday night": a day part after a list of days


@dataclass(frozen=True)
class Sent:
    kind: str  # lead copular nobody else otherwise defn
    verdict: str = ""
    pre: tuple[Piece, ...] = ()
    post: tuple[Piece, ...] = ()
    exc: tuple[Piece, ...] | None = None
    only: str = ""  # "" | "all" (alert only if) | "pre" (only <subject> may be) | "post" (are only allowed in)
    window: Cond | None = None  # a "defn": the hours it defines (the time, and the days where said)

def _words(values: list) -> str:
    out: list[str] = []
    for v in values:
        if isinstance(v, Tok):
            out.append(v.word)
        elif isinstance(v, Piece):
            out.append(v.words)
        elif isinstance(v, tuple) and v and all(isinstance(p, Piece) for p in v):
            out.extend(p.words for p in v)
        elif isinstance(v, _Words):
            out.append(v.words)
    return " ".join(w for w in out if w)


@dataclass(frozen=True)
class _Words:
    """A value with the words it was read from: a clock time, a window, a verdict mark..."""

    kind: str
    value: object
    words: str


def _find(values: list, kind: str) -> object:
    return next((v.value for v in values if isinstance(v, _Words) and v.kind == kind), None)


def _toks(values: list, type_: str) -> list:
    return [v.value for v in values if isinstance(v, Tok) and v.type == type_]

def _times(name: str, ch: list, words: str, pieces: tuple) -> object:  # noqa: C901, PLR0911, PLR0912
    """The rules of times, days, dwell, direction and the look (the grammar's lower half)."""
    if name in _PARTS:
        return Piece("cond", Cond("time", _PARTS[name]), words)
    if name in ("clock_num", "clock_word", "noon", "midnight", "half_past", "quarter_past", "quarter_to",
                "by_midnight"):
        return _Words("clock", _clock(name, ch, words), words)
    if name in ("am", "pm"):
        return _Words("ampm", name, words)
    if name == "range":
        clocks = [c.value for c in ch if isinstance(c, _Words) and c.kind == "clock"]
        return _Words("window", _range(clocks[0], clocks[1], words), words)
    if name == "within":
        return Piece("cond", Cond("time", _find(ch, "window")), words)
    if name == "outside":
        return Piece("cond", Cond("time", _find(ch, "window"), True), words)
    if name in ("outside_hours", "during_hours"):
        return Piece("opening_def", (_find(ch, "hours_words"), _find(ch, "span"), name == "outside_hours"), words)
    if name == "hours_span":
        window, days = Cond("time", _find(ch, "window")), next((p.value for p in pieces if p.kind == "cond"), None)
        return _Words("span", window if days is None else Cond("all", (window, days)), words)
    if name in ("hours_open", "hours_named"):
        named = [str(t.value) for t in ch if isinstance(t, Tok) and t.type in ("T_WORD", "T_OTHER")]
        return _Words("hours_words", named[0] if named else "opening", words)
    if name in ("those_in", "those_out"):
        return Piece("those", name == "those_out", words)
    if name in ("after", "before"):
        clock = _find(ch, "clock")
        return Piece("cond", Cond("time", _after(clock, name == "after", words)), words)  # type: ignore[arg-type]
    if name in ("closed", "opened"):
        return Piece("opening", (name == "closed", _find(ch, "hours_words") or "opening"), words)
    if name == "any_time":
        return Piece("none", None, words)
    if name == "day_mod":
        return Piece("cond", Cond("weekday", _find(ch, "days")), words)
    if name in ("weekdays", "weekend", "every_day"):
        return _Words("days", {"weekdays": 0b0011111, "weekend": 0b1100000, "every_day": 0b1111111}[name], words)
    if name == "days":
        return _Words("days", _find(ch, "daylist"), words)
    if name == "day_list":
        return _Words("daylist", sum(1 << int(d) for d in _toks(ch, "T_DAY")), words)
    if name == "day_span":
        a, b = (int(d) for d in _toks(ch, "T_DAY"))
        days = range(a, b + 1) if a <= b else [*range(a, 7), *range(0, b + 1)]
        return _Words("days", sum(1 << d for d in days), words)
    if name in ("weekday_set", "weekend_set"):  # "weekday mornings": each weekday's morning
        return _Words("daylist", 0b0011111 if name == "weekday_set" else 0b1100000, words)
    if name == "night_of":
        return Piece("cond", Cond("time", (*NIGHT, _find(ch, "daylist"))), words, True)
    if name in ("evening_of", "morning_of", "afternoon_of"):
        part = _PARTS[name.split("_")[0]]
        return Piece("cond", Cond("all", (Cond("weekday", _find(ch, "daylist")), Cond("time", part))), words, True)
    if name == "dwell_verb":
        return Piece("dwell_verb", None, words)
    if name in ("dwell_cmp", "dwell_or_more", "dwell_or_less", "dwell_cmp_half", "dwell_or_more_half"):
        op = _find(ch, "op") if name.startswith("dwell_cmp") else "<=" if name == "dwell_or_less" else ">="
        half = 0.5 if name.endswith("_half") else 0.0  # "a minute and a half": 90 s
        seconds = (float(_find(ch, "num")) + half) * float(_find(ch, "unit"))  # type: ignore[arg-type]
        return Piece("cond", Cond("dwell", (op, seconds)), words)
    if name in ("towards", "away"):
        return Piece("cond", Cond("direction", f"{name} {'from ' if name == 'away' else ''}the camera"), words)
    if name == "passing":  # walking past: across the view, either way
        return Piece("cond", Cond("any", (Cond("direction", "left"), Cond("direction", "right"))), words)
    if name == "enter_place":
        zone = _place(False, [c.value for c in ch if isinstance(c, _Words) and c.kind == "zone"], words)
        return (Piece("cond", Cond("direction", "towards the camera"), words), zone)
    if name == "workday":
        return Piece("workday", None, words)
    if name == "apposed":  # "overnight, 7pm to 6:30am": the clock range says which hours the part means
        part, window = pieces[0], _find(ch, "window")
        if part.kind == "cond" and not any(in_window(m, part.value.value) and in_window(m, window)
                                           for m in range(1440)):
            raise PolicyRefused(f"“{part.words}” and “{words[len(part.words):].strip(' ,')}” never hold at once")
        return Piece("cond", Cond("time", window), words)
    if name == "sideways":
        return Piece("cond", Cond("direction", "left" if "left" in words.split() else "right"), words)
    if name == "not_direction":
        cond = pieces[0].value
        return Piece("cond", Cond(cond.kind, cond.value, True), words)
    if name in ("hivis_yes", "hivis_no"):
        return Piece("cond", Cond("hivis", True, name.endswith("no")), words)
    if name in ("colour_yes", "colour_no"):
        cond = next(c.value for c in ch if isinstance(c, _Words) and c.kind == "colour")
        return Piece("cond", Cond(cond.kind, cond.value, name.endswith("no")), words)
    if name in ("colour_all_yes", "colour_all_no", "colour_any_yes"):  # "in a black top and black trousers"
        conds = tuple(c.value for c in ch if isinstance(c, _Words) and c.kind == "colour")
        return Piece("cond", Cond(name.split("_")[1], conds, name.endswith("no")), words)
    if name == "dwell_both":  # "for less than 10 seconds but more than a minute": both
        ops, nums, units = ([c.value for c in ch if isinstance(c, _Words) and c.kind == k]
                            for k in ("op", "num", "unit"))
        both = tuple(Cond("dwell", (op, float(n) * float(u))) for op, n, u in zip(ops, nums, units, strict=True))
        return Piece("cond", Cond("all", both), words)
    if name == "dwell_that":
        return Piece("dwell_that", _find(ch, "op"), words)
    if name in ("upper", "lower"):
        return _Words("colour", Cond(name, _toks(ch, "T_COLOUR")[0]), words)
    if name in ("hivis_np", "colour_np"):
        return _Words(name, None, words)
    if name in ("carry_yes", "carry_no"):
        objects = _find(ch, "objects")
        return Piece("cond", Cond("carries", objects, name.endswith("no")), words)
    if name == "objects":
        return _Words("objects", tuple(dict.fromkeys(o for t in _toks(ch, "T_OBJECT") for o in t)), words)
    if name == "dwell":
        return pieces[0] if pieces else Piece("none", None, words)
    raise Flag(f"no meaning for “{words}” ({name})")


def _count(name: str, ch: list) -> tuple[str, float]:
    n = _find(ch, "num")
    if name == "count_alone":
        return ("<=", 1)
    if name == "count_cmp":
        return (_find(ch, "op"), int(n))  # type: ignore[return-value,arg-type]
    if name == "count_range":  # "more than two and fewer than five people": both hold (policy_check refuses none)
        ops = [v.value for v in ch if isinstance(v, _Words) and v.kind == "op"]
        nums = [v.value for v in ch if isinstance(v, _Words) and v.kind == "num"]
        return tuple((op, int(m)) for op, m in zip(ops, nums, strict=True))  # type: ignore[return-value]
    more = any(isinstance(c, Tok) and c.word == "more" for c in ch)
    if name == "count_group":
        op = _find(ch, "op") or (">=" if more else None)
        return (op or ">=", int(n))  # type: ignore[arg-type]
    return (">=" if more else "<=", int(n))  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Clock:
    minute: int  # 0..1440
    bare: bool  # an hour 1..12 with no am/pm: morning or evening is not said
    words: str


def _clock(name: str, ch: list, words: str) -> _Clock:
    if name == "noon":
        return _Clock(720, False, words)
    if name == "midnight":
        return _Clock(0, False, words)
    if name == "by_midnight":  # "half past midnight" 00:30, "quarter to midnight" 23:45
        return _Clock({"half past": 30, "quarter past": 15, "quarter to": 1425}[
            " ".join(words.split()[:2])], False, words)
    ampm = _find(ch, "ampm")
    clock = (_toks(ch, "T_CLOCK") or [None])[0]
    number = (_toks(ch, "T_NUM") + _toks(ch, "T_NUMWORD") or [None])[0]
    if clock is not None:
        hour, minute = clock
    else:
        if number is None or number != int(number):
            raise PolicyRefused(f"impossible time “{words}”")
        hour, minute = int(number), 0
    if name == "half_past":
        minute = 30
    elif name == "quarter_past":
        minute = 15
    elif name == "quarter_to":
        hour, minute = hour - 1, 45
    if minute > 59 or hour > 24 or (hour == 24 and minute) or (ampm and not 1 <= hour <= 12) or hour < 0:
        raise PolicyRefused(f"impossible time “{words}”")
    if ampm:
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    bare = not ampm and clock is None and 1 <= hour <= 12 or (name in ("half_past", "quarter_past", "quarter_to")
                                                               and not ampm and hour <= 12)
    return _Clock(hour * 60 + minute, bool(bare), words)


def _range(a: _Clock, b: _Clock, words: str) -> tuple[int, int]:
    """A window; bare hours read in the opening-hours sense where that is the only sense: "9 to 5" is
    09:00-17:00; "8 to 10" could be morning or evening, and is not compiled. One bare hour next to a said
    one is the half of the day that makes the window the shorter ("6 to 8pm" is 18:00-20:00, "9 to 5pm"
    09:00-17:00, "10pm to 6" 22:00-06:00, "8 till noon" 08:00-12:00)."""
    start, end = a.minute, b.minute
    if a.bare and b.bare:
        if start % 720 <= end % 720:
            raise Flag(f"“{words}”: morning or evening? (say am/pm or 24-hour times)")
        start, end = start % 720, end % 720 + 720
    elif a.bare or b.bare:
        bare, said = (start, end) if a.bare else (end, start)
        options = []  # (length, the bare hour's minute), a window of no length left out
        for m in (bare % 720, bare % 720 + 720):
            length = ((said - m) if a.bare else (m - said)) % 1440
            if length:
                options.append((length, m))
        options.sort()
        if len(options) > 1 and options[0][0] == options[1][0]:
            raise Flag(f"“{words}”: morning or evening? (say am/pm or 24-hour times)")
        start, end = (options[0][1], end) if a.bare else (start, options[0][1])
    end %= 1440
    if start == end:
        raise PolicyRefused(f"“{words}” is no window: it starts where it ends")
    return start, end


def _after(clock: _Clock, after: bool, words: str) -> tuple[int, int]:
    if clock.bare:
        raise Flag(f"“{words}”: morning or evening? (say am/pm or 24-hour times)")
    minute = clock.minute % 1440
    if not after:
        if minute == 0:
            raise PolicyRefused(f"“{words}” never holds")
        if minute >= NIGHT[0]:  # "before 11pm" from midnight: 23 hours, the small hours in them
            raise Flag(f"“{words}”: since when? (say “from 6pm to 11pm”)")
        return (0, minute)
    if 0 < minute < NIGHT[1]:  # "after 1am": to the night's end, or to midnight (23 hours)?
        raise Flag(f"“{words}”: until when, the end of the night or midnight? (say “from 1am to 6am”)")
    if minute >= 12 * 60:
        return (minute, 6 * 60)
    return (minute, 0) if minute else (0, 6 * 60)


def _place(negated: bool, names: list, words: str) -> Piece:
    names = [n for x in names for n in (x if isinstance(x, tuple) else (x,))]
    conds = tuple(Cond("zone", str(n)) for n in names)
    if len(conds) == 1:
        return Piece("zone", Cond("zone", conds[0].value, negated), words)
    return Piece("zone", Cond("any", conds, negated), words)

def _nights(conds: tuple[Cond, ...]) -> tuple[Cond, ...]:
    """A day named with the night names the night it starts on ("on Friday at night" runs to Saturday 06:00, as
    "Friday night" does); days with other hours past midnight ("on weekdays from 8pm to 6am") could mean the
    calendar day too, and are not compiled."""
    days = [c for c in conds if c.kind == "weekday" and not c.negated]
    wraps = [c for c in conds if c.kind == "time" and not c.negated and len(c.value) == 2
             and c.value[0] > c.value[1]]  # type: ignore[arg-type,index]
    if len(days) != 1 or len(wraps) != 1:
        return conds
    if wraps[0].value != NIGHT:  # "on weekdays between 8pm and 6am": is Saturday 02:00 in it? Words may mean
        raise Flag("days with hours past midnight: the day they start on, or the calendar day? "  # either
                   "(say “Friday night”, or split the hours at midnight)")
    merged = Cond("time", (*wraps[0].value, days[0].value))  # type: ignore[misc]
    return tuple(merged if c is wraps[0] else c for c in conds if c is not days[0])


__all__ = ["Flag", "Piece", "Sent"]
