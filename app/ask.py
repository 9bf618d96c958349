"""`edgetriage ask "QUESTION"`: ask the cloud API about the events, in words; `edgetriage ask --audio FILE`:
the question spoken in a recording (WAV, WebM/Opus, OGG), which the service transcribes and answers.

The API's address and token come from the environment, as for the service: EDGETRIAGE_API_URL (default
http://127.0.0.1:8080) and EDGETRIAGE_API_TOKEN. Standard library only, so it runs wherever edgetriage is
installed, device included."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

API_URL_ENV = "EDGETRIAGE_API_URL"
API_TOKEN_ENV = "EDGETRIAGE_API_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8080"
AUDIO_TYPES = {".wav": "audio/wav", ".wave": "audio/wav", ".webm": "audio/webm", ".ogg": "audio/ogg",
               ".oga": "audio/ogg", ".opus": "audio/ogg", ".mp3": "audio/mpeg", ".flac": "audio/flac",
               ".m4a": "audio/mp4"}


class AskFailed(RuntimeError):
    """The question could not be asked or was refused; the message says why."""


def ask(question: str, *, url: str, token: str, camera: str | None = None, device: str | None = None,
        since: str | None = None, timeout_s: float = 120.0) -> dict:
    body: dict[str, object] = {"question": question}
    for name, value in (("camera", camera), ("device", device)):
        if value is not None:
            body[name] = value
    if since is not None:
        body["since"] = int(since) if since.isdigit() else since
    return call_api(url, "/v1/ask", token, json.dumps(body).encode(), timeout_s, AskFailed, "the question")


def ask_audio(path: Path, *, url: str, token: str, camera: str | None = None, device: str | None = None,
              since: str | None = None, timeout_s: float = 120.0) -> dict:
    """The answer to the question spoken in the recording at `path` (its "transcript": the words heard)."""
    content_type = AUDIO_TYPES.get(path.suffix.lower())
    if content_type is None:
        raise AskFailed(f"{path}: not a recording this command sends (the name must end in "
                        f"{', '.join(sorted(AUDIO_TYPES))})")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AskFailed(f"cannot read {path}: {exc.strerror or exc}") from None
    query = {k: v for k, v in (("camera", camera), ("device", device), ("since", since)) if v is not None}
    where = "/v1/ask" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    return call_api(url, where, token, data, timeout_s, AskFailed, "the recording", content_type=content_type)


def call_api(url: str, path: str, token: str, body: bytes, timeout_s: float, failed: type[Exception],
             what: str, content_type: str = "application/json") -> Any:
    """POST `body` (JSON, or `content_type`) to the API's `path` with the token; its JSON answer, or `failed`
    saying why not in one line (`what` the API refused, an unreachable address, an answer that is no JSON)."""
    request = urllib.request.Request(f"{url.rstrip('/')}{path}", data=body, method="POST",
                                     headers={"Content-Type": content_type,
                                              "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - the user's API URL
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error") or exc.reason
        except (ValueError, AttributeError):
            message = exc.reason
        raise failed(f"the API refused {what} (HTTP {exc.code}): {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise failed(f"cannot reach the API at {url} ({reason}); set {API_URL_ENV} to the service's "
                     "address, e.g. http://127.0.0.1:8080") from None
    except ValueError:
        raise failed(f"the API at {url} did not answer JSON; is {API_URL_ENV} the edgetriage API?") from None


def cmd_ask(args: argparse.Namespace) -> int:
    url = os.environ.get(API_URL_ENV) or DEFAULT_URL
    token = os.environ.get(API_TOKEN_ENV)
    if not token:
        print(f"edgetriage: error: set {API_TOKEN_ENV} to the API token (the operator's, or a device's)",
              file=sys.stderr)
        return 2
    if (args.question is None) == (args.audio is None):
        print("edgetriage: error: give a question in words, or --audio FILE (a recording of one), not both",
              file=sys.stderr)
        return 2
    where = {"url": url, "token": token, "camera": args.camera, "device": args.device, "since": args.since}
    try:
        if args.audio is not None:
            result = ask_audio(Path(args.audio), **where)
        else:
            result = ask(args.question, **where)
    except AskFailed as exc:
        print(f"edgetriage: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result))
        return 0
    if "transcript" in result:
        print(f"heard: {result['transcript']}")
    if result.get("reading"):
        print(f"read as: {result['reading']}")
    print(result["answer"])
    marks = [f"route {result['route']}", f"{result['latency_ms']:.0f} ms"]
    if result.get("cached"):
        marks.append("cached")
    if result.get("partial"):
        marks.append("partial")
    print(f"({', '.join(marks)})")
    if result.get("hint"):
        print(f"note: {result['hint']}")
    for event_id in result["events"][:20]:
        print(f"  {url.rstrip('/')}/v1/events/{event_id}")
    if len(result["events"]) > 20:
        print(f"  ... and {len(result['events']) - 20} more")
    return 0


def add_parser(sub) -> None:
    ask_cmd = sub.add_parser(
        "ask", help=f"ask the cloud API a question about the events, in words (${API_URL_ENV}, ${API_TOKEN_ENV})",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(f"Asks the cloud service a question about the stored events and prints the "
                                  f"answer with the events it cites. The API comes from ${API_URL_ENV} (default "
                                  f"{DEFAULT_URL}), the token from ${API_TOKEN_ENV} (the cloud's [http] token). "
                                  "Works from the device too: standard library only.", 100),
        epilog='example:\n  EDGETRIAGE_API_TOKEN=... edgetriage ask "was anyone at the door after 5 pm?" --camera door'
               '\n  EDGETRIAGE_API_TOKEN=... edgetriage ask --audio question.wav')
    ask_cmd.add_argument("question", nargs="?", help='e.g. "How many people came to the porch today?"')
    ask_cmd.add_argument("--audio", metavar="FILE", help="ask the question spoken in this recording instead "
                         "(WAV, WebM/Opus, OGG, MP3, FLAC); the answer shows what was heard")
    ask_cmd.add_argument("--camera", help="only this camera (default: all)")
    ask_cmd.add_argument("--device", help="only this device (default: all)")
    ask_cmd.add_argument("--since", help="only events captured since: epoch ms or ISO 8601 with offset "
                         "(default: none)")
    ask_cmd.add_argument("--json", action="store_true", help="print the API's JSON answer instead of words")
    ask_cmd.set_defaults(func=cmd_ask)
