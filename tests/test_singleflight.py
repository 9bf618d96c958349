"""Single flight: a look-alike waits for the model call already under way, in one process and across two
(real Redis, a key prefix of its own, deleted after); crops the rule would not join go straight on."""

from __future__ import annotations

import asyncio
import time
import uuid

from edgetriage.cloud.reuse.singleflight import POLL_S, SingleFlight
from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis

REDIS_URL = "redis://127.0.0.1:6379/0"
BUCKET = ("site:shop", "person", "dct64", "p1")
HASH = "0f0f0f0f0f0f0f0f"


def _flip(phash: str, bits: int) -> str:
    return f"{int(phash, 16) ^ ((1 << bits) - 1):016x}"


def test_a_look_alike_waits_for_the_flight_in_this_process():
    async def run() -> None:
        flights = SingleFlight()
        assert flights.take_off("a", BUCKET, HASH, 8) is None
        assert flights.take_off("b", BUCKET, _flip(HASH, 8), 8) == "a"  # 8 bits: within the rule
        assert flights.take_off("c", BUCKET, _flip(HASH, 9), 8) is None  # 9 bits: its own model call
        assert flights.take_off("d", ("site:shop", "car", "dct64", "p1"), HASH, 8) is None  # another bucket
        waiter = asyncio.ensure_future(flights.wait("a", BUCKET, 5.0))
        await asyncio.sleep(0.05)
        assert not waiter.done()
        flights.land("a")
        await asyncio.wait_for(waiter, 1.0)
        assert flights.take_off("e", BUCKET, HASH, 8) is None  # "a" landed: nothing ahead any more

    asyncio.run(run())


def test_two_workers_share_flights_through_redis_and_only_look_alikes_wait():
    prefix = f"test-flight-{uuid.uuid4().hex[:8]}"
    client = connect_redis(REDIS_URL)

    async def run() -> None:
        one, two = SingleFlight(client, prefix, 30.0), SingleFlight(client, prefix, 30.0)
        assert one.take_off("a", BUCKET, HASH, 8) is None
        assert two.take_off("b", BUCKET, _flip(HASH, 3), 8) == "a"
        assert two.take_off("c", BUCKET, _flip(HASH, 20), 8) is None  # not a look-alike: no waiting
        # "b" waits and is not left filed: a third look-alike waits for "a", not for "b"
        assert one.take_off("d", BUCKET, _flip(HASH, 3), 8) == "a"
        started = time.monotonic()
        waiter = asyncio.ensure_future(two.wait("a", BUCKET, 5.0))
        await asyncio.sleep(0.2)
        assert not waiter.done()
        one.land("a")
        await asyncio.wait_for(waiter, 1.0)
        assert time.monotonic() - started < 1.0
        two.land("c")
        # a flight whose worker died is given up at its deadline, not waited for forever
        dead = SingleFlight(client, prefix, 0.2)
        assert dead.take_off("x", BUCKET, HASH, 8) is None
        assert two.take_off("y", BUCKET, HASH, 8) == "x"
        started = time.monotonic()
        await two.wait("x", BUCKET, 5.0)
        assert time.monotonic() - started < 1.5

    try:
        asyncio.run(run())
    finally:
        RedisStore(client, prefix).delete_all()


def test_a_thousand_waiters_on_another_workers_flight_cost_one_read_per_poll(tmp_path):
    """Look-alikes waiting out another worker's slow model call share one poll: Redis sees one read per
    POLL_S, not one per waiter (a poll each made 1,000 devices' waiters flood the event loop with blocking
    reads). A Redis of the test's own, so its command counts are this test's alone."""
    from brokers import RedisServer

    with RedisServer(tmp_path / "redis") as server:
        client = connect_redis(server.url)

        def hgets() -> int:
            stats = client.info("commandstats").get("cmdstat_hget", {})
            return int(stats.get("calls", 0))

        async def run() -> None:
            one, two = SingleFlight(client, "t", 30.0), SingleFlight(client, "t", 30.0)
            assert one.take_off("a", BUCKET, HASH, 8) is None
            waiters = [asyncio.ensure_future(two.wait("a", BUCKET, 10.0)) for _ in range(1000)]
            await asyncio.sleep(0.1)
            before = hgets()
            await asyncio.sleep(0.5)
            reads = hgets() - before
            assert reads <= 0.5 / POLL_S + 2, f"{reads} reads in 0.5 s for one flight"
            assert not any(w.done() for w in waiters)
            started = time.monotonic()
            one.land("a")
            await asyncio.wait_for(asyncio.gather(*waiters), 2.0)
            assert time.monotonic() - started < 1.0
            assert two.polls == hgets() and one.polls == 0  # `polls` counts the round trips, one each

        asyncio.run(run())
        client.close()


def test_a_waiter_hears_at_once_when_redis_fails_under_the_poller(tmp_path):
    """Redis going away while look-alikes wait for another worker's flight: every waiter gets the error (its
    event takes the store-error path) at the next poll, none waits out its deadline in silence."""
    import pytest
    import redis
    from brokers import RedisServer

    with RedisServer(tmp_path / "redis") as server:
        client = connect_redis(server.url)

        async def run() -> None:
            one, two = SingleFlight(client, "t", 30.0), SingleFlight(client, "t", 30.0)
            assert one.take_off("a", BUCKET, HASH, 8) is None
            waiters = [asyncio.ensure_future(two.wait("a", BUCKET, 30.0)) for _ in range(3)]
            while two.polls == 0:  # the poller is polling
                await asyncio.sleep(POLL_S)
            server.kill()
            for waiter in waiters:
                with pytest.raises(redis.exceptions.ConnectionError):
                    await asyncio.wait_for(waiter, 10.0)

        asyncio.run(run())
        client.close()


def test_the_poller_waits_for_another_worker_s_flight_to_its_deadline_s_last_millisecond(monkeypatch):
    from edgetriage.cloud.reuse import singleflight as singleflight_module

    now = [1_000_000]
    monkeypatch.setattr(singleflight_module, "now_ms", lambda: now[0])
    prefix = f"test-flight-{uuid.uuid4().hex[:8]}"
    client = connect_redis(REDIS_URL)

    async def run() -> None:
        one, two = SingleFlight(client, prefix, 0.5), SingleFlight(client, prefix, 0.5)
        assert one.take_off("a", BUCKET, HASH, 8) is None  # listed until 1_000_500, inclusive
        now[0] = 1_000_500
        waiter = asyncio.ensure_future(two.wait("a", BUCKET, 30.0))
        while two.polls < 2:  # two polls in the flight's last millisecond
            await asyncio.sleep(POLL_S)
        assert not waiter.done()
        now[0] += 1  # past it: its worker died, the waiter goes on
        await asyncio.wait_for(waiter, 10.0)
        one.land("a")

    try:
        asyncio.run(run())
    finally:
        RedisStore(client, prefix).delete_all()
