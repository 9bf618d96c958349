"""The vision half of the device, per camera: frame -> motion gate -> detector -> tracker -> one
`TrackEvent` per object that stayed long enough, carrying the best crop seen of it.

Nothing here does I/O or decides what an event means; the agent reads `PipelineOutput` and does that.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import Field

from ..shared.config import Strict
from ..shared.protocol import MAX_DETECTIONS
from .capture import Frame
from .crops import crop_box, encode_jpeg, phash_dct64
from .detect import Det, Detector, DetectorConfig
from .motion import MotionConfig, MotionGate, patch_difference
from .track import IoUTracker, Track, TrackerConfig

MAX_SCORES_KEPT = 1024  # per track, for the median; a person standing for hours must not grow memory


class VisionConfig(Strict):
    motion: MotionConfig = Field(default_factory=MotionConfig)
    detector: DetectorConfig = Field(default_factory=DetectorConfig)
    tracker: TrackerConfig = Field(default_factory=TrackerConfig)
    uncertain_below: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5  # best score under this -> uncertain
    crop_max_side: Annotated[int, Field(ge=32, le=4096)] = 320
    crop_margin: Annotated[float, Field(ge=0.0, le=1.0)] = 0.15


@dataclass
class TrackEvent:
    """One object seen for a while. Fields up to `hits` are fixed when the event is emitted, except
    `last_ts` and `hits`, which are updated once more when the track ends."""

    camera: str
    track_id: int
    label: str
    score: float  # best score seen up to emission
    median_score: float
    uncertain: bool  # best score below VisionConfig.uncertain_below
    first_ts: float  # seconds from stream start (pts)
    last_ts: float
    captured_ms: int  # wall_ms of the best frame
    box: tuple[float, float, float, float]  # best frame's box, normalised
    detections: list[Det]  # all detections on the best frame
    crop_jpeg: bytes
    crop_size: tuple[int, int]
    phash: str
    phash_alg: str = "dct64"
    hits: int = 0


@dataclass
class PipelineOutput:
    new_events: list[TrackEvent]
    ended: list[TrackEvent]  # a track emitted only when it ends appears in both lists of the same output


class LatencyWindow:
    """The most recent timings (ms) and a total count; median/p95 computed when asked, not per frame."""

    def __init__(self, size: int = 512):
        self._values: deque[float] = deque(maxlen=size)
        self.count = 0

    def add(self, ms: float) -> None:
        self._values.append(ms)
        self.count += 1

    def median(self) -> float:
        return statistics.median(self._values) if self._values else 0.0

    def p95(self) -> float:
        if not self._values:
            return 0.0
        ordered = sorted(self._values)
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]

    def __len__(self) -> int:
        return len(self._values)


@dataclass
class PipelineStats:
    frames_read: int = 0
    frames_detected: int = 0
    tracks: int = 0  # tracks started
    events: int = 0  # tracks emitted as events
    detect_ms: LatencyWindow = field(default_factory=LatencyWindow)

    @property
    def gated_fraction(self) -> float:
        """Share of frames the motion gate kept from the detector."""
        return 1.0 - self.frames_detected / self.frames_read if self.frames_read else 0.0

    def as_dict(self) -> dict:
        return {"frames_read": self.frames_read, "frames_detected": self.frames_detected,
                "gated_fraction": round(self.gated_fraction, 4), "tracks": self.tracks, "events": self.events,
                "detect_ms_median": round(self.detect_ms.median(), 2), "detect_ms_p95": round(self.detect_ms.p95(), 2)}


@dataclass(slots=True)
class _TrackMemory:
    """What the pipeline remembers about one track besides the tracker's geometry."""

    scores: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_SCORES_KEPT))
    best_score: float = -1.0
    best_box: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    best_dets: list[Det] = field(default_factory=list)
    best_wall_ms: int = 0
    best_crop: np.ndarray | None = None  # copy of the best crop until the event is emitted
    appearance: np.ndarray | None = None  # gate patch under the box at the last hit
    event: TrackEvent | None = None


class VisionPipeline:
    """One camera's stages wired together; call `process` for every frame in order, `finish` at the end."""

    def __init__(self, camera: str, config: VisionConfig, detector: Detector):
        self.camera = camera
        self._config = config
        self._detector = detector
        self._gate = MotionGate(config.motion)
        self._tracker = IoUTracker(config.tracker)
        self._memory: dict[int, _TrackMemory] = {}
        self._last_pts = float("-inf")
        self.stats = PipelineStats()

    def process(self, frame: Frame) -> PipelineOutput:
        self.stats.frames_read += 1
        pts = frame.pts_s
        new_events: list[TrackEvent] = []
        ended: list[TrackEvent] = []
        if pts < self._last_pts:  # the source restarted (reconnect, replay): its tracks cannot continue
            self._end(self._tracker.end_all(), new_events, ended)
        self._last_pts = pts
        motion = self._gate.check(frame)
        if motion.run_detector:
            t0 = time.perf_counter()
            dets = self._detector.detect(frame.image)
            self.stats.detect_ms.add((time.perf_counter() - t0) * 1000.0)
            self.stats.frames_detected += 1
            update = self._tracker.update(pts, dets)
            for track in update.started:
                self._memory[track.track_id] = _TrackMemory()
                self.stats.tracks += 1
            for track, det in update.matched:
                self._observe(self._memory[track.track_id], det, dets, frame)
        self._hold_present(pts)
        self._gate.update_scene([track.box for track in self._tracker.tracks])
        self._end(self._tracker.expire(pts), new_events, ended)
        tc = self._config.tracker
        for track in self._tracker.tracks:
            memory = self._memory[track.track_id]
            if memory.event is None and track.hits >= tc.min_hits and pts - track.first_ts >= tc.emit_after_s:
                new_events.append(self._emit(track, memory))
        return PipelineOutput(new_events, ended)

    def finish(self) -> PipelineOutput:
        """End of stream: every live track ends now; confirmed ones not yet emitted are emitted first."""
        new_events: list[TrackEvent] = []
        ended: list[TrackEvent] = []
        self._end(self._tracker.end_all(), new_events, ended)
        self._last_pts = float("-inf")
        return PipelineOutput(new_events, ended)

    def _observe(self, memory: _TrackMemory, det: Det, dets: list[Det], frame: Frame) -> None:
        memory.scores.append(det.score)
        memory.appearance = self._gate.patch(det.box)
        if memory.event is None and det.score > memory.best_score:
            memory.best_score = det.score
            memory.best_box = det.box
            memory.best_dets = dets[:MAX_DETECTIONS]
            memory.best_wall_ms = frame.wall_ms
            memory.best_crop = crop_box(frame.image, det.box, self._config.crop_margin).copy()

    def _hold_present(self, pts: float) -> None:
        """Keep tracks the detector missed alive while something still stands in their box and looks
        much as it did at the last hit."""
        tc = self._config.tracker
        if tc.hold_min_presence <= 0.0:
            return
        gate = self._gate
        for track in self._tracker.tracks:
            if track.last_hit_ts == pts:
                continue
            appearance = self._memory[track.track_id].appearance
            if appearance is None:
                continue
            now = gate.patch(track.box)
            if (patch_difference(now, gate.scene_patch(track.box)) >= tc.hold_min_presence
                    and patch_difference(now, appearance) <= tc.hold_max_change):
                self._tracker.hold(track, pts)

    def _end(self, tracks: list[Track], new_events: list[TrackEvent], ended: list[TrackEvent]) -> None:
        for track in tracks:
            memory = self._memory.pop(track.track_id)
            if memory.event is None:
                if track.hits < self._config.tracker.min_hits:
                    continue  # never confirmed: a flicker, dropped silently
                new_events.append(self._emit(track, memory))
            event = memory.event
            assert event is not None
            event.last_ts = track.last_seen_ts
            event.hits = track.hits
            ended.append(event)

    def _emit(self, track: Track, memory: _TrackMemory) -> TrackEvent:
        crop = memory.best_crop
        assert crop is not None  # every track has at least one hit, and the first hit sets the crop
        jpeg, size = encode_jpeg(crop, self._config.crop_max_side)
        event = TrackEvent(
            camera=self.camera, track_id=track.track_id, label=track.label, score=memory.best_score,
            median_score=float(statistics.median(memory.scores)),
            uncertain=memory.best_score < self._config.uncertain_below,
            first_ts=track.first_ts, last_ts=track.last_seen_ts, captured_ms=memory.best_wall_ms,
            box=memory.best_box, detections=memory.best_dets, crop_jpeg=jpeg, crop_size=size,
            phash=phash_dct64(crop), hits=track.hits)
        memory.event = event
        memory.best_crop = None
        self.stats.events += 1
        return event
