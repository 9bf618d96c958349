"""A verdict never says what its facts contradict: each kind of claim beyond the facts is caught in a model's
description, replaced by the facts' own words and counted; descriptions from facts invent nothing; the
translator names only colours people wear (synthetic torsos of known colour, and real crops of the shipped
clips, as sent and under a colour cast)."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest
from conftest import clip_crop
from edgetriage.cloud.analysis.answer import Answer
from edgetriage.cloud.analysis.calibrate import Calibration
from edgetriage.cloud.analysis.check import judged, rule
from edgetriage.cloud.analysis.colours import body_colours
from edgetriage.cloud.analysis.describe import contradictions, from_facts
from edgetriage.cloud.analysis.prompt import Prompt
from edgetriage.cloud.analysis.translator import Facts, Translator
from edgetriage.cloud.counts.servicestats import ServiceStats
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Timings, Verdict, decode_verdict, encode_verdict

BOX = (370, 10, 530, 400)  # where the visitors stand at the table in the 768x432 one-by-one clip
DENIM = Facts("person", 0.45, (0.1, 0.05, 0.9, 0.95), True, upper="blue", lower="red")  # the issue's card
NIGHT_DOOR = Facts("person", 0.92, (0.1, 0.05, 0.9, 0.95), True, (("backpack", 0.6),), upper="dark",
                   lower="blue", zones=("front_door",), local_time="22:40", dwell_s=40.0,
                   direction="towards the camera")


def _judge(said: str, description: str, facts: Facts, policy: str | None = None):
    prompt = Prompt(messages=[], version="person-3", source="test", facts=facts, policy=policy)
    answer = Answer(verdict=said, description=description, confidence=0.7)
    return judged(answer, prompt, {said: 0.7}, Calibration.load(), name="m", started=time.perf_counter(), extra={})


# -- the check ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("description", "facts", "kind"), [
    ("No person; only the background.", DENIM, "person"),
    ("Nobody there, an empty hall.", DENIM, "person"),
    ("A person in a red top and red bottom.", DENIM, "colour"),
    ("A person in a dark top holding a knife.", NIGHT_DOOR, "object"),
    ("A person in a dark top at the pool.", NIGHT_DOOR, "zone"),
    ("A person in a dark top at the front door, 14:48.", NIGHT_DOOR, "time"),
    ("A person in a dark top, in the morning.", NIGHT_DOOR, "time"),
    ("A person in a dark top who stayed 5 s.", NIGHT_DOOR, "dwell"),
    ("A person in a dark top, leaving.", NIGHT_DOOR, "direction"),
    ("A man in a grey top at the door, 22:40.", Facts("person", 0.02, None, True, local_time="22:40"), "person"),
])
def test_each_kind_of_claim_beyond_the_facts_is_replaced_by_their_words_and_said(description, facts, kind):
    analysis = _judge("alert" if facts.label_score >= 0.3 else "benign", description, facts)
    assert kind in analysis.corrected
    assert analysis.description != description and analysis.extra["model_description"] == description
    assert contradictions(analysis.description, facts, analysis.verdict) == {}  # the replacement holds
    assert analysis.checked is not None and kind in analysis.checked


def test_what_the_facts_hold_passes_unchanged():
    for description in ("A person in a dark top with a backpack at the front door, 22:40.",
                        "A person in a black top, staying 40 s, coming towards the camera.",
                        "A person in a dark top and blue trousers in the frame, at night."):
        analysis = _judge("alert", description, NIGHT_DOOR)
        assert (analysis.description, analysis.corrected, analysis.checked) == (description, (), None)
    empty = Facts("person", 0.0, None, True)
    for description in ("No person, only the background.", "A faint shape, no person clearly seen."):
        assert _judge("benign", description, empty).corrected == ()


def test_the_issue_s_denim_card_cannot_be_published():
    """benign (0.70) "No person; only the background." with facts "Person: yes, in a blue top and red
    bottom." and checked null: without a policy the verdict follows the facts, its description says them."""
    assert DENIM.sentences()[-1] == "Person: yes, in a blue top and red bottom."
    analysis = _judge("benign", "No person; only the background.", DENIM)
    assert (analysis.model_verdict, analysis.verdict) == ("benign", "alert")
    assert analysis.checked.startswith("seen: the facts say there is a person")
    assert analysis.description == "A person in a blue top and red bottom." and analysis.corrected == ("person",)
    # with a policy the policy decides what a person there means, but a seen person is still a person
    allowed = _judge("benign", "No person; only the background.", DENIM, policy="people here are staff")
    assert allowed.verdict == "benign" and allowed.description.startswith("A person in a blue top")
    assert allowed.checked.startswith("description: person no person")
    assert rule("benign", Facts("person", 0.2, None, True), None).verdict == "benign"  # faint: the model's call


def test_corrections_travel_on_the_verdict_and_are_counted():
    analysis = _judge("alert", "A person in a red top at the pool.", DENIM)
    assert set(analysis.corrected) == {"colour", "zone"}
    verdict = Verdict(event_id=uuid7(), device="pi", camera="hall", label="person", verdict=analysis.verdict,
                      confidence=analysis.confidence, description=analysis.description, model="m", created_ms=1,
                      timings=Timings(), model_verdict=analysis.model_verdict, checked=analysis.checked,
                      corrected=list(analysis.corrected))
    again = decode_verdict(encode_verdict(verdict))
    assert again.corrected == ["colour", "zone"] and again.checked == analysis.checked
    stats = ServiceStats()
    stats.count(again, 5.0)
    stats.count(again.model_copy(update={"source": "cloud_cache"}), 1.0)  # a copy is not corrected again
    assert stats.corrected == {"colour": 1, "zone": 1} and stats.overrides == 0
    overruled = again.model_copy(update={"verdict": "alert", "model_verdict": "benign", "checked": "seen: x"})
    stats.count(overruled, 5.0)
    assert stats.overrides == 1


# -- descriptions from facts -------------------------------------------------------------------------------
def test_a_description_from_facts_says_who_what_where_when_how_long_and_nothing_else():
    text = from_facts(NIGHT_DOOR, "alert")
    assert text == ("A person in a dark top and blue bottom, with a backpack, in zone front_door, at 22:40, "
                    "for 40 s, moving towards the camera.")
    bare = Facts("person", 0.9, None, True, upper="grey")
    assert from_facts(bare, "alert") == "A person in a grey top."
    for facts, verdict in ((bare, "alert"), (NIGHT_DOOR, "benign"), (DENIM, "benign"),
                           (Facts("person", 0.0, None, True, (("car", 0.8),)), "benign"),
                           (Facts("person", 0.2, None, True), "unknown"), (Facts("dog", 0.0, None, True), "benign")):
        text = from_facts(facts, verdict)
        assert contradictions(text, facts, verdict) == {}, text
        assert ":" not in text or facts.local_time, text  # no time the event does not have
        assert "door" not in text or facts.zones, text


# -- colour naming -----------------------------------------------------------------------------------------
SKIN, WALL = (120, 160, 215), (205, 208, 210)  # BGR


def _figure(top_bgr, bottom_bgr, cast=(1.0, 1.0, 1.0), seed=0) -> np.ndarray:
    """A 240x120 crop: a wall, a person box with a skin-coloured head and arms, a textured top and bottom."""
    rng = np.random.default_rng(seed)
    image = np.empty((240, 120, 3), np.float32)
    image[:] = WALL
    image[10:45, 45:75] = SKIN  # head
    image[50:120, 30:90] = top_bgr
    image[55:115, 22:30] = SKIN  # arms
    image[55:115, 90:98] = SKIN
    image[125:225, 35:85] = bottom_bgr
    image *= 1 + 0.08 * np.sin(np.arange(240) / 3.0)[:, None, None]  # folds
    image += rng.normal(0, 6, image.shape)
    return np.clip(image * np.array(cast, np.float32), 0, 255).astype(np.uint8)


BOX_N = (20 / 120, 8 / 240, 100 / 120, 230 / 240)
KNOWN = {"red": (30, 30, 200), "orange": (0, 110, 250), "yellow": (30, 220, 235), "green": (60, 160, 40),
         "blue": (170, 90, 30), "purple": (140, 40, 110), "white": (240, 240, 240), "grey": (128, 128, 128),
         "dark": (25, 25, 25), "brown": (30, 60, 110)}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_synthetic_torsos_of_known_colour_are_named_so(name):
    assert body_colours(_figure(KNOWN[name], KNOWN["dark"]), BOX_N) == (name, "dark")
    assert body_colours(_figure(KNOWN["grey"], KNOWN[name], seed=1), BOX_N) == ("grey", name)


def test_a_cast_skin_and_a_hi_vis_vest_are_not_garment_colours():
    for cast in ((0.8, 1.0, 1.25), (1.25, 1.0, 0.8)):  # warm and cool light on a grey top and white trousers
        assert body_colours(_figure(KNOWN["grey"], KNOWN["white"], cast), BOX_N) == ("grey", "white")
    assert body_colours(_figure(SKIN, KNOWN["dark"]), BOX_N)[0] is None  # a bare torso: no garment colour
    assert body_colours(_figure((0, 90, 255), KNOWN["dark"]), BOX_N)[0] == "orange"  # a hi-vis vest, not red


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator(views=("sent", "mirrored"))


def _translated(translator: Translator, jpeg: bytes) -> Facts:
    x1, y1, x2, y2 = BOX
    event = Event(event_id=uuid7(), device="pi-facts", camera="hall", captured_ms=int(time.time() * 1000),
                  label="person", score=0.5, uncertain=True, track_id=1,
                  detections=[Detection(label="person", score=0.5, box=(x1 / 768, y1 / 432, x2 / 768, y2 / 432))],
                  phash="8f3a6b1c2d4e5f60", reason="score in the uncertain band", crop=jpeg)
    return translator.translate(event)


def _warm(jpeg: bytes) -> bytes:
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR).astype(np.float32)
    warm = np.clip(image * np.array((0.8, 1.0, 1.25), np.float32), 0, 255).astype(np.uint8)
    return cv2.imencode(".jpg", warm)[1].tobytes()


@pytest.mark.parametrize(("frame", "top", "bottom"), [
    (120, {"grey"}, {"grey", "blue", "dark"}),  # visitor 1: a long grey cardigan over dark jeans
    (340, {"dark"}, {"dark"}),  # visitor 2: black jacket and trousers
    (1000, {"grey"}, {"dark", "blue"}),  # visitor 5: grey sweater, dark jeans
])
def test_real_crops_get_the_colours_the_visitors_wear_even_in_warm_light(translator, clip_one_by_one, frame, top,
                                                                         bottom):
    crop = clip_crop(clip_one_by_one, frame, BOX)
    for jpeg in (crop, _warm(crop)):
        facts = _translated(translator, jpeg)
        assert facts.label_score >= 0.3
        assert facts.upper in top and facts.lower in bottom, (frame, facts.upper, facts.lower)


# -- the event's time is the card's ------------------------------------------------------------------------
def test_an_event_s_local_time_is_never_ahead_of_the_device_s_clock_and_is_the_card_s(tmp_path, mosquitto,
                                                                                       detector, clip_one_by_one):
    """A file source stamps frames ahead of the clock when read faster than real time (the demo): the event's
    local time, which its facts and description give, is the clock's then, and the card shows that time."""
    from datetime import UTC, datetime

    from edgetriage.cloud.http.web.timeline import Timeline
    from edgetriage.edge.agent import EdgeAgent
    from edgetriage.edge.config import EdgeConfig
    from edgetriage.edge.vision.events import TrackEvent
    from edgetriage.shared.protocol import decode_event

    config = EdgeConfig.model_validate({"device": "pi-facts", "mqtt": {"url": mosquitto.url, "prefix": "facts"},
                                        "state_dir": str(tmp_path), "cameras": [{"id": "door"}], "timezone": "UTC"})
    agent = EdgeAgent(config, detector=detector)
    try:
        before = datetime.now(UTC).strftime("%H:%M")
        ahead = int(time.time() * 1000) + 3_600_000
        ev = TrackEvent(camera="door", track_id=1, label="person", score=0.45, median_score=0.45, uncertain=True,
                        first_ts=0.0, last_ts=1.0, captured_ms=ahead, box=(0.48, 0.02, 0.69, 0.93), detections=[],
                        crop_jpeg=clip_crop(clip_one_by_one, 120, BOX), crop_size=(160, 390), phash="8f3a6b1c2d4e5f60")
        decision, event_id = agent.decide("door", ev)
        assert decision.kind == "escalate" and event_id is not None
        event = decode_event(agent.delivery.outbox.get(event_id).payload)
    finally:
        agent.close()
    assert event.local_time in (before, datetime.now(UTC).strftime("%H:%M"))
    timeline = Timeline()
    timeline.add_event(event)
    assert timeline.entries()[-1].as_json()["local_time"] == event.local_time


def test_the_issue_s_card_through_the_service_is_corrected_counted_and_reused_only_corrected(tmp_path,
                                                                                             clip_one_by_one):
    """A model server that answers the issue's words ("No person; only the background.", benign) on a visitor:
    the service publishes the facts' verdict and words, counts the correction on /metrics, and the cache's
    answer to the same crop again is the corrected verdict."""
    import asyncio
    import json

    from aiohttp import web
    from conftest import free_port
    from edgetriage.cloud.analysis import build_backend
    from edgetriage.cloud.compose import build_service
    from edgetriage.cloud.config import CloudConfig
    from edgetriage.cloud.ops.metrics import CloudMetrics
    from edgetriage.cloud.storage.store import SQLiteStore

    crop = clip_crop(clip_one_by_one, 120, BOX)

    def event() -> Event:
        x1, y1, x2, y2 = BOX
        return Event(event_id=uuid7(), device="pi-door", camera="hall", captured_ms=int(time.time() * 1000),
                     label="person", score=0.45, uncertain=True, track_id=1,
                     detections=[Detection(label="person", score=0.45, box=(x1 / 768, y1 / 432, x2 / 768, y2 / 432))],
                     phash="8f3a6b1c2d4e5f60", reason="score in the uncertain band", crop=crop)

    async def chat(request: web.Request) -> web.Response:
        answer = {"verdict": "benign", "description": "No person; only the background.", "confidence": 0.7}
        return web.json_response({"choices": [{"message": {"content": json.dumps(answer)}}]})

    async def scenario():
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        config = CloudConfig.model_validate({"store_path": str(tmp_path / "cloud.db"), "analyzer": {
            "backend": "openai", "openai": {"base_urls": [f"http://127.0.0.1:{port}/v1"], "model": "m"}}})
        store = SQLiteStore(config.store_path)
        service = build_service(config, build_backend(config.analyzer), store)
        try:
            topic = service.topics.events("pi-door")
            first = await service.process(event(), topic)
            again = await service.process(event(), topic)
            return first, again, CloudMetrics().render(service)
        finally:
            await service.stop()
            await service.backend.close()
            await runner.cleanup()
            store.close()

    first, again, metrics = asyncio.run(scenario())
    assert first.source == "llm" and first.facts[-1].startswith("Person: yes")
    assert (first.model_verdict, first.verdict) == ("benign", "alert") and first.checked.startswith("sure:")
    assert first.description.startswith("A person") and first.corrected == ["person"]
    assert 'edgetriage_cloud_descriptions_corrected_total{kind="person"} 1' in metrics
    assert 'edgetriage_cloud_verdicts_overruled_total 1' in metrics
    assert again.source == "cloud_cache" and (again.verdict, again.description) == (first.verdict, first.description)
