"""One visit, one escalation: what the rules remember of the visits the triage escalated or answered from the
cache (noted after the whole decision: a visit suppressed or dropped was not answered, and is decided again).

The tracker says which tracks are one visit (edge.vision.track.IoUTracker.join_visit: a person it lost and
found again a moment later, or saw twice at once); this decides what that means for escalating. A later track
of an answered visit needs no second verdict unless something the rules care about changed:

- a zone the visit had not been in (a policy may allow the path and not the door);
- more people on its best frame than on any of the visit's (someone joined them);
- a long gap: the tracker starts a new visit for a track that appears more than `tracker.relink_s` after the
  last one was seen, so there is nothing to remember.

One more memory, for *uncertain* people only (a faint box the classifier calls a person): under a shaking camera
a thing in the background is found anew every few seconds at the same spot, each time a new visit (seated_shake
in bench/visits.py: 16 of 20 escalations). An uncertain person at the place of an escalated uncertain one (boxes
overlapping by PLACE_IOU), in no new zone and with no more people, within PLACE_S of the last time that thing
showed there, is the same thing back. A sure person never joins this way: the next visitor often stands where
the last one stood a few seconds before.

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
PLACE_IOU = 0.5  # an uncertain person this far over an escalated uncertain one's box is at its place
PLACE_S = 60.0  # ... when it showed there at most this long ago (each showing renews it)
MAX_PLACES = 32  # per camera


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
    @property
    def uncertain(self) -> bool: ...
    @property
    def box(self) -> tuple[float, float, float, float]: ...


@dataclass
class _Visit:
    how: str  # "escalated" or "answered from the cache"
    at_ms: int
    zones: set[str] = field(default_factory=set)
    people: int = 0


@dataclass
class _Place:
    """Where an escalated uncertain person stood, and when it last showed there."""

    label: str
    box: tuple[float, float, float, float]
    at_ms: int
    since_ms: int
    zones: set[str]
    people: int


def _iou(a: Sequence[float], b: Sequence[float]) -> float:
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    inter = max(0.0, w) * max(0.0, h)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def people_on(ev: VisitTrack) -> int:
    """People the detector saw on the event's best frame (the count a policy's "two people" reads)."""
    return sum(1 for d in ev.detections if d.label == "person" and d.score >= PEOPLE_MIN)


class Visits:
    """The answered visits of one device's cameras (held by edge.triage.rules.Rules, kept across rule changes)."""

    def __init__(self) -> None:
        self._visits: OrderedDict[tuple[str, str, str], _Visit] = OrderedDict()
        self._places: dict[str, list[_Place]] = {}

    def answered(self, camera: str, ev: VisitTrack, now_ms: int) -> str | None:
        """Why `ev` needs no escalation of its own (a reason for the decision), or None: its visit was not
        answered, or something the rules care about changed since."""
        visit = self._visits.get((camera, ev.visit, ev.label)) if ev.visit else None
        if visit is None:
            return self._same_place(camera, ev, now_ms)
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
        if ev.uncertain:
            places = [p for p in self._places.get(camera, []) if 0 <= now_ms - p.at_ms <= PLACE_S * 1000]
            places.append(_Place(ev.label, tuple(ev.box), now_ms, now_ms, set(ev.zones), people_on(ev)))
            self._places[camera] = places[-MAX_PLACES:]

    def _same_place(self, camera: str, ev: VisitTrack, now_ms: int) -> str | None:
        """An uncertain person back at the place of an escalated uncertain one (see the module's doc)."""
        if not ev.uncertain:
            return None
        for place in self._places.get(camera, ()):
            if (place.label == ev.label and 0 <= now_ms - place.at_ms <= PLACE_S * 1000
                    and _iou(place.box, ev.box) >= PLACE_IOU and not set(ev.zones) - place.zones
                    and people_on(ev) <= place.people):
                place.at_ms = now_ms  # it showed again: the place stays answered while it keeps coming back
                return (f"the uncertain {ev.label} escalated at this place {(now_ms - place.since_ms) / 1000:.0f} s "
                        f"ago, back")
        return None
