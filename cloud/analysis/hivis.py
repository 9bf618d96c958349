"""Hi-vis, measured as people wear it: is the person's upper body a fluorescent vest? Pixel statistics of the
crop, nothing learnt; three answers, as the policy reads them: True, False, or None (cannot tell).

- None where colour cannot be read: no person's box, a crop that does not decode, a monochrome (infrared
  night) picture, whose grey says nothing of a vest's colour, or a torso too dark to see.
- Sensor noise is smoothed (a 3x3 median: at dusk it scatters a dim orange's hue into red) and the light's
  colour taken out (colours.balanced) first, and brightness is judged against the crop's own
  brightest (`reference`, its 99th percentile of HSV value), so dusk dims the vest and its surroundings alike.
- The torso: 18-56 % of the box's height, its middle half in width. A pixel is vest-coloured when its hue is
  fluorescent orange-red to yellow-green (OpenCV HUE, 4..45 of 180: a worker's orange vest reads about 6),
  its saturation >= SAT_MIN and its value >= VAL_MIN of the reference; the torso is vest-coloured when SHARE of
  its pixels are.
- An orange or yellow T-shirt is vest-coloured too. What tells a vest from it:
  * fluorescent dye: a fluorescent surface returns more light at its hue than it receives there, so it reads
    more saturated at the same brightness than any ordinary dye (median saturation >= SAT_FLUORESCENT and
    median value >= VAL_FLUORESCENT of the reference); ordinary cotton orange or yellow stays below;
  * retroreflective stripes: a band of rows of light neutral pixels (saturation < STRIPE_SAT, value >=
    STRIPE_VAL of the reference) over STRIPE_ROW of the torso's width, between vest-coloured rows above and
    below (the tape is sewn on the fabric), at most STRIPE_MAX of the torso high.
  Either one, on a vest-coloured torso, is a vest. A vest-coloured torso with neither is a coloured top.
Measured on a seeded set built from the shipped clips (bench/hivis.py): painted vests of the three colours
with and without stripes, recoloured ordinary tops, in daylight, dusk and infrared grey.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from .colours import balanced, monochrome

HUE = (4, 45)  # OpenCV hue (0..180): fluorescent orange-red (~4-12), yellow (~24-32), yellow-green (~33-42)
SAT_MIN = 110  # a vest-coloured pixel: at least this saturated...
VAL_MIN = 0.30  # ... and at least this share of the reference's value
SHARE = 0.30  # the torso is vest-coloured when this share of its pixels is
SAT_FLUORESCENT = 212  # fluorescent dye: the vest-coloured pixels' median saturation from this...
VAL_FLUORESCENT = 0.60  # ... and their median value from this share of the reference
STRIPE_SAT, STRIPE_VAL = 70, 0.45  # a retroreflective tape's pixel: neutral and light
STRIPE_ROW = 0.40  # a row is tape where this share of it is
STRIPE_MAX = 0.20  # a tape band is at most this share of the torso high
STRIPE_NEAR = 3  # vest-coloured rows within this many rows above and below it
DARK_REFERENCE = 28  # a crop whose brightest (reference) is below this is too dark to tell
WORK_HEIGHT = 200  # the crop is read at most this many pixels high

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class Reading:
    """What the torso shows: `wearing` is the answer (None: cannot tell), the rest says why."""

    wearing: bool | None
    share: float = 0.0  # share of the torso vest-coloured
    saturation: float = 0.0  # the vest-coloured pixels' median saturation (0..255)...
    value: float = 0.0  # ... and value, as a share of the crop's brightest
    fluorescent: bool = False
    stripes: bool = False
    why: str = ""


def torso(image: np.ndarray, box: Box) -> np.ndarray:
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    left, right = int(x1 + 0.25 * (x2 - x1)), int(np.ceil(x2 - 0.25 * (x2 - x1)))
    return image[int(y1 + 0.18 * (y2 - y1)):int(np.ceil(y1 + 0.56 * (y2 - y1))), left:right]


def stripes(coloured: np.ndarray, tape: np.ndarray) -> bool:
    """A band of tape rows with vest-coloured rows just above and below it (masks of the torso's pixels)."""
    rows = coloured.shape[0]
    on_vest = coloured.mean(axis=1) >= SHARE
    taped = tape.mean(axis=1) >= STRIPE_ROW
    start = None
    for row in range(rows + 1):
        if row < rows and taped[row]:
            start = row if start is None else start
            continue
        if start is not None and row - start <= max(1, STRIPE_MAX * rows):
            above = on_vest[max(0, start - STRIPE_NEAR):start].any()
            below = on_vest[row:row + STRIPE_NEAR].any()
            if above and below:
                return True
        start = None
    return False


def reading(image: np.ndarray, box: Box | None) -> Reading:
    """The hi-vis reading of the person in `box` (normalised to the crop) on a BGR crop."""
    if box is None:
        return Reading(None, why="no person's box")
    h, w = image.shape[:2]
    if h > WORK_HEIGHT:
        image = cv2.resize(image, (max(1, round(w * WORK_HEIGHT / h)), WORK_HEIGHT), interpolation=cv2.INTER_AREA)
    if monochrome(image):
        return Reading(None, why="monochrome picture")
    light = balanced(cv2.medianBlur(image, 3))  # a dim picture's sensor noise would scatter the hues
    band = torso(light, box)
    if band.size == 0:
        return Reading(None, why="no torso in the crop")
    reference = float(np.percentile(cv2.blur(light, (3, 3)).max(axis=2), 99))  # the blur: not a noise speck
    if reference < DARK_REFERENCE:
        return Reading(None, why="too dark")
    hsv = cv2.cvtColor(band, cv2.COLOR_BGR2HSV)
    hue, sat, val = (hsv[..., i].astype(np.int32) for i in range(3))
    coloured = (hue >= HUE[0]) & (hue < HUE[1]) & (sat >= SAT_MIN) & (val >= VAL_MIN * reference)
    share = float(coloured.mean())
    if share < SHARE:
        return Reading(False, share, why="torso not vest-coloured")
    saturation, value = float(np.percentile(sat[coloured], 50)), float(np.percentile(val[coloured], 50)) / reference
    fluorescent = saturation >= SAT_FLUORESCENT and value >= VAL_FLUORESCENT
    taped = stripes(coloured, (sat < STRIPE_SAT) & (val >= STRIPE_VAL * reference))
    why = "fluorescent dye" if fluorescent else "retroreflective stripes" if taped else "a coloured top, not a vest"
    return Reading(fluorescent or taped, share, saturation, value, fluorescent, taped, why)


def hivis(jpeg: bytes, box: Box | None) -> bool | None:
    """True/False measured on the crop's upper body; None where it cannot be told (reading)."""
    if box is None:
        return None
    image = cv2.imdecode(np.frombuffer(jpeg, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return None
    return reading(image, box).wearing


__all__ = ["Reading", "hivis", "reading"]
