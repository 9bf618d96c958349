"""A first answer at once, then the judged one; a provisional answer, then the final one.

- First answer: an event the model has not answered within `[analyzer] first_answer_ms` (cloud.lanes) gets one
  from what needs no model: what the device saw, where (`provisional`, verdict "unknown", source "fallback").
  It is published to the device and the subscribers and shown on the page, never stored: the model's verdict
  follows on the same topics, for the same event id. (What the policy, the check or the cache decide is
  answered at once anyway, and final.)
- Final answer: an event the small back-end answered because the large one was busy (or down) is stored and
  published `provisional`, without a reuse rule. When a large back-end has room (nothing waiting on it), it is
  asked again below every priority tier; its answer, with its reuse rule and `provisional_was`, replaces the
  provisional one in the store, on the device, the page and for subscribers, and is counted when it differs.
  A verdict an operator has given feedback on is never replaced.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ..shared.clock import now_ms
from ..shared.protocol import Event, Timings, Verdict
from .lanes import Lanes, Waiting
from .scheduler import Released
from .storage.store import Store
from .verdicts import VerdictCache

log = logging.getLogger("edgetriage.cloud.finals")

ROOM_POLL_S = 0.25  # how often a provisional answer looks for room on a large back-end
FIRST_KEPT = 4096  # event ids remembered as given a first answer
FINAL_WAIT_S = 3600.0  # a provisional answer no large back-end had room for within this stays the answer


@dataclass
class FinalStats:
    first_answers: int = 0  # provisional first answers published before the model spoke
    provisional: int = 0  # model verdicts published provisional (the small back-end's, the large one busy/down)
    finals: int = 0  # final answers that replaced a provisional model verdict
    changed: int = 0  # ... whose verdict differs from the provisional one
    operator_kept: int = 0  # final answers not given: an operator had said what the verdict is
    unanswered: int = 0  # provisional verdicts no final answer came for (no room in time, model errors)

    def figures(self, routed: int) -> dict[str, Any]:
        """The counters, the provisional share (of the events routed to a model) and provisional-vs-final
        agreement (of the finals given)."""
        return {**vars(self), "provisional_share": round(self.provisional / routed, 4) if routed else None,
                "final_agreement": round(1 - self.changed / self.finals, 4) if self.finals else None}


def first_answer(event: Event, arrived: float) -> Verdict:
    """What an event gets before the model has spoken: what the device saw, where, and that the verdict follows."""
    where = f" in {', '.join(event.zones)}" if event.zones else ""
    stay = f", {event.dwell_s:.0f} s" if event.dwell_s is not None else ""
    return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                   verdict="unknown", confidence=0.0, model="none", source="fallback", provisional=True,
                   description=f"{event.label} at {event.camera}{where}{stay}; the model's verdict follows"[:300],
                   created_ms=now_ms(), timings=Timings(total_ms=(time.monotonic() - arrived) * 1000))


class Finals:
    """Wired by the service: `lanes` route and ask, `publish` sends a verdict in its forms, `listeners` are the
    service's verdict listeners (this one among them), `spawn` runs a background task the service stops."""

    def __init__(self, lanes: Lanes, cache: VerdictCache, store: Store, publish: Callable[[Verdict], bool],
                 listeners: list[Callable[[Verdict], None]],
                 spawn: Callable[[Coroutine[Any, Any, None]], None]) -> None:
        self.lanes = lanes
        self.cache = cache
        self.store = store
        self.publish = publish
        self.listeners = listeners
        self.spawn = spawn
        self.stats = FinalStats()
        self._first_sent: OrderedDict[str, bool] = OrderedDict()  # event ids given a first answer, recent
        lanes.on_slow = self.first_answer
        listeners.append(self.heard)

    def figures(self) -> dict[str, Any]:
        return self.stats.figures(sum(self.lanes.routed.values()))

    def first_answer(self, event: Event, arrived: float) -> None:
        if event.event_id in self._first_sent:  # asked again (a verdict that withdrew it expired): said already
            return
        self._first_sent[event.event_id] = True
        while len(self._first_sent) > FIRST_KEPT:
            self._first_sent.popitem(last=False)
        self.stats.first_answers += 1
        self._send(first_answer(event, arrived))

    def heard(self, verdict: Verdict) -> None:
        """A verdict listener: a provisional model verdict, once stored and published, waits for its final."""
        if not verdict.provisional:
            return
        waiting = self.lanes.waiting(verdict.event_id)
        if waiting is None:
            return
        self.stats.provisional += 1
        self.spawn(self._finish(waiting, verdict))

    async def _finish(self, waiting: Waiting, provisional: Verdict) -> None:
        given_up = time.monotonic() + FINAL_WAIT_S
        while True:
            lane = self.lanes.final_lane()
            if lane is not None and self._operator_said(waiting.event.event_id):
                return
            if lane is not None:
                try:
                    outcome = await self.lanes.ask_final(lane, waiting.event)
                except Released:
                    return
                if outcome.refused is None and outcome.analysis is not None and outcome.analysis.error is None:
                    break
                if outcome.refused != "queue_full":  # the model failed, or a budget is spent: it stays
                    self.stats.unanswered += 1
                    return
            if time.monotonic() > given_up:
                self.stats.unanswered += 1
                return
            await asyncio.sleep(ROOM_POLL_S)
        event, analysis = waiting.event, outcome.analysis
        final = self.cache.from_model(event, analysis, analysis.prompt_version, lane.name, waiting.arrived,
                                      outcome.started)
        final = final.model_copy(update={"model": f"{lane.name}: {final.model}"[:128],
                                         "routed_by": waiting.route.reason, "provisional_was": provisional.verdict})
        if self._operator_said(event.event_id):
            return
        stored = self.store.get_verdict(event.event_id)
        if stored is not None and not stored.provisional:
            return  # answered finally meanwhile (another worker)
        self.store.put_verdict(final)
        self.stats.finals += 1
        self.stats.changed += final.verdict != provisional.verdict
        if final.verdict != provisional.verdict:
            log.info("final answer %s replaces the provisional %s", final.verdict, provisional.verdict,
                     extra={"event_id": event.event_id, "device": event.device, "camera": event.camera})
        self._send(final)

    def _operator_said(self, event_id: str) -> bool:
        """An operator gave feedback on the event's verdict: their word wins over both answers (counted)."""
        stored = self.store.get_verdict(event_id)
        said = stored is not None and (stored.feedback is not None or stored.decided_by == "operator")
        self.stats.operator_kept += said
        return said

    def _send(self, verdict: Verdict) -> None:
        self.publish(verdict)
        for listener in self.listeners:
            try:
                listener(verdict)
            except Exception:  # noqa: BLE001 - a listener's bug must not stop the answers
                log.exception("listener %r failed", listener)
