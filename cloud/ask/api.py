"""The HTTP side of questions:

    POST /v1/ask   {"question": "...", "camera"?: "...", "device"?: "...", "since"?: ms | ISO 8601}
                   -> {"answer", "route", "events", "latency_ms", "cached", "partial", "value", ...}
                   bearer token as the rest of /v1; a device token asks about its own device only
    POST /v1/ask?camera=&device=&since=   an audio/* body (WAV, WebM/Opus, OGG): a spoken question, answered
                   as its words are, with "transcript" (cloud.ask.voice.hearing)
    POST /ui/ask   the same for the live page (its session cookie instead of the token); GET: the figures

Refusals are JSON errors like the rest of the API: 400 (empty, huge, binary, an instruction to the model,
a bad field; audio too long, undecodable or silent), 403 (another device's data), 404 (a camera with no
events), 413 (audio over [ask.voice] max_audio_bytes), 415 (neither JSON nor audio), 502 (the transcription
server failed).
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from typing import Any

from aiohttp import web

from ..ops.observed import ObservedService
from ..storage.store import Store
from ..webbase.access import ACCESS, COOKIE
from .guard import AskError
from .router import Asker
from .voice.hearing import Hearing, is_audio
from .voice.transcribe import build_transcriber, rules_answer

log = logging.getLogger("edgetriage.cloud.ask")

ASKER = web.AppKey("asker", Asker)
VOICE = web.AppKey("voice", Hearing)
FIELDS = frozenset({"question", "camera", "device", "since"})


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message, "status": status}, status=status)


def _since(raw: Any) -> int | None:
    """Epoch milliseconds, or an ISO 8601 time with its offset."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise AskError(400, "since must be epoch milliseconds or an ISO 8601 time such as 2026-11-29T09:00+01:00")
    if isinstance(raw, int):
        if not 0 <= raw < 1 << 53:
            raise AskError(400, f"since={raw} is out of range (epoch milliseconds)")
        return raw
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise AskError(400, f"since={raw[:40]!r} is not an ISO 8601 time (e.g. 2026-11-29T09:00+01:00)") from None
    if moment.tzinfo is None:
        raise AskError(400, f"since={raw[:40]!r} has no UTC offset; add one (e.g. +01:00 or Z)")
    return int(moment.timestamp() * 1000)


async def _body(request: web.Request) -> dict[str, Any]:
    if request.content_type != "application/json":
        raise AskError(415, f"Content-Type {request.content_type or 'none'} is not accepted; send "
                            "application/json, or a recording as audio/wav, audio/webm or audio/ogg")
    raw = await request.read()
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise AskError(400, "body is not valid JSON (UTF-8); send {\"question\": \"...\"}") from None
    if not isinstance(body, dict):
        raise AskError(400, "body must be a JSON object: {\"question\": \"...\"}")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise AskError(400, f"unknown field(s) {', '.join(unknown)[:80]}; allowed: {', '.join(sorted(FIELDS))}")
    if "question" not in body:
        raise AskError(400, "question is missing: send {\"question\": \"...\"}")
    for name in ("camera", "device"):
        if name in body and not isinstance(body[name], str):
            raise AskError(400, f"{name} must be a string (leave it out for all)")
    if "since" in body and body["since"] is None:
        raise AskError(400, "since must be epoch milliseconds or an ISO 8601 time (leave it out for all)")
    return body


async def _answer(request: web.Request, token_device: str | None, page: bool = False) -> web.Response:
    asker = request.app[ASKER]
    hearing = request.app.get(VOICE) if is_audio(request) else None
    body: dict[str, Any] = {}
    try:
        if is_audio(request) and hearing is None:
            raise AskError(415, "spoken questions are off here ([ask.voice] enabled = false); send the "
                                "question as application/json")
        body = await hearing.question(request) if hearing is not None else await _body(request)
        result = await asker.ask(body["question"], token_device=token_device, device=body.get("device"),
                                 camera=body.get("camera"), since_ms=_since(body.get("since")))
    except AskError as exc:
        if hearing is not None and "question" in body:  # the words heard were refused: show them
            return _error(exc.status, f"{exc} (heard: {body['question'][:200]!r})")
        return _error(exc.status, str(exc))
    if hearing is not None:
        hearing.answered()
        result["transcript"] = body["question"]
    if page:
        result["figures"] = asker.figures()  # the page shows alpha and L_total for questions
    return web.json_response(result)


def prometheus_text(asker: Asker | None) -> str:
    """The questions' counters and figures for GET /metrics (the same numbers /v1/stats shows)."""
    if asker is None:
        return ""
    f = asker.figures()
    lines = ["# HELP edgetriage_cloud_ask_answers_total questions answered, by route",
             "# TYPE edgetriage_cloud_ask_answers_total counter"]
    lines += [f'edgetriage_cloud_ask_answers_total{{route="{r}"}} {n}' for r, n in f["routes"].items()]
    for name, value, kind, text in (
        (
            "partial_total",
            f["partial"],
            "counter",
            "answers from the fast path because the LLM path would break t_max_ms",
        ),
        ("refused_total", f["refused"], "counter", "questions refused with a 4xx"),
        ("alpha_ratio", f["alpha"], "gauge", "questions answered without the LLM / questions answered"),
        (
            "total_seconds",
            None if f["L_total_ms"] is None else f["L_total_ms"] / 1000,
            "gauge",
            "L_total = L_sched + alpha*L_fast + (1-alpha)*L_llm",
        ),
    ):
        if value is not None:
            lines += [f"# HELP edgetriage_cloud_ask_{name} {text}", f"# TYPE edgetriage_cloud_ask_{name} {kind}",
                      f"edgetriage_cloud_ask_{name} {value}"]
    return "\n".join(lines) + "\n"


def voice_prometheus_text(hearing: Hearing | None) -> str:
    """The spoken questions' figures for GET /metrics (the same numbers /v1/stats shows under "voice")."""
    if hearing is None:
        return ""
    f = hearing.figures()
    lines = []
    for name, value, kind, text in (
            ("transcriptions_total", f["transcriptions"], "counter", "spoken questions transcribed"),
            ("answered_total", f["answered"], "counter", "spoken questions answered (200)"),
            ("failed_total", f["failed"], "counter", "recordings the transcriber failed on"),
            ("refused_total", f["refused"], "counter", "recordings refused: too large, too long, undecodable"),
            ("answered_ratio", f["answered_share"], "gauge", "spoken questions answered / transcribed"),
            ("transcribe_seconds", None if f["transcribe_p50_ms"] is None else f["transcribe_p50_ms"] / 1000,
             "gauge", "median time to transcribe a recording"),
            ("rtf_ratio", f["rtf"], "gauge", "transcription time / audio time")):
        if value is not None:
            lines += [f"# HELP edgetriage_cloud_voice_{name} {text}", f"# TYPE edgetriage_cloud_voice_{name} {kind}",
                      f"edgetriage_cloud_voice_{name} {value}"]
    return "\n".join(lines) + "\n" if lines else ""


def build_asker(store: Store, service: ObservedService | None) -> Asker | None:
    """The Asker for the service's [ask] and [analyzer] settings (defaults for an API-only process), hearing
    of the service's new events and verdicts; None when [ask] enabled = false."""
    config = service.config if service is not None else None
    if config is not None and not config.ask.enabled:
        return None
    asker = Asker(store, config.ask, config.analyzer) if config is not None else Asker(store, _default_config())
    if service is not None:
        asker.attach(service)
    return asker


def _default_config():
    from .config import AskConfig

    return AskConfig()


def add_ask(app: web.Application, asker: Asker, principal_key: web.RequestKey) -> None:
    """Mount POST /v1/ask (bearer auth, done by the API's middleware, which files the principal under
    `principal_key`) and POST /ui/ask (the page's session). The text model loads in the background at start."""
    app[ASKER] = asker
    if asker.config.voice.enabled:  # spoken questions: the recogniser loads with the first one
        app[VOICE] = Hearing(asker.config.voice,
                             build_transcriber(asker.config.voice, lambda: asker.vocabulary().spoken_names(),
                                               rules_answer(asker.vocabulary)))
    warming: list[asyncio.Task] = []

    async def post_ask(request: web.Request) -> web.Response:
        return await _answer(request, request[principal_key].device)

    def signed_in(request: web.Request) -> bool:
        access = request.app.get(ACCESS)
        return access is not None and access.valid(request.cookies.get(COOKIE))

    async def page_ask(request: web.Request) -> web.Response:
        if not signed_in(request):
            return _error(401, "sign in through the page link the service printed at start")
        return await _answer(request, None, page=True)

    async def page_figures(request: web.Request) -> web.Response:
        if not signed_in(request):
            return _error(401, "sign in through the page link the service printed at start")
        voice = request.app.get(VOICE)
        return web.json_response({"figures": asker.figures(),
                                  "voice": voice.figures() if voice is not None else None})

    async def on_startup(_: web.Application) -> None:
        if not asker.attached:
            return  # an API-only process: the model loads with the first question that needs it
        warming.append(asyncio.get_running_loop().create_task(asker.warm()))

    async def on_shutdown(_: web.Application) -> None:
        for task in warming:
            task.cancel()

    async def on_cleanup(_: web.Application) -> None:
        await asyncio.to_thread(asker.close)  # its worker threads and their read connections
        if VOICE in app:
            app[VOICE].close()  # its decoding thread and the recogniser

    app.router.add_post("/v1/ask", post_ask)
    app.router.add_post("/ui/ask", page_ask)
    app.router.add_get("/ui/ask", page_figures)  # the questions' alpha and L_total, when the page opens
    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)
