"""Open questions answered from the events themselves: "anything unusual?", and the answer to an open question
when the language model could not give one. What stands out is what differs from the same camera's usual:

    hour    an event at an hour when the camera rarely sees one (fewer than 10% of its other events within
            90 minutes either side; with under 5 other events: between 23:00 and 05:00)
    zone    a zone the camera's events are rarely in (under 15% of them, with 5 or more events)
    label   a kind of object the camera rarely sees (under 10% of its events, with 5 or more events)
    stay    a stay over three times the camera's median and over 10 s
    alert   an event the model judged an alert, when alerts are not what the camera usually gets
    count   a camera with at least twice its usual number of events for a range this long (and 3 or more)

"Usual" is every stored event of the same cameras the question covers (its scan, without its time range).
Each answer cites the events it names first, then the others it looked at (the answer rests on them too).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from ...shared.stats import median
from .facts import EventFact

PLURAL = {"person": "people", "bus": "buses"}
NAMED_MAX = 6  # standouts named in the answer (all are cited)
DAY_MS = 86_400_000


def _minute(fact: EventFact, zone: ZoneInfo) -> int:
    moment = fact.local(zone)
    return moment.hour * 60 + moment.minute


def _near(a: int, b: int, span: int = 90) -> bool:
    gap = abs(a - b) % 1440
    return min(gap, 1440 - gap) <= span


def standouts(facts: Sequence[EventFact], usual: Sequence[EventFact], zone: ZoneInfo,
              span_ms: int | None) -> tuple[dict[str, list[str]], list[str]]:
    """(event_id -> why it stands out, busier-than-usual camera notes) for the question's `facts` against the
    `usual` events of the same cameras."""
    by_camera: dict[str, list[EventFact]] = defaultdict(list)
    for fact in usual:
        by_camera[fact.camera].append(fact)
    why: dict[str, list[str]] = defaultdict(list)
    for fact in facts:
        others = [f for f in by_camera[fact.camera] if f.event_id != fact.event_id]
        minute = _minute(fact, zone)
        if len(others) >= 5:
            if sum(_near(minute, _minute(f, zone)) for f in others) < max(1, 0.1 * len(others)):
                why[fact.event_id].append(f"at an hour {fact.camera} rarely sees anything")
            for zone_name in fact.zones:
                if sum(zone_name in f.zones for f in others) < 0.15 * len(others):
                    why[fact.event_id].append(f"in {zone_name}, where {fact.camera} rarely sees anything")
            if sum(f.label == fact.label for f in others) < 0.1 * len(others):
                why[fact.event_id].append(f"a {fact.label}, rare on {fact.camera}")
            stays = [f.dwell_s for f in others if f.dwell_s is not None]
            if fact.dwell_s is not None and stays and fact.dwell_s > max(10.0, 3 * (median(stays) or 0.0)):
                why[fact.event_id].append(f"stayed {fact.dwell_s:.0f} s, long for {fact.camera}")
            if fact.verdict == "alert" and sum(f.verdict == "alert" for f in others) < 0.5 * len(others):
                why[fact.event_id].append("judged an alert")
        else:
            if minute >= 23 * 60 or minute < 5 * 60:
                why[fact.event_id].append("in the middle of the night")
            if fact.verdict == "alert":
                why[fact.event_id].append("judged an alert")
    return dict(why), _busier(facts, usual, span_ms)


def _busier(facts: Sequence[EventFact], usual: Sequence[EventFact], span_ms: int | None) -> list[str]:
    if not span_ms or not usual:
        return []
    notes = []
    now_count = Counter(f.camera for f in facts)
    for camera, n in sorted(now_count.items()):
        history = [f.captured_ms for f in usual if f.camera == camera]
        covered = max(history) - min(history) if len(history) > 1 else 0
        if covered < 2 * span_ms:
            continue  # not enough history to know the usual rate
        expected = (len(history) - n) * span_ms / max(1, covered - span_ms)
        if n >= 3 and n >= 2 * expected:
            notes.append(f"{camera} was busier than usual ({n} events, about {expected:.0f} usually)")
    return notes


def unusual_text(facts: Sequence[EventFact], usual: Sequence[EventFact], zone: ZoneInfo, scope: str,
                 span_ms: int | None) -> tuple[str, list[str], list[str]]:
    """The answer to "anything unusual?" over `facts` (newest first) and the events it cites: those that stand
    out, then the rest; and those that stand out."""
    if not facts:
        if usual:
            return (f"Nothing{scope}: no events at all. The most recent stored one: {usual[0].line(zone)}.",
                    [usual[0].event_id], [])
        return f"Nothing{scope}: no events at all.", [], []
    why, busier = standouts(facts, usual, zone, span_ms)
    odd = [f for f in facts if f.event_id in why]
    if not odd and not busier:
        kinds = Counter(f.label for f in facts)
        what = ", ".join(
            f"{n} {label if n == 1 else PLURAL.get(label, label + 's')}" for label, n in kinds.most_common()
        )
        alerts = sum(f.verdict == "alert" for f in facts)
        what += f"; {alerts} judged an alert" if alerts else "; no alerts"
        return (f"Nothing out of the ordinary{scope}: {len(facts)} events ({what}) at the hours, places and "
                f"numbers usual for these cameras.", [f.event_id for f in facts], [])
    named = "; ".join(f"{f.when(zone)}, {f.label} on {f.camera}: {', '.join(why[f.event_id])}"
                      for f in odd[:NAMED_MAX])
    more = f"; and {len(odd) - NAMED_MAX} more" if len(odd) > NAMED_MAX else ""
    stand = (f"{len(odd)} of {len(facts)} events stand out" if len(facts) > 1 else "The one event stands out")
    parts = ([f"{stand}{scope}: {named}{more}."] if odd else
             [f"No single event stands out{scope} among {len(facts)}."])
    if busier:
        parts.append("; ".join(busier).capitalize() + ".")
    standing = [f.event_id for f in odd]
    return " ".join(parts), standing + [f.event_id for f in facts if f.event_id not in why], standing


def what_happened(facts: Sequence[EventFact], usual: Sequence[EventFact], zone: ZoneInfo, scope: str,
                  span_ms: int | None) -> tuple[str, list[str]]:
    """An open question's answer from the stored facts alone: the events (what each was seen as), then what
    stands out. Cites every event it counts."""
    if not facts:
        return f"No events{scope}.", []
    lines = "; ".join(f.line(zone) for f in facts[:NAMED_MAX])
    more = f"; and {len(facts) - NAMED_MAX} more" if len(facts) > NAMED_MAX else ""
    head = f"From the stored events{scope} ({len(facts)}): {lines}{more}."
    why, busier = standouts(facts, usual, zone, span_ms)
    odd = [f"{f.when(zone)} {', '.join(why[f.event_id])}" for f in facts if f.event_id in why][:3]
    tail = (" Stands out: " + "; ".join(odd + busier) + ".") if odd or busier else ""
    return head + tail, [f.event_id for f in facts]
