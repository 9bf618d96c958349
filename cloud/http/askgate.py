"""Who may ask questions, and how many at once: questions cannot crowd out events.

POST /v1/ask (typed or spoken) is the operator's: a device token gets 403 unless [http] ask_from_devices says
devices may ask (each then about its own device only, cloud.ask). Every token (and the page's session, as one)
has at most [http] ask_per_token questions in flight; one more is a 429 saying so, before its body is read,
after TARPIT_S (a client asking again at once in a loop would otherwise keep the event loop busy with refusals).
Answering runs on the asker's own workers and the recogniser's own thread (cloud.ask, cloud.ask.voice), never
on the executor that embeds and stores events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

from ..config import HTTPConfig
from ..webbase.errors import error_response as _error

ASK_PATHS = frozenset({"/v1/ask", "/ui/ask"})
TARPIT_S = 1.0  # how long a refused question waits for its 429
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def ask_gate(http: HTTPConfig, principal_key: web.RequestKey) -> Callable[[web.Request, Handler],
                                                                          Awaitable[web.StreamResponse]]:
    """The middleware (after authentication, which files the bearer token's principal under `principal_key`)."""
    in_flight: dict[str, int] = {}

    @web.middleware
    async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method != "POST" or request.path not in ASK_PATHS:
            return await handler(request)
        principal = request.get(principal_key)
        who = "page" if principal is None else "operator" if principal.is_operator else f"device {principal.device}"
        if principal is not None and not principal.is_operator and not http.ask_from_devices:
            return _error(403, f"a device token ({principal.device}) may not ask questions ([http] "
                               "ask_from_devices = false); use the operator token or the page")
        if in_flight.get(who, 0) >= http.ask_per_token:
            await asyncio.sleep(TARPIT_S)
            answer = _error(429, f"{in_flight.get(who, 0)} questions of this token are still being answered "
                                 "([http] ask_per_token); ask again when one is done")
            answer.headers["Retry-After"] = "1"
            return answer
        in_flight[who] = in_flight.get(who, 0) + 1
        try:
            return await handler(request)
        finally:
            in_flight[who] -= 1
            if not in_flight[who]:
                del in_flight[who]

    return gate


__all__ = ["ask_gate"]
