"""The escalation budget: how many events this device may send to the cloud per minute and per hour.

The budget is charged when an event leaves the device for the first time (a re-send of the same event id is
free: the cloud answers it from its store). What happens to an escalation the budget cannot pay for now is
the policy's business (edge.config.BudgetConfig); this module only keeps the windows and picks which waiting
events a full queue gives up. Pure logic with explicit times, so it can be checked over a simulated hour.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

MINUTE_S = 60.0
HOUR_S = 3600.0

Policy = Literal["queue", "drop_lowest", "local"]


class EscalationBudget:
    """Sliding one-minute and one-hour windows over the times events were first sent (monotonic seconds).
    A limit of 0 means no limit. Thread-safe (the metrics endpoint reads it while the agent spends it)."""

    def __init__(self, per_minute: int, per_hour: int) -> None:
        self.per_minute = per_minute
        self.per_hour = per_hour
        self.charged = 0  # events paid for since start
        self._minute: deque[float] = deque()
        self._hour: deque[float] = deque()
        self._lock = threading.Lock()

    @property
    def limited(self) -> bool:
        return bool(self.per_minute or self.per_hour)

    def reconfigure(self, per_minute: int, per_hour: int) -> None:
        """New limits; what was spent in the current windows stays spent."""
        self.per_minute = per_minute
        self.per_hour = per_hour

    def _expire(self, now: float) -> None:
        while self._minute and self._minute[0] <= now - MINUTE_S:
            self._minute.popleft()
        while self._hour and self._hour[0] <= now - HOUR_S:
            self._hour.popleft()

    def available(self, now: float) -> float:
        """How many more events may go out at `now` (math.inf without limits, never negative)."""
        with self._lock:
            self._expire(now)
            room = math.inf
            if self.per_minute:
                room = min(room, self.per_minute - len(self._minute))
            if self.per_hour:
                room = min(room, self.per_hour - len(self._hour))
            return max(0.0, room)

    def charge(self, now: float) -> None:
        """One event went out for the first time at `now`."""
        with self._lock:
            self._minute.append(now)
            self._hour.append(now)
            self.charged += 1

    def used(self, now: float) -> tuple[int, int]:
        """Events sent in the last minute and in the last hour."""
        with self._lock:
            self._expire(now)
            return len(self._minute), len(self._hour)

    def next_slot_s(self, now: float) -> float:
        """Seconds until at least one more event may go out (0 when one may go now)."""
        if self.available(now) >= 1:
            return 0.0
        waits = []
        with self._lock:
            if self.per_minute and len(self._minute) >= self.per_minute:
                waits.append(self._minute[len(self._minute) - self.per_minute] + MINUTE_S - now)
            if self.per_hour and len(self._hour) >= self.per_hour:
                waits.append(self._hour[len(self._hour) - self.per_hour] + HOUR_S - now)
        return max(0.0, max(waits, default=0.0))


@dataclass(frozen=True, slots=True)
class Waiting:
    """An escalated event that has not left the device yet."""

    event_id: str
    created_ms: int
    score: float


def victims(waiting: Iterable[Waiting], excess: int, policy: Policy) -> list[str]:
    """The `excess` waiting events a full queue gives up: the oldest ("queue") or the lowest-scored, oldest
    first among equals ("drop_lowest")."""
    if excess <= 0:
        return []
    if policy == "drop_lowest":
        ordered = sorted(waiting, key=lambda w: (w.score, w.created_ms, w.event_id))
    else:
        ordered = sorted(waiting, key=lambda w: (w.created_ms, w.event_id))
    return [w.event_id for w in ordered[:excess]]


__all__ = ["EscalationBudget", "Policy", "Waiting", "victims"]
