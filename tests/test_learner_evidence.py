"""What teaches the suppression learner and what a proposal rests on (issue 40, cloud/teach/suppress/learner.py), on its
own: only the model's (or the check's) judgement of this very crop and the operator's word teach; a policy's
verdict, a cache hit, a site offer, a fallback, a provisional answer and an event the operator corrected to
alert do not; one event counts once; a proposal says what it used (its evidence, its sources, its looks) and
where (its region, its sizes), and its similarity bar keeps the camera's real visitors out.

The real SQLite stores and JPEGs made here (no video); the appearance embeddings are the test's own, given
through the learner's `embed` seam, so that the bar's arithmetic is checked to the digit.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict

import cv2
import numpy as np
import pytest
from edgetriage.cloud.storage.store import SQLiteStore, StoreError
from edgetriage.cloud.teach.suppress import learner as learner_module
from edgetriage.cloud.teach.suppress.config import SuppressionsConfig
from edgetriage.cloud.teach.suppress.learner import (
    ALERT,
    FORGET,
    MAX_REMEMBERED,
    Learner,
    Sighting,
    _remember,
    taught_as,
)
from edgetriage.cloud.teach.suppress.store import SQLiteSuppressions
from edgetriage.shared.cropkeys import decode_jpeg, phash_dct64
from edgetriage.shared.embedding import similarity
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict

PLACE = (0.5, 0.25, 0.75, 0.75)  # quarters: areas and centres exact in binary
T0 = int(time.time() * 1000) - 3_600_000


def _jpeg(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    image = cv2.resize(rng.integers(0, 255, (5, 3, 3), dtype=np.uint8), (96, 160), interpolation=cv2.INTER_CUBIC)
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()


LOOK, OTHER = _jpeg(1), _jpeg(2)


def _vector(*values: int) -> bytes:
    return np.array(list(values) + [0] * (256 - len(values)), np.int8).tobytes()


class Camera:
    """One camera's stored events (real SQLite), a learner over them, the embeddings it is given and what it
    sends the device."""

    def __init__(self, tmp_path, embeddings: dict[str, bytes] | None = None, **config) -> None:
        self.events = SQLiteStore(tmp_path / "cloud.db")
        self.proposals = SQLiteSuppressions(self.events.path)
        self.embeddings = embeddings  # event id -> embedding; None: no embedder at all
        self.crops: dict[bytes, str] = {}
        self.sent: list[tuple[str, list]] = []
        self.learner = Learner(SuppressionsConfig(**config), self.proposals, self.events,
                               embed=None if embeddings is None else self._embed,
                               publish=lambda device, rules: self.sent.append((device, [r.id for r in rules])))
        self.n = 0

    def _embed(self, jpeg: bytes) -> bytes | None:
        return self.embeddings.get(self.crops[jpeg])

    def event(self, jpeg: bytes = LOOK, *, box=PLACE, camera: str = "porch", device: str = "pi-door",
              label: str = "person", ms: int | None = None, embedding: bytes | None = None,
              crop_box: bool = True) -> str:
        """A stored escalation with its own crop (the look's JPEG with its own comment, so each event's crop is
        its own bytes and the same picture)."""
        self.n += 1
        t = T0 + self.n if ms is None else ms
        crop = jpeg[:2] + b"\xff\xfe\x00\x06" + self.n.to_bytes(4, "big") + jpeg[2:]  # a COM segment
        event = Event(event_id=uuid7(t), device=device, camera=camera, captured_ms=t, label=label, score=0.4,
                      uncertain=True, track_id=self.n, detections=[Detection(label=label, score=0.4, box=box)],
                      phash="0f0f0f0f0f0f0f0f", reason="uncertain", crop=crop, crop_box=box if crop_box else None)
        self.events.put_event(event, t)
        self.crops[crop] = event.event_id
        if embedding is not None and self.embeddings is not None:
            self.embeddings[event.event_id] = embedding
        return event.event_id

    def learn(self, ids: list[str], source: str = "model", now_ms: int | None = None) -> list:
        if source == "model":  # the learner's own default: a verdict's benign is the model's
            return [self.learner.learn(i, now_ms=now_ms) for i in ids]
        return [self.learner.learn(i, source, now_ms=now_ms) for i in ids]

    def close(self) -> None:
        self.learner.close()
        self.proposals.close()
        self.events.close()


@pytest.fixture
def camera(tmp_path):
    made: list[Camera] = []

    def make(embeddings=None, **config) -> Camera:
        (tmp_path / str(len(made))).mkdir()
        made.append(Camera(tmp_path / str(len(made)), embeddings, **config))
        return made[-1]

    yield make
    for cam in made:
        cam.close()


def _verdict(event_id: str, verdict: str = "benign", **kw) -> Verdict:
    fields = {"event_id": event_id, "device": "pi-door", "camera": "porch", "label": "person", "verdict": verdict,
              "confidence": 0.9, "description": "", "model": "m", "created_ms": T0, "decided_by": "model", **kw}
    return Verdict(**fields)


# -- what teaches ------------------------------------------------------------------------------------------
def test_only_the_models_the_checks_and_the_operators_judgement_teach():
    assert taught_as(_verdict(uuid7())) == "model"
    assert taught_as(_verdict(uuid7(), decided_by="check")) == "model"
    assert taught_as(_verdict(uuid7(), decided_by=None)) == "model"  # an older cloud's verdict: the model's
    assert taught_as(_verdict(uuid7(), decided_by="operator", source="cloud_cache")) == "feedback"
    assert taught_as(_verdict(uuid7(), decided_by="policy")) is None
    assert taught_as(_verdict(uuid7(), source="cloud_cache", reused_from=uuid7())) is None  # hit or site offer
    assert taught_as(_verdict(uuid7(), source="fallback")) is None


def test_verdicts_teach_only_when_final_benign_and_honest(camera):
    cam = camera(min_events=3)
    ids = [cam.event() for _ in range(3)]
    for event_id in ids:
        cam.learner.on_verdict(_verdict(event_id, provisional=True))  # a later verdict replaces it
        cam.learner.on_verdict(_verdict(event_id, decided_by="policy"))
        cam.learner.on_verdict(_verdict(event_id, source="cloud_cache", reused_from=uuid7()))
        cam.learner.on_verdict(_verdict(event_id, verdict="unknown"))
    cam.learner.drain()
    assert cam.proposals.all() == []
    for event_id in ids[:2]:
        cam.learner.on_verdict(_verdict(event_id))
    cam.learner.on_feedback(_verdict(ids[2], decided_by="operator"))
    cam.learner.drain()
    (proposal,) = cam.proposals.all()
    assert proposal.sources == {"feedback": 1, "model": 2} and proposal.evidence == ids


def test_a_learner_switched_off_hears_nothing(camera):
    cam = camera(min_events=2, enabled=False)
    ids = [cam.event() for _ in range(2)]
    for event_id in ids:
        cam.learner.on_verdict(_verdict(event_id))
        cam.learner.on_verdict(_verdict(event_id, verdict="alert"))
        cam.learner.on_feedback(_verdict(event_id, decided_by="operator"))
        cam.learner.on_feedback(_verdict(event_id, verdict="alert", decided_by="operator"))
    assert cam.learner._thread is None  # nothing was even queued
    cam.learner.drain()
    assert cam.proposals.all() == [] and cam.learner.proposed == 0


def test_an_event_counts_once_however_often_it_is_said_benign(camera):
    cam = camera(min_events=3)
    one, two = cam.event(), cam.event()
    assert cam.learn([one, one, two]) == [None, None, None]
    assert cam.learn([one], "feedback") == [None]  # the operator agreeing adds no second sighting
    assert cam.proposals.all() == []
    assert cam.learn([cam.event()])[0].count == 3


def test_events_used_in_a_proposal_never_make_another(camera):
    cam = camera(min_events=3, expiry_s=60, window_s=30 * 86400.0)
    ids = [cam.event() for _ in range(3)]
    first = cam.learn(ids)[2]
    later = first.rule.expires_ms + 1  # the first no longer answers them
    assert cam.learn(ids, "feedback", now_ms=later) == [None, None, None]
    assert cam.learn(ids, "model", now_ms=later) == [None, None, None]
    assert len(cam.proposals.all()) == 1
    fresh = cam.learn([cam.event() for _ in range(3)], now_ms=later)[2]
    assert fresh is not None and fresh.evidence != first.evidence


def test_the_operators_alert_outweighs_the_models_benign_until_the_operator_says_benign(camera):
    cam = camera(min_events=3)
    ids = [cam.event() for _ in range(3)]
    cam.learner.on_feedback(_verdict(ids[0], verdict="alert", decided_by="operator"))
    cam.learner.drain()
    assert cam.learn(ids) == [None, None, None]  # the first is out: two of three
    proposal = cam.learn([ids[0]], "feedback")[0]
    assert proposal is not None and proposal.sources == {"model": 2, "feedback": 1}


def test_the_operators_benign_is_their_latest_word(camera):
    """Corrected to alert, then said benign by the operator: the model's later benign of it counts again."""
    cam = camera(min_events=2, window_s=10.0)
    old = cam.event(ms=T0)
    cam.learner.forget(old)
    assert cam.learn([old], "feedback", now_ms=T0) == [None]  # counted, no longer corrected
    cam.learn([cam.event(jpeg=OTHER, ms=T0 + 20_000)], now_ms=T0 + 20_000)  # the window moves on: old drops
    assert cam.learn([old], now_ms=T0) == [None]  # the model's word on it counts again
    assert cam.learn([cam.event(ms=T0 + 1)], now_ms=T0 + 1)[0].evidence[0] == old


def test_an_alert_withdraws_the_suppression_made_with_it_and_the_device_is_told(camera, caplog):
    caplog.set_level(logging.INFO, logger="edgetriage.cloud.suppress")
    cam = camera(min_events=3, auto_accept=True)
    ids = [cam.event() for _ in range(3)]
    accepted = cam.learn(ids)[2]
    assert (accepted.status, accepted.decided_by) == ("accepted", "auto") and cam.sent == [("pi-door", [accepted.id])]
    cam.learner.on_feedback(_verdict(ids[1], verdict="alert", decided_by="operator"))
    cam.learner.drain()
    (withdrawn,) = cam.proposals.all()
    assert (withdrawn.status, withdrawn.decided_by, cam.learner.withdrawn) == ("rejected", "feedback", 1)
    assert cam.sent[-1] == ("pi-door", [])
    assert f"suppression {accepted.id} withdrawn: the operator said event {ids[1]} was an alert" in caplog.messages
    cam.learner.forget(ids[2])  # rejected already: not withdrawn twice, nothing sent again
    cam.learner.forget(cam.event())  # in no proposal
    assert cam.learner.withdrawn == 1 and len(cam.sent) == 2


def test_a_proposal_withdrawn_before_it_was_accepted_sends_the_device_nothing(camera):
    cam = camera(min_events=2)
    ids = [cam.event() for _ in range(2)]
    cam.learn(ids)
    cam.learner.learn(ids[0], FORGET)
    (withdrawn,) = cam.proposals.all()
    assert withdrawn.status == "rejected" and cam.sent == [] and cam.learner.withdrawn == 1
    other = [cam.event(OTHER) for _ in range(2)]
    cam.learn(other)
    cam.learner.learn(other[1], FORGET)
    assert cam.learner.withdrawn == 2 and {p.status for p in cam.proposals.all()} == {"rejected"}


# -- what a sighting is ------------------------------------------------------------------------------------------
def test_a_sighting_carries_the_clouds_keys_of_its_crop(camera):
    cam = camera({}, min_events=2)
    event_id = cam.event(embedding=_vector(100))
    seen = cam.learner.sighting(event_id, "feedback")
    event = cam.events.get_event(event_id)
    assert seen == Sighting(event_id, "pi-door", "porch", "person", PLACE,
                            phash_dct64(decode_jpeg(cam.events.get_crop(event_id))), _vector(100),
                            event["captured_ms"], "feedback")
    assert seen.phash != "0f0f0f0f0f0f0f0f"  # never the device's
    plain = camera(min_events=2)
    assert plain.learner.sighting(plain.event(), "model").embedding is None  # no embedder: no embedding


def test_what_cannot_be_placed_or_seen_is_no_sighting(camera):
    cam = camera(min_events=2, labels=["car"])
    assert cam.learner.sighting(cam.event(label="person"), "model") is None  # not a label that may be suppressed
    assert cam.learner.sighting(cam.event(label="car"), "model") is not None
    assert cam.learner.sighting(cam.event(label="car", crop_box=False), "model") is None
    assert cam.learner.sighting(cam.event(b"\xff\xd8\xff\xfe\x00\x02", label="car"), "model") is None
    assert cam.learner.sighting(uuid7(), "model") is None
    cropless = Event(event_id=uuid7(), device="pi-door", camera="porch", captured_ms=T0, label="car", score=0.4,
                     track_id=1, detections=[Detection(label="car", score=0.4, box=PLACE)], phash="0f0f0f0f0f0f0f0f",
                     reason="uncertain", crop=LOOK, crop_box=PLACE).model_copy(update={"crop": b""})  # over quota
    cam.events.put_event(cropless, T0)
    assert cam.learner.sighting(cropless.event_id, "model") is None
    assert camera(min_events=2).learner.sighting(cam.event(label="person"), "model") is None  # another store


# -- what adds up: one place, one size, one look, one window ----------------------------------------------------
def _pair(camera, first_box, second_box, **config) -> bool:
    cam = camera(min_events=2, **config)
    return cam.learn([cam.event(box=first_box), cam.event(box=second_box)])[1] is not None


def test_one_place_is_centres_within_near_across_and_down(camera):
    assert _pair(camera, (0.0, 0.25, 0.25, 0.5), (0.25, 0.25, 0.5, 0.5), near=0.25)  # exactly near: one place
    assert not _pair(camera, (0.0, 0.25, 0.25, 0.5), (0.25, 0.25, 0.5, 0.5), near=0.2)  # a box's width apart
    assert not _pair(camera, (0.0, 0.25, 0.25, 0.5), (0.25, 0.25, 0.5, 0.5), near=0.125)
    assert not _pair(camera, (0.5, 0.0, 0.75, 0.25), (0.5, 0.5, 0.75, 0.75), near=0.25)  # half a frame down
    assert _pair(camera, (0.5, 0.0, 0.75, 0.25), (0.5, 0.25, 0.75, 0.5), near=0.25)


def test_one_size_is_within_twice_the_area(camera):
    assert _pair(camera, (0.5, 0.5, 0.75, 0.75), (0.5, 0.5, 0.75, 1.0))  # twice: the same thing
    assert _pair(camera, (0.5, 0.5, 0.75, 1.0), (0.5, 0.5, 0.75, 0.75))  # either way round
    assert not _pair(camera, (0.5, 0.5, 0.75, 0.75), (0.5, 0.5, 0.875, 1.0))  # three times


def test_other_looks_cameras_devices_and_labels_do_not_add_up(camera):
    cam = camera(min_events=2)
    assert cam.learn([cam.event(), cam.event(OTHER)]) == [None, None]
    assert cam.learn([cam.event(camera="yard"), cam.event(device="pi-gate"), cam.event(label="car")]) == [None] * 3
    assert cam.proposals.all() == []


def test_a_look_alike_by_hash_reaches_within_max_distance(camera):
    far = hamming_of(LOOK, OTHER)
    assert not _pair_looks(camera, max_distance=far - 1) and _pair_looks(camera, max_distance=far)


def hamming_of(a: bytes, b: bytes) -> int:
    return bin(int(phash_dct64(decode_jpeg(a)), 16) ^ int(phash_dct64(decode_jpeg(b)), 16)).count("1")


def _pair_looks(camera, **config) -> bool:
    cam = camera(min_events=2, **config)
    return cam.learn([cam.event(LOOK), cam.event(OTHER)])[1] is not None


def test_sightings_count_within_the_window_to_its_first_millisecond(camera):
    cam = camera(min_events=3, window_s=10.0)
    ids = [cam.event(ms=T0), cam.event(ms=T0 + 5_000), cam.event(ms=T0 + 10_000)]
    assert cam.learn(ids[:2], now_ms=T0 + 5_000) == [None, None]
    assert cam.learn(ids[2:], now_ms=T0 + 10_000)[0] is not None  # T0 is exactly window_s back: still in
    late = camera(min_events=3, window_s=10.0)
    ids = [late.event(ms=T0), late.event(ms=T0 + 5_000), late.event(ms=T0 + 10_001)]
    assert late.learn(ids, now_ms=T0 + 10_001) == [None, None, None]


def test_the_window_ends_at_the_newest_of_the_clock_and_the_sighting(camera):
    """A sighting captured after the learner's clock (a device clock ahead) still moves the window."""
    cam = camera(min_events=3, window_s=10.0)
    ids = [cam.event(ms=T0), cam.event(ms=T0 + 1_000), cam.event(ms=T0 + 20_000)]
    assert cam.learn(ids, now_ms=T0 + 1_000) == [None, None, None]


def test_another_devices_suppression_does_not_cover_this_one(camera):
    cam = camera(min_events=2)
    mine = cam.learn([cam.event(device="pi-gate"), cam.event(device="pi-gate")])[1]
    theirs = cam.learn([cam.event(), cam.event()])[1]
    assert mine is not None and theirs is not None and (mine.device, theirs.device) == ("pi-gate", "pi-door")
    assert cam.learner.proposed == 2
    assert cam.learn([cam.event()]) == [None]  # the device's own covers it


# -- what a proposal says ------------------------------------------------------------------------------------
def test_a_proposal_says_where_what_size_until_when_and_from_which_events(camera, caplog):
    caplog.set_level(logging.INFO, logger="edgetriage.cloud.suppress")
    cam = camera(min_events=3, margin=0.03333, expiry_s=600, max_distance=5, min_inside=0.6)
    boxes = [(0.0123, 0.5077, 0.2, 0.9), (0.02, 0.5511, 0.2123, 0.99), (0.015, 0.52, 0.205, 0.95)]
    ids = [cam.event(box=b) for b in boxes]
    cam.learn(ids[:2])
    now = T0 + 123_456
    proposal = cam.learn(ids[2:], "feedback", now_ms=now)[0]
    rule = proposal.rule
    assert rule.region == (0.0, 0.4744, 0.2456, 1.0)  # grown by the margin, inside the frame, 4 places
    assert rule.areas == (0.073635, 0.0844)  # the smallest and largest crop, 6 places
    assert (rule.camera, rule.label, rule.max_distance, rule.min_inside) == ("porch", "person", 5, 0.6)
    assert rule.min_similarity == SuppressionsConfig().min_similarity  # no alerts, no embeddings: the default bar
    assert (rule.expires_ms, proposal.created_ms, proposal.status) == (now + 600_000, now, "proposed")
    digest = hashlib.sha256(f"pi-door|porch|{ids[2]}".encode()).hexdigest()[:12]
    assert rule.id == f"s-{digest}" and proposal.device == "pi-door"
    assert (proposal.evidence, proposal.count, proposal.sources) == (ids, 3, {"feedback": 1, "model": 2})
    assert cam.learner.proposed == 1 and cam.proposals.get(rule.id) == proposal
    assert (f"suppression {rule.id} proposed for pi-door/porch (person at [0.00, 0.47, 0.25, 1.00]): 3 benign "
            "events alike within 86400 s, judged benign by feedback 1, model 2") in caplog.messages


def test_a_region_over_max_region_of_the_frame_is_not_proposed(camera):
    half = (0.0, 0.0, 0.5, 1.0)
    cam = camera(min_events=2, margin=0.0, max_region=0.5)
    assert cam.learn([cam.event(box=half), cam.event(box=half)])[1].rule.region == half  # exactly the most
    over = camera(min_events=2, margin=0.0, max_region=0.49)
    assert over.learn([over.event(box=half), over.event(box=half)]) == [None, None]
    assert over.proposals.all() == []


def test_the_evidence_keeps_the_newest_and_the_looks_spread_over_it(camera):
    looks = {}
    cam = camera(looks, min_events=40, min_similarity=0.5)
    ids = [cam.event(embedding=_vector(100, n)) for n in range(40)]
    proposal = cam.learn(ids)[39]
    assert proposal.count == 40 and proposal.evidence == ids[-32:] and proposal.sources == {"model": 40}
    assert [e.embedding for e in proposal.rule.exemplars] == [looks[ids[n]] for n in range(39, 7, -2)]
    few = camera(looks, min_events=20, min_similarity=0.5)
    ids = [few.event(embedding=_vector(100, n)) for n in range(20)]
    exemplars = few.learn(ids)[19].rule.exemplars
    assert [e.embedding for e in exemplars] == [looks[ids[n]] for n in range(19, 3, -1)]
    assert exemplars[0].phash == phash_dct64(decode_jpeg(LOOK))


# -- the bar: the camera's real visitors ---------------------------------------------------------------------
def _bar_with(camera, alerts: list[bytes], look: bytes = _vector(100), **config) -> float | None:
    cam = camera({}, min_events=2, **config)
    for n, embedding in enumerate(alerts):
        cam.learn([cam.event(OTHER, embedding=embedding)], ALERT if n % 2 == 0 else FORGET)
    proposal = cam.learn([cam.event(embedding=look), cam.event(embedding=look)])[1]
    return None if proposal is None else proposal.rule.min_similarity


def test_the_bar_stays_alert_margin_above_the_most_alike_alert(camera):
    near, far = _vector(96, 28), _vector(60, 80)  # 0.96 and 0.6 of the look
    assert similarity(_vector(100), near) == 0.96 and similarity(_vector(100), far) == 0.6
    assert _bar_with(camera, [far, near, far], alert_margin=0.03) == 0.99  # the most alike sets it; 0.99 is kept
    assert _bar_with(camera, [near], alert_margin=0.031) is None  # over 0.99: it would answer a visitor
    assert similarity(_vector(100), _vector(90, 44)) == 0.8984
    assert _bar_with(camera, [_vector(90, 44)], alert_margin=0.03333) == 0.9317  # 0.93173, to 4 places
    assert _bar_with(camera, [far], min_similarity_floor=0.85, alert_margin=0.03) == 0.85  # never under the floor
    assert _bar_with(camera, [], min_similarity=0.93) == 0.93  # no alert yet: min_similarity


def test_alerts_of_another_camera_or_without_an_embedding_set_no_bar(camera):
    cam = camera({}, min_events=2, min_similarity=0.93)
    cam.learn([cam.event(OTHER, camera="yard", embedding=_vector(100))], ALERT)
    cam.learn([cam.event(OTHER)], ALERT)  # no embedding made of it
    assert cam.learn([cam.event(embedding=_vector(100)), cam.event(embedding=_vector(100))])[1] is not None
    plain = camera(min_events=2, min_similarity=0.93)  # no embeddings at all: the hash and min_similarity
    plain.learn([plain.event(OTHER)], ALERT)
    assert plain.learn([plain.event(), plain.event()])[1].rule.min_similarity == 0.93


def test_a_look_like_the_cameras_visitor_is_never_learned_and_an_alert_is_no_sighting(camera):
    cam = camera({}, min_events=2)
    visitor = cam.event(embedding=_vector(100))
    assert cam.learn([visitor], ALERT) == [None]
    assert cam.learn([cam.event(embedding=_vector(100)) for _ in range(3)]) == [None, None, None]
    assert cam.proposals.all() == []


def test_the_bar_reads_the_newest_64_alerts(camera):
    cam = camera({}, min_events=2, alert_margin=0.0, min_similarity_floor=0.5)
    cam.learn([cam.event(OTHER, embedding=_vector(96, 28))], ALERT)  # the most alike, and the oldest
    for _ in range(64):
        cam.learn([cam.event(OTHER, embedding=_vector(60, 80))], ALERT)
    assert cam.learn([cam.event(embedding=_vector(100)), cam.event(embedding=_vector(100))])[1].rule.min_similarity \
        == 0.6


# -- decisions ------------------------------------------------------------------------------------------------
def test_decisions_send_the_device_its_live_rules_when_what_it_holds_changes(camera, caplog):
    caplog.set_level(logging.INFO, logger="edgetriage.cloud.suppress")
    cam = camera(min_events=2)
    proposal = cam.learn([cam.event(), cam.event()])[1]
    assert cam.learner.decide("s-000000000000", "accepted", "operator") is None
    before = int(time.time() * 1000)
    accepted = cam.learner.decide(proposal.id, "accepted", "operator")
    assert (accepted.status, accepted.decided_by) == ("accepted", "operator") and accepted.decided_ms >= before
    assert cam.proposals.get(proposal.id) == accepted
    assert f"suppression {proposal.id} accepted by operator" in caplog.messages
    assert cam.sent == [("pi-door", [proposal.id])]
    cam.learner.decide(proposal.id, "accepted", "operator")  # no change: nothing sent
    assert len(cam.sent) == 1
    cam.learner.decide(proposal.id, "rejected", "operator")
    assert cam.sent[-1] == ("pi-door", [])


def test_live_rules_are_the_devices_accepted_unexpired_ones(camera):
    cam = camera(min_events=2, auto_accept=True)
    rule = cam.learn([cam.event(), cam.event()])[1].rule
    cam.learn([cam.event(device="pi-gate"), cam.event(device="pi-gate")])
    cam.learn([cam.event(OTHER), cam.event(OTHER)])
    door = {p.rule.id for p in cam.proposals.all() if p.device == "pi-door"}
    assert rule.id in door and len(door) == 2
    assert {r.id for r in cam.learner.live_rules("pi-door", rule.expires_ms - 1)} == door
    assert {r.id for r in cam.learner.live_rules("pi-door", rule.expires_ms)} == door - {rule.id}  # its last ms over
    assert len(cam.learner.live_rules("pi-gate", rule.expires_ms - 1)) == 1
    left = cam.proposals.all()[-1]
    cam.learner.decide(left.id, "rejected", "operator")
    assert left.id not in [r.id for r in cam.learner.live_rules("pi-door")]


def test_a_failed_send_is_counted_and_said(camera, caplog):
    cam = camera(min_events=2)
    proposal = cam.learn([cam.event(), cam.event()])[1]
    failures = iter([OSError("broker down"), StoreError("disk"), ValueError("too big")])

    def publish(device, rules):
        raise next(failures)

    cam.learner._publish = publish
    for _ in range(3):
        assert cam.learner.send("pi-door") is False
    assert cam.learner.publish_errors == 3
    assert "suppressions for device pi-door not sent: broker down; accepting again retries" in caplog.messages
    cam.learner._publish = None
    assert cam.learner.send("pi-door") is False and cam.learner.publish_errors == 3
    cam.learner._publish = lambda device, rules: None
    assert cam.learner.send("pi-door") is True
    assert cam.learner.decide(proposal.id, "accepted", "operator").status == "accepted"


# -- the learner's thread -------------------------------------------------------------------------------------
def test_one_bad_event_does_not_stop_learning(camera, caplog):
    cam = camera({}, min_events=2)
    bad = cam.event(OTHER)

    def embed(jpeg: bytes) -> bytes | None:
        if cam.crops[jpeg] == bad:
            raise RuntimeError("no model")
        return None

    cam.learner._embed = embed
    cam.learner.observe_benign(bad, "model")
    ids = [cam.event() for _ in range(2)]
    for event_id in ids:
        cam.learner.observe_benign(event_id)  # the operator's word by default
    cam.learner.drain()
    (proposal,) = cam.proposals.all()
    assert proposal.sources == {"feedback": 2}
    assert f"learning from event {bad} failed" in caplog.messages
    thread = cam.learner._thread
    assert thread.daemon  # a learner never holds the process open at exit
    cam.learner.close()
    assert not thread.is_alive()


def test_the_events_remembered_are_bounded_newest_kept():
    ids: OrderedDict[str, None] = OrderedDict()
    for n in range(MAX_REMEMBERED):
        _remember(ids, str(n))
    _remember(ids, "0")  # said again: now the newest
    _remember(ids, "new")
    assert len(ids) == MAX_REMEMBERED == 20_000
    assert "1" not in ids and "0" in ids and list(ids)[-2:] == ["0", "new"]
    assert learner_module.MAX_ALERTS == 64


def test_a_final_alert_verdict_is_a_yardstick_for_the_bar(camera):
    cam = camera({}, min_events=2, alert_margin=0.03)
    visitor = cam.event(OTHER, embedding=_vector(90, 44))
    cam.learner.on_verdict(_verdict(visitor, verdict="alert", provisional=True))
    cam.learner.drain()
    assert cam.learn([cam.event(embedding=_vector(100)), cam.event(embedding=_vector(100))])[1].rule.min_similarity \
        == SuppressionsConfig().min_similarity  # a provisional alert sets nothing
    again = camera({}, min_events=2, alert_margin=0.03)
    visitor = again.event(OTHER, embedding=_vector(90, 44))
    again.learner.on_verdict(_verdict(visitor, verdict="alert"))
    again.learner.drain()
    assert again.learn([again.event(embedding=_vector(100)), again.event(embedding=_vector(100))])[1] \
        .rule.min_similarity == round(similarity(_vector(100), _vector(90, 44)) + 0.03, 4)


def test_forgetting_takes_a_sighting_back_and_frees_what_it_had_used(camera):
    cam = camera(min_events=3, expiry_s=60, window_s=30 * 86400.0)
    one, two = cam.event(), cam.event()
    cam.learn([one, two])
    cam.learner.forget(two)  # the operator: that was a person
    assert cam.learn([cam.event()]) == [None]  # two of three left
    three = cam.learn([two], "feedback")[0]  # the operator's benign after all
    assert three is not None and three.evidence[-1] == two
    cam.learner.forget(two)
    later = three.rule.expires_ms + 1
    assert cam.learn([two], "feedback", now_ms=later) == [None]  # no longer used: counts again, one of three
    fresh = cam.learn([cam.event()], now_ms=later) + cam.learn([cam.event()], now_ms=later)
    assert fresh[1] is not None and fresh[1].evidence[0] == two


def test_a_camera_keeps_its_newest_128_sightings(camera):
    """Four proposals' worth of evidence (4 x MAX_EVIDENCE): an older sighting no longer adds up."""
    rng = np.random.default_rng(7)

    def unlike() -> bytes:
        return rng.integers(-127, 127, 256, dtype=np.int8).tobytes()

    for others, proposed in ((126, True), (127, False)):
        cam = camera({}, min_events=2)
        first = cam.event(embedding=_vector(100))
        cam.learn([first] + [cam.event(embedding=unlike()) for _ in range(others)])
        last = cam.learn([cam.event(embedding=_vector(100))])[0]
        assert (last is not None) is proposed
        assert last is None or last.evidence[0] == first


def test_the_learners_names_are_its_public_interface():
    names: dict = {}
    exec("from edgetriage.cloud.teach.suppress.learner import *", names)  # noqa: S102
    assert {"Learner", "Sighting", "taught_as"} <= set(names)


def test_a_region_stays_inside_the_frame_at_every_edge(camera):
    for boxes, region in ((((0.01, 0.02, 0.2, 0.3),) * 2, (0.0, 0.0, 0.23, 0.33)),
                          (((0.8, 0.75, 0.99, 0.98),) * 2, (0.77, 0.72, 1.0, 1.0))):
        cam = camera(min_events=2)
        assert cam.learn([cam.event(box=b) for b in boxes])[1].rule.region == region
