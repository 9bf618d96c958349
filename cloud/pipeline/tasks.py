"""The tasks the service starts: each message's answer (drained when it stops, for up to `drain_timeout_s`) and
its background work (reuse checks, housekeeping, offers, finals: cancelled when it stops)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("edgetriage.cloud.service")


class Tasks:
    """A set of running tasks: started here, forgotten when done, drained or cancelled together."""

    def __init__(self) -> None:
        self._running: set[asyncio.Task] = set()

    def __len__(self) -> int:
        return len(self._running)

    def start(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def drain(self, timeout_s: float) -> None:
        """Wait for every task for up to `timeout_s` (one may start another: until none is left), then cancel the
        late ones: the broker or the next worker answers their events."""
        deadline = time.monotonic() + timeout_s
        while running := {t for t in self._running if not t.done()}:
            _, late = await asyncio.wait(running, timeout=max(0.0, deadline - time.monotonic()))
            for task in late:
                task.cancel()
            if late:
                log.warning("stopping with %d event(s) unanswered; the broker or the next worker will answer "
                            "them", len(late))
                await asyncio.gather(*late, return_exceptions=True)

    async def cancel(self) -> None:
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
