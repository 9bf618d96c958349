"""The facts an operator's policy read to decide a verdict, as the ranges within which it decides the same: a
verdict filed with them answers only an event whose facts fall in the same ranges (shared.reuse.inside).

The cloud's policy compiler (cloud.analysis.policy) fills one in from the policy's own breakpoints: the 14:00
verdict of a shop whose policy says "08:00-20:00 customers; after closing an alert" carries minutes
[480, 1200), so the same crop at 23:30 is asked again, never answered from the cache. A facet the policy
did not read is None and is not compared. A fact the event did not send reads as -1 (time, dwell) or ""
(direction), its own range, so a verdict made without it answers only events without it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

DAY = 1440
Bound = Annotated[float, Field(ge=-1.0, le=1e9, allow_inf_nan=False)]


class PolicyInputs(BaseModel):
    """Ranges are [low, high): the event's value v answers when low <= v < high."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    minutes: tuple[Annotated[int, Field(ge=-1, le=1440)], Annotated[int, Field(ge=-1, le=1440)]] | None = None
    weekdays: Annotated[int, Field(ge=0, le=255)] | None = None  # bit d set: weekday d (0 Monday; 7 unknown)
    zones_read: Annotated[list[Annotated[str, Field(max_length=64)]], Field(max_length=16)] | None = None
    zones: Annotated[list[Annotated[str, Field(max_length=64)]], Field(max_length=16)] = []  # of those, the event's
    dwell_s: tuple[Bound, Bound] | None = None
    direction: Annotated[str, Field(max_length=32)] | None = None
    people: tuple[Annotated[int, Field(ge=0, le=1 << 16)], Annotated[int, Field(ge=0, le=1 << 16)]] | None = None
    # the policy read the crop's look (hi-vis, colours, objects): only a near-identical crop has the same look
    # (shared.reuse.LOOK_DISTANCE), never a look-alike by embedding
    look: bool = False


class EventFacts(NamedTuple):
    """What an event says of when, where and how long, as a policy reads it (shared.reuse.event_facts)."""

    minute: int  # -1: no local time sent
    weekday: int  # 0 Monday .. 6 Sunday; 7: unknown
    zones: frozenset[str]  # zone names, normalised (zone_word)
    dwell_s: float  # -1: not sent
    direction: str  # "": not sent
    people: int


def zone_word(name: str) -> str:
    """A zone name as a policy compares it: lower case, '_' and '-' as spaces, a trailing 'zone'/'area' off
    ("Loading_Zone", "loading zone" and "loading" are one zone)."""
    words = name.lower().replace("_", " ").replace("-", " ").split()
    if len(words) > 1 and words[-1] in ("zone", "area"):
        words = words[:-1]
    return " ".join(words)


def inside(inputs: PolicyInputs | None, facts: EventFacts | None) -> bool:
    """Do these facts fall in every range the policy read? True where no policy was read; False where it was
    and the facts are not known."""
    if inputs is None:
        return True
    if facts is None:
        return False
    if inputs.minutes is not None and not inputs.minutes[0] <= facts.minute < inputs.minutes[1]:
        return False
    if inputs.weekdays is not None and not inputs.weekdays >> facts.weekday & 1:
        return False
    if inputs.zones_read is not None and sorted(facts.zones & set(inputs.zones_read)) != sorted(inputs.zones):
        return False
    if inputs.dwell_s is not None and not inputs.dwell_s[0] <= facts.dwell_s < inputs.dwell_s[1]:
        return False
    if inputs.direction is not None and facts.direction != inputs.direction:
        return False
    return inputs.people is None or inputs.people[0] <= facts.people < inputs.people[1]


def weekday_of(captured_ms: int, local_time: str | None) -> int:
    """The device's local weekday (0 Monday), from the UTC instant and its local "HH:MM": the offset is
    rounded to 15 minutes and taken in (-12 h, +12 h]. 7 without a local time."""
    if local_time is None:
        return 7
    utc = datetime.fromtimestamp(captured_ms / 1000, UTC)
    local_min = int(local_time[:2]) * 60 + int(local_time[3:])
    offset = (local_min - (utc.hour * 60 + utc.minute)) % DAY
    offset = round(offset / 15) * 15 % DAY
    if offset > DAY // 2:
        offset -= DAY
    return datetime.fromtimestamp(captured_ms / 1000 + offset * 60, UTC).weekday()


__all__ = ["EventFacts", "PolicyInputs", "inside", "weekday_of", "zone_word"]
