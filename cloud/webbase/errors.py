"""The one error answer of every HTTP route: a JSON body with the message and the status, so a client reads
`error` the same way from the API, the page's routes, questions and suppressions."""

from __future__ import annotations

from aiohttp import web


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """`{"error": message, "status": status}` with that status (and any headers, e.g. Retry-After)."""
    return web.json_response({"error": message, "status": status}, status=status, headers=headers)
