"""What one camera's vision pipeline counts (frames, detector calls, tracks, events) and how long its detector
calls take: read by the agent's metrics, the replay summary and the benchmarks."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ...shared.stats import median, percentile


class LatencyWindow:
    """The most recent timings (ms) and a total count; median/p95 computed when asked, not per frame."""

    def __init__(self, size: int = 512):
        self._values: deque[float] = deque(maxlen=size)
        self.count = 0

    def add(self, ms: float) -> None:
        self._values.append(ms)
        self.count += 1

    def median(self) -> float:
        return median(self._values, None) or 0.0

    def p95(self) -> float:
        return percentile(sorted(self._values), 0.95) or 0.0

    def since(self, count: int) -> list[float]:
        """The samples added after the first `count` (those still kept)."""
        new = min(self.count - count, len(self._values))
        return list(self._values)[-new:] if new > 0 else []

    def __len__(self) -> int:
        return len(self._values)


@dataclass
class PipelineStats:
    frames_read: int = 0
    frames_detected: int = 0  # frames the detector looked at (whole or regions)
    detector_calls: int = 0  # one per region or whole frame
    region_looks: int = 0  # of which regions
    frames_followed: int = 0  # motion frames left to the tracker (all motion belonged to tracked objects)
    start_looks: int = 0  # frames looked at whole because the stream had just started
    confirm_looks: int = 0  # looks at tentative tracks that motion did not ask for
    closer_looks: int = 0  # region looks at new motion tracks a whole-frame look explained nothing of
    verifier_calls: int = 0
    classifier_calls: int = 0
    motion_tracks: int = 0  # unexplained motion that started a track
    resolved: dict[str, int] = field(default_factory=dict)  # how motion tracks were resolved
    tracks: int = 0  # tracks started
    events: int = 0  # tracks emitted as events
    tentative: int = 0  # tracks the stream ended on before they were confirmed (never events)
    detect_ms: LatencyWindow = field(default_factory=LatencyWindow)

    @property
    def gated_fraction(self) -> float:
        """Share of frames the motion gate kept from the detector."""
        return 1.0 - self.frames_detected / self.frames_read if self.frames_read else 0.0

    def as_dict(self) -> dict:
        return {"frames_read": self.frames_read, "frames_detected": self.frames_detected,
                "detector_calls": self.detector_calls, "region_looks": self.region_looks,
                "frames_followed": self.frames_followed, "start_looks": self.start_looks,
                "confirm_looks": self.confirm_looks, "closer_looks": self.closer_looks,
                "verifier_calls": self.verifier_calls,
                "classifier_calls": self.classifier_calls, "motion_tracks": self.motion_tracks,
                "resolved": dict(self.resolved),
                "gated_fraction": round(self.gated_fraction, 4), "tracks": self.tracks, "events": self.events,
                "tentative": self.tentative,
                "detect_ms_median": round(self.detect_ms.median(), 2), "detect_ms_p95": round(self.detect_ms.p95(), 2)}
