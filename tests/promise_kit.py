"""Helpers of the promise tests (tests/test_promises_*.py): hashes, embeddings, crops and events."""

from __future__ import annotations

import time

import cv2
import numpy as np
from edgetriage.shared.embedding import EMBEDDING_BYTES
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event

PHASH = "0123456789abcdef"
BUCKET = ("camera:house/porch", "person", "dct64", "person-3")


def flip(phash: str, bits: int) -> str:
    """`phash` with its lowest `bits` bits flipped: exactly `bits` away."""
    return f"{int(phash, 16) ^ ((1 << bits) - 1):016x}"


def make_embedding(seed: int) -> bytes:
    """A valid appearance embedding (int8), the same for the same seed."""
    return np.random.default_rng(seed).integers(-100, 100, EMBEDDING_BYTES, dtype=np.int8).tobytes()


def jpeg() -> bytes:
    return cv2.imencode(".jpg", np.full((16, 16, 3), 90, np.uint8))[1].tobytes()


def make_event(device: str = "house", camera: str = "porch", *, site: str | None = None, phash: str = PHASH,
          embedding: bytes | None = None) -> Event:
    now = int(time.time() * 1000)
    return Event(event_id=uuid7(now), device=device, camera=camera, site=site, captured_ms=now, label="person",
                 score=0.9, track_id=1, detections=[Detection(label="person", score=0.9, box=(0.1, 0.1, 0.5, 0.9))],
                 phash=phash, reason="detector sure", crop=jpeg(), embedding=embedding)
