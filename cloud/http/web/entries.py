"""One row of the page's timeline and what a device feed posts to make one: the `Entry` (a track the device
decided on, and what became of it, as the page's JSON), the `DeviceDecision` a feed next to the cloud posts,
and the card's wall-clock time."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ....shared.clock import now_ms
from ....shared.protocol import Verdict
from .boxes import Box

CACHE_SOURCES = ("device_cache", "cloud_cache")
MODEL_SOURCES = ("llm", "fallback")
STEP_NAMES = {"device_cache": "device cache", "cloud_cache": "cloud cache", "llm": "model",
              "fallback": "model failed", "waiting": "waiting for verdict", "local": "handled on device",
              "dropped": "dropped"}


def wall_time(captured_ms: int, seen_ms: int | None = None) -> int:
    """When it happened, on the wall clock: a file source stamps frames with its open time plus the clip's
    position, which runs ahead of the clock when the clip is read faster than real time; a card never
    shows a time later than the moment it reached us."""
    return min(captured_ms, seen_ms if seen_ms is not None else now_ms())


@dataclass
class Entry:
    """One row of the timeline: a track the device decided on, and what became of it."""

    id: str  # the event id for escalations, a local id for decisions the device kept to itself
    device: str
    camera: str
    label: str
    score: float
    uncertain: bool
    captured_ms: int
    reason: str = ""  # the device rule's reason
    decision: str = "escalate"  # escalate | cached | local | dropped
    track_id: int | None = None
    verdict: str | None = None  # alert | benign | unknown once known
    confidence: float | None = None
    description: str = ""
    source: str | None = None  # llm | cloud_cache | fallback | device_cache
    model: str = ""
    latency_ms: float | None = None  # device-measured escalation -> verdict where known, else the cloud's
    cloud_ms: float | None = None  # the cloud's receipt -> verdict
    queue_ms: float | None = None  # the cloud's wait for the model (model verdicts)
    analyze_ms: float | None = None  # the model's time (model verdicts)
    reused_from: str | None = None
    facts: list[str] = field(default_factory=list)  # what the cloud's closer look told the model
    checked: str | None = None  # why the evidence overruled the model, if it did
    decided_by: str | None = None  # policy | model | check | operator
    feedback: dict[str, Any] | None = None  # the operator's word on it: by, at_ms, note, was (cloud.teach.feedback)
    policy: str | None = None  # the operator's policy, compiled, in plain words
    clause: str | None = None  # the clause of it that decided
    boxes: list[dict] = field(default_factory=list)
    thumb: bool = False
    seq: int = 0
    updated_ms: int = 0
    at_ms: int = 0  # the card's time: the capture, but never later than it reached us (see wall_time)
    local_time: str | None = None  # the event's own local time (HH:MM on the device's clock), the card's time
    provisional: bool = False  # a later verdict replaces this one (a first answer, the small model's: route.finals)
    routed_by: str | None = None  # why this back-end answered (cloud.route.routing), with several
    provisional_was: str | None = None  # on a final answer: what the provisional one had said

    @property
    def outcome(self) -> str:
        if self.decision in ("local", "dropped"):
            return self.decision
        if self.source is not None:
            return self.source
        return "waiting"

    def path(self) -> list[dict[str, str]]:
        """motion -> detector -> rule -> where the verdict came from, each with a short detail."""
        detector = f"{self.label} {self.score:.2f}" + (" (uncertain)" if self.uncertain else "")
        steps = [{"step": "motion", "detail": "moved"}, {"step": "detector", "detail": detector},
                 {"step": "rule", "detail": self.reason or self.decision}]
        outcome = self.outcome
        detail = ""
        if outcome == "cloud_cache" and self.reused_from:
            detail = f"reused …{self.reused_from[-8:]}"  # a UUIDv7 begins with its time: its tail tells events apart
        elif outcome in MODEL_SOURCES:
            detail = self.model
        steps.append({"step": outcome, "label": STEP_NAMES.get(outcome, outcome), "detail": detail})
        return steps

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "seq": self.seq, "device": self.device, "camera": self.camera, "label": self.label,
                "score": round(self.score, 3), "uncertain": self.uncertain, "captured_ms": self.captured_ms,
                "at_ms": self.at_ms, "local_time": self.local_time,
                "track_id": self.track_id, "reason": self.reason, "decision": self.decision,
                "outcome": self.outcome, "path": self.path(), "verdict": self.verdict,
                "confidence": None if self.confidence is None else round(self.confidence, 3),
                "description": self.description, "source": self.source, "model": self.model,
                "latency_ms": round_or_none(self.latency_ms), "cloud_ms": round_or_none(self.cloud_ms),
                "reused_from": self.reused_from, "facts": self.facts, "checked": self.checked, "boxes": self.boxes,
                "decided_by": self.decided_by, "policy": self.policy, "clause": self.clause,
                "feedback": self.feedback, "thumb": f"thumbs/{self.id}.jpg" if self.thumb else None,
                "provisional": self.provisional, "routed_by": self.routed_by, "provisional_was": self.provisional_was}


@dataclass(frozen=True)
class DeviceDecision:
    """What a device decided about one track, for a feed running next to the cloud (the demo).

    `box` is the tracked box and `detections` everything detected on the same frame, both normalised to
    the frame; `crop_box` is where the device cut `crop_jpeg` (None: the box grown by the shared margin)."""

    device: str
    camera: str
    track_id: int
    label: str
    score: float
    uncertain: bool
    captured_ms: int
    decision: str
    reason: str
    event_id: str | None = None
    box: Box | None = None
    detections: tuple[tuple[str, float, Box], ...] = ()
    crop_jpeg: bytes = b""
    crop_box: Box | None = None
    cached: Verdict | None = None  # the device cache's answer, for decision "cached"
    decided_ms: float | None = None  # how long the device took to decide (its cache lookup)


def round_or_none(value: float | None, digits: int = 1) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, digits)
