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

from ..shared.protocol import Event
from .scheduler import Released
from .servicestats import ServiceStats, Throttled
from .storage.claims import ClaimKeeper
from .storage.store import Store

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
            except Exception:  # noqa: BLE001 - e.g. Redis briefly away: try again next round
                log.exception("renewing or taking over claims failed; retrying in %.0f s", period)
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
