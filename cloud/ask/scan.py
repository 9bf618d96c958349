"""The stored events a question covers: the store's rows read as facts, narrowed to the question's time,
cameras, zones and exclusions, newest first."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..storage.reads import EventReads
from .config import AskConfig
from .facts import EventFact
from .negation import excluded
from .rules import Query
from .visits import PERSON_OR_RIDDEN

log = logging.getLogger("edgetriage.cloud.ask")

LAST_DAY_MS = 253_402_214_400_000  # 9999-12-31 00:00 UTC: later capture times cannot be written as a date
GIVE_WAY_ROWS = 256  # stored events read between two chances to give way to the event path


def scan(reads: EventReads, config: AskConfig, query: Query, devices: set[str] | None,
         give_way: Callable[[], None] = lambda: None) -> list[EventFact]:
    """Every event the question covers, newest first (capture time, in the device's clock). A stored row that
    cannot be read as a fact, or with a time past the calendar's end, is left out, never an error. `give_way`
    is called before each scan and every GIVE_WAY_ROWS rows (cloud.pressure)."""
    base: dict[str, Any] = {"limit": config.max_scan}
    # a person on a bicycle counts as a person (visits.py), not where events are asked for
    riders = query.label == "person" and query.intent == "count" and query.measure != "events"
    if query.label and not riders:
        base["label"] = query.label
    if query.verdict:
        base["verdict"] = query.verdict
    if query.cameras:
        scans = [{"device": d, "camera": c} for d, c in sorted(query.cameras)]
    elif devices:
        scans = [{"device": d} for d in sorted(devices)]
    else:
        scans = [{}]
    seen: dict[str, EventFact] = {}
    window = query.window
    for where in scans:
        give_way()
        for n, row in enumerate(reads.list_events(**base, **where), 1):
            if n % GIVE_WAY_ROWS == 0:
                give_way()
            try:
                if int(row["captured_ms"]) > LAST_DAY_MS:  # a time no calendar holds: no question's range
                    continue
                if ((window is None or window.holds(int(row["captured_ms"])))
                        and (not riders or row["label"] in PERSON_OR_RIDDEN)
                        and (not query.zones or in_zones(config, query.zones, row))
                        and not excluded(query.excluded, query.excluded_zones, row, query.labels_left_out)):
                    seen[row["event_id"]] = EventFact.from_row(row)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                log.warning("question skipped stored event %.40s: %s", str(row.get("event_id")), exc)
    return sorted(seen.values(), key=lambda f: (f.captured_ms, f.event_id), reverse=True)


def in_zones(config: AskConfig, zones: frozenset[str], row: dict) -> bool:
    """The event stood in one of the question's zones. An operator's zone name ([ask] zones, a word of a
    question) is the operator's devices' ([ask] cameras, timezones) where the operator lists any: a device that
    names its own zone like the operator's is not at the operator's front door."""
    hit = zones.intersection(row.get("zones") or ())
    own = config.cameras.keys() | config.timezones.keys()
    return bool(hit if not own or row.get("device") in own else hit - set(config.zones))
