"""A full disk under the cloud's store and a deleted or full outbox on the device: a clear message, no
traceback, and nothing lost that was already acknowledged. The disk is made full for real, inside SQLite
(`PRAGMA max_page_count`: SQLite answers SQLITE_FULL, "database or disk is full", exactly as on a full disk)."""

from __future__ import annotations

import asyncio
import logging
import queue
import time

import pytest
from edgetriage.cloud.broker.intake import Arrival
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.mqtt import Incoming, MQTTLink
from edgetriage.shared.protocol import decode_verdict, encode_event
from edgetriage.shared.topics import Topics
from fixed_model import FixedDelayModel, noise_events

pytestmark = pytest.mark.faults


def test_a_full_disk_under_the_cloud_store_loses_nothing(mosquitto, prefix, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    topics = Topics(prefix)
    got: queue.Queue[Incoming] = queue.Queue()
    mqtt = CloudConfig().mqtt.model_copy(update={"url": mosquitto.url, "prefix": prefix})
    device = MQTTLink(mqtt, f"{prefix}-dev", on_message=got.put)
    device.subscribe(topics.verdicts("dev"), 1)
    device.start()
    assert device.wait_connected(10) and device.subscribed.wait(10)  # no verdict published before we listen
    # a claim left to run out after a failure (cloud.broker.takeover) is taken up again after its lease: 3 s here
    config = CloudConfig.model_validate({"mqtt": {"url": mosquitto.url, "prefix": prefix, "client_id": f"{prefix}-c"},
                                         "store_path": str(tmp_path / "cloud.db"), "http": {"enabled": False},
                                         "delivery": {"claim_lease_s": 3.0}})
    store = SQLiteStore(config.store_path)
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages + 60}")  # room for a few 20 KB crops, not for 30
    events = noise_events("dev", 30, seed=5)

    def full_said() -> bool:
        return any("database or disk is full" in r.getMessage() for r in caplog.records)

    async def serve_until(n: int, timeout: float, ready: asyncio.Event | None = None, until=None) -> set[str]:
        service = build_service(config, FixedDelayModel(0.01, 4), store)
        await service.start()
        seen: set[str] = set()
        try:
            assert await service.wait_connected(30)  # connected and subscribed
            if ready is not None:
                ready.set()
            deadline = time.monotonic() + timeout
            while len(seen) < n and time.monotonic() < deadline and not (until and until(seen)):
                try:
                    seen.add(decode_verdict((await asyncio.to_thread(got.get, True, 0.5)).payload).event_id)
                except queue.Empty:
                    pass
        finally:
            await service.stop()
        return seen

    async def scenario() -> tuple[set[str], set[str]]:
        ready = asyncio.Event()
        # until the disk is full, with some events answered before it filled (a bound, not a pause)
        first = asyncio.create_task(serve_until(len(events), 120, ready, lambda seen: seen and full_said()))
        await ready.wait()  # the cloud's subscription is granted: from now on the broker keeps its messages
        for event in events:
            assert device.publish(topics.events("dev"), encode_event(event)) is not None
        answered = await first
        store._conn.execute("PRAGMA max_page_count = 1073741823")  # space again
        # a new session of the same client: the broker delivers again what was never acknowledged
        later = await serve_until(len(events) - len(answered), 120)  # returns once every one is answered
        return answered, later

    try:
        answered, later = asyncio.run(scenario())
    finally:
        device.stop()
        store.close()
    assert 0 < len(answered) < len(events), len(answered)  # the disk filled up part way
    assert answered | later == {e.event_id for e in events}  # nothing lost
    full = [r for r in caplog.records if "database or disk is full" in r.getMessage()]
    assert full and all(r.exc_info is None for r in full)  # said in one line, no traceback
    assert "store_path" in full[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info is not None]


def test_a_stopping_intake_starts_no_retry_of_its_parked_events(tmp_path):
    """Events acknowledged but not stored wait, parked, for the store to answer again. Once the service stops
    (the intake is closed), the store answering starts none of them: the claims they would take are closed
    next (before, a retry begun while stopping ran on a closed database, with a traceback)."""
    store = SQLiteStore(tmp_path / "cloud.db")
    service = build_service(CloudConfig(store_path=str(tmp_path / "cloud.db"), http={"enabled": False}),
                           FixedDelayModel(0.01, 4), store)
    (event,) = noise_events("dev", 1, seed=5)

    async def scenario() -> None:
        service.intake._park(Arrival(event, int(time.time() * 1000), time.monotonic()))  # as after a full disk
        service.intake.close()
        await asyncio.wait_for(service.intake.heal(), 10)  # the store answers: heal ends, starting nothing
        assert service.pending == 0

    try:
        asyncio.run(scenario())
    finally:
        store.close()


# -- the device's outbox ----------------------------------------------------------------------------------------
T0 = 1_800_000_000_000


def _filled_outbox(path, n: int = 6):
    from edgetriage.edge.delivery.outbox import Outbox

    box = Outbox(path)
    ids = [f"ev-{i}" for i in range(n)]
    for i, event_id in enumerate(ids):
        assert box.add(event_id, "t/v1/dev/events", bytes([i]) * 5000, T0 + i)
    box.mark_published(ids[0], mid=1, now_ms=T0 + 10)
    box.mark_sent(1, now_ms=T0 + 20)  # the broker has it; no verdict yet
    return box, ids


@pytest.mark.parametrize("what", ["the file", "the file and its -wal/-shm", "the whole folder"])
def test_an_outbox_deleted_while_events_wait_is_written_again(what, tmp_path, caplog):
    import shutil

    from edgetriage.edge.delivery.outbox import FILE_CHECK_MS, Outbox

    caplog.set_level(logging.WARNING)
    path = tmp_path / "state" / "outbox.db"
    box, ids = _filled_outbox(path)
    if what == "the whole folder":
        shutil.rmtree(path.parent)
    else:
        path.unlink()
        if "wal" in what:
            for suffix in ("-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
    assert not path.exists()
    # the agent keeps working: the next scan notices, writes the file again, and a new event goes in too
    assert [i.event_id for i in box.due(T0 + FILE_CHECK_MS + 100, 60)] == ids[1:]
    assert path.exists()
    assert box.add("ev-new", "t/v1/dev/events", b"x" * 100, T0 + FILE_CHECK_MS + 200)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "was deleted while 6 event(s) were waiting" in errors[0].getMessage()
    assert errors[0].exc_info is None
    box.close()
    again = Outbox(path)  # what a restart finds: everything
    try:
        assert len(again) == 7 and again.get("ev-0").state == "sent"
        assert [i.event_id for i in again.due(T0 + FILE_CHECK_MS + 300, 60)] == [*ids[1:], "ev-new"]
    finally:
        again.close()


def test_a_full_disk_under_the_outbox_is_one_line_and_keeps_what_it_had(tmp_path):
    from edgetriage.edge.delivery.outbox import Outbox, OutboxError

    path = tmp_path / "outbox.db"
    box, ids = _filled_outbox(path)
    pages = box._db.execute("PRAGMA page_count").fetchone()[0]
    box._db.execute(f"PRAGMA max_page_count = {pages + 2}")
    with pytest.raises(OutboxError) as err:
        for i in range(20):
            box.add(f"more-{i}", "t/v1/dev/events", bytes([i]) * 20_000, T0 + 100 + i)
    message = str(err.value)
    assert "database or disk is full" in message and "free space" in message and "\n" not in message
    box.close()
    again = Outbox(path)
    try:
        kept = {i.event_id for i in again.due(T0 + 1000, 60)} | {"ev-0"}
        assert set(ids) <= kept  # nothing it had accepted is lost
    finally:
        again.close()
