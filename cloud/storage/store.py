"""Durable record of what the service received and answered, and the index the verdict cache searches.

`Store` is the interface the service and the API use; `SQLiteStore` is the default (one process), and
storage.redis_store has the one several processes share. SQLiteStore keeps everything in one SQLite file in WAL mode
with synchronous=NORMAL: a commit survives a process crash (not necessarily a
power cut), readers never block the writer, and a commit costs well under a millisecond, so the service
can store a verdict before it publishes it without slowing the message path. One connection, guarded by
a lock, so the store may be called from any thread; the WAL is copied into the database file by a thread
of its own (`Checkpoints`), never inside a commit on the event loop.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...shared.protocol import Event, Verdict, encode_verdict
from ...shared.reuse import DEFAULT_MIN_SIMILARITY, Candidate, bucket, nearest, still_answers, worth_filing

log = logging.getLogger("edgetriage.cloud.store")

SCHEMA_VERSION = 1
_BITS64 = (1 << 64) - 1
_SEEN_MAX = 4096
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    event_id    TEXT PRIMARY KEY,
    device      TEXT NOT NULL,
    camera      TEXT NOT NULL,
    label       TEXT NOT NULL,
    received_ms INTEGER NOT NULL,
    doc         TEXT NOT NULL,   -- the event as JSON, without the crop
    crop        BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_device ON events (device, event_id);
CREATE INDEX IF NOT EXISTS events_by_label ON events (label, event_id);
CREATE TABLE IF NOT EXISTS verdicts (
    event_id   TEXT PRIMARY KEY,
    created_ms INTEGER NOT NULL,
    doc        TEXT NOT NULL     -- the verdict exactly as published (protocol JSON)
);
CREATE TABLE IF NOT EXISTS rules (
    event_id       TEXT PRIMARY KEY REFERENCES verdicts (event_id),
    scope_key      TEXT NOT NULL,
    label          TEXT NOT NULL,
    phash_alg      TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    phash          INTEGER NOT NULL, -- the 64 hash bits as a signed integer, for hamming64()
    max_distance   INTEGER NOT NULL,
    created_ms     INTEGER NOT NULL,
    expires_ms     INTEGER NOT NULL,
    embedding      BLOB,             -- the crop's appearance embedding (int8), NULL when it had none
    min_similarity REAL,
    operator       INTEGER           -- 1 for the rule of an operator's verdict (cloud.teach.feedback): reuse prefers it
);
CREATE INDEX IF NOT EXISTS rules_lookup ON rules (scope_key, label, phash_alg, prompt_version, expires_ms);
"""


class StoreError(RuntimeError):
    """The state file cannot be used; the message names the file and what to do."""


@runtime_checkable
class Store(Protocol):
    """Events, verdicts and the verdict cache. Every method is thread-safe and fast (no network round trip
    longer than a local Redis call), since the service calls it on its event loop."""

    def put_event(self, event: Event, received_ms: int) -> bool:
        """Record an event; False when its event_id is already stored (a redelivery or a retry)."""
        ...

    def put_verdict(self, verdict: Verdict) -> None:
        """Record (or replace) the verdict for an event, and file its reuse rule where lookup finds it. A
        verdict reused from another whose crop is within half the rule's distance of that one's adds no reach
        and may be left unfiled (it would only make lookups slower)."""
        ...

    def put_answered(self, event: Event, received_ms: int, verdict: Verdict) -> bool:
        """`put_event` and `put_verdict` at once, all or nothing: False, nothing written, for a repeat."""
        ...

    def put_answered_many(self, items: list[tuple[Event, int, Verdict, bytes]]) -> list[bool]:
        """`put_answered` for several events in one transaction (or pipeline), one answer each; each verdict
        comes with its document as it is published (encode_verdict), which is stored as it is."""
        ...

    def get_verdict(self, event_id: str) -> Verdict | None: ...

    def lookup(self, *, scope_key: str, label: str, phash: str, phash_alg: str, prompt_version: str,
               now_ms: int, embedding: bytes | None = None, device: str | None = None,
               people: bool = False) -> Verdict | None:
        """The unexpired verdict whose reuse rule reaches this crop (its hash, or its embedding when both
        have one), as shared.reuse.best ranks them."""
        ...

    def lookup_many(self, queries: list[dict[str, Any]]) -> list[Verdict | None]:
        """`lookup` for several events (each a dict of its keywords), one answer each, in one round trip
        where the store is across a network."""
        ...

    def list_events(self, device: str | None = None, label: str | None = None, limit: int = 50,
                    before: str | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Events newest first with their verdicts; `before` is the event_id that ends the previous page.
        Further filters (camera, verdict, source, since_ms, until_ms) are optional for an implementation:
        callers pass them only when used."""
        ...

    def get_event(self, event_id: str) -> dict[str, Any] | None: ...

    def get_crop(self, event_id: str) -> bytes | None: ...

    def counts(self) -> dict[str, int]: ...

    def close(self) -> None: ...


@runtime_checkable
class Retention(Protocol):
    """A store that deletes old data itself when asked (SQLite); one with expiring keys need not."""

    def sweep(self, crops_before_ms: int | None, events_before_ms: int | None) -> tuple[int, int]: ...


class Checkpoints:
    """Copies the WAL's committed pages into the database file on a thread of its own, with a connection of
    its own, at most every `interval_s` after a commit. SQLite would otherwise do it inside the commit that
    takes the WAL past 1,000 pages (4 MB: every ~250 cache hits with their crops), copying them and syncing
    the file twice on the event loop. Its checkpoints are PASSIVE (they never wait for the writer), so under
    a steady stream of commits the WAL is never found fully copied and cannot start over; past `bound_bytes`
    one RESTART checkpoint waits for the writer and lets it start over (the writer waits for it once)."""

    def __init__(self, path: Path, interval_s: float = 0.2, bound_bytes: int = 64 << 20) -> None:
        self._wal = f"{path}-wal"
        self._interval_s = interval_s
        self._bound = bound_bytes
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"checkpoint-{path.name}", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self._closed.set()
        self._wake.set()
        self._thread.join()
        self._conn.close()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._closed.is_set():
                return
            self._wake.clear()
            try:
                big = os.path.getsize(self._wal) > self._bound
            except OSError:  # no WAL file (yet)
                big = False
            try:
                self._conn.execute(f"PRAGMA wal_checkpoint({'RESTART' if big else 'PASSIVE'})").fetchone()
            except sqlite3.DatabaseError as exc:  # e.g. a full disk: the WAL keeps the data; tried again later
                log.warning("cannot copy the WAL into %s: %s", self._wal[:-4], exc)
            self._closed.wait(self._interval_s)



def still_answering(found: list[Verdict | None], queries: list[dict[str, Any]]) -> list[Verdict | None]:
    """Each verdict a lookup found, where the shared reuse rule (shared.reuse.still_answers) says it still answers
    its query; None where it does not, or where nothing was found. The last word of both stores' lookups."""
    return [v if v is not None and still_answers(v.cache, v.created_ms, q["label"], q["phash"], q["phash_alg"],
                                                 q["now_ms"], q.get("embedding"), q.get("device"),
                                                 q.get("people", False)) else None
            for v, q in zip(found, queries, strict=True)]

class SQLiteStore:
    """The default store: one SQLite file (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA wal_autocheckpoint=0")  # Checkpoints does it, off the event loop
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise StoreError(f"{self.path}: store schema version {version} is newer than this service "
                                 f"understands ({SCHEMA_VERSION}); upgrade edgetriage or use another store_path")
            conn.executescript(_SCHEMA)
            _add_embedding_columns(conn)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._checkpoints = Checkpoints(self.path)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot open the cloud store: {exc} "
                             "(check the path and its permissions, or set store_path)") from None
        except OSError as exc:  # e.g. a folder on the way is a file, or may not be written
            raise StoreError(f"{self.path}: cannot open the cloud store: {exc.strerror or exc} "
                             "(check the path and its permissions, or set store_path)") from None
        self._conn = conn
        self._lock = threading.Lock()
        # the verdicts lookups found, parsed once: event id -> (made ms, verdict); dropped when one is filed again
        self._seen: dict[str, tuple[int, Verdict]] = {}

    def close(self) -> None:
        self._checkpoints.close()  # first: the last connection closed copies what is left and removes the WAL
        with self._lock:
            self._conn.close()

    @contextmanager
    def _written(self, what: str) -> Iterator[None]:
        """A write that fails (a full disk, a file gone bad) as StoreError saying so in one line; nothing of
        it is kept, and the caller acknowledges nothing it could not store. Once written, the WAL is due
        to be copied into the file (`Checkpoints`)."""
        try:
            yield
            self._checkpoints.committed()
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot store {what}: {exc}; free space on its disk (store_path); "
                             "the event stays unanswered and is taken up again") from None

    # -- writes ----------------------------------------------------------------------------------------
    def put_event(self, event: Event, received_ms: int) -> bool:
        """Record an event; False when its event_id is already stored (a redelivery or a retry)."""
        doc = event.model_dump_json(by_alias=True, exclude={"crop"})
        with self._lock, self._written(f"event {event.event_id}"):
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO events (event_id, device, camera, label, received_ms, doc, crop) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (event.event_id, event.device, event.camera, event.label, received_ms, doc, event.crop),
            )
            return cur.rowcount == 1

    def put_verdict(self, verdict: Verdict) -> None:
        """Record (or replace) the verdict for an event, and file its reuse rule where lookup finds it."""
        with self._lock, self._written(f"the verdict for {verdict.event_id}"), self._conn:
            self._conn.execute("BEGIN")
            self._file_verdict(verdict, encode_verdict(verdict), {})

    def put_answered(self, event: Event, received_ms: int, verdict: Verdict) -> bool:
        """A new event and its verdict in one transaction (a cache hit: one commit, nothing else written);
        False, with nothing written, when the event id is already stored."""
        return self.put_answered_many([(event, received_ms, verdict, encode_verdict(verdict))])[0]

    def put_answered_many(self, items: list[tuple[Event, int, Verdict, bytes]]) -> list[bool]:
        """`put_answered` for several hits in one commit (cloud.broker.intake); one answer each. The hits of one
        call reuse verdicts stored before it, so each source rule is read once per call."""
        out = []
        sources: dict[str, Candidate | None] = {}
        with self._lock, self._written(f"{len(items)} answered event(s)"), self._conn:
            self._conn.execute("BEGIN")
            for event, received_ms, verdict, published in items:
                doc = event.model_dump_json(by_alias=True, exclude={"crop"})
                new = self._conn.execute(
                    "INSERT OR IGNORE INTO events (event_id, device, camera, label, received_ms, doc, crop) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (event.event_id, event.device, event.camera, event.label, received_ms, doc, event.crop),
                ).rowcount == 1
                if new:
                    self._file_verdict(verdict, published, sources)
                out.append(new)
        return out

    def _file_verdict(self, verdict: Verdict, published: bytes, sources: dict[str, Candidate | None]) -> None:
        """Inside a transaction: the verdict (`published`: its document as published), and its rule unless
        shared.reuse.worth_filing says otherwise. `sources`: the source rules read so far in this
        transaction, by event id (the verdicts it reuses were stored before it began)."""
        self._seen.pop(verdict.event_id, None)
        self._conn.execute("INSERT OR REPLACE INTO verdicts (event_id, created_ms, doc) VALUES (?, ?, ?)",
                           (verdict.event_id, verdict.created_ms, published.decode()))
        self._conn.execute("DELETE FROM rules WHERE event_id = ?", (verdict.event_id,))
        rule = verdict.cache
        if rule is None:
            return
        source = None
        if verdict.reused_from and verdict.reused_from != verdict.event_id:
            if verdict.reused_from not in sources:
                row = self._conn.execute(f"SELECT {_CANDIDATE} FROM rules WHERE event_id = ?",
                                         (verdict.reused_from,)).fetchone()
                sources[verdict.reused_from] = _candidate(*row) if row is not None else None
            source = sources[verdict.reused_from]
        if worth_filing(rule, verdict.event_id, verdict.reused_from, source, verdict.created_ms):
            self._conn.execute(
                "INSERT INTO rules (event_id, scope_key, label, phash_alg, prompt_version, phash, "
                "max_distance, created_ms, expires_ms, embedding, min_similarity, operator) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (verdict.event_id, *bucket(rule), _signed64(rule.phash), rule.max_distance, verdict.created_ms,
                 verdict.created_ms + rule.ttl_s * 1000, rule.embedding, rule.min_similarity, int(rule.operator)),
            )

    # -- reads -----------------------------------------------------------------------------------------
    def get_verdict(self, event_id: str) -> Verdict | None:
        with self._lock:
            row = self._conn.execute("SELECT doc FROM verdicts WHERE event_id = ?", (event_id,)).fetchone()
        return Verdict.model_validate_json(row[0]) if row else None

    def lookup(self, *, scope_key: str, label: str, phash: str, phash_alg: str, prompt_version: str,
               now_ms: int, embedding: bytes | None = None, device: str | None = None,
               people: bool = False) -> Verdict | None:
        """The unexpired verdict whose reuse rule reaches this crop, as shared.reuse.best ranks them.

        The index range narrows to the unexpired rules filed under this scope key, label, hash algorithm
        and prompt version; shared.reuse picks among them (the device cache and the Redis store call the
        same function) and the winner's own rule is checked once more as it was published.
        """
        return self.lookup_many([{"scope_key": scope_key, "label": label, "phash": phash, "phash_alg": phash_alg,
                                  "prompt_version": prompt_version, "now_ms": now_ms, "embedding": embedding,
                                  "device": device, "people": people}])[0]

    def lookup_many(self, queries: list[dict[str, Any]]) -> list[Verdict | None]:
        """`lookup` for several events (each a dict of its keywords), one answer each; the events of one
        bucket share one index range read (a burst of look-alikes reads it once)."""
        ranges: dict[tuple[str, str, str, str], list[Candidate]] = {}
        since = min((q["now_ms"] for q in queries), default=0)
        found: list[Verdict | None] = []
        with self._lock:
            for q in queries:
                key = (q["scope_key"], q["label"], q["phash_alg"], q["prompt_version"])
                if key not in ranges:
                    ranges[key] = [_candidate(*row) for row in self._conn.execute(
                        f"SELECT {_CANDIDATE} FROM rules WHERE scope_key = ? "
                        "AND label = ? AND phash_alg = ? AND prompt_version = ? AND expires_ms >= ?", (*key, since))]
                best = nearest(ranges[key], q["phash"], q["now_ms"], embedding=q.get("embedding"))
                found.append(None if best is None else self._verdict_of(best))
        return still_answering(found, queries)

    def _verdict_of(self, best: Candidate) -> Verdict | None:
        """The verdict of a filed rule, parsed once (the lock is held)."""
        known = self._seen.get(best.ref)
        if known is not None and known[0] == best.made_ms:
            return known[1]
        doc = self._conn.execute("SELECT doc FROM verdicts WHERE event_id = ?", (best.ref,)).fetchone()
        if doc is None:
            return None
        verdict = Verdict.model_validate_json(doc[0])
        if len(self._seen) >= _SEEN_MAX:
            self._seen.clear()
        self._seen[best.ref] = (best.made_ms, verdict)
        return verdict

    def list_events(self, device: str | None = None, label: str | None = None, limit: int = 50,
                    before: str | None = None, *, camera: str | None = None, verdict: str | None = None,
                    source: str | None = None, since_ms: int | None = None,
                    until_ms: int | None = None) -> list[dict[str, Any]]:
        """Events newest first, each with its verdict (or None). `before` is an event_id: event ids are
        UUIDv7, so they sort by capture time and page without gaps or repeats. since_ms/until_ms bound the
        time the service received them; verdict/source filter on the verdict given."""
        sql, args = events_query(device, label, limit, before, camera=camera, verdict=verdict, source=source,
                                 since_ms=since_ms, until_ms=until_ms)
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [_event_dict(*row) for row in rows]

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """The event's fields (the crop only as its size in bytes) and its verdict, if it has one."""
        with self._lock:
            row = self._conn.execute(
                "SELECT e.doc, e.received_ms, length(e.crop), v.doc FROM events e "
                "LEFT JOIN verdicts v ON v.event_id = e.event_id WHERE e.event_id = ?",
                (event_id,),
            ).fetchone()
        return _event_dict(*row) if row else None

    def get_crop(self, event_id: str) -> bytes | None:
        """The JPEG the device sent with the event; None once retention deleted it."""
        with self._lock:
            row = self._conn.execute("SELECT crop FROM events WHERE event_id = ?", (event_id,)).fetchone()
        return bytes(row[0]) if row and row[0] else None

    def sweep(self, crops_before_ms: int | None, events_before_ms: int | None) -> tuple[int, int]:
        """Retention: delete the crops of events received before `crops_before_ms`, then the events (with
        their verdicts and reuse rules) received before `events_before_ms`. (crops, events) deleted."""
        crops = events = 0
        with self._lock, self._conn:
            self._conn.execute("BEGIN")
            if crops_before_ms is not None:
                crops = self._conn.execute("UPDATE events SET crop = x'' WHERE received_ms < ? AND length(crop) > 0",
                                           (crops_before_ms,)).rowcount
            if events_before_ms is not None:
                old = "SELECT event_id FROM events WHERE received_ms < ?"
                cut = (events_before_ms, events_before_ms)
                self._conn.execute(f"DELETE FROM rules WHERE event_id IN ({old}) OR created_ms < ?", cut)
                self._conn.execute(f"DELETE FROM verdicts WHERE event_id IN ({old}) OR created_ms < ?", cut)
                events = self._conn.execute("DELETE FROM events WHERE received_ms < ?", (events_before_ms,)).rowcount
        return crops, events

    def counts(self) -> dict[str, int]:
        with self._lock:
            events = self._conn.execute("SELECT count(*) FROM events").fetchone()[0]
            verdicts = self._conn.execute("SELECT count(*) FROM verdicts").fetchone()[0]
        return {"events": events, "verdicts": verdicts}


def events_query(device: str | None = None, label: str | None = None, limit: int = 50, before: str | None = None, *,
                 camera: str | None = None, verdict: str | None = None, source: str | None = None,
                 since_ms: int | None = None, until_ms: int | None = None) -> tuple[str, list[Any]]:
    """The SQL (and its arguments) of `SQLiteStore.list_events`: rows for `_event_dict`."""
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("e.device", device), ("e.label", label), ("e.camera", camera)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if before is not None:
        where.append("e.event_id < ?")
        args.append(before)
    if since_ms is not None:
        where.append("e.received_ms >= ?")
        args.append(int(since_ms))
    if until_ms is not None:
        where.append("e.received_ms < ?")
        args.append(int(until_ms))
    if verdict is not None:
        where.append("json_extract(v.doc, '$.verdict') = ?")
        args.append(verdict)
    if source is not None:
        where.append("json_extract(v.doc, '$.source') = ?")
        args.append(source)
    sql = ("SELECT e.doc, e.received_ms, length(e.crop), v.doc FROM events e "
           "LEFT JOIN verdicts v ON v.event_id = e.event_id")
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY e.event_id DESC LIMIT ?"
    args.append(max(0, int(limit)))
    return sql, args


def _event_dict(event_doc: str, received_ms: int, crop_bytes: int, verdict_doc: str | None) -> dict[str, Any]:
    out = json.loads(event_doc)
    out["received_ms"] = received_ms
    out["crop_bytes"] = crop_bytes
    out["verdict"] = json.loads(verdict_doc) if verdict_doc is not None else None
    return out


def _signed64(phash: str) -> int:
    """A 16-hex-digit hash as the signed 64-bit integer SQLite stores."""
    value = int(phash, 16)
    return value - (1 << 64) if value >= 1 << 63 else value


_CANDIDATE = "event_id, phash, max_distance, created_ms, expires_ms, embedding, min_similarity, operator"


def _candidate(event_id: str, phash: int, max_distance: int, created_ms: int, expires_ms: int,
               embedding: bytes | None, min_similarity: float | None, operator: int | None) -> Candidate:
    return Candidate(event_id, f"{phash & _BITS64:016x}", max_distance, created_ms, (expires_ms - created_ms) // 1000,
                     bytes(embedding) if embedding is not None else None,
                     min_similarity if min_similarity is not None else DEFAULT_MIN_SIMILARITY, operator=bool(operator))


def _add_embedding_columns(conn: sqlite3.Connection) -> None:
    """A store made before reuse by embedding gets its two rule columns (NULL: rules reach by hash only), one
    made before operator feedback its `operator` column (NULL: a model's rule)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(rules)")}
    for column, kind in (("embedding", "BLOB"), ("min_similarity", "REAL"), ("operator", "INTEGER")):
        if column not in have:
            conn.execute(f"ALTER TABLE rules ADD COLUMN {column} {kind}")
