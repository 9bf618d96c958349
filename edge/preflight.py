"""What `edge run` and `edge check-config` check before anything slow starts, in one place so both find the
same problems: a config file that names its cameras, every camera with a source, every file source a video
with a frame, and the metrics port free.

A device must say which cameras it has: without a file, or with a file without `[[cameras]]`, it would play
the bundled sample clip as a camera and publish its events to a real broker (only `edgetriage demo` plays
that clip). Live sources (a camera index, an rtsp:// or http:// URL) are not opened here: a camera that is
booting or away is retried by the daemon until it answers. A file is there at start or it is a mistake.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..shared.config import ConfigError
from ..shared.ports import check_port_free
from .config import CameraConfig, EdgeConfig
from .vision.capture import CaptureError, FrameSource, redact


@dataclass(frozen=True, slots=True)
class Checked:
    """What was checked and found usable, one line each (check-config prints them); `notes`: what was
    found that is no error in the config itself (a port some process holds right now)."""

    lines: tuple[str, ...]
    notes: tuple[str, ...] = ()


def probe_video(source: str) -> str:
    """Open a video file and decode its first frame; CaptureError (one line) when it is missing or no video."""
    with FrameSource(source, max_frames=1) as video:
        if not any(True for _ in video):
            raise CaptureError(f"{video.name}: opened but holds no frame")
        return f"{video.width}x{video.height} at {video.fps:g} fps"


def _camera_line(camera: CameraConfig, where: str) -> str:
    if "source" not in camera.model_fields_set:
        raise ConfigError(f"{where}: camera {camera.id} has no source; give source = a video file, a camera "
                          "index (\"0\" is /dev/video0) or an rtsp:// URL")
    probe = FrameSource(camera.read_source)
    if probe.live:
        detect = f" (detect sub-stream {redact(camera.detect_source)}: detection and crops)" \
            if camera.detect_source else ""
        return (f"camera {camera.id}: {_kind(camera.source)}{detect}, live over {camera.transport.upper()}: opened "
                "when the agent runs, retried while away")
    try:
        shape = probe_video(camera.read_source)
    except CaptureError as exc:
        raise CaptureError(f"{where}: camera {camera.id}: {exc}") from None
    return f"camera {camera.id}: {probe.name}: a video, first frame {shape}{', looping' if camera.loop else ''}"


def _kind(source: str) -> str:
    return f"camera index {source}" if source.isdigit() else f"stream {redact(source)}"


def preflight(config: EdgeConfig, path: str | None, *, ports: bool = True) -> Checked:
    """Raise ConfigError or CaptureError (one line, naming the file and camera) for the first problem that
    would stop the device from doing its job; else say what was checked. `ports`: a port in use raises (as
    `edge run` must) rather than becoming a note (as check-config says it, the agent itself may hold it)."""
    where = path or "no config file"
    cameras = ("the device's [[cameras]] (id and source: a video file, a camera index or an rtsp:// URL; see "
               "examples/edge-pi.toml); only `edgetriage demo` plays the bundled sample clip")
    if path is None:
        raise ConfigError(f"a device needs a config file: give --config FILE with {cameras}")
    if "cameras" not in config.model_fields_set:
        raise ConfigError(f"{path}: no cameras: add {cameras}")
    lines = [_camera_line(camera, where) for camera in config.cameras]
    notes: list[str] = []
    daemon = config.daemon
    if daemon.metrics_port:
        try:
            check_port_free(daemon.metrics_host, daemon.metrics_port, what="the metrics endpoint",
                            fix=f"set [daemon] metrics_port in {where} to a free port (0: no metrics endpoint)")
            lines.append(f"metrics: {daemon.metrics_host}:{daemon.metrics_port} is free")
        except ConfigError as exc:
            if ports:
                raise
            notes.append(f"note: {exc}; `edge run` refuses to start while it is taken (fine if the running agent "
                         "holds it)")
    return Checked(tuple(lines), tuple(notes))
