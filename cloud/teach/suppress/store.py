"""Where the cloud keeps suppressions: proposed, accepted, rejected, with their evidence and who decided.

Two implementations of one Protocol, as the other tables: `SQLiteSuppressions` (a table in the SQLite store's
file, on its own connection: WAL lets both write) and `RedisSuppressions` (one hash under the store's prefix,
so several service processes see the same proposals). A record is one JSON document (`Proposal`).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ....shared.suppression import SuppressionRule
from ...storage.store import SQLiteStore, StoreError
from .openapi import STATUSES

if TYPE_CHECKING:
    import redis

    from ...config import CloudConfig

Status = Literal["proposed", "accepted", "rejected"]
MAX_EVIDENCE = 32


class Proposal(BaseModel):
    """A suppression for one device's camera and what it rests on: the rule, the benign events that made it
    (`evidence`, newest last, at most MAX_EVIDENCE of `count`), and its status with who decided and when."""

    model_config = ConfigDict(extra="ignore")

    device: str
    rule: SuppressionRule
    status: Status = "proposed"
    created_ms: int
    evidence: Annotated[list[str], Field(max_length=MAX_EVIDENCE)] = []
    count: int = 0
    sources: dict[str, int] = {}  # what said benign: "model" and, once operators say it, "feedback"
    decided_by: str | None = None  # "operator", "auto"
    decided_ms: int | None = None

    @property
    def id(self) -> str:
        return self.rule.id


class SuppressionStore(Protocol):
    def put(self, proposal: Proposal) -> None: ...

    def get(self, suppression_id: str) -> Proposal | None: ...

    def all(self) -> list[Proposal]: ...

    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS suppressions (
    id         TEXT PRIMARY KEY,
    device     TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    doc        TEXT NOT NULL   -- the Proposal as JSON
);
"""


class SQLiteSuppressions:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA busy_timeout=5000")
            self._conn.executescript(_SCHEMA)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise StoreError(f"{self.path}: cannot open the suppressions table: {exc}") from None
        self._lock = threading.Lock()

    def put(self, proposal: Proposal) -> None:
        try:
            with self._lock:
                self._conn.execute("INSERT OR REPLACE INTO suppressions (id, device, status, created_ms, doc) "
                                   "VALUES (?, ?, ?, ?, ?)", (proposal.id, proposal.device, proposal.status,
                                                              proposal.created_ms, proposal.model_dump_json()))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot store suppression {proposal.id}: {exc}") from None

    def get(self, suppression_id: str) -> Proposal | None:
        with self._lock:
            row = self._conn.execute("SELECT doc FROM suppressions WHERE id = ?", (suppression_id,)).fetchone()
        return Proposal.model_validate_json(row[0]) if row else None

    def all(self) -> list[Proposal]:
        with self._lock:
            rows = self._conn.execute("SELECT doc FROM suppressions ORDER BY created_ms, id").fetchall()
        return [Proposal.model_validate_json(doc) for (doc,) in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class RedisSuppressions:
    """Layout: `<prefix>:suppressions`, a hash of id -> Proposal JSON."""

    def __init__(self, client: redis.Redis, prefix: str = "edgetriage") -> None:
        self.client = client
        self.key = f"{prefix}:suppressions"

    def put(self, proposal: Proposal) -> None:
        self.client.hset(self.key, proposal.id, proposal.model_dump_json())

    def get(self, suppression_id: str) -> Proposal | None:
        doc = self.client.hget(self.key, suppression_id)
        return Proposal.model_validate_json(doc) if doc else None

    def all(self) -> list[Proposal]:
        found = [Proposal.model_validate_json(doc) for doc in self.client.hvals(self.key)]
        return sorted(found, key=lambda p: (p.created_ms, p.id))

    def close(self) -> None:
        """The client belongs to the store that lent it."""


def open_suppressions(config: CloudConfig, store: object) -> SuppressionStore:
    """Redis when `delivery.redis_url` is set (the Redis store's client when `store` is one), else a table in
    the SQLite store's file."""
    if config.delivery.redis_url:
        from ...storage.redis_store import RedisStore, connect_redis

        client = store.client if isinstance(store, RedisStore) else connect_redis(config.delivery.redis_url)
        return RedisSuppressions(client, config.delivery.redis_prefix)
    path = store.path if isinstance(store, SQLiteStore) else Path(config.store_path)
    return SQLiteSuppressions(path)


__all__ = ["STATUSES", "Proposal", "RedisSuppressions", "SQLiteSuppressions", "SuppressionStore",
           "open_suppressions"]
