"""P6's accounting (bench/cloud.py, bench/fleet.py): which escalations repeat a labelled visit, which of those
were answered without the model, and which reused verdicts came from another visit.

Every decision the edge agent makes to escalate a track, or to answer it from its verdict cache instead, is
a *look* at one labelled visit (labels.json): the visit whose interval overlaps the track's [first, last]
seconds best (intervals widened by 1 s, the labels' resolution; none: unlabelled). Visits with the same
interval (two people walking side by side) are told apart left to right by the track's horizontal centre,
split at the median of the looks at them. A visit keeps its identity across passes of the same clip (the
same person, replayed).

    repeat          a look whose visit was already looked at within the TTL (earlier in the pass or a
                    pass before)
    avoided         a repeat answered without the model: the device cache, or a cloud_cache verdict
    llm_avoided     avoided / repeats (the ceiling is 1.0: every first look at a visit needs the model)
    reused          looks answered from a cache (device or cloud), repeats or not; each verdict's root is
                    the model answer it was copied from (`reused_from`, else its own event id)
    other_visit     reused looks whose root is a look at another visit (or the look is unlabelled)
    wrong_reuse     other_visit looks where the model, asked again about the crop, gives another verdict
                    than the one reused (all other_visit looks when nobody asked the model), / reused
    disagreed       reused looks, of any visit, where the model asked again disagrees (the figure P6 used to
                    call wrong reuse: how consistent the model is with itself, more than whether reuse erred)
    missed          each repeat the model had to answer, with the nearest any earlier look at its visit came
                    (highest cosine of the embeddings, fewest hash bits): what any reuse key filed for that
                    visit, the model's answers and every reuse of them, could at best have matched
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edgetriage.shared.embedding import similarity
from edgetriage.shared.ids import uuid7
from edgetriage.shared.phash import hamming
from edgetriage.shared.protocol import Detection, Event, Verdict

SLACK_S = 1.0


@dataclass
class Look:
    clip: str
    run: str  # one device's run of a clip (its passes share visits)
    at_ms: int  # when decided (the clock of the run, not of the clip)
    first_ts: float
    last_ts: float
    x: float
    event_id: str | None  # escalated: its event id; answered by the device cache: None
    event: Event  # what the track sends, or would have sent had the device cache not answered
    cached: Verdict | None = None  # the verdict the device cache answered with
    visit: int | None = None


@dataclass
class Repeats:
    labels: dict[str, list[tuple[float, float]]]
    ttl_s: int = 3600
    looks: list[Look] = field(default_factory=list)
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # the first verdict per event id

    def decision(self, clip: str, run: str, track: Any, decision: Any, event_id: str | None, device: str) -> None:
        """The edge agent's on_decision hook: record escalations and device-cache answers."""
        if decision.kind not in ("escalate", "cached") or (decision.kind == "escalate" and event_id is None):
            return
        x1, _, x2, _ = track.box
        self.add(Look(clip, run, int(time.time() * 1000), float(track.first_ts), float(track.last_ts), (x1 + x2) / 2,
                      event_id if decision.kind == "escalate" else None, event_of(track, device),
                      decision.verdict if decision.kind == "cached" else None))

    def add(self, look: Look) -> None:
        """One escalation (or device-cache answer), in the order they were made."""
        self.looks.append(look)

    def verdict(self, verdict: Verdict, _latency: float | None = None) -> None:
        """The edge agent's on_verdict hook."""
        self.verdicts.setdefault(verdict.event_id, verdict)

    def _assign_visits(self) -> None:
        for clip in {look.clip for look in self.looks}:
            visits = self.labels.get(clip, [])
            mine = [look for look in self.looks if look.clip == clip]
            chosen = {id(look): _best_interval(look, visits) for look in mine}
            for interval in {visits[i] for i in chosen.values() if i is not None}:
                same = [i for i, v in enumerate(visits) if v == interval]
                at = [look for look in mine if chosen[id(look)] is not None and visits[chosen[id(look)]] == interval]
                if len(same) == 1:
                    for look in at:
                        look.visit = same[0]
                    continue
                cuts = statistics.quantiles([look.x for look in at], n=len(same)) if len(at) > 1 else []
                for look in at:
                    look.visit = same[sum(look.x > c for c in cuts)]

    def figures(self, ask: Callable[[list[Event]], list[str]] | None = None) -> dict[str, Any]:
        """The P6 figures; `ask` (events -> the model's verdicts) re-asks the model about every reused crop."""
        self._assign_visits()
        by_event = {look.event_id: look for look in self.looks if look.event_id is not None}
        first_seen: dict[tuple[str, str, int], int] = {}
        earlier: dict[tuple[str, str, int], list[Look]] = {}
        missed: list[dict[str, Any]] = []
        repeats = avoided = unanswered = 0
        per_clip: dict[str, list[int]] = {}  # clip -> [repeats, avoided]
        reused: list[tuple[Look, Verdict]] = []
        for look in self.looks:  # in the order decided
            answer = look.cached if look.cached is not None else self.verdicts.get(look.event_id or "")
            from_cache = look.cached is not None or (answer is not None and answer.source == "cloud_cache")
            if look.visit is not None:
                key = (look.run, look.clip, look.visit)
                seen = first_seen.get(key)
                if seen is not None and look.at_ms - seen <= self.ttl_s * 1000:
                    repeats += 1
                    avoided += from_cache
                    counts = per_clip.setdefault(look.clip, [0, 0])
                    counts[0] += 1
                    counts[1] += from_cache
                    unanswered += answer is None
                    if not from_cache:
                        missed.append(_nearest(look, earlier[key]))
                else:
                    first_seen[key] = look.at_ms
                earlier.setdefault(key, []).append(look)
            if from_cache and answer is not None:
                reused.append((look, answer))
        other = []
        for look, answer in reused:
            root = by_event.get(answer.reused_from or answer.event_id)
            other.append(look.visit is None or root is None or root.visit != look.visit or root.run != look.run)
        said = ask([look.event for look, _ in reused]) if ask is not None and reused else None
        disagreed = [said is not None and s != answer.verdict
                     for s, (_, answer) in zip(said or [None] * len(reused), reused, strict=True)]
        wrong = sum(o and (d or said is None) for o, d in zip(other, disagreed, strict=True))
        return {"llm_avoided": round(avoided / repeats, 3) if repeats else None,
                "wrong_reuse": round(wrong / len(reused), 4) if reused else 0.0,
                "repeats": repeats, "avoided": avoided, "unanswered": unanswered, "looks": len(self.looks),
                "unlabelled": sum(look.visit is None for look in self.looks), "reused": len(reused),
                "other_visit": sum(other), "wrong": wrong,
                "disagreed": sum(disagreed) if said is not None else None,
                "per_clip_repeats_avoided": per_clip, "missed": missed}


def _nearest(look: Look, earlier: list[Look]) -> dict[str, Any]:
    """A repeat the model answered, and how near the earlier looks at its visit came to its crop."""
    mine = look.event
    cosines = [similarity(mine.embedding, e.event.embedding) for e in earlier
               if mine.embedding is not None and e.event.embedding is not None]
    return {"clip": look.clip, "visit": look.visit, "first_s": round(look.first_ts, 2),
            "crop": list(mine.crop_size), "nearest_similarity": max(cosines, default=None),
            "nearest_bits": min((hamming(mine.phash, e.event.phash) for e in earlier), default=None)}


def _best_interval(look: Look, visits: list[tuple[float, float]]) -> int | None:
    best, score = None, 0.0
    for i, (a, b) in enumerate(visits):
        a, b = a - SLACK_S, b + SLACK_S
        overlap = min(b, look.last_ts) - max(a, look.first_ts)
        if overlap < 0:
            continue
        union = max(b, look.last_ts) - min(a, look.first_ts)
        iou = overlap / union if union > 0 else 1.0
        if best is None or iou > score:
            best, score = i, iou
    return best


def event_of(track: Any, device: str) -> Event:
    """The event a device-cache hit would have sent, had the cache not answered."""
    def unit(x: float) -> float:
        return min(1.0, max(0.0, float(x)))

    return Event(event_id=uuid7(), device=device, camera=track.camera, site="bench",
                 captured_ms=max(0, int(track.captured_ms)), label=track.label, score=unit(track.score),
                 uncertain=bool(track.uncertain), track_id=max(0, int(track.track_id)),
                 detections=[Detection(label=d.label, score=unit(d.score), box=tuple(unit(v) for v in d.box))
                             for d in track.detections[-64:]],
                 phash=track.phash, phash_alg=track.phash_alg, reason="bench re-check", crop=track.crop_jpeg,
                 crop_size=tuple(track.crop_size), embedding=getattr(track, "embedding", None))
