"""The figures of the page's stats panel, computed over the entries the timeline holds: per-camera counters,
the latency table by source, the device's hit rate, and α and the L figures (the service's own when the page
runs beside one, else computed the same way, by cloud.ops.figures, over the entries)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ....shared.stats import median, percentile
from ...ops.figures import Answers, latency_model
from .entries import CACHE_SOURCES, MODEL_SOURCES, Entry, round_or_none

CameraKey = tuple[str, str]  # (device, camera)


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
