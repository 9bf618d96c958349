"""Prometheus metrics for the cloud service, in the text exposition format (version 0.0.4), written by hand:
a few counters, gauges and histograms do not need a client library.

Names follow Prometheus conventions: `edgetriage_cloud_` prefix, base units (seconds), `_total` on
counters, `_ratio` on 0..1 gauges. Latencies are histograms (not summaries), so several workers'
figures can be added up and `histogram_quantile()` gives p50/p95 in Grafana.

    edgetriage_cloud_events_received_total          messages taken in (valid or not)
    edgetriage_cloud_events_rejected_total          refused by the decoder or the topic check
    edgetriage_cloud_events_duplicate_total         an event id seen before (answered from the store)
    edgetriage_cloud_verdicts_total{source}         new verdicts: llm, cloud_cache, fallback
    edgetriage_cloud_verdicts_overruled_total       model verdicts the consistency check overruled
    edgetriage_cloud_feedback_total{device,camera,kind}  operator feedback: confirmed or corrected verdicts
    edgetriage_cloud_crops_not_kept_total{device}   crops not stored: the device was past its quota
    edgetriage_cloud_verdicts_published_total       verdicts handed to the broker
    edgetriage_cloud_verdicts_unpublished_total     stored but not handed over (no connection)
    edgetriage_cloud_verdicts_json_unread_total     published without the JSON form: nobody read `verdicts`
    edgetriage_cloud_verdict_seconds{source}        receipt -> verdict stored (histogram)
    edgetriage_cloud_queue_wait_seconds             receipt -> model start, model verdicts (histogram)
    edgetriage_cloud_analyze_seconds                model time per verdict (histogram)
    edgetriage_cloud_alpha_ratio                    α as cloud.ops.figures defines it (the page and /v1/stats too)
    edgetriage_cloud_queue_depth                    events received and not yet answered
    edgetriage_cloud_mqtt_connected                 1 while the broker connection is up
    edgetriage_cloud_overloaded                     1 while the service says it is overloaded (if it says)
    edgetriage_cloud_ask_*                          questions: answers by route, partial, refused, alpha, L_total
    edgetriage_cloud_backend_*{backend}             per back-end: up, L_llm, expected answer time, queue, answers
    edgetriage_cloud_routed_total{reason}           events routed to a back-end, by reason (cloud.route.routing)
    edgetriage_cloud_provisional_total{kind}        first answers, provisional ones, finals, changed finals
    edgetriage_cloud_provisional_share_ratio        verdicts given provisionally (small model, light path) / routed
    edgetriage_cloud_light_*                        the light path: answers by result, median closer-look time
    edgetriage_cloud_final_agreement_ratio          finals that agreed with the provisional answer / finals
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...shared.protocol import CORRECTED_KINDS, Verdict
from ..counts.servicestats import ServiceStats
from .observed import Counted, Listened, ObservedService

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                     120.0)
SOURCES = ("llm", "cloud_cache", "fallback")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Histogram:
    """Cumulative buckets, sum and count per label set; observe() is one scan of ~16 bounds."""

    def __init__(self, name: str, help_text: str, buckets: Sequence[float] = LATENCY_BUCKETS_S,
                 labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self.help = help_text
        self.buckets = tuple(sorted(buckets))
        self.labelnames = tuple(labelnames)
        self._series: dict[tuple[str, ...], list[float]] = {}  # labels -> [bucket counts..., sum, count]
        if not self.labelnames:
            self.touch()  # exposed from the start, so rate() has a zero to begin from

    def touch(self, *labelvalues: str) -> list[float]:
        """The series for these label values, created at zero if new."""
        series = self._series.get(labelvalues)
        if series is None:
            series = self._series[labelvalues] = [0.0] * (len(self.buckets) + 2)
        return series

    def observe(self, value: float, *labelvalues: str) -> None:
        if not math.isfinite(value):
            return
        series = self.touch(*labelvalues)
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                series[i] += 1
        series[-2] += value
        series[-1] += 1

    def lines(self) -> Iterable[str]:
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} histogram"
        for labelvalues, series in sorted(self._series.items()):
            base = dict(zip(self.labelnames, labelvalues, strict=True))
            for bound, count in zip(self.buckets, series, strict=False):
                yield f"{self.name}_bucket{_labels({**base, 'le': _number(bound)})} {_number(count)}"
            yield f"{self.name}_bucket{_labels({**base, 'le': '+Inf'})} {_number(series[-1])}"
            yield f"{self.name}_sum{_labels(base)} {_number(series[-2])}"
            yield f"{self.name}_count{_labels(base)} {_number(series[-1])}"


class Exposition:
    """Collects metric families and renders them in the text format."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def _family(self, kind: str, name: str, help_text: str,
                samples: Iterable[tuple[dict[str, str], float]]) -> None:
        self._lines.append(f"# HELP {name} {help_text}")
        self._lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            self._lines.append(f"{name}{_labels(labels)} {_number(value)}")

    def counter(self, name: str, help_text: str, value: float | Iterable[tuple[dict[str, str], float]]) -> None:
        self._family("counter", name, help_text, [({}, value)] if isinstance(value, (int, float)) else value)

    def gauge(self, name: str, help_text: str, value: float | Iterable[tuple[dict[str, str], float]]) -> None:
        self._family("gauge", name, help_text, [({}, value)] if isinstance(value, (int, float)) else value)

    def histogram(self, histogram: Histogram) -> None:
        self._lines.extend(histogram.lines())

    def render(self) -> str:
        return "\n".join(self._lines) + "\n"


class CloudMetrics:
    """The cloud service's metrics: counters read from its stats at scrape time, latency histograms fed by
    its verdict listener (`attach`)."""

    def __init__(self) -> None:
        self.verdict_seconds = Histogram("edgetriage_cloud_verdict_seconds",
                                         "Receipt of an event to its verdict stored, by verdict source.",
                                         labelnames=("source",))
        self.queue_wait_seconds = Histogram("edgetriage_cloud_queue_wait_seconds",
                                            "Receipt of an event to the model starting on it (model verdicts).")
        self.analyze_seconds = Histogram("edgetriage_cloud_analyze_seconds",
                                         "Model time per verdict (model verdicts).")
        for source in SOURCES:
            self.verdict_seconds.touch(source)

    def attach(self, service: Listened) -> None:
        service.verdict_listeners.append(self.observe)

    def observe(self, verdict: Verdict) -> None:
        if (verdict.provisional and verdict.source == "fallback") or verdict.provisional_was is not None:
            return  # a first answer, a final replacing a provisional one: the event's verdict was timed already
        t = verdict.timings
        self.verdict_seconds.observe(t.total_ms / 1000.0, verdict.source)
        if verdict.source != "cloud_cache":
            self.queue_wait_seconds.observe(t.queue_ms / 1000.0)
            self.analyze_seconds.observe(t.analyze_ms / 1000.0)

    def render(self, service: ObservedService | None) -> str:
        out = Exposition()
        stats = service.stats if service is not None else ServiceStats()  # an API-only process counts nothing
        out.counter("edgetriage_cloud_events_received_total", "Messages taken in on the events topics.",
                    stats.received)
        out.counter("edgetriage_cloud_events_rejected_total", "Messages refused (decoder limits, wrong topic).",
                    stats.rejected)
        out.counter("edgetriage_cloud_events_duplicate_total", "Events whose id was seen before.",
                    stats.duplicates)
        by_source = {"llm": stats.llm, "cloud_cache": stats.cache_hits, "fallback": stats.fallback}
        out.counter("edgetriage_cloud_verdicts_total", "New verdicts by source.",
                    [({"source": s}, v) for s, v in by_source.items()])
        out.counter("edgetriage_cloud_verdicts_overruled_total",
                    "Model verdicts the consistency check overruled (the verdict says why in `checked`).",
                    stats.overrides)
        out.counter("edgetriage_cloud_descriptions_corrected_total",
                    "Model descriptions that said more than the facts (by kind: person, colour, object, zone, "
                    "time, dwell, direction), replaced by the facts' own words.",
                    [({"kind": k}, stats.corrected.get(k, 0)) for k in CORRECTED_KINDS])
        out.counter("edgetriage_cloud_feedback_total", "Operator feedback on verdicts (cloud.teach.feedback), by "
                    "camera and kind: confirmed, or corrected.",
                    [({"device": d, "camera": c, "kind": k}, n) for (d, c, k), n in sorted(stats.feedback.items())])
        out.counter("edgetriage_cloud_crops_not_kept_total", "Crops not stored: their device was past its "
                    "[retention] crop_quota_mb (the event was answered).",
                    [({"device": d}, n) for d, n in sorted(stats.crops_not_kept.items())])
        out.counter("edgetriage_cloud_verdicts_published_total", "Verdicts handed to the broker.",
                    stats.published)
        out.counter("edgetriage_cloud_verdicts_unpublished_total",
                    "Verdicts stored but not handed to the broker (no connection).", stats.unpublished)
        out.counter("edgetriage_cloud_verdicts_json_unread_total", "Verdicts whose JSON form was not sent: nobody "
                    "subscribed to their verdicts topic.", stats.json_unread)
        out.histogram(self.verdict_seconds)
        out.histogram(self.queue_wait_seconds)
        out.histogram(self.analyze_seconds)
        if service is not None:
            out.gauge("edgetriage_cloud_queue_depth", "Events received and not yet answered.", service.pending)
            out.gauge("edgetriage_cloud_mqtt_connected", "1 while the broker connection is up.",
                      1 if service.publisher.connected else 0)
            out.gauge("edgetriage_cloud_overloaded", "1 while the service reports overload.",
                      1 if service.overloaded else 0)
            health = service.health
            out.gauge("edgetriage_cloud_store_up", "1 while the store answers (/healthz says why not).",
                      1 if health.store_up else 0)
            out.gauge("edgetriage_cloud_intake_stalled", "1 while messages wait and none was answered for "
                      "delivery.stalled_after_s.", 1 if health.stalled else 0)
            out.gauge("edgetriage_cloud_intake_waiting", "Messages taken in and not yet answered.", health.waiting)
            out.counter("edgetriage_cloud_answers_retried_total", "Answers tried again after a store or broker "
                        "error.", stats.retried)
            out.counter("edgetriage_cloud_messages_released_total", "Messages given up on for now after the "
                        "retries: left to the broker's redelivery, or kept for another try.", stats.released)
            out.counter("edgetriage_cloud_claims_retaken_total", "Claims whose lease ran out under this process "
                        "with no other holder, taken again.", stats.claims_retaken)
            _figures(out, service, service.figures.compute())
        return out.render()


def _figures(out: Exposition, service: Counted, f: dict[str, Any]) -> None:
    """The latency model next to the measurement, utilisation, hit and wrong-reuse rates, the scheduler
    (cloud.ops.figures, cloud.scheduling.scheduler); a figure with no samples yet is left out rather than shown as 0."""
    model = [({"part": part}, f[key] / 1000.0) for part, key in (
        ("light", "L_light_ms"), ("llm", "L_llm_ms"), ("sched", "L_sched_ms"), ("total", "L_total_ms"))
        if f.get(key) is not None]
    out.gauge("edgetriage_cloud_latency_model_seconds",
              "Medians of the latency model: light (cache, light path), llm (model time), sched (queue wait), and "
              "total = sched + alpha*light + (1-alpha)*llm.", model)
    if f.get("measured_total_p50_ms") is not None:
        out.gauge("edgetriage_cloud_latency_measured_p50_seconds", "Measured median receipt -> verdict.",
                  f["measured_total_p50_ms"] / 1000.0)
    alpha_help = "alpha (cloud.ops.figures): answers without a model (cache, light path) / (those + LLM verdicts)."
    for name, key, help_text in (
            ("edgetriage_cloud_alpha_ratio", "alpha", alpha_help),
            ("edgetriage_cloud_resolved_without_llm_ratio", "alpha", alpha_help),
            ("edgetriage_cloud_cache_hit_ratio", "hit_rate", "Cache hits / events looked up."),
            ("edgetriage_cloud_wrong_reuse_ratio", "wrong_reuse_rate",
             "Re-checked cache hits where the model disagreed / re-checked cache hits.")):
        if f.get(key) is not None:
            out.gauge(name, help_text, f[key])
    out.gauge("edgetriage_cloud_analyzer_utilisation_ratio", "Analyzer busy time / wall time.", f["U"])
    out.counter("edgetriage_cloud_reuse_checks_total", "Cache hits re-asked of the model, by outcome.",
                [({"result": "agreed"}, f["reuse_checked"] - f["reuse_disagreed"]),
                 ({"result": "disagreed"}, f["reuse_disagreed"])])
    sched = service.scheduler
    out.gauge("edgetriage_cloud_scheduler_queue_depth", "Events waiting for the model.", sched.queue_depth)
    out.gauge("edgetriage_cloud_scheduler_in_flight", "Events with the model now.", sched.in_flight)
    capacity = sched.load_now().figures()
    for key, name, help_text in (
            ("verdicts_per_s", "verdicts_per_second", "Model verdicts answered per second, last minute."),
            ("capacity_per_s", "capacity_verdicts_per_second", "Model verdicts per second it would answer "
             "kept busy (per second of model time, times the batches it takes at once), last minute."),
            ("headroom_per_s", "headroom_verdicts_per_second", "capacity - verdicts per second."),
            ("queue_wait_ms", "queue_wait_p95_seconds", "95th percentile wait for the model, last minute.")):
        value = capacity[key]
        if value is not None:
            out.gauge(f"edgetriage_cloud_analyzer_{name}", help_text,
                      value / 1000.0 if key == "queue_wait_ms" else value)
    stats = sched.stats
    out.counter("edgetriage_cloud_scheduler_refused_total", "Events answered \"unknown\" without the model's "
                "answer, by reason.", [({"reason": r}, v) for r, v in (
                    ("budget", stats.budget_refused), ("queue_full", stats.queue_full), ("shed", stats.shed),
                    ("deadline_queued", stats.expired_queued), ("deadline_running", stats.expired_running))])
    out.counter("edgetriage_cloud_model_tokens_total", "Model tokens used (prompt + answer).", stats.tokens)
    _routing(out, f["routing"])


def _routing(out: Exposition, r: dict[str, Any]) -> None:
    """Per back-end and routing figures (cloud.ops.figures.Figures.routing: cloud.route.lanes, cloud.route.finals)."""
    lanes = r["backends"]
    out.gauge("edgetriage_cloud_backend_up", "1 while the back-end is taken (not saturated, not failing).",
              [({"backend": n, "cost": b["cost"]}, 1 if b["up"] else 0) for n, b in lanes.items()])
    out.gauge("edgetriage_cloud_backend_llm_seconds", "L_llm per back-end: median model time of its answers.",
              [({"backend": n}, b["L_llm_ms"] / 1000.0) for n, b in lanes.items() if b["L_llm_ms"] is not None])
    out.gauge("edgetriage_cloud_backend_expected_answer_seconds", "What the routing expects one more event to "
              "take on the back-end now (its queue, its measured batch time).",
              [({"backend": n}, b["expected_answer_ms"] / 1000.0) for n, b in lanes.items()])
    out.gauge("edgetriage_cloud_backend_queue_depth", "Events waiting for the back-end.",
              [({"backend": n}, b["queue_depth"]) for n, b in lanes.items()])
    out.counter("edgetriage_cloud_backend_answers_total", "Answers per back-end, by outcome.",
                [({"backend": n, "result": k}, b[k]) for n, b in lanes.items() for k in ("answered", "failed")])
    out.counter("edgetriage_cloud_routed_total", "Events routed to a back-end, by reason (cloud.route.routing).",
                [({"reason": k}, v) for k, v in sorted(r["routed_by"].items())])
    if r["t_max_ms"] is not None:
        out.gauge("edgetriage_cloud_t_max_seconds", "The latency target T_max.", r["t_max_ms"] / 1000.0)
    out.counter("edgetriage_cloud_provisional_total", "Provisional answers: first answers before the model (and "
                "those sent again once the closer look landed), the small model's or the light path's for the "
                "large one, finals replacing those, and of those the ones that changed; "
                "pending finals taken up from the store after a restart (resumed).",
                [({"kind": k}, r[k]) for k in ("first_answers", "first_upgraded", "provisional", "finals",
                                                "changed", "operator_kept", "unanswered", "resumed")])
    light = r.get("light")
    if light is not None:
        out.counter("edgetriage_cloud_light_answers_total", "The light path (no model) where neither model could "
                    "answer within T_max: answered, or could not tell (a model answered).",
                    [({"result": k}, light[k]) for k in ("answered", "undecided")])
        if light["L_light_ms"] is not None:
            out.gauge("edgetriage_cloud_light_look_seconds", "The light path: median time of one closer look.",
                      light["L_light_ms"] / 1000.0)
    for key, name, help_text in (
            ("provisional_share", "provisional_share_ratio", "Verdicts given provisionally (small model, light "
             "path) / events routed."),
            ("final_agreement", "final_agreement_ratio", "Finals that said what the provisional answer had / "
             "finals.")):
        if r[key] is not None:
            out.gauge(f"edgetriage_cloud_{name}", help_text, r[key])


def add_metrics(app: Any, service: ObservedService | None,
                more: Callable[[Any], str] = lambda request: "") -> CloudMetrics:
    """Serve GET /metrics on an aiohttp app (no authentication: scrapers read it on a private network); `more`
    renders what the rooms above the observers count (questions: cloud.http.api passes cloud.ask's)."""
    from aiohttp import web

    metrics = CloudMetrics()
    if service is not None:
        metrics.attach(service)

    async def handle(request: web.Request) -> web.Response:
        text = metrics.render(service) + more(request)
        return web.Response(text=text, headers={"Content-Type": CONTENT_TYPE})

    app.router.add_get("/metrics", handle)
    return metrics
