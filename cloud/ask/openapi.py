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
    "type": "object", "required": ["answer", "reading", "route", "events", "latency_ms", "cached", "partial"],
    "properties": {
        "answer": {"type": "string", "description": "the answer in words; ends \"I could not use: '...'\" when "
                                                    "words of the question were read by no rule"},
        "reading": {"type": "string", "description": "how the question was read, in one line: what was counted "
                                                     "(people, visits, events, alerts), where, when (clock times in "
                                                     "the camera's zone, or the site's, saying which) and the filters",
                    "examples": ["People on porch, today 14:30–16:00 (Europe/Berlin, the camera's zone)"]},
        "unused": {"type": "array", "items": {"type": "string"},
                   "description": "the question's words no rule could use (named in the answer, never dropped)"},
        "route": {"type": "string", "enum": list(ROUTES),
                  "description": "cache, rules (a keyword rule's query), fast (the classifier chose a query), llm"},
        "events": {"type": "array", "items": {"type": "string"}, "description": "ids of the events it is based on"},
        "latency_ms": {"type": "number"},
        "cached": {"type": "boolean"},
        "partial": {"type": "boolean", "description": "the LLM path would have broken t_max_ms: the fast "
                                                      "path's answer instead"},
        "value": {"description": "count (integer: people, visits or events as asked), time (local, "
                                 "YYYY-MM-DD HH:MM), yes/no (a comparison's too; \"was it quiet?\": whether "
                                 "any was seen), event ids, the difference (\"how many more ... than\"), the "
                                 "group(s) with the most (\"which camera saw the most\"), or group -> count "
                                 "(\"per camera\")"},
        "counts": {"type": "array", "items": {"type": "integer"}, "description": "a comparison: both counts"},
        "difference": {"type": "integer", "description": "\"how many more / fewer ... than ...\": the first "
                                                         "count less the second (fewer: the second less the first)"},
        "per": {"type": "string", "enum": ["camera", "zone", "day", "hour"],
                "description": "a superlative or a split: the group each count is of"},
        "group_counts": {"type": "object", "additionalProperties": {"type": "integer"},
                         "description": "a superlative or a split: each group's count"},
        "transcript": {"type": "string", "description": "a spoken question only: the words heard, which were "
                                                        "answered (so the person sees what was understood)"},
        "hint": {"type": "string", "description": "a plain word of the question is a camera or zone name only a "
                                                  "device sent, read as no name: quote it, or name it in [ask]"},
        "time_hint": {"type": "string", "description": "words that look like a time (\"last spring\", \"this summer\") "
                                                       "but name no range read here: the answer is over every "
                                                       "stored event"},
    },
}


def ask_path(errors: dict[str, Any], error: Any) -> dict[str, Any]:
    """The path item, given the document's shared error responses and its error-response maker."""
    return {"post": {
        "summary": "Ask a question in words about the events (cache, rules, classifier, then the LLM)",
        "operationId": "ask",
        "description": "The question in words (application/json), or spoken: a recording as the body (audio/wav, "
                       "audio/webm and audio/ogg as a browser's MediaRecorder writes them, audio/mpeg, audio/flac) "
                       "with camera, device and since as query parameters. The recording is transcribed by "
                       "[ask.voice] backend (pocketsphinx on the CPU, or an OpenAI-compatible "
                       "/v1/audio/transcriptions) and answered as its words are; the answer has `transcript`.",
        "parameters": [
            {"name": "camera", "in": "query", "schema": ASK_REQUEST["properties"]["camera"],
             "description": "with audio only: only this camera"},
            {"name": "device", "in": "query", "schema": ASK_REQUEST["properties"]["device"],
             "description": "with audio only: only this device"},
            {"name": "since", "in": "query", "schema": {"type": "string"},
             "description": "with audio only: epoch ms or ISO 8601 with offset"}],
        "requestBody": {"required": True, "content": {
            "application/json": {"schema": ASK_REQUEST},
            "audio/*": {"schema": {"type": "string", "format": "binary",
                                   "description": "at most [ask.voice] max_audio_bytes (2 MiB) and max_audio_s "
                                                  "(30 s)"}}}},
        "responses": {
            "200": {"description": "The answer, its route and the events it cites.",
                    "content": {"application/json": {"schema": ASK_ANSWER}}},
            **errors,
            "404": error("No events from the camera given, or no camera, zone, device or label has a name the "
                         "question quotes (\"porch\")."),
            "413": error("The recording is over [ask.voice] max_audio_bytes."),
            "415": error("Content-Type is neither application/json nor audio this service reads."),
            "502": error("The transcription server ([ask.voice] backend = \"openai\") failed or is unreachable."),
        }}}
