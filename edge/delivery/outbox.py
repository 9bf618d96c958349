"""The device's durable outbox: every escalated event lives here until its verdict comes back.

An event is "pending" until handed to MQTT, "inflight" until the broker's PUBACK arrives, then "sent" until
its verdict arrives and `complete()` deletes it. A successful `publish()` call is not delivery; only a PUBACK
moves an item to "sent", and only a verdict removes it. Items whose PUBACK or verdict is overdue become due
again and go out with the same event id, so the cloud can recognise the repeat.

SQLite in WAL mode with synchronous=FULL: every committed `add()` has been fsynced, so a power cut costs at
most the event being written at that instant (and at worst re-sends an event whose verdict had arrived).
At a few escalations a minute the extra fsync is cheap compared with losing an event the device already
decided to ask about.

Bounded by bytes (`max_bytes`) and by age (`max_age_s`). When a new event does not fit, `policy` decides,
lowest `priority` first: "drop_oldest" evicts the oldest events of the same or a lower priority to make room;
"reject_newest" keeps what is stored and refuses the new event, unless it outranks stored ones, which are
then evicted. Events older than `max_age_s` are dropped. Every drop is logged and counted by cause
(`counts`: evicted, rejected, expired, since this process opened the outbox; `dropped` is their sum). Replay
is always in the order events were made, whatever their priority.

A file deleted (or replaced) under a running agent is noticed within FILE_CHECK_MS at the next `add()` or
`due()`, and written again at its path from the open database, which still holds every event: a restart after
such a mistake loses nothing (said once, as an error). A write that fails (a full disk) raises OutboxError
saying so in one line; nothing half-written is kept.

Thread-safe: one connection guarded by a lock, so the agent loop and any reporting thread may call it; PUBACK
notifications reach it via the agent's queue, never from paho's network thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from ...shared import clock
from ...shared.config import Strict

log = logging.getLogger("edgetriage.edge.outbox")

PENDING = "pending"
INFLIGHT = "inflight"
SENT = "sent"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id   TEXT NOT NULL UNIQUE,
    topic      TEXT NOT NULL,
    payload    BLOB NOT NULL,
    created_ms INTEGER NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('pending', 'inflight', 'sent')),
    mid        INTEGER,
    since_ms   INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    priority   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS outbox_state ON outbox (state, since_ms);
CREATE INDEX IF NOT EXISTS outbox_mid ON outbox (mid) WHERE mid IS NOT NULL;
"""
POLICIES = ("drop_oldest", "reject_newest")
FILE_CHECK_MS = 2000  # how often the outbox file is checked to still be the one we write
DROP_CAUSES = ("evicted", "rejected", "expired")


class OutboxConfig(Strict):
    """[outbox]: where escalated events wait for their verdicts (the `Outbox` below), and what gives when it is full:
    "drop_oldest"
    evicts the oldest events of the same or a lower priority, "reject_newest" refuses the new event unless it
    outranks stored ones. `priority` ranks labels (default 0; higher is kept longer)."""

    path: str = ""  # empty: <state_dir>/outbox.db
    verdict_timeout_s: Annotated[float, Field(gt=0)] = 60.0  # re-send an event whose verdict is this late
    max_bytes: Annotated[int, Field(ge=256 * 1024)] = 64 * 1024 * 1024
    max_age_s: Annotated[int, Field(ge=1)] = 7 * 86400
    policy: Literal["drop_oldest", "reject_newest"] = "drop_oldest"
    priority: dict[str, Annotated[int, Field(ge=-100, le=100)]] = Field(default_factory=dict)


class OutboxError(RuntimeError):
    """The outbox database cannot be opened or written; the message names the file."""


@dataclass(frozen=True)
class OutboxItem:
    event_id: str
    topic: str
    payload: bytes
    created_ms: int
    state: str
    attempts: int


class Outbox:
    """Durable, size- and age-bounded queue of escalated events keyed by event id."""

    @classmethod
    def from_config(cls, config: OutboxConfig) -> Outbox:
        """The outbox [outbox] describes (its `path` resolved by the device config: <state_dir>/outbox.db)."""
        return cls(config.path, config.max_bytes, config.max_age_s, config.policy)

    def __init__(self, path: str | Path, max_bytes: int = 64 * 1024 * 1024, max_age_s: int = 7 * 86400,
                 policy: str = "drop_oldest") -> None:
        if policy not in POLICIES:
            raise ValueError(f"outbox policy {policy!r} is not one of {', '.join(POLICIES)}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self.policy = policy
        self.counts = dict.fromkeys(DROP_CAUSES, 0)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._connect()
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(outbox)")}
            if "priority" not in columns:  # an outbox written by an older version
                self._db.execute("ALTER TABLE outbox ADD COLUMN priority INTEGER NOT NULL DEFAULT 0")
            self._db.execute("CREATE INDEX IF NOT EXISTS outbox_evict ON outbox (priority, created_ms, seq)")
            # mids belong to the connection of a process that is gone: unacknowledged items go again.
            self._db.execute("UPDATE outbox SET state = 'pending', mid = NULL WHERE state = 'inflight'")
            self._bytes = self._db.execute("SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM outbox").fetchone()[0]
            self._inode = os.stat(self.path).st_ino
        except (sqlite3.Error, OSError) as exc:
            raise OutboxError(f"outbox {self.path}: cannot open: {exc}; check the path and free space "
                              "(outbox.path in the edge config)") from None
        self._checked_ms = 0

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    def _check_file_locked(self, now_ms: int) -> None:
        """Still writing the file at `path`? If it was deleted or replaced, write it again from the open
        database (which holds everything), so that a restart finds every event."""
        if abs(now_ms - self._checked_ms) < FILE_CHECK_MS:
            return
        self._checked_ms = now_ms
        try:
            if os.stat(self.path).st_ino == self._inode:
                return
        except OSError:
            pass
        # SQLite no longer writes a database whose file was unlinked, but still reads it (the WAL included):
        # copy it to a new file beside, close it, and put the copy in its place
        copy = self.path.with_name(self.path.name + ".restore")
        try:
            waiting = self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            copy.unlink(missing_ok=True)
            fresh = sqlite3.connect(str(copy), isolation_level=None)
            self._db.backup(fresh)
            fresh.close()
        except (sqlite3.Error, OSError) as exc:
            log.error("outbox %s was deleted and cannot be written again (%s); its events are kept while this "
                      "process runs: free the path or its disk", self.path, exc)
            return
        self._db.close()
        for suffix in ("-wal", "-shm"):  # the deleted database's, if left behind: never the new one's
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        os.replace(copy, self.path)
        self._db = self._connect()
        self._inode = os.stat(self.path).st_ino
        log.error("outbox %s was deleted while %d event(s) were waiting; written again with all of them (do not "
                  "delete it: it holds the events that have no verdict yet)", self.path, waiting)

    @property
    def dropped(self) -> int:
        """Events dropped without a verdict, all causes together, since this outbox was opened."""
        return sum(self.counts.values())

    # -- writes ----------------------------------------------------------------------------------------
    def add(self, event_id: str, topic: str, payload: bytes, created_ms: int, priority: int = 0) -> bool:
        """Store a new event as pending. False when the policy refused it for want of room (counted as
        `rejected`); events evicted to make room are counted as `evicted`. One transaction: a crash leaves
        either the event stored and its victims gone, or nothing changed."""
        size = len(payload)
        with self._lock:
            self._check_file_locked(created_ms)
            counts_before = dict(self.counts)
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._drop_expired_locked(created_ms)  # the caller's clock, as in due()
                    victims = self._victims_locked(size, priority)
                    if victims is None:
                        self._count_locked("rejected", 1)
                    else:
                        if victims:
                            self._db.executemany("DELETE FROM outbox WHERE seq = ?", [(v[0],) for v in victims])
                            self._bytes -= sum(v[2] for v in victims)
                            self._count_locked("evicted", len(victims))
                        self._db.execute(
                            "INSERT INTO outbox (event_id, topic, payload, created_ms, state, since_ms, priority) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (event_id, topic, payload, created_ms, PENDING, created_ms, priority),
                        )
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:  # SQLite already rolled back after e.g. SQLITE_FULL
                        self._db.execute("ROLLBACK")
                    self.counts = counts_before
                    self._bytes = self._db.execute("SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM outbox").fetchone()[0]
                    raise
            except sqlite3.IntegrityError:
                raise ValueError(f"event {event_id} is already in the outbox") from None
            except sqlite3.Error as exc:
                raise OutboxError(f"outbox {self.path}: cannot store event {event_id}: {exc}; "
                                  "check free space on the device") from None
            if victims is None:
                log.warning("outbox full (%d of %d bytes): refused event %s of priority %d (policy %s; %d refused "
                            "in all); the cloud has been unreachable for long or outbox.max_bytes is too small",
                            self._bytes, self.max_bytes, event_id, priority, self.policy, self.counts["rejected"])
                return False
            self._bytes += size
            if victims:
                log.warning("outbox full (%d bytes): dropped %d event(s) of priority %s %d, lowest and oldest "
                            "first, from %s (policy %s; %d evicted in all); the cloud has been unreachable for long "
                            "or outbox.max_bytes is too small", self.max_bytes, len(victims),
                            "<=" if self.policy == "drop_oldest" else "<", priority, victims[0][1], self.policy,
                            self.counts["evicted"])
            return True

    def _victims_locked(self, size: int, priority: int) -> list[tuple[int, str, int]] | None:
        """(seq, event_id, bytes) to evict so `size` more bytes fit; None when the policy refuses the event."""
        over = self._bytes + size - self.max_bytes
        if over <= 0:
            return []
        if size > self.max_bytes:
            return None
        rank = "<=" if self.policy == "drop_oldest" else "<"
        victims: list[tuple[int, str, int]] = []
        freed = 0
        for seq, event_id, length in self._db.execute(
                f"SELECT seq, event_id, LENGTH(payload) FROM outbox WHERE priority {rank} ? "
                "ORDER BY priority, created_ms, seq", (priority,)):
            victims.append((seq, event_id, length))
            freed += length
            if freed >= over:
                return victims
        return None

    def _count_locked(self, cause: str, n: int) -> None:
        self.counts[cause] = self.counts.get(cause, 0) + n

    def _drop_expired_locked(self, now_ms: int) -> None:
        cutoff = now_ms - self.max_age_s * 1000
        row = self._db.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(payload)), 0) FROM outbox WHERE created_ms < ?",
                               (cutoff,)).fetchone()
        if row[0]:
            self._db.execute("DELETE FROM outbox WHERE created_ms < ?", (cutoff,))
            self._bytes -= row[1]
            self._count_locked("expired", row[0])
            log.warning("outbox: dropped %d event(s) older than %d s without a verdict (%d expired in all); "
                        "raise outbox.max_age_s to keep events longer", row[0], self.max_age_s,
                        self.counts["expired"])

    def mark_published(self, event_id: str, mid: int, now_ms: int | None = None) -> None:
        """The event was handed to MQTT as message `mid`; it waits for its PUBACK."""
        now_ms = clock.now_ms() if now_ms is None else now_ms
        with self._lock:
            # a message id is unique among unacknowledged messages; an old holder of this one lost its PUBACK
            self._db.execute("UPDATE outbox SET mid = NULL WHERE mid = ?", (mid,))
            self._db.execute("UPDATE outbox SET state = 'inflight', mid = ?, attempts = attempts + 1, since_ms = ? "
                             "WHERE event_id = ?", (mid, now_ms, event_id))

    def mark_sent(self, mid: int, now_ms: int | None = None) -> str | None:
        """PUBACK for `mid`: the broker has the event. Returns its event id, None for a mid we do not own."""
        with self._lock:
            row = self._db.execute("SELECT event_id FROM outbox WHERE mid = ? AND state = 'inflight'",
                                   (mid,)).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE outbox SET state = 'sent', mid = NULL, since_ms = ? WHERE event_id = ?",
                             (clock.now_ms() if now_ms is None else now_ms, row[0]))
            return row[0]

    def mark_refused(self, mid: int) -> str | None:
        """The broker answered message `mid` with a failure reason code (MQTT 5): not delivered. The event
        stays in flight without a mid and goes again once `verdict_timeout_s` has passed. Returns its id."""
        with self._lock:
            row = self._db.execute("SELECT event_id FROM outbox WHERE mid = ? AND state = 'inflight'",
                                   (mid,)).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE outbox SET mid = NULL WHERE event_id = ?", (row[0],))
            return row[0]

    def complete(self, event_id: str) -> bool:
        """The verdict arrived: forget the event. False when it was not (or no longer) here."""
        with self._lock:
            row = self._db.execute("SELECT LENGTH(payload) FROM outbox WHERE event_id = ?", (event_id,)).fetchone()
            if row is None:
                return False
            self._db.execute("DELETE FROM outbox WHERE event_id = ?", (event_id,))
            self._bytes -= row[0]
            return True

    def requeue_sent(self) -> int:
        """After a reconnect: every sent event without a verdict goes again, same id. Inflight items are left
        to the MQTT client, which re-sends them itself with their original message ids."""
        with self._lock:
            return self._db.execute("UPDATE outbox SET state = 'pending' WHERE state = 'sent'").rowcount

    # -- reads -----------------------------------------------------------------------------------------
    def due(self, now_ms: int, verdict_timeout_s: float, limit: int = 100) -> list[OutboxItem]:
        """What to publish now, oldest first: pending events, and sent or inflight ones whose PUBACK or
        verdict is overdue. Events older than `max_age_s` are dropped here."""
        overdue = now_ms - int(verdict_timeout_s * 1000)
        with self._lock:
            self._check_file_locked(now_ms)
            self._drop_expired_locked(now_ms)
            rows = self._db.execute(
                "SELECT event_id, topic, payload, created_ms, state, attempts FROM outbox "
                "WHERE state = 'pending' OR since_ms <= ? ORDER BY created_ms, seq LIMIT ?",
                (overdue, limit),
            ).fetchall()
        return [OutboxItem(r[0], r[1], bytes(r[2]), r[3], r[4], r[5]) for r in rows]

    def unsent(self) -> list[tuple[str, int]]:
        """(event_id, created_ms) of events never handed to MQTT yet, oldest first: the ones an escalation
        budget or an overloaded cloud holds back."""
        with self._lock:
            return self._db.execute("SELECT event_id, created_ms FROM outbox WHERE state = 'pending' AND attempts = 0 "
                                    "ORDER BY created_ms, seq").fetchall()

    def count_unsent(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM outbox WHERE state = 'pending' AND attempts = 0").fetchone()[
                0
            ]

    def get(self, event_id: str) -> OutboxItem | None:
        with self._lock:
            r = self._db.execute("SELECT event_id, topic, payload, created_ms, state, attempts FROM outbox "
                                 "WHERE event_id = ?", (event_id,)).fetchone()
        return None if r is None else OutboxItem(r[0], r[1], bytes(r[2]), r[3], r[4], r[5])

    def depth(self) -> dict[str, int]:
        """Counts by state plus stored payload bytes; `pending` includes items awaiting their PUBACK."""
        with self._lock:
            counts = dict(self._db.execute("SELECT state, COUNT(*) FROM outbox GROUP BY state").fetchall())
            total = self._bytes
        inflight = counts.get(INFLIGHT, 0)
        return {"pending": counts.get(PENDING, 0) + inflight, "inflight": inflight, "sent": counts.get(SENT, 0),
                "bytes": total}

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()
