"""The verdicts the cloud service gives, and the rule each carries: a cache hit's (a stored verdict copied for a
look-alike), the model's (its answer made safe for the wire), the offers of a new site-wide verdict to
the site's other devices, and the sample of cache hits the model is asked about again. A verdict made for one
device reaches another (a cache hit, an offer) only as `foreign` makes it: the answer, none of the facts.

Which stored verdict may answer an event is shared.reuse's rule; the store fetches by it. This module only
fills in a verdict's rule and makes the copies, so the service's pipeline reads as a sequence of steps.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

from ...shared.clock import now_ms
from ...shared.protocol import VERDICTS, Event, ReuseRule, Timings, Verdict
from ...shared.reuse import event_facts, person_evidence, reach, scope_key
from ..analysis import Analysis
from ..analysis.check import ABSENT
from ..config import ReusePolicy
from ..counts.servicestats import ServiceStats
from ..scheduling.outcome import Outcome, Released
from ..storage.store import Store

log = logging.getLogger("edgetriage.cloud.service")


class VerdictCache:
    """The cloud's verdict cache on `store`: the stored verdict that answers an event, the copy a hit answers
    with, and the rule a new model verdict is filed under."""

    def __init__(self, store: Store, policy: ReusePolicy) -> None:
        self.store = store
        self.policy = policy

    def scope_key(self, event: Event) -> str:
        return scope_key(self.policy.scope, event.device, event.camera, event.site)

    def query(self, event: Event, prompt_version: str) -> dict[str, Any]:
        """The store's lookup keywords for this event now (Store.lookup, Store.lookup_many)."""
        return {"scope_key": self.scope_key(event), "label": event.label, "phash": event.phash,
                "phash_alg": event.phash_alg, "prompt_version": prompt_version, "now_ms": now_ms(),
                "embedding": event.embedding, "device": event.device,
                "people": person_evidence(event.label, event_facts(event).people)}

    def lookup(self, event: Event, prompt_version: str) -> Verdict | None:
        """The stored verdict whose rule reaches this event, or None."""
        return self.store.lookup(**self.query(event, prompt_version))

    def answer(self, event: Event, prompt_version: str, arrived: float) -> Verdict | None:
        """The cache's verdict for this event (a copy of the stored one), or None: the model must answer."""
        hit = self.lookup(event, prompt_version)
        return self.reused(event, hit, arrived) if hit is not None else None

    def rule(self, event: Event, prompt_version: str, ttl_s: int) -> ReuseRule:
        return ReuseRule(**self._rule_fields(event, prompt_version, ttl_s))

    def _rule_fields(self, event: Event, prompt_version: str, ttl_s: int) -> dict[str, Any]:
        """Every field of a rule but embedding_alg: the policy's, and the event's (validated with the same
        constraints as the rule's)."""
        policy = self.policy
        return {"scope": policy.scope, "device": event.device, "camera": event.camera, "site": event.site,
                "label": event.label, "phash": event.phash, "phash_alg": event.phash_alg,
                "max_distance": policy.max_distance, "prompt_version": prompt_version, "ttl_s": ttl_s,
                "embedding": event.embedding, "min_similarity": policy.min_similarity}

    def reused(self, event: Event, hit: Verdict, arrived: float) -> Verdict:
        """A verdict for this event copied from a cached one. Its fresh rule (this crop's hash) expires
        no later than the model answer it derives from, so a chain of look-alikes cannot keep an answer
        alive past its ttl."""
        created = now_ms()
        rule = None
        if hit.cache is not None:
            left_s = (hit.created_ms + hit.cache.ttl_s * 1000 - created) // 1000
            ttl_s = min(self.policy.ttl_s, left_s)
            if ttl_s > 0:  # the hit's rule with every field replaced by valid values: no validation again
                rule = hit.cache.model_copy(update=self._rule_fields(event, hit.cache.prompt_version, ttl_s))
        # a copy, not a new model: every field comes from a valid verdict or a valid event (no validation
        # again per hit); the answer itself (verdict, confidence, description, model, facts, ...) is the hit's,
        # without what was seen at another device
        if hit.device != event.device:
            hit = foreign(hit)
        return hit.model_copy(update={
            "event_id": event.event_id, "device": event.device, "camera": event.camera, "label": event.label,
            "source": "cloud_cache", "reused_from": hit.reused_from or hit.event_id, "created_ms": created,
            "timings": Timings(total_ms=(time.monotonic() - arrived) * 1000), "cache": rule,
            "reused_by": reach(hit.cache, event.label, event.phash, event.phash_alg, event.embedding)
            if hit.cache is not None else None})

    def from_model(self, event: Event, analysis: Analysis, prompt_version: str, model: str, arrived: float,
                   started: float) -> Verdict:
        """The model's answer as a verdict, made safe for the wire; a fallback gets no reuse rule. `model`
        names the back-end for an analysis that does not say."""
        error = analysis.error
        verdict = analysis.verdict
        if verdict not in VERDICTS:
            error = error or f"analyzer answered {verdict!r}, not one of {', '.join(VERDICTS)}"
            verdict = "unknown"
        confidence = analysis.confidence if math.isfinite(analysis.confidence) else 0.0
        confidence = min(1.0, max(0.0, confidence))
        # a fallback's description is the reason, so the device (and whoever reads the verdict) sees why
        description = f"no model verdict: {error}" if error is not None else analysis.description
        done = time.monotonic()
        analyze_ms = analysis.analyze_ms if analysis.analyze_ms > 0 else (done - started) * 1000
        timings = Timings(queue_ms=(started - arrived) * 1000, analyze_ms=analyze_ms, total_ms=(done - arrived) * 1000)
        fallback = error is not None
        rule = None if fallback else self.rule(event, analysis.prompt_version or prompt_version, self.policy.ttl_s)
        if rule is not None and analysis.policy_inputs is not None:
            rule = rule.model_copy(update={"policy_inputs": analysis.policy_inputs})
        if rule is not None:
            rule = rule.model_copy(update={"person_seen": person_seen(event, analysis)})
        decided = None if fallback else analysis.decided_by or ("check" if analysis.checked else "model")
        return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                       verdict=verdict, confidence=confidence, description=description[:300],
                       model=(analysis.model or model)[:128], source="fallback" if fallback else "llm",
                       created_ms=now_ms(), timings=timings, cache=rule, facts=[f[:200] for f in analysis.facts[:12]],
                       model_verdict=analysis.model_verdict, checked=analysis.checked and analysis.checked[:200],
                       corrected=list(analysis.corrected),
                       decided_by=decided, policy=analysis.policy and analysis.policy[:300],
                       clause=analysis.clause and analysis.clause[:200])


def person_seen(event: Event, analysis: Analysis) -> bool | None:
    """Whether the cloud's closer look (the translator's detector, its `person_score`) saw a person in a person
    event's crop; None where it did not look, or the event asks about another label. shared.reuse.agrees: a
    crop the cloud did not see a person in never answers another device's person."""
    score = analysis.extra.get("person_score")
    if event.label != "person" or not isinstance(score, (int, float)) or not math.isfinite(score):
        return None
    return score >= ABSENT


def site_offers(policy: ReusePolicy, devices: list[str], verdict: Verdict) -> list[Verdict]:
    """A new model verdict whose rule covers the whole site goes to the site's other `devices` too (the
    operator's list, cloud.reuse.trust.Sites), so they never ask about the same thing. The offer is addressed to
    each device (device = the recipient), keeps the original event_id, with reused_from = event_id marking it
    as an offer, not an answer, and carries what decides reuse only (`foreign`)."""
    if not policy.offer_site or verdict.source != "llm" or site_of(verdict) is None:
        return []
    return offers_to(verdict, devices)


def site_of(verdict: Verdict) -> str | None:
    """The site a verdict's reuse rule covers; None unless the rule covers a whole site."""
    rule = verdict.cache
    return rule.site if rule is not None and rule.scope == "site" and rule.site else None


def offers_to(verdict: Verdict, devices: Iterable[str]) -> list[Verdict]:
    """The one way an offer is made: `verdict` addressed to each of `devices` but its own (device = the
    recipient), its event_id kept, reused_from = event_id marking it an offer, carrying only what decides
    reuse (`foreign`). A new model verdict's offers (`site_offers`) and an operator's correction's
    (cloud.teach.feedback) are both made here."""
    return [foreign(verdict).model_copy(update={"device": device, "source": "cloud_cache",
                                                "reused_from": verdict.event_id})
            for device in devices if device != verdict.device]


def foreign(verdict: Verdict) -> Verdict:
    """A verdict as another device may see it: the answer and its rule, without what was seen at the device it
    was made for (its facts: zones, times, dwell; the description and the check that may repeat them)."""
    return verdict.model_copy(update={"description": "", "facts": [], "checked": None, "corrected": [],
                                     "timings": Timings()})


class ReuseChecks:
    """On `reuse.verify_sample` of cache hits (spread evenly) the model is asked too, in the background below
    every priority tier (`ask`), and how often it disagrees is counted: wrong reuse measured, not assumed."""

    def __init__(self, policy: ReusePolicy, stats: ServiceStats, ask: Callable[[Event], Awaitable[Outcome]],
                 spawn: Callable[[Coroutine[Any, Any, None]], None]) -> None:
        self.policy = policy
        self.stats = stats
        self._ask = ask
        self._spawn = spawn
        self._credit = 0.0  # accumulates verify_sample per cache hit; a check whenever it reaches 1

    def sample(self, event: Event, reused: Verdict) -> None:
        self._credit += self.policy.verify_sample
        if self._credit < 1.0:
            return
        self._credit -= 1.0
        self._spawn(self._check(event, reused))

    async def _check(self, event: Event, reused: Verdict) -> None:
        try:
            outcome = await self._ask(event)
        except Released:
            return
        analysis = outcome.analysis
        if analysis is None or outcome.refused or analysis.error is not None:
            self.stats.reuse_unchecked += 1
            return
        self.stats.reuse_checked += 1
        if analysis.verdict != reused.verdict:
            self.stats.reuse_disagreed += 1
            log.info("reuse check: the model says %s where the cache said %s", analysis.verdict, reused.verdict,
                     extra={"event_id": event.event_id, "device": event.device, "camera": event.camera})
