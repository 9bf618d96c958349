"""One camera on a thread of its own (edge.daemon runs one per camera): open the source, read, hand every
frame to the agent, and reopen a lost source after a jittered, growing delay, never in a busy loop. The thread
calls only `EdgeAgent.process` / `end_stream` and writes its own counters, which the daemon's main thread reads
for the state topic, the metrics and the watchdog.

A live source hands over its latest frame only (edge.vision.live), so what the pipeline works on is never far
behind the camera: `frame_age_s` says how far (grab to hand-over), the metrics' frame age."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable

from .agent import EdgeAgent
from .config import CameraConfig
from .vision.capture import CaptureError, FrameSource
from .vision.capture import redact as _redact

log = logging.getLogger("edgetriage.edge.daemon")  # the daemon's cameras log under its name, as they always did

RATE_WINDOW_S = 10.0
AGES_KEPT = 512  # the last frames' ages kept for percentiles (bench/live.py)


class RateMeter:
    """Events per second over the last `window_s`, from a growing count sampled now and then."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self.window_s = window_s
        self.rate = 0.0
        self._samples: deque[tuple[float, int]] = deque()

    def update(self, now: float, count: int) -> float:
        self._samples.append((now, count))
        while len(self._samples) > 2 and self._samples[1][0] <= now - self.window_s:
            self._samples.popleft()
        t0, c0 = self._samples[0]
        self.rate = (count - c0) / (now - t0) if now > t0 and count >= c0 else 0.0
        return self.rate


class CameraWorker:
    """One camera on a thread of its own: open, read, hand every frame to the agent; when the source is
    lost, wait a random delay of up to reconnect_min_s * 2^n (capped at reconnect_max_s) and open it again.
    A file that reaches its end is "ended" and not reopened (one INFO line); with `loop` it never ends. A file
    source is checked before the daemon starts (edge.preflight: missing or not a video is a config error); one
    that goes missing later (a remote config, a mount) is retried like a lost stream."""

    def __init__(self, camera: CameraConfig, agent: EdgeAgent, *, on_change: Callable[[], None],
                 rng: random.Random | None = None) -> None:
        self.camera = camera
        self.agent = agent
        self.state = "connecting"
        self.reconnects = 0
        self.last_error = ""
        self.frames_read = 0
        self.frames_dropped = 0  # live: due while the pipeline was busy, so never converted (never queued)
        self.frame_age_s = 0.0  # how old the last frame handed to the pipeline was (live: since its grab)
        self.ages: deque[float] = deque(maxlen=AGES_KEPT)
        self.opened_at: float | None = None  # time.monotonic() when the source last opened
        self.first_frame_at: float | None = None  # ... and when its first frame went through the pipeline
        self.busy_since: float | None = None  # last progress while inside a source; None while waiting on purpose
        self.first_frame = threading.Event()
        self.read_rate = RateMeter()
        self.detect_rate = RateMeter()
        self._on_change = on_change
        self._rng = rng or random.Random()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"camera-{camera.id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> bool:
        """True when the thread has ended."""
        if self._thread.is_alive():
            self._thread.join(max(0.0, timeout))
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stuck(self, now: float, stall_s: float) -> bool:
        """Inside one read or one pipeline step for longer than `stall_s`."""
        since = self.busy_since
        return since is not None and now - since > stall_s

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self._on_change()

    def _backoff(self, attempt: int) -> float:
        cam = self.camera
        cap = min(cam.reconnect_max_s, cam.reconnect_min_s * (2 ** min(attempt, 20)))
        return self._rng.uniform(min(cam.reconnect_min_s / 2, cap), cap)

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            ended = delivered = False
            error = ""
            try:
                ended, delivered = self._stream()
            except CaptureError as exc:
                error = str(exc)
            except Exception as exc:  # noqa: BLE001 - one camera's failure must not take the device down
                log.exception("camera %s: processing failed", self.camera.id)
                error = f"processing failed: {exc}"
            finally:
                self.busy_since = None
                try:
                    self.agent.end_stream(self.camera.id)
                except Exception:  # noqa: BLE001
                    log.exception("camera %s: ending its tracks failed", self.camera.id)
            if self._stop.is_set():
                break
            if ended:
                log.info("camera %s: %s finished; the camera is done (loop = true replays a file for ever)",
                         self.camera.id, _redact(self.camera.read_source))
                self._set_state("ended")
                return
            attempt = 0 if delivered else attempt
            delay = self._backoff(attempt)
            attempt += 1
            self.reconnects += 1
            # messages name the source; a camera URL's password must not reach the logs or the state topic
            self.last_error = error or "the stream ended"
            for url in (self.camera.source, self.camera.detect_source):
                self.last_error = self.last_error.replace(url, _redact(url)) if url else self.last_error
            if attempt == 1 or attempt % 10 == 0:
                log.warning("camera %s: %s (reconnect attempt %d in %.1f s)", self.camera.id, self.last_error,
                            attempt, delay)
            self._set_state("reconnecting")
            self._stop.wait(delay)
        self._set_state("stopped")

    def _stream(self) -> tuple[bool, bool]:
        """Read the source until it ends or is lost: (ended as a file ends, delivered at least one frame)."""
        cam = self.camera
        source = FrameSource(cam.read_source, start_frame=cam.start_frame,
                             min_interval_s=1.0 / cam.detect_fps if cam.detect_fps else 0.0,
                             open_timeout_s=cam.open_timeout_s, read_timeout_s=cam.read_timeout_s,
                             transport=cam.transport, loop=cam.loop)
        delivered = False
        base, dropped = self.frames_read, self.frames_dropped
        self.busy_since = time.monotonic()
        try:
            source.open()
            self.opened_at, self.first_frame_at = time.monotonic(), None
            log.info("camera %s: %s open, %dx%d at %g fps%s", cam.id, _redact(cam.read_source), source.width,
                     source.height, source.fps, " (the detect sub-stream: detection and crops)"
                     if cam.detect_source else " (looping)" if cam.loop else "")
            self._set_state("streaming")
            pace = cam.realtime and not source.live
            t0: float | None = None
            first_pts = 0.0
            for frame in source:
                self.frames_read, self.frames_dropped = base + source.grabbed, dropped + source.dropped
                if self._stop.is_set():
                    return False, delivered
                due = None
                if pace:
                    if t0 is None:
                        t0, first_pts = time.monotonic(), frame.pts_s
                    due = t0 + (frame.pts_s - first_pts)
                    delay = due - time.monotonic()
                    if delay > 0:
                        self.busy_since = None  # waiting on purpose is not being stuck
                        if self._stop.wait(delay):
                            return False, delivered
                self.busy_since = now = time.monotonic()
                origin = frame.grabbed_s if frame.grabbed_s is not None else due
                self.frame_age_s = max(0.0, now - origin) if origin is not None else 0.0
                self.ages.append(self.frame_age_s)
                self.agent.process(cam.id, frame)
                del frame  # not held while the next is taken: unmapped once the pipeline is done (vision.live)
                self.busy_since = time.monotonic()
                if not delivered:
                    delivered = True
                    self.first_frame_at = self.busy_since
                    self.last_error = ""
                    if not self.first_frame.is_set():
                        self.first_frame.set()
                        self._on_change()
            self.frames_read, self.frames_dropped = base + source.grabbed, dropped + source.dropped
            return not source.live, delivered
        finally:
            source.close()


__all__ = ["CameraWorker", "RateMeter"]
