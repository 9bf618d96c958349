"""A broker that is not there at start is a configuration error: `demo --broker`, `edge run` and `cloud run`
check it before any model loads and end with one line and exit status 2, in seconds."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest
from conftest import Mosquitto, free_port
from edgetriage.shared.broker_check import BrokerUnreachable, check_broker
from edgetriage.shared.config import MQTTConfig

LIMIT_S = 30.0  # what the README promises for a wrong broker


def _run(*argv: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "edgetriage", *argv], capture_output=True, text=True,
                            timeout=LIMIT_S + 30)
    return result, time.monotonic() - started


def _one_error_line(result: subprocess.CompletedProcess, url: str) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"edgetriage: error: MQTT broker {url}"), lines
    assert "Connection refused" in lines[0] and "Traceback" not in result.stderr
    return lines[0]


def test_demo_with_an_unreachable_broker_fails_before_loading_the_model():
    url = f"mqtt://127.0.0.1:{free_port()}"  # nothing listens there
    result, took = _run("demo", "--broker", url)
    line = _one_error_line(result, url)
    assert "--broker" in line
    assert took < LIMIT_S, took
    assert result.stdout == "", "the demo must not start a pass without a broker"


@pytest.mark.parametrize("side", ["edge", "cloud"])
def test_run_with_an_unreachable_broker_is_one_line_and_exit_2(side, tmp_path):
    url = f"mqtt://127.0.0.1:{free_port()}"
    config = tmp_path / f"{side}.toml"
    where = (f'device = "porch-1"\nstate_dir = "{tmp_path / "state"}"\n[[cameras]]\nid = "porch"\nsource = "0"\n'
             f'[daemon]\nmetrics_port = {free_port()}\n' if side == "edge"
             else f'store_path = "{tmp_path / "cloud.db"}"\n[http]\nport = {free_port()}\n')
    config.write_text(f'{where}[mqtt]\nurl = "{url}"\n')
    result, took = _run(side, "run", "--config", str(config))
    line = _one_error_line(result, url)
    assert str(config) in line, "the line names the file whose [mqtt] url is wrong"
    assert took < LIMIT_S, took
    assert sorted(p.name for p in tmp_path.iterdir()) == [config.name], "nothing is written before the check"


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_a_running_broker_passes_the_check(mosquitto, protocol):
    started = time.monotonic()
    check_broker(MQTTConfig(url=mosquitto.url, protocol=protocol))
    assert time.monotonic() - started < 2.0


def test_a_broker_that_refuses_us_is_reported_at_once(tmp_path):
    port = free_port()
    broker = Mosquitto(port, tmp_path, config_text=f"listener {port} 127.0.0.1\nallow_anonymous false\n")
    broker.start()
    try:
        started = time.monotonic()
        with pytest.raises(BrokerUnreachable, match="refused the connection") as refused:
            check_broker(MQTTConfig(url=broker.url), timeout_s=20.0)
        assert time.monotonic() - started < 5.0, "a refusal is final: no retrying until the deadline"
        assert "credentials" in str(refused.value)
    finally:
        broker.stop()


@pytest.mark.parametrize(("behaviour", "reason"), [("silent", "no MQTT answer"),
                                                    ("hang up", "closed the connection without answering")])
def test_a_listener_that_is_no_broker_is_named_for_what_it_did(behaviour, reason):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn = server.accept()[0]
            except OSError:
                continue
            if behaviour == "hang up":  # e.g. a TLS listener reached without TLS
                conn.close()
            else:
                accepted.append(conn)  # and say nothing

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        with pytest.raises(BrokerUnreachable, match=reason):
            check_broker(MQTTConfig(url=f"mqtt://127.0.0.1:{server.getsockname()[1]}"), timeout_s=1.5)
        assert time.monotonic() - started < 5.0
    finally:
        stop.set()
        thread.join(2)
        for conn in accepted:
            conn.close()
        server.close()
