"""Several back-ends in one cloud ([[analyzer.backends]]), as one `Backend` for whoever needs only one: the prompt
version verdicts are filed and looked up under (the large back-end's: its answers are the final ones), what the
operator's policy decides at once, and closing. cloud.lanes puts each member behind a scheduler of its own and
routes every event to one of them (cloud.routing)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from ...shared.protocol import Event
from .base import Analysis, Backend, Deciding, Leaning, Light


@dataclass(frozen=True)
class Member:
    """One configured back-end: its name and cost class (small | large), its first latency guess, the back-end."""

    name: str
    cost: str
    latency_ms: float
    backend: Backend


class Several:
    """The members, in the order the config gives them."""

    def __init__(self, members: Sequence[Member], light: Light | None = None) -> None:
        if not members:
            raise ValueError("Several needs at least one back-end")
        self.members = list(members)
        self._light = light  # the light path where no member's policy gate judges (light.LightPath)
        self._final = next((m for m in self.members if m.cost == "large"), self.members[0]).backend
        self.name = "+".join(m.name for m in self.members)[:128]
        self.max_batch = max(m.backend.max_batch for m in self.members)
        self.concurrency = sum(m.backend.concurrency for m in self.members)

    def prompt_version(self, event: Event) -> str:
        return self._final.prompt_version(event)

    def decide(self, event: Event) -> Analysis | None:
        """The operator's policy (every member holds the same one): the first member that decides."""
        deciding = next((m.backend for m in self.members if isinstance(m.backend, Deciding)), None)
        return deciding.decide(event) if deciding is not None else None

    def leaning(self, event_id: str) -> Analysis | None:
        """What the deciding member's facts and policy said of an event left to the model (base.Leaning)."""
        deciding = next((m.backend for m in self.members if isinstance(m.backend, Deciding)), None)
        return deciding.leaning(event_id) if isinstance(deciding, Leaning) else None

    def light(self, event: Event) -> Analysis | None:
        """The light path's verdict (base.Light): the deciding member's (its policies), else the check over the
        shared closer look; None where neither can say (a model is asked) or there is no light path."""
        judge = next((m.backend for m in self.members if isinstance(m.backend, Light)), None) or self._light
        return judge.light(event) if judge is not None else None

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        """Without routing (a caller holding only this object): the large member answers."""
        return await self._final.analyze_batch(events)

    def saturated(self) -> bool:
        return all(m.backend.saturated() for m in self.members)

    async def close(self) -> None:
        await asyncio.gather(*(m.backend.close() for m in self.members))
