"""Per-camera thresholds from evidence (issue 27): the score floor a camera's verdict history proposes, with the
escalations it would have avoided and the people it would have missed; accepted, it reaches the device as a rule
override merged into its retained remote configuration. Real SQLite store, HTTP API, Mosquitto."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
import requests
from conftest import free_port
from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.broker.push import config_message, push_config
from edgetriage.cloud.compose import build_app, build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.http.api import run_api
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.cloud.teach.feedback import Feedback
from edgetriage.cloud.teach.thresholds import AutoThresholds, propose, retained_config
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict

OPERATOR = "operator-secret-token"
BENIGN = (0.22, 0.25, 0.28, 0.31, 0.33, 0.35)  # the bin in the rain
ALERTS = (0.41, 0.47, 0.62)  # people


def _escalation(store: SQLiteStore, jpeg: bytes, n: int, score: float, verdict: str, camera: str = "yard") -> str:
    t = int(time.time() * 1000) - 60_000 + n
    event = Event(event_id=uuid7(t), device="pi-yard", camera=camera, captured_ms=t, label="person", score=score,
                  track_id=n, detections=[Detection(label="person", score=score, box=(0.1, 0.1, 0.5, 0.9))],
                  phash=f"{n:016x}", reason="uncertain", crop=jpeg)
    store.put_event(event, t)
    store.put_verdict(Verdict(event_id=event.event_id, device="pi-yard", camera=camera, label="person",
                              verdict=verdict, confidence=0.9, description="", model="m", created_ms=t))
    return event.event_id


@pytest.fixture
def history(tmp_path, visitor_jpeg) -> Iterator[tuple[SQLiteStore, dict[float, str]]]:
    store = SQLiteStore(tmp_path / "cloud.db")
    ids = {s: _escalation(store, visitor_jpeg, n, s, "benign") for n, s in enumerate(BENIGN)}
    ids.update({s: _escalation(store, visitor_jpeg, 10 + n, s, "alert") for n, s in enumerate(ALERTS)})
    _escalation(store, visitor_jpeg, 20, 0.21, "alert", camera="gate")  # another camera: not this one's evidence
    yield store, ids
    store.close()


def test_the_proposal_is_the_highest_floor_that_misses_nobody_and_an_operator_can_lower_it(history):
    store, ids = history
    proposal = propose(store, "pi-yard", "yard")
    assert proposal["current"] == {"min_score": 0.2, "uncertain_band": [0.2, 0.5], "escalations": 9,
                                   "escalations_avoided": 0, "people_missed": 0}
    assert proposal["proposed"] == {"min_score": 0.36, "uncertain_band": [0.36, 0.5], "escalations": 9,
                                    "escalations_avoided": 6, "people_missed": 0}
    # the operator says the 0.35 one was a person after all: the floor must stay under it
    Feedback(store, lambda v: True, lambda v, o: None, lambda s: [], {}).give(ids[0.35], verdict="alert")
    proposal = propose(store, "pi-yard", "yard")
    assert proposal["proposed"]["min_score"] == 0.29 and proposal["proposed"]["people_missed"] == 0  # 0.05 under
    assert proposal["proposed"]["escalations_avoided"] == 3 and proposal["evidence"]["by_operator"] == 1
    assert propose(store, "pi-yard", "gate")["proposed"] is None  # too little evidence to change anything


def test_accepting_pushes_a_merged_override_and_only_the_operator_may(history, mosquitto, prefix, tmp_path):
    store, _ = history
    config = CloudConfig.model_validate({
        "store_path": str(tmp_path / "cloud.db"), "mqtt": {"url": mosquitto.url, "prefix": prefix},
        "analyzer": {"backend": "openai", "openai": {"base_urls": [f"http://127.0.0.1:{free_port()}/v1"]}}})
    # what the device already holds: another camera's override and another component's section
    before = {"rules": {"overrides": [{"camera": "gate", "min_score": 0.3}]}, "budget": {"per_minute": 4}}
    version, payload = config_message(before, version="earlier")
    assert push_config(config.mqtt, "pi-yard", payload, version=version).outcome == "published"
    loop = asyncio.new_event_loop()
    port = free_port()
    service = build_service(config, build_backend(config.analyzer), store)
    runner = loop.run_until_complete(run_api(build_app(store, service, auth=ApiAuth(OPERATOR, {"pi-yard": "dev"})),
                                             "127.0.0.1", port))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}/v1/cameras/pi-yard/yard/thresholds"
    try:
        shown = requests.get(base, headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=30)
        assert shown.status_code == 200 and shown.json()["proposed"]["escalations_avoided"] == 6
        assert retained_config(config.mqtt, "pi-yard") == before  # a GET changes nothing
        denied = requests.post(base + "/accept", headers={"Authorization": "Bearer dev"}, timeout=30)
        assert denied.status_code == 403
        page, ui = requests.Session(), f"http://127.0.0.1:{port}/ui"
        assert page.get(ui + "/thresholds", timeout=30).status_code == 401  # the page's section needs its session
        link = requests.post(f"http://127.0.0.1:{port}/v1/page-link", headers={"Authorization": f"Bearer {OPERATOR}"},
                             timeout=30).json()["path"]
        page.get(f"http://127.0.0.1:{port}{link}", timeout=30)
        listed = page.get(ui + "/thresholds", timeout=30).json()
        assert [(p["camera"], p["proposed"] and p["proposed"]["min_score"]) for p in listed["proposals"]] == \
            [("gate", None), ("yard", 0.36)] and listed["can_accept"] is True
        assert retained_config(config.mqtt, "pi-yard") == before  # showing it changed nothing
        done = page.post(ui + "/thresholds/pi-yard/yard", timeout=30)  # the section's accept button
        assert done.status_code == 200 and done.json()["outcome"] == "published", done.text
        assert done.json()["version"].startswith("thresholds-yard-")
    finally:
        async def down() -> None:
            await runner.cleanup()
            await service.backend.close()

        asyncio.run_coroutine_threadsafe(down(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
    after = retained_config(config.mqtt, "pi-yard")
    assert after["budget"] == {"per_minute": 4}
    assert after["rules"]["overrides"] == [{"camera": "gate", "min_score": 0.3},
                                           {"camera": "yard", "min_score": 0.36, "uncertain_band": [0.36, 0.5]}]


def test_auto_mode_pushes_only_within_its_bounds_and_once_per_floor(history, mosquitto, prefix, tmp_path):
    store, _ = history

    def auto(max_min_score: float) -> AutoThresholds:
        return AutoThresholds(store, CloudConfig.model_validate({
            "store_path": str(tmp_path / "cloud.db"), "mqtt": {"url": mosquitto.url, "prefix": prefix},
            "thresholds": {"auto": True, "max_min_score": max_min_score}}))

    assert auto(0.3).run_once() == []  # 0.36 is over the bound: nothing pushed
    assert retained_config(auto(0.3).config.mqtt, "pi-yard") == {}
    bounded = auto(0.4)
    pushed = bounded.run_once()
    assert [(p["device"], p["camera"], p["min_score"]) for p in pushed] == [("pi-yard", "yard", 0.36)]
    assert bounded.run_once() == []  # the same floor again: not pushed again
    after = retained_config(bounded.config.mqtt, "pi-yard")
    assert after["rules"]["overrides"] == [{"camera": "yard", "min_score": 0.36, "uncertain_band": [0.36, 0.5]}]


def test_proposals_show_the_floor_the_device_escalated_from(tmp_path, visitor_jpeg, capsys):
    """Issue 38: `proposals` said "now min_score 0.20" of a camera whose device escalated an event at 0.19 (a
    track its detector called uncertain): the figure shown is the floor the device acted on."""
    from edgetriage.cli import main as cli_main

    config = tmp_path / "cloud.toml"
    config.write_text(f'store_path = "{tmp_path / "cloud.db"}"\n')
    store = SQLiteStore(tmp_path / "cloud.db")
    for n, score in enumerate((0.19, 0.24, 0.3)):
        _escalation(store, visitor_jpeg, n, score, "benign")
    store.close()
    assert cli_main(["cloud", "proposals", "--config", str(config), "--device", "pi-yard", "--camera", "yard"]) == 0
    out = capsys.readouterr().out
    assert "escalates from score 0.19" in out and "now min_score" not in out
    assert cli_main(["cloud", "proposals", "--config", str(config), "--device", "pi-yard", "--camera", "yard",
                     "--json"]) == 0
    assert '"device_floor": 0.19' in capsys.readouterr().out
