"""Tracking: turn per-frame detections into objects with a life — one id from the moment a person appears
until they have been gone for `max_missed_s`. Greedy IoU matching against a constant-velocity prediction
of each box is enough at 5-15 fps with few objects, and costs microseconds.

Time is the stream's pts, never the wall clock, so a recorded clip tracks the same on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import Field

from ..shared.config import Strict
from .detect import Det

Box = tuple[float, float, float, float]
MAX_PREDICT_S = 1.0  # extrapolate a box at most this far: further out a guess is worse than standing still
VELOCITY_SMOOTHING = 0.5  # weight of the newest velocity measurement


class TrackerConfig(Strict):
    iou_threshold: Annotated[float, Field(gt=0.0, le=1.0)] = 0.2
    max_missed_s: Annotated[float, Field(gt=0.0)] = 2.0  # gone this long without a match (or a hold) -> ended
    min_hits: Annotated[int, Field(ge=1)] = 3  # detections before a track is worth an event
    emit_after_s: Annotated[float, Field(ge=0.0)] = 1.5  # age before a confirmed track is emitted
    # A track the detector misses still counts as seen ("held") while its box differs from the empty scene
    # by at least hold_min_presence and from its look at the last hit by at most hold_max_change (mean
    # grey levels, see motion.patch_difference): people who stand still with their back to the camera stay
    # one track. hold_min_presence = 0 turns holding off.
    hold_min_presence: Annotated[float, Field(ge=0.0, le=255.0)] = 15.0
    hold_max_change: Annotated[float, Field(gt=0.0, le=255.0)] = 30.0
    max_hold_s: Annotated[float, Field(gt=0.0)] = 60.0  # held without any detection this long -> ended


@dataclass(slots=True, eq=False)
class Track:
    track_id: int
    label: str
    box: Box  # last matched box, normalised
    first_ts: float
    last_hit_ts: float  # pts of the last matched detection
    last_seen_ts: float  # pts of the last detection or hold
    hits: int = 1
    velocity: Box = (0.0, 0.0, 0.0, 0.0)  # box units per second

    def predict(self, pts_s: float) -> Box:
        dt = min(max(pts_s - self.last_hit_ts, 0.0), MAX_PREDICT_S)
        if dt == 0.0:
            return self.box
        vx1, vy1, vx2, vy2 = self.velocity
        x1, y1, x2, y2 = self.box
        return (min(max(x1 + vx1 * dt, 0.0), 1.0), min(max(y1 + vy1 * dt, 0.0), 1.0),
                min(max(x2 + vx2 * dt, 0.0), 1.0), min(max(y2 + vy2 * dt, 0.0), 1.0))


@dataclass(slots=True)
class TrackUpdate:
    matched: list[tuple[Track, Det]] = field(default_factory=list)  # includes the tracks started now
    started: list[Track] = field(default_factory=list)


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box in a [N,4] with every box in b [M,4] (x1, y1, x2, y2)."""
    ix1 = np.maximum(a[:, None, 0], b[None, :, 0])
    iy1 = np.maximum(a[:, None, 1], b[None, :, 1])
    ix2 = np.minimum(a[:, None, 2], b[None, :, 2])
    iy2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(ix2 - ix1, 0.0, None) * np.clip(iy2 - iy1, 0.0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


class IoUTracker:
    """Active tracks of one camera. `update` on frames the detector ran on, `hold` for tracks known to be
    still there, `expire` on every frame; ended tracks are handed back exactly once."""

    def __init__(self, config: TrackerConfig, first_id: int = 1):
        self._config = config
        self._next_id = first_id
        self._tracks: list[Track] = []

    @property
    def tracks(self) -> list[Track]:
        return self._tracks

    def update(self, pts_s: float, dets: list[Det]) -> TrackUpdate:
        result = TrackUpdate()
        if not dets:
            return result
        unmatched = list(range(len(dets)))
        if self._tracks:
            predicted = np.array([t.predict(pts_s) for t in self._tracks], dtype=np.float64)
            boxes = np.array([d.box for d in dets], dtype=np.float64)
            iou = iou_matrix(predicted, boxes)
            for ti, t in enumerate(self._tracks):  # a label never changes within a track
                for di, d in enumerate(dets):
                    if d.label != t.label:
                        iou[ti, di] = 0.0
            taken_t: set[int] = set()
            taken_d: set[int] = set()
            for flat in np.argsort(-iou, axis=None, kind="stable"):
                ti, di = divmod(int(flat), len(dets))
                if iou[ti, di] < self._config.iou_threshold:
                    break
                if ti in taken_t or di in taken_d:
                    continue
                taken_t.add(ti)
                taken_d.add(di)
                self._hit(self._tracks[ti], dets[di], pts_s)
                result.matched.append((self._tracks[ti], dets[di]))
            unmatched = [i for i in unmatched if i not in taken_d]
        for di in unmatched:
            d = dets[di]
            track = Track(self._next_id, d.label, d.box, pts_s, pts_s, pts_s)
            self._next_id += 1
            self._tracks.append(track)
            result.started.append(track)
            result.matched.append((track, d))
        return result

    def _hit(self, track: Track, det: Det, pts_s: float) -> None:
        dt = pts_s - track.last_hit_ts
        if dt > 0.0:
            a = VELOCITY_SMOOTHING
            track.velocity = tuple(  # type: ignore[assignment]
                (1.0 - a) * v + a * (n - o) / dt for v, n, o in zip(track.velocity, det.box, track.box, strict=True))
        track.box = det.box
        track.last_hit_ts = track.last_seen_ts = pts_s
        track.hits += 1

    def hold(self, track: Track, pts_s: float) -> None:
        """The track was not detected but is known to be still there, not moving."""
        track.last_seen_ts = max(track.last_seen_ts, pts_s)
        track.velocity = (0.0, 0.0, 0.0, 0.0)

    def expire(self, pts_s: float) -> list[Track]:
        """Remove and return the tracks unseen for longer than max_missed_s (or held past max_hold_s)."""
        if not self._tracks:
            return []
        cfg = self._config
        ended = [t for t in self._tracks if pts_s - t.last_seen_ts > cfg.max_missed_s
                 or pts_s - t.last_hit_ts > cfg.max_hold_s]
        if ended:
            self._tracks = [t for t in self._tracks if t not in ended]
        return ended

    def end_all(self) -> list[Track]:
        ended, self._tracks = self._tracks, []
        return ended
