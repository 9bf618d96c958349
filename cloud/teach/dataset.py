"""Material for retraining the edge detector elsewhere: the stored crops, labelled by the cloud's closer look at
each (`edgetriage cloud export-dataset`).

A verdict says whether the operator wants an alert, not what is in the picture: an operator who allows a person
(alert -> benign) still looks at a person. So the labels and boxes come from the cloud's own detector at the
crop's full size (the translator's closer look, `Looking`), never from the verdict or the device's boxes (a
device's box may sit on a neighbour's sliver), and the class names from one fixed list (`CLASSES`, the same ids
in every export), never from what a device sent:

- a positive: each object of `CLASSES` the closer look is sure of (>= SURE) is a box of its class;
- a hard negative (no box): the closer look finds no object of `CLASSES` at all (< ABSENT), where the device
  escalated one: its detector's mistake;
- left out: a crop with an object it cannot tell (a faint one and no sure one), and an alert on a crop where it
  finds nothing (the verdict and the picture disagree), as are `unknown`, fallbacks, low-confidence verdicts,
  crops past the retention's `crops_days` and crops retention already deleted.

The verdicts choose and order the crops: those an operator confirmed or corrected (cloud.teach.feedback; mark
`operator`), the cache hits that copied such a verdict for a look-alike (`operator_reuse`), then the cloud's own
verdicts (model, policy or check) at or above `min_confidence` (mark `model`). The manifest says for each image
its verdict and who decided it, and for each class which verdicts its labels came from (`labels_from`).

Formats: `coco` (images/ + annotations.json, readable by pycocotools) and `yolo` (images/ + labels/*.txt,
one "class cx cy w h" line per box, normalised; data.yaml names the classes). Both write manifest.json.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

import cv2
import numpy as np

from ...shared import clock
from ...shared.protocol import jpeg_size
from ..analysis.check import ABSENT, SURE
from ..config import RetentionConfig
from ..storage.store import Store
from .feedback import is_operator_verdict

FORMATS = ("coco", "yolo")
MARKS = ("operator", "operator_reuse", "model")  # the order of the images: who said what they show
CLASSES = ("person", "bicycle", "car", "motorcycle", "bus", "truck", "cat", "dog")  # class ids: index + 1 / index
MIN_CONFIDENCE = 0.8
PAGE = 500
DAY_MS = 86_400_000

Box = tuple[float, float, float, float]


class Looking(Protocol):
    """The cloud's closer look (cloud.analysis.translator.Translator.look): [(COCO label, score, box normalised
    to the image)] for a BGR image."""

    def look(self, image: np.ndarray) -> list[tuple[str, float, Box]]: ...


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
    """(mark, verdict) for a row whose crop is worth a look, or the reason it is left out."""
    verdict = row["verdict"]
    if verdict is None:
        return "no verdict"
    if verdict["verdict"] not in ("alert", "benign"):
        return f"verdict {verdict['verdict']}"
    if is_operator_verdict(verdict):  # a cache hit that copied an operator's verdict: a look-alike of it
        return ("operator_reuse" if verdict.get("source") == "cloud_cache" else "operator"), verdict["verdict"]
    if verdict.get("source") == "fallback":
        return "fallback"
    if float(verdict.get("confidence", 0.0)) < min_confidence:
        return "low confidence"
    return "model", verdict["verdict"]


def objects_in(crop: bytes, looking: Looking, verdict: str) -> list[tuple[str, Box]] | str:
    """The boxes of a crop by the closer look ([] for a hard negative), or why the crop is left out."""
    image = cv2.imdecode(np.frombuffer(crop, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return "crop does not decode"
    found = [(label, score, box) for label, score, box in looking.look(image) if label in CLASSES]
    sure = [(label, box) for label, score, box in found if score >= SURE]
    if sure:
        return sure
    if any(score >= ABSENT for _, score, _ in found):
        return "the closer look cannot tell (faint)"
    if verdict == "alert":
        return "alert, but the closer look finds nothing"
    return []


def export_dataset(store: Store, out: Path, looking: Looking, *, fmt: Literal["coco", "yolo"],
                   since_ms: int | None = None, retention: RetentionConfig | None = None,
                   min_confidence: float = MIN_CONFIDENCE, now_ms: int | None = None) -> dict[str, Any]:
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
    items = _write_images(store, out, looking, chosen, skipped)
    names = list(CLASSES)
    if fmt == "coco":
        _write_coco(out, items, names)
    else:
        _write_yolo(out, items, names)
    labels_from: dict[str, Counter[str]] = {}
    for item in items:
        for name in sorted({label for label, _ in item["boxes"]}) or ["hard negative"]:
            labels_from.setdefault(name, Counter())[f"{item['verdict']} by {item['decided_by']}"] += 1
    manifest = {"format": fmt, "since_ms": since_ms, "made_ms": now, "min_confidence": min_confidence,
                "retention_crops_days": crops_days, "classes": names,
                "labels": "the cloud's closer look at each crop (its detector at full size), not the verdict",
                "labels_from": {name: dict(sorted(c.items())) for name, c in sorted(labels_from.items())},
                "counts": {"images": len(items), **{m: sum(i["mark"] == m for i in items) for m in MARKS},
                           "positives": sum(not i["hard_negative"] for i in items),
                           "hard_negatives": sum(i["hard_negative"] for i in items), "skipped": dict(skipped)},
                "items": [{k: (v if k != "boxes" else [label for label, _ in v]) for k, v in i.items()}
                          for i in items]}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _write_images(store: Store, out: Path, looking: Looking, chosen: list[tuple[dict[str, Any], str, str]],
                  skipped: Counter[str]) -> list[dict[str, Any]]:
    items = []
    for row, mark, verdict in chosen:
        crop = store.get_crop(row["event_id"])
        size = jpeg_size(crop) if crop else None
        if crop is None or size is None:
            skipped["crop deleted"] += 1  # swept while the export ran
            continue
        boxes = objects_in(crop, looking, verdict)
        if isinstance(boxes, str):
            skipped[boxes] += 1
            continue
        name = f"{row['event_id']}.jpg"
        (out / "images" / name).write_bytes(crop)
        decided = "operator" if mark != "model" else row["verdict"].get("decided_by") or "model"
        items.append({"file": f"images/{name}", "event_id": row["event_id"], "device": row["device"],
                      "camera": row["camera"], "verdict": verdict, "decided_by": decided, "mark": mark,
                      "hard_negative": not boxes, "width": size[0], "height": size[1], "boxes": boxes})
    return items


def _write_coco(out: Path, items: list[dict[str, Any]], names: list[str]) -> None:
    categories = [{"id": n + 1, "name": name, "supercategory": "object"} for n, name in enumerate(names)]
    ids = {c["name"]: c["id"] for c in categories}
    images, annotations = [], []
    for n, item in enumerate(items, start=1):
        w, h = item["width"], item["height"]
        images.append({"id": n, "file_name": item["file"], "width": w, "height": h,
                       "edgetriage": {k: item[k] for k in ("event_id", "device", "camera", "verdict", "decided_by",
                                                           "mark", "hard_negative")}})
        for label, (x1, y1, x2, y2) in item["boxes"]:
            bw, bh = (x2 - x1) * w, (y2 - y1) * h
            annotations.append({"id": len(annotations) + 1, "image_id": n, "category_id": ids[label],
                                "bbox": [round(x1 * w, 2), round(y1 * h, 2), round(bw, 2), round(bh, 2)],
                                "area": round(bw * bh, 2), "iscrowd": 0})
    doc = {"info": {"description": "edgetriage export-dataset: crops labelled by the cloud's closer look"},
           "images": images, "annotations": annotations, "categories": categories}
    (out / "annotations.json").write_text(json.dumps(doc) + "\n", encoding="utf-8")


def _write_yolo(out: Path, items: list[dict[str, Any]], names: list[str]) -> None:
    (out / "labels").mkdir(exist_ok=True)
    for item in items:
        lines = [f"{names.index(label)} {(x1 + x2) / 2:.6f} {(y1 + y2) / 2:.6f} {x2 - x1:.6f} {y2 - y1:.6f}"
                 for label, (x1, y1, x2, y2) in item["boxes"]]
        (out / "labels" / f"{item['event_id']}.txt").write_text("".join(f"{line}\n" for line in lines))
    yaml = [f"path: {out.resolve()}", "train: images", "val: images", f"nc: {len(names)}",
            "names: [" + ", ".join(json.dumps(n) for n in names) + "]"]
    (out / "data.yaml").write_text("\n".join(yaml) + "\n", encoding="utf-8")
