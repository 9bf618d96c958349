"""The promises of the cloud's newer modules (issue 31), each at the edge where a one-line bug hides: the fair
queue's order and eviction threshold, single flight by embedding (one process and two, real Redis), a reused
verdict's TTL, site offers, camera-scoped lookups of events with a site, a model verdict field by field,
takeover (busy events, lost claim races, what it forgets), bearer in any case, and the SQLite claims' last
millisecond and order (SQL strings mutmut does not plant). Real SQLite stores and Redis, no model."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import pytest
from edgetriage.cloud.analysis.base import Analysis
from edgetriage.cloud.broker.takeover import TakeOver
from edgetriage.cloud.config import ReusePolicy
from edgetriage.cloud.counts.servicestats import ServiceStats, Throttled
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.reuse.singleflight import SingleFlight
from edgetriage.cloud.reuse.verdicts import VerdictCache, site_offers
from edgetriage.cloud.scheduling.fairqueue import FairQueue
from edgetriage.cloud.storage import claims as claims_module
from edgetriage.cloud.storage.claims import ClaimKeeper, SQLiteClaims
from edgetriage.cloud.storage.redis_store import connect_redis
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Event, ReuseRule, Verdict
from promise_kit import BUCKET, PHASH, flip, make_embedding, make_event
from test_boundaries import REDIS_URL, redis_prefix  # noqa: F401 - a fixture


# -- the fair queue ----------------------------------------------------------------------------------------
@dataclass(eq=False)
class _Ev:
    device: str
    site: str | None = None


@dataclass(eq=False)
class _Item:
    tier: int
    event: _Ev


def test_the_fair_queue_gives_the_most_urgent_tier_first():
    queue = FairQueue()
    low, high = _Item(2, _Ev("a")), _Item(0, _Ev("b"))
    queue.push(low)
    queue.push(high)
    assert queue.pop() is high and queue.pop() is low and queue.pop() is None


def test_a_device_is_evicted_for_a_newcomer_only_when_it_holds_more_than_its_share():
    queue = FairQueue()
    busy = [_Item(1, _Ev("busy")) for _ in range(2)]
    for item in busy:
        queue.push(item)
    # the newcomer's device would hold 1: a device holding 2 holds more, its newest one gives way
    assert queue.victim(_Item(1, _Ev("quiet")), lambda _: True) is busy[-1]
    queue.push(_Item(1, _Ev("quiet")))
    # the newcomer's device would hold 2: a device holding 2 holds no more, nobody gives way
    assert queue.victim(_Item(1, _Ev("quiet")), lambda _: True) is None


# -- the fair queue, turn by turn --------------------------------------------------------------------------
def test_the_fair_queue_takes_turns_between_sites_then_devices_and_keeps_order_within_one():
    queue = FairQueue()
    items = {name: _Item(0, _Ev(device, site)) for name, device, site in [
        ("a1", "a", "s1"), ("a2", "a", "s1"), ("b1", "b", "s1"), ("c1", "c", "s2"), ("c2", "c", "s2"),
        ("d1", "d", None)]}
    for item in items.values():
        queue.push(item)
    assert len(queue) == 6 and queue.count("a") == 2 and queue.count("z") == 0
    assert list(queue) == [items[n] for n in ("a1", "a2", "b1", "c1", "c2", "d1")]
    assert queue.any(lambda i: i.event.device == "d") and not queue.any(lambda i: i.event.device == "z")
    order = []
    while (item := queue.pop()) is not None:
        order.append(next(n for n, i in items.items() if i is item))
    assert order == ["a1", "c1", "d1", "b1", "c2", "a2"] and len(queue) == 0 and queue.count("a") == 0


def test_the_fair_queue_removes_drains_and_evicts_a_less_urgent_tier_first():
    queue = FairQueue()
    urgent = _Item(0, _Ev("a"))
    low = [_Item(2, _Ev("b")), _Item(2, _Ev("b"))]
    other = _Item(2, _Ev("c"))
    for item in (urgent, *low, other):
        queue.push(item)
    assert queue.victim(_Item(0, _Ev("a")), lambda _: True) is low[-1]  # the busiest device's newest
    assert queue.victim(_Item(0, _Ev("a")), lambda i: i is not low[-1]) is low[0]
    assert queue.victim(_Item(0, _Ev("a")), lambda i: i is other) is other
    assert queue.victim(_Item(0, _Ev("a")), lambda _: False) is None
    assert queue.victim(_Item(3, _Ev("z")), lambda _: True) is None  # nothing less urgent than tier 3
    assert queue.remove(low[0]) and not queue.remove(low[0]) and queue.count("b") == 1 and len(queue) == 3
    assert not queue.remove(_Item(5, _Ev("b"))) and not queue.remove(_Item(2, _Ev("q")))
    assert queue.remove(low[1]) and queue.remove(other) and list(queue) == [urgent]
    queue.push(low[0])
    assert queue.drain() == [urgent, low[0]] and len(queue) == 0 and queue.pop() is None
    assert queue.count("a") == 0 and list(queue) == []
    queue.push(other)
    assert queue.pop() is other and queue.pop() is None


# -- single flight: look-alikes by embedding wait too --------------------------------------------------------
def test_a_look_alike_by_embedding_only_waits_for_the_first_flight():
    async def scenario():
        flights = SingleFlight()
        face = make_embedding(1)
        assert flights.take_off("e1", BUCKET, PHASH, 8, face) is None
        # the hash is 64 bits away: only the embedding (the same look) says it is the same thing
        assert flights.take_off("e2", BUCKET, flip(PHASH, 64), 8, face) == "e1"
        assert flights.take_off("e3", BUCKET, flip(PHASH, 64), 8, make_embedding(2)) is None  # someone else

    asyncio.run(scenario())


def test_a_look_alike_by_embedding_waits_for_another_process_s_flight(redis_prefix):  # noqa: F811
    async def scenario():
        one = SingleFlight(connect_redis(REDIS_URL), redis_prefix)
        two = SingleFlight(connect_redis(REDIS_URL), redis_prefix)
        face = make_embedding(1)
        assert one.take_off("e1", BUCKET, PHASH, 8, face) is None
        assert two.take_off("e2", BUCKET, flip(PHASH, 64), 8, face) == "e1"
        one.land("e1")

    asyncio.run(scenario())


# -- single flight, in one process and across two ------------------------------------------------------------
def test_a_withdrawn_try_wakes_its_waiters_and_a_landing_is_told_once():
    async def scenario():
        flights = SingleFlight()
        assert flights.take_off("a", BUCKET, PHASH, 8) is None
        waiter = asyncio.ensure_future(flights.wait("a", BUCKET, 10.0))
        await asyncio.sleep(0)  # the waiter holds the flight it waits for
        assert flights.take_off("a", BUCKET, flip(PHASH, 30), 8) is None  # "a" tries again: filed anew
        await asyncio.wait_for(waiter, 5.0)
        assert flights.waited == 1
        flights.land("a")
        flights.land("a")  # twice, or an unknown id: nothing
        flights.land("nobody")
        await flights.wait("gone", BUCKET, 10.0)  # not in flight (and no Redis): no waiting at all
        assert flights.waited == 2
        assert flights.take_off("b", BUCKET, PHASH, 8) is None
        started = time.monotonic()
        await flights.wait("b", BUCKET, 0.0)  # a waiter never waits past its own deadline
        assert time.monotonic() - started < 5.0

    asyncio.run(scenario())


def test_flights_across_processes_end_at_their_deadline_or_landing(redis_prefix):  # noqa: F811
    from edgetriage.cloud.reuse.singleflight import open_flights
    from edgetriage.cloud.storage.redis_store import RedisStore

    client = connect_redis(REDIS_URL)

    async def scenario():
        one = SingleFlight(client, redis_prefix, 60.0)
        two = SingleFlight(client, redis_prefix, 60.0)
        assert one.take_off("a", BUCKET, PHASH, 8, make_embedding(1), 0.99) is None
        key = one._key(BUCKET)
        assert key.startswith(f"{redis_prefix}:flights:") and one._key(BUCKET[:3] + ("other",)) != key
        seq, phash, max_distance, deadline, min_similarity, _ = client.hget(key, "a").decode().split("|")
        assert (phash, max_distance, float(min_similarity)) == (PHASH, "8", 0.99)
        assert abs(int(deadline) - (time.time() * 1000 + 60_000)) < 5000
        assert two.take_off("b", BUCKET, flip(PHASH, 40), 8, make_embedding(1)) == "a"
        assert client.hget(key, "b") is None  # a waiter is not left filed
        waiter = asyncio.ensure_future(two.wait("a", BUCKET, 30.0))
        await asyncio.sleep(0)
        assert not waiter.done()
        one.land("a")
        await asyncio.wait_for(waiter, 10.0)
        assert client.hget(key, "a") is None and two.waited == 1
        assert two.polls >= 1 and one.polls == 0  # round trips only by a process that waits for another's flight
        # a flight whose deadline has passed (its worker died) is waited for by nobody
        client.hset(key, "dead", f"1|{PHASH}|8|{int(time.time() * 1000) - 1}")
        assert two.take_off("c", BUCKET, PHASH, 8) is None
        await asyncio.wait_for(two.wait("dead", BUCKET, 30.0), 10.0)
        two.land("c")

    asyncio.run(scenario())
    assert open_flights(RedisStore(client, redis_prefix), 30.0)._redis is client
    local = open_flights(object(), 30.0)
    assert local._redis is None and local._lease_ms == 30_000


@pytest.mark.parametrize("lease_s", [None, 0.5, 2.5])
def test_a_flight_is_waited_for_to_its_deadline_s_last_millisecond(monkeypatch, lease_s):
    """A flight whose worker died is given up at its deadline (the scheduler's deadline_s), in this process as
    in Redis: to the millisecond, a fraction of a second included (a 0.5 s deadline was once a flight of 0 s)."""
    from edgetriage.cloud.reuse import singleflight as singleflight_module

    now = [1_000_000]
    monkeypatch.setattr(singleflight_module, "now_ms", lambda: now[0])

    async def scenario():
        flights = SingleFlight() if lease_s is None else SingleFlight(lease_s=lease_s)  # default: 10 minutes
        assert flights.take_off("a", BUCKET, PHASH, 8) is None
        now[0] += int((lease_s or 600) * 1000)
        assert flights.take_off("b", BUCKET, flip(PHASH, 8), 8) == "a"  # its last millisecond: still waited for
        now[0] += 1
        assert flights.take_off("c", BUCKET, flip(PHASH, 8), 8) is None  # past it: a model call of its own

    asyncio.run(scenario())


def test_a_flight_in_redis_is_waited_for_to_its_deadline_s_last_millisecond(monkeypatch, redis_prefix):  # noqa: F811
    from edgetriage.cloud.reuse import singleflight as singleflight_module

    now = [1_000_000]
    monkeypatch.setattr(singleflight_module, "now_ms", lambda: now[0])
    client = connect_redis(REDIS_URL)

    async def scenario():
        one, two = SingleFlight(client, redis_prefix, 0.5), SingleFlight(client, redis_prefix, 0.5)
        assert one.take_off("a", BUCKET, PHASH, 8) is None
        now[0] += 500
        assert two.take_off("b", BUCKET, flip(PHASH, 8), 8) == "a"  # another process's flight, last millisecond
        now[0] += 1
        assert two.take_off("c", BUCKET, flip(PHASH, 8), 8) is None  # its worker died: not waited for
        one.land("a")
        two.land("c")

    asyncio.run(scenario())


def test_a_look_alike_finds_its_flight_among_several_in_redis(redis_prefix):  # noqa: F811
    client = connect_redis(REDIS_URL)

    async def scenario():
        one, two = SingleFlight(client, redis_prefix), SingleFlight(client, redis_prefix)
        assert one.take_off("far", BUCKET, flip(PHASH, 40), 8) is None
        assert one.take_off("near", BUCKET, PHASH, 8) is None  # 40 bits from "far": a flight of its own
        assert one.take_off("other", BUCKET, flip(PHASH, 20), 8) is None
        assert two.take_off("b", BUCKET, flip(PHASH, 2), 8) == "near"  # four listed, it waits for its look-alike
        for flight in ("far", "near", "other"):
            one.land(flight)

    asyncio.run(scenario())


def test_a_waiter_never_waits_past_its_own_deadline(redis_prefix):  # noqa: F811
    client = connect_redis(REDIS_URL)

    async def scenario():
        one, two = SingleFlight(client, redis_prefix), SingleFlight(client, redis_prefix)
        assert one.take_off("a", BUCKET, PHASH, 8) is None
        for flights in (one, two):  # the flight's own process (its future), another process (the poller)
            waiter = asyncio.ensure_future(flights.wait("a", BUCKET, 0.0))  # its deadline has come
            for _ in range(20):  # a few turns of the event loop, not the poller's round nor a second
                await asyncio.sleep(0)
            assert waiter.done()
        one.land("a")

    asyncio.run(scenario())


def test_flight_lists_keep_their_names_under_the_store_s_prefix(redis_prefix):  # noqa: F811
    """Every key single flight writes is under the store's prefix (deployments share a Redis; `delete_all`
    removes them), and a bucket's list keeps its name, so workers of two versions share flights during an
    upgrade. Without a prefix given, the store's default one."""
    from edgetriage.cloud.storage.redis_store import RedisStore

    client = connect_redis(REDIS_URL)
    assert SingleFlight(client)._key(BUCKET) == "edgetriage:flights:e58cb815bddb71f72897e6ff"
    assert RedisStore(client).prefix == "edgetriage"

    async def scenario():
        one, two = SingleFlight(client, redis_prefix), SingleFlight(client, redis_prefix)
        assert one._key(BUCKET) == f"{redis_prefix}:flights:e58cb815bddb71f72897e6ff"
        assert one.take_off("a", BUCKET, PHASH, 8, make_embedding(1)) is None
        assert two.take_off("b", BUCKET, PHASH, 8) == "a"
        keys = {k.decode() for k in client.scan_iter(match=f"*{redis_prefix}*")}
        assert keys and all(k.startswith(f"{redis_prefix}:flights:") for k in keys), keys
        one.land("a")

    asyncio.run(scenario())
    RedisStore(client, redis_prefix).delete_all()
    assert list(client.scan_iter(match=f"*{redis_prefix}*")) == []


# -- the cloud's verdict cache ------------------------------------------------------------------------------
def _model_verdict(cache: VerdictCache, event: Event) -> Verdict:
    analysis = Analysis(verdict="alert", confidence=0.9, description="a person", model="m",
                        prompt_version="person-3", analyze_ms=1.0)
    return cache.from_model(event, analysis, "person-3", "m", time.monotonic(), time.monotonic())


def test_camera_scoped_reuse_answers_events_that_carry_a_site(tmp_path):
    db = SQLiteStore(tmp_path / "cloud.db")
    cache = VerdictCache(db, ReusePolicy(scope="camera"))
    first = make_event(site="home")
    db.put_event(first, first.captured_ms)
    db.put_verdict(_model_verdict(cache, first))
    again = make_event(site="home")
    hit = cache.answer(again, "person-3", time.monotonic())
    assert hit is not None and hit.reused_from == first.event_id and hit.source == "cloud_cache"
    assert cache.answer(make_event("house", "garden", site="home"), "person-3", time.monotonic()) is None
    db.close()


def test_a_reused_verdict_expires_with_the_model_answer_it_came_from(tmp_path):
    cache = VerdictCache(SQLiteStore(tmp_path / "cloud.db"), ReusePolicy(ttl_s=3600))
    event = make_event()
    made = int(time.time() * 1000) - 3590_000  # the model answered 3590 s ago, with a rule of an hour
    rule = ReuseRule(scope="camera", device="house", camera="porch", label="person", phash=PHASH, max_distance=8,
                     prompt_version="person-3", ttl_s=3600)
    hit = Verdict(event_id=uuid7(made), device="house", camera="porch", label="person", verdict="alert",
                  confidence=0.9, description="a person", model="m", source="llm", created_ms=made, cache=rule)
    copy = cache.reused(event, hit, time.monotonic())
    assert copy.cache is not None and 8 <= copy.cache.ttl_s <= 10
    assert copy.created_ms + copy.cache.ttl_s * 1000 <= made + 3600_000
    # the copy of a copy: no longer than the first answer either
    again = cache.reused(make_event(), copy, time.monotonic())
    assert again.cache is not None and again.created_ms + again.cache.ttl_s * 1000 <= made + 3600_000
    old = hit.model_copy(update={"created_ms": made - 11_000})  # under a second left: no rule at all
    assert cache.reused(event, old, time.monotonic()).cache is None
    assert isinstance(copy.cache.ttl_s, int)
    now = int(time.time() * 1000)  # a rule lives whole seconds: 1.5 s left is 1 s, 0.7 s left is none
    last = hit.model_copy(update={"created_ms": now - 3600_000 + 1500})
    assert cache.reused(event, last, time.monotonic()).cache.ttl_s == 1
    gone = hit.model_copy(update={"created_ms": now - 3600_000 + 700})
    assert cache.reused(event, gone, time.monotonic()).cache is None
    ten_min = hit.model_copy(update={"created_ms": now - 3600_000 + 600_300})  # 600.3 s left: 600 whole seconds
    assert cache.reused(event, ten_min, time.monotonic()).cache.ttl_s == 600


def test_a_verdict_s_timings_are_milliseconds_from_arrival_start_and_end(tmp_path):
    cache = VerdictCache(SQLiteStore(tmp_path / "cloud.db"), ReusePolicy())
    now = time.monotonic()
    arrived, started = now - 100.0, now - 50.0  # queued 50 s, then 50 s with the model
    timed = cache.from_model(make_event(), _analysis(analyze_ms=0.0), "person-4", "m", arrived, started)
    assert timed.timings.queue_ms == pytest.approx(50_000.0, abs=1.0)
    assert 50_000.0 <= timed.timings.analyze_ms < 50_040.0  # the model's own time not said: measured here
    assert 100_000.0 <= timed.timings.total_ms < 100_040.0
    said = cache.from_model(make_event(), _analysis(analyze_ms=0.5), "person-4", "m", arrived, started)
    assert said.timings.analyze_ms == 0.5  # the back-end's own figure, however small, is kept
    copy = cache.reused(make_event(), timed, now - 100.0)
    assert 100_000.0 <= copy.timings.total_ms < 100_040.0  # a cache hit: from its arrival to now


def test_a_site_offer_goes_to_the_site_s_other_devices_only():
    policy = ReusePolicy(scope="site")
    rule = ReuseRule(scope="site", device="house", camera="porch", site="home", label="person", phash=PHASH,
                     max_distance=8, prompt_version="person-3", ttl_s=3600)
    verdict = Verdict(event_id=uuid7(), device="house", camera="porch", label="person", verdict="alert",
                      confidence=0.9, description="a person", model="m", source="llm", created_ms=1, cache=rule)
    offers = site_offers(policy, ["house", "shed", "garage"], verdict)
    assert [o.device for o in offers] == ["shed", "garage"]
    assert all(o.reused_from == verdict.event_id and o.description == "" for o in offers)


# -- the cloud's verdicts, field by field (what a device and a reader rely on) ---------------------------------
def _analysis(**fields) -> Analysis:
    base = {"verdict": "alert", "confidence": 0.9, "description": "a person", "model": "m",
            "prompt_version": "person-4", "analyze_ms": 12.0}
    return Analysis(**{**base, **fields})


def test_a_model_verdict_carries_the_policy_s_rule_and_the_analysis_fields(tmp_path):
    from edgetriage.shared.policycell import PolicyInputs

    policy = ReusePolicy(scope="camera", max_distance=5, min_similarity=0.98, ttl_s=120)
    cache = VerdictCache(SQLiteStore(tmp_path / "cloud.db"), policy)
    event = make_event(site="home", embedding=make_embedding(1))
    arrived = time.monotonic() - 0.5
    inputs = PolicyInputs()
    verdict = cache.from_model(event, _analysis(model_verdict="benign", checked="c" * 250, corrected=("colour",),
                                                facts=tuple(f"fact {n} " + "x" * 250 for n in range(14)),
                                                policy="p" * 350, clause="k" * 250, policy_inputs=inputs),
                               "person-3", "fallback-name", arrived, arrived + 0.2)
    assert (verdict.event_id, verdict.device, verdict.camera, verdict.label) == (
        event.event_id, "house", "porch", "person")
    assert (verdict.verdict, verdict.confidence, verdict.description, verdict.model, verdict.source) == (
        "alert", 0.9, "a person", "m", "llm")
    assert verdict.model_verdict == "benign" and verdict.corrected == ["colour"] and verdict.decided_by == "check"
    assert verdict.checked == "c" * 200 and verdict.policy == "p" * 300 and verdict.clause == "k" * 200
    assert len(verdict.facts) == 12 and all(len(f) == 200 for f in verdict.facts) and verdict.facts[0][:6] == "fact 0"
    rule = verdict.cache
    assert (rule.scope, rule.device, rule.camera, rule.site, rule.label, rule.phash, rule.phash_alg) == (
        "camera", "house", "porch", "home", "person", PHASH, "dct64")
    assert (rule.max_distance, rule.min_similarity, rule.ttl_s, rule.prompt_version) == (5, 0.98, 120, "person-4")
    assert rule.embedding == event.embedding and rule.policy_inputs == inputs
    assert verdict.timings.analyze_ms == 12.0 and 199 <= verdict.timings.queue_ms <= 201
    assert verdict.timings.total_ms >= 500 and abs(verdict.created_ms - time.time() * 1000) < 5000
    plain = cache.from_model(event, _analysis(prompt_version="", model="", analyze_ms=0.0), "person-3",
                             "fallback-name", arrived, arrived)
    assert plain.cache.prompt_version == "person-3" and plain.model == "fallback-name"
    assert plain.cache.policy_inputs is None and plain.timings.analyze_ms > 0 and plain.decided_by == "model"
    assert cache.from_model(event, _analysis(checked="why"), "p", "m", arrived, arrived).decided_by == "check"
    assert cache.from_model(event, _analysis(decided_by="policy"), "p", "m", arrived, arrived).decided_by == "policy"
    long = cache.from_model(event, _analysis(description="d" * 400, model="n" * 200), "p", "m", arrived, arrived)
    assert len(long.description) == 300 and long.model == "n" * 128


@pytest.mark.parametrize(("fields", "description"), [
    ({"verdict": "maybe"}, "no model verdict: analyzer answered 'maybe', not one of alert, benign, unknown"),
    ({"verdict": "alert", "error": "boom"}, "no model verdict: boom"),
    ({"verdict": "maybe", "error": "boom"}, "no model verdict: boom"),
])
def test_a_fallback_says_why_and_files_no_rule(tmp_path, fields, description):
    cache = VerdictCache(SQLiteStore(tmp_path / "cloud.db"), ReusePolicy())
    from edgetriage.shared.policycell import PolicyInputs

    analysis = _analysis(**fields, policy_inputs=PolicyInputs())
    verdict = cache.from_model(make_event(), analysis, "p", "m", time.monotonic(), time.monotonic())
    assert verdict.description == description and verdict.source == "fallback"
    assert verdict.cache is None and verdict.decided_by is None
    assert verdict.verdict == ("unknown" if fields["verdict"] == "maybe" else "alert")


@pytest.mark.parametrize(("said", "published"), [(float("nan"), 0.0), (float("inf"), 0.0), (1.5, 1.0),
                                                  (-0.5, 0.0), (0.25, 0.25), (1.0, 1.0), (0.0, 0.0)])
def test_a_model_confidence_is_published_between_0_and_1(tmp_path, said, published):
    cache = VerdictCache(SQLiteStore(tmp_path / "cloud.db"), ReusePolicy())
    verdict = cache.from_model(make_event(), _analysis(confidence=said), "p", "m", time.monotonic(), time.monotonic())
    assert verdict.confidence == published


def _stored(cache: VerdictCache, event: Event, **fields) -> Verdict:
    verdict = _model_verdict(cache, event).model_copy(update=fields)
    cache.store.put_event(event, event.captured_ms)
    cache.store.put_verdict(verdict)
    return verdict


def test_a_cache_hit_is_a_copy_for_the_new_event_and_another_device_sees_only_the_answer(tmp_path):
    cache = VerdictCache(SQLiteStore(tmp_path / "cloud.db"), ReusePolicy(scope="site", ttl_s=600))
    face = make_embedding(7)
    first = make_event(site="home", embedding=face)
    seen = _model_verdict(cache, first).cache.model_copy(update={"person_seen": True})  # the cloud saw a person
    original = _model_verdict(cache, first).model_copy(update={
        "facts": ["Person: yes."], "checked": "why", "corrected": ["colour"], "description": "a person at the door",
        "cache": seen})
    cache.store.put_event(first, first.captured_ms)
    cache.store.put_verdict(original)
    near = make_event(site="home", phash=flip(PHASH, 3))
    arrived = time.monotonic() - 0.25
    hit = cache.answer(near, "person-3", arrived)
    assert (hit.event_id, hit.device, hit.camera, hit.label, hit.source) == (
        near.event_id, "house", "porch", "person", "cloud_cache")
    assert hit.reused_from == first.event_id and hit.verdict == original.verdict
    assert hit.description == "a person at the door" and hit.facts == ["Person: yes."]  # the same device
    assert hit.reused_by.key == "hash" and hit.reused_by.distance == 3 and hit.reused_by.threshold == 8
    assert hit.cache.phash == near.phash and hit.cache.prompt_version == "person-3" and hit.cache.ttl_s <= 600
    assert abs(hit.created_ms - time.time() * 1000) < 5000 and 250 <= hit.timings.total_ms < 60_000
    # another device: the hash alone answers nothing (issue 40); the hash and the cloud's embedding do
    assert cache.answer(make_event("shed", "cam2", site="home"), "person-3", arrived) is None
    other = cache.answer(make_event("shed", "cam2", site="home", embedding=face), "person-3", arrived)
    assert (other.device, other.camera) == ("shed", "cam2") and other.reused_from == first.event_id
    assert (other.description, other.facts, other.checked, other.corrected) == ("", [], None, [])
    chained = cache.reused(make_event(site="home"), hit, arrived)
    assert chained.reused_from == first.event_id  # a copy of a copy names the model's answer
    bare = cache.reused(make_event(), original.model_copy(update={"cache": None}), arrived)
    assert bare.cache is None and bare.reused_by is None
    assert cache.lookup(make_event(site="home", phash=flip(PHASH, 20)), "person-3") is None
    assert cache.lookup(near, "person-4") is None  # another prompt


@pytest.mark.parametrize("why_not", ["off", "fallback", "camera", "no-rule", "no-site"])
def test_only_a_model_verdict_with_a_site_rule_is_offered(why_not):
    rule = ReuseRule(scope="camera" if why_not == "camera" else "site", device="house", camera="porch",
                     site=None if why_not == "no-site" else "home", label="person", phash=PHASH, max_distance=8,
                     prompt_version="person-3", ttl_s=3600)
    verdict = Verdict(event_id=uuid7(), device="house", camera="porch", label="person", verdict="alert",
                      confidence=0.9, description="a person", model="m", created_ms=1,
                      source="fallback" if why_not == "fallback" else "llm",
                      cache=None if why_not == "no-rule" else rule)
    policy = ReusePolicy(scope="site", offer_site=why_not != "off")
    assert site_offers(policy, ["house", "shed"], verdict) == []
    offer = site_offers(ReusePolicy(scope="site"), ["shed"], verdict.model_copy(
        update={"source": "llm", "cache": rule.model_copy(update={"scope": "site", "site": "home"}),
                "facts": ["Person: yes."], "timings": type(verdict.timings)(queue_ms=5.0, analyze_ms=900.0,
                                                                            total_ms=905.0)}))[0]
    assert (offer.device, offer.source, offer.facts, offer.event_id) == ("shed", "cloud_cache", [], verdict.event_id)
    assert offer.timings.model_dump() == type(offer.timings)().model_dump()


def test_reuse_checks_ask_the_model_about_a_share_of_hits_and_count_what_it_says(caplog):
    from edgetriage.cloud.reuse.verdicts import ReuseChecks
    from edgetriage.cloud.scheduling.outcome import Outcome, Released

    answers: list = []
    spawned: list = []

    async def ask(event):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    stats = ServiceStats()
    checks = ReuseChecks(ReusePolicy(verify_sample=0.5), stats, ask, spawned.append)
    event = make_event()
    reused = Verdict(event_id=event.event_id, device="house", camera="porch", label="person", verdict="alert",
                     confidence=0.9, description="", model="m", created_ms=1)
    for _ in range(4):
        checks.sample(event, reused)
    assert len(spawned) == 2  # every second hit
    for coro in spawned:
        coro.close()
    outcomes = [Outcome(_analysis(verdict="benign"), 0.0, 0.0), Outcome(_analysis(), 0.0, 0.0),
                Outcome(_analysis(verdict="unknown"), 0.0, 0.0),
                Outcome(_analysis(error="boom"), 0.0, 0.0), Outcome(_analysis(), 0.0, 0.0, refused="budget"),
                Outcome(None, 0.0, 0.0), Released()]
    answers.extend(outcomes)
    with caplog.at_level("INFO", logger="edgetriage.cloud.service"):
        for _ in outcomes:
            asyncio.run(checks._check(event, reused))
    assert (stats.reuse_checked, stats.reuse_disagreed, stats.reuse_unchecked) == (3, 2, 3)
    said = [r for r in caplog.records if r.name == "edgetriage.cloud.service"]
    assert [r.getMessage() for r in said] == ["reuse check: the model says benign where the cache said alert",
                                              "reuse check: the model says unknown where the cache said alert"]
    assert (said[0].event_id, said[0].device, said[0].camera) == (event.event_id, "house", "porch")
    never = ReuseChecks(ReusePolicy(verify_sample=0.0), stats, ask, spawned.append)
    never.sample(event, reused)
    assert len(spawned) == 2
    every = ReuseChecks(ReusePolicy(verify_sample=1.0), stats, ask, lambda coro: (spawned.append(coro), coro.close()))
    every.sample(event, reused)
    assert len(spawned) == 3


# -- takeover ----------------------------------------------------------------------------------------------
def _orphan(tmp_path) -> tuple[SQLiteStore, Event]:
    db = SQLiteStore(tmp_path / "cloud.db")
    event = make_event()
    db.put_event(event, event.captured_ms)
    dead = SQLiteClaims(tmp_path / "claims.db", "dead-worker")
    assert dead.acquire(event.event_id, 60)
    dead.abandon(event.event_id)  # the worker died: its claim is listed as expired at once
    dead.close()
    return db, event


async def _three_rounds(takeover: TakeOver, rounds: list) -> None:
    """Run the takeover loop until it has asked for room three times (each round sees the orphans), then stop it."""
    task = asyncio.create_task(takeover.run())
    deadline = time.monotonic() + 10
    while len(rounds) < 3 and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def _takeover(db, keeper, *, busy, spawned, rounds=None) -> TakeOver:
    def room() -> int:
        if rounds is not None:
            rounds.append(1)
        return 4

    return TakeOver(keeper, db, ServiceStats(), Throttled(logging.getLogger("test")), room=room, busy=busy,
                    answer=lambda event: asyncio.sleep(0), spawn=lambda coro: (spawned.append(coro), coro.close()))


@pytest.mark.parametrize("busy", [True, False])
def test_an_event_this_process_is_answering_is_not_taken_over_again(tmp_path, busy):
    db, event = _orphan(tmp_path)
    keeper = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 0.03)
    spawned: list = []
    rounds: list = []
    takeover = _takeover(db, keeper, busy=lambda eid: busy, spawned=spawned, rounds=rounds)

    asyncio.run(_three_rounds(takeover, rounds))
    assert len(rounds) >= 3
    if busy:
        assert spawned == [] and takeover.stats.taken_over == 0
    else:
        assert len(spawned) == 1 and takeover.stats.taken_over == 1 and keeper.held == {event.event_id}
    db.close()


def test_a_lost_claim_race_leaves_the_event_to_the_winner(tmp_path):
    db, event = _orphan(tmp_path)
    mine = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 60)
    theirs = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "them"), 60)
    assert theirs.take(event.event_id)  # the other worker was quicker
    spawned: list = []
    takeover = _takeover(db, mine, busy=lambda eid: False, spawned=spawned)
    takeover.take(event.event_id)
    assert spawned == [] and takeover.stats.taken_over == 0 and mine.held == set()
    db.close()


class _SimTime:
    """The takeover loop's clock and sleep: time moves only when the loop sleeps, so its renewals and rounds are
    read on its own account, with no waiting (the loop's `time` and `asyncio` are swapped for this)."""

    CancelledError = asyncio.CancelledError

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


@pytest.mark.parametrize(("lease_s", "renewals", "rounds"), [
    (60.0, [1000.0, 1020.0, 1040.0], 1.0),  # a long lease: renewed every 20 s, orphans looked for every second
    (0.3, [1000.0, 1000.1, 1000.2], 0.1),  # a short one: both every third of it
])
def test_takeover_renews_every_third_of_a_lease_and_looks_for_orphans_every_second_at_most(
        tmp_path, monkeypatch, lease_s, renewals, rounds):
    from edgetriage.cloud.broker import takeover as takeover_module

    sim = _SimTime()
    monkeypatch.setattr(takeover_module, "time", sim)
    monkeypatch.setattr(takeover_module, "asyncio", sim)
    db, _ = _orphan(tmp_path)
    keeper = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), lease_s)
    renewed: list[float] = []
    looked: list[float] = []
    keeper.renew = lambda: renewed.append(sim.now) or []
    takeover = TakeOver(keeper, db, ServiceStats(), Throttled(logging.getLogger("test")),
                        room=lambda: looked.append(sim.now) or 0, busy=lambda eid: False,
                        answer=lambda event: asyncio.sleep(0), spawn=lambda coro: coro.close())

    async def scenario():
        task = asyncio.create_task(takeover.run())
        while len(renewed) < 3 and not task.done():  # a loop that died is a failure, not a wait
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert renewed == pytest.approx(renewals)  # a live worker's claims never come near running out
    gaps = [b - a for a, b in zip(looked, looked[1:], strict=False)]
    assert gaps and gaps == pytest.approx([rounds] * len(gaps))  # room for an orphan is used within a round
    db.close()


def test_taking_up_an_event_is_logged_under_the_service_s_logger(tmp_path, caplog):
    db, event = _orphan(tmp_path)
    keeper = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 60)
    takeover = _takeover(db, keeper, busy=lambda eid: False, spawned=[])
    with caplog.at_level(logging.DEBUG, logger="edgetriage.cloud.service"):  # what a user's logging config names
        takeover.take(event.event_id)
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("edgetriage.cloud.service", f"taking up event {event.event_id}: its claim ran out, or it waited for room")]
    db.close()


@pytest.mark.parametrize("room", [0, 1])
def test_one_free_place_in_the_queue_takes_up_one_orphan(tmp_path, room):
    db, event = _orphan(tmp_path)
    keeper = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 0.03)
    spawned: list = []
    rounds: list = []
    asked: list[int] = []
    orphans = keeper.orphans
    keeper.orphans = lambda limit=100: asked.append(limit) or orphans(limit)
    takeover = TakeOver(keeper, db, ServiceStats(), Throttled(logging.getLogger("test")),
                        room=lambda: rounds.append(1) or room, busy=lambda eid: False,
                        answer=lambda event: asyncio.sleep(0), spawn=lambda coro: (spawned.append(coro), coro.close()))

    asyncio.run(_three_rounds(takeover, rounds))
    assert len(rounds) >= 3 and len(spawned) == room and takeover.stats.taken_over == room
    assert set(asked) == ({1} if room else set())  # a full queue does not even ask the claim store
    db.close()


def test_every_event_taken_up_is_counted(tmp_path):
    db, first = _orphan(tmp_path)
    second = make_event()
    db.put_event(second, second.captured_ms)
    keeper = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 60)
    spawned: list = []
    takeover = _takeover(db, keeper, busy=lambda eid: False, spawned=spawned)
    for event in (first, second):
        takeover.take(event.event_id)
    assert takeover.stats.taken_over == 2 and len(spawned) == 2 and keeper.held == {first.event_id, second.event_id}
    db.close()


def test_a_failed_renewal_is_said_and_the_next_round_renews_again(tmp_path, monkeypatch, caplog):
    from edgetriage.cloud.broker import takeover as takeover_module

    sim = _SimTime()
    monkeypatch.setattr(takeover_module, "time", sim)
    monkeypatch.setattr(takeover_module, "asyncio", sim)
    db, _ = _orphan(tmp_path)
    keeper = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 3.0)
    renewed: list[float] = []

    def renew() -> list[str]:
        renewed.append(sim.now)
        if len(renewed) == 1:
            raise OSError("the claim store is away")
        return []

    keeper.renew = renew
    takeover = TakeOver(keeper, db, ServiceStats(), Throttled(logging.getLogger("test"), 0.0), room=lambda: 0,
                        busy=lambda eid: False, answer=lambda event: asyncio.sleep(0), spawn=lambda coro: coro.close())

    async def scenario():
        task = asyncio.create_task(takeover.run())
        while len(renewed) < 4 and sim.now < 1100 and not task.done():
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with caplog.at_level("WARNING", logger="test"):
        asyncio.run(scenario())
    # failed at 1000, waited a third of the lease (and a round), then renewed every third of it again
    assert renewed == pytest.approx([1000.0, 1002.0, 1003.0, 1004.0])
    assert [r.getMessage() for r in caplog.records] == [
        "renewing or taking over claims failed (the claim store is away); retrying in 1 s"]
    db.close()


# -- takeover, store_verdict, retake, settle --------------------------------------------------------------
def test_takeover_forgets_what_it_cannot_or_need_not_answer(tmp_path):
    db, event = _orphan(tmp_path)
    spawned: list = []
    keeper = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 60)
    takeover = _takeover(db, keeper, busy=lambda eid: False, spawned=spawned)
    db.put_verdict(Verdict(event_id=event.event_id, device="house", camera="porch", label="person",
                           verdict="alert", confidence=0.9, description="", model="m", created_ms=1))
    takeover.take(event.event_id)  # answered already: the claim was only never released
    assert spawned == [] and keeper.claims.expired() == [] and keeper.held == set()
    for _ in range(2):  # an event the store no longer has (retention)
        gone = uuid7()
        assert keeper.claims.acquire(gone, 60)
        keeper.claims.abandon(gone)
        takeover.take(gone)
    assert spawned == [] and keeper.claims.expired() == []
    db.close()


def test_a_taken_over_event_is_rebuilt_from_the_store_and_answered(tmp_path, caplog):
    from edgetriage.cloud.scheduling.outcome import Released

    db, event = _orphan(tmp_path)
    keeper = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 60)
    answered: list[Event] = []
    failures = [None, Released(), RuntimeError("disk full")]

    async def answer(ev: Event):
        answered.append(ev)
        failure = failures.pop(0)
        if failure is not None:
            raise failure

    tasks: list = []
    takeover = TakeOver(keeper, db, ServiceStats(), Throttled(logging.getLogger("test"), 0.0), room=lambda: 1,
                        busy=lambda eid: False, answer=answer, spawn=tasks.append)
    takeover.take(event.event_id)
    assert takeover.stats.taken_over == 1 and keeper.held == {event.event_id} and len(tasks) == 1
    with caplog.at_level("WARNING", logger="test"):
        asyncio.run(tasks[0])
        for _ in range(2):
            asyncio.run(takeover._answer_taken_over(event))
    assert answered[0].event_id == event.event_id and answered[0].crop == event.crop
    assert answered[0].model_dump() == event.model_dump()
    assert [r.getMessage() for r in caplog.records] == [
        f"could not answer event {event.event_id} taken over from the store: disk full"]
    db.close()


def test_takeover_renews_leases_and_says_so_when_the_store_fails(tmp_path, caplog):
    db, event = _orphan(tmp_path)
    claims = SQLiteClaims(tmp_path / "claims.db", "me")
    keeper = ClaimKeeper(claims, 0.03)
    assert keeper.take("mine")
    spawned: list = []
    rounds: list = []
    takeover = _takeover(db, keeper, busy=lambda eid: False, spawned=spawned, rounds=rounds)

    async def run_until(n: int) -> None:
        task = asyncio.create_task(takeover.run())
        deadline = time.monotonic() + 10
        while len(rounds) < n and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run_until(3))
    assert claims.holds("mine") and claims.expired() == [] or "mine" not in claims.expired()
    claims.close()  # the store goes away: renewing fails, said once per round, and the loop goes on
    with caplog.at_level("WARNING", logger="test"):
        takeover._warn = Throttled(logging.getLogger("test"), 0.0)
        asyncio.run(asyncio.wait_for(_until_warned(takeover, caplog), 10))
    assert caplog.records[0].getMessage().startswith("renewing or taking over claims failed (")
    assert caplog.records[0].getMessage().endswith("; retrying in 0 s")
    db.close()


async def _until_warned(takeover: TakeOver, caplog) -> None:
    task = asyncio.create_task(takeover.run())
    while not caplog.records:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0)
    assert not task.done()  # a failure does not end the loop
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_claim_that_ran_out_is_taken_again_and_the_verdict_stored_meanwhile_wins(tmp_path):
    from edgetriage.cloud.broker.takeover import retake, store_verdict

    db = SQLiteStore(tmp_path / "cloud.db")
    mine = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "me"), 60)
    theirs = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "them"), 60)
    stats = ServiceStats()
    event = make_event()
    before = int(time.time() * 1000)
    assert retake(mine, db, event, stats) and stats.claims_retaken == 1 and mine.was_retaken(event.event_id)
    stored = db.get_event(event.event_id)  # stored again (a store that lost its data lost it too), received now
    assert stored is not None and before <= stored["received_ms"] <= int(time.time() * 1000)
    ours = Verdict(event_id=event.event_id, device="house", camera="porch", label="person", verdict="alert",
                   confidence=0.9, description="ours", model="m", created_ms=2)
    earlier = ours.model_copy(update={"description": "theirs", "verdict": "benign"})
    db.put_verdict(earlier)
    assert store_verdict(mine, db, ours).description == "theirs"  # an event gets one verdict
    assert db.get_verdict(event.event_id).description == "theirs"
    other = make_event()
    assert theirs.take(other.event_id) and not retake(mine, db, other, stats) and stats.claims_retaken == 1
    assert retake(mine, db, make_event(), stats) and stats.claims_retaken == 2  # each one counted
    plain = ClaimKeeper(SQLiteClaims(tmp_path / "claims.db", "plain"), 60)
    third = make_event()
    db.put_event(third, third.captured_ms)
    db.put_verdict(earlier.model_copy(update={"event_id": third.event_id}))
    mine_third = ours.model_copy(update={"event_id": third.event_id})
    assert store_verdict(plain, db, mine_third) is mine_third  # not retaken: ours is stored, no lookup
    assert db.get_verdict(third.event_id).description == "ours"
    db.close()


def test_settling_lands_the_flight_and_releases_or_ends_the_claim(tmp_path, caplog):
    from edgetriage.cloud.broker.takeover import settle

    async def scenario() -> None:
        flights = SingleFlight()
        claims = SQLiteClaims(tmp_path / "claims.db", "me")
        keeper = ClaimKeeper(claims, 60)
        warn = Throttled(logging.getLogger("test"), 0.0)
        for eid, stored in (("done", True), ("failed", False)):
            assert keeper.take(eid) and flights.take_off(eid, BUCKET, PHASH, 8) is None
            waiter = asyncio.ensure_future(flights.wait(eid, BUCKET, 10.0))
            settle(flights, keeper, eid, stored, warn)
            await asyncio.wait_for(waiter, 5.0)
            assert eid not in keeper.held and not claims.holds(eid) if stored else claims.expired() == ["failed"]
        assert keeper.held == set() and claims.expired() == ["failed"]
        assert keeper.take("away")
        claims.close()  # the store is away: the claim is let go here, its lease runs out on its own
        with caplog.at_level("WARNING", logger="test"):
            settle(flights, keeper, "away", True, warn)
        assert keeper.held == set()
        assert caplog.records[-1].getMessage().startswith("could not end the claim on away: ")

    asyncio.run(scenario())


def test_settling_with_the_flight_list_away_says_so_and_still_releases_the_claim(tmp_path, caplog):
    from brokers import RedisServer
    from edgetriage.cloud.broker.takeover import settle

    claims = SQLiteClaims(tmp_path / "claims.db", "me")
    keeper = ClaimKeeper(claims, 60)

    async def scenario():
        with RedisServer(tmp_path / "redis") as server:  # a Redis of the test's own, stopped under the flight
            flights = SingleFlight(connect_redis(server.url), "t")
            assert keeper.take("e") and flights.take_off("e", BUCKET, PHASH, 8) is None
            waiter = asyncio.ensure_future(flights.wait("e", BUCKET, 30.0))
            await asyncio.sleep(0)
        with caplog.at_level("WARNING", logger="test"):
            settle(flights, keeper, "e", True, Throttled(logging.getLogger("test"), 0.0))
        await asyncio.wait_for(waiter, 5.0)  # this process's waiters are told all the same

    asyncio.run(scenario())
    assert [r.getMessage().split(": ")[0] for r in caplog.records] == ["could not end the single flight of e"]
    assert keeper.held == set() and not claims.holds("e") and claims.expired() == []
    claims.close()


# -- auth --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(scheme):
    auth = ApiAuth("the-token", {"house": "house-token"})
    assert auth.principal(f"{scheme} the-token").is_operator
    assert auth.principal(f"{scheme} house-token").device == "house"
    assert auth.principal(f"{scheme} other") is None and auth.principal("Basic the-token") is None


# -- SQLite claims: SQL strings mutmut does not plant ------------------------------------------------------
@pytest.fixture
def clock(monkeypatch) -> list[int]:
    now = [1_000_000]
    monkeypatch.setattr(claims_module, "now_ms", lambda: now[0])
    return now


def test_a_claim_holds_to_its_lease_s_last_millisecond(tmp_path, clock):
    a, b = SQLiteClaims(tmp_path / "claims.db", "a"), SQLiteClaims(tmp_path / "claims.db", "b")
    assert a.acquire("e1", 1.0)  # expires at 1_001_000, inclusive
    clock[0] = 1_001_000
    assert not b.acquire("e1", 60) and a.holds("e1") and b.expired() == []
    b.forget("e1")
    assert a.holds("e1")
    clock[0] = 1_001_001
    assert b.expired() == ["e1"] and b.acquire("e1", 60) and b.holds("e1")
    a.close()
    b.close()


def test_expired_claims_are_listed_oldest_first(tmp_path, clock):
    a = SQLiteClaims(tmp_path / "claims.db", "a")
    for n, eid in enumerate(("e3", "e1", "e2")):  # expiries 1_001_000, 1_002_000, 1_003_000
        clock[0] = 1_000_000 + n * 1000
        assert a.acquire(eid, 1.0)
    clock[0] = 2_000_000
    assert a.expired() == ["e3", "e1", "e2"] and a.expired(limit=1) == ["e3"]
    a.close()


def test_removing_one_device_s_last_item_leaves_its_site_s_other_devices_queued():
    queue = FairQueue()
    mine, theirs = _Item(1, _Ev("a", "home")), _Item(1, _Ev("b", "home"))
    queue.push(mine)
    queue.push(theirs)
    assert queue.remove(mine) and list(queue) == [theirs] and len(queue) == 1
    assert queue.pop() is theirs and queue.pop() is None
    queue.push(mine)
    assert queue.remove(mine) and list(queue) == [] and queue.pop() is None  # nothing empty left behind
    queue.push(theirs)
    assert queue.pop() is theirs


def test_a_claim_is_held_per_event_and_owner(tmp_path):
    a, b = SQLiteClaims(tmp_path / "claims.db", "a"), SQLiteClaims(tmp_path / "claims.db", "b")
    assert a.acquire("e1", 60) and b.acquire("e2", 60)
    assert a.holds("e1") and not a.holds("e2") and b.holds("e2") and not b.holds("e1")
    assert not a.holds("e3") and not b.holds("e3")
    a.close()
    b.close()
