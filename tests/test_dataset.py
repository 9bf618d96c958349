"""`edgetriage cloud export-dataset` (issue 27, material for retraining): the stored crops with labels from their
verdicts, read back with a real COCO reader (pycocotools) and as YOLO files. A real SQLite store, the real CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from edgetriage.cli import main
from edgetriage.cloud.feedback import Feedback
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict, jpeg_size

DAY_MS = 86_400_000
FRAME_BOX = (0.4, 0.1, 0.7, 0.9)  # the person, in the frame
CROP_BOX = (0.3, 0.0, 0.8, 1.0)  # where the device cut the crop: the person is at 0.2..0.8 x 0.1..0.9 of it


def _stored(store: SQLiteStore, jpeg: bytes, n: int, verdict: str, *, confidence: float = 0.9,
            received_ms: int | None = None, **kw) -> Event:
    t = int(time.time() * 1000) - 10_000 + n
    event = Event(event_id=uuid7(t), device="pi-door", camera="porch", captured_ms=t, label="person", score=0.4,
                  track_id=n, detections=[Detection(label="person", score=0.4, box=FRAME_BOX),
                                          Detection(label="bicycle", score=0.7, box=(0.0, 0.5, 0.2, 1.0))],
                  phash=f"{n:016x}", reason="uncertain", crop=jpeg, crop_box=CROP_BOX)
    store.put_event(event, received_ms if received_ms is not None else t)
    store.put_verdict(Verdict(event_id=event.event_id, device="pi-door", camera="porch", label="person",
                              verdict=verdict, confidence=confidence, description="", model="m", created_ms=t,
                              decided_by=kw.pop("decided_by", "model"), **kw))
    return event


@pytest.fixture
def stored(tmp_path, visitor_jpeg) -> tuple[Path, dict[str, Event]]:
    """A store with one of each kind of verdict, and the cloud config that names it."""
    store = SQLiteStore(tmp_path / "cloud.db")
    now = int(time.time() * 1000)
    events = {
        "alert": _stored(store, visitor_jpeg, 1, "alert"),
        "benign": _stored(store, visitor_jpeg, 2, "benign"),
        "unsure": _stored(store, visitor_jpeg, 3, "alert", confidence=0.5),
        "corrected": _stored(store, visitor_jpeg, 0, "alert", confidence=0.95),  # the oldest
        "policy": _stored(store, visitor_jpeg, 5, "benign", decided_by="policy"),
        "old": _stored(store, visitor_jpeg, 6, "alert", received_ms=now - 3 * DAY_MS),
        "unknown": _stored(store, visitor_jpeg, 7, "unknown"),
    }
    events["copy"] = _stored(store, visitor_jpeg, 8, "alert", source="cloud_cache",  # a look-alike's cache hit
                             reused_from=events["corrected"].event_id)
    Feedback(store, lambda v: True, lambda v, o: None, lambda s: [], {}).give(
        events["corrected"].event_id, verdict="benign", note="a coat on the chair")
    store.close()
    config = tmp_path / "cloud.toml"
    config.write_text(f'store_path = "{tmp_path / "cloud.db"}"\n[retention]\ncrops_days = 2\nevents_days = 30\n')
    return config, events


def test_coco_export_reads_back_with_pycocotools_every_crop_and_label(stored, tmp_path, capsys, visitor_jpeg):
    from pycocotools.coco import COCO

    config, events = stored
    out = tmp_path / "coco"
    assert main(["cloud", "export-dataset", "--config", str(config), "--since", "30d", "--format", "coco",
                 "--json", str(out)]) == 0
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert counts["images"] == 4 and counts["operator"] == 1 and counts["operator_reuse"] == 1
    assert counts["model"] == 2 and counts["hard_negatives"] == 3
    assert counts["skipped"] == {"low confidence": 1, "benign by policy": 1, "past retention": 1,
                                 "verdict unknown": 1}
    coco = COCO(str(out / "annotations.json"))
    images = coco.loadImgs(coco.getImgIds())
    by_event = {img["edgetriage"]["event_id"]: img for img in images}
    assert set(by_event) == {events[k].event_id for k in ("alert", "benign", "corrected", "copy")}
    width, height = jpeg_size(visitor_jpeg)
    for img in images:
        assert (out / img["file_name"]).read_bytes() == visitor_jpeg
        assert (img["width"], img["height"]) == (width, height)
    person = coco.getCatIds(catNms=["person"])
    assert len(person) == 1 and [c["name"] for c in coco.loadCats(coco.getCatIds())] == ["person"]
    positive = by_event[events["alert"].event_id]
    anns = coco.loadAnns(coco.getAnnIds(imgIds=[positive["id"]]))
    assert len(anns) == 1 and anns[0]["category_id"] == person[0]
    assert anns[0]["bbox"] == pytest.approx([0.2 * width, 0.1 * height, 0.6 * width, 0.8 * height], abs=0.02)
    for key in ("benign", "corrected", "copy"):  # hard negatives: images without a box
        img = by_event[events[key].event_id]
        assert coco.getAnnIds(imgIds=[img["id"]]) == [] and img["edgetriage"]["hard_negative"] is True
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["items"][0]["event_id"] == events["corrected"].event_id  # the operator's first
    assert [i["mark"] for i in manifest["items"]] == ["operator", "operator_reuse", "model", "model"]
    assert by_event[events["corrected"].event_id]["edgetriage"]["mark"] == "operator"


def test_yolo_export_has_a_label_file_per_crop_and_refuses_a_used_folder(stored, tmp_path, capsys):
    config, events = stored
    out = tmp_path / "yolo"
    assert main(["cloud", "export-dataset", "--config", str(config), "--format", "yolo", str(out)]) == 0
    labels = {p.stem: p.read_text().split() for p in (out / "labels").glob("*.txt")}
    assert set(labels) == {events[k].event_id for k in ("alert", "benign", "corrected", "copy")}
    assert all((out / "images" / f"{name}.jpg").is_file() for name in labels)
    cls, cx, cy, w, h = labels[events["alert"].event_id]
    assert cls == "0" and [float(v) for v in (cx, cy, w, h)] == pytest.approx([0.5, 0.5, 0.6, 0.8], abs=1e-4)
    assert labels[events["benign"].event_id] == [] and labels[events["corrected"].event_id] == []
    assert "names: [\"person\"]" in (out / "data.yaml").read_text()
    capsys.readouterr()
    assert main(["cloud", "export-dataset", "--config", str(config), "--format", "yolo", str(out)]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert main(["cloud", "export-dataset", "--config", str(config), "--since", "last week", str(tmp_path / "x")]) == 2
