"""Mosquitto on a free loopback port, for the tests and the benchmarks alike (the shared one on 1883 is never
touched). One class: a plain anonymous broker by default, or the shipped production config (deploy/mosquitto:
TLS, client certificates, the per-device ACL) with only ports and paths rewritten, via `Mosquitto.shipped()`.

Tests import it through tests/conftest.py; benchmarks import it as a sibling module (`from brokers import ...`).
Test scaffolding only: nothing in the product package imports it.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DEPLOY = Path(__file__).resolve().parents[1] / "deploy" / "mosquitto"
CLOUD_USER = "edgetriage.cloud"  # the cloud's certificate CN and ACL user in the shipped files
HA_USER = "edgetriage.homeassistant"
PLUGIN = "/usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so"  # as deploy/mosquitto/mosquitto.conf names it


def _dynsec_module():
    spec = importlib.util.spec_from_file_location("edgetriage_dynsec", DEPLOY / "dynsec.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dynsec_settings(devices: list[str], prefix: str = "edgetriage", passwords: dict[str, str] | None = None) -> dict:
    """deploy/mosquitto/dynsec.py's dynamic-security document for these devices and password logins."""
    return _dynsec_module().settings(devices, prefix, passwords)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen | None = None, what: str = "server", timeout: float = 20.0) -> None:
    """Until something accepts connections on 127.0.0.1:`port`; RuntimeError if `proc` exits first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{what} exited before listening on 127.0.0.1:{port}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start listening on 127.0.0.1:{port}") from None
            time.sleep(0.05)


class Mosquitto:
    """A broker of the caller's own on a free loopback port; can be killed and restarted on the same port.

    Plain (the default): anonymous MQTT on `port`, `extra` config lines appended (e.g. "max_inflight_messages
    100"). `config_text` replaces the whole config. The broker's log (errors and warnings) goes to
    `workdir/mosquitto.log`; `log_text()` reads it.
    """

    def __init__(self, port: int | None, workdir: Path, persistence: bool = False, config_text: str | None = None,
                 *, extra: Iterable[str] = (), max_queued: int = 10000) -> None:
        self.port = port if port is not None else free_port()
        self.workdir = Path(workdir)
        self.persistence = persistence
        self.config_text = config_text
        self.extra = list(extra)
        self.max_queued = max_queued
        self.proc: subprocess.Popen | None = None
        self.scheme = "mqtt"
        # set by shipped(): the certificate listener, the password listener and where the certificates are
        self.tls_port: int | None = None
        self.password_port: int | None = None
        self.cloud_port: int | None = None
        self.certs: Path | None = None
        self.passwords: dict[str, str] = {}

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "mosquitto.log"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def _plain_config(self) -> str:
        lines = [f"listener {self.port} 127.0.0.1", "allow_anonymous true", f"max_queued_messages {self.max_queued}",
                 "set_tcp_nodelay true", "log_dest stderr", "log_type error", "log_type warning"]
        if self.persistence:
            lines += ["persistence true", f"persistence_location {self.workdir}/", "autosave_interval 1",
                      "autosave_on_changes true"]
        return "\n".join(lines + self.extra) + "\n"

    def start(self) -> Mosquitto:
        if shutil.which("mosquitto") is None:
            raise RuntimeError("mosquitto is not installed (apt-get install mosquitto)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "mosquitto.conf"
        conf.write_text(self.config_text if self.config_text is not None else self._plain_config())
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_port(self.port, self.proc, "mosquitto", timeout=10)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}: {self.log_text()[-2000:]}") from None
        return self

    def stop(self, sig: str = "term") -> None:
        if self.proc is None:
            return
        if sig == "kill":
            self.proc.kill()
        else:
            self.proc.terminate()
        self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> Mosquitto:
        return self if self.proc is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the shipped production config -----------------------------------------------------------------
    @classmethod
    def shipped(cls, workdir: Path, clients: Iterable[str] = (), *, passwords: dict[str, str] | None = None,
                acl: str | None = None, extra: Iterable[str] = ()) -> Mosquitto:
        """deploy/mosquitto as shipped, ports and paths rewritten: certificates made by make-certs.sh for
        `clients` (and the cloud), `passwords` (user -> password; a random one for None values) in the
        dynamic-security file (deploy/mosquitto/dynsec.py: a role per device, `clients` and password users),
        or, where an `acl` text is given, the plain acl_file and password file instead. `port`/`tls_port` is
        the devices' certificate listener, `password_port` the user-name + password one, `cloud_port` the cloud's
        certificate listener. Not started: call start()."""
        workdir = Path(workdir)
        if shutil.which("openssl") is None:
            raise RuntimeError("openssl is not installed")
        workdir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["sh", str(DEPLOY / "make-certs.sh"), str(workdir), *clients], check=True, capture_output=True)
        chosen = {user: pw or secrets.token_urlsafe(16) for user, pw in (passwords or {}).items()}
        devices = [c for c in (*clients, *chosen) if not c.startswith(CLOUD_USER) and c != HA_USER]
        (workdir / "dynamic-security.json").write_text(json.dumps(dynsec_settings(devices, passwords=chosen)))
        tls_port, password_port, cloud_port = free_port(), free_port(), free_port()
        text = (DEPLOY / "mosquitto.conf").read_text()
        plugin_lines = f"plugin {PLUGIN}\nplugin_opt_config_file /etc/mosquitto/edgetriage/dynamic-security.json\n"
        if plugin_lines not in text:
            raise RuntimeError("the shipped mosquitto.conf no longer loads the dynamic-security plugin")
        if acl is not None:  # the plain acl_file instead of the plugin (a broker without it)
            for user, pw in chosen.items():
                subprocess.run(["mosquitto_passwd", "-b", str(workdir / "passwd"), user, pw], check=True,
                               capture_output=True)
            (workdir / "acl").write_text(acl)
            text = text.replace(plugin_lines, f"acl_file {workdir}/acl\npassword_file {workdir}/passwd\n")
        plugin = next(iter(glob.glob("/usr/lib/*/mosquitto_dynamic_security.so")), PLUGIN)
        text = text.replace(f"plugin {PLUGIN}\n", f"plugin {plugin}\n")
        for old, new in (("/var/lib/mosquitto/", f"{workdir}/"), ("/etc/mosquitto/edgetriage/", f"{workdir}/"),
                         ("\nlistener 8883\n", f"\nlistener {tls_port} 127.0.0.1\n"),
                         ("\nlistener 8884\n", f"\nlistener {password_port} 127.0.0.1\n"),
                         ("\nlistener 8885\n", f"\nlistener {cloud_port} 127.0.0.1\n")):
            if old not in text:
                raise RuntimeError(f"the shipped mosquitto.conf no longer has {old!r}")
            text = text.replace(old, new)
        # the broker drops root privileges to "mosquitto", who cannot read a test's private files; log what
        # a test looks for (refusals are "notice", protocol errors "error"/"warning")
        text += "\n" + "\n".join([f"user {pwd.getpwuid(os.geteuid()).pw_name}", "log_dest stderr",
                                  "log_type error", "log_type warning", "log_type notice", *extra]) + "\n"
        broker = cls(tls_port, workdir, persistence=True, config_text=text)
        broker.scheme = "mqtts"
        broker.tls_port, broker.password_port, broker.cloud_port = tls_port, password_port, cloud_port
        broker.certs, broker.passwords = workdir, chosen
        return broker

    def mqtt(self, name: str | None, *, port: int | None = None, **kw: Any):
        """How `name` connects to a shipped() broker: its certificate on its certificate listener (the cloud's
        for CLOUD_USER*, the devices' for anyone else), or (name None) no certificate, e.g. with a user name
        and password on `password_port`. An MQTTConfig."""
        from edgetriage.shared.config import MQTTConfig, TLSConfig

        if self.certs is None:
            raise RuntimeError("mqtt() is for a Mosquitto.shipped() broker")
        tls = TLSConfig(ca_file=self.certs / "ca.crt", cert_file=self.certs / f"{name}.crt" if name else None,
                        key_file=self.certs / f"{name}.key" if name else None)
        default = self.cloud_port if name and name.startswith(CLOUD_USER) else self.tls_port
        return MQTTConfig(url=f"mqtts://127.0.0.1:{port or default}", tls=tls, **kw)


class RedisServer:
    """A redis-server of the caller's own on a free loopback port, in memory (nothing saved: a restart comes
    back empty, the hardest case for the cloud), killed and started again on the same port at will. The
    shared Redis on 6379 is never touched."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.port = port if port is not None else free_port()
        self.workdir = Path(workdir)
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                                      "--appendonly", "no", "--dir", str(self.workdir)],
                                     stdout=subprocess.DEVNULL, stderr=open(self.workdir / "redis.log", "ab"))
        wait_port(self.port, self.proc, "redis-server")
        return self

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown, no save."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()
