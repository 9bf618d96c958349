"""Is a TCP port free to listen on? Asked once at start, before anything slow (a model) loads, so a port that
another process holds is one line naming the setting to change, not a traceback after the model has loaded."""

from __future__ import annotations

import socket

from .config import ConfigError


def check_port_free(host: str, port: int, *, what: str, fix: str) -> None:
    """Raise ConfigError when `host:port` cannot be listened on. `what` names the server ("the HTTP API"),
    `fix` says where the port comes from and how to change it ("set [http] port in FILE")."""
    if port == 0:
        return  # the system picks a free one
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # as the servers bind: a port left in TIME_WAIT by our own last run is free, one that is listened on is not
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        raise ConfigError(f"cannot serve {what} on {host}:{port}: {exc.strerror or exc}; {fix}") from None
    finally:
        sock.close()
