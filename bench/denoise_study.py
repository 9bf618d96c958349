"""Which denoiser for the closer look's normalised view (cloud/analysis/translator.py, `DENOISE_SEARCH`): each
variant against the one in use, on the crops for which the view is taken (no clear person in the three other
views), from the labelled crop set (bench/verdict_crops.py) and its eight shifts (bench/verdict_shifts.py), every
second crop.

    python bench/denoise_study.py

Prints the CPU seconds (the process's: OpenCV's denoiser runs on several threads) each variant took over those
crops (side by side, one run) and every crop it puts in another class than the one in use does (clear >=
MIN_OBJECT, faint, absent < ABSENT: what the check and the light path read), with its expected verdict and shift:
a person moved from faint to absent, or an empty crop from absent to faint or clear, is a change for the worse.
"""

from __future__ import annotations

import collections
import time

import cv2
import numpy as np
from edgetriage.cloud.analysis.check import ABSENT
from edgetriage.cloud.analysis.translator import MID_GREY, MIN_OBJECT, VIEWS, Translator, _views, normalised
from verdict_crops import build
from verdict_shifts import shifted_sets


def _gain(smooth: np.ndarray) -> np.ndarray:
    luma = float(cv2.cvtColor(smooth, cv2.COLOR_BGR2GRAY).mean())
    return cv2.convertScaleAbs(smooth, alpha=MID_GREY / max(1.0, luma))


VARIANTS = {  # name -> the normalised view it makes (template window, search window)
    "nlm 5/15 (before)": lambda im: _gain(cv2.fastNlMeansDenoisingColored(im, None, 10, 10, 5, 15)),
    "nlm 5/11": lambda im: _gain(cv2.fastNlMeansDenoisingColored(im, None, 10, 10, 5, 11)),
    "nlm 5/9": lambda im: _gain(cv2.fastNlMeansDenoisingColored(im, None, 10, 10, 5, 9)),
    "nlm 3/11": lambda im: _gain(cv2.fastNlMeansDenoisingColored(im, None, 10, 10, 3, 11)),
    "nlm luma only 5/15": lambda im: _gain(cv2.cvtColor(cv2.fastNlMeansDenoising(
        cv2.cvtColor(im, cv2.COLOR_BGR2GRAY), None, 10, 5, 15), cv2.COLOR_GRAY2BGR)),
}


def _class(score: float) -> str:
    return "clear" if score >= MIN_OBJECT else ("absent" if score < ABSENT else "faint")


def main() -> int:
    translator = Translator()
    crops = build(translator.look)
    sets = {"clean": crops, **shifted_sets(crops)}

    def person(image: np.ndarray) -> float:
        return max([s for what, s, _ in translator.look(image) if what == "person"] or [0.0])

    spent: collections.Counter[str] = collections.Counter()
    moved: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    n = 0
    for shift, items in sets.items():
        for crop in items[::2]:
            image = cv2.imdecode(np.frombuffer(crop.jpeg, np.uint8), cv2.IMREAD_COLOR)
            three = max(person(view()) for name, view, _ in _views(image, VIEWS[:3]))
            if three >= MIN_OBJECT:
                continue  # a clear find: the normalised view is not taken on a good picture, nor can it move it
            n += 1
            started = time.process_time()
            view = normalised(image)
            spent["in use"] += time.process_time() - started
            in_use = _class(max(three, person(view)))
            for name, make in VARIANTS.items():
                started = time.process_time()
                view = make(image)
                spent[name] += time.process_time() - started
                other = _class(max(three, person(view)))
                if other != in_use:
                    moved[(name, crop.expected, f"{in_use} -> {other}", shift)] += 1
    print(f"{n} crops for which the normalised view is taken")
    print("\n| variant | CPU s (denoise and gain only) |\n|---|---|")
    for name, seconds in spent.items():
        print(f"| {name} | {seconds:.1f} |")
    print("\n| variant | expected | class in use -> variant's | shift | crops |\n|---|---|---|---|---|")
    for (name, expected, change, shift), count in sorted(moved.items()):
        print(f"| {name} | {expected} | {change} | {shift} | {count} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
