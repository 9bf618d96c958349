"""The fast path: questions a query over the stored events answers (count, last, first, list, exists), as a
sentence, the value itself and the events it is based on. No model, no network."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from .facts import EventFact
from .kinds import unstored, unstored_sentence
from .overview import unusual_text, what_happened
from .rules import PICK, QUIET, Query
from .visits import count as distinct
from .visits import is_person

YES_NO = frozenset("was were is are did does do has have had any anyone anybody anything someone somebody nobody "
                   "no didnt wasnt werent isnt arent hasnt havent hadnt doesnt dont".split())  # a yes/no's first words
LIST_MAX = 10  # events named in a list answer (all of them are still cited)
PLURAL = {"person": "people", "bus": "buses"}
NOT_ASKED = re.compile(r"^(?:(?:did|was|were|has|had|is|are)(?: there)? )?(?:nobody|no one|noone)\b|"
                       r"^(?:didnt|wasnt|werent|hasnt|hadnt|isnt|arent)\b")  # a yes/no asked the negative way


@dataclass
class Answer:
    text: str
    route: str
    events: list[str]
    value: Any = None
    partial: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _things(label: str | None, verdict: str | None, n: int) -> str:
    if verdict == "alert":
        noun = "alert" if n == 1 else "alerts"
        return f"{noun} ({PLURAL.get(label, label + 's') if n != 1 else label})" if label else noun
    if label:
        return label if n == 1 else PLURAL.get(label, label + "s")
    return "event" if n == 1 else "events"


def scope_phrase(query: Query) -> str:
    """' on porch today', ' on porch or driveway since 09:00', ''."""
    parts = [query.look.said] if query.look is not None else []
    if query.zones:
        parts.append("in " + " or ".join(sorted(query.zones)))
    cameras = sorted({camera for _, camera in query.cameras})
    if cameras:
        parts.append("on " + " or ".join(cameras))
    elif query.devices:
        parts.append("from " + " or ".join(sorted(query.devices)))
    if query.excluded:
        parts.append("except on " + " and ".join(sorted({camera for _, camera in query.excluded})))
    if query.excluded_zones:
        parts.append("outside " + " and ".join(sorted(query.excluded_zones)))
    if query.verdict and query.verdict != "alert":
        parts.append(f"judged {query.verdict}")
    if query.window is not None:
        parts.append(query.window.phrase)
    return (" " + " ".join(parts)) if parts else ""


def answer(intent: str, facts: Sequence[EventFact], query: Query, zone: ZoneInfo, route: str,
           usual: Sequence[EventFact] = ()) -> Answer:
    """`facts` are every event the question covers, newest first (a look not yet applied); `usual` the same
    cameras' events at any time, for what stands out."""
    scope = scope_phrase(query)
    span = _span_ms(query, facts)
    if intent == "unstored":  # what it cannot tell said, then the events the rest of the question names
        listed = answer("list", facts, query, zone, route)
        told = unstored_sentence(unstored(" ".join(query.words)) or "that")
        return Answer(f"{told} {listed.text}", route, listed.events, value=listed.value)
    if intent == "unusual":
        text, cited, standing = unusual_text(facts, usual, zone, scope or " in the last 24 hours", span)
        return Answer(text, route, cited, value=standing)
    if intent == "overview":
        text, cited = what_happened(facts, usual, zone, scope, span)
        return Answer(text, route, cited, value=None)
    if query.look is not None:
        looked = facts
        facts = [f for f in facts if query.look.holds(f.description)]
        if not facts and looked:
            return _none_described(intent, looked, query, route)
    if query.label == "person" and intent in ("exists", "first", "last"):  # a crop judged empty is nobody
        facts = [f for f in facts if is_person(f)]
    n = len(facts)
    if intent == "duration":
        pick = PICK.search(" ".join(query.words))
        if facts and pick:  # "how long did the last visitor stay?": one stay; "in the last 6 hours" is a range
            facts = [facts[-1] if pick[1] in ("first", "earliest") else facts[0]]
        return _duration(facts, query, zone, route, scope)
    if intent == "count":
        return _count(facts, query, route, scope)
    if intent in ("last", "first"):
        if not facts:
            return Answer(f"No {_things(query.label, query.verdict, 2)}{scope}.", route, [], value=None)
        pick = facts[0] if intent == "last" else facts[-1]
        moment = pick.local(zone)
        what = "last" if intent == "last" else "first"
        return Answer(f"The {what} {_things(query.label, query.verdict, 1)}{scope} was {pick.line(zone)}.",
                      route, [pick.event_id], value=moment.strftime("%Y-%m-%d %H:%M") if moment else None)
    if intent == "exists":
        # "nobody came, right?", "did no one come?": a "yes" would read as "yes, nobody": the facts said plainly
        asked_not = NOT_ASKED.search(" ".join(query.words)) is not None
        quiet = QUIET.search(" ".join(query.words)) is not None  # "was it quiet?": yes only when none were seen
        if not facts:
            lead = "Yes, quiet" if quiet else "Right, none" if asked_not else "No"
            return Answer(f"{lead}: no {_things(query.label, query.verdict, 2)}{scope}.", route, [], value=False)
        shown = "; ".join(f.line(zone) for f in facts[:3])
        more = f" and {n - 3} more" if n > 3 else ""
        how_many = f"{n} {_things(query.label, query.verdict, n)}"
        if query.label == "person" and query.verdict is None:  # people, not events: one visit counts once
            people, visits = distinct(facts, "person")
            seen = f"{len(visits)} visit{'' if len(visits) == 1 else 's'}, {n} event{'' if n == 1 else 's'}"
            how_many = f"{people} {_things('person', None, people)} ({seen})"
        lead = "No, not quiet:" if quiet else "Not so," if asked_not else "Yes,"
        return Answer(f"{lead} {how_many}{scope}: {shown}{more}.", route,
                      [f.event_id for f in facts], value=True)
    # list
    if not facts:
        return Answer(f"No {_things(query.label, query.verdict, 2)}{scope}.", route, [], value=[])
    shown = "; ".join(f.line(zone) for f in facts[:LIST_MAX])
    more = f"; and {n - LIST_MAX} more" if n > LIST_MAX else ""
    return Answer(f"{n} {_things(query.label, query.verdict, n)}{scope}: {shown}{more}.", route,
                  [f.event_id for f in facts], value=[f.event_id for f in facts])


def _count(facts: Sequence[EventFact], query: Query, route: str, scope: str) -> Answer:
    """People, visits or events, as the question counts them (visits.py), the other two said beside."""
    n = len(facts)
    if query.measure == "events":
        things = _things(query.label, query.verdict, n)
        if query.label and query.verdict is None:  # "how many person events": events, of people
            things = f"{'event' if n == 1 else 'events'} of {_things(query.label, None, 2)}"
        return Answer(f"{n} {things}{scope}.", route, [f.event_id for f in facts], value=n)
    people, visits = distinct(facts, query.label, every=query.measure == "visits" and query.label is None)
    ids = [f.event_id for v in visits for f in v.facts]
    events = f"{n} event" + ("" if n == 1 else "s")
    if query.measure == "visits":
        noun = "visit" if len(visits) == 1 else "visits"
        who = _things(query.label or "person", None, people)  # no label: the people the visits showed
        return Answer(f"{len(visits)} {noun}{scope} ({people} {who}, {events}).",
                      route, ids, value=len(visits))
    return Answer(f"{people} {_things(query.label, None, people)}{scope} ({len(visits)} "
                  f"{'visit' if len(visits) == 1 else 'visits'}, {events}).", route, ids, value=people)


def _span_ms(query: Query, facts: Sequence[EventFact]) -> int | None:
    window = query.window
    if window is None or window.start_ms is None:
        return None
    end = window.end_ms if window.end_ms is not None else max([f.captured_ms for f in facts] + [window.start_ms])
    return max(0, end - window.start_ms) or None


def _none_described(intent: str, looked: Sequence[EventFact], query: Query, route: str) -> Answer:
    """A look no stored description says: none, out of how many were looked at (never everyone)."""
    n = len(looked)
    among = (f"none of the {n} {_things(query.label, query.verdict, n)}"
             f"{scope_phrase(query.with_scope(look=None))} is described {query.look.said}")
    lead = {"exists": "No, ", "count": "0: "}.get(intent, "None: ")
    value = {"count": 0, "exists": False, "list": []}.get(intent)
    return Answer(f"{lead}{among}.", route, [], value=value)


def _duration(facts: Sequence[EventFact], query: Query, zone: ZoneInfo, route: str, scope: str) -> Answer:
    """How long the visits stayed, from the dwell each event carries: a length, never a clock time."""
    if not facts:
        return Answer(f"No {_things(query.label, query.verdict, 2)}{scope}, so no stay to measure.", route, [],
                      value=None)
    stays = [f for f in facts if f.dwell_s is not None]
    if not stays:
        return Answer(f"The stored events{scope} do not say how long anyone stayed (the device sent no stay "
                      "length).", route, [f.event_id for f in facts], value=None)
    total = sum(f.dwell_s for f in stays)
    ids = [f.event_id for f in stays]
    if len(stays) == 1:
        one = stays[0]
        return Answer(f"The {_things(query.label, query.verdict, 1)}{scope} stayed at least {_length(total)} "
                      f"({one.when(zone)}" + ("" if query.cameras else f" on {one.camera}") + ").", route, ids,
                      value=round(total, 1))
    each = "; ".join(f"{f.when(zone)} on {f.camera} {_length(f.dwell_s)}" for f in stays[:LIST_MAX])
    more = f"; and {len(stays) - LIST_MAX} more" if len(stays) > LIST_MAX else ""
    return Answer(f"{len(stays)} {_things(query.label, query.verdict, 2)}{scope} stayed at least "
                  f"{_length(total)} in all: {each}{more}.", route, ids, value=round(total, 1))


def _length(seconds: float) -> str:
    """12.5 -> '12.5 s', 95 -> '1 min 35 s', 4000 -> '1 h 7 min'."""
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def loose_intent(query: Query) -> str:
    """For a question no rule answered that the fast path takes anyway: the intent it comes closest to."""
    if query.intent is not None:
        return query.intent
    words = query.words
    if words and (words[0] in YES_NO or words[-1] in ("right", "correct")):
        return "exists"  # a yes/no question gets a yes or a no
    return "list"
