"""What a crop looks like, as words: the top ImageNet classes of the shipped MobileNetV2, a weak hint in the
translator's facts (translator.py), never their subject.

ImageNet has no "person" class, so a person crop reads as what they wear or carry (jean, sweatshirt, backpack),
and an empty scene as whatever it resembles (a marimba, a shoji): shown to a small model, such words led it
astray, so the facts carry the hint only where the detector has no class for the label.
"""

from __future__ import annotations

import logging

import cv2
import numpy as np

from ...shared.modelfiles import ModelFile, resolve

log = logging.getLogger(__name__)

MAX_ASPECT = 8.0  # longer crops are trimmed to this ratio first so resizing cannot allocate without bound


class CropDescriber:
    """Top-k ImageNet classes with softmax probabilities for a JPEG crop. Thread-safe (onnxruntime sessions are)."""

    def __init__(self, model: str = "mobilenet_v2", threads: int = 1, top_k: int = 3):
        import onnxruntime as ort

        self.model: ModelFile = resolve(model)
        entry = self.model.entry
        if entry.get("task") != "classify":
            raise ValueError(f"model {model!r} is a {entry.get('task')} model; the describer needs a classify model")
        self.labels = self.model.labels
        self.top_k = top_k
        self.input_name: str = entry["input"]["name"]
        width, height = entry["input"]["size"]
        if width != height:
            raise ValueError(f"model {model!r}: non-square input {width}x{height} is not supported")
        self.size = int(width)
        self.resize_short = round(self.size * 256 / 224)  # the usual ImageNet recipe: 256 for a 224 crop
        self.mean = np.asarray(entry["mean"], dtype=np.float32).reshape(1, 1, 3)
        self.std = np.asarray(entry["std"], dtype=np.float32).reshape(1, 1, 3)
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.model.path), options, providers=["CPUExecutionProvider"])

    def describe(self, jpeg: bytes) -> list[tuple[str, float]]:
        """[(class name, probability), ...] best first; [] for bytes that do not decode to an image."""
        try:
            image = cv2.imdecode(np.frombuffer(jpeg, dtype=np.uint8), cv2.IMREAD_COLOR)
        except (cv2.error, ValueError, TypeError):
            image = None
        if image is None or image.size == 0:
            return []
        try:
            (logits,) = self.session.run([self.model.entry["outputs"]["logits"]],
                                         {self.input_name: self.preprocess(image)})
        except Exception as exc:  # onnxruntime raises its own exception types
            log.warning("crop describer failed: %s", exc)
            return []
        scores = logits[0].astype(np.float64)
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        best = np.argsort(probs)[::-1][: self.top_k]
        return [(self.labels[i] if i < len(self.labels) else f"class {i}", float(probs[i])) for i in best]

    def preprocess(self, bgr: np.ndarray) -> np.ndarray:
        """BGR image -> 1x3xSxS float32: resize the short side to 256, centre-crop 224, scale, normalise."""
        h, w = bgr.shape[:2]
        if max(h, w) > MAX_ASPECT * min(h, w):
            keep = int(MAX_ASPECT * min(h, w))
            if h > w:
                top = (h - keep) // 2
                bgr = bgr[top : top + keep]
            else:
                left = (w - keep) // 2
                bgr = bgr[:, left : left + keep]
            h, w = bgr.shape[:2]
        scale = self.resize_short / min(h, w)
        new_w, new_h = max(self.size, round(w * scale)), max(self.size, round(h * scale))
        resized = cv2.resize(bgr, (new_w, new_h), interpolation=cv2.INTER_LINEAR)
        top, left = (new_h - self.size) // 2, (new_w - self.size) // 2
        crop = resized[top : top + self.size, left : left + self.size]
        rgb = cv2.cvtColor(crop, cv2.COLOR_BGR2RGB).astype(np.float32) * (1.0 / 255.0)
        normalised = (rgb - self.mean) / self.std
        return np.ascontiguousarray(normalised.transpose(2, 0, 1)[np.newaxis], dtype=np.float32)
