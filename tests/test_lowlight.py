"""Closer looks in the dark (edge/vision/lowlight.py): the noise is measured, the enlarged square is denoised,
and the small pedestrian at night that no look at the noisy pixels scores is found. Real frames of the shared
parking lot, darkened and noised in memory as in tests/test_motion_noise.py, with the real YOLOX-Nano."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from conftest import MEDIA
from edgetriage.edge.vision import lowlight
from edgetriage.edge.vision.capture import Frame, FrameSource
from edgetriage.edge.vision.pipeline import VisionConfig, VisionPipeline
from test_motion_noise import NIGHT_LUMA, PARKING_LOT, night_frames, pedestrian_events

HIM = (74, 0, 282, 208)  # the 2x square a closer look takes around his middle (178, 12) in the 480x270 frame
LUMA_WEIGHTS = np.array([0.114, 0.587, 0.299])  # B, G, R in OpenCV's grey


@pytest.fixture(scope="module")
def lot() -> list[Frame]:
    return list(FrameSource(str(PARKING_LOT)))


def his_best(dets) -> float:
    return max((d.score for d in dets if d.label == "person" and d.box[0] < 0.42 and d.box[2] > 0.3
                and d.box[1] < 0.1), default=0.0)


@pytest.mark.parametrize("sigma", [5.0, 10.0, 20.0])
def test_the_noise_is_measured_on_the_picture(lot, sigma):
    # the parking lot darkened to a mean luma of 36 and sigma on every channel (no JPEG): the grey image's
    # noise is sigma times the norm of the luma weights; the picture's own texture adds well under a level
    rng = np.random.default_rng(3)
    image = lot[0].image
    dark = cv2.convertScaleAbs(image, alpha=NIGHT_LUMA / float(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).mean()))
    noisy = np.clip(dark + rng.normal(0.0, sigma, dark.shape), 0, 255).astype(np.uint8)
    assert lowlight.noise_sigma(noisy) == pytest.approx(sigma * float(np.linalg.norm(LUMA_WEIGHTS)), rel=0.1)
    assert lowlight.noise_sigma(dark) < 0.5
    assert lowlight.denoise(dark) is dark  # nothing to take out


@pytest.mark.parametrize("seed", [7, 12])
def test_a_closer_look_at_the_denoised_square_scores_the_dim_pedestrian(detector, lot, seed):
    # sigma 10 on every channel, JPEG 90: the noisy square scores him on no frame of his first second; the
    # same square denoised scores him over 0.45 on at least half of them
    frames = night_frames(lot[:12], 10.0, seed)
    noisy = [his_best(detector.detect(f.image, HIM)) for f in frames]
    denoised = [his_best(lowlight.detect_denoised(detector, f.image, HIM)) for f in frames]
    assert max(noisy) < 0.1, noisy
    assert sum(s >= 0.45 for s in denoised) >= 6, denoised


def test_by_day_and_where_the_look_shrinks_the_detector_sees_the_frame_as_it_is(detector, lot):
    # no cost and no change by day; nor where the look hardly enlarges (a square over 2/3 of the detector's
    # input: its noise is hardly magnified, and denoising it costs several detector calls)
    image = night_frames(lot[:1], 10.0)[0].image
    assert lowlight.look(detector, lot[0].image, HIM, dark=False) == detector.detect(lot[0].image, HIM)
    whole = (0, 0, 480, 270)
    assert not lowlight.enlarges(detector, whole) and lowlight.enlarges(detector, HIM)
    assert not lowlight.enlarges(detector, (0, 0, 300, 300)) and lowlight.enlarges(detector, (0, 0, 270, 270))
    assert lowlight.look(detector, image, whole, dark=True) == detector.detect(image, whole)


def test_the_dim_pedestrian_is_an_event_at_night_under_sigma_10(detector, stages, lot):
    # the whole pipeline, six noise draws: his blob, looked at closer and denoised in the dark, then confirmed.
    # Without the denoising he is an event in none of them (main, 2026-12-02: 0 of 10 draws); with it in most
    # (8 of 10: a draw where his one closer look falls on a frame the denoised square still scores low misses)
    found = 0
    for seed in range(1, 7):
        pipeline = VisionPipeline("lot", VisionConfig(), detector, stages=stages)
        events = []
        for frame in night_frames(lot, 10.0, seed):
            events += pipeline.process(frame).new_events
        events += pipeline.finish().new_events
        found += len(pedestrian_events(events)) == 1
    assert found >= 4


def test_the_benchs_night_noise_is_on_every_channel():
    # bench/hard_cases.py's night case: sigma 10 on each of B, G and R (a bare scalar sigma to cv2.randn fills
    # the first channel only), the same draw on every run
    import hard_cases

    grey = np.full((270, 480, 3), 200, np.uint8)
    cv2.setRNGSeed(12)
    first = hard_cases._night(grey)
    cv2.setRNGSeed(12)
    assert np.array_equal(first, hard_cases._night(grey))
    spread = first.reshape(-1, 3).astype(np.float64).std(axis=0)
    assert spread == pytest.approx([hard_cases.NIGHT_SIGMA] * 3, rel=0.05)


def _night_case(source: str, tmp_path) -> list:
    """bench/hard_cases.py's night derivation of a shared clip (mean luma 36, sigma 10 on every channel, MJPG,
    its own seed), replayed through the device's pipeline and decisions: the (label, decision) of each event."""
    import hard_cases
    from edgetriage.edge.config import EdgeConfig
    from edgetriage.edge.replay import Replayer

    clip = next(c for c in hard_cases.load_cases(MEDIA) if c.case == "night" and c.source == source)
    path = hard_cases.render(MEDIA, clip, tmp_path)
    session = Replayer(EdgeConfig()).session(str(path))
    frames = FrameSource(str(path))
    frames.open()
    try:
        for frame in frames:
            session.process(frame)
        session.finish()
    finally:
        frames.close()
    return [(e.event.label, e.decision.kind) for e in session.events]


def test_a_car_from_above_on_the_dark_road_is_not_an_uncertain_person(tmp_path):
    # at 14.3-16.8 s the verifier scores the darkened car entering at the top 0.19 "person" (and 0.2
    # "toilet"); the classifier gives a person 0.17 of that crop. Faint boxes alone made it an uncertain
    # person and escalated it (main, 2026-12-02); both models barely seeing one is no person
    events = _night_case("car-detection.mp4", tmp_path)
    assert not [e for e in events if e[0] == "person"], events


def test_the_dim_walkers_stay_uncertain_people(tmp_path):
    # the walking GIF at night: both walkers resolve only as uncertain people (faint boxes 0.12, the
    # classifier's person 0.41 and 0.73), and both are escalated
    # (escalated as one or two: on an AMD EPYC machine, 2026-12-07 night, with the same code, models and
    # packages as a machine that saw two, the second walker's faint box fell under the tracker's floor and the
    # pair was one uncertain person; the promise is that a dim person is escalated, never decided here)
    events = _night_case("face-demographics-walking.gif", tmp_path)
    people = [e for e in events if e[0] == "person"]
    assert people and len(people) <= 2 and all(kind == "escalate" for _, kind in people), events
