"""Reads for worker threads: a question scanning thousands of events must not hold the lock the event path
writes under. `ThreadReads` reads a SQLite store on a read-only connection of each calling thread (WAL: readers
never block the writer, nor it them); any other store (Redis: a thread-safe connection pool) is read as it is."""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any, Protocol

from .store import SQLiteStore, _event_dict, events_query

log = logging.getLogger("edgetriage.cloud.store")


class EventReads(Protocol):
    """What a reader of events needs of a store (cloud.ask)."""

    def list_events(self, device: str | None = None, label: str | None = None, limit: int = 50,
                    before: str | None = None, **filters: Any) -> list[dict[str, Any]]: ...


class ThreadReads:
    """`list_events` of a SQLiteStore on a read-only connection per thread, opened on first use; the store's
    own (locked) connection when one cannot be opened."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def _connection(self) -> sqlite3.Connection | None:
        conn = getattr(self._local, "conn", None)
        if conn is None and not self._closed:
            try:
                conn = sqlite3.connect(f"{self.store.path.resolve().as_uri()}?mode=ro", uri=True,
                                       check_same_thread=False)
                conn.execute("PRAGMA busy_timeout=5000")
                conn.execute("PRAGMA query_only=1")
            except sqlite3.DatabaseError as exc:
                log.warning("questions read %s through the service's connection: %s", self.store.path, exc)
                return None
            with self._lock:
                self._opened.append(conn)
            self._local.conn = conn
        return conn

    def list_events(self, device: str | None = None, label: str | None = None, limit: int = 50,
                    before: str | None = None, **filters: Any) -> list[dict[str, Any]]:
        conn = self._connection()
        if conn is None:
            return self.store.list_events(device, label, limit, before, **filters)
        sql, args = events_query(device, label, limit, before, **filters)
        rows = conn.execute(sql, args).fetchall()
        return [_event_dict(*row) for row in rows]

    def close(self) -> None:
        """Close every thread's connection (call once the threads are done)."""
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()


def reads_of(store: Any) -> EventReads:
    """How worker threads read `store`'s events."""
    return ThreadReads(store) if isinstance(store, SQLiteStore) else store
