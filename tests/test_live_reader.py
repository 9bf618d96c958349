"""The live reader's frame age after a stall: a stream that stops sending for a few seconds and resumes with
its own time running on (nothing was queued, nothing is behind) must not read as seconds behind until the
next reconnect. FFmpeg reads an MPEG-TS stream over a real TCP socket, paced by a sender thread."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import cv2
import numpy as np
from edgetriage.edge.vision.live import LatestFrameReader

FPS = 25
SECONDS = 12.0
STALL_AT_S, STALL_S = 4.0, 3.0


def _evenly_coded_clip(path: Path) -> bytes:
    """An MPEG-TS clip whose bytes are spread evenly over its time (one small square moving over a still
    background), so a sender pacing bytes paces the stream's clock too."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (320, 180))
    background = np.random.default_rng(0).integers(0, 255, (180, 320, 3), np.uint8)
    for i in range(int(FPS * SECONDS)):
        frame = background.copy()
        x = (i * 4) % 280
        cv2.rectangle(frame, (x, 60), (x + 40, 120), (0, 0, 255), -1)
        writer.write(frame)
    writer.release()
    return path.read_bytes()


class PacedSender:
    """Serves `data` to one client at the clip's own rate, with one stall: sending stops for `STALL_S`
    seconds and resumes where it was (the stream's time runs on from there)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._server.settimeout(20)
        conn, _ = self._server.accept()
        with conn:
            rate = len(self.data) / SECONDS
            t0, sent, stalled = time.monotonic(), 0, False
            while sent < len(self.data) and not self._stop.is_set():
                if not stalled and time.monotonic() - t0 > STALL_AT_S:
                    stalled = True
                    self._stop.wait(STALL_S)
                    t0 += STALL_S
                due = min(len(self.data), int(rate * (time.monotonic() - t0)))
                if due > sent:
                    conn.sendall(self.data[sent:due])
                    sent = due
                self._stop.wait(0.01)

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        self._thread.join(5)


def test_a_stall_that_resumes_with_the_stream_time_running_on_is_not_read_as_lag(tmp_path):
    sender = PacedSender(_evenly_coded_clip(tmp_path / "clip.ts"))
    reader = LatestFrameReader(cv2.VideoCapture(f"tcp://127.0.0.1:{sender.port}", cv2.CAP_FFMPEG), "paced")
    reader.start()
    seen: list[tuple[float, float]] = []  # (seconds since the first frame, behind_s)
    try:
        t0 = None
        while reader.take() is not None:
            now = time.monotonic()
            t0 = now if t0 is None else t0
            seen.append((now - t0, reader.behind_s))
            time.sleep(0.1)
    finally:
        reader.stop()
        sender.close()
    before = [b for t, b in seen if t < STALL_AT_S - 1]
    after = [b for t, b in seen if t > STALL_AT_S + STALL_S + 5]  # a few seconds back at the stream's pace
    assert before and after, seen
    # the stall shows while it is fresh (frames come late, by the stall) ...
    assert max(b for _, b in seen) >= STALL_S - 0.5, seen
    # ... and is not read as lag once the stream runs at its pace again (before: ~3.3 s until the end)
    assert max(after) < max(before) + 0.5, seen
