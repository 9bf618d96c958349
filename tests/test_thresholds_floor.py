"""Per-camera score floors from honest evidence (issues 27 and 40, teach/thresholds.py), on their own: which stored
verdicts are evidence (the model's, the check's or the operator's judgement of the crop) and which are left out
(a cache hit's copy, a fallback) or count as a wanted escalation (an alert, an unknown, a person a policy
allowed); the floor proposed at its exact edges (just above a benign score, `margin` under every wanted one, at
least `min_avoided`); what a proposal says of its evidence; and the automatic mode pushing within its bounds, once
per floor. A real SQLite store; a Mosquitto of the test's own where a proposal is pushed.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time

import pytest
from edgetriage.cloud.broker.push import config_message, push_config
from edgetriage.cloud.config import CloudConfig, ThresholdsConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.cloud.teach.thresholds import (
    AutoThresholds,
    accept,
    cameras_seen,
    judged,
    merged,
    outcome,
    propose,
    propose_for,
    retained_config,
)
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict

NOW = int(time.time() * 1000)
DAY = 86_400_000


class History:
    """A camera's escalations and their verdicts in a real SQLite store."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self.n = 0

    def add(self, score: float, verdict: str | None = "benign", *, device: str = "pi-yard", camera: str = "yard",
            ms: int | None = None, **fields) -> str:
        self.n += 1
        t = NOW - 60_000 + self.n if ms is None else ms
        event = Event(event_id=uuid7(t), device=device, camera=camera, captured_ms=t, label="person", score=score,
                      uncertain=True, track_id=self.n, detections=[Detection(label="person", score=score,
                                                                             box=(0.1, 0.1, 0.5, 0.9))],
                      phash=f"{self.n:016x}", reason="uncertain", crop=b"\xff\xd8\xff\xd9")
        self.store.put_event(event, t)
        if verdict is not None:
            self.store.put_verdict(Verdict(**{
                "event_id": event.event_id, "device": device, "camera": camera, "label": "person",
                "verdict": verdict, "confidence": 0.9, "description": "", "model": "m", "created_ms": t,
                "decided_by": "model", **fields}))
        return event.event_id

    def many(self, scores, verdict: str = "benign", **fields) -> None:
        for score in scores:
            self.add(score, verdict, **fields)


@pytest.fixture
def history(tmp_path):
    store = SQLiteStore(tmp_path / "cloud.db")
    yield History(store)
    store.close()


# -- what is evidence ---------------------------------------------------------------------------------------------
def test_only_honest_judgements_are_benign_evidence():
    assert judged({"verdict": "benign", "decided_by": "model", "source": "llm"}) == "benign"
    assert judged({"verdict": "benign", "decided_by": "check", "source": "llm"}) == "benign"
    assert judged({"verdict": "benign"}) == "benign"  # an older cloud's verdict: the model's
    assert judged({"verdict": "benign", "decided_by": "operator", "source": "cloud_cache"}) == "benign"
    assert judged({"verdict": "benign", "decided_by": "operator", "source": "fallback"}) == "benign"
    assert judged({"verdict": "alert", "decided_by": "operator"}) == "wanted"
    assert judged({"verdict": "unknown", "decided_by": "operator"}) == "wanted"
    assert judged({"verdict": "benign", "decided_by": "policy", "source": "llm"}) == "wanted"  # a person allowed
    assert judged({"verdict": "alert", "source": "llm"}) == "wanted"
    assert judged({"verdict": "unknown", "source": "llm"}) == "wanted"
    assert judged({"verdict": "alert", "source": "cloud_cache"}) == "wanted"  # a copy of an alert: still wanted
    assert judged({"verdict": "benign", "source": "cloud_cache"}) == "reuse"  # a hit or a site offer
    assert judged({"verdict": "benign", "source": "fallback"}) == "fallback"
    assert judged({"verdict": "alert", "source": "fallback"}) == "fallback"


def test_a_floor_avoids_what_scored_under_it_and_counts_the_people_it_missed():
    rows = [{"score": s, "verdict": {"verdict": v}} for s, v in
            ((0.25, "benign"), (0.3, "alert"), (0.3, "benign"), (0.35, "unknown"), (0.4, "benign"))]
    assert outcome(rows, 0.3) == {"escalations": 5, "escalations_avoided": 1, "people_missed": 0}  # 0.3 is kept
    assert outcome(rows, 0.36) == {"escalations": 5, "escalations_avoided": 4, "people_missed": 2}
    assert outcome([], 0.5) == {"escalations": 0, "escalations_avoided": 0, "people_missed": 0}


# -- the floor proposed ------------------------------------------------------------------------------------------
def test_the_floor_is_the_next_hundredth_above_a_benign_score(history):
    history.add(0.25)
    assert propose(history.store, "pi-yard", "yard", min_avoided=1)["proposed"]["min_score"] == 0.26
    history.add(0.253)
    assert propose(history.store, "pi-yard", "yard", min_avoided=1)["proposed"]["min_score"] == 0.27


def test_the_floor_stays_margin_under_every_wanted_score_exactly(history):
    history.many((0.22, 0.25, 0.28, 0.31, 0.33, 0.35))
    history.many((0.47, 0.62), "alert")
    history.add(0.41, "unknown")
    out = propose(history.store, "pi-yard", "yard")
    assert out["proposed"] == {"min_score": 0.36, "uncertain_band": [0.36, 0.5], "escalations": 9,
                               "escalations_avoided": 6, "people_missed": 0}  # 0.41 - 0.05: the edge itself
    assert propose(history.store, "pi-yard", "yard", margin=0.051)["proposed"]["min_score"] == 0.34
    assert propose(history.store, "pi-yard", "yard", margin=0.17)["proposed"] is None  # 0.23: avoids one
    assert propose(history.store, "pi-yard", "yard", margin=0.17, min_avoided=1)["proposed"]["min_score"] == 0.23


def test_a_floor_goes_no_higher_than_the_bands_top(history):
    history.many((0.45, 0.48, 0.49, 0.55))
    out = propose(history.store, "pi-yard", "yard", band=(0.2, 0.5))
    assert out["proposed"]["min_score"] == 0.5 and out["proposed"]["escalations_avoided"] == 3
    assert out["proposed"]["uncertain_band"] == [0.5, 0.5]
    assert propose(history.store, "pi-yard", "yard", band=(0.2, 0.49))["proposed"] is None  # 0.49 avoids two
    assert propose(history.store, "pi-yard", "yard", band=(0.2, 0.49), min_avoided=2)["proposed"]["min_score"] == 0.49


def test_a_floor_must_avoid_at_least_min_avoided(history):
    history.many((0.3, 0.31, 0.32))
    assert propose(history.store, "pi-yard", "yard", min_avoided=3)["proposed"]["escalations_avoided"] == 3
    assert propose(history.store, "pi-yard", "yard", min_avoided=4)["proposed"] is None
    assert propose(history.store, "pi-yard", "yard", min_avoided=2)["proposed"]["min_score"] == 0.33  # highest


def test_only_benign_escalations_at_or_over_the_floor_now_make_floors(history):
    history.add(0.19)  # under the device's floor: escalated as an uncertain track
    assert propose(history.store, "pi-yard", "yard", min_avoided=1)["proposed"] is None
    history.add(0.2)
    assert propose(history.store, "pi-yard", "yard", min_avoided=1)["proposed"]["min_score"] == 0.21
    out = propose(history.store, "pi-yard", "yard", min_score=0.25, min_avoided=1)
    assert out["current"]["min_score"] == 0.25 and out["proposed"] is None
    assert propose(history.store, "pi-yard", "yard", min_score=0.1)["current"]["min_score"] == 0.2
    out = propose(history.store, "pi-yard", "yard", band=(0.3, 0.5), min_avoided=1)
    assert out["proposed"] is None and out["current"]["uncertain_band"] == [0.3, 0.5]


def test_a_proposal_says_what_evidence_it_used(history):
    history.many((0.22, 0.25, 0.28))
    history.add(0.3, decided_by="check")
    history.add(0.31, decided_by="operator")
    history.add(0.44, "alert", decided_by="operator")
    history.many((0.36, 0.37), decided_by="policy")  # people a policy allowed
    history.many((0.23, 0.24), source="cloud_cache", reused_from=uuid7())
    history.add(0.26, source="fallback")
    history.add(0.6, "unknown")
    history.add(0.1, None)  # not answered yet
    history.add(0.1, device="pi-gate")
    history.add(0.1, camera="gate")
    out = propose(history.store, "pi-yard", "yard", since_ms=NOW - DAY, min_avoided=1)
    assert out["device"] == "pi-yard" and out["camera"] == "yard" and out["since_ms"] == NOW - DAY
    assert out["evidence"] == {"verdicts": 9, "alerts_or_unknown": 4, "benign": 5, "by_operator": 2,
                               "policy_decided": 2, "left_out": {"reuse": 2, "fallback": 1},
                               "lowest_wanted_score": 0.36}
    assert out["current"] == {"min_score": 0.2, "uncertain_band": [0.2, 0.5], "escalations": 9,
                              "escalations_avoided": 0, "people_missed": 0}
    assert out["proposed"]["min_score"] == 0.31  # 0.36 - 0.05: the policy's people are wanted
    empty = propose(history.store, "pi-gate", "none")
    assert empty["evidence"]["lowest_wanted_score"] is None and empty["proposed"] is None
    assert empty["current"]["escalations"] == 0


def test_the_floor_now_counts_the_people_it_misses_already(history):
    history.add(0.19, "alert")
    history.many((0.25, 0.26, 0.27))
    out = propose(history.store, "pi-yard", "yard")
    assert out["current"]["people_missed"] == 1 and out["current"]["escalations_avoided"] == 1
    assert out["proposed"] is None  # the floor could only go up past that person


def test_proposals_read_the_history_of_their_settings(history):
    history.many((0.3, 0.31, 0.32), ms=NOW - 3 * DAY)
    history.many((0.4, 0.41, 0.42), ms=NOW - DAY // 2)
    config = ThresholdsConfig(history_days=1.0)
    assert propose_for(history.store, config, "pi-yard", "yard", now_ms=NOW)["proposed"]["min_score"] == 0.43
    assert propose_for(history.store, config, "pi-yard", "yard", now_ms=NOW)["since_ms"] == NOW - DAY
    wide = propose_for(history.store, ThresholdsConfig(history_days=4.0), "pi-yard", "yard", now_ms=NOW)
    assert wide["evidence"]["verdicts"] == 6 and wide["since_ms"] == NOW - 4 * DAY
    assert propose_for(history.store, config, "pi-yard", "yard", since_ms=0)["evidence"]["verdicts"] == 6
    now = propose_for(history.store, config, "pi-yard", "yard")  # the clock's now
    assert abs(now["since_ms"] - (int(time.time() * 1000) - DAY)) < 60_000
    tight = ThresholdsConfig(history_days=4.0, band=(0.31, 0.42), margin=0.1, min_avoided=4)
    out = propose_for(history.store, tight, "pi-yard", "yard", now_ms=NOW)
    assert out["current"]["uncertain_band"] == [0.31, 0.42] and out["proposed"]["min_score"] == 0.42
    assert out["proposed"]["escalations_avoided"] == 5
    history.add(0.51, "alert", ms=NOW - DAY // 2)
    out = propose_for(history.store, tight, "pi-yard", "yard", now_ms=NOW)
    assert out["proposed"]["min_score"] == 0.41  # 0.51 - 0.1
    assert propose_for(history.store, tight.model_copy(update={"min_avoided": 5}), "pi-yard", "yard",
                       now_ms=NOW)["proposed"] is None


def test_cameras_seen_are_each_camera_with_escalations_since(history):
    history.add(0.3, device="pi-b", camera="yard", ms=NOW - 1000)
    history.add(0.3, device="pi-a", camera="gate", ms=NOW - 1000)
    history.add(0.3, device="pi-a", camera="gate", ms=NOW - 900)
    history.add(0.3, device="pi-a", camera="drive", ms=NOW - 5 * DAY)
    assert cameras_seen(history.store, NOW - DAY) == [("pi-a", "gate"), ("pi-b", "yard")]
    assert cameras_seen(history.store, 0) == [("pi-a", "drive"), ("pi-a", "gate"), ("pi-b", "yard")]


# -- the device's configuration -----------------------------------------------------------------------------------
def test_a_proposal_is_merged_as_the_cameras_own_override_keeping_the_rest():
    held = {"budget": {"per_minute": 4}, "rules": {"min_score": 0.3, "overrides": [
        {"camera": "yard", "zone": "path", "min_score": 0.6}, {"camera": "gate", "min_score": 0.3},
        {"camera": "yard", "min_score": 0.25, "cooldown_s": 10}]}}
    proposed = {"min_score": 0.36, "uncertain_band": (0.36, 0.5)}
    doc = merged(held, "yard", proposed)
    assert doc == {"budget": {"per_minute": 4}, "rules": {"min_score": 0.3, "overrides": [
        {"camera": "yard", "zone": "path", "min_score": 0.6}, {"camera": "gate", "min_score": 0.3},
        {"camera": "yard", "min_score": 0.36, "cooldown_s": 10, "uncertain_band": [0.36, 0.5]}]}}
    assert held["rules"]["overrides"][2] == {"camera": "yard", "min_score": 0.25, "cooldown_s": 10}  # not changed
    assert merged({}, "porch", proposed) == {"rules": {"overrides": [
        {"camera": "porch", "min_score": 0.36, "uncertain_band": [0.36, 0.5]}]}}
    assert merged({"rules": None}, "porch", proposed)["rules"]["overrides"][0]["camera"] == "porch"


def _auto(store, mosquitto, prefix, tmp_path, **bounds) -> AutoThresholds:
    return AutoThresholds(store, CloudConfig.model_validate({
        "store_path": str(tmp_path / "cloud.db"), "mqtt": {"url": mosquitto.url, "prefix": prefix},
        "thresholds": {"auto": True, **bounds}}))


def _held(mqtt: MQTTConfig, device: str = "pi-yard") -> None:
    """What the device already holds: another component's section (kept by every push)."""
    version, payload = config_message({"budget": {"per_minute": 4}}, version="operator-1")
    assert push_config(mqtt, device, payload, version=version).outcome == "published"


def test_accepting_pushes_a_new_version_of_the_merged_configuration(mosquitto, prefix):
    mqtt = MQTTConfig(url=mosquitto.url, prefix=prefix)
    _held(mqtt)
    result = accept(mqtt, "pi-yard", "yard", {"min_score": 0.36, "uncertain_band": [0.36, 0.5]})
    assert result.outcome == "published" and re.fullmatch(r"thresholds-yard-\d{8}T\d{6}Z", result.version)
    assert retained_config(mqtt, "pi-yard") == {"budget": {"per_minute": 4}, "rules": {"overrides": [
        {"camera": "yard", "min_score": 0.36, "uncertain_band": [0.36, 0.5]}]}}


def test_auto_mode_pushes_what_misses_nobody_within_its_bound_once_per_floor(history, mosquitto, prefix, tmp_path):
    history.many((0.3, 0.31, 0.32))
    history.add(0.45, "alert")
    history.many((0.3, 0.31, 0.32), camera="gate")
    history.add(0.3, camera="porch")  # seen, too little evidence: no proposal, and the round goes on
    history.many((0.2, 0.21, 0.22), device="pi-b", camera="drive", ms=NOW - 10 * DAY)  # older than the history
    bounded = _auto(history.store, mosquitto, prefix, tmp_path, max_min_score=0.32)
    _held(bounded.config.mqtt)
    assert bounded.run_once(NOW) == []  # 0.33 is over the bound
    auto = _auto(history.store, mosquitto, prefix, tmp_path, max_min_score=0.33)
    pushed = auto.run_once(NOW)
    assert [(p["device"], p["camera"], p["min_score"], p["escalations_avoided"]) for p in pushed] == [
        ("pi-yard", "gate", 0.33, 3), ("pi-yard", "yard", 0.33, 3)]  # at the bound itself
    assert pushed[1]["evidence"]["alerts_or_unknown"] == 1 and pushed[1]["version"].startswith("thresholds-yard-")
    assert auto.pushed == {("pi-yard", "gate"): 0.33, ("pi-yard", "yard"): 0.33}
    assert auto.run_once(NOW) == []  # the same floors: not again
    history.add(0.33)
    assert auto.run_once(NOW) == []  # yard's floor moved to 0.34: over the bound
    wider = _auto(history.store, mosquitto, prefix, tmp_path, max_min_score=0.34)
    wider.pushed = dict(auto.pushed)
    assert [(p["camera"], p["min_score"]) for p in wider.run_once(NOW)] == [("yard", 0.34)]  # gate's is the same
    after = retained_config(auto.config.mqtt, "pi-yard")
    assert after["budget"] == {"per_minute": 4}
    assert after["rules"]["overrides"] == [{"camera": "gate", "min_score": 0.33, "uncertain_band": [0.33, 0.5]},
                                           {"camera": "yard", "min_score": 0.34, "uncertain_band": [0.34, 0.5]}]
    assert retained_config(auto.config.mqtt, "pi-b", wait_s=0.2) == {}


def test_the_automatic_round_runs_every_interval_says_what_it_pushed_and_outlives_a_failure(history, mosquitto,
                                                                                          prefix, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="edgetriage.cloud.thresholds")
    said = lambda: [r for r in caplog.records if r.name == "edgetriage.cloud.thresholds"]  # noqa: E731
    history.many((0.3, 0.31, 0.32))
    history.add(0.27, source="cloud_cache", reused_from=uuid7())
    history.add(0.6, "alert")
    auto = _auto(history.store, mosquitto, prefix, tmp_path, interval_s=1.0)
    _held(auto.config.mqtt)

    async def rounds() -> None:
        task = asyncio.create_task(auto.loop())
        deadline = time.monotonic() + 20
        while not any(r.levelno == logging.INFO for r in said()):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        auto.store.close()  # the store goes away: each round fails, and the loop goes on
        while sum(r.levelno == logging.ERROR for r in said()) < 2:
            assert time.monotonic() < deadline and not task.done()
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(rounds())
    assert time.monotonic() - started >= 2.9  # a round each interval, not at once
    messages = [r.getMessage() for r in said()]
    assert messages[0] == ("thresholds: pushed min_score 0.33 to pi-yard/yard (3 escalations avoided, nobody missed; "
                           "from 3 benign judged by the model or operator, 1 wanted, 1 left out)")
    assert messages[1:] == ["thresholds: the automatic round failed"] * 2
