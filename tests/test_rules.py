"""The device's escalation rules at their edges, fast: every reason a user reads in logs and replays, the
schedule's clock, which override applies, and the triage around the rules (classifier and verdict cache)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import pytest
from edgetriage.edge.triage.rules import RuleOverride, Rules, RulesConfig, ScheduleWindow, Triage
from edgetriage.edge.triage.verdict_cache import VerdictCache
from edgetriage.edge.vision.classify import Classification, ClassifierConfig, CropClassifier
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import ReuseRule, Verdict
from pydantic import ValidationError

T0 = 1_700_000_000_000
HASH = "0f0f0f0f0f0f0f0f"


@dataclass
class Track:
    label: str
    score: float
    camera: str = "front"
    zones: tuple[str, ...] = ()
    uncertain: bool = False
    dwell_s: float | None = None
    captured_ms: int = 0
    classification: object | None = None
    crop_jpeg: bytes = b""
    phash: str = HASH
    phash_alg: str = "dct64"
    embedding: bytes | None = None
    detections: list = field(default_factory=list)
    direction: str | None = None
    visit: str = ""


def _cat(person: float = 0.0, vehicle: float = 0.0, animal: float = 0.0, obj: float = 0.0,
         top: int = 281) -> Classification:
    """A classifier result with these probability masses (top class 281: a tabby cat)."""
    return Classification(classes=[("tabby", animal)], categories={"person": person, "vehicle": vehicle,
                                                                   "animal": animal, "object": obj}, top_index=top)


def _verdict(*, scope: str = "camera", site: str | None = None, camera: str = "front") -> Verdict:
    return Verdict(event_id=uuid7(T0), device="edge-1", camera=camera, label="person", verdict="benign",
                   confidence=0.9, description="d", model="m", created_ms=T0,
                   cache=ReuseRule(scope=scope, device="edge-1", camera=camera, site=site, label="person",
                                   phash=HASH, prompt_version="p1"))


def test_every_step_says_why_in_words():
    rules = Rules(RulesConfig(labels=["person"], confirm_labels=["package"], min_score=0.3, min_dwell_s=2,
                              uncertain_band=(0.3, 0.5), escalate=True, cooldown_s=60))
    reasons = [
        rules.decide(Track("car", 0.9), None, now_ms=T0),
        rules.decide(Track("person", 0.4, uncertain=True, classification=_cat(person=0.1, animal=0.85)), None,
                     now_ms=T0),
        rules.decide(Track("person", 0.25), None, now_ms=T0),
        rules.decide(Track("person", 0.9, dwell_s=1.94), None, now_ms=T0),
        rules.decide(Track("person", 0.9), _verdict(), now_ms=T0),
        rules.decide(Track("person", 0.45), None, now_ms=T0),
        rules.decide(Track("person", 0.45), None, now_ms=T0 + 12_600),
        rules.decide(Track("package", 0.9), _verdict(), now_ms=T0),
        rules.decide(Track("person", 0.9, camera="back"), None, now_ms=T0),
    ]
    quiet = Rules(RulesConfig(escalate=False))
    reasons.append(quiet.decide(Track("person", 0.8), None, now_ms=T0))
    assert [(d.kind, d.reason) for d in reasons] == [
        ("local", "label 'car' is not escalated"),
        ("local", "uncertain person: the classifier sees cat 0.85"),
        ("dropped", "score 0.25 below 0.30"),
        ("dropped", "stayed 1.9 s, under 2 s"),
        ("cached", f"cached benign from …{reasons[4].verdict.event_id[-8:]}"),
        ("escalate", "uncertain score 0.45"),
        ("dropped", "cooldown: person escalated 13 s ago"),
        ("escalate", "package always needs the cloud's confirmation"),
        ("escalate", "person 0.90, verdict wanted"),
        ("local", "confident person 0.80, escalation off"),
    ]
    assert reasons[4].verdict is not None and reasons[5].verdict is None


def test_the_veto_needs_enough_evidence_and_an_uncertain_track():
    rules = Rules(RulesConfig(veto_min_prob=0.6))
    uncertain = dict(uncertain=True)
    assert rules.decide(Track("person", 0.4, classification=_cat(animal=0.6, person=0.1), **uncertain), None,
                        now_ms=T0).kind == "local"  # exactly veto_min_prob
    assert rules.decide(Track("person", 0.4, classification=_cat(animal=0.59, person=0.1), **uncertain), None,
                        now_ms=T0).kind == "escalate"
    assert rules.decide(Track("person", 0.9, classification=_cat(animal=0.9)), None, now_ms=T0).kind == "escalate"
    assert rules.decide(Track("person", 0.4, classification=None, **uncertain), None,
                        now_ms=T0).kind == "escalate"  # the classifier did not look: nothing to go on


def test_dwell_at_exactly_the_minimum_counts_and_an_unknown_dwell_is_not_held_against_it():
    rules = Rules(RulesConfig(min_dwell_s=2))
    assert rules.decide(Track("person", 0.9, dwell_s=2.0), None, now_ms=T0).kind == "escalate"
    assert rules.decide(Track("person", 0.9, dwell_s=None), None, now_ms=T0).kind == "escalate"
    assert Rules(RulesConfig()).decide(Track("person", 0.9, dwell_s=0.0), None, now_ms=T0).kind == "escalate"


def test_without_a_time_the_tracks_own_capture_time_runs_the_cooldown():
    rules = Rules(RulesConfig(cooldown_s=10))
    assert rules.decide(Track("person", 0.9, captured_ms=T0), None).kind == "escalate"
    d = rules.decide(Track("person", 0.9, captured_ms=T0 + 4_000), None)
    assert (d.kind, d.reason) == ("dropped", "cooldown: person escalated 4 s ago")


def test_new_settings_keep_the_cooldown_clocks():
    """A remote rules change must not let everyone escalated a moment ago be escalated again."""
    rules = Rules(RulesConfig(cooldown_s=60, min_score=0.3))
    assert rules.decide(Track("person", 0.9), None, now_ms=T0).kind == "escalate"
    changed = rules.successor(RulesConfig(cooldown_s=30, min_score=0.5))
    d = changed.decide(Track("person", 0.9), None, now_ms=T0 + 20_000)
    assert (d.kind, d.reason) == ("dropped", "cooldown: person escalated 20 s ago")
    assert changed.decide(Track("person", 0.9), None, now_ms=T0 + 31_000).kind == "escalate"  # the new length


def test_schedule_clock_edges():
    for good in ("00:00", "09:30", "19:59", "20:00", "23:59", "24:00"):
        assert ScheduleWindow(start=good).start == good
    for bad in ("24:01", "23:60", "9:00", "25:00", "2400", " 10:00"):
        with pytest.raises(ValueError) as err:
            ScheduleWindow(end=bad)
        assert err.value.errors()[0]["msg"] == "Value error, must be a time of day HH:MM (00:00 to 24:00)"
        assert err.value.errors()[0]["loc"] == ("end",)
    with pytest.raises(ValueError) as err:
        ScheduleWindow(start="7:00")
    assert err.value.errors()[0]["loc"] == ("start",)
    odd = ScheduleWindow(days=["tue"], start="09:30", end="17:45")
    assert odd.active(1, 9 * 60 + 30) and not odd.active(1, 9 * 60 + 29)
    assert odd.active(1, 17 * 60 + 44) and not odd.active(1, 17 * 60 + 45)
    day = ScheduleWindow(days=["mon"], start="09:00", end="17:00")
    assert day.active(0, 9 * 60) and day.active(0, 17 * 60 - 1)  # start inclusive
    assert not day.active(0, 17 * 60) and not day.active(0, 9 * 60 - 1) and not day.active(1, 12 * 60)
    whole = ScheduleWindow()
    assert all(whole.active(d, m) for d in range(7) for m in (0, 719, 1439))
    night = ScheduleWindow(days=["sun"], start="22:00", end="06:00")
    assert night.active(6, 22 * 60) and night.active(0, 6 * 60 - 1)  # Sunday night into Monday morning
    assert not night.active(0, 6 * 60) and not night.active(6, 6 * 60 - 1) and not night.active(5, 23 * 60)
    assert not ScheduleWindow(start="10:00", end="10:00").active(0, 10 * 60)  # an empty window


def test_bands_must_be_ordered_and_overrides_must_be_scoped():
    assert RulesConfig(uncertain_band=(0.4, 0.4)).uncertain_band == (0.4, 0.4)
    with pytest.raises(ValueError) as err:
        RulesConfig(uncertain_band=(0.5, 0.4))
    assert err.value.errors()[0]["msg"] == "Value error, must be [low, high] with low <= high"
    with pytest.raises(ValueError) as err:
        RuleOverride(zone="porch", uncertain_band=(0.5, 0.4))
    assert err.value.errors()[0]["msg"] == "Value error, uncertain_band must be [low, high] with low <= high"
    assert RuleOverride(zone="porch", uncertain_band=(0.4, 0.5)).uncertain_band == (0.4, 0.5)
    assert RuleOverride(zone="porch", uncertain_band=(0.4, 0.4)).uncertain_band == (0.4, 0.4)
    with pytest.raises(ValueError) as err:
        RuleOverride(min_score=0.5)
    assert err.value.errors()[0]["msg"] == ("Value error, an override needs a camera, a zone or both (the defaults "
                                            "apply everywhere)")
    assert [RuleOverride(camera="a").specificity, RuleOverride(zone="z").specificity,
            RuleOverride(camera="a", zone="z").specificity] == [1, 2, 3]


def test_the_most_specific_override_wins_and_the_first_listed_on_a_tie():
    rules = Rules(RulesConfig.model_validate({"min_score": 0.1, "overrides": [
        {"camera": "yard", "min_score": 0.2},
        {"zone": "porch", "min_score": 0.3},
        {"zone": "drive", "min_score": 0.4},
        {"zone": "porch", "min_score": 0.5},  # same specificity as the earlier porch rule: never used
        {"camera": "yard", "zone": "porch", "min_score": 0.6},
    ]}))
    picks = {
        ("door", ()): (0.1, "*"),
        ("yard", ()): (0.2, "camera=yard"),
        ("door", ("porch",)): (0.3, "zone=porch"),
        ("door", ("drive", "porch")): (0.3, "zone=porch"),
        ("yard", ("drive",)): (0.4, "zone=drive"),
        ("yard", ("porch",)): (0.6, "camera=yard zone=porch"),
    }
    for (camera, zones), (min_score, scope) in picks.items():
        rule = rules.rule_for(camera, zones)
        assert (rule.min_score, rule.scope) == (min_score, scope), (camera, zones)
    assert rules.rule_for("yard", ["porch"]) is rules.rule_for("yard", ("porch",))  # worked out once
    assert rules.rule_for("door").labels == ["person"]
    overridden = rules.rule_for("yard", ["porch"])  # its unset keys inherit the defaults
    assert (overridden.labels, overridden.escalate, overridden.uncertain_band) == (["person"], True, (0.2, 0.5))
    with pytest.raises(ValidationError):  # a frozen model
        overridden.scope = "*"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules.decide(Track("person", 0.9), None, now_ms=T0).kind = "local"  # type: ignore[misc]
    assert rules.min_dwell_s("door", ["porch"]) == 0.0


def test_what_the_triage_asks_of_the_rules():
    config = RulesConfig.model_validate({"labels": ["person"], "confirm_labels": ["package"],
                                         "overrides": [{"camera": "quiet", "classify": False}]})
    rules = Rules(config)
    assert rules.config is config
    assert rules.escalates(Track("package", 0.9)) and not rules.escalates(Track("car", 0.9))
    assert rules.wants_classes(Track("person", 0.9)) and not rules.wants_classes(Track("car", 0.9))
    assert not rules.wants_classes(Track("person", 0.9, camera="quiet"))
    assert not rules.wants_classes(Track("person", 0.9), camera="quiet")  # the camera given wins
    assert rules.is_uncertain(Track("person", 0.2)) and rules.is_uncertain(Track("person", 0.9, uncertain=True))
    assert not rules.is_uncertain(Track("person", 0.5)) and not rules.is_uncertain(Track("person", 0.19))


def test_triage_classifies_only_what_may_escalate_and_asks_the_cache_only_then(visitor_jpeg):
    classifier = CropClassifier(ClassifierConfig())
    cache = VerdictCache(16)
    assert cache.add(_verdict(), T0)
    rules = Rules(RulesConfig.model_validate({"labels": ["person"],
                                              "overrides": [{"camera": "quiet", "classify": False}]}))
    triage = Triage(rules, device="edge-1", cache=cache, classifier=classifier)
    ev = Track("person", 0.9, crop_jpeg=visitor_jpeg)
    t = triage.decide("front", ev, T0 + 1)
    assert t.decision.kind == "cached" and cache.hits == 1
    assert isinstance(t.event.classification, Classification)
    assert ev.classification is None and t.event is not ev  # a new event with what was added; ev as it was
    car = Track("car", 0.9, crop_jpeg=visitor_jpeg)
    t = triage.decide("front", car, T0 + 1)
    assert t.decision.kind == "local" and t.event is car
    assert car.classification is None and (cache.hits, cache.misses) == (1, 0)  # neither was asked
    quiet = Track("person", 0.9, camera="quiet", crop_jpeg=visitor_jpeg)
    assert triage.decide("quiet", quiet, T0 + 1).event.classification is None
    other_hash = Track("person", 0.9, crop_jpeg=visitor_jpeg, phash_alg="other")
    assert triage.decide("front", other_hash, T0 + 1).decision.kind == "escalate" and cache.misses == 2


def test_triage_finds_site_verdicts_only_for_its_own_site():
    cache = VerdictCache(16)
    assert cache.add(_verdict(scope="site", site="shop", camera="till"), T0)
    rules = Rules(RulesConfig())
    assert Triage(rules, device="edge-1", site="shop", cache=cache).decide(
        "front", Track("person", 0.9), T0).decision.kind == "cached"
    assert Triage(rules, device="edge-1", cache=cache).decide(
        "front", Track("person", 0.9), T0).decision.kind == "escalate"
    assert Triage(rules, device="edge-1").decide(
        "front", Track("person", 0.9), T0).decision.kind == "escalate"


def test_probabilities_and_seconds_are_bounded():
    for key in ("min_score", "veto_min_prob"):
        assert getattr(RulesConfig(**{key: 0.0}), key) == 0.0 and getattr(RulesConfig(**{key: 1.0}), key) == 1.0
        for bad in (-0.01, 1.01):
            with pytest.raises(ValueError, match=key):
                RulesConfig(**{key: bad})
    assert RulesConfig(cooldown_s=7 * 86400.0).cooldown_s == 7 * 86400.0
    for bad in (-1.0, 7 * 86400.0 + 1):
        with pytest.raises(ValueError, match="cooldown_s"):
            RulesConfig(cooldown_s=bad)


@dataclass
class Bare:
    """A track event with the rules' view of it and nothing more (no capture time: 0)."""

    label: str
    score: float
    uncertain: bool = False
    camera: str = ""
    zones: tuple[str, ...] = ()
    dwell_s: float | None = None
    captured_ms: int = 0
    classification: object | None = None
    visit: str = ""
    detections: tuple = ()


def test_a_track_without_a_capture_time_runs_on_the_wall_clock():
    rules = Rules(RulesConfig(cooldown_s=600))
    five_s_ago = int(time.time() * 1000) - 5_000
    assert rules.decide(Bare("person", 0.9), None, camera="front", now_ms=five_s_ago).kind == "escalate"
    d = rules.decide(Bare("person", 0.9), None, camera="front")
    assert d.kind == "dropped" and d.reason in ("cooldown: person escalated 5 s ago",
                                                "cooldown: person escalated 6 s ago"), d.reason


def test_cooldown_edges_the_same_millisecond_and_its_rounding():
    rules = Rules(RulesConfig(cooldown_s=600))
    assert rules.decide(Track("person", 0.9), None, now_ms=T0).kind == "escalate"
    assert rules.decide(Track("person", 0.9), None, now_ms=T0).kind == "dropped"  # the same millisecond
    assert rules.decide(Track("person", 0.9), None, now_ms=T0 + 499_500).reason == \
        "cooldown: person escalated 500 s ago"


def _local_ms(hour: int, minute: int) -> int:
    """Local epoch ms on Tuesday 2024-06-04 at hour:minute."""
    return int(time.mktime((2024, 6, 4, hour, minute, 0, 0, 0, -1)) * 1000)


def test_the_schedule_reads_hours_and_minutes_of_local_time():
    rules = Rules(RulesConfig.model_validate({"schedule": [{"days": ["tue"], "start": "09:30", "end": "17:45"}]}))
    kinds = {(h, m): rules.decide(Track("person", 0.9), None, now_ms=_local_ms(h, m)).kind
             for h, m in ((9, 29), (9, 31), (17, 44), (17, 45))}
    assert kinds == {(9, 29): "local", (9, 31): "escalate", (17, 44): "escalate", (17, 45): "local"}


def test_triage_keeps_a_classification_it_was_given_and_defaults_the_hash_algorithm(visitor_jpeg):
    classifier = CropClassifier(ClassifierConfig())
    cache = VerdictCache(16)
    assert cache.add(_verdict(), T0)
    triage = Triage(Rules(RulesConfig()), device="edge-1", cache=cache, classifier=classifier)
    given = _cat(person=0.9)
    ev = Track("person", 0.9, crop_jpeg=visitor_jpeg, classification=given)
    assert triage.decide("front", ev, T0).event.classification is given  # classified upstream: not again
    assert triage.decide("front", Track("person", 0.9), T0).decision.kind == "cached"  # phash_alg dct64
