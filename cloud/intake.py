"""The cache-hit writes of one event-loop turn, stored in one commit.

A burst of cache hits arrives as many tasks that become ready in the same turn of the event loop. Each hit
must have its event and verdict stored before its verdict is published (nothing a device was told may be
missing after a crash), but they need not be stored one commit each: `HitWriter.put` queues the pair and
the first one of a turn schedules a flush for the next turn, which writes everything queued in one
transaction (SQLite) or one pipeline (Redis) via the store's `put_answered_many`. Every waiting hit then
publishes. A failed write fails every hit of that batch, none of which was published or acknowledged.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..shared.protocol import Event, Verdict


class HitWriter:
    """Batches `put_answered` calls of one loop turn; falls back to one call each for a store without
    `put_answered_many`."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._queued: list[tuple[Event, int, Verdict, asyncio.Future[bool]]] = []
        self.batches = 0
        self.written = 0

    async def put(self, event: Event, received_ms: int, verdict: Verdict) -> bool:
        """True once the event and its verdict are stored; False (nothing stored) for a repeated event id."""
        many = getattr(self.store, "put_answered_many", None)
        if many is None:
            return self.store.put_answered(event, received_ms, verdict)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bool] = loop.create_future()
        if not self._queued:
            loop.call_soon(self._flush)
        self._queued.append((event, received_ms, verdict, done))
        return await done

    def _flush(self) -> None:
        batch, self._queued = self._queued, []
        try:
            stored = self.store.put_answered_many([(e, r, v) for e, r, v, _ in batch])
        except Exception as exc:  # noqa: BLE001 - handed to every waiter, each says it once
            for *_, done in batch:
                if not done.done():
                    done.set_exception(exc)
            return
        self.batches += 1
        self.written += len(batch)
        for (*_, done), ok in zip(batch, stored, strict=True):
            if not done.done():
                done.set_result(ok)
