"""The track gallery: more reuse keys for one verdict from the other looks of the same track.

A verdict is filed in the device cache (edge.vcache) under the one crop that was escalated, so a second
visit is answered only if its first look resembles that one moment of the first visit's walk. The tracker
already knows that every look of one track is the same person: this module samples a track's looks over its
life (`LookSampler`, on the vision pipeline's detector hits; the looks before its event is out are held and
handed on with it, since the escalated crop is one moment of that window) and files the novel ones as further
keys of the track's verdict (`TrackGallery`, on the agent): same verdict, same event id, same `made_ms`, so a
key never outlives the verdict's TTL, and shared.reuse still decides who may reuse what (`further_key`: a
further key's hash reaches near copies only).

Cost: a copy of a small crop at most every `every_s` of stream time and at most `max_looks` per track
(memory bounded per track); the hash and the embedding (one classifier run) only for tracks whose decision
has a verdict (escalated, or answered from the device cache).

Wrong reuse is an ID switch that puts another person's look into a track's gallery. Three guards: a look is
taken only when its detection overlaps the track's predicted box well (`min_iou`, stricter than the tracker's
own association), when no other detection of the same label fits that box even half as well (people walking
side by side or crossing: where the association is ambiguous, a switch can happen), and when its embedding
stays close to the track's keys so far (`min_similarity`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Annotated, Protocol

import numpy as np
from pydantic import Field

from ..shared.config import Strict
from ..shared.reuse import continues
from .capture import Frame
from .crops import cut, encode_jpeg, phash_dct64, shrink
from .detect import Det
from .track import Track, iou_matrix

log = logging.getLogger(__name__)

Box = tuple[float, float, float, float]
MAX_TRACKS = 256  # tracks with a verdict the agent remembers (a track normally ends and is forgotten first)
AMBIGUOUS = 0.5  # another detection fitting the predicted box this well relative to the hit: no look


class GalleryConfig(Strict):
    """`[vision.gallery]`: the looks of a track kept as further reuse keys of its verdict."""

    max_looks: Annotated[int, Field(ge=0, le=32)] = 8  # looks sampled per track, and keys per verdict; 0: off
    # at most one look per this much stream time: 0.2 takes every look the pipeline makes of a moving person
    # (one per moving_interval_s, 0.25 s), so 8 cover the track's first 1.75 s, the emit_after_s window its
    # escalated crop is chosen from, where a later visit's crop comes from too (BENCHMARKS.md "Track gallery")
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


class Embedder(Protocol):
    def embed_jpeg(self, jpeg: bytes) -> bytes | None: ...


class GalleryCache(Protocol):
    def add_key(self, event_id: str, phash: str, embedding: bytes | None, now_ms: int, max_keys: int) -> bool: ...

    def knows(self, event_id: str, phash: str, embedding: bytes | None = None) -> bool: ...


@dataclass(slots=True)
class _Decided:
    event_id: str  # the verdict the track's looks become keys of (escalated, or the cached one)
    keys: list[bytes]  # embeddings of the track's crops so far, for the `min_similarity` guard


class TrackGallery:
    """The agent's half: which verdict each decided track maps to, and the looks filed under it."""

    def __init__(self, cache: GalleryCache) -> None:
        self.cache = cache
        self.filed = 0  # looks filed as keys (or kept pending for their verdict)
        self.refused = 0  # looks too far from their track's keys (a possible ID switch)
        self._tracks: OrderedDict[tuple[str, int], _Decided] = OrderedDict()

    def decided(self, camera: str, track_id: int, event_id: str | None, embedding: bytes | None) -> None:
        """A track was escalated as `event_id` or answered by that verdict (None: neither; its looks go)."""
        if event_id is None:
            return
        self._tracks[(camera, track_id)] = _Decided(event_id, [embedding] if embedding is not None else [])
        while len(self._tracks) > MAX_TRACKS:
            self._tracks.popitem(last=False)

    def file(self, looks: list[TrackLook], config: GalleryConfig, crop_max_side: int, embedder: Embedder | None,
             now_ms: int) -> None:
        for look in looks:
            decided = self._tracks.get((look.camera, look.track_id))
            if decided is None or config.max_looks == 0:
                continue
            phash = phash_dct64(look.crop)
            if self.cache.knows(decided.event_id, phash):
                continue  # its hash is already a key's: not worth the classifier run
            embedding = None
            if embedder is not None:
                embedding = embedder.embed_jpeg(encode_jpeg(look.crop, crop_max_side)[0])
            if not continues(decided.keys, embedding, config.min_similarity):
                self.refused += 1
                log.debug("camera %s track %d: look at %.2f s too far from the track's keys", look.camera,
                          look.track_id, look.pts_s)
                continue
            if embedding is not None:
                decided.keys.append(embedding)
            if self.cache.add_key(decided.event_id, phash, embedding, now_ms, config.max_looks):
                self.filed += 1

    def ended(self, camera: str, track_id: int) -> None:
        self._tracks.pop((camera, track_id), None)
