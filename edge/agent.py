"""The edge agent: frames -> vision pipeline -> decision -> durable outbox -> MQTT, and verdicts back.

The composition root of the device. Each camera gets its own VisionPipeline (one detector shared between
them); every new track is looked up in the verdict cache and put to the rules; escalations are encoded as
protocol v1 events and stored in the outbox before anything is sent, so a crash, a power cut or a missing
broker costs a delay, never an event.

Threads: paho's network thread only puts (kind, value) tuples on a queue; everything else (outbox writes,
publishing, cache updates, callbacks) happens on the thread that calls `pump()`, `run_source()` or
`wait_idle()`, under one lock so several camera threads may share the agent.
"""

from __future__ import annotations

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
    MAX_DETECTIONS,
    Detection,
    Event,
    ProtocolError,
    Verdict,
    decode_verdict,
    encode_event,
)
from ..shared.topics import OFFLINE, ONLINE, Topics
from .capture import CaptureError, FrameSource
from .config import CameraConfig, EdgeConfig
from .detect import Det, Detector, build_detector
from .outbox import Outbox
from .pipeline import PipelineOutput, TrackEvent, VisionPipeline
from .rules import Decision, Rules
from .vcache import VerdictCache

log = logging.getLogger("edgetriage.edge.agent")

OnDecision = Callable[[TrackEvent, Decision, "str | None"], None]
OnVerdict = Callable[[Verdict, "float | None"], None]

_SAMPLES = 10_000  # latency samples kept per series
_SEEN_IDS = 10_000  # verdict event ids remembered for duplicate counting
_SCAN_EVERY_MS = 1_000  # how often the outbox is scanned for overdue items when nothing new was added
_REQUEUE_GRACE_MS = 1_500  # after a reconnect that kept the session, verdicts queued at the broker arrive first


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


class _TimedDetector:
    """The shared detector, timing every call into the agent's stats (all cameras together)."""

    def __init__(self, inner: Detector, samples: deque[float]) -> None:
        self.inner = inner
        self._samples = samples

    def detect(self, image_bgr: np.ndarray) -> list[Det]:
        t = time.perf_counter()
        dets = self.inner.detect(image_bgr)
        self._samples.append((time.perf_counter() - t) * 1000.0)
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
    ) -> None:
        self.config = config
        self.device = config.device
        self.topics = Topics(config.mqtt.prefix)
        self.on_decision = on_decision
        self.on_verdict = on_verdict
        self.stats = EdgeStats()
        self.detector = _TimedDetector(detector if detector is not None else build_detector(config.vision.detector),
                                       self.stats.detect_ms)
        self.pipelines: dict[str, VisionPipeline] = {
            cam.id: VisionPipeline(cam.id, config.vision, self.detector) for cam in config.cameras
        }
        self._seen_pipeline: dict[str, tuple[int, int, int]] = {}
        self.rules = Rules(config.rules)
        self.cache = VerdictCache(config.cache.max_entries, max_distance=config.cache.default_max_distance)
        self.outbox = Outbox(config.outbox.path, config.outbox.max_bytes, config.outbox.max_age_s)
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
        self.link = MQTTLink(
            config.mqtt,
            config.mqtt.client_id or f"edgetriage-{self.device}",
            on_message=lambda m: self._inbox.put(("message", m)),
            on_published=lambda mid: self._inbox.put(("puback", mid)),
            on_connected=lambda present: self._inbox.put(("connected", present)),
            on_disconnected=lambda reason: self._inbox.put(("disconnected", reason)),
            will=Will(self._status_topic, OFFLINE, qos=1, retain=True),
        )
        self.link.subscribe(self._verdict_topic, 1)
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
        pipeline = self._pipeline(camera.id)
        source = FrameSource(camera.source, start_frame=camera.start_frame, max_frames=max_frames)
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
                out = pipeline.process(frame)
                self._handle_output(camera.id, pipeline, out)
                self.pump()
            self._handle_output(camera.id, pipeline, pipeline.finish())
            self.pump()
        finally:
            source.close()

    def run_forever(self, stop: threading.Event | None = None) -> None:
        """Every configured camera on a thread of its own (live sources reconnect after a loss), the
        delivery loop on this one, until `stop` is set or Ctrl-C."""
        stop = stop if stop is not None else threading.Event()
        threads = [threading.Thread(target=self._camera_loop, args=(cam, stop), name=f"camera-{cam.id}",
                                    daemon=True) for cam in self.config.cameras]
        for t in threads:
            t.start()
        try:
            while not stop.is_set():
                self._wait_and_pump(0.2)
        except KeyboardInterrupt:
            log.info("interrupted; stopping")
        finally:
            stop.set()
            for t in threads:
                t.join(5)

    def _camera_loop(self, camera: CameraConfig, stop: threading.Event) -> None:
        backoff = 1.0
        while not stop.is_set():
            try:
                self.run_source(camera, realtime=True, stop=stop)
            except CaptureError as exc:
                log.error("camera %s: %s (retrying in %.0f s)", camera.id, exc, backoff)
                stop.wait(backoff)
                backoff = min(60.0, backoff * 2)
                continue
            except Exception:  # noqa: BLE001 - one camera's failure must not take the device down
                log.exception("camera %s: processing failed (retrying in %.0f s)", camera.id, backoff)
                stop.wait(backoff)
                backoff = min(60.0, backoff * 2)
                continue
            if stop.is_set():
                return
            if not FrameSource(camera.source).live:
                log.info("camera %s: %s finished", camera.id, camera.source)
                return
            backoff = 1.0

    def _pipeline(self, camera_id: str) -> VisionPipeline:
        with self._lock:
            pipeline = self.pipelines.get(camera_id)
            if pipeline is None:
                pipeline = self.pipelines[camera_id] = VisionPipeline(camera_id, self.config.vision, self.detector)
            return pipeline

    def _handle_output(self, camera_id: str, pipeline: VisionPipeline, out: PipelineOutput) -> None:
        with self._lock:
            self._sync_vision_stats(camera_id, pipeline)
            for ev in out.new_events:
                self._decide(camera_id, ev)

    def _sync_vision_stats(self, camera_id: str, pipeline: VisionPipeline) -> None:
        ps = pipeline.stats
        prev = self._seen_pipeline.get(camera_id, (0, 0, 0))
        now = (ps.frames_read, ps.frames_detected, ps.tracks)
        self.stats.frames_read += now[0] - prev[0]
        self.stats.frames_detected += now[1] - prev[1]
        self.stats.tracks += now[2] - prev[2]
        self._seen_pipeline[camera_id] = now

    def _decide(self, camera_id: str, ev: TrackEvent) -> None:
        t = time.perf_counter()
        now = _now_ms()
        cached = None
        if ev.label in self.rules.config.labels:
            cached = self.cache.lookup(device=self.device, camera=camera_id, site=self.config.site, label=ev.label,
                                       phash=ev.phash, phash_alg=ev.phash_alg, now_ms=now)
        decision = self.rules.decide(ev, cached)
        self.stats.events += 1
        event_id: str | None = None
        if decision.kind == "escalate":
            event_id, decision = self._escalate(camera_id, ev, decision, now)
        if decision.kind == "escalate":
            self.stats.escalated += 1
        elif decision.kind == "cached":
            self.stats.verdicts_device_cache += 1
            self.stats.add_latency("device_cache", (time.perf_counter() - t) * 1000.0)
        elif decision.kind == "local":
            self.stats.local += 1
        else:
            self.stats.dropped += 1
        if self.on_decision is not None:
            try:
                self.on_decision(ev, decision, event_id)
            except Exception:  # noqa: BLE001 - a reporting hook must not stop the camera
                log.exception("on_decision callback failed")

    def _escalate(self, camera_id: str, ev: TrackEvent, decision: Decision, now: int) -> tuple[str | None, Decision]:
        """Encode the event and store it in the outbox; delivery happens in pump()."""
        event_id = uuid7(now)
        try:
            event = Event(
                event_id=event_id, device=self.device, camera=camera_id, site=self.config.site,
                captured_ms=max(0, int(ev.captured_ms)), label=ev.label, score=_unit(ev.score),
                uncertain=bool(ev.uncertain) or self.rules.is_uncertain(ev), track_id=max(0, int(ev.track_id)),
                detections=[Detection(label=d.label, score=_unit(d.score), box=tuple(_unit(v) for v in d.box))
                            for d in ev.detections[-MAX_DETECTIONS:]],
                phash=ev.phash, phash_alg=ev.phash_alg, reason=decision.reason[:256],
                crop=ev.crop_jpeg, crop_size=tuple(ev.crop_size),
            )
            payload = encode_event(event)
        except ProtocolError as exc:
            reason = exc.reason
        except ValidationError as exc:
            reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        else:
            self.outbox.add(event_id, self._events_topic, payload, now)
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
        if kind == "puback":
            self.outbox.mark_sent(value)
        elif kind == "message":
            self._on_message(value)
        elif kind == "connected":
            self._on_connected(bool(value))
        elif kind == "disconnected" and not self._closed:
            log.warning("MQTT connection lost (%s); events are kept in the outbox until it returns", value)

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
        if not self.link.connected.is_set():
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
        for item in due:
            mid = self.link.publish(item.topic, item.payload, qos=1)
            if mid is None:  # connection went away meanwhile; the next connect starts over
                self._dirty = True
                return
            self.outbox.mark_published(item.event_id, mid, now)
            self.stats.published += 1
            if item.attempts:
                self.stats.republished += 1
        if len(due) >= 100:
            self._dirty = True  # more than one batch was due

    def _on_message(self, msg: Incoming) -> None:
        if msg.topic != self._verdict_topic:
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
