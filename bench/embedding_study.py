"""Which reuse key recognises the same person: the 64-bit DCT hash against the appearance embedding
(shared.embedding), measured on crops of the labelled visits of the shared clips, and the threshold chosen.

Crops: the YOLOX-nano person detection with the best score, three looks a second, inside each visit of
labels.json (0.5 s in from either end), cut with the device's margin and JPEG-encoded as the device sends
them. The two people walking side by side in face-demographics-walking.gif are told apart by position
(left, right: they do not cross). Besides each crop as cut, four variants of it (same person, other
conditions): mirrored, darkened to 55 %, a third of the size, and cut 10 % lower and 12 % further right.

Pairs of crops, in classes:
    same, <=1 s apart       one visit, crops as cut, 1 s apart at most (a pass replayed a few frames later)
    same, any time          one visit, crops as cut, any two moments (turned, closer, standing)
    same, variants          one visit, at least one of the two a variant
    walking towards         the two people of the GIF walking towards the camera, each with themselves
    different people        two different visits (same clip: same room, same light; the hardest), or clips

For each key and threshold: the share of pairs of each class that match. A false match (different people)
is worse than a model call, so the threshold is the one where no pair of different people matches, with a
margin. The representations the embedding could use (`representations`) are compared the same way: true
matches at the highest threshold with no false match.

    python bench/embedding_study.py [--quick] [--media DIR]

The last stdout line is one JSON object; the tables go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from edgetriage.edge.vision.capture import FrameSource
from edgetriage.edge.vision.classify import ClassifierConfig, CropClassifier
from edgetriage.edge.vision.crops import crop_box, encode_jpeg, phash_dct64
from edgetriage.edge.vision.detect import DetectorConfig, build_detector
from edgetriage.shared.embedding import embedding_of
from edgetriage.shared.protocol import CROP_MARGIN, DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY
from recall import load_labels

DEFAULT_MEDIA = Path(__file__).resolve().parents[1] / "models" / "media"
THRESHOLDS = (0.9, 0.95, 0.96, 0.965, 0.97, 0.975, 0.98)
HASH_THRESHOLDS = (4, 6, 8, 10, 12)
VARIANTS = ("as cut", "mirrored", "darkened", "a third", "shifted")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def variants(image: np.ndarray) -> list[np.ndarray]:
    h, w = image.shape[:2]
    return [image, image[:, ::-1], (image.astype(np.float32) * 0.55).astype(np.uint8),
            cv2.resize(image, (max(8, w // 3), max(8, h // 3)), interpolation=cv2.INTER_AREA),
            image[h // 10:, w // 8:]]


def visit_crops(media: Path, labels: dict[str, list[tuple[float, float]]], looks_per_s: float):
    """(clip, visit, t, BGR crop as the device's JPEG decodes) for every look inside a labelled visit."""
    detector = build_detector(DetectorConfig(model="yolox_nano"))
    for name, visits in labels.items():
        if not visits or not (media / name).is_file():
            continue
        side_by_side = len(visits) > 1 and all(v == visits[0] for v in visits)
        source = FrameSource(str(media / name))
        step = max(1, round(source.fps / looks_per_s))
        for frame in source:
            if frame.index % step:
                continue
            t = frame.index / source.fps
            people = sorted((d for d in detector.detect(frame.image) if d.label == "person" and d.score >= 0.5),
                            key=lambda d: -d.score)
            if side_by_side:
                found = sorted(people[:2], key=lambda d: d.box[0] + d.box[2]) if len(people) >= 2 else []
                chosen = list(enumerate(found))
            else:
                visit = next((i for i, (a, b) in enumerate(visits) if a + 0.5 <= t <= b - 0.5), None)
                chosen = [(visit, people[0])] if visit is not None and people else []
            for visit, det in chosen:
                jpeg, _ = encode_jpeg(crop_box(frame.image, det.box, CROP_MARGIN))
                yield name, visit, t, cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)


def _cosines(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return unit @ unit.T


def _int8(vectors: np.ndarray) -> np.ndarray:
    return np.round(vectors / np.abs(vectors).max(axis=1, keepdims=True) * 127).astype(np.float32)


Row = tuple[str, int, float, int]  # clip, visit, t, variant
Pairs = tuple[np.ndarray, np.ndarray]  # the upper triangle's indices: every pair once


def study_crops(media: Path, quick: bool) -> tuple[list[Row], list[np.ndarray]]:
    """A Row and the BGR image the device's JPEG decodes to, for every crop and variant."""
    rows: list[Row] = []
    images: list[np.ndarray] = []
    for clip, visit, t, crop in visit_crops(media, load_labels(media), 1.0 if quick else 3.0):
        for k, image in enumerate(variants(crop)):
            jpeg, _ = encode_jpeg(np.ascontiguousarray(image))
            images.append(cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR))
            rows.append((clip, visit, t, k))
    say(f"{len(rows) // len(VARIANTS)} crops, {len(rows)} with their variants")
    return rows, images


def pair_classes(rows: list[Row]) -> tuple[Pairs, dict[str, np.ndarray]]:
    """The upper-triangle pair indices and, per class of pairs (module docstring), a mask over them."""
    n = len(rows)
    clip = np.array([r[0] for r in rows])
    visit = np.array([r[1] for r in rows])
    t = np.array([r[2] for r in rows])
    variant = np.array([r[3] for r in rows])
    upper = np.triu_indices(n, 1)
    same = ((clip[:, None] == clip[None]) & (visit[:, None] == visit[None]))[upper]
    as_cut = ((variant[:, None] == 0) & (variant[None] == 0))[upper]
    apart = np.abs(t[:, None] - t[None])[upper]
    towards = (clip == "face-demographics-walking.gif")[upper[0]]
    return upper, {"same, <=1 s apart": same & as_cut & (apart <= 1.0), "same, any time": same & as_cut,
                   "same, variants": same & ~as_cut, "walking towards": same & as_cut & towards,
                   "different people": ~same}


def measure(media: Path, quick: bool) -> dict[str, Any]:
    classifier = CropClassifier(ClassifierConfig())  # the device's default: INT8 MobileNetV2
    rows, images = study_crops(media, quick)
    features, hashes = [], []
    for seen in images:
        _, feats = classifier.session.run(classifier._outputs, {classifier._input_name: classifier._tensor(seen)})
        features.append(feats[0])
        hashes.append(int(phash_dct64(seen), 16))
    n = len(rows)
    upper, classes = pair_classes(rows)
    feats = np.stack(features).astype(np.float32)
    embeddings = np.stack([np.frombuffer(embedding_of(f), np.int8) for f in feats]).astype(np.float32)
    similarity = np.round(_cosines(embeddings)[upper], 4)  # as shared.embedding.similarity rounds
    bits = np.unpackbits(np.array(hashes, dtype=">u8").view(np.uint8).reshape(n, 8), axis=1).astype(np.int16)
    distance = (64 - (bits @ bits.T + (1 - bits) @ (1 - bits).T))[upper]

    def rates(matched: np.ndarray) -> dict[str, float]:
        return {name: round(float(matched[m].mean()), 7) if m.any() else None for name, m in classes.items()}

    table = {"embedding": {f"{x}": rates(similarity >= x) for x in THRESHOLDS},
             "hash": {f"{x}": rates(distance <= x) for x in HASH_THRESHOLDS},
             f"hash<={DEFAULT_MAX_DISTANCE} or embedding": {
                 f"{x}": rates((distance <= DEFAULT_MAX_DISTANCE) | (similarity >= x)) for x in THRESHOLDS}}
    different = classes["different people"]
    worst = float(similarity[different].max())
    return {"crops": n // len(VARIANTS), "pairs": {k: int(m.sum()) for k, m in classes.items()},
            "table": table, "different_people_max_similarity": worst,
            "different_people_min_distance": int(distance[different].min()),
            "chosen_min_similarity": DEFAULT_MIN_SIMILARITY, "chosen_margin": round(DEFAULT_MIN_SIMILARITY - worst, 4),
            "representations": compare_representations(feats, classes["same, any time"], different, upper)}


def compare_representations(feats: np.ndarray, same: np.ndarray, different: np.ndarray,
                            upper: tuple[np.ndarray, np.ndarray]) -> dict[str, dict[str, float]]:
    """True matches (same person, any time, as cut) at the highest threshold no pair of different people
    reaches, for the ways 1280 pooled features could become a few hundred bytes."""
    n = len(feats)
    signs = np.sign(np.random.RandomState(0).randn(1280, 256)).astype(np.float32)
    ways = {"1280 float (8 kB)": feats, "1280 int8 (1280 B)": _int8(feats),
            "groups of 5 -> 256 int8 (256 B, shipped)": _int8(feats.reshape(n, 256, 5).mean(2)),
            "groups of 8 -> 160 int8 (160 B)": _int8(feats.reshape(n, 160, 8).mean(2)),
            "random +-1 projection -> 256 int8": _int8(feats @ signs),
            "centred (mean removed), 1280 float": feats - feats.mean(0)}
    out = {}
    for name, vectors in ways.items():
        sims = _cosines(vectors)[upper]
        worst = float(sims[different].max())
        out[name] = {"true_match_at_no_false_match": round(float((sims[same] > worst).mean()), 4),
                     "different_people_max": round(worst, 4)}
    return out


def print_tables(result: dict[str, Any]) -> None:
    names = list(result["pairs"])
    say("pairs: " + ", ".join(f"{k} {v}" for k, v in result["pairs"].items()))
    for key, rows in result["table"].items():
        say(f"\n{key:>28} | " + " | ".join(names))
        for threshold, rates in rows.items():
            say(f"{threshold:>28} | " + " | ".join(f"{rates[k]:.4g}" if rates[k] is not None else "-" for k in names))
    say("\nrepresentation -> true matches at no false match (different people's highest similarity)")
    for name, figures in result["representations"].items():
        say(f"  {name:42} {figures['true_match_at_no_false_match']:.3f} ({figures['different_people_max']:.3f})")
    say(f"\ndifferent people: highest similarity {result['different_people_max_similarity']:.4f}, nearest hash "
        f"{result['different_people_min_distance']} bits; min_similarity {result['chosen_min_similarity']} "
        f"leaves a margin of {result['chosen_margin']:.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one look a second instead of three")
    parser.add_argument("--media", type=Path, default=DEFAULT_MEDIA, help="folder with the shared clips")
    args = parser.parse_args(argv)
    result = measure(args.media, args.quick)
    print_tables(result)
    print(json.dumps(result), flush=True)
    return 0 if result["chosen_margin"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
