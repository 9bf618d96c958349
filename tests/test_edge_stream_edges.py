"""People who are already there: the start and the end of a stream, a person who does not move, and short or
low-rate sources, with the real models on real frames of the one-by-one clip (short cuts, so the file runs in
seconds). What the extra looks cost is measured by bench/edge.py (p2_speedup, hard_cases)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from conftest import MEDIA
from edgetriage.cli import main as cli_main
from edgetriage.edge.config import EdgeConfig
from edgetriage.edge.replay import Replayer
from edgetriage.edge.vision.capture import Frame, FrameSource
from edgetriage.edge.vision.looks import LookConfig, LookPlanner
from edgetriage.edge.vision.motion import MotionConfig, MotionGate
from edgetriage.edge.vision.pipeline import TrackEvent, VisionConfig, VisionPipeline
from edgetriage.edge.vision.track import Track

FULLY_IN_S = 24.0  # visitor 2 of the one-by-one clip stands at the table, back to the camera (bench/hard_cases.py)


@pytest.fixture(scope="module")
def standing(clip_one_by_one) -> np.ndarray:
    (frame,) = FrameSource(str(clip_one_by_one), start_frame=round(FULLY_IN_S * 10), max_frames=1)
    return frame.image


def frozen(image: np.ndarray, seconds: float, fps: float, t0: float = 0.0) -> list[Frame]:
    """The same picture for `seconds` at `fps`: nothing moves, so the motion gate passes nothing."""
    return [Frame(i, t0 + i / fps, 1_700_000_000_000 + round(1000 * (t0 + i / fps)), image)
            for i in range(round(seconds * fps))]


def run(pipeline: VisionPipeline, frames: list[Frame]) -> tuple[list[tuple[float, TrackEvent]], list[TrackEvent]]:
    """(pts when emitted, event) for every event, and the tentative tracks the stream ended on."""
    emitted = []
    for frame in frames:
        emitted += [(frame.pts_s, e) for e in pipeline.process(frame).new_events]
    out = pipeline.finish()
    emitted += [(float("inf"), e) for e in out.new_events]
    return emitted, out.tentative


def test_a_person_frozen_from_the_first_frame_is_an_event_within_two_seconds(detector, stages, standing):
    # 3 s at 10 fps of one picture: no motion at all. The first second is looked at whole, so she is confirmed
    # there and emitted as soon as she has been there emit_after_s, long before the stream ends
    pipeline = VisionPipeline("door", VisionConfig(), detector, stages=stages)
    emitted, tentative = run(pipeline, frozen(standing, 3.0, 10.0))
    people = [(t, e) for t, e in emitted if e.label == "person"]
    assert len(people) == 1, [(t, e.label, e.first_ts, e.last_ts) for t, e in emitted]
    t, event = people[0]
    assert event.first_ts == 0.0 and t <= 2.0 and event.score >= 0.5 and not event.uncertain
    assert event.last_ts >= 2.6  # held while nobody moves (checked every 0.25 s): one track to the end
    assert tentative == []
    stats = pipeline.stats
    assert stats.start_looks == 4 and stats.frames_detected <= 6  # the first second every 0.2 s, then nothing new

    # the cascade as it was (motion and 5 s keyframes only): one hit, never confirmed; at the end of the
    # stream it is shown as tentative, not dropped, and it is not an event
    old = VisionConfig(looks=LookConfig(start_look_s=0.0, confirm_looks=0))
    pipeline = VisionPipeline("door", old, detector, stages=stages)
    emitted, tentative = run(pipeline, frozen(standing, 1.5, 10.0))
    assert [e for _, e in emitted if e.label == "person"] == []
    assert [(e.label, e.hits) for e in tentative] == [("person", 1)] and pipeline.stats.events == 0


def test_one_sighting_is_confirmed_by_looking_again_motion_or_not(detector, stages, standing):
    # without the start-up looks the first frame is the only look motion would give her (nothing moves):
    # the tentative track gets a few closer looks within a second and is confirmed by them
    config = VisionConfig(looks=LookConfig(start_look_s=0.0))
    pipeline = VisionPipeline("door", config, detector, stages=stages)
    emitted, _ = run(pipeline, frozen(standing, 3.0, 10.0))
    people = [(t, e) for t, e in emitted if e.label == "person"]
    assert len(people) == 1 and people[0][1].first_ts == 0.0 and people[0][0] <= 2.0
    stats = pipeline.stats
    assert 2 <= stats.confirm_looks <= config.looks.confirm_looks and stats.frames_detected == 1 + stats.confirm_looks


def test_a_replay_cut_in_the_middle_of_a_visit_finds_the_visitor(detector, stages, clip_one_by_one):
    # a new file that opens on visitor 2 standing at the table (34-42 s of the clip): she is there from its
    # first frame and barely moves
    replayer = Replayer(EdgeConfig(), detector=detector, stages=stages)
    frames = list(FrameSource(str(clip_one_by_one), start_frame=340, max_frames=80))
    result = replayer.run("mid-visit.mp4", frames, fps=10.0)
    people = [e for e in result.events if e.event.label == "person"]
    assert len(people) == 1, [(e.event.label, e.event.first_ts, e.event.last_ts) for e in result.events]
    assert people[0].event.first_ts == pytest.approx(34.0) and people[0].event.last_ts >= 41.0
    assert people[0].decision.kind == "escalate"
    assert result.stats["start_looks"] == 4  # 0.2 s apart in the first second (the first frame is the gate's look)


def test_a_person_who_walks_in_and_stands_still_stays_one_event(detector, stages, clip_one_by_one, standing):
    # she walks in (22-24 s), then that last frame for 10 s at 5 fps: one track, one event, held to the end
    walk = list(FrameSource(str(clip_one_by_one), start_frame=220, max_frames=20))
    frames = walk + frozen(standing, 10.0, 5.0, t0=24.0)
    pipeline = VisionPipeline("door", VisionConfig(), detector, stages=stages)
    emitted, tentative = run(pipeline, frames)
    people = [e for _, e in emitted if e.label == "person"]
    assert len(people) == 1 and people[0].last_ts >= 33.0, [(e.first_ts, e.last_ts) for e in people]


def write_gif(path: Path, image: np.ndarray, frames: int, fps: float) -> Path:
    animation = cv2.Animation()
    animation.frames = [cv2.resize(image, (384, 216))] * frames
    animation.durations = [round(1000 / fps)] * frames
    assert cv2.imwriteanimation(str(path), animation)
    return path


def test_replay_of_short_gifs_writes_events_and_tentative_lines(standing, tmp_path, capsys):
    # a 2 s GIF at 5 fps of someone already there: an event; a 0.4 s one (two frames): the detector saw her
    # twice, too few to confirm, so a "tentative" line that is not an event and is never escalated
    long_gif = write_gif(tmp_path / "doorbell.gif", standing, 10, 5.0)
    short_gif = write_gif(tmp_path / "blip.gif", standing, 2, 5.0)
    out = tmp_path / "events.jsonl"
    assert cli_main(["edge", "replay", str(long_gif), str(short_gif), "--events-out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    by_video = {v: [e for e in lines if e["video"] == v] for v in ("doorbell.gif", "blip.gif")}
    assert [(e["label"], e["decision"]) for e in by_video["doorbell.gif"]] == [("person", "escalate")]
    assert [(e["label"], e["decision"]) for e in by_video["blip.gif"]] == [("person", "tentative")]
    blip = by_video["blip.gif"][0]
    assert blip["hits"] == 2 and 0.0 <= blip["first_ts"] <= blip["last_ts"] <= 0.4 and "not confirmed" in blip["reason"]
    err = capsys.readouterr().err
    assert "doorbell.gif: 10 frames" in err and "blip.gif: 2 frames" in err and "1 tentative" in err


def test_confirmation_looks_are_spread_over_time_not_frames():
    # the same looks per second of scene at 5 and 25 fps
    def looks(fps: float) -> list[float]:
        planner = LookPlanner(LookConfig(), max_missed_s=2.0)
        track = Track(1, "person", (0.4, 0.1, 0.6, 0.9), 0.0, 0.0, 0.0)
        times = []
        for i in range(1, round(2 * fps)):
            pts = i / fps
            if planner.confirm_due([track], pts):
                planner.confirming([track], pts)
                times.append(pts)
        return times

    slow, fast = looks(5.0), looks(25.0)
    assert len(slow) == len(fast) == LookConfig().confirm_looks
    assert all(abs(a - b) <= 0.2 for a, b in zip(slow, fast, strict=True)) and max(fast) <= 1.0


def test_the_motion_background_forgets_in_seconds_whatever_the_frame_rate():
    # a grey wall, then a dark square that stays: how long until the gate stops calling it motion
    wall = np.full((90, 160, 3), 128, np.uint8)
    changed = wall.copy()
    changed[20:70, 40:100] = 40

    def settles_after(fps: float) -> float:
        gate = MotionGate(MotionConfig(keyframe_interval_s=1000.0))
        gate.check(Frame(0, 0.0, 0, wall))
        for i in range(1, round(60 * fps)):
            if not gate.check(Frame(i, i / fps, 0, changed)).run_detector:
                return i / fps
        return float("inf")

    slow, fast = settles_after(5.0), settles_after(25.0)
    assert slow < 60.0 and abs(slow - fast) <= 0.5, (slow, fast)


def test_the_agent_escalates_a_short_gif_of_someone_already_there(standing, detector, tmp_path, mosquitto, prefix):
    # what `edgetriage edge run` (and `demo --clip`) do with a doorbell GIF: the event is decided and queued
    # for the cloud although nobody moves and the clip is over before a keyframe would come
    from edgetriage.edge.agent import EdgeAgent
    from edgetriage.edge.config import CameraConfig

    gif = write_gif(tmp_path / "doorbell.gif", standing, 10, 5.0)
    config = EdgeConfig.model_validate({
        "device": "door-1", "mqtt": {"url": mosquitto.url, "prefix": prefix}, "state_dir": str(tmp_path),
        "cameras": [{"id": "door", "source": str(gif)}]})
    decisions: list = []
    agent = EdgeAgent(config, detector=detector, on_decision=lambda ev, d, eid: decisions.append((ev, d)))
    try:
        agent.run_source(CameraConfig(id="door", source=str(gif)))
        assert [(ev.label, d.kind) for ev, d in decisions] == [("person", "escalate")]
        assert agent.stats.frames_read == 10
    finally:
        agent.close()


PARKING_LOT = MEDIA / "person-bicycle-car-detection.gif"  # a 17x33 px pedestrian at the top, 0-0.9 s


def at_fps(path: Path, fps: float, seconds: float) -> list[Frame]:
    """The clip resampled to `fps` (the frame nearest each tick), as a 5 fps camera would deliver it."""
    frames = list(FrameSource(str(path)))
    rate = 1.0 / (frames[1].pts_s - frames[0].pts_s)
    picked = [frames[min(round(i / fps * rate), len(frames) - 1)] for i in range(round(seconds * fps))]
    return [Frame(i, i / fps, 1_700_000_000_000 + round(1000 * i / fps), f.image) for i, f in enumerate(picked)]


def pedestrians(events: list[TrackEvent]) -> list[TrackEvent]:
    return [e for e in events if e.label == "person" and e.box[0] < 0.45 and e.box[1] < 0.1 and e.first_ts <= 0.2]


def test_a_small_person_seen_once_on_the_whole_frame_is_confirmed_by_closer_looks(detector, stages):
    # at 5 fps the whole frame shows YOLOX the pedestrian once (his first frame, ~0.5); the looks at twice the
    # detail around where he was find him on the next frames, moving, although motion looks were made there
    frames = at_fps(PARKING_LOT, 5.0, 1.2)
    pipeline = VisionPipeline("lot", VisionConfig(), detector, stages=stages)
    emitted, tentative = run(pipeline, frames)
    found = pedestrians([e for _, e in emitted])
    assert len(found) == 1, [(e.label, e.box, e.first_ts, e.hits) for _, e in emitted]
    assert found[0].hits >= 3 and pipeline.stats.confirm_looks >= 2 and not pedestrians(tentative)

    # without the closer looks he stays a tentative line
    pipeline = VisionPipeline("lot", VisionConfig(looks=LookConfig(confirm_looks=0)), detector, stages=stages)
    emitted, tentative = run(pipeline, frames)
    assert not pedestrians([e for _, e in emitted]) and len(pedestrians(tentative)) == 1


def test_a_detection_continues_the_track_it_named_not_the_motion_beside_it():
    # a tentative person, and a motion blob that is mostly beside her (her own movement and its trail): the
    # detector's next box of her continues her track, not the blob's new motion-only track
    from edgetriage.edge.vision.detect import Det
    from edgetriage.edge.vision.track import MOTION, IoUTracker, TrackerConfig

    tracker = IoUTracker(TrackerConfig())
    (person,) = tracker.update(0.0, [Det("person", 0.6, (0.33, 0.0, 0.37, 0.12))]).started
    tracker.hold(person, 0.2)
    (blob,) = tracker.update(0.4, [], [(0.33, 0.0, 0.45, 0.12)]).started
    assert blob.label == MOTION
    update = tracker.update(0.6, [Det("person", 0.3, (0.36, 0.0, 0.40, 0.09))])
    assert [(t.track_id, t.hits) for t, _ in update.matched] == [(person.track_id, 2)] and not update.started
    assert blob.label == MOTION


def test_exit_evidence_walking_out_of_the_picture_not_standing_at_its_edge():
    from edgetriage.edge.vision.track import leaving

    first = (0.33, 0.0, 0.37, 0.13)  # against the top edge, 13 % of the frame tall
    assert leaving(first, (0.34, 0.0, 0.38, 0.11))  # its feet came up: going out through the top
    assert not leaving(first, (0.33, 0.0, 0.37, 0.129))  # the same box, a pixel's jitter
    assert not leaving(first, (0.33, 0.0, 0.37, 0.16))  # coming in
    assert not leaving((0.40, 0.30, 0.50, 0.60), (0.35, 0.30, 0.45, 0.60))  # moving, but inside the picture
    assert leaving((0.90, 0.4, 0.99, 0.7), (0.95, 0.4, 1.0, 0.7))  # out through the right edge


def test_a_person_seen_twice_as_he_leaves_through_the_edge_is_an_event(tmp_path, detector, stages):
    # the parking lot as a 3 s, 10 fps GIF (a motion-triggered clip): the pedestrian at the top is seen on his
    # first two frames and then walks out of the picture; one hit short of min_hits, he is an event because
    # he left, while the two frames of someone standing inside the picture stay tentative (the blip above)
    animation = cv2.Animation()
    animation.frames = [f.image for f in at_fps(PARKING_LOT, 10.0, 3.0)]
    animation.durations = [100] * len(animation.frames)
    gif = tmp_path / "lot.gif"
    assert cv2.imwriteanimation(str(gif), animation)
    replayer = Replayer(EdgeConfig(), detector=detector, stages=stages)
    result = replayer.run(str(gif), FrameSource(str(gif)))
    found = pedestrians([e.event for e in result.events])
    assert len(found) == 1, [(e.event.label, e.event.box, e.event.first_ts, e.event.hits) for e in result.events]
    assert found[0].uncertain and [e.decision.kind for e in result.events if e.event is found[0]] == ["escalate"]


def test_a_lighting_change_is_looked_at_a_few_times_a_second_not_on_every_frame(detector, stages, standing):
    # the whole picture flickers between two exposures for 3 s at 10 fps: motion everywhere, so the gate
    # cannot say where to look; the whole frame is looked at every moving_interval_s (0.25 s: 12 looks in
    # 3 s, besides the start-up and confirmation looks), not on all 30 frames, and the person standing there
    # is an event from the first frame
    dim = (standing * 0.6).astype(np.uint8)
    frames = [Frame(i, i / 10.0, 1_700_000_000_000 + 100 * i, standing if i % 2 else dim) for i in range(30)]
    pipeline = VisionPipeline("door", VisionConfig(), detector, stages=stages)
    emitted, _ = run(pipeline, frames)
    assert any(e.label == "person" and e.first_ts == 0.0 for _, e in emitted)
    stats = pipeline.stats
    assert stats.frames_followed >= 10 and stats.frames_detected <= 12 + 5, stats.as_dict()
