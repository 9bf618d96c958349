"""The ground time words stand on: the names of days and months, the parts of a day, and a range of local time
(`Window`) with the few helpers that build one in a zone. when.py reads questions with them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SHORT_DAYS = (("mon",), ("tue", "tues"), ("wed", "weds"), ("thu", "thur", "thurs"), ("fri",), ("sat",), ("sun",))
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
UNITS_S = {"minute": 60, "min": 60, "hour": 3600, "hr": 3600, "day": 86400, "week": 7 * 86400,
            "fortnight": 14 * 86400}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
           "thirty": 30, "forty": 40, "forty five": 45, "fifty": 50, "couple": 2, "couple of": 2, "few": 3,
           "several": 3}
PARTS = {
    "morning": (6, 12),
    "afternoon": (12, 18),
    "evening": (18, 24),
    "night": (18, 30),
    "lunchtime": (12, 14),
    "dark": (18, 30),
    "day": (6, 18),
    "overnight": (22, 30),
    "tonight": (18, 30),
}
JUST_NOW_S = 1800  # "just now", "a few minutes ago": the last half hour
AROUND_H = 0.5  # "around 3": half an hour either side


@dataclass(frozen=True)
class Window:
    """[start_ms, end_ms) in epoch ms; end None: up to now (and on, for cache invalidation)."""

    start_ms: int | None
    end_ms: int | None
    phrase: str  # how the answer names it: "today", "last night", "since 09:00"

    def holds(self, captured_ms: int) -> bool:
        return ((self.start_ms is None or captured_ms >= self.start_ms)
                and (self.end_ms is None or captured_ms < self.end_ms))


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def at(day: datetime, hour: float) -> datetime:
    """`day`'s midnight plus `hour` hours, in the zone (a DST day has its own length)."""
    midnight = day.replace(hour=0, minute=0, second=0, microsecond=0)
    whole = int(hour)
    moment = midnight + timedelta(hours=whole, minutes=round((hour - whole) * 60))
    return moment.replace(tzinfo=None).replace(tzinfo=day.tzinfo)


def upto(start: datetime, end: datetime, now: datetime, phrase: str) -> Window:
    """A range that has not ended yet runs on (end None): events still landing belong to it."""
    return Window(ms(start), None if end > now else ms(end), phrase)
