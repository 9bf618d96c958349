"""What the cloud service counts and measures, and its throttled warnings: the figures `/v1/stats`, `/metrics`
and the page read (through the service)."""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from ...shared.protocol import Verdict
from ...shared.stats import median, percentile
from ..analysis.gate import AT_ONCE_MODEL

LIGHT_ROUTE = "neither_in_time"  # cloud.route.routing's reason on a verdict of the light path
LATENCY_WINDOW = 4096  # recent samples kept per latency series
FEEDBACK_KEY = ("device", "camera", "kind")  # what ServiceStats.feedback is keyed by, in order


def _latencies() -> deque[float]:
    return deque(maxlen=LATENCY_WINDOW)


@dataclass
class ServiceStats:
    """Counters since start, and recent latencies in ms. Readable as attributes or as `stats["llm"]`."""

    received: int = 0
    rejected: int = 0
    duplicates: int = 0
    cache_hits: int = 0
    light: int = 0  # verdicts of the light path (no model; provisional): neither model could answer within T_max
    llm: int = 0
    ruled: int = 0  # of the `llm` ones (their source), those decided at once by the policy or the check: no model
    overrides: int = 0  # model verdicts the consistency check overruled (cloud.analysis.check)
    corrected: dict[str, int] = field(default_factory=dict)  # model descriptions replaced by the facts', by kind
    fallback: int = 0
    published: int = 0
    unpublished: int = 0  # stored but not handed to the broker (disconnected); the redelivery republishes it
    json_unread: int = 0  # published verdicts whose JSON form was not sent: nobody read `verdicts` (publisher)
    claimed_elsewhere: int = 0  # events another live worker holds a claim on; that worker answers them
    taken_over: int = 0  # events taken over from a worker whose claim ran out (it died or stopped)
    claims_lost: int = 0  # work discarded because our own lease ran out first
    claims_retaken: int = 0  # our leases that ran out (a store outage) with no other holder, taken again
    retried: int = 0  # answers tried again after a store or broker error
    released: int = 0  # messages given up on for now: left to the broker's redelivery, or kept for another try
    rejected_by: dict[str, int] = field(default_factory=dict)  # rejections by ProtocolError.code
    reuse_checked: int = 0  # cache hits the model was asked about again (reuse.verify_sample)
    reuse_disagreed: int = 0  # ... where it gave another verdict than the cache
    reuse_unchecked: int = 0  # checks that got no usable model answer (budget, queue, model error)
    site_offers: int = 0  # verdicts offered to a site's other devices
    feedback: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (device, camera, kind) -> count
    crops_not_kept: dict[str, int] = field(default_factory=dict)  # device -> crops past its quota (reuse.cropquota)
    total_ms: deque[float] = field(default_factory=_latencies)  # receipt → verdict stored, new verdicts
    queue_ms: deque[float] = field(default_factory=_latencies)  # receipt → model start (model verdicts)
    analyze_ms: deque[float] = field(default_factory=_latencies)  # model time (model verdicts)
    light_ms: deque[float] = field(default_factory=_latencies)  # receipt → verdict, cache hits and the light
    # path's verdicts (L_light)
    llm_ms: deque[float] = field(default_factory=_latencies)  # model time, LLM verdicts only (L_llm)
    sched_ms: deque[float] = field(default_factory=_latencies)  # queue wait, LLM verdicts only (L_sched)

    def __getitem__(self, key: str) -> Any:
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def reject(self, code: str) -> None:
        """A message that could not be accepted, by ProtocolError.code."""
        self.rejected += 1
        self.rejected_by[code] = self.rejected_by.get(code, 0) + 1

    def count(self, verdict: Verdict, total_ms: float) -> None:
        """A new verdict stored, `total_ms` after its event arrived."""
        if verdict.source == "cloud_cache":
            self.cache_hits += 1
            self.light_ms.append(total_ms)
        elif verdict.routed_by == LIGHT_ROUTE:
            self.light += 1
            self.light_ms.append(total_ms)
        else:
            if verdict.source == "llm" and verdict.model == AT_ONCE_MODEL:  # no model asked: as fast as the
                self.llm += 1  # policy's reading of the closer look (α counts it with the answers without a model)
                self.ruled += 1
                self.light_ms.append(total_ms)
            elif verdict.source == "llm":
                self.llm += 1
                self.overrides += verdict.checked is not None and verdict.verdict != verdict.model_verdict
                for kind in verdict.corrected:
                    self.corrected[kind] = self.corrected.get(kind, 0) + 1
                self.llm_ms.append(verdict.timings.analyze_ms)
                self.sched_ms.append(verdict.timings.queue_ms)
            else:
                self.fallback += 1
            self.queue_ms.append(verdict.timings.queue_ms)
            self.analyze_ms.append(verdict.timings.analyze_ms)
        self.total_ms.append(total_ms)

    def snapshot(self) -> dict[str, Any]:
        """Every field, ready for JSON (`jsonable`): counters as they are, a latency series as n/p50/p95/max,
        the feedback counts as rows. /healthz, /v1/stats and the page read this, never the fields raw."""
        return {f.name: jsonable(f.name, getattr(self, f.name)) for f in fields(self)}


def jsonable(name: str, value: Any) -> Any:
    """One ServiceStats field as JSON takes it. A field of a type not handled here is a TypeError naming it,
    so a new field cannot reach /healthz unserialisable (a tuple-keyed dict answered 500 once)."""
    if isinstance(value, deque):
        samples = sorted(value)
        return {"n": len(samples), "p50": median(samples, 1),
                "p95": round(percentile(samples, 0.95), 1) if samples else None,
                "max": round(samples[-1], 1) if samples else None}
    if isinstance(value, bool) or not isinstance(value, int | float | dict):
        raise TypeError(f"ServiceStats.{name}: {type(value).__name__} has no JSON form (servicestats.jsonable)")
    if not isinstance(value, dict):
        return value
    if all(isinstance(k, str) and isinstance(v, int) for k, v in value.items()):
        return dict(sorted(value.items()))
    if all(isinstance(k, tuple) and len(k) == len(FEEDBACK_KEY) for k in value):
        return [{**dict(zip(FEEDBACK_KEY, k, strict=True)), "count": n} for k, n in sorted(value.items())]
    raise TypeError(f"ServiceStats.{name}: a dict keyed other than by text or {FEEDBACK_KEY} has no JSON form")


class Throttled:
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


class HitLog:
    """Cache hits said at info as a count, at most once per `interval_s` (the next hit after it says it): a line
    per hit would be a formatted write on the hot path, costing more than the answer. Each hit's own line
    (`say`) only where the logger takes debug."""

    def __init__(self, logger: logging.Logger, say: Callable[[Verdict, bool], None], interval_s: float = 60.0) -> None:
        self._logger = logger
        self._say = say
        self.interval_s = interval_s
        self._since = time.monotonic()
        self._count = 0
        self._unpublished = 0

    def hit(self, verdict: Verdict, published: bool) -> None:
        self._count += 1
        self._unpublished += not published
        now = time.monotonic()
        if now - self._since >= self.interval_s:
            self._logger.info("%d verdict(s) answered from the cache in the last %.0f s%s", self._count,
                              now - self._since, f" ({self._unpublished} not published: no broker connection)"
                              if self._unpublished else "")
            self._since, self._count, self._unpublished = now, 0, 0
        if self._logger.isEnabledFor(logging.DEBUG):
            self._say(verdict, published)
