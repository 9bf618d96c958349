"""`[suppressions]`: when the cloud proposes a suppression, and whether it is accepted without the operator."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ....shared.config import Strict
from ....shared.suppression import DEFAULT_MIN_INSIDE, DEFAULT_SUPPRESS_DISTANCE, DEFAULT_SUPPRESS_SIMILARITY


class SuppressionsConfig(Strict):
    """A place on a camera that gave `min_events` benign events within `window_s`, all alike, is proposed as a
    suppression lasting `expiry_s`; `auto_accept` sends it to the device at once instead of waiting for the
    operator (the page and POST /v1/suppressions/{id}/accept)."""

    enabled: bool = True
    auto_accept: bool = False
    min_events: Annotated[int, Field(ge=2, le=1000)] = Field(5, description="N benign events ...")
    window_s: Annotated[float, Field(gt=0, le=30 * 86400.0)] = Field(86400.0, description="... within T seconds")
    expiry_s: Annotated[float, Field(gt=0, le=90 * 86400.0)] = 7 * 86400.0
    near: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        0.2, description="crops count as one place when their centres are this near (share of the frame)")
    margin: Annotated[float, Field(ge=0.0, le=0.5)] = Field(0.03, description="the region grows this much a side")
    max_region: Annotated[float, Field(gt=0.0, le=1.0)] = Field(0.5, description="largest region, share of the frame")
    min_inside: Annotated[float, Field(gt=0.0, le=1.0)] = DEFAULT_MIN_INSIDE
    min_similarity: Annotated[float, Field(ge=0.5, le=1.0)] = Field(
        DEFAULT_SUPPRESS_SIMILARITY, description="a rule's similarity bar while the camera has no alerts to judge by")
    min_similarity_floor: Annotated[float, Field(ge=0.5, le=1.0)] = Field(
        0.85, description="the lowest bar a rule gets, where the camera's alerts show that much is safe")
    alert_margin: Annotated[float, Field(ge=0.0, le=0.5)] = Field(
        0.03, description="a rule's bar stays this far above the most alike of the camera's recent alerts")
    max_distance: Annotated[int, Field(ge=0, le=32)] = DEFAULT_SUPPRESS_DISTANCE
    labels: list[str] = Field(default_factory=list, description="labels that may be suppressed; empty: any")
    push_wait_s: Annotated[float, Field(ge=0.0, le=60.0)] = Field(
        1.0, description="how long to wait for a device's retained config before merging into it")
