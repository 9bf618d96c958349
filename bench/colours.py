"""Does the translator name the colours people wear? Every person crop of bench/verdict_crops.py (the shipped
clips), its garments labelled by eye below, judged as sent and under transformations that keep or set the
truth, so no one clip's quirks decide:

- clean: as sent; tight: 10 % cut off each side; dark: the light at 45 %; warm / cool: a tungsten-like or a
  shade-like cast (red and blue gains 1.25 / 0.8 and the reverse);
- recoloured: each grey or white top painted a known hue (red, orange, yellow, green, blue, purple: its
  near-neutral pixels given that hue, saturation 210, brightness 110 + half their own, so the folds stay), the
  truth being that hue.

A name is right when it is one the garment may be called (a grey-blue shirt: grey or blue), wrong when it
names a colour not worn, and "unknown" (None: the facts then say nothing of it) counts as neither. Reported
side by side: the translator's first colour naming (`before`, kept here as it was) and the shipped one
(cloud/analysis/colours.py).

    python bench/colours.py

Last stdout line: one JSON object with, for `before` and `after`, `right`, `wrong` and `unknown` (shares of
all garments judged), and `by_variant` ({variant: {right, wrong, unknown}}); `garments`.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from edgetriage.cloud.analysis.colours import body_colours  # noqa: E402
from edgetriage.cloud.analysis.translator import Translator  # noqa: E402
from verdict_crops import WALKING, build  # noqa: E402

# what each visitor wears, by eye: (names the top may be given, names the bottom may be given)
VISITORS = {
    "visitor 1": ({"grey"}, {"grey", "blue", "dark"}),  # a long grey cardigan over dark jeans
    "visitor 2": ({"dark"}, {"dark"}),  # black jacket, black trousers
    "visitor 3": ({"dark"}, {"dark"}),  # black top (long blonde hair over it), black trousers
    "visitor 4": ({"dark"}, {"dark"}),  # black T-shirt, black trousers
    "visitor 5": ({"grey"}, {"dark", "blue"}),  # grey sweater, dark jeans
    "visitor 6": ({"grey", "blue", "white"}, {"blue", "dark"}),  # pale blue-grey shirt, jeans
    "woman": ({"white", "grey"}, {"white", "grey"}),  # white dress
    "man": ({"dark", "blue", "white", "grey"}, {"blue", "dark", "grey"}),  # navy shirt, white waistcoat, jeans
}
RECOLOURS = {"red": 0, "orange": 12, "yellow": 27, "green": 60, "blue": 110, "purple": 140}


def before(image: np.ndarray, box) -> tuple[str | None, str | None]:
    """The translator's colour naming before bench/colours.py, as it was."""
    table = ((0, 8, "red"), (8, 20, "orange"), (20, 33, "yellow"), (33, 85, "green"), (85, 130, "blue"),
             (130, 160, "purple"), (160, 181, "red"))

    def name(pixels: np.ndarray) -> str | None:
        if pixels.size == 0:
            return None
        hsv = cv2.cvtColor(pixels.reshape(-1, 1, 3), cv2.COLOR_BGR2HSV).reshape(-1, 3).astype(np.int32)
        h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
        kinds = np.where(v < 60, 0, np.where(s < 50, np.where(v > 190, 2, 1), 3))
        kind = int(np.bincount(kinds, minlength=4).argmax())
        if kind < 3:
            return ("dark", "grey", "white")[kind]
        hues = h[kinds == 3]
        votes = dict.fromkeys((n for _, _, n in table), 0)
        for lo, hi, n in table:
            votes[n] += int(((hues >= lo) & (hues < hi)).sum())
        best = max(votes, key=votes.__getitem__)
        return "brown" if best == "orange" and np.median(v[kinds == 3]) < 150 else best

    h, w = image.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    left, right = int(x1 + 0.25 * (x2 - x1)), int(x2 - 0.25 * (x2 - x1))

    def band(top: float, bottom: float) -> np.ndarray:
        return image[int(y1 + top * (y2 - y1)):int(y1 + bottom * (y2 - y1)), left:right]

    return name(band(0.2, 0.5)), name(band(0.55, 0.9))


def who(crop, pair_left: bool) -> str | None:
    if crop.what.startswith(("visitor", "half visitor")):
        return crop.what.removeprefix("half ")
    if crop.clip == WALKING:
        return "woman" if pair_left else "man"  # she walks left of him in every frame taken
    return None  # the far, tiny people of the parking lot: no garment to see


def recoloured(image: np.ndarray, box, hue: int) -> np.ndarray:
    """The top's near-neutral pixels (box rows 15-52 %) given `hue` at full saturation, brightness kept."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = int(box[0] * w), int(box[1] * h), int(box[2] * w), int(box[3] * h)
    top, bottom = y1 + int(0.15 * (y2 - y1)), y1 + int(0.52 * (y2 - y1))
    out = image.copy()
    part = cv2.cvtColor(out[top:bottom, x1:x2], cv2.COLOR_BGR2HSV)
    garment = (part[..., 1] < 70) & (part[..., 2] >= 60) & (part[..., 2] < 250)
    part[..., 0][garment] = hue
    part[..., 1][garment] = 210
    part[..., 2][garment] = 110 + part[..., 2][garment] // 2  # a dyed garment's brightness, its folds kept
    out[top:bottom, x1:x2] = cv2.cvtColor(part, cv2.COLOR_HSV2BGR)
    return out


def variants(image: np.ndarray, box, truth: tuple[set[str], set[str]]):
    """(variant, image, box, truth) for one crop."""
    yield "clean", image, box, truth
    h, w = image.shape[:2]
    dx, dy = int(0.1 * w), int(0.1 * h)
    cut = image[dy:h - dy, dx:w - dx]
    sx, sy = (w - 2 * dx) / w, (h - 2 * dy) / h
    tight = tuple(min(1.0, max(0.0, v)) for v in ((box[0] - dx / w) / sx, (box[1] - dy / h) / sy,
                                                    (box[2] - dx / w) / sx, (box[3] - dy / h) / sy))
    yield "tight", cut, tight, truth
    dim = ({*truth[0], "dark", "grey"}, {*truth[1], "dark", "grey"})
    yield "dark", cv2.convertScaleAbs(image, alpha=0.45), box, dim
    for name, gains in (("warm", (0.8, 1.0, 1.25)), ("cool", (1.25, 1.0, 0.8))):
        yield name, np.clip(image.astype(np.float32) * np.array(gains, np.float32), 0, 255).astype(np.uint8), box, truth
    if truth[0] & {"grey", "white"} and not truth[0] & {"dark"}:
        for name, hue in RECOLOURS.items():
            yield "recoloured", recoloured(image, box, hue), box, ({name}, truth[1])


def judge(said: str | None, allowed: set[str]) -> str:
    return "unknown" if said is None else "right" if said in allowed else "wrong"


def shares(counts: Counter) -> dict:
    total = sum(counts.values()) or 1
    return {k: round(counts[k] / total, 3) for k in ("right", "wrong", "unknown")}


def main() -> int:
    translator = Translator(views=("sent",))
    crops = [c for c in build(translator.look) if c.expected == "alert"]
    totals = {"before": Counter(), "after": Counter()}
    by_variant: dict[str, dict[str, Counter]] = {"before": {}, "after": {}}
    wrong_lines = []
    garments = 0
    lefts = {}
    for crop in crops:  # the walking pair: who is on the left in each frame
        if crop.clip == WALKING:
            lefts.setdefault(crop.seconds, []).append(crop.box[0])
    for crop in crops:
        person = who(crop, crop.clip == WALKING and crop.box[0] == min(lefts.get(crop.seconds, [0])))
        if person is None:
            continue
        image = cv2.imdecode(np.frombuffer(crop.jpeg, np.uint8), cv2.IMREAD_COLOR)
        found = [(s, b) for name, s, b in translator.look(image) if name == "person"]
        if not found:
            continue
        box = max(found)[1]
        for variant, picture, where, truth in variants(image, box, VISITORS[person]):
            for method, named in (("before", before(picture, where)), ("after", body_colours(picture, where))):
                for part, said, allowed in zip(("top", "bottom"), named, truth, strict=True):
                    verdict = judge(said, allowed)
                    totals[method][verdict] += 1
                    by_variant[method].setdefault(variant, Counter())[verdict] += 1
                    if verdict == "wrong" and method == "after":
                        wrong_lines.append(f"{crop.what} {crop.seconds:.1f}s {variant} {part}: said {said}, "
                                           f"wears {sorted(allowed)}")
            garments += 2
    for line in wrong_lines:
        print("wrong (after):", line, file=sys.stderr)
    result = {}
    for method in ("before", "after"):
        result[method] = shares(totals[method]) | {
            "by_variant": {v: shares(c) for v, c in by_variant[method].items()}}
        print(f"{method:6s} {result[method]['right']:.3f} right, {result[method]['wrong']:.3f} wrong, "
              f"{result[method]['unknown']:.3f} unknown; " + "; ".join(
                  f"{v} {s['right']:.2f}/{s['wrong']:.2f}/{s['unknown']:.2f}"
                  for v, s in result[method]["by_variant"].items()), file=sys.stderr)
    result["garments"] = garments
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
