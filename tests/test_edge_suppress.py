"""Learned suppressions on the device, with the real pipeline (YOLOX-Nano, the MobileNetV2 classifier and its
embedding) on the shipped one-by-one clip: a person-shaped object pasted at the left of the room is answered as
`suppressed` once a rule for it arrives in the remote config, with the rule's id in the decision line and the
metrics; a real visitor standing exactly there is still escalated; an expired rule answers nothing; a rule that
is not valid is refused with the rest of its config message."""

from __future__ import annotations

import json
import logging
import time

import cv2
import numpy as np
import pytest
from conftest import MEDIA, clip_frame
from edgetriage.edge.config import CameraConfig, EdgeConfig
from edgetriage.edge.metrics import DeviceSnapshot, EdgeMetrics
from edgetriage.edge.remote_config import RemoteRefused, parse_update
from edgetriage.edge.replay import Replayer
from edgetriage.edge.vision.capture import Frame
from edgetriage.shared.suppression import Exemplar, SuppressionRule, area, inside
from prometheus_client import generate_latest

CLIP = MEDIA / "one-by-one-person-detection.mp4"
AT = (20, 130)  # where the object stands, pixels of the 768x432 frame
FPS = 10.0


def _cutout(second: float) -> np.ndarray:
    cut = clip_frame(CLIP, second)[0:400, 370:560]
    return cv2.resize(cut, (133, 280), interpolation=cv2.INTER_AREA)


def _frames(start_s: float, paste: np.ndarray, t0_ms: int, seconds: float = 4.0, at=AT) -> list[Frame]:
    cap = cv2.VideoCapture(str(CLIP))
    out = []
    try:
        for i in range(round(seconds * FPS)):
            cap.set(cv2.CAP_PROP_POS_MSEC, (start_s + i / FPS) * 1000)
            ok, image = cap.read()
            assert ok
            x, y = at
            image[y:y + paste.shape[0], x:x + paste.shape[1]] = paste
            out.append(Frame(i, i / FPS, t0_ms + round(i * 1000 / FPS), image))
    finally:
        cap.release()
    return out


def _at_place(events, paste):
    place = (AT[0] / 768, AT[1] / 432, (AT[0] + paste.shape[1]) / 768, (AT[1] + paste.shape[0]) / 432)
    return [e for e in events if e.event.label == "person" and e.event.crop_box is not None
            and e.event.crop_box[0] < place[2] and e.event.crop_box[2] > place[0] and e.event.crop_box[2] < 0.35]


@pytest.fixture(scope="module")
def cutouts():
    return {"object": _cutout(12.0), "visitor": _cutout(60.0)}


def _config(rules: list[SuppressionRule] | None = None, **settings) -> EdgeConfig:
    base = EdgeConfig(device="pi-room", cameras=[CameraConfig(id="room", source="room.avi")], **settings)
    if rules is None:
        return base
    section = {"rules": [json.loads(r.model_dump_json()) for r in rules]}
    message = json.dumps({"version": "s-1", "config": {"suppressions": section}}).encode()
    return parse_update(message, base).config  # the device's own parser, as a remote config arrives


def _run(config: EdgeConfig, detector, stages, frames: list[Frame]):
    session = Replayer(config, detector=detector, stages=stages).session("room.avi")
    for frame in frames:
        session.process(frame)
    session.finish()
    return session.events


def _rule_from(events, expires_ms: int) -> SuppressionRule:
    ev = events[0].event
    x1, y1, x2, y2 = ev.crop_box
    return SuppressionRule(id="s-0123456789ab", camera="room", label="person",
                           region=(max(0.0, x1 - 0.03), max(0.0, y1 - 0.03), min(1.0, x2 + 0.03), min(1.0, y2 + 0.03)),
                           areas=(area(ev.crop_box), area(ev.crop_box)),
                           exemplars=[Exemplar(phash=e.event.phash, embedding=e.event.embedding) for e in events],
                           expires_ms=expires_ms)


@pytest.fixture(scope="module")
def learned(detector, stages, cutouts):
    """A rule made from the object's first appearance (the empty room, 0-4 s), as the cloud would send it."""
    events = _at_place(_run(_config(), detector, stages, _frames(0.0, cutouts["object"], 1_800_000_000_000)),
                       cutouts["object"])
    assert events and all(e.decision.kind == "escalate" for e in events)
    return _rule_from(events, int(time.time() * 1000) + 3_600_000)


def test_the_object_is_suppressed_and_a_visitor_standing_there_is_escalated(detector, stages, cutouts, learned,
                                                                            caplog):
    now = int(time.time() * 1000)
    config = _config([learned])
    later = _at_place(_run(config, detector, stages, _frames(45.0, cutouts["object"], now)), cutouts["object"])
    assert later and {e.decision.kind for e in later} == {"suppressed"}
    assert learned.id in later[0].decision.reason
    standing = _at_place(_run(config, detector, stages, _frames(69.0, cutouts["visitor"], now)), cutouts["visitor"])
    assert standing and "escalate" in {e.decision.kind for e in standing}
    assert "suppressed" not in {e.decision.kind for e in standing}


def test_the_object_moved_by_a_share_of_its_size_is_still_suppressed_a_visitor_there_is_not(detector, stages,
                                                                                         cutouts, learned):
    """The object pushed 60 px to the right (0.45 of its width; a third of its box out of the learned region):
    still the same thing at the same place (shared.suppression.DRIFT), so suppressed; a visitor standing at
    the moved place is still escalated."""
    now = int(time.time() * 1000)
    config = _config([learned])
    moved = (AT[0] + 60, AT[1])

    def at_moved(what: str, start_s: float):
        events = _run(config, detector, stages, _frames(start_s, cutouts[what], now, at=moved))
        return [e for e in events if e.event.label == "person" and e.event.crop_box is not None
                and e.event.crop_box[0] < 0.3 and e.event.crop_box[2] > moved[0] / 768]

    pushed = at_moved("object", 45.0)
    assert pushed and {e.decision.kind for e in pushed} == {"suppressed"}
    assert any(inside(e.event.crop_box, learned.region) < learned.min_inside for e in pushed)  # drifted out
    standing = at_moved("visitor", 69.0)
    assert standing and {e.decision.kind for e in standing} == {"escalate"}


def test_an_expired_rule_answers_nothing(detector, stages, cutouts, learned):
    expired = learned.model_copy(update={"expires_ms": int(time.time() * 1000) - 1})
    later = _at_place(_run(_config([expired]), detector, stages,
                           _frames(45.0, cutouts["object"], int(time.time() * 1000))), cutouts["object"])
    assert later and {e.decision.kind for e in later} == {"escalate"}


def test_the_agent_logs_and_counts_the_rule(detector, stages, cutouts, learned, mosquitto, prefix, tmp_path, caplog):
    from edgetriage.edge.agent import EdgeAgent

    now = int(time.time() * 1000)
    events = _at_place(_run(_config(), detector, stages, _frames(45.0, cutouts["object"], now)), cutouts["object"])
    settings = {"state_dir": str(tmp_path), "mqtt": {"url": mosquitto.url, "prefix": prefix}}
    config = _config([learned], **settings)
    agent = EdgeAgent(config, detector=detector)
    try:
        with caplog.at_level(logging.INFO, logger="edgetriage.edge.agent"):
            decision, event_id = agent.decide("room", events[0].event)
        assert decision.kind == "suppressed" and event_id is None
        assert any(r.message.startswith("decision suppressed") and learned.id in r.message for r in caplog.records)
        assert agent.stats.suppressed == 1 and agent.suppressions.matched == {learned.id: 1}
        assert agent.delivery.outbox.depth().get("pending", 0) == 0  # nothing left the device
        metrics = EdgeMetrics(lambda: DeviceSnapshot(
            cameras=[], counters=agent.stats.counters(), outbox={}, outbox_dropped=0, mqtt_connected=True,
            cloud_overloaded=False, budget_available=0.0, config_version="s-1", config_refusals=0, model_name="m",
            model_sha256="", model_swaps=0, model_refusals=0, watchdog_healthy=True,
            suppressed_by_rule=dict(agent.suppressions.matched)))
        text = generate_latest(metrics.registry).decode()
        assert f'edgetriage_edge_suppressed_total{{rule="{learned.id}"}} 1.0' in text
        assert 'edgetriage_edge_events_total{decision="suppressed"} 1.0' in text
        # the rule taken away by the next config: the same track escalates again
        agent.apply(_config([], **settings))
        assert agent.decide("room", events[0].event)[0].kind == "escalate"
    finally:
        agent.close()


def test_a_rule_that_is_not_valid_is_refused_with_its_message(learned):
    bad = json.loads(learned.model_dump_json())
    bad["region"] = [0.5, 0.5, 0.4, 0.9]
    message = json.dumps({"version": "s-2", "config": {"suppressions": {"rules": [bad]}}}).encode()
    with pytest.raises(RemoteRefused, match="suppressions"):
        parse_update(message, _config())
