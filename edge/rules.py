"""What the device does with one new track: handle it locally, drop it, reuse a cached verdict, or escalate it.

A pure function of the track, the cached verdict (if any) and the rules config, so it can be read, tested
and explained in one place. Reasons are short and human: they travel with escalated events and show up in
logs and the demo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from ..shared.protocol import Verdict
from .config import RulesConfig

DecisionKind = Literal["escalate", "cached", "local", "dropped"]


class ScoredTrack(Protocol):
    """What the rules look at in a track event (edge.pipeline.TrackEvent has these)."""

    label: str
    score: float


@dataclass(frozen=True)
class Decision:
    kind: DecisionKind
    reason: str
    verdict: Verdict | None = None


class Rules:
    """The escalation policy of one device."""

    def __init__(self, config: RulesConfig) -> None:
        self.config = config
        self._labels = frozenset(config.labels)
        self._low, self._high = config.uncertain_band

    def is_uncertain(self, ev: ScoredTrack) -> bool:
        """A score inside the configured band. The band, not the vision pipeline's own `uncertain` flag,
        is what decides here, so the operator's rules config is the one place that sets the policy."""
        return self._low <= ev.score < self._high

    def decide(self, ev: ScoredTrack, cached: Verdict | None) -> Decision:
        if ev.label not in self._labels:
            return Decision("local", f"label {ev.label!r} is not escalated")
        uncertain = self.is_uncertain(ev)
        if ev.score < self.config.min_score and not uncertain:
            return Decision("dropped", f"score {ev.score:.2f} below {self.config.min_score:.2f}")
        if cached is not None:
            return Decision("cached", f"cached {cached.verdict} from {cached.event_id[:8]}", cached)
        if uncertain:
            return Decision("escalate", f"uncertain score {ev.score:.2f}")
        if self.config.escalate:
            return Decision("escalate", f"{ev.label} {ev.score:.2f}, verdict wanted")
        return Decision("local", f"confident {ev.label} {ev.score:.2f}, escalation off")
