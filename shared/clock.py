"""The one wall clock in milliseconds both sides stamp and compare times with."""

from __future__ import annotations

import time


def now_ms() -> int:
    """Milliseconds since the epoch, now (wall clock: comparable across machines, not monotonic)."""
    return int(time.time() * 1000)


__all__ = ["now_ms"]
