"""Events before questions: the event path says while an event is being worked on, and work that can wait
(answering a question) gives way at its next step until none is, for at most `max_pause_s` a step.

The question workers run on threads of their own, but Python runs one thread at a time: a busy question worker
takes the interpreter from the event loop, and from the threads that decode, embed and look at an event's crop,
every time one of them wants it back (dozens of times an event). A shorter switch interval and a lower thread
priority (cloud.ask.router) halve that; giving way removes it: while an event is worked on, a worker waits at
its next step instead of running. An event waiting for the model is set aside (it needs no CPU here), so a
queue of events for a slow model does not hold questions back; and every wait is bounded, so a stream of
events slows questions down but never stops them.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

MAX_PAUSE_S = 0.25  # the longest a question worker waits at one step while events keep coming


class EventPressure:
    """How many events the event path is working on now (any thread may say so), and `give_way` for the
    work that waits for none to be."""

    def __init__(self, max_pause_s: float = MAX_PAUSE_S) -> None:
        self.max_pause_s = max_pause_s
        self._lock = threading.Lock()
        self._working = 0
        self._idle = threading.Event()
        self._idle.set()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []  # quiet() on a loop
        self.gave_way = 0  # steps that waited for events
        self.waited_s = 0.0  # their waits, added up

    @property
    def count(self) -> int:
        """Events worked on now."""
        return self._working

    def enter(self, count: int = 1) -> None:
        """`count` events are being worked on from now."""
        if count <= 0:
            return
        with self._lock:
            self._working += count
            self._idle.clear()

    def leave(self, count: int = 1) -> int:
        """`count` events are done (answered, refused, or handed elsewhere); how many were counted (never
        below zero). Waiters on an idle service are woken."""
        if count <= 0:
            return 0
        with self._lock:
            left = min(count, self._working)
            self._working -= left
            waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
            if self._working == 0:
                self._idle.set()
                waiters, self._waiters = self._waiters, []
        _wake_all(waiters)
        return left

    @contextmanager
    def working(self) -> Iterator[None]:
        """One event worked on for the length of the block."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    @contextmanager
    def aside(self) -> Iterator[None]:
        """An event waits for something that needs no CPU here (the model): not counted meanwhile."""
        left = self.leave()
        try:
            yield
        finally:
            self.enter(left)

    def give_way(self) -> float:
        """On a worker thread: wait while any event is worked on, at most `max_pause_s`; the seconds waited."""
        if self._idle.is_set():
            return 0.0
        began = time.monotonic()
        self._idle.wait(self.max_pause_s)
        waited = time.monotonic() - began
        with self._lock:
            self.gave_way += 1
            self.waited_s += waited
        return waited

    async def quiet(self) -> float:
        """On an event loop: `give_way` for a question's own steps there (reading its request, writing its
        answer), without holding a thread; the seconds waited."""
        if self._idle.is_set():
            return 0.0
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._idle.is_set():
                return 0.0
            self._waiters.append((loop, future))
        began = time.monotonic()
        try:
            await asyncio.wait_for(future, self.max_pause_s)
        except TimeoutError:
            with self._lock:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))
        waited = time.monotonic() - began
        with self._lock:
            self.gave_way += 1
            self.waited_s += waited
        return waited


def _wake_all(waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]) -> None:
    for loop, future in waiters:
        try:
            loop.call_soon_threadsafe(_wake, future)
        except RuntimeError:  # that loop is closed: nobody waits there any more
            pass


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
