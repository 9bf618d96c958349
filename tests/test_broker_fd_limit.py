"""A thousand devices need a thousand sockets in the broker: the first thing a fleet that size breaks is the
open-file limit Mosquitto runs under. systemd starts services with a soft limit of 1,024 and Mosquitto does not
raise its own; deploy/mosquitto/mosquitto.service.d/edgetriage.conf raises it. Here a real Mosquitto takes
1,200 clients under the shipped limit and cannot under systemd's default."""

from __future__ import annotations

import configparser
import resource
import selectors
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from brokers import DEPLOY, free_port, wait_port

DROP_IN = DEPLOY / "mosquitto.service.d" / "edgetriage.conf"
CLIENTS = 1200
SYSTEMD_DEFAULT = 1024


def _connect_packet(client_id: str) -> bytes:
    """An MQTT 3.1.1 CONNECT: clean session, keep-alive 60 s, no credentials."""
    ident = client_id.encode()
    body = b"\x00\x04MQTT\x04\x02\x00\x3c" + len(ident).to_bytes(2, "big") + ident
    return bytes([0x10, len(body)]) + body


def _accepted(port: int, n: int, timeout: float = 60.0) -> int:
    """How many of `n` clients opened at once get a CONNACK that accepts them."""
    sockets, accepted = [], 0
    sel = selectors.DefaultSelector()
    try:
        for k in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(_connect_packet(f"fd-{k}"))
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
            sockets.append(s)
        waiting, deadline = len(sockets), time.monotonic() + timeout
        while waiting and time.monotonic() < deadline:
            for key, _ in sel.select(1.0):
                try:
                    data = key.fileobj.recv(4)
                except OSError:
                    data = b""
                accepted += data[:1] == b"\x20" and data[3:4] == b"\x00"
                sel.unregister(key.fileobj)
                waiting -= 1
        return accepted
    finally:
        sel.close()
        for s in sockets:
            s.close()


def _broker(tmp: Path, nofile: int) -> tuple[subprocess.Popen, int]:
    port = free_port()
    conf = tmp / f"mosquitto-{nofile}.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nmax_connections -1\nlog_dest none\n")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(["mosquitto", "-c", str(conf)], preexec_fn=limit, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_port(port, proc, "mosquitto")
    return proc, port


def _shipped_limit() -> int:
    parser = configparser.ConfigParser(strict=False)
    parser.optionxform = str
    parser.read(DROP_IN)
    return int(parser["Service"]["LimitNOFILE"])


@pytest.mark.skipif(shutil.which("mosquitto") is None, reason="mosquitto is not installed")
def test_the_shipped_open_file_limit_holds_a_thousand_devices_and_systemds_default_does_not(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < CLIENTS + 200:
        pytest.skip(f"this process may open only {hard} files; the test needs {CLIENTS + 200}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, CLIENTS + 200), hard))
    try:
        shipped = _shipped_limit()
        assert shipped >= 10 * CLIENTS
        results = {}
        for nofile in (min(shipped, hard if hard != resource.RLIM_INFINITY else shipped), SYSTEMD_DEFAULT):
            proc, port = _broker(tmp_path, nofile)
            try:
                results[nofile] = _accepted(port, CLIENTS)
            finally:
                proc.terminate()
                proc.wait(10)
        with_drop_in, default = results.values()
        assert with_drop_in == CLIENTS
        assert default < CLIENTS  # what the drop-in is for: systemd's default turns devices away
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
