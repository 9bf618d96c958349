"""The page's filters hide what they filter out (issue 38: `.card{display:flex}` overrode `[hidden]`, so the
page said "5 of 72 shown" and showed all 72). The cloud service on a Mosquitto of the test's own, its API and
page on a free port, opened in the real headless Chromium (tests/test_page.py's CDP)."""

from __future__ import annotations

import asyncio
import threading
import time

import requests
from conftest import free_port
from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.compose import build_app, build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.http.api import run_api
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, Verdict
from test_page import CDP

OPERATOR = "operator-secret-token"


def _pair(jpeg: bytes, camera: str, n: int) -> tuple[Event, Verdict]:
    t = int(time.time() * 1000) + n
    event = Event(event_id=uuid7(t), device="pi-hall", camera=camera, captured_ms=t, label="person", score=0.8,
                  track_id=n, detections=[Detection(label="person", score=0.8, box=(0.1, 0.1, 0.9, 0.9))],
                  phash=f"{n:016x}", reason="person", crop=jpeg)
    verdict = Verdict(event_id=event.event_id, device=event.device, camera=camera, label="person",
                      verdict="alert" if n % 2 else "benign", confidence=0.8, description="a person", model="m",
                      created_ms=t, decided_by="model")
    return event, verdict


def test_the_camera_filter_hides_the_other_cameras_cards_in_chromium(mosquitto, prefix, tmp_path, visitor_jpeg):
    config = CloudConfig.model_validate({
        "store_path": str(tmp_path / "cloud.db"),
        "mqtt": {"url": mosquitto.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
        "analyzer": {"backend": "openai", "openai": {"base_urls": [f"http://127.0.0.1:{free_port()}/v1"]}},
    })
    store = SQLiteStore(config.store_path)
    loop = asyncio.new_event_loop()
    port = free_port()
    service = build_service(config, build_backend(config.analyzer), store)
    runner = loop.run_until_complete(run_api(build_app(store, service, auth=ApiAuth(OPERATOR, {})), "127.0.0.1",
                                             port))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    pairs = [_pair(visitor_jpeg, "floor" if n < 2 else "door", n) for n in range(7)]  # 2 on the floor, 5 at the door

    async def tell() -> None:
        for event, verdict in pairs:
            store.put_event(event, event.captured_ms)
            store.put_verdict(verdict)
            for listener in service.event_listeners:
                listener(event, event.captured_ms)
            for listener in service.verdict_listeners:
                listener(verdict)

    shown = 'Array.from(document.querySelectorAll("article.card")).filter(c => c.getClientRects().length > 0)'
    try:
        asyncio.run_coroutine_threadsafe(tell(), loop).result(10)
        base = f"http://127.0.0.1:{port}"
        link = base + requests.post(base + "/v1/page-link", json={}, timeout=10,
                                    headers={"Authorization": f"Bearer {OPERATOR}"}).json()["path"]

        async def scenario() -> tuple[str, list[str], str, int]:
            browser = CDP()
            try:
                await browser.start()
                await browser.send("Page.navigate", {"url": link})
                await browser.wait_for('document.querySelectorAll("article.card").length === 7', 30, "7 cards")
                await browser.js("""(() => { const s = document.getElementById('f-camera'); s.value = 'floor';
                    s.dispatchEvent(new Event('change')); return true; })()""")
                count = await browser.js('document.getElementById("shown").textContent')
                cameras = await browser.js(f'{shown}.map(c => c.dataset.id)')
                await browser.js("""(() => { const s = document.getElementById('f-camera'); s.value = '';
                    s.dispatchEvent(new Event('change')); return true; })()""")
                return count, cameras, await browser.js('document.getElementById("shown").textContent'), \
                    await browser.js(f"{shown}.length")
            finally:
                await browser.close()

        count, visible, count_all, visible_all = asyncio.run(scenario())
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        store.close()
    floor = {e.event_id for e, _ in pairs[:2]}
    assert count == "2 of 7 shown" and set(visible) == floor  # what the count says is what is seen
    assert count_all == "7 of 7 shown" and visible_all == 7
