"""Where the boxes go on a thumbnail: the device cut each crop around a track's best box, grown by a margin;
the detections of that frame are drawn over the crop in the crop's own 0..1 coordinates."""

from __future__ import annotations

from collections.abc import Iterable

from ....shared.protocol import CROP_MARGIN, crop_region

# The device crops a track's best box grown by this share of its size on each side (the shared default);
# used to place boxes on crops of events that do not say where they were cut (no `crop_box`).
DEFAULT_CROP_MARGIN = CROP_MARGIN

Box = tuple[float, float, float, float]


def boxes_in_crop(detections: Iterable[tuple[str, float, Box]], region: Box, main: Box | None) -> list[dict]:
    """Detections (label, score, frame-normalised box) that overlap the crop, in the crop's own 0..1
    coordinates, for drawing over the thumbnail; the tracked one is marked `main`."""
    rx1, ry1, rx2, ry2 = region
    rw, rh = rx2 - rx1, ry2 - ry1
    if rw <= 0 or rh <= 0:
        return []
    out = []
    for label, score, (x1, y1, x2, y2) in detections:
        cx1, cy1 = max(x1, rx1), max(y1, ry1)
        cx2, cy2 = min(x2, rx2), min(y2, ry2)
        if cx2 <= cx1 or cy2 <= cy1:
            continue
        out.append({"x1": round((cx1 - rx1) / rw, 4), "y1": round((cy1 - ry1) / rh, 4),
                    "x2": round((cx2 - rx1) / rw, 4), "y2": round((cy2 - ry1) / rh, 4),
                    "label": label, "score": round(float(score), 3), "main": (x1, y1, x2, y2) == main})
    return out


def _main_box(label: str, score: float, detections: list[tuple[str, float, Box]]) -> Box | None:
    """The tracked object's box on its best frame: the detection of its label whose score is nearest."""
    same = [d for d in detections if d[0] == label] or detections
    if not same:
        return None
    return min(same, key=lambda d: abs(d[1] - score))[2]


def event_boxes(label: str, score: float, detections: list[tuple[str, float, Box]],
                margin: float = DEFAULT_CROP_MARGIN, region: Box | None = None) -> list[dict]:
    """Boxes over an event's crop: `region` is where the device says it cut the crop (the event's crop_box);
    without it, the tracked box grown by `margin`. An event without detections (a region the device tracked
    by motion, the detector unsure) gets its tracked box where the margin puts it."""
    main = _main_box(label, score, detections)
    if main is None:
        inset = margin / (1 + 2 * margin)
        return [{"x1": round(inset, 4), "y1": round(inset, 4), "x2": round(1 - inset, 4), "y2": round(1 - inset, 4),
                 "label": label, "score": round(float(score), 3), "main": True}]
    return boxes_in_crop(detections, tuple(region) if region else crop_region(main, margin), main)
