"""Single flight: an event whose verdict a model call already under way would give waits for that call.

Before the service sends an event to the model it joins a flight list for the event's reuse bucket (scope
key, label, hash algorithm, prompt version: shared.reuse.bucket). Joining files the event with a sequence
number and returns what is in the list; if an earlier flight's rule would reach this crop
(shared.reuse.nearest, the same test a stored verdict passes) the event leaves the list again and waits
for that flight to land (its verdict stored, so the cache answers). Of any two look-alikes the later one
always sees the earlier (both file before they read), so one of them goes ahead and the other waits, with
no lock around the model call: look-alikes wait, everything else goes straight on.

Within one process a landing wakes its waiters at once (a future). Across processes the list lives in
Redis (`<prefix>:flights:<bucket>`, a hash of event id -> "seq|phash|max_distance|deadline_ms", then
"|min_similarity|embedding in base64" for an event with an appearance embedding), and one poller per
process looks every POLL_S, in one round trip, whether the flights its waiters wait for are still listed:
the waiters of one flight share one future. (A poll per waiter was the first thing a thousand devices broke:
hundreds of look-alikes waiting out a slow model call made tens of thousands of blocking Redis reads a
second on the event loop, and cache hits, acknowledgements and the health probe waited behind them.) A
flight whose worker died stays listed until its deadline (the scheduler's deadline_s); a waiter never waits
past its own event's deadline either way.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from ...shared.clock import now_ms
from ...shared.reuse import DEFAULT_MIN_SIMILARITY, Candidate, nearest

POLL_S = 0.05

# KEYS: flights:<bucket>, flights:seq   ARGV: event id, phash|max_distance|deadline_ms
_JOIN = """
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], seq .. '|' .. ARGV[2])
return {seq, redis.call('HGETALL', KEYS[1])}
"""

Bucket = tuple[str, str, str, str]


@dataclass
class _Local:
    seq: int
    bucket: Bucket
    candidate: Candidate
    landed: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class SingleFlight:
    """The flights of one service process, shared with other processes through Redis when given a client."""

    def __init__(self, redis: Any | None = None, prefix: str = "edgetriage", lease_s: float = 600.0) -> None:
        self._redis = redis
        self._prefix = prefix
        self._lease_ms = int(lease_s * 1000)
        self._join = redis.register_script(_JOIN) if redis is not None else None
        self._seq = 0
        self._local: dict[str, _Local] = {}
        self._remote: dict[tuple[str, str], asyncio.Future] = {}  # (list key, flight) -> landed, shared by its waiters
        self._poller: asyncio.Task | None = None
        self.polls = 0  # round trips the poller made: one per POLL_S while anything waits, however many wait
        self.waited = 0  # events that waited for a look-alike's model call instead of starting one

    def _key(self, bucket: Bucket) -> str:
        digest = hashlib.blake2b("\x00".join(bucket).encode(), digest_size=12).hexdigest()
        return f"{self._prefix}:flights:{digest}"

    def take_off(self, event_id: str, bucket: Bucket, phash: str, max_distance: int, embedding: bytes | None = None,
                 min_similarity: float = DEFAULT_MIN_SIMILARITY) -> str | None:
        """File this event's model call; None when it may go ahead, else the id of an earlier look-alike's
        flight to wait for (`wait`), in which case this one is not left filed."""
        self.land(event_id)  # filed before (a withdrawn try): whoever waits for it looks again
        now = now_ms()
        self._seq += 1
        lease_s = self._lease_ms / 1000  # to the millisecond, as in Redis (a deadline may be 0.5 s)
        mine = _Local(
            self._seq, bucket, Candidate(event_id, phash, max_distance, now, lease_s, embedding, min_similarity)
        )
        earlier = [f.candidate for f in self._local.values() if f.bucket == bucket and f.seq < mine.seq]
        ahead = nearest(earlier, phash, now, embedding=embedding)
        if ahead is not None:
            return ahead.ref
        self._local[event_id] = mine
        if self._join is None:
            return None
        looks = "" if embedding is None else f"|{min_similarity!r}|{base64.b64encode(embedding).decode()}"
        seq, flat = self._join(keys=[self._key(bucket), f"{self._prefix}:flights:seq"],
                               args=[event_id, f"{phash}|{max_distance}|{now + self._lease_ms}{looks}"])
        shared = []
        for other, raw in zip(flat[::2], flat[1::2], strict=True):
            other_seq, other_phash, other_max, deadline, *seen = (
                raw.decode() if isinstance(raw, bytes) else raw
            ).split("|")
            if int(other_seq) < int(seq) and int(deadline) >= now:
                ref = other.decode() if isinstance(other, bytes) else other
                shared.append(Candidate(ref, other_phash, int(other_max), now, lease_s,
                                        base64.b64decode(seen[1]) if seen else None,
                                        float(seen[0]) if seen else DEFAULT_MIN_SIMILARITY))
        ahead = nearest(shared, phash, now, embedding=embedding)
        if ahead is None:
            return None
        self.land(event_id)
        return ahead.ref

    async def wait(self, flight: str, bucket: Bucket, timeout_s: float) -> None:
        """Until the flight `flight` lands (or is given up, or `timeout_s` passes)."""
        self.waited += 1
        local = self._local.get(flight)
        if local is not None:
            await asyncio.wait([local.landed], timeout=max(0.0, timeout_s))
            return
        if self._redis is None:
            return
        watched = (self._key(bucket), flight)
        landed = self._remote.get(watched)
        if landed is None:
            landed = self._remote[watched] = asyncio.get_running_loop().create_future()
            if self._poller is None or self._poller.done():
                self._poller = asyncio.get_running_loop().create_task(self._poll())
        await asyncio.wait([landed], timeout=max(0.0, timeout_s))
        if landed.done() and landed.exception() is not None:
            raise landed.exception()  # the store failed: the waiter's event takes the store-error path

    async def _poll(self) -> None:
        """While anything waits for another process's flight: every POLL_S, one pipelined read of all of them;
        a flight no longer listed (landed, given up) or past its deadline wakes its waiters."""
        while self._remote:
            await asyncio.sleep(POLL_S)
            watched = list(self._remote.items())
            pipe = self._redis.pipeline(transaction=False)
            for (key, flight), _ in watched:
                pipe.hget(key, flight)
            try:
                raws = pipe.execute()
            except Exception as exc:  # noqa: BLE001 - every waiter hears of it, as each did from its own read
                for watch, landed in watched:
                    self._remote.pop(watch, None)
                    if not landed.done():
                        landed.set_exception(exc)
                return
            self.polls += 1
            now = now_ms()
            for (watch, landed), raw in zip(watched, raws, strict=True):
                if raw is None or int((raw.decode() if isinstance(raw, bytes) else raw).split("|")[3]) < now:
                    self._remote.pop(watch, None)
                    if not landed.done():
                        landed.set_result(None)

    def land(self, event_id: str) -> None:
        """The event's verdict is stored (or it was given up): wake whoever waits for it."""
        local = self._local.pop(event_id, None)
        if local is None:
            return
        if not local.landed.done():
            local.landed.set_result(None)
        if self._redis is not None:
            self._redis.hdel(self._key(local.bucket), event_id)


def open_flights(store: object, lease_s: float) -> SingleFlight:
    """Flights shared through Redis when the store is in Redis (several workers), else this process's own."""
    from ..storage.redis_store import RedisStore

    if isinstance(store, RedisStore):
        return SingleFlight(store.client, store.prefix, lease_s)
    return SingleFlight(None, lease_s=lease_s)
