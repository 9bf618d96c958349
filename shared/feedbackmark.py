"""An operator's word on a verdict (cloud.feedback), as a verdict carries it (`Verdict.feedback`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .text import plain_or_as_is


class FeedbackMark(BaseModel):
    """Who confirmed or corrected the verdict (`by`), when (`at_ms`, epoch ms), why (`note`) and what the
    verdict said before (`was`)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    by: Annotated[str, BeforeValidator(plain_or_as_is), Field(min_length=1, max_length=64)]
    at_ms: Annotated[int, Field(ge=0, lt=1 << 53)]
    note: Annotated[str, BeforeValidator(plain_or_as_is), Field(max_length=300)] = ""
    was: Literal["alert", "benign", "unknown"]
