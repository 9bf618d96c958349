"""The device's local wall-clock time: in the configured IANA zone (`timezone` in the edge config), else the system's.

Schedules in rules and the `local_time` an event carries read the same clock, so "22:00" in a rule means the
hour the event reports and the hour the cloud's questions call "tonight".
"""

from __future__ import annotations

import time
from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo


@lru_cache(maxsize=8)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def local_time(wall_ms: int, timezone: str | None) -> tuple[int, int, str]:
    """(weekday 0 = Monday, minute of the day, "HH:MM") of an epoch-ms instant on the device's clock."""
    seconds = max(0, int(wall_ms)) / 1000
    if timezone:
        t = datetime.fromtimestamp(seconds, _zone(timezone))
        return t.weekday(), t.hour * 60 + t.minute, t.strftime("%H:%M")
    s = time.localtime(seconds)
    return s.tm_wday, s.tm_hour * 60 + s.tm_min, time.strftime("%H:%M", s)


__all__ = ["local_time"]
