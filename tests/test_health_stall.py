"""What /healthz and /metrics say about the intake and the store (cloud.broker.health, issue 40): a stall is a stall
even while a trickle of new messages keeps arriving, finishing messages is progress, the store's outage is
said with its reason and cleared once it answers. Pure: a clock the test turns, no broker, no service."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest
import redis.exceptions
from edgetriage.cloud.broker import health
from edgetriage.cloud.broker.health import PROBE_EVENT_ID, IntakeHealth, store_outage
from edgetriage.cloud.storage.store import StoreError


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _health(after_s: float = 60.0) -> tuple[IntakeHealth, Clock]:
    clock = Clock()
    return IntakeHealth(after_s, clock=clock), clock


def test_a_trickle_of_new_messages_does_not_hide_a_stall():
    """Messages keep arriving, none is finished: the stall is counted from the first one waiting."""
    h, clock = _health(60.0)
    h.taken_in()
    for _ in range(7):
        clock.t += 10.0
        h.taken_in()  # a new message every 10 s, each before the stall would show
        assert h.waiting == _ + 2
    assert h.stalled_s() == 70.0
    assert h.stalled
    assert h.problems() == ["the intake has stalled: 8 message(s) received and none answered for 70 s "
                            "(delivery.stalled_after_s = 60)"]


def test_a_batch_taken_in_counts_every_message_and_starts_the_clock_once():
    h, clock = _health(30.0)
    h.taken_in(3)
    assert (h.waiting, h.stalled_s()) == (3, 0.0)
    clock.t += 20.0
    h.taken_in(2)
    clock.t += 10.0
    assert (h.waiting, h.stalled_s(), h.stalled) == (5, 30.0, True)


def test_the_stall_shows_at_exactly_stalled_after_s_and_not_before():
    h, clock = _health(60.0)
    h.taken_in()
    clock.t += 59.999
    assert not h.stalled and h.problems() == []
    clock.t += 0.001
    assert h.stalled
    assert h.problems() == ["the intake has stalled: 1 message(s) received and none answered for 60 s "
                            "(delivery.stalled_after_s = 60)"]


def test_a_finished_message_is_progress_the_clock_starts_again():
    """Counted from the later of the last finished message and the first one waiting."""
    h, clock = _health(60.0)
    h.taken_in(3)
    clock.t += 50.0
    h.done()
    assert (h.waiting, h.stalled_s()) == (2, 0.0)
    clock.t += 59.0
    assert not h.stalled
    clock.t += 1.0
    assert h.stalled and h.stalled_s() == 60.0
    h.done(2)
    assert (h.waiting, h.stalled_s()) == (0, 0.0)


def test_nothing_waiting_is_never_stalled_and_the_next_message_starts_a_fresh_clock():
    h, clock = _health(60.0)
    assert (h.waiting, h.stalled_s(), h.stalled) == (0, 0.0, False)
    h.taken_in(2)
    clock.t += 10.0
    h.done(2)
    assert (h.waiting, h.stalled_s()) == (0, 0.0)
    clock.t += 1000.0
    assert (h.stalled_s(), h.stalled, h.problems()) == (0.0, False, [])
    h.taken_in()
    assert h.stalled_s() == 0.0
    clock.t += 5.0
    assert h.stalled_s() == 5.0  # from this message, not from the last one finished 1000 s ago


def test_more_finished_than_waiting_leaves_none_waiting_not_a_negative_count():
    h, clock = _health(1.0)
    h.taken_in(2)
    h.done(5)  # released messages counted twice, say
    assert h.waiting == 0
    h.taken_in()
    assert h.waiting == 1
    clock.t += 1.0
    assert h.stalled_s() == 1.0 and h.stalled


def test_zero_or_negative_counts_change_nothing():
    h, clock = _health(60.0)
    h.taken_in(0)
    h.taken_in(-2)
    assert (h.waiting, h.stalled_s()) == (0, 0.0)
    h.taken_in(2)
    clock.t += 40.0
    h.done(0)  # no message finished: not progress
    h.done(-1)
    assert (h.waiting, h.stalled_s()) == (2, 40.0)
    clock.t += 20.0
    assert h.stalled


def test_a_store_failure_is_said_with_its_reason_until_the_store_answers():
    h, _ = _health()
    assert h.store_up and h.store_error == ""
    h.store_failed(ConnectionRefusedError(111, "Connection refused"))
    assert not h.store_up
    assert h.store_error == "ConnectionRefusedError: '[Errno 111] Connection refused'"
    assert h.problems() == ["the store is unreachable (ConnectionRefusedError: '[Errno 111] Connection refused'); "
                            "messages are retried, then released to the broker for redelivery"]
    h.store_answered()
    assert h.store_up and h.store_error == "" and h.problems() == []


def test_a_long_store_error_is_cut_to_160_characters():
    h, _ = _health()
    h.store_failed(OSError("x" * 500))
    assert h.store_error == "OSError: '" + "x" * 159 + "... (500 characters)"


def test_both_problems_at_once_store_first():
    h, clock = _health(5.0)
    h.taken_in()
    clock.t += 5.5
    h.store_failed(TimeoutError("slow"))
    assert [p.split(" ")[1] for p in h.problems()] == ["store", "intake"]
    assert "for 6 s (delivery.stalled_after_s = 5)" in h.problems()[1]


@pytest.mark.parametrize("exc", [StoreError("disk full"), OSError("gone"), TimeoutError("slow"),
                                 ConnectionRefusedError(), redis.exceptions.ConnectionError("down"),
                                 redis.exceptions.TimeoutError("slow"), redis.exceptions.BusyLoadingError("loading"),
                                 redis.exceptions.AuthenticationError("a subclass of redis' ConnectionError"),
                                 sqlite3.OperationalError("database is locked")],
                         ids=lambda e: type(e).__name__)
def test_an_outage_is_worth_retrying(exc):
    assert store_outage(exc)


@pytest.mark.parametrize("exc", [ValueError("bug"), KeyError("bug"), RuntimeError("bug"),
                                 redis.exceptions.ResponseError("WRONGTYPE"), redis.exceptions.DataError("bug"),
                                 sqlite3.IntegrityError("UNIQUE"), sqlite3.ProgrammingError("closed")],
                         ids=lambda e: type(e).__name__)
def test_a_bug_is_not_an_outage(exc):
    assert not store_outage(exc)


def test_an_error_named_like_an_outage_outside_redis_and_sqlite_is_not_one():
    class OperationalError(Exception):
        pass

    class ConnectionError(Exception):  # noqa: A001 - named like redis' on purpose
        pass

    assert not store_outage(OperationalError())
    assert not store_outage(ConnectionError())


def test_the_probe_asks_for_an_id_no_event_has_and_clears_the_outage_when_answered():
    h, _ = _health()
    h.store_failed(OSError("down"))
    asked = []
    assert asyncio.run(h.probe(lambda event_id: asked.append(event_id)))
    assert asked == ["00000000-0000-7000-8000-000000000000"] == [PROBE_EVENT_ID]
    assert h.store_up and h.problems() == []


def test_a_probe_that_fails_says_why():
    h, _ = _health()

    def down(event_id: str) -> None:
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379")

    assert asyncio.run(h.probe(down)) is False
    assert h.store_error == "ConnectionError: 'Error 111 connecting to 127.0.0.1:6379'"
    assert not h.store_up


def test_a_probe_with_no_answer_in_time_says_how_long_it_waited(monkeypatch):
    assert health.PROBE_TIMEOUT_S == 5.0  # the probe's own limit: a store slower than this is said to be away
    monkeypatch.setattr(health, "PROBE_TIMEOUT_S", 0.05)
    h, _ = _health()
    assert asyncio.run(h.probe(lambda event_id: time.sleep(0.3))) is False
    assert h.store_error == "TimeoutError: 'no answer within 0.05 s'"


def test_a_cancelled_probe_is_cancelled_not_an_outage():
    h, _ = _health()

    async def main() -> None:
        task = asyncio.ensure_future(h.probe(lambda event_id: time.sleep(0.2)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert h.store_up
