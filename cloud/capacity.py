"""What the analyzer has measurably done lately, for the load report (issue 29): verdicts answered per second,
what it could answer per second with every slot kept busy, and how long events waited for the model. They travel
in the retained load report (shared.protocol.LoadReport, whose `headroom_per_s` is the difference), and the
page, /v1/stats and /metrics read the same figures.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..shared.protocol import LoadReport, encode_load_report
from ..shared.stats import percentile

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
