"""Per-camera threshold proposals over HTTP (cloud.teach.thresholds), the operator's token only.

    GET  /v1/cameras/{device}/{camera}/thresholds          the proposal with its figures (?since_ms=)
    POST /v1/cameras/{device}/{camera}/thresholds/accept   push the proposal to the device (its retained remote
                                                            configuration, merged); answers the push's outcome
    GET  /ui/thresholds                                     the page's section: every camera's proposal
    POST /ui/thresholds/{device}/{camera}                   the page's accept button (its session cookie)
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ...shared import clock
from ...shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from ...shared.text import shown
from ..config import CloudConfig, ThresholdsConfig
from ..storage.store import Store
from ..teach.thresholds import accept, cameras_seen, propose_for
from ..webbase.access import ACCESS, COOKIE
from ..webbase.errors import error_response as _error


def _where(request: web.Request) -> tuple[str, str] | web.Response:
    device, camera = request.match_info["device"], request.match_info["camera"]
    if not DEVICE_ID_RE.match(device) or not CAMERA_ID_RE.match(camera):
        return _error(400, f"{shown(device)}/{shown(camera)} is not a device and camera id")
    return device, camera


def add_proposals(app: web.Application, store: Store, config: CloudConfig | None,
                  principal_key: web.RequestKey) -> None:
    """Mount the two routes; `config` (None: an API-only process, which cannot push) gives the broker and the
    [thresholds] settings."""
    bounds = config.thresholds if config is not None else ThresholdsConfig()

    def checked(request: web.Request) -> tuple[str, str, int | None] | web.Response:
        if request.path.startswith("/ui/"):
            access = request.app.get(ACCESS)
            if access is None or not access.valid(request.cookies.get(COOKIE)):
                return _error(401, "sign in through the page link the service printed at start")
        elif not request[principal_key].is_operator:
            return _error(403, f"a device token ({request[principal_key].device}) may not read or change "
                               "thresholds; use the operator token")
        where = _where(request)
        if isinstance(where, web.Response):
            return where
        raw = request.query.get("since_ms")
        if raw is not None and not (raw.isdigit() and int(raw) < 1 << 53):
            return _error(400, "since_ms must be a time in epoch milliseconds")
        return (*where, int(raw) if raw is not None else None)

    async def get_thresholds(request: web.Request) -> web.Response:
        got = checked(request)
        if isinstance(got, web.Response):
            return got
        device, camera, since = got
        return web.json_response(await asyncio.to_thread(propose_for, store, bounds, device, camera, None, since))

    async def accept_thresholds(request: web.Request) -> web.Response:
        got = checked(request)
        if isinstance(got, web.Response):
            return got
        if config is None:
            return _error(503, "no cloud service runs in this process (API only): it cannot push a config")
        device, camera, since = got
        proposal: dict[str, Any] = await asyncio.to_thread(propose_for, store, bounds, device, camera, None, since)
        if proposal["proposed"] is None:
            return _error(409, f"no threshold change to propose for {device}/{camera}: the evidence does not "
                               "allow one (see GET .../thresholds)")
        result = await asyncio.to_thread(accept, config.mqtt, device, camera, proposal["proposed"])
        return web.json_response({"proposal": proposal, "version": result.version, "topic": result.topic,
                                  "outcome": result.outcome})

    async def page_thresholds(request: web.Request) -> web.Response:
        access = request.app.get(ACCESS)
        if access is None or not access.valid(request.cookies.get(COOKIE)):
            return _error(401, "sign in through the page link the service printed at start")

        def every() -> list[dict[str, Any]]:
            since = clock.now_ms() - int(bounds.history_days * 86_400_000)
            return [propose_for(store, bounds, device, camera) for device, camera in cameras_seen(store, since)]

        return web.json_response({"proposals": await asyncio.to_thread(every), "can_accept": config is not None})

    app.router.add_get("/ui/thresholds", page_thresholds)
    app.router.add_post("/ui/thresholds/{device}/{camera}", accept_thresholds)
    app.router.add_get("/v1/cameras/{device}/{camera}/thresholds", get_thresholds)
    app.router.add_post("/v1/cameras/{device}/{camera}/thresholds/accept", accept_thresholds)


THRESHOLDS = {"type": "object", "required": ["device", "camera", "current", "proposed", "evidence"],
              "properties": {"device": {"type": "string"}, "camera": {"type": "string"},
                             "current": {"type": "object"}, "proposed": {"type": ["object", "null"]},
                             "evidence": {"type": "object"}}}


def proposal_paths(errors: dict[str, Any], error: Any) -> dict[str, Any]:
    """The two OpenAPI path items (cloud.http.openapi adds them)."""
    params = [{"name": "device", "in": "path", "required": True, "schema": {"type": "string",
                                                                           "pattern": DEVICE_ID_RE.pattern}},
              {"name": "camera", "in": "path", "required": True, "schema": {"type": "string",
                                                                           "pattern": CAMERA_ID_RE.pattern}},
              {"name": "since_ms", "in": "query", "required": False,
               "schema": {"type": "integer", "minimum": 0, "maximum": (1 << 53) - 1},
               "description": "only escalations received since (epoch ms)"}]
    figures = ("the current settings' figures and the proposed ones' (min_score, uncertain_band, escalations, "
               "escalations_avoided, people_missed), from the camera's verdict history")
    return {
        "/v1/cameras/{device}/{camera}/thresholds": {"get": {
            "summary": "A score floor proposed for one camera, with what it would have done", "description": figures,
            "operationId": "getThresholds", "parameters": params,
            "responses": {"200": {"description": "The proposal (proposed is null: no change the evidence allows).",
                                  "content": {"application/json": {"schema": THRESHOLDS}}}, **errors}}},
        "/v1/cameras/{device}/{camera}/thresholds/accept": {"post": {
            "summary": "Accept the proposal: push it to the device as a rule override for the camera",
            "operationId": "acceptThresholds", "parameters": params,
            "responses": {"200": {"description": "Pushed (retained remote configuration, merged).",
                                  "content": {"application/json": {"schema": {"type": "object"}}}}, **errors,
                          "409": error("No change to propose."),
                          "503": error("No service runs in this process, or no broker to push through.")}}},
    }
