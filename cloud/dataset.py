"""Material for retraining the edge detector elsewhere: the stored crops with labels from their verdicts
(`edgetriage cloud export-dataset`).

Which crops, in this order: those an operator confirmed or corrected (cloud.feedback; mark `operator`), the
cache hits that copied such a verdict for a look-alike (`operator_reuse`), then model verdicts at or above
`min_confidence` (mark `model`). An `alert` crop is a positive: the event's label
(the device's detection of it, moved from the frame into the crop) is its box. A `benign` crop is a hard
negative (no box): something the device took for its label that was not one. A policy's benign verdict is no
negative (the policy may allow a real person) and is left out, as are `unknown`, fallbacks, crops past the
retention's `crops_days` and crops retention already deleted. Each image says its mark in the manifest.

Formats: `coco` (images/ + annotations.json, readable by pycocotools) and `yolo` (images/ + labels/*.txt,
one "class cx cy w h" line per box, normalised; data.yaml names the classes). Both write manifest.json.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from ..shared import clock
from ..shared.protocol import crop_region, jpeg_size
from .config import RetentionConfig
from .feedback import is_operator_verdict
from .storage.store import Store

FORMATS = ("coco", "yolo")
MARKS = ("operator", "operator_reuse", "model")  # the order of the images: who said what they show
MIN_CONFIDENCE = 0.8
PAGE = 500
DAY_MS = 86_400_000


class DatasetError(ValueError):
    """An export that cannot be made as asked (the message says what to change)."""


def _events(store: Store, since_ms: int | None) -> Iterator[dict[str, Any]]:
    """Every stored event received since `since_ms`, newest first, page by page."""
    before = None
    while True:
        rows = store.list_events(limit=PAGE, before=before, since_ms=since_ms)
        yield from rows
        if len(rows) < PAGE:
            return
        before = rows[-1]["event_id"]


def label_of(row: dict[str, Any], min_confidence: float) -> tuple[str, str] | str:
    """(mark, verdict) for a row worth exporting, or the reason it is left out."""
    verdict = row["verdict"]
    if verdict is None:
        return "no verdict"
    if verdict["verdict"] not in ("alert", "benign"):
        return f"verdict {verdict['verdict']}"
    if is_operator_verdict(verdict):  # a cache hit that copied an operator's verdict: a look-alike of it
        return ("operator_reuse" if verdict.get("source") == "cloud_cache" else "operator"), verdict["verdict"]
    if verdict.get("source") == "fallback":
        return "fallback"
    if verdict.get("decided_by") == "policy" and verdict["verdict"] == "benign":
        return "benign by policy"
    if float(verdict.get("confidence", 0.0)) < min_confidence:
        return "low confidence"
    return "model", verdict["verdict"]


def box_in_crop(row: dict[str, Any]) -> tuple[float, float, float, float] | None:
    """The event's label's best detection, moved from the frame into the crop (normalised to the crop)."""
    found = [d for d in row.get("detections", []) if d["label"] == row["label"]]
    if not found:
        return None
    x1, y1, x2, y2 = max(found, key=lambda d: d["score"])["box"]
    cx1, cy1, cx2, cy2 = row.get("crop_box") or crop_region((x1, y1, x2, y2))
    w, h = cx2 - cx1, cy2 - cy1
    if w <= 0 or h <= 0:
        return None
    box = (max(0.0, (x1 - cx1) / w), max(0.0, (y1 - cy1) / h), min(1.0, (x2 - cx1) / w), min(1.0, (y2 - cy1) / h))
    return box if box[2] > box[0] and box[3] > box[1] else None


def export_dataset(store: Store, out: Path, *, fmt: Literal["coco", "yolo"], since_ms: int | None = None,
                   retention: RetentionConfig | None = None, min_confidence: float = MIN_CONFIDENCE,
                   now_ms: int | None = None) -> dict[str, Any]:
    """Write the dataset under `out` (made; it must be empty or new) and return its manifest."""
    if fmt not in FORMATS:
        raise DatasetError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DatasetError(f"{out} exists and is not an empty folder; give a new or empty OUT")
    now = now_ms if now_ms is not None else clock.now_ms()
    crops_days = (retention or RetentionConfig()).crops_days
    kept_from = now - int(crops_days * DAY_MS) if crops_days else None
    chosen: list[tuple[dict[str, Any], str, str]] = []
    skipped: Counter[str] = Counter()
    for row in _events(store, since_ms):
        if kept_from is not None and row["received_ms"] < kept_from:
            skipped["past retention"] += 1
            continue
        if not row.get("crop_bytes"):
            skipped["crop deleted"] += 1
            continue
        got = label_of(row, min_confidence)
        if isinstance(got, str):
            skipped[got] += 1
        else:
            chosen.append((row, *got))
    chosen.sort(key=lambda item: MARKS.index(item[1]))  # the operator's first, newest first within each
    (out / "images").mkdir(parents=True, exist_ok=True)
    items = _write_images(store, out, chosen, skipped)
    names = sorted({item["label"] for item in items if not item["hard_negative"]} or {"person"})
    if fmt == "coco":
        _write_coco(out, items, names)
    else:
        _write_yolo(out, items, names)
    manifest = {"format": fmt, "since_ms": since_ms, "made_ms": now, "min_confidence": min_confidence,
                "retention_crops_days": crops_days, "classes": names,
                "counts": {"images": len(items), **{m: sum(i["mark"] == m for i in items) for m in MARKS},
                           "positives": sum(not i["hard_negative"] for i in items),
                           "hard_negatives": sum(i["hard_negative"] for i in items), "skipped": dict(skipped)},
                "items": [{k: v for k, v in i.items() if k != "box"} for i in items]}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _write_images(store: Store, out: Path, chosen: list[tuple[dict[str, Any], str, str]],
                  skipped: Counter[str]) -> list[dict[str, Any]]:
    items = []
    for row, mark, verdict in chosen:
        crop = store.get_crop(row["event_id"])
        size = jpeg_size(crop) if crop else None
        if size is None:
            skipped["crop deleted"] += 1  # swept while the export ran
            continue
        box = box_in_crop(row) if verdict == "alert" else None
        if verdict == "alert" and box is None:
            skipped["no box for the label"] += 1
            continue
        name = f"{row['event_id']}.jpg"
        (out / "images" / name).write_bytes(crop)
        items.append({"file": f"images/{name}", "event_id": row["event_id"], "device": row["device"],
                      "camera": row["camera"], "label": row["label"], "verdict": verdict, "mark": mark,
                      "hard_negative": verdict == "benign", "width": size[0], "height": size[1], "box": box})
    return items


def _write_coco(out: Path, items: list[dict[str, Any]], names: list[str]) -> None:
    categories = [{"id": n + 1, "name": name, "supercategory": "object"} for n, name in enumerate(names)]
    ids = {c["name"]: c["id"] for c in categories}
    images, annotations = [], []
    for n, item in enumerate(items, start=1):
        w, h = item["width"], item["height"]
        images.append({"id": n, "file_name": item["file"], "width": w, "height": h,
                       "edgetriage": {k: item[k] for k in ("event_id", "device", "camera", "verdict", "mark",
                                                           "hard_negative")}})
        if item["box"] is not None:
            x1, y1, x2, y2 = item["box"]
            bw, bh = (x2 - x1) * w, (y2 - y1) * h
            annotations.append({"id": len(annotations) + 1, "image_id": n, "category_id": ids[item["label"]],
                                "bbox": [round(x1 * w, 2), round(y1 * h, 2), round(bw, 2), round(bh, 2)],
                                "area": round(bw * bh, 2), "iscrowd": 0})
    doc = {"info": {"description": "edgetriage export-dataset: crops labelled by verdicts"},
           "images": images, "annotations": annotations, "categories": categories}
    (out / "annotations.json").write_text(json.dumps(doc) + "\n", encoding="utf-8")


def _write_yolo(out: Path, items: list[dict[str, Any]], names: list[str]) -> None:
    (out / "labels").mkdir(exist_ok=True)
    for item in items:
        lines = []
        if item["box"] is not None:
            x1, y1, x2, y2 = item["box"]
            lines.append(f"{names.index(item['label'])} {(x1 + x2) / 2:.6f} {(y1 + y2) / 2:.6f} "
                         f"{x2 - x1:.6f} {y2 - y1:.6f}")
        (out / "labels" / f"{item['event_id']}.txt").write_text("".join(f"{line}\n" for line in lines))
    yaml = [f"path: {out.resolve()}", "train: images", "val: images", f"nc: {len(names)}",
            "names: [" + ", ".join(json.dumps(n) for n in names) + "]"]
    (out / "data.yaml").write_text("\n".join(yaml) + "\n", encoding="utf-8")
