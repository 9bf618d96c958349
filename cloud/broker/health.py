"""Why nothing moves: whether the store answers, whether the intake has stalled, for /healthz and /metrics.

`IntakeHealth` is told of every message the intake takes in and every one it finishes (answered, refused or
released), and of every store failure the pipeline met. `probe` asks the store a trivial question off the
event loop (a verdict lookup of an id no event has): one that fails marks the store unreachable with its
reason, one that answers clears it. Stalled: messages are waiting and none was finished for
`delivery.stalled_after_s` (counted from the later of the last finished message and the first one waiting).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ...shared.text import shown

PROBE_EVENT_ID = "00000000-0000-7000-8000-000000000000"  # never an event's id: a lookup that finds nothing
PROBE_TIMEOUT_S = 5.0


def store_outage(exc: BaseException) -> bool:
    """The store did not answer (down, restarting, unreachable, its disk full): worth retrying, unlike a bug."""
    from ..storage.store import StoreError

    if isinstance(exc, StoreError | OSError | TimeoutError):
        return True
    kind = type(exc)
    return any(k.__module__.split(".")[0] in ("redis", "sqlite3") and k.__name__ in (  # redis' BusyLoadingError
        "ConnectionError", "TimeoutError", "OperationalError") for k in kind.__mro__)  # is a ConnectionError


class IntakeHealth:
    """The intake's and the store's state as /healthz and /metrics read it (`problems`)."""

    def __init__(self, stalled_after_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.stalled_after_s = stalled_after_s
        self._clock = clock
        self.store_error = ""  # why the store last failed; "" once it answers again
        self.waiting = 0  # messages taken in and not yet finished
        self._waiting_since: float | None = None

    def taken_in(self, count: int = 1) -> None:
        if count <= 0:
            return
        if self.waiting == 0:
            self._waiting_since = self._clock()
        self.waiting += count

    def done(self, count: int = 1) -> None:
        """Messages finished: answered, refused, or released to the broker."""
        if count <= 0:
            return
        self.waiting = max(0, self.waiting - count)
        self._waiting_since = self._clock() if self.waiting else None

    def store_failed(self, exc: BaseException) -> None:
        self.store_error = f"{type(exc).__name__}: {shown(str(exc), 160)}"

    def store_answered(self) -> None:
        self.store_error = ""

    @property
    def store_up(self) -> bool:
        return not self.store_error

    def stalled_s(self) -> float:
        """How long messages have waited with none finished; 0 when none waits."""
        since = self._waiting_since
        return 0.0 if since is None else max(0.0, self._clock() - since)  # None exactly when none waits

    @property
    def stalled(self) -> bool:
        return self.stalled_s() >= self.stalled_after_s

    def problems(self) -> list[str]:
        """Each reason the service is not doing its job now; empty when it is."""
        out = []
        if self.store_error:
            out.append(f"the store is unreachable ({self.store_error}); messages are retried, then released to "
                       "the broker for redelivery")
        if self.stalled:
            out.append(f"the intake has stalled: {self.waiting} message(s) received and none answered for "
                       f"{self.stalled_s():.0f} s (delivery.stalled_after_s = {self.stalled_after_s:g})")
        return out

    async def probe(self, lookup: Callable[[str], Any]) -> bool:
        """Ask the store a trivial question (`lookup(PROBE_EVENT_ID)`) on a worker thread; True when it answered."""
        try:
            await asyncio.wait_for(asyncio.to_thread(lookup, PROBE_EVENT_ID), PROBE_TIMEOUT_S)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure to answer is the store's state, said in health
            if isinstance(exc, asyncio.TimeoutError):
                exc = TimeoutError(f"no answer within {PROBE_TIMEOUT_S:g} s")
            self.store_failed(exc)
            return False
        self.store_answered()
        return True
