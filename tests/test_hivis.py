"""Hi-vis measured as people wear it, on a real visitor of the shipped room clip dressed anew: a worker's orange
vest (hue 6) is hi-vis, in daylight and at dusk; an orange T-shirt is not; a worn vest is told from a yellow
top by its retroreflective stripes; on an infrared (grey) picture hi-vis cannot be told (None, not False), nor
any garment's colour."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from conftest import MEDIA, clip_crop
from edgetriage.cloud.analysis.hivis import hivis
from edgetriage.cloud.analysis.translator import Translator

VISITOR = (370, 10, 530, 400)  # visitor 5 at the table in the one-by-one clip (768x432), frame 1000


@pytest.fixture(scope="module")
def visitor():
    """(BGR crop, the shipped detector's person box on it)."""
    image = cv2.imdecode(np.frombuffer(clip_crop(MEDIA / "one-by-one-person-detection.mp4", 1000, VISITOR),
                                       np.uint8), cv2.IMREAD_COLOR)
    found = [(s, b) for name, s, b in Translator(views=("sent",)).look(image) if name == "person"]
    return image, max(found)[1]


def _dressed(image, box, hue: int, saturation: int, value: int, stripes: bool = False) -> np.ndarray:
    """The torso (18-58 % of the box high, its middle 56 %) in one colour, the old shading kept (0.75..1)."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    top, bottom = int(y1 + 0.18 * (y2 - y1)), int(y1 + 0.58 * (y2 - y1))
    left, right = int(x1 + 0.22 * (x2 - x1)), int(x2 - 0.22 * (x2 - x1))
    hsv = cv2.cvtColor(image, cv2.COLOR_BGR2HSV).astype(np.float32)
    part = hsv[top:bottom, left:right]
    shade = 0.75 + 0.25 * part[..., 2] / max(1.0, float(part[..., 2].max()))
    part[..., 0], part[..., 1], part[..., 2] = hue, saturation, value * shade
    if stripes:
        for at in (0.45, 0.8):
            row = int(at * (bottom - top))
            part[row:row + max(2, int(0.04 * (y2 - y1))), :, 1] = 10
            part[row:row + max(2, int(0.04 * (y2 - y1))), :, 2] = 200
    return cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2BGR)


def _jpeg(image: np.ndarray) -> bytes:
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()


def _dusk(image: np.ndarray) -> np.ndarray:
    noise = np.random.default_rng(7).normal(0, 3, image.shape)
    return np.clip(image.astype(np.float32) * 0.3 * np.array([1.1, 1.0, 0.9]) + noise, 0, 255).astype(np.uint8)


def test_a_worker_s_orange_vest_at_hue_6_is_hi_vis_in_daylight_and_at_dusk(visitor):
    image, box = visitor
    vest = _dressed(image, box, hue=6, saturation=240, value=245)
    assert hivis(_jpeg(vest), box) is True
    assert hivis(_jpeg(_dusk(vest)), box) is True
    assert hivis(_jpeg(image), box) is False  # the grey cardigan she wears


def test_an_orange_or_yellow_t_shirt_is_not_a_vest(visitor):
    image, box = visitor
    for hue, saturation, value in ((12, 175, 205), (26, 160, 225)):  # cotton orange, cotton yellow
        assert hivis(_jpeg(_dressed(image, box, hue, saturation, value)), box) is False, hue


def test_a_worn_vest_is_told_from_a_yellow_top_by_its_stripes(visitor):
    image, box = visitor
    worn = dict(hue=30, saturation=190, value=215)  # washed out: no longer fluorescent-bright
    assert hivis(_jpeg(_dressed(image, box, stripes=True, **worn)), box) is True
    assert hivis(_jpeg(_dressed(image, box, stripes=False, **worn)), box) is False


def test_on_an_infrared_picture_hi_vis_cannot_be_told(visitor):
    image, box = visitor
    vest = _dressed(image, box, hue=30, saturation=240, value=250, stripes=True)
    grey = cv2.cvtColor(cv2.cvtColor(vest, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    tinted = np.clip(grey.astype(np.int16) + np.array([5, 0, 4]), 0, 255).astype(np.uint8)  # a camera's tint
    assert hivis(_jpeg(grey), box) is None and hivis(_jpeg(tinted), box) is None
    assert hivis(_jpeg(vest), None) is None  # no person's box: nothing to read


def test_on_an_infrared_picture_no_garment_colour_is_named(visitor):
    from edgetriage.cloud.analysis.colours import body_colours

    image, box = visitor
    vest = _dressed(image, box, hue=6, saturation=240, value=245)
    assert body_colours(vest, box)[0] == "orange"
    grey = cv2.cvtColor(cv2.cvtColor(vest, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)  # the vest reads light grey
    assert body_colours(grey, box) == (None, None)


def test_a_vest_measured_is_said_as_one_in_the_facts_and_the_description(visitor):
    import time

    from edgetriage.cloud.analysis.describe import contradictions, from_facts
    from edgetriage.shared.ids import uuid7
    from edgetriage.shared.protocol import Event

    image, box = visitor
    vest = _dressed(image, box, hue=6, saturation=240, value=245, stripes=True)
    event = Event(event_id=uuid7(), device="pi-hivis", camera="dock", captured_ms=int(time.time() * 1000),
                  label="person", score=0.5, uncertain=True, track_id=1, phash="8f3a6b1c2d4e5f60",
                  reason="score in the uncertain band", detections=[], crop=_jpeg(vest))
    facts = Translator(views=("sent",)).translate(event)
    assert facts.hivis is True
    text = from_facts(facts, "alert")
    assert "hi-vis orange vest" in text and "orange top" not in text, text
    assert "hi-vis orange vest" in facts.sentences()[-1]
    assert contradictions(text, facts, "alert") == {}
