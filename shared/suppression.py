"""Learned suppressions: the one rule, applied alike by the cloud (which proposes them from benign verdicts) and
the device (which answers a matching track itself as `suppressed`).

A suppression names one camera's recurring false detection: a place (`region`, x1, y1, x2, y2 normalised to the
frame), an appearance (the crop's perceptual hash and, where made, its appearance embedding: shared.cropkeys)
and a time it ends (`expires_ms`). A track matches only when all of these hold: same camera and label, its box
lies in the region (at least `min_inside` of it, the region grown by DRIFT of the box's own width and height:
the box of one thing moves by a share of its own size from sighting to sighting, so a small thing at the
region's edge is not lost by a few pixels and a large one gets no more room than its size) and is about the
size of the learned crops (`areas`, within SIZE_SLACK), its crop looks like one of the learned ones
(`exemplars`: the embedding's cosine similarity at least `min_similarity` where both have one, else the hash
within `max_distance` bits), and the rule has not expired. Place alone never matches, so a person who walks or
stands where a suppression is still looks like a person, not like the bin, and is still escalated.

On the wire a device's accepted suppressions travel in its remote configuration (shared.protocol.RemoteConfig)
as the section `suppressions = {"rules": [...]}`: versioned, validated and retained like every other section.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from .config import Strict
from .embedding import Embedding, similarity
from .ids import CAMERA_ID_RE
from .phash import hamming

MAX_SUPPRESSIONS = 64  # per device: what one remote config carries
MAX_EXEMPLARS = 16  # looks a rule keeps of what it suppresses
DEFAULT_MIN_INSIDE = 0.75
DEFAULT_SUPPRESS_SIMILARITY = 0.92
DEFAULT_SUPPRESS_DISTANCE = 6
SIZE_SLACK = 2.0  # a track's box area may be this many times smaller or larger than the learned ones
DRIFT = 0.25  # the region grows by this share of a track box's own width and height before `min_inside`
SUPPRESSION_ID_RE = r"^s-[0-9a-f]{12}$"

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Box = tuple[Unit, Unit, Unit, Unit]


class Exemplar(Strict):
    """One look of the suppressed thing: a crop's perceptual hash and, where made, its appearance embedding."""

    phash: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    embedding: Embedding | None = Field(None, repr=False)


class SuppressionRule(Strict):
    """One accepted suppression as the device applies it (see the module docstring)."""

    id: Annotated[str, Field(pattern=SUPPRESSION_ID_RE)]
    camera: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
    label: Annotated[str, Field(min_length=1, max_length=64)]
    region: Box = Field(description="x1, y1, x2, y2 normalised to the frame: where the learned crops were cut")
    areas: tuple[Unit, Unit] = Field(description="the smallest and largest learned crop, as shares of the frame")
    exemplars: Annotated[list[Exemplar], Field(min_length=1, max_length=MAX_EXEMPLARS)]
    max_distance: Annotated[int, Field(ge=0, le=32)] = DEFAULT_SUPPRESS_DISTANCE
    min_similarity: Annotated[float, Field(ge=0.5, le=1.0)] = DEFAULT_SUPPRESS_SIMILARITY
    min_inside: Annotated[float, Field(gt=0.0, le=1.0)] = DEFAULT_MIN_INSIDE
    expires_ms: Annotated[int, Field(ge=0, lt=1 << 53)]

    @model_validator(mode="after")
    def _region(self) -> SuppressionRule:
        x1, y1, x2, y2 = self.region
        if x2 <= x1 or y2 <= y1:
            raise ValueError("region must be x1, y1, x2, y2 with x1 < x2 and y1 < y2")
        if self.areas[0] > self.areas[1]:
            raise ValueError("areas must be [smallest, largest]")
        return self


class SuppressionsSection(Strict):
    """The `suppressions` section of a device's remote configuration."""

    rules: Annotated[list[SuppressionRule], Field(max_length=MAX_SUPPRESSIONS)] = []


def area(box: tuple[float, float, float, float]) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def inside(box: tuple[float, float, float, float], region: tuple[float, float, float, float]) -> float:
    """The share of `box` that lies inside `region`."""
    w = min(box[2], region[2]) - max(box[0], region[0])
    h = min(box[3], region[3]) - max(box[1], region[1])
    whole = area(box)
    return (w * h) / whole if w > 0 and h > 0 and whole > 0 else 0.0


def in_place(rule: SuppressionRule, box: tuple[float, float, float, float]) -> bool:
    """The place half of the rule: the box lies in the region (grown by DRIFT of the box's size) and is about
    the size of the learned crops."""
    size = area(box)
    if not rule.areas[0] / SIZE_SLACK <= size <= rule.areas[1] * SIZE_SLACK:
        return False
    dx, dy = DRIFT * (box[2] - box[0]), DRIFT * (box[3] - box[1])
    x1, y1, x2, y2 = rule.region
    return inside(box, (x1 - dx, y1 - dy, x2 + dx, y2 + dy)) >= rule.min_inside


def looks_alike(phash: str, embedding: bytes | None, other_phash: str, other_embedding: bytes | None, *,
                max_distance: int, min_similarity: float) -> bool:
    """The appearance half of the rule: by embedding where both have one, else by the hash."""
    if embedding is not None and other_embedding is not None:
        return similarity(embedding, other_embedding) >= min_similarity
    return hamming(phash, other_phash) <= max_distance


def suppression_matches(rule: SuppressionRule, *, camera: str, label: str, box: tuple[float, float, float, float],
                        phash: str, embedding: bytes | None, now_ms: int) -> bool:
    """Whether `rule` answers a track: same camera and label, in its place AND like one of its looks, and not
    expired."""
    if now_ms >= rule.expires_ms or camera != rule.camera or label != rule.label:
        return False
    if not in_place(rule, box):
        return False
    return any(looks_alike(phash, embedding, e.phash, e.embedding, max_distance=rule.max_distance,
                           min_similarity=rule.min_similarity) for e in rule.exemplars)


def first_match(rules: list[SuppressionRule], **track) -> SuppressionRule | None:
    """The first rule of `rules` that answers the track (keywords of `suppression_matches`), or None."""
    return next((rule for rule in rules if suppression_matches(rule, **track)), None)


__all__ = ["DRIFT", "MAX_EXEMPLARS", "MAX_SUPPRESSIONS", "Exemplar", "SuppressionRule", "SuppressionsSection", "area",
           "first_match", "in_place", "inside", "looks_alike", "suppression_matches"]
