"""People, visits and events: what "how many" counts.

An event is one escalated track; a visit is one stay on one camera, which the device may send as several
events (a track lost and found again, two people walking side by side, a cyclist's bicycle and the cyclist).
"How many people" counts distinct people, "how many times" visits, "how many events / alerts" events.

    visit    the events of one camera whose capture times lie within VISIT_GAP_S of the one before (the same
             track within TRACK_GAP_S is the same visit): the device's tracks linked by time
    people   in one visit, the most seen at once: events of people whose stays overlap, or the people the
             device detected together in one event's frame, whichever is more; an event the cloud judged
             to show no person is none, and a bicycle with a person on it is a rider
    objects  the same for another label (cars, bicycles): one visit counts the most seen at once

A stay is the event's capture time give or take the time the device saw it stay (its dwell); an event with
no dwell is a moment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .facts import EventFact

VISIT_GAP_S = 60.0  # events of one camera this close in time are one visit
TRACK_GAP_S = 600.0  # the same track id this close is the same stay (a device numbers its tracks anew at start)
RIDDEN = frozenset({"bicycle", "motorcycle"})  # the detector's labels a person rides: a rider is a person
PERSON_OR_RIDDEN = RIDDEN | {"person"}


@dataclass(frozen=True)
class Visit:
    device: str
    camera: str
    facts: tuple[EventFact, ...]  # oldest first

    @property
    def start_ms(self) -> int:
        return self.facts[0].captured_ms

    def count(self, label: str | None) -> int:
        """Distinct people (label person or None) or objects of `label` this visit showed."""
        if label in (None, "person"):
            return people_in(self.facts)
        return _at_once([f for f in self.facts if f.label == label], lambda f: max(1, f.in_frame))


def visits_of(facts: Iterable[EventFact]) -> list[Visit]:
    """The visits `facts` belong to, oldest first: per camera, events linked by track or by time."""
    by_camera: dict[tuple[str, str], list[EventFact]] = {}
    for fact in sorted(facts, key=lambda f: (f.captured_ms, f.event_id)):
        by_camera.setdefault((fact.device, fact.camera), []).append(fact)
    visits = []
    for (device, camera), events in by_camera.items():
        current: list[EventFact] = []
        tracks: set[int] = set()
        for fact in events:
            linked = current and (fact.captured_ms - current[-1].captured_ms <= VISIT_GAP_S * 1000
                                  or (fact.track_id is not None and fact.track_id in tracks
                                      and fact.captured_ms - current[-1].captured_ms <= TRACK_GAP_S * 1000))
            if current and not linked:
                visits.append(Visit(device, camera, tuple(current)))
                current, tracks = [], set()
            current.append(fact)
            if fact.track_id is not None:
                tracks.add(fact.track_id)
        if current:
            visits.append(Visit(device, camera, tuple(current)))
    return sorted(visits, key=lambda v: (v.start_ms, v.camera))


def is_person(fact: EventFact) -> bool:
    """An event that shows a person: labelled one and not judged person-free, or a ridden bicycle."""
    if fact.label == "person":
        return not fact.person_free
    return fact.label in RIDDEN and fact.riders > 0


def people_in(facts: Sequence[EventFact]) -> int:
    """The people one visit showed: the most seen at once (see the module docstring)."""
    return _at_once([f for f in facts if is_person(f)], lambda f: max(1, f.in_frame) if f.label == "person" else 1)


def _at_once(facts: Sequence[EventFact], in_frame) -> int:
    """The most of `facts` whose stays overlap, or the most one frame held, whichever is more."""
    if not facts:
        return 0
    spans = [(f.captured_ms - int((f.dwell_s or 0) * 1000), f.captured_ms + int((f.dwell_s or 0) * 1000))
             for f in facts]
    overlap = max(sum(1 for a, b in spans if a <= start <= b) for start, _ in spans)
    return max(overlap, max(in_frame(f) for f in facts))


def count(facts: Iterable[EventFact], label: str | None, every: bool = False) -> tuple[int, list[Visit]]:
    """Distinct people (or objects of `label`) over `facts`, and the visits that showed any; `every`: every
    visit (visits of anything are counted: a car's visit shows nobody and is still a visit)."""
    shown = [v for v in visits_of(facts) if every or v.count(label) > 0]
    return sum(v.count(label) for v in shown), shown
