"""One MQTT connection, as both sides use it (paho-mqtt 2, callback API v2, MQTT 5 by default, 3.1.1 on request).

paho's network thread does nothing here but hand events to the owner through the callables it was given;
and it is the only thread that touches the socket: `publish()`, `subscribe()` and `ack()` from any other
thread only queue the packet and wake the network thread, which writes it. (paho run from a loop of one's
own, as here, would otherwise write from the caller's thread at once; a TLS socket written from two
threads corrupts its records: "bad record mac", a dropped connection, even a crash in OpenSSL.) The
callables must be cheap and must not raise (an exception in paho's thread stops its loop silently, so
every hand-off is guarded, message conversion included). Reconnects use exponential backoff with full
jitter, which paho's own loop lacks, so a fleet that lost its broker does not come back in one burst.

Delivery semantics the owners rely on:
- `publish()` returning a mid is not delivery. `on_published(mid)` is called only for a PUBACK whose reason
  code is a success; a PUBACK that refuses the message (MQTT 5 reason code >= 0x80, e.g. 0x87 "Not
  authorized" from a broker ACL, 0x97 "Quota exceeded") goes to `on_refused(mid, reason)` instead. A PUBACK
  0x10 "No matching subscribers" is a success, and its mid is also kept in `unread` (a deque: the network
  thread appends, the owner takes from its other end): nobody read that topic.
- Sessions are persistent (MQTT 5: clean_start=False with a session expiry; 3.1.1: clean_session=False),
  so QoS 1 messages published to us while we are away are kept by the broker.
- With `manual_ack` (MQTT 5 only) an incoming message is acknowledged when the owner calls `ack()`, once per
  message; an ack for a message of an earlier connection is skipped, because message ids are reused across
  connections and the broker redelivers such a message anyway.
- `subscribed` is set once the broker has granted every subscription of the current connection (SUBACK),
  not merely when it accepted the connection: messages published before that reach no subscriber. A refused
  subscription (a broker ACL, MQTT 5 reason code >= 0x80; 0x80 in 3.1.1) is logged as an error naming the
  filter and keeps `subscribed` clear, so a health check says why nothing arrives.
- `receive_maximum` (MQTT 5) caps how many unacknowledged messages the broker sends us at once: the
  intake's flow control.
- Shared subscriptions (`$share/<group>/<filter>`) are matched here (`topic_matches`); paho's own
  `topic_matches_sub` and `message_callback_add` do not understand them.

Credentials come from the config or the environment (EDGETRIAGE_MQTT_USERNAME, EDGETRIAGE_MQTT_PASSWORD)
and are never logged.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .config import ConfigError, MQTTConfig

log = logging.getLogger("edgetriage.mqtt")

# our unacknowledged QoS 1 publishes at once: Mosquitto's default Receive Maximum (max_inflight_messages), which a
# client must not exceed; paho queues the rest and sends them as PUBACKs come back
MAX_INFLIGHT = 20
NO_MATCHING_SUBSCRIBERS = 0x10  # an MQTT 5 PUBACK's reason code: accepted, and nobody subscribes to the topic
UNREAD_KEPT = 1024  # unread mids kept for the owner to take (`MQTTLink.unread`)
REFUSED_WARN_S = 60.0  # at most one "refused" warning a minute per connection without an on_refused owner


@dataclass(frozen=True)
class Incoming:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    mid: int
    generation: int = 0  # which connection delivered it; see MQTTLink.ack
    duplicate: bool = False  # the broker says it may have sent this message before


@dataclass(frozen=True)
class Will:
    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = True


# -- topic filters -----------------------------------------------------------------------------------------
def shared_subscription(group: str, topic_filter: str) -> str:
    """The MQTT 5 shared-subscription form of a filter: the broker gives each message to one member of `group`."""
    if not group or any(c in group for c in "/+#"):
        raise ValueError(f"shared subscription group {group!r} must be non-empty without '/', '+' or '#'")
    return f"$share/{group}/{topic_filter}"


def plain_filter(topic_filter: str) -> str:
    """The filter messages are matched against: `$share/<group>/` stripped, anything else unchanged."""
    if topic_filter.startswith("$share/"):
        parts = topic_filter.split("/", 2)
        return parts[2] if len(parts) == 3 else ""
    return topic_filter


def topic_matches(topic_filter: str, topic: str) -> bool:
    """MQTT topic matching, shared subscriptions included. Wildcards never match a first level that starts
    with '$' (MQTT 4.7.2), so `#` does not see `$SYS`."""
    pattern = plain_filter(topic_filter).split("/")
    levels = topic.split("/")
    if not pattern or pattern == [""] or not topic:
        return False
    if levels[0].startswith("$") and pattern[0] in ("+", "#"):
        return False
    for i, part in enumerate(pattern):
        if part == "#":
            return i == len(pattern) - 1
        if i >= len(levels):
            return False
        if part != "+" and part != levels[i]:
            return False
    return len(levels) == len(pattern)


# -- TLS ---------------------------------------------------------------------------------------------------
def tls_context(config: MQTTConfig) -> ssl.SSLContext:
    """A client context: TLS 1.2 or newer, the broker's certificate checked against `tls.ca_file` (or the
    system's CAs), the host name checked unless `insecure_skip_verify`, our certificate if one is given.
    Raises ConfigError naming the file that cannot be used."""
    tls = config.tls
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if tls is not None and tls.ca_file:
            ctx.load_verify_locations(cafile=str(tls.ca_file))
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"mqtt.tls.ca_file {tls.ca_file if tls else ''}: cannot load the CA certificate: "
                          f"{getattr(exc, 'strerror', None) or exc}; give a PEM file") from None
    if tls is not None and tls.cert_file:
        if not tls.key_file:
            raise ConfigError("mqtt.tls: cert_file is set but key_file is not; give both (PEM files)")
        try:
            ctx.load_cert_chain(str(tls.cert_file), str(tls.key_file))
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"mqtt.tls: cannot load the client certificate {tls.cert_file} with key "
                              f"{tls.key_file}: {getattr(exc, 'strerror', None) or exc}; give matching PEM "
                              "files") from None
    elif tls is not None and tls.key_file:
        raise ConfigError("mqtt.tls: key_file is set but cert_file is not; give both (PEM files)")
    if tls is not None and tls.insecure_skip_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def credentials(config: MQTTConfig) -> tuple[str | None, str | None]:
    """(username, password): the environment wins over the config file, so secrets can stay out of it."""
    username = os.environ.get("EDGETRIAGE_MQTT_USERNAME") or config.username
    return username, config.secret_password()


def _network_thread_writes(client: mqtt.Client, userdata: object, sock: object) -> None:
    """paho's "an external loop watches this socket for writes" hook: MQTTLink's own loop does, so nothing
    to do; having it set is what keeps paho from writing from the thread that called publish()."""


def _reason_text(reason_code: object) -> str:
    value = getattr(reason_code, "value", None)
    return f"{reason_code} (0x{value:02x})" if isinstance(value, int) else str(reason_code)


class MQTTLink:
    """A persistent-session MQTT client with its own reconnect loop.

    on_message(Incoming), on_published(mid), on_refused(mid, reason), on_connected(session_present) and
    on_disconnected(reason) are called from the network thread and must only hand work on.
    """

    def __init__(
        self,
        config: MQTTConfig,
        client_id: str,
        *,
        on_message: Callable[[Incoming], None] | None = None,
        on_published: Callable[[int], None] | None = None,
        on_refused: Callable[[int, str], None] | None = None,
        on_connected: Callable[[bool], None] | None = None,
        on_disconnected: Callable[[str], None] | None = None,
        will: Will | None = None,
        manual_ack: bool = False,
        receive_maximum: int | None = None,
        backoff_min_s: float = 0.5,
        backoff_max_s: float = 30.0,
    ) -> None:
        self.config = config
        self.client_id = client_id
        self.v5 = config.protocol == "5"
        self._on_message = on_message
        self._on_published = on_published
        self._on_refused = on_refused
        self._on_connected = on_connected
        self._on_disconnected = on_disconnected
        self.manual_ack = manual_ack and self.v5
        if receive_maximum is not None and not 1 <= receive_maximum <= 65535:
            raise ValueError("receive_maximum must be 1..65535")
        self.receive_maximum = receive_maximum if self.v5 else None
        self.backoff_min_s, self.backoff_max_s = backoff_min_s, backoff_max_s
        self.connected = threading.Event()
        self.subscribed = threading.Event()  # every subscription of this connection granted (see module doc)
        self.refused_subscriptions: list[str] = []  # filters the broker refused on this connection
        self.generation = 0  # connections made so far; Incoming.generation says which one delivered
        self.reconnects = 0
        self.refused = 0  # publishes the broker refused with a PUBACK reason code
        self._handed = self._answered = 0  # QoS 1 publishes handed to paho / answered by a PUBACK (see below)
        self.unread: deque[int] = deque(maxlen=UNREAD_KEPT)  # PUBACK 0x10 mids, newest last (module doc)
        self.last_error = ""
        self._attempt = 0
        self._refused = False
        self._refused_warned = -REFUSED_WARN_S
        self._lost_at: float | None = None  # when an established connection was lost (owners without on_disconnected)
        self._stop = threading.Event()
        self._closing = threading.Event()  # stop() asked for a clean DISCONNECT
        self._thread: threading.Thread | None = None
        self._subscriptions: list[tuple[str, int]] = []
        self._unanswered: dict[int, str] = {}  # SUBSCRIBE mid -> filter, until its SUBACK
        self._lock = threading.Lock()

        if self.v5:
            client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5,
                                 manual_ack=self.manual_ack)
        else:
            client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv311,
                                 clean_session=False)
        client.max_inflight_messages_set(MAX_INFLIGHT)
        username, password = credentials(config)
        if username:
            client.username_pw_set(username, password)
        if config.tls is not None or config.url.startswith("mqtts"):
            client.tls_set_context(tls_context(config))
        if will is not None:
            client.will_set(will.topic, will.payload, qos=will.qos, retain=will.retain)
        client.on_connect, client.on_disconnect = self._handle_connect, self._handle_disconnect
        client.on_message, client.on_publish = self._handle_message, self._handle_publish
        client.on_subscribe = self._handle_subscribe
        # paho writes from the caller's thread unless an external loop says it watches for writability; we
        # say so, and our own loop (select on the socket and on paho's wake-up pipe) does every write
        client.on_socket_register_write = _network_thread_writes
        self.client = client

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"mqtt-{self.client_id}", daemon=True)
        self._thread.start()

    def wait_connected(self, timeout: float) -> bool:
        return self.connected.wait(timeout)

    def stop(self, final: tuple[str, bytes] | None = None, timeout: float = 3.0) -> None:
        """Disconnect cleanly; `final` (topic, payload) is published retained first, e.g. status offline.
        A clean DISCONNECT means the broker does not publish the will."""
        if final is not None and self.connected.is_set():
            try:
                info = self.client.publish(final[0], final[1], qos=1, retain=True)
                info.wait_for_publish(timeout)
            except (RuntimeError, ValueError):
                pass
        self._closing.set()  # the network thread stops reconnecting
        if self.connected.is_set() and self._thread is not None:
            try:
                self.client.disconnect()  # queued: the network thread sends DISCONNECT, then its loop ends
            except Exception:  # noqa: BLE001 - already gone is fine
                pass
            self._thread.join(timeout)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _connect_properties(self) -> Properties | None:
        if not self.v5:
            return None
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self.config.session_expiry_s
        if self.receive_maximum is not None:
            props.ReceiveMaximum = self.receive_maximum
        return props

    def _say(self, attempt: int, level: int, message: str) -> None:
        """Record why we are not connected; log it on the first attempt and every tenth after."""
        self.last_error = message
        if attempt == 0 or attempt % 10 == 0:
            log.log(level, "%s (retrying with backoff)", message)

    def _run(self) -> None:
        attempt = 0
        first = True
        while not self._stop.is_set() and not self._closing.is_set():
            self._attempt = attempt
            self._refused = False
            try:
                if first:
                    kwargs = {"clean_start": False, "properties": self._connect_properties()} if self.v5 else {}
                    self.client.connect(self.config.host, self.config.port, self.config.keepalive_s, **kwargs)
                    first = False
                else:
                    self.reconnects += 1
                    self.client.reconnect()
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                self._say(attempt, logging.WARNING,
                          f"cannot reach MQTT broker at {self.config.host}:{self.config.port}: {exc}")
                self._sleep_backoff(attempt)
                attempt += 1
                continue
            generation = self.generation
            while not self._stop.is_set():
                rc = self.client.loop(timeout=0.2)
                if rc != mqtt.MQTT_ERR_SUCCESS:
                    break
            if self._stop.is_set() or self._closing.is_set():
                break
            if self.generation != generation:  # the broker accepted us this time: start the backoff over
                attempt = 0
            elif not self._refused:  # e.g. a TLS 1.3 broker rejecting our certificate after the handshake
                self._say(attempt, logging.WARNING,
                          f"the MQTT broker at {self.config.host}:{self.config.port} closed the connection "
                          f"before accepting it ({mqtt.error_string(rc)}); check mqtt.tls and the credentials")
            self._sleep_backoff(attempt)
            attempt += 1

    def _sleep_backoff(self, attempt: int) -> None:
        cap = min(self.backoff_max_s, self.backoff_min_s * (2 ** min(attempt, 16)))
        self._stop.wait(random.uniform(self.backoff_min_s / 2, max(cap, self.backoff_min_s / 2)))

    # -- operations ------------------------------------------------------------------------------------
    def subscribe(self, topic: str, qos: int = 1) -> None:
        """Subscribe now and again after every reconnect (a broker that lost our session forgot it)."""
        with self._lock:
            if (topic, qos) not in self._subscriptions:
                self._subscriptions.append((topic, qos))
        if self.connected.is_set():
            self._send_subscribe(self.client, topic, qos)

    def _send_subscribe(self, client: mqtt.Client, topic: str, qos: int) -> None:
        with self._lock:
            self.subscribed.clear()
            rc, mid = client.subscribe(topic, qos)
            if rc == mqtt.MQTT_ERR_SUCCESS and mid is not None:
                self._unanswered[mid] = topic

    def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> int | None:
        """Queue a publish; returns its mid, or None when not connected. Its PUBACK arrives via
        on_published (accepted) or on_refused (refused by reason code)."""
        if not self.connected.is_set():
            return None
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            return None
        self._handed += qos > 0
        return info.mid

    @property
    def unacknowledged(self) -> int:
        """Our QoS 1 publishes not answered by the broker yet: what a new publish queues behind."""
        return max(0, self._handed - self._answered)

    def ack(self, mid: int, qos: int = 1, generation: int | None = None) -> bool:
        """Acknowledge an incoming message (MQTT 5 with manual_ack only; call once per message). With
        `generation` (Incoming.generation) an ack for a message of an earlier connection is skipped: its
        mid may now name another message, and the broker redelivers the old one anyway."""
        if not self.manual_ack:
            return False
        if generation is not None and generation != self.generation:
            return False
        return self.client.ack(mid, qos) == mqtt.MQTT_ERR_SUCCESS

    def redeliver(self) -> None:
        """Drop the connection; the network thread makes it again at once, resuming the session: the broker
        sends every message not acknowledged yet again, and they no longer count against `receive_maximum`
        (MQTT has no negative acknowledgement: this is how a receiver gives messages back)."""
        if self.connected.is_set():
            try:
                self.client.disconnect()  # queued: the network thread sends DISCONNECT; _run reconnects
            except Exception:  # noqa: BLE001 - already gone: _run reconnects anyway
                pass

    # -- paho callbacks (network thread) ---------------------------------------------------------------
    def _handle_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._refused = True
            self._say(self._attempt, logging.ERROR, f"the MQTT broker refused the connection: {reason_code}; "
                      "check mqtt.username, the password and the broker's ACL")
            return
        sock = client.socket()
        if sock is not None and hasattr(sock, "setsockopt"):
            try:  # small messages must not wait for Nagle's algorithm (~40 ms a hop otherwise)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        with self._lock:
            subs = list(self._subscriptions)
            self._unanswered.clear()
            self.refused_subscriptions = []
            if not subs:
                self.subscribed.set()
        for topic, qos in subs:
            self._send_subscribe(client, topic, qos)
        self.generation += 1
        self.last_error = ""
        if self._lost_at is not None:
            log.warning("MQTT connection %s to %s:%d back after %.0f s", self.client_id, self.config.host,
                        self.config.port, time.monotonic() - self._lost_at)
            self._lost_at = None
        self.connected.set()
        self._guard(self._on_connected, bool(flags.session_present))

    def _handle_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        was = self.connected.is_set()
        self.connected.clear()
        self.subscribed.clear()
        if was and self._on_disconnected is None and not self._closing.is_set():  # an owner that listens says it
            self._lost_at = time.monotonic()
            log.warning("MQTT connection %s to %s:%d lost (%s); reconnecting with backoff", self.client_id,
                        self.config.host, self.config.port, reason_code)
        if was:
            self._guard(self._on_disconnected, str(reason_code))

    def _handle_message(self, client, userdata, message) -> None:
        try:
            incoming = Incoming(message.topic, bytes(message.payload), message.qos, bool(message.retain),
                                message.mid, self.generation, bool(message.dup))
        except Exception:  # noqa: BLE001 - e.g. a topic that is not UTF-8; paho's thread must survive it
            log.warning("dropped an incoming message whose topic cannot be decoded")
            if self.manual_ack and message.qos > 0:
                client.ack(message.mid, message.qos)  # nothing can ever handle it; do not have it redelivered
            return
        self._guard(self._on_message, incoming)

    def _handle_publish(self, client, userdata, mid, reason_code, properties) -> None:
        self._answered += 1
        if reason_code is not None and getattr(reason_code, "is_failure", False):
            self.refused += 1
            reason = _reason_text(reason_code)
            if self._on_refused is None:
                self._warn_refused(mid, reason)
                return
            try:
                self._on_refused(mid, reason)
            except Exception:  # noqa: BLE001 - never let an exception into paho's thread
                log.exception("MQTT callback failed")
            return
        if getattr(reason_code, "value", None) == NO_MATCHING_SUBSCRIBERS:
            self.unread.append(mid)
        self._guard(self._on_published, mid)

    def _handle_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        with self._lock:
            topic = self._unanswered.pop(mid, None)
            if topic is None:  # a SUBACK of an earlier connection
                return
            refused = [code for code in reason_codes if getattr(code, "is_failure", False)]
            if refused:
                self.refused_subscriptions.append(topic)
            elif not self._unanswered and not self.refused_subscriptions:
                self.subscribed.set()
        if refused:
            log.error("the MQTT broker refused the subscription to %s: %s; nothing published there reaches "
                      "this client (check the broker's ACL for %s)", topic, _reason_text(refused[0]),
                      self.client_id)

    def _warn_refused(self, mid: int, reason: str) -> None:
        """One warning per REFUSED_WARN_S at most, with how many refusals it stands for (an ACL that refuses
        a whole stream of messages must not flood the log)."""
        now = time.monotonic()
        if now - self._refused_warned < REFUSED_WARN_S:
            return
        log.warning("the broker refused message %d: %s (%d refused by this connection so far; check the broker's "
                    "ACL)", mid, reason, self.refused)
        self._refused_warned = now

    @staticmethod
    def _guard(callback, arg) -> None:
        if callback is None:
            return
        try:
            callback(arg)
        except Exception:  # noqa: BLE001 - never let an exception into paho's thread
            log.exception("MQTT callback failed")
