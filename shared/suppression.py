"""Learned suppressions: the one rule, applied alike by the cloud (which proposes them from benign verdicts) and
the device (which answers a matching track itself as `suppressed`).

A suppression names one camera's recurring false detection: a place (`region`, x1, y1, x2, y2 normalised to the
frame), an appearance (the crop's perceptual hash and, where made, its appearance embedding: shared.cropkeys)
and a time it ends (`expires_ms`). A track matches only when all of these hold: same camera and label, its box
overlaps the region by at least `min_overlap` (intersection over union), its crop looks like the learned one
(the embedding's cosine similarity at least `min_similarity` where both have one, else the hash within
`max_distance` bits), and the rule has not expired. Place alone never matches, so a person who walks or stands
where a suppression is still looks like a person, not like the bin, and is still escalated.

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
DEFAULT_MIN_OVERLAP = 0.5
DEFAULT_SUPPRESS_SIMILARITY = 0.95
DEFAULT_SUPPRESS_DISTANCE = 10
SUPPRESSION_ID_RE = r"^s-[0-9a-f]{12}$"

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Box = tuple[Unit, Unit, Unit, Unit]


class SuppressionRule(Strict):
    """One accepted suppression as the device applies it (see the module docstring)."""

    id: Annotated[str, Field(pattern=SUPPRESSION_ID_RE)]
    camera: Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
    label: Annotated[str, Field(min_length=1, max_length=64)]
    region: Box = Field(description="x1, y1, x2, y2 normalised to the frame")
    phash: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    max_distance: Annotated[int, Field(ge=0, le=32)] = DEFAULT_SUPPRESS_DISTANCE
    embedding: Embedding | None = Field(None, repr=False)
    min_similarity: Annotated[float, Field(ge=0.5, le=1.0)] = DEFAULT_SUPPRESS_SIMILARITY
    min_overlap: Annotated[float, Field(gt=0.0, le=1.0)] = DEFAULT_MIN_OVERLAP
    expires_ms: Annotated[int, Field(ge=0, lt=1 << 53)]

    @model_validator(mode="after")
    def _region(self) -> SuppressionRule:
        x1, y1, x2, y2 = self.region
        if x2 <= x1 or y2 <= y1:
            raise ValueError("region must be x1, y1, x2, y2 with x1 < x2 and y1 < y2")
        return self


class SuppressionsSection(Strict):
    """The `suppressions` section of a device's remote configuration."""

    rules: Annotated[list[SuppressionRule], Field(max_length=MAX_SUPPRESSIONS)] = []


def overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """Intersection over union of two boxes (x1, y1, x2, y2)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def looks_alike(phash: str, embedding: bytes | None, other_phash: str, other_embedding: bytes | None, *,
                max_distance: int, min_similarity: float) -> bool:
    """The appearance half of the rule: by embedding where both have one, else by the hash."""
    if embedding is not None and other_embedding is not None:
        return similarity(embedding, other_embedding) >= min_similarity
    return hamming(phash, other_phash) <= max_distance


def suppression_matches(rule: SuppressionRule, *, camera: str, label: str, box: tuple[float, float, float, float],
                        phash: str, embedding: bytes | None, now_ms: int) -> bool:
    """Whether `rule` answers a track: same camera and label, in its place AND alike, and not expired."""
    if now_ms >= rule.expires_ms or camera != rule.camera or label != rule.label:
        return False
    if overlap(box, rule.region) < rule.min_overlap:
        return False
    return looks_alike(phash, embedding, rule.phash, rule.embedding, max_distance=rule.max_distance,
                       min_similarity=rule.min_similarity)


def first_match(rules: list[SuppressionRule], **track) -> SuppressionRule | None:
    """The first rule of `rules` that answers the track (keywords of `suppression_matches`), or None."""
    return next((rule for rule in rules if suppression_matches(rule, **track)), None)


__all__ = ["MAX_SUPPRESSIONS", "SuppressionRule", "SuppressionsSection", "first_match", "looks_alike", "overlap",
           "suppression_matches"]
