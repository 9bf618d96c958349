"""The cloud store's own promises, fast and on a real SQLite file (the Redis store answers the same calls, see
tests/test_faults.py): seen event ids, verdicts replaced not doubled, which reuse rules are filed, paging and
filters at their exact edges, retention, and a clear error for a file it cannot use."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator

import pytest
from edgetriage.cloud.storage.store import Retention, SQLiteStore, Store, StoreError
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, ReuseRule, Verdict

T0 = 1_700_000_000_000
HASH = "0f0f0f0f0f0f0f0f"
HIGH = "f0f0f0f0f0f0f0f0"  # top bit set: stored as a negative 64-bit integer
APART = ["0000000000000000", "ffffffffffffffff", "00000000ffffffff"]  # 32 bits or more from one another


@pytest.fixture(scope="module")
def crop(visitor_jpeg, visitor_crop) -> tuple[bytes, tuple[int, int]]:
    return visitor_jpeg, (visitor_crop.shape[1], visitor_crop.shape[0])


@pytest.fixture
def store(tmp_path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "state" / "cloud.db")
    yield s
    s.close()


def _event(crop, n: int, *, device: str = "pi-a", camera: str = "door", label: str = "person") -> Event:
    jpeg, size = crop
    return Event(event_id=uuid7(T0 + n), device=device, camera=camera, captured_ms=T0 + n, label=label, score=0.5,
                 track_id=n, detections=[Detection(label=label, score=0.5, box=(0.1, 0.1, 0.5, 0.9))], phash=HASH,
                 reason="r", crop=jpeg, crop_size=size)


def _verdict(event: Event, *, created_ms: int | None = None, verdict: str = "benign", source: str = "llm",
             phash: str = HASH, max_distance: int = 6, reused_from: str | None = None, rule: bool = True,
             prompt: str = "p1") -> Verdict:
    return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                   verdict=verdict, confidence=0.7, description="d", model="m", source=source,
                   reused_from=reused_from, created_ms=created_ms if created_ms is not None else event.captured_ms,
                   cache=ReuseRule(device=event.device, camera=event.camera, label=event.label, phash=phash,
                                   prompt_version=prompt, max_distance=max_distance, ttl_s=60) if rule else None)


def _find(store, phash: str, now_ms: int, *, device: str = "pi-a", label: str = "person", alg: str = "dct64",
          prompt: str = "p1") -> str | None:
    found = store.lookup(scope_key=f"camera:{device}/door", label=label, phash=phash, phash_alg=alg,
                         prompt_version=prompt, now_ms=now_ms)
    return None if found is None else found.event_id


def _ids(rows) -> list[str]:
    return [r["event_id"] for r in rows]


def test_an_event_id_is_stored_once(store, crop):
    e = _event(crop, 1)
    assert store.put_event(e, T0 + 5) is True
    assert store.put_event(e, T0 + 6) is False
    assert store.get_event(e.event_id)["received_ms"] == T0 + 5  # the first arrival is kept
    assert store.counts() == {"events": 1, "verdicts": 0}
    assert isinstance(store, Store) and isinstance(store, Retention)


def test_a_replaced_verdict_is_one_verdict_with_one_rule(store, crop):
    e = _event(crop, 1)
    store.put_event(e, T0)
    store.put_verdict(_verdict(e, phash=HASH))
    store.put_verdict(_verdict(e, phash=HIGH, verdict="alert"))  # replaced: the old rule goes with it
    assert store.counts() == {"events": 1, "verdicts": 1}
    assert store.get_verdict(e.event_id).verdict == "alert"
    assert _find(store, HASH, T0) is None and _find(store, HIGH, T0) == e.event_id
    store.put_verdict(_verdict(e, rule=False))  # no rule at all: nothing left to reuse
    assert _find(store, HIGH, T0) is None and store.get_verdict(e.event_id).cache is None
    assert store.get_verdict(uuid7(T0 + 99)) is None


def test_lookup_matches_scope_label_algorithm_and_prompt_exactly(store, crop):
    e = _event(crop, 1)
    store.put_verdict(_verdict(e))
    assert _find(store, HASH, T0) == e.event_id
    assert _find(store, HASH, T0, device="pi-b") is None
    assert _find(store, HASH, T0, label="car") is None
    assert _find(store, HASH, T0, alg="other") is None
    assert _find(store, HASH, T0, prompt="p2") is None


def test_hashes_with_the_top_bit_set_match_across_the_sign(store, crop):
    """SQLite keeps the 64 hash bits as a signed integer: distances must not depend on the sign."""
    top, below = _event(crop, 1), _event(crop, 2)
    store.put_verdict(_verdict(top, phash="8000000000000000", max_distance=1))
    store.put_verdict(_verdict(below, phash="7fffffffffffffff", max_distance=1))
    assert _find(store, "8000000000000000", T0) == top.event_id
    assert _find(store, "0000000000000000", T0) == top.event_id  # 1 bit: the sign bit itself
    assert _find(store, "7fffffffffffffff", T0) == below.event_id
    assert _find(store, "ffffffffffffffff", T0) == below.event_id
    assert _find(store, "c000000000000000", T0) == top.event_id and _find(store, "3fffffffffffffff", T0) == \
        below.event_id
    assert _find(store, "4000000000000001", T0) is None
    assert _find(store, "0000000000000002", T0) is None  # 2 bits from 8000...: the sign and bit 1


def test_fifty_events_a_page_by_default_from_any_thread(tmp_path, crop):
    store = SQLiteStore(tmp_path / "deep" / "er" / "cloud.db")  # its folders are made
    done: list[bool] = []

    def fill() -> None:
        done.extend(store.put_event(_event(crop, n), T0 + n) for n in range(51))

    worker = threading.Thread(target=fill)  # the API and the service call it from their own threads
    worker.start()
    worker.join(30)
    assert done == [True] * 51
    assert len(store.list_events()) == 50 and len(store.list_events(limit=51)) == 51
    assert store.list_events(limit=1)[0]["v"] == 1  # the protocol's own field names, as on the wire
    assert sqlite3.connect(str(store.path)).execute("PRAGMA user_version").fetchone()[0] == 1
    store.close()


def test_a_hash_and_its_complement_are_64_bits_apart(store, crop):
    e = _event(crop, 1)
    store.put_verdict(_verdict(e, phash="7fffffffffffffff", max_distance=32))
    assert _find(store, "8000000000000000", T0) is None and _find(store, "0000000000000000", T0) is None
    assert _find(store, "7fffffff00000000", T0) == e.event_id  # 32 bits
    # ranked in SQLite, so a wrong distance there would put the complement first and hide a real match
    five = _event(crop, 2)
    store.put_verdict(_verdict(five, phash="800000000000001f", max_distance=32))
    assert _find(store, "8000000000000000", T0) == five.event_id


def test_a_near_copy_of_its_source_adds_no_rule_and_a_farther_one_does(store, crop):
    source, near, edge, far = (_event(crop, n) for n in range(4))
    store.put_verdict(_verdict(source, phash=HASH, max_distance=6))
    # 3 bits from its source (half of 6): the source's rule already answers everything it would
    store.put_verdict(_verdict(near, phash=f"{int(HASH, 16) ^ 0b111:016x}", reused_from=source.event_id))
    # 4 bits: beyond half the distance, so it reaches crops the source does not
    store.put_verdict(_verdict(edge, phash=f"{int(HASH, 16) ^ 0b1111:016x}", reused_from=source.event_id))
    # reused from itself (the model's own answer): filed
    store.put_verdict(_verdict(far, phash=HIGH, reused_from=far.event_id))
    rules = sqlite3.connect(str(store.path)).execute("SELECT event_id FROM rules").fetchall()
    assert sorted(r[0] for r in rules) == sorted([source.event_id, edge.event_id, far.event_id])
    assert store.counts()["verdicts"] == 4
    # a reused verdict that carries no rule of its own is stored all the same
    plain = _event(crop, 6)
    store.put_verdict(_verdict(plain, rule=False, reused_from=source.event_id))
    assert store.get_verdict(plain.event_id).reused_from == source.event_id
    # a verdict reused from one that has no rule is filed
    orphan = _event(crop, 5)
    store.put_verdict(_verdict(orphan, phash=HASH, reused_from=uuid7(T0 + 77)))
    assert sqlite3.connect(str(store.path)).execute("SELECT COUNT(*) FROM rules").fetchone()[0] == 4


def test_listing_pages_and_filters_at_their_edges(store, crop):
    events = [_event(crop, 0, device="pi-a"), _event(crop, 1, device="pi-b", label="car"),
              _event(crop, 2, device="pi-a", camera="yard"), _event(crop, 3, device="pi-a")]
    for n, e in enumerate(events):
        assert store.put_event(e, T0 + 1000 * n)
    store.put_verdict(_verdict(events[0], verdict="alert", rule=False))
    store.put_verdict(_verdict(events[3], source="cloud_cache", rule=False))
    ids = [e.event_id for e in events]
    assert _ids(store.list_events()) == ids[::-1]
    assert _ids(store.list_events(limit=2)) == [ids[3], ids[2]] and store.list_events(limit=0) == []
    assert _ids(store.list_events(before=ids[2])) == [ids[1], ids[0]]
    assert _ids(store.list_events(device="pi-a")) == [ids[3], ids[2], ids[0]]
    assert _ids(store.list_events(label="car")) == [ids[1]]
    assert _ids(store.list_events(camera="yard")) == [ids[2]]
    assert _ids(store.list_events(since_ms=T0 + 1000)) == [ids[3], ids[2], ids[1]]  # since: inclusive
    assert _ids(store.list_events(until_ms=T0 + 1000)) == [ids[0]]  # until: exclusive
    assert _ids(store.list_events(verdict="alert")) == [ids[0]]
    assert _ids(store.list_events(source="cloud_cache")) == [ids[3]]
    assert _ids(store.list_events(device="pi-a", before=ids[3], limit=1)) == [ids[2]]
    row = store.get_event(ids[0])
    assert row["verdict"]["verdict"] == "alert" and row["crop_bytes"] == len(crop[0]) and "crop" not in row
    assert row["received_ms"] == T0 and row["device"] == "pi-a"
    assert store.get_event(ids[1])["verdict"] is None and store.get_event(uuid7(T0 + 99)) is None


def test_retention_deletes_crops_then_events_with_their_verdicts_and_rules(store, crop):
    events = [_event(crop, n) for n in range(3)]
    for n, e in enumerate(events):
        store.put_event(e, T0 + 1000 * n)
        store.put_verdict(_verdict(e, created_ms=T0 + 1000 * n, phash=APART[n]))
    assert store.get_crop(events[0].event_id) == crop[0]
    assert store.sweep(crops_before_ms=T0 + 1000, events_before_ms=None) == (1, 0)  # before: exclusive
    assert store.get_crop(events[0].event_id) is None and store.get_crop(events[1].event_id) == crop[0]
    assert store.get_event(events[0].event_id)["crop_bytes"] == 0
    assert store.sweep(crops_before_ms=T0 + 1000, events_before_ms=None) == (0, 0)  # already gone: not counted
    assert store.sweep(crops_before_ms=None, events_before_ms=T0 + 1000) == (0, 1)
    assert store.get_event(events[0].event_id) is None and store.get_verdict(events[0].event_id) is None
    assert _find(store, APART[0], T0) is None and _find(store, APART[1], T0 + 1000) == events[1].event_id
    assert store.counts() == {"events": 2, "verdicts": 2}
    assert store.sweep(None, None) == (0, 0)
    # a verdict older than the cut whose event is newer goes too (nothing is kept past its time)
    late = _event(crop, 9)
    store.put_event(late, T0 + 50_000)
    store.put_verdict(_verdict(late, created_ms=T0 + 1500, phash=APART[0]))
    assert store.sweep(None, T0 + 2000) == (0, 1)
    assert store.get_verdict(late.event_id) is None and _find(store, APART[0], T0 + 1500) is None
    assert store.get_event(late.event_id) is not None


def test_a_file_it_cannot_use_is_named_with_what_to_do(tmp_path):
    newer = tmp_path / "newer.db"
    db = sqlite3.connect(str(newer))
    db.execute("PRAGMA user_version=2")
    db.close()
    with pytest.raises(StoreError) as err:
        SQLiteStore(newer)
    assert str(err.value) == (f"{newer}: store schema version 2 is newer than this service understands (1); "
                              "upgrade edgetriage or use another store_path")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as err:
        SQLiteStore(junk)
    assert str(err.value).startswith(f"{junk}: cannot open the cloud store: ")
    assert str(err.value).endswith(" (check the path and its permissions, or set store_path)")
    reopened = SQLiteStore(tmp_path / "fresh.db")
    reopened.close()
    again = SQLiteStore(tmp_path / "fresh.db")  # its own version is accepted
    assert again.counts() == {"events": 0, "verdicts": 0}
    again.close()


def test_a_cache_hit_stores_its_event_and_verdict_in_one_write_or_not_at_all(store, crop):
    """put_answered (the hit path): both rows at once, the near-copy rule applied as put_verdict applies it;
    a repeated event id writes nothing and says so. The Redis store does the same in one script."""
    from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis

    redis = RedisStore(connect_redis("redis://127.0.0.1:6379/0"), f"test-store-{uuid7(T0)[-8:]}")
    try:
        for s in (store, redis):
            source, hit = _event(crop, 1), _event(crop, 2)
            s.put_verdict(_verdict(source, phash=HASH, max_distance=6))
            reused = _verdict(hit, phash=f"{int(HASH, 16) ^ 0b1:016x}", source="cloud_cache",
                              reused_from=source.event_id)
            assert s.put_answered(hit, T0, reused)
            assert s.get_verdict(hit.event_id) == reused and s.get_event(hit.event_id)["crop_bytes"] == len(crop[0])
            assert _find(s, f"{int(HASH, 16) ^ 0b1:016x}", T0) == source.event_id  # the copy is not filed
            other = _verdict(hit, verdict="alert", source="cloud_cache", reused_from=source.event_id)
            assert not s.put_answered(hit, T0 + 1, other)
            assert s.get_verdict(hit.event_id) == reused and s.counts() == {"events": 1, "verdicts": 2}
    finally:
        redis.delete_all()


def test_the_wal_is_copied_into_the_file_by_its_own_thread(tmp_path, crop):
    """The writer never checkpoints (the event loop must not copy pages and sync the file inside a commit), so
    only the store's checkpoint thread can bring the crops of 300 commits from the WAL into the database file;
    and a store closed afterwards leaves no WAL behind."""
    path = tmp_path / "cloud.db"
    s = SQLiteStore(path)
    try:
        events = [_event(crop, n) for n in range(300)]
        for n, event in enumerate(events):
            assert s.put_event(event, T0 + n)
        deadline = time.monotonic() + 10
        while path.stat().st_size < 300 * len(crop[0]):
            assert time.monotonic() < deadline, "the crops never reached the database file"
            time.sleep(0.05)
        assert s.get_crop(events[-1].event_id) == crop[0]
    finally:
        s.close()
    assert not (tmp_path / "cloud.db-wal").exists()
