"""What the device does with one new track: handle it locally, drop it, reuse a cached verdict, or escalate it.

`RulesConfig` is the policy an operator writes: defaults for every camera, and `overrides` for one camera,
one zone, or one zone of one camera (the most specific match wins; its unset keys inherit the defaults).

`Rules.decide` applies it in this order, and its reason says which step decided:

1. schedule: outside every window of the rule -> local;
2. label: not one the rule escalates (nor one it always confirms) -> local;
3. classifier veto: an uncertain track the classifier names as something else (a car, a dog) -> local;
4. score under `min_score`, and not uncertain -> dropped;
5. stayed less than `min_dwell_s` -> dropped;
6. the same camera, zone rule and label escalated less than `cooldown_s` ago -> dropped; a later track of a
   visit already escalated or answered from the cache (`once_per_visit`: the tracker lost and found the same
   person, or saw them twice) -> dropped, unless it stands in a zone the visit had not or shows more people
   than the visit did (visits.py);
7. a label in `confirm_labels` -> escalate, whatever the cache holds;
8. a verdict in the device cache covers it -> cached;
9. uncertain (the vision pipeline said so, or the score is inside `uncertain_band`) -> escalate;
10. otherwise escalate when `escalate` is on, else local.

Reasons are short and human: they travel with escalated events and show up in logs, replays and the demo.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Literal, Protocol

from pydantic import ConfigDict, Field, field_validator, model_validator

from ...shared import clock
from ...shared.config import Strict
from ...shared.policycell import EventFacts, zone_word
from ...shared.protocol import MAX_DETECTIONS, MAX_ZONES, Verdict
from ...shared.reuse import PEOPLE_MIN
from ..vision.classify import Classification
from ..vision.detect import Det
from ..vision.events import TrackEvent
from .local_time import local_time
from .suppress import Suppressions
from .visits import Visits

DecisionKind = Literal["escalate", "cached", "local", "dropped", "suppressed"]
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Seconds = Annotated[float, Field(ge=0.0, le=7 * 86400.0)]
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$|^24:00$")


class ScheduleWindow(Strict):
    """When a rule is active, in the device's local time (the edge config's `timezone`, else the system's
    zone). `end` before `start` runs past midnight
    (22:00-06:00 on "fri" covers Friday night into Saturday morning)."""

    days: list[Weekday] = list(WEEKDAYS)
    start: str = "00:00"
    end: str = "24:00"

    @field_validator("start", "end")
    @classmethod
    def _clock(cls, value: str) -> str:
        if not _CLOCK.match(value):
            raise ValueError("must be a time of day HH:MM (00:00 to 24:00)")
        return value

    def _minutes(self, value: str) -> int:
        hours, minutes = value.split(":")
        return int(hours) * 60 + int(minutes)

    def active(self, weekday: int, minute: int) -> bool:
        """weekday 0 = Monday; minute of the day 0..1439."""
        start, end = self._minutes(self.start), self._minutes(self.end)
        today = WEEKDAYS[weekday] in self.days
        if start <= end:
            return today and start <= minute < end
        yesterday = WEEKDAYS[(weekday - 1) % 7] in self.days
        return (today and minute >= start) or (yesterday and minute < end)


class _RuleFields(Strict):
    """The keys a rule sets; defaults are the device-wide policy."""

    labels: list[str] = ["person"]  # labels that may escalate; others are handled on the device
    min_score: Unit = 0.2  # below this (and not uncertain) a track is dropped
    uncertain_band: tuple[Unit, Unit] = (0.2, 0.5)  # scores in [low, high) escalate unless the cache answers
    escalate: bool = True  # confident tracks of an escalating label escalate too, unless cached
    confirm_labels: list[str] = []  # always asked of the cloud: never answered from the device cache
    min_dwell_s: Seconds = 0.0  # a track must stay this long (in the rule's zone, if it has one)
    cooldown_s: Seconds = 0.0  # after an escalation, the same camera/zone/label stays quiet this long
    schedule: list[ScheduleWindow] = []  # empty: always active
    classify: bool = True  # describe escalated crops with the classifier (top classes travel in the event)
    # an uncertain track the classifier names as a vehicle or animal with this much probability is vetoed
    veto_min_prob: Unit = 0.5
    once_per_visit: bool = Field(
        True, description="escalate a visit once: a later track of the same visit (one the tracker lost and found "
                          "again, or saw twice) is dropped unless it stands in a zone the visit had not been in "
                          "or shows more people; false: every track is decided alone")

    @field_validator("uncertain_band")
    @classmethod
    def _band(cls, value: tuple[float, float]) -> tuple[float, float]:
        if value[0] > value[1]:
            raise ValueError("must be [low, high] with low <= high")
        return value


class RuleOverride(Strict):
    """Settings for one camera, one zone, or one zone of one camera; unset keys keep the defaults."""

    camera: str | None = None
    zone: str | None = None
    labels: list[str] | None = None
    min_score: Unit | None = None
    uncertain_band: tuple[Unit, Unit] | None = None
    escalate: bool | None = None
    confirm_labels: list[str] | None = None
    min_dwell_s: Seconds | None = None
    cooldown_s: Seconds | None = None
    schedule: list[ScheduleWindow] | None = None
    classify: bool | None = None
    veto_min_prob: Unit | None = None
    once_per_visit: bool | None = Field(None, description="see the defaults' once_per_visit")

    @model_validator(mode="after")
    def _scoped(self) -> RuleOverride:
        if self.camera is None and self.zone is None:
            raise ValueError("an override needs a camera, a zone or both (the defaults apply everywhere)")
        if self.uncertain_band is not None and self.uncertain_band[0] > self.uncertain_band[1]:
            raise ValueError("uncertain_band must be [low, high] with low <= high")
        return self

    @property
    def specificity(self) -> int:
        return (2 if self.zone is not None else 0) + (1 if self.camera is not None else 0)


class RulesConfig(_RuleFields):
    """Which tracks are worth a verdict, by camera and zone. See the module docstring for the order."""

    overrides: list[RuleOverride] = []


class Rule(_RuleFields):
    """The effective settings for one camera and zone: defaults with the matching override applied."""

    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True)

    scope: str = "*"  # "*" or "camera=door zone=porch": what the cooldown is kept per


class ScoredTrack(Protocol):
    """What the rules read of a track event, every field declared (edge.vision.events.TrackEvent is one).
    `captured_ms` 0: not known (the rules go by the wall clock); `dwell_s` None: not measured."""

    @property
    def label(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def uncertain(self) -> bool: ...
    @property
    def camera(self) -> str: ...
    @property
    def zones(self) -> Sequence[str]: ...
    @property
    def dwell_s(self) -> float | None: ...
    @property
    def captured_ms(self) -> int: ...
    @property
    def classification(self) -> Classification | None: ...
    @property
    def visit(self) -> str: ...
    @property
    def detections(self) -> Sequence[Det]: ...


@dataclass(frozen=True)
class Decision:
    kind: DecisionKind
    reason: str
    verdict: Verdict | None = None


class Rules:
    """The escalation policy of one device. Keeps the cooldown clocks, so use one instance per device."""

    def __init__(self, config: RulesConfig, *, timezone: str | None = None) -> None:
        self.config = config
        self.timezone = timezone  # schedules read the device's clock in this IANA zone (None: the system's)
        self._overrides = sorted(enumerate(config.overrides), key=lambda item: (-item[1].specificity, item[0]))
        self._base = Rule(**config.model_dump(exclude={"overrides"}))
        self._effective: dict[tuple[str, frozenset[str]], Rule] = {}
        self._last_escalated: dict[tuple[str, str, str], int] = {}  # (camera, rule scope, label) -> ms
        self.visits = Visits()  # the visits escalated or answered (noted by Triage), so that a visit is escalated once

    def successor(self, config: RulesConfig, *, timezone: str | None = None) -> Rules:
        """New settings (a remote rules change, a reload) that keep this device's escalation clocks: a person
        escalated a minute ago stays in their cooldown, under the new cooldown length, while their scope (camera,
        zone rule, label) still exists; a changed cooldown applies at once."""
        rules = Rules(config, timezone=timezone)
        rules._last_escalated = dict(self._last_escalated)
        rules.visits = self.visits
        return rules

    def rule_for(self, camera: str, zones: Iterable[str] = ()) -> Rule:
        """The settings that apply to an object of this camera standing in these zones."""
        key = (camera, frozenset(zones))
        rule = self._effective.get(key)
        if rule is None:
            rule = self._base
            for _, override in self._overrides:
                if override.camera not in (None, camera) or (override.zone is not None and override.zone not in key[1]):
                    continue
                changes = override.model_dump(exclude={"camera", "zone"}, exclude_none=True)
                scope = " ".join(f"{k}={v}" for k, v in (("camera", override.camera), ("zone", override.zone)) if v)
                rule = self._base.model_copy(update={**changes, "scope": scope})
                break
            self._effective[key] = rule
        return rule

    def _rule_of(self, ev: ScoredTrack, camera: str | None) -> Rule:
        return self.rule_for(camera or ev.camera, ev.zones)

    def is_uncertain(self, ev: ScoredTrack, camera: str | None = None) -> bool:
        """The vision pipeline called it uncertain, or its score is inside the rule's uncertainty band."""
        low, high = self._rule_of(ev, camera).uncertain_band
        return ev.uncertain or low <= ev.score < high

    def escalates(self, ev: ScoredTrack, camera: str | None = None) -> bool:
        """Whether the label is one this track's rule may escalate (worth a cache lookup)."""
        rule = self._rule_of(ev, camera)
        return ev.label in rule.labels or ev.label in rule.confirm_labels

    def wants_classes(self, ev: ScoredTrack, camera: str | None = None) -> bool:
        """Whether the classifier should describe this track before the decision."""
        return self._rule_of(ev, camera).classify and self.escalates(ev, camera)

    def min_dwell_s(self, camera: str, zones: Iterable[str]) -> float:
        return self.rule_for(camera, zones).min_dwell_s

    def decide(self, ev: ScoredTrack, cached: Verdict | None, *, camera: str | None = None,
               now_ms: int | None = None) -> Decision:
        camera = camera or ev.camera
        rule = self._rule_of(ev, camera)
        now = now_ms if now_ms is not None else ev.captured_ms or clock.now_ms()
        if rule.schedule and not _scheduled(rule.schedule, now, self.timezone):
            return Decision("local", f"outside the schedule of rule {rule.scope}")
        confirm = ev.label in rule.confirm_labels
        if ev.label not in rule.labels and not confirm:
            return Decision("local", f"label {ev.label!r} is not escalated")
        uncertain = self.is_uncertain(ev, camera)
        classification = ev.classification
        named = None
        if uncertain and classification is not None:
            named = classification.names_other_than_person(rule.veto_min_prob)
        if named is not None:
            return Decision("local", f"uncertain {ev.label}: the classifier sees {named[0]} {named[1]:.2f}")
        if ev.score < rule.min_score and not uncertain:
            return Decision("dropped", f"score {ev.score:.2f} below {rule.min_score:.2f}")
        dwell = ev.dwell_s
        if rule.min_dwell_s and dwell is not None and dwell < rule.min_dwell_s:
            return Decision("dropped", f"stayed {dwell:.1f} s, under {rule.min_dwell_s:g} s")
        key = (camera, rule.scope, ev.label)
        last = self._last_escalated.get(key)
        if rule.cooldown_s and last is not None and 0 <= now - last < rule.cooldown_s * 1000:
            return Decision("dropped", f"cooldown: {ev.label} escalated {(now - last) / 1000:.0f} s ago")
        if rule.once_per_visit and (same := self.visits.answered(camera, ev, now)) is not None:
            return Decision("dropped", same)
        if confirm:
            decision = Decision("escalate", f"{ev.label} always needs the cloud's confirmation")
        elif cached is not None:
            return Decision("cached", f"cached {cached.verdict} from …{cached.event_id[-8:]}", cached)
        elif uncertain:
            decision = Decision("escalate", f"uncertain score {ev.score:.2f}")
        elif rule.escalate:
            decision = Decision("escalate", f"{ev.label} {ev.score:.2f}, verdict wanted")
        else:
            return Decision("local", f"confident {ev.label} {ev.score:.2f}, escalation off")
        if rule.cooldown_s:
            self._last_escalated[key] = now
        return decision


def _scheduled(windows: Sequence[ScheduleWindow], now_ms: int, timezone: str | None) -> bool:
    weekday, minute, _ = local_time(now_ms, timezone)
    return any(w.active(weekday, minute) for w in windows)


class VerdictLookup(Protocol):
    """The device verdict cache as the triage uses it (edge.triage.verdict_cache.VerdictCache)."""

    def lookup(self, *, device: str, camera: str, site: str | None, label: str, phash: str,
               phash_alg: str = "dct64", now_ms: int, embedding: bytes | None = None,
               facts: EventFacts | None = None) -> Verdict | None: ...


class Describer(Protocol):
    """The crop classifier as the triage uses it (edge.vision.classify.CropClassifier)."""

    def classify_jpeg(self, jpeg: bytes) -> Classification | None: ...

    def embed_jpeg(self, jpeg: bytes) -> bytes | None: ...


class Triage:
    """One device's whole decision on a new track event: the classifier where the rule asks for it, the
    verdict cache where the label may escalate, then the rules. The agent and the offline replay both run
    exactly this, so a replay shows what the device would have done."""

    def __init__(self, rules: Rules, *, device: str, site: str | None = None,
                 cache: VerdictLookup | None = None, classifier: Describer | None = None,
                 suppressions: Suppressions | None = None) -> None:
        self.rules = rules
        self.suppressions = suppressions
        self.device = device
        self.site = site
        self.cache = cache
        self.classifier = classifier

    def decide(self, camera: str, ev: TrackEvent, now_ms: int) -> Triaged:
        """The decision on `ev` and the event it was made on: `ev` itself, or a new event with what the triage
        added (the classification where the rule asks for one, the embedding of a crop that may leave the
        device). `ev` is not changed."""
        rules = self.rules
        if self.classifier is not None and ev.classification is None and rules.wants_classes(ev, camera):
            ev = replace(ev, classification=self.classifier.classify_jpeg(ev.crop_jpeg))
        if rules.escalates(ev, camera) and ev.embedding is None:
            ev = replace(ev, embedding=self._embedding(ev))  # only crops that may leave the device pay for it
        cached = None
        if self.cache is not None and rules.escalates(ev, camera):
            cached = self.cache.lookup(device=self.device, camera=camera, site=self.site, label=ev.label,
                                       phash=ev.phash, phash_alg=ev.phash_alg, now_ms=now_ms,
                                       embedding=ev.embedding,
                                       facts=self._facts(ev))
        decision = rules.decide(ev, cached, camera=camera, now_ms=now_ms)
        if decision.kind == "escalate" and self.suppressions is not None:
            rule = self.suppressions.match(camera, ev, now_ms)
            if rule is not None:  # a learned false detection: answered here, never sent
                decision = Decision("suppressed", f"suppressed by {rule.id}: {ev.label} learned benign at this place")
        if decision.kind in ("escalate", "cached"):  # its visit is answered (a suppressed one is not: never sent)
            how = "escalated" if decision.kind == "escalate" else "answered from the cache"
            rules.visits.note(camera, ev, now_ms, how)
        return Triaged(ev, decision)

    def _facts(self, ev: TrackEvent) -> EventFacts:
        """What the event will say of when, where and how long, as a cached verdict's policy inputs read it
        (shared.reuse.event_facts on the cloud's side)."""
        weekday, minute, _ = local_time(int(ev.captured_ms), self.rules.timezone)
        dwell = ev.dwell_s
        people = sum(1 for d in ev.detections[-MAX_DETECTIONS:]
                     if d.label == "person" and d.score >= PEOPLE_MIN)
        return EventFacts(minute, weekday, frozenset(zone_word(z) for z in ev.zones[:MAX_ZONES]),
                          -1.0 if dwell is None else round(max(0.0, dwell), 1), ev.direction or "", people)

    def _embedding(self, ev: TrackEvent) -> bytes | None:
        """From the classification already made (same model run), else one run of the classifier."""
        known = ev.classification.embedding if ev.classification is not None else None
        if known is not None or self.classifier is None:
            return known
        return self.classifier.embed_jpeg(ev.crop_jpeg)


@dataclass(frozen=True)
class Triaged:
    """The triage's answer on one track event: the event the decision was made on (with what the triage
    added to it) and the decision."""

    event: TrackEvent
    decision: Decision
