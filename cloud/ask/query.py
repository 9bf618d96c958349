"""The fast path: questions a query over the stored events answers (count, last, first, list, exists), as a
sentence, the value itself and the events it is based on. No model, no network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from .facts import EventFact
from .rules import Query

LIST_MAX = 10  # events named in a list answer (all of them are still cited)
PLURAL = {"person": "people", "bus": "buses"}


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
    parts = []
    if query.zones:
        parts.append("in " + " or ".join(sorted(query.zones)))
    cameras = sorted({camera for _, camera in query.cameras})
    if cameras:
        parts.append("on " + " or ".join(cameras))
    elif query.devices:
        parts.append("from " + " or ".join(sorted(query.devices)))
    if query.verdict and query.verdict != "alert":
        parts.append(f"judged {query.verdict}")
    if query.window is not None:
        parts.append(query.window.phrase)
    return (" " + " ".join(parts)) if parts else ""


def answer(intent: str, facts: Sequence[EventFact], query: Query, zone: ZoneInfo, route: str) -> Answer:
    """`facts` are every event the question covers, newest first."""
    scope = scope_phrase(query)
    n = len(facts)
    if intent == "count":
        ids = [f.event_id for f in facts]
        return Answer(f"{n} {_things(query.label, query.verdict, n)}{scope}.", route, ids, value=n)
    if intent in ("last", "first"):
        if not facts:
            return Answer(f"No {_things(query.label, query.verdict, 2)}{scope}.", route, [], value=None)
        pick = facts[0] if intent == "last" else facts[-1]
        moment = pick.local(zone)
        what = "last" if intent == "last" else "first"
        return Answer(f"The {what} {_things(query.label, query.verdict, 1)}{scope} was {pick.line(zone)}.",
                      route, [pick.event_id], value=moment.strftime("%Y-%m-%d %H:%M") if moment else None)
    if intent == "exists":
        if not facts:
            return Answer(f"No, no {_things(query.label, query.verdict, 2)}{scope}.", route, [], value=False)
        shown = "; ".join(f.line(zone) for f in facts[:3])
        more = f" and {n - 3} more" if n > 3 else ""
        return Answer(f"Yes, {n} {_things(query.label, query.verdict, n)}{scope}: {shown}{more}.", route,
                      [f.event_id for f in facts], value=True)
    # list
    if not facts:
        return Answer(f"No {_things(query.label, query.verdict, 2)}{scope}.", route, [], value=[])
    shown = "; ".join(f.line(zone) for f in facts[:LIST_MAX])
    more = f"; and {n - LIST_MAX} more" if n > LIST_MAX else ""
    return Answer(f"{n} {_things(query.label, query.verdict, n)}{scope}: {shown}{more}.", route,
                  [f.event_id for f in facts], value=[f.event_id for f in facts])


def loose_intent(query: Query) -> str:
    """For a question no rule answered that the fast path takes anyway: the intent it comes closest to."""
    if query.intent is not None:
        return query.intent
    return "list"
