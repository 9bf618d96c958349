"""Crops the page shows that the store does not hold (decisions a device reported itself), kept in memory
within a byte budget, the oldest given up first."""

from __future__ import annotations

from collections import OrderedDict


class Thumbs:
    """JPEG crops by entry id, oldest first, at most `budget` bytes together."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._crops: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0

    def get(self, entry_id: str) -> bytes | None:
        return self._crops.get(entry_id)

    def keep(self, entry_id: str, jpeg: bytes) -> list[str]:
        """Hold `jpeg` for `entry_id`; the other entries whose crops were given up to stay within the budget."""
        self._crops[entry_id] = jpeg
        self._bytes += len(jpeg)
        given_up = []
        while self._bytes > self.budget and self._crops:
            old_id, old = self._crops.popitem(last=False)
            self._bytes -= len(old)
            if old_id != entry_id:
                given_up.append(old_id)
        return given_up

    def drop(self, entry_id: str) -> None:
        old = self._crops.pop(entry_id, None)
        if old is not None:
            self._bytes -= len(old)
