"""What the vision pipeline remembers of one track besides the tracker's geometry (`TrackMemory`), and the
`TrackEvent` made of it. The pipeline keeps one per live track; the closer looks (closer.py) fill in what
they find about it."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ...shared.protocol import MAX_DETECTIONS
from ...shared.stats import median
from .capture import Frame
from .classify import Classification
from .crops import Box, cut, encode_jpeg, phash_dct64
from .detect import Det
from .events import TrackEvent, VisionConfig
from .samples import LookState
from .track import Track, direction_of, leaving

MAX_SCORES_KEPT = 1024  # per track, for the median; a person standing for hours must not grow memory
BEST_MARGIN = 0.05  # a track's best crop is replaced by a hit scoring this much higher


@dataclass(slots=True)
class TrackMemory:
    """What the pipeline remembers about one track besides the tracker's geometry."""

    scores: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_SCORES_KEPT))
    best_score: float = -1.0  # the score of the best crop's hit
    top_score: float = 0.0  # the highest score of any hit (the best crop's may be up to BEST_MARGIN lower)
    best_box: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    best_dets: list[Det] = field(default_factory=list)
    best_wall_ms: int = 0
    best_crop: tuple[np.ndarray, Box] | None = None  # the best crop and where it was cut, until emitted
    best_paced: bool = False  # the best crop is from one of the gate's own looks (see `better_crop`)
    appearance: np.ndarray | None = None  # gate patch under the box at the last hit
    zone_since: dict[str, float] = field(default_factory=dict)  # zone -> pts first seen standing in it
    resolved: bool = False  # a motion track the pipeline has looked at closely
    evidence: float = 0.0  # best faint person score seen on a motion track
    noise: bool = False  # resolved as nothing worth an event (so far: looked at again later)
    next_look_s: float = 0.0  # when a noise track is looked at again (pts)
    rider_checked: bool = False
    # the empty-scene model already looked like this where it was first found (it was there when the stream
    # started, or stood still untracked until the scene learnt it): held by its own look alone
    scene_unknown: bool = False
    uncertain: bool = False
    classification: Classification | None = None
    source: Literal["detector", "motion"] = "detector"
    first_box: Box | None = None  # where it was first seen (detected), for its direction of travel
    event: TrackEvent | None = None
    earlier: list[TrackEvent] = field(default_factory=list)  # its events before `event` (one per new zone)
    new_zone: bool = False  # its event is out and it stood in a zone the event had not: another is due
    looks: LookState = field(default_factory=LookState)  # its looks for the gallery (samples.py)

    def keep_best(self, score: float, box: Box, dets: list[Det], frame: Frame,
                  crop: tuple[np.ndarray, Box]) -> None:
        """The track's best crop so far: `crop` of `frame`, from a hit (or a resolution) scoring `score`."""
        self.best_score = score
        self.best_box = box
        self.best_dets = dets[:MAX_DETECTIONS]
        self.best_wall_ms = frame.wall_ms
        self.best_crop = crop

    def hit(self, det: Det, dets: list[Det], frame: Frame, crop_margin: float, paced: bool) -> None:
        """A detector hit on the track; it may give the track's best crop (`better_crop`)."""
        self.scores.append(det.score)
        self.top_score = max(self.top_score, det.score)
        if self.event is None and self.better_crop(det.score, paced):
            self.best_paced = paced
            self.keep_best(det.score, det.box, dets, frame, cut(frame.image, det.box, crop_margin))

    def better_crop(self, score: float, paced: bool) -> bool:
        """Whether a hit replaces the track's best crop. The gate's own looks (`paced`) give it once one has
        found the track: they fall on the same frames in two runs over one scene (a replay from a few frames
        later, the demo's second pass), so the crops match and a verdict is reused, where a closer look's
        higher score would pick a frame that depends on where the run started. Only a clearly better score
        (BEST_MARGIN) replaces it: the same frame scores a few hundredths apart through another square."""
        if paced != self.best_paced:
            return paced
        return score > self.best_score + BEST_MARGIN

    def left(self, track: Track, labels: frozenset[str], min_hits: int) -> bool:
        """Exit evidence: a tentative track one hit short of `min_hits` whose box, against a frame edge, moved
        towards that edge since it was first seen (track.leaving). The object left the picture, which is why
        the looks stopped finding it: not a flicker (a flicker does not walk out of the frame)."""
        if track.label not in labels or self.resolved or track.hits < min_hits - 1 or self.first_box is None:
            return False
        return leaving(self.first_box, track.box)

    def enter(self, zones: Iterable[str], pts: float) -> bool:
        """Note the zones it stands in at `pts`; whether one of them is new to it."""
        new = False
        for zone in zones:
            new = new or zone not in self.zone_since
            self.zone_since.setdefault(zone, pts)
        return new

    def rezone(self, det: Det, dets: list[Det], frame: Frame, crop_margin: float) -> None:
        """Its event is out and it walked into a zone the event had not been in: another event is due (the
        rules decide whether it is worth a verdict), with this moment's crop, the first of it in that zone."""
        self.new_zone = True
        self.keep_best(det.score, det.box, dets, frame, cut(frame.image, det.box, crop_margin))

    def events(self) -> list[TrackEvent]:
        """Its events, first to last (one, and one more for each zone it walked into after the first)."""
        return [*self.earlier, self.event] if self.event is not None else list(self.earlier)

    def dwell(self, track: Track, pts: float) -> float:
        """The longest stay in one zone up to `pts` (no zones: the track's age)."""
        if self.zone_since:
            return max(0.0, pts - min(self.zone_since.values()))
        return max(0.0, pts - track.first_ts)


def event_of(camera: str, track: Track, memory: TrackMemory, pts: float, config: VisionConfig) -> TrackEvent:
    """The event of a track as remembered up to `pts`, with its best crop."""
    assert memory.best_crop is not None  # every confirmed track has a hit or a resolution: both set it
    crop, crop_at = memory.best_crop
    jpeg, size = encode_jpeg(crop, config.crop_max_side)
    score = max(memory.best_score, memory.top_score, 0.0)
    uncertain = memory.uncertain or (track.label == "person" and score < config.uncertain_below)
    return TrackEvent(
        camera=camera, track_id=track.track_id, label=track.label, score=score,
        median_score=float(median(memory.scores, None) or 0.0),
        uncertain=uncertain, first_ts=track.first_ts, last_ts=track.last_seen_ts,
        captured_ms=memory.best_wall_ms, box=memory.best_box, detections=memory.best_dets, crop_jpeg=jpeg,
        crop_size=size, crop_box=crop_at, phash=phash_dct64(crop), hits=track.hits,
        zones=sorted(memory.zone_since), dwell_s=memory.dwell(track, pts), source=memory.source,
        classification=memory.classification, direction=direction_of(memory.first_box, track.box),
        visit=track.visit)


__all__ = ["BEST_MARGIN", "MAX_SCORES_KEPT", "TrackMemory", "event_of"]
