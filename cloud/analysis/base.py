"""The one interface of the analysis package, the seam the service and its scheduler drive: every back-end
answers a batch of events with one Analysis each and never raises. The in-process model (transformers)
blocks, so it runs on one thread of its own (ThreadedBackend); the HTTP and vLLM back-ends are asynchronous.
Model trouble becomes the same "unknown" with a reason everywhere (`fallback`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ...shared.policycell import PolicyInputs
from ...shared.protocol import Event
from ...shared.yielding import yielding_thread

FALLBACK_DESCRIPTION = "no usable answer from the model"


@dataclass(frozen=True)
class Analysis:
    """What a back-end made of one event, already mapped onto the verdict vocabulary and held against the
    evidence (check.py): `verdict` is what the service publishes, `model_verdict` what the model itself said,
    `checked` the reason when the evidence overruled it."""

    verdict: str  # "alert" | "benign" | "unknown"
    confidence: float
    description: str
    model: str
    prompt_version: str
    analyze_ms: float
    error: str | None = None  # set when the verdict is a fallback ("unknown") rather than the model's answer
    extra: dict = field(default_factory=dict)
    facts: tuple[str, ...] = ()  # the translator's facts, as the model read them
    model_verdict: str | None = None  # the model's own verdict, before the check
    checked: str | None = None  # why the check overruled the model or replaced its description (None: neither)
    corrected: tuple[str, ...] = ()  # what the check found in the description beyond the facts (describe.KINDS)
    decided_by: str | None = None  # "policy" | "model" | "check"; None: the model's, or the check's if `checked`
    policy: str | None = None  # the operator's policy for the event, compiled, in plain words (policy.Policy.plain)
    clause: str | None = None  # the clause of it that decided, or why the model was asked
    policy_inputs: PolicyInputs | None = None  # the ranges of the event's facts the policy read (reuse)


@runtime_checkable
class Backend(Protocol):
    """What the scheduler needs from a model. `max_batch`: events per call it handles well; `concurrency`:
    calls that may run at once; `saturated()`: the model side itself refuses work (HTTP 429/503)."""

    name: str
    max_batch: int
    concurrency: int

    def prompt_version(self, event: Event) -> str: ...

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]: ...

    def saturated(self) -> bool: ...

    async def close(self) -> None: ...


@runtime_checkable
class Deciding(Protocol):
    """A back-end that can decide some events without its model (the operator's policy, the check: gate.py).
    The service asks it first, off the event loop, and publishes what it decides at once: such a verdict never
    waits in the model's queue or in a batch beside the model's events."""

    def decide(self, event: Event) -> Analysis | None: ...


@runtime_checkable
class Leaning(Protocol):
    """A deciding back-end that also says, of an event it left to the model, what the closer look's facts and the
    policy make of it meanwhile: a faint shape where the policy says alert for a person, "alert" unless the
    model finds nobody; else the facts and what is not known. Remembered by `decide` (no second look), taken
    once by the first answer (cloud.finals)."""

    def leaning(self, event_id: str) -> Analysis | None: ...


@runtime_checkable
class Light(Protocol):
    """A back-end that can give a verdict with no model for when neither model can answer within T_max (the light
    path, light.py): what the policy or the check over the closer look says, or None (a model is asked).
    Blocking: the closer look runs."""

    def light(self, event: Event) -> Analysis | None: ...


async def decided_at_once(backend: Backend, event: Event) -> Analysis | None:
    """What `backend` decides of `event` without its model (off the event loop), or None: the model is asked."""
    return await asyncio.to_thread(backend.decide, event) if isinstance(backend, Deciding) else None


def fallback(name: str, version: str, reason: str, started: float, extra: dict[str, Any] | None = None) -> Analysis:
    """Verdict "unknown" for a model that gave no usable answer, saying why."""
    return Analysis(verdict="unknown", confidence=0.0, description=FALLBACK_DESCRIPTION, model=name[:128],
                    prompt_version=version, analyze_ms=(time.perf_counter() - started) * 1000,
                    error=reason[:300], extra=extra or {})


class BlockingEngine(Protocol):
    """What ThreadedBackend runs: an in-process model that blocks while it answers."""

    name: str
    max_batch: int

    def prompt_version(self, event: Event) -> str: ...

    def analyze_batch(self, events: list[Event]) -> list[Analysis]: ...


class ThreadedBackend:
    """A blocking engine on a thread of its own, so the event loop never waits on the model."""

    concurrency = 1

    def __init__(self, engine: BlockingEngine, max_batch: int | None = None) -> None:
        self.engine = engine
        self.name = engine.name
        self.max_batch = max_batch or int(engine.max_batch)
        self._executor: ThreadPoolExecutor | None = None

    def prompt_version(self, event: Event) -> str:
        return self.engine.prompt_version(event)

    def saturated(self) -> bool:
        return False

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        if self._executor is None:
            # the model's thread yields to the loop: cache hits and first answers never wait on generation
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="analyzer",
                                                initializer=yielding_thread)
        started = time.perf_counter()
        batch = list(events)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self.engine.analyze_batch, batch)
        except Exception as exc:  # noqa: BLE001 - the contract says never raise; hold the engine to it here
            return [fallback(self.name, self._version(e), f"analyzer raised {type(exc).__name__}: {exc}",
                             started) for e in batch]

    def _version(self, event: Event) -> str:
        try:
            return self.engine.prompt_version(event)
        except Exception:  # noqa: BLE001 - a broken prompt book must still yield an answer
            return "unknown"

    async def close(self, wait_s: float = 60.0) -> None:
        """Wait (bounded) for an analysis already running: it cannot be interrupted, and the engine must be
        idle before it is handed to another service."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        try:
            await asyncio.wait_for(asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True), wait_s)
        except TimeoutError:
            pass
