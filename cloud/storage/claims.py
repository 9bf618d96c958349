"""Claims: which worker is answering which event, on a lease that runs out if the worker dies.

Why: with MQTT 5 an event is acknowledged to the broker once a claim on it is stored (or its verdict is),
not when it arrives. From then on the broker forgets it; the claim is the only record that someone is
working on it. A worker renews the leases of the claims it holds while it works; one that dies stops
renewing, its leases run out, and any worker (the restarted one, or another on the same shared
subscription) takes the event over from the store (`expired()`), so it is answered, and answered once:
a claim is only granted while no live lease exists, and a verdict is only stored by the claim's holder.

Two implementations of one Protocol: `SQLiteClaims` (one service process, a file next to its store, so a
restarted process sees what the dead one held) and `RedisClaims` (several processes on one Redis).
Times are the callers' wall clock in ms; leases are short (seconds), so clocks only need to agree that well.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ...shared.clock import now_ms
from .store import StoreError

if TYPE_CHECKING:
    import redis

    from ..config import CloudConfig

log = logging.getLogger("edgetriage.cloud.claims")


def new_owner(name: str) -> str:
    """A claim owner id for one process: a restarted process is a new owner, so it never mistakes the
    dead one's claims for its own (they must run out first)."""
    return f"{name}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Claims(Protocol):
    """Leases on event ids, held by `owner`."""

    owner: str

    def acquire(self, event_id: str, lease_s: float) -> bool:
        """Take the claim unless another owner holds a live lease on it."""
        ...

    def renew(self, event_ids: Iterable[str], lease_s: float) -> list[str]:
        """Extend our leases; returns the ids we no longer hold (ran out and taken, or released)."""
        ...

    def holds(self, event_id: str) -> bool: ...

    def release(self, event_id: str) -> None:
        """Drop our claim: its verdict is stored."""
        ...

    def abandon(self, event_id: str) -> None:
        """End our lease now but leave the claim listed as expired, so any worker takes the event over
        (we stop without answering it, or answering it failed)."""
        ...

    def expired(self, limit: int = 100) -> list[str]:
        """Claims whose lease ran out without a release: events a dead worker left unanswered."""
        ...

    def forget(self, event_id: str) -> None:
        """Remove an expired claim whose event turned out to be answered (or unanswerable)."""
        ...

    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    event_id   TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS claims_expiry ON claims (expires_ms);
"""


class SQLiteClaims:
    """Claims in a SQLite file (WAL), for a service that runs as one process."""

    def __init__(self, path: str | Path, owner: str) -> None:
        self.path = Path(path)
        self.owner = owner
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=5000")
            db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"{self.path}: cannot open the claims file: {getattr(exc, 'strerror', None) or exc} "
                             "(check the folder of store_path and its permissions)") from None
        self._db = db

    def acquire(self, event_id: str, lease_s: float) -> bool:
        now = now_ms()
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO claims (event_id, owner, expires_ms) VALUES (?, ?, ?) "
                "ON CONFLICT (event_id) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms "
                "WHERE claims.expires_ms < ? OR claims.owner = excluded.owner",
                (event_id, self.owner, now + int(lease_s * 1000), now))
            return cur.rowcount == 1

    def renew(self, event_ids: Iterable[str], lease_s: float) -> list[str]:
        expires = now_ms() + int(lease_s * 1000)
        lost = []
        with self._lock:
            for event_id in event_ids:
                cur = self._db.execute("UPDATE claims SET expires_ms = ? WHERE event_id = ? AND owner = ?",
                                       (expires, event_id, self.owner))
                if cur.rowcount != 1:
                    lost.append(event_id)
        return lost

    def holds(self, event_id: str) -> bool:
        with self._lock:
            row = self._db.execute("SELECT owner FROM claims WHERE event_id = ?", (event_id,)).fetchone()
        return row is not None and row[0] == self.owner

    def release(self, event_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM claims WHERE event_id = ? AND owner = ?", (event_id, self.owner))

    def abandon(self, event_id: str) -> None:
        with self._lock:
            self._db.execute("UPDATE claims SET expires_ms = 0 WHERE event_id = ? AND owner = ?",
                             (event_id, self.owner))

    def expired(self, limit: int = 100) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT event_id FROM claims WHERE expires_ms < ? ORDER BY expires_ms LIMIT ?",
                                    (now_ms(), limit)).fetchall()
        return [r[0] for r in rows]

    def forget(self, event_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM claims WHERE event_id = ? AND expires_ms < ?", (event_id, now_ms()))

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()


# KEYS[1] claim key, KEYS[2] expiry index; ARGV owner, lease ms, expiry ms, event id
_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
"""
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
end
return 1
"""
_ABANDON = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZADD', KEYS[2], 0, ARGV[2])
end
return 1
"""
_FORGET = """
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('ZREM', KEYS[2], ARGV[1]) end
return 1
"""


class RedisClaims:
    """Claims in Redis: `<prefix>:claim:<event id>` holds the owner with the lease as its TTL (Redis ends
    it on time even if every worker is gone); `<prefix>:claims` indexes them by expiry for `expired()`."""

    def __init__(self, client: redis.Redis, prefix: str, owner: str) -> None:
        self.client = client
        self.prefix = prefix
        self.owner = owner
        self._index = f"{prefix}:claims"
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._abandon = client.register_script(_ABANDON)
        self._forget = client.register_script(_FORGET)

    def _key(self, event_id: str) -> str:
        return f"{self.prefix}:claim:{event_id}"

    def acquire(self, event_id: str, lease_s: float) -> bool:
        lease_ms = max(1, int(lease_s * 1000))
        return bool(self._acquire(keys=[self._key(event_id), self._index],
                                  args=[self.owner, lease_ms, now_ms() + lease_ms, event_id]))

    def renew(self, event_ids: Iterable[str], lease_s: float) -> list[str]:
        lease_ms = max(1, int(lease_s * 1000))
        ids = list(event_ids)
        if not ids:
            return []
        pipe = self.client.pipeline(transaction=False)
        expires = now_ms() + lease_ms
        for event_id in ids:
            self._renew(keys=[self._key(event_id), self._index], args=[self.owner, lease_ms, expires, event_id],
                        client=pipe)
        return [event_id for event_id, ok in zip(ids, pipe.execute(), strict=True) if not ok]

    def holds(self, event_id: str) -> bool:
        holder = self.client.get(self._key(event_id))
        return holder is not None and (holder.decode() if isinstance(holder, bytes) else holder) == self.owner

    def release(self, event_id: str) -> None:
        self._release(keys=[self._key(event_id), self._index], args=[self.owner, event_id])

    def abandon(self, event_id: str) -> None:
        self._abandon(keys=[self._key(event_id), self._index], args=[self.owner, event_id])

    def expired(self, limit: int = 100) -> list[str]:
        ids = self.client.zrangebyscore(self._index, "-inf", now_ms() - 1, start=0, num=limit)
        return [i.decode() if isinstance(i, bytes) else i for i in ids]

    def forget(self, event_id: str) -> None:
        self._forget(keys=[self._key(event_id), self._index], args=[event_id])

    def close(self) -> None:
        pass  # the Redis client belongs to whoever made it


class ClaimKeeper:
    """The claims one service process holds: taken before an event is worked on, renewed while the work
    runs (`renew()` every third of a lease), released once its verdict is stored.

    A lease that ran out under us (the store was away longer than a lease, or came back without its data)
    is taken again when no other worker holds it: "lost" means another worker has it and answers it, never
    that nobody does. A claim taken again (`was_retaken`) is checked for a verdict stored meanwhile."""

    def __init__(self, claims: Claims, lease_s: float) -> None:
        self.claims = claims
        self.lease_s = lease_s
        self.held: set[str] = set()
        self.retaken: set[str] = set()  # held claims that ran out once and were taken again
        self.lost = 0  # leases another worker took over from us; our work on them is discarded

    def take(self, event_id: str, *, again: bool = False) -> bool:
        """Claim it unless another worker holds a live lease; `again`: it is one whose lease ran out under us."""
        if self.claims.acquire(event_id, self.lease_s):
            self.held.add(event_id)
            if again:
                self.retaken.add(event_id)
            return True
        return False

    def was_retaken(self, event_id: str) -> bool:
        return event_id in self.retaken

    def still_held(self, event_id: str) -> bool:
        """Checked just before a verdict is stored, so a worker whose lease ran out stores nothing."""
        return event_id in self.held and self.claims.holds(event_id)

    def done(self, event_id: str) -> None:
        self.held.discard(event_id)
        self.retaken.discard(event_id)
        self.claims.release(event_id)

    def abandon(self, event_id: str) -> None:
        self.held.discard(event_id)
        self.retaken.discard(event_id)
        self.claims.abandon(event_id)

    def renew(self) -> list[str]:
        """Extend our leases; those that ran out are taken again where nobody else holds them. Returns the
        ids another worker holds now."""
        ran_out = self.claims.renew(sorted(self.held), self.lease_s)
        lost = [event_id for event_id in ran_out if not self.take(event_id, again=True)]
        for event_id in lost:
            self.held.discard(event_id)
            self.retaken.discard(event_id)
        if len(lost) < len(ran_out):
            log.info("took the claim on %d event(s) again: their leases ran out (the store was away) and no "
                     "other worker held them", len(ran_out) - len(lost))
        if lost:
            self.lost += len(lost)
            log.warning("lost the claim on %d event(s) to another worker, which answers them (this process "
                        "stalled longer than a %.0f s lease)", len(lost), self.lease_s)
        return lost

    def orphans(self, limit: int = 100) -> list[str]:
        """Expired claims not held here: events a dead (or stopped) worker left unanswered."""
        return [e for e in self.claims.expired(limit) if e not in self.held]


def claims_path(store_path: str | Path, name: str = "claims") -> Path:
    """Where a single process keeps its claims (`name`: "claims", or "finals" for cloud.route.finals): beside its
    SQLite store."""
    path = Path(store_path)
    return path.with_name(f"{path.stem}.{name}.db")


def open_claims(config: CloudConfig, owner: str, store: object | None = None, name: str = "claims") -> Claims:
    """Redis claims when `delivery.redis_url` is set (several processes; the Redis store's client is shared
    when `store` is one), else a SQLite file beside the SQLite store (`store.path`, or `store_path`). `name`
    keeps claims of another kind apart ("finals": the pending final answers of cloud.route.finals), under
    `<redis_prefix>:<name>` or in `<store>.<name>.db`."""
    delivery = config.delivery
    if delivery.redis_url:
        from .redis_store import RedisStore, connect_redis

        client = store.client if isinstance(store, RedisStore) else connect_redis(delivery.redis_url)
        prefix = delivery.redis_prefix if name == "claims" else f"{delivery.redis_prefix}:{name}"
        return RedisClaims(client, prefix, owner)
    return SQLiteClaims(claims_path(getattr(store, "path", None) or config.store_path, name), owner)
