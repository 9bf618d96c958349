"""The edge cascade and its decisions on real frames from the shared clips, with the real models: the tracker
through an occlusion, one event per labelled visit, uncertain regions (the tiny cyclist) and no person on
the road clip, zones, masks and dwell, the rules (schedules, overrides, confirmation, cooldown, classifier
veto), verdict reuse of a near-identical crop, and the `edge replay` command."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from edgetriage.cli import main as cli_main
from edgetriage.edge.config import EdgeConfig
from edgetriage.edge.replay import Replayer
from edgetriage.edge.triage.rules import Rules, RulesConfig, ScheduleWindow, Triage
from edgetriage.edge.triage.verdict_cache import VerdictCache
from edgetriage.edge.vision.capture import Frame, FrameSource
from edgetriage.edge.vision.classify import Classification, ClassifierConfig, CropClassifier
from edgetriage.edge.vision.crops import crop_box
from edgetriage.edge.vision.detect import Det
from edgetriage.edge.vision.pipeline import TrackEvent, VisionConfig, VisionPipeline
from edgetriage.edge.vision.track import IoUTracker, TrackerConfig
from edgetriage.edge.vision.zones import CameraGeometry, ZoneConfig, inside
from edgetriage.shared.config import ConfigError, validate_config
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import ReuseRule, Verdict

VISITS = [(6, 19), (23, 45), (51, 69), (75, 86), (93, 119), (124, 135)]  # labels.json, one-by-one clip
TABLE = [(0.40, 0.70), (0.85, 0.70), (0.85, 1.0), (0.40, 1.0)]  # the floor where every visitor stands
TV = (0.0, 0.0, 0.15, 0.39)  # the screen on the wall of the one-by-one room


@pytest.fixture(scope="module")
def media(clip_one_by_one) -> Path:
    folder = clip_one_by_one.parent
    for name in ("car-detection.mp4", "person-bicycle-car-detection.gif", "face-demographics-walking.gif"):
        if not (folder / name).is_file():
            pytest.fail(
                f"{folder / name} is missing: the sample clips ship in models/media/ (is the checkout complete?)"
            )
    return folder


@pytest.fixture(scope="module")
def replayer(detector, stages) -> Replayer:
    return Replayer(EdgeConfig(), detector=detector, stages=stages)


def frames_at(path: Path, start: int, count: int) -> list[Frame]:
    return list(FrameSource(str(path), start_frame=start, max_frames=count))


def person_events(result) -> list[TrackEvent]:
    return [e.event for e in result.events if e.event.label == "person"]


# -- tracker ----------------------------------------------------------------------------------------------
def test_tracker_keeps_identity_through_a_real_occlusion(detector, clip_one_by_one):
    # a visitor walks towards the table; for 0.6 s a grey panel hides her (the detector sees nothing);
    # the motion model carries her box through the gap and the same track continues
    frames = frames_at(clip_one_by_one, 745, 30)
    tracker = IoUTracker(TrackerConfig())
    ids_before, ids_after = set(), set()
    for i, frame in enumerate(frames):
        image = frame.image.copy()
        occluded = 12 <= i < 18
        if occluded:
            image[:, 300:] = 127
        dets = [d for d in detector.detect(image) if d.label == "person" and d.score >= 0.5]
        if occluded:
            assert dets == []
        update = tracker.update(frame.pts_s, dets)
        (ids_before if i < 12 else ids_after).update(t.track_id for t, _ in update.matched)
        assert tracker.expire(frame.pts_s) == []
    assert len(ids_before) == 1 and ids_after == ids_before, (ids_before, ids_after)


def test_second_association_keeps_a_person_who_walks_off_fast():
    # stood still (velocity 0), then the next detection is a box further right than IoU can bridge
    tracker = IoUTracker(TrackerConfig())
    for i in range(5):
        tracker.update(i * 0.1, [Det("person", 0.9, (0.50, 0.04, 0.68, 0.93))])
    update = tracker.update(0.6, [Det("person", 0.8, (0.64, 0.07, 0.84, 0.94))])
    assert update.started == [] and len(tracker.tracks) == 1 and tracker.tracks[0].hits == 6
    # a car there is not that person
    update = tracker.update(0.7, [Det("car", 0.8, (0.70, 0.07, 0.90, 0.94))])
    assert [t.label for t in update.started] == ["car"]
    assert IoUTracker(TrackerConfig(near_width=0.0)).update(0.0, []).started == []


def test_motion_blobs_start_motion_tracks_and_are_explained_by_detections():
    tracker = IoUTracker(TrackerConfig())
    blob = (0.1, 0.1, 0.2, 0.3)
    update = tracker.update(0.0, [], [blob])
    assert [t.label for t in update.started] == ["motion"] and tracker.tracks[0].motion_only
    tracker.update(0.1, [], [(0.11, 0.1, 0.21, 0.3)])
    assert tracker.tracks[0].blob_hits == 2 and tracker.tracks[0].box == (0.11, 0.1, 0.21, 0.3)
    # a detection on the blob takes the motion track over (it becomes what the detector says)
    tracker.update(0.2, [Det("person", 0.7, (0.11, 0.1, 0.21, 0.32))], [(0.11, 0.1, 0.22, 0.3)])
    assert [(t.label, t.hits) for t in tracker.tracks] == [("person", 1)]
    # motion-only tracks end sooner than detected ones
    tracker.update(0.3, [], [(0.7, 0.7, 0.8, 0.8)])
    assert [t.label for t in tracker.expire(1.41)] == ["motion"]


# -- the whole cascade on the clips -----------------------------------------------------------------------
def test_one_person_event_per_labelled_visit(replayer, clip_one_by_one):
    result = replayer.run(str(clip_one_by_one))
    people = person_events(result)
    per_visit = [sum(e.first_ts < b + 1 and e.last_ts > a - 1 for e in people) for a, b in VISITS]
    assert per_visit == [1] * 6, [(round(e.first_ts, 1), round(e.last_ts, 1)) for e in people]
    assert len(people) == 6
    assert all(e.decision.kind == "escalate" for e in result.events if e.event.label == "person")
    stats = result.stats
    assert stats["frames_read"] == 1394 and stats["frames_detected"] < 0.25 * 1394  # the gate's job
    assert stats["frames_followed"] > 0


def test_closer_looks_find_the_tiny_pedestrian_and_cyclist(replayer, media):
    # parking lot from high up: a pedestrian in the first second and a cyclist a few pixels tall, each seen
    # faintly or once by a look at the whole frame; closer looks (confirmation looks at twice the detail, the
    # look at an unexplained motion region, the look for a bike's rider) make each an event
    result = replayer.run(str(media / "person-bicycle-car-detection.gif"))
    people = person_events(result)
    assert any(e.first_ts < 0.9 for e in people)  # the pedestrian
    cyclist = [e for e in people if e.first_ts >= 0.9 and e.last_ts > 1.5]
    assert cyclist, [(e.label, e.score, e.uncertain, e.first_ts, e.last_ts) for e in (x.event for x in result.events)]
    assert result.stats["confirm_looks"] >= 1
    decided = {e.event.track_id: e.decision for e in result.events}
    assert all(decided[e.track_id].kind == "escalate" for e in people)
    assert all(e.label != "person" for e in (x.event for x in result.events) if e.label in ("car", "bus"))


def test_no_person_is_escalated_on_the_road_clip(replayer, media):
    result = replayer.run(str(media / "car-detection.mp4"))
    assert person_events(result) == []
    assert all(e.decision.kind == "local" for e in result.events)
    assert result.stats["motion_tracks"] > 0  # cars seen from above moved and were looked at


def test_masks_hide_motion_and_detections(detector, stages, clip_one_by_one):
    frames = frames_at(clip_one_by_one, 740, 160)  # visit 4: she walks in and stands at the table
    right = [(0.35, 0.0), (1.0, 0.0), (1.0, 1.0), (0.35, 1.0)]
    seen = {}
    for name, geometry in (("open", None), ("masked", CameraGeometry(masks=[right]))):
        pipeline = VisionPipeline("door", VisionConfig(), detector, stages=stages, geometry=geometry)
        events = []
        for frame in frames:
            events += pipeline.process(frame).new_events
        events += pipeline.finish().new_events
        seen[name] = ([e for e in events if e.label == "person"], pipeline.stats)
    assert len(seen["open"][0]) == 1 and seen["masked"][0] == []
    # her motion is masked too: the gate sends far fewer frames to the detector (besides the looks at the
    # stream's first second, which every stream gets)
    gated = {name: stats.frames_detected - stats.start_looks for name, (_, stats) in seen.items()}
    assert gated["masked"] < gated["open"] / 2, gated


def test_zones_and_dwell_on_real_frames(detector, stages, clip_one_by_one):
    frames = frames_at(clip_one_by_one, 740, 160)
    geometry = CameraGeometry([ZoneConfig(name="table", polygon=TABLE), ZoneConfig(name="door", polygon=[
        (0.0, 0.0), (0.2, 0.0), (0.2, 0.5)])])
    rules = Rules(RulesConfig(overrides=[{"camera": "door", "zone": "table", "min_dwell_s": 6.0}]))
    pipeline = VisionPipeline("door", VisionConfig(), detector, stages=stages, geometry=geometry,
                              min_dwell=lambda zones: rules.min_dwell_s("door", zones))
    emitted = []
    for frame in frames:
        for ev in pipeline.process(frame).new_events:
            emitted.append((frame.pts_s, ev))
    people = [(t, e) for t, e in emitted if e.label == "person"]
    assert len(people) == 1
    t, ev = people[0]
    assert ev.zones == ["table"] and ev.dwell_s >= 6.0 and t - ev.first_ts >= 6.0
    decision = rules.decide(ev, None, camera="door", now_ms=ev.captured_ms)
    assert decision.kind == "escalate"


# -- rules ------------------------------------------------------------------------------------------------
@dataclass
class Ev:
    label: str
    score: float
    uncertain: bool = False
    camera: str = "door"
    zones: list[str] = field(default_factory=list)
    dwell_s: float = 10.0
    captured_ms: int = 0
    classification: Classification | None = None
    visit: str = ""
    detections: list = field(default_factory=list)


def _ms(day: int, hour: int, minute: int = 0) -> int:
    """Local epoch ms of a weekday (0 = Monday) in the week of 2024-06-03 (a Monday)."""
    import time

    return int(time.mktime((2024, 6, 3 + day, hour, minute, 0, 0, 0, -1)) * 1000)


def test_schedule_windows_run_past_midnight():
    night = ScheduleWindow(days=["fri"], start="22:00", end="06:00")
    assert night.active(4, 23 * 60) and night.active(5, 5 * 60 + 59)  # Friday 23:00, Saturday 05:59
    assert not night.active(5, 6 * 60) and not night.active(4, 21 * 60) and not night.active(3, 23 * 60)
    rules = Rules(RulesConfig(schedule=[night]))
    assert rules.decide(Ev("person", 0.9), None, now_ms=_ms(4, 23)).kind == "escalate"
    d = rules.decide(Ev("person", 0.9), None, now_ms=_ms(4, 12))
    assert (d.kind, d.reason) == ("local", "outside the schedule of rule *")
    with pytest.raises(ValueError, match="HH:MM"):
        ScheduleWindow(start="25:00")


def test_schedules_read_the_configured_time_zone_not_the_system_one():
    """A night rule means night where the camera is: the same instant is 23:30 in Berlin and 17:30 in New York."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    instant = int(datetime(2024, 6, 7, 23, 30, tzinfo=ZoneInfo("Europe/Berlin")).timestamp() * 1000)
    config = RulesConfig(schedule=[ScheduleWindow(days=["fri"], start="22:00", end="06:00")])
    berlin = Rules(config, timezone="Europe/Berlin").decide(Ev("person", 0.9), None, now_ms=instant)
    new_york = Rules(config, timezone="America/New_York").decide(Ev("person", 0.9), None, now_ms=instant)
    assert berlin.kind == "escalate"
    assert (new_york.kind, new_york.reason) == ("local", "outside the schedule of rule *")


def test_overrides_pick_the_most_specific_rule_and_inherit_the_rest():
    config = RulesConfig(min_score=0.4, overrides=[
        {"camera": "yard", "labels": ["person", "car"]},
        {"zone": "porch", "escalate": False},
        {"camera": "yard", "zone": "porch", "min_score": 0.7},
    ])
    rules = Rules(config)
    assert rules.rule_for("door").labels == ["person"]
    assert rules.rule_for("yard").labels == ["person", "car"] and rules.rule_for("yard").min_score == 0.4
    porch = rules.rule_for("yard", ["porch"])
    assert porch.min_score == 0.7 and porch.labels == ["person"] and porch.escalate is True
    assert rules.decide(Ev("car", 0.9, camera="yard"), None).kind == "escalate"
    assert rules.decide(Ev("car", 0.9), None).kind == "local"
    assert rules.decide(Ev("person", 0.9, zones=["porch"]), None).kind == "local"  # escalation off there
    assert rules.decide(Ev("person", 0.6, camera="yard", zones=["porch"]), None).kind == "dropped"
    with pytest.raises(ConfigError, match="needs a camera, a zone or both"):
        validate_config(EdgeConfig, {"rules": {"overrides": [{"min_score": 0.5}]}})
    with pytest.raises(ConfigError, match="rules.labls: unknown key"):
        validate_config(EdgeConfig, {"rules": {"labls": ["person"]}})


def _verdict(phash: str, created_ms: int, label: str = "person") -> Verdict:
    return Verdict(event_id=uuid7(created_ms), device="edge-1", camera="door", label=label, verdict="benign",
                   confidence=0.9, description="d", model="m", created_ms=created_ms,
                   cache=ReuseRule(device="edge-1", camera="door", label=label, phash=phash, prompt_version="p1"))


def test_confirmation_dwell_cooldown_and_uncertain_flag():
    cached = _verdict("0f0f0f0f0f0f0f0f", 1)
    rules = Rules(RulesConfig(labels=["person"], confirm_labels=["package"], min_dwell_s=2.0, cooldown_s=30.0))
    now = 1_700_000_000_000
    d = rules.decide(Ev("package", 0.9, captured_ms=now), cached)
    assert (d.kind, d.reason) == ("escalate", "package always needs the cloud's confirmation")
    assert rules.decide(Ev("person", 0.9, dwell_s=1.0), None, now_ms=now).kind == "dropped"
    assert rules.decide(Ev("person", 0.9), cached, now_ms=now).kind == "cached"  # no cooldown started
    assert rules.decide(Ev("person", 0.9), None, now_ms=now).kind == "escalate"
    d = rules.decide(Ev("person", 0.9), None, now_ms=now + 10_000)
    assert (d.kind, d.reason) == ("dropped", "cooldown: person escalated 10 s ago")
    assert rules.decide(Ev("person", 0.9, camera="yard"), None, now_ms=now + 10_000).kind == "escalate"
    assert rules.decide(Ev("person", 0.9), None, now_ms=now + 31_000).kind == "escalate"
    # the pipeline's uncertain flag counts even below min_score
    plain = Rules(RulesConfig())
    assert plain.decide(Ev("person", 0.05, uncertain=True), None).kind == "escalate"
    assert plain.decide(Ev("person", 0.05), None).kind == "dropped"


def test_classifier_vetoes_an_uncertain_person_that_is_the_tv(clip_one_by_one):
    classifier = CropClassifier(ClassifierConfig())
    frame = frames_at(clip_one_by_one, 800, 1)[0].image
    tv = classifier.classify(crop_box(frame, TV))
    person = classifier.classify(crop_box(frame, (0.47, 0.07, 0.67, 0.89)))
    assert tv.names_other_than_person(0.5) == ("object", pytest.approx(tv.categories["object"]))
    assert person.names_other_than_person(0.5) is None
    assert abs(sum(tv.categories.values()) - 1.0) < 1e-6 and len(tv.classes) == 3
    tiny = classifier.classify(crop_box(frame, TV)[:20, :20])
    assert not tiny.reliable and tiny.names_other_than_person(0.0) is None
    rules = Rules(RulesConfig())
    d = rules.decide(Ev("person", 0.3, uncertain=True, classification=tv), None)
    assert d.kind == "local" and "the classifier sees object" in d.reason
    assert rules.decide(Ev("person", 0.3, uncertain=True, classification=person), None).kind == "escalate"
    assert rules.decide(Ev("person", 0.9, classification=tv), None).kind == "escalate"  # confident: no veto


# -- verdict reuse ----------------------------------------------------------------------------------------
def test_a_near_identical_crop_reuses_the_verdict_on_the_device(detector, stages, clip_one_by_one):
    # the visitor of visit 4 twice, the second pass two frames later: the first pass's verdict answers it
    cache = VerdictCache(64, max_distance=EdgeConfig().cache.default_max_distance)
    config = EdgeConfig()
    replayer = Replayer(config, detector=detector, stages=stages)
    replayer.triage = Triage(replayer.rules, device="edge-1", cache=cache, classifier=stages.classifier)
    first = replayer.run("door.mp4", frames_at(clip_one_by_one, 740, 160), fps=10.0)
    asked = [e for e in first.events if e.decision.kind == "escalate"]
    assert len(asked) == 1
    now = asked[0].event.captured_ms
    assert cache.add(_verdict(asked[0].event.phash, now), now)
    second = replayer.run("door.mp4", frames_at(clip_one_by_one, 742, 160), fps=10.0)
    kinds = [e.decision.kind for e in second.events if e.event.label == "person"]
    assert kinds == ["cached"], [(e.decision.kind, e.event.phash, asked[0].event.phash) for e in second.events]
    # another visitor at the same table is not answered by her verdict
    third = replayer.run("door.mp4", frames_at(clip_one_by_one, 1240, 120), fps=10.0)
    assert [e.decision.kind for e in third.events if e.event.label == "person"] == ["escalate"]


# -- zones and the replay command --------------------------------------------------------------------------
def test_zone_geometry_and_config_errors():
    assert inside(TABLE, 0.6, 0.9) and not inside(TABLE, 0.6, 0.5)
    geometry = CameraGeometry([ZoneConfig(name="table", polygon=TABLE)], [[(0.0, 0.0), (0.2, 0.0), (0.2, 0.4)]])
    assert geometry.zones_of((0.5, 0.1, 0.7, 0.9)) == {"table"} and geometry.zones_of((0.5, 0.1, 0.7, 0.5)) == set()
    assert geometry.masked((0.15, 0.0, 0.2, 0.2)) and not geometry.masked((0.5, 0.5, 0.6, 0.6))
    mask = geometry.motion_mask(160, 90)
    assert mask.shape == (90, 160) and mask[2, 30] == 0 and mask[80, 100] == 255
    with pytest.raises(ValueError, match="repeated: table"):
        CameraGeometry([ZoneConfig(name="table", polygon=TABLE)] * 2)
    with pytest.raises(ConfigError, match="no area"):
        validate_config(EdgeConfig, {"cameras": [{"id": "a", "zones": [
            {"name": "line", "polygon": [[0, 0], [0.5, 0.5], [1, 1]]}]}]})


def test_replay_command_writes_one_json_line_per_event(media, tmp_path, capsys):
    out = tmp_path / "events.jsonl"
    config = tmp_path / "edge.toml"
    config.write_text('[rules]\ncooldown_s = 60\n', encoding="utf-8")
    clip = media / "face-demographics-walking.gif"
    assert cli_main(["edge", "replay", str(clip), "--config", str(config), "--events-out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 and {e["label"] for e in lines} == {"person"}
    for e in lines:
        assert {"event_id", "camera", "label", "score", "uncertain", "first_ts", "last_ts", "decision",
                "reason"} <= set(e)
        assert e["camera"] == "face-demographics-walking" and 0.0 <= e["first_ts"] <= e["last_ts"] <= 2.8
        assert e["decision"] in ("escalate", "cached", "local", "dropped")
    assert sorted(e["decision"] for e in lines) == ["dropped", "escalate"]  # the second is in the cooldown
    assert "face-demographics-walking.gif: 35 frames" in capsys.readouterr().err
    assert cli_main(["edge", "replay", str(tmp_path / "nope.mp4"), "--events-out", str(out)]) == 2
    assert "file not found" in capsys.readouterr().err


def test_replayed_times_are_seconds_from_the_clip_start(replayer, clip_one_by_one):
    frames = frames_at(clip_one_by_one, 1240, 60)
    result = replayer.run(str(clip_one_by_one), frames, fps=10.0)
    (event,) = person_events(result)
    assert 124.0 <= event.first_ts <= event.last_ts <= 130.0
    assert np.isclose(result.fps, 10.0) and result.frames == 60
