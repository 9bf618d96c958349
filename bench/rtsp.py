"""A real RTSP server for the tests and bench/live.py: GStreamer's RTSP server (Debian's gstreamer1.0-rtsp,
gir1.2-gst-rtsp-server-1.0, with gstreamer1.0-plugins-good/-ugly and -libav for H.264), serving H.264 (Matroska files)
made from the shipped clips by x264 at the size and rate asked for.

Imported (by the tests' and benchmarks' Python): `h264_clip` makes a clip, `RtspServer` runs a server on a
port as a process of its own, to stop and start again like a camera that reboots. Run as a script (by the
system's Python, which has PyGObject): `encode` and `serve`, the GStreamer side.

    /usr/bin/python3 bench/rtsp.py serve --port 8554 --mount /door=door.mkv --user admin:secret
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

GI_PYTHON = os.environ.get("EDGETRIAGE_GI_PYTHON", "/usr/bin/python3")  # a Python with PyGObject (python3-gi)
HERE = Path(__file__).resolve()
MEDIA = HERE.parents[1] / "models" / "media"
INSTALL = ("apt-get install gir1.2-gst-rtsp-server-1.0 gstreamer1.0-rtsp gstreamer1.0-plugins-good "
           "gstreamer1.0-plugins-ugly gstreamer1.0-libav (.ci/run does)")


class RtspUnavailable(RuntimeError):
    """No GStreamer RTSP server on this machine."""


def _gi(*args: str, timeout: float | None = None, **kw) -> subprocess.Popen | subprocess.CompletedProcess:
    if shutil.which(GI_PYTHON) is None:
        raise RtspUnavailable(f"{GI_PYTHON} not found; {INSTALL}")
    command = [GI_PYTHON, str(HERE), *args]
    if timeout is None:
        return subprocess.Popen(command, **kw)
    return subprocess.run(command, timeout=timeout, capture_output=True, text=True, check=False)


def h264_clip(out_dir: Path, size: tuple[int, int], fps: int, *, clip: str = "one-by-one-person-detection.mp4",
              seconds: float = 30.0) -> Path:
    """An H.264 Matroska file of a shipped clip's first `seconds`, scaled to `size` at `fps` (one key frame a
    second, as cameras send); made once per name in `out_dir`."""
    width, height = size
    out = out_dir / f"{Path(clip).stem}-{width}x{height}-{fps}fps-{seconds:g}s.mkv"
    if not out.exists():
        done = _gi("encode", str(MEDIA / clip), str(out), str(width), str(height), str(fps), str(seconds),
                   timeout=600)
        if done.returncode != 0 or not out.exists():
            raise RtspUnavailable(f"encoding {clip} failed: {done.stderr.strip()[-500:]}; {INSTALL}")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RtspServer:
    """`serve` as a process of its own on `port` (127.0.0.1), each mount a file; `stop()` and `start()` again
    on the same port are a camera rebooting. A context manager that stops it."""

    def __init__(self, mounts: dict[str, Path], *, port: int | None = None, user: str | None = None) -> None:
        self.mounts = mounts
        self.port = port or free_port()
        self.user = user
        self._proc: subprocess.Popen | None = None

    def url(self, mount: str, *, credentials: bool = True) -> str:
        auth = f"{self.user}@" if self.user and credentials else ""
        return f"rtsp://{auth}127.0.0.1:{self.port}/{mount.lstrip('/')}"

    def start(self, timeout_s: float = 20.0) -> RtspServer:
        args = ["serve", "--port", str(self.port)]
        for mount, path in self.mounts.items():
            args += ["--mount", f"/{mount.lstrip('/')}={path}"]
        if self.user:
            args += ["--user", self.user]
        self._proc = _gi(*args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RtspUnavailable(f"the RTSP server exited: {self._proc.stdout.read()[-500:]}; {INSTALL}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RtspUnavailable(f"the RTSP server did not listen on {self.port} within {timeout_s:g} s")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()

    def __enter__(self) -> RtspServer:
        return self.start() if self._proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the GStreamer side (run by GI_PYTHON) ------------------------------------------------------------------
def _encode(args: argparse.Namespace) -> int:
    import gi

    gi.require_version("Gst", "1.0")
    from gi.repository import Gst

    Gst.init(None)
    tmp = args.out + ".part"
    pipeline = Gst.parse_launch(
        f"filesrc location={args.clip} ! qtdemux ! h264parse ! avdec_h264 ! videoconvert ! videorate ! videoscale ! "
        f"video/x-raw,format=I420,width={args.width},height={args.height},framerate={args.fps}/1 ! "
        f"identity eos-after={max(1, round(args.seconds * args.fps))} ! "
        f"x264enc speed-preset=ultrafast tune=zerolatency key-int-max={args.fps} bitrate=2000 ! "
        f"video/x-h264,profile=constrained-baseline ! h264parse ! matroskamux ! filesink location={tmp}")
    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg.type == Gst.MessageType.ERROR:
        print(msg.parse_error()[0].message, file=sys.stderr)
        return 1
    os.replace(tmp, args.out)
    return 0


def _serve(args: argparse.Namespace) -> int:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstRtspServer", "1.0")
    from gi.repository import GLib, Gst, GstRtspServer

    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    if args.user:
        user, password = args.user.split(":", 1)
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "camera")
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
        server.set_auth(auth)
    mounts = server.get_mount_points()
    for spec in args.mount:
        path, _, location = spec.partition("=")
        factory = GstRtspServer.RTSPMediaFactory()
        # each client gets the file from its start, at its own rate (the pipeline runs on the clock)
        factory.set_launch(f"( filesrc location={location} ! matroskademux ! h264parse config-interval=-1 ! "
                           "rtph264pay name=pay0 pt=96 )")
        if args.user:
            factory.add_role_from_structure(Gst.Structure.new_from_string(
                "camera, media.factory.access=(boolean)true, media.factory.construct=(boolean)true"))
        mounts.add_factory(path, factory)
    if server.attach(None) == 0:
        print(f"cannot listen on {args.port}", file=sys.stderr)
        return 1
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, loop.quit)
    print(f"rtsp://127.0.0.1:{args.port} {' '.join(args.mount)}", flush=True)
    loop.run()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    enc = sub.add_parser("encode", help="an H.264 Matroska file of part of a clip at a size and rate")
    for name, kind in (("clip", str), ("out", str), ("width", int), ("height", int), ("fps", int), ("seconds", float)):
        enc.add_argument(name, type=kind)
    srv = sub.add_parser("serve", help="serve H.264 files over RTSP until SIGTERM")
    srv.add_argument("--port", type=int, required=True)
    srv.add_argument("--mount", action="append", default=[], help="/path=file.mkv")
    srv.add_argument("--user", help="user:password to require (basic auth)")
    args = parser.parse_args()
    return _encode(args) if args.command == "encode" else _serve(args)


if __name__ == "__main__":
    raise SystemExit(main())
