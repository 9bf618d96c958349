"""The track gallery: more reuse keys for one verdict from the other looks of the same track.

A verdict is filed in the device cache (edge.triage.verdict_cache) under the one crop that was escalated, so a
second visit is answered only if its first look resembles that one moment of the first visit's walk. The
tracker already knows that every look of one track is the same person: the pipeline samples a track's looks
over its life (`LookSampler`, edge/vision/samples.py: the looks before its event is out are held and handed
on with it, since the escalated crop is one moment of that window) and this module files the novel ones as
further keys of the track's verdict (`TrackGallery`, on the agent): same verdict, same event id, same
`made_ms`, so a key never outlives the verdict's TTL, and shared.reuse still decides who may reuse what
(`further_key`: a further key's hash reaches near copies only).

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
from dataclasses import dataclass
from typing import Protocol

from ...shared.reuse import continues
from ..vision.crops import encode_jpeg, phash_dct64
from ..vision.samples import GalleryConfig, TrackLook

log = logging.getLogger(__name__)

MAX_TRACKS = 256  # tracks with a verdict the agent remembers (a track normally ends and is forgotten first)


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
