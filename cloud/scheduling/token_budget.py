"""Token budgets per device and per fleet (the scheduler's `[scheduler.budget]`): buckets refilling continuously
at budget/hour, and what an answer cost. An event whose device (or fleet) bucket is empty is refused at once with
"unknown" saying which budget and when it refills."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..analysis import Analysis
from ..config import TokenBudgetConfig


class TokenBucket:
    """`per_hour` tokens, refilled continuously; the last request may overdraw it (its size is only known
    once answered), which the refill then repays."""

    def __init__(self, per_hour: int, now: float) -> None:
        self.per_hour = per_hour
        self.level = float(per_hour)
        self.stamp = now

    def _refill(self, now: float) -> None:
        self.level = min(float(self.per_hour), self.level + (now - self.stamp) * self.per_hour / 3600.0)
        self.stamp = now

    def left(self, now: float) -> float:
        self._refill(now)
        return self.level

    def spent(self, now: float) -> bool:
        self._refill(now)
        return self.level <= 0.0

    def take(self, tokens: float, now: float) -> None:
        self._refill(now)
        self.level -= tokens

    def refill_in_s(self, now: float) -> float:
        """Seconds until the bucket holds a token again."""
        self._refill(now)
        if self.level > 0 or self.per_hour == 0:
            return 0.0 if self.level > 0 else float("inf")
        return (1.0 - self.level) * 3600.0 / self.per_hour


class Budgets:
    """Token buckets per device and for the whole fleet."""

    def __init__(self, config: TokenBudgetConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self.fleet = TokenBucket(config.fleet_tokens_per_hour, clock()) if config.fleet_tokens_per_hour is not None \
            else None
        self.devices: dict[str, TokenBucket] = {}

    def _device(self, device: str) -> TokenBucket | None:
        per_hour = self.config.devices.get(device, self.config.device_tokens_per_hour)
        if per_hour is None:
            return None
        bucket = self.devices.get(device)
        if bucket is None:
            bucket = self.devices[device] = TokenBucket(per_hour, self.clock())
        return bucket

    def refusal(self, device: str, *, fleet_only: bool = False) -> str | None:
        """Why `device` may not use the model now, or None when it may."""
        now = self.clock()
        bucket = None if fleet_only else self._device(device)
        if bucket is not None and bucket.spent(now):
            return (f"token budget of device {device} is spent ({bucket.per_hour} tokens/hour); "
                    f"the model answers it again in {_wait_text(bucket.refill_in_s(now))}")
        if self.fleet is not None and self.fleet.spent(now):
            return (f"the fleet's token budget is spent ({self.fleet.per_hour} tokens/hour); "
                    f"the model answers again in {_wait_text(self.fleet.refill_in_s(now))}")
        return None

    def charge(self, device: str | None, tokens: float) -> None:
        now = self.clock()
        bucket = self._device(device) if device is not None else None
        if bucket is not None:
            bucket.take(tokens, now)
        if self.fleet is not None:
            self.fleet.take(tokens, now)

    def snapshot(self) -> dict[str, object]:
        now = self.clock()
        out: dict[str, object] = {}
        if self.fleet is not None:
            out["fleet_left"] = round(self.fleet.left(now))
        out["devices_spent"] = sorted(d for d, b in self.devices.items() if b.left(now) <= 0)
        return out


def _wait_text(seconds: float) -> str:
    if seconds == float("inf"):
        return "never (the budget is 0)"
    return f"about {max(1, round(seconds))} s"


def used_tokens(analysis: Analysis, estimate: int) -> float:
    """What an analysis cost, from the back-end's own count where it gave one."""
    extra = analysis.extra or {}
    prompt, new = extra.get("prompt_tokens"), extra.get("new_tokens")
    if isinstance(prompt, int | float) and isinstance(new, int | float):
        cached = extra.get("cached_tokens")
        return float(prompt + new - (cached if isinstance(cached, int | float) else 0))
    return float(estimate)
