"""Hard cases for the edge cascade, made at bench run time from the shared clips (the one-by-one clip and both
GIFs; the road clip for the person-free checks), listed with their expected visits in bench/hard_cases.json:

    start_mid_visit  the clip cut to start in the middle of each labelled visit (up to 8 s long)
    frozen_3s        the first frame where visitor k is fully in (hand-checked), repeated 3 s at 10 fps
    fps_5            the whole clip at 5 fps
    gif_3s           a 3 s GIF at 10 fps (one-by-one: from each visit's start, as a motion-triggered clip)
    night            the whole clip darkened to a mean luma of 36/255, Gaussian sensor noise sigma 10 added to
                     every channel
    still_20s        from 1 s before visitor k walks in to the frame where they are fully in, that frame
                     then repeated for 20 s

Camera conditions the cascade was not tuned on, each on a cut of every visit (one-by-one: from 1 s before
visitor k walks in, 6 s; the GIFs whole; the road's first 10 s):

    small            the picture scaled to 0.5x in the middle of a frame of the same size (the rest mid-grey):
                     people half as tall, as a wider or farther camera sees them (not the parking-lot GIF,
                     whose pedestrian would be 8x16 px)
    shake            camera shake: each frame moved by a random offset up to 0.8 % of the frame's width in x
                     and y (seeded), edges reflected: the whole picture moves on every frame
    overexposed      washed out: gain 1.6 then gamma 0.6, highlights clipped (mean luma ~200/255)
    jpeg_low         every frame through JPEG at quality 20 (a cheap RTSP camera's blocks and ringing)
    portrait         the 9:16 centre cut of the frame (a doorbell's picture), at the source's pixels (not the
                     parking-lot GIF: its cyclist rides outside the cut)
    rain             bright streaks (2 px wide, 6 % of the height long, slanted, +100 grey levels), 3 per
                     10,000 pixels, at new random places on every frame (seeded): rain lit by the camera's light

Expected visits are the labels.json visits mapped into each derived clip's time (`expected_visits`); a
visit under 0.5 s in a cut is left out. The file is written by `python bench/hard_cases.py --write` and
checked against labels.json on every run, so the two cannot drift apart. Derived clips go to a temporary
folder and are deleted afterwards: MJPG AVI (OpenCV's writer), GIF for gif_3s (OpenCV's animation writer; its
256-colour palette is part of that case, not of the others).

Figures (bench/edge.py puts them in its JSON line):
    hard_cases                          case -> share of its labelled visits that produced a person event
    hard_cases_reference                share of the intervals where the reference (fp32 SSDLite on every
                                        frame, score >= 0.5 for >= 0.5 s) sees a person that overlap an event
    hard_cases_escalations_person_free  person escalations on the derived person-free clips (constant motion)
    hard_cases_detail                   per case: clips, visits, found, escalated (person events escalated;
                                        more than visits: people split into several events)
    hard_cases_escalations_per_visit    per case: escalated / visits (issue 38; rain's are streaks)

    python bench/hard_cases.py [--media DIR] [--write]    (alone: runs the cases and prints the figures)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from edgetriage.edge.replay import Replayer
from edgetriage.edge.vision.capture import Frame, FrameSource
from edgetriage.edge.vision.detect import Detector
from recall import found_intervals, found_visits, intervals_from_hits, load_labels

CASES_FILE = Path(__file__).with_name("hard_cases.json")
ONE_BY_ONE = "one-by-one-person-detection.mp4"
GIFS = ("face-demographics-walking.gif", "person-bicycle-car-detection.gif")
PERSON_FREE = "car-detection.mp4"
MIN_VISIBLE_S = 0.5  # a visit shorter than this in a derived clip is not expected to be found
MID_CUT_S = 8.0
CONDITION_CUT_S = 6.0  # each one-by-one visit from 1 s before it, for the camera conditions
CONDITIONS = ("small", "shake", "overexposed", "jpeg_low", "portrait", "rain")
SMALL_SCALE = 0.5
SHAKE_FRAC = 0.008  # of the frame's width, the most a shaken frame moves in x and in y
OVEREXPOSED_GAIN, OVEREXPOSED_GAMMA = 1.6, 0.6
JPEG_LOW_QUALITY = 20
RAIN_DROPS = 3e-4  # streaks per pixel of the frame on every frame (100 in a 768x432 one)
RAIN_LENGTH = 0.06  # of the frame's height
RAIN_LEVEL = 100  # grey levels a streak adds
PORTRAIT = 9.0 / 16.0  # width / height
# conditions whose derived clip would not show a labelled visitor: the parking-lot GIF's pedestrian at 0.5x is
# 8x16 px, and its cyclist rides outside the 9:16 centre cut
NOT_SHOWN = {("small", GIFS[1]), ("portrait", GIFS[1])}
NIGHT_LUMA = 36.0  # mean luma after darkening (the goal: <= 40/255 with the noise)
NIGHT_SIGMA = 10.0
# The first frame where each visitor is fully in (feet in view, box clear of the frame's edges), checked by
# eye; the bicycle GIF's pedestrian leaves through the top edge and is never fully in.
FULLY_IN: dict[str, list[float | None]] = {
    ONE_BY_ONE: [7.4, 24.0, 51.8, 76.3, 93.8, 125.5],
    "face-demographics-walking.gif": [0.08, 0.08],
    "person-bicycle-car-detection.gif": [1.92, None],
}


@dataclass
class DerivedClip:
    case: str
    source: str
    make: dict[str, Any]  # cut [start, end] s, fps, hold_s (last frame repeated), night, gif, look (CONDITIONS)
    visits: list[tuple[float, float]]  # expected, in the derived clip's seconds

    @property
    def name(self) -> str:
        stem = Path(self.source).stem
        cut = self.make.get("cut")
        where = f"-{cut[0]:g}-{cut[1]:g}" if cut else ""
        return f"{self.case}-{stem}{where}.{'gif' if self.make.get('gif') else 'avi'}"


# -- the case list ----------------------------------------------------------------------------------------
def expected_visits(make: dict[str, Any], visits: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """labels.json visits in a derived clip's time: shifted by the cut's start, clipped to the cut, and a
    visit still on at the cut's end lasts through the held frame."""
    start, end = make.get("cut", (0.0, math.inf))
    hold = make.get("hold_s", 0.0)
    out = []
    for a, b in visits:
        if a > end or b < start:
            continue
        first = max(a, start) - start
        last = min(b, end) - start + (hold if b >= end else 0.0)
        if last - first >= MIN_VISIBLE_S - 1e-9:
            out.append((round(first, 3), round(last, 3)))
    return out


def _specs(labels: dict[str, list[tuple[float, float]]], durations: dict[str, float]) -> list[tuple[str, str, dict]]:
    specs: list[tuple[str, str, dict]] = []
    for source in (ONE_BY_ONE, *GIFS):
        visits, length = labels[source], durations[source]
        mids = sorted({round((a + b) / 2.0, 2) for a, b in visits})
        specs += [("start_mid_visit", source, {"cut": [m, round(min(m + MID_CUT_S, length), 2)]})
                  for m in mids]
        for t in sorted({t for t in FULLY_IN[source] if t is not None}):
            specs.append(("frozen_3s", source, {"cut": [t, t], "fps": 10.0, "hold_s": 3.0}))
        specs.append(("fps_5", source, {"fps": 5.0}))
        starts = sorted({a for a, _ in visits}) if source == ONE_BY_ONE else [0.0]
        specs += [("gif_3s", source, {"cut": [a, round(min(a + 3.0, length), 2)], "fps": 10.0, "gif": True})
                  for a in starts]
        specs.append(("night", source, {"night": True}))
        stills = sorted({(max(0.0, a - 1.0), t) for (a, _), t in zip(visits, FULLY_IN[source], strict=True)
                         if t is not None})
        specs += [("still_20s", source, {"cut": [a, t], "hold_s": 20.0}) for a, t in stills]
        cuts = ([[max(0.0, a - 1.0), round(min(a - 1.0 + CONDITION_CUT_S, length), 2)]
                 for a in sorted({a for a, _ in visits})] if source == ONE_BY_ONE else [None])
        specs += [(look, source, {"cut": c, "look": look} if c else {"look": look})
                  for look in CONDITIONS for c in cuts if (look, source) not in NOT_SHOWN]
    # the road: cars move all the time, nobody is there
    specs += [
        ("start_mid_visit", PERSON_FREE, {"cut": [15.0, 23.0]}),
        ("frozen_3s", PERSON_FREE, {"cut": [15.0, 15.0], "fps": 10.0, "hold_s": 3.0}),
        ("fps_5", PERSON_FREE, {"fps": 5.0}),
        ("gif_3s", PERSON_FREE, {"cut": [0.0, 3.0], "fps": 10.0, "gif": True}),
        ("night", PERSON_FREE, {"night": True}),
        ("still_20s", PERSON_FREE, {"cut": [0.0, 5.0], "hold_s": 20.0}),
    ]
    specs += [(look, PERSON_FREE, {"cut": [0.0, 10.0], "look": look}) for look in CONDITIONS]
    return specs


def write_cases(media: Path, path: Path = CASES_FILE) -> None:
    labels = load_labels(media)
    durations = {name: _duration(media / name) for name in (ONE_BY_ONE, *GIFS, PERSON_FREE)}
    clips = [{"case": case, "source": source, "make": make, "visits": expected_visits(make, labels[source])}
             for case, source, make in _specs(labels, durations)]
    about = ("Hard cases for bench/edge.py, made from models/media at run time (see bench/hard_cases.py); visits: "
             "labels.json mapped into each derived clip's seconds. Regenerate: python bench/hard_cases.py --write")
    lines = [json.dumps(c) for c in clips]
    path.write_text('{\n  "_about": ' + json.dumps(about) + ',\n  "fully_in": ' + json.dumps(FULLY_IN)
                    + ',\n  "clips": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n", encoding="utf-8")


def load_cases(media: Path, path: Path = CASES_FILE) -> list[DerivedClip]:
    """The listed cases, each checked against labels.json (ValueError naming the first that drifted)."""
    labels = load_labels(media)
    clips = []
    for entry in json.loads(path.read_text(encoding="utf-8"))["clips"]:
        clip = DerivedClip(entry["case"], entry["source"], entry["make"], [tuple(v) for v in entry["visits"]])
        mapped = expected_visits(clip.make, labels[clip.source])
        if mapped != clip.visits:
            raise ValueError(f"{path.name}: {clip.name} lists visits {clip.visits}, labels.json gives {mapped}; "
                             "run python bench/hard_cases.py --write")
        clips.append(clip)
    return clips


def _duration(path: Path) -> float:
    capture = cv2.VideoCapture(str(path))
    try:
        return round(capture.get(cv2.CAP_PROP_FRAME_COUNT) / capture.get(cv2.CAP_PROP_FPS), 2)
    finally:
        capture.release()


# -- making a clip ----------------------------------------------------------------------------------------
def derived_frames(media: Path, clip: DerivedClip) -> tuple[float, Iterator[np.ndarray]]:
    """The derived clip's fps and its frames: the source resampled to the output rate (nearest frame), cut,
    the last frame held, darkened and noised at night, seen through a camera condition (`look`)."""
    make = clip.make
    look = _condition(make)
    source = FrameSource(str(media / clip.source))
    source.open()
    fps_in = source.fps
    fps = make.get("fps", fps_in)
    start, end = make.get("cut", (0.0, math.inf))
    hold = round(make.get("hold_s", 0.0) * fps)

    def frames() -> Iterator[np.ndarray]:
        last = None
        i = 0
        try:
            for frame in source:
                while start + i / fps <= end + 1e-6 and round((start + i / fps) * fps_in) <= frame.index:
                    last = frame.image
                    i += 1
                    yield look(last)
                if start + i / fps > end + 1e-6:
                    break
        finally:
            source.close()
        for _ in range(hold if last is not None else 0):
            yield look(last)

    return fps, frames()


def _condition(make: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
    """What a derived clip's camera does to each frame (night, or one of CONDITIONS; shake and rain draw
    from a generator seeded per clip, so every run shakes and rains alike)."""
    if make.get("night"):
        return _night
    look = make.get("look")
    if look in ("shake", "rain"):
        rng = np.random.default_rng(12)
        return lambda image: (_shake if look == "shake" else _rain)(image, rng)
    return {"small": _small, "overexposed": _overexposed, "jpeg_low": _jpeg_low, "portrait": _portrait,
            None: lambda image: image}[look]


def _small(image: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    small = cv2.resize(image, (round(w * SMALL_SCALE), round(h * SMALL_SCALE)), interpolation=cv2.INTER_AREA)
    out = np.full_like(image, 114)
    top, left = (h - small.shape[0]) // 2, (w - small.shape[1]) // 2
    out[top:top + small.shape[0], left:left + small.shape[1]] = small
    return out


def _shake(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    h, w = image.shape[:2]
    most = max(1, round(SHAKE_FRAC * w))
    dx, dy = (int(v) for v in rng.integers(-most, most + 1, size=2))
    move = np.float32([[1, 0, dx], [0, 1, dy]])
    return cv2.warpAffine(image, move, (w, h), borderMode=cv2.BORDER_REFLECT)


def _rain(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    h, w = image.shape[:2]
    streaks = np.zeros((h, w), np.uint8)
    length = round(RAIN_LENGTH * h)
    for x, y in rng.integers(0, (w, h), size=(round(RAIN_DROPS * w * h), 2)):
        cv2.line(streaks, (int(x), int(y)), (int(x) + length // 4, int(y) + length), RAIN_LEVEL, 2, cv2.LINE_AA)
    return cv2.add(image, cv2.cvtColor(streaks, cv2.COLOR_GRAY2BGR))


def _overexposed(image: np.ndarray) -> np.ndarray:
    levels = np.clip(np.arange(256) * OVEREXPOSED_GAIN, 0, 255) / 255.0
    return cv2.LUT(image, np.round(255.0 * levels ** OVEREXPOSED_GAMMA).astype(np.uint8))


def _jpeg_low(image: np.ndarray) -> np.ndarray:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, JPEG_LOW_QUALITY])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return cv2.imdecode(data, cv2.IMREAD_COLOR)


def _portrait(image: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    side = min(w, round(h * PORTRAIT))
    left = (w - side) // 2
    return np.ascontiguousarray(image[:, left:left + side])


def _night(image: np.ndarray) -> np.ndarray:
    luma = float(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).mean())
    dark = cv2.convertScaleAbs(image, alpha=min(1.0, NIGHT_LUMA / max(luma, 1.0)))
    noise = np.empty(image.shape, np.int16)
    # one sigma per channel: OpenCV reads a bare scalar as (sigma, 0, 0, 0), i.e. noise in blue only
    cv2.randn(noise, (0.0,) * 3, (NIGHT_SIGMA,) * 3)  # seeded by render(): the same noise on every run
    return cv2.add(dark.astype(np.int16), noise, dtype=cv2.CV_8U)


def render(media: Path, clip: DerivedClip, folder: Path) -> Path:
    cv2.setRNGSeed(12)
    fps, frames = derived_frames(media, clip)
    path = folder / clip.name
    if clip.make.get("gif"):
        animation = cv2.Animation()
        animation.frames = list(frames)
        animation.durations = [round(1000.0 / fps)] * len(animation.frames)
        if not animation.frames or not cv2.imwriteanimation(str(path), animation):
            raise RuntimeError(f"could not write {path}")
        return path
    writer = None
    try:
        for image in frames:
            if writer is None:
                writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps,
                                         (image.shape[1], image.shape[0]))
            writer.write(image)
    finally:
        if writer is not None:
            writer.release()
    if writer is None:
        raise RuntimeError(f"{clip.name}: no frames")
    return path


# -- running them -----------------------------------------------------------------------------------------
@dataclass
class CaseRun:
    clip: DerivedClip
    frames: int = 0
    fps: float = 0.0
    events: list[tuple[float, float, str, str]] = field(default_factory=list)  # first, last, label, decision
    tentative: int = 0
    reference: list[tuple[float, float]] = field(default_factory=list)
    visits: list[tuple[float, float]] = field(default_factory=list)  # expected in the frames run

    @property
    def persons(self) -> list[tuple[float, float]]:
        return [(a, b) for a, b, label, _ in self.events if label == "person"]


def run_case(path: Path, clip: DerivedClip, replayer: Replayer, reference: Detector,
             limit: int | None = None) -> CaseRun:
    """The derived clip (its first `limit` frames) through the device's pipeline and decisions, and through
    the reference."""
    run = CaseRun(clip)
    source = FrameSource(str(path), max_frames=limit)
    source.open()
    session = replayer.session(str(path))
    hits: list[float] = []
    try:
        frame: Frame
        for frame in source:
            session.process(frame)
            if any(d.label == "person" for d in reference.detect(frame.image)):
                hits.append(frame.pts_s)
            run.frames += 1
        session.finish()
        run.fps = source.fps
    finally:
        source.close()
    run.events = [(e.event.first_ts, e.event.last_ts, e.event.label, e.decision.kind) for e in session.events]
    run.tentative = len(session.tentative)
    run.reference = intervals_from_hits(hits, 1.0 / run.fps if run.fps else 0.1)
    duration = run.frames / run.fps if run.fps else 0.0
    run.visits = [v for v in clip.visits if v[0] < duration]  # a cut run (--quick) expects what it saw
    return run


def _escalated(run: CaseRun) -> int:
    """Person events escalated: one per visitor is the goal; more is one person split into several tracks."""
    return sum(1 for _, _, label, decision in run.events if label == "person" and decision == "escalate")


def run_hard_cases(media: Path, make_replayer: Callable[[], Replayer], reference: Detector,
                   limit: int | None = None,
                   log: Any = lambda m: print(m, file=sys.stderr, flush=True), only: str = "") -> dict[str, Any]:
    """Every listed case, each derived clip cut to `limit` frames if given, each with a fresh replayer (no
    cooldown carries over from one clip to the next to hide an escalation); the figures in the docstring."""
    clips = [c for c in load_cases(media) if only in c.name]
    runs: list[CaseRun] = []
    with tempfile.TemporaryDirectory(prefix="edgetriage-hard-") as tmp:
        for clip in clips:
            path = render(media, clip, Path(tmp))
            run = run_case(path, clip, make_replayer(), reference, limit)
            path.unlink()
            runs.append(run)
            found = found_visits(run.visits, run.persons)
            log(f"hard case {clip.name}: {run.frames} frames at {run.fps:g} fps, visits {found}/{len(run.visits)}, "
                f"events {[(round(a, 1), round(b, 1), lab, d) for a, b, lab, d in run.events]}, "
                f"reference {found_intervals(run.reference, run.persons)}/{len(run.reference)}")
    cases: dict[str, dict[str, int]] = {}
    for run in runs:
        if run.clip.source == PERSON_FREE:
            continue
        totals = cases.setdefault(run.clip.case, {"clips": 0, "visits": 0, "found": 0, "escalated": 0})
        totals["clips"] += 1
        totals["visits"] += len(run.visits)
        totals["found"] += found_visits(run.visits, run.persons)
        totals["escalated"] += _escalated(run)
    reference_total = sum(len(r.reference) for r in runs)
    reference_found = sum(found_intervals(r.reference, r.persons) for r in runs)
    return {
        "hard_cases": {case: round(t["found"] / t["visits"], 4) if t["visits"] else None for case, t in cases.items()},
        "hard_cases_min": min((t["found"] / t["visits"] for t in cases.values() if t["visits"]), default=None),
        "hard_cases_reference": round(reference_found / reference_total, 4) if reference_total else None,
        "hard_cases_escalations_person_free": sum(_escalated(r) for r in runs if r.clip.source == PERSON_FREE),
        "hard_cases_escalations_per_visit": {case: round(t["escalated"] / t["visits"], 3) if t["visits"] else None
                                             for case, t in cases.items()},
        "hard_cases_detail": {**cases, "reference_intervals": reference_total, "reference_found": reference_found,
                              "frames": sum(r.frames for r in runs),
                              "tentative": sum(r.tentative for r in runs)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--media", type=Path, default=Path(__file__).resolve().parents[1] / "models" / "media")
    parser.add_argument("--write", action="store_true", help="rewrite bench/hard_cases.json from labels.json")
    parser.add_argument("--only", default="", help="run only the derived clips whose name contains this")
    args = parser.parse_args()
    if args.write:
        write_cases(args.media)
        print(f"wrote {CASES_FILE}", file=sys.stderr)
        return 0
    from edgetriage.edge.config import EdgeConfig
    from edgetriage.edge.vision.detect import DetectorConfig, build_detector

    t0 = time.monotonic()
    reference = build_detector(DetectorConfig(model="ssdlite_person", precision="fp32", fit="stretch",
                                              min_score=0.5, threads=2))
    replayer = Replayer(EdgeConfig())
    results = run_hard_cases(args.media, lambda: Replayer(replayer.config, detector=replayer.detector,
                                                          stages=replayer.stages), reference, only=args.only)
    results["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
