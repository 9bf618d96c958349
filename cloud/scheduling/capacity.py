"""What the analyzer has measurably done lately, for the load report (issue 29): verdicts answered per second,
what it could answer per second with every slot kept busy, and how long events waited for the model. They travel
in the retained load report (shared.protocol.LoadReport, whose `headroom_per_s` is the difference), and the
page, /v1/stats and /metrics read the same figures.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...shared.clock import now_ms
from ...shared.protocol import LoadReport, encode_load_report
from ...shared.stats import percentile
from ..config import SchedulerConfig

log = logging.getLogger("edgetriage.cloud.scheduler")  # the scheduler's load, logged under its name

WINDOW_S = 60.0  # the figures cover the batches finished in the last minute


@dataclass(frozen=True)
class Capacity:
    """`verdicts_per_s`: answered per second over the window; `capacity_per_s`: per second of the model's
    time, times the batches it takes at once (what it would answer kept busy); `queue_wait_ms`: the 95th
    percentile of the window's waits for the model. None: nothing was answered in the window."""

    verdicts_per_s: float | None = None
    capacity_per_s: float | None = None
    queue_wait_ms: float | None = None


class CapacityMeter:
    """Batches as they finish: how many verdicts, how long the model took, how long each event had waited."""

    def __init__(self, concurrency: int, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.concurrency = max(1, concurrency)
        self.window_s = window_s
        self.clock = clock
        self._started = clock()
        self._batches: deque[tuple[float, int, float]] = deque()  # (finished, verdicts, model seconds)
        self._waits: deque[tuple[float, float]] = deque()  # (finished, wait ms)

    def finished(self, verdicts: int, model_s: float, waits_ms: Sequence[float]) -> None:
        now = self.clock()
        self._batches.append((now, verdicts, model_s))
        self._waits.extend((now, w) for w in waits_ms)
        self._forget(now)

    def _forget(self, now: float) -> None:
        while self._batches and self._batches[0][0] < now - self.window_s:
            self._batches.popleft()
        while self._waits and self._waits[0][0] < now - self.window_s:
            self._waits.popleft()

    def snapshot(self) -> Capacity:
        now = self.clock()
        self._forget(now)
        if not self._batches:
            return Capacity()
        verdicts = sum(n for _, n, _ in self._batches)
        model_s = sum(s for _, _, s in self._batches)
        span = min(self.window_s, max(now - self._started, 1e-3))
        waits = sorted(w for _, w in self._waits)
        return Capacity(
            verdicts_per_s=round(verdicts / span, 2),
            capacity_per_s=round(self.concurrency * verdicts / model_s, 2) if model_s > 0 else None,
            queue_wait_ms=round(percentile(waits, 0.95) or 0.0, 1) if waits else None)


@dataclass(frozen=True)
class LoadState:
    """What the scheduler last said of its load: the retained load report's content."""

    overloaded: bool
    queue_depth: int
    ts: int  # epoch milliseconds
    capacity: Capacity = Capacity()

    def report(self) -> LoadReport:
        c = self.capacity
        return LoadReport(overloaded=self.overloaded, queue_depth=self.queue_depth, ts=self.ts,
                          verdicts_per_s=c.verdicts_per_s, capacity_per_s=c.capacity_per_s,
                          queue_wait_ms=c.queue_wait_ms)

    def payload(self) -> bytes:
        """The retained `<prefix>/v1/_cloud/load` message."""
        return encode_load_report(self.report())

    def figures(self) -> dict[str, float | None]:
        """The capacity figures as the page, /v1/stats and /metrics show them (None: not measured yet)."""
        report = self.report()
        headroom = report.headroom_per_s
        return {"verdicts_per_s": report.verdicts_per_s, "capacity_per_s": report.capacity_per_s,
                "headroom_per_s": None if headroom is None else round(headroom, 2),
                "queue_wait_ms": report.queue_wait_ms}


class BusyTime:
    """How long the back-end has had at least one batch in flight, and that as a share of the time since start."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started_at = clock()
        self._since: float | None = None
        self._busy_s = 0.0

    def restart(self) -> None:
        self.started_at = self.clock()

    def running(self, now: float) -> None:
        """A batch started at `now` (the clock only starts if none was running)."""
        if self._since is None:
            self._since = now

    def idle(self) -> None:
        """The last batch in flight ended."""
        if self._since is not None:
            self._busy_s += self.clock() - self._since
            self._since = None

    def busy_s(self) -> float:
        extra = self.clock() - self._since if self._since is not None else 0.0
        return self._busy_s + extra

    def utilisation(self) -> float:
        wall = self.clock() - self.started_at
        return min(1.0, self.busy_s() / wall) if wall > 0 else 0.0


class LoadSignal:
    """Whether the analyzer is overloaded, told to `on_load` when that changes: overloaded from `overload_depth`
    events waiting or a back-end that says it is saturated, normal again at `clear_depth` with the back-end fine.
    `refresh()` tells it again every `load_refresh_s` while overloaded, else when the capacity figures changed
    (at most every `capacity_report_s`), and notices a back-end that recovered while nothing was queued."""

    def __init__(self, config: SchedulerConfig, capacity: CapacityMeter, *, depth: Callable[[], int],
                 saturated: Callable[[], bool], on_load: Callable[[LoadState], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.capacity = capacity
        self.on_load = on_load
        self.clock = clock
        self.state = LoadState(False, 0, now_ms())
        self._depth = depth
        self._saturated = saturated

    def update(self) -> bool:
        """Check the depth and the back-end; True when this check started an overload."""
        saturated = self._saturated()
        if self.state.overloaded:
            if self._depth() <= (self.config.clear_depth or 0) and not saturated:
                self.set(False)
            return False
        if self._depth() >= (self.config.overload_depth or 1) or saturated:
            self.set(True)
            return True
        return False

    def set(self, overloaded: bool, force: bool = False) -> None:
        if not force and overloaded == self.state.overloaded:
            return
        self.state = self.now(overloaded)
        if overloaded:
            log.warning("analyzer overloaded: %d events waiting", self._depth())
        else:
            log.info("analyzer load back to normal (%d waiting)", self._depth())
        self._tell()

    def now(self, overloaded: bool | None = None) -> LoadState:
        """The load report as it would be sent now, capacity measured up to this moment."""
        return LoadState(self.state.overloaded if overloaded is None else overloaded, self._depth(), now_ms(),
                         self.capacity.snapshot())

    def _tell(self) -> None:
        if self.on_load is None:
            return
        try:
            self.on_load(self.state)
        except Exception:  # noqa: BLE001 - a listener's bug must not stop scheduling
            log.exception("on_load callback failed")

    async def refresh(self, on_overload: Callable[[], None]) -> None:
        """Until cancelled: check the load every load_refresh_s (`on_overload` is called when a check starts an
        overload) and tell the report again as the class says."""
        told = self.clock()
        while True:
            await asyncio.sleep(self.config.load_refresh_s)
            if self.update():
                on_overload()
            every = self.config.capacity_report_s
            if self.state.overloaded or (every and self.clock() - told >= every
                                         and self.capacity.snapshot() != self.state.capacity):
                self.state = self.now()
                self._tell()
                told = self.clock()
