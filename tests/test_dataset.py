"""`edgetriage cloud export-dataset` (issues 27 and 38, material for retraining): the stored crops labelled by the
cloud's closer look, chosen by their verdicts, read back with a real COCO reader (pycocotools) and as YOLO files.
A real SQLite store, the real CLI, the real translator."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from edgetriage.cli import main
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.cloud.teach.feedback import Feedback
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


@pytest.fixture(scope="module")
def empty_jpeg(clip_one_by_one) -> bytes:
    """The spot where visitors stand, before anyone came: nothing the closer look would call an object."""
    import cv2

    cap = cv2.VideoCapture(str(clip_one_by_one))
    cap.set(cv2.CAP_PROP_POS_MSEC, 1_000)
    ok, frame = cap.read()
    cap.release()
    assert ok
    return cv2.imencode(".jpg", frame[0:400, 370:560])[1].tobytes()


@pytest.fixture
def stored(tmp_path, visitor_jpeg, empty_jpeg) -> tuple[Path, dict[str, Event]]:
    """A store with one of each kind of verdict, and the cloud config that names it."""
    store = SQLiteStore(tmp_path / "cloud.db")
    now = int(time.time() * 1000)
    events = {
        "alert": _stored(store, visitor_jpeg, 1, "alert"),
        "benign": _stored(store, empty_jpeg, 2, "benign"),  # the device saw a person in an empty spot
        "unsure": _stored(store, visitor_jpeg, 3, "alert", confidence=0.5),
        "corrected": _stored(store, visitor_jpeg, 0, "alert", confidence=0.95),  # the oldest
        "policy": _stored(store, visitor_jpeg, 5, "benign", decided_by="policy"),  # a person the policy allows
        "old": _stored(store, visitor_jpeg, 6, "alert", received_ms=now - 3 * DAY_MS),
        "unknown": _stored(store, visitor_jpeg, 7, "unknown"),
        "nothing": _stored(store, empty_jpeg, 9, "alert"),  # an alert on a crop with nothing in it
    }
    events["copy"] = _stored(store, visitor_jpeg, 8, "alert", source="cloud_cache",  # a look-alike's cache hit
                             reused_from=events["corrected"].event_id)
    Feedback(store, lambda v: True, lambda v, o: None, lambda s: [], {}).give(
        events["corrected"].event_id, verdict="benign", note="the cleaner: allowed")
    store.close()
    config = tmp_path / "cloud.toml"
    config.write_text(f'store_path = "{tmp_path / "cloud.db"}"\n[retention]\ncrops_days = 2\nevents_days = 30\n')
    return config, events


def test_coco_export_reads_back_with_pycocotools_every_crop_and_label(stored, tmp_path, capsys, visitor_jpeg):
    """Issue 38: an operator's correction of the verdict (alert -> benign: "this person is allowed") keeps the
    person a person; a hard negative is a crop where the closer look finds nothing; the boxes are the closer
    look's, the class names one fixed list; the manifest says which verdicts each label came from."""
    from edgetriage.cloud.teach.dataset import CLASSES
    from pycocotools.coco import COCO

    config, events = stored
    out = tmp_path / "coco"
    assert main(["cloud", "export-dataset", "--config", str(config), "--since", "30d", "--format", "coco",
                 "--json", str(out)]) == 0
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert counts["images"] == 5 and counts["operator"] == 1 and counts["operator_reuse"] == 1
    assert counts["model"] == 3 and counts["hard_negatives"] == 1 and counts["positives"] == 4
    assert counts["skipped"] == {"low confidence": 1, "past retention": 1, "verdict unknown": 1,
                                 "alert, but the closer look finds nothing": 1}
    coco = COCO(str(out / "annotations.json"))
    images = coco.loadImgs(coco.getImgIds())
    by_event = {img["edgetriage"]["event_id"]: img for img in images}
    assert set(by_event) == {events[k].event_id for k in ("alert", "benign", "corrected", "copy", "policy")}
    width, height = jpeg_size(visitor_jpeg)
    assert [c["name"] for c in coco.loadCats(coco.getCatIds())] == list(CLASSES)  # fixed, whatever was sent
    person = coco.getCatIds(catNms=["person"])
    device_box = [0.2 * width, 0.1 * height, 0.6 * width, 0.8 * height]  # where the device's box falls
    for key in ("alert", "corrected", "copy", "policy"):  # a person, whatever the verdict says of them
        img = by_event[events[key].event_id]
        assert (out / img["file_name"]).read_bytes() == visitor_jpeg
        assert (img["width"], img["height"]) == (width, height)
        anns = coco.loadAnns(coco.getAnnIds(imgIds=[img["id"]]))
        assert [a["category_id"] for a in anns] == person and img["edgetriage"]["hard_negative"] is False
        assert anns[0]["bbox"] != pytest.approx(device_box, abs=0.5)  # the closer look's box, not the device's
        assert anns[0]["bbox"][2] * anns[0]["bbox"][3] > 0.2 * width * height
    negative = by_event[events["benign"].event_id]
    assert coco.getAnnIds(imgIds=[negative["id"]]) == [] and negative["edgetriage"]["hard_negative"] is True
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["items"][0]["event_id"] == events["corrected"].event_id  # the operator's first
    assert [i["mark"] for i in manifest["items"]] == ["operator", "operator_reuse", "model", "model", "model"]
    assert by_event[events["corrected"].event_id]["edgetriage"]["verdict"] == "benign"
    assert manifest["labels_from"] == {"hard negative": {"benign by model": 1},
                                       "person": {"alert by model": 1, "benign by operator": 2,
                                                  "benign by policy": 1}}


def test_yolo_export_has_a_label_file_per_crop_and_refuses_a_used_folder(stored, tmp_path, capsys):
    config, events = stored
    out = tmp_path / "yolo"
    assert main(["cloud", "export-dataset", "--config", str(config), "--format", "yolo", str(out)]) == 0
    labels = {p.stem: p.read_text().split() for p in (out / "labels").glob("*.txt")}
    assert set(labels) == {events[k].event_id for k in ("alert", "benign", "corrected", "copy", "policy")}
    assert all((out / "images" / f"{name}.jpg").is_file() for name in labels)
    cls, cx, cy, w, h = labels[events["alert"].event_id]
    assert cls == "0" and 0.3 < float(cx) < 0.7 and float(w) * float(h) > 0.2
    assert labels[events["benign"].event_id] == [] and labels[events["corrected"].event_id][0] == "0"
    assert 'names: ["person", "bicycle", "car",' in (out / "data.yaml").read_text()
    capsys.readouterr()
    assert main(["cloud", "export-dataset", "--config", str(config), "--format", "yolo", str(out)]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert main(["cloud", "export-dataset", "--config", str(config), "--since", "last week", str(tmp_path / "x")]) == 2
