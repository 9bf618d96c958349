"""Tracking: turn per-frame detections into objects with a life — one id from the moment something appears
until it has been gone for `max_missed_s`, so one object makes one event.

SORT-style: every track carries a constant-velocity motion model (an alpha-beta filter on the box corners,
the steady-state form of SORT's Kalman filter), its box is predicted to the frame's time, and detections are
matched to predictions greedily by IoU (optimal for the few objects a camera sees; Hungarian matching only
matters in crowds). A prediction runs at most `MAX_PREDICT_S` ahead, which is what carries an identity
through a short occlusion: the person walking behind a pillar is matched again where the model expects them.

Besides detections, the tracker takes *motion blobs* (moving areas no detection explains). A blob no track
claims starts a `MOTION` track: something moves there that the detector does not name. The pipeline
resolves a persistent one (verifier, classifier) into a labelled track or an uncertain person. Blobs also
keep alive tracks the detector missed on this frame, and move the tracks that only motion ever saw.

Tracks belong to *visits* (`Track.visit`, `IoUTracker.join_visit`): when a track becomes an event it joins the
visit of a track of its label that it continues (one lost, at most `relink_s` before this one was first seen,
near where it was last seen: a walker the detector lost between two looks and found a box further on) or
duplicates (one alive on the same object: a motion track a shaking picture started on a tracked person), else it
starts a visit. The triage escalates a visit once (edge.triage.rules); the tracker only says which tracks are one.

Time is the stream's pts, never the wall clock, so a recorded clip tracks the same on any machine.
"""

from __future__ import annotations

import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import Field

from ...shared.config import Strict
from .detect import Det, Region

Box = tuple[float, float, float, float]
MOTION = "motion"  # label of a track only motion has seen so far
MAX_PREDICT_S = 1.0  # extrapolate a box at most this far: further out a guess is worse than standing still
VELOCITY_SMOOTHING = 0.5  # weight of the newest velocity measurement (the filter's beta)
# A track continues a lost one whose predicted box's centre is this many box widths across (the wider of the
# two boxes) and half a box height up or down from where it was first seen: wider than the tracker's own
# `near_width`, since the lost track may have stood still and then walked off between two looks (0.9 widths
# measured at 5 fps, 1.0 at 2 fps on the one-by-one clip)
RELINK_REACH = 1.5
# an event box (or the track's latest) this much over a live track's box of its label, or this much of either
# inside the other, is that track's object (a shaking picture's motion track on part of a tracked person, or a
# whole-body box beside the track that kept only an arm), unless one look ever detected both (two people side by
# side, as the walking GIF's)
DUPLICATE_IOU = 0.5
DUPLICATE_INSIDE = 0.8


class TrackerConfig(Strict):
    iou_threshold: Annotated[float, Field(gt=0.0, le=1.0)] = 0.2
    max_missed_s: Annotated[float, Field(gt=0.0)] = 2.0  # gone this long without a match (or a hold) -> ended
    min_hits: Annotated[int, Field(ge=1)] = 3  # detections before a track is worth an event
    # the median detection score a track needs to be worth an event (one bright flicker is not a person)
    min_median_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    emit_after_s: Annotated[float, Field(ge=0.0)] = 1.5  # age before a confirmed track is emitted
    # A track the detector misses still counts as seen ("held") while its box differs from the empty scene
    # by at least hold_min_presence and from its look at the last hit by at most hold_max_change (mean
    # grey levels, see motion.patch_difference): people who stand still with their back to the camera stay
    # one track. hold_min_presence = 0 turns holding off.
    hold_min_presence: Annotated[float, Field(ge=0.0, le=255.0)] = 15.0
    hold_max_change: Annotated[float, Field(gt=0.0, le=255.0)] = 30.0
    max_hold_s: Annotated[float, Field(gt=0.0)] = 60.0  # held without any detection this long -> ended
    blob_iou: Annotated[float, Field(gt=0.0, le=1.0)] = 0.1  # a motion blob this close belongs to a track
    near_width: Annotated[float, Field(ge=0.0, le=10.0)] = 1.0  # second association, see IoUTracker._near
    # a track that ends shorter than this (first to last sighting) is a flicker or a passer-by's fragment,
    # not an event; at the end of a stream a confirmed track is emitted whatever its length
    min_track_s: Annotated[float, Field(ge=0.0)] = 0.5
    motion_max_missed_s: Annotated[float, Field(gt=0.0)] = 1.0  # a motion-only track without motion ends
    relink_s: Annotated[float, Field(ge=0.0, le=60.0)] = Field(
        2.0, description="a track that starts at most this long after a track of its label was last seen, near "
                         "where that one was going, continues its visit (the rules escalate a visit once); longer "
                         "gaps start a new visit. 0: only tracks on the same object at once share a visit")


@dataclass(slots=True, eq=False)
class Track:
    track_id: int
    label: str  # MOTION until a detection or the pipeline names it
    box: Box  # last matched box, normalised
    first_ts: float
    last_hit_ts: float  # pts of the last matched detection or blob that moved the box
    last_seen_ts: float  # pts of the last detection, blob or hold
    hits: int = 1  # detections matched (0 for a track only motion has seen)
    blob_hits: int = 0  # motion blobs matched
    velocity: Box = (0.0, 0.0, 0.0, 0.0)  # box units per second
    visit: str = ""  # set when it becomes an event (IoUTracker.join_visit) ...
    entry_box: Box | None = None  # ... with where it was first seen
    seen_with: set[int] = field(default_factory=set)  # tracks of its label detected on one look with it: not it

    def predict(self, pts_s: float) -> Box:
        dt = min(max(pts_s - self.last_hit_ts, 0.0), MAX_PREDICT_S)
        if dt == 0.0:
            return self.box
        vx1, vy1, vx2, vy2 = self.velocity
        x1, y1, x2, y2 = self.box
        return (min(max(x1 + vx1 * dt, 0.0), 1.0), min(max(y1 + vy1 * dt, 0.0), 1.0),
                min(max(x2 + vx2 * dt, 0.0), 1.0), min(max(y2 + vy2 * dt, 0.0), 1.0))

    @property
    def motion_only(self) -> bool:
        """No detection has ever matched it: its box follows motion blobs."""
        return self.hits == 0


@dataclass(slots=True)
class TrackUpdate:
    matched: list[tuple[Track, Det]] = field(default_factory=list)  # includes the tracks started now
    started: list[Track] = field(default_factory=list)  # detection and motion tracks started now
    expected: dict[int, Box] = field(default_factory=dict)  # track id -> the predicted box a detection matched


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


def _iou(a: Box, b: Box) -> float:
    return float(iou_matrix(np.array([a], dtype=np.float64), np.array([b], dtype=np.float64))[0, 0])


def _reach(lost: Box, found: Box) -> float:
    """How far `found`'s centre is from `lost`'s, in box widths across (the wider box's), or inf when it is
    more than half a box height (the taller's) up or down."""
    w = max(lost[2] - lost[0], found[2] - found[0], 1e-6)
    h = max(lost[3] - lost[1], found[3] - found[1], 1e-6)
    if abs((found[1] + found[3]) - (lost[1] + lost[3])) / 2.0 / h > 0.5:
        return float("inf")
    return abs((found[0] + found[2]) - (lost[0] + lost[2])) / 2.0 / w


def _greedy(iou: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """Pairs (row, col) by descending IoU, each row and column used once, IoU >= threshold."""
    pairs: list[tuple[int, int]] = []
    if iou.size == 0:
        return pairs
    rows: set[int] = set()
    cols: set[int] = set()
    width = iou.shape[1]
    for flat in np.argsort(-iou, axis=None, kind="stable"):
        r, c = divmod(int(flat), width)
        if iou[r, c] < threshold:
            break
        if r in rows or c in cols:
            continue
        rows.add(r)
        cols.add(c)
        pairs.append((r, c))
    return pairs


def inside_fraction(inner: Box | np.ndarray, outer: Box | np.ndarray, grow: float = 0.15) -> float:
    """Share of `inner`'s area inside `outer` grown by `grow` of its size on each side."""
    gx, gy = (outer[2] - outer[0]) * grow, (outer[3] - outer[1]) * grow
    ix = min(inner[2], outer[2] + gx) - max(inner[0], outer[0] - gx)
    iy = min(inner[3], outer[3] + gy) - max(inner[1], outer[1] - gy)
    area = (inner[2] - inner[0]) * (inner[3] - inner[1])
    return float(ix * iy / area) if ix > 0 and iy > 0 and area > 0 else 0.0


def _explained(blob: Box, dets: list[Det]) -> bool:
    """A blob a detection of this frame accounts for: they overlap, or the detection's centre is in it."""
    bx1, by1, bx2, by2 = blob
    for d in dets:
        x1, y1, x2, y2 = d.box
        cx, cy = (x1 + x2) / 2.0, (y1 + y2) / 2.0
        if bx1 <= cx <= bx2 and by1 <= cy <= by2:
            return True
        ix = min(bx2, x2) - max(bx1, x1)
        iy = min(by2, y2) - max(by1, y1)
        if ix > 0 and iy > 0 and ix * iy >= 0.3 * min((bx2 - bx1) * (by2 - by1), (x2 - x1) * (y2 - y1)):
            return True
    return False


class IoUTracker:
    """Active tracks of one camera. `update` on frames the detector ran on, `hold` for tracks known to be
    still there, `expire` on every frame; ended tracks are handed back exactly once."""

    def __init__(self, config: TrackerConfig, first_id: int = 1):
        self._config = config
        self._next_id = first_id
        self._tracks: list[Track] = []
        self._ended: deque[Track] = deque(maxlen=64)  # ended tracks with a visit, for `join_visit`
        self._visit_prefix = secrets.token_hex(4)  # visits of two trackers (a restarted pipeline) never collide
        self._next_visit = 1

    @property
    def tracks(self) -> list[Track]:
        return self._tracks

    def update(self, pts_s: float, dets: list[Det], blobs: list[Box] | None = None,
               *, start_motion: bool = True, others: list[Det] | None = None) -> TrackUpdate:
        """Match this frame's detections, then the motion blobs no detection explains (`others`: detections
        not tracked that still explain motion). A detection continues a track of its own label or a MOTION
        track (which takes the label); a blob continues any track, or starts a MOTION track."""
        result = TrackUpdate()
        hit: set[int] = set()
        if dets:
            unmatched = set(range(len(dets)))
            if self._tracks:
                predicted = self._predicted(pts_s)
                iou = iou_matrix(predicted, np.array([d.box for d in dets], dtype=np.float64))
                motion = np.array([t.label == MOTION for t in self._tracks])
                for ti, t in enumerate(self._tracks):  # a label never changes once a detection gave it
                    if t.label != MOTION:
                        for di, d in enumerate(dets):
                            if d.label != t.label:
                                iou[ti, di] = 0.0
                # the tracks a detection named first (a blob-only track beside one is often its own motion),
                # then the motion tracks for what is left
                pairs = _greedy(np.where(motion[:, None], 0.0, iou), self._config.iou_threshold)
                pairs += self._near(pts_s, dets, {ti for ti, _ in pairs}, {di for _, di in pairs})
                taken_t, taken_d = {ti for ti, _ in pairs}, {di for _, di in pairs}
                rest = iou.copy()
                rest[~motion, :] = 0.0
                rest[list(taken_t), :] = 0.0
                rest[:, list(taken_d)] = 0.0
                pairs += _greedy(rest, self._config.iou_threshold)
                for ti, di in pairs:
                    track, det = self._tracks[ti], dets[di]
                    if track.label == MOTION:
                        track.label = det.label
                    self._hit(track, det.box, pts_s)
                    track.hits += 1
                    hit.add(id(track))
                    unmatched.discard(di)
                    result.matched.append((track, det))
                    result.expected[track.track_id] = tuple(float(v) for v in predicted[ti])  # type: ignore[assignment]
            for di in sorted(unmatched):
                d = dets[di]
                track = self._start(d.label, d.box, pts_s, hits=1)
                hit.add(id(track))
                result.started.append(track)
                result.matched.append((track, d))
        if len(result.matched) > 1:
            for track, _ in result.matched:  # two boxes of one look are two objects, however close
                track.seen_with.update(other.track_id for other, _ in result.matched
                                       if other is not track and other.label == track.label)
        if blobs:
            explaining = dets + others if others else dets
            free = [b for b in blobs if not _explained(b, explaining)]
            if free:
                self._match_blobs(pts_s, free, hit, result, start_motion)
        return result

    def _near(self, pts_s: float, dets: list[Det], taken_t: set[int], taken_d: set[int]) -> list[tuple[int, int]]:
        """Second association (as ByteTrack does for its leftovers): a detection no box overlapped enough
        continues a track of its label that was not matched, when its centre is within `near_width` box
        widths across and half a box height up or down of the prediction: a person who stood still and then
        walks off fast, or was seen again after a gap, stays one track."""
        limit = self._config.near_width
        if limit <= 0.0:
            return []
        best: list[tuple[float, int, int]] = []
        for ti, track in enumerate(self._tracks):
            if ti in taken_t or track.label == MOTION:
                continue
            x1, y1, x2, y2 = track.predict(pts_s)
            w, h = max(x2 - x1, 1e-6), max(y2 - y1, 1e-6)
            cx, cy = (x1 + x2) / 2.0, (y1 + y2) / 2.0
            for di, d in enumerate(dets):
                if di in taken_d or d.label != track.label:
                    continue
                dx = abs((d.box[0] + d.box[2]) / 2.0 - cx) / w
                dy = abs((d.box[1] + d.box[3]) / 2.0 - cy) / h
                if dx <= limit and dy <= 0.5:
                    best.append((dx + dy, ti, di))
        pairs: list[tuple[int, int]] = []
        for _, ti, di in sorted(best):
            if ti not in taken_t and di not in taken_d:
                taken_t.add(ti)
                taken_d.add(di)
                pairs.append((ti, di))
        return pairs

    def _match_blobs(self, pts_s: float, blobs: list[Box], hit: set[int], result: TrackUpdate,
                     start_motion: bool) -> None:
        candidates = [t for t in self._tracks if id(t) not in hit]
        unmatched = set(range(len(blobs)))
        if candidates:
            predicted = np.array([t.predict(pts_s) for t in candidates], dtype=np.float64)
            iou = iou_matrix(predicted, np.array(blobs, dtype=np.float64))
            for ti, bi in _greedy(iou, self._config.blob_iou):
                track = candidates[ti]
                if track.motion_only:
                    self._hit(track, blobs[bi], pts_s)
                elif inside_fraction(blobs[bi], predicted[ti]) < 0.5:
                    continue  # motion mostly outside the box is something else (or someone walking off)
                # a detected track only claims its blob: it stays alive by detections and by the pipeline's
                # presence check, never by motion (the ghost a leaver leaves in the background is motion)
                unmatched.discard(bi)
                track.blob_hits += 1
        if start_motion:
            for bi in sorted(unmatched):
                track = self._start(MOTION, blobs[bi], pts_s, hits=0)
                track.blob_hits = 1
                result.started.append(track)

    def _predicted(self, pts_s: float) -> np.ndarray:
        return np.array([t.predict(pts_s) for t in self._tracks], dtype=np.float64)

    def start(self, label: str, box: Box, pts_s: float) -> Track:
        """A track the pipeline found by a closer look (a rider on a bike), as if detected now."""
        return self._start(label, box, pts_s, hits=1)

    def _start(self, label: str, box: Box, pts_s: float, hits: int) -> Track:
        track = Track(self._next_id, label, box, pts_s, pts_s, pts_s, hits=hits)
        self._next_id += 1
        self._tracks.append(track)
        return track

    def _hit(self, track: Track, box: Box, pts_s: float) -> None:
        dt = pts_s - track.last_hit_ts
        if dt > 0.0:
            a = VELOCITY_SMOOTHING
            track.velocity = tuple(  # type: ignore[assignment]
                (1.0 - a) * v + a * (n - o) / dt for v, n, o in zip(track.velocity, box, track.box, strict=True))
        track.box = box
        track.last_hit_ts = track.last_seen_ts = pts_s

    def hold(self, track: Track, pts_s: float) -> None:
        """The track was not detected but is known to be still there, not moving."""
        track.last_seen_ts = max(track.last_seen_ts, pts_s)
        track.velocity = (0.0, 0.0, 0.0, 0.0)

    def expire(self, pts_s: float) -> list[Track]:
        """Remove and return the tracks unseen for longer than max_missed_s (motion-only tracks: than
        motion_max_missed_s), or held past max_hold_s."""
        if not self._tracks:
            return []
        cfg = self._config
        ended = [t for t in self._tracks
                 if pts_s - t.last_seen_ts > (cfg.motion_max_missed_s if t.label == MOTION else cfg.max_missed_s)
                 or pts_s - t.last_hit_ts > cfg.max_hold_s]
        if ended:
            self._tracks = [t for t in self._tracks if t not in ended]
            self._ended.extend(t for t in ended if t.visit)
        return ended

    def end_all(self) -> list[Track]:
        ended, self._tracks = self._tracks, []
        self._ended.extend(t for t in ended if t.visit)  # a track emitted as the stream ends may be one of them
        return ended

    def forget_visits(self) -> None:
        """The stream restarts (its time with it): no later track continues one seen before."""
        self._ended.clear()

    def join_visit(self, track: Track, first_box: Box, box: Box, pts_s: float) -> str:
        """The visit `track` belongs to, now that it becomes an event (`first_box`: where it was first seen,
        `box`: its event's box): that of a live track of its label on the same object (DUPLICATE_IOU/_INSIDE),
        else of the nearest track of its label lost at most `relink_s` before it was first seen whose predicted
        box it starts near (RELINK_REACH), else a new one; never that of a track one look detected beside it. A
        short track emitted only when it ended joins the visit of one that continued it and became an event
        first."""
        best: tuple[float, Track] | None = None
        window = self._config.relink_s
        track.entry_box = first_box
        for other in (*self._tracks, *self._ended):
            if other is track or not other.visit or other.label != track.label or other.track_id in track.seen_with:
                continue
            # seen while this one was: alive, or ended with the stream a moment ago
            alive = other.last_seen_ts >= track.first_ts and pts_s - other.last_seen_ts <= self._config.max_missed_s
            if alive and any(
                    _iou(b, other.box) >= DUPLICATE_IOU or inside_fraction(b, other.box, 0.0) >= DUPLICATE_INSIDE
                    or inside_fraction(other.box, b, 0.0) >= DUPLICATE_INSIDE for b in (box, track.box)):
                best = (-1.0, other)  # the same object twice: no continuation is closer
                break
            if 0.0 <= track.first_ts - other.last_seen_ts <= window:  # it continues `other`
                reach = _reach(other.predict(track.first_ts), first_box)
            elif other.entry_box is not None and 0.0 <= other.first_ts - track.last_seen_ts <= window:
                reach = _reach(track.predict(other.first_ts), other.entry_box)  # `other` continued it
            else:
                continue
            if reach <= RELINK_REACH and (best is None or reach < best[0]):
                best = (reach, other)
        if best is not None:
            track.visit = best[1].visit
        else:
            track.visit = f"{self._visit_prefix}-{self._next_visit}"
            self._next_visit += 1
        if track not in self._tracks:  # emitted as it ended: a later track may still continue it
            self._ended.append(track)
        return track.visit


# how far a box must move (box sizes) or grow (ratio of heights) before it has a direction
DIRECTION_MIN_SHIFT = 0.5
DIRECTION_MIN_GROWTH = 1.3
_EDGE = 0.02  # a box this close to the frame's edge is cut off by it: its size says nothing


def direction_of(first: Box | None, last: Box) -> str | None:
    """Its way across the picture from where it was first seen to where it is now, in the words of the
    protocol (`Event.direction`), for a camera that looks across or down at the scene: towards the camera
    when it grew by 30 % or more or came down the picture, away when it shrank or went up, left or right when
    it moved sideways by half its width or more, else `still`; None when nothing is known. A box cut off by
    the frame's edge (someone walking in from under the camera) is judged by its uncut edge only."""
    if first is None:
        return None
    cut_top = first[1] <= _EDGE or last[1] <= _EDGE
    cut_bottom = first[3] >= 1 - _EDGE or last[3] >= 1 - _EDGE
    h0, h1 = first[3] - first[1], last[3] - last[1]
    w = max(first[2] - first[0], last[2] - last[0], 1e-6)
    h = max(h0, h1, 1e-6)
    if not (cut_top or cut_bottom) and min(h0, h1) > 1e-6 and max(h1 / h0, h0 / h1) >= DIRECTION_MIN_GROWTH:
        return "towards the camera" if h1 > h0 else "away from the camera"
    if cut_top and cut_bottom:
        down = 0.0
    elif cut_bottom:
        down = (last[1] - first[1]) / h
    elif cut_top:
        down = (last[3] - first[3]) / h
    else:
        down = ((last[1] + last[3]) - (first[1] + first[3])) / 2 / h
    sideways = ((last[0] + last[2]) - (first[0] + first[2])) / 2 / w
    if abs(down) >= DIRECTION_MIN_SHIFT and abs(down) >= abs(sideways):
        return "towards the camera" if down > 0 else "away from the camera"
    if abs(sideways) >= DIRECTION_MIN_SHIFT:
        return "right" if sideways > 0 else "left"
    return "still"


EXIT_MIN_SHIFT = 0.05  # of its size: how far a box's far side must move towards the edge it is against


def leaving(first: Box, last: Box) -> bool:
    """Whether the box was walking out of the picture: `last` is against a frame edge and its far side (the
    one away from that edge) moved towards the edge since `first` by EXIT_MIN_SHIFT of its size or more."""
    w = max(last[2] - last[0], first[2] - first[0], 1e-6)
    h = max(last[3] - last[1], first[3] - first[1], 1e-6)
    return ((last[1] <= _EDGE and first[3] - last[3] >= EXIT_MIN_SHIFT * h)
            or (last[3] >= 1 - _EDGE and last[1] - first[1] >= EXIT_MIN_SHIFT * h)
            or (last[0] <= _EDGE and first[2] - last[2] >= EXIT_MIN_SHIFT * w)
            or (last[2] >= 1 - _EDGE and last[0] - first[0] >= EXIT_MIN_SHIFT * w))


def with_tracks(blob_px: list[Region], tracks: list[Track], pts: float, w: int, h: int) -> list[Region]:
    """Blobs (frame pixels) grown to the boxes the tracks they touch should have at `pts`, so a region holds
    the whole object whose arm moved, not just the arm."""
    grown = []
    for bx1, by1, bx2, by2 in blob_px:
        for track in tracks:
            x1, y1, x2, y2 = track.predict(pts)
            tx1, ty1, tx2, ty2 = int(x1 * w), int(y1 * h), int(np.ceil(x2 * w)), int(np.ceil(y2 * h))
            if tx1 < bx2 and bx1 < tx2 and ty1 < by2 and by1 < ty2:
                bx1, by1, bx2, by2 = min(bx1, tx1), min(by1, ty1), max(bx2, tx2), max(by2, ty2)
        grown.append((bx1, by1, bx2, by2))
    return grown
