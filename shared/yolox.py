"""YOLOX output decoding, shared by the device's detector and the cloud's closer look: pure numpy, so both
sides read the same raw grid the same way (manifest family `yolox`; see its `box_format`)."""

from __future__ import annotations

import numpy as np


def grid(width: int, height: int, strides: tuple[int, ...] | list[int] = (8, 16, 32)) -> tuple[np.ndarray, np.ndarray]:
    """(cells, strides): each output row's grid cell (gx, gy) and stride, in the model's row order."""
    cells, steps = [], []
    for s in strides:
        gw, gh = width // s, height // s
        xv, yv = np.meshgrid(np.arange(gw), np.arange(gh))
        cells.append(np.stack((xv, yv), 2).reshape(-1, 2))
        steps.append(np.full((gw * gh, 1), s))
    return np.concatenate(cells).astype(np.float32), np.concatenate(steps).astype(np.float32)


def decode(rows: np.ndarray, cells: np.ndarray, strides: np.ndarray, size: tuple[int, int], ratio: float,
           min_score: float, nms_iou: float) -> list[tuple[int, float, tuple[float, float, float, float]]]:
    """[(class index, score, box)] for one image, best first after class-aware NMS. `rows` is the output's
    [N, 5 + classes]; `size` the (width, height) of the image the model looked at, letterboxed at the top-left
    with `ratio`; boxes come out normalised to that image (x1, y1, x2, y2 in 0..1)."""
    # a score is objectness x class probability (both 0..1), so a row whose objectness is under the floor cannot
    # reach it: most of the grid is dropped before the [N, classes] products (2.2 -> 0.6 ms a frame at 416)
    candidates = np.flatnonzero(rows[:, 4] >= min_score)
    rows = rows[candidates]
    scores = rows[:, 5:] * rows[:, 4:5]
    classes = scores.argmax(1)
    best = scores[np.arange(len(classes)), classes]
    keep = best >= min_score
    if not keep.any():
        return []
    rows, best, classes, kept = rows[keep], best[keep], classes[keep], candidates[keep]
    step = strides[kept]
    centre = (rows[:, :2] + cells[kept]) * step
    half = np.exp(rows[:, 2:4]) * step * 0.5
    w, h = size
    scale = np.array([w, h, w, h], np.float32) * ratio  # letterbox pixels -> image-normalised
    boxes = np.clip(np.concatenate([centre - half, centre + half], 1) / scale, 0.0, 1.0)
    found = []
    for i in nms_by_class(boxes, best, classes, nms_iou):
        x1, y1, x2, y2 = boxes[i].tolist()
        if x2 > x1 and y2 > y1:
            found.append((int(classes[i]), float(best[i]), (x1, y1, x2, y2)))
    return found


def nms_by_class(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou: float) -> list[int]:
    """Indices kept by class-aware non-maximum suppression, best score first."""
    # offsetting each class far apart lets one NMS pass keep classes from suppressing each other
    shifted = boxes + (classes.astype(np.float32) * 2.0)[:, None]
    order = scores.argsort()[::-1]
    x1, y1, x2, y2 = shifted.T
    areas = (x2 - x1) * (y2 - y1)
    keep: list[int] = []
    while order.size:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        ix = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0.0, None)
        iy = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0.0, None)
        inter = ix * iy
        order = rest[inter <= iou * (areas[i] + areas[rest] - inter)]
    return keep
