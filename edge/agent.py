"""The edge agent: frames -> vision pipeline -> decision -> durable outbox -> MQTT, and verdicts back.

The decision core of the device. Each camera gets its own VisionPipeline (one detector shared between them);
every new track is looked up in the verdict cache and put to the rules; escalations are encoded as protocol
v1 events and handed to the delivery side (edge.delivery.link: the outbox, the MQTT link and the
verdicts coming back), whose sending is metered by the spending policy (edge.delivery.budget: the escalation
budget and the cloud's load report on `<prefix>/v1/_cloud/load`).

Threads: paho's network thread only puts (kind, value) tuples on a queue; everything else (outbox writes,
publishing, cache updates, callbacks) happens on the thread that calls `pump()`, `run_source()` or
`wait_and_pump()`, under one lock so several camera threads may share the agent. The long-running
supervision (camera threads, reconnects, systemd, metrics, remote configuration) is edge.daemon's job.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..shared.clock import now_ms
from ..shared.ids import uuid7
from ..shared.protocol import (
    MAX_CLASSES,
    MAX_DETECTIONS,
    MAX_ZONES,
    ClassScore,
    Detection,
    Event,
    LoadReport,
    ProtocolError,
    encode_event,
)
from ..shared.stats import median
from ..shared.topics import Topics
from .config import CameraConfig, EdgeConfig
from .delivery.link import Delivery, OnControl, OnVerdict
from .delivery.outbox import OutboxError
from .stats import CameraCounts, EdgeStats
from .triage.gallery import TrackGallery
from .triage.local_time import local_time
from .triage.rules import Decision, Rules, Triage
from .triage.suppress import Suppressions
from .triage.verdict_cache import VerdictCache
from .vision.capture import Frame, FrameSource
from .vision.closer import Stages, build_stages
from .vision.detect import Det, Detector, Region, build_detector
from .vision.events import PipelineOutput, TrackEvent
from .vision.pipeline import VisionPipeline
from .vision.zones import CameraGeometry

log = logging.getLogger("edgetriage.edge.agent")

OnDecision = Callable[[TrackEvent, Decision, "str | None"], None]


def _unit(x: float) -> float:
    return 0.0 if not math.isfinite(x) else min(1.0, max(0.0, float(x)))


def _message(ev: TrackEvent, *, event_id: str, device: str, camera: str, site: str | None, captured_ms: int,
             uncertain: bool, reason: str, local: str) -> Event:
    """The protocol v1 event of an escalated track event (ValidationError: one the protocol refuses)."""
    return Event(
        event_id=event_id, device=device, camera=camera, site=site, captured_ms=captured_ms, label=ev.label,
        score=_unit(ev.score), uncertain=uncertain, track_id=max(0, int(ev.track_id)),
        detections=[Detection(label=d.label, score=_unit(d.score), box=tuple(_unit(v) for v in d.box))
                    for d in ev.detections[-MAX_DETECTIONS:]],
        phash=ev.phash, phash_alg=ev.phash_alg, reason=reason[:256],
        crop=ev.crop_jpeg, crop_size=tuple(ev.crop_size), crop_box=ev.crop_box,
        classes=[ClassScore(label=name[:128], score=_unit(p)) for name, p in ev.classes[:MAX_CLASSES]],
        zones=ev.zones[:MAX_ZONES], dwell_s=round(max(0.0, ev.dwell_s), 1), direction=ev.direction,
        local_time=local, embedding=ev.embedding)


class _SharedDetector:
    """The detector all cameras share. The model behind it can be swapped between two calls (`inner` is one
    reference), so no frame waits for a swap. Its time is measured once, by each pipeline's detect step."""

    def __init__(self, inner: Detector) -> None:
        self.inner = inner

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def input_size(self) -> tuple[int, int] | None:
        # the inner model's, as a replay of the same model has it: closer looks are sized by the detector's input
        # (before, a live agent hid it behind this wrapper and sized every look as an unsized detector's)
        return self.inner.input_size

    def detect(self, image_bgr: np.ndarray, region: Region | None = None) -> list[Det]:
        return self.inner.detect(image_bgr) if region is None else self.inner.detect(image_bgr, region)


class EdgeAgent:
    """One device: its cameras, its rules, its verdict cache, its outbox and its MQTT connection.

    The MQTT connection starts in the constructor and reconnects on its own; call `close()` (or use the
    agent as a context manager) to publish "offline" and stop.
    """


    def __init__(
        self,
        config: EdgeConfig,
        *,
        detector: Detector | None = None,
        on_decision: OnDecision | None = None,
        on_verdict: OnVerdict | None = None,
        on_control: OnControl | None = None,
    ) -> None:
        """`on_control` receives (on the pumping thread) messages on topics the agent subscribed to for
        someone else, e.g. the daemon's remote configuration."""
        self.config = config
        self.device = config.device
        self.topics = Topics(config.mqtt.prefix)
        self.on_decision = on_decision
        self.stats = EdgeStats()
        self.detector = _SharedDetector(detector if detector is not None else build_detector(config.vision.detector))
        self.observe_detect: Callable[[float], None] | None = None  # seconds per detector look, e.g. a histogram
        self.stages: Stages = build_stages(config.vision)  # verifier and classifier, shared by the cameras
        self.pipelines: dict[str, VisionPipeline] = {cam.id: self._new_pipeline(cam.id) for cam in config.cameras}
        self.camera_counts: dict[str, CameraCounts] = {}
        self._seen_pipeline: dict[str, tuple[int, int, int, int, int]] = {}
        self._pipeline_gen: dict[str, int] = {cam.id: 0 for cam in config.cameras}
        self._vision_gen = 0  # bumped when the vision settings change; pipelines follow at their next frame
        self.rules = Rules(config.rules, timezone=config.timezone)
        self.suppressions = Suppressions(config.suppressions)  # learned by the cloud (edge.suppress)
        self.cache = VerdictCache(config.cache.max_entries, max_distance=config.cache.default_max_distance)
        self.gallery = TrackGallery(self.cache)  # a decided track's other looks as keys of its verdict
        self._lock = threading.RLock()
        self._events_topic = self.topics.events(self.device)
        self.delivery = Delivery(config, self.stats, self.cache, self._lock, on_verdict=on_verdict,
                                 on_control=on_control)

    @property
    def load(self) -> LoadReport | None:
        """The cloud's last load report (None: none, or cleared)."""
        return self.delivery.spending.load

    @property
    def overloaded(self) -> bool:
        """The cloud's last load report says overloaded and is not older than overload.stale_s."""
        return self.delivery.spending.overloaded


    def __enter__(self) -> EdgeAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- frames -> decisions ---------------------------------------------------------------------------
    def run_source(self, camera: CameraConfig, *, max_frames: int | None = None, realtime: bool = False,
                   stop: threading.Event | None = None) -> None:
        """Read one camera's source to its end (or `max_frames`, or `stop`), deciding on every new track and
        keeping the outbox moving. `realtime` paces a file at its own frame rate, as a camera would deliver
        it. Raises CaptureError when the source cannot be opened or a live source is lost."""
        source = FrameSource(camera.read_source, start_frame=camera.start_frame, max_frames=max_frames,
                             min_interval_s=1.0 / camera.detect_fps if camera.detect_fps else 0.0,
                             transport=camera.transport, loop=camera.loop)
        source.open()
        pace = realtime and not source.live
        t0 = time.monotonic()
        first_pts: float | None = None
        try:
            for frame in source:
                if stop is not None and stop.is_set():
                    break
                if pace:
                    if first_pts is None:
                        first_pts = frame.pts_s
                    delay = t0 + (frame.pts_s - first_pts) - time.monotonic()
                    if delay > 0:
                        self._wait_and_pump(delay)
                self.process(camera.id, frame)
                self.pump()
            self.end_stream(camera.id)
            self.pump()
        finally:
            source.close()

    def process(self, camera_id: str, frame: Frame) -> PipelineOutput | None:
        """One frame of one camera through its pipeline, deciding on every new track. Safe from several
        camera threads at once (one per camera); delivery happens in `pump()`. None once the agent is closed."""
        if self.delivery.closed:
            return None
        pipeline = self._pipeline(camera_id)
        out = pipeline.process(frame)
        self._handle_output(camera_id, pipeline, out)
        return out

    def end_stream(self, camera_id: str) -> None:
        """The camera's stream ended or was lost: its tracks end now (confirmed ones are decided)."""
        with self._lock:
            pipeline = self.pipelines.get(camera_id)
        if pipeline is not None and not self.delivery.closed:
            self._handle_output(camera_id, pipeline, pipeline.finish())

    def drop_camera(self, camera_id: str) -> None:
        """Forget a camera removed from the configuration (its stream must have ended)."""
        with self._lock:
            self.pipelines.pop(camera_id, None)
            self._seen_pipeline.pop(camera_id, None)
            self._pipeline_gen.pop(camera_id, None)

    def _pipeline(self, camera_id: str) -> VisionPipeline:
        """The camera's pipeline, rebuilt when the vision settings changed: the old one finishes first, so
        tracks in progress are decided, not lost."""
        pipeline = self.pipelines.get(camera_id)
        if pipeline is not None and self._pipeline_gen.get(camera_id) == self._vision_gen:
            return pipeline
        with self._lock:
            if pipeline is not None and not self.delivery.closed:
                self._handle_output(camera_id, pipeline, pipeline.finish())
            pipeline = self.pipelines[camera_id] = self._new_pipeline(camera_id)
            self._seen_pipeline.pop(camera_id, None)
            self._pipeline_gen[camera_id] = self._vision_gen
            return pipeline

    def _new_pipeline(self, camera_id: str) -> VisionPipeline:
        """A camera's pipeline: its zones and masks, the shared detector and stages, the rules' dwell."""
        try:
            camera = self.config.camera(camera_id)
            geometry = CameraGeometry(camera.zones, camera.masks)
        except KeyError:
            geometry = None
        return VisionPipeline(camera_id, self.config.vision, self.detector, stages=self.stages, geometry=geometry,
                              min_dwell=lambda zones: self.rules.min_dwell_s(camera_id, zones))

    def _handle_output(self, camera_id: str, pipeline: VisionPipeline, out: PipelineOutput) -> None:
        with self._lock:
            if self.delivery.closed:
                return
            self._sync_vision_stats(camera_id, pipeline)
            for ev in out.new_events:
                self._decide(camera_id, ev)
            if out.looks:
                vision = self.config.vision
                self.gallery.file(out.looks, vision.gallery, vision.crop_max_side, self.stages.classifier,
                                  now_ms())
            for ev in out.ended:
                self.gallery.ended(camera_id, ev.track_id)

    def _sync_vision_stats(self, camera_id: str, pipeline: VisionPipeline) -> None:
        ps = pipeline.stats
        prev = self._seen_pipeline.get(camera_id, (0, 0, 0, 0, 0))
        now = (ps.frames_read, ps.frames_detected, ps.tracks, ps.events, ps.detect_ms.count)
        for ms in ps.detect_ms.since(prev[4]):  # the pipeline's measurement, the one there is
            self.stats.detect_ms.append(ms)
            if self.observe_detect is not None:
                self.observe_detect(ms / 1000.0)
        self.stats.frames_read += now[0] - prev[0]
        self.stats.frames_detected += now[1] - prev[1]
        self.stats.tracks += now[2] - prev[2]
        counts = self.camera_counts.get(camera_id)
        if counts is None:
            counts = self.camera_counts[camera_id] = CameraCounts()
        counts.frames += now[0] - prev[0]
        counts.detected += now[1] - prev[1]
        counts.tracks += now[2] - prev[2]
        counts.events += now[3] - prev[3]
        self._seen_pipeline[camera_id] = now

    def decide(self, camera_id: str, ev: TrackEvent) -> tuple[Decision, str | None]:
        """Decide on one track event as if its camera had just emitted it: (decision, escalated event id)."""
        with self._lock:
            return self._decide(camera_id, ev)

    def _decide(self, camera_id: str, ev: TrackEvent) -> tuple[Decision, str | None]:
        t = time.perf_counter()
        now = now_ms()
        # classifier where the rule asks, device cache, rules: the same triage `edge replay` runs
        triaged = Triage(self.rules, device=self.device, site=self.config.site, cache=self.cache,
                         classifier=self.stages.classifier,
                         suppressions=self.suppressions).decide(camera_id, ev, now)
        ev, decision = triaged.event, triaged.decision  # the event as decided on (classified, embedded)
        self.stats.events += 1
        event_id: str | None = None
        if decision.kind == "escalate":
            decision = self.delivery.spending.spend(camera_id, ev, decision, now)
        if decision.kind == "escalate":
            event_id, decision = self._escalate(camera_id, ev, decision, now)
            if event_id is not None:
                self.delivery.spending.after_escalate(event_id, ev.score, now)
        answered_by = event_id if decision.kind == "escalate" else \
            decision.verdict.event_id if decision.kind == "cached" and decision.verdict is not None else None
        self.gallery.decided(camera_id, ev.track_id, answered_by, ev.embedding)
        if decision.kind == "escalate":
            self.stats.escalated += 1
        elif decision.kind == "cached":
            self.stats.verdicts_device_cache += 1
            self.stats.add_latency("device_cache", (time.perf_counter() - t) * 1000.0)
        elif decision.kind == "local":
            self.stats.local += 1
        elif decision.kind == "suppressed":
            self.stats.suppressed += 1
        else:
            self.stats.dropped += 1
        log.info("decision %s on camera %s track %d: %s %.2f (%s)%s", decision.kind, camera_id, ev.track_id, ev.label,
                 ev.score, decision.reason, f" as event {event_id}" if event_id else "",
                 extra={"event_id": event_id, "device": self.device, "camera": camera_id})
        if self.on_decision is not None:
            try:
                self.on_decision(ev, decision, event_id)
            except Exception:  # noqa: BLE001 - a reporting hook must not stop the camera
                log.exception("on_decision callback failed")
        return decision, event_id

    def _escalate(self, camera_id: str, ev: TrackEvent, decision: Decision, now: int) -> tuple[str | None, Decision]:
        """Encode the event and store it in the outbox; delivery happens in pump()."""
        event_id = uuid7(now)
        # one clock: a clip read faster than real time stamps frames ahead of the clock; an event never says it
        # happened after it was decided, so its time, its local_time and the page's card agree
        captured_ms = min(max(0, int(ev.captured_ms)), now)
        try:
            uncertain = ev.uncertain or self.rules.is_uncertain(ev, camera_id)
            event = _message(ev, event_id=event_id, device=self.device, camera=camera_id,
                             site=self.config.site, captured_ms=captured_ms, uncertain=uncertain,
                             reason=decision.reason, local=local_time(captured_ms, self.config.timezone)[2])
            stored = self.delivery.outbox.add(event_id, self._events_topic, encode_event(event), now,
                                     self.config.outbox.priority.get(ev.label, 0))
        except (ProtocolError, OutboxError) as exc:  # OutboxError: e.g. its disk is full; said in one line
            reason = str(exc)  # a ProtocolError says its reason
        except ValidationError as exc:
            reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        else:
            if not stored:
                self.stats.outbox_rejected += 1  # counted and logged by the outbox too
                return None, Decision("dropped", "outbox full: refused by outbox.policy reject_newest")
            self.delivery.escalated(event_id)  # timed from now, sent at the next pump
            return event_id, decision
        self.stats.escalate_failed += 1
        log.warning("camera %s track %d: cannot escalate (%s); handled on the device", camera_id, ev.track_id,
                    reason)
        return None, Decision("local", f"not escalated: {reason}"[:256])


    # -- delivery (edge.delivery.link) ----------------------------------------------------------------------
    def pump(self) -> None:
        """Handle what MQTT delivered (PUBACKs, verdicts, connects) and publish what the outbox has due."""
        self.delivery.pump()

    def wait_and_pump(self, timeout_s: float) -> None:
        """Sleep up to `timeout_s`, waking to handle MQTT events as they arrive (the daemon's main loop)."""
        self.delivery.wait_and_pump(timeout_s)

    def _wait_and_pump(self, timeout_s: float) -> None:
        self.delivery.wait_and_pump(timeout_s)

    def wait_idle(self, timeout_s: float) -> bool:
        """Keep delivering until every escalated event has its verdict; False if `timeout_s` ran out first."""
        return self.delivery.wait_idle(timeout_s)

    # -- live changes ----------------------------------------------------------------------------------
    def apply(self, config: EdgeConfig) -> None:
        """Take new settings live: rules, cache, budget and overload at once; vision settings at each
        camera's next frame (its pipeline is rebuilt). Cameras and the detector are the caller's business."""
        with self._lock:
            old, self.config = self.config, config
            if config.rules != old.rules:
                self.rules = self.rules.successor(config.rules, timezone=config.timezone)
            if config.suppressions != old.suppressions:
                self.suppressions.replace(config.suppressions)
            if config.cache != old.cache:
                self.cache.max_entries = config.cache.max_entries
                self.cache.max_distance = config.cache.default_max_distance
            if config.vision.verifier != old.vision.verifier or config.vision.classifier != old.vision.classifier:
                self.stages = build_stages(config.vision)
            geometry = [(c.id, c.zones, c.masks) for c in config.cameras]
            if config.vision != old.vision or geometry != [(c.id, c.zones, c.masks) for c in old.cameras]:
                self._vision_gen += 1
            self.delivery.reconfigure(config)

    def swap_detector(self, detector: Detector) -> Detector:
        """Put a new detector behind every camera between two detector calls; returns the old one."""
        old, self.detector.inner = self.detector.inner, detector
        return old

    # -- shutdown --------------------------------------------------------------------------------------
    def close(self) -> None:
        """Publish "offline", disconnect and close the outbox. Nothing is deleted: events still waiting for
        a PUBACK or a verdict go again, with the same ids, from the next agent on this outbox."""
        with self._lock:
            if self.delivery.closed:
                return
            self.delivery.close()

    def depth(self) -> dict[str, int]:
        return self.delivery.outbox.depth()

    def summary(self) -> dict[str, Any]:
        """Counters, outbox depth and median latencies, JSON-ready."""
        return {
            **self.stats.counters(),
            "outbox": self.delivery.outbox.depth(),
            "outbox_dropped": self.delivery.outbox.dropped,
            "cache_entries": len(self.cache),
            "latency_ms": {
                "detect": median(self.stats.detect_ms),
                **{f"verdict_{k}": median(v) for k, v in self.stats.verdict_ms.items()},
            },
        }


__all__ = ["EdgeAgent", "EdgeStats"]
