"""When a stored verdict answers a new event: the one rule the device cache and both cloud stores apply.

Everything that decides reuse is here: under which key a rule is filed (scope, label, hash algorithm, prompt
version), whether it still holds (TTL), how near a crop must be, which of several matching verdicts wins,
and whether a new verdict is worth filing at all. The caches and stores only index candidates by `bucket`
and fetch them; they call `best`/`nearest` to choose and `worth_filing` before they file.

Two keys reach a crop (`match`): the 64-bit DCT hash, within `max_distance` bits (exact and near-exact
copies), or, when both crops carry one, the appearance embedding (shared.embedding) with a cosine similarity of
at least `min_similarity` (the same person a few seconds or a pass later, after the hash has moved on). An
operator's verdict (cloud.feedback) ranks first, then a hash match before an embedding match; then the nearer (fewer
bits, higher similarity), the newer,
the smaller event id, so every cache picks the same one. The device may give a verdict further keys, other
looks of the track it answered (edge.triage.gallery): `further_key` makes one (same verdict, thresholds and
`made_ms`, so it never outlives the verdict), `novel` says whether a look is worth one, `continues` whether a
look still belongs to its track. DEFAULT_MIN_SIMILARITY = 0.97: the study in
docs/developers/benchmarks.md ("Verdict reuse: appearance embedding") saw no pair of different people above 0.961.

Across devices (`agrees`): a rule made for one device's crop answers another device's only where the cloud's
own signals agree, all three: the hash within `max_distance`, the appearance embedding (both the cloud's own
under site scope, cloud.trust) at least `min_similarity`, and the person evidence consistent: a crop the
cloud's closer look found person-free (or did not look at) never answers a crop the device asked about as a
person or has a person detection in, unless the two crops are one picture (`same_picture`: the same hash to
the bit and embeddings at SAME_PICTURE = 0.995; a picture the model judged is judged, whoever sends it again).
A perceptual hash alone is forgeable (its 8x8 low-frequency block pasted
onto an empty background of the victim's view lands within 2 bits), an embedding of such a forgery is not near
(0.85), and the cloud's detector sees nobody there (0.00). The stores check it on the verdict they fetched
(`still_answers`), the device cache on every offer before it is a candidate.

One default for `max_distance`: DEFAULT_MAX_DISTANCE = 8 bits (shared.protocol; the cloud's reuse policy and
the device's cap use it too). The hash study in docs/developers/benchmarks.md ("Verdict reuse: which perceptual hash"):
at 8 bits 80 % of crops of one person 0.3-1 s apart match and 0.02 % of different-people pairs collide; at
10 bits 84 % match but 1.4 % collide, 70x more wrong reuse for 4 points of reuse.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import NamedTuple

from .embedding import similarity
from .phash import hamming
from .policycell import EventFacts, PolicyInputs, inside, weekday_of, zone_word
from .protocol import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY, Event, ReusedBy, ReuseRule

PEOPLE_MIN = 0.30  # a device's person detection at or above this counts as a person in the frame
SAME_PICTURE = 0.995  # embedding similarity at which two crops with one hash are one picture (`same_picture`)
LOOK_DISTANCE = 2  # bits: how near a crop must be to reuse a verdict whose policy read the crop's look
CELL_MARK = "@"  # in a prompt version, what follows names the policy inputs' ranges (`with_inputs`)

__all__ = ["DEFAULT_MAX_DISTANCE", "DEFAULT_MIN_SIMILARITY", "Candidate", "best", "bucket", "continues",
           "distance", "expired", "further_key", "match", "nearest", "novel", "reach", "rule_key", "scope_key",
           "similarity", "still_answers", "agrees", "same_picture", "person_evidence", "would_answer", "worth_filing",
           "event_facts", "with_inputs", "prompt_base"]


class Candidate(NamedTuple):
    """What an index holds of one filed rule: enough to choose without reading the verdict."""

    ref: str  # the verdict's event id
    phash: str
    max_distance: int
    made_ms: int  # when the verdict was made (the device: never later than when it received it)
    ttl_s: int
    embedding: bytes | None = None
    min_similarity: float = DEFAULT_MIN_SIMILARITY
    inputs: PolicyInputs | None = None  # the ranges of the facts the verdict's policy read (None: it read none)
    operator: bool = False  # an operator's verdict (cloud.feedback): it ranks before any model's


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
    return Candidate(event_id, rule.phash, rule.max_distance, made_ms, rule.ttl_s, rule.embedding,
                     rule.min_similarity, rule.policy_inputs, rule.operator)


def match(c: Candidate, phash: str, embedding: bytes | None, cap: int | None = None) -> ReusedBy | None:
    """Which key of the candidate's rule reaches this crop: its hash (within max_distance and the device's
    `cap`), else its embedding (similarity >= min_similarity, both crops having one), else None."""
    how = _reached(c, phash, embedding, cap)
    return _reused_by(c, how) if how is not None else None


def _reached(c: Candidate, phash: str, embedding: bytes | None, cap: int | None) -> tuple[int, int, float] | None:
    """`match` as plain values, for ranking many candidates without a message each: (0 for the hash or 1 for
    the embedding, distance in bits, similarity or 0.0), or None."""
    d = hamming(c.phash, phash)
    if c.inputs is not None and c.inputs.look:  # a vest put on moves the hash by a few bits only
        return (0, d, 0.0) if _within(d, min(c.max_distance, LOOK_DISTANCE), cap) else None
    if _within(d, c.max_distance, cap):
        return 0, d, 0.0
    if embedding is None or c.embedding is None:
        return None
    s = similarity(c.embedding, embedding)
    return (1, min(d, 64), s) if s >= c.min_similarity else None


def _reused_by(c: Candidate | ReuseRule, how: tuple[int, int, float]) -> ReusedBy:
    key, d, s = how
    if key == 0:
        return ReusedBy(key="hash", threshold=c.max_distance, distance=d)
    return ReusedBy(key="embedding", threshold=c.min_similarity, distance=d, similarity=s)


def expired(made_ms: int, rule: ReuseRule | Candidate, now_ms: int) -> bool:
    """True once `now_ms` is past the rule's last valid millisecond (made_ms + ttl, inclusive)."""
    return now_ms > made_ms + rule.ttl_s * 1000


def _within(d: int, max_distance: int, cap: int | None) -> bool:
    return d <= max_distance and (cap is None or d <= cap)


def distance(rule: ReuseRule, label: str, phash: str, phash_alg: str, cap: int | None = None) -> int | None:
    """Hamming distance from the rule's crop to this one, or None when the rule's hash cannot apply (another
    label or hash, farther than the rule's max_distance or than the device's `cap`)."""
    if rule.label != label or rule.phash_alg != phash_alg:
        return None
    d = hamming(rule.phash, phash)
    return d if _within(d, rule.max_distance, cap) else None


def reach(rule: ReuseRule, label: str, phash: str, phash_alg: str, embedding: bytes | None = None,
          cap: int | None = None) -> ReusedBy | None:
    """How the rule (TTL and scope aside) reaches this crop, or None: same label and hash algorithm, then
    `match` on the hash or the embedding."""
    how = _rule_reached(rule, label, phash, phash_alg, embedding, cap)
    return _reused_by(rule, how) if how is not None else None


def _rule_reached(rule: ReuseRule, label: str, phash: str, phash_alg: str, embedding: bytes | None,
                  cap: int | None) -> tuple[int, int, float] | None:
    if rule.label != label or rule.phash_alg != phash_alg:
        return None
    return _reached(candidate(rule, "", 0), phash, embedding, cap)


def would_answer(rule: ReuseRule, *, scope: str, label: str, phash: str, phash_alg: str,
                 prompt_version: str, embedding: bytes | None = None) -> bool:
    """Would this rule (TTL aside) answer a crop filed under `scope` with this label, hash and prompt?"""
    return (rule_key(rule) == scope and rule.prompt_version == prompt_version
            and reach(rule, label, phash, phash_alg, embedding) is not None)


def still_answers(rule: ReuseRule | None, made_ms: int, label: str, phash: str, phash_alg: str, now_ms: int,
                  embedding: bytes | None = None, device: str | None = None, people: bool = False) -> bool:
    """The winner of `best`, checked once more by its own rule as it was published (the stores call this on
    the verdict they fetched): it has one, it reaches this crop (by hash or embedding), it has not expired, and
    where it was made for another `device` than the one asking, the cloud's signals all agree (`agrees`)."""
    return rule is not None and _rule_reached(rule, label, phash, phash_alg, embedding, None) is not None \
        and not expired(made_ms, rule, now_ms) and agrees(rule, device, phash, embedding, people)


def agrees(rule: ReuseRule, device: str | None, phash: str, embedding: bytes | None, people: bool) -> bool:
    """May a rule answer this crop of `device` (None: the rule's own device asks)? Its own device's, always
    (its own keys are a claim about itself only); another device's only with the hash AND the embedding within
    the rule, and, where the asking crop shows a person (`people`, `person_evidence`), only a rule whose crop
    the cloud saw a person in."""
    if device is None or device == rule.device:
        return True
    if hamming(rule.phash, phash) > rule.max_distance:
        return False
    if embedding is None or rule.embedding is None:
        return False
    near = similarity(rule.embedding, embedding)
    if near < rule.min_similarity:
        return False
    return not people or rule.person_seen is True or same_picture(rule.phash, phash, near)


def same_picture(rule_phash: str, phash: str, near: float) -> bool:
    """Are two crops one picture, by the cloud's own keys: the same hash to the bit and embeddings that agree
    to SAME_PICTURE? A picture sent twice, by two devices or one, embeds identically (1.0); the same frame
    encoded at JPEG quality 84 instead of 85 is 0.991 already, the same person 0.2 s later 0.988, a forged
    low-frequency block 0.85. The model's judgement of a picture is its judgement of the same picture, person
    evidence or not: the cloud's closer look would find there what it found in the first."""
    return near >= SAME_PICTURE and hamming(rule_phash, phash) == 0


def person_evidence(label: str, people: int) -> bool:
    """Does the asking crop show a person: asked about as one, or with a person detection (`EventFacts.people`)?"""
    return label == "person" or people > 0


def best(candidates: Iterable[Candidate], phash: str, now_ms: int, cap: int | None = None,
         embedding: bytes | None = None, facts: EventFacts | None = None) -> tuple[Candidate, ReusedBy] | None:
    """Of one bucket's candidates, the unexpired one whose rule reaches this crop and how: an operator's verdict
    before the model's, hash matches before embedding matches, the nearer first, then the newest, then the
    smaller event id. A candidate whose
    policy read facts of its event answers only where `facts` (this event's, `event_facts`) fall in the same
    ranges (shared.policycell.inside); without `facts`, never."""
    found = _best(candidates, phash, now_ms, cap, embedding, facts)
    return (found[0], _reused_by(*found)) if found is not None else None


def _best(candidates: Iterable[Candidate], phash: str, now_ms: int, cap: int | None,
          embedding: bytes | None, facts: EventFacts | None = None) -> tuple[Candidate, tuple[int, int, float]] | None:
    top: tuple[bool, int, float, int, str] | None = None
    found: tuple[Candidate, tuple[int, int, float]] | None = None
    for c in candidates:
        if expired(c.made_ms, c, now_ms) or not inside(c.inputs, facts):
            continue
        how = _reached(c, phash, embedding, cap)
        if how is None:
            continue
        rank = (not c.operator, 0, how[1], -c.made_ms, c.ref) if how[0] == 0 \
            else (not c.operator, 1, -how[2], -c.made_ms, c.ref)
        if top is None or rank < top:
            top, found = rank, (c, how)
    return found


def nearest(candidates: Iterable[Candidate], phash: str, now_ms: int, cap: int | None = None,
            embedding: bytes | None = None, facts: EventFacts | None = None) -> Candidate | None:
    """The candidate `best` picks, without how it matched."""
    found = _best(candidates, phash, now_ms, cap, embedding, facts)
    return found[0] if found is not None else None


def worth_filing(rule: ReuseRule, event_id: str, reused_from: str | None, source: Candidate | None,
                 now_ms: int) -> bool:
    """Should a new verdict's rule be filed? Not when it was reused from a filed, unexpired verdict (`source`,
    its candidate; None when that one is not filed) whose crop is within half that rule's distance of this
    one: the source's rule already answers what this one would (a reused rule never outlives its source),
    and a near copy only makes lookups slower."""
    if reused_from is None or reused_from == event_id or source is None or expired(source.made_ms, source, now_ms):
        return True
    return hamming(source.phash, rule.phash) > source.max_distance // 2


def further_key(c: Candidate, phash: str, embedding: bytes | None) -> Candidate:
    """Another key of the same verdict: another look of the track it answered. Same verdict (`ref`), same
    `made_ms` and TTL (the key lives exactly as long as the verdict it points to), same embedding threshold;
    its hash reaches near copies only, within half the rule's distance (as `worth_filing` counts a near copy).
    Each key is another chance for a hash collision between two people (the embedding had none in any study):
    at the full distance a gallery of 8 keys matched 4.4x as many pairs of different people as one key, at
    half of it no more, for most of the gain (bench/gallery_study.py, docs/developers/benchmarks.md "Track gallery")."""
    return c._replace(phash=phash, embedding=embedding, max_distance=c.max_distance // 2)


def novel(keys: Iterable[Candidate], phash: str, embedding: bytes | None, cap: int | None = None) -> bool:
    """A look no key of the verdict already reaches (`match`): only such a look is worth another key."""
    return all(match(c, phash, embedding, cap) is None for c in keys)


def continues(keys: Iterable[bytes], embedding: bytes | None, min_similarity: float) -> bool:
    """Does a look still show the track's subject? Its embedding is at least `min_similarity` to one of the
    track's crops so far. Without two embeddings to compare, the tracker's word (the detection overlapping
    the predicted box) is all there is. A guard against a tracker's ID switch to someone else entirely, not a
    match: two people dressed alike come closer (0.961) than this threshold asks."""
    known = list(keys)
    if embedding is None or not known:
        return True
    return max(similarity(k, embedding) for k in known) >= min_similarity


def event_facts(event: Event) -> EventFacts:
    """What an event says of when, where and how long, as a policy reads it (the cloud's compiled policy and
    a device checking a filed verdict's policy inputs read the same)."""
    minute = int(event.local_time[:2]) * 60 + int(event.local_time[3:]) if event.local_time else -1
    people = sum(1 for d in event.detections if d.label == "person" and d.score >= PEOPLE_MIN)
    return EventFacts(minute, weekday_of(event.captured_ms, event.local_time),
                      frozenset(zone_word(z) for z in event.zones),
                      -1.0 if event.dwell_s is None else float(event.dwell_s), event.direction or "", people)


def with_inputs(prompt_version: str, inputs: PolicyInputs | None) -> str:
    """A prompt version with the policy inputs' ranges folded in (<= 32 characters): the cloud stores bucket
    by it, so a verdict is found only by events in the same ranges. Unchanged where no policy read anything."""
    if inputs is None:
        return prompt_version
    digest = hashlib.sha256(inputs.model_dump_json().encode()).hexdigest()[:6]
    return f"{prompt_base(prompt_version)[:25]}{CELL_MARK}{digest}"


def prompt_base(prompt_version: str) -> str:
    """A prompt version without its policy inputs: what a device compares to tell a new prompt from an old one
    (verdicts of other ranges under the same prompt are no older answers)."""
    return prompt_version.split(CELL_MARK, 1)[0]
