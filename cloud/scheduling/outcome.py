"""What a submitted event comes to: an Outcome, or Released / OverCapacity when nothing was decided. The types
the scheduler answers in, apart from it, so what reads an outcome (the intake, take-over, the verdict cache,
the lanes, the HTTP API) does not depend on the queue itself."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis import Analysis


class Released(Exception):
    """The scheduler stopped before this event reached the model: nothing was decided, the caller should
    leave the event to be delivered again."""


class OverCapacity(Released):
    """No room for this event now (a full queue, or its turn did not come before its deadline): nothing was
    decided; the caller leaves it stored and unanswered and takes it up again when there is room."""


@dataclass(frozen=True)
class Outcome:
    """What became of one submitted event. `analysis` None: withdrawn before dispatch because `still_needed`
    said no (ask the cache again). `refused`: why the model was not asked to the end (budget, queue_full,
    shed, deadline); `analysis` is then the "unknown" fallback saying so."""

    analysis: Analysis | None
    queue_ms: float
    started: float  # time.monotonic() when the model started on it (or when it was refused)
    refused: str | None = None
    batch: int = 0
    lane: str | None = None  # with several back-ends (cloud.route.lanes): which one answered, why, and whether for now
    routed_by: str | None = None
    provisional: bool = False
