"""Are the objects the facts give a person real, and theirs? Person crops of the shipped clips, labelled by eye,
as sent, mirrored and darkened; an object is a fact when the closer look is sure of it (SURE_OBJECT) and it
touches the person's box (cloud/analysis/translator.py `held`).

The labels (each crop looked at): nobody in the room clip or the walking GIF carries anything (hands empty,
no bag); the room's visitors stand at a round table, so a "dining table" touching them is real (allowed, not
required). The parking-lot GIF's cyclist (top right, from 2.2 s) rides a bicycle: required. "Beside": each
room visitor with the cyclist's crop put next to them (the same height): the bicycle is real but touches
another person, so it is no fact about the visitor. Everything else the detector names is false: on these
crops it finds a "teddy bear" in a grey cardigan, a "tie" in a waistcoat's panel, a "skateboard" in the
table's foot, an "umbrella" in its top.

    python bench/objects.py [--quick]

Reported side by side: `before` (every object from 0.30, anywhere in the crop: the rule until issue 36) and
`after` (the shipped rule), with a sweep of the score floor under the touching rule. Precision: reported facts
that are real (required or allowed) over all reported; recall: required objects reported over all required.
Last stdout line: one JSON object: `object_fact_precision`, `object_fact_recall` (after), `before` {precision,
recall}, `sweep` {floor: {precision, recall}}, `crops`, `required`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from edgetriage.cloud.analysis.translator import FAINT, SURE_OBJECT, Translator, touches  # noqa: E402
from verdict_crops import PARKING, ROOM, WALKING, _frames, build  # noqa: E402

OLD_FLOOR = 0.30
SWEEP = (0.3, 0.4, 0.5, 0.6, 0.7)
CYCLIST_FROM_S = 2.2  # the cyclist enters at the top right (labelled by eye)
EMPTY_ROOM_S = 2.0  # the room before the first visitor (labels.json): the background a visitor is cut from
CAR_FRAMES = (30, 33, 36, 39)  # the parking lot's car, close and whole (found at >= 0.7 on the whole frame)


def cut_out(frame: np.ndarray, empty: np.ndarray, box: tuple[float, float, float, float]):
    """(the visitor's crop, a mask of the visitor): the pixels that differ from the empty room."""
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = int(box[0] * w), int(box[1] * h), int(box[2] * w), int(box[3] * h)
    crop = frame[y1:y2, x1:x2]
    diff = cv2.absdiff(crop, empty[y1:y2, x1:x2]).max(axis=2)
    mask = cv2.morphologyEx((diff > 30).astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8))
    count, parts, stats, _ = cv2.connectedComponentsWithStats(mask)
    if count < 2:
        return crop, mask.astype(bool)
    return crop, parts == 1 + int(stats[1:, cv2.CC_STAT_AREA].argmax())


def car_scenes(look) -> list[np.ndarray]:
    """The parking lot's car, cut with a margin of the lot around it."""
    frames, _ = _frames(PARKING)
    out = []
    for index in CAR_FRAMES:
        frame = frames[index]
        h, w = frame.shape[:2]
        cars = [b for name, score, b in look(frame) if name == "car" and score >= 0.7]
        if cars:
            x1, y1, x2, y2 = cars[0]
            out.append(frame[max(0, int(y1 * h) - 18):int(y2 * h) + 6, max(0, int(x1 * w) - 6):int(x2 * w) + 6])
    return out


def at_the_car(person: np.ndarray, mask: np.ndarray, scene: np.ndarray, overlap: bool) -> np.ndarray:
    """The visitor cut out and stood in front of the car's right end (`overlap`), or a car's length beside it."""
    height = 300
    car = cv2.resize(scene, (round(scene.shape[1] * 0.6 * height / scene.shape[0]), round(0.6 * height)))
    person = cv2.resize(person, (round(person.shape[1] * height / person.shape[0]), height))
    mask = cv2.resize(mask.astype(np.uint8), (person.shape[1], height), interpolation=cv2.INTER_NEAREST) > 0
    left = int(0.6 * car.shape[1]) if overlap else car.shape[1] + car.shape[1] // 2
    width = max(left + person.shape[1], car.shape[1])
    canvas = cv2.copyMakeBorder(car, height - car.shape[0], 0, 0, width - car.shape[1], cv2.BORDER_REPLICATE)
    spot = canvas[:, left:left + person.shape[1]]
    spot[mask] = person[mask]
    return canvas


def cyclist_crops(look) -> list[np.ndarray]:
    """The cyclist as the device would send them: a person box found on the whole frame at the top right,
    widened to take in what is under them (a rider's crop holds the bicycle)."""
    frames, fps = _frames(PARKING)
    out = []
    for index in range(int(CYCLIST_FROM_S * fps), len(frames)):
        frame = frames[index]
        h, w = frame.shape[:2]
        for name, score, (x1, y1, x2, y2) in look(frame):
            if name == "person" and score >= 0.25 and x1 > 0.6:
                dx, dy = 0.6 * (x2 - x1) * w, 0.3 * (y2 - y1) * h
                out.append(frame[max(0, int(y1 * h - dy)):int(y2 * h + dy), max(0, int(x1 * w - dx)):int(x2 * w + dx)])
                break
    return out


def labelled(look) -> list[tuple[str, np.ndarray, set[str], set[str]]]:
    """(what, image, required, allowed) for each crop, as sent."""
    out = []
    cyclists = cyclist_crops(look)
    for crop in build(look):
        if crop.expected != "alert" or crop.clip == PARKING:
            continue
        image = cv2.imdecode(np.frombuffer(crop.jpeg, np.uint8), cv2.IMREAD_COLOR)
        allowed = set() if crop.clip == WALKING else {"dining table"}
        out.append((crop.what, image, set(), allowed))
        if crop.what.startswith("visitor") and cyclists:
            rider = cyclists[len(out) % len(cyclists)]
            h = image.shape[0]
            rider = cv2.resize(rider, (max(1, round(rider.shape[1] * h / rider.shape[0])), h))
            out.append((crop.what + " beside", np.hstack([image, rider]), set(), allowed))
    out += [("cyclist", image, {"bicycle"}, {"bicycle"}) for image in cyclists]
    frames, fps = _frames(ROOM)
    empty = frames[int(EMPTY_ROOM_S * fps)]
    scenes = car_scenes(look)
    visitors = [c for c in build(look) if c.what.startswith("visitor")]
    for number, crop in enumerate(visitors):
        person, mask = cut_out(frames[min(len(frames) - 1, int(crop.seconds * fps))], empty, crop.box)
        scene = scenes[number % len(scenes)]
        out.append((crop.what + " at a car", at_the_car(person, mask, scene, True), {"car"}, {"car"}))
        out.append((crop.what + " a car away", at_the_car(person, mask, scene, False), set(), set()))
    return out


def variants(image: np.ndarray):
    yield "sent", image
    yield "mirrored", np.ascontiguousarray(image[:, ::-1])
    yield "dark", cv2.convertScaleAbs(image, alpha=0.5)


def score(reported: list[tuple[set[str], set[str], set[str]]]) -> dict:
    """{precision, recall} over (reported, required, allowed) per crop."""
    said = sum(len(r) for r, _, _ in reported)
    real = sum(len(r & (req | allowed)) for r, req, allowed in reported)
    required = sum(len(req) for _, req, _ in reported)
    found = sum(len(r & req) for r, req, _ in reported)
    return {"precision": round(real / said, 3) if said else 1.0, "recall": round(found / required, 3) if required
            else 1.0, "reported": said}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="as sent only (no mirrored or darkened copies)")
    args = parser.parse_args()
    translator = Translator()
    before, sweep = [], {floor: [] for floor in SWEEP}
    false_lines = []
    crops = 0
    for what, image, required, allowed in labelled(translator.look):
        for variant, picture in variants(image):
            if args.quick and variant != "sent":
                continue
            crops += 1
            found = translator.look(picture)
            person, box, _ = translator.best_view(picture, "person", found)
            box = box if person >= FAINT else None
            others = [(n, s, b) for n, s, b in found if n != "person"]
            before.append(({n for n, s, _ in others if s >= OLD_FLOOR}, required, allowed))
            for floor in SWEEP:
                kept = {n for n, s, b in others if s >= floor and (box is None or touches(b, box))}
                sweep[floor].append((kept, required, allowed))
            for name, s, b in others:
                if s >= SURE_OBJECT and (box is None or touches(b, box)) and name not in required | allowed:
                    false_lines.append(f"{what} {variant}: {name} {s:.2f}")
    for line in false_lines:
        print("false fact (after):", line, file=sys.stderr)
    after = score(sweep[SURE_OBJECT])
    result = {"object_fact_precision": after["precision"], "object_fact_recall": after["recall"],
              "before": score(before), "sweep": {str(f): score(v) for f, v in sweep.items()}, "crops": crops,
              "required": sum(len(r) for _, r, _ in before), "floor": SURE_OBJECT}
    print(f"before (>= {OLD_FLOOR}, anywhere): precision {result['before']['precision']:.3f}, recall "
          f"{result['before']['recall']:.3f}; after (>= {SURE_OBJECT}, touching): precision "
          f"{after['precision']:.3f}, recall {after['recall']:.3f}; {crops} crops", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
