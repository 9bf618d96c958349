"""Operator feedback over HTTP (cloud.teach.feedback): a person says a verdict was right, or what it should have been.

    POST /v1/verdicts/{event_id}/feedback   the operator's token only (a device token: 403)
    POST /ui/feedback/{event_id}            the same from the live page's card ("wrong?"), its session cookie

Body (JSON): {"correct": true} or {"correct": false} (alert <-> benign), or {"verdict": "alert" | "benign" |
"unknown"}, each with an optional "note" (<= 300 characters). The answer: {"verdict": the verdict now stored
and sent, "kind": "confirmed" | "corrected", "published", "copies", "offers"}. Errors are JSON like the rest of
the API: 400 (a body that says neither or both ways), 403, 404 (no verdict for that event), 415, 503 (API only).
"""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web

from ...shared.text import plain_or_as_is, shown
from ..teach.feedback import Feedback, FeedbackError
from ..webbase.access import ACCESS, COOKIE
from ..webbase.errors import error_response as _error
from .web.routes import TIMELINE

FEEDBACK = web.AppKey("feedback", Feedback)
NOTE_MAX = 300
BODY_MAX = 4096  # bytes: a note of NOTE_MAX characters, each escaped, and the two other fields
_EVENT_ID_RE = re.compile(r"^[0-9a-f-]{1,36}$")
_KEYS = {"correct", "verdict", "note"}


async def _body(request: web.Request) -> dict[str, Any]:
    """The feedback's fields, checked: FeedbackError (400, or 415 for a body that is not JSON)."""
    if request.content_type != "application/json":
        raise FeedbackError("send the feedback as JSON (Content-Type: application/json)", 415)
    raw = await request.content.read(BODY_MAX + 1)
    if len(raw) > BODY_MAX:
        raise FeedbackError(f"the body is over {BODY_MAX} bytes: send correct, verdict and/or a short note")
    try:
        body = json.loads(raw)
    except RecursionError:  # nested deeper than the parser goes: nothing a feedback body needs
        raise FeedbackError("the body is nested too deeply: send one flat JSON object") from None
    except (ValueError, UnicodeDecodeError):
        raise FeedbackError("the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise FeedbackError('the body must be a JSON object: {"correct": true} or {"verdict": "benign"}')
    unknown = sorted(set(body) - _KEYS)
    if unknown:
        raise FeedbackError(f"unknown field(s) {', '.join(shown(k) for k in unknown[:3])}; "
                            "send correct, verdict and/or note")
    correct, verdict, note = body.get("correct"), body.get("verdict"), body.get("note", "")
    if correct is not None and not isinstance(correct, bool):
        raise FeedbackError("'correct' must be true or false")
    if verdict is not None and not isinstance(verdict, str):
        raise FeedbackError("'verdict' must be a string: alert, benign or unknown")
    if not isinstance(note, str) or len(note) > NOTE_MAX:
        raise FeedbackError(f"'note' must be a string of at most {NOTE_MAX} characters")
    return {"correct": correct, "verdict": verdict, "note": plain_or_as_is(note).strip()}


async def _give(request: web.Request, by: str) -> web.Response:
    event_id = request.match_info["event_id"]
    if not _EVENT_ID_RE.match(event_id):
        return _error(400, f"{shown(event_id)} is not an event id (a UUID)")
    feedback = request.app.get(FEEDBACK)
    if feedback is None:
        return _error(503, "no cloud service runs in this process (API only): feedback cannot be sent on")
    try:
        done = feedback.give(event_id, by=by, **await _body(request))
    except FeedbackError as exc:
        return _error(exc.status, str(exc))
    timeline = request.app.get(TIMELINE)
    if timeline is not None:  # the page's card shows the verdict as it is now
        timeline.add_verdict(done.verdict)
    return web.json_response(done.as_json())


def add_feedback(app: web.Application, feedback: Feedback | None, principal_key: web.RequestKey) -> None:
    """Mount the two routes (see the module docstring). The API's middleware files the bearer token's principal
    under `principal_key`; only the operator's may give feedback."""
    if feedback is not None:
        app[FEEDBACK] = feedback

    async def post_feedback(request: web.Request) -> web.Response:
        principal = request[principal_key]
        if not principal.is_operator:
            return _error(403, f"a device token ({principal.device}) may not give feedback on verdicts; "
                               "use the operator token")
        return await _give(request, "operator")

    async def page_feedback(request: web.Request) -> web.Response:
        access = request.app.get(ACCESS)
        if access is None or not access.valid(request.cookies.get(COOKIE)):
            return _error(401, "sign in through the page link the service printed at start")
        return await _give(request, "operator (page)")

    app.router.add_post("/v1/verdicts/{event_id}/feedback", post_feedback)
    app.router.add_post("/ui/feedback/{event_id}", page_feedback)


FEEDBACK_REQUEST = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "correct": {"type": "boolean", "description": "true: the verdict was right; false: it was wrong (alert and "
                                                      "benign swap; an unknown verdict needs `verdict`)"},
        "verdict": {"type": "string", "enum": ["alert", "benign", "unknown"], "description": "the right verdict"},
        "note": {"type": "string", "maxLength": NOTE_MAX, "description": "why, in the operator's words (kept)"},
    },
    "examples": [{"verdict": "benign", "note": "the neighbour's bike, parked there all week"}, {"correct": True}],
}
FEEDBACK_ANSWER = {
    "type": "object", "required": ["verdict", "kind", "published", "copies", "offers"],
    "properties": {
        "verdict": {"$ref": "#/components/schemas/Verdict"},
        "kind": {"type": "string", "enum": ["confirmed", "corrected"]},
        "published": {"type": "boolean", "description": "sent on the device's topics now (false: no broker)"},
        "copies": {"type": "integer", "minimum": 0, "description": "cached copies of it corrected with it"},
        "offers": {"type": "integer", "minimum": 0, "description": "site offers sent again to other devices"},
    },
}


def feedback_path(errors: dict[str, Any], error: Any) -> dict[str, Any]:
    """The OpenAPI path item of POST /v1/verdicts/{event_id}/feedback (cloud.http.openapi adds it)."""
    return {"post": {
        "summary": "Say a verdict was right, or what it should have been (operator token only)",
        "description": "The verdict then stored (decided_by: operator, with who, when and the note) replaces the "
                       "old one in the cloud cache, on the device's topics (its verdict cache files it over the "
                       "old one) and in the site's offers; look-alikes get it before any model verdict.",
        "operationId": "postFeedback",
        "parameters": [{"name": "event_id", "in": "path", "required": True,
                        "schema": {"type": "string", "pattern": "^[0-9a-f-]{1,36}$"}, "description": "the event"}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": FEEDBACK_REQUEST}}},
        "responses": {
            "200": {"description": "The verdict now stored and sent.",
                    "content": {"application/json": {"schema": FEEDBACK_ANSWER}}},
            **errors,
            "404": error("No verdict (yet) for this event."),
            "415": error("Content-Type is not application/json."),
            "503": error("No service runs in this process (API only)."),
        }}}
