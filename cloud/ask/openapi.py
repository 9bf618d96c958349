"""POST /v1/ask in the API's OpenAPI document (cloud.http.openapi adds it to its paths)."""

from __future__ import annotations

from typing import Any

from ...shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from .router import ROUTES

ASK_REQUEST = {
    "type": "object", "required": ["question"], "additionalProperties": False,
    "properties": {
        "question": {"type": "string", "minLength": 1, "maxLength": 4000,
                     "description": "in words; at most [ask] max_question_chars (500) characters. Cameras and "
                                    "zones the operator named in [ask] are read as words; any other name is "
                                    "matched in quotes: camera \"porch\"",
                     "examples": ["How many people came to the porch today?"]},
        "camera": {"type": "string", "pattern": CAMERA_ID_RE.pattern, "description": "only this camera"},
        "device": {"type": "string", "pattern": DEVICE_ID_RE.pattern, "description": "only this device"},
        "since": {"oneOf": [{"type": "integer", "minimum": 0, "maximum": (1 << 53) - 1},
                            {"type": "string", "format": "date-time"}],
                  "description": "only events captured at or after this (epoch ms, or ISO 8601 with offset)"},
    },
}
ASK_ANSWER = {
    "type": "object", "required": ["answer", "route", "events", "latency_ms", "cached", "partial"],
    "properties": {
        "answer": {"type": "string"},
        "route": {"type": "string", "enum": list(ROUTES),
                  "description": "cache, rules (a keyword rule's query), fast (the classifier chose a query), llm"},
        "events": {"type": "array", "items": {"type": "string"}, "description": "ids of the events it is based on"},
        "latency_ms": {"type": "number"},
        "cached": {"type": "boolean"},
        "partial": {"type": "boolean", "description": "the LLM path would have broken t_max_ms: the fast "
                                                      "path's answer instead"},
        "value": {"description": "count (integer), time (local, YYYY-MM-DD HH:MM), yes/no, or event ids"},
        "hint": {"type": "string", "description": "a plain word of the question is a camera or zone name only a "
                                                  "device sent, read as no name: quote it, or name it in [ask]"},
    },
}


def ask_path(errors: dict[str, Any], error: Any) -> dict[str, Any]:
    """The path item, given the document's shared error responses and its error-response maker."""
    return {"post": {
        "summary": "Ask a question in words about the events (cache, rules, classifier, then the LLM)",
        "operationId": "ask",
        "requestBody": {"required": True, "content": {"application/json": {"schema": ASK_REQUEST}}},
        "responses": {
            "200": {"description": "The answer, its route and the events it cites.",
                    "content": {"application/json": {"schema": ASK_ANSWER}}},
            **errors,
            "404": error("No events from the camera given, or no camera, zone, device or label has a name the "
                         "question quotes (\"porch\")."),
            "415": error("Content-Type is not application/json."),
        }}}
