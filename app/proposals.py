"""`edgetriage cloud proposals --device D --camera C [--accept]`: the score floor the camera's verdict history
proposes, with what it would have done (escalations avoided, people missed); `--accept` pushes it to the device
(cloud.teach.thresholds). Reads the store the cloud config names, so it runs beside the service or without it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .export import parse_since


def cmd_proposals(args: argparse.Namespace) -> int:
    from .cloud.config import load_cloud_config
    from .cloud.storage.redis_store import open_store
    from .cloud.teach.thresholds import accept, propose_for

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        print(f"edgetriage: error: {exc}", file=sys.stderr)
        return 2
    config = load_cloud_config(args.config)
    store = open_store(config)
    try:
        proposal = propose_for(store, config.thresholds, args.device, args.camera, since_ms=since)
        cur, new = proposal["current"], proposal["proposed"]
        cur["device_floor"] = device_floor(store, args.device, args.camera, proposal["since_ms"], cur["min_score"])
    finally:
        store.close()
    if args.json:
        print(json.dumps(proposal))
    else:
        print(f"{args.device}/{args.camera}: {cur['escalations']} escalations with a verdict; {now_words(cur)}")
        if new is None:
            print("no change proposed: no higher floor avoids escalations without missing a person")
        else:
            print(f"proposed: min_score {new['min_score']:.2f}, uncertain_band {new['uncertain_band']}: "
                  f"{new['escalations_avoided']} escalations avoided, {new['people_missed']} people missed")
    if not args.accept or new is None:
        return 0 if new is not None or not args.accept else 1
    result = accept(config.mqtt, args.device, args.camera, new, wait_s=args.wait)
    print(f"{args.device}: version {result.version} {result.outcome} ({result.topic})"
          + (f": {result.reason}" if result.reason else ""), file=sys.stderr if args.json else sys.stdout)
    return 0 if result.outcome in ("published", "applied") else 3


def device_floor(store: Any, device: str, camera: str, since_ms: int | None, configured: float) -> float:
    """The score the device escalates from on this camera, as it acted: the lower of the rules' floor and the
    lowest score it escalated here (a track its detector calls uncertain escalates under `min_score`)."""
    from .cloud.teach.thresholds import HISTORY_MAX

    rows = store.list_events(device, None, HISTORY_MAX, camera=camera, since_ms=since_ms)
    return round(min([configured, *(r["score"] for r in rows)]), 2)


def now_words(current: dict[str, Any]) -> str:
    """The device's floor as it acts, and the rules' figures only as what they are."""
    floor, rules = current["device_floor"], current["min_score"]
    if floor < rules:
        return (f"now the device escalates from score {floor:.2f} (the lowest it escalated here: its rules' "
                f"min_score {rules:.2f} holds back only tracks its detector is sure of), uncertain_band "
                f"{current['uncertain_band']}")
    return f"now the device escalates from score {floor:.2f} (min_score), uncertain_band {current['uncertain_band']}"


def add_parser(csub: Any) -> None:
    cmd = csub.add_parser(
        "proposals", help="the score floor a camera's verdict history proposes; --accept pushes it",
        description="From the camera's escalations and their verdicts (an operator's where there is one): the "
                    "highest score floor (min_score, with the uncertain band starting no lower) that would have "
                    "missed no alert, and how many escalations it would have avoided. Nothing changes without "
                    "--accept, which merges it into the device's retained remote configuration as a rule "
                    "override for the camera.",
        epilog="example:\n  edgetriage cloud proposals --config cloud.toml --device porch-pi --camera cam0",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("--device", required=True)
    cmd.add_argument("--camera", required=True)
    cmd.add_argument("--since", help="only escalations received since: 7d, 12h, epoch ms or an ISO date/time")
    cmd.add_argument("--config", metavar="FILE", help="the cloud's TOML config (store, broker)")
    cmd.add_argument("--accept", action="store_true", help="push the proposal to the device")
    cmd.add_argument("--wait", type=float, default=0.0, metavar="S", help="with --accept: wait for the device's word")
    cmd.add_argument("--json", action="store_true", help="print the proposal as one JSON line")
    cmd.set_defaults(func=cmd_proposals)
