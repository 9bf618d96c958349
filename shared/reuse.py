"""When a stored verdict answers a new event: the one rule both caches (device and cloud) apply."""

from __future__ import annotations

from .phash import hamming
from .protocol import ReuseRule


def scope_key(scope: str, device: str, camera: str, site: str | None) -> str:
    """The key a reuse rule is filed under: one camera, or every camera of a site."""
    if scope == "site" and site:
        return f"site:{site}"
    return f"camera:{device}/{camera}"


def rule_key(rule: ReuseRule) -> str:
    return scope_key(rule.scope, rule.device, rule.camera, rule.site)


def distance(rule: ReuseRule, label: str, phash: str, phash_alg: str) -> int | None:
    """Hamming distance from the rule's crop to this one, or None when the rule cannot apply."""
    if rule.label != label or rule.phash_alg != phash_alg:
        return None
    d = hamming(rule.phash, phash)
    return d if d <= rule.max_distance else None


def expired(created_ms: int, rule: ReuseRule, now_ms: int) -> bool:
    return now_ms > created_ms + rule.ttl_s * 1000
