"""The asynchronous seam the scheduler drives: every back-end answers a batch of events with one Analysis each
and never raises. In-process blocking analyzers (transformers) are adapted onto it with one thread of their
own; the HTTP and vLLM back-ends are asynchronous already.

The mapping from a model's text to an Analysis lives here too, so every back-end turns the same answer into
the same verdict, and model trouble into the same "unknown" with a reason.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from ...shared.protocol import Event
from ..analysis import Analysis, Analyzer
from .answer import AnswerError, parse_answer

FALLBACK_DESCRIPTION = "no usable answer from the model"


@runtime_checkable
class Backend(Protocol):
    """What the scheduler needs from a model. `max_batch`: events per call it handles well; `concurrency`:
    calls that may run at once; `saturated()`: the model side itself refuses work (HTTP 429/503)."""

    name: str
    max_batch: int
    concurrency: int

    def prompt_version(self, label: str) -> str: ...

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]: ...

    def saturated(self) -> bool: ...

    async def close(self) -> None: ...


def fallback(name: str, version: str, reason: str, started: float, extra: dict[str, Any] | None = None) -> Analysis:
    """Verdict "unknown" for a model that gave no usable answer, saying why."""
    return Analysis(verdict="unknown", confidence=0.0, description=FALLBACK_DESCRIPTION, model=name[:128],
                    prompt_version=version, analyze_ms=(time.perf_counter() - started) * 1000,
                    error=reason[:300], extra=extra or {})


def analysis_from_text(text: str, *, name: str, version: str, started: float,
                       extra: dict[str, Any] | None = None) -> Analysis:
    """A model's raw answer as an Analysis: parsed leniently (servers without schema enforcement wrap it in
    chatter or code fences), anything unusable becomes "unknown" with the reason."""
    extra = dict(extra or {})
    extra["raw"] = text[:300]
    try:
        answer = parse_answer(text)
    except AnswerError as exc:
        return fallback(name, version, f"unusable model output ({exc})", started, extra)
    return Analysis(verdict=answer.verdict, confidence=answer.confidence, description=answer.description,
                    model=name[:128], prompt_version=version, analyze_ms=(time.perf_counter() - started) * 1000,
                    extra=extra)


class ThreadedBackend:
    """A blocking Analyzer (one that may also offer `analyze_batch(list) -> list`) on a thread of its own, so
    the event loop never waits on the model."""

    concurrency = 1

    def __init__(self, analyzer: Analyzer, max_batch: int | None = None) -> None:
        self.analyzer = analyzer
        self.name = analyzer.name
        self.max_batch = max_batch or int(getattr(analyzer, "max_batch", 1))
        self._executor: ThreadPoolExecutor | None = None

    def prompt_version(self, label: str) -> str:
        return self.analyzer.prompt_version(label)

    def saturated(self) -> bool:
        return False

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="analyzer")
        started = time.perf_counter()
        batch = list(events)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self._run, batch)
        except Exception as exc:  # noqa: BLE001 - the contract says never raise; hold the analyzer to it here
            return [fallback(self.name, self._version(e.label), f"analyzer raised {type(exc).__name__}: {exc}",
                             started) for e in batch]

    def _run(self, events: list[Event]) -> list[Analysis]:
        batched = getattr(self.analyzer, "analyze_batch", None)
        if batched is not None and len(events) > 1:
            return list(batched(events))
        return [self.analyzer.analyze(event) for event in events]

    def _version(self, label: str) -> str:
        try:
            return self.analyzer.prompt_version(label)
        except Exception:  # noqa: BLE001 - a broken prompt book must still yield an answer
            return "unknown"

    async def close(self, wait_s: float = 60.0) -> None:
        """Wait (bounded) for an analysis already running: it cannot be interrupted, and the analyzer must be
        idle before it is handed to another service."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        try:
            await asyncio.wait_for(asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True), wait_s)
        except TimeoutError:
            pass
