"""The MQTT intake, and the cache-hit writes of one event-loop turn stored in one commit.

`MQTTIntake`: paho's network thread only hands each message to the event loop; there every message is
answered as a task of its own (the service's `_answer`) and acknowledged to the broker once its claim or its
verdict is stored, never before; a message that cannot be accepted is counted, logged (throttled) and
acknowledged, so it is not redelivered; one that could not be answered stays unacknowledged.

`HitWriter`: a burst of cache hits arrives as many tasks that become ready in the same turn of the event loop. Each hit
must have its event and verdict stored before its verdict is published (nothing a device was told may be
missing after a crash), but they need not be stored one commit each: `HitWriter.put` queues the pair and
the first one of a turn schedules a flush for the next turn, which writes everything queued in one
transaction (SQLite) or one pipeline (Redis) via the store's `put_answered_many`. Every waiting hit then
publishes. A failed write fails every hit of that batch, none of which was published or acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ..shared.mqtt import Incoming, MQTTLink
from ..shared.protocol import Event, ProtocolError, Verdict
from .scheduler import Released
from .servicestats import ServiceStats, Throttled
from .storage.store import StoreError

log = logging.getLogger("edgetriage.cloud.service")

# (payload, topic, arrived, on_claimed) -> (verdict, published): the service's one answering path
Answer = Callable[[bytes, str, float, Callable[[], None]], Awaitable[tuple[Verdict | None, bool]]]


class MQTTIntake:
    """Messages from `link` to `answer`, one task each (`track` runs it where `stop` drains it). Accepts
    messages between `open` and `close`; a message arriving after `close` stays unacknowledged, so the broker
    redelivers it to the next session."""

    def __init__(self, answer: Answer, track: Callable[[Coroutine[Any, Any, None]], None], stats: ServiceStats,
                 warn: Throttled) -> None:
        self._answer = answer
        self._track = track
        self.stats = stats
        self._warn = warn
        self._loop: asyncio.AbstractEventLoop | None = None
        self._link: MQTTLink | None = None

    def open(self, loop: asyncio.AbstractEventLoop, link: MQTTLink) -> None:
        self._loop, self._link = loop, link

    def close(self) -> None:
        self._link = None

    def from_network(self, msg: Incoming) -> None:
        """paho's thread: hand over, nothing else."""
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._dispatch, msg, time.monotonic())
        except RuntimeError:  # the loop is closed: left unacknowledged, so it is redelivered
            pass

    def _dispatch(self, msg: Incoming, arrived: float) -> None:
        if self._link is not None:  # else stopping: unacknowledged, redelivered to the next session
            self._track(self._consume(self._link, msg, arrived))

    async def _consume(self, link: MQTTLink, msg: Incoming, arrived: float) -> None:
        acked = False

        def ack() -> None:  # once per message: the claim or the verdict is stored, the broker may forget it
            nonlocal acked
            if not acked:
                acked = True
                link.ack(msg.mid, generation=msg.generation)

        try:
            _, published = await self._answer(msg.payload, msg.topic, arrived, ack)
        except ProtocolError as exc:
            self.stats.reject(exc.code)
            self._warn.warning("rejected a message on %s: %s", msg.topic, exc.reason)
            published = True  # nothing to answer; acknowledge so it is not redelivered
        except Released:  # stopping before the model got to it: left for the broker or the next worker
            return
        except StoreError as exc:  # e.g. its disk is full: one line; unacknowledged (or claimed), so not lost
            self._warn.warning("%s", exc)
            return
        except Exception:  # noqa: BLE001 - keep serving, leave it unacknowledged
            log.exception("could not answer the message on %s; it stays unacknowledged or claimed", msg.topic)
            return
        if published:
            ack()


class HitWriter:
    """Batches `put_answered` calls of one loop turn; falls back to one call each for a store without
    `put_answered_many`."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._queued: list[tuple[Event, int, Verdict, asyncio.Future[bool]]] = []
        self.batches = 0
        self.written = 0

    async def put(self, event: Event, received_ms: int, verdict: Verdict) -> bool:
        """True once the event and its verdict are stored; False (nothing stored) for a repeated event id."""
        many = getattr(self.store, "put_answered_many", None)
        if many is None:
            return self.store.put_answered(event, received_ms, verdict)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bool] = loop.create_future()
        if not self._queued:
            loop.call_soon(self._flush)
        self._queued.append((event, received_ms, verdict, done))
        return await done

    def _flush(self) -> None:
        batch, self._queued = self._queued, []
        try:
            stored = self.store.put_answered_many([(e, r, v) for e, r, v, _ in batch])
        except Exception as exc:  # noqa: BLE001 - handed to every waiter, each says it once
            for *_, done in batch:
                if not done.done():
                    done.set_exception(exc)
            return
        self.batches += 1
        self.written += len(batch)
        for (*_, done), ok in zip(batch, stored, strict=True):
            if not done.done():
                done.set_result(ok)
