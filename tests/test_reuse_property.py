"""One reuse rule: the device cache, the SQLite store and the Redis store answer every lookup alike.

Hypothesis plays the same random history into all three: model verdicts and verdicts reused from earlier
ones (near copies among them, which shared.reuse.worth_filing may leave unfiled), on two labels, with random
distances, similarity thresholds and TTLs, and lookups of random crops at a clock that only moves forward.
A crop has a hash and, or not, an appearance embedding (two base vectors and noise around them, so cosine
similarities fall on both sides of 0.9, 0.97 and 0.99 and a far hash can still match by embedding). After
every lookup the three must name the same verdict (or all none). Real Redis, under a key prefix of its own
that is deleted after each example.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.edge.triage.verdict_cache import VerdictCache
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import ReuseRule, Verdict
from edgetriage.shared.reuse import scope_key
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REDIS_URL = "redis://127.0.0.1:6379/0"
T0 = 1_760_000_000_000
BASES = (0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0F0F0F0F0F0F00FF)  # the last 8 bits from the first
PROMPT = "p1"
_rng = np.random.RandomState(7)
LOOKS = [_rng.randint(0, 128, 256) for _ in range(2)]  # non-negative, as pooled features are
NOISE = [_rng.randint(-24, 25, 256) for _ in range(3)]  # 1 step: similarity ~0.98 to its base, 2: ~0.93

looks = st.one_of(st.none(), st.tuples(st.integers(0, 1), st.integers(0, 3), st.integers(0, 2)))
crops = st.tuples(st.sampled_from(range(len(BASES))),
                  st.one_of(st.lists(st.integers(0, 7), max_size=5), st.lists(st.integers(0, 63), max_size=12)),
                  looks)
files = st.tuples(st.just("file"), st.integers(0, 15_000), st.sampled_from(("person", "car")), crops,
                  st.integers(0, 12), st.integers(0, 60), st.one_of(st.none(), st.integers(0, 40), st.just(-1)),
                  st.sampled_from((0.9, 0.97, 0.99)))
finds = st.tuples(st.just("find"), st.integers(0, 15_000), st.sampled_from(("person", "car")), crops)
histories = st.lists(st.one_of(files, finds), min_size=1, max_size=40)


@contextmanager
def _stores() -> Iterator[tuple[SQLiteStore, RedisStore]]:
    """A fresh SQLite store in a temporary directory and a Redis store under its own key prefix, removed after."""
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteStore(Path(tmp) / "cloud.db")
        redis = RedisStore(connect_redis(REDIS_URL), f"test-reuse-prop-{uuid.uuid4().hex[:10]}")
        try:
            yield sqlite, redis
        finally:
            redis.delete_all()
            redis.close()
            sqlite.close()


def _hash(crop: tuple[int, list[int]]) -> str:
    value = BASES[crop[0]]
    for bit in crop[1]:
        value ^= 1 << bit
    return f"{value:016x}"


def _embedding(crop: tuple) -> bytes | None:
    if crop[2] is None:
        return None
    base, steps, noise = crop[2]
    return np.clip(LOOKS[base] + steps * NOISE[noise], -127, 127).astype(np.int8).tobytes()


def _verdict(now: int, label: str, phash: str, max_distance: int, ttl_s: int, source: Verdict | None,
             embedding: bytes | None = None, min_similarity: float = 0.97) -> Verdict:
    if source is not None:  # as the service reuses: the copy never outlives the verdict it came from
        assert source.cache is not None
        ttl_s = min(ttl_s, (source.created_ms + source.cache.ttl_s * 1000 - now) // 1000)
        label = source.label
    return Verdict(event_id=uuid7(now), device="edge-1", camera="door", label=label, verdict="benign",
                   confidence=0.8, description="d", model="m", created_ms=now,
                   source="cloud_cache" if source is not None else "llm",
                   reused_from=(source.reused_from or source.event_id) if source is not None else None,
                   cache=ReuseRule(device="edge-1", camera="door", label=label, phash=phash,
                                   max_distance=max_distance, prompt_version=PROMPT, ttl_s=max(0, ttl_s),
                                   embedding=embedding, min_similarity=min_similarity))


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories)
def test_device_cache_sqlite_and_redis_pick_the_same_verdict(history):
    device = VerdictCache(100_000)
    with _stores() as (sqlite, redis):
        now = T0
        filed: list[Verdict] = []
        for op in history:
            now += op[1]
            label, phash, embedding = op[2], _hash(op[3]), _embedding(op[3])
            if op[0] == "file":
                _, _, _, _, max_distance, ttl_s, reuse_of, min_similarity = op
                source = filed[reuse_of % len(filed)] if reuse_of is not None and filed else None
                if source is not None and source.created_ms + source.cache.ttl_s * 1000 <= now:
                    source = None  # expired: the service would have asked the model
                verdict = _verdict(now, label, phash, max_distance, ttl_s, source, embedding, min_similarity)
                filed.append(verdict)
                device.add(verdict, now)
                sqlite.put_verdict(verdict)
                redis.put_verdict(verdict)
                continue
            answers = []
            for store in (sqlite, redis):
                hit = store.lookup(scope_key=scope_key("camera", "edge-1", "door", None), label=label,
                                   phash=phash, phash_alg="dct64", prompt_version=PROMPT, now_ms=now,
                                   embedding=embedding)
                answers.append(hit.event_id if hit else None)
            hit = device.lookup(device="edge-1", camera="door", site=None, label=label, phash=phash,
                                now_ms=now, embedding=embedding)
            answers.append(hit.event_id if hit else None)
            assert answers[0] == answers[1] == answers[2], (answers, phash, now)


def test_the_property_sees_near_copies_left_unfiled_and_reuse_that_answers():
    """The history above can express what the property is about: a near copy left unfiled everywhere."""
    device = VerdictCache(16)
    with _stores() as (sqlite, redis):
        source = _verdict(T0, "person", _hash((0, [], None)), 8, 60, None)
        near = _verdict(T0 + 1, "person", _hash((0, [1, 2], None)), 8, 60, source)
        assert device.add(source, T0) and not device.add(near, T0 + 1)  # 2 bits <= 8 // 2: not filed
        for store in (sqlite, redis):
            store.put_verdict(source)
            store.put_verdict(near)
            hit = store.lookup(scope_key=scope_key("camera", "edge-1", "door", None), label="person",
                               phash=_hash((0, [1, 2], None)), phash_alg="dct64", prompt_version=PROMPT, now_ms=T0 + 2)
            assert hit is not None and hit.event_id == source.event_id  # the source answers, not its copy


def test_the_property_sees_a_far_hash_answered_by_embedding_alone():
    """The history above can express reuse by embedding: a crop 30 bits away whose embedding is near."""
    device = VerdictCache(16)
    with _stores() as (sqlite, redis):
        source = _verdict(T0, "person", _hash((0, [], None)), 8, 60, None, _embedding((0, [], (0, 0, 0))))
        device.add(source, T0)
        far, near_look, other_look = (
            _hash((1, [], None)),
            _embedding((0, [], (0, 1, 1))),
            _embedding((0, [], (0, 2, 1))),
        )
        for look, expected in ((near_look, source.event_id), (other_look, None), (None, None)):
            hits = [store.lookup(scope_key=scope_key("camera", "edge-1", "door", None), label="person",
                                 phash=far, phash_alg="dct64", prompt_version=PROMPT, now_ms=T0 + 2, embedding=look)
                    for store in (sqlite, redis) if store.put_verdict(source) is None]
            hits.append(device.lookup(device="edge-1", camera="door", site=None, label="person", phash=far,
                                      now_ms=T0 + 2, embedding=look))
            assert [h.event_id if h else None for h in hits] == [expected] * 3
