"""The open pages a timeline tells of every change: one bounded queue each. A page that falls behind is cut off
and its browser reconnects, asking only for what it missed, so a slow browser can never slow the service."""

from __future__ import annotations

import asyncio

LISTENER_QUEUE = 1000  # messages a listener may fall behind before it is cut off

Message = tuple[int | None, str, str]  # (entry seq or None, SSE event name, JSON data)


class Listener:
    """One open page: the messages it has not read yet; `closed` once it fell behind or the page went."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Message | None] = asyncio.Queue(LISTENER_QUEUE)
        self.closed = False

    def offer(self, item: Message | None) -> None:
        if self.closed:
            return
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.closed = True  # fell behind: end its stream; the browser reconnects from its last id
            self.queue = asyncio.Queue(1)
            self.queue.put_nowait(None)


class Listeners:
    """The pages open now: each change is offered to all of them."""

    def __init__(self) -> None:
        self._open: set[Listener] = set()

    def __len__(self) -> int:
        return len(self._open)

    def listen(self) -> Listener:
        listener = Listener()
        self._open.add(listener)
        return listener

    def forget(self, listener: Listener) -> None:
        self._open.discard(listener)

    def offer(self, message: Message) -> None:
        for listener in list(self._open):
            listener.offer(message)

    def close(self) -> None:
        """End every open stream (so the server can stop at once)."""
        for listener in list(self._open):
            listener.offer(None)
        self._open.clear()
