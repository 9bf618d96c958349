"""The edge agent: frames -> vision pipeline -> decision -> durable outbox -> MQTT, and verdicts back.

The decision and delivery core of the device. Each camera gets its own VisionPipeline (one detector shared
between them); every new track is looked up in the verdict cache and put to the rules; escalations are
encoded as protocol v1 events and stored in the outbox before anything is sent, so a crash, a power cut or a
missing broker costs a delay, never an event. What leaves the outbox is metered by the escalation budget
(edge.budget) and held while the cloud says it is overloaded (`<prefix>/v1/_cloud/load`).

Threads: paho's network thread only puts (kind, value) tuples on a queue; everything else (outbox writes,
publishing, cache updates, callbacks) happens on the thread that calls `pump()`, `run_source()` or
`wait_and_pump()`, under one lock so several camera threads may share the agent. The long-running
supervision (camera threads, reconnects, systemd, metrics, remote configuration) is edge.daemon's job.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..shared.ids import uuid7, uuid7_ms
from ..shared.mqtt import Incoming, MQTTLink, Will
from ..shared.protocol import (
    MAX_CLASSES,
    MAX_DETECTIONS,
    MAX_ZONES,
    ClassScore,
    Detection,
    Event,
    ProtocolError,
    Verdict,
    decode_event,
    decode_verdict,
    encode_event,
)
from ..shared.topics import OFFLINE, ONLINE, Topics
from .budget import EscalationBudget, Waiting, victims
from .capture import Frame, FrameSource
from .config import CameraConfig, EdgeConfig
from .detect import Det, Detector, Region, build_detector
from .outbox import Outbox, OutboxError
from .pipeline import PipelineOutput, Stages, TrackEvent, VisionPipeline, build_stages
from .rules import Decision, Rules, Triage
from .vcache import VerdictCache
from .zones import CameraGeometry

log = logging.getLogger("edgetriage.edge.agent")

OnDecision = Callable[[TrackEvent, Decision, "str | None"], None]
OnVerdict = Callable[[Verdict, "float | None"], None]
OnControl = Callable[[Incoming], None]

_SAMPLES = 10_000  # latency samples kept per series
_SEEN_IDS = 10_000  # verdict event ids remembered for duplicate counting
_SCAN_EVERY_MS = 1_000  # how often the outbox is scanned for overdue items when nothing new was added
_REQUEUE_GRACE_MS = 1_500  # after a reconnect that kept the session, verdicts queued at the broker arrive first
_MAX_LOAD_BYTES = 4096  # a cloud load report is a few dozen bytes
_LOCAL_MODEL = "device"  # `model` of the verdicts a device gives itself when the cloud is not asked


def _now_ms() -> int:
    return int(time.time() * 1000)


def _unit(x: float) -> float:
    return 0.0 if not math.isfinite(x) else min(1.0, max(0.0, float(x)))


@dataclass
class EdgeStats:
    """Counters and latency samples of one agent; read them any time (values only grow)."""

    frames_read: int = 0
    frames_detected: int = 0
    tracks: int = 0
    events: int = 0  # new tracks put to the rules
    escalated: int = 0
    local: int = 0
    dropped: int = 0
    escalate_failed: int = 0  # escalations that could not be encoded (logged)
    verdicts_llm: int = 0
    verdicts_cloud_cache: int = 0
    verdicts_fallback: int = 0
    verdicts_device_cache: int = 0  # decisions answered by this device's cache
    verdicts_unmatched: int = 0  # verdicts for ids not in the outbox (answered elsewhere); still cached
    verdicts_duplicate: int = 0  # a second (or later) verdict for the same event id
    verdicts_invalid: int = 0  # undecodable or addressed to another device; logged and ignored
    published: int = 0  # events handed to MQTT, repeats included
    republished: int = 0  # of which repeats (same id)
    connects: int = 0
    publish_refused: int = 0  # PUBACKs with a failure reason code (e.g. not authorized); re-sent after the timeout
    outbox_rejected: int = 0  # escalations the full outbox refused (policy reject_newest)
    budget_dropped: int = 0  # escalated, then given up waiting for the budget (queue full)
    budget_local: int = 0  # resolved on the device as "unknown" because the budget was spent
    overload_held: int = 0  # escalated while the cloud was overloaded and publishing was held
    overload_local: int = 0  # resolved on the device as "unknown" because the cloud was overloaded
    load_invalid: int = 0  # cloud load reports that could not be read
    detect_ms: deque[float] = field(default_factory=lambda: deque(maxlen=_SAMPLES))
    # ms from escalation to verdict arrival by verdict source; "device_cache" is the time a cache answer took
    verdict_ms: dict[str, deque[float]] = field(default_factory=dict)

    def add_latency(self, source: str, ms: float) -> None:
        series = self.verdict_ms.get(source)
        if series is None:
            series = self.verdict_ms[source] = deque(maxlen=_SAMPLES)
        series.append(ms)

    def counters(self) -> dict[str, int]:
        return {k: v for k, v in vars(self).items() if isinstance(v, int)}


@dataclass
class CameraCounts:
    """Per camera, since the agent started (pipelines rebuilt by a config change keep counting here)."""

    frames: int = 0  # frames through the vision pipeline
    detected: int = 0  # of which the detector looked at
    tracks: int = 0
    events: int = 0


@dataclass(frozen=True)
class CloudLoad:
    """The cloud's last load report (`<prefix>/v1/_cloud/load`)."""

    overloaded: bool
    queue_depth: int
    ts: float  # epoch seconds when the cloud wrote it


class _TimedDetector:
    """The shared detector, timing every call into the agent's stats (all cameras together). The model
    behind it can be swapped between two calls (`inner` is one reference), so no frame waits for a swap."""

    def __init__(self, inner: Detector, samples: deque[float]) -> None:
        self.inner = inner
        self._samples = samples
        self.observe: Callable[[float], None] | None = None  # seconds per call, e.g. a Prometheus histogram

    @property
    def model_name(self) -> str:
        return str(getattr(self.inner, "model_name", type(self.inner).__name__))

    def detect(self, image_bgr: np.ndarray, region: Region | None = None) -> list[Det]:
        t = time.perf_counter()
        dets = self.inner.detect(image_bgr) if region is None else self.inner.detect(image_bgr, region)
        seconds = time.perf_counter() - t
        self._samples.append(seconds * 1000.0)
        observe = self.observe
        if observe is not None:
            observe(seconds)
        return dets


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
        self.on_verdict = on_verdict
        self.on_control = on_control
        self.stats = EdgeStats()
        self.detector = _TimedDetector(detector if detector is not None else build_detector(config.vision.detector),
                                       self.stats.detect_ms)
        self.stages: Stages = build_stages(config.vision)  # verifier and classifier, shared by the cameras
        self.pipelines: dict[str, VisionPipeline] = {cam.id: self._new_pipeline(cam.id) for cam in config.cameras}
        self.camera_counts: dict[str, CameraCounts] = {}
        self._seen_pipeline: dict[str, tuple[int, int, int, int]] = {}
        self._pipeline_gen: dict[str, int] = {cam.id: 0 for cam in config.cameras}
        self._vision_gen = 0  # bumped when the vision settings change; pipelines follow at their next frame
        self.rules = Rules(config.rules)
        self.cache = VerdictCache(config.cache.max_entries, max_distance=config.cache.default_max_distance)
        self.budget = EscalationBudget(config.budget.per_minute, config.budget.per_hour)
        self.load: CloudLoad | None = None
        self._overloaded_seen = False  # for logging transitions once
        self._scores: dict[str, float] = {}  # unsent event id -> score, for "drop_lowest"
        self.outbox = Outbox(config.outbox.path, config.outbox.max_bytes, config.outbox.max_age_s,
                             config.outbox.policy)
        self.verdict_counts: OrderedDict[str, int] = OrderedDict()  # event id -> verdicts received
        self._escalated_at: dict[str, float] = {}  # event id -> monotonic time, for precise latencies
        self._inbox: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._lock = threading.RLock()
        self._dirty = True
        self._next_scan_ms = 0
        self._requeue_at_ms: int | None = None
        self._closed = False

        self._status_topic = self.topics.status(self.device)
        self._verdict_topic = self.topics.verdicts(self.device)
        self._events_topic = self.topics.events(self.device)
        self._load_topic = self.topics.cloud_load()
        self.link = MQTTLink(
            config.mqtt,
            config.mqtt.client_id or self.device,  # one identity, one client id (deploy/mosquitto)
            on_message=lambda m: self._inbox.put(("message", m)),
            on_published=lambda mid: self._inbox.put(("puback", mid)),
            on_refused=lambda mid, reason: self._inbox.put(("refused", (mid, reason))),
            on_connected=lambda present: self._inbox.put(("connected", present)),
            on_disconnected=lambda reason: self._inbox.put(("disconnected", reason)),
            will=Will(self._status_topic, OFFLINE, qos=1, retain=True),
        )
        self.link.subscribe(self._verdict_topic, 1)
        self.link.subscribe(self._load_topic, 1)
        self.link.start()

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
        source = FrameSource(camera.source, start_frame=camera.start_frame, max_frames=max_frames,
                             min_interval_s=1.0 / camera.detect_fps if camera.detect_fps else 0.0)
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
        if self._closed:
            return None
        pipeline = self._pipeline(camera_id)
        out = pipeline.process(frame)
        self._handle_output(camera_id, pipeline, out)
        return out

    def end_stream(self, camera_id: str) -> None:
        """The camera's stream ended or was lost: its tracks end now (confirmed ones are decided)."""
        with self._lock:
            pipeline = self.pipelines.get(camera_id)
        if pipeline is not None and not self._closed:
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
            if pipeline is not None and not self._closed:
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
            if self._closed:
                return
            self._sync_vision_stats(camera_id, pipeline)
            for ev in out.new_events:
                self._decide(camera_id, ev)

    def _sync_vision_stats(self, camera_id: str, pipeline: VisionPipeline) -> None:
        ps = pipeline.stats
        prev = self._seen_pipeline.get(camera_id, (0, 0, 0, 0))
        now = (ps.frames_read, ps.frames_detected, ps.tracks, ps.events)
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
        now = _now_ms()
        # classifier where the rule asks, device cache, rules: the same triage `edge replay` runs
        decision = Triage(self.rules, device=self.device, site=self.config.site, cache=self.cache,
                          classifier=self.stages.classifier).decide(camera_id, ev, now)
        self.stats.events += 1
        event_id: str | None = None
        if decision.kind == "escalate":
            decision = self._spend(camera_id, ev, decision, now)
        if decision.kind == "escalate":
            event_id, decision = self._escalate(camera_id, ev, decision, now)
            if event_id is not None:
                self._after_escalate(event_id, ev.score, now)
        if decision.kind == "escalate":
            self.stats.escalated += 1
        elif decision.kind == "cached":
            self.stats.verdicts_device_cache += 1
            self.stats.add_latency("device_cache", (time.perf_counter() - t) * 1000.0)
        elif decision.kind == "local":
            self.stats.local += 1
        else:
            self.stats.dropped += 1
        log.debug("decision %s: %s %.2f track %d (%s)", decision.kind, ev.label, ev.score, ev.track_id,
                  decision.reason, extra={"event_id": event_id, "device": self.device, "camera": camera_id})
        if self.on_decision is not None:
            try:
                self.on_decision(ev, decision, event_id)
            except Exception:  # noqa: BLE001 - a reporting hook must not stop the camera
                log.exception("on_decision callback failed")
        return decision, event_id

    # -- spending the cloud sparingly ------------------------------------------------------------------
    @property
    def overloaded(self) -> bool:
        """The cloud's last load report says overloaded and is not older than overload.stale_s."""
        load = self.load
        return (load is not None and load.overloaded
                and time.time() - load.ts <= self.config.overload.stale_s)

    def _holding(self) -> bool:
        return self.config.overload.policy == "hold" and self.overloaded

    def _budget_room(self) -> float:
        """Events that may still go out now beyond those already waiting (negative: a queue has formed)."""
        if not self.budget.limited:
            return math.inf
        return self.budget.available(time.monotonic()) - self.outbox.count_unsent()

    def _spend(self, camera_id: str, ev: TrackEvent, decision: Decision, now: int) -> Decision:
        """The escalation the rules asked for, unless the overload or budget policy resolves it locally."""
        if self.config.overload.policy == "local" and self.overloaded:
            self.stats.overload_local += 1
            return self._local_unknown(camera_id, ev, "cloud overloaded: resolved on the device as unknown", now)
        if self.config.budget.policy == "local" and self._budget_room() < 1:
            self.stats.budget_local += 1
            return self._local_unknown(camera_id, ev, "escalation budget spent: resolved on the device as unknown",
                                       now)
        return decision

    def _local_unknown(self, camera_id: str, ev: TrackEvent, reason: str, now: int) -> Decision:
        try:
            verdict = Verdict(event_id=uuid7(now), device=self.device, camera=camera_id, label=ev.label,
                              verdict="unknown", confidence=0.0, description=reason, model=_LOCAL_MODEL,
                              source="fallback", created_ms=now)
        except ValidationError:
            verdict = None
        return Decision("local", reason, verdict)

    def _after_escalate(self, event_id: str, score: float, now: int) -> None:
        """Count an event held for an overloaded cloud; keep the over-budget queue within max_waiting."""
        if self._holding():
            self.stats.overload_held += 1
        policy = self.config.budget.policy
        if policy == "local" or not self.budget.limited:
            return
        self._scores[event_id] = _unit(score)
        unsent = self.outbox.unsent()
        # the oldest unsent events go out first, as far as the budget allows now; the rest wait
        admitted = int(min(self.budget.available(time.monotonic()), len(unsent)))
        excess = len(unsent) - admitted - self.config.budget.max_waiting
        if excess < 1:
            return
        waiting = [Waiting(eid, created, self._score_of(eid)) for eid, created in unsent[admitted:]]
        before = self.stats.budget_dropped
        for victim in victims(waiting, excess, policy):
            if self.outbox.complete(victim):
                self.stats.budget_dropped += 1
                self._escalated_at.pop(victim, None)
            self._scores.pop(victim, None)
        if before // 100 != self.stats.budget_dropped // 100 or before == 0:
            log.warning("escalation budget spent and %d event(s) waiting: %d dropped so far (policy %s); "
                        "raise budget.per_minute/per_hour or max_waiting if the cloud can take more",
                        self.config.budget.max_waiting, self.stats.budget_dropped, policy)

    def _score_of(self, event_id: str) -> float:
        """Score of an unsent event; read from the stored event when it was escalated before a restart."""
        score = self._scores.get(event_id)
        if score is None:
            item = self.outbox.get(event_id)
            score = 0.0
            if item is not None:
                try:
                    score = decode_event(item.payload).score
                except ProtocolError:
                    pass
            self._scores[event_id] = score
        return score

    def _escalate(self, camera_id: str, ev: TrackEvent, decision: Decision, now: int) -> tuple[str | None, Decision]:
        """Encode the event and store it in the outbox; delivery happens in pump()."""
        event_id = uuid7(now)
        try:
            event = Event(
                event_id=event_id, device=self.device, camera=camera_id, site=self.config.site,
                captured_ms=max(0, int(ev.captured_ms)), label=ev.label, score=_unit(ev.score),
                uncertain=bool(ev.uncertain) or self.rules.is_uncertain(ev, camera_id),
                track_id=max(0, int(ev.track_id)),
                detections=[Detection(label=d.label, score=_unit(d.score), box=tuple(_unit(v) for v in d.box))
                            for d in ev.detections[-MAX_DETECTIONS:]],
                phash=ev.phash, phash_alg=ev.phash_alg, reason=decision.reason[:256],
                crop=ev.crop_jpeg, crop_size=tuple(ev.crop_size),
                classes=[ClassScore(label=name[:128], score=_unit(p)) for name, p in ev.classes[:MAX_CLASSES]],
                zones=ev.zones[:MAX_ZONES], dwell_s=round(max(0.0, ev.dwell_s), 1), local_time=time.strftime(
                    "%H:%M", time.localtime(max(0, int(ev.captured_ms)) / 1000)))
            stored = self.outbox.add(event_id, self._events_topic, encode_event(event), now,
                                     self.config.outbox.priority.get(ev.label, 0))
        except (ProtocolError, OutboxError) as exc:  # OutboxError: e.g. its disk is full; said in one line
            reason = getattr(exc, "reason", None) or str(exc)
        except ValidationError as exc:
            reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        else:
            if not stored:
                self.stats.outbox_rejected += 1  # counted and logged by the outbox too
                return None, Decision("dropped", "outbox full: refused by outbox.policy reject_newest")
            self._escalated_at[event_id] = time.monotonic()
            if len(self._escalated_at) > _SEEN_IDS:  # verdicts that never came (events aged out of the outbox)
                del self._escalated_at[next(iter(self._escalated_at))]
            self._dirty = True
            return event_id, decision
        self.stats.escalate_failed += 1
        log.warning("camera %s track %d: cannot escalate (%s); handled on the device", camera_id, ev.track_id,
                    reason)
        return None, Decision("local", f"not escalated: {reason}"[:256])

    # -- delivery --------------------------------------------------------------------------------------
    def pump(self) -> None:
        """Handle what MQTT delivered (PUBACKs, verdicts, connects) and publish what the outbox has due."""
        with self._lock:
            self._drain()
            self._publish_due()

    def wait_and_pump(self, timeout_s: float) -> None:
        """Sleep up to `timeout_s`, waking to handle MQTT events as they arrive (the daemon's main loop)."""
        self._wait_and_pump(timeout_s)

    def _wait_and_pump(self, timeout_s: float) -> None:
        """Sleep up to `timeout_s`, waking to handle MQTT events as they arrive."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                item = self._inbox.get(timeout=min(left, 0.25))
            except queue.Empty:
                self.pump()  # overdue items and deferred requeues are time-driven
                continue
            with self._lock:
                self._handle(item)
                self._drain()
                self._publish_due()

    def wait_idle(self, timeout_s: float) -> bool:
        """Keep delivering until every escalated event has its verdict; False if `timeout_s` ran out first."""
        deadline = time.monotonic() + timeout_s
        self.pump()
        while len(self.outbox):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._wait_and_pump(min(left, 0.5))
        return True

    def _drain(self) -> None:
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._handle(item)

    def _handle(self, item: tuple[str, Any]) -> None:
        kind, value = item
        if kind == "refused":  # the broker said no (MQTT 5 reason code): not delivered, goes again later
            mid, reason = value
            event_id = self.outbox.mark_refused(mid)
            self.stats.publish_refused += 1
            self._warn_refused(event_id, reason)
        elif kind == "puback":
            self.outbox.mark_sent(value)
        elif kind == "message":
            self._on_message(value)
        elif kind == "connected":
            self._on_connected(bool(value))
        elif kind == "disconnected" and not self._closed:
            log.warning("MQTT connection lost (%s); events are kept in the outbox until it returns", value)

    def _warn_refused(self, event_id: str | None, reason: str) -> None:
        n = self.stats.publish_refused
        if n == 1 or n % 100 == 0:  # a broker ACL refuses every message alike: say it, do not flood the log
            what = f"event {event_id}" if event_id else "a message"
            log.warning("the broker refused %s: %s (%d refused so far); check this device's ACL and "
                        "credentials; events are kept and re-sent after outbox.verdict_timeout_s", what, reason, n)

    def _on_connected(self, session_present: bool) -> None:
        self.stats.connects += 1
        self.link.publish(self._status_topic, ONLINE, qos=1, retain=True)
        now = _now_ms()
        if session_present:
            # verdicts the broker kept for us while we were away arrive first; then resend what is still open
            self._requeue_at_ms = now + _REQUEUE_GRACE_MS
        else:
            self._requeue(now)
        self._dirty = True
        if self.stats.connects > 1:
            log.info("MQTT connected again (session %s)", "kept" if session_present else "new")

    def _requeue(self, now: int) -> None:
        n = self.outbox.requeue_sent()
        self._requeue_at_ms = None
        if n:
            log.info("re-sending %d event(s) still waiting for a verdict", n)

    def _publish_due(self) -> None:
        if not self.link.connected.is_set() or self._holding():
            return
        now = _now_ms()
        if self._requeue_at_ms is not None and now >= self._requeue_at_ms:
            self._requeue(now)
            self._dirty = True
        if not self._dirty and now < self._next_scan_ms:
            return
        self._dirty = False
        self._next_scan_ms = now + _SCAN_EVERY_MS
        due = self.outbox.due(now, self.config.outbox.verdict_timeout_s)
        mono = time.monotonic()
        allowance = self.budget.available(mono)
        published = 0
        for item in due:
            if item.attempts == 0:  # a first send is paid from the budget; a re-send is free
                if allowance < 1:
                    continue  # waits in the outbox; the periodic scan tries again
                allowance -= 1
                self.budget.charge(mono)
                self._scores.pop(item.event_id, None)
            mid = self.link.publish(item.topic, item.payload, qos=1)
            if mid is None:  # connection went away meanwhile; the next connect starts over
                self._dirty = True
                return
            self.outbox.mark_published(item.event_id, mid, now)
            published += 1
            self.stats.published += 1
            if item.attempts:
                self.stats.republished += 1
        if len(due) >= 100 and published:
            self._dirty = True  # more than one batch was due

    def _on_message(self, msg: Incoming) -> None:
        if msg.topic == self._load_topic:
            self._on_load(msg.payload)
            return
        if msg.topic != self._verdict_topic:
            if self.on_control is not None:
                try:
                    self.on_control(msg)
                except Exception:  # noqa: BLE001 - a control handler must not stop delivery
                    log.exception("handling a message on %s failed", msg.topic)
            return
        try:
            verdict = decode_verdict(msg.payload)
        except ProtocolError as exc:
            self.stats.verdicts_invalid += 1
            log.warning("ignored a message on %s: %s", msg.topic, exc.reason)
            return
        if verdict.device != self.device:
            self.stats.verdicts_invalid += 1
            log.warning("ignored a verdict for device %r on %s", verdict.device, msg.topic)
            return
        self._on_verdict(verdict)

    def _on_load(self, payload: bytes) -> None:
        """The cloud's retained load report; an empty payload (report cleared) means not overloaded."""
        if not payload:
            self.load = None
        else:
            try:
                if len(payload) > _MAX_LOAD_BYTES:
                    raise ValueError(f"{len(payload)} bytes")
                data = json.loads(payload)
                ts = float(data["ts"])
                self.load = CloudLoad(bool(data["overloaded"]), int(data.get("queue_depth") or 0),
                                      ts / 1000.0 if ts > 1e11 else ts)  # ms accepted too
            except (ValueError, TypeError, KeyError, RecursionError) as exc:
                self.stats.load_invalid += 1
                log.warning("ignored a cloud load report on %s (%s); expected JSON "
                            '{"overloaded": bool, "queue_depth": int, "ts": epoch seconds}', self._load_topic, exc)
                return
        overloaded = self.overloaded
        if overloaded != self._overloaded_seen:
            self._overloaded_seen = overloaded
            if overloaded:
                log.warning("the cloud reports overload (queue %d); new escalations are %s until it clears",
                            self.load.queue_depth if self.load else 0,
                            "held in the outbox" if self.config.overload.policy == "hold"
                            else "resolved on the device")
            else:
                log.warning("the cloud is no longer overloaded; escalating again")
        self._dirty = True

    def _on_verdict(self, verdict: Verdict) -> None:
        now = _now_ms()
        eid = verdict.event_id
        count = self.verdict_counts.get(eid, 0) + 1
        self.verdict_counts[eid] = count
        self.verdict_counts.move_to_end(eid)
        if len(self.verdict_counts) > _SEEN_IDS:
            self.verdict_counts.popitem(last=False)
        completed = self.outbox.complete(eid)
        self.cache.add(verdict, now)
        if count > 1:
            self.stats.verdicts_duplicate += 1
            return
        latency = self._latency_ms(eid, now)
        log.debug("verdict %s (%.2f) from %s, %s ms after escalation", verdict.verdict, verdict.confidence,
                  verdict.source, "?" if latency is None else f"{latency:.0f}",
                  extra={"event_id": eid, "device": verdict.device, "camera": verdict.camera})
        if completed:
            source = verdict.source
            if source == "llm":
                self.stats.verdicts_llm += 1
            elif source == "cloud_cache":
                self.stats.verdicts_cloud_cache += 1
            else:
                self.stats.verdicts_fallback += 1
            if latency is not None:
                self.stats.add_latency(source, latency)
        else:
            self.stats.verdicts_unmatched += 1
        if self.on_verdict is not None:
            try:
                self.on_verdict(verdict, latency)
            except Exception:  # noqa: BLE001 - a reporting hook must not stop delivery
                log.exception("on_verdict callback failed")

    def _latency_ms(self, event_id: str, now: int) -> float | None:
        """Escalation to verdict: monotonic when this process escalated it, else from the id's own clock."""
        started = self._escalated_at.pop(event_id, None)
        if started is not None:
            return (time.monotonic() - started) * 1000.0
        try:
            return float(max(0, now - uuid7_ms(event_id)))
        except ValueError:
            return None

    # -- live changes ----------------------------------------------------------------------------------
    def apply(self, config: EdgeConfig) -> None:
        """Take new settings live: rules, cache, budget and overload at once; vision settings at each
        camera's next frame (its pipeline is rebuilt). Cameras and the detector are the caller's business."""
        with self._lock:
            old, self.config = self.config, config
            if config.rules != old.rules:
                self.rules = Rules(config.rules)
            if config.cache != old.cache:
                self.cache.max_entries = config.cache.max_entries
                self.cache.max_distance = config.cache.default_max_distance
            if config.budget != old.budget:
                self.budget.reconfigure(config.budget.per_minute, config.budget.per_hour)
            if config.vision.verifier != old.vision.verifier or config.vision.classifier != old.vision.classifier:
                self.stages = build_stages(config.vision)
            geometry = [(c.id, c.zones, c.masks) for c in config.cameras]
            if config.vision != old.vision or geometry != [(c.id, c.zones, c.masks) for c in old.cameras]:
                self._vision_gen += 1
            self._overloaded_seen = self.overloaded
            self._dirty = True

    def swap_detector(self, detector: Detector) -> Detector:
        """Put a new detector behind every camera between two detector calls; returns the old one."""
        old, self.detector.inner = self.detector.inner, detector
        return old

    # -- shutdown --------------------------------------------------------------------------------------
    def close(self) -> None:
        """Publish "offline", disconnect and close the outbox. Nothing is deleted: events still waiting for
        a PUBACK or a verdict go again, with the same ids, from the next agent on this outbox."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._drain()
            self.link.stop(final=(self._status_topic, OFFLINE))
            self._drain()
            self.outbox.close()

    def depth(self) -> dict[str, int]:
        return self.outbox.depth()

    def summary(self) -> dict[str, Any]:
        """Counters, outbox depth and median latencies, JSON-ready."""
        def median(values) -> float | None:
            data = sorted(values)
            return round(data[len(data) // 2], 2) if data else None

        return {
            **self.stats.counters(),
            "outbox": self.outbox.depth(),
            "outbox_dropped": self.outbox.dropped,
            "cache_entries": len(self.cache),
            "latency_ms": {
                "detect": median(self.stats.detect_ms),
                **{f"verdict_{k}": median(v) for k, v in self.stats.verdict_ms.items()},
            },
        }


__all__ = ["EdgeAgent", "EdgeStats"]
