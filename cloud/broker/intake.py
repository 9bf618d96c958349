"""The MQTT intake, and the cache hits of one event-loop turn answered together.

`MQTTIntake`: paho's network thread only queues each message for the event loop, waking it once for all that
arrived meanwhile (one wake-up per batch, not per message). There the batch is answered as one: every message
decoded and validated once on the intake's own thread (a flood of crafted MessagePack costs that thread, not the
loop), in turns by device (`fair`), the cache hits among them answered at once (`CacheHits`), and only the others
(events the model must answer, repeats, events another worker holds) become a task each (the service's
`answer_rest`). A message is acknowledged to the broker once its claim or its verdict is stored, never before;
one that cannot be accepted is counted, logged (throttled) and acknowledged, so it is not redelivered.

Outages heal: a message whose answer fails (the store or the broker away) is tried again a few times over
some seconds (RETRY_DELAYS_S); then it is released. Unacknowledged, it is left to the broker, and `heal` makes
the connection again as soon as the store answers: the broker then sends every unacknowledged message of the
session again, and the unacknowledged ones no longer hold the session's receive maximum (MQTT has no
negative acknowledgement; a message never acknowledged would hold its place in that window for good, and
the broker, not this process, is where a message is kept safe). Acknowledged already (its claim was stored
before the failure), the event is kept here and answered again by `heal` once the store answers: the claim
in the store may be gone with the store's data, and this process holds the only copy.

`CacheHits`: a burst of cache hits arrives as many messages in one turn of the event loop. Their lookups are
one store call (`Store.lookup_many`: one Redis round trip, one SQLite index range per bucket) and their writes
another (`Store.put_answered_many`: one SQLite transaction or one Redis pipeline), with no task or future per
hit. Each hit's event and verdict are stored before its verdict is published (nothing a device was told may
be missing after a crash); a hit is decided before anything is written and takes no claim. A failed lookup
or write leaves the whole turn to the one-at-a-time path, with nothing of it published or acknowledged.
`TurnBatch` gathers the calls of callers that each answer one event (the HTTP intake) into one such call.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ...shared.clock import now_ms
from ...shared.mqtt import Incoming, MQTTLink
from ...shared.protocol import Event, ProtocolError, Verdict, decode_event, encode_verdict
from ..counts.pressure import EventPressure
from ..counts.servicestats import ServiceStats, Throttled
from ..reuse.verdicts import VerdictCache
from ..scheduling.outcome import Released
from .health import IntakeHealth, store_outage

log = logging.getLogger("edgetriage.cloud.service")
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Arrival:
    """An accepted event and its two clocks."""

    event: Event
    received_ms: int  # when it was received, by the wall clock (stored with it)
    arrived: float  # when it arrived, by the monotonic clock (deadlines and latencies count from it)


Answered = tuple[Verdict, bool]  # a verdict given, and whether it was published

RETRY_DELAYS_S = (0.25, 0.5, 1.0, 2.0, 4.0)  # a failed answer is tried again after each; then it is released
HEAL_POLL_S = 0.5  # how often the store is asked whether it answers again while anything waits for it
PROBE_EVERY_S = 2.0  # how often it is asked otherwise (health says the store is away within this)
MAX_PARKED = 10_000  # acknowledged events kept here for another try; beyond that the oldest is dropped (logged)
MAX_FAILED_DELIVERIES = 3  # a message that fails on anything but an outage this often is a bug: acknowledged, logged


def fair(arrived: list[tuple[Incoming, T]]) -> list[tuple[Incoming, T]]:
    """A batch in turns by topic (device): one device's flood does not stand in front of every other's event."""
    by_topic: dict[str, list[tuple[Incoming, T]]] = {}
    for item in arrived:
        by_topic.setdefault(item[0].topic, []).append(item)
    if len(by_topic) < 2:
        return arrived
    return [item for turn in itertools.zip_longest(*by_topic.values()) for item in turn if item is not None]


def _decode_all(payloads: list[bytes]) -> list[Event | Exception]:
    """Each payload decoded and validated (shared.protocol.decode_event, with its size limits), or why not."""
    out: list[Event | Exception] = []
    for payload in payloads:
        try:
            out.append(decode_event(payload))
        except Exception as exc:  # noqa: BLE001 - handed back to the loop, which answers it
            out.append(exc)
    return out


class Answering(Protocol):
    """The service as the intake sees it."""

    def accept(self, message: bytes | Event, topic: str) -> Event:
        """The event, decoded and validated once (counted as received); raises ProtocolError."""

    def answer_hits(self, arrivals: list[Arrival]) -> list[Answered | None]:
        """The cache hits among these events answered (`CacheHits`); None for each that needs `answer_rest`."""

    async def answer_rest(self, arrival: Arrival, on_claimed: Callable[[], None]) -> tuple[Verdict | None, bool]:
        """(verdict, published) for an event the cache did not answer; `on_claimed` once its claim is stored."""


class MQTTIntake:
    """Messages from `link` to `service`, a turn's cache hits at once and a task for each other message (`track`
    runs it where `stop` drains it). Accepts messages between `open` and `close`; a message arriving after
    `close` stays unacknowledged, so the broker redelivers it to the next session."""

    def __init__(self, service: Answering, track: Callable[[Coroutine[Any, Any, None]], None], stats: ServiceStats,
                 warn: Throttled, health: IntakeHealth, lookup: Callable[[str], Any],
                 pressure: EventPressure | None = None) -> None:
        self._service = service
        self._track = track
        self.stats = stats
        self._warn = warn
        self.health = health
        self._lookup = lookup  # a trivial store call: does the store answer? (IntakeHealth.probe)
        self._release_wanted = False  # messages were released: make the connection again once the store answers
        self._parked: dict[str, Arrival] = {}  # acknowledged events whose answer failed, tried again by `heal`
        self._failed: dict[str, int] = {}  # event id -> deliveries that failed on a bug (not an outage)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._link: MQTTLink | None = None
        self._lock = threading.Lock()  # guards the two below, shared by paho's thread and the loop
        self._arrived: list[tuple[Incoming, float]] = []
        self._woken = False  # a drain is scheduled on the loop and will see what is queued now
        self._decoding = ThreadPoolExecutor(max_workers=1, thread_name_prefix="event-decode")
        self.pressure = pressure or EventPressure()  # events worked on now: questions give way (cloud.counts.pressure)

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
        """Everything that arrived since the last turn, handed to `_take_in` (decoded off the loop)."""
        with self._lock:
            arrived, self._arrived = self._arrived, []
            self._woken = False
        link = self._link
        if link is None:  # stopping: unacknowledged, redelivered to the next session
            return
        self._track(self._take_in(link, fair(arrived)))

    async def _take_in(self, link: MQTTLink, arrived: list[tuple[Incoming, float]]) -> None:
        """The batch decoded on the intake's own thread (a flood of crafted MessagePack costs that thread, not
        the loop every other event waits on), then: its cache hits answered and acknowledged, the rest handed
        on as a task each."""
        self.pressure.enter(len(arrived))
        handed = 0  # messages whose own task says when it is done
        try:
            handed = await self._answer_turn(link, arrived)
        finally:
            self.pressure.leave(len(arrived) - handed)

    async def _answer_turn(self, link: MQTTLink, arrived: list[tuple[Incoming, float]]) -> int:
        """`_take_in`'s work; how many messages were handed on as a task each."""
        loop = asyncio.get_running_loop()
        decoded = await loop.run_in_executor(self._decoding, _decode_all, [msg.payload for msg, _ in arrived])
        received_ms = now_ms()
        accepted: list[tuple[Incoming, Arrival]] = []
        for (msg, at), event in zip(arrived, decoded, strict=True):
            try:
                if isinstance(event, Exception):
                    self.stats.received += 1
                    raise event
                accepted.append((msg, Arrival(self._service.accept(event, msg.topic), received_ms, at)))
            except ProtocolError as exc:
                self._rejected(msg, exc)
                link.ack(msg.mid, generation=msg.generation)
            except Exception:  # noqa: BLE001 - keep serving the others; this one is released
                log.exception("could not accept the message on %s; it is released for redelivery", msg.topic)
                self._release()
        self.health.taken_in(len(accepted))
        answers = self._hits([arrival for _, arrival in accepted])
        handed = 0
        for (msg, arrival), answer in zip(accepted, answers, strict=True):
            if answer is None:
                self._track(self._consume(link, msg, arrival))
                handed += 1
                continue
            if answer[1]:
                link.ack(msg.mid, generation=msg.generation)
            self.health.done()  # not published (no broker): the redelivery on reconnecting republishes it
        return handed

    def _hits(self, arrivals: list[Arrival]) -> list[Answered | None]:
        """The turn's cache hits; on a failed lookup or write none (nothing was published or acknowledged):
        every event then takes the one-at-a-time path, which stores or leaves it unacknowledged on its own."""
        try:
            return self._service.answer_hits(arrivals)
        except Exception as exc:  # noqa: BLE001 - keep serving; the events go the one-at-a-time way
            if not store_outage(exc):
                log.exception("could not answer %d event(s) from the cache together", len(arrivals))
            else:
                self.health.store_failed(exc)
                self._warn.warning("the store failed (%s); each event is tried on its own", exc)
        return [None] * len(arrivals)

    def _rejected(self, msg: Incoming, exc: ProtocolError) -> None:
        """Nothing to answer: counted and logged; the caller acknowledges it, so it is not redelivered."""
        self.stats.reject(exc.code)
        self._warn.warning("rejected a message on %s: %s", msg.topic, exc.reason)

    async def _consume(self, link: MQTTLink, msg: Incoming, arrival: Arrival) -> None:
        acked = False

        def ack() -> None:  # once per message: the claim or the verdict is stored, the broker may forget it
            nonlocal acked
            if not acked:
                acked = True
                link.ack(msg.mid, generation=msg.generation)

        try:
            answered = await self._answer(arrival, ack)
        finally:
            self.health.done()
            self.pressure.leave()
        if answered is None and self._poison(arrival.event.event_id):  # a bug, not an outage: never redelivered again
            ack()
        elif answered is None:  # given up for now: left to the broker, or kept here when acknowledged already
            if acked or not link.manual_ack:  # (MQTT 3.1.1: paho acknowledged it on receipt)
                self._park(arrival)
            else:
                self._release()
        elif answered:
            ack()

    async def _answer(self, arrival: Arrival, ack: Callable[[], None]) -> bool | None:
        """Whether the verdict was published (True also for a message answered by being refused); None when
        answering failed after RETRY_DELAYS_S: the caller releases it. False: left as it is (Released: stopping,
        or stored and claimed to wait for room in the queue)."""
        for delay in (*RETRY_DELAYS_S, None):
            try:
                _, published = await self._service.answer_rest(arrival, ack)
                return published
            except ProtocolError as exc:  # e.g. its event id is another device's
                self._rejected_event(arrival.event, exc)
                return True
            except Released:  # stopping before the model got to it: left for the broker or the next worker
                return False
            except Exception as exc:  # noqa: BLE001 - a store or broker error: tried again, then released
                if store_outage(exc):
                    self.health.store_failed(exc)
                    self._warn.warning("could not answer event %s (%s); %s", arrival.event.event_id, exc,
                                       f"trying again in {delay:g} s" if delay is not None else "releasing it")
                else:
                    log.exception("could not answer event %s; %s", arrival.event.event_id,
                                  "trying again" if delay is not None else "releasing it")
                    if delay is None:
                        self._failed[arrival.event.event_id] = self._failed.get(arrival.event.event_id, 0) + 1
            if delay is None:
                return None
            self.stats.retried += 1
            await asyncio.sleep(delay)
        return None

    def _poison(self, event_id: str) -> bool:
        """True once an event has failed MAX_FAILED_DELIVERIES deliveries on a bug: given up (counted as
        rejected, "internal"), so one bad message cannot cycle through the broker for ever."""
        if self._failed.get(event_id, 0) < MAX_FAILED_DELIVERIES:
            if len(self._failed) > MAX_PARKED:
                self._failed.clear()
            return False
        del self._failed[event_id]
        self.stats.reject("internal")
        log.error("gave up on event %s after %d failed deliveries (see the errors above); it is acknowledged",
                  event_id, MAX_FAILED_DELIVERIES)
        return True

    def _rejected_event(self, event: Event, exc: ProtocolError) -> None:
        self.stats.reject(exc.code)
        self._warn.warning("rejected event %s of %s: %s", event.event_id, event.device, exc.reason)

    def _release(self) -> None:
        """Leave an unacknowledged message to the broker: `heal` makes the connection again once the store
        answers, and the broker sends it again."""
        self.stats.released += 1
        self._release_wanted = True

    def _park(self, arrival: Arrival) -> None:
        """Keep an acknowledged event whose answer failed: `heal` answers it again once the store answers."""
        self.stats.released += 1
        if len(self._parked) >= MAX_PARKED:
            dropped = next(iter(self._parked))
            del self._parked[dropped]
            log.error("more than %d events wait for the store; event %s is dropped (the device's re-send brings "
                      "it back)", MAX_PARKED, dropped)
        self._parked[arrival.event.event_id] = arrival

    async def heal(self) -> None:
        """Until cancelled: ask the store whether it answers (often while anything waits for it); once it
        does, make the connection again for released messages and answer the parked events again."""
        probed = 0.0
        while True:
            await asyncio.sleep(HEAL_POLL_S)
            waiting = self._release_wanted or bool(self._parked) or not self.health.store_up
            if not waiting and time.monotonic() - probed < PROBE_EVERY_S:
                continue
            probed = time.monotonic()
            if not await self.health.probe(self._lookup):
                continue
            link = self._link
            if link is None:  # stopping (close): the parked events are not started again now
                return
            if self._release_wanted:
                self._release_wanted = False
                log.info("the store answers again: reconnecting so the broker sends the released messages again")
                link.redeliver()
            parked, self._parked = self._parked, {}
            for arrival in parked.values():
                self._track(self._retry_parked(arrival))

    async def _retry_parked(self, arrival: Arrival) -> None:
        if await self._answer(arrival, lambda: None) is None:
            self._park(arrival)


class CacheHits:
    """The cache hits among one turn's events: looked up in one store call, the hits' events and verdicts
    written in one more (`answered` before `publish` for every hit), then each handed to `answered`, which
    publishes it and says whether it was. `prompt_version` names the prompt an event would be asked with."""

    def __init__(self, cache: VerdictCache, prompt_version: Callable[[Event], str],
                 answered: Callable[[Arrival, Verdict, bytes], bool],
                 kept: Callable[[Event], Event] = lambda event: event) -> None:  # the stored copy (cropquota)
        self._cache = cache
        self._prompt_version = prompt_version
        self._answered = answered
        self.kept = kept  # the event as it is stored (its crop dropped past its device's quota)
        self.turns = 0  # calls that stored hits, and the hits they stored: how much was answered together
        self.stored = 0

    def __call__(self, arrivals: list[Arrival]) -> list[Answered | None]:
        cache = self._cache
        found = cache.store.lookup_many([cache.query(a.event, self._prompt_version(a.event)) for a in arrivals])
        verdicts = [cache.reused(a.event, hit, a.arrived) if hit is not None else None
                    for a, hit in zip(arrivals, found, strict=True)]
        placed = [i for i, verdict in enumerate(verdicts) if verdict is not None]
        if not placed:
            return [None] * len(arrivals)
        hits = [(self.kept(arrivals[i].event), arrivals[i].received_ms, verdicts[i],
                 encode_verdict(verdicts[i])) for i in placed]  # each encoded once
        new = cache.store.put_answered_many(hits)  # committed: only now may any of them be published
        self.turns += 1
        self.stored += len(hits)
        # a hit whose event id was stored already (a redelivery, a repeat in this very turn) is not new: None
        answers: list[Answered | None] = [None] * len(arrivals)
        for i, (_, _, verdict, published), stored in zip(placed, hits, new, strict=True):
            if stored:
                answers[i] = verdict, self._answered(arrivals[i], verdict, published)
        return answers


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
