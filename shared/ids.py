"""Identifiers: device ids and time-ordered event ids (UUIDv7, RFC 9562)."""

from __future__ import annotations

import os
import re
import uuid

from . import clock

DEVICE_ID_RE = re.compile(r"^[a-z0-9-]{1,64}$")
CAMERA_ID_RE = re.compile(r"^[a-z0-9_-]{1,64}$")


def is_device_id(value: str) -> bool:
    return bool(DEVICE_ID_RE.match(value))


def check_device_id(value: str) -> str:
    """Return the id unchanged, or raise ValueError saying what a device id may contain."""
    if not DEVICE_ID_RE.match(value):
        raise ValueError(f"device id {value!r} must match [a-z0-9-]+ (lower-case letters, digits, '-'; at most 64)")
    return value


def uuid7(now_ms: int | None = None) -> str:
    """A UUIDv7 string: 48-bit Unix milliseconds, then random bits, so ids sort by creation time."""
    ms = clock.now_ms() if now_ms is None else int(now_ms)
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a = rand >> 68 & 0xFFF  # 12 bits
    rand_b = rand & ((1 << 62) - 1)  # 62 bits
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


def uuid7_ms(event_id: str) -> int:
    """The creation time in epoch ms carried by a UUIDv7."""
    return uuid.UUID(event_id).int >> 80
