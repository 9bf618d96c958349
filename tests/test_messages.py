"""The control messages both sides exchange (load report, remote config, device state) are the shared models:
what each side really publishes is decoded with shared.protocol's decoder, and read by the other side."""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any

import pytest
from edgetriage.cloud.broker.push import _await_state, config_message
from edgetriage.cloud.http.web.boxes import boxes_in_crop, event_boxes
from edgetriage.cloud.scheduling.scheduler import LoadState
from edgetriage.edge.config import EdgeConfig
from edgetriage.edge.daemon import EdgeDaemon
from edgetriage.edge.delivery.budget import SpendingPolicy
from edgetriage.edge.delivery.outbox import Outbox
from edgetriage.edge.remote_config import RemoteRefused, parse_update
from edgetriage.edge.stats import EdgeStats
from edgetriage.edge.vision.capture import FrameSource
from edgetriage.edge.vision.detect import DetectorConfig, build_detector
from edgetriage.edge.vision.pipeline import VisionPipeline
from edgetriage.shared.protocol import (
    CROP_MARGIN,
    DeviceState,
    LoadReport,
    ProtocolError,
    RemoteConfig,
    RemoteConfigError,
    crop_region,
    decode_device_state,
    decode_load_report,
    decode_remote_config,
    encode_device_state,
    encode_load_report,
)


def _edge_config(tmp_path: Path, mosquitto, prefix: str, **sections: Any) -> EdgeConfig:
    data: dict[str, Any] = {"device": "pi-7", "state_dir": str(tmp_path / "state"),
                            "outbox": {"path": str(tmp_path / "outbox.sqlite")},
                            "mqtt": {"url": mosquitto.url, "prefix": prefix},
                            "cameras": [{"id": "door"}], "daemon": {"metrics_port": 0}}
    data.update(sections)
    return EdgeConfig.model_validate(data)


def test_the_load_report_the_cloud_publishes_is_read_by_the_edge_in_milliseconds(tmp_path):
    now_ms = int(time.time() * 1000)
    payload = LoadState(True, 42, now_ms).payload()  # what the scheduler publishes, retained
    assert decode_load_report(payload) == LoadReport(overloaded=True, queue_depth=42, ts=now_ms)
    assert decode_load_report(encode_load_report(LoadReport(overloaded=False, ts=1))).queue_depth == 0

    config = EdgeConfig.model_validate({"outbox": {"path": str(tmp_path / "o.sqlite")}})
    stats = EdgeStats()
    outbox = Outbox(config.outbox.path, config.outbox.max_bytes, config.outbox.max_age_s, "reject_newest")
    try:
        policy = SpendingPolicy(config.device, config.budget, config.overload, outbox, stats,
                                forget=lambda _: None)
        policy.on_load(payload, "t")
        assert policy.overloaded and policy.load.queue_depth == 42
        stale = now_ms - int(config.overload.stale_s * 1000) - 5_000
        policy.on_load(LoadState(True, 42, stale).payload(), "t")
        assert not policy.overloaded  # old report: the cloud may be gone
        policy.on_load(b'{"overloaded": "maybe", "ts": 1}', "t")
        assert stats.load_invalid == 1
        policy.on_load(b"", "t")
        assert policy.load is None and not policy.overloaded
    finally:
        outbox.close()


@pytest.mark.parametrize("payload, reason", [
    (b"x" * (300 * 1024), "over the"),
    (b"[" * 4000, "nested too deeply"),
    (b"[]", "JSON object"),
    (b'{"overloaded": true}', "ts"),
    (b'{"overloaded": true, "queue_depth": -1, "ts": 1}', "queue_depth"),
])
def test_bad_load_reports_are_refused_with_a_reason(payload, reason):
    with pytest.raises(ProtocolError, match=reason):
        decode_load_report(payload)


def test_the_config_push_config_publishes_is_what_the_device_takes(tmp_path):
    version, payload = config_message({"version": "v2", "rules": {"min_score": 0.3},
                                       "model": {"name": "ssdlite_person_int8"}})
    message = decode_remote_config(payload)
    assert isinstance(message, RemoteConfig) and message.version == version == "v2"
    assert message.model is not None and len(message.model.sha256) == 64 and message.issued_ms
    update = parse_update(payload, EdgeConfig())
    assert update.version == "v2" and update.config.rules.min_score == 0.3
    assert update.model is not None and update.model.name == "ssdlite_person_int8"
    assert update.model.sha256 == message.model.sha256


@pytest.mark.parametrize("payload, reason, version", [
    (b"{nope", "not JSON", None),
    (b'{"config": {}}', "version: required", None),
    (b'{"version": "v1", "extra": 1}', "extra: unknown key", "v1"),
    (b'{"version": "v1", "config": []}', "config: must be an object", "v1"),
    (b'{"version": "v1", "model": {"sha256": "abc"}}', "model.sha256", "v1"),
    (b'{"version": "v1", "config": {"rules": {"min_score": 7}}}', "rules.min_score", "v1"),
])
def test_bad_config_messages_are_refused_naming_what_is_wrong(payload, reason, version):
    with pytest.raises(RemoteRefused, match=reason) as refused:
        parse_update(payload, EdgeConfig())
    assert refused.value.version == version
    if "min_score" not in reason:  # the schema of the sections is the device's; the rest is the shared model's
        with pytest.raises(RemoteConfigError, match=reason):
            decode_remote_config(payload)


def test_the_state_the_device_publishes_is_what_push_config_reads(tmp_path, mosquitto, prefix):
    daemon = EdgeDaemon(_edge_config(tmp_path, mosquitto, prefix))
    try:
        payload = encode_device_state(daemon.state())
    finally:
        daemon.agent.close()
    state = decode_device_state(payload)
    assert isinstance(state, DeviceState) and state.device == "pi-7" and state.running
    assert state.config.version == "file" and state.config.refused is None
    assert set(state.cameras) == {"door"} and state.model.name
    states: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    states.put(b"not json")  # ignored, not fatal
    states.put(payload)
    assert _await_state(states, "file", "t", 2.0).outcome == "applied"
    refused = state.model_dump()
    refused["config"]["refused"] = {"version": "v9", "reason": "rules.min_score: too big", "ms": 1}
    states.put(encode_device_state(DeviceState.model_validate(refused)))
    result = _await_state(states, "v9", "t", 2.0)
    assert (result.outcome, result.reason) == ("refused", "rules.min_score: too big")


def test_the_event_says_where_its_crop_was_cut_so_the_page_draws_boxes_for_any_margin(clip_one_by_one):
    """A device with a wider margin than the shared default: the event carries its crop region, and the page
    places the boxes in it (not where the default margin would put them)."""
    config = EdgeConfig.model_validate({"vision": {"crop_margin": 0.4}})
    pipeline = VisionPipeline("door", config.vision, build_detector(DetectorConfig()))
    events = []
    with FrameSource(str(clip_one_by_one), start_frame=740, max_frames=40) as source:
        for frame in source:
            events += pipeline.process(frame).new_events
            shape = frame.image.shape
    events += pipeline.finish().new_events
    assert events, "the sample segment gave no track event"
    ev = events[0]
    assert ev.crop_box == pytest.approx(crop_region(ev.box, 0.4))
    x1, y1, x2, y2 = ev.crop_box
    w, h = ev.crop_size
    assert abs(w / h - ((x2 - x1) * shape[1]) / ((y2 - y1) * shape[0])) < 0.1  # the JPEG is that region
    dets = [(d.label, d.score, tuple(d.box)) for d in ev.detections]
    drawn = event_boxes(ev.label, ev.score, dets, region=ev.crop_box)
    main = next(b for b in drawn if b["main"])
    expected = next(b for b in boxes_in_crop(dets, crop_region(ev.box, 0.4), ev.box) if b["main"])
    assert main == expected
    assert main != next(b for b in event_boxes(ev.label, ev.score, dets, margin=CROP_MARGIN) if b["main"])
