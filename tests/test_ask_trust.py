"""Questions are the operator's (issue "Trust boundaries"): with the real store and the real router, names a
device sends never change a question's words, the vocabulary learns in constant time up to a cap, a stored
time no calendar holds never fails an answer, questions never hold up an event's verdict, and a model's text
keeps no event id it does not cite."""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from edgetriage.cloud.ask.config import AskConfig
from edgetriage.cloud.ask.guard import AskError
from edgetriage.cloud.ask.router import Asker
from edgetriage.cloud.ask.vocab import Vocabulary
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import AnalyzerConfig, CloudConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict, encode_verdict
from fixed_model import FixedDelayModel
from test_ask import _jpeg, put

ZONE = ZoneInfo("Europe/Berlin")
JPEG = _jpeg()


def at(day: int, hour: int, minute: int = 0) -> int:
    return int(datetime(2026, 11, day, hour, minute, tzinfo=ZONE).timestamp() * 1000)


NOW = at(29, 21, 30)
NAMES = {"cameras": {"house": ["porch", "back_door"]}, "zones": ["front_door"]}
HOUSE = [  # the operator's own site: people today, and one alert yesterday evening
    ("house", "porch", "person", at(29, 9, 5), "benign", "a delivery person"),
    ("house", "porch", "person", at(29, 12, 40), "benign", "a neighbour"),
    ("house", "back_door", "person", at(29, 18, 30), "benign", "a person with a backpack"),
    ("house", "back_door", "person", at(28, 23, 40), "alert", "a person crouching near the back door"),
]


def asker_for(store: SQLiteStore, **settings) -> Asker:
    """An asker told of every new event (event_landed), as the service tells it in `cloud run`."""
    asker = Asker(store, AskConfig(timezone="Europe/Berlin", **{**NAMES, **settings}), AnalyzerConfig(backend="vllm"),
                 clock_ms=lambda: NOW)
    asker.attached = True
    return asker


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "cloud.db")
    for row in HOUSE:
        put(s, *row)
    yield s
    s.close()


def ask(asker: Asker, question: str, **kw) -> dict:
    return asyncio.run(asker.ask(question, **kw))


# -- names a device sends ------------------------------------------------------------------------------
def test_a_device_naming_its_camera_today_and_zones_people_and_alert_changes_no_question(store):
    """dev-a names a camera `today` and zones `people`, `alert`: the operator's questions keep their words."""
    asker = asker_for(store)
    before_count = ask(asker, "how many people came today?")
    before_last = ask(asker, "when was the last alert?")
    assert before_count["value"] == 3 and before_last["value"] == "2026-11-28 23:40"
    hostile = [put(store, "dev-a", "today", "person", at(29, 20, minute), "benign", "a blank crop",
                   ("people", "alert")) for minute in (0, 15)]  # two visits (people, not events, count)
    for event in hostile:
        asker.event_landed(event, NOW)
    count = ask(asker, "how many people came today?")
    assert count["value"] == 5 and set(count["events"]) >= {e.event_id for e in hostile}  # dev-a's events count
    assert count["answer"] == "5 people today (5 visits, 5 events)."  # ... but its names change no question word
    last = ask(asker, "when was the last alert?")
    assert last["value"] == "2026-11-28 23:40" and last["events"] == before_last["events"]
    assert "in alert" not in last["answer"] and "on today" not in last["answer"]
    # a question that quotes the names asks about them
    quoted = ask(asker, 'how many people on camera "today"?')
    assert quoted["value"] == 2 and set(quoted["events"]) == {e.event_id for e in hostile}
    assert ask(asker, 'anyone in "people" today?')["value"] is True
    for question, token in (('how many people on camera "attic"?', None), ('anyone in "people"?', "house"),
                            ('anyone on "today"?', "house")):  # none, or another device's: one answer
        with pytest.raises(AskError) as err:
            ask(asker, question, token_device=token)
        assert err.value.status == 404 and "is named" in str(err.value), question


def test_the_operator_names_cameras_and_zones_a_device_can_only_add_quoted_ones(store):
    asker = asker_for(store)
    put(store, "house", "porch", "person", at(29, 19, 0), "benign", "at the door", ("front_door",))
    put(store, "dev-a", "porch", "person", at(29, 19, 1), "benign", "the attacker's porch", ("last",))
    porch = ask(asker, "how many people came to the porch today?")
    assert porch["value"] == 3 and porch["answer"] == "3 people on porch today (3 visits, 3 events)."  # house's only
    assert ask(asker, "how many people at the front door today?")["value"] == 1
    assert ask(asker, "when was the last person?")["answer"].startswith("The last person was")  # "last": a word
    assert ask(asker, 'when was the last person in "last"?')["value"] == "2026-11-29 19:01"


def test_a_camera_only_a_device_named_is_not_read_silently_the_answer_says_to_quote_it(store):
    """Without [ask] cameras naming it, "the garage" names no camera: the answer says so and how to ask."""
    asker = asker_for(store)
    put(store, "house", "garage", "person", at(29, 19, 0), "alert", "a person by the car")
    plain = ask(asker, "how many people came to the garage today?")
    assert '"garage"' in plain.get("hint", "") and "quoted" in plain["hint"]
    quoted = ask(asker, 'how many people came to "garage" today?')
    assert quoted["value"] == 1 and "hint" not in quoted
    assert "hint" not in ask(asker, "how many people came to the porch today?")  # the operator's name


def test_a_configured_name_that_is_a_question_word_is_matched_only_quoted():
    vocabulary = Vocabulary({("house", "today"), ("house", "back_door")}, (), ["people"], devices={"alert"})
    assert vocabulary.cameras_in("how many people came today") == frozenset()
    assert vocabulary.zones_in("how many people came today") == frozenset()
    assert vocabulary.devices_in("when was the last alert") == frozenset()
    assert vocabulary.cameras_in("anyone at the back door") == {("house", "back_door")}
    assert vocabulary.quoted(["today"]).cameras == {("house", "today")}


# -- a bounded vocabulary, learned incrementally -------------------------------------------------------
def _landing_ms(asker: Asker, events: list[Event]) -> float:
    """The median time one event takes in the asker's listener (as the service calls it on its loop)."""
    times = []
    for event in events:
        begun = time.perf_counter()
        asker.event_landed(event, NOW)
        times.append(time.perf_counter() - begun)
    return statistics.median(times) * 1000


def _zoned(device: str, n: int, start: int) -> list[Event]:
    return [
        Event(
            event_id=uuid7(NOW),
            device=device,
            camera=f"cam{i % 4}",
            captured_ms=NOW,
            label="person",
            score=0.9,
            track_id=1,
            detections=[Detection(label="person", score=0.9, box=(0.1, 0.1, 0.5, 0.9))],
            phash="0123456789abcdef",
            reason="detector sure",
            crop=JPEG,
            zones=[f"z{start + i}-{j}" for j in range(16)],
        )
        for i in range(n)
    ]


def test_an_event_costs_the_same_with_6400_names_learned_as_with_16(store, caplog):
    """400 events with 16 new zone names each: a name is learned in constant time (no pattern rebuilt), so the
    400th event costs what the first did; past [ask] max_learned_names nothing more is learned, said once."""
    big = asker_for(store)
    big.vocabulary()
    _landing_ms(big, _zoned("dev-a", 400, 0))  # 6,400 zone names learned
    assert len(big.vocabulary().zones) >= 6400
    small_ms: list[float] = []
    big_ms: list[float] = []
    for round_ in range(15):  # a fresh small asker every 10 events: it never knows more than 176 names
        small = asker_for(store)
        small.vocabulary()
        _landing_ms(small, _zoned("dev-b", 1, 10_000 + round_ * 100))  # 16 names
        pairs = zip(_zoned("dev-b", 10, 20_000 + round_ * 100), _zoned("dev-c", 10, 40_000 + round_ * 100),
                    strict=True)
        for i, (one_small, one_big) in enumerate(pairs):
            # interleaved event by event, each first in turn: a burst of the machine's load falls on both alike
            turns = [(small, one_small, small_ms), (big, one_big, big_ms)]
            for asker, event, times in turns if i % 2 else turns[::-1]:
                times.append(_landing_ms(asker, [event]))
    # tens of microseconds either way (a whole event takes milliseconds); rebuilding every pattern per new
    # name made the 6,400-name landing thousands of times the 16-name one, and one scan of the names learned
    # per new name about 200 times (measured with one planted); medians of 150 interleaved events each
    ratio = statistics.median(big_ms) / statistics.median(small_ms)
    assert ratio <= 3.0, (ratio, statistics.median(big_ms), statistics.median(small_ms))
    capped = asker_for(store, max_learned_names=100)
    capped.vocabulary()
    with caplog.at_level(logging.WARNING, logger="edgetriage.cloud.ask"):
        _landing_ms(capped, _zoned("dev-d", 20, 50_000))
    vocabulary = capped.vocabulary()
    assert vocabulary.learned == 100 and len(vocabulary.zones) < 100 + 8
    assert sum("max_learned_names" in r.message for r in caplog.records) == 1


# -- stored values no calendar holds -------------------------------------------------------------------
class SaysIds:
    """A text model of the test's own that cites [1] and writes out an event id it made up."""

    name = "says-ids"

    async def warm(self) -> None:
        return None

    async def complete(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str:
        return ("A person tried the back door [1] (event 0195dead-beef-7abc-8def-0123456789ab), see also "
                "event 7f3a9c21e0 and [9].")


def test_an_event_captured_at_2_pow_53_minus_1_never_turns_an_answer_into_an_error(store):
    far = Event(event_id=uuid7(NOW), device="house", camera="porch", captured_ms=2**53 - 1, label="person",
                score=0.9, track_id=1, detections=[Detection(label="person", score=0.9, box=(0.1, 0.1, 0.5, 0.9))],
                phash="0123456789abcdef", reason="detector sure", crop=_jpeg())
    store.put_event(far, NOW)
    store.put_verdict(Verdict(event_id=far.event_id, device="house", camera="porch", label="person", verdict="alert",
                              confidence=0.8, description="a person", model="test", source="llm", created_ms=NOW))
    asker = Asker(store, AskConfig(timezone="Europe/Berlin", **NAMES), AnalyzerConfig(), text_model=SaysIds(),
                  clock_ms=lambda: NOW)
    for question in ("when was the last alert?", "how many people on the porch?", "list the events",
                     "first person on the porch", "anyone at the porch?", "porch activity",
                     "what was the person at the porch doing?"):
        answer = ask(asker, question)
        assert answer["answer"], question
    last = ask(asker, "when was the last alert?")  # the real one: a time past the calendar is in no range
    assert last["value"] == "2026-11-28 23:40" and far.event_id not in ask(asker, "list the alerts")["events"]


def test_a_model_answer_keeps_no_event_id_that_is_not_a_cited_stored_event(store):
    asker = Asker(store, AskConfig(timezone="Europe/Berlin", **NAMES), AnalyzerConfig(), text_model=SaysIds(),
                  clock_ms=lambda: NOW)
    answer = ask(asker, "what was the person at the back door doing last night?")
    assert answer["route"] == "llm" and len(answer["events"]) == 1
    assert "0195dead" not in answer["answer"] and "7f3a9c21e0" not in answer["answer"] and "[9]" not in answer["answer"]
    assert answer["answer"].startswith("A person tried the back door [1]")


# -- questions off the event loop ----------------------------------------------------------------------
def _fill(store: SQLiteStore, n: int) -> None:
    items = []
    for i in range(n):
        captured = NOW - 3_600_000 - i * 60_000
        event = Event(
            event_id=uuid7(captured),
            device="house",
            camera="porch",
            captured_ms=captured,
            label="person",
            score=0.9,
            track_id=i,
            detections=[Detection(label="person", score=0.9, box=(0.1, 0.1, 0.5, 0.9))],
            phash=f"{i:016x}",
            reason="detector sure",
            crop=JPEG,
            zones=["front_door"],
        )
        verdict = Verdict(event_id=event.event_id, device="house", camera="porch", label="person", verdict="benign",
                          confidence=0.8, description=f"visitor {i} in a coat", model="test", source="llm",
                          created_ms=captured)
        items.append((event, captured, verdict, encode_verdict(verdict)))
    for start in range(0, n, 500):
        store.put_answered_many(items[start:start + 500])


def test_fifty_questions_at_once_do_not_hold_up_an_event_verdict(tmp_path, store):
    """An event's verdict through the real service (a model of the test's own that answers at once) while 50
    questions that scan 1,500 stored events run: many events go by, each waiting a small part of the time the
    questions take (asked on the event loop, an event waited for their whole work)."""
    _fill(store, 1500)
    config = CloudConfig.model_validate({"store_path": str(tmp_path / "cloud.db"), "http": {"enabled": False}})

    async def scenario() -> tuple[list[float], float]:
        service = build_service(config, FixedDelayModel(0.0, 8), store)
        asker = asker_for(store)
        asker.attach(service)
        topic = service.topics.events("house")

        async def one_event(i: int) -> float:
            event = Event(event_id=uuid7(), device="house", camera="back_door", captured_ms=NOW, label="person",
                          score=0.9, track_id=10_000 + i,
                          detections=[Detection(label="person", score=0.9, box=(0.1, 0.1, 0.5, 0.9))],
                          phash=f"{(i * 7919) % (1 << 60):016x}", reason="detector sure", crop=_jpeg())
            begun = time.perf_counter()
            await service.process(event, topic)
            return (time.perf_counter() - begun) * 1000

        for i in range(5):  # warm up
            await one_event(i)
        begun = time.perf_counter()
        questions = [asyncio.ensure_future(asker.ask(f"how many people were on the porch in the last {n} hours?"))
                     for n in range(1, 51)]
        waits = []
        i = 100
        while not all(q.done() for q in questions):
            waits.append(await one_event(i))
            i += 1
            await asyncio.sleep(0.01)
        answers = await asyncio.gather(*questions)
        took = (time.perf_counter() - begun) * 1000
        await service.stop()
        asker.close()
        assert all(a["route"] == "rules" for a in answers)
        return waits, took

    waits, took = asyncio.run(scenario())
    # measured in the same run, so a loaded machine slows both alike: asked on the event loop, an event waited
    # for the questions' whole work (one wait, about `took`); off it, many events go by, each a small part
    worst = sorted(waits)[int(0.9 * (len(waits) - 1))]
    assert len(waits) >= 10 and worst < 0.1 * took, (worst, took, waits)
