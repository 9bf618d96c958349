"""`edgetriage cloud export-dataset`: the stored crops with labels from their verdicts, as COCO or YOLO, for
fine-tuning the edge detector elsewhere (cloud.teach.dataset says which crops and how they are marked). Reads the
store the cloud config names (SQLite file or Redis), so it runs beside the service or without it."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now_s: float | None = None) -> int:
    """--since as epoch ms: `7d`/`12h`/`30m` ago, epoch ms, or an ISO 8601 date or time (UTC unless it says)."""
    text = text.strip()
    now = time.time() if now_s is None else now_s
    ago = _AGO.match(text)
    if ago:
        return int((now - float(ago.group(1)) * _UNIT_S[ago.group(2)]) * 1000)
    if text.isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--since {text!r}: give 7d, 12h, 30m (ago), epoch ms, or a date like 2026-12-01 "
                         "or 2026-12-01T08:00+01:00") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def cmd_export_dataset(args: argparse.Namespace) -> int:
    from .cloud.config import load_cloud_config
    from .cloud.storage.redis_store import open_store
    from .cloud.teach.dataset import DatasetError, export_dataset

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        print(f"edgetriage: error: {exc}", file=sys.stderr)
        return 2
    config = load_cloud_config(args.config)
    from .cloud.analysis.translator import Translator

    looking = Translator()  # the cloud's closer look labels each crop
    store = open_store(config)
    try:
        manifest = export_dataset(store, Path(args.out), looking, fmt=args.format, since_ms=since,
                                  retention=config.retention, min_confidence=args.min_confidence)
    except DatasetError as exc:
        print(f"edgetriage: error: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    counts = manifest["counts"]
    if args.json:
        print(json.dumps({"out": str(args.out), "format": args.format, **counts}))
    else:
        print(f"{args.out}: {counts['images']} crops as {args.format} ({counts['operator']} marked by an operator, "
              f"{counts['model']} by the model; {counts['positives']} with a box, {counts['hard_negatives']} hard "
              f"negatives); left out: {counts['skipped'] or 'none'}; manifest.json lists each")
    return 0


def add_parser(csub: Any) -> None:
    cmd = csub.add_parser(
        "export-dataset", help="write the stored crops, labelled by the cloud's closer look (COCO or YOLO), for "
                               "retraining",
        description="Writes the crops the cloud stored, chosen by their verdicts (operator-confirmed or corrected "
                    "first, then the cloud's verdicts at or above --min-confidence) and labelled by the cloud's own "
                    "detector at full size: each object it is sure of is a box of a fixed class list, a crop where "
                    "it finds nothing is a hard negative; a verdict says what the operator wants, not what is in "
                    "the picture. manifest.json says which verdicts each label came from. Crops older than the "
                    "config's [retention] crops_days are left out. OUT must be new or empty.",
        epilog="example:\n  edgetriage cloud export-dataset --config cloud.toml --since 7d --format coco ./dataset",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("out", metavar="OUT", help="the folder to write (new or empty)")
    cmd.add_argument("--since", help="only events received since: 7d, 12h, 30m (ago), epoch ms or an ISO date/time "
                                     "(default: all kept)")
    cmd.add_argument(
        "--format",
        choices=("coco", "yolo"),
        default="coco",
        help="coco (annotations.json) or yolo (labels/*.txt, data.yaml); default coco",
    )
    cmd.add_argument("--config", metavar="FILE", help="the cloud's TOML config, for its store and retention "
                                                    "(default: ./var/cloud.db, 7 days of crops)")
    cmd.add_argument("--min-confidence", type=float, default=0.8, metavar="P",
                     help="model verdicts below this confidence are left out (default 0.8)")
    cmd.add_argument("--json", action="store_true", help="print the counts as one JSON line")
    cmd.set_defaults(func=cmd_export_dataset)
