"""The verdict on crops it was not tuned on: the translator's views of a crop (mirrored, bordered, normalised)
find a person in a dark, noisy crop and in a box cut to half a body, where the single look of before found
none, and find none in the same shifts of an empty scene; the picture's flags; the real SmolLM2-135M's verdict
on darkened crops; an older calibration file with a newer feature; the bench's answer memo."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest
from conftest import MEDIA, clip_crop
from edgetriage.cloud.analysis.calibrate import Calibration, features
from edgetriage.cloud.analysis.check import ABSENT, SURE
from edgetriage.cloud.analysis.translator import VIEWS, Translator, picture_flags
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event

ROOM = MEDIA / "one-by-one-person-detection.mp4"
WALKING = MEDIA / "face-demographics-walking.gif"
VISITOR = (370, 10, 530, 400)  # the room's visitor at frame 600 (and the empty room at frame 10)
WALKER = (245, 66, 352, 270)  # the nearer walker of the GIF's frame 28


def _image(jpeg: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)


def _jpeg(image: np.ndarray) -> bytes:
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()


def _night(jpeg: bytes, seed: int = 1) -> bytes:
    """As a dark scene sends it: mean luma 38 of 255, Gaussian sensor noise of sigma 10."""
    image = _image(jpeg).astype(np.float32)
    gain = 38.0 / cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).mean()
    noise = np.random.default_rng(seed).normal(0.0, 10.0, image.shape)
    return _jpeg(np.clip(image * gain + noise, 0, 255).astype(np.uint8))


def _upper_half(jpeg: bytes) -> bytes:
    image = _image(jpeg)
    return _jpeg(image[: image.shape[0] // 2])


def _gif_crop(index: int, box: tuple[int, int, int, int]) -> bytes:
    cap = cv2.VideoCapture(str(WALKING))
    try:
        for _ in range(index + 1):
            ok, frame = cap.read()
            assert ok, f"cannot read frame {index} of {WALKING}"
    finally:
        cap.release()
    x1, y1, x2, y2 = box
    return _jpeg(frame[y1:y2, x1:x2])


def _event(crop: bytes) -> Event:
    return Event(event_id=uuid7(), device="pi-shifts", camera="hall", captured_ms=int(time.time() * 1000),
                 label="person", score=0.45, uncertain=True, track_id=3,
                 detections=[Detection(label="person", score=0.45, box=(0.3, 0.1, 0.5, 0.9))],
                 phash="8f3a6b1c2d4e5f60", reason="score in the uncertain band", crop=crop)


@pytest.fixture(scope="module")
def looks() -> dict[str, Translator]:
    return {"one": Translator(views=(VIEWS[0],)), "all": Translator()}


@pytest.fixture(scope="module")
def shifted() -> dict[str, bytes]:
    return {"night walker": _night(_gif_crop(28, WALKER)),
            "night room": _night(clip_crop(ROOM, 10, VISITOR)),
            "upper visitor": _upper_half(clip_crop(ROOM, 600, VISITOR)),
            "upper room": _upper_half(clip_crop(ROOM, 10, VISITOR))}


def test_a_dark_noisy_person_is_seen_by_the_normalised_view_and_a_dark_empty_room_stays_empty(looks, shifted):
    before = looks["one"].translate(_event(shifted["night walker"]))
    after = looks["all"].translate(_event(shifted["night walker"]))
    assert before.label_score < ABSENT  # the single look of before: "Person: no." on a real person
    assert after.label_score >= SURE and after.view != VIEWS[0] and after.picture == ("dark",)
    assert after.sentences()[-1].startswith("Person: yes")
    x1, y1, x2, y2 = after.label_box
    assert 0.0 <= x1 < x2 <= 1.0 and 0.0 <= y1 < y2 <= 1.0
    empty = looks["all"].translate(_event(shifted["night room"]))
    assert empty.label_score < ABSENT and empty.picture == ("dark",) and empty.sentences() == ["Person: no."]


def test_a_box_cut_to_the_upper_half_of_a_person_is_seen_in_the_border_and_an_empty_half_is_not(looks, shifted):
    before = looks["one"].translate(_event(shifted["upper visitor"]))
    after = looks["all"].translate(_event(shifted["upper visitor"]))
    assert before.label_score < 0.3 <= after.label_score  # "faint" or "no" before, "yes" now
    assert after.view in VIEWS[1:]
    assert looks["all"].translate(_event(shifted["upper room"])).label_score < ABSENT


def test_the_views_of_a_translator_must_include_the_crop_as_sent():
    with pytest.raises(ValueError, match="must include 'sent'"):
        Translator(views=("mirrored",))
    with pytest.raises(ValueError):
        Translator(views=("sent", "sideways"))


def test_picture_flags_say_dark_blown_out_and_soft():
    rng = np.random.default_rng(3)
    stripes = np.full((160, 80, 3), 30, np.uint8)
    stripes[:, ::8] = 200
    stripes[:, 1::8] = 200
    assert picture_flags(stripes) == ()
    assert picture_flags((stripes * 0.12).astype(np.uint8)) == ("dark",)
    assert picture_flags(np.clip(stripes.astype(np.int32) + 60, 0, 255).astype(np.uint8)) == ("bright",)
    soft = cv2.GaussianBlur(np.kron(rng.integers(0, 2, (4, 2, 1)) * 200, np.ones((40, 40, 3))).astype(np.uint8),
                            (0, 0), 12)
    assert picture_flags(soft) == ("soft",)
    assert picture_flags(np.full((100, 50, 3), 128, np.uint8)) == ()  # flat, not soft: no contrast to blur


def test_a_calibration_fitted_before_the_picture_feature_weighs_it_zero():
    old = Calibration((0.5, 0.9, 1.1, 0.0))
    x = features("alert", {"alert": 0.9}, 0.8, False)
    assert len(x) == 5 and x[-1] == 0.0
    assert old.confidence(x) == old.confidence(features("alert", {"alert": 0.9}, 0.8, False, ("dark",)))
    newer = Calibration((0.5, 0.9, 1.1, 0.0, -1.0))
    assert newer.confidence(features("alert", {"alert": 0.9}, 0.8, False, ("dark",))) < newer.confidence(x)


# -- the real model ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_darkened_person_is_an_alert_and_a_darkened_empty_room_is_benign(llm_analyzer, shifted):
    person, empty = llm_analyzer.engine.analyze_batch([_event(shifted["night walker"]), _event(shifted["night room"])])
    assert person.error is None and empty.error is None
    assert (person.verdict, empty.verdict) == ("alert", "benign")
    assert person.extra["picture"] == ["dark"] and person.extra["view"] in VIEWS[1:]
    assert 0.5 <= person.confidence <= 1.0 and 0.5 <= empty.confidence <= 1.0


@pytest.mark.slow
def test_the_answer_memo_answers_a_prompt_once(llm_analyzer, shifted):
    engine = llm_analyzer.engine
    engine.memo = {}
    try:
        first, again = engine.analyze_batch([_event(shifted["night room"]), _event(shifted["night room"])])
        assert len(engine.memo) == 1  # one prompt, one generation
        assert (first.verdict, again.verdict, first.description) == ("benign", "benign", again.description)
    finally:
        engine.memo = None
    assert engine.analyze(_event(shifted["night room"])).verdict == "benign"
