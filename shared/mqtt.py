"""One MQTT connection, as both sides use it (paho-mqtt 2, callback API v2).

paho's network thread does nothing here but hand events to the owner through the callables it was
given; those callables must be cheap and must not raise (an exception in paho's thread stops its loop
silently, so every hand-off is guarded). Reconnects use exponential backoff with full jitter, which
paho's own loop lacks, so a fleet that lost its broker does not come back in one burst.
"""

from __future__ import annotations

import logging
import random
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .config import MQTTConfig

log = logging.getLogger("edgetriage.mqtt")


@dataclass(frozen=True)
class Incoming:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    mid: int


@dataclass(frozen=True)
class Will:
    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = True


class MQTTLink:
    """A persistent-session MQTT client with its own reconnect loop.

    on_message(Incoming), on_published(mid), on_connected(session_present), on_disconnected(reason)
    are called from the network thread and must only hand work on.
    """

    def __init__(
        self,
        config: MQTTConfig,
        client_id: str,
        *,
        on_message: Callable[[Incoming], None] | None = None,
        on_published: Callable[[int], None] | None = None,
        on_connected: Callable[[bool], None] | None = None,
        on_disconnected: Callable[[str], None] | None = None,
        will: Will | None = None,
        manual_ack: bool = False,
        backoff_min_s: float = 0.5,
        backoff_max_s: float = 30.0,
    ) -> None:
        self.config = config
        self.client_id = client_id
        self.v5 = config.protocol == "5"
        self._on_message = on_message
        self._on_published = on_published
        self._on_connected = on_connected
        self._on_disconnected = on_disconnected
        self.manual_ack = manual_ack and self.v5
        self.backoff_min_s = backoff_min_s
        self.backoff_max_s = backoff_max_s
        self.connected = threading.Event()
        self.reconnects = 0
        self.last_error = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._subscriptions: list[tuple[str, int]] = []
        self._lock = threading.Lock()

        if self.v5:
            client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5,
                                 manual_ack=self.manual_ack)
        else:
            client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv311,
                                 clean_session=False)
        client.max_inflight_messages_set(100)
        if config.username:
            client.username_pw_set(config.username, config.secret_password())
        if config.tls is not None or config.url.startswith("mqtts"):
            tls = config.tls
            client.tls_set(
                ca_certs=str(tls.ca_file) if tls and tls.ca_file else None,
                certfile=str(tls.cert_file) if tls and tls.cert_file else None,
                keyfile=str(tls.key_file) if tls and tls.key_file else None,
                tls_version=ssl.PROTOCOL_TLS_CLIENT,
            )
            ctx = client._ssl_context  # noqa: SLF001 - paho exposes no setter for the minimum version
            if ctx is not None:
                ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            if tls and tls.insecure_skip_verify:
                client.tls_insecure_set(True)
        if will is not None:
            client.will_set(will.topic, will.payload, qos=will.qos, retain=will.retain)
        client.on_connect = self._handle_connect
        client.on_disconnect = self._handle_disconnect
        client.on_message = self._handle_message
        client.on_publish = self._handle_publish
        self.client = client

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"mqtt-{self.client_id}", daemon=True)
        self._thread.start()

    def wait_connected(self, timeout: float) -> bool:
        return self.connected.wait(timeout)

    def stop(self, final: tuple[str, bytes] | None = None, timeout: float = 3.0) -> None:
        """Disconnect cleanly; `final` (topic, payload) is published retained first, e.g. status offline."""
        if final is not None and self.connected.is_set():
            try:
                info = self.client.publish(final[0], final[1], qos=1, retain=True)
                info.wait_for_publish(timeout)
            except (RuntimeError, ValueError):
                pass
        self._stop.set()
        try:
            self.client.disconnect()
        except Exception:  # noqa: BLE001 - already gone is fine
            pass
        if self._thread is not None:
            self._thread.join(timeout)

    def _connect_properties(self) -> Properties | None:
        if not self.v5:
            return None
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self.config.session_expiry_s
        return props

    def _run(self) -> None:
        attempt = 0
        first = True
        while not self._stop.is_set():
            try:
                if first:
                    kwargs = {"clean_start": False, "properties": self._connect_properties()} if self.v5 else {}
                    self.client.connect(self.config.host, self.config.port, self.config.keepalive_s, **kwargs)
                    first = False
                else:
                    self.reconnects += 1
                    self.client.reconnect()
            except (OSError, ssl.SSLError, ValueError) as exc:
                self.last_error = f"cannot reach MQTT broker at {self.config.host}:{self.config.port}: {exc}"
                if attempt == 0 or attempt % 10 == 0:
                    log.warning("%s (retrying with backoff)", self.last_error)
                self._sleep_backoff(attempt)
                attempt += 1
                continue
            attempt = 0
            while not self._stop.is_set():
                rc = self.client.loop(timeout=0.2)
                if rc != mqtt.MQTT_ERR_SUCCESS:
                    break
            if self._stop.is_set():
                break
            self._sleep_backoff(attempt)
            attempt += 1

    def _sleep_backoff(self, attempt: int) -> None:
        cap = min(self.backoff_max_s, self.backoff_min_s * (2 ** min(attempt, 16)))
        self._stop.wait(random.uniform(self.backoff_min_s / 2, cap))

    # -- operations ------------------------------------------------------------------------------------
    def subscribe(self, topic: str, qos: int = 1) -> None:
        """Subscribe now and again after every reconnect that lost the session."""
        with self._lock:
            if (topic, qos) not in self._subscriptions:
                self._subscriptions.append((topic, qos))
        if self.connected.is_set():
            self.client.subscribe(topic, qos)

    def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> int | None:
        """Queue a publish; returns its mid, or None when not connected. PUBACK arrives via on_published."""
        if not self.connected.is_set():
            return None
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            return None
        return info.mid

    def ack(self, mid: int, qos: int = 1) -> None:
        """Acknowledge an incoming message (MQTT 5 with manual_ack only)."""
        if self.manual_ack:
            self.client.ack(mid, qos)

    # -- paho callbacks (network thread) ---------------------------------------------------------------
    def _handle_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self.last_error = f"broker refused the connection: {reason_code}"
            log.error("%s", self.last_error)
            return
        sock = client.socket()
        if sock is not None and hasattr(sock, "setsockopt"):
            try:  # small messages must not wait for Nagle's algorithm (~40 ms a hop otherwise)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        with self._lock:
            subs = list(self._subscriptions)
        for topic, qos in subs:
            client.subscribe(topic, qos)
        self.connected.set()
        self._guard(self._on_connected, bool(flags.session_present))

    def _handle_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        was = self.connected.is_set()
        self.connected.clear()
        if was:
            self._guard(self._on_disconnected, str(reason_code))

    def _handle_message(self, client, userdata, message) -> None:
        self._guard(self._on_message, Incoming(message.topic, bytes(message.payload), message.qos,
                                               bool(message.retain), message.mid))

    def _handle_publish(self, client, userdata, mid, reason_code, properties) -> None:
        self._guard(self._on_published, mid)

    @staticmethod
    def _guard(callback, arg) -> None:
        if callback is None:
            return
        try:
            callback(arg)
        except Exception:  # noqa: BLE001 - never let an exception into paho's thread
            log.exception("MQTT callback failed")
