"""The router's promises (cloud.ask.router): what `cite` keeps of a model's text (the first paragraph, whitespace
collapsed, 400 characters, only valid markers renumbered, only the cited events' ids), and the scope `Asker._read`
gives a question (the devices and cameras it may read, the zone its times are read in, the time given). The real
store and router, no model."""

from __future__ import annotations

import asyncio
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
import test_ask
from edgetriage.cloud.ask import router
from edgetriage.cloud.ask.config import AskConfig
from edgetriage.cloud.ask.facts import EventFact
from edgetriage.cloud.ask.guard import AskError
from edgetriage.cloud.ask.router import Asker, _without_foreign_ids, cite
from edgetriage.cloud.config import AnalyzerConfig
from edgetriage.shared.ids import uuid7

# the question fixtures of test_ask: a real SQLite store with a small site's events
store = test_ask.store

NEW_YORK = ZoneInfo("America/New_York")
FOREIGN = "0195dead-beef-7abc-8def-0123456789ab"  # an event id no event given has


def _fact(n: int) -> EventFact:
    return EventFact(uuid7(1000 + n), "house", "porch", "person", 1000 + n, "alert", f"visit {n}", (), "sure")


FACTS = [_fact(n) for n in range(3)]


def _asker(store, clock_ms: int = test_ask.NOW, **settings) -> Asker:  # noqa: F811
    config = AskConfig(timezone="Europe/Berlin", **{**test_ask.NAMES, **settings})
    return Asker(store, config, AnalyzerConfig(backend="vllm"), clock_ms=lambda: clock_ms)  # no text model


def _ask(asker: Asker, question: str, **scope) -> dict:
    return asyncio.run(asker.ask(question, **scope))


def _refusal(asker: Asker, question: str, **scope) -> tuple[int, str]:
    with pytest.raises(AskError) as refused:
        _ask(asker, question, **scope)
    return refused.value.status, str(refused.value)


def _new_york_midnight(day: int) -> int:
    return int(datetime(2026, 11, day, tzinfo=NEW_YORK).timestamp() * 1000)


# -- cite: the model's text ---------------------------------------------------------------------------------
def test_only_the_first_paragraph_of_the_model_s_text_is_kept():
    text, cited, dropped = cite("A visitor came [1].\n\nThen another [2].", FACTS)
    assert (text, cited, dropped) == ("A visitor came [1].", [FACTS[0]], 0)


def test_whitespace_is_collapsed_before_the_text_is_cut_at_400_characters():
    # 450 spaces: cut before collapsing, the words after them would be lost
    text, cited, _ = cite("A person" + " " * 450 + "\n came [1].", FACTS)
    assert (text, cited) == ("A person came [1].", [FACTS[0]])


def test_the_model_s_text_is_cut_at_400_characters():
    text, _, _ = cite("y" * 450, FACTS)
    assert text == "y" * 400


def test_citing_the_last_event_given_keeps_it():
    text, cited, dropped = cite("The last one came [3].", FACTS)
    assert (text, cited, dropped) == ("The last one came [1].", [FACTS[2]], 0)


def test_the_last_event_given_keeps_its_marker_when_renumbered():
    text, cited, dropped = cite("One came [1], then another [3].", FACTS)
    assert (text, cited, dropped) == ("One came [1], then another [2].", [FACTS[0], FACTS[2]], 0)


def test_a_marker_naming_no_event_given_is_removed_entirely():
    text, cited, dropped = cite("Someone came [9] today.", FACTS)
    assert (text, cited, dropped) == ("Someone came today.", FACTS, 1)  # none valid: rests on all given


def test_a_group_of_markers_is_renumbered_as_one_group():
    text, cited, _ = cite("Two came [3,1].", FACTS)
    assert (text, cited) == ("Two came [1, 2].", [FACTS[2], FACTS[0]])


def test_a_group_of_only_invalid_markers_disappears_beside_a_valid_one():
    text, cited, dropped = cite("Seen [2] and [7] today.", FACTS)
    assert (text, cited, dropped) == ("Seen [1] and today.", [FACTS[1]], 1)


# -- cite: event ids in the model's text ---------------------------------------------------------------------
def test_a_cited_event_s_id_stays_exactly_as_written():
    own = FACTS[1].event_id
    text, _, _ = cite(f"A visitor [2], event {own}.", FACTS)
    assert text == f"A visitor [1], event {own}."


def test_text_without_ids_comes_back_with_single_spaces():
    assert _without_foreign_ids("  A   visitor\n\n came\t[1]. ", FACTS) == "A visitor came [1]."


@pytest.mark.parametrize(("raw", "tidy"), [
    # brackets a foreign id stood in alone are removed, "( )" and "[ ]" alike
    (f"Seen (event {FACTS[0].event_id}) and [ {FACTS[2].event_id} ] today [2].", "Seen and today [1]."),
    (f"It came at event {FOREIGN}, then left [1].", "It came at, then left [1]."),  # no space before punctuation
    (f"Seen event {FOREIGN} today [1].", "Seen today [1]."),  # the spaces around it collapse to one
    # no leading punctuation; lstrip takes characters, not a prefix: a first word starting with one keeps it
    (f"Event {FOREIGN}: Xavier came [1].", "Xavier came [1]."),
], ids=["brackets", "punctuation", "spaces", "start"])
def test_the_text_a_removed_id_leaves_is_tidy(raw, tidy):
    assert cite(raw, FACTS)[0] == tidy


# -- Asker._read: the zone a question's times are read in ------------------------------------------------------
def test_a_question_naming_no_device_reads_times_in_the_zone_all_devices_share(store):  # noqa: F811
    asker = _asker(store, timezones={"shed": "America/New_York", "house": "America/New_York"})
    answer = _ask(asker, "How many people came today?")  # 15:30 in New York, 21:30 in Berlin
    assert answer["window"]["start_ms"] == _new_york_midnight(29)
    assert answer["value"] == 3  # not the back door's 02:15 (Berlin), 20:15 the day before in New York


def test_a_question_naming_a_device_in_words_reads_times_in_that_device_s_zone(store):  # noqa: F811
    answer = _ask(_asker(store, timezones={"shed": "America/New_York"}), "How many people came to the shed today?")
    assert answer["window"]["start_ms"] == _new_york_midnight(29) and answer["value"] == 1


def test_a_question_is_read_once_when_its_first_zone_is_already_its_devices(store, monkeypatch):  # noqa: F811
    # the words are read again only when the devices named have a zone of their own; a quoted device's zone
    # and, with none named, all devices' zone are known before the first reading
    reads = []
    real = router.read

    def counted(*args):
        reads.append(args[2])
        return real(*args)

    monkeypatch.setattr(router, "read", counted)
    asker = _asker(store, timezones={"shed": "America/New_York"})
    assert _ask(asker, 'How many people came to "shed" today?')["value"] == 1
    assert reads == [NEW_YORK]
    reads.clear()
    assert _ask(asker, 'How many people came to "cam2" today?')["value"] == 1  # a quoted camera: its device's
    assert reads == [NEW_YORK]
    reads.clear()
    assert _ask(asker, "How many people came today?")["window"]["start_ms"] == test_ask.at(29, 0)
    assert reads == [ZoneInfo("Europe/Berlin")]


# -- Asker._read: what a device's token may ask about ----------------------------------------------------------
def test_a_device_token_naming_two_other_devices_is_told_both(store):  # noqa: F811
    asker = _asker(store, timezones={"barn": "Europe/Berlin"})
    assert _refusal(asker, "How many people came to the shed or the barn?", token_device="house") == (
        403, "the token of device house may not ask about device barn, shed")


def test_a_device_token_naming_two_other_devices_cameras_is_told_both(store):  # noqa: F811
    asker = _asker(store, cameras={**test_ask.NAMES["cameras"], "shed": ["cam2", "cam3"]})
    assert _refusal(asker, "How many people came to cam2 or cam3?", token_device="house") == (
        403, "the token of device house may not ask about camera cam2, cam3")


def test_a_camera_name_two_devices_share_means_the_asking_device_s_own(store):  # noqa: F811
    test_ask.put(store, "shed", "porch", "person", test_ask.at(29, 19), "benign", "a person at the shed's porch")
    asker = _asker(store, cameras={**test_ask.NAMES["cameras"], "shed": ["cam2", "porch"]})
    mine = _ask(asker, "How many people came to the porch today?", token_device="house")
    assert mine["value"] == 2 and set(mine["events"]) == {
        i for i in test_ask.ids(store, device="house", camera="porch")
        if store.get_event(i)["captured_ms"] >= test_ask.at(29, 0)}


# -- Asker._read: the devices, cameras and time a question covers ----------------------------------------------
def test_a_question_naming_a_device_in_words_covers_only_that_device_s_events(store):  # noqa: F811
    answer = _ask(_asker(store), "How many people came to the shed today?")
    assert answer["value"] == 1 and set(answer["events"]) == test_ask.ids(store, device="shed")


def test_the_camera_given_narrows_the_question_to_that_camera_s_events(store):  # noqa: F811
    answer = _ask(_asker(store), "How many people came today?", camera="porch")
    assert answer["value"] == 2 and set(answer["events"]) <= test_ask.ids(store, camera="porch")


def test_the_time_given_alone_is_the_question_s_window_and_says_so(store):  # noqa: F811
    answer = _ask(_asker(store), "How many people came?", since_ms=test_ask.at(29, 9))
    assert answer["window"] == {"start_ms": test_ask.at(29, 9), "end_ms": None, "phrase": "since the time given"}
    assert answer["value"] == 3


def test_the_later_of_the_time_given_and_the_question_s_start_wins(store):  # noqa: F811
    asker = _asker(store)
    earlier = _ask(asker, "How many people came today?", since_ms=test_ask.at(28, 0))
    assert earlier["window"] == {"start_ms": test_ask.at(29, 0), "end_ms": None, "phrase": "today"}
    later = _ask(asker, "How many people came today?", since_ms=test_ask.at(29, 9))
    assert later["window"] == {"start_ms": test_ask.at(29, 9), "end_ms": None, "phrase": "today"}


def test_a_window_starting_at_the_epoch_with_the_epoch_given_starts_at_the_epoch(store):  # noqa: F811
    # a clock one hour past the epoch: "in the last hour" starts at 0, a start that reads as false
    answer = _ask(_asker(store, clock_ms=3_600_000), "How many people came in the last hour?", since_ms=0)
    assert answer["window"]["start_ms"] == 0


def test_a_device_named_in_words_and_another_quoted_are_both_asked_about(store):  # noqa: F811
    test_ask.put(store, "barn", "gate", "person", test_ask.at(29, 10), "benign", "a person at the barn")
    answer = _ask(_asker(store), 'How many people came to the house or "shed" today?')
    assert answer["value"] == 4  # the house's three and the shed's one; not the barn's
    assert set(answer["events"]) <= test_ask.ids(store, device="house") | test_ask.ids(store, device="shed")
