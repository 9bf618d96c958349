"""Verdicts worth having: the translator's facts from real crops (the shipped YOLOX-Nano and MobileNetV2), the
operator's policy in the prompt and its version, the consistency table, the calibration, and the real
SmolLM2-135M deciding from the facts (the verdict follows the picture, not the device's score)."""

from __future__ import annotations

import time

import pytest
from conftest import clip_crop
from edgetriage.cloud.analysis.answer import Answer
from edgetriage.cloud.analysis.calibrate import Calibration, ece, features, fit
from edgetriage.cloud.analysis.check import ABSENT, SURE, Ruling, judged, rule
from edgetriage.cloud.analysis.describe import contradictions
from edgetriage.cloud.analysis.prompt import Prompt, PromptBook, PromptBuilder, policy_for, versioned
from edgetriage.cloud.analysis.translator import Facts, Translator, colour_name
from edgetriage.cloud.config import AnalyzerConfig, PolicyConfig
from edgetriage.shared.config import ConfigError
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict, decode_event, encode_event

BOX = (370, 10, 530, 400)  # a visitor at the table in the 768x432 frame
PERSON_FRAME, EMPTY_FRAME = 120, 10


def _event(crop: bytes, *, score: float = 0.45, label: str = "person", camera: str = "hall", **device) -> Event:
    x1, y1, x2, y2 = BOX
    return Event(event_id=uuid7(), device="pi-verdicts", camera=camera, captured_ms=int(time.time() * 1000),
                 label=label, score=score, uncertain=True, track_id=5,
                 detections=[Detection(label=label, score=score, box=(x1 / 768, y1 / 432, x2 / 768, y2 / 432))],
                 phash="8f3a6b1c2d4e5f60", reason="score in the uncertain band", crop=crop, **device)


@pytest.fixture(scope="module")
def crops(clip_one_by_one) -> dict[str, bytes]:
    return {
        "person": clip_crop(clip_one_by_one, PERSON_FRAME, BOX),
        "empty": clip_crop(clip_one_by_one, EMPTY_FRAME, BOX),
    }


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator()


# -- the translator ------------------------------------------------------------------------------------------
def test_the_closer_look_finds_the_person_and_her_colours_and_nothing_on_the_empty_scene(translator, crops):
    person = translator.translate(_event(crops["person"]))
    assert person.label_score >= SURE and person.label_box is not None
    assert person.upper in ("grey", "dark", "white") and person.lower in ("grey", "dark")
    assert person.sentences()[-1].startswith(f"Person: yes, in a {person.upper} top")
    empty = translator.translate(_event(crops["empty"]))
    assert empty.label_score < ABSENT and empty.upper is None
    assert empty.sentences() == ["Person: no."]  # the ImageNet hint is not a fact for a label the detector knows
    assert empty.hint  # but it is kept, weakly, for the record


def test_device_facts_are_optional_fields_of_v1_and_come_before_the_answer(translator, crops):
    event = _event(crops["person"], zones=["door"], dwell_s=12.0, direction="towards the camera",
                   local_time="22:40")
    again = decode_event(encode_event(event))
    assert (again.zones, again.dwell_s, again.direction, again.local_time) == (["door"], 12.0,
                                                                                 "towards the camera", "22:40")
    facts = translator.translate(again).sentences()
    assert facts[:4] == ["Zone: door.", "Local time 22:40.", "Stayed 12 s.", "Moving towards the camera."]
    assert facts[-1].startswith("Person: yes")
    old = _event(crops["person"])  # an older device: none of them
    assert (old.zones, old.dwell_s, old.direction, old.local_time) == ([], None, None, None)
    with pytest.raises(ValueError):
        _event(crops["person"], local_time="25:00")


def test_an_unreadable_crop_says_so(translator, crops):
    broken = crops["person"][:3] + b"\x00" * 200
    facts = translator.translate(_event(broken))
    assert not facts.decoded and facts.sentences() == ["The crop is not a readable image."]


def test_colour_names_from_pixels():
    import numpy as np

    assert colour_name(np.full((4, 4, 3), (200, 40, 30), np.uint8)) == "blue"  # BGR
    assert colour_name(np.full((4, 4, 3), 20, np.uint8)) == "dark"
    assert colour_name(np.full((4, 4, 3), 240, np.uint8)) == "white"
    assert colour_name(np.zeros((0, 3), np.uint8)) is None


# -- the policy ---------------------------------------------------------------------------------------------
def test_the_most_specific_policy_goes_into_the_prompt_and_its_version(translator, crops):
    policies = [PolicyConfig(text="people are expected"),
                PolicyConfig(camera="yard", text="alert on anyone at night"),
                PolicyConfig(camera="yard", zone="back_door",
                             text="alert when someone is at the back door between 22:00 and 06:00")]
    assert policy_for(policies, "hall", []) == "people are expected"
    assert policy_for(policies, "yard", ["gate"]) == "alert on anyone at night"
    assert policy_for(policies, "yard", ["back_door"]).startswith("alert when someone is at the back door")
    assert policy_for([], "hall", []) is None
    builder = PromptBuilder(PromptBook(), translator, policies=policies)
    plain = PromptBuilder(PromptBook(), translator)
    event = _event(crops["person"], camera="yard", zones=["back_door"])
    prompt = builder.build(event)
    assert "Policy: alert when someone is at the back door between 22:00 and 06:00. " in prompt.messages[-1]["content"]
    assert prompt.messages[-1]["content"].endswith(prompt.facts.sentences()[-1])  # the facts stay last
    versions = {builder.version(event), builder.version(_event(crops["person"], camera="yard")),
                builder.version(_event(crops["person"])), plain.version(event)}
    assert len(versions) == 4 and plain.version(event) == "person-3"  # no verdict reused across policies
    assert all(len(v) <= 32 for v in versions) and builder.version(event) == prompt.version
    assert versioned("x" * 32, "p") != versioned("x" * 32, "q")
    with pytest.raises(ValueError):
        AnalyzerConfig.model_validate({"policies": [{"camera": "yard"}]})  # a policy needs its text


# -- the check ------------------------------------------------------------------------------------------
def _facts(score: float, known: bool = True, decoded: bool = True) -> Facts:
    return Facts("person", score, None, known, decoded=decoded)


@pytest.mark.parametrize(("said", "score", "policy", "becomes", "row"), [
    ("alert", 0.0, None, "benign", "absent"),
    ("alert", 0.0, "people are fine", "benign", "absent"),
    ("benign", 0.9, None, "alert", "sure"),
    ("benign", 0.9, "people are fine", "benign", None),  # a policy may make a real person benign
    ("unknown", 0.9, None, "alert", "sure-unknown"),
    ("unknown", 0.02, None, "benign", "absent-unknown"),
    ("alert", 0.2, None, "alert", None),  # faint (between ABSENT and MIN_OBJECT): the model's answer stands
    ("benign", 0.2, None, "benign", None),
    ("benign", 0.3, None, "alert", "seen"),  # the facts say "Person: yes": without a policy, not benign
    ("benign", 0.3, "people are fine", "benign", None),
    ("alert", 0.95, None, "alert", None),
    ("benign", 0.0, None, "benign", None),
])
def test_the_check_table(said, score, policy, becomes, row):
    ruling = rule(said, _facts(score), policy)
    assert ruling.verdict == becomes
    assert (ruling.reason.split(":")[0] if ruling.reason else None) == row


def test_the_check_leaves_unknown_labels_and_marks_unreadable_crops():
    assert rule("alert", _facts(0.0, known=False), None).verdict == "alert"  # the detector has no such class
    assert rule("benign", _facts(0.0, decoded=False), None).verdict == "unknown"
    assert rule("alert", None, None).verdict == "alert"  # no facts: nothing to hold it against


def test_the_check_says_each_row_in_full_and_an_unknown_on_an_unreadable_crop_stands():
    """`checked` is published with the verdict: each row's reason word for word. A model that says "unknown"
    about a crop that does not decode said what the check would: its answer stands, nothing is overruled."""
    assert rule("alert", _facts(0.05), None).reason == "absent: the closer look finds no person at all (0.05)"
    assert rule("benign", _facts(0.9), None).reason == (
        "sure: the closer look is certain of a person (0.90) and no policy allows one here")
    assert rule("benign", _facts(0.3), None).reason == (
        "seen: the facts say there is a person (0.30) and no policy allows one here")
    assert rule("unknown", _facts(0.9), None).reason == "sure-unknown: the closer look is certain of a person (0.90)"
    assert rule("unknown", _facts(0.05), None).reason == (
        "absent-unknown: the closer look finds no person at all (0.05)")
    for said in ("alert", "benign"):
        assert rule(said, _facts(0.9, decoded=False), None) == Ruling(
            "unknown", "unreadable: the crop does not decode as an image, so nothing can be seen")
    assert rule("unknown", _facts(0.9, decoded=False), None) == Ruling("unknown", None)


@pytest.mark.parametrize(("description", "listed"), [
    ("A person in a red top holding a knife next to a dog.", "colour red; object dog, knife"),
    ("Red green yellow purple orange knife bottle umbrella suitcase laptop phone cup bicycle dog cat horse bus car.",
     # the list cut at 140 characters: `checked` fits the verdict's 200
     "colour green, orange, purple, red, yellow; object bicycle, bottle, bus, car, cat, cup, dog, horse, knife, "
     "laptop, orange, phone, suitcase, u"),
])
def test_a_replaced_description_is_said_in_checked_word_for_word_and_the_time_it_took(description, listed):
    facts = Facts("person", 0.9, (0.1, 0.1, 0.9, 0.9), True, upper="dark", lower="blue")
    prompt = Prompt(messages=[], version="person-3", source="test", facts=facts, policy=None)
    started = time.perf_counter() - 100.0  # asked 100 s ago
    analysis = judged(Answer(verdict="alert", description=description, confidence=0.8), prompt, {"alert": 0.8},
                      Calibration.load(), name="m", started=started, extra={})
    took_ms = (time.perf_counter() - started) * 1000
    assert analysis.checked == f"description: {listed} not in the facts, replaced by their words"
    assert len(analysis.checked) <= 200
    assert 100_000 <= analysis.analyze_ms <= took_ms


def test_an_overruled_answer_says_why_and_keeps_the_model_s_verdict(translator, crops):
    prompt = PromptBuilder(PromptBook(), translator).build(_event(crops["empty"]))
    answer = Answer(verdict="alert", description="A man with a knife.", confidence=0.9)
    analysis = judged(answer, prompt, {"alert": 0.8, "benign": 0.2}, Calibration.load(), name="m",
                      started=time.perf_counter(), extra={})
    assert (analysis.verdict, analysis.model_verdict) == ("benign", "alert")
    assert analysis.checked.startswith("absent: the closer look finds no person at all")
    assert "knife" not in analysis.description and analysis.extra["model_description"] == "A man with a knife."
    assert analysis.facts == ("Person: no.",)
    verdict = Verdict(event_id=uuid7(), device="pi", camera="hall", label="person", verdict=analysis.verdict,
                      confidence=analysis.confidence, description=analysis.description, model="m",
                      created_ms=1, facts=list(analysis.facts), model_verdict="alert", checked=analysis.checked)
    assert verdict.checked and verdict.source == "llm"


def test_a_description_may_name_only_what_the_facts_name():
    facts = Facts("person", 0.9, None, True, (("backpack", 0.6),), upper="dark", lower="blue")
    assert contradictions("A person in a dark top with a backpack.", facts, "alert") == {}
    assert contradictions("A person holding a knife next to a dog.", facts, "alert") == {"object": ["dog", "knife"]}
    empty = Facts("person", 0.0, None, True)
    assert contradictions("No person, only the background.", empty, "benign") == {}
    assert contradictions("A person in a grey top.", empty, "benign") == {"person": ["person"], "colour": ["grey"]}


# -- calibration ----------------------------------------------------------------------------------------
def test_calibration_fits_and_ece_measures():
    rows = [features("alert", {"alert": p}, s, False) for p, s in ((0.9, 0.9), (0.6, 0.2), (0.95, 0.8), (0.5, 0.1))]
    calibration = fit(rows, [True, False, True, False])
    confidences = [calibration.confidence(x) for x in rows]
    assert confidences[0] > confidences[1] and confidences[2] > confidences[3]  # not a constant
    assert ece([1.0, 1.0], [True, True]) == 0.0 and abs(ece([0.9, 0.9], [True, False]) - 0.4) < 1e-9
    shipped = Calibration.load()
    assert len(shipped.weights) == len(rows[0]) and 0.0 < shipped.confidence([1.0, 2.0, 2.0, 0.0, 0.0]) < 1.0


def test_a_broken_calibration_file_is_refused(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text("{}")
    with pytest.raises(KeyError):
        Calibration.load(bad)
    assert issubclass(ConfigError, Exception)


# -- the real model ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_model_s_verdict_follows_the_picture_not_the_device_s_score(llm_analyzer, crops):
    engine = llm_analyzer.engine
    events = [_event(crops["person"]), _event(crops["empty"]), _event(crops["person"], score=0.95),
              _event(crops["empty"], zones=["door"], dwell_s=40.0, local_time="23:10")]
    person, empty, person_sure, empty_at_night = analyses = engine.analyze_batch(events)
    for event, analysis in zip(events, analyses, strict=True):
        assert analysis.error is None, analysis.error
        assert analysis.verdict == analysis.model_verdict, analysis.checked  # the model's own verdict
        # its description stands only where it says what the facts say; otherwise it is the facts' own words
        assert analysis.checked is None or analysis.checked.startswith("description:"), analysis.checked
        assert contradictions(analysis.description, engine.translator.translate(event), analysis.verdict) == {}
        assert 0.5 <= analysis.confidence <= 1.0
        assert set(analysis.extra["verdict_p"]) == {"alert", "benign", "unknown"}
    assert (person.model_verdict, person.verdict) == ("alert", "alert")
    assert (empty.model_verdict, empty.verdict) == ("benign", "benign")
    assert person_sure.verdict == person.verdict  # another score, the same picture: the same verdict
    assert (empty_at_night.model_verdict, empty_at_night.facts[0]) == ("benign", "Zone: door.")
    assert "person" in person.description.lower() and "person" not in empty.description.lower().replace("no person", "")
