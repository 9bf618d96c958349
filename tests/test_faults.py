"""Nothing is lost, nothing is analysed twice: the delivery guarantees under real faults.

Real processes on loopback: a Mosquitto of each test's own (killed with SIGKILL and restarted where the test
says so), the device as a separate process running the real EdgeAgent with its SQLite outbox (a small driver
fed real crops from the sample clip through `EdgeAgent.decide`, as the vision pipeline would), the cloud
either in this process with the real LLM (loaded once per session) or as `edgetriage cloud run` processes,
Redis on 127.0.0.1:6379 under a key prefix of each test's own (deleted afterwards).

Also here: the state several workers share (RedisStore, claims) against the real Redis, and the outbox's
full-policy with priorities against the real SQLite file."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import pytest
from conftest import Mosquitto, free_port
from edgetriage.cloud.analysis import ThreadedBackend
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.storage.claims import RedisClaims, SQLiteClaims
from edgetriage.cloud.storage.redis_store import RedisStore, connect_redis
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.edge.delivery.outbox import Outbox
from edgetriage.edge.vision.crops import phash_dct64
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.ids import uuid7
from edgetriage.shared.mqtt import MQTTLink
from edgetriage.shared.protocol import (
    Detection,
    Event,
    ReuseRule,
    Verdict,
    decode_verdict,
    encode_event,
)
from edgetriage.shared.topics import Topics

pytestmark = pytest.mark.faults

REDIS_URL = "redis://127.0.0.1:6379/0"
DEVICE = "porch-1"
BOX = (370, 0, 560, 400)  # where each visitor of the one-by-one clip stands (768x432 frames)
# seconds into the one-by-one clip with a person in view (labels.json visits), one crop each
VISIT_TIMES = (8, 12, 16, 26, 32, 40, 55, 62, 68, 78, 84, 96, 105, 112, 127, 132)


# -- real crops ------------------------------------------------------------------------------------------------
def _frames(clip: Path, times: tuple[float, ...]) -> list:
    cap = cv2.VideoCapture(str(clip))
    out = []
    try:
        for t in times:
            cap.set(cv2.CAP_PROP_POS_MSEC, t * 1000)
            ok, frame = cap.read()
            assert ok, f"cannot read {clip} at {t}s"
            out.append(frame)
    finally:
        cap.release()
    return out


@pytest.fixture(scope="module")
def crops(clip_one_by_one, tmp_path_factory) -> Path:
    """crops.json: visitor crops with distinct perceptual hashes, and whole frames (big events) too."""
    folder = tmp_path_factory.mktemp("crops")
    index: dict[str, list[dict]] = {"visitors": [], "frames": []}
    seen: set[str] = set()
    frames = _frames(clip_one_by_one, VISIT_TIMES)
    x1, y1, x2, y2 = BOX
    for t, frame in zip(VISIT_TIMES, frames, strict=True):
        crop = frame[y1:y2, x1:x2]
        phash = phash_dct64(crop)
        if phash in seen:
            continue
        seen.add(phash)
        path = folder / f"visitor-{t}.jpg"
        path.write_bytes(cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes())
        index["visitors"].append({"path": str(path), "phash": phash, "size": [crop.shape[1], crop.shape[0]]})
        path = folder / f"frame-{t}.jpg"
        path.write_bytes(cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes())
        index["frames"].append(
            {"path": str(path), "phash": phash_dct64(frame), "size": [frame.shape[1], frame.shape[0]]}
        )
    assert len(index["visitors"]) >= 10
    (folder / "crops.json").write_text(json.dumps(index))
    return folder / "crops.json"


# -- the device: a real EdgeAgent in a process of its own ------------------------------------------------------
DRIVER = r'''
import json, queue, sys, threading, time
from edgetriage.edge.agent import EdgeAgent
from edgetriage.edge.config import load_edge_config
from edgetriage.edge.vision.detect import Det
from edgetriage.edge.vision.events import TrackEvent

config = load_edge_config(sys.argv[1])
crops = json.load(open(sys.argv[2]))[sys.argv[3]]
out_lock = threading.Lock()

def say(**kw):
    with out_lock:
        print(json.dumps(kw), flush=True)

agent = EdgeAgent(config, on_verdict=lambda v, ms: say(verdict=v.event_id, source=v.source))
commands = queue.Queue()
threading.Thread(target=lambda: [commands.put(json.loads(line)) for line in sys.stdin], daemon=True).start()
say(ready=True)
next_crop = 0
while True:
    agent.wait_and_pump(0.05)
    try:
        cmd = commands.get_nowait()
    except queue.Empty:
        continue
    op = cmd["op"]
    if op == "submit":
        ids = []
        for _ in range(cmd["n"]):
            c = crops[next_crop % len(crops)]
            next_crop += 1
            now = int(time.time() * 1000)
            box = (0.48, 0.0, 0.73, 0.93)
            ev = TrackEvent(camera="cam0", track_id=next_crop, label="person", score=0.42, median_score=0.4,
                            uncertain=True, first_ts=0.0, last_ts=1.0, captured_ms=now, box=box,
                            detections=[Det("person", 0.42, box)], crop_jpeg=open(c["path"], "rb").read(),
                            crop_size=tuple(c["size"]), phash=c["phash"])
            decision, event_id = agent.decide("cam0", ev)
            item = agent.delivery.outbox.get(event_id) if event_id else None
            ids.append({"id": event_id, "kind": decision.kind, "bytes": len(item.payload) if item else 0})
        agent.pump()
        say(submitted=ids)
    elif op == "wait_idle":
        say(idle=agent.wait_idle(cmd["seconds"]))
    elif op == "summary":
        stored = [r[0] for r in agent.delivery.outbox._db.execute("SELECT event_id FROM outbox ORDER BY seq")]
        say(summary=agent.summary(), counts=agent.delivery.outbox.counts, outbox=stored,
            verdict_counts=dict(agent.delivery.verdict_counts),
            connected=agent.delivery.link.connected.is_set())
    elif op == "close":
        agent.close()
        say(closed=True)
        break
'''


class Device:
    """The driver process: commands on stdin, one JSON line per answer or verdict on stdout."""

    def __init__(self, config_path: Path, crops: Path, kind: str = "visitors") -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(config_path), str(crops), kind],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.lines: queue.Queue[dict] = queue.Queue()
        self.verdicts: list[str] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        self.expect("ready", 60)

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "verdict" in msg:
                self.verdicts.append(msg["verdict"])
            else:
                self.lines.put(msg)

    def expect(self, key: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None and self.lines.empty():
                raise AssertionError(f"device: no {key!r} (exit {self.proc.poll()}): {''.join(self.stderr)[-3000:]}")
            try:
                msg = self.lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if key in msg:
                return msg

    def command(self, key: str, wait: float = 30, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.expect(key, wait)

    def wait_idle(self, seconds: float) -> bool:
        """Until every escalated event has its verdict; False if `seconds` ran out first."""
        return self.command("idle", wait=seconds + 15, op="wait_idle", seconds=seconds)["idle"]

    def submit(self, n: int) -> list[dict]:
        return self.command("submitted", op="submit", n=n)["submitted"]

    def summary(self) -> dict:
        return self.command("summary", op="summary")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.command("closed", wait=15, op="close")
            except (AssertionError, BrokenPipeError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def _device_config(tmp: Path, broker_port: int, prefix: str, **outbox) -> Path:
    path = tmp / "edge.toml"
    outbox_path = tmp / "device" / "outbox.db"
    lines = [f'device = "{DEVICE}"', f'state_dir = "{tmp / "device"}"',
             "[[cameras]]", 'id = "cam0"', 'source = "0"',
             "[mqtt]", f'url = "mqtt://127.0.0.1:{broker_port}"', f'prefix = "{prefix}"',
             f'client_id = "{prefix}-{DEVICE}"',
             "[cache]", "default_max_distance = 0",  # every crop escalates: none is close enough to another
             "[budget]", "per_minute = 0", "per_hour = 0",
             "[outbox]", f'path = "{outbox_path}"',
             *(f"{k} = {json.dumps(v)}" for k, v in {"verdict_timeout_s": 60.0, **outbox}.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def _outbox_ids(path: Path) -> list[str]:
    """What a (dead) device's outbox holds, read from its file."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in db.execute("SELECT event_id FROM outbox ORDER BY seq")]
    finally:
        db.close()


def _until(pred: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# -- the cloud: in this process, or as `edgetriage cloud run` ---------------------------------------------------
def _cloud_config(tmp: Path, broker: Mosquitto, prefix: str, **kw) -> CloudConfig:
    base = {"mqtt": {"url": broker.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
            "store_path": str(tmp / "cloud" / "cloud.db"), "http": {"enabled": False},
            "delivery": {"claim_lease_s": 3.0}}
    for key, value in kw.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return CloudConfig.model_validate(base)


class CloudInProcess:
    """CloudService on an event loop of its own, with the session's real LLM (`max_batch` events per call)."""

    def __init__(self, config: CloudConfig, analyzer, max_batch: int | None = None) -> None:
        self.store = SQLiteStore(config.store_path)
        self.backend = ThreadedBackend(analyzer.engine, max_batch)
        self.service = build_service(config, self.backend, self.store)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.service.start(), self.loop).result(30)
        assert asyncio.run_coroutine_threadsafe(self.service.wait_connected(15), self.loop).result(20)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.service.stop(), self.loop).result(90)
        asyncio.run_coroutine_threadsafe(self.backend.close(), self.loop).result(90)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.store.close()


@pytest.fixture
def cloud_factory(llm_analyzer) -> Iterator[Callable[[CloudConfig], CloudInProcess]]:
    clouds: list[CloudInProcess] = []

    def make(config: CloudConfig, max_batch: int | None = None) -> CloudInProcess:
        clouds.append(CloudInProcess(config, llm_analyzer, max_batch))
        return clouds[-1]

    yield make
    for cloud in clouds:
        cloud.stop()


class CloudProcess:
    """`edgetriage cloud run --config FILE` with its health endpoint on a free port."""

    def __init__(self, config: dict, workdir: Path, name: str) -> None:
        self.port = free_port()
        config = {**config, "http": {"host": "127.0.0.1", "port": self.port, "enabled": True}}
        self.path = workdir / f"{name}.toml"
        self.path.write_text(_toml(config))
        self.log = open(workdir / f"{name}.log", "wb")
        env = {**os.environ, "EDGETRIAGE_STATE": str(workdir / name)}
        self.proc = subprocess.Popen([sys.executable, "-m", "edgetriage", "cloud", "run", "--config", str(self.path)],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def health(self) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as r:
                return json.loads(r.read())
        except OSError:
            return None

    def wait_ready(self, timeout: float = 120) -> None:
        def ready() -> bool:
            assert self.proc.poll() is None, f"cloud exited: {self.tail()}"
            h = self.health()
            return bool(h and h.get("mqtt_connected"))

        _until(ready, timeout, f"the cloud service to connect; log: {self.tail()}")

    def stats(self) -> dict:
        h = self.health()
        assert h is not None, self.tail()
        return h["stats"]

    def tail(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-3000:]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def _toml(config: dict, table: str = "") -> str:
    scalars, tables = [], []
    for key, value in config.items():
        if isinstance(value, dict):
            tables.append(_toml(value, f"{table}.{key}" if table else key))
        elif value is not None:
            scalars.append(f"{key} = {json.dumps(value)}")
    head = [f"[{table}]"] if table and scalars else []
    return "\n".join(head + scalars + [""] + tables)


class VerdictTap:
    """Every verdict message published to the device, duplicates included (a plain MQTT subscriber)."""

    def __init__(self, broker: Mosquitto, prefix: str) -> None:
        self.messages: list[Verdict] = []
        config = MQTTConfig(url=broker.url, prefix=prefix)
        self.link = MQTTLink(
            config,
            f"{prefix}-tap",
            on_message=lambda m: self.messages.append(decode_verdict(m.payload)),
            backoff_min_s=0.2,
            backoff_max_s=1.0,
        )
        self.link.subscribe(Topics(prefix).verdicts(DEVICE), 1)
        self.link.start()
        assert self.link.wait_connected(10) and self.link.subscribed.wait(10)  # listening before anything is sent

    def by_event(self) -> dict[str, list[Verdict]]:
        out: dict[str, list[Verdict]] = {}
        for v in list(self.messages):
            out.setdefault(v.event_id, []).append(v)
        return out

    def close(self) -> None:
        self.link.stop()


def _persistent_broker(tmp: Path, autosave_s: int = 1800) -> Mosquitto:
    """A broker configured like a default production one: persistence on, saved only every 30 minutes, so a
    SIGKILL loses whatever it held in memory."""
    port = free_port()
    workdir = tmp / "broker"
    workdir.mkdir()
    text = "\n".join([f"listener {port} 127.0.0.1", "allow_anonymous true", "persistence true",
                      f"persistence_location {workdir}/", f"autosave_interval {autosave_s}", "set_tcp_nodelay true",
                      "log_dest stderr", "log_type error", "log_type warning"]) + "\n"
    broker = Mosquitto(port, workdir, persistence=True, config_text=text)
    broker.start()
    return broker


# -- faults ----------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_broker_killed_mid_stream_every_verdict_reaches_the_device_once(tmp_path, prefix, crops, cloud_factory):
    """SIGKILL the broker (which had saved nothing) while the cloud works through the events, restart it: the
    device's session is gone with whatever was queued in it, so the device re-sends every event without a
    verdict; the cloud answers those from its store, and every event's verdict completes exactly one outbox
    entry."""
    n = 6
    broker = _persistent_broker(tmp_path)
    cloud = cloud_factory(
        _cloud_config(tmp_path, broker, prefix, reuse={"max_distance": 0, "min_similarity": 1.0}), max_batch=1
    )
    device = Device(_device_config(tmp_path, broker.port, prefix, verdict_timeout_s=20.0), crops)
    try:
        first = device.submit(n // 2)
        _until(lambda: device.verdicts, 60, "a first verdict at the device")
        broker.stop("kill")
        second = device.submit(n - n // 2)  # into the outbox while the broker is gone
        time.sleep(1.0)
        broker.start()
        ids = [e["id"] for e in first + second]
        assert all(e["kind"] == "escalate" for e in first + second) and len(set(ids)) == n
        assert device.wait_idle(140)
        s = device.summary()
        assert s["outbox"] == [] and set(s["verdict_counts"]) == set(ids)
        completed = (
            s["summary"]["verdicts_llm"] + s["summary"]["verdicts_cloud_cache"] + s["summary"]["verdicts_fallback"]
        )
        assert completed == n and s["summary"]["verdicts_unmatched"] == 0  # each completed one outbox entry once
        assert sorted(device.verdicts) == sorted(ids)  # reported once each; repeats are only counted
        assert s["summary"]["connects"] >= 2 and s["summary"]["republished"] >= 1
        stats = cloud.service.stats
        assert stats.llm + stats.fallback == n  # every event analysed once in the cloud
        # re-sends that reached the cloud (how many depends on whether its verdicts or the device's re-sends
        # crossed the restarted broker first) are each taken as a repeat and answered from the store
        assert stats.received - stats.duplicates == n
        assert cloud.store.counts()["verdicts"] == n
    finally:
        device.close()
        broker.stop()


@pytest.mark.slow
def test_agent_killed_mid_stream_outbox_replays_nothing_lost(tmp_path, prefix, crops, cloud_factory, mosquitto):
    """SIGKILL the device while events wait for their verdicts; the broker publishes its will; a new agent
    on the same outbox and session gets every missing verdict."""
    n = 6
    cloud = cloud_factory(
        _cloud_config(tmp_path, mosquitto, prefix, reuse={"max_distance": 0, "min_similarity": 1.0}), max_batch=1
    )
    status: list[bytes] = []
    watcher = MQTTLink(MQTTConfig(url=mosquitto.url, prefix=prefix), f"{prefix}-watch",
                       on_message=lambda m: status.append(m.payload))
    watcher.subscribe(Topics(prefix).status(DEVICE), 1)
    watcher.start()
    config = _device_config(tmp_path, mosquitto.port, prefix)
    device = Device(config, crops)
    try:
        ids = [e["id"] for e in device.submit(n)]
        _until(lambda: device.verdicts, 90, "a first verdict at the device")
        device.kill()
        left = _outbox_ids(tmp_path / "device" / "outbox.db")
        assert left, "the kill came too late: every verdict had arrived"
        assert set(left) | set(device.verdicts) == set(ids)  # nothing was in neither place
        _until(lambda: status and status[-1] == b"offline", 10, "the device's last will")

        again = Device(config, crops)
        try:
            assert again.wait_idle(140)
            s = again.summary()
            assert s["outbox"] == [] and set(left) <= set(s["verdict_counts"])
            assert status[-1] == b"online"
        finally:
            again.close()
        assert status[-1] == b"offline"  # said explicitly at the clean close
        assert {e["event_id"] for e in cloud.store.list_events(limit=100) if e["verdict"]} == set(ids)
        assert cloud.service.stats.llm + cloud.service.stats.fallback == n  # none analysed twice
    finally:
        if device.proc.poll() is None:
            device.kill()
        watcher.stop()


@pytest.mark.slow
def test_service_killed_mid_analysis_nothing_lost_nothing_analysed_twice(tmp_path, prefix, crops, mosquitto):
    """SIGKILL `edgetriage cloud run` while the LLM works through the device's events; a new process takes
    over the claims that ran out and the events the broker kept: every event gets one verdict, and no event
    is analysed to completion twice (every verdict message for an event is the same verdict)."""
    n = 4
    cloud_cfg = {"mqtt": {"url": mosquitto.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
                 "store_path": str(tmp_path / "cloud" / "cloud.db"),
                 "analyzer": {"max_batch": 1}, "reuse": {"max_distance": 0, "min_similarity": 1.0},
                 "delivery": {"claim_lease_s": 3.0}}
    tap = VerdictTap(mosquitto, prefix)
    first = CloudProcess(cloud_cfg, tmp_path, "cloud-a")
    device = None
    second = None
    try:
        first.wait_ready()
        device = Device(_device_config(tmp_path, mosquitto.port, prefix), crops)
        ids = [e["id"] for e in device.submit(n)]
        db = tmp_path / "cloud" / "cloud.db"

        def progress() -> tuple[int, int]:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                return (conn.execute("SELECT count(*) FROM events").fetchone()[0],
                        conn.execute("SELECT count(*) FROM verdicts").fetchone()[0])
            except sqlite3.OperationalError:
                return 0, 0
            finally:
                conn.close()

        _until(lambda: progress()[1] >= 1, 120, "the first verdict")
        first.kill()  # mid-analysis: at least one answered, the rest received, claimed or queued
        done_by_first = progress()[1]
        assert done_by_first < n, "the kill came too late: every event was answered"

        second = CloudProcess(cloud_cfg, tmp_path, "cloud-b")
        second.wait_ready()
        assert device.wait_idle(180), second.tail()
        s = device.summary()
        assert s["outbox"] == [] and set(s["verdict_counts"]) == set(ids)
        assert progress() == (n, n)
        stats = second.stats()
        assert stats["llm"] + stats["fallback"] == n - done_by_first  # the rest, each once
        assert stats["taken_over"] >= 1  # claimed (and acknowledged) by the dead process, taken over from it
        for event_id, copies in tap.by_event().items():
            assert len({(v.created_ms, v.description) for v in copies}) == 1, f"{event_id} analysed twice"
        assert set(tap.by_event()) == set(ids)
    finally:
        if device is not None:
            device.close()
        for cloud in (first, second):
            if cloud is not None:
                cloud.stop()
        tap.close()


@pytest.mark.slow
def test_device_offline_longer_than_the_outbox_bound(tmp_path, prefix, crops, cloud_factory):
    """Offline with big events: the outbox keeps the newest that fit in max_bytes (drop_oldest), counts every
    eviction, and once the broker is back exactly the kept events get verdicts; the evicted never leave."""
    port = free_port()
    max_bytes = 256 * 1024
    device = Device(_device_config(tmp_path, port, prefix, max_bytes=max_bytes), crops, kind="frames")
    broker = None
    try:
        events = device.submit(8)
        assert all(e["kind"] == "escalate" and e["bytes"] > 40_000 for e in events)
        kept, total = [], 0  # the newest events whose sizes fit, as the policy must keep them
        for e in reversed(events):
            if total + e["bytes"] > max_bytes:
                break
            kept.insert(0, e["id"])
            total += e["bytes"]
        evicted = [e["id"] for e in events if e["id"] not in kept]
        assert 2 <= len(kept) < len(events)
        s = device.summary()
        assert s["outbox"] == kept
        assert s["counts"] == {"evicted": len(evicted), "rejected": 0, "expired": 0}
        assert s["summary"]["outbox"]["bytes"] == total and s["summary"]["outbox_dropped"] == len(evicted)

        broker = Mosquitto(port, tmp_path / "broker-late")
        broker.workdir.mkdir()
        broker.start()
        cloud = cloud_factory(_cloud_config(tmp_path, broker, prefix))
        assert device.wait_idle(140)
        s = device.summary()
        assert set(s["verdict_counts"]) == set(kept) and sorted(device.verdicts) == sorted(kept)
        received = {e["event_id"] for e in cloud.store.list_events(limit=100)}
        assert received == set(kept)  # the evicted events never reached the cloud
        assert s["counts"]["evicted"] == len(evicted)
    finally:
        device.close()
        if broker is not None:
            broker.stop()


def test_outbox_full_policies_by_priority_and_age_with_exact_counts(tmp_path):
    """The policy itself on the real SQLite file: reject_newest keeps what is stored unless the newcomer
    outranks it; drop_oldest evicts the lowest priority first, oldest first; age drops are counted apart."""
    t0 = 1_800_000_000_000
    ids = [uuid7(t0 + i) for i in range(12)]
    box = Outbox(tmp_path / "reject.db", max_bytes=300 * 1024, max_age_s=3600, policy="reject_newest")
    kb = 100 * 1024
    assert box.add(ids[0], "t", bytes(kb), t0, priority=0)
    assert box.add(ids[1], "t", bytes(kb), t0 + 1, priority=1)
    assert box.add(ids[2], "t", bytes(kb), t0 + 2, priority=0)
    assert not box.add(ids[3], "t", bytes(kb), t0 + 3, priority=0)  # full: the newest of equal rank is refused
    assert not box.add(ids[4], "t", bytes(kb), t0 + 4, priority=-1)
    assert box.add(ids[5], "t", bytes(kb), t0 + 5, priority=1)  # outranks: the oldest priority-0 event goes
    assert [i.event_id for i in box.due(t0 + 10, 60)] == [ids[1], ids[2], ids[5]]  # replay in order made
    assert box.counts == {"evicted": 1, "rejected": 2, "expired": 0} and box.dropped == 3
    assert not box.add(ids[6], "t", bytes(301 * 1024), t0 + 6, priority=9)  # bigger than the whole outbox
    box.close()

    box = Outbox(tmp_path / "drop.db", max_bytes=300 * 1024, max_age_s=60, policy="drop_oldest")
    for i, prio in enumerate((1, 0, 0)):
        assert box.add(ids[i], "t", bytes(kb), t0 + i, priority=prio)
    assert box.add(ids[3], "t", bytes(kb), t0 + 3, priority=0)  # the oldest priority-0 one goes, not the older 1
    assert not box.add(ids[4], "t", bytes(kb), t0 + 4, priority=-1)  # nothing ranks at or below -1: refused
    assert [i.event_id for i in box.due(t0 + 10, 60)] == [ids[0], ids[2], ids[3]]
    assert box.add(ids[5], "t", bytes(10), t0 + 61_000 + 2)  # over a minute later: the three stored expired
    assert [i.event_id for i in box.due(t0 + 61_000 + 3, 60)] == [ids[5]]
    assert box.counts == {"evicted": 1, "rejected": 1, "expired": 3}
    assert box.depth()["bytes"] == 10
    box.close()


@pytest.mark.slow
def test_two_workers_on_one_shared_subscription_analyse_each_event_once(tmp_path, prefix, crops, mosquitto):
    """Two `edgetriage cloud run` processes on `$share/<group>/...` with Redis: every event published twice
    (a device re-send), the second copies in an order that sends each to the other worker than the first,
    yet each is analysed once, whichever worker gets which copy."""
    n = 4
    redis_prefix = f"test-faults-{uuid.uuid4().hex[:8]}"
    base = {"mqtt": {"url": mosquitto.url, "prefix": prefix}, "group": f"g{uuid.uuid4().hex[:6]}",
            "analyzer": {"max_batch": 1}, "reuse": {"max_distance": 0, "min_similarity": 1.0},
            "delivery": {"shared": True, "redis_url": REDIS_URL, "redis_prefix": redis_prefix, "claim_lease_s": 5.0}}
    index = json.loads(crops.read_text())["visitors"][:n]
    now = int(time.time() * 1000)
    events = [Event(event_id=uuid7(now + i), device=DEVICE, camera="cam0", captured_ms=now + i, label="person",
                    score=0.42, uncertain=True, track_id=i, detections=[Detection(label="person", score=0.42,
                                                                                  box=(0.48, 0.0, 0.73, 0.93))],
                    phash=c["phash"], reason="uncertain", crop=Path(c["path"]).read_bytes(), crop_size=tuple(c["size"]))
              for i, c in enumerate(index)]
    workers = [CloudProcess({**base, "mqtt": {**base["mqtt"], "client_id": f"{prefix}-w{k}"}}, tmp_path, f"w{k}")
               for k in (1, 2)]
    tap = VerdictTap(mosquitto, prefix)
    publisher = MQTTLink(MQTTConfig(url=mosquitto.url, prefix=prefix), f"{prefix}-dev")
    publisher.start()
    store = RedisStore(connect_redis(REDIS_URL), redis_prefix)
    try:
        for w in workers:
            w.wait_ready()
        assert publisher.wait_connected(10)
        topic = Topics(prefix).events(DEVICE)
        # the broker hands a shared subscription's messages out in turn: first copies 1 2 3 4 go to A B A B,
        # second copies 2 1 4 3 to A B A B, so every second copy meets the worker that did not get the first
        for i in list(range(n)) + [i ^ 1 for i in range(n)]:
            assert publisher.publish(topic, encode_event(events[i])) is not None
        _until(lambda: set(tap.by_event()) == {e.event_id for e in events}, 180, "a verdict for every event")
        _until(lambda: store.counts()["verdicts"] == n, 30, "every verdict stored")
        # the second copies: every one received and known as a repeat (counted before it is answered)
        def repeats_seen() -> bool:
            every = [w.stats() for w in workers]
            return sum(s["received"] for s in every) == 2 * n and sum(s["duplicates"] for s in every) == n

        _until(repeats_seen, 30, "every second copy taken as a repeat")
        stats = [w.stats() for w in workers]
        assert sum(s["received"] for s in stats) == 2 * n
        assert sum(s["llm"] + s["fallback"] for s in stats) == n  # each event analysed once, in all
        # the broker shares the copies out (which worker gets a first copy is its choice, not ours). Which worker
        # answers an event is the one whose claim lands first: a first copy stored by one worker can be claimed by
        # the other, if its second copy arrives between the store and the claim (a loaded machine makes that
        # window long), so the promise is per event, not per worker: nothing analysed twice, nothing discarded
        assert all(s["received"] >= 1 for s in stats), stats
        assert all(s["llm"] + s["fallback"] <= s["received"] for s in stats), stats
        assert sum(s["claims_lost"] for s in stats) == 0, stats
        assert sum(s["duplicates"] for s in stats) == n
        for event_id, copies in tap.by_event().items():
            assert len({(v.created_ms, v.description) for v in copies}) == 1, f"{event_id} analysed twice"
        assert store.counts() == {"events": n, "verdicts": n}
    finally:
        for w in workers:
            w.stop()
        tap.close()
        publisher.stop()
        store.delete_all()
        store.close()


# -- the shared state itself ------------------------------------------------------------------------------------
@pytest.fixture
def redis_prefix() -> Iterator[str]:
    prefix = f"test-faults-{uuid.uuid4().hex[:8]}"
    yield prefix
    RedisStore(connect_redis(REDIS_URL), prefix).delete_all()


def _event(crop: dict, n: int, device: str = DEVICE) -> Event:
    t = 1_800_000_000_000 + n
    return Event(event_id=uuid7(t), device=device, camera="cam0", captured_ms=t, label="person", score=0.5,
                 track_id=n, detections=[], phash=crop["phash"], reason="r", crop=Path(crop["path"]).read_bytes(),
                 crop_size=tuple(crop["size"]))


def test_redis_store_behaves_like_the_sqlite_store(tmp_path, crops, redis_prefix):
    """The same calls on both stores give the same answers: seen ids, verdicts, the reuse lookup, listing."""
    visitors = json.loads(crops.read_text())["visitors"]
    stores = {"sqlite": SQLiteStore(tmp_path / "cloud.db"), "redis": RedisStore(connect_redis(REDIS_URL), redis_prefix)}
    events = [_event(visitors[i], i, device="pi-a" if i % 2 else "pi-b") for i in range(4)]
    now = int(time.time() * 1000)
    answers = {}
    for name, store in stores.items():
        out = [store.put_event(e, now) for e in events] + [store.put_event(events[0], now + 1)]
        rule = ReuseRule(device=events[0].device, camera="cam0", label="person", phash=events[0].phash,
                         prompt_version="p1", max_distance=6, ttl_s=60)
        verdict = Verdict(event_id=events[0].event_id, device=events[0].device, camera="cam0", label="person",
                          verdict="benign", confidence=0.7, description="d", model="m", created_ms=now, cache=rule)
        store.put_verdict(verdict)
        store.put_verdict(verdict)  # replacing is not a second verdict
        near = f"{int(events[0].phash, 16) ^ 0b111:016x}"  # 3 bits away
        far = f"{int(events[0].phash, 16) ^ 0x7F:016x}"  # 7 bits away
        key = f"camera:{events[0].device}/cam0"
        answers[name] = {
            "put": out,
            "verdict": store.get_verdict(events[0].event_id) == verdict,
            "near": getattr(store.lookup(scope_key=key, label="person", phash=near, phash_alg="dct64",
                                         prompt_version="p1", now_ms=now), "event_id", None),
            "far": store.lookup(scope_key=key, label="person", phash=far, phash_alg="dct64", prompt_version="p1",
                                now_ms=now),
            "expired": store.lookup(scope_key=key, label="person", phash=near, phash_alg="dct64",
                                    prompt_version="p1", now_ms=now + 61_000),
            "other_prompt": store.lookup(scope_key=key, label="person", phash=near, phash_alg="dct64",
                                         prompt_version="p2", now_ms=now),
            "listed": [e["event_id"] for e in store.list_events(limit=10)],
            "page": [e["event_id"] for e in store.list_events(device="pi-a", limit=1, before=events[3].event_id)],
            "one": {k: v for k, v in store.get_event(events[0].event_id).items() if k != "received_ms"},
            "crop": store.get_crop(events[2].event_id) == events[2].crop,
            "counts": store.counts(),
        }
        store.close()
    assert answers["redis"] == answers["sqlite"]
    assert answers["redis"]["put"] == [True, True, True, True, False]
    assert answers["redis"]["near"] == events[0].event_id and answers["redis"]["far"] is None
    assert answers["redis"]["listed"] == [e.event_id for e in reversed(events)]
    assert answers["redis"]["counts"] == {"events": 4, "verdicts": 1}


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_claims_are_exclusive_until_their_lease_runs_out(kind, tmp_path, redis_prefix):
    def make(owner: str):
        if kind == "sqlite":
            return SQLiteClaims(tmp_path / "claims.db", owner)
        return RedisClaims(connect_redis(REDIS_URL), redis_prefix, owner)

    a, b = make("worker-a"), make("worker-b")
    assert a.acquire("e1", 60) and not b.acquire("e1", 5) and a.holds("e1") and not b.holds("e1")
    assert a.renew(["e1"], 60) == [] and b.renew(["e1"], 5) == ["e1"]
    assert a.expired() == []
    assert a.renew(["e1"], 0.01) == []  # worker a "dies": its last renewal was short, and it runs out
    _until(lambda: a.expired() == ["e1"], 10, "the lease to run out")
    assert b.expired() == ["e1"]
    _until(lambda: b.acquire("e1", 5), 10, "the claim to be free")  # Redis ends the key a moment later
    assert not a.holds("e1") and a.renew(["e1"], 5) == ["e1"]
    b.abandon("e1")  # stopping without an answer: listed for take-over at once
    assert a.expired() == ["e1"] and a.acquire("e1", 5)
    a.release("e1")  # answered
    assert a.expired() == [] and b.acquire("e1", 5)
    b.release("e1")
    a.close()
    b.close()
