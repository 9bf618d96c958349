"""The MQTT intake's rules (cloud.broker.intake, issue 40), without a broker or a service: which message is
acknowledged and when (once its claim or verdict is stored, never before; a refused one at once, so it is not
redelivered), how an outage is retried, then released or parked and healed, when a bug is given up on, how a
turn's cache hits are answered together, and the time limits at intake. A link, a service and a clock of the
test's own; the real thing over Mosquitto is tests/test_heal.py's (slow)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import cv2
import numpy as np
import pytest
from edgetriage.cloud.broker import intake
from edgetriage.cloud.broker.admission import check_captured
from edgetriage.cloud.broker.health import IntakeHealth
from edgetriage.cloud.broker.intake import Arrival, CacheHits, MQTTIntake, TurnBatch, fair
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.counts.servicestats import ServiceStats, Throttled
from edgetriage.cloud.scheduling.outcome import Released
from edgetriage.shared.ids import uuid7
from edgetriage.shared.mqtt import Incoming
from edgetriage.shared.protocol import Detection, Event, ProtocolError, Verdict, encode_event, encode_verdict

NOW = int(time.time() * 1000)
TOPIC = "et/v1/pi-door/events"
_sleep = asyncio.sleep  # the test's own waits, never the recorded one
JPEG = cv2.imencode(".jpg", np.zeros((16, 16, 3), np.uint8))[1].tobytes()


def _event(n: int = 0, device: str = "pi-door", captured_ms: int | None = None) -> Event:
    t = NOW - 1000 + n if captured_ms is None else captured_ms
    return Event(event_id=uuid7(NOW - 1000 + n), device=device, camera="porch", captured_ms=t, label="person",
                 score=0.45, uncertain=True, track_id=n, detections=[Detection(label="person", score=0.45,
                                                                               box=(0.1, 0.1, 0.9, 0.9))],
                 phash="f0f0f0f0f0f0f0f0", reason="detector unsure", crop=JPEG)


def _verdict(event: Event, verdict: str = "benign") -> Verdict:
    return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label="person",
                   verdict=verdict, confidence=0.8, description="", model="m", created_ms=NOW)


def _msg(event: Event | bytes, mid: int, topic: str = TOPIC, generation: int = 7) -> Incoming:
    payload = event if isinstance(event, bytes) else encode_event(event)
    return Incoming(topic=topic, payload=payload, qos=1, retain=False, mid=mid, generation=generation)


# -- the time limits at intake ---------------------------------------------------------------------------------

def _config(days: float = 30, skew_s: float = 60) -> CloudConfig:
    return CloudConfig.model_validate({"retention": {"events_days": days}, "delivery": {"max_clock_skew_s": skew_s}})


def test_an_event_ahead_within_the_skew_is_shown_when_the_cloud_got_it():
    event = _event(captured_ms=NOW + 60_000)
    assert check_captured(event, NOW, _config()).captured_ms == NOW
    same = _event(captured_ms=NOW)
    assert check_captured(same, NOW, _config()) is same


def test_an_event_ahead_past_the_skew_is_refused_saying_why():
    with pytest.raises(ProtocolError) as caught:
        check_captured(_event(captured_ms=NOW + 60_001), NOW, _config())
    assert caught.value.reason == (f"captured_ms {NOW + 60_001} is 60 s ahead of the cloud's clock, more than "
                                   "delivery.max_clock_skew_s = 60; set the device's clock (NTP)")
    assert caught.value.code == "invalid"
    with pytest.raises(ProtocolError, match="is 0 s ahead"):
        check_captured(_event(captured_ms=NOW + 1), NOW, _config(skew_s=0))
    with pytest.raises(ProtocolError, match=r"is 3600 s ahead of the cloud's clock, more than "
                                            r"delivery\.max_clock_skew_s = 1800;"):
        check_captured(_event(captured_ms=NOW + 3_600_000), NOW, _config(skew_s=1800))


def test_an_event_older_than_retention_is_refused_saying_why():
    oldest = NOW - 30 * 86_400_000
    assert check_captured(_event(captured_ms=oldest), NOW, _config()).captured_ms == oldest
    with pytest.raises(ProtocolError) as caught:
        check_captured(_event(captured_ms=oldest - 1), NOW, _config())
    assert caught.value.reason == (f"captured_ms {oldest - 1} is 30.0 days old, older than retention.events_days "
                                   "= 30; nothing that old is kept")
    assert check_captured(_event(captured_ms=1), NOW, _config(days=0)).captured_ms == 1  # no retention: kept
    with pytest.raises(ProtocolError, match=r"is 1000\.1 days old, older than retention\.events_days = 30;"):
        check_captured(_event(captured_ms=NOW - 86_404_320_432), NOW, _config())  # 1000.050005 days: 1000.1


# -- turns by device -------------------------------------------------------------------------------------------

def test_a_batch_is_taken_in_turns_by_device():
    def m(topic: str, n: int) -> tuple[Incoming, str]:
        return Incoming(topic=topic, payload=b"", qos=1, retain=False, mid=n), f"{topic}{n}"

    one = [m("a", 1), m("a", 2)]
    assert fair(one) is one
    two = [m("a", 1), m("a", 2), m("b", 3)]
    assert [x for _, x in fair(two)] == ["a1", "b3", "a2"]
    three = [m("a", 1), m("a", 2), m("a", 3), m("b", 4), m("c", 5), m("c", 6)]
    assert [x for _, x in fair(three)] == ["a1", "b4", "c5", "a2", "c6", "a3"]
    assert fair([]) == []


# -- the intake, a fake link and service -----------------------------------------------------------------------

class Link:
    def __init__(self, manual_ack: bool = True) -> None:
        self.manual_ack = manual_ack
        self.acks: list[tuple[int, int | None]] = []
        self.redelivered = 0

    def ack(self, mid: int, qos: int = 1, generation: int | None = None) -> bool:
        self.acks.append((mid, generation))
        return True

    def redeliver(self) -> None:
        self.redelivered += 1


class Service:
    """Answers from a script: `hits` (what answer_hits returns, or an exception to raise) and, per event id, a
    list of what each answer_rest call does: ("claim", result), an exception, or a result."""

    def __init__(self) -> None:
        self.hits: list | Exception | None = None
        self.rest: dict[str, list] = {}
        self.accepted: list[tuple[str, str]] = []
        self.refuse: dict[str, Exception] = {}
        self.asked: list[str] = []
        self.hit_batches: list[list[str]] = []

    def accept(self, message: bytes | Event, topic: str) -> Event:
        assert isinstance(message, Event)
        if message.event_id in self.refuse:
            raise self.refuse[message.event_id]
        self.accepted.append((message.event_id, topic))
        return message

    def answer_hits(self, arrivals):
        self.hit_batches.append([a.event.event_id for a in arrivals])
        for a in arrivals:  # received by the wall clock in ms, arrived by the monotonic one
            assert abs(a.received_ms - int(time.time() * 1000)) < 60_000 and 0 < a.arrived <= time.monotonic()
        if isinstance(self.hits, Exception):
            raise self.hits
        return self.hits if self.hits is not None else [None] * len(arrivals)

    async def answer_rest(self, arrival, on_claimed):
        event = arrival.event
        self.asked.append(event.event_id)
        steps = self.rest[event.event_id]
        step = steps.pop(0) if len(steps) > 1 else steps[0]
        if isinstance(step, tuple) and step[0] == "claim":
            on_claimed()
            on_claimed()  # called twice: acknowledged once all the same
            step = step[1]
        if isinstance(step, BaseException):
            raise step
        return step


class Rig:
    def __init__(self, manual_ack: bool = True, probe_ok: bool = True) -> None:
        self.service = Service()
        self.stats = ServiceStats()
        self.health = IntakeHealth(60.0)
        self.tasks: list[asyncio.Task] = []
        self.probe_ok = probe_ok
        self.probes: list[str] = []
        self.intake = MQTTIntake(self.service, self._track, self.stats, Throttled(logging.getLogger("t"), 0.0),
                                 self.health, self._lookup)
        self.link = Link(manual_ack)
        self.probed = 0  # probes finished (the answer back on the loop)
        probe = self.health.probe

        async def counted(lookup) -> bool:
            answered = await probe(lookup)
            self.probed += 1
            return answered

        self.health.probe = counted  # type: ignore[method-assign]

    def _track(self, coro) -> None:
        self.tasks.append(asyncio.ensure_future(coro))

    def _lookup(self, event_id: str) -> None:
        self.probes.append(event_id)
        if not self.probe_ok:
            raise ConnectionRefusedError("still down")

    async def settle(self) -> None:
        while not all(t.done() for t in self.tasks):
            await asyncio.gather(*self.tasks)

    async def take(self, *messages: Incoming) -> None:
        self.tasks = [t for t in self.tasks if not t.done()]
        self._track(self.intake._take_in(self.link, [(m, time.monotonic()) for m in messages]))
        await self.settle()


@pytest.fixture
def slept(monkeypatch):
    """asyncio.sleep, recorded and not slept (a yield to the loop instead)."""
    real = asyncio.sleep
    delays: list[float] = []

    async def sleep(delay, result=None):
        delays.append(delay)
        return await real(0.0005 if delay else 0, result)  # a loop of sleeps never spins the CPU

    monkeypatch.setattr(asyncio, "sleep", sleep)
    return delays


def test_the_time_limits_are_the_documented_ones():
    assert intake.RETRY_DELAYS_S == (0.25, 0.5, 1.0, 2.0, 4.0)
    assert (intake.HEAL_POLL_S, intake.PROBE_EVERY_S) == (0.5, 2.0)
    assert (intake.MAX_PARKED, intake.MAX_FAILED_DELIVERIES) == (10_000, 3)


def test_a_turn_s_hits_are_acknowledged_once_published_and_the_rest_once_answered(slept):
    rig = Rig()
    events = [_event(n) for n in range(4)]
    rig.service.hits = [(_verdict(events[0]), True), (_verdict(events[1]), False), None, None]
    rig.service.rest = {events[2].event_id: [(_verdict(events[2]), True)],
                        events[3].event_id: [(_verdict(events[3]), False)]}
    asyncio.run(rig.take(*[_msg(e, 10 + n) for n, e in enumerate(events)]))
    assert rig.service.hit_batches == [[e.event_id for e in events]]  # one call for the turn
    assert rig.service.asked == [events[2].event_id, events[3].event_id]
    # a hit not published (no broker) is not acknowledged: its redelivery publishes it
    assert rig.link.acks == [(10, 7), (12, 7)]
    assert rig.health.waiting == 0
    assert (rig.stats.released, rig.stats.retried, rig.stats.rejected) == (0, 0, 0)
    assert slept == []


def test_the_batch_is_counted_waiting_before_it_is_answered():
    rig = Rig()
    events = [_event(n) for n in range(3)]
    seen = []
    rig.service.answer_hits = lambda arrivals: seen.append(rig.health.waiting) or [None] * len(arrivals)
    rig.service.rest = {e.event_id: [(_verdict(e), True)] for e in events}
    asyncio.run(rig.take(*[_msg(e, n) for n, e in enumerate(events)]))
    assert seen == [3] and rig.health.waiting == 0


def test_a_batch_is_decoded_off_the_loop_on_the_intake_s_own_thread(monkeypatch):
    """A flood of crafted MessagePack costs the intake's decoding thread, not the loop every event waits on."""
    threads: list[str] = []
    decode_all = intake._decode_all

    def recorded(payloads):
        threads.append(threading.current_thread().name)
        return decode_all(payloads)

    monkeypatch.setattr(intake, "_decode_all", recorded)
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [(_verdict(event), True)]}
    asyncio.run(rig.take(_msg(event, 1), _msg(b"garbage", 2)))
    asyncio.run(rig.take(_msg(b"garbage", 3)))
    assert len(threads) == 2 and all(name.startswith("event-decode") for name in threads)  # once per batch
    assert threading.main_thread().name not in threads


def test_batches_that_arrive_together_are_decoded_one_after_the_other_on_one_thread(monkeypatch):
    """One decoding thread: a flood costs at most one core, and batches are decoded in the order they came."""
    threads: list[str] = []
    decode_all = intake._decode_all

    def slow(payloads):
        threads.append(threading.current_thread().name)
        time.sleep(0.05)
        return decode_all(payloads)

    monkeypatch.setattr(intake, "_decode_all", slow)
    rig = Rig()

    async def main() -> None:
        for n in range(3):
            rig._track(rig.intake._take_in(rig.link, [(_msg(b"garbage", n), time.monotonic())]))
        await rig.settle()

    asyncio.run(main())
    assert len(threads) == 3 and len(set(threads)) == 1
    assert rig.link.acks == [(0, 7), (1, 7), (2, 7)]


def test_a_message_that_cannot_be_decoded_is_counted_refused_and_acknowledged():
    rig = Rig()
    good = _event(1)
    rig.service.rest = {good.event_id: [(_verdict(good), True)]}
    asyncio.run(rig.take(_msg(b"garbage", 1), _msg(good, 2), _msg(b"", 3)))
    assert rig.link.acks == [(1, 7), (3, 7), (2, 7)]  # the refused at once, the good one once answered
    assert (rig.stats.received, rig.stats.rejected, rig.stats.rejected_by) == (2, 2, {"encoding": 2})
    assert rig.service.accepted == [(good.event_id, TOPIC)]
    assert rig.health.waiting == 0


def test_an_event_the_service_refuses_is_acknowledged_and_one_it_fails_on_is_released(caplog):
    rig = Rig()
    refused, failing = _event(1), _event(2)
    rig.service.refuse = {refused.event_id: ProtocolError("not yours", "forbidden"),
                          failing.event_id: RuntimeError("a bug")}
    with caplog.at_level(logging.WARNING):
        asyncio.run(rig.take(_msg(refused, 1), _msg(failing, 2)))
    assert rig.link.acks == [(1, 7)]
    assert rig.stats.rejected_by == {"forbidden": 1} and rig.stats.received == 0
    assert rig.stats.released == 1 and rig.intake._release_wanted
    assert rig.service.hit_batches == [[]]
    (failed,) = [r for r in caplog.records if r.getMessage().startswith("could not accept")]
    assert failed.getMessage() == f"could not accept the message on {TOPIC}; it is released for redelivery"
    assert (failed.name, failed.levelno, failed.exc_info[0]) == ("edgetriage.cloud.service", logging.ERROR,
                                                                 RuntimeError)
    assert f"rejected a message on {TOPIC}: not yours" in caplog.messages


def test_a_claim_stored_is_acknowledged_once_even_if_no_verdict_is_published():
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [("claim", (None, False))]}  # claimed: waits for room in the queue
    asyncio.run(rig.take(_msg(event, 5)))
    assert rig.link.acks == [(5, 7)]
    assert (rig.stats.released, rig.intake._parked) == (0, {})


def test_an_answer_published_after_its_claim_is_acknowledged_once():
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [("claim", (_verdict(event), True))]}
    asyncio.run(rig.take(_msg(event, 5)))
    assert rig.link.acks == [(5, 7)]


def test_nothing_stored_nothing_acknowledged():
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [(None, False)]}
    asyncio.run(rig.take(_msg(event, 5)))
    assert rig.link.acks == [] and rig.stats.released == 0 and not rig.intake._release_wanted


def test_released_by_a_stopping_scheduler_is_left_to_the_broker():
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [Released()]}
    asyncio.run(rig.take(_msg(event, 5)))
    assert rig.link.acks == [] and rig.stats.released == 0 and rig.intake._parked == {}
    assert rig.health.waiting == 0


def test_an_event_refused_while_answering_is_acknowledged_and_counted(caplog):
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [ProtocolError("its id is another device's", "forbidden")]}
    with caplog.at_level(logging.WARNING):
        asyncio.run(rig.take(_msg(event, 5)))
    assert rig.link.acks == [(5, 7)] and rig.stats.rejected_by == {"forbidden": 1}
    assert f"rejected event {event.event_id} of pi-door: its id is another device's" in caplog.messages


def test_an_outage_is_tried_again_after_each_delay_then_released(slept, caplog):
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [ConnectionRefusedError(111, "refused")]}
    with caplog.at_level(logging.WARNING):
        asyncio.run(rig.take(_msg(event, 5)))
    assert slept == [0.25, 0.5, 1.0, 2.0, 4.0]
    assert len(rig.service.asked) == 6 and rig.stats.retried == 5
    assert rig.link.acks == [] and rig.stats.released == 1 and rig.intake._release_wanted
    assert rig.intake._parked == {} and rig.intake._failed == {}  # an outage is no bug
    assert rig.health.store_error == "ConnectionRefusedError: '[Errno 111] refused'"
    assert f"could not answer event {event.event_id} ([Errno 111] refused); trying again in 0.25 s" in caplog.messages
    assert f"could not answer event {event.event_id} ([Errno 111] refused); releasing it" in caplog.messages
    assert rig.health.waiting == 0


def test_an_outage_that_ends_while_retrying_is_answered_and_acknowledged(slept):
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [OSError("down"), OSError("down"), (_verdict(event), True)]}
    asyncio.run(rig.take(_msg(event, 5)))
    assert slept == [0.25, 0.5] and rig.stats.retried == 2
    assert rig.link.acks == [(5, 7)] and rig.stats.released == 0


@pytest.mark.parametrize("manual_ack", [True, False])
def test_an_acknowledged_event_whose_answer_fails_is_kept_here(slept, manual_ack):
    """Acknowledged already (its claim stored; or MQTT 3.1.1, acknowledged on receipt): the broker will not send
    it again, so it is parked for `heal`."""
    rig = Rig(manual_ack=manual_ack)
    event = _event(1)
    rig.service.rest = {event.event_id: [("claim", OSError("down")) if manual_ack else OSError("down")]}
    asyncio.run(rig.take(_msg(event, 5)))
    assert list(rig.intake._parked) == [event.event_id]
    assert rig.intake._parked[event.event_id].event == event
    assert rig.stats.released == 1 and not rig.intake._release_wanted
    assert rig.link.acks == ([(5, 7)] if manual_ack else [])


def test_a_bug_is_given_up_on_after_three_deliveries(slept, caplog):
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [ValueError("a bug")]}
    for delivery in (1, 2):
        asyncio.run(rig.take(_msg(event, delivery)))
        assert rig.intake._failed == {event.event_id: delivery}
        assert rig.link.acks == [] and rig.stats.released == delivery
    with caplog.at_level(logging.ERROR):
        asyncio.run(rig.take(_msg(event, 3)))
    assert rig.link.acks == [(3, 7)]  # acknowledged: it never cycles through the broker again
    assert rig.stats.rejected_by == {"internal": 1} and rig.stats.released == 2
    assert rig.intake._failed == {}
    assert rig.health.store_up  # a bug says nothing about the store
    assert f"gave up on event {event.event_id} after 3 failed deliveries (see the errors above); it is acknowledged" \
        in caplog.messages
    tries = [m for m in caplog.messages if m.startswith("could not answer event")]
    assert tries == ([f"could not answer event {event.event_id}; trying again"] * 5 + [
        f"could not answer event {event.event_id}; releasing it"]) * 3  # each delivery's six tries, in order


def test_a_bug_that_heals_before_its_last_try_is_not_counted(slept):
    rig = Rig()
    event = _event(1)
    rig.service.rest = {event.event_id: [ValueError("a bug"), (_verdict(event), True)]}
    asyncio.run(rig.take(_msg(event, 1)))
    assert rig.intake._failed == {} and rig.link.acks == [(1, 7)]


def test_the_count_of_failed_deliveries_is_bounded(slept, monkeypatch):
    monkeypatch.setattr(intake, "MAX_PARKED", 2)
    rig = Rig()
    events = [_event(n) for n in range(4)]
    rig.service.rest = {e.event_id: [ValueError("a bug")] for e in events}
    for n, e in enumerate(events[:2]):
        asyncio.run(rig.take(_msg(e, n)))
    assert len(rig.intake._failed) == 2  # cleared only once it holds more than MAX_PARKED
    asyncio.run(rig.take(_msg(events[2], 2)))
    assert rig.intake._failed == {}
    asyncio.run(rig.take(_msg(events[3], 3)))
    assert rig.intake._failed == {events[3].event_id: 1}


def test_parked_events_beyond_the_limit_drop_the_oldest(slept, monkeypatch, caplog):
    monkeypatch.setattr(intake, "MAX_PARKED", 2)
    rig = Rig(manual_ack=False)
    events = [_event(n) for n in range(3)]
    rig.service.rest = {e.event_id: [OSError("down")] for e in events}
    with caplog.at_level(logging.ERROR):
        for n, e in enumerate(events):
            asyncio.run(rig.take(_msg(e, n)))
    assert list(rig.intake._parked) == [events[1].event_id, events[2].event_id]
    assert rig.stats.released == 3
    assert (f"more than 2 events wait for the store; event {events[0].event_id} is dropped (the device's re-send "
            "brings it back)") in caplog.messages


def test_the_turn_s_failed_lookup_sends_every_event_the_one_at_a_time_way(caplog):
    rig = Rig()
    event = _event(1)
    rig.service.hits = OSError("redis away")
    rig.service.rest = {event.event_id: [(_verdict(event), True)]}
    with caplog.at_level(logging.WARNING):
        asyncio.run(rig.take(_msg(event, 1)))
    assert rig.link.acks == [(1, 7)] and rig.health.store_error == "OSError: 'redis away'"
    assert "the store failed (redis away); each event is tried on its own" in caplog.messages

    rig = Rig()
    rig.service.hits = KeyError("a bug")
    rig.service.rest = {event.event_id: [(_verdict(event), True)]}
    with caplog.at_level(logging.ERROR):
        asyncio.run(rig.take(_msg(event, 1)))
    assert rig.link.acks == [(1, 7)] and rig.health.store_up
    assert "could not answer 1 event(s) from the cache together" in caplog.messages


# -- healing ---------------------------------------------------------------------------------------------------

async def _heal_until(rig: Rig, done, rounds: int = 200) -> asyncio.Task:
    task = asyncio.ensure_future(rig.intake.heal())
    for _ in range(rounds):
        await _sleep(0)
        await _sleep(0.001)
        if done():
            break
    return task


def test_heal_reconnects_once_the_store_answers_and_answers_the_parked_events(slept, caplog):
    caplog.set_level(logging.INFO, logger="edgetriage.cloud.service")
    rig = Rig(probe_ok=False)
    released, parked = _event(1), _event(2)
    rig.service.rest = {released.event_id: [OSError("down")], parked.event_id: [("claim", OSError("down"))]}

    async def main() -> None:
        rig.intake.open(asyncio.get_running_loop(), rig.link)
        await rig.take(_msg(released, 1), _msg(parked, 2))
        assert rig.intake._release_wanted and list(rig.intake._parked) == [parked.event_id]
        slept.clear()
        task = await _heal_until(rig, lambda: len(rig.probes) >= 3)
        assert rig.link.redelivered == 0 and rig.intake._parked  # the store still away: nothing moves
        assert slept[0] == 0.5
        rig.probe_ok = True
        rig.service.rest[parked.event_id] = [(_verdict(parked), True)]
        asked = len(rig.service.asked)
        deadline = time.monotonic() + 3.0
        while rig.link.redelivered == 0 and time.monotonic() < deadline:
            await _sleep(0.001)
        assert rig.link.redelivered == 1, "no reconnection within 3 s of the store answering"
        task.cancel()
        await rig.settle()
        assert rig.link.redelivered == 1 and not rig.intake._release_wanted
        assert rig.intake._parked == {} and rig.service.asked[asked:] == [parked.event_id]
        assert rig.probes[0] == "00000000-0000-7000-8000-000000000000"

    asyncio.run(main())
    assert rig.link.acks == [(2, 7)]  # acknowledged once, when its claim was stored
    said = [r for r in caplog.records if r.levelno == logging.INFO and r.name == "edgetriage.cloud.service"]
    assert [r.getMessage() for r in said] == [
        "the store answers again: reconnecting so the broker sends the released messages again"]


def test_a_parked_event_that_fails_again_is_parked_again(slept):
    rig = Rig(manual_ack=False)
    event = _event(1)
    rig.service.rest = {event.event_id: [OSError("down")]}

    async def main() -> None:
        rig.intake.open(asyncio.get_running_loop(), rig.link)
        await rig.take(_msg(event, 1))
        task = await _heal_until(rig, lambda: len(rig.service.asked) > 6)
        deadline = time.monotonic() + 3.0
        while len(rig.service.asked) < 12 and time.monotonic() < deadline:
            await _sleep(0.001)
        assert len(rig.service.asked) >= 12, "the parked event was not tried again within 3 s"
        task.cancel()
        await rig.settle()
        assert list(rig.intake._parked) == [event.event_id]
        assert rig.link.redelivered == 0  # nothing released: parked events are answered here, not redelivered

    asyncio.run(main())


def test_heal_stops_without_restarting_parked_events_once_closed(slept):
    rig = Rig(manual_ack=False)
    event = _event(1)
    rig.service.rest = {event.event_id: [OSError("down")]}

    async def main() -> None:
        rig.intake.open(asyncio.get_running_loop(), rig.link)
        await rig.take(_msg(event, 1))
        rig.intake.close()
        asked = len(rig.service.asked)
        await asyncio.wait_for(rig.intake.heal(), 5)  # returns by itself
        assert len(rig.service.asked) == asked and list(rig.intake._parked) == [event.event_id]

    asyncio.run(main())


def test_heal_probes_while_the_store_is_said_to_be_away_and_rarely_otherwise(slept):
    rig = Rig()

    async def main() -> None:
        rig.intake.open(asyncio.get_running_loop(), rig.link)
        task = await _heal_until(rig, lambda: False, rounds=30)
        assert len(rig.probes) == 1  # nothing waits: once every PROBE_EVERY_S
        rig.health.store_failed(OSError("down"))
        task2 = await _heal_until(rig, lambda: rig.health.store_up)
        assert rig.health.store_up and len(rig.probes) >= 2
        task.cancel()
        task2.cancel()

    asyncio.run(main())


@pytest.mark.parametrize("waiting", ["released", "parked", "store away"])
def test_heal_asks_again_soon_once_anything_waits_for_the_store(slept, waiting):
    """Nothing waits: the store is asked every PROBE_EVERY_S (2 s). Once a message was released, an event parked
    or the store said to be away, it is asked every HEAL_POLL_S, well before those 2 s are up."""
    rig = Rig(manual_ack=waiting != "parked")
    event = _event(1)

    async def main() -> None:
        rig.intake.open(asyncio.get_running_loop(), rig.link)
        task = await _heal_until(rig, lambda: rig.probed >= 1)
        assert len(rig.probes) == 1
        if waiting == "released":
            rig.service.refuse = {event.event_id: RuntimeError("a bug")}
            await rig.take(_msg(event, 1))
        elif waiting == "parked":
            rig.service.rest = {event.event_id: [(_verdict(event), True)]}
            rig.intake._park(Arrival(event, NOW, 0.0))
        else:
            rig.health.store_failed(OSError("down"))
        assert rig.health.store_up == (waiting != "store away")
        deadline = time.monotonic() + 1.5
        while rig.probed < 2 and time.monotonic() < deadline:
            await _sleep(0.005)
        for _ in range(5):
            await _sleep(0.005)
        task.cancel()
        await rig.settle()
        assert rig.probed >= 2, "the store was not asked again within 1.5 s"
        assert rig.link.redelivered == (1 if waiting == "released" else 0)
        assert rig.intake._parked == {} and rig.health.store_up

    asyncio.run(main())


# -- from paho's thread to the loop ----------------------------------------------------------------------------

def test_messages_from_the_network_thread_are_taken_in_one_turn():
    rig = Rig()
    events = [_event(n) for n in range(3)]
    rig.service.rest = {e.event_id: [(_verdict(e), True)] for e in events}

    async def main() -> None:
        rig.intake.from_network(_msg(events[0], 0))  # before open: ignored (nothing acknowledged)
        rig.intake.open(asyncio.get_running_loop(), rig.link)
        thread = threading.Thread(target=lambda: [rig.intake.from_network(_msg(e, n)) for n, e in enumerate(events)])
        thread.start()
        thread.join()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await rig.settle()
        assert rig.service.hit_batches == [[e.event_id for e in events]]  # one wake-up, one batch
        later = _event(9)
        rig.service.rest[later.event_id] = [(_verdict(later), True)]
        rig.intake.from_network(_msg(later, 9))  # the next message wakes the loop again
        for _ in range(50):
            await asyncio.sleep(0.01)
            await rig.settle()
            if len(rig.link.acks) == 4:
                break
        assert rig.service.hit_batches[1:] == [[later.event_id]]

    asyncio.run(main())
    assert sorted(rig.link.acks) == [(0, 7), (1, 7), (2, 7), (9, 7)]


def test_a_message_after_close_is_left_unacknowledged():
    rig = Rig()
    event = _event(1)

    async def main() -> None:
        rig.intake.open(asyncio.get_running_loop(), rig.link)
        rig.intake.close()
        rig.intake.from_network(_msg(event, 1))
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert rig.tasks == [] and rig.link.acks == [] and rig.service.accepted == []


def test_a_message_for_a_closed_loop_is_dropped_quietly():
    rig = Rig()
    loop = asyncio.new_event_loop()
    rig.intake.open(loop, rig.link)
    loop.close()
    rig.intake.from_network(_msg(_event(1), 1))  # no exception on paho's thread
    assert rig.tasks == []


# -- a turn's cache hits together ------------------------------------------------------------------------------

class Store:
    def __init__(self, new: list[bool] | None = None) -> None:
        self.queries: list[list[dict]] = []
        self.written: list[list[tuple]] = []
        self.new = new
        self.found: dict[str, Verdict] = {}

    def lookup_many(self, queries):
        self.queries.append(queries)
        return [self.found.get(q["event"]) for q in queries]

    def put_answered_many(self, items):
        self.written.append(items)
        return self.new if self.new is not None else [True] * len(items)


class Cache:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.reused_calls: list[tuple[str, str, float]] = []
        self.refuse: set[str] = set()

    def query(self, event: Event, version: str) -> dict:
        return {"event": event.event_id, "version": version}

    def reused(self, event: Event, hit: Verdict, at: float):
        self.reused_calls.append((event.event_id, hit.event_id, at))
        if event.event_id in self.refuse:
            return None
        return hit.model_copy(update={"event_id": event.event_id, "source": "cloud_cache",
                                      "reused_from": hit.event_id})


def _hits(store: Store, cache: Cache, log: list) -> CacheHits:
    def answered(arrival, verdict, encoded):
        log.append(("published", arrival.event.event_id, len(store.written)))
        assert encoded == encode_verdict(verdict)
        return arrival.event.event_id != "none"

    return CacheHits(cache, lambda event: f"v-{event.track_id}", answered)


def test_no_hit_writes_nothing():
    store = Store()
    log: list = []
    hits = _hits(store, Cache(store), log)
    arrivals = [Arrival(_event(n), NOW + n, 5.0 + n) for n in range(2)]
    assert hits(arrivals) == [None, None]
    assert store.queries == [[{"event": e.event_id, "version": f"v-{e.track_id}"} for e in (a.event for a in arrivals)]]
    assert store.written == [] and log == [] and (hits.turns, hits.stored) == (0, 0)


def test_the_hits_are_written_in_one_call_before_any_is_published():
    store = Store(new=[True, False])
    cache = Cache(store)
    earlier = [_event(10), _event(11), _event(12)]
    arrivals = [Arrival(_event(n), NOW + n, 5.0 + n) for n in range(4)]
    store.found = {arrivals[0].event.event_id: _verdict(earlier[0]), arrivals[2].event.event_id: _verdict(earlier[1]),
                   arrivals[3].event.event_id: _verdict(earlier[2])}
    cache.refuse = {arrivals[3].event.event_id}  # found, but the reuse rule says no
    log: list = []
    hits = _hits(store, cache, log)
    hits.kept = lambda event: event.model_copy(update={"crop": b"\xff\xd8\xff\xd9kept"})
    answers = hits(arrivals)
    assert [c[2] for c in cache.reused_calls] == [5.0, 7.0, 8.0]  # each with its own arrival time
    (written,) = store.written
    assert [(e.event_id, e.crop, received) for e, received, _, _ in written] == [
        (arrivals[0].event.event_id, b"\xff\xd8\xff\xd9kept", NOW),
        (arrivals[2].event.event_id, b"\xff\xd8\xff\xd9kept", NOW + 2)]
    assert all(encoded == encode_verdict(v) for _, _, v, encoded in written)
    assert answers[1] is None and answers[3] is None
    assert answers[2] is None  # stored already (a redelivery): not new, the one-at-a-time path decides
    verdict, published = answers[0]
    assert (verdict.event_id, verdict.reused_from, published) == (arrivals[0].event.event_id, earlier[0].event_id, True)
    assert log == [("published", arrivals[0].event.event_id, 1)]  # after the write
    assert (hits.turns, hits.stored) == (1, 2)
    store.new = None
    assert hits(arrivals[:2])[0] is not None and (hits.turns, hits.stored) == (2, 3)


def test_a_hit_stored_by_default_as_it_came():
    store = Store()
    cache = Cache(store)
    event = _event(1)
    store.found = {event.event_id: _verdict(_event(9))}
    hits = CacheHits(cache, lambda e: "1", lambda arrival, verdict, encoded: False)
    assert hits([Arrival(event, NOW, 1.0)])[0][1] is False
    assert store.written[0][0][0] is event


# -- one call per turn for the HTTP intake ---------------------------------------------------------------------

def test_the_calls_of_one_turn_are_one_call():
    calls: list[list[int]] = []

    def many(items: list[int]) -> list[int]:
        calls.append(items)
        return [i * 10 for i in items]

    batch = TurnBatch(many)

    async def main() -> None:
        assert await asyncio.wait_for(asyncio.gather(batch(1), batch(2), batch(3)), 5) == [10, 20, 30]
        assert await asyncio.wait_for(batch(4), 5) == 40

    asyncio.run(main())
    assert calls == [[1, 2, 3], [4]] and (batch.batches, batch.calls) == (2, 4)


def test_a_failed_call_fails_every_caller_of_its_turn():
    def many(items: list[int]) -> list[int]:
        raise OSError("store away")

    batch = TurnBatch(many)

    async def main() -> list:
        return await asyncio.wait_for(asyncio.gather(batch(1), batch(2), return_exceptions=True), 5)

    out = asyncio.run(main())
    assert [str(e) for e in out] == ["store away", "store away"] and (batch.batches, batch.calls) == (0, 0)


def test_a_caller_that_gave_up_does_not_break_its_turn():
    batch = TurnBatch(lambda items: [i + 1 for i in items])

    async def main() -> int:
        gone = asyncio.ensure_future(batch(1))
        kept = asyncio.ensure_future(batch(2))
        await asyncio.sleep(0)
        gone.cancel()
        return await asyncio.wait_for(kept, 5)

    assert asyncio.run(main()) == 3
    failing = TurnBatch(lambda items: 1 / 0)

    async def cancelled_then_failed() -> None:
        gone = asyncio.ensure_future(failing(1))
        kept = asyncio.ensure_future(failing(2))
        await asyncio.sleep(0)
        gone.cancel()
        with pytest.raises(ZeroDivisionError):
            await asyncio.wait_for(kept, 5)

    asyncio.run(cancelled_then_failed())


def test_every_message_of_a_turn_is_counted_worked_on_until_it_is_done():
    """Questions give way while events are worked on (cloud.counts.pressure): a turn counts all its messages (one that
    cannot be decoded and one refused included) until each is answered, refused or handed on; an event answered
    the one-at-a-time way counts until its own answer is done; nothing stays counted after."""
    rig = Rig()
    events = [_event(n) for n in range(4)]
    seen: dict[str, int] = {}

    def hits(arrivals):
        seen["hits"] = rig.intake.pressure.count
        return [(_verdict(events[0]), True), None, None]

    async def rest(arrival, on_claimed):
        seen[arrival.event.event_id] = rig.intake.pressure.count
        return _verdict(arrival.event), True

    rig.service.answer_hits = hits
    rig.service.answer_rest = rest
    rig.service.refuse = {events[3].event_id: ProtocolError("refused here", "invalid")}
    asyncio.run(rig.take(*[_msg(e, n) for n, e in enumerate(events)], _msg(b"garbage", 9)))
    assert seen["hits"] == 5  # the whole turn, while its hits are answered
    # the two answered one at a time: both counted once the turn is done, then each until its answer is
    assert [seen[events[1].event_id], seen[events[2].event_id]] == [2, 1]
    assert rig.intake.pressure.count == 0


def test_a_turn_that_fails_counts_nothing_after():
    """A turn that stops on an error (here the link fails to acknowledge a refused event) leaves none of its
    messages counted: the one handed on counts until its own answer is done, the rest are let go."""
    rig = Rig()
    events = [_event(n) for n in range(3)]
    rig.service.rest = {e.event_id: [(_verdict(e), True)] for e in events}
    rig.service.refuse = {events[2].event_id: ProtocolError("refused here", "invalid")}

    def ack(mid: int, qos: int = 1, generation: int | None = None) -> bool:
        raise RuntimeError("the link failed")

    rig.link.ack = ack
    with pytest.raises(RuntimeError, match="the link failed"):
        asyncio.run(rig.take(*[_msg(e, n) for n, e in enumerate(events)]))
    assert rig.intake.pressure.count == 0
