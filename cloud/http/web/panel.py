"""The figures of the page's stats panel, computed over the entries the timeline holds: per-camera counters,
the latency table by source, the device's hit rate, and α and the L figures (the service's own when the page
runs beside one, else computed the same way, by cloud.ops.figures, over the entries)."""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ....shared.stats import median, percentile
from ...ops.figures import Answers, latency_model
from .entries import CACHE_SOURCES, MODEL_SOURCES, Entry, now_ms, round_or_none

log = logging.getLogger("edgetriage.cloud.web")

CameraKey = tuple[str, str]  # (device, camera)
HISTORY = 600  # figure samples kept for the latency chart

StatusSource = Callable[[], dict[str, Any]]
CameraSource = Callable[[], dict[CameraKey, dict[str, int]]]
FiguresSource = Callable[[], dict[str, Any]]  # cloud.ops.figures' latency model, as the service computes it


@dataclass
class CameraCounts:
    events: int = 0
    escalated: int = 0
    device_cache: int = 0
    cloud_cache: int = 0
    llm: int = 0
    fallback: int = 0
    alerts: int = 0
    corrections: int = 0  # verdicts an operator corrected (cloud.teach.feedback)


def camera_rows(cameras: dict[CameraKey, CameraCounts],
                frames: dict[CameraKey, dict[str, int]]) -> list[dict[str, Any]]:
    """One row per camera: its counters beside the frames read/detected where whoever knows them says."""
    rows = []
    for key in sorted(set(cameras) | set(frames)):
        counts = cameras.get(key, CameraCounts())
        known = frames.get(key, {})
        rows.append({"device": key[0], "camera": key[1], "frames_read": known.get("frames_read"),
                     "frames_detected": known.get("frames_detected"), **vars(counts)})
    return rows


def panel_figures(entries: Collection[Entry], cameras: dict[CameraKey, CameraCounts], *, device_feed: bool,
                  cloud_model: dict[str, Any] | None) -> dict[str, Any]:
    """The page's figures. α, the L figures, the measured median and the cloud's hit rate are defined once,
    in cloud.ops.figures: the page shows the service's own (`cloud_model`), so it agrees with /v1/stats and
    /metrics; a page without a service computes them the same way over the entries it holds. The latency
    table (by source), the device's hit rate and the counters are the page's, over its entries."""
    measured: dict[str, list[float]] = {s: [] for s in (*CACHE_SOURCES, *MODEL_SOURCES)}
    model_ms: list[float] = []
    sched_ms: list[float] = []
    device_seen: list[float] = []  # escalation -> verdict as the device measured it
    answered = dict.fromkeys(measured, 0)
    for e in entries:
        if e.source not in measured:
            continue
        answered[e.source] += 1
        value = e.latency_ms if e.source == "device_cache" else e.cloud_ms
        if value is not None:
            measured[e.source].append(value)
        if e.source == "llm":
            if e.analyze_ms is not None:
                model_ms.append(e.analyze_ms)
            if e.queue_ms is not None:
                sched_ms.append(e.queue_ms)
        if e.source != "device_cache" and e.latency_ms is not None and e.latency_ms != e.cloud_ms:
            device_seen.append(e.latency_ms)
    everything = [v for values in measured.values() for v in values]
    model = cloud_model
    if model is None:
        model = latency_model(Answers(
            cloud_cache=answered["cloud_cache"], device_cache=answered["device_cache"], llm=answered["llm"],
            fallback=answered["fallback"], light_ms=measured["device_cache"] + measured["cloud_cache"],
            llm_ms=model_ms, sched_ms=sched_ms, measured_ms=everything))
    totals = {k: sum(getattr(c, k) for c in cameras.values()) for k in vars(CameraCounts())}
    device_asked = totals["device_cache"] + totals["escalated"]
    latency = {}
    for name, values in (("device_cache", measured["device_cache"]), ("cloud_cache", measured["cloud_cache"]),
                         ("llm", measured["llm"]), ("all", everything), ("device_end_to_end", device_seen)):
        ordered = sorted(values)
        latency[name] = {"n": len(ordered), "p50": round_or_none(median(ordered)),
                         "p95": round_or_none(percentile(ordered, 0.95)),
                         "p99": round_or_none(percentile(ordered, 0.99))}
    figures = {
        "window": len(entries), "verdicts": sum(answered.values()), "totals": totals,
        "alpha": model["alpha"],
        "hit_rate": {"device_cache": round_or_none(totals["device_cache"] / device_asked, 3)
                     if device_asked and device_feed else None, "cloud_cache": model["hit_rate"]},
        "latency_ms": latency,
        "l_light_ms": model["L_light_ms"], "l_llm_ms": model["L_llm_ms"], "l_sched_ms": model["L_sched_ms"],
        "l_total_ms": model["L_total_ms"], "measured_median_ms": model["measured_total_p50_ms"],
        "routing": model.get("routing"),  # the service's (cloud.ops.figures.Figures.routing), where it runs beside
    }
    return figures


class StatsPanel:
    """The stats panel over what a timeline holds: its figures, recomputed only after `changed()`, the latency
    chart's history, and the live gauges. `status` (queue depth, overload, connection), `camera_stats` (frames
    read/detected per camera, from whoever knows them) and `cloud_figures` (the service's α and latency model)
    are sampled when the figures are asked for; any may be None, and one that fails shows as missing."""

    def __init__(self, *, status: StatusSource | None = None, camera_stats: CameraSource | None = None,
                 cloud_figures: FiguresSource | None = None) -> None:
        self.status = status
        self.camera_stats = camera_stats
        self.cloud_figures = cloud_figures
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.stale = True
        self._figures: dict[str, Any] = {}

    def changed(self) -> None:
        self.stale = True

    def figures(self, entries: Collection[Entry], cameras: dict[CameraKey, CameraCounts], *,
                device_feed: bool) -> dict[str, Any]:
        """α, hit rates, latency percentiles, L_total against the measured median (recomputed when stale), the
        per camera counters and the live gauges from `status`."""
        if self.stale or not self._figures:
            self._figures = self._compute(entries, cameras, device_feed)
            self.stale = False
        out = dict(self._figures)
        out["cameras"] = camera_rows(cameras, self._sampled(self.camera_stats, "camera stats"))
        out["status"] = self._sampled(self.status, "status")
        return out

    def message(self, entries: Collection[Entry], cameras: dict[CameraKey, CameraCounts], *, device_feed: bool,
                full_history: bool = False) -> str:
        """The figures as JSON; with the whole chart history for a page that just opened, else only its
        latest point (the page appends it)."""
        body = self.figures(entries, cameras, device_feed=device_feed)
        if full_history:
            body["history"] = list(self.history)
        else:
            body["point"] = self.history[-1] if self.history else None
        return json.dumps(body, separators=(",", ":"))

    @staticmethod
    def _sampled(source: Callable[[], dict] | None, name: str) -> dict:
        if source is None:
            return {}
        try:
            return source()
        except Exception:  # noqa: BLE001 - a gauge that fails shows as missing, never stops the page
            log.exception("%s source failed", name)
            return {}

    def _compute(self, entries: Collection[Entry], cameras: dict[CameraKey, CameraCounts],
                 device_feed: bool) -> dict[str, Any]:
        """The page's figures (panel_figures), and the chart's next point when it moved."""
        model = self.cloud_figures() if self.cloud_figures is not None else None
        figures = panel_figures(entries, cameras, device_feed=device_feed, cloud_model=model)
        if figures["l_total_ms"] is not None:
            point = {"t": now_ms(), "l_total": figures["l_total_ms"], "measured": figures["measured_median_ms"]}
            if not self.history or (self.history[-1]["l_total"], self.history[-1]["measured"]) != (
                    point["l_total"], point["measured"]):
                self.history.append(point)
        return figures
