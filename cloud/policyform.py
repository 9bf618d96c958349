"""The structured form of an operator's policy in the cloud config: an ordered list of rules, each a verdict and
conditions over the facts, and an explicit `otherwise`. It is what decides (cloud.analysis.policy): words in
a policy's `text` are compiled into this same form when the config loads, and `edgetriage cloud policy explain
"WORDS" --write` writes it here.

    [[analyzer.policies]]
    camera = "gate"
    otherwise = "model"
    [[analyzer.policies.rules]]
    verdict = "alert"
    when = [{ label = ["person"] }, { zone = "gate" }, { time = "22:00-06:00", starts_on = ["Fri", "Sat"] }]
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..shared.config import Strict

Day = Literal["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
Colour = Literal["black", "white", "grey", "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown"]
_CLOCK = r"(?:[01]\d|2[0-3]):[0-5]\d|24:00"
_KINDS = ("time", "days", "zone", "dwell_s", "people", "direction", "label", "hivis", "upper", "lower", "carries",
          "any", "all")


class CondForm(Strict):
    """One condition: exactly one of the fact keys below, optionally negated (`negated = true`)."""

    time: Annotated[str, Field(pattern=rf"^(?:{_CLOCK})-(?:{_CLOCK})$")] | None = Field(
        None, description="a local-time window HH:MM-HH:MM, start included, end excluded; may wrap midnight")
    starts_on: list[Day] | None = Field(
        None, description="with time: the days the window starts on (a window that wraps midnight belongs to "
                          "its first day: Fri 22:00-06:00 holds on Saturday 02:00)")
    days: Annotated[list[Day], Field(min_length=1)] | None = Field(None, description="the local calendar days")
    zone: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        None, description="a zone name the object stands in")
    dwell_s: Annotated[str, Field(pattern=r"^(>|>=|<|<=|=) ?\d+(\.\d+)?$")] | None = Field(
        None, description="seconds in view, compared: '> 30', '>= 30', '< 10'")
    people: Annotated[str, Field(pattern=r"^(>|>=|<|<=|=) ?\d+$")] | None = Field(
        None, description="people in the frame, compared: '> 2'")
    direction: Literal["towards", "away", "left", "right"] | None = Field(
        None, description="towards the camera (entering), away (leaving), left or right")
    label: Annotated[list[Annotated[str, Field(min_length=1, max_length=32)]], Field(min_length=1)] | None = Field(
        None, description="what the object is, any of these COCO labels ('person', 'car', 'dog' ...)")
    hivis: Literal[True] | None = Field(None, description="wears hi-vis (measured on the crop); negate for 'not'")
    upper: Colour | None = Field(None, description="upper-body colour")
    lower: Colour | None = Field(None, description="lower-body colour")
    carries: Annotated[list[Annotated[str, Field(min_length=1, max_length=32)]], Field(min_length=1)] | None = Field(
        None, description="carries any of these objects (COCO names: 'backpack', 'handbag', 'knife' ...)")
    any: Annotated[list[CondForm], Field(min_length=2)] | None = Field(None, description="either of these")
    all: Annotated[list[CondForm], Field(min_length=2)] | None = Field(None, description="all of these")
    negated: bool = Field(False, description="the condition does not hold")

    @model_validator(mode="after")
    def _one_fact(self) -> CondForm:
        named = [k for k in _KINDS if getattr(self, k) is not None]
        if len(named) != 1:
            raise ValueError(f"a condition names exactly one of {', '.join(_KINDS)} (this one: "
                             f"{', '.join(named) or 'none'})")
        if self.starts_on is not None and self.time is None:
            raise ValueError("starts_on goes with time")
        if self.time is not None and self.time.split("-")[0] == self.time.split("-")[1]:
            raise ValueError(f"time {self.time!r} starts where it ends")
        return self


class RuleForm(Strict):
    """One rule: its verdict when every condition holds (no conditions: always)."""

    verdict: Literal["alert", "benign", "model"] = Field(description="alert, benign, or model (ask the model)")
    when: list[CondForm] = Field(default_factory=list, description="the conditions, all of which must hold")
    words: Annotated[str, Field(max_length=300)] | None = Field(
        None, description="the operator's words this rule was compiled from (shown, never read)")


def clock_minutes(text: str) -> int:
    h, m = (int(x) for x in re.split(":", text))
    return h * 60 + m


__all__ = ["CondForm", "RuleForm", "clock_minutes"]
