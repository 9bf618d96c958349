"""`edgetriage edge run`: the camera daemon a user installs on a Pi and forgets.

One thread per camera reads frames and hands them to the agent (edge.agent); a lost or missing source is
reopened after a jittered, growing delay, never in a busy loop, and reported on the retained state topic and
in the metrics. The main thread delivers (the agent's outbox and MQTT), tells systemd how things are
(`READY=1` after the first processed frame, `WATCHDOG=1` only while no camera is stuck inside a read or a
detector call), publishes the device state, applies remote configurations and swaps detector models that a
background thread fetched and checked. SIGTERM stops it within seconds; the outbox keeps what was not sent.

Threads and what they may touch: camera threads call only `EdgeAgent.process` / `end_stream` and write
their own counters; the model loader thread only builds a detector and posts it on a queue; the metrics
server thread only reads. Everything else happens on the main thread.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from ..shared.config import ConfigError
from ..shared.mqtt import Incoming
from ..shared.protocol import (
    AppliedConfig,
    BudgetState,
    CameraState,
    CloudSeen,
    DeviceState,
    RunningModel,
    encode_device_state,
)
from ..shared.topics import Topics
from ..shared.version import package_version
from .agent import EdgeAgent
from .config import CameraConfig, EdgeConfig, load_edge_config
from .metrics import CameraSnapshot, DeviceSnapshot, EdgeMetrics
from .remote_config import (
    DetectorSpec,
    ModelAnnouncement,
    ModelFetcher,
    ModelLoader,
    RemoteFiles,
    RemoteRefused,
    parse_update,
)
from .systemd import SystemdNotifier
from .vision.capture import CaptureError, FrameSource
from .vision.capture import redact as _redact

log = logging.getLogger("edgetriage.edge.daemon")

TICK_S = 0.2  # the main loop wakes at least this often
STOP_JOIN_S = 4.0  # how long shutdown waits for camera threads (a read can block for read_timeout_s)
STATE_MIN_INTERVAL_S = 0.5  # state changes are published at most this often
RATE_WINDOW_S = 10.0


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- cameras ---------------------------------------------------------------------------------------------
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
    A file that reaches its end is "ended" and not reopened. A file source is checked before the daemon starts
    (edge.preflight: missing or not a video is a config error); one that goes missing later (a remote config,
    a mount) is retried like a lost stream."""

    def __init__(self, camera: CameraConfig, agent: EdgeAgent, *, on_change: Callable[[], None],
                 rng: random.Random | None = None) -> None:
        self.camera = camera
        self.agent = agent
        self.state = "connecting"
        self.reconnects = 0
        self.last_error = ""
        self.frames_read = 0
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
                log.info("camera %s: %s finished", self.camera.id, _redact(self.camera.source))
                self._set_state("ended")
                return
            attempt = 0 if delivered else attempt
            delay = self._backoff(attempt)
            attempt += 1
            self.reconnects += 1
            # messages name the source; a camera URL's password must not reach the logs or the state topic
            self.last_error = (error or "the stream ended").replace(self.camera.source, _redact(self.camera.source))
            if attempt == 1 or attempt % 10 == 0:
                log.warning("camera %s: %s (reconnect attempt %d in %.1f s)", self.camera.id, self.last_error,
                            attempt, delay)
            self._set_state("reconnecting")
            self._stop.wait(delay)
        self._set_state("stopped")

    def _stream(self) -> tuple[bool, bool]:
        """Read the source until it ends or is lost: (ended as a file ends, delivered at least one frame)."""
        cam = self.camera
        source = FrameSource(cam.source, start_frame=cam.start_frame,
                             min_interval_s=1.0 / cam.detect_fps if cam.detect_fps else 0.0,
                             open_timeout_s=cam.open_timeout_s, read_timeout_s=cam.read_timeout_s)
        delivered = False
        base = self.frames_read
        self.busy_since = time.monotonic()
        try:
            source.open()
            log.info("camera %s: %s open, %dx%d at %g fps", cam.id, _redact(str(cam.source)), source.width,
                     source.height, source.fps)
            self._set_state("streaming")
            pace = cam.realtime and not source.live
            t0: float | None = None
            first_pts = 0.0
            for frame in source:
                self.frames_read = base + source.grabbed
                if self._stop.is_set():
                    return False, delivered
                if pace:
                    if t0 is None:
                        t0, first_pts = time.monotonic(), frame.pts_s
                    delay = t0 + (frame.pts_s - first_pts) - time.monotonic()
                    if delay > 0:
                        self.busy_since = None  # waiting on purpose is not being stuck
                        if self._stop.wait(delay):
                            return False, delivered
                self.busy_since = time.monotonic()
                self.agent.process(cam.id, frame)
                self.busy_since = time.monotonic()
                if not delivered:
                    delivered = True
                    self.last_error = ""
                    if not self.first_frame.is_set():
                        self.first_frame.set()
                        self._on_change()
            self.frames_read = base + source.grabbed
            return not source.live, delivered
        finally:
            source.close()


# -- the daemon ------------------------------------------------------------------------------------------
class EdgeDaemon:
    """The device: agent, camera threads, systemd, metrics, state and remote configuration."""

    def __init__(self, config: EdgeConfig, *, notifier: SystemdNotifier | None = None) -> None:
        self.file_config = config
        self.notifier = notifier or SystemdNotifier(None)
        self.topics = Topics(config.mqtt.prefix)
        self.device = config.device
        self.started_ms = _now_ms()
        self.ready = False
        self.healthy = True
        self.config_version = "file"
        self.config_source = "file"
        self.config_applied_ms = self.started_ms
        self.config_refused: dict[str, Any] | None = None
        self.config_refusals = 0
        self._stopping = False
        self._changed = threading.Event()
        self._state_topic = self.topics.state(self.device)
        self._config_topic = self.topics.config(self.device)
        self.files = RemoteFiles(config.state_dir, config)
        self.models = ModelLoader(ModelFetcher.from_config(config.remote), self.files, swap=lambda d: self.agent.swap_detector(d),
                                  on_change=self._changed.set)

        # the remote config applied before a restart holds until the broker says otherwise
        saved = self.files.load_saved() if config.remote.enabled else None
        effective = saved.config if saved is not None else config
        detector = self.models.restore(effective.vision.detector, saved)
        self.models.model_since_ms = self.started_ms
        if saved is not None:
            self.config_version, self.config_source = saved.version, "remote"

        self.agent = EdgeAgent(effective, detector=detector, on_control=self._on_control)
        if config.remote.enabled:
            self.agent.link.subscribe(self._config_topic, 1)
        self.metrics = EdgeMetrics(self.snapshot) if config.daemon.metrics_port else None
        if self.metrics is not None:
            self.agent.observe_detect = self.metrics.detect_seconds.observe
        self.workers: dict[str, CameraWorker] = {cam.id: self._worker(cam) for cam in effective.cameras}
        self._restarting: dict[str, CameraWorker] = {}  # camera id -> worker to start once the old one ended

    @property
    def model_name(self) -> str:
        return self.models.model_name

    @property
    def model_sha256(self) -> str:
        return self.models.model_sha256

    @property
    def model_swaps(self) -> int:
        return self.models.model_swaps

    @property
    def model_refusals(self) -> int:
        return self.models.model_refusals

    def _worker(self, camera: CameraConfig) -> CameraWorker:
        return CameraWorker(camera, self.agent, on_change=self._changed.set)

    # -- running ---------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Stop soon (safe from a signal handler)."""
        self._stopping = True

    def run(self) -> None:
        """Until `request_stop()`; then shut down within STOP_JOIN_S plus a few seconds for MQTT."""
        daemon_cfg = self.file_config.daemon
        if self.metrics is not None:
            try:
                port = self.metrics.serve(daemon_cfg.metrics_host, daemon_cfg.metrics_port)
            except OSError as exc:
                self.agent.close()
                raise ConfigError(str(exc.strerror or exc)) from None
            log.info("metrics on http://%s:%d/metrics", daemon_cfg.metrics_host, port)
        self.notifier.notify(f"STATUS=starting {len(self.workers)} camera(s)")
        for worker in self.workers.values():
            worker.start()
        self.models.want_running()
        interval = self.notifier.watchdog_interval_s
        next_ping = next_state = next_rates = time.monotonic()
        last_state = 0.0
        connects = 0
        try:
            while not self._stopping:
                self.agent.wait_and_pump(TICK_S)
                now = time.monotonic()
                self.models.collect()
                self._start_restarted()
                if not self.ready and any(w.first_frame.is_set() for w in self.workers.values()):
                    self.ready = True
                    self.notifier.notify("READY=1", "STATUS=processing frames")
                    self._changed.set()
                if now >= next_rates:
                    next_rates = now + 1.0
                    self._update_rates(now)
                if self.agent.stats.connects != connects:  # (re)connected: say at once how things are
                    connects = self.agent.stats.connects
                    self._changed.set()
                self._check_health(now)
                if interval is not None and now >= next_ping and self.healthy:
                    self.notifier.notify("WATCHDOG=1")
                    next_ping = now + interval
                if now >= next_state or (self._changed.is_set() and now - last_state >= STATE_MIN_INTERVAL_S):
                    self._changed.clear()
                    self.publish_state()
                    last_state = now
                    next_state = now + daemon_cfg.state_interval_s
        finally:
            self._shutdown()

    def _check_health(self, now: float) -> None:
        stall_s = self.file_config.daemon.stall_s
        stuck = [w.camera.id for w in self.workers.values() if w.stuck(now, stall_s)]
        healthy = not stuck
        if healthy != self.healthy:
            self.healthy = healthy
            self._changed.set()
            if stuck:
                log.error("camera %s: no progress for over %g s (stuck in a read or in the detector); "
                          "systemd watchdog pings stopped", ", ".join(stuck), stall_s)
                self.notifier.notify(f"STATUS=stuck: {', '.join(stuck)}")
            else:
                log.warning("cameras progress again; watchdog pings resumed")
                self.notifier.notify("STATUS=processing frames")

    def _update_rates(self, now: float) -> None:
        for cam_id, worker in list(self.workers.items()):
            counts = self.agent.camera_counts.get(cam_id)
            worker.read_rate.update(now, worker.frames_read)
            worker.detect_rate.update(now, counts.detected if counts else 0)

    def _shutdown(self) -> None:
        self.notifier.notify("STOPPING=1", "STATUS=stopping")
        workers = list(self.workers.values()) + list(self._restarting.values())
        for worker in workers:
            worker.stop()
        deadline = time.monotonic() + STOP_JOIN_S
        for worker in workers:
            if not worker.join(deadline - time.monotonic()):
                log.warning("camera %s did not stop within %.0f s (blocked in a read); leaving it",
                            worker.camera.id, STOP_JOIN_S)
        try:
            self.publish_state(running=False)
        except Exception:  # noqa: BLE001 - shutting down regardless
            log.exception("publishing the final state failed")
        self.agent.close()
        if self.metrics is not None:
            self.metrics.close()
        self.notifier.close()

    # -- remote configuration --------------------------------------------------------------------------
    def _on_control(self, msg: Incoming) -> None:
        if msg.topic != self._config_topic:
            return
        if not msg.payload:  # the retained config was cleared: back to the device's own file
            if self.config_source == "remote":
                log.info("remote config cleared; back to the device's own file")
                self._apply(self.file_config, None, "file", "file")
                self.files.clear()
            return
        try:
            update = parse_update(msg.payload, self.file_config)
        except RemoteRefused as exc:
            self._refuse(exc.version, exc.reason)
            return
        if update.version == self.config_version and self.config_source == "remote":
            return  # the retained message again (reconnect): already applied
        self._apply(update.config, update.model, update.version, "remote")
        self.files.save(update)

    def _refuse(self, version: str | None, reason: str) -> None:
        refused = {"version": version, "reason": reason[:1000]}
        if self.config_refused is not None and {k: self.config_refused[k] for k in refused} == refused:
            return  # the same retained message again
        self.config_refused = {**refused, "ms": _now_ms()}
        self.config_refusals += 1
        log.error("remote config %s refused, running %s kept: %s", version or "(no version)", self.config_version,
                  reason.replace("\n", "; "))
        self._changed.set()

    def _apply(self, config: EdgeConfig, model: ModelAnnouncement | None, version: str, source: str) -> None:
        old = self.agent.config
        self.agent.apply(config)
        for cam in config.cameras:
            if cam != old.camera(cam.id):
                self._restart_camera(cam)
        self.models.want(DetectorSpec(config.vision.detector, model))
        self.config_version, self.config_source = version, source
        self.config_applied_ms = _now_ms()
        self.config_refused = None
        log.info("config %s (%s) applied", version, source)
        self._changed.set()

    def _restart_camera(self, camera: CameraConfig) -> None:
        """Stop the camera's thread; a new one with the new settings starts once it has ended."""
        old = self.workers[camera.id]
        old.stop()
        self._restarting[camera.id] = old
        self.workers[camera.id] = self._worker(camera)

    def _start_restarted(self) -> None:
        for cam_id, old in list(self._restarting.items()):
            if not old.alive:
                del self._restarting[cam_id]
                self.workers[cam_id].start()

    # -- reporting -------------------------------------------------------------------------------------
    def state(self, *, running: bool = True) -> DeviceState:
        """The retained state message: what runs, how the cameras are, what was applied or refused."""
        agent, models = self.agent, self.models
        now = time.monotonic()
        stall_s = self.file_config.daemon.stall_s
        budget = agent.config.budget
        available = agent.budget.available(now)
        load = agent.load
        cameras = {}
        for cam_id, w in list(self.workers.items()):
            counts = agent.camera_counts.get(cam_id)
            cameras[cam_id] = CameraState(
                state="stopped" if not running else "stalled" if w.stuck(now, stall_s) else w.state,
                source=_redact(w.camera.source), reconnects=w.reconnects, last_error=w.last_error,
                frames_read=w.frames_read, frames_processed=counts.frames if counts else 0,
                fps_read=round(w.read_rate.rate, 2), fps_detected=round(w.detect_rate.rate, 2),
                detect_fps=w.camera.detect_fps,
            )
        return DeviceState(
            device=self.device, ts_ms=_now_ms(), started_ms=self.started_ms, running=running,
            ready=self.ready, watchdog_healthy=self.healthy,
            config=AppliedConfig(version=self.config_version, source=self.config_source,
                                 applied_ms=self.config_applied_ms, refused=self.config_refused),
            model=RunningModel(name=models.model_name, sha256=models.model_sha256, since_ms=models.model_since_ms,
                               loading=models.loading.model.sha256 if models.loading and models.loading.model
                               else None, refused=models.model_refused),
            cameras=cameras,
            cloud=CloudSeen(connected=agent.link.connected.is_set(), overloaded=agent.overloaded,
                            queue_depth=load.queue_depth if load else None, load_ts=load.ts / 1000 if load else None),
            budget=BudgetState(per_minute=budget.per_minute, per_hour=budget.per_hour, policy=budget.policy,
                               available=None if available == float("inf") else int(available),
                               waiting=agent.outbox.count_unsent(), dropped=agent.stats.budget_dropped,
                               local=agent.stats.budget_local),
            outbox=agent.outbox.depth(),
        )

    def publish_state(self, *, running: bool = True) -> None:
        self.agent.link.publish(self._state_topic, encode_device_state(self.state(running=running)), qos=1,
                                retain=True)

    def snapshot(self) -> DeviceSnapshot:
        """Figures for the metrics endpoint (called on its thread)."""
        agent = self.agent
        cameras = []
        for cam_id, w in list(self.workers.items()):
            counts = agent.camera_counts.get(cam_id)
            cameras.append(CameraSnapshot(
                camera=cam_id, state=w.state, frames_read=w.frames_read,
                frames_processed=counts.frames if counts else 0, frames_detected=counts.detected if counts else 0,
                tracks=counts.tracks if counts else 0, reconnects=w.reconnects, fps_read=w.read_rate.rate,
                fps_detected=w.detect_rate.rate))
        return DeviceSnapshot(
            cameras=cameras, counters=agent.stats.counters(), outbox=agent.outbox.depth(),
            outbox_dropped=agent.outbox.dropped, mqtt_connected=agent.link.connected.is_set(),
            cloud_overloaded=agent.overloaded, budget_available=agent.budget.available(time.monotonic()),
            config_version=self.config_version, config_refusals=self.config_refusals, model_name=self.model_name,
            model_sha256=self.model_sha256, model_swaps=self.model_swaps, model_refusals=self.model_refusals,
            watchdog_healthy=self.healthy)


def run_daemon(config_path: str | None, env: Mapping[str, str] | None = None) -> int:
    """`edgetriage edge run`: until SIGTERM or SIGINT; exit status 0 after a clean stop."""
    config = load_edge_config(config_path)
    try:  # OpenCV's own warnings on every failed reconnect would flood the journal; ours say it once
        import cv2

        cv2.setLogLevel(2)  # errors only
    except (ImportError, AttributeError):
        pass
    daemon = EdgeDaemon(config, notifier=SystemdNotifier.from_env(os.environ if env is None else env))
    log.info("edgetriage %s edge agent %s: config %s; broker %s (prefix %s); cameras %s; detector %s",
             package_version(), config.device, config_path, config.mqtt.url, config.mqtt.prefix,
             ", ".join(f"{w.camera.id} ({_redact(w.camera.source)})" for w in daemon.workers.values()),
             daemon.model_name or config.vision.detector.model)

    def _stop(signum: int, frame: object) -> None:
        daemon.request_stop()

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        daemon.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


__all__ = ["CameraWorker", "DetectorSpec", "EdgeDaemon", "RateMeter", "SystemdNotifier", "run_daemon"]
