"""When a stored verdict answers a new event: the one rule the device cache and both cloud stores apply.

Everything that decides reuse is here: under which key a rule is filed (scope, label, hash algorithm, prompt
version), whether it still holds (TTL), how near a crop must be (distance, with an optional device cap),
which of several matching verdicts wins (nearest, then newest, then the smaller event id), and whether a
new verdict is worth filing at all. The caches and stores only index candidates by `bucket` and fetch
them; they call `nearest` to choose and `worth_filing` before they file.

One default for `max_distance`: DEFAULT_MAX_DISTANCE = 8 bits (shared.protocol; the cloud's reuse policy and
the device's cap use it too). The hash study in BENCHMARKS.md ("Verdict reuse: which perceptual hash"):
at 8 bits 80 % of crops of one person 0.3-1 s apart match and 0.02 % of different-people pairs collide; at
10 bits 84 % match but 1.4 % collide, 70x more wrong reuse for 4 points of reuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from .phash import hamming
from .protocol import DEFAULT_MAX_DISTANCE, ReuseRule

__all__ = ["DEFAULT_MAX_DISTANCE", "Candidate", "bucket", "distance", "expired", "nearest", "rule_key",
           "scope_key", "still_answers", "would_answer", "worth_filing"]


class Candidate(NamedTuple):
    """What an index holds of one filed rule: enough to choose without reading the verdict."""

    ref: str  # the verdict's event id
    phash: str
    max_distance: int
    made_ms: int  # when the verdict was made (the device: never later than when it received it)
    ttl_s: int


def scope_key(scope: str, device: str, camera: str, site: str | None) -> str:
    """The key a reuse rule is filed under: one camera, or every camera of a site."""
    if scope == "site" and site:
        return f"site:{site}"
    return f"camera:{device}/{camera}"


def rule_key(rule: ReuseRule) -> str:
    return scope_key(rule.scope, rule.device, rule.camera, rule.site)


def bucket(rule: ReuseRule) -> tuple[str, str, str, str]:
    """(scope key, label, hash algorithm, prompt version): a rule answers only lookups with all four equal,
    so an index is partitioned by them and searches one bucket."""
    return rule_key(rule), rule.label, rule.phash_alg, rule.prompt_version


def candidate(rule: ReuseRule, event_id: str, made_ms: int) -> Candidate:
    return Candidate(event_id, rule.phash, rule.max_distance, made_ms, rule.ttl_s)


def expired(made_ms: int, rule: ReuseRule | Candidate, now_ms: int) -> bool:
    """True once `now_ms` is past the rule's last valid millisecond (made_ms + ttl, inclusive)."""
    return now_ms > made_ms + rule.ttl_s * 1000


def _within(d: int, max_distance: int, cap: int | None) -> bool:
    return d <= max_distance and (cap is None or d <= cap)


def distance(rule: ReuseRule, label: str, phash: str, phash_alg: str, cap: int | None = None) -> int | None:
    """Hamming distance from the rule's crop to this one, or None when the rule cannot apply (another label
    or hash, farther than the rule's max_distance or than the device's `cap`)."""
    if rule.label != label or rule.phash_alg != phash_alg:
        return None
    d = hamming(rule.phash, phash)
    return d if _within(d, rule.max_distance, cap) else None


def would_answer(rule: ReuseRule, *, scope: str, label: str, phash: str, phash_alg: str,
                 prompt_version: str) -> bool:
    """Would this rule (TTL aside) answer a crop filed under `scope` with this label, hash and prompt?"""
    return (rule_key(rule) == scope and rule.prompt_version == prompt_version
            and distance(rule, label, phash, phash_alg) is not None)


def still_answers(rule: ReuseRule | None, made_ms: int, label: str, phash: str, phash_alg: str, now_ms: int) -> bool:
    """The winner of `nearest`, checked once more by its own rule as it was published (the stores call this
    on the verdict they fetched): it has one, it reaches this crop, and it has not expired."""
    return rule is not None and distance(rule, label, phash, phash_alg) is not None \
        and not expired(made_ms, rule, now_ms)


def nearest(candidates: Iterable[Candidate], phash: str, now_ms: int, cap: int | None = None) -> Candidate | None:
    """Of one bucket's candidates, the unexpired one whose rule reaches `phash`: nearest first, then the
    newest, then the smaller event id (so every cache picks the same one)."""
    best: tuple[int, int, str] | None = None
    found: Candidate | None = None
    for c in candidates:
        if expired(c.made_ms, c, now_ms):
            continue
        d = hamming(c.phash, phash)
        if not _within(d, c.max_distance, cap):
            continue
        rank = (d, -c.made_ms, c.ref)
        if best is None or rank < best:
            best, found = rank, c
    return found


def worth_filing(rule: ReuseRule, event_id: str, reused_from: str | None, source: Candidate | None,
                 now_ms: int) -> bool:
    """Should a new verdict's rule be filed? Not when it was reused from a filed, unexpired verdict (`source`,
    its candidate; None when that one is not filed) whose crop is within half that rule's distance of this
    one: the source's rule already answers what this one would (a reused rule never outlives its source),
    and a near copy only makes lookups slower."""
    if reused_from is None or reused_from == event_id or source is None or expired(source.made_ms, source, now_ms):
        return True
    return hamming(source.phash, rule.phash) > source.max_distance // 2
