"""The edge vision pipeline against the real models (SSDLite and YOLOX-Nano behind one seam) and real frames
from the sample clips: capture, motion gate, detectors, tracker, crops/phash and the whole pipeline over
labelled visits. The cascade's decisions (uncertain regions, zones, rules, reuse) are in test_edge_cascade.py."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from edgetriage.edge.vision.capture import CaptureError, Frame, FrameSource
from edgetriage.edge.vision.crops import crop_box, encode_jpeg, phash_dct64
from edgetriage.edge.vision.detect import Det, DetectorConfig, SSDLiteDetector, YoloxDetector, build_detector
from edgetriage.edge.vision.looks import LookConfig
from edgetriage.edge.vision.motion import MotionConfig, MotionGate
from edgetriage.edge.vision.pipeline import TrackEvent, VisionConfig, VisionPipeline
from edgetriage.edge.vision.track import IoUTracker, TrackerConfig
from edgetriage.shared.ids import uuid7
from edgetriage.shared.modelfiles import ModelError, resolve
from edgetriage.shared.phash import hamming
from edgetriage.shared.protocol import Detection, Event, decode_event, encode_event

VISITS = [(6, 19), (23, 45), (51, 69), (75, 86), (93, 119), (124, 135)]  # models/media/labels.json
STANDING = (0.47, 0.03, 0.70, 0.90)  # where every visitor of the one-by-one clip stands


@pytest.fixture(scope="module")
def detector() -> SSDLiteDetector:
    """The SSDLite person detector, with the floor the first wave used for its events."""
    det = build_detector(DetectorConfig(model="ssdlite_person", min_score=0.3))
    assert isinstance(det, SSDLiteDetector)
    return det


@pytest.fixture(scope="module")
def yolox() -> YoloxDetector:
    """The default detector (YOLOX-Nano, COCO-80)."""
    det = build_detector(DetectorConfig())
    assert isinstance(det, YoloxDetector) and det.model_name == "yolox_nano"
    return det


@pytest.fixture(scope="module")
def car_clip(clip_one_by_one) -> Path:
    path = clip_one_by_one.parent / "car-detection.mp4"
    if not path.exists():
        pytest.fail(f"{path} is missing: the sample clips ship in models/media/ (is the checkout complete?)")
    return path


def frames_at(path: Path, start: int, count: int) -> list[Frame]:
    return list(FrameSource(str(path), start_frame=start, max_frames=count))


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


# --- capture -----------------------------------------------------------------------------------------

def test_capture_missing_file_says_which_and_what_to_do(tmp_path):
    missing = tmp_path / "nope.mp4"
    with pytest.raises(CaptureError) as err:
        FrameSource(str(missing)).open()
    assert str(missing) in str(err.value) and "not found" in str(err.value)


def test_capture_refuses_a_file_that_is_not_video(tmp_path):
    bogus = tmp_path / "notes.mp4"
    bogus.write_text("this is not a video\n" * 100)
    with pytest.raises(CaptureError) as err:
        list(FrameSource(str(bogus)))
    assert str(bogus) in str(err.value)


def test_capture_seeks_and_stamps_frames(clip_one_by_one):
    source = FrameSource(str(clip_one_by_one), start_frame=100, max_frames=3)
    frames = list(source)
    source.close()
    assert source.fps == pytest.approx(10.0)
    assert [f.index for f in frames] == [100, 101, 102]
    assert [f.pts_s for f in frames] == pytest.approx([10.0, 10.1, 10.2])
    assert [b.wall_ms - a.wall_ms for a, b in zip(frames, frames[1:], strict=False)] == [100, 100]
    assert frames[0].image.shape == (432, 768, 3) and frames[0].image.dtype == np.uint8
    # seeking lands on the same pixels as decoding from the start
    from_start = [f for f in FrameSource(str(clip_one_by_one), max_frames=101)][100]
    assert np.array_equal(from_start.image, frames[0].image)


# --- detector ----------------------------------------------------------------------------------------

def test_detector_finds_the_person_standing_at_the_table(detector, clip_one_by_one):
    frame = frames_at(clip_one_by_one, 800, 1)[0]
    dets = detector.detect(frame.image)
    assert dets, "no detection on a frame with a clearly visible person"
    best = dets[0]
    assert best.label == "person" and best.score >= 0.5
    assert iou(best.box, STANDING) >= 0.6
    assert all(0.0 <= v <= 1.0 for v in best.box) and best.box[0] < best.box[2] and best.box[1] < best.box[3]


def test_yolox_finds_the_person_from_behind_that_the_ssdlite_misses(detector, yolox, clip_one_by_one):
    # visit 5: a person standing with her back to the camera; the SSDLite scores her under 0.1
    frame = frames_at(clip_one_by_one, 1050, 1)[0]
    assert max((d.score for d in detector.detect(frame.image)), default=0.0) < 0.3
    people = [d for d in yolox.detect(frame.image) if d.label == "person"]
    assert people and people[0].score >= 0.5 and iou(people[0].box, STANDING) >= 0.5


def test_yolox_names_other_coco_classes_and_maps_region_boxes_to_the_frame(yolox, clip_one_by_one):
    frame = frames_at(clip_one_by_one, 800, 1)[0]
    whole = yolox.detect(frame.image)
    assert {"person", "tv"} <= {d.label for d in whole if d.score >= 0.3}  # the wall screen is a real TV
    h, w = frame.image.shape[:2]
    sx1, sy1, sx2, sy2 = STANDING
    region = (int(sx1 * w) - 40, 0, int(sx1 * w) - 40 + h, h)  # a square around the person, scaled up
    zoomed = [d for d in yolox.detect(frame.image, region) if d.label == "person"]
    assert zoomed and iou(zoomed[0].box, STANDING) >= 0.6  # normalised to the whole frame, not the region
    scores = [d.score for d in whole]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 0.05


def test_int8_precision_picks_the_quantised_file():
    det = build_detector(DetectorConfig(model="ssdlite_person", precision="int8"))
    assert det.model_name == "ssdlite_person_int8"
    with pytest.raises(ModelError, match="no INT8 variant"):
        build_detector(DetectorConfig(model="yolox_nano_320", precision="int8"))


def test_detector_sees_no_person_in_the_road_clip(detector, car_clip):
    frames = [f for f in FrameSource(str(car_clip)) if f.index % 25 == 0]
    assert len(frames) >= 15
    found = [(f.index, d.score) for f in frames for d in detector.detect(f.image) if d.score >= 0.5]
    assert found == []


def test_detector_scores_are_sorted_and_above_min_score(clip_one_by_one):
    det = build_detector(DetectorConfig(model="ssdlite_person", min_score=0.05, fit="stretch"))
    frame = frames_at(clip_one_by_one, 1300, 1)[0]
    scores = [d.score for d in det.detect(frame.image)]
    assert scores and scores == sorted(scores, reverse=True) and min(scores) >= 0.05


def test_missing_provider_falls_back_to_cpu_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="edgetriage.edge.vision.detect"):
        det = build_detector(DetectorConfig(providers=["NoSuchExecutionProvider", "CPUExecutionProvider"]))
    assert det.providers == ["CPUExecutionProvider"]
    assert "NoSuchExecutionProvider" in caplog.text


def test_damaged_model_file_is_refused(tmp_path):
    original = resolve("yolox_nano").path
    copy = tmp_path / original.name
    shutil.copyfile(original, copy)
    with open(copy, "r+b") as fh:
        fh.seek(4096)
        byte = fh.read(1)
        fh.seek(4096)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ModelError) as err:
        build_detector(DetectorConfig(model=str(copy)))
    assert "sha256" in str(err.value) and str(copy) in str(err.value)


def test_non_detector_model_is_refused():
    with pytest.raises(ModelError, match="not a detector"):
        build_detector(DetectorConfig(model="mobilenet_v2_int8"))


# --- motion gate -------------------------------------------------------------------------------------

def test_motion_gate_skips_still_frames_and_passes_first_and_keyframes(clip_one_by_one):
    empty = frames_at(clip_one_by_one, 0, 1)[0].image
    person = frames_at(clip_one_by_one, 250, 1)[0].image
    gate = MotionGate(MotionConfig(keyframe_interval_s=2.0))
    reasons = [gate.check(Frame(i, i / 10, 0, empty)).reason for i in range(45)]
    assert reasons[0] == "first"
    assert [i for i, r in enumerate(reasons) if r == "keyframe"] == [20, 40]
    assert all(r == "still" for i, r in enumerate(reasons) if i not in (0, 20, 40))

    result = gate.check(Frame(45, 4.5, 0, person))
    assert result.run_detector and result.reason == "motion"
    h, w = person.shape[:2]
    sx1, sy1, sx2, sy2 = STANDING
    person_px = (sx1 * w, sy1 * h, sx2 * w, sy2 * h)
    assert any(iou(tuple(map(float, r)), person_px) > 0.3 for r in result.regions), result.regions


def test_motion_gate_on_real_video_gates_out_still_frames(car_clip):
    gate = MotionGate(MotionConfig())
    results = [gate.check(f) for f in FrameSource(str(car_clip), max_frames=120)]
    assert results[0].reason == "first"
    assert all(r.run_detector == (r.reason != "still") for r in results)
    # cars drive through the whole clip: most frames are motion, but never a still stretch past a keyframe
    gaps, last = [], 0
    for i, r in enumerate(results):
        if r.run_detector:
            gaps.append(i - last)
            last = i
    assert max(gaps) <= 63  # keyframe_interval_s (5 s) at 12.5 fps


# --- tracker -----------------------------------------------------------------------------------------

def test_tracker_keeps_one_id_across_real_consecutive_detections(detector, clip_one_by_one):
    tracker = IoUTracker(TrackerConfig())
    ids = set()
    for frame in frames_at(clip_one_by_one, 748, 20):  # a person walks in towards the table
        update = tracker.update(frame.pts_s, [d for d in detector.detect(frame.image) if d.score >= 0.5])
        ids.update(t.track_id for t, _ in update.matched)
        assert tracker.expire(frame.pts_s) == []
    assert len(ids) == 1
    (track,) = tracker.tracks
    assert track.hits >= 15


def test_tracker_ends_a_track_after_max_missed_s_and_starts_a_new_id():
    tracker = IoUTracker(TrackerConfig(max_missed_s=2.0))
    box = (0.4, 0.2, 0.6, 0.9)
    for i in range(5):
        tracker.update(i * 0.1, [Det("person", 0.9, box)])
    (track,) = tracker.tracks
    assert track.hits == 5 and track.first_ts == 0.0 and track.last_hit_ts == pytest.approx(0.4)
    assert tracker.expire(2.4) == []  # exactly max_missed_s: still alive
    assert tracker.expire(2.5) == [track]
    assert tracker.tracks == []
    update = tracker.update(2.6, [Det("person", 0.9, box)])
    assert [t.track_id for t in update.started] == [track.track_id + 1]


def test_tracker_predicts_fast_motion_and_separates_labels():
    tracker = IoUTracker(TrackerConfig(iou_threshold=0.3))
    # a box moving 0.1 per frame: consecutive raw boxes overlap IoU 0.33 -> 0.2 after a missed frame;
    # the constant-velocity prediction keeps it one track through the gap
    for i in (0, 1, 2, 4, 5):
        x = 0.1 * i
        tracker.update(i * 0.1, [Det("person", 0.8, (x, 0.3, x + 0.2, 0.8))])
    assert len(tracker.tracks) == 1 and tracker.tracks[0].hits == 5
    tracker.update(0.6, [Det("person", 0.8, (0.6, 0.3, 0.8, 0.8)), Det("car", 0.8, (0.6, 0.3, 0.8, 0.8))])
    assert sorted(t.label for t in tracker.tracks) == ["car", "person"]


# --- crops and perceptual hash -------------------------------------------------------------------------

def test_phash_is_stable_for_the_same_person_and_far_for_other_scenes(detector, clip_one_by_one, car_clip):
    frames = frames_at(clip_one_by_one, 790, 2) + frames_at(clip_one_by_one, 1300, 1)
    hashes = []
    for frame in frames:
        best = detector.detect(frame.image)[0]
        hashes.append(phash_dct64(crop_box(frame.image, best.box)))
    road = frames_at(car_clip, 100, 1)[0].image
    hashes.append(phash_dct64(crop_box(road, STANDING)))
    assert all(len(h) == 16 and int(h, 16) >= 0 and h == h.lower() for h in hashes)
    assert hamming(hashes[0], hashes[1]) <= 6  # consecutive frames, same person
    assert hamming(hashes[0], hashes[2]) >= 16  # another visitor at the same table
    assert hamming(hashes[0], hashes[3]) >= 16  # a road


def test_crop_and_jpeg_respect_bounds(clip_one_by_one):
    image = frames_at(clip_one_by_one, 800, 1)[0].image
    crop = crop_box(image, (0.47, 0.08, 0.65, 0.85), margin=0.15)
    h, w = image.shape[:2]
    assert crop.shape[0] <= h and crop.shape[1] <= w and crop.shape[1] > 0.18 * w
    edge = crop_box(image, (0.9, 0.9, 1.0, 1.0), margin=0.5)  # grows past the border -> clipped
    assert edge.shape[0] > 0 and edge.shape[1] > 0
    jpeg, (jw, jh) = encode_jpeg(crop, max_side=320)
    assert jpeg[:3] == b"\xff\xd8\xff" and len(jpeg) < 256 * 1024 and max(jw, jh) == 320
    decoded = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert decoded.shape[:2] == (jh, jw)
    big, size = encode_jpeg(image, max_side=4096)
    assert size == (w, h) and len(big) < 256 * 1024


# --- the whole pipeline --------------------------------------------------------------------------------

def run_pipeline(frames, detector, config=None) -> tuple[list[TrackEvent], list[TrackEvent], VisionPipeline]:
    pipeline = VisionPipeline("cam1", config or VisionConfig(), detector)
    new_events: list[TrackEvent] = []
    ended: list[TrackEvent] = []
    for frame in frames:
        out = pipeline.process(frame)
        new_events += out.new_events
        ended += out.ended
    out = pipeline.finish()
    return new_events + out.new_events, ended + out.ended, pipeline


def overlaps(event: TrackEvent, visit: tuple[float, float]) -> bool:
    return event.first_ts < visit[1] + 1 and event.last_ts > visit[0] - 1


def test_pipeline_gives_one_event_per_visit(yolox, clip_one_by_one):
    # visits 3 and 4: a person who stands 15 s with her back to the camera (the SSDLite misses her for
    # most of it) and leaves fast, then a person seen well
    frames = FrameSource(str(clip_one_by_one), start_frame=460, max_frames=440)
    events, ended, pipeline = run_pipeline(frames, yolox)
    assert [sum(overlaps(e, v) for e in events) for v in VISITS[2:4]] == [1, 1], \
        [(e.first_ts, e.last_ts) for e in events]
    assert len(events) == 2
    assert sorted(map(id, ended)) == sorted(map(id, events))  # each event ends once, same object
    for event in events:
        assert event.label == "person" and event.hits >= 3 and event.score >= 0.5 and not event.uncertain
        assert event.last_ts - event.first_ts >= 10.0
        assert event.crop_jpeg[:3] == b"\xff\xd8\xff" and max(event.crop_size) <= 320
        assert len(event.phash) == 16 and event.phash_alg == "dct64"
        assert any(d.box == event.box for d in event.detections)
        assert 0.0 < event.median_score <= event.score
    stats = pipeline.stats
    assert stats.frames_read == 440 and 0 < stats.frames_detected < 440
    assert stats.gated_fraction > 0.2 and stats.detect_ms.median() > 0


def test_pipeline_reports_no_person_on_the_road_clip(yolox, car_clip):
    events, ended, pipeline = run_pipeline(FrameSource(str(car_clip)), yolox)
    assert [e for e in events if e.label == "person"] == []
    assert {e.label for e in events} <= {"car", "bus", "truck", "motorcycle", "bicycle"}  # named, never people
    assert sorted(map(id, ended)) == sorted(map(id, events))
    assert pipeline.stats.frames_read == 377 and pipeline.stats.frames_detected < 377 / 2


def test_the_pipeline_lets_go_of_a_frame_once_it_is_done_with_it(yolox, clip_one_by_one):
    # a live camera converts its next frame only while the pipeline waits: a frame the pipeline still held
    # then would be a second frame in memory for every camera (issue 39). A person, then the stream ends: the
    # event comes from the tracks, not from a frame kept for it
    frames = frames_at(clip_one_by_one, 780, 12)
    pipeline = VisionPipeline("cam1", VisionConfig(), yolox)
    for frame in frames:
        held = sys.getrefcount(frame)
        pipeline.process(frame)
        assert sys.getrefcount(frame) == held
    assert len(pipeline.finish().new_events) == 1


def test_short_track_is_emitted_when_the_stream_ends(yolox, clip_one_by_one):
    # 1.2 s of a clearly visible person: confirmed (min_hits) but younger than emit_after_s
    events, ended, _ = run_pipeline(frames_at(clip_one_by_one, 780, 12), yolox)
    assert len(events) == 1 and ended == events
    event = events[0]
    assert event.hits >= 3 and event.last_ts - event.first_ts < 1.5


def test_a_restarted_source_ends_the_tracks_of_the_old_one(yolox, clip_one_by_one):
    frames = frames_at(clip_one_by_one, 780, 12)
    pipeline = VisionPipeline("cam1", VisionConfig(), yolox)
    assert all(pipeline.process(f).new_events == [] for f in frames)
    out = pipeline.process(frames[0])  # pts jumps back: a reconnect or a replayed file
    assert len(out.new_events) == 1 and out.ended == out.new_events
    assert pipeline.finish().new_events == []  # the new stream's single hit is no event


def test_track_event_fits_the_protocol(yolox, clip_one_by_one):
    events, _, _ = run_pipeline(frames_at(clip_one_by_one, 1240, 30), yolox)
    (event,) = events
    message = Event(
        event_id=uuid7(event.captured_ms), device="dev-1", camera=event.camera, captured_ms=event.captured_ms,
        label=event.label, score=event.score, uncertain=event.uncertain, track_id=event.track_id,
        detections=[Detection(label=d.label, score=d.score, box=d.box) for d in event.detections],
        phash=event.phash, phash_alg=event.phash_alg, reason="test", crop=event.crop_jpeg,
        crop_size=event.crop_size)
    decoded = decode_event(encode_event(message))
    assert decoded.phash == event.phash and decoded.crop == event.crop_jpeg


class WholeFrameOnly:
    """A detector of the test's own that finds one person filling most of the frame, on whole-frame looks only."""

    input_size = (300, 300)

    def __init__(self) -> None:
        self.looks: list[object] = []

    def detect(self, image: np.ndarray, region=None) -> list[Det]:
        self.looks.append(region)
        return [Det("person", 0.9, (0.1, 0.1, 0.9, 0.9))] if region is None else []


def test_a_confirmation_look_around_a_track_that_fills_the_frame_looks_at_the_whole_frame():
    # the square around her would cover most of the frame, so detection_regions says "the whole frame"
    # (None); that is still a look (it was read as "no look" after fc7f8d6: she stayed tentative)
    image = np.random.default_rng(7).integers(0, 255, (240, 320, 3), np.uint8)
    frames = [Frame(i, i / 10, 1_700_000_000_000 + 100 * i, image) for i in range(20)]  # nothing moves
    detector = WholeFrameOnly()
    config = VisionConfig(looks=LookConfig(start_look_s=0.0))  # the first frame is the only look motion gives
    events, _, pipeline = run_pipeline(frames, detector, config)
    stats = pipeline.stats
    assert stats.confirm_looks >= 2 and stats.frames_detected == 1 + stats.confirm_looks
    assert detector.looks == [None] * stats.frames_detected  # every look was the whole frame
    assert [(e.label, e.first_ts) for e in events] == [("person", 0.0)] and events[0].hits >= 3
