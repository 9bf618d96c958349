"""Object detection on one frame: the seam every detector back-end fits (`Detector`) and the ONNX Runtime
SSDLite back-end the product ships. Boxes leave here normalised (x1, y1, x2, y2 in 0..1), so nothing
downstream cares about the model's input size or box order."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol

import cv2
import numpy as np
from pydantic import Field

from ..shared.config import Strict
from ..shared.modelfiles import ModelError, ModelFile, resolve

log = logging.getLogger(__name__)


@dataclass(slots=True, frozen=True)
class Det:
    """One detection: class label, score 0..1, box x1, y1, x2, y2 normalised to the frame."""

    label: str
    score: float
    box: tuple[float, float, float, float]


class DetectorConfig(Strict):
    """Which model to run and how. Defaults measured on the one-by-one sample clip: with the letterboxed
    input the shipped model's scores are nearly bimodal, so any min_score in 0.2-0.5 gives the same
    events there; 0.3 keeps a margin above the faint boxes it draws on empty scenes."""

    model: str = "ssdlite_person"  # manifest key or path to a file the manifest describes
    threads: Annotated[int, Field(ge=1, le=64)] = 2
    providers: list[str] = ["CPUExecutionProvider"]
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.3
    # letterbox: keep the frame's aspect ratio, pad with grey (people in 16:9 frames are not squeezed thin,
    # which the shipped model scores far more reliably); stretch: resize the frame to the model input as is.
    fit: Literal["letterbox", "stretch"] = "letterbox"


class Detector(Protocol):
    """Blocking, one frame at a time; BGR uint8 in, detections above the configured score out."""

    def detect(self, image_bgr: np.ndarray) -> list[Det]: ...


def _usable_providers(requested: list[str], available: list[str]) -> list[str]:
    """The requested providers this onnxruntime build has, in order; CPU when none is left."""
    usable = [p for p in requested if p in available]
    missing = [p for p in requested if p not in available]
    if missing:
        log.warning("onnxruntime here has no %s (available: %s); using %s", ", ".join(missing),
                    ", ".join(available), ", ".join(usable) or "CPUExecutionProvider")
    return usable or ["CPUExecutionProvider"]


class SSDLiteDetector:
    """The TF Object Detection API SSD graph (manifest family `ssd_tfod`): uint8 NHWC RGB in, NMS done in
    the graph, outputs `[ymin, xmin, ymax, xmax]` boxes with scores sorted high to low."""

    def __init__(self, config: DetectorConfig, model: ModelFile | None = None):
        import onnxruntime as ort  # the edge extra; imported here so config-only users need no runtime

        self._model = model or resolve(config.model)
        entry = self._model.entry
        if entry.get("family") != "ssd_tfod":
            raise ModelError(f"model {self._model.name!r} is a {entry.get('family')!r} model, not an SSD "
                             "detector (family 'ssd_tfod'); choose a detector from models/manifest.json")
        self._min_score = config.min_score
        width, height = entry["input"]["size"]
        self._size = (int(width), int(height))
        self._input_name = entry["input"]["name"]
        outputs = entry["outputs"]
        self._output_names = [outputs["count"], outputs["boxes"], outputs["scores"], outputs["classes"]]
        self._labels = {int(k): v for k, v in entry.get("labels", {}).items()}
        self._letterbox = config.fit == "letterbox"

        options = ort.SessionOptions()
        options.intra_op_num_threads = config.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        providers = _usable_providers(config.providers, ort.get_available_providers())
        try:
            self._session = ort.InferenceSession(str(self._model.path), options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own exception types for unloadable graphs
            raise ModelError(f"model {self._model.name!r}: onnxruntime cannot load {self._model.path}: {exc}; "
                             "check the onnxruntime version (>= 1.16) or restore the shipped file") from None
        self.providers: list[str] = self._session.get_providers()
        # Buffers reused for every frame of the same size: resize target and the NHWC RGB tensor.
        self._tensor = np.full((1, height, width, 3), 127, np.uint8)
        self._frame_shape: tuple[int, ...] | None = None

    @property
    def model_name(self) -> str:
        return self._model.name

    def _layout(self, shape: tuple[int, ...]) -> None:
        """Where the frame goes inside the model input, and how to map boxes back to the frame."""
        in_w, in_h = self._size
        h, w = shape[:2]
        if self._letterbox:
            scale = min(in_w / w, in_h / h)
            fit_w, fit_h = max(1, round(w * scale)), max(1, round(h * scale))
        else:
            fit_w, fit_h = in_w, in_h
        x0, y0 = (in_w - fit_w) // 2, (in_h - fit_h) // 2
        self._tensor[:] = 127  # grey padding: 0 after the graph's [-1, 1] scaling
        self._resized = np.empty((fit_h, fit_w, 3), np.uint8)
        self._target = self._tensor[0, y0:y0 + fit_h, x0:x0 + fit_w]
        # normalised model-input coordinate -> normalised frame coordinate: (v - offset) * gain
        self._map = (x0 / in_w, y0 / in_h, in_w / fit_w, in_h / fit_h)
        self._frame_shape = shape

    def detect(self, image_bgr: np.ndarray) -> list[Det]:
        if image_bgr.shape != self._frame_shape:
            self._layout(image_bgr.shape)
        cv2.resize(image_bgr, (self._resized.shape[1], self._resized.shape[0]), dst=self._resized,
                   interpolation=cv2.INTER_LINEAR)
        rgb = cv2.cvtColor(self._resized, cv2.COLOR_BGR2RGB, dst=self._target)
        if rgb is not self._target:  # OpenCV builds that cannot write into a strided view return a copy
            self._target[...] = rgb
        count, boxes, scores, classes = self._session.run(self._output_names, {self._input_name: self._tensor})
        n = int(count[0])
        scores_0 = scores[0, :n]
        keep = int(np.count_nonzero(scores_0 >= self._min_score))  # scores are sorted descending
        if keep == 0:
            return []
        ox, oy, gx, gy = self._map
        found: list[Det] = []
        for i in range(keep):
            score = float(scores_0[i])
            ymin, xmin, ymax, xmax = boxes[0, i].tolist()
            xmin = min(max((xmin - ox) * gx, 0.0), 1.0)
            xmax = min(max((xmax - ox) * gx, 0.0), 1.0)
            ymin = min(max((ymin - oy) * gy, 0.0), 1.0)
            ymax = min(max((ymax - oy) * gy, 0.0), 1.0)
            if xmax <= xmin or ymax <= ymin:
                continue
            class_id = int(classes[0, i])
            label = self._labels.get(class_id, f"class_{class_id}")
            found.append(Det(label, score, (xmin, ymin, xmax, ymax)))
        return found


def build_detector(config: DetectorConfig) -> Detector:
    """The detector back-end the manifest entry of `config.model` calls for; ModelError when the file is
    missing, damaged (sha256) or of a family no back-end here runs."""
    model = resolve(config.model)
    family = model.entry.get("family")
    if family == "ssd_tfod":
        return SSDLiteDetector(config, model)
    raise ModelError(f"model {model.name!r} (family {family!r}, task {model.entry.get('task')!r}) is not a "
                     "detector this device can run; use 'ssdlite_person' or 'ssdlite_person_int8'")
