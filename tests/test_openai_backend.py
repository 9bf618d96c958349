"""The `openai` back-end against a real OpenAI-compatible server: `transformers serve` on loopback running the
CPU model from its plain model folder (the one llm.py converts the GGUF into). Failures are real too: a port
nobody listens on, a server that never answers, and a proxy in front of the real server that answers 503 or
refuses the answer schema before it passes requests on. The vLLM back-end's mapping is tested without vLLM.

LLM calls in this file: 5 (the server's, one at a time)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import numpy as np
import pytest
from aiohttp import web
from conftest import clip_crop, free_port
from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.analysis.answer import AnswerError, answer_schema, parse_answer
from edgetriage.cloud.analysis.llm import locate_model
from edgetriage.cloud.analysis.openai import OpenAIBackend, request_body
from edgetriage.cloud.analysis.prompt import Prompt, PromptBook, PromptBuilder, chat_messages
from edgetriage.cloud.analysis.translator import Translator
from edgetriage.cloud.analysis.vllm import engine_prompt, sampling_options
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import AnalyzerConfig, CloudConfig, OpenAIConfig, VLLMConfig
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.config import ConfigError
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import VERDICTS, Detection, Event, encode_event
from edgetriage.shared.topics import Topics

BOX = (370, 10, 530, 400)  # a visitor at the table in the 768x432 frame


def _event(crop: bytes, *, uncertain: bool = False, device: str = "pi-openai") -> Event:
    x1, y1, x2, y2 = BOX
    score = 0.58 if uncertain else 0.9
    return Event(event_id=uuid7(), device=device, camera="hall", captured_ms=int(time.time() * 1000),
                 label="person", score=score, uncertain=uncertain, track_id=3,
                 detections=[Detection(label="person", score=score, box=(x1 / 768, y1 / 432, x2 / 768, y2 / 432))],
                 phash="8f3a6b1c2d4e5f60", reason="score in the uncertain band" if uncertain else "new track",
                 crop=crop, crop_size=(x2 - x1, y2 - y1))


@pytest.fixture(scope="module")
def crops(clip_one_by_one) -> dict[str, bytes]:
    return {"person": clip_crop(clip_one_by_one, 120, BOX), "empty": clip_crop(clip_one_by_one, 10, BOX)}


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return locate_model(None, progress=False)


@pytest.fixture(scope="module")
def transformers_serve(model_dir) -> Iterator[str]:
    """`transformers serve` on a free loopback port with the CPU model; its base URL (…/v1)."""
    exe = Path(sys.executable).parent / "transformers"
    if not exe.exists():
        pytest.fail('`transformers serve` is missing: pip install "transformers[serving]" (see the cloud extra)')
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"transformers-serve-{port}.log", "wb")
    proc = subprocess.Popen([str(exe), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port),
                             "--device", "cpu", "--dtype", "float32"], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"transformers serve exited with {proc.returncode}; see {log.name}")
                if time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not listen within 180 s; see {log.name}")
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def _config(urls: list[str], model: str, **openai) -> AnalyzerConfig:
    return AnalyzerConfig(backend="openai", max_new_tokens=64, timeout_s=120,
                          openai=OpenAIConfig(base_urls=urls, model=model, **openai))


def _assert_valid(analysis) -> None:
    assert analysis.verdict in VERDICTS and 0.0 <= analysis.confidence <= 1.0 and analysis.description.strip()
    assert analysis.analyze_ms > 0


# -- against the real server ---------------------------------------------------------------------------
@pytest.mark.slow
def test_real_server_answers_and_least_loaded_spreads_requests(transformers_serve, model_dir, crops):
    """Two replicas (the same server under two names): two events at once go one to each, each answer is
    the model's own (parsed from its text: transformers serve enforces no schema)."""
    port = transformers_serve.split(":")[2].split("/")[0]
    urls = [transformers_serve, f"http://localhost:{port}/v1"]
    backend = build_backend(_config(urls, str(model_dir), balance="least_loaded"))
    assert isinstance(backend, OpenAIBackend) and backend.concurrency == 16

    async def scenario():
        try:
            return await backend.analyze_batch([_event(crops["person"]), _event(crops["empty"], uncertain=True)])
        finally:
            await backend.close()

    results = asyncio.run(scenario())
    for analysis in results:
        _assert_valid(analysis)
        assert analysis.error is None, (analysis.error, analysis.extra.get("raw"))
        assert analysis.prompt_version == "person-3" and analysis.extra["seen_source"] == "ImageNet"
        assert analysis.extra["prompt_tokens"] > 100 and analysis.extra["new_tokens"] > 0  # the server's usage
    assert sorted(a.extra["endpoint"] for a in results) == sorted(urls)
    assert [ep.requests for ep in backend.endpoints] == [1, 1]


class FlakyProxy:
    """In front of the real server: answers 503 (Retry-After: 0) to the first `fail` requests, refuses a
    request that carries `response_format` with 400 when told to, and passes everything else on."""

    def __init__(self, upstream: str, fail: int, refuse_schema: bool) -> None:
        self.upstream = upstream
        self.fail = fail
        self.refuse_schema = refuse_schema
        self.seen: list[int] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if len(self.seen) < self.fail:
            self.seen.append(503)
            return web.json_response({"error": "busy"}, status=503, headers={"Retry-After": "0"})
        if self.refuse_schema and b"response_format" in body:
            self.seen.append(400)
            return web.json_response({"detail": "response_format is not supported"}, status=400)
        self.seen.append(200)
        async with aiohttp.ClientSession() as http, http.post(f"{self.upstream}/chat/completions", data=body,
                                                               headers={"Content-Type": "application/json"}) as r:
            return web.Response(body=await r.read(), status=r.status, content_type="application/json")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        port = free_port()
        await web.TCPSite(self.runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}/v1"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


@pytest.mark.slow
def test_retries_past_a_dead_replica_and_503s_and_drops_a_refused_schema(transformers_serve, model_dir, crops):
    """Round-robin over a port nobody listens on and a proxy that answers 503 twice and refuses the schema
    field: the backend retries with backoff, marks the dead replica down, asks once more without the
    schema, and gets the real model's answer."""
    dead = f"http://127.0.0.1:{free_port()}/v1"
    proxy = FlakyProxy(transformers_serve, fail=2, refuse_schema=True)

    async def scenario():
        await proxy.start()
        backend = OpenAIBackend(_config([dead, proxy.url], str(model_dir), balance="round_robin", retries=4,
                                        backoff_s=0.05), _builder())
        try:
            return backend, await backend.analyze(_event(crops["person"]))
        finally:
            await backend.close()
            await proxy.stop()

    backend, analysis = asyncio.run(scenario())
    _assert_valid(analysis)
    assert analysis.error is None, analysis.error
    assert proxy.seen == [503, 503, 400, 200]
    dead_ep, proxy_ep = backend.endpoints
    assert dead_ep.requests >= 1 and dead_ep.down_until > 0  # tried, failed, marked down
    assert proxy_ep.mode == "none" and analysis.extra["schema"] == "none"
    assert analysis.extra["retries"] >= 2 and analysis.extra["endpoint"] == proxy.url


@pytest.mark.slow
def test_service_answers_through_the_openai_backend(transformers_serve, model_dir, crops, tmp_path):
    """The whole cloud pipeline (store, scheduler, cache) with the HTTP back-end: the verdict is the model's,
    a look-alike right after is answered from the cache."""
    config = CloudConfig(store_path=str(tmp_path / "cloud.db"), analyzer=_config([transformers_serve], str(model_dir)))
    store = SQLiteStore(config.store_path)
    backend = build_backend(config.analyzer)
    service = build_service(config, backend, store)
    topic = Topics(config.mqtt.prefix).events("pi-openai")
    first, again = _event(crops["person"]), _event(crops["person"])

    async def scenario():
        try:
            return await service.process(encode_event(first), topic), await service.process(encode_event(again), topic)
        finally:
            await service.stop()
            await backend.close()

    verdict, reused = asyncio.run(scenario())
    assert verdict.source == "llm" and verdict.model == str(model_dir)[-128:] and verdict.verdict in VERDICTS
    assert verdict.cache is not None and verdict.cache.prompt_version == "person-3"
    assert (reused.source, reused.reused_from, reused.verdict) == ("cloud_cache", first.event_id, verdict.verdict)
    assert store.get_verdict(first.event_id) == verdict
    store.close()


@pytest.mark.slow
def test_a_refused_explicit_schema_field_is_an_unknown_with_the_reason(transformers_serve, model_dir, crops):
    """transformers serve refuses vLLM's structured_outputs field (422): asked for explicitly, the backend
    does not retry a request the server will never take, and says why."""
    backend = OpenAIBackend(_config([transformers_serve], str(model_dir), structured_output="structured_outputs"),
                            _builder())

    async def scenario():
        try:
            return await backend.analyze(_event(crops["person"]))
        finally:
            await backend.close()

    analysis = asyncio.run(scenario())
    assert analysis.verdict == "unknown" and analysis.confidence == 0.0
    assert "HTTP 422" in analysis.error and "structured_outputs" in analysis.error
    assert backend.endpoints[0].requests == 1


# -- failures without a model --------------------------------------------------------------------------
def test_a_server_that_never_answers_times_out_as_unknown(crops):
    """A listener that accepts and then says nothing: the per-request deadline turns it into "unknown"."""
    async def scenario():
        async def silent(reader, writer):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        config = AnalyzerConfig(backend="openai", timeout_s=1.0,
                                openai=OpenAIConfig(base_urls=[f"http://127.0.0.1:{port}/v1"], retries=0))
        backend = OpenAIBackend(config, _builder())
        started = time.monotonic()
        try:
            return await backend.analyze(_event(crops["person"])), time.monotonic() - started
        finally:
            await backend.close()
            server.close()

    analysis, took = asyncio.run(scenario())
    assert analysis.verdict == "unknown" and "no answer within 1 s" in analysis.error
    assert took < 5


async def _chat_server(chat) -> tuple[web.AppRunner, int]:
    """An OpenAI-compatible chat-completions server of the test's own on a free port; `chat` answers."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


def test_vision_models_get_the_crop_facts_and_policy_and_their_answers_are_checked(crops, monkeypatch):
    """The VLM path against an OpenAI-compatible server of the test's own that answers fixed verdicts: the
    crop goes as an image data URL with the facts and the operator's policy in the same turn, the key named by
    api_key_env goes in the header, and the same check holds the answers against the evidence."""
    got: list[dict] = []
    answers = iter(["alert", "benign", "alert"])

    async def scenario():
        async def chat(request: web.Request) -> web.Response:
            got.append({"auth": request.headers.get("Authorization"), "body": await request.json()})
            answer = json.dumps({"verdict": next(answers), "description": "A person at a table.", "confidence": 0.8})
            return web.json_response({"choices": [{"message": {"content": answer}}], "model": "vlm",
                                      "usage": {"prompt_tokens": 50, "completion_tokens": 20}})

        runner, port = await _chat_server(chat)
        config = AnalyzerConfig.model_validate(
            {
                "backend": "openai",
                "openai": {
                    "base_urls": [f"http://127.0.0.1:{port}/v1"],
                    "model": "vlm",
                    "vision": True,
                    "api_key_env": "ET_TEST_KEY",
                },
                "policies": [{"camera": "hall", "text": "judge whether the visitor looks like they belong here"}],
            }
        )
        backend = build_backend(config)
        try:
            return [await backend.analyze(_event(crops[name])) for name in ("person", "person", "empty")]
        finally:
            await backend.close()
            await runner.cleanup()

    monkeypatch.setenv("ET_TEST_KEY", "sk-test-123")
    person, person_benign, empty = asyncio.run(scenario())
    assert (person.verdict, person.model_verdict, person.error) == ("alert", "alert", None)
    # "at a table": an object the facts do not name, replaced by their words and said so (the verdict stands)
    assert person.corrected == ("object",) and person.checked.startswith("description: object table")
    assert person.description.startswith("A person") and "table" not in person.description
    assert 0.5 < person.confidence <= 1.0 and person.confidence != 0.8  # calibrated, not the number as written
    assert person.prompt_version.startswith("person-vision-2+")  # the policy is part of the version
    # a policy the rules cannot compile goes to the model with the facts, and its benign for a person stands
    assert (person_benign.verdict, person_benign.model_verdict) == ("benign", "benign")
    assert person_benign.checked.startswith("description:")  # the verdict stands, the description is the facts'
    assert person_benign.description.startswith("A person")  # a person still, whatever the policy makes of one
    # an empty scene never reaches the model under a policy: the evidence decides, and says so
    assert (empty.verdict, empty.model_verdict, empty.decided_by) == ("benign", None, "check")
    assert empty.clause.startswith("absent:") and "person" not in empty.description.lower().replace("no person", "")
    assert len(got) == 2
    assert got[0]["auth"] == "Bearer sk-test-123"
    body = got[0]["body"]
    assert body["response_format"]["json_schema"]["schema"] == answer_schema()
    text, image = body["messages"][-1]["content"]
    assert text["type"] == "text" and "Does the attached image show a person?" in text["text"]
    assert (
        "Policy: judge whether the visitor looks like they belong here. Facts: " in text["text"]
        and "Person: yes, in a " in text["text"]
    )
    assert image["image_url"]["url"] == "data:image/jpeg;base64," + base64.b64encode(crops["person"]).decode()


def test_without_a_policy_a_vlm_s_benign_on_a_certain_person_is_overruled(crops):
    async def scenario():
        async def chat(request: web.Request) -> web.Response:
            answer = '{"verdict": "benign", "description": "An empty room.", "confidence": 0.9}'
            return web.json_response({"choices": [{"message": {"content": answer}}]})

        runner, port = await _chat_server(chat)
        config = AnalyzerConfig(backend="openai", openai=OpenAIConfig(
            base_urls=[f"http://127.0.0.1:{port}/v1"], model="vlm", vision=True))
        backend = OpenAIBackend(config, _builder(vision=True))
        try:
            return await backend.analyze(_event(crops["person"]))
        finally:
            await backend.close()
            await runner.cleanup()

    analysis = asyncio.run(scenario())
    assert (analysis.verdict, analysis.model_verdict) == ("alert", "benign")
    assert analysis.checked.startswith("sure: the closer look is certain of a person")
    assert analysis.prompt_version == "person-vision-2" and analysis.description.startswith("A person")


# -- the shared mapping and the vLLM back-end ----------------------------------------------------------
def _builder(vision: bool = False) -> PromptBuilder:
    return PromptBuilder(PromptBook(), Translator(), vision=vision)


def test_answers_are_parsed_leniently_but_never_wrongly():
    good = '{"description": "A man in a coat.", "verdict": "alert", "confidence": 0.9}'
    assert parse_answer(good).verdict == "alert"
    fenced = f"Sure! Here it is:\n```json\n{good}\n```"
    assert parse_answer(fenced).description == "A man in a coat."
    shouty = '{"Description": "x", "VERDICT": " Benign ", "confidence": 1}'
    assert (parse_answer(shouty).verdict, parse_answer(shouty).confidence) == ("benign", 1.0)
    long = json.dumps({"description": "y" * 500, "verdict": "unknown", "confidence": 0.1})
    assert len(parse_answer(long).description) == 120
    for bad, why in (("no json here", "no JSON object"), ('{"verdict": "maybe", "confidence": 0.5, '
                     '"description": "d"}', "verdict"), ('{"verdict": "alert", "description": "d"}', "confidence"),
                     ('{"verdict": "alert", "confidence": 7, "description": "d"}', "confidence"), ("[1, 2]", "JSON")):
        with pytest.raises(AnswerError, match=why):
            parse_answer(bad)


def test_request_bodies_carry_the_schema_the_way_each_server_wants_it(crops):
    prompt = _builder().build(_event(crops["person"]))
    settings = OpenAIConfig(model="m")
    openai_style = request_body(settings, prompt, "response_format", 64)
    assert openai_style["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "verdict", "schema": answer_schema(), "strict": True}}
    vllm_style = request_body(settings, prompt, "structured_outputs", 64)
    assert vllm_style["structured_outputs"] == {"json": answer_schema()} and "response_format" not in vllm_style
    plain = request_body(settings, prompt, "none", 64)
    assert "response_format" not in plain and "structured_outputs" not in plain and "guided_json" not in plain
    assert plain["messages"] == prompt.messages and plain["temperature"] == 0.0 and plain["max_tokens"] == 64
    assert plain["messages"][-1]["content"].startswith("Person: yes, in a ")  # a text-only model reads the facts


def test_vllm_mapping_without_vllm(crops, model_dir):
    """What the vllm back-end hands vLLM: greedy sampling with the answer schema, the chat template applied
    by the model's real tokenizer, and for a vision model an image slot plus the decoded crop."""
    from transformers import AutoTokenizer

    options = sampling_options(VLLMConfig(), 96)
    assert options == {"temperature": 0.0, "max_tokens": 96, "structured_outputs": {"json": answer_schema()}}
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    text_prompt = _builder().build(_event(crops["person"]))
    request = engine_prompt(text_prompt, tokenizer.apply_chat_template)
    assert set(request) == {"prompt"} and "Person: yes, in a " in request["prompt"]
    assert request["prompt"].rstrip().endswith("assistant")
    vision = _builder(vision=True).build(_event(crops["person"]))
    assert isinstance(vision, Prompt) and vision.image == crops["person"]
    seen: list = []

    def template(messages, **kw):
        seen.append(messages)
        return tokenizer.apply_chat_template([{**m, "content": m["content"] if isinstance(m["content"], str)
                                               else m["content"][1]["text"]} for m in messages], **kw)

    request = engine_prompt(vision, template)
    assert seen[0][-1]["content"][0] == {"type": "image"}
    image = request["multi_modal_data"]["image"]
    assert isinstance(image, np.ndarray) and image.shape == (BOX[3] - BOX[1], BOX[2] - BOX[0], 3)
    with pytest.raises(ConfigError, match=r"edgetriage\[gpu\]"):
        build_backend(AnalyzerConfig(backend="vllm"))
    assert chat_messages(vision)[-1]["content"][1]["image_url"]["url"].startswith("data:image/jpeg;base64,/9j/")
