"""`edgetriage edge run`: the camera daemon a user installs on a Pi and forgets.

One thread per camera (edge.camera_worker) reads frames and hands them to the agent (edge.agent); a lost or
missing source is reopened after a jittered, growing delay, never in a busy loop, and reported on the retained
state topic and in the metrics. The main thread delivers (the agent's outbox and MQTT), tells systemd how things are
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
import signal
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..shared.clock import now_ms
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
from .camera_worker import CameraWorker, RateMeter
from .config import CameraConfig, EdgeConfig, load_edge_config
from .heap import share_one_heap
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
from .vision.capture import redact as _redact

log = logging.getLogger("edgetriage.edge.daemon")

TICK_S = 0.2  # the main loop wakes at least this often
STOP_JOIN_S = 4.0  # how long shutdown waits for camera threads (a read can block for read_timeout_s)
STATE_MIN_INTERVAL_S = 0.5  # state changes are published at most this often


# -- the daemon ------------------------------------------------------------------------------------------
class EdgeDaemon:
    """The device: agent, camera threads, systemd, metrics, state and remote configuration."""

    def __init__(self, config: EdgeConfig, *, notifier: SystemdNotifier | None = None) -> None:
        self.file_config = config
        self.notifier = notifier or SystemdNotifier(None)
        self.topics = Topics(config.mqtt.prefix)
        self.device = config.device
        self.started_ms = now_ms()
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
        self.models = ModelLoader(
            ModelFetcher.from_config(config.remote),
            self.files,
            swap=lambda d: self.agent.swap_detector(d),
            on_change=self._changed.set,
        )

        # the remote config applied before a restart holds until the broker says otherwise
        saved = self.files.load_saved() if config.remote.enabled else None
        effective = saved.config if saved is not None else config
        detector = self.models.restore(effective.vision.detector, saved)
        self.models.model_since_ms = self.started_ms
        if saved is not None:
            self.config_version, self.config_source = saved.version, "remote"

        self.agent = EdgeAgent(effective, detector=detector, on_control=self._on_control)
        if config.remote.enabled:
            self.agent.delivery.link.subscribe(self._config_topic, 1)
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
        self.config_refused = {**refused, "ms": now_ms()}
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
        self.config_applied_ms = now_ms()
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
        available = agent.delivery.spending.budget.available(now)
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
            device=self.device, ts_ms=now_ms(), started_ms=self.started_ms, running=running,
            ready=self.ready, watchdog_healthy=self.healthy,
            config=AppliedConfig(version=self.config_version, source=self.config_source,
                                 applied_ms=self.config_applied_ms, refused=self.config_refused),
            model=RunningModel(name=models.model_name, sha256=models.model_sha256, since_ms=models.model_since_ms,
                               loading=models.loading.model.sha256 if models.loading and models.loading.model
                               else None, refused=models.model_refused),
            cameras=cameras,
            cloud=CloudSeen(connected=agent.delivery.link.connected.is_set(), overloaded=agent.overloaded,
                            queue_depth=load.queue_depth if load else None, load_ts=load.ts / 1000 if load else None,
                            headroom_per_s=load.headroom_per_s if load else None),
            budget=BudgetState(per_minute=budget.per_minute, per_hour=budget.per_hour, policy=budget.policy,
                               available=None if available == float("inf") else int(available),
                               waiting=agent.delivery.outbox.count_unsent(),
                               dropped=agent.stats.budget_dropped,
                               local=agent.stats.budget_local),
            outbox=agent.delivery.outbox.depth(),
        )

    def publish_state(self, *, running: bool = True) -> None:
        state = encode_device_state(self.state(running=running))
        self.agent.delivery.link.publish(self._state_topic, state, qos=1,
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
                fps_detected=w.detect_rate.rate, frame_age_s=w.frame_age_s, frames_dropped=w.frames_dropped))
        return DeviceSnapshot(
            cameras=cameras, counters=agent.stats.counters(), outbox=agent.delivery.outbox.depth(),
            outbox_dropped=agent.delivery.outbox.dropped,
            mqtt_connected=agent.delivery.link.connected.is_set(), cloud_overloaded=agent.overloaded,
            budget_available=agent.delivery.spending.budget.available(time.monotonic()),
            config_version=self.config_version, config_refusals=self.config_refusals, model_name=self.model_name,
            model_sha256=self.model_sha256, model_swaps=self.model_swaps, model_refusals=self.model_refusals,
            watchdog_healthy=self.healthy, suppressed_by_rule=dict(agent.suppressions.matched))


def run_daemon(config_path: str | None, env: Mapping[str, str] | None = None) -> int:
    """`edgetriage edge run`: until SIGTERM or SIGINT; exit status 0 after a clean stop."""
    config = load_edge_config(config_path)
    share_one_heap()
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


__all__ = ["CameraWorker", "DetectorSpec", "EdgeDaemon", "RateMeter", "SystemdNotifier", "run_daemon",
           "share_one_heap"]
