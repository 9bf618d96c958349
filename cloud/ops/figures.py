"""The figures the service keeps about itself, with the latency model next to what was measured, so a reader
can see whether the model explains the service. This is their one definition: GET /v1/stats, /metrics and
the page all read `latency_model` (the page through the service's `Figures` when it has one):

    α       = verdicts answered without a model ÷ (those + model verdicts): by a cache (the cloud's, or a device's
              own where that device reports its answers here, as the demo's does), by the operator's policy or
              the check decided at once (`model` "policy": no model asked), or, with several back-ends, by the
              light path where neither model could answer within T_max (provisional: `neither_in_time`)
    L_light = median latency of those answers (cloud: receipt → verdict stored; device: its cache lookup)
    L_llm   = median model time of model verdicts
    L_sched = median queue wait of LLM verdicts (receipt → model start)
    L_total = L_sched + α·L_light + (1−α)·L_llm, beside the measured median of all those answers' latencies
    U       = analyzer busy time ÷ wall time (at least one batch in flight)
    hit rate = cloud cache hits ÷ events the cloud looked up (hits + LLM + fallback)
    wrong-reuse rate = reuse checks where the model disagreed with the cache ÷ reuse checks
    routing (several back-ends, cloud.route.lanes and cloud.route.finals): per back-end L_llm (median model time of its
    answers), its batch time by size and expected answer time; the routes taken; L_total beside T_max;
    provisional share = model verdicts given provisionally ÷ events routed to a model; final agreement =
    final answers that said what the provisional one had ÷ final answers
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ...shared.stats import median

if TYPE_CHECKING:
    from ..analysis import Backend
    from ..broker.publisher import Publisher
    from ..counts.servicestats import ServiceStats
    from ..route.finals import Finals
    from ..route.lanes import Lanes
    from ..scheduling.scheduler import Scheduler

DEVICE_WINDOW = 4096  # recent device lookups kept, as many as the service keeps per latency series


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 4) if den else None


@dataclass(frozen=True)
class Answers:
    """What the latency model is computed from: how many answers each path gave, and their latencies (ms)."""

    cloud_cache: int = 0
    device_cache: int = 0
    light: int = 0  # the light path's verdicts (no model, provisional)
    llm: int = 0  # verdicts of source "llm", `ruled` among them
    ruled: int = 0  # decided at once by the policy or the check: no model asked
    fallback: int = 0
    light_ms: Sequence[float] = ()  # cache and light-path answers: cloud receipt → verdict, or the device's lookup
    llm_ms: Sequence[float] = ()  # model time of LLM verdicts
    sched_ms: Sequence[float] = ()  # queue wait of LLM verdicts
    measured_ms: Sequence[float] = ()  # every answer's latency (cache, LLM and fallback)


def latency_model(a: Answers) -> dict[str, Any]:
    """α, L_light, L_llm, L_sched, L_total beside the measured median, and the cloud's cache hit rate."""
    cached = a.cloud_cache + a.device_cache + a.light + a.ruled
    alpha = _ratio(cached, cached + a.llm - a.ruled)
    l_light, l_llm, l_sched = median(a.light_ms), median(a.llm_ms), median(a.sched_ms)
    l_total = None
    if alpha is not None:
        l_total = round((l_sched or 0.0) + alpha * (l_light or 0.0) + (1 - alpha) * (l_llm or 0.0), 2)
    return {
        "alpha": alpha,
        "L_light_ms": l_light,
        "L_llm_ms": l_llm,
        "L_sched_ms": l_sched,
        "L_total_ms": l_total,
        "L_total_formula": "L_sched + alpha*L_light + (1-alpha)*L_llm",
        "measured_total_p50_ms": median(a.measured_ms),
        "hit_rate": _ratio(a.cloud_cache, a.cloud_cache + a.llm + a.fallback),
    }


@dataclass
class DeviceAnswers:
    """Answers a device's own cache gave, reported by a device feed running next to the service (the demo);
    a remote device's cache answers never reach the cloud and are not counted."""

    count: int = 0
    lookup_ms: deque[float] = field(default_factory=lambda: deque(maxlen=DEVICE_WINDOW))

    def add(self, lookup_ms: float | None) -> None:
        self.count += 1
        if lookup_ms is not None:
            self.lookup_ms.append(lookup_ms)


class Counted(Protocol):
    """What the figures are computed from: the service's counters and latency windows, its scheduler, the
    model back-end and the broker connection (its publisher)."""

    @property
    def stats(self) -> ServiceStats: ...

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def backend(self) -> Backend: ...

    @property
    def publisher(self) -> Publisher: ...

    @property
    def lanes(self) -> Lanes: ...

    @property
    def finals(self) -> Finals: ...


class Figures:
    """Computed on demand from the service's counters and latency windows; nothing on the hot path."""

    def __init__(self, service: Counted) -> None:
        self.service = service
        self.device = DeviceAnswers()

    def device_answer(self, lookup_ms: float | None) -> None:
        """A device in the same process answered a track from its own cache (call on the service's loop)."""
        self.device.add(lookup_ms)

    def answers(self) -> Answers:
        s, d = self.service.stats, self.device
        return Answers(cloud_cache=s.cache_hits, device_cache=d.count, light=s.light, llm=s.llm, ruled=s.ruled,
                       fallback=s.fallback,
                       light_ms=[*s.light_ms, *d.lookup_ms], llm_ms=list(s.llm_ms), sched_ms=list(s.sched_ms),
                       measured_ms=[*s.total_ms, *d.lookup_ms])

    def compute(self) -> dict[str, Any]:
        service = self.service
        s = service.stats
        scheduler = service.scheduler
        return {
            **latency_model(self.answers()),
            "device_cache_answers": self.device.count,
            "U": round(scheduler.utilisation(), 4),
            "wrong_reuse_rate": _ratio(s.reuse_disagreed, s.reuse_checked),
            "reuse_checked": s.reuse_checked,
            "reuse_disagreed": s.reuse_disagreed,
            "queue_depth": scheduler.queue_depth,
            "in_flight": scheduler.in_flight,
            "overloaded": scheduler.load.overloaded,
            "routing": self.routing(),
        }

    def routing(self) -> dict[str, Any]:
        """Per back-end (cloud.route.lanes: L_llm, batch time by size, expected answer time, queue), the routes taken,
        L_total against T_max, the first answers, the provisional share and provisional-vs-final agreement."""
        lanes, finals = self.service.lanes, self.service.finals
        model = latency_model(self.answers())
        t_max = lanes.policy.t_max_ms
        return {**lanes.figures(), **finals.figures(), "L_total_ms": model["L_total_ms"],
                "L_total_within_t_max": None if t_max is None or model["L_total_ms"] is None
                else model["L_total_ms"] <= t_max}

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
                          "concurrency": scheduler.concurrency, **scheduler.load_now().figures()},
            "budgets": scheduler.budgets.snapshot(),
            "analyzer": service.backend.name,
            "mqtt_connected": service.publisher.connected,
        }
