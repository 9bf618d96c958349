"""Hi-vis, measured: is the upper body of the person found bright yellow, orange or green? Pixel statistics of
the crop (HSV saturation and value), nothing learnt and nothing guessed from words.

The band is the one the translator names the top's colour from (20-50 % of the person's box height, the
middle half of its width). A pixel is fluorescent when its hue is orange to green (OpenCV 8..85 of 180), its
saturation >= SAT_MIN and its value >= VAL_MIN; the upper body is hi-vis when at least SHARE of the band is.
Ordinary clothes come nowhere near: a mustard jumper is too dark, khaki too grey, a lime shirt would count
(it is as visible as a vest). No box (no person found): unknown (None).
"""

from __future__ import annotations

import cv2
import numpy as np

HUE = (8, 85)
SAT_MIN = 150
VAL_MIN = 150
SHARE = 0.30


def fluorescent_share(band: np.ndarray) -> float:
    """Share of a BGR region's pixels in the fluorescent range."""
    if band.size == 0:
        return 0.0
    hsv = cv2.cvtColor(band.reshape(-1, 1, 3), cv2.COLOR_BGR2HSV).reshape(-1, 3)
    h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    bright = (h >= HUE[0]) & (h < HUE[1]) & (s >= SAT_MIN) & (v >= VAL_MIN)
    return float(bright.mean())


def upper_band(image: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    left, right = int(x1 + 0.25 * (x2 - x1)), int(x2 - 0.25 * (x2 - x1))
    return image[int(y1 + 0.2 * (y2 - y1)):int(y1 + 0.5 * (y2 - y1)), left:right]


def hivis(jpeg: bytes, box: tuple[float, float, float, float] | None) -> bool | None:
    """True/False measured on the crop's upper body; None without a person's box or a readable crop."""
    if box is None:
        return None
    image = cv2.imdecode(np.frombuffer(jpeg, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return None
    return fluorescent_share(upper_band(image, box)) >= SHARE


__all__ = ["hivis", "fluorescent_share", "upper_band"]
