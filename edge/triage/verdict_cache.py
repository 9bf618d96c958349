"""The device's verdict cache: verdicts the cloud sent back, reused for later tracks that look the same.

Filled only from received verdicts that carry a reuse rule (`Verdict.cache`); the cloud decides what may be
reused, the device only applies the rule (shared.reuse, the same code the cloud cache runs). Bounded by
entry count with least-recently-used eviction, so a busy camera cannot grow it without limit. When a newer
prompt version shows up for a scope and label, answers from older prompts for it are forgotten: a prompt
change is how the cloud says "the old answers are no longer what I would say".

A verdict may carry further keys besides its own crop: other looks of the track it answered
(edge.triage.gallery, `add_key`), at most `max_keys` per verdict, each only when none of the verdict's keys
reaches it already. They share the verdict's entry (its TTL, eviction and prompt) and answer with the same
verdict. Looks of a track whose verdict has not arrived yet wait (`MAX_PENDING` verdicts) and are filed when
it does.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from ...shared.policycell import EventFacts
from ...shared.protocol import Verdict
from ...shared.reuse import (
    Candidate,
    agrees,
    best,
    candidate,
    expired,
    further_key,
    novel,
    person_evidence,
    prompt_base,
    rule_key,
    scope_key,
    worth_filing,
)

MAX_PENDING = 64  # verdicts awaited with looks to file under them (the oldest go first)

_Bucket = tuple[str, str]  # (scope key, label)
_Key = tuple[str, str, str, str]  # (scope key, label, event id, prompt version)


@dataclass(slots=True)
class _Entry:
    bucket: _Bucket
    verdict: Verdict
    made_ms: int  # when the verdict was made, never later than when this device received it
    candidate: Candidate
    keys: list[Candidate] = field(default_factory=list)  # further keys: other looks of the same track


class VerdictCache:
    """LRU-bounded map from (scope, label, verdict) to the cloud's verdict, searched by crop hash and, where
    both crops have one, appearance embedding."""

    def __init__(self, max_entries: int = 1024, max_distance: int | None = None) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.max_entries = max_entries
        self.max_distance = max_distance  # device-side cap on any rule's max_distance
        self.hits = 0
        self.hits_by = {"hash": 0, "embedding": 0}  # which reuse key answered (shared.reuse.match)
        self.hits_further = 0  # of the hits, those by a further key (another look of the track)
        self.misses = 0
        self.evicted = 0
        self._pending: OrderedDict[str, list[tuple[str, bytes | None, int]]] = OrderedDict()
        self._lru: OrderedDict[_Key, _Entry] = OrderedDict()
        self._buckets: dict[_Bucket, dict[_Key, _Entry]] = {}
        self._by_id: dict[str, _Key] = {}
        self._prompt: dict[_Bucket, tuple[int, str]] = {}  # newest (created_ms, prompt_version) seen

    def __len__(self) -> int:
        return len(self._lru)

    def add(self, verdict: Verdict, now_ms: int) -> bool:
        """File a received verdict; False when it carries no reuse rule, has expired, answers with a
        prompt older than one already seen for its scope and label, or is a near copy of the verdict it
        was reused from (shared.reuse.worth_filing)."""
        waiting = self._pending.pop(verdict.event_id, [])  # looks of its track that waited for it
        rule = verdict.cache
        if rule is None:
            return False
        made_ms = min(verdict.created_ms, now_ms)  # a cloud clock ahead of ours must not stretch the TTL
        if expired(made_ms, rule, now_ms):
            return False
        source_key = self._by_id.get(verdict.reused_from or "")
        source = self._lru[source_key].candidate if source_key is not None else None
        if not worth_filing(rule, verdict.event_id, verdict.reused_from, source, now_ms):
            self._file_looks(source_key, waiting, now_ms)  # the source answers for it: its track's looks too
            return False
        bucket = (rule_key(rule), rule.label)
        newest = self._prompt.get(bucket)
        prompt = prompt_base(rule.prompt_version)  # verdicts of other policy inputs are no older answers
        if newest is None or verdict.created_ms >= newest[0]:
            if newest is not None and newest[1] != prompt:
                self._forget_bucket_except(bucket, prompt)
            self._prompt[bucket] = (verdict.created_ms, prompt)
        elif newest[1] != prompt:
            return False
        key = (bucket[0], bucket[1], verdict.event_id, rule.prompt_version)
        entry = _Entry(bucket, verdict, made_ms, candidate(rule, verdict.event_id, made_ms))
        self._lru[key] = entry
        self._lru.move_to_end(key)
        self._buckets.setdefault(bucket, {})[key] = entry
        self._by_id[verdict.event_id] = key
        while len(self._lru) > self.max_entries:
            old_key, old = self._lru.popitem(last=False)
            self._drop_from_bucket(old_key, old.bucket)
            self.evicted += 1
        self._file_looks(self._by_id.get(verdict.event_id), waiting, now_ms)
        return True

    def add_key(self, event_id: str, phash: str, embedding: bytes | None, now_ms: int, max_keys: int) -> bool:
        """Another look of the track verdict `event_id` answered, as a further key of that verdict: filed when
        none of its keys reaches the look already (shared.reuse.novel) and it has fewer than `max_keys`
        further keys; kept until the verdict arrives when it has not (True: filed or kept)."""
        key = self._by_id.get(event_id)
        if key is None:
            waiting = self._pending.setdefault(event_id, [])
            self._pending.move_to_end(event_id)
            if len(waiting) >= max_keys:
                return False
            waiting.append((phash, embedding, max_keys))
            while len(self._pending) > MAX_PENDING:
                self._pending.popitem(last=False)
            return True
        entry = self._lru[key]
        if len(entry.keys) >= max_keys or expired(entry.made_ms, entry.candidate, now_ms) \
                or self.knows(event_id, phash, embedding):
            return False
        entry.keys.append(further_key(entry.candidate, phash, embedding))
        return True

    def knows(self, event_id: str, phash: str, embedding: bytes | None = None) -> bool:
        """A key of verdict `event_id` (filed) already reaches this look: it is worth no other."""
        key = self._by_id.get(event_id)
        if key is None:
            return False
        entry = self._lru[key]
        return not novel([entry.candidate, *entry.keys], phash, embedding, self.max_distance)

    def _file_looks(self, key: _Key | None, waiting: list[tuple[str, bytes | None, int]], now_ms: int) -> None:
        """Looks that waited for a verdict, filed under the entry `key` that answers for it (None: none does)."""
        if key is not None:
            for phash, embedding, max_keys in waiting:
                self.add_key(key[2], phash, embedding, now_ms, max_keys)

    def lookup(self, *, device: str, camera: str, site: str | None, label: str, phash: str,
               phash_alg: str = "dct64", now_ms: int, embedding: bytes | None = None,
               facts: EventFacts | None = None) -> Verdict | None:
        """The verdict shared.reuse.best picks among the unexpired ones whose rule covers this crop, or
        None. Camera-scoped and site-scoped verdicts both apply; one whose policy read facts of its event
        only where `facts` (this event's) fall in the same ranges."""
        scopes = [scope_key("camera", device, camera, site)]
        if site:
            scopes.append(scope_key("site", device, camera, site))
        found: dict[str, tuple[_Key, _Entry]] = {}
        people = person_evidence(label, facts.people if facts is not None else 0)  # for another device's rule
        stale: list[tuple[_Key, _Bucket]] = []
        for scope in scopes:
            bucket = (scope, label)
            for key, entry in self._buckets.get(bucket, {}).items():
                rule = entry.verdict.cache
                assert rule is not None  # only verdicts with a rule are filed
                if expired(entry.made_ms, rule, now_ms):
                    stale.append((key, bucket))
                elif rule.phash_alg == phash_alg and agrees(rule, device, phash, embedding, people):
                    found[entry.candidate.ref] = (key, entry)
        for key, bucket in stale:
            self._lru.pop(key, None)
            self._drop_from_bucket(key, bucket)
        chosen = best((c for _, entry in found.values() for c in (entry.candidate, *entry.keys)), phash, now_ms,
                      cap=self.max_distance, embedding=embedding, facts=facts)
        if chosen is None:
            self.misses += 1
            return None
        best_key, best_entry = found[chosen[0].ref]
        self._lru.move_to_end(best_key)
        self.hits += 1
        self.hits_by[chosen[1].key] += 1
        self.hits_further += chosen[0] is not best_entry.candidate
        return best_entry.verdict

    def _forget_bucket_except(self, bucket: _Bucket, prompt_version: str) -> None:
        for key in [k for k in self._buckets.get(bucket, {}) if prompt_base(k[3]) != prompt_version]:
            self._lru.pop(key, None)
            self._drop_from_bucket(key, bucket)

    def _drop_from_bucket(self, key: _Key, bucket: _Bucket) -> None:
        if self._by_id.get(key[2]) == key:
            del self._by_id[key[2]]
        entries = self._buckets.get(bucket)
        if entries is None:
            return
        entries.pop(key, None)
        if not entries:
            del self._buckets[bucket]
