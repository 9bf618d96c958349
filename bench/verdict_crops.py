"""The labelled crop set of bench/verdicts.py, built from the clips this repository ships (models/media) and
their labels (labels.json): deterministic, in memory, nothing written anywhere.

- alert: every labelled visit of the one-by-one room clip at five moments each, and once more with the box
  drifted half off the visitor; both people walking in the walking GIF at three moments; the far person of the
  parking-lot GIF where the detector finds them; the box is where the shipped detector finds the person on the
  whole frame (what the device would crop), widened a little as the device does.
- benign: the empty wall beside each visitor; person-shaped windows of the room when nobody is there (before,
  between and after the visits:
  the table, the pillar, the window, bare wall and floor), of the road clip (cars, asphalt) and of the
  parking-lot GIF (the car, the lot): what a motion blob or a faint detector box escalates.

Each crop carries its clip (the fold of the leave-one-clip-out calibration) and its expected verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

MEDIA = Path(__file__).resolve().parent.parent / "models" / "media"
ROOM, ROAD = "one-by-one-person-detection.mp4", "car-detection.mp4"
WALKING, PARKING = "face-demographics-walking.gif", "person-bicycle-car-detection.gif"
VISIT_MOMENTS = (0.15, 0.3, 0.5, 0.7, 0.85)  # where in each visit a crop is taken
MARGIN = 0.08  # the device widens a detection's box by this share of its size on each side


@dataclass(frozen=True)
class Crop:
    clip: str
    seconds: float
    expected: str  # "alert" | "benign"
    what: str  # a few words for the per-crop listing
    jpeg: bytes
    box: tuple[float, float, float, float]  # normalised to the frame


def _frames(name: str) -> tuple[list[np.ndarray], float]:
    cap = cv2.VideoCapture(str(MEDIA / name))
    fps = cap.get(cv2.CAP_PROP_FPS) or 10.0
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    return frames, fps


def _jpeg(frame: np.ndarray, box: tuple[int, int, int, int]) -> bytes:
    x1, y1, x2, y2 = box
    ok, data = cv2.imencode(".jpg", frame[y1:y2, x1:x2], [cv2.IMWRITE_JPEG_QUALITY, 85])
    assert ok
    return data.tobytes()


def _crop(clip: str, frame: np.ndarray, seconds: float, expected: str, what: str,
          box: tuple[int, int, int, int]) -> Crop:
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = box
    return Crop(clip, seconds, expected, what, _jpeg(frame, box), (x1 / w, y1 / h, x2 / w, y2 / h))


def _widened(frame: np.ndarray, box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    dx, dy = (x2 - x1) * MARGIN, (y2 - y1) * MARGIN
    return (max(0, int(x1 - dx)), max(0, int(y1 - dy)), min(w, int(x2 + dx)), min(h, int(y2 + dy)))


def _people(frame: np.ndarray, look) -> list[tuple[float, float, float, float]]:
    """Person boxes on the whole frame (score >= 0.3), largest first."""
    found = [box for name, score, box in look(frame) if name == "person" and score >= 0.3]
    return sorted(found, key=lambda b: -(b[2] - b[0]) * (b[3] - b[1]))


def _windows(frame: np.ndarray, spots: list[tuple[float, float, float]]) -> list[tuple[int, int, int, int]]:
    """Person-shaped windows (width 0.42 of height): (centre x, top, height) as shares of the frame."""
    h, w = frame.shape[:2]
    out = []
    for cx, top, height in spots:
        ph = int(height * h)
        pw = int(0.42 * ph)
        x1 = min(max(0, int(cx * w - pw / 2)), w - pw)
        y1 = min(max(0, int(top * h)), h - ph)
        out.append((x1, y1, x1 + pw, y1 + ph))
    return out


ROOM_SPOTS = [(0.58, 0.05, 0.85), (0.74, 0.0, 0.95), (0.08, 0.0, 0.7), (0.35, 0.1, 0.8), (0.9, 0.05, 0.9),
              (0.5, 0.3, 0.7)]
ROAD_SPOTS = [(0.2, 0.1, 0.8), (0.45, 0.0, 0.9), (0.7, 0.2, 0.75), (0.9, 0.0, 1.0)]
PARKING_SPOTS = [(0.5, 0.3, 0.6), (0.25, 0.35, 0.6), (0.65, 0.4, 0.6)]


def build(look) -> list[Crop]:
    """The whole labelled set, in a fixed order. `look(frame)` is the shipped detector on a whole frame:
    [(label, score, box normalised)], as the translator's `look`."""
    labels = json.loads((MEDIA / "labels.json").read_text(encoding="utf-8"))
    crops: list[Crop] = []
    frames, fps = _frames(ROOM)
    visits = labels[ROOM]["visits"]
    for number, (start, end) in enumerate(visits, 1):
        for share in VISIT_MOMENTS:
            seconds = start + share * (end - start)
            frame = frames[min(len(frames) - 1, int(seconds * fps))]
            people = _people(frame, look)
            if people:
                crops.append(_crop(ROOM, frame, seconds, "alert", f"visitor {number}", _widened(frame, people[0])))
        # harder: the visitor half out of the crop (a box that drifted), and the empty wall beside them
        seconds = start + 0.5 * (end - start)
        frame = frames[min(len(frames) - 1, int(seconds * fps))]
        people = _people(frame, look)
        if people:
            x1, y1, x2, y2 = _widened(frame, people[0])
            shift = int(0.55 * (x2 - x1)) * (1 if number % 2 else -1)
            w = frame.shape[1]
            crops.append(_crop(ROOM, frame, seconds, "alert", f"half visitor {number}",
                               (max(0, x1 + shift), y1, min(w, x2 + shift), y2)))
            side = (x2 + 10, y1, min(w, x2 + 10 + (x2 - x1)), y2) if x2 + 10 + (x2 - x1) <= w else \
                (max(0, x1 - 10 - (x2 - x1)), y1, x1 - 10, y2)
            crops.append(_crop(ROOM, frame, seconds, "benign", f"beside visitor {number}", side))
    gaps = [(0.0, visits[0][0])] + [(a[1], b[0]) for a, b in zip(visits, visits[1:], strict=False)]
    gaps.append((visits[-1][1], len(frames) / fps))
    spot = 0
    for start, end in gaps:
        for share in (0.3, 0.7):
            seconds = start + 1.0 + share * max(0.0, end - start - 2.0)  # a second clear of either visit
            frame = frames[min(len(frames) - 1, int(seconds * fps))]
            for _ in range(2):
                box = _windows(frame, [ROOM_SPOTS[spot % len(ROOM_SPOTS)]])[0]
                crops.append(_crop(ROOM, frame, seconds, "benign", "empty room", box))
                spot += 1
    frames, fps = _frames(WALKING)
    for index in (4, 16, 28):
        frame = frames[min(index, len(frames) - 1)]
        for person in _people(frame, look)[:2]:
            crops.append(_crop(WALKING, frame, index / fps, "alert", "walking person", _widened(frame, person)))
    frames, fps = _frames(ROAD)
    for number, index in enumerate((20, 110, 200, 290)):
        frame = frames[index]
        things = [box for _, score, box in look(frame) if score >= 0.3][:2]  # cars seen from above as anything
        spots = [((b[0] + b[2]) / 2, b[1] - 0.1, min(1.0, (b[3] - b[1]) * 1.6)) for b in things]
        for box in _windows(frame, spots + [ROAD_SPOTS[number], ROAD_SPOTS[(number + 2) % 4]]):
            crops.append(_crop(ROAD, frame, index / fps, "benign", "road", box))
    frames, fps = _frames(PARKING)
    for index in (2, 6):  # the tiny pedestrian at the top left in the first second, and the cyclist
        people = _people(frames[index], look)
        for person in people[:1]:
            crops.append(_crop(PARKING, frames[index], index / fps, "alert", "far person",
                               _widened(frames[index], person)))
    for index, box in zip((8, 20, 32), _windows(frames[0], PARKING_SPOTS), strict=True):
        crops.append(_crop(PARKING, frames[index], index / fps, "benign", "parking lot", box))
    return crops
