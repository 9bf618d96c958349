"""Distribution shifts of the labelled crop set (bench/verdict_crops.py): the same crops as a camera at night, a
person far away, a cheap encoder, a moving subject, a box that drifted, a mirrored mount or a blown-out exposure
would send them. Built deterministically in memory (a fixed noise seed per crop), nothing written anywhere.

Each shift keeps the crop's clip (the fold), expected verdict and box, so a verdict on a shifted crop is
judged against the same label; `bench/verdicts.py --shifted` reports agreement and recall per shift.

    night      mean luma brought down to <= 40/255 (a gain, as a dark scene on auto-exposure limits), then
               Gaussian sensor noise sigma 10 (seeded per crop)
    small      downscaled to 1/3 of its size and back: a distant person, seen by few pixels
    jpeg30     re-encoded at JPEG quality 30
    blur       horizontal motion blur over 1/8 of the crop's width (at least 5 pixels)
    upper      only the top half of the box (a box that drifted up: head and chest)
    lower      only the bottom half of the box (legs and feet, or the floor beside them)
    mirrored   flipped left to right
    bright     over-exposed: gain 2.2, highlights clipped
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import replace

import cv2
import numpy as np
from verdict_crops import Crop

NIGHT_LUMA = 40.0
NIGHT_NOISE = 10.0
QUALITY = 85  # what the device encodes at (verdict_crops._jpeg)


def _decode(jpeg: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)


def _encode(image: np.ndarray, quality: int = QUALITY) -> bytes:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    return data.tobytes()


def _luma(image: np.ndarray) -> float:
    return float(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).mean())


def night(image: np.ndarray, seed: int) -> np.ndarray:
    gain = min(1.0, NIGHT_LUMA / max(1.0, _luma(image))) * 0.95  # a little under the limit, noise adds a bit
    noise = np.random.default_rng(seed).normal(0.0, NIGHT_NOISE, image.shape)
    return np.clip(image.astype(np.float32) * gain + noise, 0, 255).astype(np.uint8)


def small(image: np.ndarray, seed: int) -> np.ndarray:
    h, w = image.shape[:2]
    tiny = cv2.resize(image, (max(1, round(w / 3)), max(1, round(h / 3))), interpolation=cv2.INTER_AREA)
    return cv2.resize(tiny, (w, h), interpolation=cv2.INTER_LINEAR)


def blur(image: np.ndarray, seed: int) -> np.ndarray:
    length = max(5, image.shape[1] // 8)
    kernel = np.full((1, length), 1.0 / length, np.float32)
    return cv2.filter2D(image, -1, kernel, borderType=cv2.BORDER_REPLICATE)


def upper(image: np.ndarray, seed: int) -> np.ndarray:
    return image[: max(1, image.shape[0] // 2)]


def lower(image: np.ndarray, seed: int) -> np.ndarray:
    return image[image.shape[0] // 2:]


def mirrored(image: np.ndarray, seed: int) -> np.ndarray:
    return np.ascontiguousarray(image[:, ::-1])


def bright(image: np.ndarray, seed: int) -> np.ndarray:
    return np.clip(image.astype(np.float32) * 2.2, 0, 255).astype(np.uint8)


_PIXELS: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "night": night, "small": small, "blur": blur, "upper": upper, "lower": lower, "mirrored": mirrored,
    "bright": bright}
SHIFTS = ("night", "small", "jpeg30", "blur", "upper", "lower", "mirrored", "bright")


def _box(crop: Crop, name: str) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = crop.box
    if name == "upper":
        return (x1, y1, x2, (y1 + y2) / 2)
    if name == "lower":
        return (x1, (y1 + y2) / 2, x2, y2)
    return crop.box


def shifted(crop: Crop, name: str) -> Crop:
    """The crop as the shift `name` would have sent it (same clip, label and fold)."""
    image = _decode(crop.jpeg)
    if name == "jpeg30":
        jpeg = _encode(image, 30)
    else:
        seed = zlib.crc32(crop.jpeg)  # the same noise for the same crop, run after run
        jpeg = _encode(_PIXELS[name](image, seed))
    return replace(crop, jpeg=jpeg, box=_box(crop, name), what=f"{crop.what} ({name})")


def shifted_sets(crops: list[Crop], names: tuple[str, ...] = SHIFTS) -> dict[str, list[Crop]]:
    return {name: [shifted(crop, name) for crop in crops] for name in names}
