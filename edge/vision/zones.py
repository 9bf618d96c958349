"""Where things happen in one camera's picture: named zones (a porch, a driveway) that rules refer to, and
masks (a tree in the wind, a TV screen, a road beyond the fence) where motion and detections are ignored.

Both are polygons in normalised picture coordinates (0..1, x to the right, y down), so a config survives a
change of camera resolution. As in Frigate, an object is in a zone when the bottom centre of its box (where
it stands) is inside the polygon, and a detection is masked when its box centre lies in a mask.
"""

from __future__ import annotations

from typing import Annotated

import cv2
import numpy as np
from pydantic import Field, field_validator

from ...shared.config import Strict

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Point = tuple[Unit, Unit]
Polygon = Annotated[list[Point], Field(min_length=3, max_length=64)]
Box = tuple[float, float, float, float]
ZONE_NAME = r"^[A-Za-z0-9_-]{1,32}$"


class ZoneConfig(Strict):
    """A named area of one camera's picture."""

    name: Annotated[str, Field(pattern=ZONE_NAME)]
    polygon: Polygon

    @field_validator("polygon")
    @classmethod
    def _area(cls, value: list[Point]) -> list[Point]:
        if _area(value) < 1e-6:
            raise ValueError("the polygon encloses no area; give at least 3 points that are not on one line")
        return value


def _area(polygon: list[Point]) -> float:
    """Shoelace formula: the polygon's area in normalised units."""
    total = 0.0
    for (x1, y1), (x2, y2) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        total += x1 * y2 - x2 * y1
    return abs(total) / 2.0


def inside(polygon: list[Point], x: float, y: float) -> bool:
    """Even-odd ray casting; points on an edge count as inside on the left/top edges only (consistent)."""
    result = False
    j = len(polygon) - 1
    for i in range(len(polygon)):
        xi, yi = polygon[i]
        xj, yj = polygon[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            result = not result
        j = i
    return result


class CameraGeometry:
    """One camera's zones and masks, answering the per-detection questions cheaply."""

    def __init__(self, zones: list[ZoneConfig] | None = None, masks: list[list[Point]] | None = None):
        self.zones = list(zones or [])
        self.masks = [list(m) for m in masks or []]
        names = [z.name for z in self.zones]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"zone names must be unique per camera; repeated: {', '.join(repeated)}")

    def __bool__(self) -> bool:
        return bool(self.zones or self.masks)

    def zones_of(self, box: Box) -> frozenset[str]:
        """The zones the object stands in (bottom centre of its box)."""
        if not self.zones:
            return frozenset()
        x, y = (box[0] + box[2]) / 2.0, box[3]
        return frozenset(z.name for z in self.zones if inside(z.polygon, x, y))

    def masked(self, box: Box) -> bool:
        """True when the box centre lies in a mask: the detection is ignored."""
        if not self.masks:
            return False
        x, y = (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0
        return any(inside(m, x, y) for m in self.masks)

    def motion_mask(self, width: int, height: int) -> np.ndarray | None:
        """A uint8 image of the given size, 255 where motion counts and 0 under masks; None without masks.
        The motion gate ANDs it into its difference image once per frame."""
        if not self.masks:
            return None
        image = np.full((height, width), 255, np.uint8)
        polygons = [np.array([[round(x * width), round(y * height)] for x, y in m], np.int32) for m in self.masks]
        cv2.fillPoly(image, polygons, 0)
        return image
