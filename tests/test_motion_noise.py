"""The motion gate at night: its threshold follows the noise it measures in each frame, not a fixed guess, so a
small, dim person still makes a blob where a noisy picture makes none. Real frames of the shared clips,
darkened and noised here (in memory, as a camera's JPEG stream would carry them), with the real models."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from conftest import MEDIA
from edgetriage.edge.vision.capture import Frame, FrameSource
from edgetriage.edge.vision.motion import FULL_BRIGHTNESS, NOISE_SIGMAS, MotionConfig, MotionGate
from edgetriage.edge.vision.pipeline import VisionConfig, VisionPipeline

PARKING_LOT = MEDIA / "person-bicycle-car-detection.gif"  # a 17x33 px pedestrian at the top, 0-0.9 s
NIGHT_LUMA = 36.0  # the hard cases' night (bench/hard_cases.py)


def night(image: np.ndarray, sigma: float, rng: np.random.Generator, luma: float = NIGHT_LUMA) -> np.ndarray:
    """The picture darkened to a mean luma of `luma`, Gaussian noise of `sigma` grey levels on every channel,
    through JPEG (quality 90) as a camera stream delivers it."""
    dark = cv2.convertScaleAbs(image, alpha=luma / float(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).mean()))
    noisy = np.clip(dark + rng.normal(0.0, sigma, image.shape), 0, 255).astype(np.uint8)
    return cv2.imdecode(cv2.imencode(".jpg", noisy, [cv2.IMWRITE_JPEG_QUALITY, 90])[1], cv2.IMREAD_COLOR)


@pytest.fixture(scope="module")
def lot() -> list[Frame]:
    return list(FrameSource(str(PARKING_LOT)))


def night_frames(frames: list[Frame], sigma: float, seed: int = 7) -> list[Frame]:
    rng = np.random.default_rng(seed)
    return [Frame(f.index, f.pts_s, f.wall_ms, night(f.image, sigma, rng)) for f in frames]


def on_him(regions: list[tuple[int, int, int, int]]) -> bool:
    """A region of his own (not one square over half the picture) holding his middle, near (178, 12)."""
    return any(x1 <= 178 <= x2 and y1 <= 12 <= y2 and x2 - x1 < 80 for x1, y1, x2, y2 in regions)


@pytest.mark.parametrize("sigma", [5.0, 10.0, 20.0])
def test_a_small_dim_pedestrian_makes_a_motion_region_in_a_noisy_night(lot, sigma):
    # his 17x33 px at a mean luma of 36 change the gate's grey levels by 10-16 at most: under the old fixed
    # floor (half the daylight threshold, 12.5) he made no blob at all; a threshold that scales with the
    # brightness (8.9 here) and rises only with the measured noise gives him one on most of his first frames
    gate = MotionGate(MotionConfig())
    regions = [gate.check(f).regions for f in night_frames(lot[:12], sigma)]
    assert sum(on_him(r) for r in regions) >= 4, regions
    assert gate.threshold() < 0.5 * MotionConfig().threshold


@pytest.mark.parametrize("sigma", [5.0, 20.0, 40.0])
def test_noise_alone_is_not_motion_however_strong(lot, sigma):
    # the parking lot's first frame held still for 3 s, fresh noise on every frame: nothing moves, so after
    # the first frame the gate passes nothing (no keyframes in this test), and the threshold it uses is at
    # least NOISE_SIGMAS times the noise it measured, which grows with the noise put in
    still = [Frame(i, i / 10.0, 0, lot[0].image) for i in range(30)]
    gate = MotionGate(MotionConfig(keyframe_interval_s=1000.0))
    reasons = [gate.check(f).reason for f in night_frames(still, sigma)]
    assert reasons[0] == "first" and set(reasons[1:]) == {"still"}, reasons
    assert gate.threshold() >= NOISE_SIGMAS * gate.noise() > 0.0


def test_the_threshold_rises_with_the_noise_where_the_downscale_keeps_it(lot):
    # a camera whose frames are already the gate's working size (160 px wide): nothing averages the noise
    # away, and at sigma 20 a threshold scaled with the brightness alone would call hundreds of its pixels
    # motion on every frame; the measured noise holds it above them
    small = cv2.resize(lot[0].image, (160, 90), interpolation=cv2.INTER_AREA)
    still = [Frame(i, i / 10.0, 0, small) for i in range(30)]
    gate = MotionGate(MotionConfig(keyframe_interval_s=1000.0))
    over = []
    for frame in night_frames(still, 20.0):
        assert gate.check(frame).reason in ("first", "still")
        brightness_only = MotionConfig().threshold * gate.brightness() / FULL_BRIGHTNESS
        over.append(int(np.count_nonzero(gate._diff > brightness_only)))
    assert gate.threshold() > 1.5 * brightness_only
    assert min(over[5:]) > 4 * MotionConfig().min_area_frac * 160 * 90, over


def pedestrian_events(events) -> list:
    return [e for e in events if e.label == "person" and e.box[0] < 0.45 and e.box[1] < 0.1 and e.first_ts <= 0.5]


@pytest.mark.parametrize("seed", [12, 7])
def test_the_dim_pedestrian_is_an_event_at_night(detector, stages, lot, seed):
    # the whole frame never scores him at night; his own blob, looked at as closely as a confirmation look
    # (the look at new motion a whole-frame look explained nothing of), finds him, the confirmation looks
    # and his walk out through the top edge make him an event. (At sigma 10 on every channel YOLOX-Nano does
    # not see him at any zoom: that is the detector's limit, not the gate's.)
    pipeline = VisionPipeline("lot", VisionConfig(), detector, stages=stages)
    events = []
    for frame in night_frames(lot, 5.0, seed):
        events += pipeline.process(frame).new_events
    events += pipeline.finish().new_events
    assert len(pedestrian_events(events)) == 1, [(e.label, e.box, e.first_ts, e.hits) for e in events]
    assert pipeline.stats.closer_looks >= 1


def test_no_closer_looks_at_new_motion_in_daylight(detector, stages, lot):
    # the same clip by day: the whole frame scores him itself, and what it does not name in a well-lit scene
    # is mostly what no look names, so the dark scene's extra look is not made (it would cost calls by day)
    pipeline = VisionPipeline("lot", VisionConfig(), detector, stages=stages)
    events = []
    for frame in lot:
        events += pipeline.process(frame).new_events
    events += pipeline.finish().new_events
    assert pipeline.stats.closer_looks == 0 and len(pedestrian_events(events)) == 1
