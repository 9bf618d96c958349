"""Object detection on one frame: the seam every detector back-end fits (`Detector`) and the ONNX Runtime
SSDLite back-end the product ships. Boxes leave here normalised (x1, y1, x2, y2 in 0..1), so nothing
downstream cares about the model's input size or box order."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Protocol

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
    """Which model to run and how. `min_score` is low on purpose: the shipped person detector scores people
    seen from behind at 0.2-0.4, and the tracker (min_hits) removes the odd false positive."""

    model: str = "ssdlite_person"  # manifest key or path to a file the manifest describes
    threads: Annotated[int, Field(ge=1, le=64)] = 2
    providers: list[str] = ["CPUExecutionProvider"]
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.2


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
        # Input buffers reused for every frame: resize target and the NHWC RGB tensor.
        self._resized = np.empty((height, width, 3), np.uint8)
        self._tensor = np.empty((1, height, width, 3), np.uint8)

    @property
    def model_name(self) -> str:
        return self._model.name

    def detect(self, image_bgr: np.ndarray) -> list[Det]:
        cv2.resize(image_bgr, self._size, dst=self._resized, interpolation=cv2.INTER_LINEAR)
        cv2.cvtColor(self._resized, cv2.COLOR_BGR2RGB, dst=self._tensor[0])
        count, boxes, scores, classes = self._session.run(self._output_names, {self._input_name: self._tensor})
        n = int(count[0])
        scores_0 = scores[0, :n]
        keep = int(np.count_nonzero(scores_0 >= self._min_score))  # scores are sorted descending
        if keep == 0:
            return []
        found: list[Det] = []
        for i in range(keep):
            score = float(scores_0[i])
            ymin, xmin, ymax, xmax = np.clip(boxes[0, i], 0.0, 1.0).tolist()
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
