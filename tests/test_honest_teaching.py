"""Only honest judgements teach the edge (issue 40): suppressions and score floors learn from the model's (or the
check's) or the operator's judgement of this camera's own crops, never from a verdict the operator's policy
decided, a cache hit or a site offer, nor from an event the operator corrected to alert. Feedback reaches the
learner both ways: benign feedback is evidence; "that was a person" takes the event back out and withdraws the
suppression learned from it, pushing the removal to the device. The same feedback twice sends nothing new.
Real components: the cloud service's own Feedback and learner wiring, SQLite and Redis stores, the shipped
MobileNetV2, a Mosquitto of the test's own (the device's retained remote configuration).
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import requests
from conftest import free_port
from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.compose import build_app, build_learner, build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.http.api import run_api
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.pipeline.service import CloudService
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.cloud.teach.suppress.publish import retained_config
from edgetriage.cloud.teach.thresholds import propose
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict
from test_suppressions import _event, crops, embed, stores  # noqa: F401 - fixtures

__all__ = ["crops", "embed", "stores"]


def _service(mosquitto, prefix: str, store, tmp_path, auto_accept: bool) -> CloudService:
    config = CloudConfig.model_validate({
        "store_path": str(tmp_path / "cloud.db"),
        "mqtt": {"url": mosquitto.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
        "analyzer": {"backend": "openai", "openai": {"base_urls": [f"http://127.0.0.1:{free_port()}/v1"]}},
        "suppressions": {"min_events": 3, "auto_accept": auto_accept, "push_wait_s": 0.5},
    })
    return build_service(config, build_backend(config.analyzer), store)


def _verdict(event: Event, verdict: str = "benign", **kw) -> Verdict:
    fields = {"event_id": event.event_id, "device": event.device, "camera": event.camera, "label": event.label,
              "verdict": verdict, "confidence": 0.9, "description": "", "model": "m",
              "created_ms": int(time.time() * 1000), "decided_by": "model", **kw}
    return Verdict(**fields)


def _said(service: CloudService, learner, events, crops_: list[bytes], start: int, **kw) -> list[str]:
    """Events of the empty doorway answered with these verdict fields, heard by the learner as the service's
    verdict listener hears them."""
    ids = []
    for n, crop in enumerate(crops_, start):
        event = _event(crop, n)
        verdict = _verdict(event, **kw)
        events.put_event(event, event.captured_ms)
        events.put_verdict(verdict)
        learner.on_verdict(verdict)
        ids.append(event.event_id)
    learner.drain()
    return ids


def test_policy_verdicts_and_cache_hits_teach_nothing_the_models_do(mosquitto, prefix, tmp_path, stores, crops):
    events, _ = stores
    service = _service(mosquitto, prefix, events, tmp_path, auto_accept=False)
    learner = build_learner(service)
    try:
        _said(service, learner, events, crops["empty"][:3], 0, decided_by="policy")
        _said(service, learner, events, crops["empty"][:3], 10, source="cloud_cache", reused_from=uuid7())
        assert learner.proposals.all() == []
        _said(service, learner, events, crops["empty"][3:6], 20)
        (proposal,) = learner.proposals.all()
        assert proposal.sources == {"model": 3} and proposal.count == 3
    finally:
        learner.close()


def test_feedback_teaches_both_ways_once_and_withdraws_what_a_person_undoes(mosquitto, prefix, tmp_path, stores,
                                                                           crops):
    events, _ = stores
    service = _service(mosquitto, prefix, events, tmp_path, auto_accept=True)
    learner = build_learner(service)
    try:
        ids = _said(service, learner, events, crops["empty"][:3], 0, decided_by="policy")
        assert learner.proposals.all() == []
        first = service.feedback.give(ids[0], verdict="benign")
        again = service.feedback.give(ids[0], verdict="benign")  # the same word twice: nothing new
        assert first.kind == "corrected" or first.kind == "confirmed"
        assert (again.published, again.copies, again.offers) == (False, 0, 0)
        assert again.verdict.created_ms == first.verdict.created_ms
        for event_id in ids[1:]:
            service.feedback.give(event_id, correct=True)
        learner.drain()
        (proposal,) = learner.proposals.all()
        assert (proposal.status, proposal.sources, sorted(proposal.evidence)) == ("accepted", {"feedback": 3},
                                                                                  sorted(ids))
        pushed = retained_config(service.config.mqtt, "pi-door", wait_s=2.0)
        assert [r["id"] for r in pushed["suppressions"]["rules"]] == [proposal.id]
        service.feedback.give(ids[1], verdict="alert", note="that was a person")
        learner.drain()
        (withdrawn,) = learner.proposals.all()
        assert (withdrawn.status, withdrawn.decided_by) == ("rejected", "feedback")
        left = retained_config(service.config.mqtt, "pi-door", wait_s=2.0).get("suppressions", {})
        assert left.get("rules", []) == []  # the removal pushed
        # the corrected event is out of the evidence: the model saying benign of it again teaches nothing
        learner.on_verdict(_verdict(_event(crops["empty"][1], 1).model_copy(update={"event_id": ids[1]})))
        for event_id in (ids[0], ids[2]):
            learner.observe_benign(event_id, "feedback")
        learner.drain()
        assert len(learner.proposals.all()) == 1  # the two others were used once already
    finally:
        learner.close()


def _row(store, score: float, n: int, **kw) -> None:
    t = int(time.time() * 1000) - 3_600_000 + n
    event = Event(event_id=uuid7(t), device="pi-door", camera="porch", captured_ms=t, label="person", score=score,
                  uncertain=True, track_id=n, detections=[Detection(label="person", score=score, box=(0, 0, 1, 1))],
                  phash="0f0f0f0f0f0f0f0f", reason="uncertain", crop=b"\xff\xd8\xff\xd9")
    store.put_event(event, t)
    store.put_verdict(_verdict(event, **kw))


def test_a_floor_learns_from_the_models_benign_not_a_policys_nor_a_cache_hit(stores):
    """Daytime visitors a policy allowed (0.36-0.39) are people: no floor drops them; cache hits are left out."""
    events, _ = stores
    for n, score in enumerate((0.36, 0.37, 0.38, 0.39)):
        _row(events, score, n, decided_by="policy")
    for n, score in enumerate((0.30, 0.31, 0.32)):
        _row(events, score, 10 + n, source="cloud_cache", reused_from=uuid7())
    _row(events, 0.7, 20, verdict="alert")
    out = propose(events, "pi-door", "porch", min_avoided=3)
    assert out["proposed"] is None
    assert out["evidence"]["policy_decided"] == 4 and out["evidence"]["left_out"] == {"reuse": 3, "fallback": 0}
    for n, score in enumerate((0.25, 0.26, 0.27)):  # the model's own benign: a floor under every person
        _row(events, score, 30 + n)
    assert propose(events, "pi-door", "porch", min_avoided=3)["proposed"]["min_score"] == 0.28


@pytest.mark.parametrize("body", ["[" * 100_000 + "]" * 100_000, '{"note":' * 3000 + "1" + "}" * 3000],
                         ids=["deep_list", "deep_object"])
def test_deeply_nested_feedback_json_is_one_clear_400(mosquitto, prefix, tmp_path, body):
    """The API on a real port: a body too deep or too big is a 400 saying so, never a 500 with a traceback."""
    service = _service(mosquitto, prefix, SQLiteStore(tmp_path / "cloud.db"), tmp_path, auto_accept=False)
    loop = asyncio.new_event_loop()
    port = free_port()
    runner = loop.run_until_complete(run_api(build_app(service.store, service, auth=ApiAuth("op", {})),
                                             "127.0.0.1", port))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        answer = requests.post(f"http://127.0.0.1:{port}/v1/verdicts/{uuid7()}/feedback", data=body, timeout=30,
                               headers={"Content-Type": "application/json", "Authorization": "Bearer op"})
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        service.store.close()
    assert answer.status_code == 400, answer.text
    assert "nested too deeply" in answer.json()["error"] or "over 4096 bytes" in answer.json()["error"]
