"""An object is a fact about a person only when the closer look is sure of it and it touches the person's box:
below that it is in neither the facts nor the description (real crops of the shipped clips, the real
detector); a person standing still is "not moving"."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest
from conftest import MEDIA, clip_crop
from edgetriage.cloud.analysis.describe import from_facts
from edgetriage.cloud.analysis.translator import Facts, Translator
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Event

SURE_OBJECT = 0.5  # the documented floor (docs/operator/facts.md)
VISITOR = (370, 10, 530, 400)  # a visitor at the table in the one-by-one clip (768x432), frame 1000: visitor 5


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator(views=("sent", "mirrored"))


def _jpeg(image: np.ndarray) -> bytes:
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()


def _event(jpeg: bytes) -> Event:
    return Event(event_id=uuid7(), device="pi-objects", camera="yard", captured_ms=int(time.time() * 1000),
                 label="person", score=0.5, uncertain=True, track_id=1, phash="8f3a6b1c2d4e5f60",
                 reason="score in the uncertain band", detections=[], crop=jpeg)


def _frame(name: str, index: int) -> np.ndarray:
    cap = cv2.VideoCapture(str(MEDIA / name))
    try:
        for _ in range(index + 1):
            ok, frame = cap.read()
    finally:
        cap.release()
    assert ok
    return frame


def _overlap(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _decoded(jpeg: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)


def test_an_object_the_closer_look_is_not_sure_of_is_no_fact(translator):
    # the walking GIF's man wears a white waistcoat over a dark shirt; the detector sees a "tie" in its panel
    frame = _frame("face-demographics-walking.gif", 16)
    h, w = frame.shape[:2]
    people = [b for name, s, b in translator.look(frame) if name == "person" and s >= 0.3]
    x1, y1, x2, y2 = max(people)  # the man walks right of the woman
    crop = frame[max(0, int(y1 * h) - 8):int(y2 * h) + 8, max(0, int(x1 * w) - 8):int(x2 * w) + 8]
    jpeg = _jpeg(crop)
    found = translator.look(_decoded(jpeg))
    unsure = [(name, s) for name, s, _ in found if name != "person" and 0.3 <= s < SURE_OBJECT]
    assert unsure, "the detector no longer sees the tie this test is about"
    facts = translator.translate(_event(jpeg))
    assert facts.label_score >= 0.3 and facts.objects == ()
    assert "tie" not in from_facts(facts, "alert") and "with" not in " ".join(facts.sentences())


def test_an_object_that_does_not_touch_the_person_is_no_fact(translator):
    person = _decoded(clip_crop(MEDIA / "one-by-one-person-detection.mp4", 1000, VISITOR))
    lot = _frame("person-bicycle-car-detection.gif", 39)  # the parking lot's car, close and whole
    h, w = lot.shape[:2]
    cars = [b for name, s, b in translator.look(lot) if name == "car" and s >= 0.7]
    x1, y1, x2, y2 = cars[0]
    car = lot[max(0, int(y1 * h) - 18):int(y2 * h) + 6, max(0, int(x1 * w) - 6):int(x2 * w) + 6]
    car = cv2.resize(car, (round(car.shape[1] * 0.6 * person.shape[0] / car.shape[0]), round(0.6 * person.shape[0])))
    beside = cv2.copyMakeBorder(car, person.shape[0] - car.shape[0], 0, 0, car.shape[1] // 2, cv2.BORDER_REPLICATE)
    jpeg = _jpeg(np.hstack([beside, person]))
    found = translator.look(_decoded(jpeg))
    sure = [b for name, s, b in found if name == "car" and s >= SURE_OBJECT]
    assert sure, "the detector no longer finds the car this test is about"
    facts = translator.translate(_event(jpeg))
    assert facts.label_score >= 0.3 and not _overlap(sure[0], facts.label_box)
    assert facts.objects == () and "car" not in from_facts(facts, "alert")


def test_a_person_standing_still_is_not_moving():
    facts = Facts("person", 0.9, None, True, upper="grey", direction="still")
    assert "Not moving." in facts.sentences() and "Moving still." not in facts.sentences()
    assert from_facts(facts, "alert") == "A person in a grey top, not moving."


def test_an_orange_top_is_a_colour_not_the_fruit():
    from edgetriage.cloud.analysis.describe import contradictions

    facts = Facts("person", 0.9, None, True, upper="orange")
    assert contradictions(from_facts(facts, "alert"), facts, "alert") == {}  # "A person in an orange top."
    dark = Facts("person", 0.9, None, True, upper="dark")
    assert "orange" in contradictions("A person holding an orange, in a dark top.", dark, "alert")["object"]
