"""The escalation budget: how many events this device may send to the cloud per minute and per hour.

The budget is charged when an event leaves the device for the first time (a re-send of the same event id is
free: the cloud answers it from its store). What happens to an escalation the budget cannot pay for now is
the policy's business (EscalationBudgetConfig, [budget]); this module only keeps the windows and picks which waiting
events a full queue gives up. Pure logic with explicit times, so it can be checked over a simulated hour.

`SpendingPolicy` applies it for the agent, together with the cloud's load report: which escalation goes to the
cloud, which is resolved on the device, and which waiting event a full queue gives up.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from ...shared import clock
from ...shared.config import Strict
from ...shared.ids import uuid7
from ...shared.protocol import LoadReport, ProtocolError, Verdict, decode_event, decode_load_report
from ..stats import EdgeStats
from ..triage.rules import Decision
from ..vision.events import TrackEvent
from .outbox import Outbox

log = logging.getLogger("edgetriage.edge.agent")

_LOCAL_MODEL = "device"  # `model` of the verdicts a device gives itself when the cloud is not asked

MINUTE_S = 60.0
HOUR_S = 3600.0

Policy = Literal["queue", "drop_lowest", "local"]
Seconds = Annotated[float, Field(gt=0.0, le=86400.0)]


class EscalationBudgetConfig(Strict):
    """[budget]: how much of the cloud this device may use: events first sent per minute and per hour (0: no
    limit; re-sends of the same event are free). Over budget, `policy` says what happens to a new escalation:

    - "queue": it waits in the outbox and goes out, oldest first, as the budget refills; beyond
      `max_waiting` waiting events the oldest waiting one is dropped;
    - "drop_lowest": the same, but beyond `max_waiting` the lowest-scored waiting event is dropped;
    - "local": it is resolved on the device as verdict "unknown" and never sent.

    Events held back while the broker is unreachable wait like over-budget ones. Every drop is counted."""

    per_minute: Annotated[int, Field(ge=0, le=1_000_000)] = 30
    per_hour: Annotated[int, Field(ge=0, le=10_000_000)] = 600
    policy: Policy = "queue"
    max_waiting: Annotated[int, Field(ge=0, le=1_000_000)] = 1000


class OverloadConfig(Strict):
    """[overload]: what to do while the cloud's retained `<prefix>/v1/_cloud/load` says it is overloaded: "hold"
    keeps new and unanswered events in the outbox (nothing is published) until it clears; "local" resolves new
    escalations on the device as verdict "unknown". A load report older than `stale_s` is ignored, so a
    cloud that died while overloaded does not silence its devices for ever."""

    policy: Literal["hold", "local"] = "hold"
    stale_s: Seconds = 120.0


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

    @classmethod
    def from_config(cls, config: EscalationBudgetConfig) -> EscalationBudget:
        return cls(config.per_minute, config.per_hour)

    def reconfigure(self, config: EscalationBudgetConfig) -> None:
        """New limits; what was spent in the current windows stays spent."""
        self.per_minute = config.per_minute
        self.per_hour = config.per_hour

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




def _unit(x: float) -> float:
    return 0.0 if not math.isfinite(x) else min(1.0, max(0.0, float(x)))


class SpendingPolicy:
    """The agent's spending of the cloud: the escalation budget, the cloud's load report and what the
    configured policies do when either says no. Runs on the agent's pumping thread, under its lock."""

    def __init__(self, device: str, budget: EscalationBudgetConfig, overload: OverloadConfig, outbox: Outbox,
                 stats: EdgeStats, *, forget: Callable[[str], None]) -> None:
        """The `[budget]` and `[overload]` sections; `forget` is told the id of every waiting event the policy
        gives up."""
        self.device = device
        self.budget_config = budget
        self.overload = overload
        self.outbox = outbox
        self.stats = stats
        self.budget = EscalationBudget.from_config(budget)
        self.load: LoadReport | None = None
        self._overloaded_seen = False  # for logging transitions once
        self._scores: dict[str, float] = {}  # unsent event id -> score, for "drop_lowest"
        self._forget = forget

    def reconfigure(self, budget: EscalationBudgetConfig, overload: OverloadConfig) -> None:
        old, self.budget_config, self.overload = self.budget_config, budget, overload
        if budget != old:
            self.budget.reconfigure(budget)
        self._overloaded_seen = self.overloaded

    @property
    def overloaded(self) -> bool:
        """The cloud's last load report says overloaded and is not older than overload.stale_s."""
        load = self.load
        return (load is not None and load.overloaded
                and clock.now_ms() - load.ts <= self.overload.stale_s * 1000)

    def holding(self) -> bool:
        return self.overload.policy == "hold" and self.overloaded

    def _budget_room(self) -> float:
        """Events that may still go out now beyond those already waiting (negative: a queue has formed)."""
        if not self.budget.limited:
            return math.inf
        return self.budget.available(time.monotonic()) - self.outbox.count_unsent()

    def allowance(self, mono: float) -> float:
        """First sends the budget pays for at monotonic time `mono`."""
        return self.budget.available(mono)

    def charge(self, event_id: str, mono: float) -> None:
        """The event leaves the device for the first time."""
        self.budget.charge(mono)
        self._scores.pop(event_id, None)

    def spend(self, camera_id: str, ev: TrackEvent, decision: Decision, now: int) -> Decision:
        """The escalation the rules asked for, unless the overload or budget policy resolves it locally."""
        if self.overload.policy == "local" and self.overloaded:
            self.stats.overload_local += 1
            return self._local_unknown(camera_id, ev, "cloud overloaded: resolved on the device as unknown", now)
        if self.budget_config.policy == "local" and self._budget_room() < 1:
            self.stats.budget_local += 1
            return self._local_unknown(camera_id, ev, "escalation budget spent: resolved on the device as unknown",
                                       now)
        return decision

    def _local_unknown(self, camera_id: str, ev: TrackEvent, reason: str, now: int) -> Decision:
        try:
            verdict = Verdict(event_id=uuid7(now), device=self.device, camera=camera_id, label=ev.label,
                              verdict="unknown", confidence=0.0, description=reason, model=_LOCAL_MODEL,
                              source="fallback", created_ms=now)
        except ValidationError:
            verdict = None
        return Decision("local", reason, verdict)

    def after_escalate(self, event_id: str, score: float, now: int) -> None:
        """Count an event held for an overloaded cloud; keep the over-budget queue within max_waiting."""
        if self.holding():
            self.stats.overload_held += 1
        policy = self.budget_config.policy
        if policy == "local" or not self.budget.limited:
            return
        self._scores[event_id] = _unit(score)
        unsent = self.outbox.unsent()
        # the oldest unsent events go out first, as far as the budget allows now; the rest wait
        admitted = int(min(self.budget.available(time.monotonic()), len(unsent)))
        excess = len(unsent) - admitted - self.budget_config.max_waiting
        if excess < 1:
            return
        waiting = [Waiting(eid, created, self._score_of(eid)) for eid, created in unsent[admitted:]]
        before = self.stats.budget_dropped
        for victim in victims(waiting, excess, policy):
            if self.outbox.complete(victim):
                self.stats.budget_dropped += 1
                self._forget(victim)
            self._scores.pop(victim, None)
        if before // 100 != self.stats.budget_dropped // 100 or before == 0:
            log.warning("escalation budget spent and %d event(s) waiting: %d dropped so far (policy %s); "
                        "raise budget.per_minute/per_hour or max_waiting if the cloud can take more",
                        self.budget_config.max_waiting, self.stats.budget_dropped, policy)

    def _score_of(self, event_id: str) -> float:
        """Score of an unsent event; read from the stored event when it was escalated before a restart."""
        score = self._scores.get(event_id)
        if score is None:
            item = self.outbox.get(event_id)
            score = 0.0
            if item is not None:
                try:
                    score = decode_event(item.payload).score
                except ProtocolError:
                    pass
            self._scores[event_id] = score
        return score

    def on_load(self, payload: bytes, topic: str) -> None:
        """The cloud's retained load report; an empty payload (report cleared) means not overloaded."""
        if not payload:
            self.load = None
        else:
            try:
                self.load = decode_load_report(payload)
            except ProtocolError as exc:
                self.stats.load_invalid += 1
                log.warning("ignored a cloud load report on %s (%s); expected JSON "
                            '{"overloaded": bool, "queue_depth": int, "ts": epoch milliseconds}', topic, exc.reason)
                return
        overloaded = self.overloaded
        if overloaded != self._overloaded_seen:
            self._overloaded_seen = overloaded
            if overloaded:
                log.warning("the cloud reports overload (queue %d); new escalations are %s until it clears",
                            self.load.queue_depth if self.load else 0,
                            "held in the outbox" if self.overload.policy == "hold"
                            else "resolved on the device")
            else:
                log.warning("the cloud is no longer overloaded; escalating again")


__all__ = ["EscalationBudget", "Policy", "SpendingPolicy", "Waiting", "victims"]
