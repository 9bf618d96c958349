"""What one edge agent counts: its counters and latency samples, and per-camera frame counts.

Plain data written on the agent's pumping thread and read by anyone (the daemon's state, the metrics endpoint,
`EdgeAgent.summary`); values only grow.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

_SAMPLES = 10_000  # latency samples kept per series


@dataclass
class EdgeStats:
    """Counters and latency samples of one agent; read them any time (values only grow)."""

    frames_read: int = 0
    frames_detected: int = 0
    tracks: int = 0
    events: int = 0  # new tracks put to the rules
    escalated: int = 0
    local: int = 0
    dropped: int = 0
    suppressed: int = 0  # answered on the device by a learned suppression (edge.suppress)
    escalate_failed: int = 0  # escalations that could not be encoded (logged)
    verdicts_llm: int = 0
    verdicts_cloud_cache: int = 0
    verdicts_fallback: int = 0
    verdicts_device_cache: int = 0  # decisions answered by this device's cache
    verdicts_unmatched: int = 0  # verdicts for ids not in the outbox (answered elsewhere); still cached
    verdicts_duplicate: int = 0  # a second (or later) verdict for the same event id
    verdicts_provisional: int = 0  # first verdicts marked provisional: a later one replaces them (cloud.finals)
    verdicts_replaced: int = 0  # later verdicts that replaced a provisional one (not duplicates)
    verdicts_invalid: int = 0  # undecodable or addressed to another device; logged and ignored
    published: int = 0  # events handed to MQTT, repeats included
    republished: int = 0  # of which repeats (same id)
    connects: int = 0
    publish_refused: int = 0  # PUBACKs with a failure reason code (e.g. not authorized); re-sent after the timeout
    outbox_rejected: int = 0  # escalations the full outbox refused (policy reject_newest)
    budget_dropped: int = 0  # escalated, then given up waiting for the budget (queue full)
    budget_local: int = 0  # resolved on the device as "unknown" because the budget was spent
    overload_held: int = 0  # escalated while the cloud was overloaded and publishing was held
    overload_local: int = 0  # resolved on the device as "unknown" because the cloud was overloaded
    load_invalid: int = 0  # cloud load reports that could not be read
    detect_ms: deque[float] = field(default_factory=lambda: deque(maxlen=_SAMPLES))
    # ms from escalation to verdict arrival by verdict source; "device_cache" is the time a cache answer took
    verdict_ms: dict[str, deque[float]] = field(default_factory=dict)

    def add_latency(self, source: str, ms: float) -> None:
        series = self.verdict_ms.get(source)
        if series is None:
            series = self.verdict_ms[source] = deque(maxlen=_SAMPLES)
        series.append(ms)

    def counters(self) -> dict[str, int]:
        return {k: v for k, v in vars(self).items() if isinstance(v, int)}


@dataclass
class CameraCounts:
    """Per camera, since the agent started (pipelines rebuilt by a config change keep counting here)."""

    frames: int = 0  # frames through the vision pipeline
    detected: int = 0  # of which the detector looked at
    tracks: int = 0
    events: int = 0


__all__ = ["CameraCounts", "EdgeStats"]
