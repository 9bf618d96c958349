"""An MQTT broker inside the demo process (amqtt), so the demo needs nothing installed or running.

amqtt speaks MQTT 3.1.1 only: clients connecting to it must use protocol "3.1.1".
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class EmbeddedBroker:
    """amqtt on its own event loop in a daemon thread, bound to loopback only."""

    def __init__(self, host: str = "127.0.0.1", port: int | None = None) -> None:
        self.host = host
        self.port = port or free_port(host)
        self._loop = asyncio.new_event_loop()
        self._broker = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    def start(self, timeout: float = 15.0) -> str:
        from amqtt.broker import Broker

        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.WARNING)
        config = {
            "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:{self.port}"}},
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
        }
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(self._loop)

            async def boot() -> None:
                self._broker = Broker(config, loop=self._loop) if _takes_loop(Broker) else Broker(config)
                await self._broker.start()

            try:
                self._loop.run_until_complete(boot())
            except BaseException as exc:  # noqa: BLE001 - reported to the caller below
                failure.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="embedded-broker", daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or failure:
            why = failure[0] if failure else "timed out"
            raise RuntimeError(f"embedded MQTT broker could not start on {self.host}:{self.port}: {why}")
        return self.url

    def stop(self, timeout: float = 10.0) -> None:
        if self._broker is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._broker.shutdown(), self._loop).result(timeout)
        except Exception:  # noqa: BLE001 - shutting down anyway
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread:
            self._thread.join(timeout)
        self._broker = None


def _takes_loop(cls) -> bool:
    import inspect

    return "loop" in inspect.signature(cls.__init__).parameters
