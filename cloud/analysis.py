"""The seam between the service and whatever model answers: one small interface, several back-ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..shared.protocol import Event


@dataclass(frozen=True)
class Analysis:
    """What a model said about one event, already mapped onto the verdict vocabulary."""

    verdict: str  # "alert" | "benign" | "unknown"
    confidence: float
    description: str
    model: str
    prompt_version: str
    analyze_ms: float
    error: str | None = None  # set when the verdict is a fallback ("unknown") rather than the model's answer
    extra: dict = field(default_factory=dict)


class Analyzer(Protocol):
    """Blocking; called from a worker thread. Must never raise: model trouble becomes verdict "unknown"
    with `error` saying why."""

    name: str

    def prompt_version(self, label: str) -> str: ...

    def analyze(self, event: Event) -> Analysis: ...
