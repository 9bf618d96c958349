"""The cloud pipeline: MQTT intake → validate → dedupe → verdict cache → analyzer → store → publish.

Threads: paho's network thread only hands each message to the event loop (`call_soon_threadsafe`); all
decisions happen on the loop; the analyzer, which blocks for seconds, runs on one worker thread of its
own. Delivery: with MQTT 5 an event is acknowledged only once its verdict, or a claim on it with an
expiring lease (cloud.claims), is stored. A process that dies mid-analysis stops renewing its leases; when
they run out any process (the restarted one, or another on the same shared subscription) takes the event
over from the store. A repeated event id is answered with the stored verdict, never analysed again to
completion, and a verdict is stored before it is published. With MQTT 3.1.1 (the demo's embedded broker)
paho acknowledges on receipt; claims and the take-over still apply.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from ..shared.mqtt import Incoming, MQTTLink, shared_subscription
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
from ..shared.reuse import bucket, scope_key
from ..shared.topics import Topics
from .analysis import Analysis, Backend
from .config import CloudConfig
from .figures import Figures
from .intake import HitWriter
from .scheduler import LoadState, Released, Scheduler
from .servicestats import ServiceStats, Throttled
from .singleflight import open_flights
from .storage.claims import ClaimKeeper, Claims, new_owner, open_claims
from .storage.store import Retention, Store, StoreError

log = logging.getLogger("edgetriage.cloud.service")

CLAIM_POLL_S = 0.2  # how often a caller that must answer (HTTP) looks for a verdict another worker is making
BACKLOG_POLL_S = 1.0  # how often events that wait for room in the queue (or were orphaned) are looked for


def now_ms() -> int:
    return int(time.time() * 1000)


def _trace(event_id: str, device: str, camera: str) -> dict[str, str]:
    """Log record fields that let `--log-json` output be filtered down to one event, camera to verdict."""
    return {"event_id": event_id, "device": device, "camera": camera}


class CloudService:
    """Answers every escalated event exactly once per event id, reusing verdicts where the rule allows.

    Listeners run on the event loop and must not block: each of `event_listeners` gets (event, received_ms)
    for every new event once it is stored; each of `verdict_listeners` gets every new verdict (not
    republished duplicates) after it is stored and published. `on_verdict` is the first verdict listener.
    """

    def __init__(self, config: CloudConfig, analyzer: Backend, store: Store, *,
                 on_verdict: Callable[[Verdict], None] | None = None, claims: Claims | None = None) -> None:
        self.config = config
        self.analyzer = analyzer  # the back-end belongs to its maker, who closes it
        self.backend: Backend = analyzer
        self.store = store
        self.scheduler = Scheduler(self.backend, config.scheduler, still_needed=self._still_needed,
                                   on_load=self._load_changed)
        self.figures = Figures(self)
        self.flights = open_flights(store, config.scheduler.deadline_s)  # look-alikes wait for one model call
        self.hits = HitWriter(store)  # the cache hits of one loop turn in one commit
        self._sites: dict[str, set[str]] = {site: set(devices) for site, devices in config.reuse.sites.items()}
        self._verify_credit = 0.0  # accumulates reuse.verify_sample per cache hit; a check whenever it reaches 1
        self._background: set[asyncio.Task] = set()  # reuse checks, housekeeping
        self._load_unsent: LoadState | None = None
        self._stopping = False
        self.event_listeners: list[Callable[[Event, int], None]] = []
        self.verdict_listeners: list[Callable[[Verdict], None]] = [on_verdict] if on_verdict is not None else []
        self.topics = Topics(config.mqtt.prefix)
        self.stats = ServiceStats()
        self._link: MQTTLink | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self._inflight: dict[str, asyncio.Future[Verdict]] = {}
        self._claims = claims  # made from the config on first use unless given
        self._keeper: ClaimKeeper | None = None
        self._claim_task: asyncio.Task | None = None
        self._accepting = False
        self._warn = Throttled(log)
        self.event_listeners.append(self._learn_site)
        self.verdict_listeners.append(self._offer_to_site)

    # -- lifecycle -------------------------------------------------------------------------------------
    @property
    def mqtt_connected(self) -> bool:
        return self._link is not None and self._link.connected.is_set()

    @property
    def mqtt_error(self) -> str:
        return self._link.last_error if self._link is not None else ""

    @property
    def accepting(self) -> bool:
        """False once stop() began: new HTTP events are refused (503), MQTT ones left for redelivery."""
        return not self._stopping

    @property
    def pending(self) -> int:
        """Messages received and not yet answered."""
        return len(self._tasks)

    async def start(self) -> None:
        """Connect (in the background, reconnecting with backoff) and subscribe to every device's events."""
        if self._link is not None:
            raise RuntimeError("CloudService.start() called twice")
        self._loop = asyncio.get_running_loop()
        await self._ensure_scheduler()
        client_id = self.config.mqtt.client_id or f"{self.config.group}-cloud"
        delivery = self.config.delivery
        keeper = self._claim_keeper()
        link = MQTTLink(self.config.mqtt, client_id, on_message=self._from_network, manual_ack=True,
                        receive_maximum=delivery.receive_maximum)
        events = self.topics.all_events()
        link.subscribe(shared_subscription(self.config.group, events) if delivery.shared else events, qos=1)
        self._accepting = True
        self._link = link
        link.start()
        self._claim_task = asyncio.get_running_loop().create_task(self._keep_claims(keeper))
        self._spawn(self._housekeeping())

    async def wait_connected(self, timeout: float) -> bool:
        if self._link is None:
            return False
        return await asyncio.to_thread(self._link.wait_connected, timeout)

    async def stop(self) -> None:
        """Finish in-flight work for up to `drain_timeout_s`, then disconnect. Work still running then is
        abandoned: unacknowledged, the broker hands it to the next session; acknowledged, its claim is
        ended so the next worker takes it over. Returns once the analyzer thread is idle."""
        self._accepting = False
        self._stopping = True
        if self._claim_task is not None:
            self._claim_task.cancel()
            await asyncio.gather(self._claim_task, return_exceptions=True)
            self._claim_task = None
        tasks = set(self._tasks)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=self.config.drain_timeout_s)
            for task in late:
                task.cancel()
            if late:
                log.warning("stopping with %d event(s) unanswered; the broker or the next worker will answer "
                            "them", len(late))
                await asyncio.gather(*late, return_exceptions=True)
        if self._link is not None:
            link, self._link = self._link, None
            await asyncio.to_thread(link.stop)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self.scheduler.running:
            await self.scheduler.stop(grace_s=0.0)
        if self._claims is not None:
            self._claims.close()

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
        acked = False

        def ack() -> None:  # once per message: the claim or the verdict is stored, the broker may forget it
            nonlocal acked
            if not acked and link is not None:
                acked = True
                link.ack(msg.mid, generation=msg.generation)

        try:
            _, published = await self._answer(msg.payload, msg.topic, arrived, on_claimed=ack)
        except ProtocolError as exc:
            self._reject(msg.topic, exc)
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

    def _reject(self, topic: str, exc: ProtocolError) -> None:
        self.stats.rejected += 1
        code = getattr(exc, "code", "invalid")
        self.stats.rejected_by[code] = self.stats.rejected_by.get(code, 0) + 1
        self._warn.warning("rejected a message on %s: %s", topic, exc.reason)

    # -- the pipeline ----------------------------------------------------------------------------------
    async def handle(self, payload: bytes, topic: str) -> Verdict | None:
        """Answer one message; None when it is rejected (counted and logged, never raised)."""
        try:
            verdict, _ = await self._answer(payload, topic, time.monotonic())
        except ProtocolError as exc:
            self._reject(topic, exc)
            return None
        return verdict

    async def process(self, payload: bytes, topic: str) -> Verdict:
        """Like `handle`, but raises ProtocolError with the reason, for callers that answer the sender
        (an HTTP intake returns it as a 400)."""
        try:
            verdict, _ = await self._answer(payload, topic, time.monotonic())
        except ProtocolError as exc:
            self.stats.rejected += 1
            self.stats.rejected_by[exc.code] = self.stats.rejected_by.get(exc.code, 0) + 1
            raise
        assert verdict is not None  # without on_claimed, _answer waits for a verdict made elsewhere
        return verdict

    async def _answer(self, payload: bytes, topic: str, arrived: float,
                      on_claimed: Callable[[], None] | None = None) -> tuple[Verdict | None, bool]:
        """(verdict, published). Raises ProtocolError for a message that cannot be accepted. With
        `on_claimed` (MQTT intake) it is called once the event's claim is stored, and an event another live
        worker holds is left to it: (None, True). Without it, the verdict is waited for."""
        received_ms = now_ms()
        self.stats.received += 1
        parsed = self.topics.parse(topic)
        if parsed is None or parsed[1] != "events":
            raise ProtocolError(f"topic {topic!r} is not <prefix>/v1/<device>/events under {self.topics.prefix!r}")
        event = decode_event(payload)
        if event.device != parsed[0]:
            raise ProtocolError(f"event is from device {event.device!r} but came on the topic of {parsed[0]!r}; "
                                "a device publishes only on its own topic")

        answered = await self._answer_from_cache(event, received_ms, arrived)
        if answered is not None:
            return answered
        if not self.store.put_event(event, received_ms):
            self.stats.duplicates += 1
            stored = self.store.get_event(event.event_id)  # an event id belongs to its device, on every path
            if stored is not None and stored.get("device") != event.device:
                raise ProtocolError(f"event id {event.event_id} is already taken by another device's event; "
                                    "a device must make its own event ids (UUIDv7)")
            earlier = await self._earlier_verdict(event.event_id)
            if earlier is not None:
                return earlier, self._publish(earlier)
            # stored before but never answered: a worker holds it, or one died on it
        else:
            log.debug("event received: %s %s/%s track %d (%s)", event.label, event.device, event.camera,
                      event.track_id, event.reason, extra=_trace(event.event_id, event.device, event.camera))
            self._notify(self.event_listeners, event, received_ms)
        return await self._answer_claimed(event, arrived, on_claimed)

    async def _answer_from_cache(self, event: Event, received_ms: int, arrived: float) -> tuple[Verdict, bool] | None:
        """A cache hit, decided before anything is written: the event and its verdict stored with the other
        hits of this loop turn in one commit (cloud.intake), then published; no claim. None: no hit, a repeat."""
        hit = self._lookup(event, self._scope_key(event), self.backend.prompt_version(event))
        verdict = self._reused(event, hit, arrived) if hit is not None else None
        if verdict is None or not await self.hits.put(event, received_ms, verdict):
            return None
        self._notify(self.event_listeners, event, received_ms)
        self._maybe_check_reuse(event, verdict)
        self._count(verdict, arrived)
        published = self._publish(verdict)
        self._notify(self.verdict_listeners, verdict)
        return verdict, published

    async def _answer_claimed(self, event: Event, arrived: float,
                              on_claimed: Callable[[], None] | None) -> tuple[Verdict | None, bool]:
        """Claim the event, work out its verdict, store it, then publish it; see `_answer`."""
        keeper = self._claim_keeper()
        while not keeper.take(event.event_id):
            if on_claimed is not None:  # its claim is stored: acknowledge, the holder publishes the verdict
                self.stats.claimed_elsewhere += 1
                on_claimed()
                return None, True
            await asyncio.sleep(CLAIM_POLL_S)
            earlier = self.store.get_verdict(event.event_id)
            if earlier is not None:
                return earlier, self._publish(earlier)
        if on_claimed is not None:
            on_claimed()
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._inflight[event.event_id] = future
        stored = False
        try:
            verdict = await self._decide(event, arrived)
            if not keeper.still_held(event.event_id):  # our lease ran out and another worker took over
                self.stats.claims_lost += 1
                self._warn.warning("discarded the verdict for %s: its claim ran out during the analysis",
                                   event.event_id)
                if on_claimed is None:  # a caller that must answer waits for the new holder's verdict
                    return await self._answer_claimed(event, arrived, None)
                return None, True
            self.store.put_verdict(verdict)  # stored before it is published or acknowledged
            stored = True
            future.set_result(verdict)
        finally:
            self._inflight.pop(event.event_id, None)
            self.flights.land(event.event_id)  # after the verdict is stored: its look-alikes find it cached
            if not future.done():
                future.cancel()
            if stored:
                keeper.done(event.event_id)
            else:  # failed or cancelled: end the lease now so the next worker takes it over
                keeper.abandon(event.event_id)
        self._count(verdict, arrived)
        published = self._publish(verdict)
        log.debug("verdict %s (%.2f) from %s in %.0f ms%s", verdict.verdict, verdict.confidence, verdict.source,
                  verdict.timings.total_ms, "" if published else " (not published: no broker connection)",
                  extra=_trace(verdict.event_id, verdict.device, verdict.camera))
        self._notify(self.verdict_listeners, verdict)
        return verdict, published

    def _claim_keeper(self) -> ClaimKeeper:
        if self._keeper is None:
            if self._claims is None:
                owner = new_owner(self.config.mqtt.client_id or f"{self.config.group}-cloud")
                self._claims = open_claims(self.config, owner, self.store)
            self._keeper = ClaimKeeper(self._claims, self.config.delivery.claim_lease_s)
        return self._keeper

    async def _keep_claims(self, keeper: ClaimKeeper) -> None:
        """Renew our leases every third of a lease. As soon as the queue has room, take up events whose
        claims ran out: left by a worker that died, or left waiting for room (OverCapacity)."""
        period = keeper.lease_s / 3
        renew_at = 0.0
        while True:
            try:
                if time.monotonic() >= renew_at:
                    keeper.renew()
                    renew_at = time.monotonic() + period
                room = self.config.scheduler.queue_size - self.scheduler.queue_depth
                for event_id in keeper.orphans(limit=room) if room > 0 else ():
                    if event_id not in self._inflight:
                        await self._take_over(event_id)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - e.g. Redis briefly away: try again next round
                log.exception("renewing or taking over claims failed; retrying in %.0f s", period)
                renew_at = time.monotonic() + period
                await asyncio.sleep(period)
            await asyncio.sleep(min(period, BACKLOG_POLL_S))

    async def _take_over(self, event_id: str) -> None:
        """Answer an event whose claim ran out: rebuilt from the store, published like any other."""
        keeper = self._claim_keeper()
        if self.store.get_verdict(event_id) is not None:
            keeper.claims.forget(event_id)  # answered; the claim was only never released
            return
        row = self.store.get_event(event_id)
        crop = self.store.get_crop(event_id)
        if row is None or crop is None:
            keeper.claims.forget(event_id)  # gone (retention): the device's re-send brings it back
            return
        try:
            event = Event.model_validate({**row, "crop": crop})
        except ValueError:
            keeper.claims.forget(event_id)
            return
        if not keeper.take(event_id):
            return  # another worker was quicker
        self.stats.taken_over += 1
        log.debug("taking up event %s: its claim ran out, or it waited for room", event_id)
        task = asyncio.get_running_loop().create_task(self._answer_taken_over(event))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer_taken_over(self, event: Event) -> None:
        try:
            await self._answer_claimed(event, time.monotonic(), lambda: None)
        except Released:  # still no room, or stopping: its claim ran out again; taken up on a later round
            pass
        except Exception as exc:  # noqa: BLE001 - e.g. the store's disk is full: its claim runs out, tried again
            self._warn.warning("could not answer event %s taken over from the store: %s", event.event_id, exc)

    async def _earlier_verdict(self, event_id: str) -> Verdict | None:
        """The verdict already given for this event id, waiting for it if it is being worked out now."""
        pending = self._inflight.get(event_id)
        if pending is not None:
            await asyncio.wait([pending])
            if not pending.cancelled() and pending.exception() is None:
                return pending.result()
        return self.store.get_verdict(event_id)

    async def _decide(self, event: Event, arrived: float) -> Verdict:
        """The cache's answer; else a look-alike's under way anywhere (cloud.singleflight); else the model's."""
        prompt_version = self.backend.prompt_version(event)
        key = self._scope_key(event)
        for attempt in range(4):
            hit = self._lookup(event, key, prompt_version)
            if hit is not None:
                verdict = self._reused(event, hit, arrived)
                self._maybe_check_reuse(event, verdict)
                return verdict
            flight = bucket(self._rule(event, prompt_version, 0))
            ahead = self.flights.take_off(event.event_id, flight, event.phash, self.config.reuse.max_distance) \
                if attempt < 3 else None
            if ahead is not None:
                await self.flights.wait(ahead, flight, arrived + self.config.scheduler.deadline_s - time.monotonic())
                continue
            await self._ensure_scheduler()
            outcome = await self.scheduler.submit(event, arrived=arrived)
            if outcome.analysis is not None:
                return self._from_model(event, outcome.analysis, prompt_version, arrived, outcome.started)
            # withdrawn: a verdict that answers it arrived while it waited; the loop takes it from the cache
        analysis = Analysis(verdict="unknown", confidence=0.0, description="", model=self.backend.name,
                            prompt_version=prompt_version, analyze_ms=0.0,
                            error="the cached verdict that answered this event while it waited expired")
        return self._from_model(event, analysis, prompt_version, arrived, time.monotonic())

    def _scope_key(self, event: Event) -> str:
        return scope_key(self.config.reuse.scope, event.device, event.camera, event.site)

    def _still_needed(self, event: Event) -> bool:
        """The scheduler's last question before the model starts on `event`: is there still no verdict?"""
        version = self.backend.prompt_version(event)
        return self._lookup(event, self._scope_key(event), version) is None

    async def _ensure_scheduler(self) -> None:
        if not self.scheduler.running:
            await self.scheduler.start()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- reuse: checks and site offers -----------------------------------------------------------------
    def _maybe_check_reuse(self, event: Event, reused: Verdict) -> None:
        """On `reuse.verify_sample` of cache hits (spread evenly), ask the model too, in the background
        below every priority tier, and count how often it disagrees: wrong reuse measured, not assumed."""
        self._verify_credit += self.config.reuse.verify_sample
        if self._verify_credit < 1.0:
            return
        self._verify_credit -= 1.0
        self._spawn(self._check_reuse(event, reused))

    async def _check_reuse(self, event: Event, reused: Verdict) -> None:
        try:
            await self._ensure_scheduler()
            outcome = await self.scheduler.submit(event, background=True)
        except Released:
            return
        analysis = outcome.analysis
        if analysis is None or outcome.refused or analysis.error is not None:
            self.stats.reuse_unchecked += 1
            return
        self.stats.reuse_checked += 1
        if analysis.verdict != reused.verdict:
            self.stats.reuse_disagreed += 1
            log.info("reuse check: the model says %s where the cache said %s", analysis.verdict, reused.verdict,
                     extra=_trace(event.event_id, event.device, event.camera))

    def _learn_site(self, event: Event, received_ms: int) -> None:
        if event.site:
            self._sites.setdefault(event.site, set()).add(event.device)

    def site_devices(self, site: str) -> list[str]:
        """The devices known to belong to `site` (configured in reuse.sites, or seen sending events)."""
        return sorted(self._sites.get(site, ()))

    def _offer_to_site(self, verdict: Verdict) -> None:
        """A new model verdict whose rule covers the whole site goes to the site's other devices too, so they
        never ask about the same thing. The offer is addressed to each device (device = the recipient) and
        keeps the original event_id, with reused_from = event_id marking it as an offer, not an answer."""
        rule = verdict.cache
        if (not self.config.reuse.offer_site or verdict.source != "llm" or rule is None or rule.scope != "site"
                or not rule.site or self._link is None):
            return
        for device in self.site_devices(rule.site):
            if device == verdict.device:
                continue
            offer = verdict.model_copy(update={"device": device, "source": "cloud_cache",
                                               "reused_from": verdict.event_id})
            if self._link.publish(self.topics.verdicts(device), encode_verdict(offer), qos=1) is not None:
                self.stats.site_offers += 1

    # -- overload and housekeeping ---------------------------------------------------------------------
    @property
    def overloaded(self) -> bool:
        return self.scheduler.load.overloaded

    def _load_changed(self, load: LoadState) -> None:
        """Retained `<prefix>/v1/_cloud/load`: devices hold or degrade their escalations while it says
        overloaded; {"overloaded": false} clears it. Retried by housekeeping if the broker is away."""
        link = self._link
        sent = link is not None and link.publish(self.topics.cloud_load(), load.payload(), qos=1,
                                                 retain=True) is not None
        self._load_unsent = None if sent else load

    async def _housekeeping(self) -> None:
        """Every few seconds: a load report the broker missed; at `retention.sweep_interval_s`: retention."""
        next_sweep = time.monotonic()
        while True:
            if self._load_unsent is not None:
                self._load_changed(self._load_unsent)
            if time.monotonic() >= next_sweep:
                next_sweep = time.monotonic() + self.config.retention.sweep_interval_s
                try:
                    await asyncio.to_thread(self.sweep)
                except Exception:  # noqa: BLE001 - retention must not stop the service; try next time
                    log.exception("retention sweep failed")
            await asyncio.sleep(2.0)

    def sweep(self, now: int | None = None) -> tuple[int, int]:
        """Retention: crops older than retention.crops_days, then events (and their verdicts) older than
        retention.events_days. (crops, events) deleted; (0, 0) for a store that expires data itself."""
        if not isinstance(self.store, Retention):
            return 0, 0
        now = now_ms() if now is None else now
        policy = self.config.retention
        crops_before = now - int(policy.crops_days * 86_400_000) if policy.crops_days else None
        events_before = now - int(policy.events_days * 86_400_000) if policy.events_days else None
        crops, events = self.store.sweep(crops_before, events_before)
        if crops or events:
            log.info("retention: deleted %d crops and %d events", crops, events)
        return crops, events

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
                       cache=rule, facts=hit.facts, model_verdict=hit.model_verdict, checked=hit.checked)

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
        # a fallback's description is the reason, so the device (and whoever reads the verdict) sees why
        description = f"no model verdict: {error}" if error is not None else analysis.description
        done = time.monotonic()
        analyze_ms = analysis.analyze_ms if analysis.analyze_ms > 0 else (done - started) * 1000
        timings = Timings(queue_ms=(started - arrived) * 1000, analyze_ms=analyze_ms, total_ms=(done - arrived) * 1000)
        fallback = error is not None
        rule = None if fallback else self._rule(event, analysis.prompt_version or prompt_version,
                                                self.config.reuse.ttl_s)
        return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                       verdict=verdict, confidence=confidence, description=description[:300],
                       model=(analysis.model or self.analyzer.name)[:128], source="fallback" if fallback else "llm",
                       created_ms=now_ms(), timings=timings, cache=rule, facts=[f[:200] for f in analysis.facts[:12]],
                       model_verdict=analysis.model_verdict, checked=analysis.checked and analysis.checked[:200])

    # -- output ----------------------------------------------------------------------------------------
    def _count(self, verdict: Verdict, arrived: float) -> None:
        stats = self.stats
        total_ms = (time.monotonic() - arrived) * 1000
        if verdict.source == "cloud_cache":
            stats.cache_hits += 1
            stats.light_ms.append(total_ms)
        else:
            if verdict.source == "llm":
                stats.llm += 1
                stats.overrides += verdict.checked is not None
                stats.llm_ms.append(verdict.timings.analyze_ms)
                stats.sched_ms.append(verdict.timings.queue_ms)
            else:
                stats.fallback += 1
            stats.queue_ms.append(verdict.timings.queue_ms)
            stats.analyze_ms.append(verdict.timings.analyze_ms)
        stats.total_ms.append(total_ms)

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

    @staticmethod
    def _notify(listeners: list[Callable[..., None]], *args: Any) -> None:
        for listener in listeners:
            try:
                listener(*args)
            except Exception:  # noqa: BLE001 - a listener's bug must not stop the pipeline
                log.exception("listener %r failed", listener)
