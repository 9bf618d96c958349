"""The OpenAPI paths of the suppression routes (cloud.teach.suppress.api), for cloud.http.openapi."""

from __future__ import annotations

from typing import Any

STATUSES = ("proposed", "accepted", "rejected")  # as cloud.teach.suppress.store
ACTIONS = {"accept": "accepted", "reject": "rejected"}
ID_RE = r"^s-[0-9a-f]{12}$"
DEVICE_RE = r"^[a-z0-9-]{1,64}$"


def suppression_paths(errors: dict[str, Any], error: Any) -> dict[str, Any]:
    """The OpenAPI paths of the routes above (cloud.http.openapi)."""
    id_param = {"name": "suppression_id", "in": "path", "required": True,
                "schema": {"type": "string", "pattern": ID_RE}, "description": "the suppression's id"}
    item = {"type": "object", "required": ["id", "device", "camera", "label", "region", "status", "count",
                                           "evidence", "expires_ms"], "properties": {
        "id": {"type": "string"}, "device": {"type": "string"}, "camera": {"type": "string"},
        "label": {"type": "string"},
        "region": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4,
                   "description": "x1, y1, x2, y2 normalised to the frame"},
        "areas": {"type": "array", "items": {"type": "number"}, "description": "smallest, largest learned crop"},
        "looks": {"type": "integer", "description": "how many learned looks the rule compares a crop with"},
        "appearance": {"type": "string", "enum": ["embedding", "hash"]},
        "status": {"type": "string", "enum": list(STATUSES)}, "expired": {"type": "boolean"},
        "created_ms": {"type": "integer"}, "expires_ms": {"type": "integer"},
        "count": {"type": "integer", "description": "benign events alike at this place within the window"},
        "sources": {"type": "object", "additionalProperties": {"type": "integer"}},
        "evidence": {"type": "array", "items": {"type": "object", "properties": {
            "event_id": {"type": "string"}, "crop": {"type": "string", "description": "the crop's thumbnail"}}}},
        "decided_by": {"type": ["string", "null"]}, "decided_ms": {"type": ["integer", "null"]}}}
    decide = {"post": {
        "summary": "Accept (send to the device) or reject a suppression (operator token only)",
        "operationId": "decideSuppression",
        "parameters": [id_param, {"name": "action", "in": "path", "required": True,
                                  "schema": {"type": "string", "enum": list(ACTIONS)}}],
        "responses": {"200": {"description": "The suppression as decided.",
                              "content": {"application/json": {"schema": item}}}, **errors,
                      "404": error("No such suppression.")}}}
    return {
        "/v1/suppressions": {"get": {
            "summary": "Suppressions the cloud learned from benign events, with their evidence (operator token)",
            "operationId": "listSuppressions",
            "parameters": [
                {"name": "device", "in": "query", "required": False,
                 "schema": {"type": "string", "pattern": DEVICE_RE}, "description": "only this device's"},
                {"name": "status", "in": "query", "required": False,
                 "schema": {"type": "string", "enum": list(STATUSES)}, "description": "only those in this status"}],
            "responses": {"200": {"description": "Newest first.", "content": {"application/json": {
                "schema": {"type": "array", "items": item}}}}, **errors}}},
        "/v1/suppressions/{suppression_id}/{action}": decide,
    }
