"""The product's one median and one percentile: every figure a user reads (the page, `/v1/stats`, `/metrics`,
the demo and replay summaries, the agent's summary) is computed with these, so two places never disagree on
what "median" means."""

from __future__ import annotations

import statistics
from collections.abc import Iterable


def median(values: Iterable[float], digits: int | None = 2) -> float | None:
    """The middle value (the mean of the two middle ones for an even count); None without samples; rounded
    to `digits` (None: not rounded)."""
    data = list(values)
    if not data:
        return None
    value = statistics.median(data)
    return value if digits is None else round(value, digits)


def percentile(sorted_values: list[float], q: float) -> float | None:
    """The `q` quantile (0..1) of values already sorted: the value at index q * n; None without samples."""
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


__all__ = ["median", "percentile"]
