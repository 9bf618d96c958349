"""The device's Prometheus endpoint (`daemon.metrics_port`, default 9464).

Nothing on the frame path touches Prometheus except the detector latency histogram (one `observe` per
detector call): every other figure is a counter the agent and the camera threads keep anyway, read when
Prometheus scrapes, through a `DeviceSnapshot` the daemon assembles. The registry is this object's own, not
prometheus_client's process-wide default, so two agents in one process (tests, the demo) do not collide.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

NS = "edgetriage_edge"
DETECT_BUCKETS = (0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5)


@dataclass
class CameraSnapshot:
    camera: str
    state: str  # connecting | streaming | reconnecting | ended | stopped
    frames_read: int  # taken from the source, skipped ones included
    frames_processed: int  # through the vision pipeline
    frames_detected: int  # of which the detector looked at
    tracks: int
    reconnects: int
    fps_read: float  # over the last few seconds
    fps_detected: float
    frame_age_s: float = 0.0  # how old the last frame handed to the pipeline was (live: since it was grabbed)
    frames_dropped: int = 0  # live: due while the pipeline was busy, so never converted (never queued)


@dataclass
class DeviceSnapshot:
    cameras: list[CameraSnapshot]
    counters: dict[str, int]  # EdgeStats.counters()
    outbox: dict[str, int]  # Outbox.depth()
    outbox_dropped: int
    mqtt_connected: bool
    cloud_overloaded: bool
    budget_available: float  # math.inf without limits
    config_version: str
    config_refusals: int
    model_name: str
    model_sha256: str
    model_swaps: int
    model_refusals: int
    watchdog_healthy: bool
    suppressed_by_rule: dict[str, int] = field(default_factory=dict)  # learned suppression id -> tracks answered


def _counter(name: str, doc: str, value: float, labels: dict[str, str] | None = None) -> CounterMetricFamily:
    family = CounterMetricFamily(f"{NS}_{name}", doc, labels=list(labels) if labels else None)
    family.add_metric(list(labels.values()) if labels else [], value)
    return family


def _gauge(name: str, doc: str, value: float, labels: dict[str, str] | None = None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{NS}_{name}", doc, labels=list(labels) if labels else None)
    family.add_metric(list(labels.values()) if labels else [], value)
    return family


class _SnapshotCollector(Collector):
    def __init__(self, snapshot: Callable[[], DeviceSnapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self._snapshot()
        c = s.counters
        per_camera: dict[str, tuple[type, str, Callable[[CameraSnapshot], float]]] = {
            "frames_read": (CounterMetricFamily, "Frames taken from the camera, skipped ones included",
                            lambda cam: cam.frames_read),
            "frames_processed": (CounterMetricFamily, "Frames through the vision pipeline (motion gate)",
                                 lambda cam: cam.frames_processed),
            "frames_detected": (CounterMetricFamily, "Frames the detector looked at",
                                lambda cam: cam.frames_detected),
            "tracks": (CounterMetricFamily, "Tracks started", lambda cam: cam.tracks),
            "camera_reconnects": (CounterMetricFamily, "Attempts to reopen a lost camera",
                                  lambda cam: cam.reconnects),
            "frames_dropped": (CounterMetricFamily, "Frames due at the detect rate that came while the "
                               "pipeline was busy: dropped, never queued", lambda cam: cam.frames_dropped),
            "frame_age_seconds": (GaugeMetricFamily, "Age of the last frame handed to the pipeline (live: since "
                                  "it was grabbed from the stream)", lambda cam: cam.frame_age_s),
            "camera_up": (GaugeMetricFamily, "1 while the camera delivers frames",
                          lambda cam: float(cam.state == "streaming")),
            "motion_gated_ratio": (GaugeMetricFamily, "Share of processed frames the motion gate kept from the "
                                   "detector", lambda cam: 1.0 - cam.frames_detected / cam.frames_processed
                                   if cam.frames_processed else 0.0),
        }
        for name, (kind, doc, value) in per_camera.items():
            family = kind(f"{NS}_{name}", doc, labels=["camera"])
            for cam in s.cameras:
                family.add_metric([cam.camera], value(cam))
            yield family
        fps = GaugeMetricFamily(f"{NS}_fps", "Frames per second over the last seconds, by stage",
                                labels=["camera", "stage"])
        for cam in s.cameras:
            fps.add_metric([cam.camera, "read"], cam.fps_read)
            fps.add_metric([cam.camera, "detected"], cam.fps_detected)
        yield fps

        decisions = CounterMetricFamily(f"{NS}_events", "New tracks put to the rules, by decision",
                                        labels=["decision"])
        for decision, key in (("escalate", "escalated"), ("cached", "verdicts_device_cache"), ("local", "local"),
                              ("dropped", "dropped"), ("suppressed", "suppressed")):
            decisions.add_metric([decision], c.get(key, 0))
        yield decisions
        suppressed = CounterMetricFamily(f"{NS}_suppressed", "Tracks answered on the device by a learned "
                                         "suppression, by its id", labels=["rule"])
        for rule, n in sorted(s.suppressed_by_rule.items()):
            suppressed.add_metric([rule], n)
        yield suppressed
        yield _counter("escalated", "Events escalated to the cloud (stored in the outbox)", c.get("escalated", 0))
        yield _counter("reused", "Tracks answered from this device's verdict cache",
                       c.get("verdicts_device_cache", 0))
        budget = CounterMetricFamily(f"{NS}_budget_drops", "Escalations the budget did not pay for, by what "
                                     "happened to them", labels=["action"])
        budget.add_metric(["dropped"], c.get("budget_dropped", 0))
        budget.add_metric(["local"], c.get("budget_local", 0))
        yield budget
        overload = CounterMetricFamily(f"{NS}_overload_events", "Escalations while the cloud was overloaded, "
                                       "by what happened to them", labels=["action"])
        overload.add_metric(["held"], c.get("overload_held", 0))
        overload.add_metric(["local"], c.get("overload_local", 0))
        yield overload
        yield _counter("published", "Events handed to MQTT, re-sends included", c.get("published", 0))
        yield _counter("republished", "Re-sends of events without a verdict", c.get("republished", 0))
        verdicts = CounterMetricFamily(f"{NS}_verdicts", "Verdicts received, by source", labels=["source"])
        for source in ("llm", "cloud_cache", "fallback", "unmatched", "duplicate", "invalid"):
            verdicts.add_metric([source], c.get(f"verdicts_{source}", 0))
        yield verdicts

        depth = GaugeMetricFamily(f"{NS}_outbox_events", "Events in the outbox, by state", labels=["state"])
        for state in ("pending", "inflight", "sent"):
            depth.add_metric([state], s.outbox.get(state, 0))
        yield depth
        yield _gauge("outbox_bytes", "Payload bytes stored in the outbox", s.outbox.get("bytes", 0))
        yield _counter("outbox_dropped", "Events the outbox dropped (full or too old)", s.outbox_dropped)
        yield _gauge("budget_available", "Events the budget lets out now (+Inf: no limit)", s.budget_available)
        yield _gauge("mqtt_connected", "1 while connected to the broker", float(s.mqtt_connected))
        yield _gauge("cloud_overloaded", "1 while the cloud reports overload", float(s.cloud_overloaded))
        yield _gauge("watchdog_healthy", "1 while no camera is stuck (systemd watchdog pings go out)",
                     float(s.watchdog_healthy))
        yield _gauge("config_info", "The applied configuration version", 1.0, {"version": s.config_version})
        yield _counter("config_refusals", "Remote configurations refused", s.config_refusals)
        yield _gauge("model_info", "The detector model running", 1.0,
                     {"name": s.model_name, "sha256": s.model_sha256})
        yield _counter("model_swaps", "Detector models swapped in", s.model_swaps)
        yield _counter("model_refusals", "Announced models refused (fetch, hash or load failed)", s.model_refusals)


class EdgeMetrics:
    """A registry of the device's own: the snapshot collector plus the detector latency histogram."""

    def __init__(self, snapshot: Callable[[], DeviceSnapshot]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_SnapshotCollector(snapshot))
        self.detect_seconds = Histogram(
            f"{NS}_detector_latency_seconds",
            "Time per detector look (a whole frame or its regions)",
            buckets=DETECT_BUCKETS,
            registry=self.registry,
        )
        self._server: Any = None
        self.port = 0

    def serve(self, host: str, port: int) -> int:
        """Serve /metrics on a thread of its own; returns the port. OSError names the address when taken."""
        try:
            self._server, _ = start_http_server(port, host, registry=self.registry)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot serve metrics on {host}:{port}: {exc.strerror} "
                                     "(set daemon.metrics_port to a free port, or 0 for none)") from None
        self.port = int(self._server.server_address[1])
        return self.port

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


__all__ = ["CameraSnapshot", "DeviceSnapshot", "EdgeMetrics"]
