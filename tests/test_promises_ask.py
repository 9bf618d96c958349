"""The check's and the questions' promises (issue 31): the SURE and ABSENT rows at their exact values, an
overruled verdict described by the facts, citation [0], partial answers never cached, a new verdict dropping
the answers it falls in, and the answer cache's TTL, size and coverage. The real store and router, no model."""

from __future__ import annotations

import asyncio
import threading
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
from edgetriage.cloud.ask.config import AskConfig
from edgetriage.cloud.ask.facts import EventFact
from edgetriage.cloud.ask.router import Asker, cite
from edgetriage.cloud.counts.pressure import EventPressure
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
    cache.put(("d",), {"k": "d"}, everything)
    assert cache.landed("house", "porch", "person", 5) == 1 and cache.invalidated == 3  # counted over time
    for small in (AnswerCache(10, 1, lambda: 0.0), AnswerCache(0.001, 2, lambda: 0.0)):  # one entry; 1 ms
        small.put(("a",), {"n": 1}, everything)
        assert small.get(("a",)) == {"n": 1}


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


# -- questions: the language model's path, with a text model of the test's own ------------------------------
class Says:
    """A text model of the test's own: says `text` (or fails, or never answers) and keeps what it was asked."""

    name = "says"

    def __init__(self, text: str = "", error: str | None = None, silent: bool = False) -> None:
        self.text, self.error, self.silent = text, error, silent
        self.calls: list[tuple[str, str, int, float]] = []

    async def warm(self) -> None:
        return None

    async def complete(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str:
        from edgetriage.cloud.ask.llm import TextModelError

        self.calls.append((system, user, max_new_tokens, deadline_s))
        if self.error is not None:
            raise TextModelError(self.error)
        if self.silent:
            await asyncio.Event().wait()  # never set: no answer, ever
        return self.text


OPEN = "What was the person at the porch carrying?"  # an open question: the language model's


def test_an_open_question_goes_to_the_model_with_its_events_numbered_and_only_valid_citations_kept(store):  # noqa: F811
    from edgetriage.cloud.ask.router import SYSTEM

    model = Says("The person carried a parcel [2], then a backpack [1] [2] [99].")
    asker = test_ask.asker_for(store, model, t_max_ms=20_000.0, max_new_tokens=40)
    answer = asyncio.run(asker.ask(OPEN))
    ((system, user, max_new, deadline_s),) = model.calls
    assert system == SYSTEM and system.startswith("You answer questions about what home security cameras saw.")
    assert system.endswith("cite the events you used by number in brackets, like [2].")
    assert user.startswith("Events (local time):\n[1] ") and user.endswith(f"\n\nQuestion: {OPEN}")
    lines = user.split("\n\n")[0].splitlines()[1:]
    assert [line.split(" ", 1)[0] for line in lines] == [f"[{n}]" for n in range(1, len(lines) + 1)]
    assert all("porch" in line for line in lines) and len(lines) == 3  # the porch's events, as the user reads them
    assert max_new == 40 and 17.0 < deadline_s <= 18.0  # 0.9 of what is left of t_max_ms
    assert (answer["route"], answer["partial"], answer["model"], answer["context"]) == ("llm", False, "says", 3)
    assert answer["answer"].startswith("The person carried a parcel [1], then a backpack [2] [1]")
    assert "[99]" not in answer["answer"] and len(answer["events"]) == 2 and len(set(answer["events"])) == 2
    assert set(answer["events"]) <= test_ask.ids(store, camera="porch")
    figures = asker.figures()
    assert figures["dropped_citations"] == 1 and figures["routes"]["llm"] == 1 and figures["alpha"] == 0.0
    assert figures["llm_errors"] == 0 and figures["partial"] == 0


@pytest.mark.parametrize("said", ["", "   ", "Events (local time): [1] ...", "Question: what was it?",
                                  "[1] 28 Nov 21:10, person on porch"])
def test_a_model_that_says_nothing_usable_gets_an_answer_from_the_stored_facts(store, said):  # noqa: F811
    asker = test_ask.asker_for(store, Says(said))
    answer = asyncio.run(asker.ask(OPEN))
    assert answer["route"] == "llm" and not answer["partial"] and answer["from_facts"].startswith(
        "the language model gave no usable answer")
    assert answer["answer"].startswith("From the stored events on porch (3): ")


def test_a_model_that_fails_or_never_answers_gives_way_to_the_fast_answer_marked_partial(store):  # noqa: F811
    failing = test_ask.asker_for(store, Says(error="the model server is down"))
    answer = asyncio.run(failing.ask(OPEN))
    assert answer["partial"] and answer["route"] == "fast" and answer["partial_reason"] == "the model server is down"
    assert answer["answer"].startswith("Partial answer (the model server is down): ")
    assert set(answer["events"]) == test_ask.ids(store, camera="porch")
    assert failing.figures()["llm_errors"] == 1 and failing.figures()["partial"] == 1
    silent = test_ask.asker_for(store, Says(silent=True), t_max_ms=300.0)
    answer = asyncio.run(silent.ask(OPEN))
    assert answer["partial"] and answer["partial_reason"] == "no answer within t_max_ms"
    assert silent.figures()["llm_errors"] == 1 and not silent.cache  # a partial answer is never cached


def test_a_question_with_no_events_to_read_is_answered_without_the_model(store):  # noqa: F811
    model = Says("Never asked.")
    answer = asyncio.run(test_ask.asker_for(store, model).ask("What was the person at the driveway carrying?"))
    assert model.calls == [] and not answer["partial"] and answer["events"] == []


def test_the_latency_figures_are_one_measurement_of_every_route(store):  # noqa: F811
    asker = test_ask.asker_for(store, Says("A parcel [1]."))
    asyncio.run(asker.ask("How many people came to the porch today?"))  # rules
    asyncio.run(asker.ask("How many people came to the porch today?"))  # cache
    asyncio.run(asker.ask(OPEN))  # llm
    f = asker.figures()
    assert f["answers"] == 3 and f["routes"] == {"cache": 1, "rules": 1, "fast": 0, "llm": 1}
    assert f["alpha"] == round(2 / 3, 4) and f["L_total_formula"] == "L_sched + alpha*L_fast + (1-alpha)*L_llm"
    assert f["L_total_ms"] == round(f["L_sched_ms"] + f["alpha"] * f["L_fast_ms"] + (1 - f["alpha"]) * f["L_llm_ms"], 2)
    assert f["L_llm_ms"] == f["llm_p50_ms"] == f["llm_p95_ms"] and f["fast_p50_ms"] is None
    assert min(f["rules_p50_ms"], f["cache_p50_ms"]) <= f["L_fast_ms"] <= max(f["rules_p50_ms"], f["cache_p50_ms"])
    assert f["t_max_ms"] == asker.config.t_max_ms and f["cache_entries"] == 2 and f["refused"] == 0
    assert f["measured_p50_ms"] is not None and f["partial_p50_ms"] is None
    empty = test_ask.asker_for(store).figures()
    assert (empty["alpha"], empty["L_total_ms"], empty["answers"]) == (None, None, 0)


# -- questions: the router's settings and what it says --------------------------------------------------------
def test_anything_unusual_without_time_words_means_the_last_24_hours(store):  # noqa: F811
    answer = asyncio.run(test_ask.asker_for(store).ask("Anything unusual?"))
    assert answer["window"] == {"start_ms": test_ask.NOW - 86_400_000, "end_ms": None,
                                "phrase": "in the last 24 hours"}


def test_an_event_past_the_calendar_s_last_day_is_left_out_and_the_last_day_itself_is_not(store):  # noqa: F811
    from edgetriage.cloud.ask.scan import LAST_DAY_MS

    asker = test_ask.asker_for(store)
    before = asyncio.run(asker.ask("How many people came to the porch?"))["value"]
    test_ask.put(store, "house", "porch", "person", LAST_DAY_MS, "benign", "the last day")
    test_ask.put(store, "house", "porch", "person", LAST_DAY_MS + 1, "benign", "past it")
    asker = test_ask.asker_for(store)
    assert asyncio.run(asker.ask("How many people came to the porch?"))["value"] == before + 1
    assert LAST_DAY_MS == 253_402_214_400_000  # 9999-12-31 00:00 UTC


def test_a_stored_row_that_cannot_be_read_is_skipped_and_said_under_the_ask_logger(store, caplog):  # noqa: F811
    import logging

    asker = test_ask.asker_for(store)
    rows = asker.reads.list_events
    broken = {"event_id": "broken-row", "device": "house", "camera": "porch", "label": "person",
              "captured_ms": "soon"}  # a capture time that is no number
    asker.reads.list_events = lambda **kw: [*rows(**kw), broken]
    with caplog.at_level(logging.WARNING, logger="edgetriage.cloud.ask"):
        answer = asyncio.run(asker.ask("How many people came to the porch?"))
    assert answer["value"] == 3
    said = [r for r in caplog.records if "broken-row" in r.getMessage()]
    assert [r.name for r in said] == ["edgetriage.cloud.ask"]
    assert said[0].getMessage().startswith("question skipped stored event broken-row: ")


def test_without_a_service_the_vocabulary_is_read_again_after_five_seconds(store, monkeypatch):  # noqa: F811
    import edgetriage.cloud.ask.router as router

    clock = [1000.0]
    monkeypatch.setattr(router.time, "monotonic", lambda: clock[0])
    asker = test_ask.asker_for(store)
    first = asker.vocabulary()
    test_ask.put(store, "house", "gate", "person", test_ask.NOW - 1000, "benign", "a new camera")
    clock[0] = 1005.0
    assert asker.vocabulary() is first and ("house", "gate") not in first.cameras
    clock[0] = 1005.001
    assert ("house", "gate") in asker.vocabulary().cameras
    attached = test_ask.asker_for(store)
    attached.attached = True  # a service tells it of every event: never read again
    known = attached.vocabulary()
    clock[0] = 9999.0
    assert attached.vocabulary() is known


def test_question_workers_yield_to_the_event_loop(store):  # noqa: F811
    import os
    import sys
    import threading

    seen = []

    class Scores:
        """A complexity model of the test's own that notes the thread it runs on (a question worker)."""

        def score(self, text: str) -> float:
            seen.append((sys.getswitchinterval(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
                         threading.current_thread().name.split("_")[0]))
            return 0.0

    before = sys.getswitchinterval()
    base = os.getpriority(os.PRIO_PROCESS, 0)
    sys.setswitchinterval(0.005)  # Python's default
    try:
        asker = Asker(store, AskConfig(timezone="Europe/Berlin", **test_ask.NAMES), test_ask.AnalyzerConfig(
            backend="vllm"), complexity=Scores(), clock_ms=lambda: test_ask.NOW)
        asyncio.run(asker.ask(OPEN))
        asker.close()
    finally:
        sys.setswitchinterval(before)
    # 10 below the thread that started it; the thread's name, as a profiler or a log line shows it
    assert seen == [(0.0005, min(19, base + 10), "ask")]
    assert asker.stats.latency["rules"].maxlen == asker.stats.sched_ms.maxlen == 2048  # the figures' window


def test_an_event_id_in_the_model_s_text_stays_only_when_it_is_a_cited_event_s():
    facts = [_fact(n) for n in range(3)]
    own = facts[1].event_id
    text, cited, _ = cite(f"A visitor [2] (event {own}), see also event 0195dead-beef-7abc-8def-0123456789ab "
                          "and id 7f3a9c21e0.", facts)
    assert cited == [facts[1]] and own in text and text.startswith("A visitor [1]")
    assert "0195dead" not in text and "7f3a9c21e0" not in text and "()" not in text and " ." not in text
    text, _, _ = cite(f"Event {facts[0].event_id.upper()} came [2].", facts)  # not the cited one, in any case
    assert facts[0].event_id.lower() not in text.lower() and text == "came [1]."


def test_the_p95_of_a_route_is_the_value_95_percent_of_its_answers_stay_under(store):  # noqa: F811
    asker = test_ask.asker_for(store)
    asker.stats.latency["rules"].extend(float(v) for v in range(100, 0, -1))  # 1 ... 100 ms, in any order
    asker.stats.latency["fast"].extend(float(v) for v in range(1, 21))
    asker.stats.latency["cache"].append(7.0)
    f = asker.figures()
    assert (f["rules_p95_ms"], f["fast_p95_ms"], f["cache_p95_ms"], f["llm_p95_ms"]) == (96.0, 20.0, 7.0, None)
    assert f["rules_p50_ms"] == 50.5


def test_a_service_attached_tells_the_asker_of_every_event_and_verdict(store, monkeypatch):  # noqa: F811
    import edgetriage.cloud.ask.router as router

    class Service:
        """What the asker is attached to (cloud.ops.observed.Listened): the service's listener lists."""

        def __init__(self) -> None:
            self.event_listeners: list = []
            self.verdict_listeners: list = []
            self.pressure = EventPressure()

    clock = [1000.0]
    monkeypatch.setattr(router.time, "monotonic", lambda: clock[0])
    service, asker = Service(), test_ask.asker_for(store)
    asker.attach(service)
    assert service.event_listeners == [asker.event_landed] and service.verdict_listeners == [asker.verdict_landed]
    known = asker.vocabulary()
    event = test_ask.put(store, "house", "gate", "person", test_ask.NOW - 1000, "benign", "a new camera")
    clock[0] = 2000.0  # long past the re-read: an attached asker learns from the service, not from the store
    assert asker.vocabulary() is known and ("house", "gate") not in known.cameras
    for listener in service.event_listeners:
        listener(event, test_ask.NOW)
    assert ("house", "gate") in asker.vocabulary().cameras


def test_one_model_answer_ahead_at_6_s_leaves_room_within_10_s(store):  # noqa: F811
    model = Says("A parcel [1].")
    asker = test_ask.asker_for(store, model, t_max_ms=10_000.0)
    asker.stats.latency["llm"].append(6000.0)  # a recent answer took 6 s; none is running now
    answer = asyncio.run(asker.ask(OPEN))
    assert len(model.calls) == 1 and answer["route"] == "llm" and not answer["partial"]


def test_an_asker_without_a_clock_of_its_own_reads_time_words_by_the_wall_clock(store):  # noqa: F811
    import time as wall

    asker = Asker(store, AskConfig(timezone="Europe/Berlin", **test_ask.NAMES), test_ask.AnalyzerConfig(
        backend="vllm"))
    before = wall.time() * 1000
    answer = asyncio.run(asker.ask("Anything unusual?"))
    after = wall.time() * 1000
    assert before - 86_400_000 - 1 <= answer["window"]["start_ms"] <= after - 86_400_000 + 1
    asker.close()


def test_the_vocabulary_knows_the_operator_s_devices_and_the_stored_events_zones(store):  # noqa: F811
    test_ask.put(store, "house", "porch", "person", test_ask.NOW - 5000, "benign", "at the gate", ("front_gate",))
    asker = test_ask.asker_for(store, timezones={"office": "Asia/Tokyo"})  # a device with no events yet
    vocabulary = asker.vocabulary()
    assert {"office", "house", "shed"} <= vocabulary.devices and "front_gate" in vocabulary.zones


def test_a_cached_answer_says_which_route_first_gave_it_and_refusals_are_counted(store):  # noqa: F811
    from edgetriage.cloud.ask.guard import AskError

    asker = test_ask.asker_for(store)
    first = asyncio.run(asker.ask("How many people came to the porch today?"))
    again = asyncio.run(asker.ask("How many people came to the porch today?"))
    assert (first["route"], again["route"], again["first_route"], again["cached"]) == ("rules", "cache", "rules", True)
    for bad in ("", "   "):
        with pytest.raises(AskError):
            asyncio.run(asker.ask(bad))
    assert asker.figures()["refused"] == 2


def test_warming_loads_the_text_model_and_a_model_that_cannot_load_waits_for_its_question(store):  # noqa: F811
    from edgetriage.cloud.ask.llm import TextModelError

    class Warms(Says):
        def __init__(self, fails: bool) -> None:
            super().__init__("A parcel [1].")
            self.fails, self.warmed = fails, 0

        async def warm(self) -> None:
            self.warmed += 1
            if self.fails:
                raise TextModelError("the model file is missing")

    for fails in (False, True):
        model = Warms(fails)
        asyncio.run(test_ask.asker_for(store, model).warm())  # a model that cannot load raises nothing here
        assert model.warmed == 1
    asyncio.run(test_ask.asker_for(store).warm())  # no text model: nothing to warm


def test_a_question_scoring_exactly_the_complexity_threshold_goes_to_the_model(store):  # noqa: F811
    class Scores:
        def __init__(self, score: float) -> None:
            self.value = score

        def score(self, text: str) -> float:
            return self.value

    at = AskConfig().complexity_threshold
    for score, route in ((at, "llm"), (at - 0.001, "fast"), (0.12345, "fast")):  # said to 3 decimals
        asker = Asker(store, AskConfig(timezone="Europe/Berlin", **test_ask.NAMES), test_ask.AnalyzerConfig(),
                      text_model=Says("A parcel [1]."), complexity=Scores(score), clock_ms=lambda: test_ask.NOW)
        answer = asyncio.run(asker.ask(OPEN))
        assert (answer["route"], answer["complexity"]) == (route, round(score, 3))


def test_a_name_only_a_device_sent_used_as_a_word_gets_a_hint_to_quote_it(store):  # noqa: F811
    test_ask.put(store, "house", "gate", "person", test_ask.NOW - 5000, "benign", "at the gate")
    answer = asyncio.run(test_ask.asker_for(store).ask("How many people came to the gate today?"))
    assert answer["hint"] == ('"gate": a name only a device sent, matched when quoted '
                              "(or name it in [ask] cameras / zones)")
    quoted = asyncio.run(test_ask.asker_for(store).ask('How many people came to "gate" today?'))
    assert "hint" not in quoted and quoted["value"] == 1


def test_the_model_reads_the_events_that_show_the_look_asked_about_or_all_when_none_does(store):  # noqa: F811
    for question, shown in (("What was the person with a backpack at the porch doing?", 1),
                            ("What was the person with a red umbrella at the porch doing?", 3)):
        model = Says("Walking past [1].")
        answer = asyncio.run(test_ask.asker_for(store, model).ask(question))
        assert answer["route"] == "llm" and answer["context"] == shown, question
        lines = model.calls[0][1].split("\n\n")[0].splitlines()[1:]
        assert len(lines) == shown and (shown == 3 or "backpack" in lines[0])


def test_an_answer_s_latency_is_in_milliseconds(store):  # noqa: F811
    import time as wall

    class Slow:
        def score(self, text: str) -> float:
            wall.sleep(0.05)  # 50 ms of work on the question worker (a stand-in for a slow classifier)
            return 0.0

    asker = Asker(store, AskConfig(timezone="Europe/Berlin", **test_ask.NAMES), test_ask.AnalyzerConfig(
        backend="vllm"), complexity=Slow(), clock_ms=lambda: test_ask.NOW)
    answer = asyncio.run(asker.ask(OPEN))
    assert 50.0 <= answer["latency_ms"] < 60_000 and 50.0 <= asker.figures()["fast_p50_ms"] < 60_000


@pytest.mark.parametrize(("question", "scope", "status", "said"), [
    ("How many people came today?", {"device": "Not_A_Device"}, 400,
     "device='Not_A_Device' is not a device id ([a-z0-9-], at most 64)"),
    ("How many people came today?", {"camera": "Bad Cam"}, 400,
     "camera='Bad Cam' is not a camera id ([a-z0-9_-], at most 64)"),
    ("How many people came today?", {"token_device": "house", "device": "shed"}, 403,
     "the token of device house may not ask about device shed"),
    ('How many people came to "nowhere"?', {}, 404, 'no camera, zone, device or label is named "nowhere" in the '
     "events stored (quotes are for names; leave them out to ask in words)"),
    ('How many people came to "nowhere"?', {"token_device": "house"}, 404, 'no camera, zone, device or label of '
     'device house is named "nowhere" in the events stored (quotes are for names; leave them out to ask in words)'),
    ("How many people came today?", {"camera": "garden"}, 404, "camera='garden': no events from such a camera"),
    ("How many people came today?", {"camera": "garden", "token_device": "house"}, 404,
     "camera='garden': no events from such a camera of device house"),
    ("How many people came to cam2 today?", {"token_device": "house"}, 403,
     "the token of device house may not ask about camera cam2"),
])
def test_a_refused_question_says_why_with_its_status(store, question, scope, status, said):  # noqa: F811
    from edgetriage.cloud.ask.guard import AskError

    asker = test_ask.asker_for(store)
    with pytest.raises(AskError) as refused:
        asyncio.run(asker.ask(question, **scope))
    assert (refused.value.status, str(refused.value)) == (status, said)
    assert asker.figures()["refused"] == 1


def test_every_answer_is_counted_with_its_scheduling_time_in_milliseconds(store):  # noqa: F811
    import time as wall

    class Slow:
        def score(self, text: str) -> float:
            wall.sleep(0.05)  # 50 ms of work before the route is decided
            return 0.0

    asker = Asker(store, AskConfig(timezone="Europe/Berlin", **test_ask.NAMES), test_ask.AnalyzerConfig(
        backend="vllm"), complexity=Slow(), clock_ms=lambda: test_ask.NOW)
    answers = [asyncio.run(asker.ask(q)) for q in ("How many people came today?", "When was the last alert?",
                                                   OPEN, "Did the same person come back?")]
    f = asker.figures()
    assert f["routes"]["rules"] == 2 and f["routes"]["fast"] == 2 and f["partial"] == 0
    assert 50.0 <= max(asker.stats.sched_ms) <= max(a["latency_ms"] for a in answers)  # scored: 50 ms of it
    assert 0.0 <= f["L_sched_ms"] <= max(a["latency_ms"] for a in answers)
    assert all(a["latency_ms"] == round(a["latency_ms"], 2) for a in answers)
    partial = test_ask.asker_for(store)  # no text model: each open question a partial answer
    for q in (OPEN, "Did the same person come back?"):
        asyncio.run(partial.ask(q))
    assert partial.figures()["partial"] == 2


def test_what_s_been_going_on_without_time_words_means_the_last_24_hours(store):  # noqa: F811
    answer = asyncio.run(test_ask.asker_for(store).ask("What's been going on?"))
    assert answer["window"] == {"start_ms": test_ask.NOW - 86_400_000, "end_ms": None,
                                "phrase": "in the last 24 hours"}


def test_several_unknown_or_device_only_names_are_listed_three_at_most_each_cut_at_40(store):  # noqa: F811
    from edgetriage.cloud.ask.guard import AskError

    long = "x" * 45
    with pytest.raises(AskError) as refused:
        asyncio.run(test_ask.asker_for(store).ask(f'How many people came to "aaa", "bbb", "{long}" or "ddd"?'))
    assert f'is named "aaa", "bbb", "{"x" * 40}" in the events stored' in str(refused.value)
    for camera in ("gate", "yard"):
        test_ask.put(store, "house", camera, "person", test_ask.NOW - 5000, "benign", "a device's own camera")
    answer = asyncio.run(test_ask.asker_for(store).ask("How many people came to the gate or the yard today?"))
    assert answer["hint"].startswith('"gate", "yard": a name only a device sent')


class Ticks:
    """A timer of the test's own: each reading is `step` seconds after the one before (exact in binary)."""

    def __init__(self, step: float = 0.25) -> None:
        self.now, self.step, self.lock = 1000.0, step, threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            self.now += self.step
            return self.now


def test_latency_and_scheduling_time_are_the_timer_s_intervals_in_milliseconds(store):  # noqa: F811
    ticks = Ticks()
    asker = Asker(store, AskConfig(timezone="Europe/Berlin", t_max_ms=20_000.0, **test_ask.NAMES),
                  test_ask.AnalyzerConfig(), text_model=Says("A parcel [1]."), clock_ms=lambda: test_ask.NOW,
                  timer=ticks)
    rules = asyncio.run(asker.ask("How many people came to the porch today?"))  # started, decided, done
    cached = asyncio.run(asker.ask("How many people came to the porch today?"))  # started, decided, done
    llm = asyncio.run(asker.ask(OPEN))  # started, decided, the budget, the call's start and end, done
    assert (rules["route"], cached["route"], llm["route"]) == ("rules", "cache", "llm") and not llm["partial"]
    assert (rules["latency_ms"], cached["latency_ms"], llm["latency_ms"]) == (500.0, 500.0, 1250.0)
    assert list(asker.stats.sched_ms) == [250.0, 250.0, 250.0]
    f = asker.figures()
    assert (f["rules_p50_ms"], f["cache_p50_ms"], f["llm_p50_ms"], f["L_sched_ms"]) == (500.0, 500.0, 1250.0, 250.0)


@pytest.mark.parametrize(("t_max_ms", "partial"), [(750.0, True), (778.0, False)])
def test_a_model_answer_that_used_more_than_nine_tenths_of_what_was_left_is_partial(store, t_max_ms, partial):  # noqa: F811
    # 500 ms gone before the call (started, decided, the budget's reading), so t_max_ms - 500 was left;
    # the call itself takes one tick, 250 ms: over 0.9 x 250 (t_max 750), just under 0.9 x 278 = 250.2 (t_max 778)
    asker = Asker(store, AskConfig(timezone="Europe/Berlin", t_max_ms=t_max_ms, **test_ask.NAMES),
                  test_ask.AnalyzerConfig(), text_model=Says("A parcel [1]."), clock_ms=lambda: test_ask.NOW,
                  timer=Ticks())
    answer = asyncio.run(asker.ask(OPEN))
    assert answer["partial"] is partial and answer["route"] == ("fast" if partial else "llm")
    if partial:
        assert answer["partial_reason"] == "the language model ran out of time (t_max_ms)"


def test_closing_finishes_the_question_in_hand_and_drops_the_ones_waiting(store):  # noqa: F811
    import threading

    started, release = threading.Event(), threading.Event()

    class Held:
        """A complexity model of the test's own that holds the first question on the (only) worker."""

        def score(self, text: str) -> float:
            if not started.is_set():
                started.set()
                assert release.wait(30)
            return 0.0

    asker = Asker(store, AskConfig(timezone="Europe/Berlin", workers=1, **test_ask.NAMES),
                  test_ask.AnalyzerConfig(backend="vllm"), complexity=Held(), clock_ms=lambda: test_ask.NOW)

    async def main():
        first = asyncio.ensure_future(asker.ask(OPEN))
        second = asyncio.ensure_future(asker.ask("What was the person at the back door carrying?"))
        assert await asyncio.to_thread(started.wait, 30)
        closed = threading.Event()
        closing = threading.Thread(target=lambda: (asker.close(), closed.set()))
        closing.start()
        await asyncio.sleep(0)
        assert not closed.wait(0.3)  # the question in hand is still running: close waits for it
        release.set()
        assert await asyncio.to_thread(closed.wait, 30)
        done, waiting = await asyncio.gather(first, second, return_exceptions=True)
        return done, waiting

    done, waiting = asyncio.run(main())
    assert isinstance(done, dict) and done["route"] == "fast" and not done["partial"]  # answered, in full
    assert isinstance(waiting, asyncio.CancelledError)  # never started: dropped, not run on a closed store
    assert asker.figures()["answers"] == 1


def test_unusual_summary_and_model_questions_weigh_today_against_the_camera_s_usual(tmp_path):
    """The porch sees people in the morning, every day: a visitor at 15:00 today is at an hour the porch rarely
    sees anything. That is known only from the porch's other days, which the questions "anything unusual
    today?", "what happened today?" and an open question the model could not answer all look at."""
    from edgetriage.cloud.storage.store import SQLiteStore

    db = SQLiteStore(tmp_path / "cloud.db")
    try:
        for day in range(20, 29):
            test_ask.put(db, "house", "porch", "person", test_ask.at(day, 9, 10), "benign", "the postman")
        test_ask.put(db, "house", "porch", "person", test_ask.at(29, 15, 0), "benign", "a person at the door")
        rare = "at an hour porch rarely sees anything"
        unusual = asyncio.run(test_ask.asker_for(db).ask("Anything unusual at the porch today?"))
        assert rare in unusual["answer"], unusual["answer"]
        summary = asyncio.run(test_ask.asker_for(db).ask("What happened at the porch today?"))
        assert rare in summary["answer"], summary["answer"]
        silent = test_ask.asker_for(db, Says(""), t_max_ms=20_000.0)  # the model says nothing usable
        told = asyncio.run(silent.ask("What was the person at the porch carrying today?"))
        assert told["route"] == "llm" and told["from_facts"] and rare in told["answer"], told
    finally:
        db.close()


# -- the text model's budget and the figures, on a timer of the test's own --------------------------------------
def _timed_asker(store, model, t_max_ms: float, timer=lambda: 1000.0) -> Asker:  # noqa: F811
    """An asker whose timer stands still unless the test gives it another: every budget is t_max_ms whole."""
    return Asker(store, AskConfig(timezone="Europe/Berlin", t_max_ms=t_max_ms, **test_ask.NAMES),
                 test_ask.AnalyzerConfig(), text_model=model, clock_ms=lambda: test_ask.NOW, timer=timer)


def test_the_model_is_given_nine_tenths_of_what_is_left_as_its_deadline(store):  # noqa: F811
    model = Says("A parcel [1].")
    asyncio.run(_timed_asker(store, model, 20_000.0, Ticks()).ask(OPEN))  # 500 ms gone when the budget is read
    assert model.calls[0][3] == pytest.approx((20_000.0 - 500.0) / 1000 * 0.9)


class Late(Says):
    """Answers after `delay_s` of real time (asyncio's clock, which the wait for it uses too)."""

    def __init__(self, text: str, delay_s: float) -> None:
        super().__init__(text)
        self.delay_s = delay_s

    async def complete(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str:
        await asyncio.sleep(self.delay_s)
        return await super().complete(system, user, max_new_tokens, deadline_s)


def test_a_model_answer_later_than_the_budget_is_not_waited_for(store):  # noqa: F811
    answer = asyncio.run(_timed_asker(store, Late("A parcel [1].", 0.8), 600.0).ask(OPEN))
    assert answer["partial"] and answer["partial_reason"] == "no answer within t_max_ms"  # gave up at 0.6 s


def test_a_model_expected_to_take_exactly_the_budget_is_still_asked(store):  # noqa: F811
    exact = _timed_asker(store, Says("A parcel [1]."), 6000.0)
    exact.stats.latency["llm"].append(6000.0)  # its typical answer takes the whole budget: not longer
    assert not asyncio.run(exact.ask(OPEN))["partial"]
    fresh = _timed_asker(store, Says("A parcel [1]."), 0.5)  # no answer measured yet: no estimate, it is asked
    assert not asyncio.run(fresh.ask(OPEN))["partial"]


def test_answers_running_count_against_the_budget_and_stop_counting_when_done(store):  # noqa: F811
    class Gate(Says):
        """Answers once the test opens the gate; counts the calls under way."""

        def __init__(self) -> None:
            super().__init__("A parcel [1].")
            self.gate = asyncio.Event()

        async def complete(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str:
            self.calls.append((system, user, max_new_tokens, deadline_s))
            await self.gate.wait()
            return self.text

    async def round_of_three(asker: Asker, model: Gate, questions: tuple[str, str, str]) -> list[dict]:
        model.gate, before = asyncio.Event(), len(model.calls)
        asker.stats.latency["llm"].clear()
        asker.stats.latency["llm"].append(6000.0)  # a typical answer: 6 s (the timer stands still: answers take 0)
        first = asyncio.ensure_future(asker.ask(questions[0]))
        await _until(lambda: len(model.calls) == before + 1)
        second = asyncio.ensure_future(asker.ask(questions[1]))
        await _until(lambda: len(model.calls) == before + 2)
        third = await asker.ask(questions[2])  # two ahead: 3 x 6 s > 15 s, refused at once
        model.gate.set()
        return [await first, await second, third]

    async def _until(done) -> None:
        for _ in range(2000):
            if done():
                return
            await asyncio.sleep(0.005)
        raise AssertionError("the model was not asked in time")

    model = Gate()
    asker = _timed_asker(store, model, 15_000.0)

    async def main():  # each question once (an answer is cached)
        return (await round_of_three(asker, model, (OPEN, "What was the person at the back door carrying?",
                                                    "What was the person at the porch wearing?")),
                await round_of_three(asker, model, ("What did the person at the porch look like?",
                                                    "What was the person at the back door wearing?",
                                                    "What did the person at the back door look like?")))

    for round_ in asyncio.run(main()):  # the second round the same: the first round's answers stopped counting
        assert [a["partial"] for a in round_] == [False, False, True]
        assert round_[2]["partial_reason"] == "the language model would take longer than t_max_ms (15000 ms)"
    assert len(model.calls) == 4


def test_the_figures_count_errors_dropped_citations_and_partial_answers(store):  # noqa: F811
    failing = _timed_asker(store, Says(error="the server is away"), 20_000.0)
    for question in (OPEN, "What was the person at the back door carrying?"):
        asyncio.run(failing.ask(question))
    f = failing.figures()
    assert f["llm_errors"] == 2 and f["partial"] == 2 and f["partial_p50_ms"] == 0.0  # the timer stood still
    assert f["L_total_ms"] == 0.0  # L_sched 0, and the fast share's L_fast unknown (no fast answer) counts 0
    citing = _timed_asker(store, Says("A parcel [1] [99]."), 20_000.0)
    for question in (OPEN, "What was the person at the back door carrying?"):
        asyncio.run(citing.ask(question))
    assert citing.figures()["dropped_citations"] == 2


def test_an_answer_names_the_model_and_the_figures_count_invalidated_answers(store):  # noqa: F811
    class Nameless:
        """A text model of the test's own without a name."""

        async def warm(self) -> None:
            return None

        async def complete(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str:
            return "A parcel [1]."

    answer = asyncio.run(_timed_asker(store, Nameless(), 20_000.0).ask(OPEN))
    assert answer["model"] == "llm" and answer["context"] >= 1
    asker = test_ask.asker_for(store)
    asyncio.run(asker.ask("How many people came to the porch today?"))
    asker.event_landed(test_ask.put(store, "house", "porch", "person", test_ask.NOW - 1000, "benign", "a visit"),
                       test_ask.NOW)
    assert asker.figures()["cache_invalidated"] == 1


def test_a_question_without_a_text_model_says_which_back_end_has_one(store):  # noqa: F811
    answer = asyncio.run(test_ask.asker_for(store).ask(OPEN))
    assert answer["partial_reason"] == "no text model for this [analyzer] backend (use openai with `vllm serve`)"


def test_a_model_answer_that_used_exactly_nine_tenths_of_the_budget_is_partial(store):  # noqa: F811
    readings = iter([0.0, 0.0, 0.0, 0.0] + [0.25] * 10)  # asked, decided, budget, call made; the call took 250 ms
    budget = 277.77777777777777  # x 0.9 is 250.0 exactly, in floats
    assert budget * 0.9 == 250.0
    answer = asyncio.run(_timed_asker(store, Says("A parcel [1]."), budget, lambda: next(readings)).ask(OPEN))
    assert answer["partial"] and answer["partial_reason"] == "the language model ran out of time (t_max_ms)"
