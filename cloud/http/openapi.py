"""The API's OpenAPI 3.1 document, served at GET /openapi.json. Message schemas are generated from the protocol's
own pydantic models (shared.protocol), so the document cannot drift from what the service accepts and sends;
the rest is written out here, next to nothing else, and checked against the running API by a schemathesis
run in the tests."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from ...shared.protocol import MAX_EVENT_BYTES, VERDICTS, Event, Verdict
from ..ask.openapi import ask_path
from ..teach.suppress.openapi import suppression_paths
from .feedback_routes import feedback_path
from .proposal_routes import proposal_paths

_REF = "#/components/schemas/{model}"
EVENT_ID = {"type": "string", "pattern": "^[0-9a-f-]{1,36}$"}
DEVICE_ID = {"type": "string", "pattern": "^[a-z0-9-]{1,64}$"}
CAMERA_ID = {"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"}
LABEL = {"type": "string", "pattern": "^[A-Za-z0-9_ .'-]{1,64}$"}
MILLIS = {"type": "integer", "minimum": 0, "maximum": (1 << 53) - 1}
EXAMPLE_CROP = (
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAA0JCgsKCA0LCgsODg0PEyAVExISEyccHhcgLikxMC4pLSwzOko+MzZGNywtQFdB"
    "RkxOUlNSMj5aYVpQYEpRUk//2wBDAQ4ODhMREyYVFSZPNS01T09PT09PT09PT09PT09PT09PT09PT09PT09PT09PT09PT09P"
    "T09PT09PT09PT09PT0//wAARCAAQABADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAA"
    "AgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6"
    "Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXG"
    "x8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREA"
    "AgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5"
    "OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPE"
    "xcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwBjvsxxnNCPvzxjFDpvxzjFCJszznNY/vPa"
    "f3Tp/c+x/vfPv92x/9k="
)  # a real 16x16 JPEG, so the example event is one the API accepts
EXAMPLE_EVENT = {
    "v": 1, "event_id": "01890a5d-ac96-774b-bcce-b302099a8057", "device": "pi-porch", "camera": "door",
    "site": "home", "captured_ms": 1690000000000, "label": "person", "score": 0.62, "uncertain": True, "track_id": 7,
    "detections": [{"label": "person", "score": 0.62, "box": [0.4, 0.1, 0.7, 0.95]}], "classes": [],
    "phash": "8f3a6b1c2d4e5f60", "phash_alg": "dct64", "reason": "score in the uncertain band",
    "crop": EXAMPLE_CROP, "crop_size": [16, 16],
}


def _error(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


ERRORS = {
    "400": _error("The request is invalid; `error` says which part and what it may be."),
    "401": _error("Missing or wrong bearer token."),
    "403": _error("The token does not cover this (a device token used for another device or an operator route)."),
}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _path(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


def _json(schema: dict[str, Any], description: str, headers: dict[str, Any] | None = None,
          links: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": schema}}}
    if headers:
        out["headers"] = headers
    if links:
        out["links"] = links
    return out


def _links_from_event_id() -> dict[str, Any]:
    """What a client can do with the event_id an answer carries."""
    param = {"event_id": "$response.body#/event_id"}
    return {name: {"operationId": name, "parameters": param}
            for name in ("getEvent", "getVerdict", "getThumbnail", "getCrop")}


def _jpeg(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"image/jpeg": {"schema": {"type": "string", "format": "binary"}}}}


def _schemas() -> dict[str, Any]:
    """Component schemas: the protocol's models (their $defs lifted into components) and the API's own."""
    out: dict[str, Any] = {}
    verdict = Verdict.model_json_schema(by_alias=True, ref_template=_REF, mode="serialization")
    event = Event.model_json_schema(by_alias=True, ref_template=_REF, mode="validation")
    for schema in (verdict, event):
        out.update(schema.pop("$defs", {}))
    event["properties"]["crop"] = {"type": "string", "contentEncoding": "base64", "contentMediaType": "image/jpeg",
                                   "description": "the crop, a JPEG (it must start FF D8 FF), base64-encoded"}
    event["examples"] = [EXAMPLE_EVENT]
    event["description"] = ("One escalated track, as on MQTT but JSON with the crop in base64. The same limits "
                            f"apply: at most {MAX_EVENT_BYTES} bytes once encoded as MessagePack.")
    out["Verdict"] = verdict
    out["EventIn"] = event
    out["Error"] = {"type": "object", "required": ["error", "status"],
                    "properties": {"error": {"type": "string"}, "status": {"type": "integer"}}}
    out["EventRecord"] = {
        "type": "object",
        "description": "A stored event (its fields as received, without the crop) and its verdict.",
        "required": ["event_id", "device", "camera", "label", "received_ms", "crop_bytes", "verdict"],
        "properties": {"event_id": EVENT_ID, "device": DEVICE_ID, "camera": CAMERA_ID, "label": {"type": "string"},
                       "received_ms": {"type": "integer"},
                       "crop_bytes": {"type": "integer", "minimum": 0,
                                      "description": "0 once retention deleted the crop"},
                       "verdict": {"oneOf": [{"$ref": "#/components/schemas/Verdict"}, {"type": "null"}]}},
    }
    out["Accepted"] = {"type": "object", "required": ["event_id", "status", "verdict"],
                       "properties": {"event_id": EVENT_ID, "status": {"enum": ["accepted", "waiting"]},
                                      "verdict": {"type": "string", "description": "where the verdict will be"}}}
    out["Stats"] = {"type": "object", "required": ["figures", "service", "scheduler", "budgets", "analyzer"],
                    "properties": {"figures": {"type": "object", "required": [
                        "alpha", "L_light_ms", "L_llm_ms", "L_sched_ms", "L_total_ms", "measured_total_p50_ms", "U",
                        "hit_rate", "wrong_reuse_rate", "routing"], "properties": {"routing": {
                            "type": "object", "description": "per back-end L_llm, batch time and expected answer "
                            "time; routes by reason; first answers, provisional share, final agreement; L_total "
                            "beside t_max_ms (docs/operator/routing.md)"}}}}}
    out["Health"] = {"type": "object", "required": ["status", "mqtt_connected"],
                     "properties": {"status": {"const": "ok"}, "mqtt_connected": {"type": "boolean"},
                                    "mqtt_subscribed": {"type": "boolean", "description":
                                                        "the broker granted the intake's subscriptions: "
                                                        "events published now reach the service"},
                                    "mqtt_error": {"type": "string"},
                                    "site_claims": {"type": "array", "items": {"type": "string"}, "description":
                                                    "what devices announce that [[sites]] says otherwise "
                                                    "(cloud.reuse.sites): said, not followed; not a failure"}}}
    return out


@cache
def _document() -> dict[str, Any]:
    event_path = _path("event_id", EVENT_ID, "the event's id (a UUIDv7)")
    next_link = {"Link": {"description": 'rel="next": the URL of the next page, when this one is full',
                          "schema": {"type": "string"}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "edgetriage cloud API", "version": "1",
                 "description": "Event intake for devices without MQTT, events and verdicts, the service's "
                                "figures, model files. Every /v1 route needs a bearer token."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": _schemas(),
        },
        "security": [{"bearer": []}],
        "paths": {
            "/healthz": {"get": {
                "summary": "Liveness and broker connection", "security": [], "operationId": "healthz",
                "responses": {"200": _json({"$ref": "#/components/schemas/Health"}, "The service is up.")}}},
            "/openapi.json": {"get": {
                "summary": "This document", "security": [], "operationId": "openapi",
                "responses": {"200": _json({"type": "object"}, "The OpenAPI document.")}}},
            "/v1/events": {
                "post": {
                    "summary": "Send an event (devices without MQTT)", "operationId": "postEvent",
                    "parameters": [_query("wait", {"type": "boolean"},
                                          "true (default): answer the verdict; false: 202 at once")],
                    "requestBody": {"required": True, "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/EventIn"}},
                        "application/msgpack": {"schema": {"type": "string", "format": "binary"}}}},
                    "responses": {
                        "200": _json({"$ref": "#/components/schemas/Verdict"}, "The verdict.",
                                     links=_links_from_event_id()),
                        "202": _json({"$ref": "#/components/schemas/Accepted"}, "Accepted; the verdict follows.",
                                     links=_links_from_event_id()),
                        **ERRORS,
                        "413": _error("The body is over [http] max_body_bytes."),
                        "415": _error("Content-Type is neither application/json nor application/msgpack."),
                        "503": _error("The service is stopping or not running here; send it again later."),
                    }},
                "get": {
                    "summary": "Events, newest first", "operationId": "listEvents",
                    "parameters": [
                        _query("device", DEVICE_ID, "only this device's events"),
                        _query("camera", CAMERA_ID, "only this camera's events"),
                        _query("label", LABEL, "only events with this label"),
                        _query("verdict", {"type": "string", "enum": list(VERDICTS)}, "only this verdict"),
                        _query("source", {"type": "string", "enum": ["llm", "cloud_cache", "fallback"]},
                               "only verdicts from this source"),
                        _query("since_ms", MILLIS, "received at or after (epoch ms)"),
                        _query("until_ms", MILLIS, "received before (epoch ms)"),
                        _query("before", EVENT_ID, "the event_id that ends the previous page"),
                        _query("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "page size (50)"),
                    ],
                    "responses": {"200": _json({"type": "array", "items": {"$ref": "#/components/schemas/EventRecord"}},
                                               "A page of events.", next_link), **ERRORS}}},
            "/v1/events/{event_id}": {"get": {
                "summary": "One event and its verdict", "operationId": "getEvent", "parameters": [event_path],
                "responses": {"200": _json({"$ref": "#/components/schemas/EventRecord"}, "The event."), **ERRORS,
                              "404": _error("No such event.")}}},
            "/v1/events/{event_id}/thumbnail": {"get": {
                "summary": "The event's crop, scaled to fit 192 px", "operationId": "getThumbnail",
                "parameters": [event_path],
                "responses": {"200": _jpeg("The thumbnail."), **ERRORS,
                              "404": _error("No such event, or its crop was deleted by retention.")}}},
            "/v1/events/{event_id}/crop": {"get": {
                "summary": "The event's crop as the device sent it", "operationId": "getCrop",
                "parameters": [event_path],
                "responses": {"200": _jpeg("The crop."), **ERRORS,
                              "404": _error("No such event, or its crop was deleted by retention.")}}},
            "/v1/verdicts/{event_id}": {"get": {
                "summary": "The verdict for an event, as published on MQTT", "operationId": "getVerdict",
                "parameters": [event_path],
                "responses": {"200": _json({"$ref": "#/components/schemas/Verdict"}, "The verdict."), **ERRORS,
                              "404": _error("No verdict (yet) for this event.")}}},
            "/v1/stats": {"get": {
                "summary": "The service's figures (alpha, latencies, L_total vs measured, U, hit and wrong-reuse "
                           "rates), counters and budgets", "operationId": "getStats",
                "responses": {"200": _json({"$ref": "#/components/schemas/Stats"}, "The figures."), **ERRORS,
                              "503": _error("No service runs in this process.")}}},
            "/v1/models/{sha256}": {"get": {
                "summary": "A model file, by the sha256 a device config announced", "operationId": "getModel",
                "parameters": [_path("sha256", {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "the file's sha256")],
                "responses": {"200": {"description": "The file.", "content": {"application/octet-stream": {
                    "schema": {"type": "string", "format": "binary"}}}}, **ERRORS,
                    "404": _error("No model with that sha256 is served here.")}}},
            "/v1/ask": ask_path(ERRORS, _error),
            **suppression_paths(ERRORS, _error),
            "/v1/verdicts/{event_id}/feedback": feedback_path(ERRORS, _error),
            **proposal_paths(ERRORS, _error),
            "/v1/page-link": {"post": {
                "summary": "A fresh one-time link to the live page (operator token only)", "operationId": "pageLink",
                "responses": {"200": _json({"type": "object", "required": ["path", "link", "expires_s"], "properties": {
                    "path": {"type": "string", "description": "/ui/?ticket=...; join it to the API's address"},
                    "link": {"type": "string", "description": "the path on the address this request came to"},
                    "expires_s": {"type": "integer", "description": "unused, it stops working after this"}}},
                    "A link that works once: spent by the sign-in that reaches the page."), **ERRORS}}},
        },
    }


def openapi_document() -> dict[str, Any]:
    """A fresh copy of the document (callers may change theirs)."""
    return copy.deepcopy(_document())
