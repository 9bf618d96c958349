"""Which of several model back-ends answers an event: the seed's hybrid scheduler on the event path.

Per event, each back-end's time to answer is estimated from what waits on it and how long its batches take
(measured as it runs, per batch size, a moving estimate; `LatencyEstimate`). The large back-end answers when it
can within the latency target T_max (`[analyzer] t_max_ms`), else the small one does (unless it would take
longer still), and its answer is provisional: the large one is asked again when it has room, and its answer is
final. When neither can answer within T_max, the light path does where it can (the policy, or the check over
the cloud's closer look: no model; analysis.light), provisionally too: the seed's degradation, L_total =
L_sched + α·L_light + (1−α)·L_llm kept under T_max by a larger α. Its time is estimated as a back-end's is (its
looks waiting, `concurrency` at once, each timed). A tier pinned to the large back-end waits for it; a tier for
which the small one is enough goes there; a back-end that is down (it says it is saturated, or its last answers
failed) is passed over for the other.

Pure: `route` reads the loads it is given and decides; cloud.route.lanes keeps the loads and acts on the decision.
The reason is one word of `REASONS`, carried on the verdict as `routed_by`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

REASONS = {
    "within_t_max": "the large back-end could answer within T_max",
    "large_busy": "the large back-end could not answer within T_max: the small one answered, provisionally",
    "neither_in_time": "neither back-end could answer within T_max: the light path (the policy, or the check over "
                       "the closer look; no model) answered, provisionally",
    "pinned": "the event's priority tier waits for the large back-end",
    "small_enough": "the small back-end is enough for the event's priority tier",
    "no_target": "no T_max is set: the large back-end answers",
    "large_down": "the large back-end is down: the small one answered, provisionally",
    "small_down": "the small back-end is down: the large one answered",
    "both_busy": "neither could answer within T_max (nor the light path) and the small one would take longer: the "
                 "large one answered",
    "all_down": "every back-end is down: the one expected to answer first was asked",
    "only": "one back-end of the kind needed",
}
EWMA_WEIGHT = 0.2  # the newest batch's share of the moving estimate
SPREAD = 2.0  # deviations above the moving average a batch is planned for: one slower than usual still fits


class LatencyEstimate:
    """How long one batch of a back-end takes, by batch size: a moving average per size seen plus `SPREAD` times
    its moving mean deviation (T_max is met by the slow batches too, not only by the average one); for a size not
    seen yet the nearest measured one scaled by the square root of the size ratio (a batch costs less than its
    events one by one); before any measurement, the configured first guess."""

    def __init__(self, first_guess_ms: float, weight: float = EWMA_WEIGHT) -> None:
        self.first_guess_ms = first_guess_ms
        self.weight = weight
        self._by_size: dict[int, tuple[float, float]] = {}  # size -> (moving average, moving mean deviation)

    def observe(self, batch: int, ms: float) -> None:
        if batch < 1 or not math.isfinite(ms) or ms < 0:
            return
        old = self._by_size.get(batch)
        if old is None:
            self._by_size[batch] = (ms, 0.0)
            return
        mean, dev = old
        self._by_size[batch] = (mean + self.weight * (ms - mean), dev + self.weight * (abs(ms - mean) - dev))

    def _planned(self, size: int) -> float:
        mean, dev = self._by_size[size]
        return mean + SPREAD * dev

    def batch_ms(self, batch: int) -> float:
        batch = max(1, batch)
        if batch in self._by_size:
            return self._planned(batch)
        if not self._by_size:
            return self.first_guess_ms
        nearest = min(self._by_size, key=lambda size: (abs(size - batch), size))
        return self._planned(nearest) * math.sqrt(batch / nearest)

    def measured(self) -> dict[int, float]:
        """Batch size -> the time planned for it (average + SPREAD deviations), ms, for the sizes measured."""
        return {size: round(self._planned(size), 1) for size in sorted(self._by_size)}


@dataclass(frozen=True)
class LaneLoad:
    """One back-end as the router sees it at one moment."""

    name: str
    cost: str  # "small" | "large"
    waiting: int  # events queued for it
    running: int  # events it is working on
    concurrency: int  # batches at once
    max_batch: int
    latency: LatencyEstimate
    up: bool = True
    running_ms: float = 0.0  # how long the oldest batch now running has run (a slow one shows before it ends)

    def answer_ms(self) -> float:
        """Expected time until one more event would be answered: the rounds of full batches ahead of it, and its
        own, each as long as a batch of the size the queue makes (at least as long as the one running now)."""
        ahead = max(0, self.waiting) + max(0, self.running)
        per_round = max(1, self.max_batch) * max(1, self.concurrency)
        rounds = ahead // per_round + 1
        size = min(max(1, self.max_batch), max(1, math.ceil((ahead + 1) / max(1, self.concurrency))))
        return rounds * max(self.latency.batch_ms(size), self.running_ms)


@dataclass(frozen=True)
class Route:
    """Where one event goes and why; `provisional`: the answer it gets there is to be replaced by the large
    back-end's (asked again when it has room)."""

    lane: str
    reason: str
    expected_ms: float
    provisional: bool = False


@dataclass(frozen=True)
class RoutePolicy:
    """The operator's word on routing: T_max (None: no target) and the tiers pinned to the large back-end or
    for which the small one is enough."""

    t_max_ms: float | None = None
    large_tiers: Collection[int] = ()
    small_tiers: Collection[int] = ()


def _best(lanes: Sequence[LaneLoad]) -> tuple[LaneLoad, float] | None:
    if not lanes:
        return None
    timed = [(lane, lane.answer_ms()) for lane in lanes]
    return min(timed, key=lambda pair: pair[1])


def route(tier: int, lanes: Sequence[LaneLoad], policy: RoutePolicy, light: LaneLoad | None = None,
          spent_ms: float = 0.0) -> Route:
    """The back-end for one event of priority `tier` (see the module's docstring). `lanes` is not empty; `light`:
    the light path, where one may answer this event (None: it cannot, or could not); `spent_ms`: of T_max, what
    the event has already waited (T_max counts from its arrival)."""
    if not lanes:
        raise ValueError("route() needs at least one back-end")
    smalls = [lane for lane in lanes if lane.cost == "small"]
    larges = [lane for lane in lanes if lane.cost == "large"]
    if not smalls or not larges:  # one kind only: the one expected to answer first
        best = _best([lane for lane in lanes if lane.up]) or _best(lanes)
        assert best is not None
        return Route(best[0].name, "only" if best[0].up else "all_down", best[1])
    small = _best([lane for lane in smalls if lane.up])
    large = _best([lane for lane in larges if lane.up])
    if small is None and large is None:
        best = _best(lanes)
        assert best is not None
        return Route(best[0].name, "all_down", best[1])
    if tier in policy.small_tiers:
        return Route(small[0].name, "small_enough", small[1]) if small is not None \
            else Route(large[0].name, "small_down", large[1])  # type: ignore[index]
    if large is None:
        assert small is not None
        return Route(small[0].name, "large_down", small[1], provisional=True)
    if tier in policy.large_tiers:
        return Route(large[0].name, "pinned", large[1])
    if policy.t_max_ms is None:
        return Route(large[0].name, "no_target", large[1])
    left = policy.t_max_ms - spent_ms
    if large[1] <= left:
        return Route(large[0].name, "within_t_max", large[1])
    if small is not None and small[1] <= left:
        return Route(small[0].name, "large_busy", small[1], provisional=True)
    if light is not None and light.up and (light_ms := light.answer_ms()) <= max(0.0, left):  # in time, or
        return Route(light.name, "neither_in_time", light_ms, provisional=True)  # in hand already (0 ms) though late
    if small is None:
        return Route(large[0].name, "small_down", large[1])
    if small[1] >= large[1]:  # the small one no quicker: the large one's answer is worth the wait
        return Route(large[0].name, "both_busy", large[1])
    return Route(small[0].name, "large_busy", small[1], provisional=True)
