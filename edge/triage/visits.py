"""One visit, one escalation: what the rules remember of the visits the triage escalated or answered from the
cache (noted after the whole decision: a visit suppressed or dropped was not answered, and is decided again).

The tracker says which tracks are one visit (edge.vision.track.IoUTracker.join_visit: a person it lost and
found again a moment later, or saw twice at once); this decides what that means for escalating. A later track
of an answered visit needs no second verdict unless something the rules care about changed:

- a zone the visit had not been in (a policy may allow the path and not the door);
- more people on its best frame than on any of the visit's (someone joined them);
- a long gap: the tracker starts a new visit for a track that appears more than `tracker.relink_s` after the
  last one was seen, so there is nothing to remember.

Appearance does not decide: the shipped embedding scored two different visitors of the one-by-one clip 0.86-0.91
and the same walker found again 0.87-0.93, and a shaking camera's second track on a person 0.74-0.78 against the
first (BENCHMARKS.md, issue 38), so a threshold would refuse true duplicates and pass different people alike.
Where and when (the tracker) decide.

Visits are kept per camera, the most recent MAX_VISITS of them; a visit id never repeats (the tracker's ids carry
a random prefix), so a restarted pipeline starts afresh.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ...shared.reuse import PEOPLE_MIN
from ..vision.detect import Det

MAX_VISITS = 512


class VisitTrack(Protocol):
    """What the visit memory reads of an event (edge.vision.events.TrackEvent is one)."""

    @property
    def visit(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def zones(self) -> Sequence[str]: ...
    @property
    def detections(self) -> Sequence[Det]: ...


@dataclass
class _Visit:
    how: str  # "escalated" or "answered from the cache"
    at_ms: int
    zones: set[str] = field(default_factory=set)
    people: int = 0


def people_on(ev: VisitTrack) -> int:
    """People the detector saw on the event's best frame (the count a policy's "two people" reads)."""
    return sum(1 for d in ev.detections if d.label == "person" and d.score >= PEOPLE_MIN)


class Visits:
    """The answered visits of one device's cameras (held by edge.triage.rules.Rules, kept across rule changes)."""

    def __init__(self) -> None:
        self._visits: OrderedDict[tuple[str, str, str], _Visit] = OrderedDict()

    def answered(self, camera: str, ev: VisitTrack, now_ms: int) -> str | None:
        """Why `ev` needs no escalation of its own (a reason for the decision), or None: its visit was not
        answered, or something the rules care about changed since."""
        visit = self._visits.get((camera, ev.visit, ev.label)) if ev.visit else None
        if visit is None:
            return None
        if set(ev.zones) - visit.zones or people_on(ev) > visit.people:
            return None
        return f"same visit as the {ev.label} {visit.how} {max(0, now_ms - visit.at_ms) / 1000:.0f} s ago"

    def note(self, camera: str, ev: VisitTrack, now_ms: int, how: str) -> None:
        """`ev` was escalated or answered: its visit is answered, with what it showed so far."""
        if not ev.visit:
            return
        key = (camera, ev.visit, ev.label)
        visit = self._visits.pop(key, None) or _Visit(how, now_ms)
        visit.zones |= set(ev.zones)
        visit.people = max(visit.people, people_on(ev))
        self._visits[key] = visit
        while len(self._visits) > MAX_VISITS:
            self._visits.popitem(last=False)
