"""Closer looks in the dark: the detector sees a denoised copy of the pixels it enlarges.

At night a camera raises its gain and its pictures carry sensor noise of several grey levels per pixel. A
look at the whole frame shrinks the picture to the detector's input, which averages that noise away; a closer
look (a 2x square around something small) enlarges it, and YOLOX-Nano then reads grain where a small person
is: the parking lot's pedestrian, 17x33 px at a mean luma of 36 under sigma-10 noise, scores 0 at every zoom,
and 0.6-0.8 on half his frames once the 208-px square is denoised (docs/developers/benchmarks.md,
"Night, honest noise").

The filter is OpenCV's non-local means, whose strength is the noise measured on the square itself
(Immerkaer's estimator: one 3x3 filter and a mean, no parameter to tune per camera). A Gaussian or median
blur, a bilateral filter, brightening (gain, CLAHE) or the mean of the last frames (he walks: it smears him)
took away as much of him as of the grain: none lifted him over 0.3 on more than one frame. Only in a dark
scene and only where the look enlarges at least 1.5x: by day, or when the square is about the input's size or
larger, the detector sees the frame as before.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from .detect import Det, Detector, Region, input_side, region_pixels
from .looks import CONFIRM_CLOSER
from .motion import FULL_BRIGHTNESS

# a dark scene (night, an unlit room): a mean grey level under half of what the motion gate calls well lit, so a
# thing there differs from its background by under half the grey levels it would by day
DARK_BRIGHTNESS = FULL_BRIGHTNESS / 2
# non-local means strength in standard deviations of the measured noise: patches differing by about this much
# are averaged. 1.0 left the grain (with 3-px patches: <= 0.24); 1.5 and 2.0 both found him, 1.5 at half the time
NLM_STRENGTH = 1.5
NLM_TEMPLATE = 5  # compared patches, px (3: ~2x quicker, half as many of his frames scored over 0.3)
NLM_SEARCH = 11  # where similar patches are looked for, px (21, with 7-px patches: ~8x slower, one frame more)
# Immerkaer (1996): the 3x3 kernel below cancels any locally planar picture, leaving 6x the noise's scale
_LAPLACE_PAIR = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)
_IMMERKAER_SCALE = math.sqrt(math.pi / 2.0) / 6.0


def noise_sigma(image: np.ndarray) -> float:
    """The sensor noise of a BGR picture, in grey levels (its standard deviation): the mean absolute response
    of Immerkaer's kernel on the grey image, which a smooth picture does not excite. Texture adds a little;
    that only makes the denoising a little stronger."""
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    response = cv2.filter2D(grey, -1, _LAPLACE_PAIR)[1:-1, 1:-1]
    return float(np.abs(response).mean()) * _IMMERKAER_SCALE


def denoise(image: np.ndarray) -> np.ndarray:
    """The picture with its measured noise taken out (non-local means, colour kept)."""
    strength = NLM_STRENGTH * noise_sigma(image)
    if strength < 1.0:  # under a grey level: nothing to take out
        return image
    return cv2.fastNlMeansDenoisingColored(image, None, strength, strength, NLM_TEMPLATE, NLM_SEARCH)


def enlarges(detector: Detector, region: Region) -> bool:
    """Whether a look at `region` scales it up to the detector's input at least CONFIRM_CLOSER times (what the
    pipeline counts as a closer look), magnifying the noise with it. A square nearly the input's size is hardly
    magnified, and denoising it costs several detector calls (415 px: ~175 ms against a 35-ms look)."""
    return CONFIRM_CLOSER * max(region[2] - region[0], region[3] - region[1]) <= input_side(detector)


def detect_denoised(detector: Detector, image: np.ndarray, region: Region) -> list[Det]:
    """The detector's look at `region`, on a denoised copy of its pixels; boxes normalised to the whole frame
    as any look's are."""
    pixels, (ox, oy, sx, sy) = region_pixels(image, region)
    return [Det(d.label, d.score, (ox + d.box[0] * sx, oy + d.box[1] * sy, ox + d.box[2] * sx, oy + d.box[3] * sy))
            for d in detector.detect(denoise(np.ascontiguousarray(pixels)))]


def look(detector: Detector, image: np.ndarray, region: Region, dark: bool) -> list[Det]:
    """One detector look at `region`: denoised first in a dark scene where the look enlarges, as is otherwise."""
    if dark and enlarges(detector, region):
        return detect_denoised(detector, image, region)
    return detector.detect(image, region)


__all__ = ["DARK_BRIGHTNESS", "denoise", "detect_denoised", "enlarges", "look", "noise_sigma"]
