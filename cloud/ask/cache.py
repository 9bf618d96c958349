"""The answer cache: the same question (normalised) about the same data is answered again without work.

An entry remembers what it covered (devices, cameras, label, time range). A new event, or a new verdict,
that falls in that range removes it at once; otherwise it lives `ttl_s`. Least recently used entries go
first when it is full."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Coverage:
    """What an answer was computed from: events of these devices/cameras/label in [start_ms, end_ms)."""

    devices: frozenset[str] | None  # None: all
    cameras: frozenset[tuple[str, str]] | None
    label: str | None
    start_ms: int | None
    end_ms: int | None  # None: open (up to now, so every later event is in range)

    def holds(self, device: str, camera: str, label: str, captured_ms: int | None) -> bool:
        if self.devices is not None and device not in self.devices:
            return False
        if self.cameras is not None and (device, camera) not in self.cameras:
            return False
        if self.label is not None and label != self.label:
            return False
        if captured_ms is None:
            return True  # time unknown: assume it is in range
        return ((self.start_ms is None or captured_ms >= self.start_ms)
                and (self.end_ms is None or captured_ms < self.end_ms))


@dataclass
class _Entry:
    answer: dict[str, Any]
    coverage: Coverage
    expires_ms: float


class AnswerCache:
    def __init__(self, ttl_s: float, max_entries: int, clock_ms: Callable[[], float]) -> None:
        self.ttl_ms = ttl_s * 1000
        self.max_entries = max_entries
        self._clock = clock_ms
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.invalidated = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple) -> dict[str, Any] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.expires_ms <= self._clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry.answer

    def put(self, key: tuple, answer: dict[str, Any], coverage: Coverage) -> None:
        if self.max_entries == 0 or self.ttl_ms <= 0:
            return
        with self._lock:
            self._entries[key] = _Entry(answer, coverage, self._clock() + self.ttl_ms)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def landed(self, device: str, camera: str, label: str, captured_ms: int | None) -> int:
        """An event (or its verdict) arrived: drop every answer whose range it falls in. Returns how many."""
        with self._lock:
            stale = [k for k, e in self._entries.items() if e.coverage.holds(device, camera, label, captured_ms)]
            for key in stale:
                del self._entries[key]
        self.invalidated += len(stale)
        return len(stale)
