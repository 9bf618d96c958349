"""What people and their tools read: the topics offered to subscribers carry small readable JSON (no embedding,
no image bytes; thumbnails on a topic of their own) while the device gets its whole verdict; `edgetriage watch`
prints the live stream in words; `edgetriage cloud page-link` mints a page link, which only a sign-in spends.
Real Mosquitto, the real cloud service (MQTT intake, API, page, Home Assistant bridge) with a fixed model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import paho.mqtt.client as mqtt
import pytest
import requests
from edgetriage.broker import free_port
from edgetriage.cloud.config import CloudConfig, HomeAssistantConfig
from edgetriage.demo import CloudThread
from edgetriage.shared.protocol import encode_event
from edgetriage.shared.topics import Topics
from edgetriage.shared.verdict_forms import decode_device_verdict
from fixed_model import FixedDelayModel, noise_events
from test_ha import Watch

DEVICE = "porch-9"


@pytest.fixture
def cloud(mosquitto, prefix, tmp_path):
    config = CloudConfig.model_validate({"mqtt": {"url": mosquitto.url, "prefix": prefix},
                                         "store_path": str(tmp_path / "cloud.db"), "http": {"port": 0}})
    thread = CloudThread(config, FixedDelayModel(0.05, 1), free_port(), ha=HomeAssistantConfig(
        discovery_prefix=f"{prefix}-ha"))
    thread.start()
    assert thread.service.publisher.subscribed or _until(lambda: thread.service.publisher.subscribed, 10)
    try:
        yield thread
    finally:
        thread.stop()


def _until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _event(seed: int = 3):
    event = noise_events(DEVICE, 1, seed=seed)[0]
    return event.model_copy(update={"embedding": bytes(range(256)), "zones": ["door"], "direction": "left"})


def _send(port: int, prefix: str, event) -> None:
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        client.publish(Topics(prefix).events(event.device), encode_event(event), qos=1).wait_for_publish(10)
    finally:
        client.disconnect()
        client.loop_stop()


def test_subscriber_topics_carry_small_json_and_the_device_gets_the_whole_verdict(mosquitto, prefix, cloud):
    watch = Watch(mosquitto.port, f"{prefix}/#", f"{prefix}-ha/#")
    event = _event()
    topics = Topics(prefix)
    _send(mosquitto.port, prefix, event)
    thumb_topic = f"{prefix}/ha/{DEVICE}/door/thumbnail"
    want = {topics.verdicts(DEVICE), thumb_topic, f"{prefix}/ha/{DEVICE}/door/verdict"}
    assert watch.wait_until(lambda msgs: want <= {t for t, p, _ in msgs if p}, 15), [t for t, _, _ in watch.messages]
    seen = watch.seen()

    binary = {topics.events(DEVICE), topics.answers(DEVICE), thumb_topic}  # README: the binary topics
    for topic, (payload, _) in seen.items():
        if topic in binary or not payload:
            continue
        text = payload.decode("utf-8")  # readable: every other topic is text
        assert "embedding" not in text and "/9j/" not in text, (topic, text[:200])  # no embedding, no JPEG base64
        if text not in ("ON", "OFF", "online", "offline"):
            json.loads(text)
    verdict = json.loads(seen[topics.verdicts(DEVICE)][0])
    assert verdict["event_id"] == event.event_id and verdict["description"] == "a visitor"
    assert len(seen[topics.verdicts(DEVICE)][0]) < 1024 and "embedding" not in verdict["cache"]
    assert seen[thumb_topic][0] == event.crop  # the picture only on a topic of its own
    assert not any(event.crop[:64] in p for t, (p, _) in seen.items() if t not in (thumb_topic, topics.events(DEVICE)))
    # the device's own form keeps what its cache reuses by: the rule with the embedding
    assert topics.answers(DEVICE) in seen, sorted(seen)
    device = decode_device_verdict(seen[topics.answers(DEVICE)][0])
    assert device.event_id == event.event_id and device.cache is not None
    assert device.cache.embedding == event.embedding
    watch.client.disconnect()
    watch.client.loop_stop()


def _watch(*args: str) -> tuple[subprocess.Popen, threading.Event]:
    """`edgetriage watch ARGS --count 2`, and an event set once it says it is watching (subscribed)."""
    proc = subprocess.Popen([sys.executable, "-m", "edgetriage", "watch", *args, "--count", "2", "--seconds", "40"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = threading.Event()

    def wait_ready() -> None:
        for line in proc.stderr:
            if line.startswith("watching"):
                ready.set()

    threading.Thread(target=wait_ready, daemon=True).start()
    return proc, ready


def test_watch_prints_an_event_and_its_verdict_in_words(mosquitto, prefix, cloud):
    plain, plain_ready = _watch("--broker", mosquitto.url, "--prefix", prefix)
    as_json, json_ready = _watch("--broker", mosquitto.url, "--prefix", prefix, "--json")
    try:
        assert plain_ready.wait(20) and json_ready.wait(20), "watch never said it was watching"
        event = _event(seed=5)
        _send(mosquitto.port, prefix, event)
        out, _ = plain.communicate(timeout=40)
        jout, _ = as_json.communicate(timeout=40)
    finally:
        for proc in (plain, as_json):
            if proc.poll() is None:
                proc.kill()
    assert plain.returncode == 0 and as_json.returncode == 0
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.isprintable() for line in lines), out
    ev, verdict = lines
    tail = "#" + event.event_id[-6:]
    for part in (f"{DEVICE}/door", "person 0.40", "escalated", tail, "uncertain", "zones door", "left"):
        assert part in ev, (part, ev)
    for part in (f"{DEVICE}/door", "person", "benign 0.80 (model, +", tail, "a visitor"):
        assert part in verdict, (part, verdict)
    assert ev[:8].count(":") == 2 and verdict[:8].count(":") == 2  # HH:MM:SS first
    records = [json.loads(line) for line in jout.splitlines()]
    assert [r["kind"] for r in records] == ["event", "verdict"]
    assert records[0]["event_id"] == records[1]["event_id"] == event.event_id
    assert records[0]["crop_bytes"] == len(event.crop) and "crop" not in records[0] and "embedding" not in records[0]
    assert records[1]["verdict"] == "benign" and "embedding" not in jout


@pytest.mark.faults
def test_watch_reads_the_shipped_broker_with_the_clouds_certificate(secure, tmp_path):
    """The shipped ACL and TLS: `watch --config cloud.toml` (the cloud's [mqtt] section) reads the events and
    verdicts of every device."""
    import asyncio

    from conftest import CLOUD
    from edgetriage.cloud.main import serve
    from edgetriage.shared.mqtt import MQTTLink

    shipped = secure.mqtt(CLOUD)
    tls = "\n".join(f'{k} = "{getattr(shipped.tls, k)}"' for k in ("ca_file", "cert_file", "key_file"))
    toml = tmp_path / "cloud.toml"
    toml.write_text(f'store_path = "{tmp_path / "cloud.db"}"\n[http]\nport = {free_port()}\n'
                    f'[mqtt]\nurl = "{shipped.url}"\n[mqtt.tls]\n{tls}\n')
    config = CloudConfig.model_validate({"mqtt": shipped.model_dump(mode="json", exclude_none=True),
                                         "store_path": str(tmp_path / "cloud.db"), "http": {"port": free_port()}})
    proc, ready = _watch("--config", str(toml))
    device = MQTTLink(secure.mqtt("cam-a"), "cam-a")
    device.start()
    event = noise_events("cam-a", 1, seed=11)[0]

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(serve(config, backend=FixedDelayModel(0.05, 1), stop=stop))
        try:
            assert await asyncio.to_thread(device.wait_connected, 10), device.last_error
            assert await asyncio.to_thread(ready.wait, 20), "watch never said it was watching"
            await asyncio.sleep(2.0)  # the service connects and subscribes
            assert device.publish(Topics("edgetriage").events("cam-a"), encode_event(event)) is not None
            await asyncio.to_thread(proc.wait, 40)
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)

    try:
        asyncio.run(scenario())
        out = proc.stdout.read()
    finally:
        device.stop()
        if proc.poll() is None:
            proc.kill()
    lines = out.splitlines()
    assert proc.returncode == 0 and len(lines) == 2, out
    assert "cam-a/door" in lines[0] and "escalated" in lines[0] and "benign 0.80" in lines[1], lines


def _page_link(base: str, token: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "EDGETRIAGE_API_URL": base}
    env.pop("EDGETRIAGE_API_TOKEN", None)
    if token is not None:
        env["EDGETRIAGE_API_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "edgetriage", "cloud", "page-link"], env=env, capture_output=True,
                          text=True, timeout=60)


def test_page_link_command_mints_a_working_link_for_the_operator_only(cloud):
    base, token = cloud.base_url, cloud.auth.admin_token
    done = _page_link(base, token)
    assert done.returncode == 0, done.stderr
    link = done.stdout.strip()
    assert link.startswith(f"{base}/ui/?ticket=") and "works once" in done.stderr
    with requests.Session() as browser:
        page = browser.get(link, timeout=10)  # follows the redirect with its cookie: signed in
        assert page.status_code == 200 and "static/app.js" in page.text
        assert browser.get(f"{base}/ui/state", timeout=10).status_code == 200
    assert requests.get(link, timeout=10).status_code == 403  # spent by that sign-in
    again = _page_link(base, token)
    assert again.returncode == 0 and again.stdout.strip() not in ("", link)  # a fresh one each time

    assert _page_link(base, None).returncode == 2  # no token: one line, exit 2
    refused = _page_link(base, "not-the-token")
    assert refused.returncode == 1 and "401" in refused.stderr
    assert requests.post(f"{base}/v1/page-link", timeout=10).status_code == 401


def test_a_failed_load_does_not_spend_the_link(cloud):
    link, base = cloud.page_link(), cloud.base_url
    # the first load fails on the way: its answer, and the cookie in it, never reach the browser
    assert requests.get(link, allow_redirects=False, timeout=10).status_code == 303
    with requests.Session() as browser:
        page = browser.get(link, timeout=10)  # the same link again: signed in
        assert page.status_code == 200 and "static/app.js" in page.text
    assert requests.get(link, timeout=10).status_code == 403  # now it is spent

    # two loads of one link: the first session used signs in, the other one opens nothing
    link = cloud.page_link()
    first, second = requests.Session(), requests.Session()
    assert first.get(link, allow_redirects=False, timeout=10).status_code == 303
    assert second.get(link, allow_redirects=False, timeout=10).status_code == 303
    assert second.get(f"{base}/ui/", timeout=10).status_code == 200
    assert first.get(f"{base}/ui/", timeout=10).status_code == 401


def test_the_json_form_goes_only_where_someone_reads_it(mosquitto, prefix, cloud):
    """The broker says a `verdicts` topic has no subscriber (MQTT 5 PUBACK 0x10): that device's next verdicts go
    to its `answers` only, for UNREAD_S; a subscriber that comes gets the JSON form from then on. The device
    gets every answer all along."""
    from edgetriage.cloud.broker.publisher import UNREAD_S

    topics = Topics(prefix)
    device = Watch(mosquitto.port, topics.answers(DEVICE))
    events = noise_events(DEVICE, 4, seed=11)
    stats = cloud.service.stats

    def answered(n: int) -> bool:
        return device.wait_until(lambda msgs: len({decode_device_verdict(p).event_id for _, p, _ in msgs}) >= n, 15)

    try:
        _send(mosquitto.port, prefix, events[0])
        assert answered(1)
        time.sleep(0.3)  # its JSON form's PUBACK: nobody subscribes to the verdicts topic
        _send(mosquitto.port, prefix, events[1])
        assert answered(2)
        assert stats.json_unread == 1 and stats.published == 2
        reader = Watch(mosquitto.port, topics.verdicts(DEVICE))
        try:
            time.sleep(UNREAD_S + 0.1)
            for event in events[2:]:
                _send(mosquitto.port, prefix, event)
            assert answered(4)
            assert reader.wait_until(lambda msgs: {json.loads(p)["event_id"] for _, p, _ in msgs}
                                     == {e.event_id for e in events[2:]}, 15)
            assert stats.json_unread == 1
        finally:
            reader.close()
    finally:
        device.close()


def test_both_forms_come_from_one_encoding_and_are_the_bytes_each_encoder_makes():
    """cloud.broker.publisher cuts the device's MessagePack and the subscribers' JSON from one dump of the verdict
    (shared.verdict_forms.Forms): the same bytes as each form's own encoder, for a verdict with every optional
    part (a reuse rule with its embedding, which the JSON leaves out; facts; words beyond ASCII; small floats)."""
    from edgetriage.shared.protocol import FeedbackMark, ReuseRule, Timings, Verdict
    from edgetriage.shared.verdict_forms import Forms, encode_device_verdict, encode_public_verdict

    rule = ReuseRule(device=DEVICE, camera="door", label="person", phash="8f3a6b1c2d4e5f60", prompt_version="p-1",
                     embedding=bytes(range(256)), ttl_s=3600)
    base = {"event_id": "01a25170-a862-73a0-bf0e-f156783e7612", "device": DEVICE, "camera": "door",
            "label": "person", "verdict": "alert", "confidence": 1.0, "model": "large: m", "created_ms": 1,
            "description": "Zoë at the “door”, 1e-7 s", "timings": Timings(queue_ms=1e-7, total_ms=12.345678901)}
    verdicts = [Verdict(**base), Verdict(**base, cache=rule, facts=["Person: yes (0.91)."], provisional=True),
                Verdict(**base, cache=rule.model_copy(update={"embedding": None}), routed_by="large_busy",
                        feedback=FeedbackMark(by="operator", was="benign", at_ms=5, note="the cleaner"))]
    for verdict in verdicts:
        forms = Forms(verdict)
        assert forms.public() == encode_public_verdict(verdict) and b"embedding\"" not in forms.public()
        assert forms.device() == encode_device_verdict(verdict)
