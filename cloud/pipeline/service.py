"""The cloud pipeline: MQTT intake → validate → dedupe → verdict cache → analyzer → store → publish.

Threads: paho's network thread only hands each message to the event loop (`call_soon_threadsafe`); all
decisions happen on the loop; the analyzer, which blocks for seconds, runs on one worker thread of its
own. Delivery: with MQTT 5 an event is acknowledged only once its verdict, or a claim on it with an
expiring lease (storage.claims), is stored. A process that dies mid-analysis stops renewing its leases; when
they run out any process (the restarted one, or another on the same shared subscription) takes the event
over from the store (cloud.broker.takeover). A repeated event id is answered with the stored verdict, never analysed
again to completion, and a verdict is stored before it is published. With MQTT 3.1.1 (the demo's embedded
broker) paho acknowledges on receipt; claims and the take-over still apply.

Every event takes one path: decoded and validated once (`accept`); the cache hits of one loop turn answered
together, before anything is written, in one commit, then published (`answer_hits`, cloud.broker.intake.CacheHits);
every other event stored, claimed and answered on its own (`answer_rest`). The MQTT intake hands a turn's
messages to `answer_hits` at once and acknowledges each message once its verdict or claim is stored;
`process` (the HTTP intake, tests) answers one event and waits for its verdict.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from ...shared.clock import now_ms
from ...shared.protocol import Event, ProtocolError, Verdict
from ...shared.topics import Topics
from ..analysis import Backend
from ..broker.admission import Admission
from ..broker.health import IntakeHealth
from ..broker.intake import Arrival, CacheHits, MQTTIntake, TurnBatch
from ..broker.publisher import Publisher, events_link
from ..broker.takeover import TakeOver, retake, settle, store_verdict
from ..config import CloudConfig
from ..counts.pressure import EventPressure
from ..counts.servicestats import HitLog, ServiceStats, Throttled
from ..ops.figures import Figures
from ..reuse.cropquota import CropQuota
from ..reuse.offers import SiteOffers
from ..reuse.singleflight import open_flights
from ..reuse.sites import SiteTable
from ..reuse.trust import Trust
from ..reuse.verdicts import ReuseChecks, VerdictCache
from ..route.finals import Finals
from ..route.lanes import Lanes
from ..storage.store import Store
from ..teach.feedback import Feedback
from .decide import Decider, background_asker, started, still_needed
from .holding import Holding
from .housekeeping import Housekeeping
from .tasks import Tasks

log = logging.getLogger("edgetriage.cloud.service")

CLAIM_POLL_S = 0.2  # how often a caller that must answer (HTTP) looks for a verdict another worker is making


def _trace(event_id: str, device: str, camera: str) -> dict[str, str]:
    """Log record fields that let `--log-json` output be filtered down to one event, camera to verdict."""
    return {"event_id": event_id, "device": device, "camera": camera}



def _log_verdict(verdict: Verdict, published: bool, level: int = logging.INFO) -> None:
    """One line per verdict made: the cloud's half of an event's story (cache hits at debug: HitLog)."""
    log.log(level, "verdict %s (%.2f) for %s/%s event %s from %s in %.0f ms%s", verdict.verdict, verdict.confidence,
             verdict.device, verdict.camera, verdict.event_id, verdict.source, verdict.timings.total_ms,
             "" if published else " (not published: no broker connection)",
             extra=_trace(verdict.event_id, verdict.device, verdict.camera))


def _notify(listeners: list[Callable[..., None]], *args: Any) -> None:
    """Each listener told; one's bug does not stop the pipeline or the others."""
    for listener in listeners:
        try:
            listener(*args)
        except Exception:  # noqa: BLE001 - a listener's bug must not stop the pipeline
            log.exception("listener %r failed", listener)


class CloudService:
    """Answers every escalated event exactly once per event id, reusing verdicts where the rule allows.

    Listeners run on the event loop and must not block: each of `event_listeners` gets (event, received_ms)
    for every new event once it is stored; each of `verdict_listeners` gets every new verdict (not
    republished duplicates) after it is stored and published. `on_verdict` is the first verdict listener.
    """

    def __init__(self, config: CloudConfig, analyzer: Backend, store: Store, *,
                 holding: Holding, on_verdict: Callable[[Verdict], None] | None = None) -> None:
        self.config = config
        self.backend: Backend = analyzer  # the back-end belongs to its maker, who closes it
        self.store = store
        self.stats = ServiceStats()
        self.topics = Topics(config.mqtt.prefix)
        self.publisher = Publisher(self.topics, self.stats)  # verdicts, site offers, load; the link's state
        self.housekeeping = Housekeeping(store, config.retention, self.publisher.load)
        self.cache = VerdictCache(store, config.reuse)
        self.lanes = Lanes(self.backend, config, still_needed=still_needed(self.cache, self.backend),
                           on_load=self.housekeeping.load_changed)  # one scheduler per back-end (cloud.route.routing)
        self.scheduler = self.lanes.primary  # the load report's
        self.figures = Figures(self)
        self.trust = Trust(config.reuse, config.delivery.max_devices, set(config.http.device_tokens))
        self.sites = SiteTable(config.sites)  # each camera's name and time zone: the cloud's, a device's claims said
        self.admission = Admission(config, self.topics, self.trust, self.sites, self.stats)
        self.flights = open_flights(store, config.scheduler.deadline_s)  # look-alikes wait for one model call
        self.answer_hits = CacheHits(self.cache, lambda event: self.backend.prompt_version(event), self._hit_answered,
                                     CropQuota(config.retention, self.stats.crops_not_kept).kept)  # one commit
        self._hits_of_turn = TurnBatch(self.answer_hits)
        self._background = Tasks()  # reuse checks, housekeeping, offers, finals: cancelled at stop
        self.reuse_checks = ReuseChecks(config.reuse, self.stats, background_asker(self.lanes), self._background.start)
        self._stopping = False
        self.event_listeners: list[Callable[[Event, int], None]] = []
        self.verdict_listeners: list[Callable[[Verdict], None]] = [on_verdict] if on_verdict is not None else []
        self.offers = SiteOffers(self.trust.sites, self.topics, lambda: self.publisher.link, self.stats)
        self.verdict_listeners.append(self.offers.offer)  # sent behind answers (cloud.reuse.offers)
        self._tasks = Tasks()  # each message's answer: drained at stop
        self.holding = holding  # its claims, and the verdicts it is making now (cloud.pipeline.holding)
        self._claim_task: asyncio.Task | None = None
        self._warn = Throttled(log)
        self._hit_log = HitLog(log, lambda v, sent: _log_verdict(v, sent, logging.DEBUG))  # a count a minute
        self.health = IntakeHealth(config.delivery.stalled_after_s)  # /healthz and /metrics read why nothing moves
        self.pressure = EventPressure()  # events worked on now: question workers give way (cloud.counts.pressure)
        self.intake = MQTTIntake(self, self._tasks.start, self.stats, self._warn, self.health, store.get_verdict,
                                 self.pressure)
        self.feedback = Feedback(store, self.publisher.verdict, lambda _verdict, offers: self.offers.send(offers),
                                 self.trust.sites.devices, self.stats.feedback)  # an operator's word on a verdict
        self.finals = Finals(self.lanes, self.cache, store, self.publisher.verdict, self.verdict_listeners,
                             self._background.start, config)  # first answers, then finals; pending ones stored
        self.decider = Decider(config, self.backend, self.cache, self.lanes, self.finals, self.flights,
                               self.reuse_checks, self.pressure)  # cache, at once, a look-alike's, the model's

    # -- lifecycle -------------------------------------------------------------------------------------
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
        if self.publisher.link is not None:
            raise RuntimeError("CloudService.start() called twice")
        await started(self.lanes)
        takeover = TakeOver(self.holding.keeper(), self.store, self.stats, self._warn,
                            room=lambda: self.config.scheduler.queue_size - self.scheduler.queue_depth,
                            busy=self.holding.working_on, spawn=self._tasks.start,
                            answer=lambda event: self._answer_claimed(event, time.monotonic(), lambda: None))
        link = events_link(self.config, self.topics, self.intake.from_network)
        self.publisher.link = link
        self.intake.open(asyncio.get_running_loop(), link)
        link.start()
        self._claim_task = asyncio.get_running_loop().create_task(takeover.run())
        for job in (self.housekeeping.run(), self.offers.run(), self.intake.heal(), self.finals.run()):
            self._background.start(job)

    async def wait_connected(self, timeout: float) -> bool:
        """Connected and subscribed within `timeout` (cloud.broker.publisher.Publisher.wait_connected)."""
        return await self.publisher.wait_connected(timeout)

    async def stop(self) -> None:
        """Finish in-flight work for up to `drain_timeout_s`, then disconnect; work still running then is left
        to the broker (unacknowledged) or the next worker (its claim ended). Returns once the analyzer is idle."""
        self.intake.close()
        self._stopping = True
        if self._claim_task is not None:
            self._claim_task.cancel()
            await asyncio.gather(self._claim_task, return_exceptions=True)
            self._claim_task = None
        await self._tasks.drain(self.config.drain_timeout_s)
        if self.publisher.link is not None:
            link, self.publisher.link = self.publisher.link, None
            await asyncio.to_thread(link.stop)
        await self._background.cancel()
        if self.lanes.running:
            await self.lanes.stop(grace_s=0.0)
        self.holding.close()

    # -- the pipeline ----------------------------------------------------------------------------------
    async def process(self, message: bytes | Event, topic: str) -> Verdict:
        """One event's verdict, for callers that answer the sender (HTTP: a ProtocolError is a 400); `message`:
        the payload or the event decoded from it. The verdict is published too when connected."""
        try:
            with self.pressure.working():
                verdict, _ = await self._answer(message, topic, time.monotonic())
        except ProtocolError as exc:
            self.stats.reject(exc.code)
            raise
        assert verdict is not None  # without on_claimed, _answer waits for a verdict made elsewhere
        return verdict

    async def _answer(self, message: bytes | Event, topic: str, arrived: float) -> tuple[Verdict | None, bool]:
        """(verdict, published) for one event, its cache hit answered with those of other callers in the same
        loop turn. Raises ProtocolError for a message that cannot be accepted."""
        arrival = Arrival(self.accept(message, topic), now_ms(), arrived)
        answered = await self._hits_of_turn(arrival)
        return answered if answered is not None else await self.answer_rest(arrival)

    def accept(self, message: bytes | Event, topic: str) -> Event:
        """The event, admitted (cloud.broker.admission); ProtocolError when it is not one."""
        return self.admission.accept(message, topic)

    def _hit_answered(self, arrival: Arrival, verdict: Verdict, published: bytes) -> bool:
        """A cache hit stored with its event: listeners told, counted, published; True once published."""
        event, received_ms, arrived = arrival.event, arrival.received_ms, arrival.arrived
        _notify(self.event_listeners, event, received_ms)
        self.reuse_checks.sample(event, verdict)
        self.stats.count(verdict, (time.monotonic() - arrived) * 1000)
        sent = self.publisher.verdict(verdict)
        self._hit_log.hit(verdict, sent)
        _notify(self.verdict_listeners, verdict)
        return sent

    async def answer_rest(self, arrival: Arrival,
                          on_claimed: Callable[[], None] | None = None) -> tuple[Verdict | None, bool]:
        """(verdict, published) for an event the cache did not answer: a repeat gets its stored verdict, a new one
        is stored and claimed first. `on_claimed` (MQTT): called once claimed, and an event another live worker
        holds is left to it, (None, True); else the verdict is waited for. ProtocolError: another device's id."""
        event, received_ms, arrived = arrival.event, arrival.received_ms, arrival.arrived
        if not self.store.put_event(self.answer_hits.kept(event), received_ms):
            self.stats.duplicates += 1
            earlier = await self.holding.earlier_verdict(event)
            if earlier is not None:
                return earlier, self.publisher.verdict(earlier)
            # stored before but never answered: a worker holds it, or one died on it
        else:
            log.debug("event received: %s %s/%s track %d (%s)", event.label, event.device, event.camera,
                      event.track_id, event.reason, extra=_trace(event.event_id, event.device, event.camera))
            _notify(self.event_listeners, event, received_ms)
        return await self._answer_claimed(event, arrived, on_claimed)

    async def _answer_claimed(self, event: Event, arrived: float,
                              on_claimed: Callable[[], None] | None) -> tuple[Verdict | None, bool]:
        """Claim the event, work out its verdict, store it, then publish it; see `_answer`."""
        keeper = self.holding.keeper()
        while not keeper.take(event.event_id):
            if on_claimed is not None:  # its claim is stored: acknowledge, the holder publishes the verdict
                self.stats.claimed_elsewhere += 1
                on_claimed()
                return None, True
            await asyncio.sleep(CLAIM_POLL_S)
            earlier = self.store.get_verdict(event.event_id)
            if earlier is not None:
                return earlier, self.publisher.verdict(earlier)
        if on_claimed is not None:
            on_claimed()
        stored = False
        first = self.finals.first_answer_timer(event, arrived)  # a first answer meanwhile, counted from arrival
        with self.holding.making(event.event_id) as making:
            try:
                verdict = await self.decider.decide(await self.trust.embedded(event), arrived)
                if not keeper.still_held(event.event_id) and not retake(keeper, self.store, event, self.stats):
                    self.stats.claims_lost += 1
                    self._warn.warning("discarded the verdict for %s: another worker took its claim over meanwhile",
                                       event.event_id)
                    if on_claimed is None:  # a caller that must answer waits for the new holder's verdict
                        return await self._answer_claimed(event, arrived, None)
                    return None, True
                verdict = store_verdict(keeper, self.store, verdict)  # stored before it is published or acknowledged
                stored = True
                making.set_result(verdict)
            finally:
                first.cancel()
                settle(self.flights, keeper, event.event_id, stored, self._warn)
        self.stats.count(verdict, (time.monotonic() - arrived) * 1000)
        published = self.publisher.verdict(verdict)
        _log_verdict(verdict, published)
        _notify(self.verdict_listeners, verdict)
        return verdict, published

    # -- overload and housekeeping ---------------------------------------------------------------------
    @property
    def overloaded(self) -> bool:
        return self.scheduler.load.overloaded
