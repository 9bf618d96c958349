"""Questions cannot stall events (issue 40): a recording with no speech in it is one line "no speech heard" (a 400),
never a 500 with a traceback (pocketsphinx can leave an n-best entry None); /v1/ask is the operator's unless
[http] ask_from_devices lets devices ask; every token has at most [http] ask_per_token questions in flight.
The real API, the real pocketsphinx recogniser, the site of tests/test_ask.py.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import test_ask
from conftest import free_port
from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.ask.voice.audio import Audio
from edgetriage.cloud.ask.voice.config import VoiceConfig
from edgetriage.cloud.ask.voice.sphinx import SphinxTranscriber
from edgetriage.cloud.compose import build_app, build_service
from edgetriage.cloud.config import AnalyzerConfig, CloudConfig
from edgetriage.cloud.http.api import run_api
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.pipeline.service import CloudService
from test_ask import DEVICE_TOKEN, OPERATOR
from test_voice import SITE_NAMES, ask_audio

store = test_ask.store
api = test_ask.api
SECONDS = 3 * 16000
_rng = np.random.default_rng(1)
NON_SPEECH = {
    "noise": _rng.normal(0, 3000, SECONDS),
    "tone": np.sin(np.arange(SECONDS) / 10) * 3000,
    "hum": np.sin(np.arange(SECONDS) * 2 * np.pi * 50 / 16000) * 8000,
    "chord": sum(np.sin(np.arange(SECONDS) * 2 * np.pi * f / 16000) * 2000 for f in (220, 277, 330, 440)),
}


@pytest.mark.parametrize("kind", sorted(NON_SPEECH))
def test_the_recogniser_hears_nothing_in_non_speech_and_says_so(kind):
    transcriber = SphinxTranscriber(VoiceConfig(), SITE_NAMES, lambda text: False)
    try:
        assert isinstance(transcriber.transcribe_now(Audio(NON_SPEECH[kind].astype(np.int16))), str)
    finally:
        transcriber.close()


def test_non_speech_over_http_is_one_line_no_speech_heard(api):
    for kind, pcm in NON_SPEECH.items():
        answer = ask_audio(api.base, Audio(pcm.astype(np.int16)).wav())
        assert answer.status_code in (200, 400), (kind, answer.status_code, answer.text)
        if answer.status_code == 400:
            assert answer.json()["error"].startswith("no speech heard"), (kind, answer.text)


def test_more_questions_of_one_token_than_ask_per_token_are_429(api):
    long = Audio(np.random.default_rng(2).normal(0, 3000, 25 * 16000).astype(np.int16)).wav()
    with ThreadPoolExecutor(4) as pool:
        codes = sorted(f.result().status_code for f in [pool.submit(ask_audio, api.base, long) for _ in range(4)])
    assert codes.count(429) >= 1 and 500 not in codes, codes


def test_a_device_token_may_not_ask_unless_the_config_says_so(tmp_path, store):
    for allowed in (False, True):
        config = CloudConfig.model_validate({"store_path": str(tmp_path / "cloud.db"),
                                             "http": {"enabled": False, "ask_from_devices": allowed},
                                             "ask": {"timezone": "Europe/Berlin", **test_ask.NAMES}})
        dead = AnalyzerConfig(backend="openai", openai={"base_urls": [f"http://127.0.0.1:{free_port()}/v1"]})
        loop = asyncio.new_event_loop()
        service = build_service(config, build_backend(dead), store)
        app = build_app(store, service, auth=ApiAuth(OPERATOR, {"house": DEVICE_TOKEN}))
        runner = loop.run_until_complete(run_api(app, "127.0.0.1", port := free_port()))
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        try:
            answer = ask_audio(f"http://127.0.0.1:{port}", b"RIFF", token=DEVICE_TOKEN)
        finally:
            async def down(service: CloudService = service, runner=runner) -> None:
                await service.stop()
                await runner.cleanup()
                await service.backend.close()

            asyncio.run_coroutine_threadsafe(down(), loop).result(60)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
        if allowed:
            assert answer.status_code == 400  # past the gate: the body is no recording
        else:
            assert answer.status_code == 403 and "ask_from_devices" in answer.json()["error"]


def test_the_recogniser_decodes_beside_the_event_loop_at_the_lowest_priority():
    """A long recording is decoded in a process of its own at nice 19: the event loop never waits on it (in the
    service's own process pocketsphinx held every other thread for 4.5 s of a 10 s recording), and a busy
    machine's cores go to events first."""
    import psutil

    transcriber = SphinxTranscriber(VoiceConfig(), SITE_NAMES, lambda text: False)
    recording = Audio(np.random.default_rng(3).normal(0, 3000, 10 * 16000).astype(np.int16))

    async def worst_gap() -> float:
        heard = asyncio.ensure_future(transcriber.transcribe(recording))
        worst = 0.0
        while not heard.done():
            started = asyncio.get_running_loop().time()
            await asyncio.sleep(0.005)
            worst = max(worst, asyncio.get_running_loop().time() - started)
        assert isinstance(await heard, str)
        return worst

    try:
        assert asyncio.run(worst_gap()) < 1.5
        assert 19 in {child.nice() for child in psutil.Process().children(recursive=True)}
    finally:
        transcriber.close()
