"""The events a question is about, as plain facts: one typed row per stored event, readable by the rules'
queries, the retrieval step and the LLM's prompt alike."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class EventFact:
    event_id: str
    device: str
    camera: str
    label: str
    captured_ms: int
    verdict: str | None  # alert | benign | unknown; None while the model has not answered
    description: str
    classes: tuple[str, ...]
    reason: str
    zones: tuple[str, ...] = ()
    dwell_s: float | None = None  # how long the device had seen it stay when it sent the event
    track_id: int | None = None  # the device's track: one object's stay on one camera
    in_frame: int = 0  # objects of its label the device detected in the frame its crop is from
    person_free: bool = False  # the cloud judged its crop to show no person (a "person" event that is none)
    riders: int = 0  # another label's event (a bicycle): people the device detected in its frame

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> EventFact:
        """A row of Store.list_events."""
        verdict = row.get("verdict") or {}
        description = verdict.get("description") or ""
        if description.startswith("no model verdict"):
            description = ""
        reused = bool(verdict.get("reused_from")) or verdict.get("source") == "cloud_cache"
        label = row["label"]
        facts = " ".join(verdict.get("facts") or ()).lower()
        return cls(event_id=row["event_id"], device=row["device"], camera=row["camera"], label=label,
                   captured_ms=int(row["captured_ms"]), verdict=verdict.get("verdict"),
                   description=own_words(description, reused),
                   classes=tuple(c.get("label", "") for c in row.get("classes") or ()),
                   reason=row.get("reason") or "", zones=tuple(row.get("zones") or ()),
                   dwell_s=None if row.get("dwell_s") is None else float(row["dwell_s"]),
                   track_id=None if row.get("track_id") is None else int(row["track_id"]),
                   in_frame=sum(1 for d in row.get("detections") or () if d.get("label") == label),
                   riders=0 if label == "person" else sum(1 for d in row.get("detections") or ()
                                                          if d.get("label") == "person"),
                   person_free=label == "person" and bool(re.search(r"\bperson: no\b", facts)
                                                          or re.match(r"\s*no (?:person|one)\b", description.lower())))

    def local(self, zone: ZoneInfo) -> datetime | None:
        """The capture time in `zone`; None for one no calendar holds (a device's clock far off): such an
        event is still counted and cited, its time written as unknown, never an error."""
        return local_time(self.captured_ms, zone)

    def when(self, zone: ZoneInfo) -> str:
        """'Sat 28 Nov 21:14', the way the answers write times."""
        moment = self.local(zone)
        return moment.strftime("%a %d %b %H:%M") if moment is not None else "at an unknown time"

    def line(self, zone: ZoneInfo) -> str:
        """One line for an answer or a prompt: when, where, what, the verdict and what was seen."""
        what = f"{self.label} on {self.camera}" + (f" ({', '.join(self.zones)})" if self.zones else "")
        verdict = f", {self.verdict}" if self.verdict else ""
        seen = f": {self.description.rstrip('. ')}" if self.description else ""
        return f"{self.when(zone)}, {what}{verdict}{seen}"

    def text(self, zone: ZoneInfo) -> str:
        """Everything searchable about the event, for the lexical retrieval."""
        moment = self.local(zone)
        return " ".join((self.camera.replace("_", " ").replace("-", " "), self.device, self.label,
                         self.verdict or "", self.description, " ".join(self.classes), self.reason,
                         " ".join(z.replace("_", " ").replace("-", " ") for z in self.zones),
                         moment.strftime("%A") if moment else "", day_part(moment.hour) if moment else ""))


_CLOCK = re.compile(r",?\s*(?:at |around )?\b\d{1,2}:\d{2}\b")
_STAY = re.compile(r",?\s*for (?:about )?\d+(?:\.\d+)? ?(?:s|sec\w*|min\w*|h|hours?)\b")
_WAY = re.compile(r",?\s*(?:moving|walking|heading|going) (?:left|right|still|towards the camera|"
                  r"away from the camera)\b")
_PLACE = re.compile(r",?\s*\b(?:at|by|near|in front of|on) the (?:front door|back door|door|frame|camera|gate|"
                    r"porch|driveway|garage|window|path)\b")


def own_words(description: str, reused: bool) -> str:
    """A description as an answer may repeat it: without the clock times and stay lengths it states (the
    answer gives the event's own), and, for a verdict reused from another event, without that event's place
    and way of walking either: never another event's time or place."""
    text = _STAY.sub("", _CLOCK.sub("", description))
    if reused:
        text = _PLACE.sub("", _WAY.sub("", text))
    text = re.sub(r"\s+([,.;])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    return re.sub(r"(?:,\s*)+\.", ".", re.sub(r",\s*,", ",", text)).strip(" ,")


def local_time(ms: int, zone: ZoneInfo) -> datetime | None:
    """Epoch milliseconds in `zone`, or None when out of the calendar's range (e.g. 2**53 - 1)."""
    try:
        return datetime.fromtimestamp(ms / 1000, zone)
    except (ValueError, OverflowError, OSError):
        return None


def day_part(hour: int) -> str:
    if 6 <= hour < 12:
        return "morning"
    if 12 <= hour < 18:
        return "afternoon"
    if 18 <= hour < 22:
        return "evening"
    return "night"
