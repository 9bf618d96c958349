"""POST /v1/events over HTTP answered by the real small LLM: what a device without MQTT gets back.

The other HTTP tests run with the model's budget spent (tests/test_cloud_api.py); this one asks the model.
LLM calls in this file: 1."""

from __future__ import annotations

import asyncio
import base64
import threading
import time

import cv2
import pytest
import requests
from conftest import free_port
from edgetriage.cloud.compose import build_app, build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.http.api import run_api
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.edge.vision.crops import phash_dct64
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict

DEVICE, TOKEN = "pi-door", "token-of-pi-door"


def _event(jpeg: bytes, size: tuple[int, int], phash: str, n: int) -> dict:
    t = int(time.time() * 1000) + n
    event = Event(event_id=uuid7(t), device=DEVICE, camera="porch", captured_ms=t, label="person", score=0.55,
                  uncertain=True, track_id=n, detections=[Detection(label="person", score=0.55,
                                                                    box=(0.48, 0.0, 0.73, 0.93))],
                  phash=phash, reason="detector unsure", crop=jpeg, crop_size=size)
    body = event.model_dump(mode="python", by_alias=True)
    body["crop"] = base64.b64encode(jpeg).decode()
    return body


@pytest.mark.slow
def test_an_event_posted_over_http_gets_the_models_verdict(tmp_path, llm_analyzer, visitor_crop):
    crop = visitor_crop
    jpeg = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()
    phash = phash_dct64(crop)
    size = (crop.shape[1], crop.shape[0])

    config = CloudConfig.model_validate({"store_path": str(tmp_path / "cloud.db")})
    store = SQLiteStore(config.store_path)
    service = build_service(config, llm_analyzer, store)
    loop = asyncio.new_event_loop()
    port = free_port()
    runner = loop.run_until_complete(run_api(build_app(store, service, auth=ApiAuth("operator", {DEVICE: TOKEN})),
                                             "127.0.0.1", port))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {TOKEN}"}
    try:
        body = _event(jpeg, size, phash, 1)
        r = requests.post(f"{base}/v1/events", json=body, headers=auth, timeout=300)
        assert r.status_code == 200, r.text
        verdict = Verdict.model_validate(r.json())
        assert (verdict.event_id, verdict.device, verdict.camera, verdict.source) == (
            body["event_id"], DEVICE, "porch", "llm")
        assert verdict.model == llm_analyzer.name and verdict.description.strip()
        assert not verdict.description.startswith("no model verdict")
        assert verdict.cache is not None and verdict.cache.phash == phash  # reusable by the device
        assert verdict.timings.analyze_ms > 0 and service.stats.llm == 1
        assert store.get_verdict(verdict.event_id) == verdict  # stored, and readable by the device
        assert requests.get(f"{base}/v1/verdicts/{verdict.event_id}", headers=auth, timeout=30).json() == r.json()

        # the device retries (no answer seen): the same verdict, the model not asked again
        again = requests.post(f"{base}/v1/events", json=body, headers=auth, timeout=60)
        assert again.status_code == 200 and again.json() == r.json() and service.stats.llm == 1

        # the same visitor a moment later, a crop 2 bits away: answered from the cloud cache over HTTP too
        near = _event(jpeg, size, f"{int(phash, 16) ^ 0b11:016x}", 2)
        reused = requests.post(f"{base}/v1/events", json=near, headers=auth, timeout=60).json()
        assert (reused["source"], reused["reused_from"], reused["verdict"]) == (
            "cloud_cache", verdict.event_id, verdict.verdict)
        assert service.stats.llm == 1
    finally:
        async def down() -> None:
            await service.stop()
            await runner.cleanup()

        asyncio.run_coroutine_threadsafe(down(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        store.close()
