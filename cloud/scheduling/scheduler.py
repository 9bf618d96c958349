"""The bounded queue in front of an analyzer back-end: priorities, batches, deadlines, token budgets, overload.

- Bounded: at most `queue_size` events wait. Over capacity an event is never answered with a fallback: it
  waits. A full queue gives up the newest waiting event of a less urgent tier, else of the device holding
  more than its share (cloud.scheduling.fairqueue), for the newcomer, else the newcomer is the one to wait; the one that
  waits gets OverCapacity (the caller leaves it stored and unanswered, and takes it up again when there is
  room). An event still queued at its deadline waits the same way.
- Priority tiers (0 first) by device, camera and label, first matching rule wins; within a tier round-robin
  between sites and devices (one busy device delays only itself), FIFO within a device.
- Batches of up to the back-end's `max_batch`, `concurrency` batches in flight. Before an event is
  dispatched the caller's `still_needed` is asked: a verdict that arrived meanwhile (from this process or
  another sharing the store) may answer it from the cache.
- Deadline per event, counted from its arrival: past it with the model, the verdict is "unknown" saying
  so (the model's late answer is then discarded); still queued, it waits (OverCapacity, above).
- Token budgets per device and per fleet (cloud.scheduling.token_budget), as buckets refilling continuously at
  budget/hour.
  An event from a device (or fleet) whose bucket is empty is refused at once with "unknown" saying which budget
  and when it refills; cache hits are not affected (they never reach the scheduler).
- Overload (cloud.scheduling.capacity.LoadSignal): while the queue holds `overload_depth` events or more, or the
  back-end says it is saturated, `on_load` is told (and told again every `load_refresh_s` with the current depth); once
  the queue is down to `clear_depth` and the back-end is fine, it is told the overload is over.
- Background work (re-asking the model about cached answers, to measure wrong reuse) runs below every
  tier, in a small queue of its own that never counts towards overload and is dropped first.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ...shared.protocol import Event
from ..analysis import Analysis, Backend, fallback
from ..config import SchedulerConfig
from .capacity import BusyTime, CapacityMeter, LoadSignal, LoadState
from .outcome import Outcome, OverCapacity, Released
from .token_budget import Budgets, used_tokens
from .waiting import Job, WaitingRoom

log = logging.getLogger("edgetriage.cloud.scheduler")

BACKGROUND_TIER = 10
HUNG_GRACE_S = 5.0  # a batch running this long past its last deadline is abandoned by its worker


@dataclass
class SchedulerStats:
    submitted: int = 0
    dispatched: int = 0
    batches: int = 0
    withdrawn: int = 0
    shed: int = 0
    queue_full: int = 0
    expired_queued: int = 0
    expired_running: int = 0
    budget_refused: int = 0
    background_dropped: int = 0
    overloads: int = 0
    tokens: float = 0.0


class Scheduler:
    """Call `start()` in the event loop that will `submit()`; `stop()` releases what waits and lets what runs
    finish (bounded)."""

    def __init__(self, backend: Backend, config: SchedulerConfig, *,
                 still_needed: Callable[[Event], bool] | None = None,
                 on_load: Callable[[LoadState], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.backend = backend
        self.config = config
        self.still_needed = still_needed
        self.clock = clock
        self.max_batch = max(1, backend.max_batch)
        self.concurrency = config.concurrency or max(1, backend.concurrency)
        self.capacity = CapacityMeter(self.concurrency, clock=clock)
        self.budgets = Budgets(config.budget, clock)
        self.stats = SchedulerStats()
        self.busy = BusyTime(clock)
        self._room = WaitingRoom()  # what waits, and how many (cloud.scheduling.waiting)
        self._load = LoadSignal(config, self.capacity, depth=lambda: self._room.depth,
                                saturated=self._backend_saturated, on_load=on_load, clock=clock)
        self._running: list[Job] = []
        self._seq = itertools.count()
        self._cond: asyncio.Condition | None = None
        self._workers: list[asyncio.Task] = []
        self._refresher: asyncio.Task | None = None
        self._accepting = False
        self._batch_tasks: set[asyncio.Task] = set()

    # -- lifecycle -------------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._workers:
            raise RuntimeError("Scheduler.start() called twice")
        self._cond = asyncio.Condition()
        self._accepting = True
        self.busy.restart()
        self._workers = [asyncio.create_task(self._worker(), name=f"scheduler-{i}") for i in range(self.concurrency)]
        self._refresher = asyncio.create_task(self._load.refresh(self._count_overload), name="scheduler-load")
        self._load.set(False, force=True)

    async def stop(self, grace_s: float = 10.0) -> None:
        """Stop taking work; release every waiting event (its submitter gets Released); give running batches
        up to `grace_s` to finish."""
        self._accepting = False
        for job in self._room.drain():
            self._finish(job, exc=Released("the scheduler stopped before the model got to this event"))
        if self._batch_tasks:
            await asyncio.wait(set(self._batch_tasks), timeout=grace_s)
        for task in [*self._workers, *([self._refresher] if self._refresher else [])]:
            task.cancel()
        await asyncio.gather(*self._workers, *([self._refresher] if self._refresher else []), return_exceptions=True)
        self._workers = []
        self._refresher = None
        for job in list(self._running):
            self._finish(job, exc=Released("stopped while the model was working on this event"))

    # -- figures ---------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return bool(self._workers)

    @property
    def queue_depth(self) -> int:
        return self._room.depth

    @property
    def in_flight(self) -> int:
        return len(self._running)

    @property
    def load(self) -> LoadState:
        """What the scheduler last said of its load (the retained load report's content)."""
        return self._load.state

    def load_now(self) -> LoadState:
        """The load report as it would be sent now, capacity measured up to this moment (the page, /metrics)."""
        return self._load.now()

    def busy_s(self) -> float:
        """Seconds the back-end has had at least one batch in flight since start."""
        return self.busy.busy_s()

    def utilisation(self) -> float:
        return self.busy.utilisation()

    def tier(self, event: Event) -> int:
        for rule in self.config.priorities:
            if ((rule.device is None or rule.device == event.device)
                    and (rule.camera is None or rule.camera == event.camera)
                    and (rule.label is None or rule.label == event.label)):
                return rule.tier
        return self.config.default_tier

    # -- intake ----------------------------------------------------------------------------------------
    async def submit(self, event: Event, *, arrived: float | None = None, background: bool = False) -> Outcome:
        """The model's answer for `event` within its deadline, or "unknown" saying why not. Raises
        OverCapacity when it has to wait (see the module's docstring), Released when the scheduler stops."""
        if not self._accepting or self._cond is None:
            raise Released("the scheduler is not running")
        now = self.clock()
        arrived = now if arrived is None else arrived
        version = self._version(event)
        self.stats.submitted += 1
        refusal = self.budgets.refusal(event.device, fleet_only=background)
        if refusal is not None:
            if background:
                self.stats.background_dropped += 1
            else:
                self.stats.budget_refused += 1
            return self._refused(event, version, refusal, "budget", arrived)
        job = Job(BACKGROUND_TIER if background else self.tier(event), next(self._seq), event, arrived,
                   arrived + self.config.deadline_s, background, asyncio.get_running_loop().create_future())
        if background and not self._room.admits_background():
            self.stats.background_dropped += 1  # never delays real work, never grows without bound
            return self._refused(event, version, "background queue full", "queue_full", arrived)
        if not background and self._room.depth >= self.config.queue_size:
            worst = self._room.victim(job)
            if worst is None:
                self.stats.queue_full += 1
                raise OverCapacity(f"the analysis queue is full ({self._room.depth} events waiting)")
            self.stats.shed += 1
            self._room.leave(worst)  # one out, one in
            self._finish(worst, exc=OverCapacity("gave up its place in a full analysis queue to a more urgent "
                                                 "event or to a device with fewer waiting"))
        self._room.enter(job)
        self._update_load()
        async with self._cond:
            self._cond.notify()
        remaining = job.deadline - self.clock()
        try:
            return await asyncio.wait_for(asyncio.shield(job.future), max(0.0, remaining))
        except TimeoutError:
            was_running = job.dispatched
            if not job.dead and self._room.leave(job):  # out of the room, or its answer ignored
                self._update_load()
            if job.future is not None:
                job.future.cancel()  # nobody waits for it any more: a late answer or release is dropped
            if not was_running:
                self.stats.expired_queued += 1
                raise OverCapacity(f"still waiting for the model after {self.config.deadline_s:g} s") from None
            self.stats.expired_running += 1
            return self._refused(event, version, "the model did not answer within the deadline of "
                                 f"{self.config.deadline_s:g} s", "deadline", arrived)

    def _refused(self, event: Event, version: str, reason: str, kind: str, arrived: float) -> Outcome:
        now = self.clock()
        analysis = fallback(self.backend.name, version, reason, time.perf_counter())
        return Outcome(analysis, (now - arrived) * 1000, now, refused=kind)

    def _version(self, event: Event) -> str:
        try:
            return self.backend.prompt_version(event)
        except Exception:  # noqa: BLE001 - a broken prompt book must not stop a refusal
            return "unknown"

    # -- dispatch --------------------------------------------------------------------------------------
    def _dispatchable(self) -> bool:
        return self._room.ready(self.clock())

    def _take(self, limit: int) -> list[Job]:
        """Up to `limit` live jobs in turn (cloud.scheduling.waiting), in flight from here: a batch filling up
        is work the back-end has. Those the caller's `still_needed` withdraws are answered with no analysis."""
        now = self.clock()
        taken, withdrawn = self._room.take(limit, now, lambda job: self.still_needed is None
                                           or self._ask_still_needed(job))
        for job in withdrawn:
            self.stats.withdrawn += 1
            self._finish(job, outcome=Outcome(None, (now - job.arrived) * 1000, now))
        self._running.extend(taken)
        if taken:
            self._update_load()
        return taken

    def _ask_still_needed(self, job: Job) -> bool:
        try:
            return bool(self.still_needed(job.event))  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - when unsure, ask the model
            log.exception("still_needed check failed")
            return True

    async def _worker(self) -> None:
        assert self._cond is not None
        while True:
            async with self._cond:
                await self._cond.wait_for(self._dispatchable)
                batch = self._take(self.max_batch)
            if not batch:
                continue
            if len(batch) < self.max_batch and self.config.batch_wait_ms > 0:
                await asyncio.sleep(self.config.batch_wait_ms / 1000)
                async with self._cond:
                    batch += self._take(self.max_batch - len(batch))
            task = asyncio.create_task(self._run(batch))
            self._batch_tasks.add(task)
            task.add_done_callback(self._batch_tasks.discard)
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                raise

    async def _run(self, batch: list[Job]) -> None:
        now = self.clock()
        estimate = self.config.budget.estimate_tokens
        for job in batch:
            self.budgets.charge(None if job.background else job.event.device, estimate)
        self.busy.running(now)
        self.stats.batches += 1
        self.stats.dispatched += len(batch)
        started = now
        results: list[Analysis] | None = None
        limit = max(j.deadline for j in batch) - now + HUNG_GRACE_S
        try:
            results = await asyncio.wait_for(self.backend.analyze_batch([j.event for j in batch]), max(0.1, limit))
            if len(results) != len(batch):
                raise RuntimeError(f"the back-end answered {len(results)} of {len(batch)} events")
        except TimeoutError:
            log.warning("a batch of %d ran past every deadline; abandoned", len(batch))
        except Exception as exc:  # noqa: BLE001 - the contract says never raise; hold back-ends to it here
            log.warning("back-end failed on a batch of %d: %s: %s", len(batch), type(exc).__name__, exc)
            results = [fallback(self.backend.name, self._version(j.event),
                                f"back-end raised {type(exc).__name__}: {exc}", time.perf_counter()) for j in batch]
        finally:
            for job in batch:
                if job in self._running:
                    self._running.remove(job)
            if not self._running:
                self.busy.idle()
        if results is None:
            return  # every submitter's own deadline answers it
        self.capacity.finished(len(batch), self.clock() - started, [(started - j.arrived) * 1000 for j in batch])
        for job, analysis in zip(batch, results, strict=True):
            used = used_tokens(analysis, estimate)
            self.stats.tokens += used
            self.budgets.charge(None if job.background else job.event.device, used - estimate)
            self._finish(job, outcome=Outcome(analysis, (started - job.arrived) * 1000, started, batch=len(batch)))

    def _finish(self, job: Job, *, outcome: Outcome | None = None, exc: BaseException | None = None) -> None:
        job.dead = True
        future = job.future
        if future is None or future.done():
            return
        if exc is not None:
            future.set_exception(exc)
            future.exception()  # retrieved: a submitter that stopped waiting (stopping) must not log it
        else:
            future.set_result(outcome)

    # -- overload (cloud.scheduling.capacity.LoadSignal) ------------------------------------------------------------
    def _update_load(self) -> None:
        if self._load.update():
            self._count_overload()

    def _count_overload(self) -> None:
        self.stats.overloads += 1

    def _backend_saturated(self) -> bool:
        try:
            return bool(self.backend.saturated())
        except Exception:  # noqa: BLE001
            return False
