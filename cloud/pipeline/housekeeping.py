"""The cloud service's housekeeping: the retained load report devices steer by (sent again while the broker
missed it) and retention (crops, then events and their verdicts, past the ages `[retention]` sets).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ...shared.clock import now_ms
from ..config import RetentionConfig
from ..scheduling.capacity import LoadState
from ..storage.store import Retention, Store

log = logging.getLogger("edgetriage.cloud.service")

LOAD_RETRY_S = 2.0  # how often a load report the broker missed is sent again


def sweep(store: Store, policy: RetentionConfig, now: int | None = None) -> tuple[int, int]:
    """Retention: crops older than policy.crops_days, then events (and their verdicts) older than
    policy.events_days. (crops, events) deleted; (0, 0) for a store that expires data itself."""
    if not isinstance(store, Retention):
        return 0, 0
    now = now_ms() if now is None else now
    crops_before = now - int(policy.crops_days * 86_400_000) if policy.crops_days else None
    events_before = now - int(policy.events_days * 86_400_000) if policy.events_days else None
    crops, events = store.sweep(crops_before, events_before)
    if crops or events:
        log.info("retention: deleted %d crops and %d events", crops, events)
    return crops, events


class Housekeeping:
    """`load_changed` is the scheduler's on_load: it publishes the report through `publish_load` (False: no
    broker now) and keeps it until it is sent; `run` retries it and sweeps at retention.sweep_interval_s."""

    def __init__(self, store: Store, policy: RetentionConfig, publish_load: Callable[[LoadState], bool]) -> None:
        self.store = store
        self.policy = policy
        self._publish_load = publish_load
        self._unsent: LoadState | None = None

    def sweep(self, now: int | None = None) -> tuple[int, int]:
        """Retention now (`sweep`): (crops, events) deleted."""
        return sweep(self.store, self.policy, now)

    def load_changed(self, load: LoadState) -> None:
        self._unsent = None if self._publish_load(load) else load

    async def run(self) -> None:
        next_sweep = time.monotonic()
        while True:
            if self._unsent is not None:
                self.load_changed(self._unsent)
            if time.monotonic() >= next_sweep:
                next_sweep = time.monotonic() + self.policy.sweep_interval_s
                try:
                    await asyncio.to_thread(self.sweep)
                except Exception:  # noqa: BLE001 - retention must not stop the service; try next time
                    log.exception("retention sweep failed")
            await asyncio.sleep(LOAD_RETRY_S)
