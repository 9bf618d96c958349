"""Frames in: a video file, a local camera (V4L2/USB index) or a network stream (rtsp://, http(s)://), all
read through OpenCV and handed on as `Frame`s stamped with stream time and wall time.

Files are replayed as fast as they decode with stream time = index / fps, so a recorded clip gives the same
tracks on any machine (`loop`: from the start again when it ends, time running on); live sources are read on a
thread of their own that keeps only the latest frame (edge.vision.live) and are stamped when each frame was
grabbed, by the monotonic clock since the first one. RTSP goes over TCP unless UDP is asked for.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import cv2
import numpy as np

from ...shared import clock
from .live import LatestFrameReader

DEFAULT_FPS = 10.0
_URL_SCHEMES = ("rtsp://", "rtsps://", "http://", "https://", "rtmp://", "udp://", "tcp://")
_FFMPEG_OPTIONS = "OPENCV_FFMPEG_CAPTURE_OPTIONS"  # read by OpenCV when a capture opens: process-wide
_options_lock = threading.Lock()
_SECRET_PARAM = re.compile(r"([?&;](?:password|passwd|pwd|pass|token|auth|key)=)[^&;#]*", re.IGNORECASE)
Transport = Literal["tcp", "udp"]


class CaptureError(RuntimeError):
    """A source that cannot be opened or read; the message names the source and what to do."""


@dataclass(slots=True)
class Frame:
    index: int  # 0-based position in the stream, counted from the start of the file even when skipping
    pts_s: float  # seconds from stream start
    wall_ms: int  # epoch ms UTC when read (files: open time + pts)
    image: np.ndarray  # BGR uint8, H x W x 3
    grabbed_s: float | None = None  # live sources: time.monotonic() when the frame was grabbed (its age's origin)


def is_live(source: str | int) -> bool:
    """A camera index or a network URL: time comes from the clock, not from the frame count."""
    return isinstance(source, int) or source.isdigit() or source.lower().startswith(_URL_SCHEMES)


def redact(source: str) -> str:
    """A camera URL without its password (user:password@, or a password=/token= parameter), for messages
    others may read."""
    if "://" in source:
        scheme, rest = source.split("://", 1)
        authority, slash, path = rest.partition("/")
        if "@" in authority:
            creds, _, host = authority.rpartition("@")
            authority = f"{creds.split(':', 1)[0]}:***@{host}"
        source = f"{scheme}://{authority}{slash}{path}"
    return _SECRET_PARAM.sub(r"\1***", source)


def _describe(source: str | int) -> str:
    if isinstance(source, int) or (isinstance(source, str) and source.isdigit()):
        return f"camera {int(source)}"
    return f"video {redact(source)}"


def _open_stream(url: str, transport: Transport, params: list[int]) -> cv2.VideoCapture:
    """OpenCV's FFmpeg reader on `url`; RTSP over `transport` (OpenCV takes its FFmpeg options from one
    environment variable when a capture opens, so cameras of one device open one at a time)."""
    with _options_lock:
        before = os.environ.get(_FFMPEG_OPTIONS)
        os.environ[_FFMPEG_OPTIONS] = f"rtsp_transport;{transport}"
        try:
            return cv2.VideoCapture(url, cv2.CAP_FFMPEG, params)
        finally:
            if before is None:
                del os.environ[_FFMPEG_OPTIONS]
            else:
                os.environ[_FFMPEG_OPTIONS] = before


class FrameSource:
    """One source of frames; iterate after `open()` (or let iteration open it). Not thread-safe."""

    def __init__(self, source: str | int, *, start_frame: int = 0, max_frames: int | None = None,
                 min_interval_s: float = 0.0, open_timeout_s: float | None = None,
                 read_timeout_s: float | None = None, transport: Transport = "tcp", loop: bool = False):
        """`min_interval_s`: frames closer than this (stream time) to the last one yielded are grabbed but
        never converted to pixels, the cheap way to run a camera at a lower detect rate. The timeouts bound
        how long opening or reading a network stream may block, so a stream that goes silent is lost (and
        reconnected) instead of hanging its camera. `transport`: RTSP over TCP or UDP. `loop`: a file starts
        again from `start_frame` when it ends, its frame index and time running on."""
        if start_frame < 0:
            raise ValueError("start_frame must be >= 0")
        if max_frames is not None and max_frames < 0:
            raise ValueError("max_frames must be >= 0 or None")
        self.source = source
        self.start_frame = start_frame
        self.max_frames = max_frames
        self.min_interval_s = max(0.0, min_interval_s)
        self.open_timeout_s = open_timeout_s
        self.read_timeout_s = read_timeout_s
        self.transport: Transport = transport
        self.loop = loop
        self.grabbed = 0  # frames taken from the source, skipped ones included
        self.dropped = 0  # live: due at the detect rate while the pipeline was busy, so never converted
        self.fps = DEFAULT_FPS
        self.width = 0
        self.height = 0
        self._cap: cv2.VideoCapture | None = None
        self._camera = isinstance(source, int) or (isinstance(source, str) and source.isdigit())
        self._url = isinstance(source, str) and source.lower().startswith(_URL_SCHEMES)
        self._opened_ms = 0
        self._reader: LatestFrameReader | None = None
        self.name = _describe(source)

    @property
    def live(self) -> bool:
        """True for cameras and network streams: time comes from the clock, not from the frame count."""
        return self._camera or self._url

    def open(self) -> None:
        if self._cap is not None:
            return
        if self._camera:
            cap = cv2.VideoCapture(int(self.source))
            hint = "check that the camera is plugged in, that /dev/video* exists and that this user may read it"
        elif self._url:
            # one decoder thread: FFmpeg's frame threads each hold frames (720p: 15 -> 10.5 MB a stream) and
            # add a frame of delay each; cameras decode side by side on their own reader threads anyway
            params: list[int] = [cv2.CAP_PROP_N_THREADS, 1]
            if self.open_timeout_s:
                params += [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, int(self.open_timeout_s * 1000)]
            if self.read_timeout_s:
                params += [cv2.CAP_PROP_READ_TIMEOUT_MSEC, int(self.read_timeout_s * 1000)]
            cap = _open_stream(str(self.source), self.transport, params)
            hint = "check the URL, credentials and that the stream is reachable from this device"
        else:
            path = Path(str(self.source)).expanduser()
            if not path.exists():
                raise CaptureError(f"{self.name}: file not found; check the path (relative paths are taken "
                                   f"from {Path.cwd()})")
            if not path.is_file():
                raise CaptureError(f"{self.name}: not a regular file; give the path of a video file")
            # one decoder thread, as for streams: frame threads each hold frames (`edge replay` of the road clip:
            # peak RSS 1.2 MB lower) and decode no faster here (the two 768x432 clips: 276 / 318 frames/s
            # against 257 / 277 with two threads, on a busy 2-core VM)
            cap = cv2.VideoCapture(str(path), cv2.CAP_ANY, [cv2.CAP_PROP_N_THREADS, 1])
            hint = "the file is not a video OpenCV can decode (try converting it to H.264 MP4 with ffmpeg)"
        if not cap.isOpened():
            cap.release()
            raise CaptureError(f"{self.name}: cannot open; {hint}")
        fps = cap.get(cv2.CAP_PROP_FPS)
        self.fps = float(fps) if math.isfinite(fps) and 0.0 < fps <= 1000.0 else DEFAULT_FPS
        self.width = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH))
        self.height = int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        if self.start_frame and not self.live:
            self._skip_to(cap, self.start_frame)
        self._cap = cap
        self._opened_ms = clock.now_ms()

    def _skip_to(self, cap: cv2.VideoCapture, index: int) -> None:
        """Seek when the back-end lands exactly on the frame, else decode forward (always exact)."""
        if cap.set(cv2.CAP_PROP_POS_FRAMES, index) and int(cap.get(cv2.CAP_PROP_POS_FRAMES)) == index:
            return
        cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
        for _ in range(index):
            if not cap.grab():
                break

    def __iter__(self) -> Iterator[Frame]:
        self.open()
        return self._live() if self.live else self._file()

    def _live(self) -> Iterator[Frame]:
        """The latest due frame each time the caller asks (edge.vision.live), stamped when it was grabbed."""
        cap, self._cap = self._cap, None
        assert cap is not None
        reader = self._reader = LatestFrameReader(cap, self.name, min_interval_s=self.min_interval_s)
        reader.start()
        t0: float | None = None
        produced = 0
        try:
            while self.max_frames is None or produced < self.max_frames:
                got = reader.take()
                self.grabbed, self.dropped = reader.grabbed, reader.dropped
                if got is None:
                    if reader.error:
                        raise CaptureError(f"{self.name}: {reader.error}; check the connection (the agent "
                                           "reconnects on its own)")
                    return
                t0 = got.mono_s if t0 is None else t0
                frame = Frame(produced, got.mono_s - t0, got.wall_ms, got.image, got.mono_s)
                got = None  # nothing here holds a frame while the next is taken (vision.live: it is unmapped)
                yield frame
                frame = None
                produced += 1
        finally:
            reader.stop()
            self.grabbed, self.dropped = reader.grabbed, reader.dropped

    def _file(self) -> Iterator[Frame]:
        cap = self._cap
        assert cap is not None
        index = self.start_frame
        produced = 0
        lap_start = index  # the index the current pass over the file began at
        next_due = -math.inf
        while self.max_frames is None or produced < self.max_frames:
            ok = cap.grab()
            image = None
            if ok:
                self.grabbed += 1
                if self.min_interval_s:
                    pts = index / self.fps
                    if pts + 1e-6 < next_due:  # not due: never converted to pixels
                        index += 1
                        continue
                    # due times advance by the interval, so 25 fps read at 10 keeps 10 on average
                    next_due = (pts if pts - next_due > self.min_interval_s else next_due) + self.min_interval_s
                ok, image = cap.retrieve()
            if not ok or image is None:
                if produced == 0 and index == self.start_frame:
                    if self.start_frame:
                        return  # skipped past the end: an empty stream, not an error
                    raise CaptureError(f"{self.name}: opened but no frame could be decoded; the file is "
                                       "damaged or uses a codec this OpenCV build lacks")
                if not self.loop or index == lap_start:
                    return  # the end (a pass that read nothing ends a loop too: no busy loop)
                self._skip_to(cap, self.start_frame)  # loop: the file again, its time running on
                lap_start = index
                continue
            if image.ndim == 2:
                image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
            pts = index / self.fps
            yield Frame(index, pts, self._opened_ms + int(round(pts * 1000.0)), image)
            index += 1
            produced += 1

    def close(self) -> None:
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        if self._cap is not None:
            self._cap.release()
            self._cap = None

    def __enter__(self) -> FrameSource:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
