"""The events waiting for the model: one job per submitted event, in a fair queue (cloud.scheduling.fairqueue),
with the counts of live foreground and background jobs the queue's bounds are read against. The room says
which job gives up its place when it is full, which are taken next, and keeps its counts true as jobs leave;
the scheduler decides when to take them and answers their submitters."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from ...shared.protocol import Event
from .fairqueue import FairQueue

BACKGROUND_QUEUE = 64  # background jobs waiting at most (below every tier, never delaying real work)


@dataclass(eq=False)
class Job:
    tier: int
    seq: int
    event: Event = field(compare=False)
    arrived: float = field(compare=False)
    deadline: float = field(compare=False)
    background: bool = field(compare=False, default=False)
    future: asyncio.Future | None = field(compare=False, default=None)
    dead: bool = field(compare=False, default=False)  # answered or withdrawn while still in the heap
    dispatched: bool = field(compare=False, default=False)  # handed to the back-end


class WaitingRoom:
    def __init__(self) -> None:
        self._queue = FairQueue()
        self.depth = 0  # live foreground jobs waiting
        self.background = 0  # live background jobs waiting

    def admits_background(self) -> bool:
        """Room for one more background job: below its own bound, and no real work waiting."""
        return self.background < BACKGROUND_QUEUE and not self.depth

    def victim(self, newcomer: Job) -> Job | None:
        """The live foreground job that gives up its place in a full room to `newcomer` (fairqueue.victim)."""
        return self._queue.victim(newcomer, lambda j: not j.dead and not j.background)

    def enter(self, job: Job) -> None:
        self._queue.push(job)
        self._count(job, +1)

    def leave(self, job: Job) -> bool:
        """`job` out of the room, marked dead; False when it had already been taken (its answer is ignored)."""
        job.dead = True
        if job.dispatched:
            return False
        self._queue.remove(job)
        self._count(job, -1)
        return True

    def ready(self, now: float) -> bool:
        """Any live job within its deadline waits."""
        return self._queue.any(lambda j: not j.dead and now < j.deadline)

    def take(self, limit: int, now: float, wanted: Callable[[Job], bool]) -> tuple[list[Job], list[Job]]:
        """(taken, withdrawn): up to `limit` live jobs in turn (fairqueue), marked dispatched, and the
        foreground ones `wanted` said no to, marked dead. Expired ones stay for their submitter's own timer."""
        taken: list[Job] = []
        withdrawn: list[Job] = []
        kept: list[Job] = []
        while len(taken) < limit:
            job = self._queue.pop()
            if job is None:
                break
            if job.dead:
                continue
            if now >= job.deadline:
                kept.append(job)  # its submitter's own timer answers it; leave it to that
                continue
            self._count(job, -1)
            if not job.background and not wanted(job):
                job.dead = True
                withdrawn.append(job)
                continue
            job.dispatched = True
            taken.append(job)
        for job in kept:
            self._queue.push(job)
        return taken, withdrawn

    def drain(self) -> list[Job]:
        """Every live job still waiting, the room left empty."""
        jobs = [job for job in self._queue.drain() if not job.dead]
        self.depth = self.background = 0
        return jobs

    def _count(self, job: Job, step: int) -> None:
        if job.background:
            self.background += step
        else:
            self.depth += step
