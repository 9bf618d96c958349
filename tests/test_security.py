"""The shipped Mosquitto configuration (deploy/mosquitto) with TLS, client certificates and the per-device ACL,
run for real: certificates made by the shipped script, the shipped config and ACL with only ports and paths
rewritten, our own MQTT client (shared.mqtt) on both sides. A device may act only as itself; a client without
a certificate or password gets nothing; credentials never reach the log."""

from __future__ import annotations

import asyncio
import getpass
import glob
import json
import logging
import queue
import secrets
import socket
import ssl
import subprocess
import time
import uuid

import cv2
import pytest
from conftest import CLOUD, DEPLOY, Mosquitto, free_port
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis
from edgetriage.shared.config import ConfigError, MQTTConfig, TLSConfig
from edgetriage.shared.ids import uuid7
from edgetriage.shared.mqtt import Incoming, MQTTLink, tls_context
from edgetriage.shared.protocol import Detection, Event, Verdict, decode_verdict, encode_event, encode_verdict
from edgetriage.shared.topics import Topics

pytestmark = pytest.mark.faults

TOPICS = Topics("edgetriage")  # the shipped ACL is written for the default prefix


class Client:
    """One MQTTLink with everything it reports collected."""

    def __init__(self, config: MQTTConfig, client_id: str, subscriptions: tuple[str, ...] = (), **kw) -> None:
        self.messages: queue.Queue[Incoming] = queue.Queue()
        self.acked: queue.Queue[int] = queue.Queue()
        self.refused: queue.Queue[tuple[int, str]] = queue.Queue()
        self.link = MQTTLink(config, client_id, on_message=self.messages.put, on_published=self.acked.put,
                             on_refused=lambda mid, reason: self.refused.put((mid, reason)),
                             backoff_min_s=0.2, backoff_max_s=1.0, **kw)
        for topic in subscriptions:
            self.link.subscribe(topic, 1)
        self.link.start()

    def published(self, mid: int | None, timeout: float = 5.0) -> str:
        """'acked' or the refusal reason for the publish `mid`."""
        assert mid is not None, "not connected"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                got = self.acked.get(timeout=0.05)
                if got == mid:
                    return "acked"
            except queue.Empty:
                pass
            try:
                got_mid, reason = self.refused.get_nowait()
                if got_mid == mid:
                    return reason
            except queue.Empty:
                pass
        raise AssertionError(f"no PUBACK for message {mid}")

    def topics_received(self, wait_s: float) -> list[str]:
        deadline = time.monotonic() + wait_s
        out = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return out
            try:
                out.append(self.messages.get(timeout=left).topic)
            except queue.Empty:
                return out

    def until(self, payload: bytes, timeout: float = 10.0) -> list[tuple[str, bytes]]:
        """(topic, payload) of every message received up to and including the first with `payload`."""
        deadline = time.monotonic() + timeout
        out = []
        while not out or out[-1][1] != payload:
            left = deadline - time.monotonic()
            assert left > 0, f"{payload!r} never arrived; got {out}"
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            out.append((message.topic, message.payload))
        return out

    def close(self) -> None:
        self.link.stop()


def _connected(client: Client, timeout: float = 10.0) -> Client:
    assert client.link.wait_connected(timeout), f"{client.link.client_id} could not connect: {client.link.last_error}"
    return client


def _refused(client: Client, topics: list[str], timeout: float = 10.0) -> None:
    """Until the broker has refused exactly these subscriptions of `client` (SUBACK "Not authorized")."""
    deadline = time.monotonic() + timeout
    while len(client.link.refused_subscriptions) < len(topics) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(client.link.refused_subscriptions) == sorted(topics)


def _verdict(device: str) -> bytes:
    return encode_verdict(Verdict(event_id=uuid7(), device=device, camera="door", label="person", verdict="benign",
                                  confidence=0.7, description="test", model="test", created_ms=int(time.time() * 1000)))


# -- identity: a device acts only as itself ---------------------------------------------------------------------
def test_device_cannot_publish_as_another_device(secure):
    cloud = _connected(Client(secure.mqtt(CLOUD), "cloud-1", ("$share/workers/edgetriage/v1/+/events",)))
    a = _connected(Client(secure.mqtt("cam-a"), "cam-a"))
    try:
        assert cloud.link.subscribed.wait(10), "the cloud's subscription was never granted"  # SUBACK: live
        assert a.published(a.link.publish(TOPICS.events("cam-a"), b"own")) == "acked"
        assert "Not authorized" in a.published(a.link.publish(TOPICS.events("cam-b"), b"forged"))
        assert "Not authorized" in a.published(a.link.publish(TOPICS.verdicts("cam-a"), b"self-answered"))
        assert "Not authorized" in a.published(a.link.publish(TOPICS.status("cam-b"), b"offline", retain=True))
        assert "Not authorized" in a.published(a.link.publish(TOPICS.cloud_load(), b'{"overloaded": true}'))
        assert a.link.refused == 4
        # a marker after the forged ones: one client's messages arrive in order, so anything forged that got
        # through would be in before it
        assert a.published(a.link.publish(TOPICS.events("cam-a"), b"marker")) == "acked"
        assert cloud.until(b"marker") == [(TOPICS.events("cam-a"), b"own"), (TOPICS.events("cam-a"), b"marker")]
    finally:
        a.close()
        cloud.close()


def test_device_cannot_read_another_devices_verdicts(secure):
    a = _connected(Client(secure.mqtt("cam-a"), "cam-a", (TOPICS.verdicts("cam-b"), TOPICS.all_verdicts(),
                                                             TOPICS.all_events(), "#", TOPICS.verdicts("cam-a"))))
    b = _connected(Client(secure.mqtt("cam-b"), "cam-b", (TOPICS.verdicts("cam-b"),)))
    cloud = _connected(Client(secure.mqtt(CLOUD), "cloud-1"))
    try:
        assert b.link.subscribed.wait(10), "a subscription was never granted"
        foreign = [TOPICS.verdicts("cam-b"), TOPICS.all_verdicts(), TOPICS.all_events(), "#"]
        _refused(a, foreign)  # the dynamic-security plugin refuses them at SUBACK (deploy/mosquitto/dynsec.py)
        assert (
            cloud.published(cloud.link.publish(TOPICS.events("cam-a"), b"x")) != "acked"
        )  # the cloud writes no events
        for_b, for_a = _verdict("cam-b"), _verdict("cam-a")
        assert cloud.published(cloud.link.publish(TOPICS.verdicts("cam-b"), for_b)) == "acked"
        assert cloud.published(cloud.link.publish(TOPICS.verdicts("cam-a"), for_a)) == "acked"
        marker = _verdict("cam-a")  # after both: what A would wrongly get of B's comes before it
        assert cloud.published(cloud.link.publish(TOPICS.verdicts("cam-a"), marker)) == "acked"
        assert b.until(for_b) == [(TOPICS.verdicts("cam-b"), for_b)]
        got_a = a.until(marker)
        assert {topic for topic, _ in got_a} == {TOPICS.verdicts("cam-a")}, got_a  # its own, through any filter
        assert for_a in {payload for _, payload in got_a}
    finally:
        for c in (a, b, cloud):
            c.close()


def test_a_refused_subscription_is_named_and_the_link_never_says_ready(tmp_path, caplog):
    """A subscription the broker refuses at SUBACK would otherwise be silence: no message ever, no error.
    Mosquitto's dynamic-security plugin refuses one (as EMQX and HiveMQ ACLs do; the acl_file plugin grants
    every subscription and filters on delivery): its admin user, as set up here, may subscribe to $CONTROL and
    $SYS only."""
    plugin = next(iter(glob.glob("/usr/lib/*/mosquitto_dynamic_security.so")), None)
    assert plugin, "Debian's mosquitto package ships the dynamic-security plugin"
    config = tmp_path / "dynsec.json"
    subprocess.run(["mosquitto_ctrl", "dynsec", "init", str(config), "admin", "admin-pw"], check=True,
                   capture_output=True)
    settings = json.loads(config.read_text())  # the admin role may subscribe to "#": take that away
    for role in settings["roles"]:
        role["acls"] = [a for a in role["acls"] if (a["acltype"], a["topic"]) != ("subscribePattern", "#")]
    config.write_text(json.dumps(settings))
    port = free_port()
    broker = Mosquitto(port, tmp_path / "broker", config_text=(
        f"listener {port} 127.0.0.1\nallow_anonymous false\nplugin {plugin}\nplugin_opt_config_file {config}\n"
        f"user {getpass.getuser()}\nlog_dest stderr\nlog_type error\n")).start()  # user: may read tmp_path
    caplog.set_level(logging.ERROR, logger="edgetriage.mqtt")
    mqtt = MQTTConfig(url=broker.url, username="admin", password="admin-pw")
    allowed = _connected(Client(mqtt, "allowed", ("$CONTROL/dynamic-security/v1/response",)))
    refused = _connected(Client(mqtt, "refused", ("$CONTROL/dynamic-security/v1/response", TOPICS.verdicts("cam-b"))))
    try:
        assert allowed.link.subscribed.wait(5), "a granted subscription sets `subscribed`"
        deadline = time.monotonic() + 5
        while not refused.link.refused_subscriptions and time.monotonic() < deadline:
            time.sleep(0.05)
        assert refused.link.refused_subscriptions == [TOPICS.verdicts("cam-b")]
        assert not refused.link.subscribed.is_set()
        assert f"refused the subscription to {TOPICS.verdicts('cam-b')}: Not authorized" in caplog.text
    finally:
        refused.close()
        allowed.close()
        broker.stop()


def test_last_will_and_clean_offline_under_the_acl(secure):
    """A device's retained status is its own to write: online, the will when it vanishes, offline when it
    stops cleanly; the cloud reads them all."""
    from edgetriage.shared.mqtt import Will

    watcher = _connected(Client(secure.mqtt(CLOUD), "cloud-1", ("edgetriage/v1/+/status",)))
    a = _connected(Client(secure.mqtt("cam-a"), "cam-a", will=Will(TOPICS.status("cam-a"), b"offline")))
    try:
        assert a.published(a.link.publish(TOPICS.status("cam-a"), b"online", retain=True)) == "acked"
        assert watcher.messages.get(timeout=5).payload == b"online"
        a.link.client.socket().close()  # gone without DISCONNECT: the broker publishes the will
        assert watcher.messages.get(timeout=10).payload == b"offline"
        a.close()
        b = _connected(Client(secure.mqtt("cam-a"), "cam-a", will=Will(TOPICS.status("cam-a"), b"offline")))
        b.published(b.link.publish(TOPICS.status("cam-a"), b"online", retain=True))
        assert watcher.messages.get(timeout=5).payload == b"online"
        b.link.stop(final=(TOPICS.status("cam-a"), b"offline"))  # clean stop: explicit offline, no will
        assert watcher.messages.get(timeout=5).payload == b"offline"
        assert watcher.topics_received(1.0) == []
    finally:
        watcher.close()


# -- who gets in at all --------------------------------------------------------------------------------------
def test_clients_without_a_certificate_or_password_are_refused(secure, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    # no client certificate on the certificate listener: the TLS handshake itself fails
    anonymous = Client(secure.mqtt(None), "anon-1")
    # a certificate from another CA, with a device's name
    other = tmp_path / "other-ca"
    subprocess.run(["sh", str(DEPLOY / "make-certs.sh"), str(other), "cam-a"], check=True, capture_output=True)
    forged_cfg = MQTTConfig(url=f"mqtts://127.0.0.1:{secure.tls_port}",
                            tls=TLSConfig(ca_file=secure.certs / "ca.crt", cert_file=other / "cam-a.crt",
                                          key_file=other / "cam-a.key"))
    forged = Client(forged_cfg, "cam-a")
    # the password listener without credentials, and with a wrong password
    no_password = Client(secure.mqtt(None, port=secure.password_port), "anon-2")
    wrong = "wrong-" + secrets.token_hex(8)
    wrong_password = Client(secure.mqtt(None, port=secure.password_port, username="cam-c", password=wrong), "cam-c")
    try:
        clients = (anonymous, forged, no_password, wrong_password)
        deadline = time.monotonic() + 15  # until each has been answered: refused (a connection clears the error)
        while not all(c.link.last_error for c in clients):
            assert time.monotonic() < deadline, [(c.link.client_id, c.link.last_error) for c in clients]
            time.sleep(0.05)
        for c in clients:
            assert not c.link.connected.is_set(), c.link.client_id
            assert c.link.last_error, c.link.client_id
        assert (
            "not authorized" in no_password.link.last_error.lower() or "bad user" in no_password.link.last_error.lower()
        )
        # plain MQTT on the TLS port gets no answer but a closed connection
        with socket.create_connection(("127.0.0.1", secure.tls_port), timeout=5) as s:
            s.sendall(bytes([0x10, 12, 0, 4]) + b"MQTT" + bytes([5, 2, 0, 30, 0, 0, 0]))
            s.settimeout(3)
            try:
                answer = s.recv(10)
            except ConnectionResetError:
                answer = b""
            assert answer == b""  # no CONNACK: closed, or reset
    finally:
        for c in (anonymous, forged, no_password, wrong_password):
            c.close()
    assert wrong not in caplog.text and secure.passwords["cam-c"] not in caplog.text


def test_password_login_from_the_environment_is_never_logged(secure, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("EDGETRIAGE_MQTT_USERNAME", "cam-c")
    monkeypatch.setenv("EDGETRIAGE_MQTT_PASSWORD", secure.passwords["cam-c"])
    config = secure.mqtt(None, port=secure.password_port)
    assert config.username is None and config.password is None  # nothing in the file
    c = _connected(Client(config, "cam-c"))
    try:
        assert c.link.client.socket().version() in ("TLSv1.2", "TLSv1.3")
        assert c.published(c.link.publish(TOPICS.events("cam-c"), b"own")) == "acked"
        assert "Not authorized" in c.published(c.link.publish(TOPICS.events("cam-a"), b"forged"))
    finally:
        c.close()
    assert secure.passwords["cam-c"] not in caplog.text
    assert secure.passwords["cam-c"] not in repr(config) and secure.passwords["cam-c"] not in str(
        MQTTConfig(password=secure.passwords["cam-c"])
    )


def test_tls_settings_that_cannot_work_are_config_errors(secure, tmp_path):
    ctx = tls_context(secure.mqtt("cam-a"))
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2 and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    with pytest.raises(ConfigError, match="ca_file"):
        tls_context(MQTTConfig(tls=TLSConfig(ca_file=tmp_path / "missing.crt")))
    with pytest.raises(ConfigError, match="key_file is not"):
        tls_context(MQTTConfig(tls=TLSConfig(ca_file=secure.certs / "ca.crt", cert_file=secure.certs / "cam-a.crt")))
    with pytest.raises(ConfigError, match="client certificate"):
        tls_context(MQTTConfig(tls=TLSConfig(ca_file=secure.certs / "ca.crt", cert_file=secure.certs / "cam-a.crt",
                                             key_file=secure.certs / "cam-b.key")))


# -- the whole path under the shipped config ------------------------------------------------------------------
@pytest.mark.slow
def test_event_and_verdict_round_trip_under_tls_and_acl(secure, llm_analyzer, visitor_crop, tmp_path):
    """A real event from device A through the cloud service (its own certificate, on the shared subscription
    with Redis) and back to A only; device B sees nothing of it."""
    crop = visitor_crop
    jpeg = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()
    now = int(time.time() * 1000)
    event = Event(
        event_id=uuid7(now),
        device="cam-a",
        camera="door",
        captured_ms=now,
        label="person",
        score=0.4,
        uncertain=True,
        track_id=1,
        detections=[Detection(label="person", score=0.4, box=(0.48, 0, 0.73, 0.93))],
        phash="0f0f33cc0f0f33cc",
        reason="uncertain",
        crop=jpeg,
        crop_size=(crop.shape[1], crop.shape[0]),
    )
    redis_prefix = f"test-sec-{uuid.uuid4().hex[:8]}"
    config = CloudConfig.model_validate({
        "mqtt": secure.mqtt(CLOUD, client_id="cloud-worker-1").model_dump(),
        "store_path": str(tmp_path / "cloud.db"), "http": {"enabled": False},
        "delivery": {"shared": True, "redis_url": "redis://127.0.0.1:6379/0", "redis_prefix": redis_prefix},
    })
    store = RedisStore(connect_redis("redis://127.0.0.1:6379/0"), redis_prefix)
    a = _connected(Client(secure.mqtt("cam-a"), "cam-a", (TOPICS.verdicts("cam-a"),)))
    b = _connected(Client(secure.mqtt("cam-b"), "cam-b", (TOPICS.verdicts("cam-b"), "#")))

    async def scenario() -> None:
        service = build_service(config, llm_analyzer, store)
        await service.start()
        try:
            assert await service.wait_connected(10)
            assert await asyncio.to_thread(service.publisher.link.subscribed.wait, 10), service.publisher.error
            assert await asyncio.to_thread(a.link.subscribed.wait, 10)
            await asyncio.to_thread(_refused, b, ["#"])  # b may not even listen to everything
            assert a.published(a.link.publish(TOPICS.events("cam-a"), encode_event(event))) == "acked"
            got = await asyncio.to_thread(a.messages.get, True, 120)
            verdict = decode_verdict(got.payload)
            assert (verdict.event_id, verdict.device) == (event.event_id, "cam-a")
            assert store.get_verdict(event.event_id) == verdict
        finally:
            await service.stop()

    try:
        asyncio.run(scenario())
        assert b.topics_received(0.5) == []
    finally:
        a.close()
        b.close()
        store.delete_all()
        store.close()
