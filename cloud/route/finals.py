"""A first answer at once, then the judged one; a provisional answer, then the final one.

- First answer: an event not answered within `[analyzer] first_answer_ms` of its arrival gets one from what
  needs no model: what the device saw, where (`provisional`, verdict "unknown", source "fallback"), with the
  closer look's facts and the policy's leaning where they have landed; where they land later (several events
  at once queue for the closer look), it is sent again with them.
  It is published to the device and the subscribers and shown on the page, never stored: the model's verdict
  follows on the same topics, for the same event id. (What the policy, the check or the cache decide is
  answered at once anyway, and final.)
- Final answer: an event the small back-end answered because the large one was busy (or down) is stored and
  published `provisional`, without a reuse rule. When a large back-end has room (nothing waiting on it), it is
  asked again below every priority tier; its answer, with its reuse rule and `provisional_was`, replaces the
  provisional one in the store, on the device, the page and for subscribers, and is counted when it differs.
  A verdict an operator has given feedback on is never replaced.
- Pending finals outlive the process: once the service runs (`run`), each provisional verdict waiting for its
  final is held in the store as a claim of its own kind (storage.claims, name "finals": a table beside the
  SQLite store, or `<prefix>:finals:*` in Redis), on a lease renewed while this process waits. A stop ends the
  leases at once; a process that dies stops renewing them. Either way the next process (the restarted one, or
  another on the same Redis) takes them up: the event rebuilt from the store, asked again below every tier, and
  its final replaces the provisional verdict on the device, the page and for subscribers (`resumed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ...shared.clock import now_ms
from ...shared.protocol import Event, Timings, Verdict
from ..analysis import Analysis
from ..config import CloudConfig
from ..reuse.verdicts import VerdictCache
from ..scheduling.outcome import Released
from ..storage.claims import ClaimKeeper, new_owner, open_claims
from ..storage.store import Store
from .lanes import Lanes, Waiting
from .routing import Route

log = logging.getLogger("edgetriage.cloud.finals")

ROOM_POLL_S = 0.25  # how often a provisional answer looks for room on a large back-end
FIRST_KEPT = 4096  # event ids remembered as given a first answer
FINAL_WAIT_S = 3600.0  # a provisional answer no large back-end had room for within this stays the answer
PENDING_POLL_S = 1.0  # how often pending finals another process left are looked for
PENDING_TAKEN = 64  # pending finals taken up per look


@dataclass
class FinalStats:
    first_answers: int = 0  # provisional first answers published before the model spoke
    first_upgraded: int = 0  # ... sent again with the closer look's facts and the policy's leaning, once landed
    provisional: int = 0  # model verdicts published provisional (the small back-end's, the large one busy/down)
    finals: int = 0  # final answers that replaced a provisional model verdict
    changed: int = 0  # ... whose verdict differs from the provisional one
    operator_kept: int = 0  # final answers not given: an operator had said what the verdict is
    unanswered: int = 0  # provisional verdicts no final answer came for (no room in time, model errors)
    resumed: int = 0  # pending finals taken up from the store (left by a stopped or dead process)

    def figures(self, routed: int) -> dict[str, Any]:
        """The counters, the provisional share (of the events routed to a model) and provisional-vs-final
        agreement (of the finals given)."""
        return {**vars(self), "provisional_share": round(self.provisional / routed, 4) if routed else None,
                "final_agreement": round(1 - self.changed / self.finals, 4) if self.finals else None}


def first_answer(event: Event, arrived: float, leaning: Analysis | None = None) -> Verdict:
    """What an event gets before the model has spoken: what the device saw, where, and that the verdict follows;
    with the closer look's facts where the cloud took them (`leaning`, analysis.Leaning): their description,
    and the policy's verdict where they let it speak (a faint shape where it says alert for a person)."""
    where = f" in {', '.join(event.zones)}" if event.zones else ""
    stay = f", {event.dwell_s:.0f} s" if event.dwell_s is not None else ""
    first = Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                    verdict="unknown", confidence=0.0, model="none", source="fallback", provisional=True,
                    description=f"{event.label} at {event.camera}{where}{stay}; the model's verdict follows"[:300],
                    created_ms=now_ms(), timings=Timings(total_ms=(time.monotonic() - arrived) * 1000))
    if leaning is None or leaning.verdict not in ("alert", "benign", "unknown"):
        return first
    said = leaning.verdict != "unknown"
    return first.model_copy(update={
        "verdict": leaning.verdict, "confidence": min(1.0, max(0.0, leaning.confidence)) if said else 0.0,
        "description": f"{leaning.description.rstrip('.')}; the model's verdict follows"[:300],
        "facts": [f[:200] for f in leaning.facts[:12]], "decided_by": "policy" if said else None,
        "policy": leaning.policy and leaning.policy[:300], "clause": leaning.clause and leaning.clause[:200]})


class _Never:
    """A first answer never due (no first answers configured)."""

    def cancel(self) -> None:
        return None


class Finals:
    """Wired by the service: `lanes` route and ask, `publish` sends a verdict in its forms, `listeners` are the
    service's verdict listeners (this one among them), `spawn` runs a background task the service stops."""

    def __init__(self, lanes: Lanes, cache: VerdictCache, store: Store, publish: Callable[[Verdict], bool],
                 listeners: list[Callable[[Verdict], None]],
                 spawn: Callable[[Coroutine[Any, Any, None]], None], config: CloudConfig | None = None) -> None:
        self.lanes = lanes
        self.config = config  # None: pending finals live in memory only
        self.cache = cache
        self.store = store
        self.publish = publish
        self.listeners = listeners
        self.spawn = spawn
        self.stats = FinalStats()
        self._first_sent: OrderedDict[str, bool] = OrderedDict()  # event ids given a first answer, recent
        self._pending: ClaimKeeper | None = None  # the pending finals held in the store, while `run` runs
        listeners.append(self.heard)

    def figures(self) -> dict[str, Any]:
        return self.stats.figures(sum(self.lanes.routed.values()))

    def first_answer_timer(self, event: Event, arrived: float) -> asyncio.TimerHandle | _Never:
        """The first answer of `event`, due `first_answer_ms` after it arrived; the caller cancels it once the
        event is answered. Counted from arrival, not from when the closer look or the model's queue took the
        event: it never waits behind another event's look."""
        if self.lanes.first_answer_s <= 0:
            return _Never()
        left = max(0.0, arrived + self.lanes.first_answer_s - time.monotonic())
        return asyncio.get_running_loop().call_later(left, self.first_answer, event, arrived)

    def first_answer(self, event: Event, arrived: float) -> None:
        """What is known now: the closer look's facts and the policy's leaning where they have landed, else what
        the device saw (`looked` upgrades it when they land)."""
        if event.event_id in self._first_sent:  # asked again (a verdict that withdrew it expired): said already
            return
        leaning = self.lanes.leaning(event.event_id)
        self._first_sent[event.event_id] = leaning is not None
        while len(self._first_sent) > FIRST_KEPT:
            self._first_sent.popitem(last=False)
        self.stats.first_answers += 1
        self._send(first_answer(event, arrived, leaning))

    def looked(self, event: Event, arrived: float) -> None:
        """The closer look (and the policy) left `event` to a model: a first answer already sent without their
        word is sent again with it (counted: `first_upgraded`)."""
        if self._first_sent.get(event.event_id) is not False:
            return  # no first answer yet (it will read the leaning), or it had it
        leaning = self.lanes.leaning(event.event_id)
        if leaning is None:
            return
        self._first_sent[event.event_id] = True
        self.stats.first_upgraded += 1
        self._send(first_answer(event, arrived, leaning))

    def heard(self, verdict: Verdict) -> None:
        """A verdict listener: a provisional model verdict, once stored and published, waits for its final."""
        if not verdict.provisional:
            return
        waiting = self.lanes.waiting(verdict.event_id)
        if waiting is None:
            return
        self.stats.provisional += 1
        if self._pending is not None:
            try:
                self._pending.take(verdict.event_id)
            except Exception as exc:  # noqa: BLE001 - the store is away: it waits in memory only
                log.warning("could not keep the pending final of %s in the store: %s", verdict.event_id, exc)
        self.spawn(self._finish(waiting, verdict))

    # -- pending finals in the store -------------------------------------------------------------------
    async def run(self) -> None:
        """Until cancelled (the service runs it from its start): the pending finals held in the store, their
        leases renewed every third of a lease; those another process left taken up. On the way out (a stop),
        the leases still held end at once, so the next process takes them up without waiting for them."""
        if self.config is None or not self.lanes.routing:
            return
        name = self.config.mqtt.client_id or f"{self.config.group}-cloud"
        claims = open_claims(self.config, new_owner(name), self.store, name="finals")
        keeper = self._pending = ClaimKeeper(claims, self.config.delivery.claim_lease_s)
        renew_at = 0.0
        try:
            while True:
                try:
                    if time.monotonic() >= renew_at:
                        keeper.renew()
                        renew_at = time.monotonic() + keeper.lease_s / 3
                    for event_id in keeper.orphans(limit=PENDING_TAKEN):
                        self._take_up(keeper, event_id)
                except Exception as exc:  # noqa: BLE001 - e.g. Redis briefly away: try again next round
                    log.warning("keeping or taking up pending final answers failed (%s); retrying", exc)
                await asyncio.sleep(min(PENDING_POLL_S, keeper.lease_s / 3))
        finally:
            self._pending = None
            for event_id in list(keeper.held):
                with contextlib.suppress(Exception):  # the store is away: the lease runs out on its own
                    keeper.abandon(event_id)
            claims.close()

    def _take_up(self, keeper: ClaimKeeper, event_id: str) -> None:
        """A pending final another process left: asked again if its verdict is still the provisional one (no
        operator's word on it) and its event, crop included, is still stored; else forgotten."""
        stored = self.store.get_verdict(event_id)
        row = self.store.get_event(event_id) if stored is not None and stored.provisional else None
        crop = self.store.get_crop(event_id) if row is not None else None
        event = None
        if stored is not None and crop is not None and stored.feedback is None and stored.decided_by != "operator":
            with contextlib.suppress(ValueError):
                event = Event.model_validate({**row, "crop": crop})  # type: ignore[dict-item]
        if event is None:
            if stored is not None and stored.provisional:
                self.stats.unanswered += 1  # its event or crop is gone (retention): the provisional one stays
            keeper.claims.forget(event_id)
            return
        if not keeper.take(event_id):
            return  # another process was quicker
        self.stats.resumed += 1
        waited_ms = max(0, now_ms() - int(row.get("received_ms") or now_ms()))  # type: ignore[union-attr]
        arrived = time.monotonic() - waited_ms / 1000
        route = Route(lane="", reason=stored.routed_by or "large_busy", expected_ms=0.0, provisional=True)
        log.debug("taking up the pending final of %s", event_id)
        self.spawn(self._finish(Waiting(event, arrived, route), stored))

    def _settled(self, event_id: str, *, done: bool) -> None:
        """The pending final of `event_id` ends: answered or given up (`done`), or to be taken up again."""
        keeper = self._pending
        if keeper is None or event_id not in keeper.held:
            return
        try:
            keeper.done(event_id) if done else keeper.abandon(event_id)
        except Exception as exc:  # noqa: BLE001 - the store is away: the lease runs out on its own
            keeper.held.discard(event_id)
            log.warning("could not end the pending final of %s: %s", event_id, exc)

    # -- final answers ---------------------------------------------------------------------------------
    async def _finish(self, waiting: Waiting, provisional: Verdict) -> None:
        """The final answer for one provisional verdict; its pending final ended unless the service stops."""
        event_id = waiting.event.event_id
        try:
            settled = await self._final_answer(waiting, provisional)
        except asyncio.CancelledError:
            raise  # stopping: `run` ends the lease, the next process takes it up
        except Exception:  # noqa: BLE001 - e.g. the store's disk is full: taken up again on a later round
            log.exception("the final answer for %s failed", event_id)
            settled = False
        self._settled(event_id, done=settled)

    async def _final_answer(self, waiting: Waiting, provisional: Verdict) -> bool:
        """False: to be taken up again (the scheduler stopped); True: answered, or it stays as it is."""
        given_up = time.monotonic() + FINAL_WAIT_S
        while True:
            lane = self.lanes.final_lane()
            if lane is not None and self._operator_said(waiting.event.event_id):
                return True
            if lane is not None:
                try:
                    outcome = await self.lanes.ask_final(lane, waiting.event)
                except Released:
                    return False
                if outcome.refused is None and outcome.analysis is not None and outcome.analysis.error is None:
                    break
                if outcome.refused != "queue_full":  # the model failed, or a budget is spent: it stays
                    self.stats.unanswered += 1
                    return True
            if time.monotonic() > given_up:
                self.stats.unanswered += 1
                return True
            await asyncio.sleep(ROOM_POLL_S)
        event, analysis = waiting.event, outcome.analysis
        final = self.cache.from_model(event, analysis, analysis.prompt_version, lane.name, waiting.arrived,
                                      outcome.started)
        final = final.model_copy(update={"model": f"{lane.name}: {final.model}"[:128],
                                         "routed_by": waiting.route.reason, "provisional_was": provisional.verdict})
        if self._operator_said(event.event_id):
            return True
        stored = self.store.get_verdict(event.event_id)
        if stored is not None and not stored.provisional:
            return True  # answered finally meanwhile (another worker)
        self.store.put_verdict(final)
        self.stats.finals += 1
        self.stats.changed += final.verdict != provisional.verdict
        if final.verdict != provisional.verdict:
            log.info("final answer %s replaces the provisional %s", final.verdict, provisional.verdict,
                     extra={"event_id": event.event_id, "device": event.device, "camera": event.camera})
        self._send(final)
        return True

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
