"""Is hi-vis measured as people wear it? A seeded set built from the shipped clips' people (bench/verdict_crops.py:
the room's six visitors at five moments each), each dressed anew and lit three ways:

- garments, painted on the person's pixels (those that differ from the empty room; the walking GIF has no
  empty frame to cut its pair from, and a box painted whole is no person to the detector), folds kept (the
  new brightness follows the old shading):
  * vests: fluorescent orange (hue 5-12 of OpenCV's 180, below 10 included), yellow (24-32) and yellow-green
    (33-42), saturation 220-255, value 225-255 (fluorescent dyes read near the sensor's top in daylight); the
    torso only (sleeveless: a half-width of 20-30 % of the box), 16-21 % to 50-60 % of the box high; each
    with and without two retroreflective stripes (light grey, saturation 0-25, value 170-220, 3-4.5 % high);
    and faded (worn, washed: saturation 165-208, value 190-240, no longer fluorescent-bright) with stripes;
  * ordinary tops, over the torso and short sleeves (half-width 34-46 %), in ordinary dyes: an orange T-shirt
    (hue 7-17, saturation 140-195, value 150-230), a yellow T-shirt (20-31, 110-190, 170-240), red (176-3,
    150-220, 110-200), green, blue, khaki, a rust jacket (hue 5-15, saturation 180-240, value
    60-120: saturated as a vest, dim as ordinary dye); and each person as they came (grey, black, white, denim).
- light: daylight (exposure 0.85-1.1, a cast of up to 8 % per channel), dusk (exposure 0.22-0.40, bluer,
  sensor noise sigma 2-5) and infrared night (grey, a faint tint, noise), each saved as a JPEG (quality 75-90).

Truth: a vest is hi-vis (True) in daylight and at dusk; a top is not (False); in infrared grey nothing is
known (None). The box is where the shipped detector finds the person on the dressed, lit crop (the clean
crop's box where it finds none, counted as `person_missed`: there the policy reads no hi-vis at all). Side
by side: `before` (the rule until issue 36: hue 8-85, saturation and
value >= 150 on 30 % of the 20-50 % band) and `after` (cloud/analysis/hivis.py).

    python bench/hivis.py [--quick] [--seed N]

Last stdout line: one JSON object: `hivis_recall`, `false_hivis`, `ir_unknown` (after, for CI's floors); for
`before` and `after`: `vest_recall` (daylight and dusk),
`false_hivis` (tops, daylight and dusk), `ir_unknown` (every garment in infrared), and `by` {"vest orange
stripes dusk": share True, ...}; `samples`, `person_missed`; `stripes_found` (striped vests, daylight and
dusk, whose stripes the reading found); `spread` {kind: the vest-coloured torsos' saturation and value
(share of the crop's brightest), min and max}: how far apart vests and tops lie.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from edgetriage.cloud.analysis.hivis import reading  # noqa: E402
from edgetriage.cloud.analysis.translator import Translator  # noqa: E402
from verdict_crops import ROOM, _frames, build  # noqa: E402

EMPTY_ROOM_S = 2.0  # the room before its first visitor (models/media/labels.json)
VESTS = {"orange": (5, 12), "yellow": (24, 32), "yellow-green": (33, 42)}
VEST_SAT, VEST_VAL = (220, 255), (225, 255)
FADED_SAT, FADED_VAL = (165, 208), (190, 240)  # a worn, washed vest: no longer fluorescent-bright; its stripes tell
TOPS = {  # (hue, saturation, value) ranges of ordinary dyes
    "orange T-shirt": ((7, 17), (140, 195), (150, 230)),
    "yellow T-shirt": ((20, 31), (110, 190), (170, 240)),
    "red top": ((-4, 3), (150, 220), (110, 200)),
    "green top": ((45, 75), (90, 200), (70, 180)),
    "blue top": ((100, 120), (100, 220), (60, 180)),
    "khaki top": ((14, 24), (70, 140), (100, 170)),
    "rust jacket": ((5, 15), (180, 240), (60, 120)),  # saturated as a vest, but dim: no fluorescent dye
}
LIGHTS = ("daylight", "dusk", "infrared")


def people(look) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(who, crop, mask of the person's pixels) for the room's visitors."""
    frames, fps = _frames(ROOM)
    empty = frames[int(EMPTY_ROOM_S * fps)]
    out = []
    for crop in build(look):
        if crop.expected != "alert" or crop.clip != ROOM or not crop.what.startswith("visitor"):
            continue
        image = cv2.imdecode(np.frombuffer(crop.jpeg, np.uint8), cv2.IMREAD_COLOR)
        frame = frames[min(len(frames) - 1, int(crop.seconds * fps))]
        h, w = frame.shape[:2]
        x1, y1 = int(crop.box[0] * w), int(crop.box[1] * h)
        background = empty[y1:y1 + image.shape[0], x1:x1 + image.shape[1]]
        diff = cv2.absdiff(frame[y1:y1 + image.shape[0], x1:x1 + image.shape[1]], background).max(axis=2)
        mask = cv2.morphologyEx((diff > 30).astype(np.uint8), cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8)) > 0
        out.append((crop.what, image, mask))
    return out


def paint(image, box, mask, hsv_ranges, vest: bool, stripes: bool, rng) -> np.ndarray:
    """The person's upper body in a new garment: hue and saturation set, value = the chosen value times the
    old shading (0.7..1, from the old brightness), so folds and shadows stay."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    v = (np.arange(h)[:, None] - y1) / max(1.0, y2 - y1)
    u = (np.arange(w)[None, :] - x1) / max(1.0, x2 - x1)
    top, bottom = (rng.uniform(0.16, 0.21), rng.uniform(0.50, 0.60)) if vest else \
        (rng.uniform(0.15, 0.19), rng.uniform(0.46, 0.56))
    half = rng.uniform(0.20, 0.30) if vest else rng.uniform(0.34, 0.46)
    region = (v >= top) & (v <= bottom) & (np.abs(u - 0.5) <= half) & mask
    if not region.any():
        return image.copy()
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    shade = 0.7 + 0.3 * np.clip(grey / max(1.0, float(np.percentile(grey[region], 90))), 0, 1)
    (h0, h1), (s0, s1), (v0, v1) = hsv_ranges
    hsv = cv2.cvtColor(image, cv2.COLOR_BGR2HSV).astype(np.float32)
    n = int(region.sum())
    hsv[..., 0][region] = np.mod(rng.uniform(h0, h1) + rng.normal(0, 0.7, n), 180)
    hsv[..., 1][region] = np.clip(rng.uniform(s0, s1) + rng.normal(0, 4, n), 0, 255)
    hsv[..., 2][region] = np.clip(rng.uniform(v0, v1) * shade[region], 0, 255)
    if stripes:
        tall = rng.uniform(0.03, 0.045)
        for at in (top + 0.45 * (bottom - top), top + 0.8 * (bottom - top)):
            band = region & (v >= at) & (v < at + tall)
            hsv[..., 1][band] = rng.uniform(0, 25)
            hsv[..., 2][band] = np.clip(rng.uniform(170, 220) * shade[band], 0, 255)
    return cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2BGR)


def lit(image: np.ndarray, light: str, rng) -> np.ndarray:
    """The picture under `light`, saved as a JPEG and read back."""
    pixels = image.astype(np.float32)
    if light == "daylight":
        pixels *= rng.uniform(0.85, 1.1) * rng.uniform(0.92, 1.08, 3).astype(np.float32)
    elif light == "dusk":
        cast = np.array([rng.uniform(1.0, 1.15), 1.0, rng.uniform(0.85, 1.0)], np.float32)
        pixels = pixels * rng.uniform(0.22, 0.40) * cast + rng.normal(0, rng.uniform(2, 5), pixels.shape)
    else:  # infrared: one channel's brightness, a camera's faint tint, noise
        grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32) * rng.uniform(0.6, 1.1)
        pixels = np.repeat(grey[..., None], 3, axis=2) + np.array([rng.uniform(0, 6), 0, rng.uniform(0, 6)])
        pixels += rng.normal(0, 3, grey.shape)[..., None]
    out = np.clip(pixels, 0, 255).astype(np.uint8)
    data = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(75, 91))])[1]
    return cv2.imdecode(data, cv2.IMREAD_COLOR)


def overlap(a, b) -> float:
    """Intersection over union of two boxes: the person dressed is the one found where they were."""
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    inter = max(0.0, w) * max(0.0, h)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def before(image: np.ndarray, box) -> bool | None:
    """The hi-vis rule until issue 36, as it was."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    band = image[int(y1 + 0.2 * (y2 - y1)):int(y1 + 0.5 * (y2 - y1)),
                 int(x1 + 0.25 * (x2 - x1)):int(x2 - 0.25 * (x2 - x1))]
    if band.size == 0:
        return False
    hsv = cv2.cvtColor(band, cv2.COLOR_BGR2HSV).reshape(-1, 3)
    bright = (hsv[:, 0] >= 8) & (hsv[:, 0] < 85) & (hsv[:, 1] >= 150) & (hsv[:, 2] >= 150)
    return float(bright.mean()) >= 0.3


def garments():
    """(name, kind, hsv ranges or None, vest, stripes)."""
    for colour, hues in VESTS.items():
        for stripes in (False, True):
            yield f"vest {colour}" + (" stripes" if stripes else ""), "vest", (hues, VEST_SAT, VEST_VAL), True, stripes
        yield f"vest {colour} faded stripes", "vest", (hues, FADED_SAT, FADED_VAL), True, True
    for name, ranges in TOPS.items():
        yield name, "top", ranges, False, False
    yield "as worn", "top", None, False, False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every 3rd visitor, the clean crop's box")
    parser.add_argument("--seed", type=int, default=36)
    args = parser.parse_args()
    translator = Translator(views=("sent",))
    rng = np.random.default_rng(args.seed)
    said: dict[str, dict[str, list]] = {"before": defaultdict(list), "after": defaultdict(list)}
    mistakes = []
    spread = defaultdict(list)  # (saturation, value) of each vest-coloured torso, by kind
    taped: list[bool] = []  # striped vests in daylight and at dusk: were the stripes found
    samples = missed = 0
    crowd = people(translator.look)
    for who, image, mask in crowd[::3] if args.quick else crowd:
        found = [(s, b) for name, s, b in translator.look(image) if name == "person"]
        if not found:
            continue
        clean_box = max(found)[1]
        for name, kind, ranges, vest, stripes in garments():
            dressed = image if ranges is None else paint(image, clean_box, mask, ranges, vest, stripes, rng)
            for light in LIGHTS:
                picture = lit(dressed, light, rng)
                box = clean_box
                if not args.quick:
                    seen = [(s, b) for n, s, b in translator.look(picture) if n == "person"]
                    box = max(seen, key=lambda sb: overlap(sb[1], clean_box))[1] if seen else clean_box
                    missed += not seen
                samples += 1
                old, new = before(picture, box), reading(picture, box)
                said["before"][f"{name} {light}"].append(old)
                said["after"][f"{name} {light}"].append(new.wearing)
                truth = None if light == "infrared" else kind == "vest"
                if stripes and light != "infrared":
                    taped.append(new.stripes)
                if new.wearing != truth and (truth is not None or new.wearing is not None):
                    mistakes.append(f"{who} {name} {light}: {new.wearing} ({new.why}: share {new.share:.2f}, "
                                    f"saturation {new.saturation:.0f}, value {new.value:.2f})")
                if new.share >= 0.3 and light != "infrared":
                    spread[kind if vest and not name.endswith("faded stripes") else name].append(
                        (new.saturation, new.value))
    for line in mistakes:
        print("wrong (after):", line, file=sys.stderr)
    ranges = {}
    for name, pairs in spread.items():
        sat, val = np.array(pairs).T
        ranges[name] = {"saturation": [int(sat.min()), int(sat.max())],
                        "value": [round(float(val.min()), 2), round(float(val.max()), 2)], "torsos": len(pairs)}
        print(f"vest-coloured {name}: {ranges[name]}", file=sys.stderr)
    result: dict = {"samples": samples, "person_missed": missed,
                    "stripes_found": round(sum(taped) / max(1, len(taped)), 3), "spread": ranges}
    for method, table in said.items():
        def pooled(test, values=table):
            return [v for key, vs in values.items() if test(key) for v in vs]
        vests = pooled(lambda k: k.startswith("vest") and not k.endswith("infrared"))
        tops = pooled(lambda k: not k.startswith("vest") and not k.endswith("infrared"))
        infrared = pooled(lambda k: k.endswith("infrared"))
        result[method] = {
            "vest_recall": round(sum(v is True for v in vests) / len(vests), 3),
            "false_hivis": round(sum(v is True for v in tops) / len(tops), 3),
            "ir_unknown": round(sum(v is None for v in infrared) / len(infrared), 3),
            "by": {key: round(sum(v is True for v in vs) / len(vs), 3) for key, vs in table.items()},
        }
        print(f"{method:6s} vest recall {result[method]['vest_recall']:.3f}, false hi-vis "
              f"{result[method]['false_hivis']:.3f}, infrared unknown {result[method]['ir_unknown']:.3f}",
              file=sys.stderr)
    for key in result["after"]["by"]:
        print(f"  {key:34s} hi-vis before {result['before']['by'][key]:.2f}, after {result['after']['by'][key]:.2f}",
              file=sys.stderr)
    result |= {"hivis_recall": result["after"]["vest_recall"], "false_hivis": result["after"]["false_hivis"],
               "ir_unknown": result["after"]["ir_unknown"]}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
