"""Which input and pooling would make the appearance embedding recognise the same person better without
letting different people through: the follow-up to bench/embedding_study.py (issue 15, P6's misses).

Same crops, variants and classes of pairs as embedding_study. Every way is reduced as the device does
(groups of 5 channels -> int8, cosine rounded to 4 places) and judged at the threshold a reuse rule would
need on these crops: the highest similarity of any pair of different people plus MARGIN. The figures are
the shares of same-person pairs of each class at or above it (higher is better, at no false match).

    input (the same pooled features, one more run of the classifier per way):
      centre 224 (shipped)   short side to 256, the central 224x224 (a tall crop loses head and feet)
      squash                 the whole crop resized to 224x224 (the box's aspect jitter is kept)
      letterbox              padded to a square with the ImageNet mean colour, then 224x224
      pad to 1:2, squash     padded to width:height 1:2 (a standing person), then 224x224
      + flip                 each, its features averaged with the mirrored crop's
    colour gate              the shipped cosine, and the mean CIELAB colour of the top, middle and bottom
                             third of the crop's central half within D (both must hold)
    pooling (the 7x7x1280 map before the model's average pool; needs the `onnx` package, as
    models/provenance/scripts do, to add the map as an output to a copy of the model in a temp dir):
      max, GeM p=3, the central 3 of 7 columns (less background), three horizontal stripes (head,
      torso, legs) concatenated: 768 values

    python bench/embedding_inputs.py [--quick] [--media DIR]

The last stdout line is one JSON object; the table goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from edgetriage.edge.vision.classify import ClassifierConfig, CropClassifier
from embedding_study import DEFAULT_MEDIA, _cosines, _int8, pair_classes, say, study_crops

MARGIN = 0.005
COLOUR_GATES = (40.0, 20.0, 10.0)


def reduce(features: np.ndarray) -> np.ndarray:
    """As shared.embedding: groups of 5 consecutive channels averaged, scaled to int8."""
    return _int8(features.reshape(len(features), -1, 5).mean(2))


def judged(similarity: np.ndarray, classes: dict[str, np.ndarray],
           gate: np.ndarray | None = None) -> dict[str, Any]:
    """The threshold no different-people pair reaches (plus MARGIN) and the same-person shares above it."""
    allowed = np.ones_like(similarity, bool) if gate is None else gate
    different = classes["different people"] & allowed
    worst = float(similarity[different].max()) if different.any() else 0.0
    threshold = round(worst + MARGIN, 4)
    matched = allowed & (similarity >= threshold)
    return {"different_people_max": round(worst, 4), "threshold": threshold,
            **{name: round(float(matched[mask].mean()), 4) for name, mask in classes.items()
               if name != "different people"}}


class Inputs:
    """The classifier's pooled features for a crop prepared in other ways than its own centre crop."""

    def __init__(self, classifier: CropClassifier) -> None:
        self.classifier = classifier
        self.mean_bgr = (np.array([0.406, 0.456, 0.485]) * 255).astype(np.uint8)  # the ImageNet mean, BGR

    def features(self, tensor: np.ndarray) -> np.ndarray:
        c = self.classifier
        (features,) = c.session.run(c._outputs[1:], {c._input_name: tensor})
        return features[0]

    def squashed(self, bgr: np.ndarray) -> np.ndarray:
        c = self.classifier
        rgb = cv2.cvtColor(cv2.resize(bgr, c._size, interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
        normalised = rgb.astype(np.float32) * c._gain + c._bias
        return np.ascontiguousarray(normalised.transpose(2, 0, 1)[np.newaxis])

    def padded(self, bgr: np.ndarray, aspect: float) -> np.ndarray:
        """The crop centred on a canvas of width:height `aspect` filled with the ImageNet mean."""
        h, w = bgr.shape[:2]
        width, height = (round(h * aspect), h) if w < h * aspect else (w, round(w / aspect))
        canvas = np.empty((height, width, 3), np.uint8)
        canvas[:] = self.mean_bgr
        top, left = (height - h) // 2, (width - w) // 2
        canvas[top:top + h, left:left + w] = bgr
        return canvas

    def ways(self) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
        return {"centre 224 (shipped)": self.classifier._input.tensor, "squash": self.squashed,
                "letterbox": lambda bgr: self.squashed(self.padded(bgr, 1.0)),
                "pad to 1:2, squash": lambda bgr: self.squashed(self.padded(bgr, 0.5))}


def colour(bgr: np.ndarray) -> np.ndarray:
    """Mean CIELAB of the top, middle and bottom third of the crop's central half (9 values)."""
    h, w = bgr.shape[:2]
    centre = cv2.cvtColor(bgr[:, w // 4:max(w // 4 + 1, 3 * w // 4)], cv2.COLOR_BGR2LAB).astype(np.float32)
    return np.concatenate([part.reshape(-1, 3).mean(0) for part in np.array_split(centre, 3, axis=0)])


def map_session(classifier: CropClassifier, workdir: Path) -> Any | None:
    """An onnxruntime session on a copy of the classifier whose extra output `map` is the input of its global
    average pool (N x 1280 x 7 x 7); None without the `onnx` package."""
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        say("pooling: no `onnx` package, left out")
        return None
    model = onnx.load(str(classifier._model.path))
    pool = next(n for n in model.graph.node if n.op_type == "GlobalAveragePool")
    model.graph.node.append(helper.make_node("Identity", [pool.input[0]], ["map"], name="/map/Identity"))
    model.graph.output.append(helper.make_tensor_value_info("map", TensorProto.FLOAT, ["N", 1280, 7, 7]))
    path = workdir / "with_map.onnx"
    onnx.save(model, str(path))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


POOLS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "pool: average (shipped)": lambda m: m.mean((1, 2)),
    "pool: max": lambda m: m.max((1, 2)),
    "pool: GeM p=3": lambda m: np.cbrt((np.maximum(m, 0.0) ** 3).mean((1, 2))),
    "pool: central 3 of 7 columns": lambda m: m[:, :, 2:5].mean((1, 2)),
    "pool: 3 stripes (768 values)": lambda m: np.concatenate([m[:, rows].mean((1, 2)) for rows in
                                                              (slice(0, 2), slice(2, 5), slice(5, 7))]),
}


def measure(media: Path, quick: bool) -> dict[str, Any]:
    classifier = CropClassifier(ClassifierConfig())  # the device's default: INT8 MobileNetV2
    rows, images = study_crops(media, quick)
    upper, classes = pair_classes(rows)
    inputs = Inputs(classifier)
    out: dict[str, Any] = {}
    similarities: dict[str, np.ndarray] = {}
    for name, prepare in inputs.ways().items():
        plain = np.stack([inputs.features(prepare(image)) for image in images])
        mirrored = np.stack([inputs.features(prepare(np.ascontiguousarray(im[:, ::-1]))) for im in images])
        for label, features in ((name, plain), (f"{name} + flip", (plain + mirrored) / 2)):
            similarities[label] = np.round(_cosines(reduce(features))[upper], 4)
            out[label] = judged(similarities[label], classes)
            say(f"{label}: {out[label]}")
    shipped = similarities["centre 224 (shipped)"]
    colours = np.stack([colour(image) for image in images])
    apart = np.sqrt(((colours[:, None] - colours[None]) ** 2).sum(-1))[upper]
    for gate in COLOUR_GATES:
        out[f"colour gate: Lab distance <= {gate:g}"] = judged(shipped, classes, apart <= gate)
    with tempfile.TemporaryDirectory(prefix="edgetriage-embedding-inputs-") as tmp:
        session = map_session(classifier, Path(tmp))
        if session is not None:
            maps = [session.run(["map"], {classifier._input_name: classifier._input.tensor(i)})[0][0] for i in images]
            for name, pool in POOLS.items():
                pooled = reduce(np.stack([pool(m) for m in maps]))
                out[name] = judged(np.round(_cosines(pooled)[upper], 4), classes)
    return {"crops": len(rows), "margin": MARGIN, "ways": out}


def print_table(result: dict[str, Any]) -> None:
    names = [k for k in next(iter(result["ways"].values())) if k not in ("different_people_max", "threshold")]
    say(f"\n{'way':>38} | different people's max | threshold | " + " | ".join(names))
    for way, figures in result["ways"].items():
        say(f"{way:>38} | {figures['different_people_max']:.4f} | {figures['threshold']:.4f} | "
            + " | ".join(f"{figures[k]:.3f}" for k in names))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one look a second instead of three")
    parser.add_argument("--media", type=Path, default=DEFAULT_MEDIA, help="folder with the shared clips")
    args = parser.parse_args(argv)
    result = measure(args.media, args.quick)
    print_table(result)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
