"""How one claimed event's verdict is made: the cache's answer; else what the policy or the check decides at
once (analysis.Deciding); else a look-alike's under way anywhere (cloud.reuse.singleflight); else the model's,
through the lanes (cloud.route.lanes). The service holds the claim, stores and publishes; this decides."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ...shared.protocol import Event, Verdict
from ...shared.reuse import bucket
from ..analysis import Analysis, Backend, decided_at_once
from ..config import CloudConfig
from ..counts.pressure import EventPressure
from ..reuse.singleflight import SingleFlight
from ..reuse.verdicts import ReuseChecks, VerdictCache
from ..route.finals import Finals
from ..route.lanes import Lanes
from ..scheduling.outcome import Outcome


async def started(lanes: Lanes) -> Lanes:
    """The lanes, their schedulers started if they were not yet (the first event, or a reuse check, starts them)."""
    if not lanes.running:
        await lanes.start()
    return lanes


def still_needed(cache: VerdictCache, backend: Backend) -> Callable[[Event], bool]:
    """The scheduler's last question before the model starts on an event: is there still no verdict?"""
    return lambda event: cache.lookup(event, backend.prompt_version(event)) is None


def background_asker(lanes: Lanes) -> Callable[[Event], Awaitable[Outcome]]:
    """The model's answer below every priority tier (a reuse check, cloud.reuse.verdicts.ReuseChecks)."""
    async def ask(event: Event) -> Outcome:
        return await (await started(lanes)).ask_in_background(event)
    return ask


@dataclass(frozen=True)
class Decider:
    config: CloudConfig
    backend: Backend
    cache: VerdictCache
    lanes: Lanes
    finals: Finals
    flights: SingleFlight
    reuse_checks: ReuseChecks
    pressure: EventPressure

    async def decide(self, event: Event, arrived: float) -> Verdict:
        """The verdict for `event` (its reuse keys the cloud's own), timed from `arrived`; see the module."""
        prompt_version = self.backend.prompt_version(event)
        for attempt in range(4):
            verdict = self.cache.answer(event, prompt_version, arrived)
            if verdict is not None:
                self.reuse_checks.sample(event, verdict)
                return verdict
            if attempt == 0 and (decided := await decided_at_once(self.backend, event)) is not None:
                return self.cache.from_model(event, decided, prompt_version, self.backend.name, arrived, arrived)
            self.finals.looked(event, arrived)  # left to a model: a first answer sent before the look, upgraded
            flight = bucket(self.cache.rule(event, prompt_version, 0))
            ahead = self.flights.take_off(event.event_id, flight, event.phash, self.config.reuse.max_distance,
                                          event.embedding, self.config.reuse.min_similarity) if attempt < 3 else None
            if ahead is not None:
                await self.flights.wait(ahead, flight, arrived + self.config.scheduler.deadline_s - time.monotonic())
                continue
            await started(self.lanes)
            with self.pressure.aside():  # waiting for the model needs no CPU here
                outcome = await self.lanes.submit(event, arrived=arrived)
            if outcome.analysis is not None:
                return self.lanes.mark(self.cache.from_model(event, outcome.analysis, prompt_version,
                                                             self.backend.name, arrived, outcome.started), outcome)
            # withdrawn: a verdict that answers it arrived while it waited; the loop takes it from the cache
        analysis = Analysis(verdict="unknown", confidence=0.0, description="", model=self.backend.name,
                            prompt_version=prompt_version, analyze_ms=0.0,
                            error="the cached verdict that answered this event while it waited expired")
        return self.cache.from_model(event, analysis, prompt_version, self.backend.name, arrived,
                                     time.monotonic())
