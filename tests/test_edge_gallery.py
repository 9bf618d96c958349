"""The track gallery (edge/triage/gallery.py): a decided track's other looks become further keys of its
verdict in the device cache, with the real detector, classifier and clip, and the real broker for the
agent."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
from edgetriage.edge.config import CameraConfig, EdgeConfig
from edgetriage.edge.triage.gallery import TrackGallery
from edgetriage.edge.triage.verdict_cache import MAX_PENDING, VerdictCache
from edgetriage.edge.vision.capture import FrameSource
from edgetriage.edge.vision.crops import encode_jpeg, phash_dct64
from edgetriage.edge.vision.detect import Det
from edgetriage.edge.vision.events import VisionConfig
from edgetriage.edge.vision.pipeline import VisionPipeline, build_stages
from edgetriage.edge.vision.samples import GalleryConfig, LookSampler, LookState, TrackLook
from edgetriage.edge.vision.track import Track
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import ReuseRule, Verdict
from test_edge_agent import PROMPT, _agent, peer  # noqa: F401 - the cloud peer fixture

MEDIA = Path(__file__).resolve().parents[1] / "models" / "media"
WALKING = MEDIA / "face-demographics-walking.gif"  # two people walking side by side, about 2.5 s
OTHER = MEDIA / "one-by-one-person-detection.mp4"


@pytest.fixture(scope="module")
def stages():
    return build_stages(VisionConfig())


def _looks(detector, stages, clip: Path, config: VisionConfig, start: int = 0, frames: int | None = None):
    """Every event and gallery look of one pass over the clip."""
    pipeline = VisionPipeline("cam0", config, detector, stages=stages)
    events, looks = [], []
    source = FrameSource(str(clip), start_frame=start, max_frames=frames)
    source.open()
    try:
        for frame in source:
            out = pipeline.process(frame)
            events += out.new_events
            looks += out.looks
        out = pipeline.finish()
    finally:
        source.close()
    return events + out.new_events, looks + out.looks


def _embedding(stages, crop) -> bytes | None:
    return stages.classifier.embed_jpeg(encode_jpeg(crop)[0])


@pytest.mark.usefixtures("peer")
@pytest.mark.parametrize("max_looks", [8, 0])
def test_a_later_pass_at_another_moment_of_the_walk_is_answered_by_the_gallery(tmp_path, mosquitto, prefix, detector,
                                                                              max_looks):
    """Pass 2 starts 3 frames later: its crops are of another moment of the same walk than pass 1's escalated
    ones (16-24 bits, cosine 0.90-0.92), but one pass 1 looked at too. With the gallery they are answered on
    the device; without it they go to the cloud again."""
    config = EdgeConfig.model_validate({
        "device": "edge-g1", "mqtt": {"url": mosquitto.url, "prefix": prefix}, "state_dir": str(tmp_path),
        "cameras": [{"id": "door", "source": str(WALKING)}], "vision": {"gallery": {"max_looks": max_looks}}})
    agent, seen = _agent(config, detector)
    try:
        agent.run_source(config.cameras[0])
        assert agent.wait_idle(30)
        first = [eid for _, d, eid in seen.decisions if d.kind == "escalate"]
        assert len(first) == 2, [(d.kind, d.reason) for _, d, _ in seen.decisions]

        n = len(seen.decisions)
        agent.run_source(CameraConfig(id="door", source=str(WALKING), start_frame=3))
        assert agent.wait_idle(30)
        second = [d for _, d, _ in seen.decisions[n:]]
        assert len(second) == 2
        if max_looks:
            assert all(d.kind == "cached" for d in second), [(d.kind, d.reason) for d in second]
            assert {d.verdict.event_id for d in second} == set(first)  # each person by their own verdict
            assert agent.cache.hits_further == 2 and agent.gallery.filed > 0
        else:
            assert [d.kind for d in second] == ["escalate", "escalate"]
            assert agent.gallery.filed == 0
    finally:
        agent.close()


def test_the_gallery_is_bounded(detector, stages):
    config = VisionConfig(gallery=GalleryConfig(max_looks=3, every_s=0.3))
    events, looks = _looks(detector, stages, WALKING, config)
    assert len(events) == 2 and looks
    for track in {look.track_id for look in looks}:
        times = [look.pts_s for look in looks if look.track_id == track]
        assert len(times) <= 3 and all(b - a >= 0.3 - 1e-6 for a, b in zip(times, times[1:], strict=False))
    assert all(look.crop.base is None for look in looks)  # copies: the frame's buffer may be reused
    small = _looks(detector, stages, WALKING, config.model_copy(update={"crop_max_side": 64}))[1]
    assert small and all(max(look.crop.shape[:2]) <= 64 for look in small)  # kept as small as the event's crop

    # keys per verdict and looks waiting for their verdict are bounded too
    cache = VerdictCache(16)
    now = int(time.time() * 1000)
    crops = [look.crop for look in looks]
    verdict = _verdict(phash_dct64(crops[0]), now)
    cache.add(verdict, now)
    filed = [cache.add_key(verdict.event_id, phash_dct64(c), _embedding(stages, c), now, 2) for c in crops[1:]]
    assert filed.count(True) <= 2 and len(cache._lru[cache._by_id[verdict.event_id]].keys) <= 2
    for i in range(MAX_PENDING + 5):
        assert cache.add_key(f"waiting-{i}", "0f0f0f0f0f0f0f0f", None, now, 2)
    assert len(cache._pending) == MAX_PENDING and "waiting-0" not in cache._pending


def _verdict(phash: str, now: int, ttl_s: int = 3600, embedding: bytes | None = None) -> Verdict:
    return Verdict(event_id=uuid7(now), device="edge-1", camera="cam0", label="person", verdict="benign",
                   confidence=0.9, description="d", model="m", created_ms=now,
                   cache=ReuseRule(device="edge-1", camera="cam0", label="person", phash=phash, embedding=embedding,
                                   prompt_version=PROMPT, max_distance=8, ttl_s=ttl_s))


def _lookup(cache: VerdictCache, phash: str, embedding: bytes | None, now: int) -> Verdict | None:
    return cache.lookup(device="edge-1", camera="cam0", site=None, label="person", phash=phash, now_ms=now,
                        embedding=embedding)


def test_a_look_of_another_person_is_not_filed(detector, stages):
    """Geometry: on a frame with both walkers, the other one's detection is not taken for a track's look, nor a
    hit that another detection fits as well; appearance: a look far from the track's keys (someone else
    entirely) is refused, the track's own looks are filed."""
    config = VisionConfig()
    frame = next(iter(FrameSource(str(WALKING), start_frame=6)))
    people = [d for d in detector.detect(frame.image) if d.label == "person" and d.score >= config.min_score]
    assert len(people) == 2
    sampler = LookSampler("cam0", config, frozenset({"person"}))
    mine, theirs = people
    track = Track(1, "person", mine.box, 0.0, 0.0, 0.0)
    memory = SimpleNamespace(looks=LookState(), event=object())  # a track whose event is out
    looks = sampler.sink()
    sampler.offer(memory, track, theirs, mine.box, people, frame)  # the other one, where track 1 was expected
    assert looks == []
    x1, y1, x2, y2 = mine.box
    shift = (x2 - x1) * 0.1
    twin = Det("person", mine.score, (x1 + shift, y1, x2 + shift, y2))  # someone right behind: ambiguous
    sampler.offer(memory, track, mine, mine.box, [mine, twin], frame)
    assert looks == []
    sampler.offer(memory, track, mine, mine.box, people, frame)
    assert [look.track_id for look in looks] == [1] and memory.looks.count == 1

    events, looks = _looks(detector, stages, WALKING, config)
    stranger = _looks(detector, stages, OTHER, config, start=740, frames=40)[0][0]
    now = int(time.time() * 1000)
    walker = events[0]
    anchor = stages.classifier.embed_jpeg(walker.crop_jpeg)
    cache = VerdictCache(16)
    verdict = _verdict(walker.phash, now, embedding=anchor)
    cache.add(verdict, now)
    gallery = TrackGallery(cache)
    gallery.decided("cam0", walker.track_id, verdict.event_id, anchor)
    crop = cv2.imdecode(np.frombuffer(stranger.crop_jpeg, np.uint8), cv2.IMREAD_COLOR)
    gallery.file([TrackLook("cam0", walker.track_id, 9.0, crop)], config.gallery, config.crop_max_side,
                 stages.classifier, now)
    assert gallery.refused == 1 and gallery.filed == 0
    assert _lookup(cache, stranger.phash, stranger_embedding := _embedding(stages, crop), now) is None
    gallery.file([look for look in looks if look.track_id == walker.track_id], config.gallery,
                 config.crop_max_side, stages.classifier, now)
    assert gallery.filed >= 1 and gallery.refused == 1
    assert _lookup(cache, stranger.phash, stranger_embedding, now) is None


def test_further_keys_never_outlive_the_verdict(stages):
    now = int(time.time() * 1000)
    cache = VerdictCache(16)
    verdict = _verdict("0f0f0f0f0f0f0f0f", now, ttl_s=60)
    cache.add(verdict, now)
    assert cache.add_key(verdict.event_id, "f0f0f0f0f0f0f0f0", None, now + 30_000, 4)
    assert not cache.add_key(verdict.event_id, "0f0f0f0f0f0f0f0e", None, now, 4)  # its own key reaches it
    assert _lookup(cache, "f0f0f0f0f0f0f0f0", None, now + 60_000) == verdict  # made_ms is the verdict's
    assert not cache.add_key(verdict.event_id, "ff00ff00ff00ff00", None, now + 60_001, 4)
    assert _lookup(cache, "f0f0f0f0f0f0f0f0", None, now + 60_001) is None
    cache.add_key(verdict.event_id, "ff00ff00ff00ff00", None, now + 60_001, 4)  # gone: waits for a verdict
    assert _lookup(cache, "ff00ff00ff00ff00", None, now + 60_001) is None and len(cache) == 0


def test_looks_wait_for_their_verdict_and_follow_the_one_that_answers_for_it():
    """Looks filed before the verdict arrived are filed when it does; a verdict not filed because the one it
    was reused from answers for it (a near copy) hands its looks to that one."""
    now = int(time.time() * 1000)
    cache = VerdictCache(16)
    first = _verdict("0f0f0f0f0f0f0f0f", now)
    assert cache.add_key(first.event_id, "f0f0f0f0f0f0f0f0", None, now, 4)  # its verdict is not here yet
    assert _lookup(cache, "f0f0f0f0f0f0f0f0", None, now) is None
    cache.add(first, now)
    assert _lookup(cache, "f0f0f0f0f0f0f0f0", None, now) == first and cache.hits_further == 1

    copy = _verdict("0f0f0f0f0f0f0f0e", now + 1).model_copy(update={"reused_from": first.event_id})
    assert cache.add_key(copy.event_id, "ff00ff00ff00ff00", None, now, 4)
    assert not cache.add(copy, now + 1)  # a near copy of its source: not filed ...
    assert _lookup(cache, "ff00ff00ff00ff00", None, now + 1) == first  # ... its look is the source's key
    assert not cache._pending

    unreusable = _verdict("00ff00ff00ff00ff", now).model_copy(update={"cache": None})
    assert cache.add_key(unreusable.event_id, "0ff00ff00ff00ff0", None, now, 4)
    assert not cache.add(unreusable, now) and not cache._pending  # nothing to file them under: they go


def test_gallery_settings_are_validated():
    assert EdgeConfig.model_validate({"vision": {"gallery": {"max_looks": 0}}}).vision.gallery.max_looks == 0
    for bad in ({"max_looks": -1}, {"every_s": -0.1}, {"min_iou": 0.0}, {"min_similarity": 1.5}, {"keys": 3}):
        with pytest.raises(ValueError):
            EdgeConfig.model_validate({"vision": {"gallery": bad}})
