"""Is the broker there, and does it let us in? Asked once at start, before anything slow (a model) loads.

A broker that never answers at start is a configuration error (wrong host or port, TLS or credentials), so
`edge run`, `cloud run` and `demo --broker` say so in one line and exit instead of retrying for minutes. A
broker that goes away later is the outbox's business: nothing here runs after start.

The check is a real MQTT CONNECT with the configured protocol, TLS and credentials, under a client id of its
own with a clean, expiring session, so it never touches the persistent session of the real client.
"""

from __future__ import annotations

import threading
import time
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .config import MQTTConfig
from .mqtt import credentials, tls_context

CHECK_TIMEOUT_S = 8.0  # a broker that is booting next to us (systemd) gets this long to answer
RETRY_S = 0.5


class BrokerUnreachable(Exception):
    """The broker cannot be reached or refused us; the message says which and what to check."""


def check_broker(config: MQTTConfig, *, timeout_s: float = CHECK_TIMEOUT_S, where: str = "mqtt.url") -> None:
    """Connect and disconnect once; raise BrokerUnreachable with a one-line reason if that fails within
    `timeout_s`. A refused TCP connection is retried until then; a refusal by the broker is final."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        outcome = _connect_once(config, left)
        if outcome is None:
            return
        final, last = outcome
        if final:
            break
        time.sleep(min(RETRY_S, max(0.0, deadline - time.monotonic())))
    raise BrokerUnreachable(f"MQTT broker {config.url} ({where}): {last}; check that it runs and that the url, "
                            f"protocol ({config.protocol}), TLS and credentials are right")


def _connect_once(config: MQTTConfig, timeout_s: float) -> tuple[bool, str] | None:
    """None when the broker accepted us, else (final, reason): final when retrying cannot help."""
    v5 = config.protocol == "5"
    client_id = f"edgetriage-check-{uuid.uuid4().hex[:8]}"
    if v5:
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    else:
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv311,
                             clean_session=True)
    username, password = credentials(config)
    if username:
        client.username_pw_set(username, password)
    if config.tls is not None or config.url.startswith("mqtts"):
        client.tls_set_context(tls_context(config))
    client.connect_timeout = max(0.5, timeout_s)
    answered = threading.Event()
    refusal: list[str] = []

    def on_connect(_client, _userdata, _flags, reason_code, _properties) -> None:
        if reason_code.is_failure:
            refusal.append(f"refused the connection: {reason_code}")
        answered.set()

    client.on_connect = on_connect
    kwargs = {}
    if v5:
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 0
        kwargs = {"clean_start": True, "properties": props}
    try:
        client.connect(config.host, config.port, keepalive=max(5, int(timeout_s) + 5), **kwargs)
    except ConnectionRefusedError as exc:
        return False, f"cannot connect to {config.host}:{config.port}: {exc.strerror or exc}"
    except (OSError, ValueError) as exc:  # DNS, TLS (ssl.SSLError is an OSError), timeouts
        return True, f"cannot connect to {config.host}:{config.port}: {exc}"
    deadline = time.monotonic() + timeout_s
    closed = False
    try:
        while not answered.is_set() and time.monotonic() < deadline:
            if client.loop(timeout=0.1) != mqtt.MQTT_ERR_SUCCESS:
                closed = True
                break
        if refusal:
            return True, f"the broker {refusal[0]}"
        if closed and not answered.is_set():
            return True, (f"{config.host}:{config.port} closed the connection without answering (a TLS listener "
                          "reached without TLS, one that wants a client certificate, or a broker that does not "
                          f"speak MQTT {config.protocol})")
        if not answered.is_set():
            return True, (f"{config.host}:{config.port} accepted the connection but gave no MQTT answer (is it "
                          "an MQTT broker, and does it want TLS?)")
        client.disconnect()
        return None
    finally:
        sock = client.socket()
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
