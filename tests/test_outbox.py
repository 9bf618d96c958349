"""The device outbox keeps every escalated event until its verdict arrives, across restarts and reconnects."""

from __future__ import annotations

import queue
import sqlite3

from edgetriage.edge.delivery.outbox import Outbox
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.ids import uuid7
from edgetriage.shared.mqtt import MQTTLink

T0 = 1_700_000_000_000


def _ids(items) -> list[str]:
    return [i.event_id for i in items]


def test_pending_items_survive_reopen_with_the_same_ids(tmp_path):
    path = tmp_path / "state" / "outbox.db"
    box = Outbox(path)
    ids = [uuid7(T0 + i) for i in range(3)]
    for i, eid in enumerate(ids):
        box.add(eid, "p/v1/edge-1/events", f"payload-{i}".encode(), T0 + i)
    box.mark_published(ids[0], mid=7, now_ms=T0 + 10)  # handed to MQTT, process dies before its PUBACK
    box.close()

    box = Outbox(path)
    due = box.due(T0 + 20, verdict_timeout_s=60)
    assert _ids(due) == ids  # oldest first, the unacknowledged one is pending again
    assert [i.payload for i in due] == [b"payload-0", b"payload-1", b"payload-2"]
    assert all(i.state == "pending" for i in due)
    assert box.depth() == {"pending": 3, "inflight": 0, "sent": 0, "bytes": 3 * len(b"payload-0")}
    assert box.mark_sent(7) is None  # the old connection's mid means nothing now
    box.close()

    # the file really is in WAL mode (readers never block the agent loop)
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_puback_from_a_real_broker_marks_sent_and_complete_deletes(tmp_path, mosquitto, prefix):
    box = Outbox(tmp_path / "outbox.db")
    eid = uuid7()
    topic = f"{prefix}/v1/edge-1/events"
    box.add(eid, topic, b"\x81\xa1v\x01", T0)

    acks: queue.Queue[int] = queue.Queue()
    link = MQTTLink(MQTTConfig(url=mosquitto.url, prefix=prefix), f"{prefix}-outbox", on_published=acks.put)
    link.start()
    try:
        assert link.wait_connected(10)
        (item,) = box.due(T0, 60)
        mid = link.publish(item.topic, item.payload, qos=1)
        assert mid is not None
        box.mark_published(item.event_id, mid, now_ms=T0 + 1)
        assert box.depth()["inflight"] == 1
        assert box.due(T0 + 2, 60) == []  # waiting for the PUBACK, not due again
        assert box.mark_sent(acks.get(timeout=10), now_ms=T0 + 5) == eid
    finally:
        link.stop()

    assert box.depth() == {"pending": 0, "inflight": 0, "sent": 1, "bytes": 4}
    assert box.get(eid).attempts == 1
    assert box.complete(eid) is True
    assert box.complete(eid) is False
    assert len(box) == 0 and box.depth()["bytes"] == 0
    box.close()


def test_due_returns_sent_items_whose_verdict_is_overdue(tmp_path):
    box = Outbox(tmp_path / "outbox.db")
    a, b, c = uuid7(T0), uuid7(T0 + 1), uuid7(T0 + 2)
    for n, eid in enumerate((a, b, c)):
        box.add(eid, "t", b"x", T0 + n)
    box.mark_published(a, 1, now_ms=T0 + 100)
    box.mark_published(b, 2, now_ms=T0 + 100)
    assert box.mark_sent(1, now_ms=T0 + 200) == a
    assert box.mark_sent(2, now_ms=T0 + 5_000) == b

    assert _ids(box.due(T0 + 1_000, verdict_timeout_s=10)) == [c]
    # a's verdict is 10 s overdue, b's not yet
    assert _ids(box.due(T0 + 10_200, verdict_timeout_s=10)) == [a, c]
    assert _ids(box.due(T0 + 15_000, verdict_timeout_s=10)) == [a, b, c]
    # an inflight item whose PUBACK never came is also due again once the timeout passes
    box.mark_published(c, 3, now_ms=T0 + 20_000)
    assert c not in _ids(box.due(T0 + 20_001, verdict_timeout_s=10))
    assert c in _ids(box.due(T0 + 30_000, verdict_timeout_s=10))
    box.close()


def test_requeue_sent_makes_every_sent_item_due_again(tmp_path):
    box = Outbox(tmp_path / "outbox.db")
    ids = [uuid7(T0 + i) for i in range(4)]
    for i, eid in enumerate(ids):
        box.add(eid, "t", b"y" * 10, T0 + i)
    for mid, eid in enumerate(ids[:3], start=1):
        box.mark_published(eid, mid, now_ms=T0 + 50)
    box.mark_sent(1, now_ms=T0 + 60)
    box.mark_sent(2, now_ms=T0 + 60)  # ids[2] stays inflight: the MQTT client re-sends it itself
    assert box.due(T0 + 100, 60) == [box.get(ids[3])]

    assert box.requeue_sent() == 2
    due = box.due(T0 + 100, 60)
    assert _ids(due) == [ids[0], ids[1], ids[3]]
    assert box.depth() == {"pending": 4, "inflight": 1, "sent": 0, "bytes": 40}
    assert box.requeue_sent() == 0
    box.close()


def test_over_max_bytes_drops_the_oldest_with_exact_counts(tmp_path):
    box = Outbox(tmp_path / "outbox.db", max_bytes=1000)
    ids = [uuid7(T0 + i) for i in range(12)]
    for i in range(10):
        box.add(ids[i], "t", bytes(100), T0 + i)
    assert box.dropped == 0 and len(box) == 10 and box.depth()["bytes"] == 1000

    box.add(ids[10], "t", bytes(100), T0 + 10)  # 1100 bytes: the oldest one goes
    assert box.dropped == 1
    assert _ids(box.due(T0 + 20, 60)) == ids[1:11]

    box.add(ids[11], "t", bytes(250), T0 + 11)  # 1250 bytes: three oldest (300 bytes) go
    assert box.dropped == 4
    assert _ids(box.due(T0 + 20, 60)) == ids[4:12]
    assert box.depth()["bytes"] == 7 * 100 + 250
    box.close()

    box = Outbox(tmp_path / "outbox.db", max_bytes=1000)  # the byte total is recomputed on open
    assert box.depth()["bytes"] == 950 and box.dropped == 0
    box.close()


def test_events_older_than_max_age_are_dropped(tmp_path):
    box = Outbox(tmp_path / "outbox.db", max_age_s=60)
    old, new = uuid7(T0), uuid7(T0 + 50_000)
    box.add(old, "t", b"a", T0)
    box.add(new, "t", b"b", T0 + 50_000)
    assert _ids(box.due(T0 + 61_000, 600)) == [new]
    assert box.dropped == 1 and len(box) == 1
    box.close()


def test_duplicate_event_id_is_refused(tmp_path):
    box = Outbox(tmp_path / "outbox.db")
    eid = uuid7()
    box.add(eid, "t", b"a", T0)
    try:
        box.add(eid, "t", b"b", T0)
    except ValueError as exc:
        assert eid in str(exc)
    else:
        raise AssertionError("a second add with the same id must be refused")
    assert box.get(eid).payload == b"a"
    box.close()
