"""The figures the service keeps about itself (GET /v1/stats and the metrics), with the latency model next to
what was measured, so a reader can see whether the model explains the service:

    α       = events resolved without the LLM ÷ events that reached a decision (cache hits ÷ (hits + LLM))
    L_light = median latency of verdicts from the cache (receipt → verdict stored)
    L_llm   = median model time of LLM verdicts
    L_sched = median queue wait of LLM verdicts (receipt → model start)
    L_total = L_sched + α·L_light + (1−α)·L_llm, beside the measured end-to-end median of all new verdicts
    U       = analyzer busy time ÷ wall time (at least one batch in flight)
    hit rate = cache hits ÷ events looked up (hits + LLM + fallback)
    wrong-reuse rate = reuse checks where the model disagreed with the cache ÷ reuse checks
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any


def _median(values: Iterable[float]) -> float | None:
    data = list(values)
    return round(statistics.median(data), 2) if data else None


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 4) if den else None


class Figures:
    """Computed on demand from the service's counters and latency windows; nothing on the hot path."""

    def __init__(self, service: Any) -> None:
        self.service = service

    def compute(self) -> dict[str, Any]:
        service = self.service
        s = service.stats
        decided = s.cache_hits + s.llm
        alpha = _ratio(s.cache_hits, decided)
        l_light, l_llm, l_sched = _median(s.light_ms), _median(s.llm_ms), _median(s.sched_ms)
        l_total = None
        if alpha is not None:
            parts = (l_sched or 0.0) + alpha * (l_light or 0.0) + (1 - alpha) * (l_llm or 0.0)
            l_total = round(parts, 2)
        scheduler = service.scheduler
        return {
            "alpha": alpha,
            "L_light_ms": l_light,
            "L_llm_ms": l_llm,
            "L_sched_ms": l_sched,
            "L_total_ms": l_total,
            "L_total_formula": "L_sched + alpha*L_light + (1-alpha)*L_llm",
            "measured_total_p50_ms": _median(s.total_ms),
            "U": round(scheduler.utilisation(), 4),
            "hit_rate": _ratio(s.cache_hits, s.cache_hits + s.llm + s.fallback),
            "wrong_reuse_rate": _ratio(s.reuse_disagreed, s.reuse_checked),
            "reuse_checked": s.reuse_checked,
            "reuse_disagreed": s.reuse_disagreed,
            "queue_depth": scheduler.queue_depth,
            "in_flight": scheduler.in_flight,
            "overloaded": scheduler.load.overloaded,
        }

    def snapshot(self) -> dict[str, Any]:
        """Everything for GET /v1/stats: the figures, the service's counters and latency percentiles, the
        scheduler's counters and the budgets."""
        service = self.service
        scheduler = service.scheduler
        return {
            "figures": self.compute(),
            "service": service.stats.snapshot(),
            "scheduler": {**vars(scheduler.stats), "tokens": round(scheduler.stats.tokens),
                          "busy_s": round(scheduler.busy_s(), 3), "max_batch": scheduler.max_batch,
                          "concurrency": scheduler.concurrency},
            "budgets": scheduler.budgets.snapshot(),
            "analyzer": service.backend.name,
            "mqtt_connected": service.mqtt_connected,
        }
