"""The operator's side of suppressions, on the API and the live page:

    GET  /v1/suppressions                   proposals and decisions (?device=, ?status=), newest first, with
                                            their evidence (event ids, crop links, counts)
    POST /v1/suppressions/{id}/accept       send it to the device (through its remote config)
    POST /v1/suppressions/{id}/reject       drop it (an accepted one is taken off the device)
    GET  /ui/suppressions, POST /ui/suppressions/{id}/{accept|reject}   the same for the page (its session)

The /v1 routes need the operator's token: a device token is refused (403), as suppressions change what
devices escalate.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from aiohttp import web

from ....shared import clock
from ...webbase.access import ACCESS, COOKIE
from ...webbase.errors import error_response as _error
from .learner import Learner
from .openapi import ACTIONS, DEVICE_RE, ID_RE
from .store import STATUSES, Proposal

LEARNER = web.AppKey("suppress_learner", Learner)
_ID_RE = re.compile(ID_RE)
_DEVICE_RE = re.compile(DEVICE_RE)


def proposal_json(proposal: Proposal, now_ms: int, thumbs: str = "/v1/events/{}/thumbnail") -> dict[str, Any]:
    """A suppression as the API and the page show it: the rule (without its embedding bytes), its evidence
    with a crop link each, and whether it is live."""
    rule = proposal.rule
    return {
        "id": rule.id, "device": proposal.device, "camera": rule.camera, "label": rule.label,
        "region": list(rule.region), "areas": list(rule.areas), "looks": len(rule.exemplars),
        "appearance": "embedding" if all(e.embedding for e in rule.exemplars) else "hash",
        "status": proposal.status, "expired": rule.expires_ms <= now_ms, "created_ms": proposal.created_ms,
        "expires_ms": rule.expires_ms, "count": proposal.count, "sources": proposal.sources,
        "evidence": [{"event_id": e, "crop": thumbs.format(e)} for e in proposal.evidence],
        "decided_by": proposal.decided_by, "decided_ms": proposal.decided_ms,
    }


def _listing(request: web.Request, thumbs: str) -> web.Response:
    device, status = request.query.get("device"), request.query.get("status")
    if device is not None and not _DEVICE_RE.match(device):
        return _error(400, "device must be a device id (a-z, 0-9, -; up to 64)")
    if status is not None and status not in STATUSES:
        return _error(400, f"status must be one of {', '.join(STATUSES)}")
    now = clock.now_ms()
    found = [p for p in request.app[LEARNER].proposals.all()
             if (device is None or p.device == device) and (status is None or p.status == status)]
    return web.json_response([proposal_json(p, now, thumbs) for p in reversed(found)])


async def _decide(request: web.Request, action: str) -> web.Response:
    suppression_id = request.match_info["suppression_id"]
    if not _ID_RE.match(suppression_id):
        return _error(400, "a suppression id looks like s-<12 hex> (GET /v1/suppressions lists them)")
    if action not in ACTIONS:
        return _error(404, f"no such action {action[:20]!r}: accept or reject")
    learner = request.app[LEARNER]
    decided = await asyncio.to_thread(learner.decide, suppression_id, ACTIONS[action], "operator")
    if decided is None:
        return _error(404, f"no suppression {suppression_id}")
    return web.json_response(proposal_json(decided, clock.now_ms()))


def add_suppressions(app: web.Application, learner: Learner, principal_key: web.RequestKey) -> None:
    """Mount the routes (see the module docstring); `principal_key` is where the API files who asked."""
    app[LEARNER] = learner

    def operator(request: web.Request) -> web.Response | None:
        principal = request[principal_key]
        if not principal.is_operator:
            return _error(403, f"a device token ({principal.device}) may not use {request.path}; "
                               "use the operator token")
        return None

    async def list_v1(request: web.Request) -> web.Response:
        return operator(request) or _listing(request, "/v1/events/{}/thumbnail")

    async def decide_v1(request: web.Request) -> web.Response:
        return operator(request) or await _decide(request, request.match_info["action"])

    def signed_in(request: web.Request) -> bool:
        return request.app[ACCESS].valid(request.cookies.get(COOKIE))

    async def list_ui(request: web.Request) -> web.Response:
        if not signed_in(request):
            return _error(401, "sign in through the page link")
        return _listing(request, "/ui/thumbs/{}.jpg")

    async def decide_ui(request: web.Request) -> web.Response:
        if not signed_in(request):
            return _error(401, "sign in through the page link")
        return await _decide(request, request.match_info["action"])

    async def close(_: web.Application) -> None:
        await asyncio.to_thread(learner.close)

    app.on_shutdown.append(close)
    app.router.add_get("/v1/suppressions", list_v1)
    app.router.add_post("/v1/suppressions/{suppression_id}/{action}", decide_v1)
    app.router.add_get("/ui/suppressions", list_ui)
    app.router.add_post("/ui/suppressions/{suppression_id}/{action}", decide_ui)


__all__ = ["LEARNER", "add_suppressions", "proposal_json"]
