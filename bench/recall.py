"""What a person sees and what the reference finds: the labelled visits of the shared clips, the intervals in
which the every-frame reference detector sees a person, and how many of either a run's events find. Shared by
bench/edge.py and bench/hard_cases.py."""

from __future__ import annotations

import json
from pathlib import Path


def load_labels(media: Path) -> dict[str, list[tuple[float, float]]]:
    path = media / "labels.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: [tuple(v) for v in entry.get("visits", [])] for k, entry in data.items() if isinstance(entry, dict)}


def intervals_from_hits(hit_times: list[float], frame_s: float, gap_s: float = 1.0,
                        min_s: float = 0.5) -> list[tuple[float, float]]:
    """Merge hit times closer than gap_s into intervals [first, last + one frame]; drop those under min_s."""
    merged: list[list[float]] = []
    for t in hit_times:
        if merged and t - merged[-1][1] <= gap_s:
            merged[-1][1] = t
        else:
            merged.append([t, t])
    return [(a, b + frame_s) for a, b in merged if b + frame_s - a >= min_s - 1e-9]


def found_intervals(intervals: list[tuple[float, float]], events: list[tuple[float, float]],
                    tolerance: float = 0.5) -> int:
    return sum(any(first <= b + tolerance and last >= a - tolerance for first, last in events) for a, b in intervals)


def found_visits(visits: list[tuple[float, float]], events: list[tuple[float, float]], tolerance: float = 1.0) -> int:
    """Visits matched one to one with person events overlapping them (two people at once need two events)."""
    used: set[int] = set()
    found = 0
    for a, b in sorted(visits, key=lambda v: v[1] - v[0]):
        for i, (first, last) in enumerate(events):
            if i not in used and first <= b + tolerance and last >= a - tolerance:
                used.add(i)
                found += 1
                break
    return found
