"""What the benchmarks that run `edgetriage cloud run` share: the config file, the worker process and its HTTP
API, the file-descriptor limit, and a Mosquitto with a password and ACL per device.

Benchmarks import it as a sibling module (`from harness import ...`), like bench/brokers.py. Bench scaffolding
only: nothing in the product package imports it.
"""

from __future__ import annotations

import json
import os
import pwd
import resource
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

from brokers import DEPLOY, Mosquitto, free_port


def toml(config: dict, table: str = "") -> str:
    """A nested dict as TOML (scalars, lists and tables: what a cloud config needs)."""
    scalars, tables = [], []
    for key, value in config.items():
        if isinstance(value, dict):
            tables.append(toml(value, f"{table}.{key}" if table else key))
        elif value is not None:
            scalars.append(f"{key} = {json.dumps(value)}")
    head = [f"[{table}]"] if table and scalars else []
    return "\n".join(head + scalars + [""] + tables)


def raise_fd_limit(wanted: int) -> int:
    """The soft limit on open files raised towards `wanted` (never past the hard limit); the limit now. Child
    processes (the broker, the workers) inherit it. A thousand MQTT sessions need a thousand sockets in the
    process that holds them and as many in the broker: the common soft limit of 1,024 is the first wall."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def peak_rss_mb(pid: int) -> float:
    """The most resident memory process `pid` has held so far, in MiB (Linux /proc: VmHWM)."""
    try:
        fields = Path(f"/proc/{pid}/status").read_text().split("VmHWM:", 1)[1].split()
        return round(int(fields[0]) / 1024, 1)
    except (OSError, IndexError, ValueError):
        return float("nan")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class CloudProcess:
    """`edgetriage cloud run --config FILE` (the dict `config`, its HTTP API on a free port, `token` the
    operator's bearer token if any), its log in `workdir/<name>.log`."""

    def __init__(self, config: dict, workdir: Path, name: str = "cloud", *, token: str | None = None,
                 verbose: bool = False, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.token = token
        self.name = name
        http = {"host": "127.0.0.1", "port": self.port, "enabled": True, **({"token": token} if token else {})}
        path = workdir / f"{name}.toml"
        path.write_text(toml({**config, "http": http}))
        self.log_path = workdir / f"{name}.log"
        self.log = open(self.log_path, "wb")
        environ = {**os.environ, "EDGETRIAGE_STATE": str(workdir / name), "OMP_NUM_THREADS": "1", **(env or {})}
        self.proc = subprocess.Popen([sys.executable, "-m", "edgetriage", *(["-v"] if verbose else []), "cloud",
                                      "run", "--config", str(path)],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=environ)
        self.base = f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 30) -> tuple[int, dict]:
        """(status, JSON body); status 0 when nothing answered."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read() or b"{}")
            except ValueError:
                return exc.code, {}
        except (OSError, ValueError):
            return 0, {}

    def health(self) -> tuple[int, dict]:
        return self.request("GET", "/healthz", timeout=10)

    def wait_ready(self, timeout: float = 300, *, healthy: bool = True) -> None:
        """Until the broker granted the subscription (and, with `healthy`, /healthz says 200)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"cloud process {self.name} exited; its log:\n{self.tail()}")
            status, body = self.health()
            if body.get("mqtt_subscribed") and (status == 200 or not healthy):
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"cloud process {self.name} did not get ready within {timeout:g} s; its log:\n"
                                 f"{self.tail()}")
            time.sleep(0.3)

    def stats(self) -> dict:
        status, body = self.health()
        if status == 0:
            raise SystemExit(f"cloud process {self.name} stopped answering; its log:\n{self.tail()}")
        return body["stats"]

    def peak_rss_mb(self) -> float:
        return peak_rss_mb(self.proc.pid)

    def tail(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self, timeout: float = 60) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


# -- a broker with a password and an ACL entry per device ------------------------------------------------------
CLOUD_USER = "edgetriage.cloud"  # as in deploy/mosquitto/acl
MONITOR_USER = "bench.monitor"  # reads the broker's $SYS figures, nothing else


def fleet_broker(workdir: Path, prefix: str, devices: Iterable[str], *,
                 extra: Iterable[str] = ()) -> tuple[Mosquitto, dict[str, str]]:
    """A Mosquitto of our own on a free loopback port (the shared one on 1883 is never touched) that knows
    each device by its own user name and password and holds it to its own topics with the shipped ACL
    (deploy/mosquitto/acl, its prefix rewritten). No TLS: on loopback the handshakes would measure the cores.
    (broker, passwords: user -> password, the cloud's under CLOUD_USER). Not started."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if shutil.which("mosquitto_passwd") is None:
        raise RuntimeError("mosquitto_passwd is not installed (apt-get install mosquitto)")
    passwords = {name: secrets.token_urlsafe(12) for name in [CLOUD_USER, MONITOR_USER, *devices]}
    passwd = workdir / "passwd"
    passwd.write_text("".join(f"{user}:{pw}\n" for user, pw in passwords.items()))
    passwd.chmod(0o600)
    subprocess.run(["mosquitto_passwd", "-U", str(passwd)], check=True, capture_output=True)  # hash in place
    acl = (DEPLOY / "acl").read_text().replace("edgetriage/", f"{prefix}/")  # v1 topics and the HA states
    acl += f"\n\nuser {MONITOR_USER}\ntopic read $SYS/#\n"
    (workdir / "acl").write_text(acl)
    port = free_port()
    lines = [
        f"listener {port} 127.0.0.1",
        "allow_anonymous false",
        f"password_file {passwd}",
        f"acl_file {workdir / 'acl'}",
        "max_connections -1",
        "max_queued_messages 100000",
        "max_inflight_messages 20",
        "set_tcp_nodelay true",
        "sys_interval 2",
        f"user {pwd.getpwuid(os.geteuid()).pw_name}",
        "log_dest stderr",
        "log_type error",
        "log_type warning",
        *extra,
    ]
    return Mosquitto(port, workdir, config_text="\n".join(lines) + "\n"), passwords


def sys_counter(port: int, topic: str, username: str, password: str, timeout: float = 15.0) -> int | None:
    """One `$SYS` figure of a Mosquitto (e.g. `$SYS/broker/clients/connected`), read by a short-lived
    client; None when it does not come within `timeout` (the broker sends $SYS every sys_interval)."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    got: list[int] = []
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"sys-{secrets.token_hex(4)}", protocol=mqtt.MQTTv5)
    client.username_pw_set(username, password)
    client.on_connect = lambda c, u, f, rc, p: c.subscribe(topic, 0)
    client.on_message = lambda c, u, m: got.append(int(m.payload))
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        _until(lambda: bool(got), timeout)
    finally:
        client.loop_stop()
        client.disconnect()
    return got[0] if got else None


def _until(done: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)
