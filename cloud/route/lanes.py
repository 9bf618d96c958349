"""Several model back-ends in one cloud, each behind a scheduler of its own (a lane), and every event sent to one
of them by cloud.route.routing: the large back-end when it can answer within T_max, else the small one, provisionally.

With one back-end there is one lane and no routing: verdicts carry no `routed_by`. The first lane of cost small
(else the first) is the primary: its scheduler makes the load report devices read (the others' overload shows
in its queue, where their work then goes) and all lanes draw on its token budgets.

Each lane measures its back-end as it runs: a batch's time by batch size (cloud.route.routing.LatencyEstimate, which
the routing reads), the model time of each answer (L_llm per back-end), and whether it is down (it says it is
saturated, or its last `FAILURES_DOWN` answers failed: passed over for `DOWN_S`, then tried again).

With several back-ends and a T_max, every event's closer look is taken first, `LIGHT_AT_ONCE` at a time on threads
of their own (`LightLane`; each prompt then reads it remembered), with what the light path makes of it
(analysis.Light: the policy, or the check; no model): the router then knows what the event has waited, and
whether the light path can answer it where neither model can within T_max.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...shared.protocol import Event, Verdict
from ...shared.stats import median
from ...shared.yielding import yielding_thread
from ..analysis import Analysis, Backend, Leaning, Light
from ..analysis.several import Several
from ..config import CloudConfig
from ..scheduling.capacity import LoadState
from ..scheduling.outcome import Outcome
from ..scheduling.scheduler import Scheduler
from .routing import LaneLoad, LatencyEstimate, Route, RoutePolicy, route

log = logging.getLogger("edgetriage.cloud.lanes")

FAILURES_DOWN = 2  # answers failing in a row that make a back-end count as down
DOWN_S = 10.0  # how long a down back-end is passed over before it is tried again
PROVISIONAL_KEPT = 4096  # events answered provisionally kept for the final answer (their crops: bounded)
FIRST_ANSWER_MS = 800.0  # [analyzer] first_answer_ms by default with several back-ends (none with one)
WINDOW = 1024  # answers per lane the model-time median is taken over
LIGHT = "light"  # the light path's lane name (on a verdict's `model`: "light: check", "light: policy")
LIGHT_AT_ONCE = 4  # closer looks at a time (threads of their own; onnxruntime and OpenCV release the GIL)
LOOK_NICENESS = 5  # the looks' CPU priority: below the loop's and paho's (first answers), above the questions' (10)
LIGHT_FIRST_GUESS_MS = 500.0  # one closer look, until measured


class Timed:
    """A member back-end as its lane's scheduler drives it, timed: each answered batch's time by its size (the
    routing's estimate), and how long the batches running now have run."""

    def __init__(self, backend: Backend, latency: LatencyEstimate, clock: Callable[[], float]) -> None:
        self.backend = backend
        self.name = backend.name
        self.max_batch = backend.max_batch
        self.concurrency = backend.concurrency
        self.latency = latency
        self.clock = clock
        self._started: dict[int, float] = {}

    def prompt_version(self, event: Event) -> str:
        return self.backend.prompt_version(event)

    def saturated(self) -> bool:
        return self.backend.saturated()

    async def close(self) -> None:
        await self.backend.close()

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        token = object()
        started = self._started[id(token)] = self.clock()
        try:
            results = await self.backend.analyze_batch(events)
        finally:
            del self._started[id(token)]
        if not all(a.error for a in results):
            self.latency.observe(len(events), (self.clock() - started) * 1000)
        return results

    def running_ms(self) -> float:
        return (self.clock() - min(self._started.values())) * 1000 if self._started else 0.0


@dataclass(eq=False)
class Lane:
    """One back-end behind its own scheduler, and what is measured of it."""

    name: str
    cost: str
    backend: Timed
    scheduler: Scheduler
    clock: Callable[[], float] = time.monotonic
    answered: int = 0
    failed: int = 0
    failed_in_row: int = 0
    down_until: float = 0.0
    model_ms: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))

    def up(self) -> bool:
        if self.clock() < self.down_until:
            return False
        try:
            return not self.backend.saturated()
        except Exception:  # noqa: BLE001 - a back-end that cannot say is taken at its word of being up
            return True

    def load(self) -> LaneLoad:
        s = self.scheduler
        return LaneLoad(self.name, self.cost, s.queue_depth, s.in_flight, s.concurrency, s.max_batch,
                        self.backend.latency, self.up(), self.backend.running_ms())

    def has_room(self) -> bool:
        """Nothing waits and a batch could start now: room for work below every tier (a final answer)."""
        s = self.scheduler
        return self.up() and s.queue_depth == 0 and s.in_flight < s.concurrency * s.max_batch

    def measured(self, outcome: Outcome) -> None:
        analysis = outcome.analysis
        if analysis is None or outcome.refused is not None:
            return
        if analysis.error is None:
            self.answered += 1
            self.failed_in_row = 0
            self.model_ms.append(analysis.analyze_ms)
            return
        self.failed += 1
        self.failed_in_row += 1
        if self.failed_in_row >= FAILURES_DOWN:
            self.down_until = self.clock() + DOWN_S

    def figures(self) -> dict[str, Any]:
        s = self.scheduler
        return {"cost": self.cost, "up": self.up(), "answered": self.answered, "failed": self.failed,
                "L_llm_ms": median(list(self.model_ms), 1), "batch_ms": self.backend.latency.measured(),
                "expected_answer_ms": round(self.load().answer_ms(), 1), "queue_depth": s.queue_depth,
                "in_flight": s.in_flight, "U": round(s.utilisation(), 4)}


class LightLane:
    """The light path (cloud.route.routing: `neither_in_time`): every event's closer look and what the policy or the
    check make of it, `LIGHT_AT_ONCE` at a time, each timed (its median and expected time are figures); how
    many it answered (neither model in time) and could not tell (a model answered; the others went to a model
    that could answer within T_max)."""

    def __init__(self, light: Light, clock: Callable[[], float] = time.monotonic) -> None:
        self.light = light
        self.clock = clock
        self.latency = LatencyEstimate(LIGHT_FIRST_GUESS_MS)
        self.pending = 0  # looks waiting for a thread or running
        self.looked = 0
        self.answered = 0  # given as the verdict (Lanes.submit counts them)
        self.undecided = 0
        self.look_ms: deque[float] = deque(maxlen=WINDOW)
        self._executor: ThreadPoolExecutor | None = None

    def load(self) -> LaneLoad:
        return LaneLoad(LIGHT, "light", self.pending, 0, LIGHT_AT_ONCE, 1, self.latency)

    async def judge(self, event: Event) -> Analysis | None:
        """The light path's verdict for `event`, or None (it cannot tell, or failed: a model is asked)."""
        if self._executor is None:
            # the looks yield to the event loop and to paho's network thread (shared.yielding): a first answer's
            # publish waits for paho's lock, which its thread holds while it waits for the interpreter's
            self._executor = ThreadPoolExecutor(max_workers=LIGHT_AT_ONCE, thread_name_prefix="light",
                                                initializer=yielding_thread, initargs=(LOOK_NICENESS,))
        self.pending += 1
        try:
            analysis, ms = await asyncio.get_running_loop().run_in_executor(self._executor, self._timed, event)
        finally:
            self.pending -= 1
        if ms is not None:
            self.latency.observe(1, ms)
            self.look_ms.append(ms)
        self.looked += 1
        self.undecided += analysis is None
        return analysis

    def _timed(self, event: Event) -> tuple[Analysis | None, float | None]:
        started = time.perf_counter()
        try:
            analysis = self.light.light(event)
        except Exception:  # noqa: BLE001 - the light path is a shortcut: failing, it leaves the event to a model
            log.exception("the light path failed on %s", event.event_id)
            return None, None
        return analysis, (time.perf_counter() - started) * 1000

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def figures(self) -> dict[str, Any]:
        return {"looked": self.looked, "answered": self.answered, "undecided": self.undecided,
                "L_light_ms": median(list(self.look_ms), 1),
                "expected_answer_ms": round(self.load().answer_ms(), 1), "pending": self.pending}


@dataclass(frozen=True)
class Waiting:
    """An event answered provisionally, kept until its final answer: when it arrived (monotonic) and the route."""

    event: Event
    arrived: float
    route: Route


class Lanes:
    """Every back-end's lane and the routing between them; `submit` is the scheduler's, routed."""

    def __init__(self, backend: Backend, config: CloudConfig, *, still_needed: Callable[[Event], bool],
                 on_load: Callable[[LoadState], None], clock: Callable[[], float] = time.monotonic) -> None:
        analyzer = config.analyzer
        members = [(m.name, m.cost, m.latency_ms, m.backend) for m in backend.members] \
            if isinstance(backend, Several) else [(backend.name, "small", 2000.0, backend)]
        primary = next((i for i, m in enumerate(members) if m[1] == "small"), 0)
        self.lanes: list[Lane] = []
        for i, (name, cost, guess, member) in enumerate(members):
            timed = Timed(member, LatencyEstimate(guess), clock)
            scheduler = Scheduler(timed, config.scheduler, still_needed=still_needed,
                                  on_load=on_load if i == primary else None, clock=clock)
            self.lanes.append(Lane(name, cost, timed, scheduler, clock))
        self.primary = self.lanes[primary].scheduler
        for lane in self.lanes:
            lane.scheduler.budgets = self.primary.budgets  # one token budget, whichever model spends it
        self.routing = len(self.lanes) > 1
        self.policy = RoutePolicy(analyzer.t_max_ms, frozenset(analyzer.large_tiers),
                                  frozenset(analyzer.small_tiers))
        first_ms = analyzer.first_answer_ms if analyzer.first_answer_ms is not None else \
            FIRST_ANSWER_MS if self.routing else 0.0
        self.first_answer_s = first_ms / 1000  # cloud.route.finals: a first answer for an event not answered by then
        # what the facts and the policy said of an event left to the model (analysis.Leaning): its first answer
        self.leaning: Callable[[str], Analysis | None] = backend.leaning if isinstance(backend, Leaning) \
            else lambda _event_id: None
        # the light path, where neither model can answer within T_max (None: one back-end, or none offered)
        self.light = LightLane(backend, clock) if self.routing and isinstance(backend, Light) else None
        self.clock = clock
        self.routed: dict[str, int] = {}  # routed_by -> events
        self._waiting: OrderedDict[str, Waiting] = OrderedDict()

    # -- lifecycle -------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.primary.running

    async def start(self) -> None:
        for lane in self.lanes:
            if not lane.scheduler.running:
                await lane.scheduler.start()

    async def stop(self, grace_s: float = 10.0) -> None:
        await asyncio.gather(*(lane.scheduler.stop(grace_s) for lane in self.lanes if lane.scheduler.running))
        if self.light is not None:
            self.light.close()

    # -- routing ---------------------------------------------------------------------------------------
    def choose(self, event: Event, arrived: float, *, light: bool = False) -> tuple[Lane | None, Route | None]:
        """The lane for `event` (None: the light path) and the route that chose it (None: one lane, nothing to
        choose). `light`: the light path's answer is in hand; T_max counts from `arrived`."""
        if not self.routing:
            return self.lanes[0], None
        in_hand = LaneLoad(LIGHT, "light", 0, 0, 1, 1, LatencyEstimate(0.0)) if light else None
        chosen = route(self.primary.tier(event), [lane.load() for lane in self.lanes], self.policy, in_hand,
                       (self.clock() - arrived) * 1000)
        return next((lane for lane in self.lanes if lane.name == chosen.lane), None), chosen

    async def submit(self, event: Event, *, arrived: float) -> Outcome:
        """The chosen back-end's answer (Scheduler.submit's, with the lane, why and whether provisional), or the
        light path's where neither model can answer within T_max (counted from `arrived`) and it can tell."""
        light, started = None, self.clock()
        if self.light is not None and self.policy.t_max_ms is not None:  # the closer look first, LIGHT_AT_ONCE
            light = await self.light.judge(event)  # at a time (each prompt reads it remembered): the routing knows
            # what the light path says, and what the event has waited for it
        lane, chosen = self.choose(event, arrived, light=light is not None)
        if lane is None:  # neither model can answer within T_max: the light path's answer
            assert chosen is not None and light is not None
            return self._provisional(event, arrived, chosen, Outcome(light, (started - arrived) * 1000, started,
                                                                     lane=LIGHT))
        assert lane is not None
        if chosen is not None:
            self.routed[chosen.reason] = self.routed.get(chosen.reason, 0) + 1
        # queued before anything else runs: the next event's route sees this one waiting
        outcome = await lane.scheduler.submit(event, arrived=arrived)
        lane.measured(outcome)
        if chosen is None:
            return outcome
        if chosen.provisional and outcome.analysis is not None and outcome.refused is None:  # an unknown for a
            # model error too: the large one's answer replaces it
            return self._provisional(event, arrived, chosen, dataclasses.replace(outcome, lane=lane.name))
        return dataclasses.replace(outcome, lane=lane.name, routed_by=chosen.reason)

    def _provisional(self, event: Event, arrived: float, chosen: Route, outcome: Outcome) -> Outcome:
        """A provisional answer, kept for its final (cloud.route.finals), its route counted."""
        if outcome.lane == LIGHT:
            self.routed[chosen.reason] = self.routed.get(chosen.reason, 0) + 1
            if self.light is not None:
                self.light.answered += 1
        self._waiting[event.event_id] = Waiting(event, arrived, chosen)
        while len(self._waiting) > PROVISIONAL_KEPT:
            self._waiting.popitem(last=False)
        return dataclasses.replace(outcome, routed_by=chosen.reason, provisional=True)

    def mark(self, verdict: Verdict, outcome: Outcome) -> Verdict:
        """A model verdict with its route: which back-end (`model`), why (`routed_by`), and, for a provisional
        one, no reuse rule (only a final answer is reused)."""
        if outcome.lane is None:
            return verdict
        update: dict[str, Any] = {"model": f"{outcome.lane}: {verdict.model}"[:128], "routed_by": outcome.routed_by}
        if outcome.provisional:
            update.update(provisional=True, cache=None)
        return verdict.model_copy(update=update)

    async def ask_in_background(self, event: Event) -> Outcome:
        """Below every priority tier, on the back-end whose answers are final (the large one; the only one): a
        reuse check (cloud.reuse.verdicts.ReuseChecks) measures wrong reuse against the best judge there is."""
        lane = next((lane for lane in self.lanes if lane.cost == "large"), self.lanes[0]) if self.routing \
            else self.lanes[0]
        return await lane.scheduler.submit(event, background=True)

    # -- final answers (cloud.route.finals) ------------------------------------------------------------------
    def waiting(self, event_id: str) -> Waiting | None:
        """The provisionally answered event of this id, taken out of the list (None: none such, or forgotten)."""
        return self._waiting.pop(event_id, None)

    def final_lane(self) -> Lane | None:
        """The large lane with room for a final answer now (None: none has)."""
        return next((lane for lane in self.lanes if lane.cost == "large" and lane.has_room()), None)

    async def ask_final(self, lane: Lane, event: Event) -> Outcome:
        """The large back-end's answer, below every priority tier (Scheduler.submit(background=True))."""
        outcome = await lane.scheduler.submit(event, background=True)
        lane.measured(outcome)
        return dataclasses.replace(outcome, lane=lane.name)

    # -- figures ---------------------------------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        """Per back-end: cost, up, answers, L_llm, batch time by size, expected answer time, queue; the route
        counts and the target."""
        return {"t_max_ms": self.policy.t_max_ms, "routed_by": dict(self.routed),
                "backends": {lane.name: lane.figures() for lane in self.lanes},
                "light": self.light.figures() if self.light is not None else None}
