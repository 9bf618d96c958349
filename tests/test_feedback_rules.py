"""Operator feedback's rules (cloud.teach.feedback, issue 40), with a real SQLite store and no broker: the same word
twice sends and teaches nothing new, a second correction keeps what the model said as `was`, an alert takes the
event back from the learner, the cached copies are corrected with it, and what is sent where. The wiring over
MQTT and HTTP is tests/test_feedback.py's (slow: a broker and the service)."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.cloud.teach import feedback as fb
from edgetriage.cloud.teach.feedback import (
    Correction,
    Feedback,
    FeedbackError,
    benign_by_feedback,
    benign_events,
    is_operator_verdict,
    operator_copy,
    wanted_verdict,
)
from edgetriage.shared.feedbackmark import FeedbackMark
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, ReuseRule, Verdict

T0 = int(time.time() * 1000) - 3_600_000  # the model's verdicts are made an hour ago
NOW = T0 + 3_600_000
JPEG = b"\xff\xd8\xff\xd9"


def _event(n: int, device: str = "pi-door", camera: str = "porch", at: int | None = None) -> Event:
    t = T0 + n if at is None else at
    return Event(event_id=uuid7(t), device=device, camera=camera, site="home", captured_ms=t, label="person",
                 score=0.45, uncertain=True, track_id=n, detections=[Detection(label="person", score=0.45,
                                                                               box=(0.1, 0.1, 0.9, 0.9))],
                 phash="f0f0f0f0f0f0f0f0", reason="detector unsure", crop=JPEG)


def _verdict(event: Event, verdict: str = "alert", scope: str = "site", **kw) -> Verdict:
    rule = ReuseRule(scope=scope, device=event.device, camera=event.camera, site="home" if scope == "site" else None,
                     label="person", phash=event.phash, prompt_version="1", ttl_s=3600)
    fields = {"event_id": event.event_id, "device": event.device, "camera": event.camera, "label": "person",
              "verdict": verdict, "confidence": 0.8, "description": "a person by the door", "model": "m",
              "created_ms": event.captured_ms, "cache": rule, "decided_by": "model", **kw}
    return Verdict(**fields)


class Sent:
    """What Feedback sends: verdicts on device topics, site offers, what the learner is told."""

    def __init__(self, connected: bool = True) -> None:
        self.connected = connected
        self.published: list[Verdict] = []
        self.offers: list[tuple[Verdict, list[Verdict]]] = []
        self.told: list[Verdict] = []

    def publish(self, verdict: Verdict) -> bool:
        self.published.append(verdict)
        return self.connected

    def offer(self, verdict: Verdict, offers: list[Verdict]) -> None:
        self.offers.append((verdict, offers))


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "cloud.db")
    yield s
    s.close()


def _feedback(store, sent: Sent, devices: tuple[str, ...] = ("pi-door", "pi-yard", "pi-gate")) -> Feedback:
    counts: dict[tuple[str, str, str], int] = {}
    asked = []

    def site_devices(site: str) -> list[str]:
        asked.append(site)
        return list(devices) if site == "home" else []

    f = Feedback(store, sent.publish, sent.offer, site_devices, counts)
    f.listeners.append(sent.told.append)
    f.asked_sites = asked  # type: ignore[attr-defined]
    return f


def _stored(store, event: Event, verdict: Verdict, received_ms: int | None = None) -> Verdict:
    store.put_event(event, event.captured_ms if received_ms is None else received_ms)
    store.put_verdict(verdict)
    return verdict


# -- what the operator means -----------------------------------------------------------------------------------

def test_wanted_verdict_reads_correct_and_verdict():
    assert wanted_verdict("alert", True, None) == "alert"
    assert wanted_verdict("alert", False, None) == "benign"
    assert wanted_verdict("benign", False, None) == "alert"
    assert wanted_verdict("unknown", True, None) == "unknown"
    assert wanted_verdict("alert", None, "benign") == "benign"
    assert wanted_verdict("alert", True, "alert") == "alert"
    assert wanted_verdict("alert", False, "unknown") == "unknown"  # the verdict named wins over the flip
    assert wanted_verdict("alert", False, "alert") == "alert"


@pytest.mark.parametrize(("old", "correct", "verdict", "message"), [
    ("alert", None, "maybe", "verdict must be one of alert, benign, unknown, not 'maybe'"),
    ("alert", None, "x" * 40, f"verdict must be one of alert, benign, unknown, not {'x' * 24!r}"),
    ("alert", True, "benign", "'correct': true with 'verdict': 'benign' contradicts the stored verdict 'alert'; "
                              "send one of them"),
    ("alert", None, None, "send 'correct' (true or false) or the right 'verdict' (alert, benign, unknown)"),
    ("unknown", False, None, "the verdict was 'unknown': say which is right with 'verdict' (alert or benign)"),
])
def test_feedback_that_says_neither_or_both_ways_is_a_400_saying_why(old, correct, verdict, message):
    with pytest.raises(FeedbackError) as caught:
        wanted_verdict(old, correct, verdict)
    assert (str(caught.value), caught.value.status) == (message, 400)


def test_feedback_on_an_event_without_a_verdict_is_a_404(store):
    event_id = uuid7(T0)
    with pytest.raises(FeedbackError) as caught:
        _feedback(store, Sent()).give(event_id, correct=True)
    assert caught.value.status == 404
    assert str(caught.value) == f"no verdict for event {event_id!r} (yet): feedback needs a verdict to correct"


# -- what a correction stores and sends ------------------------------------------------------------------------

def test_a_correction_is_stored_marked_and_sent(store):
    event = _event(1)
    old = _stored(store, event, _verdict(event, "alert", clause="anyone at the door", model_verdict="unknown"))
    sent = Sent()
    f = _feedback(store, sent)
    done = f.give(event.event_id, correct=False, note="the postman", by="ana", now_ms=NOW)
    new = done.verdict
    assert (done.kind, done.published, done.copies, done.offers) == ("corrected", True, 0, 2)
    assert (new.verdict, new.confidence, new.decided_by, new.created_ms, new.provisional) == (
        "benign", 1.0, "operator", NOW, False)
    assert new.feedback == FeedbackMark(by="ana", at_ms=NOW, note="the postman", was="alert")
    assert new.clause is None  # the clause that said alert decides nothing now
    assert new.model_verdict == "unknown"  # the model's own word, kept
    assert new.cache is not None and new.cache.operator and old.cache is not None and not old.cache.operator
    assert new.cache.model_copy(update={"operator": False}) == old.cache
    assert store.get_verdict(event.event_id) == new
    assert sent.published == [new] and sent.told == [new]
    assert f.counts == {("pi-door", "porch", "corrected"): 1}
    assert f.asked_sites == ["home"]  # type: ignore[attr-defined]
    ((offered, offers),) = sent.offers
    assert offered == new
    assert [o.device for o in offers] == ["pi-yard", "pi-gate"]  # never back to the device it is about
    for o in offers:
        assert (o.source, o.reused_from, o.verdict, o.description, o.event_id) == (
            "cloud_cache", event.event_id, "benign", "", event.event_id)


def test_a_confirmation_keeps_the_clause_and_counts_as_confirmed(store):
    event = _event(1)
    _stored(store, event, _verdict(event, "alert", clause="anyone at the door"))
    sent = Sent()
    f = _feedback(store, sent)
    done = f.give(event.event_id, correct=True, now_ms=NOW)
    assert (done.kind, done.verdict.verdict, done.verdict.clause, done.verdict.model_verdict) == (
        "confirmed", "alert", "anyone at the door", "alert")  # the model's word: what the verdict said
    assert done.verdict.feedback == FeedbackMark(by="operator", at_ms=NOW, note="", was="alert")
    assert f.counts == {("pi-door", "porch", "confirmed"): 1}


def test_the_same_feedback_twice_stores_sends_and_teaches_nothing_new(store):
    """A double click: the second answer is the stored verdict, published false, and the learner is told once
    (told twice, one event would count twice as suppression evidence)."""
    event = _event(1)
    _stored(store, event, _verdict(event, "alert"))
    sent = Sent()
    f = _feedback(store, sent)
    first = f.give(event.event_id, verdict="benign", now_ms=NOW)
    again = f.give(event.event_id, verdict="benign", now_ms=NOW + 5000)
    assert again == Correction(first.verdict, "corrected", False, 0, 0)
    also = f.give(event.event_id, correct=True, now_ms=NOW + 6000)  # "right" of the operator's own benign
    assert also == Correction(first.verdict, "corrected", False, 0, 0)
    assert store.get_verdict(event.event_id) == first.verdict
    assert sent.told == [first.verdict] and sent.published == [first.verdict] and len(sent.offers) == 1
    assert f.counts == {("pi-door", "porch", "corrected"): 1}


def test_a_confirmation_said_twice_is_still_a_confirmation(store):
    event = _event(1)
    _stored(store, event, _verdict(event, "alert"))
    sent = Sent()
    f = _feedback(store, sent)
    first = f.give(event.event_id, correct=True, now_ms=NOW)
    assert f.give(event.event_id, correct=True, now_ms=NOW + 1) == Correction(first.verdict, "confirmed", False, 0, 0)
    assert sent.told == [first.verdict]


def test_the_model_s_same_verdict_confirmed_is_new_feedback(store):
    """Not said before: a model verdict (even with a mark copied onto it) is no operator's word."""
    event = _event(1)
    mark = FeedbackMark(by="ana", at_ms=T0, was="alert")
    _stored(store, event, _verdict(event, "alert", feedback=mark))
    sent = Sent()
    done = _feedback(store, sent).give(event.event_id, correct=True, now_ms=NOW)
    assert (done.published, done.verdict.decided_by) == (True, "operator")
    assert sent.told == [done.verdict]


def test_an_operator_verdict_without_its_mark_takes_new_feedback(store):
    event = _event(1)
    _stored(store, event, _verdict(event, "benign", decided_by="operator"))
    sent = Sent()
    done = _feedback(store, sent).give(event.event_id, verdict="benign", now_ms=NOW)
    assert (done.published, done.kind, done.verdict.feedback.was) == (True, "confirmed", "benign")


def test_a_second_correction_records_what_the_model_said(store):
    """alert (model) -> benign (operator) -> alert (operator): `was` stays the model's alert, not the benign."""
    event = _event(1)
    _stored(store, event, _verdict(event, "alert"))
    sent = Sent()
    f = _feedback(store, sent)
    first = f.give(event.event_id, verdict="benign", by="ana", now_ms=NOW)
    second = f.give(event.event_id, verdict="alert", by="bo", note="it was a person", now_ms=NOW + 1000)
    assert first.verdict.feedback.was == "alert"
    assert second.verdict.feedback == FeedbackMark(by="bo", at_ms=NOW + 1000, note="it was a person", was="alert")
    assert (second.kind, second.published, second.verdict.verdict) == ("corrected", True, "alert")
    assert second.verdict.model_verdict == "alert"
    assert store.get_verdict(event.event_id).feedback.was == "alert"
    assert sent.told == [first.verdict, second.verdict]
    assert sent.told[-1].verdict == "alert"  # the learner is told the alert: it takes the event back out
    assert f.counts == {("pi-door", "porch", "corrected"): 2}


def test_no_broker_stores_the_correction_but_sends_no_offers(store):
    event = _event(1)
    _stored(store, event, _verdict(event, "alert"))
    sent = Sent(connected=False)
    done = _feedback(store, sent).give(event.event_id, correct=False, now_ms=NOW)
    assert (done.published, done.offers) == (False, 0)
    assert sent.offers == [] and store.get_verdict(event.event_id) == done.verdict
    assert sent.told == [done.verdict]  # told all the same: the word is stored


@pytest.mark.parametrize("scope", ["camera", "no rule"])
def test_only_a_site_rule_is_offered_again_to_the_site(store, scope):
    event = _event(1)
    verdict = _verdict(event, "alert", scope="camera")
    _stored(store, event, verdict if scope == "camera" else verdict.model_copy(update={"cache": None}))
    sent = Sent()
    f = _feedback(store, sent)
    done = f.give(event.event_id, correct=False, now_ms=NOW)
    assert (done.published, done.offers, sent.offers) == (True, 0, [])
    assert f.asked_sites == []  # type: ignore[attr-defined]
    assert (done.verdict.cache is None) == (scope == "no rule")


def test_a_site_rule_without_a_site_is_offered_to_no_one(store):
    event = _event(1)
    verdict = _verdict(event, "alert")
    _stored(store, event, verdict.model_copy(update={"cache": verdict.cache.model_copy(update={"site": None})}))
    sent = Sent()
    done = _feedback(store, sent).give(event.event_id, correct=False, now_ms=NOW)
    assert (done.offers, sent.offers) == (0, [])


def test_a_site_of_one_device_gets_an_empty_offer(store):
    event = _event(1)
    _stored(store, event, _verdict(event, "alert"))
    sent = Sent()
    done = _feedback(store, sent, devices=("pi-door",)).give(event.event_id, correct=False, now_ms=NOW)
    assert done.offers == 0 and sent.offers == [(done.verdict, [])]


def test_a_verdict_that_names_itself_as_its_source_is_its_own_answer(store):
    event = _event(1)
    _stored(store, event, _verdict(event, "alert", reused_from=event.event_id))
    done = _feedback(store, Sent()).give(event.event_id, correct=False, now_ms=NOW)
    assert done.verdict.reused_from is None and done.copies == 0


def test_a_corrected_cache_hit_keeps_where_it_came_from():
    source = uuid7(T0)
    event = _event(1)
    hit = _verdict(event, "alert", source="cloud_cache", reused_from=source)
    mark = FeedbackMark(by="ana", at_ms=NOW, was="alert")
    fixed = operator_copy(hit, "benign", mark, NOW)
    assert fixed.reused_from == source and fixed.source == "cloud_cache"
    assert operator_copy(hit.model_copy(update={"cache": None}), "benign", mark, NOW).cache is None


def test_a_provisional_verdict_corrected_is_final():
    event = _event(1)
    mark = FeedbackMark(by="a", at_ms=1, was="alert")
    fixed = operator_copy(_verdict(event, "alert", provisional=True), "alert", mark, NOW)
    assert fixed.provisional is False


# -- the cached copies -----------------------------------------------------------------------------------------

def test_the_cached_copies_are_corrected_with_it(store):
    source = _event(0)
    old = _stored(store, source, _verdict(source, "alert"))
    hits = []
    for n, device in ((1, "pi-yard"), (2, "pi-gate")):
        e = _event(n, device=device, camera="gate")
        hits.append(_stored(store, e, _verdict(e, "alert", source="cloud_cache", reused_from=source.event_id)))
    other = _event(3)
    _stored(store, other, _verdict(other, "alert", source="cloud_cache", reused_from=uuid7(T0 - 5)))
    _stored(store, _event(4), _verdict(_event(4), "alert"))
    store.put_event(_event(5), T0 + 5)  # an event not answered yet
    sent = Sent()
    f = _feedback(store, sent)
    done = f.give(source.event_id, correct=False, now_ms=NOW)
    assert done.copies == 2
    for hit in hits:
        fixed = store.get_verdict(hit.event_id)
        assert (fixed.verdict, fixed.decided_by, fixed.reused_from, fixed.device) == (
            "benign", "operator", source.event_id, hit.device)
        assert fixed.feedback == done.verdict.feedback
        assert fixed in sent.published
    assert len(sent.published) == 3 and sent.published[0] == done.verdict
    assert store.get_verdict(other.event_id).verdict == "alert"
    assert sent.told == [done.verdict]  # the copies teach nothing: only the operator's own word
    assert f.counts == {(old.device, old.camera, "corrected"): 1}


def test_copies_are_looked_for_from_ten_minutes_before_the_verdict(store):
    source = _event(0, at=T0 + 1_000_000)
    _stored(store, source, _verdict(source, "alert"))
    since = source.captured_ms - 600_000
    inside = _event(1, device="pi-yard", at=since + 10)
    edge = _event(2, device="pi-yard", at=since + 20)
    outside = _event(3, device="pi-yard", at=since - 10)
    _stored(store, inside, _verdict(inside, "alert", reused_from=source.event_id), received_ms=since + 1)
    _stored(store, edge, _verdict(edge, "alert", reused_from=source.event_id), received_ms=since)
    _stored(store, outside, _verdict(outside, "alert", reused_from=source.event_id), received_ms=since - 1)
    done = _feedback(store, Sent()).give(source.event_id, correct=False, now_ms=NOW)
    assert done.copies == 2
    assert [store.get_verdict(e.event_id).verdict for e in (inside, edge, outside)] == ["benign", "benign", "alert"]


def test_copies_are_read_page_by_page_up_to_the_limit(store, monkeypatch):
    assert (fb.COPIES_MAX, fb.COPIES_PAGE, fb.COPIES_WINDOW_MS) == (500, 200, 600_000)
    monkeypatch.setattr(fb, "COPIES_PAGE", 3)
    monkeypatch.setattr(fb, "COPIES_MAX", 5)
    source = _event(0)
    _stored(store, source, _verdict(source, "alert"))
    for n in range(1, 8):  # 7 copies over three pages (the source, on the third, is none)
        e = _event(n, device="pi-yard")
        _stored(store, e, _verdict(e, "alert", reused_from=source.event_id))
    done = _feedback(store, Sent()).give(source.event_id, correct=False, now_ms=NOW)
    assert done.copies == 5
    rows = store.list_events("pi-yard", limit=10)
    assert [r["verdict"]["verdict"] for r in rows] == ["benign"] * 5 + ["alert"] * 2  # the newest five


def test_copies_on_exactly_full_pages_are_all_found(store, monkeypatch):
    monkeypatch.setattr(fb, "COPIES_PAGE", 3)
    source = _event(0)
    _stored(store, source, _verdict(source, "alert"))
    for n in range(1, 6):  # five copies and the source: two full pages
        e = _event(n, device="pi-yard")
        _stored(store, e, _verdict(e, "alert", reused_from=source.event_id))
    assert _feedback(store, Sent()).give(source.event_id, correct=False, now_ms=NOW).copies == 5


def test_copy_paging_stops_at_events_older_than_the_window(store, monkeypatch):
    monkeypatch.setattr(fb, "COPIES_PAGE", 2)
    source = _event(0, at=T0 + 1_000_000)
    _stored(store, source, _verdict(source, "alert"))
    since = source.captured_ms - 600_000
    inside = _event(5, device="pi-yard", at=since + 10)
    _stored(store, inside, _verdict(inside, "alert", reused_from=source.event_id))
    for n in range(1, 4):  # too old to be copies: a page of them ends the search
        e = _event(n, device="pi-yard", at=since - 100 + n)
        _stored(store, e, _verdict(e, "alert", reused_from=source.event_id))
    late = _event(9, device="pi-yard", at=since - 200)  # older still: never read
    _stored(store, late, _verdict(late, "alert", reused_from=source.event_id), received_ms=since + 5)
    calls = []
    listing = store.list_events

    def counted(*args, **kw):
        calls.append(kw.get("before"))
        return listing(*args, **kw)

    monkeypatch.setattr(store, "list_events", counted)
    done = _feedback(store, Sent()).give(source.event_id, correct=False, now_ms=NOW)
    assert done.copies == 1
    assert len(calls) == 2  # the source's page, then one page older than the window
    assert store.get_verdict(late.event_id).verdict == "alert"


def test_the_log_line_says_who_changed_what(store, caplog):
    event = _event(1)
    _stored(store, event, _verdict(event, "alert"))
    with caplog.at_level(logging.INFO, logger="edgetriage.cloud.feedback"):
        _feedback(store, Sent()).give(event.event_id, correct=False, by="ana", now_ms=NOW)
    (record,) = [r for r in caplog.records if r.name == "edgetriage.cloud.feedback"]
    assert record.levelno == logging.INFO
    assert record.getMessage() == f"feedback on pi-door/porch event {event.event_id} by ana: alert -> benign " \
                                  "(0 cached copies corrected)"
    assert (record.event_id, record.device, record.camera) == (event.event_id, "pi-door", "porch")


def test_the_answer_as_json(store):
    event = _event(1)
    _stored(store, event, _verdict(event, "alert"))
    done = _feedback(store, Sent()).give(event.event_id, correct=False, now_ms=NOW)
    out = done.as_json()
    assert (out["kind"], out["published"], out["copies"], out["offers"]) == ("corrected", True, 0, 2)
    assert out["verdict"]["v"] == 1 and out["verdict"]["verdict"] == "benign"
    assert out["verdict"]["feedback"] == {"by": "operator", "at_ms": NOW, "note": "", "was": "alert"}
    assert "embedding" not in out["verdict"]["cache"] and out["verdict"]["cache"]["operator"] is True


def test_feedback_error_defaults_to_400():
    assert FeedbackError("x").status == 400 and FeedbackError("x", 404).status == 404


# -- readers: the learner and the dataset export ---------------------------------------------------------------

def test_an_operator_verdict_is_known_as_such_in_either_form():
    event = _event(1)
    assert is_operator_verdict(_verdict(event, decided_by="operator"))
    assert not is_operator_verdict(_verdict(event))
    assert is_operator_verdict({"decided_by": "operator"})
    assert not is_operator_verdict({"decided_by": "model"})
    assert not is_operator_verdict({})
    assert not is_operator_verdict(None)


def test_benign_events_put_the_operator_s_first_newest_first_within_each(store):
    ids = []
    for n, (verdict, who) in enumerate([("benign", "model"), ("benign", "operator"), ("alert", "model"),
                                         ("benign", "model"), ("benign", "operator")]):
        e = _event(n)
        ids.append(e.event_id)
        _stored(store, e, _verdict(e, verdict, decided_by=who))
    other = _event(9, camera="gate")
    _stored(store, other, _verdict(other, "benign", decided_by="operator"))
    found = benign_events(store, "pi-door", "porch")
    assert [(row["event_id"], who) for row, who in found] == [
        (ids[4], "operator"), (ids[1], "operator"), (ids[3], "model"), (ids[0], "model")]
    assert [row["event_id"] for row in benign_by_feedback(store, "pi-door", "porch")] == [ids[4], ids[1]]
    assert [row["event_id"] for row in benign_by_feedback(store, "pi-door", "porch", since_ms=T0 + 2)] == [ids[4]]
    assert [row["event_id"] for row in benign_by_feedback(store, "pi-door", "porch", limit=2)] == [ids[4]]
    assert [r["event_id"] for r, _ in benign_events(store, "pi-door", "porch", since_ms=T0 + 1, limit=2)] == [
        ids[4], ids[3]]
    assert len(benign_events(store, "pi-door", "porch", limit=3)) == 3
    assert [r["event_id"] for r, _ in benign_events(store, "pi-door", "gate")] == [other.event_id]


# -- the HTTP body ---------------------------------------------------------------------------------------------

def _post(store, body: str) -> tuple[int, dict]:
    """POST /v1/verdicts/{id}/feedback on the feedback routes alone (an in-process server, the operator's
    principal filed by a middleware of the test's own)."""
    from types import SimpleNamespace

    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer
    from edgetriage.cloud.http.feedback_routes import add_feedback

    key = web.RequestKey("principal", SimpleNamespace)

    @web.middleware
    async def operator(request, handler):
        request[key] = SimpleNamespace(is_operator=True, device=None)
        return await handler(request)

    event = _event(1)
    _stored(store, event, _verdict(event, "alert"))
    app = web.Application(middlewares=[operator])
    add_feedback(app, _feedback(store, Sent()), key)

    async def main() -> tuple[int, dict]:
        async with TestClient(TestServer(app)) as client:
            answer = await client.post(f"/v1/verdicts/{event.event_id}/feedback", data=body,
                                       headers={"Content-Type": "application/json"})
            return answer.status, await answer.json()

    return asyncio.run(main())


@pytest.mark.parametrize("body", ["[" * 2000 + "]" * 2000, '{"a":' * 400 + "[" * 600 + "]" * 600 + "}" * 400],
                         ids=["deep_list", "deep_object"])
def test_a_feedback_body_nested_too_deeply_is_one_clear_400(store, body):
    assert len(body) <= 4096  # under the size limit: refused for its depth
    assert _post(store, body) == (400, {"error": "the body is nested too deeply: send one flat JSON object",
                                        "status": 400})


def test_a_flat_feedback_body_is_taken(store):
    status, answer = _post(store, '{"correct": false, "note": "the postman"}')
    assert (status, answer["kind"], answer["verdict"]["verdict"]) == (200, "corrected", "benign")
    assert answer["verdict"]["feedback"]["note"] == "the postman"


def _listing_counted(store, monkeypatch) -> list:
    calls: list = []
    listing = store.list_events

    def counted(*args, **kw):
        calls.append(kw.get("before"))
        return listing(*args, **kw)

    monkeypatch.setattr(store, "list_events", counted)
    return calls


def test_copy_paging_stops_as_soon_as_the_limit_is_reached(store, monkeypatch):
    monkeypatch.setattr(fb, "COPIES_PAGE", 2)
    monkeypatch.setattr(fb, "COPIES_MAX", 4)
    source = _event(0)
    _stored(store, source, _verdict(source, "alert"))
    for n in range(1, 6):
        e = _event(n, device="pi-yard")
        _stored(store, e, _verdict(e, "alert", reused_from=source.event_id))
    calls = _listing_counted(store, monkeypatch)
    assert _feedback(store, Sent()).give(source.event_id, correct=False, now_ms=NOW).copies == 4
    assert len(calls) == 2  # four found on two pages: no third page read


def test_a_page_ending_exactly_at_the_window_s_start_is_read_past(store, monkeypatch):
    """A page's last event received exactly at the window's start is inside it: the next page may hold copies."""
    monkeypatch.setattr(fb, "COPIES_PAGE", 2)
    source = _event(0, at=T0 + 1_000_000)
    _stored(store, source, _verdict(source, "alert"))
    since = source.captured_ms - 600_000
    first = _event(1, device="pi-yard", at=since + 50)
    _stored(store, first, _verdict(first, "alert", reused_from=source.event_id), received_ms=since)
    second = _event(2, device="pi-yard", at=since + 40)  # captured earlier, received later (a re-send)
    _stored(store, second, _verdict(second, "alert", reused_from=source.event_id), received_ms=since + 5)
    assert _feedback(store, Sent()).give(source.event_id, correct=False, now_ms=NOW).copies == 2


def test_the_readers_look_at_the_last_thousand_events_by_default():
    import inspect

    assert inspect.signature(benign_events).parameters["limit"].default == 1000
    assert inspect.signature(benign_by_feedback).parameters["limit"].default == 1000


def test_paging_goes_by_the_page_s_last_event_not_another(store, monkeypatch):
    """Whether to read on is decided by the oldest event of the page (its last), even when one before it was
    received before the window."""
    monkeypatch.setattr(fb, "COPIES_PAGE", 3)
    source = _event(0, at=T0 + 1_000_000)
    _stored(store, source, _verdict(source, "alert"))
    since = source.captured_ms - 600_000
    early = _event(1, device="pi-yard", at=since + 60)  # received before the window (a clock ahead, say)
    _stored(store, early, _verdict(early, "alert"), received_ms=since - 500)
    last = _event(2, device="pi-yard", at=since + 50)
    _stored(store, last, _verdict(last, "alert", reused_from=source.event_id), received_ms=since + 1)
    more = _event(3, device="pi-yard", at=since + 40)  # on the second page
    _stored(store, more, _verdict(more, "alert", reused_from=source.event_id), received_ms=since + 2)
    assert _feedback(store, Sent()).give(source.event_id, correct=False, now_ms=NOW).copies == 2
