"""Bounds one device cannot push past: how many bytes of crops the cloud keeps for it, and how many device ids
it takes events from at all.

`CropQuota`: crops are the only image data that leaves a device, kept `[retention] crops_days`. Each device
may fill at most `[retention] crop_quota_mb` of that within the same window; an event past it is still
answered (the model sees its crop), but its crop is not stored (the page and the learner see none). Counted
per device (`edgetriage_cloud_crops_not_kept_total`), and a warning says so once per device per hour: one
device filling the disk with 1,000 crops of 237 KB in 11 s stops at its quota, the others keep theirs.

`DeviceRoll`: on a broker without per-device credentials any client may invent device ids; every id costs the
cloud memory (counters, names the questions learn). At most `[delivery] max_devices` ids are taken; an event of
one more is refused (ProtocolError "devices"), with a warning once per hour.
"""

from __future__ import annotations

import logging
import time
from collections import deque

from ...shared.protocol import Event, ProtocolError
from ..config import RetentionConfig

log = logging.getLogger("edgetriage.cloud.service")

BUCKET_S = 3600.0  # the quota's window is counted in hours
WARN_EVERY_S = 3600.0


class CropQuota:
    """Per device, the bytes of crops stored within the retention window, in hourly buckets."""

    def __init__(self, retention: RetentionConfig, counts: dict[str, int]) -> None:
        self.limit = int(retention.crop_quota_mb * (1 << 20))
        self.window_s = retention.crops_days * 86_400 if retention.crops_days else float("inf")
        self.counts = counts  # device -> crops not kept (ServiceStats.crops_not_kept: /metrics reads it)
        self._stored: dict[str, deque[list[float]]] = {}  # device -> [[bucket start, bytes], ...]
        self._warned: dict[str, float] = {}

    def kept(self, event: Event, now: float | None = None) -> Event:
        """The event as it is stored: itself, or without its crop once its device is over its quota."""
        if not self.limit:
            return event
        now = time.time() if now is None else now
        buckets = self._stored.setdefault(event.device, deque())
        while buckets and buckets[0][0] < now - self.window_s:
            buckets.popleft()
        size = len(event.crop)
        if sum(b[1] for b in buckets) + size > self.limit:
            self.counts[event.device] = self.counts.get(event.device, 0) + 1
            if now - self._warned.get(event.device, float("-inf")) >= WARN_EVERY_S:
                self._warned[event.device] = now
                log.warning("device %r reached its crop quota ([retention] crop_quota_mb = %g): its events are "
                            "answered, their crops are not kept", event.device, self.limit / (1 << 20))
            return event.model_copy(update={"crop": b""})
        start = now - now % BUCKET_S
        if not buckets or buckets[-1][0] != start:
            buckets.append([start, 0.0])
        buckets[-1][1] += size
        return event


class DeviceRoll:
    """The device ids the cloud takes events from: the first `limit` it sees, and those configured."""

    def __init__(self, limit: int, known: set[str]) -> None:
        self.limit = limit
        self.seen: set[str] = set(known)
        self.refused = 0
        self._warned = float("-inf")

    def admit(self, device: str) -> None:
        """ProtocolError ("devices") for one id more than the limit."""
        if device in self.seen:
            return
        if len(self.seen) >= self.limit:
            self.refused += 1
            if time.monotonic() - self._warned >= WARN_EVERY_S:
                self._warned = time.monotonic()
                log.warning("refused events of device %r: the cloud takes events from [delivery] max_devices = %d "
                            "device ids; raise it, or give each device its own broker identity", device, self.limit)
            raise ProtocolError(f"device {device!r} is one more than [delivery] max_devices = {self.limit} "
                                "device ids this cloud takes events from", code="devices")
        self.seen.add(device)


__all__ = ["CropQuota", "DeviceRoll"]
