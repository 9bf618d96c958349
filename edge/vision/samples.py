"""A track's looks for the gallery (edge/triage/gallery.py): the vision pipeline's half, `LookSampler`, which
picks looks of a track from its detector hits and hands them on with (or after) the track's event; the
`[vision.gallery]` settings both halves read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Protocol

import numpy as np
from pydantic import Field

from ...shared.config import Strict
from .capture import Frame
from .crops import cut, shrink
from .detect import Det
from .track import Track, iou_matrix

Box = tuple[float, float, float, float]
AMBIGUOUS = 0.5  # another detection fitting the predicted box this well relative to the hit: no look


class GalleryConfig(Strict):
    """`[vision.gallery]`: the looks of a track kept as further reuse keys of its verdict."""

    max_looks: Annotated[int, Field(ge=0, le=32)] = 8  # looks sampled per track, and keys per verdict; 0: off
    # at most one look per this much stream time: 0.2 takes every look the pipeline makes of a moving person
    # (one per moving_interval_s, 0.25 s), so 8 cover the track's first 1.75 s, the emit_after_s window its
    # escalated crop is chosen from, where a later visit's crop comes from too (docs/developers/benchmarks.md,
    # "Track gallery")
    every_s: Annotated[float, Field(ge=0.0, le=60.0)] = 0.2
    min_iou: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5  # the detection against the track's predicted box
    # a look's embedding against the nearest of the track's keys so far: a guard against a switch to something
    # else entirely (in the walking GIF a person's looks reach 0.86-1.0 of their own nearest key, while the
    # other walker's come to 0.82-0.89: look-alikes are the geometry's to refuse, not this)
    min_similarity: Annotated[float, Field(ge=0.0, le=1.0)] = 0.85


@dataclass(slots=True, eq=False)
class TrackLook:
    """One later (or earlier) look of a track: the crop of a detector hit, cut from the frame."""

    camera: str
    track_id: int
    pts_s: float
    crop: np.ndarray


@dataclass(slots=True)
class LookState:
    """What the sampler keeps of one track (in the pipeline's memory of it, so it goes when the track does)."""

    count: int = 0
    last_pts: float = float("-inf")
    held: list[TrackLook] = field(default_factory=list)  # sampled before the track's event was out


class _Memory(Protocol):
    looks: LookState
    event: object | None  # the track's event, once emitted


class _Vision(Protocol):  # the VisionConfig settings the sampler reads
    gallery: GalleryConfig
    crop_margin: float
    crop_max_side: int


class LookSampler:
    """The pipeline's half: picks a track's looks from its detector hits and hands them on as they come once
    the track's event is out (the ones before, at its emission). A look is kept at most crop_max_side on its
    longer side, as the event's crop is sent: a close-up on a 4K camera must not hold megabytes per look."""

    def __init__(self, camera: str, vision: _Vision, labels: frozenset[str]) -> None:
        self.camera = camera
        self.config = vision.gallery
        self.crop_margin = vision.crop_margin
        self.max_side = vision.crop_max_side
        self.labels = labels  # the labels that make events; other tracks have no looks worth keeping
        self._out: list[TrackLook] = []

    def sink(self) -> list[TrackLook]:
        """A new list for the looks handed on from now: the `looks` of the pipeline's output being made."""
        self._out = []
        return self._out

    def offer(self, memory: _Memory, track: Track, det: Det, predicted: Box, dets: list[Det], frame: Frame) -> None:
        """A hit of a track (`predicted`: the box the tracker matched it against, where it expected it)."""
        cfg, state = self.config, memory.looks
        if (cfg.max_looks == 0 or state.count >= cfg.max_looks or frame.pts_s - state.last_pts < cfg.every_s - 1e-6
                or track.label not in self.labels or det.label != track.label
                or not _unambiguous(det, predicted, dets, cfg.min_iou)):
            return
        state.count += 1
        state.last_pts = frame.pts_s
        crop = shrink(cut(frame.image, det.box, self.crop_margin)[0], self.max_side)
        look = TrackLook(self.camera, track.track_id, frame.pts_s, crop)
        (self._out if memory.event is not None else state.held).append(look)

    def emitted(self, state: LookState) -> None:
        """The track's event is out: its looks so far follow it."""
        self._out += state.held
        state.held = []


def _unambiguous(det: Det, predicted: Box, dets: list[Det], min_iou: float) -> bool:
    """The hit fits the track's predicted box by at least `min_iou`, and no other detection of its label fits
    it more than AMBIGUOUS times as well."""
    others = [d.box for d in dets if d is not det and d.label == det.label]
    fits = iou_matrix(np.asarray([det.box, *others], np.float64), np.asarray([predicted], np.float64))[:, 0]
    return bool(fits[0] >= min_iou and (len(fits) == 1 or fits[1:].max() <= AMBIGUOUS * fits[0]))
