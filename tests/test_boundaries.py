"""Where one-line bugs hide: the exact edges of every promise, checked fast (no LLM, no video).

- the reuse rule (shared.reuse) at distance `max` and `max + 1` and a TTL just before and after its end, on
  the device cache and on both cloud stores (SQLite and the real Redis) alike;
- clock skew: the device cache times a verdict by its own clock, never by a cloud clock that runs ahead;
- every state an outbox item passes through, including a verdict that arrives before its PUBACK, a PUBACK
  the broker refused (MQTT 5 failure reason code) and a verdict that completes only its own event;
- the cooldown kept per camera, zone rule and label;
- claims on both back ends without sleeping on a lease;
- a verdict stored before it is published, seen from inside the publish call;
- the cloud config refusing unknown keys with the key's name.

Each of these was checked against a copy of the code with the bug planted (docs/developers/testing.md lists them and the
mutation score these tests give the modules that hold the promises).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from conftest import free_port
from edgetriage.cli import main as cli_main
from edgetriage.cloud.analysis import Analysis, build_backend
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig, load_cloud_config
from edgetriage.cloud.storage.claims import (
    ClaimKeeper,
    RedisClaims,
    SQLiteClaims,
    claims_path,
    new_owner,
    open_claims,
)
from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.edge.config import OutboxConfig
from edgetriage.edge.delivery.outbox import Outbox, OutboxError
from edgetriage.edge.triage.rules import Rules, RulesConfig
from edgetriage.edge.triage.verdict_cache import VerdictCache
from edgetriage.shared.config import ConfigError
from edgetriage.shared.ids import uuid7
from edgetriage.shared.mqtt import MQTTLink
from edgetriage.shared.protocol import Detection, Event, ReuseRule, Verdict, encode_event
from edgetriage.shared.reuse import distance, expired, rule_key, scope_key
from edgetriage.shared.topics import Topics
from edgetriage.shared.verdict_forms import decode_device_verdict

REDIS_URL = "redis://127.0.0.1:6379/0"
T0 = 1_700_000_000_000
BASE = "0f0f0f0f0f0f0f0f"


def _flip(phash: str, bits: int) -> str:
    """`phash` with its lowest `bits` bits inverted: exactly `bits` bits away."""
    return f"{int(phash, 16) ^ ((1 << bits) - 1):016x}"


def _verdict(*, created_ms: int = T0, max_distance: int = 6, ttl_s: int = 60, phash: str = BASE,
             scope: str = "camera", site: str | None = None, camera: str = "door", prompt: str = "p1",
             reused_from: str | None = None, event_id: str | None = None) -> Verdict:
    return Verdict(event_id=event_id or uuid7(created_ms), device="edge-1", camera=camera, label="person",
                   verdict="benign", confidence=0.8, description="a neighbour", model="m", created_ms=created_ms,
                   reused_from=reused_from,
                   cache=ReuseRule(scope=scope, device="edge-1", camera=camera, site=site, label="person",
                                   phash=phash, prompt_version=prompt, max_distance=max_distance, ttl_s=ttl_s))


# -- the reuse rule, on every cache ------------------------------------------------------------------------
@pytest.fixture
def redis_prefix() -> Iterator[str]:
    prefix = f"test-bounds-{uuid.uuid4().hex[:8]}"
    yield prefix
    RedisStore(connect_redis(REDIS_URL), prefix).delete_all()


@dataclass
class Cache:
    """One of the three caches behind one pair of calls: file a verdict, find one for a crop."""

    file: Callable[[Verdict], None]
    find: Callable[[str, int], Verdict | None]  # (phash, now_ms)
    close: Callable[[], None] = field(default=lambda: None)


def _store_cache(store) -> Cache:
    def find(phash: str, now_ms: int) -> Verdict | None:
        return store.lookup(scope_key=scope_key("camera", "edge-1", "door", None), label="person", phash=phash,
                            phash_alg="dct64", prompt_version="p1", now_ms=now_ms)

    return Cache(store.put_verdict, find, store.close)


@pytest.fixture(params=["device", "sqlite", "redis"])
def cache(request, tmp_path) -> Iterator[Cache]:
    if request.param == "device":
        vc = VerdictCache(64)

        def file(v: Verdict) -> None:
            assert vc.add(v, v.created_ms)

        def find(phash: str, now_ms: int) -> Verdict | None:
            return vc.lookup(device="edge-1", camera="door", site=None, label="person", phash=phash, now_ms=now_ms)

        yield Cache(file, find)
    elif request.param == "sqlite":
        c = _store_cache(SQLiteStore(tmp_path / "cloud.db"))
        yield c
        c.close()
    else:
        prefix = request.getfixturevalue("redis_prefix")
        c = _store_cache(RedisStore(connect_redis(REDIS_URL), prefix))
        yield c
        c.close()


def test_reuse_reaches_exactly_max_distance_and_not_one_bit_more(cache):
    v = _verdict(max_distance=6)
    cache.file(v)
    for bits in (0, 1, 5, 6):
        found = cache.find(_flip(BASE, bits), T0 + 1)
        assert found is not None and found.event_id == v.event_id, f"{bits} bits away must be reused"
    assert cache.find(_flip(BASE, 7), T0 + 1) is None


def test_a_rule_of_distance_zero_answers_only_the_same_crop(cache):
    v = _verdict(max_distance=0)
    cache.file(v)
    assert cache.find(BASE, T0).event_id == v.event_id
    assert cache.find(_flip(BASE, 1), T0) is None


def test_reuse_holds_to_the_last_millisecond_of_the_ttl(cache):
    v = _verdict(ttl_s=60)
    cache.file(v)
    assert cache.find(BASE, T0 + 59_999).event_id == v.event_id
    assert cache.find(BASE, T0 + 60_000).event_id == v.event_id  # the TTL's last millisecond still counts
    assert cache.find(BASE, T0 + 60_001) is None


def test_the_nearest_verdict_wins_and_the_newer_on_a_tie(cache):
    far = _verdict(created_ms=T0, phash=_flip(BASE, 3))
    near = _verdict(created_ms=T0 + 1, phash=_flip(BASE, 1))
    cache.file(far)
    cache.file(near)
    assert cache.find(BASE, T0 + 2).event_id == near.event_id
    twin = _verdict(created_ms=T0 + 2, phash=_flip(BASE, 1)[:-1] + "d")  # 1 bit from BASE too, made later
    cache.file(twin)
    assert cache.find(BASE, T0 + 3).event_id == twin.event_id


def test_an_expired_nearer_verdict_does_not_hide_a_live_farther_one(cache):
    near = _verdict(created_ms=T0, ttl_s=60)
    far = _verdict(created_ms=T0 + 30_000, ttl_s=60, phash=_flip(BASE, 3))
    cache.file(near)
    cache.file(far)
    assert cache.find(BASE, T0 + 60_000).event_id == near.event_id
    assert cache.find(BASE, T0 + 60_001).event_id == far.event_id  # the nearer one ran out: the farther answers
    assert cache.find(BASE, T0 + 90_001) is None


def test_the_shared_rule_itself():
    rule = _verdict(max_distance=4, ttl_s=10).cache
    assert distance(rule, "person", _flip(BASE, 4), "dct64") == 4
    assert distance(rule, "person", _flip(BASE, 5), "dct64") is None
    assert distance(rule, "car", BASE, "dct64") is None
    assert distance(rule.model_copy(update={"phash_alg": "other"}), "person", BASE, "dct64") is None
    assert not expired(T0, rule, T0 + 10_000) and expired(T0, rule, T0 + 10_001)
    assert rule_key(rule) == "camera:edge-1/door"
    assert scope_key("site", "edge-1", "door", "shop") == "site:shop"
    assert scope_key("site", "edge-1", "door", None) == "camera:edge-1/door"  # no site: the camera's own
    assert scope_key("camera", "edge-1", "door", "shop") == "camera:edge-1/door"


def test_a_stale_or_too_far_winner_is_refused_by_the_shared_rule_in_both_stores(tmp_path, redis_prefix):
    """The stores narrow in SQL / Redis, then check the winner against shared.reuse: a rule filed with a
    wider index entry than the rule it carries still answers only within the rule."""
    for store in (SQLiteStore(tmp_path / "cloud.db"), RedisStore(connect_redis(REDIS_URL), redis_prefix)):
        c = _store_cache(store)
        c.file(_verdict(max_distance=2, ttl_s=5))
        assert c.find(_flip(BASE, 2), T0 + 5_000) is not None
        assert c.find(_flip(BASE, 3), T0) is None and c.find(BASE, T0 + 5_001) is None
        c.close()


# -- clock skew between device and cloud -------------------------------------------------------------------
def test_a_cloud_clock_ahead_does_not_stretch_the_ttl_on_the_device():
    cache = VerdictCache(16)
    device_now = T0
    ahead = _verdict(created_ms=device_now + 10 * 60_000, ttl_s=60)  # the cloud's clock runs 10 min ahead
    assert cache.add(ahead, device_now)
    lookup = dict(device="edge-1", camera="door", site=None, label="person", phash=BASE)
    assert cache.lookup(**lookup, now_ms=device_now + 60_000) is ahead  # 60 s by the device's own clock
    assert cache.lookup(**lookup, now_ms=device_now + 60_001) is None


def test_a_cloud_clock_behind_counts_from_when_the_verdict_was_made():
    cache = VerdictCache(16)
    behind = _verdict(created_ms=T0 - 30_000, ttl_s=60)  # made 30 s before it arrived (or a slow clock)
    assert cache.add(behind, T0)
    lookup = dict(device="edge-1", camera="door", site=None, label="person", phash=BASE)
    assert cache.lookup(**lookup, now_ms=T0 + 30_000) is behind
    assert cache.lookup(**lookup, now_ms=T0 + 30_001) is None
    assert not cache.add(_verdict(created_ms=T0 - 60_001, ttl_s=60), T0)  # expired on arrival: not filed
    assert cache.add(_verdict(created_ms=T0 - 60_000, ttl_s=60, phash=_flip(BASE, 9)), T0)


def test_the_device_cap_on_distance_is_inclusive():
    cache = VerdictCache(16, max_distance=3)
    v = _verdict(max_distance=10)
    assert cache.add(v, T0)
    lookup = dict(device="edge-1", camera="door", site=None, label="person", now_ms=T0)
    assert cache.lookup(**lookup, phash=_flip(BASE, 3)) is v
    assert cache.lookup(**lookup, phash=_flip(BASE, 4)) is None
    assert (cache.hits, cache.misses) == (1, 1)


# -- the outbox, state by state ----------------------------------------------------------------------------
@pytest.fixture
def box(tmp_path) -> Iterator[Outbox]:
    b = Outbox(tmp_path / "outbox.db")
    yield b
    b.close()


def _add(box: Outbox, n: int, size: int = 4) -> str:
    eid = uuid7(T0 + n)
    assert box.add(eid, "p/v1/edge-1/events", bytes([n]) * size, T0 + n)
    return eid


def _state(box: Outbox, eid: str) -> str | None:
    item = box.get(eid)
    return None if item is None else item.state


def test_pending_then_inflight_then_sent_then_gone(box):
    eid = _add(box, 1)
    assert _state(box, eid) == "pending" and box.get(eid).attempts == 0
    assert box.unsent() == [(eid, T0 + 1)] and box.count_unsent() == 1
    box.mark_published(eid, mid=11, now_ms=T0 + 100)
    assert _state(box, eid) == "inflight" and box.get(eid).attempts == 1
    assert box.unsent() == [] and box.count_unsent() == 0
    assert box.depth() == {"pending": 1, "inflight": 1, "sent": 0, "bytes": 4}
    assert box.mark_sent(12) is None  # somebody else's PUBACK
    assert box.mark_sent(11, now_ms=T0 + 200) == eid
    assert _state(box, eid) == "sent" and box.depth() == {"pending": 0, "inflight": 0, "sent": 1, "bytes": 4}
    assert box.mark_sent(11) is None  # a PUBACK counts once
    assert box.complete(eid) and _state(box, eid) is None
    assert box.depth() == {"pending": 0, "inflight": 0, "sent": 0, "bytes": 0} and len(box) == 0


def test_a_verdict_before_its_puback_completes_the_event(box):
    eid = _add(box, 1)
    box.mark_published(eid, mid=5, now_ms=T0 + 10)
    assert box.complete(eid) is True  # the verdict overtook the PUBACK: the cloud has the event
    assert len(box) == 0 and box.depth()["bytes"] == 0
    assert box.mark_sent(5) is None  # the late PUBACK finds nothing to mark
    assert box.due(T0 + 10 * 60_000, 60) == []  # and nothing goes again


def test_a_verdict_completes_only_its_own_event(box):
    ids = [_add(box, n) for n in range(3)]
    for mid, eid in enumerate(ids, start=1):
        box.mark_published(eid, mid, now_ms=T0 + 10)
        assert box.mark_sent(mid, now_ms=T0 + 20) == eid
    assert box.complete(ids[1])
    assert [_state(box, e) for e in ids] == ["sent", None, "sent"]
    assert len(box) == 2 and box.depth()["bytes"] == 8
    assert not box.complete(ids[1])
    pending = _add(box, 9)
    assert box.complete(pending) and _state(box, ids[0]) == "sent"  # a pending one too, only itself


def test_a_refused_puback_is_not_delivery(box):
    eid = _add(box, 1)
    box.mark_published(eid, mid=7, now_ms=T0 + 100)
    assert box.mark_refused(7) == eid
    assert _state(box, eid) == "inflight" and len(box) == 1  # kept, not sent
    assert box.mark_sent(7) is None  # the refused message is not acknowledged later by the same mid
    assert box.mark_refused(7) is None
    assert box.due(T0 + 100 + 59_999, 60) == []  # not before verdict_timeout_s ...
    (again,) = box.due(T0 + 100 + 60_000, 60)  # ... then it goes again, same id and payload
    assert (again.event_id, again.payload, again.attempts) == (eid, bytes([1]) * 4, 1)
    box.mark_published(eid, mid=8, now_ms=T0 + 60_200)
    assert box.get(eid).attempts == 2 and box.mark_sent(8) == eid


def test_a_refusal_for_a_sent_or_unknown_message_changes_nothing(box):
    eid = _add(box, 1)
    assert box.mark_refused(3) is None
    box.mark_published(eid, mid=3, now_ms=T0 + 1)
    assert box.mark_sent(3, now_ms=T0 + 2) == eid
    assert box.mark_refused(3) is None and _state(box, eid) == "sent"


def test_a_message_id_reused_by_the_client_belongs_to_the_new_holder(box):
    old, new = _add(box, 1), _add(box, 2)
    box.mark_published(old, mid=3, now_ms=T0 + 10)  # its PUBACK never came; the client reuses mid 3
    box.mark_published(new, mid=3, now_ms=T0 + 20)
    assert box.mark_sent(3, now_ms=T0 + 30) == new
    assert _state(box, old) == "inflight" and _state(box, new) == "sent"
    assert box.mark_refused(3) is None


def test_overdue_is_exactly_verdict_timeout_after_the_last_step(box):
    a, b = _add(box, 1), _add(box, 2)
    box.mark_published(a, mid=1, now_ms=T0 + 1_000)
    box.mark_published(b, mid=2, now_ms=T0 + 1_000)
    box.mark_sent(2, now_ms=T0 + 5_000)  # the verdict clock of a sent item starts at its PUBACK
    assert box.due(T0 + 60_999, 60) == []
    assert [i.event_id for i in box.due(T0 + 61_000, 60)] == [a]  # inflight without PUBACK for 60 s
    assert [i.event_id for i in box.due(T0 + 65_000, 60)] == [a, b]
    assert [i.event_id for i in box.due(T0 + 65_000, 60, limit=1)] == [a]
    assert [i.state for i in box.due(T0 + 65_000, 60)] == ["inflight", "sent"]


def test_requeue_sends_again_only_what_the_broker_had(box):
    a, b, c = _add(box, 1), _add(box, 2), _add(box, 3)
    box.mark_published(a, mid=1, now_ms=T0 + 10)
    box.mark_published(b, mid=2, now_ms=T0 + 10)
    box.mark_sent(2, now_ms=T0 + 20)
    assert box.requeue_sent() == 1
    assert [_state(box, e) for e in (a, b, c)] == ["inflight", "pending", "pending"]
    assert [i.event_id for i in box.due(T0 + 30, 60)] == [b, c]
    assert box.unsent() == [(c, T0 + 3)]  # b went out before: a re-send, not a first send
    assert box.requeue_sent() == 0


def test_reopening_sends_unacknowledged_events_again_and_keeps_sent_ones(tmp_path):
    path = tmp_path / "outbox.db"
    box = Outbox(path)
    a, b = _add(box, 1), _add(box, 2)
    box.mark_published(a, mid=1, now_ms=T0 + 10)
    box.mark_published(b, mid=2, now_ms=T0 + 10)
    box.mark_sent(2, now_ms=T0 + 20)
    box.close()
    box = Outbox(path)
    assert [_state(box, e) for e in (a, b)] == ["pending", "sent"]
    assert box.mark_sent(1) is None and box.depth()["bytes"] == 8
    box.close()


def test_age_limit_is_exact(tmp_path):
    box = Outbox(tmp_path / "outbox.db", max_age_s=10)
    a = _add(box, 0)
    assert [i.event_id for i in box.due(T0 + 10_000, 60)] == [a]  # exactly max_age_s old: kept
    assert box.due(T0 + 10_001, 60) == [] and box.counts["expired"] == 1 and box.dropped == 1
    assert box.depth()["bytes"] == 0
    box.close()


@pytest.mark.parametrize("policy", ["drop_oldest", "reject_newest"])
def test_full_outbox_by_policy_and_priority(tmp_path, policy):
    box = Outbox(tmp_path / "outbox.db", max_bytes=30, policy=policy)
    low = [uuid7(T0 + n) for n in range(3)]
    for n, eid in enumerate(low):
        assert box.add(eid, "t", bytes(10), T0 + n, priority=0)
    assert box.depth()["bytes"] == 30  # exactly full fits
    same = uuid7(T0 + 10)
    if policy == "drop_oldest":
        assert box.add(same, "t", bytes(10), T0 + 10, priority=0)
        assert _state(box, low[0]) is None and box.counts == {"evicted": 1, "rejected": 0, "expired": 0}
    else:
        assert not box.add(same, "t", bytes(10), T0 + 10, priority=0)
        assert _state(box, low[0]) == "pending" and box.counts == {"evicted": 0, "rejected": 1, "expired": 0}
    high = uuid7(T0 + 11)
    assert box.add(high, "t", bytes(15), T0 + 11, priority=5)  # outranks: the two oldest low ones make room
    assert _state(box, high) == "pending" and box.depth()["bytes"] == 25
    assert box.counts["evicted"] == (3 if policy == "drop_oldest" else 2)
    assert not box.add(uuid7(T0 + 12), "t", bytes(31), T0 + 12, priority=9)  # never fits
    assert not box.add(uuid7(T0 + 13), "t", bytes(20), T0 + 13, priority=-1)  # outranks nothing
    assert box.counts["rejected"] == (2 if policy == "drop_oldest" else 3)
    assert box.depth()["bytes"] == 25 and len(box) == 2
    with pytest.raises(ValueError) as err:
        box.add(high, "t", b"x", T0 + 14)
    assert str(err.value) == f"event {high} is already in the outbox"
    box.close()
    with pytest.raises(ValueError) as err:
        Outbox(tmp_path / "other.db", policy="newest")
    assert str(err.value) == "outbox policy 'newest' is not one of drop_oldest, reject_newest"


def test_every_drop_is_logged_with_its_cause_and_what_to_change(tmp_path, caplog):
    box = Outbox(tmp_path / "outbox.db", max_bytes=20, max_age_s=10, policy="drop_oldest")
    a, b, c, d = (uuid7(T0 + n) for n in range(4))
    with caplog.at_level("WARNING", logger="edgetriage.edge.outbox"):
        assert box.add(a, "t", bytes(10), T0) and box.add(b, "t", bytes(10), T0 + 1)
        assert box.add(c, "t", bytes(10), T0 + 2, priority=1)
        assert not box.add(d, "t", bytes(10), T0 + 3, priority=-1)
        assert box.due(T0 + 12_000, 60) == []
    assert {r.name for r in caplog.records} == {"edgetriage.edge.outbox"}  # where a user's logging config finds it
    assert [r.getMessage() for r in caplog.records] == [
        f"outbox full (20 bytes): dropped 1 event(s) of priority <= 1, lowest and oldest first, from {a} (policy "
        "drop_oldest; 1 evicted in all); the cloud has been unreachable for long or outbox.max_bytes is too small",
        f"outbox full (20 of 20 bytes): refused event {d} of priority -1 (policy drop_oldest; 1 refused in all); "
        "the cloud has been unreachable for long or outbox.max_bytes is too small",
        "outbox: dropped 2 event(s) older than 10 s without a verdict (2 expired in all); raise outbox.max_age_s "
        "to keep events longer"]
    assert box.counts == {"evicted": 1, "rejected": 1, "expired": 2} and box.depth()["bytes"] == 0
    box.close()
    strict = Outbox(tmp_path / "strict.db", max_bytes=20, policy="reject_newest")
    assert strict.add(a, "t", bytes(10), T0) and strict.add(b, "t", bytes(10), T0 + 1)
    caplog.clear()
    with caplog.at_level("WARNING", logger="edgetriage.edge.outbox"):
        assert strict.add(c, "t", bytes(10), T0 + 2, priority=1)
    assert caplog.records[0].getMessage().startswith("outbox full (20 bytes): dropped 1 event(s) of priority < 1,")
    strict.close()


def test_eviction_frees_exactly_enough_and_a_payload_of_max_bytes_fits(tmp_path):
    box = Outbox(tmp_path / "outbox.db", max_bytes=20)
    a, b, c, d = (uuid7(T0 + n) for n in range(4))
    assert box.add(a, "t", bytes(8), T0) and box.add(b, "t", bytes(10), T0 + 1)
    assert box.add(c, "t", bytes(11), T0 + 2)  # needs 9 bytes: a (8) is not enough, b goes too
    assert [_state(box, e) for e in (a, b, c)] == [None, None, "pending"] and box.depth()["bytes"] == 11
    assert box.add(d, "t", bytes(20), T0 + 3)  # exactly max_bytes: everything else makes room
    assert [_state(box, e) for e in (c, d)] == [None, "pending"] and box.depth()["bytes"] == 20
    assert box.counts["evicted"] == 3
    box.close()


def test_an_empty_event_expires_too_and_due_gives_a_hundred_at_a_time(tmp_path):
    box = Outbox(tmp_path / "outbox.db", max_age_s=10)
    assert box.add("empty", "t", b"", T0)
    assert box.due(T0 + 10_001, 60) == [] and box.counts["expired"] == 1 and len(box) == 0
    for n in range(101):
        box.add(f"e{n}", "t", b"x", T0 + 20_000 + n)
    assert len(box.due(T0 + 20_200, 60)) == 100  # the agent scans again when a whole batch was due
    box.close()


def test_a_refused_duplicate_changes_nothing_even_when_full(tmp_path):
    box = Outbox(tmp_path / "outbox.db", max_bytes=20)
    a, b = uuid7(T0), uuid7(T0 + 1)
    assert box.add(a, "t", bytes(10), T0) and box.add(b, "t", bytes(10), T0 + 1)
    with pytest.raises(ValueError, match=f"event {b} is already in the outbox"):
        box.add(b, "t", bytes(10), T0 + 2)  # it would have evicted a: rolled back, a is kept
    assert [_state(box, e) for e in (a, b)] == ["pending", "pending"]
    assert box.counts == {"evicted": 0, "rejected": 0, "expired": 0} and box.depth()["bytes"] == 20
    box.close()


def test_an_outbox_it_cannot_use_is_named(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(OutboxError) as err:
        Outbox(tmp_path / "a-file" / "outbox.db")
    text = str(err.value)
    assert text.startswith(f"outbox {tmp_path / 'a-file' / 'outbox.db'}: cannot open: ")
    assert text.endswith("; check the path and free space (outbox.path in the edge config)")
    box = Outbox(tmp_path / "outbox.db")
    box.close()
    with pytest.raises(OutboxError) as err:
        box.add("e1", "t", b"x", T0)
    assert str(err.value).startswith(f"outbox {tmp_path / 'outbox.db'}: cannot store event e1: ")
    assert str(err.value).endswith("; check free space on the device")
    box.close()  # closing twice is harmless


def test_outbox_defaults_folders_threads_and_wall_clock(tmp_path):
    box = Outbox(tmp_path / "a" / "b" / "outbox.db")  # its folders are made
    config = OutboxConfig()
    assert (box.max_bytes, box.max_age_s, box.policy) == (config.max_bytes, config.max_age_s, config.policy)
    assert (box.max_bytes, box.max_age_s) == (64 * 1024 * 1024, 7 * 86400)
    added: list[bool] = []
    made = int(time.time() * 1000)  # within max_age_s of the wall clock, or due() drops it as expired
    worker = threading.Thread(target=lambda: added.append(box.add("e1", "t", b"x", made)))
    worker.start()  # any thread may use it (a reporting thread reads it while the agent loop writes)
    worker.join(10)
    assert added == [True]
    before = int(time.time() * 1000)
    box.mark_published("e1", mid=1)  # no time given: the wall clock's
    after = int(time.time() * 1000)
    assert box.due(before + 59_000, 60) == [] and len(box.due(after + 60_000, 60)) == 1
    assert box.mark_sent(1) == "e1"
    assert box.due(before + 59_000, 60) == [] and len(box.due(int(time.time() * 1000) + 60_000, 60)) == 1
    item = box.get("e1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.state = "pending"  # type: ignore[misc]
    box.close()


def test_an_outbox_written_before_priorities_existed_opens_and_keeps_its_events(tmp_path):
    path = tmp_path / "outbox.db"
    db = sqlite3.connect(str(path))
    db.executescript("""CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE,
        topic TEXT NOT NULL, payload BLOB NOT NULL, created_ms INTEGER NOT NULL, state TEXT NOT NULL, mid INTEGER,
        since_ms INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0);""")
    db.execute("INSERT INTO outbox (event_id, topic, payload, created_ms, state, mid, since_ms) VALUES "
               "('old', 't', x'0102', ?, 'inflight', 4, ?)", (T0, T0))
    db.commit()
    db.close()
    box = Outbox(path, max_bytes=4)
    assert _state(box, "old") == "pending" and box.depth()["bytes"] == 2
    assert box.add("new", "t", b"abc", T0 + 1, priority=1)  # ranks against the old one: it had priority 0
    assert _state(box, "old") is None and box.counts["evicted"] == 1
    box.close()


# -- the cooldown, per camera, zone rule and label --------------------------------------------------------
@dataclass
class Track:
    label: str
    score: float
    camera: str = "front"
    zones: tuple[str, ...] = ()
    uncertain: bool = False
    dwell_s: float | None = None
    captured_ms: int = 0
    classification: object | None = None
    visit: str = ""
    detections: list = field(default_factory=list)


def test_cooldown_is_kept_per_zone_rule():
    rules = Rules(RulesConfig.model_validate({
        "labels": ["person", "car"], "cooldown_s": 30,
        "overrides": [{"zone": "porch", "cooldown_s": 30}, {"zone": "drive", "cooldown_s": 30}]}))
    assert rules.decide(Track("person", 0.9, zones=("porch",)), None, now_ms=T0).kind == "escalate"
    assert rules.decide(Track("person", 0.9, zones=("drive",)), None, now_ms=T0 + 1).kind == "escalate"
    assert rules.decide(Track("person", 0.9), None, now_ms=T0 + 2).kind == "escalate"  # no zone: the defaults
    assert rules.decide(Track("car", 0.9, zones=("porch",)), None, now_ms=T0 + 3).kind == "escalate"
    assert rules.decide(Track("person", 0.9, camera="back", zones=("porch",)), None, now_ms=T0 + 4).kind == "escalate"
    quiet = rules.decide(Track("person", 0.9, zones=("porch",)), None, now_ms=T0 + 29_999)
    assert (quiet.kind, quiet.reason) == ("dropped", "cooldown: person escalated 30 s ago")
    assert rules.decide(Track("person", 0.9, zones=("porch",)), None, now_ms=T0 + 30_000).kind == "escalate"


def test_a_dropped_or_cached_track_does_not_restart_the_cooldown():
    rules = Rules(RulesConfig(cooldown_s=10))
    assert rules.decide(Track("person", 0.9), None, now_ms=T0).kind == "escalate"
    assert rules.decide(Track("person", 0.9), None, now_ms=T0 + 5_000).kind == "dropped"
    assert rules.decide(Track("person", 0.9), None, now_ms=T0 + 10_000).kind == "escalate"  # from T0, not T0+5 s
    assert rules.decide(Track("person", 0.9), _verdict(), now_ms=T0 + 20_000).kind == "cached"
    assert rules.decide(Track("person", 0.9), None, now_ms=T0 + 20_001).kind == "escalate"
    no_cooldown = Rules(RulesConfig())
    assert [no_cooldown.decide(Track("person", 0.9), None, now_ms=T0).kind for _ in range(3)] == ["escalate"] * 3


def test_a_clock_that_steps_back_does_not_silence_a_camera():
    rules = Rules(RulesConfig(cooldown_s=10))
    assert rules.decide(Track("person", 0.9), None, now_ms=T0).kind == "escalate"
    assert rules.decide(Track("person", 0.9), None, now_ms=T0 - 1).kind == "escalate"


def test_score_and_band_edges():
    rules = Rules(RulesConfig(min_score=0.3, uncertain_band=(0.4, 0.6), escalate=False))
    assert rules.decide(Track("person", 0.3), None).kind == "local"  # at min_score: kept (not dropped)
    assert rules.decide(Track("person", 0.29), None).kind == "dropped"
    assert rules.decide(Track("person", 0.4), None).kind == "escalate"  # the band includes its low end
    assert rules.decide(Track("person", 0.6), None).kind == "local"  # and excludes its high end
    assert rules.is_uncertain(Track("person", 0.59)) and not rules.is_uncertain(Track("person", 0.6))


# -- claims, without sleeping on a lease --------------------------------------------------------------------
def _wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture(params=["sqlite", "redis"])
def make_claims(request, tmp_path):
    if request.param == "sqlite":
        return lambda owner: SQLiteClaims(tmp_path / "claims.db", owner)
    prefix = request.getfixturevalue("redis_prefix")
    return lambda owner: RedisClaims(connect_redis(REDIS_URL), prefix, owner)


def test_claim_keeper_takes_renews_loses_and_releases(make_claims):
    a, b = make_claims("worker-a"), make_claims("worker-b")
    keeper, other = ClaimKeeper(a, 60), ClaimKeeper(b, 60)
    assert keeper.take("e1") and keeper.take("e1")  # our own claim again: still ours
    assert not other.take("e1") and other.held == set()
    assert keeper.still_held("e1") and not other.still_held("e1")
    assert keeper.renew() == [] and keeper.lost == 0 and keeper.orphans() == []
    assert a.renew([], 60) == []
    # a stall: the lease runs out (renewed to a few ms), the other worker takes the event over
    assert a.renew(["e1"], 0.005) == []
    assert _wait_for(lambda: other.orphans() == ["e1"]) and keeper.orphans() == []  # held here: not an orphan
    # Redis ends the key on its own clock, a moment after the index says so: take over once it has
    assert _wait_for(lambda: other.take("e1"))
    assert keeper.renew() == ["e1"] and keeper.lost == 1 and not keeper.still_held("e1")
    keeper.done("e1")  # releasing what we no longer hold leaves the new holder's claim alone
    a.abandon("e1")  # and so does abandoning it
    assert b.holds("e1") and other.orphans() == [] and not a.acquire("e1", 60)
    other.abandon("e1")  # stops without an answer: listed at once for anyone
    assert _wait_for(lambda: keeper.orphans() == ["e1"]) and not other.still_held("e1")
    b.forget("e1")
    assert a.expired() == [] and a.acquire("e1", 60)
    a.forget("e1")  # a live claim is not forgotten
    assert a.holds("e1")
    keeper.held.add("e1")
    keeper.done("e1")
    assert a.expired() == [] and not a.holds("e1") and b.acquire("e1", 60)
    a.close()
    b.close()


def test_a_lost_claim_is_counted_and_said_once(make_claims, caplog):
    a, b = make_claims("worker-a"), make_claims("worker-b")
    keeper = ClaimKeeper(a, 30)
    assert keeper.take("e1") and keeper.take("e2")
    a.abandon("e1")
    a.abandon("e2")
    assert b.acquire("e1", 60) and b.acquire("e2", 60)
    with caplog.at_level("WARNING", logger="edgetriage.cloud.claims"):
        assert keeper.renew() == ["e1", "e2"] and keeper.renew() == []
        assert keeper.take("e3")
        a.abandon("e3")
        assert b.acquire("e3", 60) and keeper.renew() == ["e3"]
    assert keeper.lost == 3 and keeper.held == set()  # counted over time, not per renewal
    assert {r.name for r in caplog.records} == {"edgetriage.cloud.claims"}
    assert [r.getMessage() for r in caplog.records] == [
        "lost the claim on 2 event(s) to another worker, which answers them (this process stalled longer than a "
        "30 s lease)",
        "lost the claim on 1 event(s) to another worker, which answers them (this process stalled longer than a "
        "30 s lease)"]
    a.close()
    b.close()


def test_leases_run_on_the_wall_clock_in_milliseconds(make_claims):
    a = make_claims("worker-a")

    def expiry(event_id: str) -> tuple[int, int | None]:
        """(expiry in the index, ms the lease has left where the store keeps a TTL of its own), read where the
        docstrings say they are kept"""
        if isinstance(a, SQLiteClaims):
            db = sqlite3.connect(str(a.path))
            try:
                return db.execute("SELECT expires_ms FROM claims WHERE event_id = ?", (event_id,)).fetchone()[0], None
            finally:
                db.close()
        return int(a.client.zscore(f"{a.prefix}:claims", event_id)), a.client.pttl(f"{a.prefix}:claim:{event_id}")

    for step, lease_s in (("acquire", 60), ("renew", 30)):
        before = int(time.time() * 1000)
        if step == "acquire":
            assert a.acquire("e1", lease_s)
        else:
            assert a.renew(["e1"], lease_s) == []
        after = int(time.time() * 1000)
        expires, left = expiry("e1")
        assert before + lease_s * 1000 <= expires <= after + lease_s * 1000, step
        assert left is None or lease_s * 1000 - 5000 < left <= lease_s * 1000, step
    a.close()


def test_claim_owners_files_and_threads(tmp_path):
    owner = new_owner("svc")
    assert re.fullmatch(rf"svc:{os.getpid()}:[0-9a-f]{{8}}", owner), owner
    claims = SQLiteClaims(tmp_path / "deep" / "er" / "claims.db", owner)  # its folders are made
    taken: list[bool] = []
    worker = threading.Thread(target=lambda: taken.append(claims.acquire("e1", 60)))
    worker.start()  # the service's threads share one
    worker.join(10)
    assert taken == [True] and claims.holds("e1")
    claims.close()
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(RuntimeError) as err:
        SQLiteClaims(tmp_path / "a-file" / "claims.db", owner)
    assert str(err.value).startswith(f"{tmp_path / 'a-file' / 'claims.db'}: cannot open the claims file: ")
    assert str(err.value).endswith(" (check the folder of store_path and its permissions)")


def test_expired_lists_oldest_first_up_to_the_limit(make_claims):
    a, b = make_claims("worker-a"), make_claims("worker-b")
    for eid in ("e1", "e2", "e3"):
        assert a.acquire(eid, 60)
        a.abandon(eid)
    assert sorted(a.expired()) == ["e1", "e2", "e3"] and len(a.expired(limit=2)) == 2
    for n in range(98):
        assert a.acquire(f"f{n}", 60)
        a.abandon(f"f{n}")
    assert len(a.expired()) == 100 and len(ClaimKeeper(b, 60).orphans()) == 100  # a hundred at a time
    a.close()
    b.close()


def test_claims_live_beside_the_store_or_in_redis(tmp_path, redis_prefix):
    assert claims_path(tmp_path / "state" / "cloud.db") == tmp_path / "state" / "cloud.claims.db"
    owner = new_owner("svc")
    assert owner.startswith("svc:") and owner != new_owner("svc")
    config = CloudConfig(store_path=str(tmp_path / "state" / "cloud.db"))
    claims = open_claims(config, owner)
    assert isinstance(claims, SQLiteClaims) and claims.path == tmp_path / "state" / "cloud.claims.db"
    claims.close()
    store = SQLiteStore(tmp_path / "elsewhere" / "cloud.db")
    claims = open_claims(config, owner, store)
    assert claims.path == tmp_path / "elsewhere" / "cloud.claims.db"
    claims.close()
    store.close()
    config = CloudConfig.model_validate({"delivery": {"redis_url": REDIS_URL, "redis_prefix": redis_prefix}})
    store = RedisStore(connect_redis(REDIS_URL), redis_prefix)
    claims = open_claims(config, owner, store)
    assert isinstance(claims, RedisClaims) and claims.client is store.client and claims.prefix == redis_prefix
    assert isinstance(open_claims(config, owner), RedisClaims)
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(RuntimeError, match="cannot open the claims file"):
        SQLiteClaims(tmp_path / "a-file" / "claims.db", owner)


# -- the cloud config refuses unknown keys ----------------------------------------------------------------
def test_cloud_config_refuses_unknown_keys_by_name(tmp_path, capsys):
    bad = tmp_path / "cloud.toml"
    bad.write_text('stor_path = "/tmp/x.db"\n[scheduler.budget]\nfleet_tokens_per_hr = 5\n')
    with pytest.raises(ConfigError) as err:
        load_cloud_config(bad)
    text = str(err.value)
    assert text.startswith(f"{bad}: invalid configuration")
    assert "stor_path: unknown key" in text and "scheduler.budget.fleet_tokens_per_hr: unknown key" in text
    assert cli_main(["cloud", "check-config", "--config", str(bad)]) != 0
    out = capsys.readouterr()
    assert "stor_path: unknown key" in out.err and "Traceback" not in out.err
    good = tmp_path / "good.toml"
    good.write_text(f'store_path = "{tmp_path / "c.db"}"\n[scheduler.budget]\nfleet_tokens_per_hour = 5\n')
    assert load_cloud_config(good).scheduler.budget.fleet_tokens_per_hour == 5


# -- a verdict is stored before it is published -------------------------------------------------------------
def test_a_verdict_is_in_the_store_when_it_is_published(tmp_path, mosquitto, prefix, visitor_jpeg, monkeypatch):
    """Checked from inside the publish call itself: whatever the broker (and so the device) is handed, the
    store already answers for, so a crash right after publishing cannot lose a verdict a device acted on.
    No model is asked: the fleet's token budget is 0, so the verdict is the explicit fallback."""
    crop = visitor_jpeg
    t = int(time.time() * 1000)
    event = Event(event_id=uuid7(t), device="pi-door", camera="porch", captured_ms=t, label="person", score=0.6,
                  uncertain=True, track_id=1, detections=[Detection(label="person", score=0.6, box=(0.5, 0, 0.7, 0.9))],
                  phash=BASE, reason="detector unsure", crop=crop, crop_size=(190, 400))
    config = CloudConfig.model_validate({
        "mqtt": {"url": mosquitto.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
        "store_path": str(tmp_path / "cloud.db"), "http": {"port": 0},
        "analyzer": {"backend": "openai", "openai": {"base_urls": [f"http://127.0.0.1:{free_port()}/v1"]}},
        "scheduler": {"budget": {"fleet_tokens_per_hour": 0}}})
    store = SQLiteStore(config.store_path)
    seen: list[tuple[Verdict, Verdict | None]] = []
    publish = MQTTLink.publish

    def publish_and_look(link, topic, payload, *args, **kwargs):
        if topic.endswith("/answers"):  # what the device acts on
            published = decode_device_verdict(payload)
            seen.append((published, store.get_verdict(published.event_id)))
        return publish(link, topic, payload, *args, **kwargs)

    monkeypatch.setattr(MQTTLink, "publish", publish_and_look)
    service = build_service(config, build_backend(config.analyzer), store)

    async def scenario() -> tuple[Verdict | None, Verdict | None]:
        await service.start()
        try:
            assert await service.wait_connected(10)
            topic = Topics(prefix).events("pi-door")
            first = await service.process(encode_event(event), topic)
            again = await service.process(encode_event(event), topic)  # a re-send: the stored one, published again
            return first, again
        finally:
            await service.stop()
            await service.backend.close()

    first, again = asyncio.run(scenario())
    store.close()
    assert first is not None and first.verdict == "unknown" and again == first
    assert seen == [(first, first), (first, first)]
    assert service.stats.published == 2


@pytest.mark.parametrize("via", ["http", "mqtt"])
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_cache_hits_are_in_the_store_when_they_are_published(kind, via, tmp_path, mosquitto, prefix, redis_prefix,
                                                             visitor_jpeg, monkeypatch):
    """A burst of cache hits, answered together (one lookup call, one write per loop turn), whether they come
    as concurrent `process` calls (the HTTP intake) or as MQTT messages that arrived during one loop turn:
    each hit's event and verdict are in the store already when its verdict is handed to the broker, seen from
    inside the publish call, so a crash right after publishing loses nothing a device was told; and each MQTT
    message is acknowledged only after that."""
    crop = visitor_jpeg

    def event(n: int) -> Event:
        t = int(time.time() * 1000)
        phash = f"{int(BASE, 16) ^ (1 << (n % 64)) if n else int(BASE, 16):016x}"  # 1 bit from the first
        return Event(
            event_id=uuid7(t),
            device="pi-door",
            camera="porch",
            captured_ms=t,
            label="person",
            score=0.6,
            uncertain=True,
            track_id=n,
            detections=[Detection(label="person", score=0.6, box=(0.5, 0, 0.7, 0.9))],
            phash=phash,
            reason="detector unsure",
            crop=crop,
            crop_size=(190, 400),
        )

    config = CloudConfig.model_validate({
        "mqtt": {"url": mosquitto.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
        "store_path": str(tmp_path / "cloud.db"), "http": {"port": 0}, "reuse": {"verify_sample": 0.0},
        "analyzer": {"backend": "openai", "openai": {"base_urls": [f"http://127.0.0.1:{free_port()}/v1"]}},
        "scheduler": {"budget": {"fleet_tokens_per_hour": 0}}})
    store = SQLiteStore(config.store_path) if kind == "sqlite" else RedisStore(connect_redis(REDIS_URL), redis_prefix)
    seen: list[tuple[str, bool, Verdict | None]] = []
    publish = MQTTLink.publish

    def publish_and_look(link, topic, payload, *args, **kwargs):
        if topic.endswith("/answers"):  # what the device acts on
            published = decode_device_verdict(payload)
            seen.append((published.event_id, store.get_event(published.event_id) is not None,
                         store.get_verdict(published.event_id)))
        return publish(link, topic, payload, *args, **kwargs)

    monkeypatch.setattr(MQTTLink, "publish", publish_and_look)
    service = build_service(config, build_backend(config.analyzer), store)
    first = event(0)
    analysis = Analysis(verdict="benign", confidence=0.8, description="a visitor", model="m",
                        prompt_version=service.backend.prompt_version(first), analyze_ms=1.0)
    store.put_verdict(service.cache.from_model(first, analysis, analysis.prompt_version, "m", time.monotonic(),
                                               time.monotonic()))
    hits = [event(n) for n in range(1, 21)]

    acked: list[int] = []
    ack = MQTTLink.ack

    def ack_and_look(link, mid, *args, **kwargs):
        acked.append(len(seen))  # how many verdicts had been published when this message was acknowledged
        return ack(link, mid, *args, **kwargs)

    monkeypatch.setattr(MQTTLink, "ack", ack_and_look)
    topic = Topics(prefix).events("pi-door")

    async def over_mqtt() -> list[Verdict]:
        device = MQTTLink(config.mqtt, f"{prefix}-device")
        device.subscribe(Topics(prefix).verdicts("pi-door"))
        device.start()
        try:
            assert await asyncio.to_thread(device.wait_connected, 10)
            deadline = time.monotonic() + 10
            while not service.publisher.subscribed:  # the broker granted the service's subscription (SUBACK)
                assert time.monotonic() < deadline, "the service's subscription was never granted"
                await asyncio.sleep(0.01)
            for e in hits:
                assert device.publish(topic, encode_event(e)) is not None
            deadline = time.monotonic() + 10
            while len(service.intake._arrived) < len(hits):  # the loop held: they all arrive during one turn
                assert time.monotonic() < deadline, "the events did not reach the service"
                time.sleep(0.01)
            while len(acked) < len(hits):
                assert time.monotonic() < deadline + 10, "not every event was acknowledged"
                await asyncio.sleep(0.01)
            return [v for _, _, v in seen]
        finally:
            await asyncio.to_thread(device.stop)

    async def scenario() -> list[Verdict]:
        await service.start()
        try:
            assert await service.wait_connected(10)
            if via == "mqtt":
                return await over_mqtt()
            return await asyncio.gather(*(service.process(encode_event(e), topic) for e in hits))
        finally:
            await service.stop()
            await service.backend.close()

    verdicts = asyncio.run(scenario())
    assert [v.source for v in verdicts] == ["cloud_cache"] * len(hits)
    assert 1 <= service.answer_hits.turns < len(hits) and service.answer_hits.stored == len(hits)  # answered together
    if via == "mqtt":  # the whole burst in one turn: all published (stored before) before any acknowledgement
        assert service.answer_hits.turns == 1 and acked == [len(hits)] * len(hits)
    assert sorted(seen, key=lambda s: s[0]) == sorted(((v.event_id, True, v) for v in verdicts), key=lambda s: s[0])
    store.close()


def test_config_errors_name_cameras_and_zones_by_their_id_not_their_position(tmp_path, capsys):
    """Issue 38: `cameras.3.fps` made an operator with nine cameras count tables; the error names the camera
    (`cameras[porch].fps`) in check-config and in edge run alike, a zone by its name, a table without one by
    its position in brackets."""
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"")
    cams = "".join(f'[[cameras]]\nid = "{name}"\nsource = "{clip}"\n' for name in ("gate", "yard", "shed"))
    bad = tmp_path / "edge.toml"
    bad.write_text(cams + f'[[cameras]]\nid = "porch"\nsource = "{clip}"\nfps = 3\n'
                   '[[cameras.zones]]\nname = "steps"\n'
                   '[rules]\n[[rules.overrides]]\ncamera = "porch"\nmin_score = 2\n')
    for argv in (["edge", "check-config", "--config", str(bad)], ["edge", "run", "--config", str(bad)]):
        assert cli_main(argv) == 2
        err = capsys.readouterr().err
        assert "cameras[porch].fps: unknown key" in err and "cameras[porch].zones[steps].polygon:" in err
        assert "rules.overrides[0].min_score:" in err
        assert "cameras.3" not in err and "Traceback" not in err
