"""What the track gallery (edge/triage/gallery.py) adds away from the P6 replays: a verdict known by one crop
against one known by the track's first looks, on crops of the labelled visits that share no moment with those
keys.

P6 replays each clip three times, a few frames apart, so a later pass's crop can be the very frame an earlier
pass looked at; a real second visit never repeats a frame. Here the keys are a visit's crop at some moment
(the anchor) and, for the gallery, the visit's next looks after it (every_s apart, up to max_looks: the
sampler's rule), and the queries are the same visit's crops at least `--gap` seconds from every key: the same
person at another moment of the walk. Against different people, each query is every crop of every other
visit. A query matches when any key reaches it by shared.reuse.match: the anchor's hash within 8 bits, a
further key's within 4 (shared.reuse.further_key), or cosine >= 0.97.

Crops: bench/embedding_study.py's (the detector's best person box, three looks a second inside each labelled
visit, cut and JPEG-encoded as the device sends them).

Cost (`look_vs_detect`): what the agent spends on one look (JPEG, embedding, hash) against one call of the
default detector on a whole frame, timed alternately in one run on the looks the pipeline samples from the
walking GIF.

    python bench/gallery_study.py [--quick] [--gap 1.0] [--media DIR]

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from edgetriage.edge.vision.capture import FrameSource
from edgetriage.edge.vision.classify import ClassifierConfig, CropClassifier
from edgetriage.edge.vision.closer import build_stages
from edgetriage.edge.vision.crops import encode_jpeg, phash_dct64
from edgetriage.edge.vision.detect import build_detector
from edgetriage.edge.vision.events import VisionConfig
from edgetriage.edge.vision.pipeline import VisionPipeline
from edgetriage.edge.vision.samples import GalleryConfig
from edgetriage.shared.reuse import (
    DEFAULT_MAX_DISTANCE,
    DEFAULT_MIN_SIMILARITY,
    Candidate,
    further_key,
    match,
)
from embedding_study import DEFAULT_MEDIA, say, visit_crops
from recall import load_labels

Crop = tuple[str, int, float, Candidate]  # clip, visit, t, the crop as a reuse key


def crops(media: Path, quick: bool) -> list[Crop]:
    classifier = CropClassifier(ClassifierConfig())  # the device's default: INT8 MobileNetV2
    out = []
    for clip, visit, t, image in visit_crops(media, load_labels(media), 1.0 if quick else 3.0):
        key = Candidate("", phash_dct64(image), DEFAULT_MAX_DISTANCE, 0, 3600, classifier.classify(image).embedding,
                        DEFAULT_MIN_SIMILARITY)
        out.append((clip, visit, t, key))
    say(f"{len(out)} crops")
    return out


def gallery_of(visit: list[Crop], i: int, config: GalleryConfig) -> list[Crop]:
    """The anchor and the looks the sampler would take after it: every_s apart, max_looks in all, within the
    time the pipeline takes that many looks at a walking person (one every moving_interval_s at most)."""
    span = (config.max_looks - 1) * max(config.every_s, VisionConfig().moving_interval_s) + 1e-6
    keys = [visit[i]]
    for crop in visit[i + 1:]:
        if len(keys) >= max(1, config.max_looks) or crop[2] - visit[i][2] > span:
            break
        if crop[2] - keys[-1][2] >= config.every_s - 1e-6:
            keys.append(crop)
    return keys


def reached(keys: list[Crop], query: Crop) -> bool:
    """Does the anchor's key or a further key (shared.reuse.further_key, as the device files them) reach it?"""
    candidates = [keys[0][3]] + [further_key(keys[0][3], k[3].phash, k[3].embedding) for k in keys[1:]]
    return any(match(c, query[3].phash, query[3].embedding) is not None for c in candidates)


def measure(all_crops: list[Crop], gap: float, config: GalleryConfig) -> dict[str, Any]:
    visits: dict[tuple[str, int], list[Crop]] = {}
    for crop in all_crops:
        visits.setdefault((crop[0], crop[1]), []).append(crop)
    counts = {"same_pairs": 0, "same_one_key": 0, "same_gallery": 0,
              "different_pairs": 0, "different_one_key": 0, "different_gallery": 0}
    for name, visit in visits.items():
        visit.sort(key=lambda c: c[2])
        for i in range(len(visit)):
            gallery = gallery_of(visit, i, config)
            first, last = gallery[0][2], gallery[-1][2]
            for query in visit:
                if first - gap < query[2] < last + gap:
                    continue  # a moment the keys saw, or close to it
                counts["same_pairs"] += 1
                counts["same_one_key"] += reached(gallery[:1], query)
                counts["same_gallery"] += reached(gallery, query)
            for other, crops_of_other in visits.items():
                if other == name:
                    continue
                for query in crops_of_other:
                    counts["different_pairs"] += 1
                    counts["different_one_key"] += reached(gallery[:1], query)
                    counts["different_gallery"] += reached(gallery, query)
    rate = {
        f"{kind}_{keys}_rate": round(counts[f"{kind}_{keys}"] / counts[f"{kind}_pairs"], 6)
        if counts[f"{kind}_pairs"]
        else None
        for kind in ("same", "different")
        for keys in ("one_key", "gallery")
    }
    return {"gap_s": gap, "max_looks": config.max_looks, "every_s": config.every_s, **counts, **rate}


def look_vs_detect(media: Path, rounds: int = 3) -> dict[str, float]:
    """Milliseconds per look filed and per detector call, measured alternately, and their ratio."""
    config = VisionConfig()
    detector, stages = build_detector(config.detector), build_stages(config)
    pipeline = VisionPipeline("cam0", config, detector, stages=stages)
    looks, images = [], []
    for frame in FrameSource(str(media / "face-demographics-walking.gif")):
        images.append(frame.image)
        looks += pipeline.process(frame).looks
    looks += pipeline.finish().looks
    look_s = detect_s = 0.0
    for _ in range(rounds):
        for look, image in zip(looks, images, strict=False):
            t0 = time.perf_counter()
            stages.classifier.embed_jpeg(encode_jpeg(look.crop, config.crop_max_side)[0])
            phash_dct64(look.crop)
            t1 = time.perf_counter()
            detector.detect(image)
            look_s, detect_s = look_s + t1 - t0, detect_s + time.perf_counter() - t1
    return {
        "looks": len(looks),
        "look_ms": round(look_s * 1000 / (rounds * len(looks)), 1),
        "detect_ms": round(detect_s * 1000 / (rounds * len(looks)), 1),
        "look_over_detect": round(look_s / detect_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one look a second instead of three")
    parser.add_argument("--gap", type=float, default=1.0, help="seconds between a query and every key")
    parser.add_argument("--media", type=Path, default=DEFAULT_MEDIA, help="folder with the shared clips")
    args = parser.parse_args(argv)
    result = measure(crops(args.media, args.quick), args.gap, GalleryConfig())
    result["cost"] = look_vs_detect(args.media)
    say(f"same person, another moment: one key {result['same_one_key_rate']}, gallery "
        f"{result['same_gallery_rate']} of {result['same_pairs']} pairs; different people: one key "
        f"{result['different_one_key']}, gallery {result['different_gallery']} of {result['different_pairs']}")
    say(f"one look filed: {result['cost']['look_ms']} ms, one detector call {result['cost']['detect_ms']} ms")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
