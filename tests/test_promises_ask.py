"""The check's and the questions' promises (issue 31): the SURE and ABSENT rows at their exact values, an
overruled verdict described by the facts, citation [0], partial answers never cached, a new verdict dropping
the answers it falls in, and the answer cache's TTL, size and coverage. The real store and router, no model."""

from __future__ import annotations

import asyncio
import time

import pytest
import test_ask
from edgetriage.cloud.analysis.answer import Answer
from edgetriage.cloud.analysis.calibrate import Calibration
from edgetriage.cloud.analysis.check import ABSENT, SURE, judged, rule
from edgetriage.cloud.analysis.describe import from_facts
from edgetriage.cloud.analysis.prompt import Prompt
from edgetriage.cloud.analysis.translator import Facts
from edgetriage.cloud.ask.cache import AnswerCache, Coverage
from edgetriage.cloud.ask.facts import EventFact
from edgetriage.cloud.ask.router import cite
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Verdict

# the question fixtures of test_ask: a real SQLite store with a small site's events
store = test_ask.store


# -- the check ---------------------------------------------------------------------------------------------
def _facts(score: float) -> Facts:
    return Facts("person", score, (0.1, 0.1, 0.9, 0.9), True)


def test_the_check_s_sure_and_absent_rows_hold_at_their_exact_values():
    assert rule("unknown", _facts(SURE), None).reason.startswith("sure-unknown:")
    assert rule("unknown", _facts(SURE - 0.001), None).reason is None
    assert rule("benign", _facts(SURE), None).reason.startswith("sure:")
    assert rule("alert", _facts(ABSENT), None).reason is None  # at ABSENT: faint, the model's word stands
    assert rule("unknown", _facts(ABSENT), None).reason is None
    assert rule("alert", _facts(ABSENT - 0.001), None).reason.startswith("absent:")
    assert rule("unknown", _facts(ABSENT - 0.001), None).reason.startswith("absent-unknown:")


def test_an_overruled_verdict_gets_the_facts_description_not_the_model_s():
    facts = _facts(0.9)
    said = "A person walking past."  # nothing here contradicts the facts; the verdict is what is overruled
    prompt = Prompt(messages=[], version="person-3", source="test", facts=facts, policy=None)
    answer = Answer(verdict="benign", description=said, confidence=0.7)
    analysis = judged(answer, prompt, {"benign": 0.7}, Calibration.load(), name="m", started=time.perf_counter(),
                      extra={})
    assert (analysis.verdict, analysis.model_verdict) == ("alert", "benign")
    assert analysis.description == from_facts(facts, "alert") != said
    assert analysis.extra["model_description"] == said and analysis.extra["description_fixed"] == ["overruled"]


# -- questions: citations and the answer cache --------------------------------------------------------------
def _fact(n: int) -> EventFact:
    return EventFact(uuid7(1000 + n), "house", "porch", "person", 1000 + n, "alert", f"visit {n}", (), "sure")


def test_citation_zero_cites_no_event():
    facts = [_fact(n) for n in range(3)]
    text, cited, dropped = cite("Someone came [0].", facts)
    assert dropped == 1 and "[0]" not in text and cited == facts  # none cited: the answer rests on all given
    text, cited, dropped = cite("Someone came [0] and [2].", facts)
    assert dropped == 1 and cited == [facts[1]] and "[1]" in text


def test_a_partial_answer_is_not_cached(store):  # noqa: F811
    asker = test_ask.asker_for(store)  # no text model: open questions get a partial answer
    first = asyncio.run(asker.ask("Did the same person come back?"))
    again = asyncio.run(asker.ask("Did the same person come back?"))
    assert first["partial"] and again["partial"] and not again["cached"] and again["route"] != "cache"
    assert len(asker.cache) == 0


def test_a_new_verdict_drops_the_answers_it_falls_in(store):  # noqa: F811
    asker = test_ask.asker_for(store)
    asyncio.run(asker.ask("How many people came to the porch today?"))
    assert asyncio.run(asker.ask("How many people came to the porch today?"))["route"] == "cache"
    asker.verdict_landed(Verdict(event_id=uuid7(), device="shed", camera="cam2", label="person", verdict="alert",
                                 confidence=0.8, description="", model="m", source="llm", created_ms=1))
    assert asyncio.run(asker.ask("How many people came to the porch today?"))["route"] == "cache"  # not its range
    asker.verdict_landed(Verdict(event_id=uuid7(), device="house", camera="porch", label="person", verdict="alert",
                                 confidence=0.8, description="", model="m", source="llm", created_ms=1))
    assert asyncio.run(asker.ask("How many people came to the porch today?"))["route"] == "rules"
    cache = AnswerCache(60, 4, lambda: 0.0)
    cache.put(("k",), {"answer": 1}, Coverage(None, None, "person", 10, 20))
    assert cache.landed("house", "porch", "person", None) == 1 and cache.get(("k",)) is None


# -- the answer cache ---------------------------------------------------------------------------------------
def test_answer_cache_ttl_size_and_coverage():
    now = [0.0]
    cache = AnswerCache(10, 2, lambda: now[0])
    everything = Coverage(None, None, None, None, None)
    cache.put(("a",), {"n": 1}, everything)
    now[0] = 9_999.0
    assert cache.get(("a",)) == {"n": 1}
    now[0] = 10_000.0  # its last millisecond has passed
    assert cache.get(("a",)) is None and len(cache) == 0
    for key in ("a", "b"):
        cache.put((key,), {"k": key}, everything)
    cache.get(("a",))  # used: "b" is the least recently used
    cache.put(("c",), {"k": "c"}, everything)
    assert len(cache) == 2 and cache.get(("b",)) is None and cache.get(("a",)) and cache.get(("c",))
    assert cache.get(("zzz",)) is None
    for off in (AnswerCache(0, 2, lambda: 0.0), AnswerCache(10, 0, lambda: 0.0)):
        off.put(("a",), {}, everything)
        assert len(off) == 0
    assert cache.landed("house", "porch", "person", 5) == 2 and cache.invalidated == 2 and len(cache) == 0


@pytest.mark.parametrize(("where", "held"), [
    (("house", "porch", "person", 100), True), (("house", "porch", "person", 99), False),
    (("house", "porch", "person", 200), False), (("house", "porch", "person", 199), True),
    (("house", "porch", "car", 150), False), (("shed", "porch", "person", 150), False),
    (("house", "garden", "person", 150), False), (("house", "porch", "person", None), True)])
def test_an_answer_covers_exactly_its_devices_cameras_label_and_time(where, held):
    coverage = Coverage(frozenset({"house"}), frozenset({("house", "porch")}), "person", 100, 200)
    assert coverage.holds(*where) is held
    assert Coverage(None, None, None, None, None).holds(*where)


def _judged(said: str, description: str, facts: Facts | None, verdict_p=None, policy: str | None = None):
    prompt = Prompt(messages=[], version="person-3", source="test", facts=facts, policy=policy)
    answer = Answer(verdict=said, description=description, confidence=0.7)
    started = time.perf_counter() - 0.05
    return judged(answer, prompt, verdict_p, Calibration.load(), name="m" * 200, started=started,
                  extra={"kept": 1})


def test_a_judged_answer_carries_the_check_the_calibration_and_what_the_model_said():
    from edgetriage.cloud.analysis.calibrate import features

    facts = _facts(0.9)
    analysis = _judged("benign", "A person walking past.", facts, {"benign": 0.6, "alert": 0.4})
    assert analysis.model == "m" * 128 and analysis.prompt_version == "person-3" and analysis.analyze_ms >= 50
    assert analysis.facts == tuple(facts.sentences()) and analysis.corrected == ()
    assert analysis.checked.startswith("sure: ") and analysis.model_verdict == "benign"
    extra = analysis.extra
    assert extra["kept"] == 1 and extra["model_confidence"] == 0.7 and extra["evidence_score"] == 0.9
    assert extra["verdict_p"] == {"benign": 0.6, "alert": 0.4}
    expected = Calibration.load().confidence(features("alert", {"benign": 0.6, "alert": 0.4}, 0.9, True, ()))
    assert analysis.confidence == round(expected, 3)
    server = _judged("alert", "A person walking past.", facts)  # a server's answer: its stated confidence
    assert server.extra["verdict_p"] == {"alert": 0.7} and server.checked is None and server.description == (
        "A person walking past.") and "model_description" not in server.extra
    expected = Calibration.load().confidence(features("alert", {"alert": 0.7}, 0.9, False, ()))
    assert server.confidence == round(expected, 3)
    blind = _judged("alert", "Someone.", None, {"alert": 0.9123456})
    assert blind.facts == () and blind.extra["evidence_score"] is None and blind.extra["verdict_p"] == {"alert": 0.912}
    assert blind.description == "Someone." and blind.checked is None


def test_a_description_beyond_the_facts_is_replaced_and_said_in_checked():
    facts = Facts("person", 0.9, (0.1, 0.1, 0.9, 0.9), True, upper="dark", lower="blue")
    analysis = _judged("alert", "A person in a red top holding a knife.", facts, {"alert": 0.9})
    assert analysis.verdict == "alert" and set(analysis.corrected) == {"colour", "object"}
    assert analysis.description == from_facts(facts, "alert")
    assert analysis.checked.startswith("description: ") and analysis.checked.endswith(
        " not in the facts, replaced by their words")
    assert "colour red" in analysis.checked and "object knife" in analysis.checked
    assert analysis.extra["description_fixed"] == list(analysis.corrected)


def test_a_server_s_text_is_parsed_or_a_fallback_says_why():
    from edgetriage.cloud.analysis.check import analysis_from_text

    prompt = Prompt(messages=[], version="person-3", source="test", facts=_facts(0.9), policy=None)
    good = analysis_from_text('{"verdict": "alert", "confidence": 0.8, "description": "A person."}', prompt,
                              Calibration.load(), name="srv", started=time.perf_counter(), extra={"id": 1})
    assert good.verdict == "alert" and good.error is None and good.extra["id"] == 1
    assert good.extra["raw"].startswith('{"verdict": "alert"')
    bad = analysis_from_text("x" * 400, prompt, Calibration.load(), name="srv", started=time.perf_counter())
    assert bad.verdict == "unknown" and bad.error.startswith("unusable model output (") and len(bad.extra["raw"]) == 300
