"""Comparisons: "were there more people today than yesterday?", "more at the porch or the back door?".

The question is cut where its two sides meet ("than", "or", "compared to", "versus", "as ... as"); each side
is read as a question of its own, and what one side does not say (a camera, a time, a label) it takes from
the other. Both sides are counted the same way (people, visits or events, as the whole question asks) and
both counts are shown; the yes/no answers the comparison in the order the question makes it (the first side
against the second).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .facts import EventFact
from .query import Answer, _things, scope_phrase
from .rules import Query
from .visits import count as distinct

_ASK = (("same", re.compile(r"\b(?:same|as many|as much|equal|as busy)\b")),
        ("more", re.compile(r"\b(?:more|busier|most)\b")),
        ("fewer", re.compile(r"\b(?:fewer|less|quieter|least)\b")),
        ("versus", re.compile(r"\b(?:vs|versus|compared? (?:to|with))\b")))  # both counted, neither asked for
_SPLIT = re.compile(r"^(?P<a>.+?)\s+(?:than|compared? (?:to|with)|versus|vs|or|as)\s+(?P<b>.+)$")
# "the same number at the porch and the back door?": "and" joins the sides of a sameness, never two clock times
_AND = re.compile(r"^(?P<a>.+?)\s+and\s+(?!(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                  r"noon|midnight|half|quarter|twenty)\b)(?P<b>.+)$")


_HOW_MANY_MORE = re.compile(r"\b(?:how many|how much|number of) (?:\w+ ){0,2}?(?:more|fewer|less)\b")


@dataclass(frozen=True)
class Sides:
    ask: str  # more | fewer | same | versus (both counts, no yes/no: value None)
    a: str
    b: str
    which: bool = False  # "which camera saw more ...": the answer names a side
    difference: bool = False  # "how many more ... than ...": a number, the first side's count less the second's


def sides_of(text: str) -> Sides | None:
    """The two sides of a normalised comparison, or None when the question compares nothing."""
    ask = next((name for name, pattern in _ASK if pattern.search(text)), None)
    if ask is None:
        return None
    body = re.sub(r"\b(?:as many|as much)\b", " ", text) if ask == "same" else text
    found = _SPLIT.search(body.strip()) or (_AND.search(body.strip()) if ask == "same" else None)
    if found is None:
        return None
    return Sides(ask, found["a"], found["b"], bool(re.search(r"^(?:which|what|where)\b|\bwhich\b", text)),
                 ask in ("more", "fewer") and _HOW_MANY_MORE.search(text) is not None)


def joined(a: Query, b: Query) -> tuple[Query, Query]:
    """Each side with what only the other says: a place (when it names none), a time, a label, a verdict, a
    look."""
    def fill(one: Query, other: Query) -> Query:
        placed = bool(one.cameras or one.zones or one.devices)  # "the front door ... than the back door": its own
        return one.with_scope(cameras=one.cameras if placed else other.cameras,
                              zones=one.zones if placed else other.zones,
                              devices=one.devices if placed else other.devices,
                              window=one.window or other.window, label=one.label or other.label,
                              verdict=one.verdict or other.verdict, look=one.look or other.look,
                              left_out=tuple(dict.fromkeys(one.left_out + other.left_out)))
    return fill(a, b), fill(b, a)


def measured(facts: Sequence[EventFact], query: Query, measure: str | None) -> tuple[int, list[str]]:
    """The count of one side, and the events it stands on."""
    if measure == "events":
        return len(facts), [f.event_id for f in facts]
    number, visits = distinct(facts, query.label, every=measure == "visits" and query.label is None)
    if measure == "visits":
        number = len(visits)
    return number, [f.event_id for v in visits for f in v.facts]


def compare(sides: Sides, a: Query, b: Query, facts_of: Callable[[Query], list[EventFact]], measure: str | None,
            noun: tuple[str, str], scope: Callable[[Query], str]) -> tuple[str, bool, list[str], tuple[int, int]]:
    """The answer's sentence, its yes/no, the events cited and both counts."""
    (na, ids_a), (nb, ids_b) = measured(facts_of(a), a, measure), measured(facts_of(b), b, measure)
    value = {"more": na > nb, "fewer": na < nb, "same": na == nb, "versus": None}[sides.ask]
    lead = "Yes" if value else "No" if value is not None else "Compared"
    if sides.which and na != nb and sides.ask != "same":  # "which saw more?": the side that did, named
        lead = (scope(a) if value else scope(b)).strip() or ("the first" if value else "the second")
    elif sides.which and sides.ask != "versus":
        lead = "Neither"
    if sides.difference:  # "how many more today than yesterday?": the difference, in the question's direction
        value = na - nb if sides.ask == "more" else nb - na
        other = "fewer" if sides.ask == "more" else "more"
        lead = f"{value} {sides.ask}" if value > 0 else f"None {sides.ask}, {-value} {other}" if value else "None"
    own = f" {_things(b.label, None, nb)}" if b.label != a.label and measure != "visits" else ""  # cars vs people
    text = f"{lead[:1].upper() + lead[1:]}: {na} {noun[na == 1]}{scope(a)}, against {nb}{own}{scope(b)}."
    return text, value, list(dict.fromkeys(ids_a + ids_b)), (na, nb)


def compared(sides: Sides, query: Query, read_side: Callable[[str], Query],
             facts_of: Callable[[Query], list[EventFact]]) -> Answer | None:
    """The answer to a comparison (route rules), or None when its two sides read the same (nothing compared)."""
    a, b = joined(read_side(sides.a), read_side(sides.b))
    if a.cameras == b.cameras and a.window == b.window and a.zones == b.zones and a.label == b.label:
        return None
    label = a.label or query.label
    measure = query.measure or ("people" if label == "person" else None)
    verdict = a.verdict if measure == "events" else None
    noun = ("visits", "visit") if measure == "visits" else (_things(label, verdict, 2), _things(label, verdict, 1))
    text, value, ids, counts = compare(sides, a, b, facts_of, measure, noun, scope_phrase)
    return Answer(text, "rules", ids, value=value, extra={"counts": list(counts), "sides": (a, b, measure),
                                                         **({"difference": value} if sides.difference else {})})
