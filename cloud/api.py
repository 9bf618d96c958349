"""The HTTP API: health for probes, and read access to received events and their verdicts.

Every answer is JSON, errors included ({"error": "<what was wrong and what to do>", "status": <code>}),
so a client never has to parse an HTML error page. No authentication: it listens on loopback by default.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from aiohttp import web

from ..shared.ids import DEVICE_ID_RE
from .service import CloudService
from .store import Store

log = logging.getLogger("edgetriage.cloud.api")

STORE = web.AppKey("store", Store)
SERVICE = web.AppKey("service", object)  # CloudService | None
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
_EVENT_ID_RE = re.compile(r"^[0-9a-f-]{1,36}$")


class BadRequest(ValueError):
    """A query a client got wrong; the message says which parameter and what it may be."""


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message, "status": status}, status=status)


@web.middleware
async def _json_errors(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except BadRequest as exc:
        return _error(400, str(exc))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        if exc.status == 404:
            return _error(404, f"no such endpoint: {request.method} {request.path} (see GET /healthz, /v1/events)")
        if exc.status == 405:
            return _error(405, f"{request.method} is not allowed on {request.path}")
        return _error(exc.status, exc.reason)
    except Exception:  # noqa: BLE001 - answer in JSON; the details go to the log, not to the client
        log.exception("error answering %s %s", request.method, request.path)
        return _error(500, "internal error; the service log has the details")


def _limit(raw: str | None) -> int:
    if raw is None or raw == "":
        return DEFAULT_LIMIT
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"limit={raw!r} is not a whole number; use 1..{MAX_LIMIT}") from None
    if not 1 <= value <= MAX_LIMIT:
        raise BadRequest(f"limit={value} is out of range; use 1..{MAX_LIMIT}")
    return value


def _optional(request: web.Request, name: str) -> str | None:
    value = request.query.get(name)
    return value if value else None


async def healthz(request: web.Request) -> web.Response:
    service: CloudService | None = request.app[SERVICE]  # type: ignore[assignment]
    body: dict[str, Any] = {"status": "ok", "mqtt_connected": False}
    if service is not None:
        body.update(mqtt_connected=service.mqtt_connected, analyzer=service.analyzer.name,
                    pending=service.pending, stats=service.stats.snapshot())
        if not service.mqtt_connected and service.mqtt_error:
            body["mqtt_error"] = service.mqtt_error
    return web.json_response(body)


async def list_events(request: web.Request) -> web.Response:
    device = _optional(request, "device")
    if device is not None and not DEVICE_ID_RE.match(device):
        raise BadRequest(f"device={device!r} is not a device id ([a-z0-9-], at most 64)")
    before = _optional(request, "before")
    if before is not None and not _EVENT_ID_RE.match(before):
        raise BadRequest(f"before={before!r} is not an event id; pass the event_id of the last event of a page")
    events = request.app[STORE].list_events(device=device, label=_optional(request, "label"),
                                            limit=_limit(request.query.get("limit")), before=before)
    return web.json_response(events)


async def get_event(request: web.Request) -> web.Response:
    event_id = request.match_info["event_id"]
    event = request.app[STORE].get_event(event_id)
    if event is None:
        return _error(404, f"no event with id {event_id!r} is stored")
    return web.json_response(event)


async def get_crop(request: web.Request) -> web.Response:
    event_id = request.match_info["event_id"]
    crop = request.app[STORE].get_crop(event_id)
    if crop is None:
        return _error(404, f"no event with id {event_id!r} is stored")
    return web.Response(body=crop, content_type="image/jpeg")


def build_app(store: Store, service: CloudService | None) -> web.Application:
    app = web.Application(middlewares=[_json_errors])
    app[STORE] = store
    app[SERVICE] = service
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/v1/events", list_events)
    app.router.add_get("/v1/events/{event_id}", get_event)
    app.router.add_get("/v1/events/{event_id}/crop", get_crop)
    return app


async def run_api(app: web.Application, host: str, port: int) -> web.AppRunner:
    """Serve `app` until `runner.cleanup()`. Port 0 picks a free port (see `runner.addresses`).
    No access log: one line per request would be info-level logging on a hot path."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        await runner.cleanup()
        raise OSError(exc.errno, f"cannot serve the HTTP API on {host}:{port}: {exc.strerror} "
                                 "(set [http] port to a free one, or enabled = false)") from None
    return runner
