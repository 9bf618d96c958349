"""Per-camera thresholds from evidence: what a higher score floor would have done to a camera's escalations.

Every escalated event carries the device's score and got a verdict. A floor `t` (the device's `min_score`, with
its `uncertain_band` starting no lower, so that an uncertain track under it is dropped too) would have kept
every escalation scored under `t` on the device: those are the escalations avoided, and the ones among them
whose verdict was `alert` (or `unknown`: nobody could say) the people missed. `propose` picks the highest floor
just above a benign escalation's score that stays `margin` under every wanted one (so misses nobody seen so
far, with room for a person scored a little lower next time) and avoids at least `min_avoided`; an operator's
verdict (cloud.teach.feedback) counts as the truth where there is one.

Only honest judgements teach (`judged`): a benign escalation is evidence for a floor only where the model (or
the check table) judged that very crop, or the operator did. A verdict the operator's policy decided saw a
person the policy allowed then (a daytime visitor): a floor drops that person at night too, so it counts as a
wanted escalation. A cache hit (a copy of another crop's verdict, maybe another device's) and a fallback are
left out; the proposal's `evidence` says how many of each. Nothing changes on the device until the
proposal is accepted: `accept` merges it into the device's retained remote configuration (cloud.broker.push; the
other sections and overrides stay as they were) as a rule override for that camera. With `[thresholds] auto`,
`AutoThresholds` does that itself for proposals within the config's bounds.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Any

from ...shared import clock
from ...shared.config import MQTTConfig
from ..broker.push import PushResult, config_message, push_config
from ..config import CloudConfig, ThresholdsConfig
from ..storage.store import Store
from .feedback import is_operator_verdict
from .suppress.publish import retained_config as read_retained

log = logging.getLogger("edgetriage.cloud.thresholds")

DEVICE_BAND = (0.2, 0.5)  # the device's default uncertain_band and min_score (edge rules), when not told
MARGIN = 0.05  # a proposed floor stays this far under the lowest score of an escalation that was wanted
HISTORY_MAX = 5000  # the newest escalations of a camera a proposal reads


def judged(verdict: dict[str, Any]) -> str:
    """What a stored verdict is as evidence for a floor: "benign" (the model's, the check's or the operator's
    judgement of this crop), "wanted" (an alert, an unknown, a person a policy allowed), or what leaves it out:
    "reuse" (a cache hit's copy), "fallback"."""
    if verdict.get("decided_by") == "operator":
        return "benign" if verdict["verdict"] == "benign" else "wanted"
    if verdict.get("source") == "fallback":
        return "fallback"
    if verdict["verdict"] != "benign" or verdict.get("decided_by") == "policy":
        return "wanted"
    return "reuse" if verdict.get("source") == "cloud_cache" else "benign"


def _wanted(verdict: dict[str, Any]) -> bool:
    """An escalation the cloud had to see: an alert, one nobody could tell (unknown), a person a policy allowed."""
    return judged(verdict) == "wanted"


def outcome(rows: list[dict[str, Any]], floor: float) -> dict[str, int]:
    """What a floor would have done to these escalations (rows with a verdict)."""
    under = [r for r in rows if r["score"] < floor]
    return {"escalations": len(rows), "escalations_avoided": len(under),
            "people_missed": sum(_wanted(r["verdict"]) for r in under)}


def propose(store: Store, device: str, camera: str, *, since_ms: int | None = None,
            band: tuple[float, float] = DEVICE_BAND, min_score: float | None = None, margin: float = MARGIN,
            min_avoided: int = 3) -> dict[str, Any]:
    """The proposal for one camera: the current settings' and the proposed ones' figures, and the evidence. Its
    `proposed` is None when no floor avoids `min_avoided` escalations and stays `margin` under the wanted ones."""
    answered = [r for r in store.list_events(device, None, HISTORY_MAX, camera=camera, since_ms=since_ms)
                if r["verdict"] is not None]
    kinds = [judged(r["verdict"]) for r in answered]
    rows = [r for r, kind in zip(answered, kinds, strict=True) if kind in ("benign", "wanted")]
    floor_now = band[0] if min_score is None else max(min_score, band[0])
    wanted = [r["score"] for r in rows if _wanted(r["verdict"])]
    limit = min([band[1], *(s - margin for s in wanted)])  # above the band: sure detections, not a threshold's
    best: float | None = None
    for floor in sorted({math.ceil(r["score"] * 100 + 1 - 1e-6) / 100 for r in rows
                         if r["score"] >= floor_now and not _wanted(r["verdict"])}):
        if floor > limit + 1e-9:
            break
        if outcome(rows, floor)["escalations_avoided"] >= min_avoided:
            best = floor
    out: dict[str, Any] = {
        "device": device, "camera": camera, "since_ms": since_ms,
        "current": {"min_score": floor_now, "uncertain_band": list(band), **outcome(rows, floor_now)},
        "proposed": None,
        "evidence": {"verdicts": len(rows), "alerts_or_unknown": len(wanted),
                     "benign": len(rows) - len(wanted),
                     "by_operator": sum(is_operator_verdict(r["verdict"]) for r in rows),
                     "policy_decided": sum(r["verdict"].get("decided_by") == "policy" for r in rows),
                     "left_out": {"reuse": kinds.count("reuse"), "fallback": kinds.count("fallback")},
                     "lowest_wanted_score": min(wanted) if wanted else None},
    }
    if best is not None:
        out["proposed"] = {"min_score": best, "uncertain_band": [max(band[0], best), band[1]],
                           **outcome(rows, best)}
    return out


def propose_for(store: Store, config: ThresholdsConfig, device: str, camera: str, now_ms: int | None = None,
                since_ms: int | None = None) -> dict[str, Any]:
    """`propose` with the [thresholds] settings (its band, margin, least avoided, history)."""
    now = now_ms if now_ms is not None else clock.now_ms()
    since = since_ms if since_ms is not None else now - int(config.history_days * 86_400_000)
    return propose(store, device, camera, since_ms=since, band=config.band, margin=config.margin,
                   min_avoided=config.min_avoided)


def cameras_seen(store: Store, since_ms: int) -> list[tuple[str, str]]:
    """(device, camera) of every camera with escalations received since `since_ms` (the newest HISTORY_MAX)."""
    return sorted({(r["device"], r["camera"]) for r in store.list_events(limit=HISTORY_MAX, since_ms=since_ms)})


class AutoThresholds:
    """[thresholds] auto: every camera with escalations in the history, its proposal pushed when it misses nobody
    and stays at or under `max_min_score` (once per floor: the same floor is not pushed again)."""

    def __init__(self, store: Store, config: CloudConfig) -> None:
        self.store = store
        self.config = config
        self.pushed: dict[tuple[str, str], float] = {}

    def run_once(self, now_ms: int | None = None) -> list[dict[str, Any]]:
        """The proposals pushed this time."""
        bounds = self.config.thresholds
        now = now_ms if now_ms is not None else clock.now_ms()
        done = []
        for device, camera in cameras_seen(self.store, now - int(bounds.history_days * 86_400_000)):
            proposal = propose_for(self.store, bounds, device, camera, now)
            new = proposal["proposed"]
            if new is None or new["people_missed"] or new["min_score"] > bounds.max_min_score \
                    or self.pushed.get((device, camera)) == new["min_score"]:
                continue
            result = accept(self.config.mqtt, device, camera, new)
            if result.outcome == "published":
                self.pushed[(device, camera)] = new["min_score"]
                done.append({"device": device, "camera": camera, **new, "version": result.version,
                             "evidence": proposal["evidence"]})
        return done

    async def loop(self) -> None:
        """Until cancelled: `run_once` every interval, off the event loop; a failed round is logged and retried."""
        while True:
            await asyncio.sleep(self.config.thresholds.interval_s)
            try:
                for done in await asyncio.to_thread(self.run_once):
                    evidence = done["evidence"]
                    log.info("thresholds: pushed min_score %.2f to %s/%s (%d escalations avoided, nobody missed; "
                             "from %d benign judged by the model or operator, %d wanted, %d left out)",
                             done["min_score"], done["device"], done["camera"], done["escalations_avoided"],
                             evidence["benign"], evidence["alerts_or_unknown"], sum(evidence["left_out"].values()))
            except Exception:  # noqa: BLE001 - a broker or store outage: the next round tries again
                log.exception("thresholds: the automatic round failed")


def retained_config(mqtt: MQTTConfig, device: str, wait_s: float = 2.0) -> dict[str, Any]:
    """The device's retained remote configuration as a push document (cloud.teach.suppress.publish reads it the same
    way); a broker that cannot be reached raises ConnectionError rather than answer {} and lose the sections."""
    return read_retained(mqtt, device, wait_s)


def merged(config: dict[str, Any], camera: str, proposed: dict[str, Any]) -> dict[str, Any]:
    """`config` with the camera's rule override (no zone) set to the proposal's floor and band."""
    rules = dict(config.get("rules") or {})
    overrides = [dict(o) for o in rules.get("overrides") or []]
    mine = next((o for o in overrides if o.get("camera") == camera and o.get("zone") is None), None)
    if mine is None:
        mine = {"camera": camera}
        overrides.append(mine)
    mine["min_score"] = proposed["min_score"]
    mine["uncertain_band"] = list(proposed["uncertain_band"])
    rules["overrides"] = overrides
    return {**config, "rules": rules}


def accept(mqtt: MQTTConfig, device: str, camera: str, proposed: dict[str, Any], *, wait_s: float = 0.0) -> PushResult:
    """Push the proposal to the device (its retained remote configuration, merged; a new version)."""
    doc = merged(retained_config(mqtt, device), camera, proposed)
    version, payload = config_message(
        doc, version=f"thresholds-{camera}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    )
    return push_config(mqtt, device, payload, version=version, wait_s=wait_s)
