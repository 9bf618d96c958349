"""A model of the tests' own for load tests: a fixed answer after a fixed delay, and distinct events to feed it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import cv2
import numpy as np
from edgetriage.cloud.analysis import Analysis
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event


class FixedDelayModel:
    """A model of the test's own that answers every event after exactly `delay_s`, `concurrency` at a time
    (the scheduler's Backend interface): the load is the MQTT path's, not the model's."""

    name = "fixed-delay"
    max_batch = 1

    def __init__(self, delay_s: float, concurrency: int) -> None:
        self.delay_s = delay_s
        self.concurrency = concurrency
        self.calls = 0
        self.devices: list[str] = []  # whose events the model got, in order

    def prompt_version(self, label: str) -> str:
        return "fixed-1"

    def saturated(self) -> bool:
        return False

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        self.calls += len(events)
        self.devices.extend(e.device for e in events)
        await asyncio.sleep(self.delay_s)
        return [Analysis(verdict="benign", confidence=0.8, description="a visitor", model=self.name,
                         prompt_version="fixed-1", analyze_ms=self.delay_s * 1000) for _ in events]

    async def close(self) -> None:
        return None


def noise_jpeg(seed: int) -> tuple[bytes, tuple[int, int]]:
    """A crop of realistic size (~20 KB): TLS records of several KB each, as real events make."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 255, (160, 120, 3), dtype=np.uint8)
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 80])[1].tobytes(), (120, 160)


def noise_events(device: str, n: int, seed: int = 7) -> list[Event]:
    rng = np.random.default_rng(seed)
    crops = [noise_jpeg(i) for i in range(8)]
    now = int(time.time() * 1000)
    out = []
    for i in range(n):
        crop, size = crops[i % len(crops)]
        phash = f"{int(rng.integers(0, 1 << 63)):016x}"  # far apart: no verdict answers another from the cache
        out.append(Event(event_id=uuid7(now + i), device=device, camera="door", captured_ms=now + i, label="person",
                         score=0.4, uncertain=True, track_id=i, reason="uncertain", phash=phash, crop=crop,
                         crop_size=size, detections=[Detection(label="person", score=0.4, box=(0.1, 0.1, 0.9, 0.9))]))
    return out
