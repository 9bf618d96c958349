"""The reuse keys of a crop, made the same way wherever they are made: the perceptual hash (`phash_dct64`) and
the appearance embedding (`Appearance`: the shipped MobileNetV2's pooled features, shared.embedding).

The device keys its own crops (edge.vision.pipeline, edge.vision.classify) for its own cache; the cloud keys
the crops it reuses across devices itself (cloud.keys), from the JPEG it received, so a key a device merely
claims never reaches another device. Needs OpenCV and onnxruntime (the edge and cloud extras), unlike the rest
of shared/.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from .embedding import embedding_of
from .modelfiles import ModelError, ModelFile

MAX_ASPECT = 4.0  # longer crops are trimmed to this ratio around their centre before resizing


def phash_dct64(crop: np.ndarray) -> str:
    """64-bit DCT perceptual hash as 16 lower-case hex digits: grey, 32x32, 2-D DCT, the top-left 8x8
    coefficients each compared with the median of the 63 non-DC ones; bit order row-major, first bit most
    significant. Small changes of pose, light or JPEG noise flip few bits; another scene flips about half."""
    if crop.size == 0:
        raise ValueError("cannot hash an empty crop")
    grey = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY) if crop.ndim == 3 else crop
    small = cv2.resize(grey, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float32)
    low = cv2.dct(small)[:8, :8].ravel()
    bits = low > np.partition(low[1:], 31)[31]  # the median of 63: np.median's value, without numpy.ma (1.3 MB)
    return np.packbits(bits).tobytes().hex()


def decode_jpeg(jpeg: bytes) -> np.ndarray | None:
    """The BGR image of a JPEG crop, or None for bytes that do not decode to a picture."""
    try:
        image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    except (cv2.error, ValueError, TypeError):
        return None
    return image if image is not None and image.size else None


class ImagenetInput:
    """The ImageNet recipe of a manifest `classify` entry: short side to 256 (for a 224 input), centre crop,
    RGB, normalised, NCHW. Crops longer than MAX_ASPECT are trimmed around their centre first."""

    def __init__(self, entry: dict) -> None:
        width, height = entry["input"]["size"]
        self.size = (int(width), int(height))
        self._resize_short = round(min(self.size) * 256 / 224)
        mean = np.asarray(entry["mean"], np.float32) * 255.0
        std = np.asarray(entry["std"], np.float32) * 255.0
        # one multiply-add per pixel: (x - mean) / std == x * (1/std) - mean/std
        self._gain = (1.0 / std).reshape(1, 1, 3).astype(np.float32)
        self._bias = (-mean / std).reshape(1, 1, 3).astype(np.float32)

    def tensor(self, bgr: np.ndarray) -> np.ndarray:
        h, w = bgr.shape[:2]
        if max(h, w) > MAX_ASPECT * min(h, w):
            keep = int(MAX_ASPECT * min(h, w))
            if h > w:
                bgr = bgr[(h - keep) // 2:(h - keep) // 2 + keep]
            else:
                bgr = bgr[:, (w - keep) // 2:(w - keep) // 2 + keep]
            h, w = bgr.shape[:2]
        size_w, size_h = self.size
        scale = self._resize_short / min(h, w)
        new_w, new_h = max(size_w, round(w * scale)), max(size_h, round(h * scale))
        resized = cv2.resize(bgr, (new_w, new_h), interpolation=cv2.INTER_LINEAR)
        top, left = (new_h - size_h) // 2, (new_w - size_w) // 2
        rgb = cv2.cvtColor(resized[top:top + size_h, left:left + size_w], cv2.COLOR_BGR2RGB)
        normalised = rgb.astype(np.float32) * self._gain + self._bias
        return np.ascontiguousarray(normalised.transpose(2, 0, 1)[np.newaxis])


class Appearance:
    """The appearance embedding of a crop by a MobileNetV2 session (`model` a manifest `classify` entry with a
    `features` output). Thread-safe, as onnxruntime sessions are."""

    def __init__(self, model: ModelFile, session: Any) -> None:
        entry = model.entry
        if entry.get("task") != "classify" or "features" not in entry.get("outputs", {}):
            raise ModelError(f"model {model.name!r} has no 'features' output; the appearance embedding needs the "
                             "shipped MobileNetV2 (models/manifest.json)")
        self.input = ImagenetInput(entry)
        self._input_name = entry["input"]["name"]
        self._features = [entry["outputs"]["features"]]
        self.session = session

    def embed(self, bgr: np.ndarray) -> bytes | None:
        (features,) = self.session.run(self._features, {self._input_name: self.input.tensor(bgr)})
        return embedding_of(features[0])

    def embed_jpeg(self, jpeg: bytes) -> bytes | None:
        """The embedding of a JPEG crop; None for bytes that do not decode to a picture."""
        image = decode_jpeg(jpeg)
        return self.embed(image) if image is not None else None
