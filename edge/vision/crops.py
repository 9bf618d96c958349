"""What a track leaves behind: the crop around its best detection, as a small JPEG, and the perceptual hash
the cloud and the verdict cache use to recognise the same scene again."""

from __future__ import annotations

import cv2
import numpy as np

from ...shared.cropkeys import phash_dct64
from ...shared.protocol import CROP_MARGIN, crop_region

Box = tuple[float, float, float, float]

__all__ = ["Box", "crop_box", "cut", "encode_jpeg", "phash_dct64", "shrink"]

MAX_JPEG_BYTES = 192 * 1024  # leaves room in the 256 KiB event for the rest of the message


def crop_box(image: np.ndarray, box_norm: Box, margin: float = CROP_MARGIN) -> np.ndarray:
    """The image region under a normalised box grown by `margin` of its size on each side, clipped to the
    image. A view, not a copy: copy it if the frame's buffer may be reused."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box_norm
    mx = (x2 - x1) * margin
    my = (y2 - y1) * margin
    left = min(max(int((x1 - mx) * w), 0), w - 1)
    top = min(max(int((y1 - my) * h), 0), h - 1)
    right = max(min(int(np.ceil((x2 + mx) * w)), w), left + 1)
    bottom = max(min(int(np.ceil((y2 + my) * h)), h), top + 1)
    return image[top:bottom, left:right]


def cut(image: np.ndarray, box_norm: Box, margin: float = CROP_MARGIN) -> tuple[np.ndarray, Box]:
    """A copy of the crop around `box_norm` and the frame-normalised region it was cut from (the event's
    `crop_box`, so the page draws boxes where they were, whatever margin this device uses)."""
    return crop_box(image, box_norm, margin).copy(), crop_region(box_norm, margin)


def shrink(crop: np.ndarray, max_side: int) -> np.ndarray:
    """The crop scaled so its longer side is at most `max_side` (itself when it already is)."""
    h, w = crop.shape[:2]
    longest = max(h, w)
    if longest <= max_side:
        return crop
    scale = max_side / longest
    return cv2.resize(crop, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)


def encode_jpeg(crop: np.ndarray, max_side: int = 320, quality: int = 85) -> tuple[bytes, tuple[int, int]]:
    """JPEG bytes of the crop scaled so its longer side is at most `max_side`, and the encoded (w, h).
    Quality steps down if an unusually busy crop would not fit the event size limit."""
    if crop.size == 0:
        raise ValueError("cannot encode an empty crop")
    crop = shrink(crop, max_side)
    h, w = crop.shape[:2]
    while True:
        ok, buf = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, quality])
        if not ok:
            raise ValueError(f"JPEG encoding failed for a {w}x{h} crop")
        if buf.size <= MAX_JPEG_BYTES or quality <= 30:
            return buf.tobytes(), (w, h)
        quality -= 15
