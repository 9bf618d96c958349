"""The cloud pipeline: MQTT intake → validate → dedupe → verdict cache → analyzer → store → publish.

Threads: paho's network thread only hands each message to the event loop (`call_soon_threadsafe`); all
decisions happen on the loop; the analyzer, which blocks for seconds, runs on one worker thread of its
own. Delivery: with MQTT 5 an event is acknowledged only after its verdict is stored and handed to the
broker, so a service that dies mid-analysis gets the event again from its persistent session; a repeated
event id is answered from the store, never analysed twice. With MQTT 3.1.1 (the demo's embedded broker)
paho acknowledges on receipt, and the same pipeline runs at most once per delivery.
"""

from __future__ import annotations

import asyncio
import logging
import math
import statistics
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any

from ..shared.mqtt import Incoming, MQTTLink
from ..shared.protocol import (
    VERDICTS,
    Event,
    ProtocolError,
    ReuseRule,
    Timings,
    Verdict,
    decode_event,
    encode_verdict,
)
from ..shared.reuse import scope_key
from ..shared.topics import Topics
from .analysis import Analysis, Analyzer
from .config import CloudConfig
from .store import Store

log = logging.getLogger("edgetriage.cloud.service")

LATENCY_WINDOW = 4096  # recent samples kept per latency series
ANALYZER_STOP_WAIT_S = 60.0  # how long stop() waits for an analysis already running


def now_ms() -> int:
    return int(time.time() * 1000)


def _latencies() -> deque[float]:
    return deque(maxlen=LATENCY_WINDOW)


@dataclass
class ServiceStats:
    """Counters since start, and recent latencies in ms. Readable as attributes or as `stats["llm"]`."""

    received: int = 0
    rejected: int = 0
    duplicates: int = 0
    cache_hits: int = 0
    llm: int = 0
    fallback: int = 0
    published: int = 0
    unpublished: int = 0  # stored but not handed to the broker (disconnected); the redelivery republishes it
    total_ms: deque[float] = field(default_factory=_latencies)  # receipt → verdict stored, new verdicts
    queue_ms: deque[float] = field(default_factory=_latencies)  # receipt → model start (model verdicts)
    analyze_ms: deque[float] = field(default_factory=_latencies)  # model time (model verdicts)

    def __getitem__(self, key: str) -> Any:
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def snapshot(self) -> dict[str, Any]:
        """Counters plus n/p50/p95/max per latency series, ready for JSON."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, deque):
                samples = sorted(value)
                out[f.name] = {
                    "n": len(samples),
                    "p50": round(statistics.median(samples), 1) if samples else None,
                    "p95": round(samples[min(len(samples) - 1, int(0.95 * len(samples)))], 1) if samples else None,
                    "max": round(samples[-1], 1) if samples else None,
                }
            else:
                out[f.name] = value
        return out


class _Throttled:
    """At most one warning per interval, so a sender spraying garbage cannot flood the log."""

    def __init__(self, logger: logging.Logger, interval_s: float = 1.0) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._last = -math.inf
        self._suppressed = 0

    def warning(self, msg: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last < self._interval_s:
            self._suppressed += 1
            return
        if self._suppressed:
            msg += " (%d similar warnings suppressed)"
            args = (*args, self._suppressed)
        self._logger.warning(msg, *args)
        self._last = now
        self._suppressed = 0


class CloudService:
    """Answers every escalated event exactly once per event id, reusing verdicts where the rule allows.

    `on_verdict` is called on the event loop for every new verdict (not for republished duplicates),
    after it is stored and published; it must not block.
    """

    def __init__(self, config: CloudConfig, analyzer: Analyzer, store: Store, *,
                 on_verdict: Callable[[Verdict], None] | None = None) -> None:
        self.config = config
        self.analyzer = analyzer
        self.store = store
        self.on_verdict = on_verdict
        self.topics = Topics(config.mqtt.prefix)
        self.stats = ServiceStats()
        self._link: MQTTLink | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor: ThreadPoolExecutor | None = None  # the analyzer's one thread, made on first use
        self._model_turn = asyncio.Lock()  # one analysis at a time, re-checking the cache after each wait
        self._tasks: set[asyncio.Task] = set()
        self._inflight: dict[str, asyncio.Future[Verdict]] = {}
        self._accepting = False
        self._warn = _Throttled(log)

    # -- lifecycle -------------------------------------------------------------------------------------
    @property
    def mqtt_connected(self) -> bool:
        return self._link is not None and self._link.connected.is_set()

    @property
    def mqtt_error(self) -> str:
        return self._link.last_error if self._link is not None else ""

    @property
    def pending(self) -> int:
        """Messages received and not yet answered."""
        return len(self._tasks)

    async def start(self) -> None:
        """Connect (in the background, reconnecting with backoff) and subscribe to every device's events."""
        if self._link is not None:
            raise RuntimeError("CloudService.start() called twice")
        self._loop = asyncio.get_running_loop()
        self._model_turn = asyncio.Lock()  # bound to this loop, should the service be restarted in another
        client_id = self.config.mqtt.client_id or f"{self.config.group}-cloud"
        link = MQTTLink(self.config.mqtt, client_id, on_message=self._from_network, manual_ack=True)
        link.subscribe(self.topics.all_events(), qos=1)
        self._accepting = True
        self._link = link
        link.start()

    async def wait_connected(self, timeout: float) -> bool:
        if self._link is None:
            return False
        return await asyncio.to_thread(self._link.wait_connected, timeout)

    async def stop(self) -> None:
        """Finish in-flight work for up to `drain_timeout_s`, then disconnect. Work still running then is
        abandoned unacknowledged, so the broker hands it to the next session (stored events are then
        answered, not dropped). Returns once the analyzer thread is idle."""
        self._accepting = False
        tasks = set(self._tasks)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=self.config.drain_timeout_s)
            for task in late:
                task.cancel()
            if late:
                log.warning("stopping with %d event(s) unanswered; the broker will redeliver them", len(late))
                await asyncio.gather(*late, return_exceptions=True)
        if self._link is not None:
            link, self._link = self._link, None
            await asyncio.to_thread(link.stop)
        # an analysis cannot be interrupted: wait for it to return, so the analyzer is idle when stop()
        # returns and may be handed to another service; bounded, in case a back-end hangs
        executor, self._executor = self._executor, None
        if executor is not None:
            waiter = asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
            try:
                await asyncio.wait_for(waiter, ANALYZER_STOP_WAIT_S)
            except TimeoutError:
                log.warning("the analyzer did not return within %.0f s; stopping without it", ANALYZER_STOP_WAIT_S)

    # -- intake ----------------------------------------------------------------------------------------
    def _from_network(self, msg: Incoming) -> None:
        """paho's thread: hand over, nothing else."""
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._dispatch, msg, time.monotonic())
        except RuntimeError:  # the loop is closed: left unacknowledged, so it is redelivered
            pass

    def _dispatch(self, msg: Incoming, arrived: float) -> None:
        if not self._accepting:
            return  # stopping: unacknowledged, redelivered to the next session
        task = asyncio.get_running_loop().create_task(self._consume(msg, arrived))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _consume(self, msg: Incoming, arrived: float) -> None:
        link = self._link
        try:
            _, published = await self._answer(msg.payload, msg.topic, arrived)
        except ProtocolError as exc:
            self._reject(msg.topic, exc.reason)
            published = True  # nothing to answer; acknowledge so it is not redelivered
        except Exception:  # noqa: BLE001 - e.g. the store's disk is full: keep serving, leave it unacknowledged
            log.exception("could not answer the message on %s; it stays unacknowledged", msg.topic)
            return
        if published and link is not None:
            link.ack(msg.mid)

    def _reject(self, topic: str, reason: str) -> None:
        self.stats.rejected += 1
        self._warn.warning("rejected a message on %s: %s", topic, reason)

    # -- the pipeline ----------------------------------------------------------------------------------
    async def handle(self, payload: bytes, topic: str) -> Verdict | None:
        """Answer one message; None when it is rejected (counted and logged, never raised)."""
        try:
            verdict, _ = await self._answer(payload, topic, time.monotonic())
        except ProtocolError as exc:
            self._reject(topic, exc.reason)
            return None
        return verdict

    async def process(self, payload: bytes, topic: str) -> Verdict:
        """Like `handle`, but raises ProtocolError with the reason, for callers that answer the sender
        (an HTTP intake returns it as a 400)."""
        try:
            verdict, _ = await self._answer(payload, topic, time.monotonic())
        except ProtocolError:
            self.stats.rejected += 1
            raise
        return verdict

    async def _answer(self, payload: bytes, topic: str, arrived: float) -> tuple[Verdict, bool]:
        """(verdict, published). Raises ProtocolError for a message that cannot be accepted."""
        received_ms = now_ms()
        self.stats.received += 1
        parsed = self.topics.parse(topic)
        if parsed is None or parsed[1] != "events":
            raise ProtocolError(f"topic {topic!r} is not <prefix>/v1/<device>/events under {self.topics.prefix!r}")
        event = decode_event(payload)
        if event.device != parsed[0]:
            raise ProtocolError(f"event is from device {event.device!r} but came on the topic of {parsed[0]!r}; "
                                "a device publishes only on its own topic")

        if not self.store.put_event(event, received_ms):
            self.stats.duplicates += 1
            earlier = await self._earlier_verdict(event.event_id)
            if earlier is not None:
                return earlier, self._publish(earlier)
            # stored before but never answered (the service stopped mid-analysis): answer it now

        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._inflight[event.event_id] = future
        try:
            verdict = await self._decide(event, arrived)
            self.store.put_verdict(verdict)  # stored before it is published or acknowledged
            future.set_result(verdict)
        finally:
            self._inflight.pop(event.event_id, None)
            if not future.done():
                future.cancel()
        self._count(verdict, arrived)
        published = self._publish(verdict)
        self._notify(verdict)
        return verdict, published

    async def _earlier_verdict(self, event_id: str) -> Verdict | None:
        """The verdict already given for this event id, waiting for it if it is being worked out now."""
        pending = self._inflight.get(event_id)
        if pending is not None:
            await asyncio.wait([pending])
            if not pending.cancelled() and pending.exception() is None:
                return pending.result()
        return self.store.get_verdict(event_id)

    async def _decide(self, event: Event, arrived: float) -> Verdict:
        prompt_version = self.analyzer.prompt_version(event.label)
        key = scope_key(self.config.reuse.scope, event.device, event.camera, event.site)
        hit = self._lookup(event, key, prompt_version)
        if hit is not None:
            return self._reused(event, hit, arrived)
        async with self._model_turn:
            # while this event waited its turn, the event ahead may have produced a verdict that answers it
            hit = self._lookup(event, key, prompt_version)
            if hit is not None:
                return self._reused(event, hit, arrived)
            started = time.monotonic()
            try:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="analyzer")
                analysis = await asyncio.get_running_loop().run_in_executor(
                    self._executor, self.analyzer.analyze, event)
            except Exception as exc:  # noqa: BLE001 - the contract says never raise; hold it to that here
                analysis = Analysis(verdict="unknown", confidence=0.0, description="", model=self.analyzer.name,
                                    prompt_version=prompt_version, analyze_ms=(time.monotonic() - started) * 1000,
                                    error=f"analyzer raised {type(exc).__name__}: {exc}")
        return self._from_model(event, analysis, prompt_version, arrived, started)

    def _lookup(self, event: Event, key: str, prompt_version: str) -> Verdict | None:
        return self.store.lookup(scope_key=key, label=event.label, phash=event.phash, phash_alg=event.phash_alg,
                                 prompt_version=prompt_version, now_ms=now_ms())

    def _rule(self, event: Event, prompt_version: str, ttl_s: int) -> ReuseRule:
        policy = self.config.reuse
        return ReuseRule(scope=policy.scope, device=event.device, camera=event.camera, site=event.site,
                         label=event.label, phash=event.phash, phash_alg=event.phash_alg,
                         max_distance=policy.max_distance, prompt_version=prompt_version, ttl_s=ttl_s)

    def _reused(self, event: Event, hit: Verdict, arrived: float) -> Verdict:
        """A verdict for this event copied from a cached one. Its fresh rule (this crop's hash) expires
        no later than the model answer it derives from, so a chain of look-alikes cannot keep an answer
        alive past its ttl."""
        created = now_ms()
        rule = None
        if hit.cache is not None:
            left_s = (hit.created_ms + hit.cache.ttl_s * 1000 - created) // 1000
            ttl_s = min(self.config.reuse.ttl_s, left_s)
            if ttl_s > 0:
                rule = self._rule(event, hit.cache.prompt_version, ttl_s)
        return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                       verdict=hit.verdict, confidence=hit.confidence, description=hit.description,
                       model=hit.model, source="cloud_cache", reused_from=hit.reused_from or hit.event_id,
                       created_ms=created, timings=Timings(total_ms=(time.monotonic() - arrived) * 1000),
                       cache=rule)

    def _from_model(self, event: Event, analysis: Analysis, prompt_version: str, arrived: float,
                    started: float) -> Verdict:
        """The model's answer as a verdict, made safe for the wire; a fallback gets no reuse rule."""
        error = analysis.error
        verdict = analysis.verdict
        if verdict not in VERDICTS:
            error = error or f"analyzer answered {verdict!r}, not one of {', '.join(VERDICTS)}"
            verdict = "unknown"
        confidence = analysis.confidence if math.isfinite(analysis.confidence) else 0.0
        confidence = min(1.0, max(0.0, confidence))
        description = analysis.description or (f"no model verdict: {error}" if error else "")
        done = time.monotonic()
        analyze_ms = analysis.analyze_ms if analysis.analyze_ms > 0 else (done - started) * 1000
        timings = Timings(queue_ms=(started - arrived) * 1000, analyze_ms=analyze_ms, total_ms=(done - arrived) * 1000)
        fallback = error is not None
        rule = None if fallback else self._rule(event, analysis.prompt_version or prompt_version,
                                                self.config.reuse.ttl_s)
        return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                       verdict=verdict, confidence=confidence, description=description[:300],
                       model=(analysis.model or self.analyzer.name)[:128],
                       source="fallback" if fallback else "llm", created_ms=now_ms(), timings=timings, cache=rule)

    # -- output ----------------------------------------------------------------------------------------
    def _count(self, verdict: Verdict, arrived: float) -> None:
        stats = self.stats
        if verdict.source == "cloud_cache":
            stats.cache_hits += 1
        else:
            if verdict.source == "llm":
                stats.llm += 1
            else:
                stats.fallback += 1
            stats.queue_ms.append(verdict.timings.queue_ms)
            stats.analyze_ms.append(verdict.timings.analyze_ms)
        stats.total_ms.append((time.monotonic() - arrived) * 1000)

    def _publish(self, verdict: Verdict) -> bool:
        """Hand the verdict to the broker (QoS 1, not retained); False when there is no connection."""
        link = self._link
        if link is None:
            return False  # not started: a caller without MQTT (handle/process) answers the sender itself
        mid = link.publish(self.topics.verdicts(verdict.device), encode_verdict(verdict), qos=1, retain=False)
        if mid is None:
            self.stats.unpublished += 1
            return False
        self.stats.published += 1
        return True

    def _notify(self, verdict: Verdict) -> None:
        if self.on_verdict is None:
            return
        try:
            self.on_verdict(verdict)
        except Exception:  # noqa: BLE001 - a listener's bug must not stop the pipeline
            log.exception("on_verdict callback failed")
