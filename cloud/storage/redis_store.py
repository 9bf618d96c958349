"""The cloud store in Redis, for several service processes on one MQTT 5 shared subscription.

Same contract as the SQLite store (storage.store): the seen event ids (`put_event` answers False for an id
already stored, atomically, whichever worker asks first), the verdicts (stored before they are published),
and the reuse rules the verdict cache searches. Every key starts with one prefix, so several deployments
(or test runs) can share one Redis and one can be deleted without touching the others (`delete_all`).

Layout under `<prefix>:`
    ev:<id>           hash: doc (event JSON without the crop), received_ms, device, label, crop (JPEG bytes)
    events            sorted set of event ids, all scores 0: ids are UUIDv7, so lexicographic = capture time
    events:d:<device> / events:l:<label>   the same, per device and per label
    vd:<id>           the verdict exactly as published (protocol JSON)
    rules:<bucket>    sorted set, score = expiry ms, member "<phash>|<max_distance>|<created_ms>|<event id>",
                      then "|<min_similarity>|<embedding, base64>" when the rule has an embedding,
                      and "|o" last for the rule of an operator's verdict (cloud.teach.feedback);
                      a bucket is one (scope key, label, hash algorithm, prompt version)
    nverdicts         count of distinct verdicts
    crops_swept       the event id up to which retention has deleted crops

Calls are synchronous and short (one round trip, a Lua script where several keys must change together);
the service makes them on its event loop as it does with SQLite, so Redis belongs on the same LAN.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

from ...shared.config import ConfigError
from ...shared.protocol import Event, Verdict, encode_verdict
from ...shared.reuse import Candidate, bucket, candidate, nearest, worth_filing
from ..config import CloudConfig
from .store import SQLiteStore, still_answering

try:  # the `cloud` extra; only needed when a Redis URL is configured
    import redis
except ImportError:  # pragma: no cover - reported by connect_redis
    redis = None  # type: ignore[assignment]

REDIS_PASSWORD_ENV = "EDGETRIAGE_REDIS_PASSWORD"
_SCAN_PAGE = 200
_SEEN_MAX = 4096

# Writing an event, alone (_PUT_EVENT) or with its verdict (_PUT_ANSWERED).
# KEYS: ev:<id>, events, events:d:<device>, events:l:<label>
# ARGV: doc, received_ms, device, label, crop, event id
_EVENT_LINES = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'doc', ARGV[1], 'received_ms', ARGV[2], 'device', ARGV[3], 'label', ARGV[4],
           'crop', ARGV[5])
redis.call('ZADD', KEYS[2], 0, ARGV[6])
redis.call('ZADD', KEYS[3], 0, ARGV[6])
redis.call('ZADD', KEYS[4], 0, ARGV[6])
"""
_PUT_EVENT = _EVENT_LINES + "return 1\n"
# KEYS: vd:<id>, nverdicts, new rule bucket ('' for none), old rule bucket ('' for none),
#       bucket of the rule it was reused from ('' for none: file the new rule regardless)
# ARGV: verdict doc, new member, new expiry ms, old member, now ms, source member
# shared.reuse.worth_filing decided in Python that the new rule adds nothing *if* its source is filed; the
# script files it only when the source's rule is not in its bucket (never filed, or already swept).
_PUT_VERDICT = """
local old = redis.call('SET', KEYS[1], ARGV[1], 'GET')
if not old then redis.call('INCR', KEYS[2]) end
if KEYS[4] ~= '' then redis.call('ZREM', KEYS[4], ARGV[4]) end
if KEYS[5] ~= '' and redis.call('ZSCORE', KEYS[5], ARGV[6]) then return 1 end
if KEYS[3] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[5])
end
return 1
"""


# A cache hit: the event and its verdict at once. KEYS: the four of _PUT_EVENT, then vd:<id>, nverdicts,
# new rule bucket ('' for none), source rule bucket ('' for none). ARGV: the six of _PUT_EVENT, then verdict
# doc, new member, new expiry ms, now ms, source member.
_PUT_ANSWERED = _EVENT_LINES + """redis.call('SET', KEYS[5], ARGV[7])
redis.call('INCR', KEYS[6])
if KEYS[8] ~= '' and redis.call('ZSCORE', KEYS[8], ARGV[11]) then return 1 end
if KEYS[7] ~= '' then
  redis.call('ZADD', KEYS[7], ARGV[9], ARGV[8])
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', '(' .. ARGV[10])
end
return 1
"""


def connect_redis(url: str) -> redis.Redis:
    """A client for `url` (redis://[user@]host:port/db or rediss:// for TLS); the password comes from the URL
    or EDGETRIAGE_REDIS_PASSWORD. Raises ConfigError when the package is missing or Redis cannot be reached,
    without repeating the password."""
    if redis is None:
        raise ConfigError("delivery.redis_url is set but the `redis` package is missing; "
                          "pip install 'edgetriage[cloud]' (or pip install redis)")
    parsed = urlparse(url)
    if parsed.scheme not in ("redis", "rediss", "unix"):
        raise ConfigError(f"delivery.redis_url must look like redis://HOST:PORT/DB, not {parsed.scheme}://...")
    where = f"{parsed.hostname or parsed.path}:{parsed.port or 6379}"
    kwargs: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0, "health_check_interval": 30}
    password = os.environ.get(REDIS_PASSWORD_ENV)
    if password and not parsed.password:
        kwargs["password"] = password
    try:
        client = redis.Redis.from_url(url, **kwargs)
        client.ping()
    except redis.RedisError as exc:
        raise ConfigError(f"cannot reach Redis at {where}: {type(exc).__name__}; check delivery.redis_url "
                          f"and {REDIS_PASSWORD_ENV}") from None
    return client


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _bucket(scope_key: str, label: str, phash_alg: str, prompt_version: str) -> str:
    raw = "\x00".join((scope_key, label, phash_alg, prompt_version)).encode()
    return hashlib.blake2b(raw, digest_size=12).hexdigest()


def _member(verdict: Verdict) -> tuple[str, str, int] | None:
    """(bucket, member, expiry ms) of a verdict's reuse rule, None when it has none."""
    rule = verdict.cache
    if rule is None:
        return None
    member = _member_text(candidate(rule, verdict.event_id, verdict.created_ms))
    return _bucket(*bucket(rule)), member, verdict.created_ms + rule.ttl_s * 1000


def _member_text(c: Candidate) -> str:
    text = f"{c.phash}|{c.max_distance}|{c.made_ms}|{c.ref}"
    if c.embedding is not None:
        text = f"{text}|{c.min_similarity!r}|{base64.b64encode(c.embedding).decode()}"
    return f"{text}|o" if c.operator else text


def _candidate(member: bytes | str, expires_ms: float) -> Candidate:
    phash, max_distance, created_ms, event_id, *seen = _text(member).split("|")
    ttl_s = (int(expires_ms) - int(created_ms)) // 1000
    operator = seen[-1:] == ["o"]
    if operator:
        seen.pop()
    if seen:
        return Candidate(event_id, phash, int(max_distance), int(created_ms), ttl_s, base64.b64decode(seen[1]),
                         float(seen[0]), operator=operator)
    return Candidate(event_id, phash, int(max_distance), int(created_ms), ttl_s, operator=operator)


class RedisStore:
    """Events, verdicts and the verdict cache's index in Redis; see the module docstring for the layout."""

    def __init__(self, client: redis.Redis, prefix: str = "edgetriage") -> None:
        self.client = client
        self.prefix = prefix
        self._put_event = client.register_script(_PUT_EVENT)
        self._put_verdict = client.register_script(_PUT_VERDICT)
        self._put_answered = client.register_script(_PUT_ANSWERED)
        # verdicts found by lookup, by their index member (which names the event id and when it was made, so
        # a replaced verdict has another member): a hit costs one read round trip, not two
        self._seen: dict[str, Verdict] = {}
        self._seen_member: dict[str, str] = {}  # event id -> member

    def _k(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def close(self) -> None:
        self.client.close()

    # -- writes ----------------------------------------------------------------------------------------
    def put_event(self, event: Event, received_ms: int) -> bool:
        """Record an event; False when its event_id is already stored (by this worker or any other)."""
        doc = event.model_dump_json(by_alias=True, exclude={"crop"})
        keys = [self._k("ev", event.event_id), self._k("events"), self._k("events", "d", event.device),
                self._k("events", "l", event.label)]
        return bool(self._put_event(keys=keys, args=[doc, received_ms, event.device, event.label, event.crop,
                                                     event.event_id]))

    def put_verdict(self, verdict: Verdict, now_ms: int | None = None) -> None:
        """Record (or replace) the verdict for an event and file its reuse rule where lookup finds it,
        unless shared.reuse.worth_filing says the filed verdict it was reused from already answers for it."""
        now = now_ms if now_ms is not None else verdict.created_ms
        source_id = verdict.reused_from if verdict.reused_from != verdict.event_id else None
        old_doc, source_doc = self.client.mget(self._k("vd", verdict.event_id), self._k("vd", source_id or "-"))
        old = _member(Verdict.model_validate_json(old_doc)) if old_doc else None
        new = _member(verdict)
        source = self._filed_source(verdict, source_doc, now)
        keys = [self._k("vd", verdict.event_id), self._k("nverdicts"),
                self._k("rules", new[0]) if new else "", self._k("rules", old[0]) if old else "",
                self._k("rules", source[0]) if source else ""]
        self._put_verdict(keys=keys, args=[encode_verdict(verdict), new[1] if new else "", new[2] if new else 0,
                                           old[1] if old else "", now, source[1] if source else ""])

    def _filed_source(
        self, verdict: Verdict, source_doc: bytes | Verdict | None, now: int
    ) -> tuple[str, str, int] | None:
        """The filed rule whose presence makes this verdict's rule not worth filing (shared.reuse), or None."""
        if isinstance(source_doc, bytes | str):
            source_doc = Verdict.model_validate_json(source_doc)
        source = _member(source_doc) if source_doc is not None and verdict.cache else None
        if source is None or verdict.cache is None or worth_filing(
                verdict.cache, verdict.event_id, verdict.reused_from, _candidate(source[1], source[2]), now):
            return None
        return source

    def put_answered(self, event: Event, received_ms: int, verdict: Verdict) -> bool:
        """A new event and its verdict in one script (a cache hit: one write round trip); False, with nothing
        written, when the event id is already stored."""
        return self.put_answered_many([(event, received_ms, verdict, encode_verdict(verdict))])[0]

    def put_answered_many(self, items: list[tuple[Event, int, Verdict, bytes]]) -> list[bool]:
        """`put_answered` for several hits in one pipeline (cloud.broker.intake): one script each, one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for event, received_ms, verdict, published in items:
            now = verdict.created_ms
            source_id = verdict.reused_from if verdict.reused_from != verdict.event_id else None
            known = self._seen.get(self._seen_member.get(source_id or "", ""))
            source_doc = None if known is not None or not source_id else self.client.get(self._k("vd", source_id))
            source = self._filed_source(verdict, known if known is not None else source_doc, now)
            new = _member(verdict)
            doc = event.model_dump_json(by_alias=True, exclude={"crop"})
            keys = [self._k("ev", event.event_id), self._k("events"), self._k("events", "d", event.device),
                    self._k("events", "l", event.label), self._k("vd", verdict.event_id), self._k("nverdicts"),
                    self._k("rules", new[0]) if new else "", self._k("rules", source[0]) if source else ""]
            self._put_answered(keys=keys, client=pipe, args=[
                doc, received_ms, event.device, event.label, event.crop, event.event_id, published,
                new[1] if new else "", new[2] if new else 0, now, source[1] if source else ""])
        return [bool(r) for r in pipe.execute()]

    # -- reads -----------------------------------------------------------------------------------------
    def get_verdict(self, event_id: str) -> Verdict | None:
        doc = self.client.get(self._k("vd", event_id))
        return Verdict.model_validate_json(doc) if doc else None

    def lookup(self, *, scope_key: str, label: str, phash: str, phash_alg: str, prompt_version: str,
               now_ms: int, embedding: bytes | None = None, device: str | None = None,
               people: bool = False) -> Verdict | None:
        """The unexpired verdict whose reuse rule reaches this crop, as shared.reuse.best ranks them,
        checked against the shared rule (shared.reuse) exactly as the SQLite store does."""
        return self.lookup_many([{"scope_key": scope_key, "label": label, "phash": phash, "phash_alg": phash_alg,
                                  "prompt_version": prompt_version, "now_ms": now_ms, "embedding": embedding,
                                  "device": device, "people": people}])[0]

    def lookup_many(self, queries: list[dict[str, Any]]) -> list[Verdict | None]:
        """`lookup` for several events (each a dict of its keywords): one round trip for all their index
        ranges (one per bucket: a burst of look-alikes reads it once), and one more only for verdicts not read
        before."""
        keys = [(q["scope_key"], q["label"], q["phash_alg"], q["prompt_version"]) for q in queries]
        ranges = dict.fromkeys(keys)
        since = min((q["now_ms"] for q in queries), default=0)
        pipe = self.client.pipeline(transaction=False)
        for key in ranges:
            pipe.zrangebyscore(self._k("rules", _bucket(*key)), since, "+inf", withscores=True)
        for key, members in zip(ranges, pipe.execute(), strict=True):
            ranges[key] = [_candidate(m, expires) for m, expires in members]
        bests = [nearest(ranges[key], q["phash"], q["now_ms"], embedding=q.get("embedding"))
                 for key, q in zip(keys, queries, strict=True)]
        members = [_member_text(b) if b is not None else "" for b in bests]
        if len(self._seen) + len(queries) > _SEEN_MAX:  # make room first: what this call needs stays
            self._seen.clear()
            self._seen_member.clear()
        unread = {b.ref: m for b, m in zip(bests, members, strict=True) if b is not None and m not in self._seen}
        if unread:
            for (ref, member), doc in zip(unread.items(), self.client.mget([self._k("vd", r) for r in unread]),
                                          strict=True):
                if doc:
                    self._seen[member] = Verdict.model_validate_json(doc)
                    self._seen_member[ref] = member
        found = [self._seen.get(member) if member else None for member in members]
        return still_answering(found, queries)

    def list_events(self, device: str | None = None, label: str | None = None, limit: int = 50,
                    before: str | None = None, *, camera: str | None = None, verdict: str | None = None,
                    source: str | None = None, since_ms: int | None = None,
                    until_ms: int | None = None) -> list[dict[str, Any]]:
        """Events newest first, each with its verdict (or None); `before` is an event id to page from. The
        filters mean what they mean for the SQLite store; those without an index are applied while paging."""
        limit = max(0, int(limit))

        def wanted(row: dict[str, Any]) -> bool:
            v = row["verdict"] or {}
            return ((label is None or row["label"] == label) and (camera is None or row["camera"] == camera)
                    and (since_ms is None or row["received_ms"] >= since_ms)
                    and (until_ms is None or row["received_ms"] < until_ms)
                    and (verdict is None or v.get("verdict") == verdict)
                    and (source is None or v.get("source") == source))

        if device is not None:
            index = self._k("events", "d", device)
        elif label is not None:
            index = self._k("events", "l", label)
        else:
            index = self._k("events")
        out: list[dict[str, Any]] = []
        upper = f"({before}" if before is not None else "+"
        while len(out) < limit:
            ids = [_text(i) for i in self.client.zrevrangebylex(index, upper, "-", start=0, num=_SCAN_PAGE)]
            if not ids:
                break
            for row in self._rows(ids):
                if row is not None and wanted(row):
                    out.append(row)
                    if len(out) == limit:
                        break
            upper = f"({ids[-1]}"
        return out

    def _rows(self, ids: list[str]) -> list[dict[str, Any] | None]:
        pipe = self.client.pipeline(transaction=False)
        for event_id in ids:
            pipe.hmget(self._k("ev", event_id), "doc", "received_ms")
            pipe.hstrlen(self._k("ev", event_id), "crop")
            pipe.get(self._k("vd", event_id))
        results = pipe.execute()
        rows: list[dict[str, Any] | None] = []
        for i in range(len(ids)):
            (doc, received), crop_len, verdict = results[3 * i], results[3 * i + 1], results[3 * i + 2]
            if doc is None:
                rows.append(None)
                continue
            row = json.loads(doc)
            row["received_ms"] = int(received)
            row["crop_bytes"] = int(crop_len)
            row["verdict"] = json.loads(verdict) if verdict is not None else None
            rows.append(row)
        return rows

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """The event's fields (the crop only as its size in bytes) and its verdict, if it has one."""
        return self._rows([event_id])[0]

    def get_crop(self, event_id: str) -> bytes | None:
        """The JPEG the device sent with the event; None once retention deleted it."""
        crop = self.client.hget(self._k("ev", event_id), "crop")
        return bytes(crop) if crop else None

    def counts(self) -> dict[str, int]:
        events = self.client.zcard(self._k("events"))
        verdicts = self.client.get(self._k("nverdicts"))
        return {"events": int(events), "verdicts": int(verdicts or 0)}

    # -- housekeeping ----------------------------------------------------------------------------------
    def sweep(self, crops_before_ms: int | None, events_before_ms: int | None) -> tuple[int, int]:
        """Retention: delete the crops of events made before `crops_before_ms`, then the events (with their
        verdicts and reuse rules) made before `events_before_ms`; (crops, events) deleted. "Made" is the time
        in the event id (UUIDv7, the device's clock), which is how the index is ordered."""
        crops = events = 0
        if crops_before_ms is not None:
            swept = _text(self.client.get(self._k("crops_swept")))
            for ids in self._ids_before(crops_before_ms, after=swept):
                pipe = self.client.pipeline(transaction=False)
                for event_id in ids:
                    pipe.hstrlen(self._k("ev", event_id), "crop")
                    pipe.hset(self._k("ev", event_id), "crop", b"")
                pipe.set(self._k("crops_swept"), ids[-1])
                results = pipe.execute()
                crops += sum(1 for i in range(len(ids)) if results[2 * i])
        if events_before_ms is not None:
            for ids in self._ids_before(events_before_ms):
                events += self._delete_events(ids)
        return crops, events

    def _ids_before(self, before_ms: int, after: str | None = None) -> Iterator[list[str]]:
        """Event ids made before `before_ms` (after the id `after`), oldest first, in pages."""
        bound = f"{max(0, before_ms):012x}"
        upper = f"({bound[:8]}-{bound[8:]}"  # every UUIDv7 of an earlier millisecond sorts below this
        lower = f"({after}" if after else "-"
        while True:
            ids = [_text(i) for i in self.client.zrangebylex(self._k("events"), lower, upper, start=0,
                                                              num=_SCAN_PAGE)]
            if not ids:
                return
            yield ids
            lower = f"({ids[-1]}"

    def _delete_events(self, ids: list[str]) -> int:
        pipe = self.client.pipeline(transaction=False)
        for event_id in ids:
            pipe.hmget(self._k("ev", event_id), "device", "label")
            pipe.get(self._k("vd", event_id))
        found = pipe.execute()
        pipe = self.client.pipeline(transaction=True)
        for i, event_id in enumerate(ids):
            (device, label), verdict_doc = found[2 * i], found[2 * i + 1]
            pipe.zrem(self._k("events"), event_id)
            if device is not None:
                pipe.zrem(self._k("events", "d", _text(device)), event_id)
                pipe.zrem(self._k("events", "l", _text(label)), event_id)
            if verdict_doc:
                member = _member(Verdict.model_validate_json(verdict_doc))
                if member is not None:
                    pipe.zrem(self._k("rules", member[0]), member[1])
                pipe.decr(self._k("nverdicts"))
            pipe.delete(self._k("ev", event_id), self._k("vd", event_id))
        pipe.execute()
        return sum(1 for i in range(len(ids)) if found[2 * i][0] is not None)

    def delete_all(self) -> int:
        """Delete every key under this store's prefix (and nothing else); returns how many."""
        deleted = 0
        batch: list[bytes] = []
        for key in self.client.scan_iter(match=f"{_glob_escape(self.prefix)}:*", count=500):
            batch.append(key)
            if len(batch) >= 500:
                deleted += self.client.delete(*batch)
                batch.clear()
        if batch:
            deleted += self.client.delete(*batch)
        return deleted


def open_store(config: CloudConfig) -> SQLiteStore | RedisStore:
    """The store the config asks for: Redis when `delivery.redis_url` is set, else SQLite at `store_path`."""
    if config.delivery.redis_url:
        return RedisStore(connect_redis(config.delivery.redis_url), config.delivery.redis_prefix)
    return SQLiteStore(config.store_path)


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
