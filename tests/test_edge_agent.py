"""The edge agent end to end on the device side: real frames from the sample clip through the real vision
pipeline and ONNX detector, the real SQLite outbox, a real Mosquitto on a free port. A paho client plays
the cloud: it reads events and answers with protocol v1 verdicts (the protocol peer, not the cloud service,
which is tested on its own).

Also here: the rules and the device verdict cache, which are pure logic and tested with real verdicts."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from edgetriage.edge.agent import EdgeAgent
from edgetriage.edge.config import CameraConfig, EdgeConfig, RulesConfig, load_edge_config
from edgetriage.edge.triage.rules import Rules
from edgetriage.edge.triage.verdict_cache import VerdictCache
from edgetriage.shared.config import ConfigError
from edgetriage.shared.ids import uuid7, uuid7_ms
from edgetriage.shared.protocol import Event, ReuseRule, Verdict, decode_event
from edgetriage.shared.topics import Topics
from edgetriage.shared.verdict_forms import encode_device_verdict
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

# The fourth visitor of the one-by-one clip (labels.json: 75-86 s at 10 fps): one confident track, emitted
# about 2.3 s in; 40 frames keep each run near 3 s on a small CPU.
SEGMENT_START = 740
SEGMENT_FRAMES = 40
PROMPT = "p1"


# -- the protocol peer ---------------------------------------------------------------------------------
class CloudPeer:
    """Subscribes to every device's events and answers each with a verdict carrying a reuse rule."""

    def __init__(self, url_port: int, prefix: str, *, reply: bool = True) -> None:
        self.topics = Topics(prefix)
        self.reply = reply
        self.events: queue.Queue[Event] = queue.Queue()
        self.received: list[Event] = []
        self._lock = threading.Lock()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"{prefix}-peer", protocol=mqtt.MQTTv5)
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.reconnect_delay_set(0.1, 0.5)
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 300  # like the cloud: events published while it reconnects are kept
        self.client.connect("127.0.0.1", url_port, clean_start=False, properties=props)
        self.client.loop_start()

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        client.subscribe(self.topics.all_events(), qos=1)

    def _on_message(self, client, userdata, msg) -> None:
        event = decode_event(bytes(msg.payload))
        with self._lock:
            self.received.append(event)
        self.events.put(event)
        if self.reply:
            self.answer(event)

    def answer(self, event: Event, source: str = "llm") -> None:
        verdict = Verdict(
            event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
            verdict="benign", confidence=0.8, description="a person standing by the shelves", model="peer",
            source=source, created_ms=int(time.time() * 1000),
            cache=ReuseRule(device=event.device, camera=event.camera, label=event.label, phash=event.phash,
                            prompt_version=PROMPT, max_distance=10, ttl_s=3600),
        )
        self.client.publish(self.topics.answers(event.device), encode_device_verdict(verdict), qos=1)

    def ids(self) -> list[str]:
        with self._lock:
            return [e.event_id for e in self.received]

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


@pytest.fixture
def peer(mosquitto, prefix):
    p = CloudPeer(mosquitto.port, prefix)
    yield p
    p.close()


def _config(tmp_path: Path, mosquitto, prefix: str, device: str = "edge-t1", **rules) -> EdgeConfig:
    return EdgeConfig.model_validate({
        "device": device,
        "mqtt": {"url": mosquitto.url, "prefix": prefix},
        "state_dir": str(tmp_path),
        "cameras": [{"id": "door", "start_frame": SEGMENT_START}],
        "rules": rules,
        # a message lost while a peer reconnects is re-sent after this, well inside the tests' waits
        "outbox": {"verdict_timeout_s": 10},
    })


@dataclass
class Seen:
    decisions: list
    verdicts: list


def _agent(config: EdgeConfig, detector) -> tuple[EdgeAgent, Seen]:
    seen = Seen([], [])
    agent = EdgeAgent(config, detector=detector,
                      on_decision=lambda ev, d, eid: seen.decisions.append((ev, d, eid)),
                      on_verdict=lambda v, ms: seen.verdicts.append((v, ms)))
    assert agent.delivery.link.wait_connected(10)
    return agent, seen


def _retained(port: int, topic: str, timeout: float = 5.0) -> bytes | None:
    got: queue.Queue[bytes] = queue.Queue()
    c = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    c.on_connect = lambda cl, *a: cl.subscribe(topic, 1)
    c.on_message = lambda cl, u, m: got.put(bytes(m.payload))
    c.connect("127.0.0.1", port)
    c.loop_start()
    try:
        return got.get(timeout=timeout)
    except queue.Empty:
        return None
    finally:
        c.loop_stop()
        c.disconnect()


# -- end to end ------------------------------------------------------------------------------------------
def test_escalated_event_reaches_the_broker_and_its_verdict_completes_it(tmp_path, mosquitto, prefix, peer,
                                                                         detector):
    config = _config(tmp_path, mosquitto, prefix)
    agent, seen = _agent(config, detector)
    try:
        agent.run_source(config.cameras[0], max_frames=SEGMENT_FRAMES)
        escalated = [eid for _, d, eid in seen.decisions if d.kind == "escalate"]
        assert escalated, f"no escalation from a segment with a visitor: {[d for _, d, _ in seen.decisions]}"
        assert agent.wait_idle(30)

        assert sorted(peer.ids()) == sorted(escalated)
        assert agent.delivery.outbox.depth() == {"pending": 0, "inflight": 0, "sent": 0, "bytes": 0}
        assert agent.stats.escalated == len(escalated) == agent.stats.verdicts_llm
        assert sorted(v.event_id for v, _ in seen.verdicts) == sorted(escalated)
        assert all(ms is not None and 0 <= ms < 30_000 for _, ms in seen.verdicts)
        assert set(agent.delivery.verdict_counts.values()) == {1}
        assert agent.stats.frames_read == SEGMENT_FRAMES and agent.stats.detect_ms
        # the detector's time is measured once, by the pipeline; the agent's figure is that same series
        assert list(agent.stats.detect_ms) == agent.pipelines["door"].stats.detect_ms.since(0)

        event = peer.received[0]
        ev, decision, _ = next(x for x in seen.decisions if x[2] == event.event_id)
        assert (event.device, event.camera, event.track_id, event.label) == ("edge-t1", "door", ev.track_id, "person")
        assert event.crop == ev.crop_jpeg and event.phash == ev.phash and event.reason == decision.reason
        assert event.crop_box is not None and event.crop_box == pytest.approx(ev.crop_box)  # where it was cut
        # the track's time, never later than the decision (uuid7 carries it): a clip read fast runs ahead
        assert event.captured_ms == min(ev.captured_ms, uuid7_ms(event.event_id)) and len(event.detections) >= 1

        # the device announces itself
        assert _retained(mosquitto.port, Topics(prefix).status("edge-t1")) == b"online"

        # a garbage verdict is counted, not fatal; a repeat is counted per event id; a verdict for an event
        # answered elsewhere (not in this outbox) is still cached
        peer.client.publish(Topics(prefix).answers("edge-t1"), b'\x82\xa1v\x01\xa8event_id\x03', qos=1)
        peer.answer(event)
        other = event.model_copy(update={"event_id": uuid7(), "phash": "0123456789abcdef"})
        peer.answer(other)
        deadline = time.monotonic() + 5
        while agent.stats.verdicts_unmatched == 0 and time.monotonic() < deadline:
            agent.pump()
            time.sleep(0.05)
        assert agent.stats.verdicts_invalid == 1
        assert agent.stats.verdicts_duplicate == 1 and agent.delivery.verdict_counts[event.event_id] == 2
        assert agent.stats.verdicts_unmatched == 1 and agent.stats.verdicts_llm == len(escalated)
        assert agent.cache.lookup(device="edge-t1", camera="door", site=None, label="person",
                                  phash="0123456789abcdef", now_ms=int(time.time() * 1000)) is not None
    finally:
        agent.close()
    assert _retained(mosquitto.port, Topics(prefix).status("edge-t1")) == b"offline"


def test_near_identical_crop_is_answered_from_the_device_cache(tmp_path, mosquitto, prefix, peer, detector):
    config = _config(tmp_path, mosquitto, prefix)
    agent, seen = _agent(config, detector)
    try:
        agent.run_source(config.cameras[0], max_frames=SEGMENT_FRAMES)
        assert agent.wait_idle(30)
        first = list(peer.ids())
        assert first and len(agent.cache) >= 1

        # the same visitor again from two frames later: the pipeline picks its crop from the same moment, so
        # the device must answer from the verdict it received instead of asking again
        again = CameraConfig(id="door", start_frame=SEGMENT_START + 2)
        n, published = len(seen.decisions), agent.stats.published
        agent.run_source(again, max_frames=SEGMENT_FRAMES)
        assert agent.wait_idle(5)
        second = seen.decisions[n:]
        assert second and all(d.kind == "cached" for _, d, _ in second if d.kind != "dropped"), \
            [(d.kind, d.reason) for _, d, _ in second]
        cached = [d for _, d, _ in second if d.kind == "cached"]
        assert cached and {d.verdict.event_id for d in cached} <= set(first)
        assert agent.stats.verdicts_device_cache == len(cached)
        # nothing new left the device (every publish is counted when it is handed to MQTT)
        assert agent.stats.published == published and len(agent.delivery.outbox) == 0 and peer.ids() == first
    finally:
        agent.close()


@pytest.mark.faults
def test_event_escalated_while_the_broker_is_down_is_delivered_when_it_returns(tmp_path, mosquitto, prefix,
                                                                                peer, detector):
    config = _config(tmp_path, mosquitto, prefix)
    agent, seen = _agent(config, detector)
    try:
        mosquitto.stop()
        agent.run_source(config.cameras[0], max_frames=SEGMENT_FRAMES)
        escalated = [eid for _, d, eid in seen.decisions if d.kind == "escalate"]
        assert escalated and agent.delivery.outbox.depth()["pending"] == len(escalated)
        assert agent.stats.published == 0

        mosquitto.start()
        assert agent.wait_idle(60), agent.delivery.outbox.depth()
        assert sorted(set(peer.ids())) == sorted(escalated)
        assert agent.stats.verdicts_llm == len(escalated)
        assert set(agent.delivery.verdict_counts.values()) == {1}
    finally:
        agent.close()


@pytest.mark.faults
def test_restarted_agent_resends_an_unanswered_event_with_the_same_id(tmp_path, mosquitto, prefix, peer,
                                                                       detector):
    config = _config(tmp_path, mosquitto, prefix)
    peer.reply = False
    agent, seen = _agent(config, detector)
    try:
        agent.run_source(config.cameras[0], max_frames=SEGMENT_FRAMES)
        escalated = sorted(eid for _, d, eid in seen.decisions if d.kind == "escalate")
        assert escalated
        deadline = time.monotonic() + 10
        while agent.delivery.outbox.depth()["sent"] < len(escalated) and time.monotonic() < deadline:
            agent.pump()
            time.sleep(0.05)
        assert agent.delivery.outbox.depth()["sent"] == len(escalated)  # PUBACKed, no verdict
        assert sorted(peer.ids()) == escalated
    finally:
        agent.close()

    peer.reply = True
    agent, seen = _agent(config, detector)  # same outbox db
    try:
        assert agent.wait_idle(30)
        ids = peer.ids()
        assert sorted(ids[len(escalated):]) == escalated  # sent again, same ids
        assert agent.stats.republished == len(escalated)
        assert sorted(v.event_id for v, _ in seen.verdicts) == escalated
        assert all(ms is not None and ms >= 0 for _, ms in seen.verdicts)
    finally:
        agent.close()


# -- rules -------------------------------------------------------------------------------------------------
@dataclass
class Track:
    label: str
    score: float
    uncertain: bool = False
    camera: str = ""
    zones: tuple[str, ...] = ()
    dwell_s: float | None = None
    captured_ms: int = 0
    classification: object | None = None
    visit: str = ""
    detections: tuple = ()


def _verdict(phash: str = "0f0f0f0f0f0f0f0f", *, prompt: str = PROMPT, created_ms: int, ttl_s: int = 3600,
             scope: str = "camera", site: str | None = None, camera: str = "door", label: str = "person",
             max_distance: int = 10, verdict: str = "benign") -> Verdict:
    return Verdict(event_id=uuid7(created_ms), device="edge-1", camera=camera, label=label, verdict=verdict,
                   confidence=0.9, description="d", model="m", created_ms=created_ms,
                   cache=ReuseRule(scope=scope, device="edge-1", camera=camera, site=site, label=label,
                                   phash=phash, prompt_version=prompt, max_distance=max_distance, ttl_s=ttl_s))


def test_rules_apply_in_order():
    rules = Rules(RulesConfig())
    v = _verdict(created_ms=1)
    assert rules.decide(Track("car", 0.9), v).kind == "local"
    assert rules.decide(Track("person", 0.1), v).kind == "dropped"
    assert rules.decide(Track("person", 0.31), v).kind == "cached"
    d = rules.decide(Track("person", 0.31), None)
    assert (d.kind, d.reason) == ("escalate", "uncertain score 0.31")
    assert rules.decide(Track("person", 0.9), None).kind == "escalate"
    wide = Rules(RulesConfig(min_score=0.3, uncertain_band=(0.1, 0.5)))
    assert wide.decide(Track("person", 0.15), None).kind == "escalate"  # under min_score, but in the band
    assert wide.decide(Track("person", 0.05), None).kind == "dropped"
    quiet = Rules(RulesConfig(escalate=False))
    assert quiet.decide(Track("person", 0.9), None).kind == "local"
    assert quiet.decide(Track("person", 0.4), None).kind == "escalate"
    assert quiet.decide(Track("person", 0.9), v).verdict is v


def test_edge_config_defaults_and_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGETRIAGE_STATE", str(tmp_path / "st"))
    config = load_edge_config(None)
    assert config.outbox.path == str(tmp_path / "st" / "outbox.db")
    assert Path(config.cameras[0].source).is_file()
    bad = tmp_path / "edge.toml"
    bad.write_text('device = "edge-1"\n[rules]\nuncertain_bnd = [0.1, 0.2]\n')
    with pytest.raises(ConfigError, match="rules.uncertain_bnd: unknown key"):
        load_edge_config(bad)
    bad.write_text('[[cameras]]\nid = "a"\n[[cameras]]\nid = "a"\n')
    with pytest.raises(ConfigError, match="repeated: a"):
        load_edge_config(bad)


# -- the device verdict cache ------------------------------------------------------------------------------
NOW = 1_700_000_000_000
KEY = dict(device="edge-1", camera="door", site=None, label="person", phash_alg="dct64")


def test_cache_answers_within_distance_and_ttl_only():
    cache = VerdictCache(16)
    v = _verdict("0f0f0f0f0f0f0f0f", created_ms=NOW, ttl_s=60)
    assert cache.add(v, NOW + 100)
    assert cache.lookup(**KEY, phash="0f0f0f0f0f0f0f0f", now_ms=NOW + 1000) is v
    assert cache.lookup(**KEY, phash="0f0f0f0f0f0f03ff", now_ms=NOW + 1000) is v  # 6 bits away
    assert cache.lookup(**KEY, phash="f0f0f0f0f0f0f0f0", now_ms=NOW + 1000) is None  # 64 bits away
    assert cache.lookup(**{**KEY, "camera": "yard"}, phash="0f0f0f0f0f0f0f0f", now_ms=NOW + 1000) is None
    assert cache.lookup(**{**KEY, "label": "car"}, phash="0f0f0f0f0f0f0f0f", now_ms=NOW + 1000) is None
    assert cache.lookup(**KEY, phash="0f0f0f0f0f0f0f0f", now_ms=NOW + 61_000) is None  # expired
    assert len(cache) == 0
    assert not cache.add(_verdict(created_ms=NOW).model_copy(update={"cache": None}), NOW)


def test_cache_prefers_the_closest_and_respects_site_scope_and_device_cap():
    cache = VerdictCache(16, max_distance=6)
    far = _verdict("0f0f0f0f0f0f003f", created_ms=NOW)  # 6 bits from the query
    near = _verdict("0f0f0f0f0f0f0f0e", created_ms=NOW + 1, verdict="alert")  # 1 bit
    wide = _verdict("ffffffffffffffff", created_ms=NOW + 2, max_distance=32)  # 32 bits: over the device cap
    for v in (far, near, wide):
        assert cache.add(v, NOW + 10)
    assert cache.lookup(**KEY, phash="0f0f0f0f0f0f0f0f", now_ms=NOW + 20) is near
    site = _verdict("aaaaaaaaaaaaaaaa", created_ms=NOW + 3, scope="site", site="shop", camera="yard")
    assert cache.add(site, NOW + 10)
    assert cache.lookup(**KEY, phash="aaaaaaaaaaaaaaaa", now_ms=NOW + 20) is None  # no site given
    assert cache.lookup(**{**KEY, "site": "shop"}, phash="aaaaaaaaaaaaaaaa", now_ms=NOW + 20) is site


def test_cache_forgets_older_prompt_versions_and_evicts_least_recently_used():
    cache = VerdictCache(3)
    old = _verdict("0000000000000000", prompt="p1", created_ms=NOW)
    assert cache.add(old, NOW)
    new = _verdict("ffffffffffffffff", prompt="p2", created_ms=NOW + 5)
    assert cache.add(new, NOW + 5)
    assert cache.lookup(**KEY, phash="0000000000000000", now_ms=NOW + 10) is None  # p1 answers are gone
    late = _verdict("0000000000000001", prompt="p1", created_ms=NOW + 1)  # made before p2, arrives after
    assert not cache.add(late, NOW + 11)

    a = _verdict("1111111111111111", prompt="p2", created_ms=NOW + 6)
    b = _verdict("2222222222222222", prompt="p2", created_ms=NOW + 7)
    assert cache.add(a, NOW + 12) and cache.add(b, NOW + 12)
    assert len(cache) == 3
    assert cache.lookup(**KEY, phash="ffffffffffffffff", now_ms=NOW + 13) is new  # touch: now most recent
    c = _verdict("3333333333333333", prompt="p2", created_ms=NOW + 8)
    assert cache.add(c, NOW + 14)
    assert len(cache) == 3 and cache.evicted == 1
    assert cache.lookup(**KEY, phash="1111111111111111", now_ms=NOW + 15) is None  # a was least recent
    assert cache.lookup(**KEY, phash="ffffffffffffffff", now_ms=NOW + 15) is new
