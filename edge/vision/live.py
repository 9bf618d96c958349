"""A live source (a network stream, a USB camera) read on a thread of its own, keeping the latest frame only.

A decoder that is not read keeps what arrives: OpenCV's FFmpeg reader buffers the stream and a V4L2 camera
its driver's queue, so a pipeline slower than the camera would fall further and further behind the live edge.
Here the reader grabs (decodes) every frame as it arrives and converts to pixels only a frame that is due at the
detect rate while the pipeline is waiting for one: a frame that comes while the pipeline is busy is dropped
there, never converted and never queued (one BGR frame per camera, no slot of stale ones).

A frame handed on is stamped with the moment the live edge was at it: when it was grabbed, less how far the
reader itself had fallen behind the stream's own clock (a decoder short of CPU lets the stream back up in
FFmpeg's buffers; the stream's timestamps show it). Its age at hand-over is what the metrics report.
"""

from __future__ import annotations

import math
import mmap
import threading
import time
from collections import deque
from dataclasses import dataclass

import cv2
import numpy as np

from ...shared import clock

READ_RETRIES = 5  # consecutive failed reads before a live source counts as lost


@dataclass(slots=True)
class Grabbed:
    """A frame converted to pixels, stamped when it was grabbed."""

    image: np.ndarray
    mono_s: float  # time.monotonic() when the live edge was at this frame (the grab, less how far behind it was)
    wall_ms: int  # epoch ms of the same moment


def _fresh_frame(shape: tuple[int, ...]) -> np.ndarray:
    """An empty frame in pages of its own, faulted in by one call (MAP_POPULATE) and given back to the system
    when its last reference goes: a frame is not resident between the pipeline's turns, and mapping it costs
    one system call instead of a page fault per 4 KB (four 720p cameras: 0.33 of a core against 0.35 for the
    same frames mapped by malloc, 0.31 for frames kept in the heap; bench/live.py's device, History issue 39)."""
    size = math.prod(shape)
    mapping = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0))
    return np.frombuffer(mapping, np.uint8, size).reshape(shape)


class LiveEdge:
    """How far behind the live edge a frame grabbed now is, from the stream's own clock against ours.

    The edge is the most the stream's clock has been ahead of ours (`lead`): reading at that pace is being 0
    behind, and a reader short of CPU that lets the stream back up in FFmpeg's buffers falls below it. A stall
    that resumes with the stream's time running on (a camera or a link that stopped sending, not one that
    queued) lowers that offset for good although nothing is queued: so the lead also comes down to where the
    reader has kept the stream's pace, the per-second maxima of `STEADY_SECONDS` seconds in a row within
    `STEADY_S` of each other. A reader draining a backlog gains on our clock, one falling behind loses on it;
    one that does neither has nothing queued it could read faster (a backlog held exactly steady reads as
    none: with spare CPU a reader drains it, without it falls further behind, and both show)."""

    STEADY_SECONDS = 3
    STEADY_S = 0.15

    def __init__(self) -> None:
        self.lead = -math.inf
        self._last_stream_s = 0.0
        self._second_start = -math.inf
        self._second_max = -math.inf
        self._maxima: deque[float] = deque(maxlen=self.STEADY_SECONDS)

    def behind(self, stream_s: float, mono: float) -> float:
        """Seconds the frame at `stream_s` (stream clock), grabbed at `mono` (time.monotonic()), is behind."""
        if stream_s < self._last_stream_s:  # the stream's clock started again (a camera's wrap or reset)
            self.lead, self._second_start = -math.inf, -math.inf
            self._maxima.clear()
        self._last_stream_s = stream_s
        offset = stream_s - mono
        if mono - self._second_start >= 1.0:
            if self._second_start > -math.inf:
                self._maxima.append(self._second_max)
                if (len(self._maxima) == self.STEADY_SECONDS
                        and max(self._maxima) - min(self._maxima) <= self.STEADY_S):
                    self.lead = min(self.lead, max(self._maxima))  # kept pace: that is the live edge
            self._second_start, self._second_max = mono, offset
        else:
            self._second_max = max(self._second_max, offset)
        self.lead = max(self.lead, offset)
        return self.lead - offset


class LatestFrameReader:
    """Owns `cap` from `start()` on (and releases it when its thread ends). `take()` waits for the next due
    frame; frames grabbed faster than `min_interval_s` apart are never converted to pixels, nor is a due frame
    that comes while nobody waits (`dropped`)."""

    def __init__(self, cap: cv2.VideoCapture, name: str, *, min_interval_s: float = 0.0) -> None:
        self.name = name
        self.min_interval_s = max(0.0, min_interval_s)
        self.grabbed = 0  # frames taken from the source
        self.dropped = 0  # due at the detect rate, but the pipeline was busy: never converted
        self.behind_s = 0.0  # how far the last grab was behind the stream's clock (its timestamps)
        self.error = ""  # why the source was lost ("" while it delivers, or after stop())
        self._cap = cap
        self._slot: Grabbed | None = None
        self._waiting = False  # the pipeline waits in take(): the next due frame is converted for it
        self._done = False
        self._stop = threading.Event()
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._read, name=f"reader-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, join_s: float = 1.0) -> None:
        """Stop reading; the thread releases the source once its current read returns."""
        self._stop.set()
        with self._ready:
            self._ready.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(join_s)

    def take(self) -> Grabbed | None:
        """The newest due frame, waiting for one; None once the source is lost (see `error`) or stopped."""
        with self._ready:
            self._waiting = True
            while self._slot is None and not self._done:
                self._ready.wait(0.5)
            frame, self._slot, self._waiting = self._slot, None, False
            return frame

    def _read(self) -> None:
        cap = self._cap
        failures = 0
        next_due = -math.inf
        edge = LiveEdge()
        shape: tuple[int, ...] | None = None
        try:
            while not self._stop.is_set():
                if not cap.grab():
                    failures += 1
                    if failures >= READ_RETRIES:
                        self.error = f"stopped delivering frames after {self.grabbed} frames"
                        return
                    time.sleep(0.05 * failures)
                    continue
                failures = 0
                self.grabbed += 1
                mono = time.monotonic()
                stream_s = cap.get(cv2.CAP_PROP_POS_MSEC) / 1000.0
                if stream_s > 0.0:
                    self.behind_s = edge.behind(stream_s, mono)
                if mono + 1e-6 < next_due:
                    continue  # not due: never converted to pixels
                if not self._waiting:  # a plain read of a bool: a frame late by one grab at worst
                    self.dropped += 1  # the pipeline is busy: this one is dropped, the next due one is its
                    continue
                # due times advance by the interval, so 25 fps read at 5 keeps 5 on average
                next_due = (mono if mono - next_due > self.min_interval_s else next_due) + self.min_interval_s
                ok, image = cap.retrieve(_fresh_frame(shape)) if shape else cap.retrieve()
                shape = image.shape if ok and image is not None else None  # the next frame's, mapped afresh
                if not ok or image is None:
                    continue
                if image.ndim == 2:
                    image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
                with self._ready:
                    self._slot = Grabbed(image, mono - self.behind_s, clock.now_ms() - round(1000 * self.behind_s))
                    self._ready.notify()
                image = None  # the pipeline's reference is the only one: freed as soon as it is done with it
        finally:
            cap.release()
            with self._ready:
                self._done = True
                self._ready.notify_all()
