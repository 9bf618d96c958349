"""Answers at the speed of what decided them (issue 38): with the model busy, a verdict the operator's policy or
the check decides is published at once, never behind the model's queue or in a batch beside the model's events.
The model is the real OpenAI back-end against a slow OpenAI-compatible server of the test's own; the crops
are the shipped clip's, the translator the real one."""

from __future__ import annotations

import asyncio
import json
import time

from aiohttp import web
from conftest import clip_crop, free_port
from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.edge.vision.crops import phash_dct64
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event

BOX = (370, 10, 530, 400)  # a visitor at the table in the 768x432 frame of the one-by-one clip
PERSON_FRAME, EMPTY_FRAME = 120, 10
MODEL_S = 4.0  # how long the busy model takes per answer (a decided verdict took 2 of them before)


def _event(crop: bytes, camera: str, **device) -> Event:
    import cv2
    import numpy as np

    image = cv2.imdecode(np.frombuffer(crop, np.uint8), cv2.IMREAD_COLOR)
    x1, y1, x2, y2 = BOX
    now = int(time.time() * 1000)
    return Event(event_id=uuid7(now), device="pi-shop", camera=camera, captured_ms=now, label="person", score=0.8,
                 track_id=3, phash=phash_dct64(image), reason="person", crop=crop,
                 detections=[Detection(label="person", score=0.8, box=(x1 / 768, y1 / 432, x2 / 768, y2 / 432))],
                 **device)


async def _slow_model() -> tuple[web.AppRunner, int, list[float]]:
    asked: list[float] = []

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        asked.append(time.monotonic())
        await asyncio.sleep(MODEL_S)
        answer = json.dumps({"verdict": "alert", "description": "A person at a table.", "confidence": 0.8})
        return web.json_response({"choices": [{"message": {"content": answer}}], "model": "slow",
                                  "usage": {"prompt_tokens": 50, "completion_tokens": 20}})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port, asked


def test_policy_and_check_verdicts_do_not_wait_for_a_busy_model(tmp_path, clip_one_by_one):
    person = clip_crop(clip_one_by_one, PERSON_FRAME, BOX)
    empty = clip_crop(clip_one_by_one, EMPTY_FRAME, BOX)

    async def scenario() -> tuple[list[float], dict[str, tuple[float, str | None]]]:
        runner, port, asked = await _slow_model()
        config = CloudConfig.model_validate({
            "store_path": str(tmp_path / "cloud.db"),
            "analyzer": {"backend": "openai", "openai": {"base_urls": [f"http://127.0.0.1:{port}/v1"],
                                                         "max_in_flight": 1},
                         "policies": [{"camera": "front", "text": "Alert only if someone stays at the door "
                                                                  "longer than 30 s"}]},
            "scheduler": {"deadline_s": 60},
        })
        service = build_service(config, build_backend(config.analyzer), SQLiteStore(config.store_path))
        topic = "edgetriage/v1/pi-shop/events"
        took: dict[str, tuple[float, str | None]] = {}

        async def timed(name: str, event: Event) -> None:
            start = time.monotonic()
            verdict = await service.process(event, topic)
            took[name] = (time.monotonic() - start, verdict.decided_by)

        try:
            busy = [asyncio.create_task(timed(f"model{i}", _event(person, f"yard{i}", local_time="12:00")))
                    for i in range(2)]  # no policy there: the model's, one at a time
            while not asked:
                assert not any(t.done() for t in busy), [t.exception() for t in busy if t.done()]
                await asyncio.sleep(0.05)
            policy = [timed("alert", _event(person, "front", zones=["door"], dwell_s=60.0, local_time="12:00")),
                      timed("benign", _event(person, "front", zones=["door"], dwell_s=5.0, local_time="12:00")),
                      timed("absent", _event(empty, "front", zones=["door"], dwell_s=60.0, local_time="12:00"))]
            await asyncio.gather(*policy)
            await asyncio.gather(*busy)
            took["figures"] = service.figures.compute()  # type: ignore[assignment]
        finally:
            await service.stop()
            await service.backend.close()
            await runner.cleanup()
        return asked, took

    asked, took = asyncio.run(scenario())
    assert {name: took[name][1] for name in ("alert", "benign", "absent")} == {
        "alert": "policy", "benign": "policy", "absent": "check"}
    assert len(asked) == 2  # the model was asked about the two events no policy decides, and nothing else
    for name in ("alert", "benign", "absent"):
        assert took[name][0] < MODEL_S / 2, f"{name} took {took[name][0]:.1f} s behind the busy model"
    assert max(took["model0"][0], took["model1"][0]) >= 2 * MODEL_S - 0.5  # the model was busy all along
    figures = took["figures"]  # α counts the three decided at once as answered without a model (3 of 5), and
    assert figures["alpha"] == 0.6  # L_llm is the model's time alone, not lowered by theirs
    assert figures["L_llm_ms"] >= 0.9 * MODEL_S * 1000 and figures["L_light_ms"] < MODEL_S * 1000 / 2
