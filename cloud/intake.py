"""The MQTT intake, and the store calls of one event-loop turn made as one (cache lookups, cache-hit writes).

`MQTTIntake`: paho's network thread only queues each message for the event loop, waking it once for all that
arrived meanwhile (one wake-up per batch, not per message); there every message is answered as a task of its own (the service's `_answer`) and acknowledged to the broker once its claim or its
verdict is stored, never before; a message that cannot be accepted is counted, logged (throttled) and
acknowledged, so it is not redelivered; one that could not be answered stays unacknowledged.

`TurnBatch`: a burst of cache hits arrives as many tasks that become ready in the same turn of the event loop.
Their store calls are queued, and the first of a turn schedules one call for all of them on the next turn:
the service looks all of a turn's events up in the verdict cache at once (`Store.lookup_many`: one Redis
round trip, not one per event), and stores all of a turn's hits at once (`Store.put_answered_many`: one SQLite
transaction or one Redis pipeline). Each hit has its event and verdict stored before its verdict is published
(nothing a device was told may be missing after a crash); a failed write fails every hit of that batch, none
of which was published or acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

from ..shared.mqtt import Incoming, MQTTLink
from ..shared.protocol import ProtocolError, Verdict
from .scheduler import Released
from .servicestats import ServiceStats, Throttled
from .storage.store import StoreError

log = logging.getLogger("edgetriage.cloud.service")
T = TypeVar("T")
R = TypeVar("R")

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
        self._lock = threading.Lock()  # guards the two below, shared by paho's thread and the loop
        self._arrived: list[tuple[Incoming, float]] = []
        self._woken = False  # a drain is scheduled on the loop and will see what is queued now

    def open(self, loop: asyncio.AbstractEventLoop, link: MQTTLink) -> None:
        self._loop, self._link = loop, link

    def close(self) -> None:
        self._link = None

    def from_network(self, msg: Incoming) -> None:
        """paho's thread: queue it, and wake the loop unless a wake-up is already on its way."""
        loop = self._loop
        if loop is None:
            return
        with self._lock:
            self._arrived.append((msg, time.monotonic()))
            if self._woken:
                return
            self._woken = True
        try:
            loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is closed: left unacknowledged, so it is redelivered
            pass

    def _drain(self) -> None:
        with self._lock:
            arrived, self._arrived = self._arrived, []
            self._woken = False
        link = self._link
        if link is None:  # stopping: unacknowledged, redelivered to the next session
            return
        for msg, at in arrived:
            self._track(self._consume(link, msg, at))

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


class TurnBatch(Generic[T, R]):
    """The calls of one event-loop turn gathered into one call of `many` (a list in, one answer each out) on
    the next turn. A failure of `many` fails every call of that batch."""

    def __init__(self, many: Callable[[list[T]], list[R]]) -> None:
        self._many = many
        self._queued: list[tuple[T, asyncio.Future[R]]] = []
        self.batches = 0
        self.calls = 0

    async def __call__(self, item: T) -> R:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[R] = loop.create_future()
        if not self._queued:
            loop.call_soon(self._flush)
        self._queued.append((item, done))
        return await done

    def _flush(self) -> None:
        batch, self._queued = self._queued, []
        try:
            answers = self._many([item for item, _ in batch])
        except Exception as exc:  # noqa: BLE001 - handed to every waiter, each says it once
            for _, done in batch:
                if not done.done():
                    done.set_exception(exc)
            return
        self.batches += 1
        self.calls += len(batch)
        for (_, done), answer in zip(batch, answers, strict=True):
            if not done.done():
                done.set_result(answer)
