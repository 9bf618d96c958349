"""The appearance embedding as a reuse key, with the real models: the shipped MobileNetV2 gives it in the
classifier's own run, the same person a few seconds later matches where the hash no longer does, different
people do not, and the field is optional on the wire (events and verdicts without it still work, and still
reuse by hash)."""

from __future__ import annotations

import json

import cv2
import msgpack
import numpy as np
import pytest
from conftest import MEDIA
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.edge.triage.rules import Rules, RulesConfig, Triage
from edgetriage.edge.triage.verdict_cache import VerdictCache
from edgetriage.edge.vision.crops import crop_box, encode_jpeg, phash_dct64
from edgetriage.shared.embedding import EMBEDDING_BYTES, embedding_of, similarity
from edgetriage.shared.ids import uuid7
from edgetriage.shared.phash import hamming
from edgetriage.shared.protocol import (
    DEFAULT_MAX_DISTANCE,
    DEFAULT_MIN_SIMILARITY,
    Event,
    ReuseRule,
    Verdict,
    decode_event,
    decode_verdict,
    encode_event,
    encode_verdict,
)
from edgetriage.shared.reuse import reach, scope_key

CLIP = MEDIA / "one-by-one-person-detection.mp4"  # 10 frames/s; visits from labels.json


@pytest.fixture(scope="module")
def look(detector, stages):
    """Seconds into the clip -> (JPEG crop of the best person, its hash, its embedding), as the device makes them."""
    cap = cv2.VideoCapture(str(CLIP))

    def at(seconds: float) -> tuple[bytes, str, bytes]:
        cap.set(cv2.CAP_PROP_POS_FRAMES, round(seconds * 10))
        ok, image = cap.read()
        assert ok
        person = max((d for d in detector.detect(image) if d.label == "person"), key=lambda d: d.score)
        crop = crop_box(image, person.box, 0.15)
        jpeg, _ = encode_jpeg(crop)
        classification = stages.classifier.classify_jpeg(jpeg)
        assert classification.embedding is not None
        return jpeg, phash_dct64(crop), classification.embedding

    yield at
    cap.release()


def test_the_classifier_run_gives_the_embedding_and_embed_jpeg_the_same(look, stages):
    jpeg, _, embedding = look(30.0)
    assert len(embedding) == EMBEDDING_BYTES
    assert stages.classifier.embed_jpeg(jpeg) == embedding
    assert embedding_of(np.zeros(1280, np.float32)) is None and embedding_of(np.ones(7, np.float32)) is None


def test_same_person_seconds_apart_matches_by_embedding_where_the_hash_does_not(look):
    _, hash_a, a = look(25.0)  # visit 2 of labels.json: walking in
    _, hash_b, b = look(29.5)  # the same person, standing
    assert hamming(hash_a, hash_b) > DEFAULT_MAX_DISTANCE
    assert similarity(a, b) >= DEFAULT_MIN_SIMILARITY


@pytest.mark.parametrize("first,second", [(31.0, 82.0), (12.0, 100.0), (62.0, 80.0)])
def test_different_people_do_not_match(look, first, second):
    """(31, 82): two men in black seen from behind at the same spot, the hardest pair of the clip."""
    _, _, a = look(first)
    _, _, b = look(second)
    assert similarity(a, b) < DEFAULT_MIN_SIMILARITY


def _event(look_at, embedding: bool = True, **fields) -> Event:
    jpeg, phash, vector = look_at
    return Event(event_id=uuid7(), device="edge-1", camera="door", captured_ms=1, label="person", score=0.9,
                 track_id=1, detections=[], phash=phash, reason="r", crop=jpeg,
                 embedding=vector if embedding else None, **fields)


def test_the_field_is_optional_on_the_wire(look):
    with_it = _event(look(30.0))
    assert decode_event(encode_event(with_it)).embedding == with_it.embedding
    raw = msgpack.unpackb(encode_event(with_it), raw=False)
    del raw["embedding"], raw["embedding_alg"]  # what a device from before the embedding sends
    assert decode_event(msgpack.packb(raw, use_bin_type=True)).embedding is None
    rule = ReuseRule(device="edge-1", camera="door", label="person", phash=with_it.phash, prompt_version="p1",
                     embedding=with_it.embedding)
    verdict = Verdict(event_id=with_it.event_id, device="edge-1", camera="door", label="person", verdict="benign",
                      confidence=0.9, description="d", model="m", created_ms=1, cache=rule,
                      reused_by=reach(rule, "person", with_it.phash, "dct64", with_it.embedding))
    assert decode_verdict(encode_verdict(verdict)) == verdict
    assert verdict.reused_by is not None and verdict.reused_by.key == "hash" and verdict.reused_by.distance == 0
    old = json.loads(encode_verdict(verdict))
    del old["reused_by"], old["cache"]["embedding"], old["cache"]["min_similarity"], old["cache"]["embedding_alg"]
    assert decode_verdict(json.dumps(old).encode()).cache.embedding is None  # what an older cloud sends


def test_old_events_without_an_embedding_still_reuse_by_hash(look, tmp_path):
    now = 1_760_000_000_000
    source = _event(look(30.0))
    rule = ReuseRule(device="edge-1", camera="door", label="person", phash=source.phash, prompt_version="p1",
                     embedding=source.embedding)
    verdict = Verdict(event_id=source.event_id, device="edge-1", camera="door", label="person", verdict="benign",
                      confidence=0.9, description="d", model="m", created_ms=now, cache=rule)
    store, cache = SQLiteStore(tmp_path / "cloud.db"), VerdictCache(8)
    try:
        store.put_verdict(verdict)
        cache.add(verdict, now)
        same_spot, walked_in = look(31.0), look(25.0)  # 2 bits from the source; 14 bits, same person
        for probe, expected in ((same_spot, verdict.event_id), (walked_in, None)):
            old = _event(probe, embedding=False)
            hit = store.lookup(scope_key=scope_key("camera", "edge-1", "door", None), label="person", phash=old.phash,
                               phash_alg="dct64", prompt_version="p1", now_ms=now + 1, embedding=old.embedding)
            device = cache.lookup(device="edge-1", camera="door", site=None, label="person", phash=old.phash,
                                  now_ms=now + 1, embedding=None)
            assert (hit and hit.event_id, device and device.event_id) == (expected, expected)
        new = _event(walked_in)  # with its embedding the walked-in crop is recognised
        hit = store.lookup(scope_key=scope_key("camera", "edge-1", "door", None), label="person", phash=new.phash,
                           phash_alg="dct64", prompt_version="p1", now_ms=now + 1, embedding=new.embedding)
        assert hit is not None and reach(hit.cache, "person", new.phash, "dct64", new.embedding).key == "embedding"
    finally:
        store.close()


def test_the_triage_embeds_only_tracks_that_may_leave_the_device(look, stages):
    from edgetriage.edge.vision.events import TrackEvent

    jpeg, phash, embedding = look(30.0)

    def track(label: str) -> TrackEvent:
        return TrackEvent(camera="door", track_id=1, label=label, score=0.9, median_score=0.9, uncertain=False,
                          first_ts=0.0, last_ts=1.0, captured_ms=1, box=(0.1, 0.1, 0.5, 0.9), detections=[],
                          crop_jpeg=jpeg, crop_size=(10, 10), phash=phash)

    triage = Triage(Rules(RulesConfig()), device="edge-1", cache=VerdictCache(4), classifier=stages.classifier)
    person, car = track("person"), track("car")
    assert triage.decide("door", person, 1).kind == "escalate" and person.embedding == embedding
    triage.decide("door", car, 1)
    assert car.embedding is None


def test_the_rule_ranks_a_hash_match_before_an_embedding_match_and_keeps_each_rule_s_threshold():
    from edgetriage.shared.reuse import Candidate, best

    rng = np.random.RandomState(3)
    base = rng.randint(0, 128, 256)
    look = np.clip(base, -127, 127).astype(np.int8).tobytes()
    near_look = np.clip(base + rng.randint(-10, 11, 256), -127, 127).astype(np.int8).tobytes()
    s = similarity(look, near_look)
    assert 0.97 <= s < 1.0
    by_hash = Candidate("a", "0" * 16, 8, 1_000, 60)
    by_look = Candidate("b", "f" * 16, 8, 2_000, 60, near_look, 0.97)
    strict = Candidate("c", "f" * 16, 8, 3_000, 60, near_look, 0.999)
    found = best([by_look, strict, Candidate("a", "0" * 15 + "7", 8, 1_000, 60)], "0" * 16, 5_000, embedding=look)
    assert found is not None and found[0].ref == "a" and found[1].key == "hash" and found[1].distance == 3
    found = best([by_look, strict], "0" * 16, 5_000, embedding=look)
    assert found is not None and found[0].ref == "b" and found[1].key == "embedding"
    assert found[1].similarity == s and found[1].threshold == 0.97 and found[1].distance == 64
    assert best([by_look, strict], "0" * 16, 5_000, embedding=None) is None  # an old event: hash only
    assert best([by_look], "0" * 16, 2_000 + 61_000, embedding=look) is None  # expired
    assert best([by_hash], "0" * 15 + "f", 5_000, cap=3) is None  # the device's cap binds the hash only
