"""Object detection on one frame or one region of it: the seam every detector back-end fits (`Detector`),
the ONNX Runtime session they share (`open_session`, shared.onnx), and the two model families the product ships:

- `ssd_tfod`: the TF Object Detection API SSDLite person detector (uint8 RGB in, NMS in the graph);
- `yolox`: YOLOX-Nano, COCO-80 (float BGR letterboxed top-left in, raw grid out, decoded and NMS'd here).

A back-end registers its manifest family in `BACKENDS`; `build_detector` picks it from the manifest entry,
so adding a family touches this file only. Boxes leave here normalised to the whole frame (x1, y1, x2, y2 in
0..1), whatever region the model looked at, so nothing downstream cares about input sizes or box orders.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol

import cv2
import numpy as np
from pydantic import Field

from ...shared import yolox
from ...shared.config import Strict
from ...shared.modelfiles import ModelError, ModelFile, manifest, resolve
from ...shared.onnx import open_session

log = logging.getLogger(__name__)

Region = tuple[int, int, int, int]  # x1, y1, x2, y2 in frame pixels, x2/y2 exclusive


@dataclass(slots=True, frozen=True)
class Det:
    """One detection: class label, score 0..1, box x1, y1, x2, y2 normalised to the frame."""

    label: str
    score: float
    box: tuple[float, float, float, float]


class DetectorConfig(Strict):
    """Which model to run and how. `min_score` is only the floor below which boxes are not worth returning
    at all: what is tracked, and what counts as uncertain, is the vision pipeline's and the rules' business
    (a faint 0.1 person box on a moving blob is exactly the evidence an uncertain region needs)."""

    # manifest key or path to a file the manifest describes; YOLOX-Nano: docs/developers/benchmarks.md "Edge" says why
    model: str = "yolox_nano"
    precision: Literal["fp32", "int8"] = "fp32"  # int8: the manifest's "<model>_int8" QDQ file
    threads: Annotated[int, Field(ge=1, le=64)] = 2
    # tried in order; a provider this onnxruntime lacks is skipped with a warning, CPU is always last
    providers: list[str] = ["CPUExecutionProvider"]
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.05
    # letterbox: keep the frame's aspect ratio, pad with grey (people in 16:9 frames are not squeezed thin,
    # which the SSDLite scores far more reliably); stretch: resize the frame to the model input as is.
    # YOLOX is always letterboxed (top-left), as it was trained.
    fit: Literal["letterbox", "stretch"] = "letterbox"
    nms_iou: Annotated[float, Field(gt=0.0, le=1.0)] = 0.45  # for back-ends whose graph does no NMS
    # onnxruntime's worker threads busy-wait after each run by default: 2-3 ms quicker back to back, but a
    # core burnt between the sparse calls of a gated camera (measured: +30-50 % CPU per call). Off.
    spin: bool = False


class Detector(Protocol):
    """Blocking, one image at a time; BGR uint8 in, detections at or above the configured score out.
    `region` limits the look to that part of the frame, scaled up to the model input; boxes are still
    normalised to the whole frame."""

    @property
    def model_name(self) -> str: ...

    @property
    def input_size(self) -> tuple[int, int] | None:
        """The model input's (width, height) in pixels; None: not told (a stand-in of a test's own)."""
        ...

    def detect(self, image_bgr: np.ndarray, region: Region | None = None) -> list[Det]: ...


UNSIZED_SIDE = 300  # the input side of a detector that does not tell its size


def input_side(detector: Detector) -> int:
    """The longer side of the detector's input (pixels): what a closer look is sized by. A detector that does
    not tell its size counts as UNSIZED_SIDE."""
    size = detector.input_size
    return max(size) if size is not None else UNSIZED_SIDE


def model_key(config: DetectorConfig) -> str:
    """The manifest key or path `config` names, with the INT8 variant swapped in when asked for."""
    if config.precision == "fp32":
        return config.model
    models = manifest()["models"]
    if config.model in models:
        if models[config.model].get("precision", "fp32").startswith("int8"):
            return config.model
        key = f"{config.model}_int8"
        if key not in models:
            raise ModelError(f"model {config.model!r} has no INT8 variant in models/manifest.json; "
                             "set precision = \"fp32\" or choose another model")
        return key
    return config.model  # a file path: its manifest entry says what precision it is


def region_pixels(image: np.ndarray, region: Region | None) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """The pixels to look at and the map from region-normalised to frame-normalised coordinates
    (x_frame = ox + x * sx)."""
    if region is None:
        return image, (0.0, 0.0, 1.0, 1.0)
    h, w = image.shape[:2]
    x1, y1, x2, y2 = region
    x1, y1 = min(max(x1, 0), w - 1), min(max(y1, 0), h - 1)
    x2, y2 = max(min(x2, w), x1 + 1), max(min(y2, h), y1 + 1)
    return image[y1:y2, x1:x2], (x1 / w, y1 / h, (x2 - x1) / w, (y2 - y1) / h)


@dataclass(slots=True)
class _SSDLayout:
    """One thread's SSD input for images of one shape: the tensor, the resize target inside it, the box map."""

    shape: tuple[int, ...]
    tensor: np.ndarray  # [1, H, W, 3] uint8 RGB, grey padded
    resized: np.ndarray  # the image resized to its place, BGR
    target: np.ndarray  # the view of `tensor` it goes into
    box_map: tuple[float, float, float, float]  # (x offset, y offset, x gain, y gain), model -> image


@dataclass(slots=True)
class _YoloxLayout:
    """One thread's YOLOX input for images of one shape: the letterbox canvas and the scale. (The float tensor
    made from the canvas belongs to a model run, not to a thread: there are fewer runs at once than cameras.)"""

    shape: tuple[int, ...]
    hwc: np.ndarray  # the letterbox canvas, H x W x 3 uint8, pad value around the image
    target: np.ndarray  # the canvas's top-left view the image is resized into
    fit: tuple[int, int]  # the resized image's (width, height)
    ratio: float  # model pixels per image pixel


class _OnnxDetector:
    """What both detector families share: the manifest entry checked against `family`, the ONNX session,
    the input size and the score threshold."""

    family = ""
    kind = ""  # what the error says the model is not

    def __init__(self, config: DetectorConfig, model: ModelFile | None = None):
        self._model = model or resolve(model_key(config))
        entry = self._model.entry
        if entry.get("family") != self.family:
            raise ModelError(f"model {self._model.name!r} is a {entry.get('family')!r} model, not {self.kind} "
                             f"(family {self.family!r}); choose a detector from models/manifest.json")
        self._entry = entry
        self._min_score = config.min_score
        width, height = entry["input"]["size"]
        self.input_size = (int(width), int(height))
        self._input_name = entry["input"]["name"]
        self.session = open_session(self._model, config.threads, config.providers, config.spin)
        self.providers: list[str] = self.session.get_providers()
        # one detector serves every camera thread: where an image goes in the model input, the buffers it is
        # resized into and the map back to the image belong to the calling thread (a camera's frame size is
        # its own; shared, two sizes re-laid each other out between a resize and its box mapping)
        self._local = threading.local()
        # as many model runs at once as the cores hold (each runs on `threads` of them): more only time-slice,
        # and onnxruntime's memory arena grows to hold every run at once and keeps it (8 MB a camera thread)
        self._runs = threading.BoundedSemaphore(max(1, (os.cpu_count() or 1) // config.threads))

    @property
    def model_name(self) -> str:
        return self._model.name


class SSDLiteDetector(_OnnxDetector):
    """The TF Object Detection API SSD graph (manifest family `ssd_tfod`): uint8 NHWC RGB in, NMS done in
    the graph, outputs `[ymin, xmin, ymax, xmax]` boxes with scores sorted high to low."""

    family = "ssd_tfod"
    kind = "an SSD detector"

    def __init__(self, config: DetectorConfig, model: ModelFile | None = None):
        super().__init__(config, model)
        outputs = self._entry["outputs"]
        self._output_names = [outputs["count"], outputs["boxes"], outputs["scores"], outputs["classes"]]
        self._labels = {int(k): v for k, v in self._entry.get("labels", {}).items()}
        self._letterbox = config.fit == "letterbox"

    def _layout(self, shape: tuple[int, ...]) -> _SSDLayout:
        """Where an image of `shape` goes inside the model input, and how to map boxes back to the image: the
        calling thread's, kept while its images keep that shape."""
        layout: _SSDLayout | None = getattr(self._local, "layout", None)
        if layout is not None and layout.shape == shape:
            return layout
        in_w, in_h = self.input_size
        h, w = shape[:2]
        if self._letterbox:
            scale = min(in_w / w, in_h / h)
            fit_w, fit_h = max(1, round(w * scale)), max(1, round(h * scale))
        else:
            fit_w, fit_h = in_w, in_h
        x0, y0 = (in_w - fit_w) // 2, (in_h - fit_h) // 2
        # the NHWC RGB tensor, grey padded (0 after the graph's [-1, 1] scaling), reused by this thread
        tensor = layout.tensor if layout is not None else np.empty((1, in_h, in_w, 3), np.uint8)
        tensor[:] = 127
        # normalised model-input coordinate -> normalised image coordinate: (v - offset) * gain
        layout = self._local.layout = _SSDLayout(shape, tensor, np.empty((fit_h, fit_w, 3), np.uint8),
                                                 tensor[0, y0:y0 + fit_h, x0:x0 + fit_w],
                                                 (x0 / in_w, y0 / in_h, in_w / fit_w, in_h / fit_h))
        return layout

    def detect(self, image_bgr: np.ndarray, region: Region | None = None) -> list[Det]:
        image, (rx, ry, rw, rh) = region_pixels(image_bgr, region)
        layout = self._layout(image.shape)
        resized, target = layout.resized, layout.target
        cv2.resize(image, (resized.shape[1], resized.shape[0]), dst=resized, interpolation=cv2.INTER_LINEAR)
        rgb = cv2.cvtColor(resized, cv2.COLOR_BGR2RGB, dst=target)
        if rgb is not target:  # OpenCV builds that cannot write into a strided view return a copy
            target[...] = rgb
        with self._runs:
            count, boxes, scores, classes = self.session.run(self._output_names, {self._input_name: layout.tensor})
        n = int(count[0])
        scores_0 = scores[0, :n]
        keep = int(np.count_nonzero(scores_0 >= self._min_score))  # scores are sorted descending
        if keep == 0:
            return []
        ox, oy, gx, gy = layout.box_map
        found: list[Det] = []
        for i in range(keep):
            ymin, xmin, ymax, xmax = boxes[0, i].tolist()
            xmin = min(max((xmin - ox) * gx, 0.0), 1.0)
            xmax = min(max((xmax - ox) * gx, 0.0), 1.0)
            ymin = min(max((ymin - oy) * gy, 0.0), 1.0)
            ymax = min(max((ymax - oy) * gy, 0.0), 1.0)
            if xmax <= xmin or ymax <= ymin:
                continue
            class_id = int(classes[0, i])
            label = self._labels.get(class_id, f"class_{class_id}")
            box = (rx + xmin * rw, ry + ymin * rh, rx + xmax * rw, ry + ymax * rh)
            found.append(Det(label, float(scores_0[i]), box))
        return found


class YoloxDetector(_OnnxDetector):
    """YOLOX exported with `decode_in_inference=False` (manifest family `yolox`): float32 NCHW BGR 0..255
    letterboxed at the top-left on a 114 canvas; output `[1, N, 5 + classes]` grid rows, decoded here
    (cx = (tx + gx)·s, w = exp(tw)·s; score = obj · cls) with class-aware NMS."""

    family = "yolox"
    kind = "a YOLOX detector"

    def __init__(self, config: DetectorConfig, model: ModelFile | None = None):
        super().__init__(config, model)
        entry = self._entry
        self._nms_iou = config.nms_iou
        self._output_name = entry["outputs"]["raw"]
        self._labels = self._model.labels
        self._pad = int(entry.get("pad_value", 114))
        width, height = self.input_size
        self._cells, self._strides = yolox.grid(width, height, entry.get("strides", (8, 16, 32)))
        self._tensors: list[np.ndarray] = []  # free float input tensors, one per model run at once at most

    def _layout(self, shape: tuple[int, ...]) -> _YoloxLayout:
        """The calling thread's letterbox for images of `shape` (top-left, on the pad value) and its buffers."""
        layout: _YoloxLayout | None = getattr(self._local, "layout", None)
        if layout is not None and layout.shape == shape:
            return layout
        in_w, in_h = self.input_size
        h, w = shape[:2]
        ratio = min(in_w / w, in_h / h)
        fit_w, fit_h = max(1, int(w * ratio)), max(1, int(h * ratio))
        hwc = layout.hwc if layout is not None else np.empty((in_h, in_w, 3), np.uint8)
        hwc[:] = self._pad
        layout = self._local.layout = _YoloxLayout(shape, hwc, hwc[:fit_h, :fit_w], (fit_w, fit_h), ratio)
        return layout

    def detect(self, image_bgr: np.ndarray, region: Region | None = None) -> list[Det]:
        image, (rx, ry, rw, rh) = region_pixels(image_bgr, region)
        layout = self._layout(image.shape)
        target = layout.target
        resized = cv2.resize(image, layout.fit, dst=target, interpolation=cv2.INTER_LINEAR)
        if resized is not target:
            target[...] = resized
        with self._runs:
            # one float tensor per run in flight (2 MB at 416), reused; list pop/append are atomic
            tensor = self._tensors.pop() if self._tensors else np.empty((1, 3, *layout.hwc.shape[:2]), np.float32)
            try:
                tensor[0] = layout.hwc.transpose(2, 0, 1)  # HWC uint8 -> CHW float32
                (raw,) = self.session.run([self._output_name], {self._input_name: tensor})
            finally:
                self._tensors.append(tensor)
        h, w = image.shape[:2]
        found: list[Det] = []
        for c, score, (x1, y1, x2, y2) in yolox.decode(raw[0], self._cells, self._strides, (w, h), layout.ratio,
                                                       self._min_score, self._nms_iou):
            label = self._labels[c] if c < len(self._labels) else f"class_{c}"
            found.append(Det(label, score, (rx + x1 * rw, ry + y1 * rh, rx + x2 * rw, ry + y2 * rh)))
        return found


Backend = Callable[[DetectorConfig, ModelFile], Detector]
BACKENDS: dict[str, Backend] = {SSDLiteDetector.family: SSDLiteDetector, YoloxDetector.family: YoloxDetector}


def build_detector(config: DetectorConfig) -> Detector:
    """The detector back-end the manifest entry of `config.model` calls for; ModelError when the file is
    missing, damaged (sha256) or of a family no back-end here runs."""
    model = resolve(model_key(config))
    family = model.entry.get("family")
    backend = BACKENDS.get(family) if model.entry.get("task") == "detect" else None
    if backend is None:
        detectors = sorted(k for k, e in manifest()["models"].items() if e.get("family") in BACKENDS)
        raise ModelError(f"model {model.name!r} (family {family!r}, task {model.entry.get('task')!r}) is not a "
                         f"detector this device can run; use one of: {', '.join(detectors)}")
    return backend(config, model)
