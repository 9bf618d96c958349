"""The HTTP API (aiohttp): event intake for devices without MQTT, read access to events, verdicts, thumbnails
and the service's figures, model files for devices, health, metrics and its own OpenAPI document.

    POST /v1/events                   an event (MessagePack as on MQTT, or JSON with the crop in base64)
    GET  /v1/events                   events newest first; filters, paging by `before` (Link: rel="next")
    GET  /v1/events/{id}              one event and its verdict
    GET  /v1/events/{id}/thumbnail    the crop, scaled to fit 192 px; /crop: the crop as sent
    GET  /v1/verdicts/{id}            the verdict as the device got it (JSON, the whole reuse rule)
    POST /v1/verdicts/{id}/feedback   the operator says it was right or what it should be (feedback_routes)
    GET  /v1/stats                    alpha, L_light, L_llm, L_sched, L_total vs measured, U, hit rate, ...
    POST /v1/ask                      a question in words about the events (cloud.ask), or spoken (audio/*)
    POST /v1/page-link                a fresh one-time link to the live page (operator only)
    GET  /v1/models/{sha256}          a model file a remote config announced
    GET  /v1/suppressions, POST /v1/suppressions/{id}/accept|reject   learned suppressions (cloud.teach.suppress)
    GET  /healthz, /metrics           public (probes and scrapers)
    GET  /openapi.json                public: this API's OpenAPI 3.1 document
    /ui/...                           the operator's page (cloud.http.web; its own one-time link and cookie)

Every /v1 route needs `Authorization: Bearer <token>` (cloud.http.auth): the operator's token opens all; a device
token only POST /v1/events for its own device, its own verdicts and model files. Every answer is JSON, errors
included ({"error": "<what was wrong and what to do>", "status": <code>}). Bodies are bounded by
[http] max_body_bytes. Loopback by default. Extra routes go in through `cloud.compose.build_app(extras=...)`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import msgpack
from aiohttp import web
from pydantic import ValidationError, field_validator

from ...shared import clock
from ...shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from ...shared.modelfiles import bundled_dir
from ...shared.protocol import VERDICTS, Event, ProtocolError, decode_event, encode_verdict
from ...shared.text import shown
from ..ask.api import ASKER, VOICE, add_ask, prometheus_text, voice_prometheus_text
from ..ask.router import Asker
from ..broker.admission import check_captured
from ..config import HTTPConfig
from ..ops.metrics import add_metrics
from ..pipeline.service import CloudService
from ..scheduling.outcome import OverCapacity, Released
from ..storage.store import Store
from ..teach.suppress.api import add_suppressions
from ..teach.suppress.learner import Learner
from ..webbase.errors import error_response as _error
from .askgate import ask_gate
from .auth import ApiAuth, Principal
from .feedback_routes import add_feedback
from .openapi import openapi_document
from .proposal_routes import add_proposals
from .web import add_page, post_page_link

log = logging.getLogger("edgetriage.cloud.api")

STORE = web.AppKey("store", Store)
SERVICE: web.AppKey[CloudService | None] = web.AppKey("service")  # None: an API-only process
AUTH = web.AppKey("auth", ApiAuth)
MODELS = web.AppKey("models", dict)  # sha256 -> model file, for GET /v1/models/{sha256}
PENDING = web.AppKey("pending", set)  # POST /v1/events?wait=false still being answered
PRINCIPAL = web.RequestKey("principal", Principal)
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MILLIS = "a time in epoch milliseconds"
THUMBNAIL_PX = 192
PUBLIC = frozenset({"/healthz", "/metrics", "/openapi.json"})
SOURCES = ("llm", "cloud_cache", "fallback")
_EVENT_ID_RE = re.compile(r"^[0-9a-f-]{1,36}$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_LABEL_RE = re.compile(r"^[A-Za-z0-9_ .'-]{1,64}$")


class BadRequest(ValueError):
    """A request a client got wrong; the message says which parameter and what it may be."""


class Forbidden(PermissionError):
    """An authenticated client asking for something its token does not cover."""


def _question_metrics(request: web.Request) -> str:
    """The questions' and the voice's Prometheus lines (cloud.ask), after the service's on /metrics."""
    return prometheus_text(request.app.get(ASKER)) + voice_prometheus_text(request.app.get(VOICE))


@web.middleware
async def _json_errors(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except BadRequest as exc:
        return _error(400, str(exc))
    except Forbidden as exc:
        return _error(403, str(exc))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        if exc.status == 404:
            return _error(404, f"no such endpoint: {request.method} {request.path} (see GET /openapi.json)")
        if exc.status == 405:
            return _error(405, f"{request.method} is not allowed on {request.path}",
                          {"Allow": exc.headers.get("Allow", "")})
        if exc.status == 413:
            return _error(413, "request body over the size limit ([http] max_body_bytes)")
        return _error(exc.status, exc.reason)
    except Exception:  # noqa: BLE001 - answer in JSON; the details go to the log, not to the client
        log.exception("error answering %s %s", request.method, request.path)
        return _error(500, "internal error; the service log has the details")


@web.middleware
async def _authenticate(request: web.Request, handler) -> web.StreamResponse:
    """Bearer token on everything but the public paths and the page (which checks its own cookie)."""
    path = request.path
    if path in PUBLIC or path == "/ui" or path.startswith("/ui/"):
        return await handler(request)
    auth = request.app[AUTH]
    principal = auth.principal(request.headers.get("Authorization"))
    if principal is None:
        return _error(401, f"missing or wrong bearer token: {auth.hint()}", {"WWW-Authenticate": "Bearer"})
    request[PRINCIPAL] = principal
    return await handler(request)


def _operator(request: web.Request) -> None:
    principal: Principal = request[PRINCIPAL]
    if not principal.is_operator:
        raise Forbidden(f"a device token ({principal.device}) may not read {request.path}; use the operator token")


# -- parameters ----------------------------------------------------------------------------------------
def _whole(request: web.Request, name: str, lo: int, hi: int, what: str) -> int | None:
    """The query parameter `name` as a whole number in lo..hi, None when absent; `what` says what it must be."""
    raw = request.query.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}={shown(raw)} is not {what}") from None
    if not lo <= value <= hi:
        raise BadRequest(f"{name}={value} is out of range: use {what}")
    return value


def _optional(request: web.Request, name: str, pattern: re.Pattern | None = None, what: str = "") -> str | None:
    value = request.query.get(name)
    if value is None:
        return None
    if pattern is not None and not pattern.match(value):
        raise BadRequest(f"{name}={shown(value)} is not {what}")
    return value


def _choice(request: web.Request, name: str, options: tuple[str, ...]) -> str | None:
    value = request.query.get(name)
    if value is None:
        return None
    if value not in options:
        raise BadRequest(f"{name}={shown(value)} must be one of {', '.join(options)}")
    return value


def _flag(request: web.Request, name: str, default: bool) -> bool:
    raw = request.query.get(name)
    if raw is None:
        return default
    if raw.lower() in ("1", "true", "yes"):
        return True
    if raw.lower() in ("0", "false", "no"):
        return False
    raise BadRequest(f"{name}={shown(raw)} must be true or false")


def _event_id(request: web.Request) -> str:
    event_id = request.match_info["event_id"]
    if not _EVENT_ID_RE.match(event_id):
        raise BadRequest(f"{shown(event_id)} is not an event id (a UUID)")
    return event_id


def _service(request: web.Request) -> CloudService:
    service = request.app[SERVICE]
    if service is None:
        raise web.HTTPServiceUnavailable(reason="no cloud service runs in this process (API only)")
    return service  # type: ignore[return-value]


# -- handlers ------------------------------------------------------------------------------------------
async def healthz(request: web.Request) -> web.Response:
    service: CloudService | None = request.app[SERVICE]  # type: ignore[assignment]
    body: dict[str, Any] = {"status": "ok", "mqtt_connected": False}
    if service is not None:
        body.update(mqtt_connected=service.publisher.connected, mqtt_subscribed=service.publisher.subscribed,
                    analyzer=service.backend.name,
                    pending=service.pending, overloaded=service.overloaded,
                    queue_depth=service.scheduler.queue_depth, stats=service.stats.snapshot())
        if not service.publisher.subscribed and service.publisher.error:
            body["mqtt_error"] = service.publisher.error
        if claims := service.sites.claims():  # what devices announce that [[sites]] says otherwise: not a failure
            body["site_claims"] = claims
        problems = service.health.problems()  # the store away, or messages waiting with none answered
        if problems:
            body.update(status="unavailable", reason="; ".join(problems))
            return web.json_response(body, status=503)
    return web.json_response(body)


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document())


def _event_payload(body: bytes, content_type: str) -> bytes:
    """The request body as protocol bytes (MessagePack), whatever form it came in."""
    if content_type in ("application/msgpack", "application/x-msgpack", "application/octet-stream"):
        return body
    if content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(reason=f"Content-Type {content_type or 'none'} is not accepted; send "
                                                  "application/msgpack (as on MQTT) or application/json")
    try:
        obj = json.loads(body)
    except RecursionError:
        raise BadRequest("body is not valid JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise BadRequest("body must be a JSON object (an event)")
    try:
        _EventJSON.model_validate_json(body, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "event"
        raise BadRequest(f"invalid event: {where}: {err['msg']}") from None
    crop = obj.get("crop")
    if not isinstance(crop, str):
        raise BadRequest("crop: must be the JPEG as a base64 string")
    try:
        obj["crop"] = base64.b64decode(crop, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest("crop: not valid base64") from None
    try:
        return msgpack.packb(obj, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise BadRequest(f"body cannot be read as an event: {exc}") from None


class _EventJSON(Event):
    """The JSON form of an event, checked strictly (no "1" for 1, no true for 1 or 1 for true, as the
    OpenAPI document promises) before it is decoded like any MQTT event. The crop is base64 text here."""

    crop: str  # type: ignore[assignment]

    @field_validator("crop")
    @classmethod
    def _jpeg(cls, value: str) -> str:  # replaces Event's bytes check; the real one runs on decoding
        return value


async def post_event(request: web.Request) -> web.Response:
    """An event from a device without MQTT: the same schema, limits, dedupe and cache as the MQTT intake.
    Answers the verdict (wait=true, the default) or 202 at once (wait=false; GET /v1/verdicts/{id} later)."""
    service = _service(request)
    if not service.accepting:
        return _error(503, "the service is stopping; send the event again in a few seconds", {"Retry-After": "5"})
    wait = _flag(request, "wait", True)
    # no Content-Type is refused, not guessed (aiohttp would report application/octet-stream)
    given = request.headers.get("Content-Type", "").strip()
    payload = _event_payload(await request.read(), request.content_type if given else "")
    try:
        event = decode_event(payload)
        check_captured(event, clock.now_ms(), service.config)  # said now, also when not waiting (202)
    except ProtocolError as exc:
        service.stats.reject(exc.code)
        raise BadRequest(exc.reason) from None
    principal: Principal = request[PRINCIPAL]
    if not principal.is_operator and principal.device != event.device:
        raise Forbidden(f"the token of device {principal.device} may not send events of device {event.device}")
    topic = service.topics.events(event.device)
    if not wait:
        task = asyncio.get_running_loop().create_task(service.process(event, topic))
        pending = request.app[PENDING]
        pending.add(task)
        task.add_done_callback(_forget(pending))
        return web.json_response({"event_id": event.event_id, "status": "accepted",
                                  "verdict": f"/v1/verdicts/{event.event_id}"}, status=202)
    try:
        verdict = await service.process(event, topic)
    except ProtocolError as exc:
        raise BadRequest(exc.reason) from None
    except OverCapacity:  # stored, unanswered: analysed when there is room
        return web.json_response(
            {"event_id": event.event_id, "status": "waiting", "verdict": f"/v1/verdicts/{event.event_id}"},
            status=202,
            headers={"Retry-After": "5"},
        )
    except Released:
        return _error(
            503, "the service stopped before the model got to this event; send it again", {"Retry-After": "5"}
        )
    return web.Response(body=encode_verdict(verdict), content_type="application/json")


async def _server_header(request: web.Request, response: web.StreamResponse) -> None:
    response.headers["Server"] = "edgetriage"  # not the Python and aiohttp versions an attacker would look up


def _forget(pending: set) -> Callable[[asyncio.Task], None]:
    def done(task: asyncio.Task) -> None:
        pending.discard(task)
        if not task.cancelled() and task.exception() is not None and not isinstance(task.exception(),
                                                                                    (Released, ProtocolError)):
            log.error("answering an HTTP event failed: %r", task.exception())
    return done


async def list_events(request: web.Request) -> web.Response:
    _operator(request)
    filters: dict[str, Any] = {
        "device": _optional(request, "device", DEVICE_ID_RE, "a device id ([a-z0-9-], at most 64)"),
        "label": _optional(request, "label", _LABEL_RE, "a label"),
        "before": _optional(request, "before", _EVENT_ID_RE,
                            "an event id; pass the event_id of the last event of a page"),
        "camera": _optional(request, "camera", CAMERA_ID_RE, "a camera id ([a-z0-9_-], at most 64)"),
        "verdict": _choice(request, "verdict", VERDICTS),
        "source": _choice(request, "source", SOURCES),
        "since_ms": _whole(request, "since_ms", 0, (1 << 53) - 1, MILLIS),
        "until_ms": _whole(request, "until_ms", 0, (1 << 53) - 1, MILLIS),
    }
    limit = _whole(request, "limit", 1, MAX_LIMIT, f"a whole number in 1..{MAX_LIMIT}") or DEFAULT_LIMIT
    given = {k: v for k, v in filters.items() if v is not None}
    events = request.app[STORE].list_events(limit=limit, **given)  # optional filters only when used
    headers = {}
    if len(events) == limit and events:
        query = {k: str(v) for k, v in given.items() if k != "before"}
        query.update(limit=str(limit), before=events[-1]["event_id"])
        headers["Link"] = f'</v1/events?{urlencode(query)}>; rel="next"'
    return web.json_response(events, headers=headers)


async def get_event(request: web.Request) -> web.Response:
    _operator(request)
    event_id = _event_id(request)
    event = request.app[STORE].get_event(event_id)
    if event is None:
        return _error(404, f"no event with id {event_id!r} is stored")
    return web.json_response(event)


async def get_crop(request: web.Request) -> web.Response:
    return _crop(request, lambda jpeg: jpeg)


async def get_thumbnail(request: web.Request) -> web.Response:
    return _crop(request, thumbnail)


def _crop(request: web.Request, shown: Callable[[bytes], bytes]) -> web.Response:
    """The event's crop as `shown` makes it (as sent, or a thumbnail)."""
    _operator(request)
    event_id = _event_id(request)
    crop = request.app[STORE].get_crop(event_id)
    if crop is None:
        return _error(404, f"no crop for event {event_id!r}: never stored, or deleted by retention")
    return web.Response(
        body=shown(crop), content_type="image/jpeg", headers={"Cache-Control": "private, max-age=86400"}
    )


def thumbnail(jpeg: bytes, size: int = THUMBNAIL_PX) -> bytes:
    """The crop scaled down to fit `size` pixels (as it is when already small enough)."""
    import cv2
    import numpy as np

    image = cv2.imdecode(np.frombuffer(jpeg, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return jpeg
    h, w = image.shape[:2]
    scale = size / max(h, w)
    if scale >= 1.0:
        return jpeg
    small = cv2.resize(image, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    ok, data = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, 80])
    return data.tobytes() if ok else jpeg


async def get_verdict(request: web.Request) -> web.Response:
    event_id = _event_id(request)
    verdict = request.app[STORE].get_verdict(event_id)
    principal: Principal = request[PRINCIPAL]
    if verdict is None or (not principal.is_operator and verdict.device != principal.device):
        return _error(404, f"no verdict for event {event_id!r} (yet)")
    return web.Response(body=encode_verdict(verdict), content_type="application/json")


async def page_link(request: web.Request) -> web.Response:
    _operator(request)  # a link to the page is the operator's, never a device's
    return await post_page_link(request)


async def get_stats(request: web.Request) -> web.Response:
    _operator(request)
    body = _service(request).figures.snapshot()
    asker = request.app.get(ASKER)
    if asker is not None:
        body["ask"] = asker.figures()  # questions: alpha, L_total, per-route latencies (cloud.ask.router)
    voice = request.app.get(VOICE)
    if voice is not None:
        body["voice"] = voice.figures()  # spoken questions: transcriptions, latency, share answered
    return web.json_response(body)


def model_index(models_dir: Path) -> dict[str, Path]:
    """sha256 -> file for every model the manifest in `models_dir` lists and the folder holds. The hashes
    are the manifest's; devices check what they receive against the hash they asked for."""
    try:
        models = json.loads((models_dir / "manifest.json").read_text(encoding="utf-8"))["models"]
    except (OSError, ValueError, KeyError) as exc:
        log.warning("no models served: cannot read %s/manifest.json (%s)", models_dir, exc)
        return {}
    return {e["sha256"]: models_dir / e["file"] for e in models.values()
            if isinstance(e, dict) and "sha256" in e and "file" in e and (models_dir / e["file"]).is_file()}


async def get_model(request: web.Request) -> web.StreamResponse:
    """A detector model file by the sha256 a remote config announced (edge.remote_config fetches it)."""
    sha = request.match_info["sha256"]
    if not _SHA256_RE.match(sha):
        raise BadRequest(f"{shown(sha)} is not a sha256 (64 lowercase hex characters)")
    path = request.app[MODELS].get(sha)
    if path is None:
        return _error(404, f"no model with sha256 {sha} is served here; see models/manifest.json")
    return web.FileResponse(path, headers={"Content-Type": "application/octet-stream", "X-Content-SHA256": sha})


async def _finish_pending(app: web.Application) -> None:
    """Graceful shutdown: accepted HTTP events get the drain time the service gives MQTT ones."""
    pending = set(app[PENDING])
    if pending:
        await asyncio.wait(pending, timeout=10.0)


def api_app(store: Store, service: CloudService | None, models_dir: Path | None = None, *,
            http: HTTPConfig | None = None, auth: ApiAuth | None = None,
            extras: Iterable[Callable[[web.Application], Any]] = (), asker: Asker | None = None,
            learner: Learner | None = None) -> web.Application:
    """The API on `store` (and `service`, None for an API-only process), with the routes of the `asker` and the
    `learner` where given (cloud.compose.build_app builds them). `auth` defaults to the tokens of `http` (or the
    service's config); `extras` are called with the app to add routes of their own."""
    if http is None:
        http = service.config.http if service is not None else HTTPConfig()
    app = web.Application(middlewares=[_json_errors, _authenticate, ask_gate(http, PRINCIPAL)],
                          client_max_size=http.max_body_bytes)
    app[STORE] = store
    app[SERVICE] = service
    app[AUTH] = auth or ApiAuth.from_config(http)
    app[PENDING] = set()
    served = Path(http.models_dir).expanduser() if http.models_dir else bundled_dir()
    app[MODELS] = model_index(models_dir if models_dir is not None else served)
    app.on_shutdown.append(_finish_pending)
    app.on_response_prepare.append(_server_header)
    app.router.add_post("/v1/events", post_event)
    app.router.add_post("/v1/page-link", page_link)
    for path, handler in (("/healthz", healthz), ("/openapi.json", openapi), ("/v1/events", list_events),
                          ("/v1/events/{event_id}", get_event), ("/v1/events/{event_id}/crop", get_crop),
                          ("/v1/events/{event_id}/thumbnail", get_thumbnail), ("/v1/verdicts/{event_id}", get_verdict),
                          ("/v1/stats", get_stats), ("/v1/models/{sha256}", get_model)):
        app.router.add_get(path, handler)
    # other modules' routes
    add_metrics(app, service, _question_metrics)  # GET /metrics (Prometheus), questions' counts included
    add_page(app, store, service)  # the live page under /ui/
    add_feedback(app, service.feedback if service is not None else None, PRINCIPAL)  # operator feedback
    add_proposals(app, store, service.config if service is not None else None, PRINCIPAL)  # camera thresholds
    if asker is not None:
        add_ask(app, asker, PRINCIPAL)  # POST /v1/ask, /ui/ask (cloud.ask)
    if learner is not None:
        add_suppressions(app, learner, PRINCIPAL)  # /v1/suppressions, /ui/suppressions (cloud.teach.suppress)
    for extra in extras:
        extra(app)
    return app


async def run_api(app: web.Application, host: str, port: int) -> web.AppRunner:
    """Serve `app` until `runner.cleanup()`. Port 0 picks a free port (see `runner.addresses`).
    No access log: one line per request would be info-level logging on a hot path."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=10.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        await runner.cleanup()
        raise OSError(exc.errno, f"cannot serve the HTTP API on {host}:{port}: {exc.strerror} "
                                 "(set [http] port to a free one, or enabled = false)") from None
    return runner
