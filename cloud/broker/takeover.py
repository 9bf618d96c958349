"""Taking up events whose claims ran out: left by a worker that died mid-analysis, or left waiting for room in
the model's queue (scheduler.OverCapacity: stored, its claim left to run out).

`TakeOver.run` renews this process's leases every third of a lease and, as soon as the queue has room, rebuilds
each orphaned event from the store and hands it to the service, which answers it like any other (claimed,
decided, stored, then published). See storage.claims for why a claim, not the broker, is the record.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ...shared import clock
from ...shared.protocol import Event, Verdict
from ..counts.servicestats import ServiceStats, Throttled
from ..reuse.singleflight import SingleFlight
from ..scheduling.outcome import Released
from ..storage.claims import ClaimKeeper
from ..storage.store import Store

log = logging.getLogger("edgetriage.cloud.service")

BACKLOG_POLL_S = 1.0  # how often events that wait for room in the queue (or were orphaned) are looked for


class TakeOver:
    """Renews `keeper`'s leases and takes up orphaned events. `room()`: how many more events the queue takes
    now; `busy(event_id)`: this process is answering it already; `answer(event)`: answer a taken-up event
    (its claim is held); `spawn(coro)`: run it as one of the service's tasks."""

    def __init__(self, keeper: ClaimKeeper, store: Store, stats: ServiceStats, warn: Throttled, *,
                 room: Callable[[], int], busy: Callable[[str], bool],
                 answer: Callable[[Event], Awaitable[Any]], spawn: Callable[[Coroutine[Any, Any, None]], None]) -> None:
        self.keeper = keeper
        self.store = store
        self.stats = stats
        self._warn = warn
        self._room = room
        self._busy = busy
        self._answer = answer
        self._spawn = spawn

    async def run(self) -> None:
        """Until cancelled: renew our leases every third of a lease; take up orphans while there is room."""
        keeper = self.keeper
        period = keeper.lease_s / 3
        renew_at = 0.0
        while True:
            try:
                if time.monotonic() >= renew_at:
                    keeper.renew()
                    renew_at = time.monotonic() + period
                room = self._room()
                for event_id in keeper.orphans(limit=room) if room > 0 else ():
                    if not self._busy(event_id):
                        self.take(event_id)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - e.g. Redis briefly away: try again next round
                self._warn.warning("renewing or taking over claims failed (%s); retrying in %.0f s", exc, period)
                renew_at = time.monotonic() + period
                await asyncio.sleep(period)
            await asyncio.sleep(min(period, BACKLOG_POLL_S))

    def take(self, event_id: str) -> None:
        """Answer an event whose claim ran out: rebuilt from the store, published like any other."""
        keeper = self.keeper
        if self.store.get_verdict(event_id) is not None:
            keeper.claims.forget(event_id)  # answered; the claim was only never released
            return
        row = self.store.get_event(event_id)
        crop = self.store.get_crop(event_id)
        if row is None or crop is None:
            keeper.claims.forget(event_id)  # gone (retention): the device's re-send brings it back
            return
        try:
            event = Event.model_validate({**row, "crop": crop})
        except ValueError:
            keeper.claims.forget(event_id)
            return
        if not keeper.take(event_id):
            return  # another worker was quicker
        self.stats.taken_over += 1
        log.debug("taking up event %s: its claim ran out, or it waited for room", event_id)
        self._spawn(self._answer_taken_over(event))

    async def _answer_taken_over(self, event: Event) -> None:
        try:
            await self._answer(event)
        except Released:  # still no room, or stopping: its claim ran out again; taken up on a later round
            pass
        except Exception as exc:  # noqa: BLE001 - e.g. the store's disk is full: its claim runs out, tried again
            self._warn.warning("could not answer event %s taken over from the store: %s", event.event_id, exc)


def retake(keeper: ClaimKeeper, store: Store, event: Event, stats: ServiceStats) -> bool:
    """Our lease on `event` ran out (the store was away, or lost its data) but nobody else holds the claim:
    taken again, and the event stored again (a store that lost its data lost it too). False: another worker
    holds it now and answers it."""
    if not keeper.take(event.event_id, again=True):
        return False
    stats.claims_retaken += 1
    store.put_event(event, clock.now_ms())  # a no-op when it is still there
    return True


def store_verdict(keeper: ClaimKeeper, store: Store, verdict: Verdict) -> Verdict:
    """Store our verdict, and return it; for a claim taken again after an outage, the verdict another worker
    stored meanwhile instead, if there is one (an event gets one verdict)."""
    earlier = store.get_verdict(verdict.event_id) if keeper.was_retaken(verdict.event_id) else None
    if earlier is not None:
        return earlier
    store.put_verdict(verdict)
    return verdict


def settle(flights: SingleFlight, keeper: ClaimKeeper, event_id: str, stored: bool, warn: Throttled) -> None:
    """After an answer: its look-alikes told, its claim released (stored) or ended now so the next worker takes
    it over (failed, cancelled). With the store away these fail too: the flight's deadline and the lease end
    them on their own."""
    try:
        flights.land(event_id)  # after the verdict is stored: its look-alikes find it cached
    except Exception as exc:  # noqa: BLE001 - the store is away
        warn.warning("could not end the single flight of %s: %s", event_id, exc)
    try:
        if stored:
            keeper.done(event_id)
        else:
            keeper.abandon(event_id)
    except Exception as exc:  # noqa: BLE001 - the store is away: the lease runs out on its own
        keeper.held.discard(event_id)
        warn.warning("could not end the claim on %s: %s", event_id, exc)
