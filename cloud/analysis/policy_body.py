"""A clause's pieces checked and merged (policy_tree.py reads them from the parse tree): readings that cannot
mean what the words say fail here (a day part beside its own hours, a day with another's hours, two subjects,
a place list whose scope is unclear, a dwell verb with no time), so that the reading that remains is the one
the words give; and lists of times or days become "either"."""

from __future__ import annotations

import itertools
import re

from .policy import Cond, in_window
from .policy_check import PolicyRefused
from .policy_reading import _PARTS, Flag, Piece, _nights

_PRONOUNS = ("they", "them", "those", "one", "whoever", "he or she")


def _body(pieces: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """A clause's pieces: "opening hours 07:00-19:00" is those hours (not the hours and, besides, a window); a
    day with a window that wraps midnight is the day it starts on (policy_words._nights)."""
    for p, q in zip(pieces, pieces[1:], strict=False):
        if _part(p) and q.kind == "cond" and q.value.kind == "time" and len(q.value.value) == 2 and \
                q.words.split()[0] not in ("after", "before", "until", "till", "since", "past", "up") and \
                {"to", "-", "until", "till", "and"} & set(q.words.split()):
            raise Flag(f"“{p.words}, {q.words}”: the range says which hours the {p.words} are")
        if p.kind == "cond" and p.value.kind == "time" and p.words.split()[-1][:1].isdigit() and _part(q) and \
                q.words in ("in the morning", "in the evening", "in the afternoon", "at night", "the next morning"):
            raise Flag(f"“{p.words} {q.words}”: the part of the day is the hour's")  # "until 8 in the morning"
        if p.kind == "cond" and p.value.kind == "time" and not p.value.negated and q.kind == "cond" and \
                q.value.kind == "any" and q.value.value[0].kind == "weekday" and q.value.value[-1].kind == "all" and \
                any(c.kind == "time" for c in q.value.value[-1].value):  # "8 till 4 on weekdays and 8 till noon
            raise Flag(f"“{p.words} {q.words}”: each day with its own hours")  # on Saturdays": pairs, alike
        if p.kind == "opening" and q.kind == "cond" and q.value.kind == "time" and len(q.value.value) == 2:
            raise Flag(f"“{p.words} {q.words}”: the hours named are the opening hours")
        if p.kind == "opening_def" and q.kind == "cond" and q.value.kind == "weekday" and (
                " which are " in f" {p.words} " or " that is " in f" {p.words} "):
            raise Flag(f"“{p.words} {q.words}”: the days are the hours' own")
    pieces = tuple(q for p in pieces for q in (  # "Sunday mornings" in a clause: Sunday and the morning
        [Piece("cond", c, p.words) for c in p.value.value] if p.kind == "cond" and p.value.kind == "all"
        and not p.value.negated else [p]))
    if any(p.kind == "dwell_verb" for p in pieces) and not any(  # "is there": there, unless a time says how long
            (p.kind == "cond" and p.value.kind == "dwell") or p.kind == "dwell_that" for p in pieces):
        raise Flag(f"“{next(p.words for p in pieces if p.kind == 'dwell_verb')}” for how long?")
    for i, p in enumerate(pieces):  # "in the yard or at the gate after 10pm": both after 10pm, or the gate only?
        if p.kind in ("zone", "cond") and p.value.kind == "any" and all(c.kind == "zone" for c in p.value.value) \
                and re.search(r",\s*or\b", p.words) and any(
                q.kind in ("cond", "zone", "opening", "those", "there") for q in pieces[i + 1:]):
            raise Flag(f"“{p.words}” and what follows: does it hold for each place, or the last?")
    named = [p for p in pieces if p.kind == "person" and p.words not in _PRONOUNS]
    if len(named) > 1:  # "anyone at the gate, and anyone at all after 6pm": two clauses, not one
        raise Flag(f"two subjects in one clause: “{named[0].words}”, “{named[1].words}”")
    if len([p for p in pieces if p.kind == "label"]) > 1 or (
            any(p.kind == "label" for p in pieces) and any(p.kind in ("person", "count", "role") for p in pieces)):
        raise Flag("two subjects in one clause")
    days = [p for p in pieces if p.kind == "cond" and p.value.kind == "weekday" and not p.value.negated]
    for p, q in itertools.combinations(days, 2):
        if not int(p.value.value) & int(q.value.value):
            raise PolicyRefused(f"“{p.words}” and “{q.words}” never hold at once")
    for p, q in zip(pieces, pieces[1:], strict=False):  # "Friday night or Saturday night": Friday's night
        if p.kind == "cond" and p.value.kind == "weekday" and q.words.split()[:1] and q.words.split()[0] in (
                "night", "nights", "evening", "evenings", "morning", "mornings", "afternoon", "afternoons"):
            raise Flag(f"“{p.words} {q.words}”: a day and its part")
    if any(p.kind == "cond" and p.value.kind == "time" for p in pieces) and any(
            p.kind == "cond" and p.value.kind == "any" and Cond("time", (0, 1440)) in _flat(p.value) for p in pieces):
        raise Flag("a window and “at any time” in one clause")
    times = [p for p in pieces if p.kind == "cond" and p.value.kind == "time" and not p.value.negated]
    for p, q in itertools.combinations(times, 2):
        if not _overlap(p.value.value, q.value.value):
            raise PolicyRefused(f"“{p.words}” and “{q.words}” never hold at once")
    for p, q in zip(pieces, pieces[1:], strict=False):  # "from 7pm until 7am" is one window, not two
        if p.words.startswith("from ") and q.words.startswith(("until ", "till ", "til ", "to ")):
            raise Flag(f"“{p.words} {q.words}” is one window")
    when = ("time", "weekday", "all")
    for p, q in zip(pieces, pieces[1:], strict=False):
        if p.kind == "cond" and p.value.kind == "any" and all(c.kind in when for c in p.value.value) and \
                len({c.kind for c in p.value.value}) > 1 and q.kind == "cond" and q.value.kind in when:
            raise Flag(f"“{q.words}” belongs to the last of “{p.words}”")
    conds = _nights(tuple(p.value for p in pieces if p.kind == "cond"))
    if all(p.kind != "cond" or p.value in conds for p in pieces):
        return pieces
    merged = next(c for c in conds if c.kind == "time" and len(c.value) > 2)
    out = []
    for p in pieces:
        if p.kind == "cond" and p.value.kind == "weekday" and not p.value.negated:
            continue
        out.append(Piece("cond", merged, p.words) if p.kind == "cond" and p.value.kind == "time"
                   and not p.value.negated and len(p.value.value) == 2 else p)
    return tuple(out)


def _part(p: Piece) -> bool:
    """A day part named alone ("overnight", "in the evening"), its hours the convention's."""
    return p.kind == "cond" and p.value.kind == "time" and not p.value.negated and p.value.value in _PARTS.values() \
        and not any(ch.isdigit() for ch in p.words)


def _either(pieces: tuple[Piece, ...], words: str) -> Piece:
    """A list of times or days, either of which holds. A day before the first or after the last member of
    the list, where no other member names a day, is every member's ("on a weekday before 7am or after 8pm",
    "mornings and afternoons on weekdays"): that reading is not this one. A list that covers the whole day
    ("day or night") is any time."""
    conds = [p.value for p in pieces]
    days = [any(c.kind == "weekday" or (c.kind == "all" and any(d.kind == "weekday" for d in c.value))
                or (c.kind == "time" and len(c.value) > 2 and c.value[2] is not None) for c in [m]) for m in conds]
    for i in (0, len(pieces) - 1):
        member = pieces[i]
        if member.value.kind == "all" and not member.night_of and sum(days) == 1 and days[i]:
            inner = member.value.value
            edge = inner[0] if i == 0 else inner[-1]
            if edge.kind == "weekday":
                raise Flag(f"the day in “{member.words}” is every member's")
    if len(conds) == 1:
        return pieces[0]
    if all(c.kind == "time" and not c.negated and len(c.value) == 2 for c in conds) and all(
            any(in_window(m, c.value) for c in conds) for m in range(1440)):
        return Piece("none", None, words)
    return Piece("cond", Cond("any", tuple(conds)), words)


def _when(cond: Cond) -> bool:
    return cond.kind in ("time", "weekday") or (cond.kind in ("any", "all") and all(_when(c) for c in cond.value))


def _flat(cond: Cond) -> list[Cond]:
    return [cond, *(d for c in cond.value for d in _flat(c))] if cond.kind in ("any", "all") else [cond]


def _overlap(a: tuple, b: tuple) -> bool:
    return any(in_window(m, a[:2]) and in_window(m, b[:2]) for m in range(0, 1440))


__all__ = ["_body", "_either", "_when"]
