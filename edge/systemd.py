"""sd_notify(3) for the camera daemon: `READY=1`, `WATCHDOG=1`, `STATUS=...` to systemd, or nothing at all."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger("edgetriage.edge.daemon")


# -- systemd ---------------------------------------------------------------------------------------------
class SystemdNotifier:
    """sd_notify(3) without libsystemd: datagrams to $NOTIFY_SOCKET. Without a socket every call is a no-op,
    so the daemon runs the same under systemd, in a container or in a terminal."""

    def __init__(self, address: str | None, watchdog_usec: int | None = None) -> None:
        self.address = address
        self.watchdog_interval_s = watchdog_usec / 2e6 if watchdog_usec else None  # systemd: ping at half
        self._sock: socket.socket | None = None
        if address:
            target = "\0" + address[1:] if address.startswith("@") else address
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                sock.connect(target)
                self._sock = sock
            except OSError as exc:
                log.warning("NOTIFY_SOCKET %s: cannot connect (%s); systemd will not hear from this agent",
                            address, exc)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SystemdNotifier:
        """NOTIFY_SOCKET, and WATCHDOG_USEC when WATCHDOG_PID (if set) is this process, as sd_watchdog_enabled."""
        usec: int | None = None
        try:
            usec = int(env.get("WATCHDOG_USEC", "")) or None
            pid = env.get("WATCHDOG_PID")
            if pid and int(pid) != os.getpid():
                usec = None
        except ValueError:
            usec = None
        return cls(env.get("NOTIFY_SOCKET") or None, usec)

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def notify(self, *assignments: str) -> bool:
        if self._sock is None:
            return False
        try:
            self._sock.send("\n".join(assignments).encode())
            return True
        except OSError:
            return False

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


__all__ = ["SystemdNotifier"]
