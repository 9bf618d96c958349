"""The page's HTTP side: the static page, the one-time link exchange, the live stream (server-sent events),
thumbnails and a JSON snapshot. Mounted under /ui/ of the cloud API by `add_page`.

    GET /ui/?ticket=T     exchange a one-time ticket for a session cookie, then redirect to /ui/
    GET /ui/              the page (session cookie required)
    GET /ui/static/NAME   its script and style (public: nothing secret in them)
    GET /ui/stream        text/event-stream: `entry` events (id = change sequence) and `stats` events
    GET /ui/thumbs/ID.jpg an event's crop
    GET /ui/state         the same data as one JSON document (entries oldest change first, figures)

Every page request is answered by the event loop from memory or one indexed SQLite read; nothing here
waits on the service or the model.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from importlib import resources
from typing import Any

from aiohttp import web

from ....shared.text import shown
from ...ops.observed import ObservedService
from ...storage.store import Store
from ...webbase.access import ACCESS, COOKIE, PageAccess
from ...webbase.errors import error_response
from .timeline import Timeline

log = logging.getLogger("edgetriage.cloud.web")

TIMELINE = web.AppKey("page_timeline", Timeline)
PAGE_STORE = web.AppKey("page_store", Store)
HEARTBEAT_S = 15.0  # a comment line this often keeps proxies from closing an idle stream
RETRY_MS = 2000  # how soon a browser reconnects a dropped stream
STATIC = {"dom.js": "text/javascript", "app.js": "text/javascript", "ask.js": "text/javascript",
          "suppress.js": "text/javascript", "feedback.js": "text/javascript", "thresholds.js": "text/javascript",
          "style.css": "text/css",
          "index.html": "text/html"}
_ENTRY_ID_RE = re.compile(r"^[0-9a-z~_-]{1,200}$")
_SECURITY_HEADERS = {
    # everything the page needs comes from this server; no inline script, no framing
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                               "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _static(name: str) -> bytes:
    return (resources.files("edgetriage.cloud.http.web") / "static" / name).read_bytes()


def _html(status: int, title: str, message: str) -> web.Response:
    body = (f"<!doctype html><meta charset=utf-8><title>{title}</title>"
            f"<body><h1>{title}</h1><p>{message}</p>")
    return web.Response(status=status, text=body, content_type="text/html", headers=_SECURITY_HEADERS)


def _signed_in(request: web.Request) -> bool:
    return request.app[ACCESS].valid(request.cookies.get(COOKIE))


def _denied() -> web.Response:
    return error_response(401, "sign in through the page link the service printed at start "
                               "(it looks like /ui/?ticket=...)")


async def _to_index(request: web.Request) -> web.StreamResponse:
    raise web.HTTPPermanentRedirect("/ui/" + (f"?{request.query_string}" if request.query_string else ""))


async def index(request: web.Request) -> web.StreamResponse:
    access = request.app[ACCESS]
    ticket = request.query.get("ticket")
    if ticket:
        session = access.redeem(ticket)
        if session is None:
            if _signed_in(request):
                raise web.HTTPSeeOther("./")
            return _html(403, "This page link is used up",
                         "A page link works once, for a few minutes. Get a fresh one with "
                         "<code>edgetriage cloud page-link</code> (it needs the API token).")
        response = web.HTTPSeeOther("./")
        response.set_cookie(COOKIE, session, max_age=int(access.session_ttl_s), path="/ui/", httponly=True,
                            samesite="Strict", secure=request.secure)
        raise response
    if not _signed_in(request):
        return _html(401, "Sign in with the page link",
                     "Open the one-time link the service printed when it started (…/ui/?ticket=…).")
    return web.Response(body=_static("index.html"), content_type="text/html",
                        headers={**_SECURITY_HEADERS, "Cache-Control": "no-store"})


async def static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC or name == "index.html":
        return error_response(404, f"no such file: {name}")
    return web.Response(body=_static(name), content_type=STATIC[name],
                        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})


async def thumb(request: web.Request) -> web.Response:
    if not _signed_in(request):
        return _denied()
    entry_id = request.match_info["entry_id"]
    if not _ENTRY_ID_RE.match(entry_id):
        return error_response(400, f"{shown(entry_id)} is not an entry id")
    jpeg = request.app[TIMELINE].thumb(entry_id)
    if jpeg is None:
        jpeg = request.app[PAGE_STORE].get_crop(entry_id)
    if jpeg is None:
        return error_response(404, f"no thumbnail for {entry_id!r}")
    return web.Response(body=jpeg, content_type="image/jpeg",
                        headers={"Cache-Control": "private, max-age=86400", "X-Content-Type-Options": "nosniff"})


async def state(request: web.Request) -> web.Response:
    if not _signed_in(request):
        return _denied()
    timeline = request.app[TIMELINE]
    body = {"entries": [e.as_json() for e in timeline.entries()], "stats": json.loads(timeline.stats_message(True))}
    return web.json_response(body)


def _sse(kind: str, data: str, seq: int | None = None) -> bytes:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {kind}\ndata: {data}\n\n".encode()


async def stream(request: web.Request) -> web.StreamResponse:
    """Replay what the browser missed (after its Last-Event-ID), then every change as it happens."""
    if not _signed_in(request):
        return _denied()
    timeline = request.app[TIMELINE]
    raw = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    after = int(raw) if raw.isdigit() else 0
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    listener = timeline.listen()  # before the backlog, so a change made meanwhile is not lost
    sent = after
    try:
        await response.write(f"retry: {RETRY_MS}\n\n".encode())
        for entry in timeline.entries(after):
            await response.write(_sse("entry", json.dumps(entry.as_json(), separators=(",", ":")), entry.seq))
            sent = max(sent, entry.seq)
        await response.write(_sse("stats", timeline.stats_message(full_history=True)))
        while True:
            try:
                item = await asyncio.wait_for(listener.queue.get(), HEARTBEAT_S)
            except TimeoutError:
                await response.write(b": keep-alive\n\n")
                continue
            if item is None:
                break  # the server is stopping, or this page fell behind and will reconnect
            seq, kind, data = item
            if seq is not None and seq <= sent:
                continue  # already in the backlog
            await response.write(_sse(kind, data, seq))
    except ConnectionError:
        pass  # the page was closed
    finally:
        timeline.forget(listener)
    return response


def service_status(service: ObservedService | None) -> dict[str, Any]:
    """The live gauges: queue depth, overload and capacity, the broker connection."""
    if service is None:
        return {}
    out: dict[str, Any] = {"mqtt_connected": service.publisher.connected, "queue_depth": service.pending,
                           "analyzer": service.backend.name, "received": service.stats.received,
                           "rejected": service.stats.rejected, "overloaded": service.overloaded,
                           **service.scheduler.load_now().figures(), "site_claims": service.sites.claims()}
    return out


def add_page(app: web.Application, store: Store, service: ObservedService | None, *,
             timeline: Timeline | None = None, access: PageAccess | None = None, backfill: int = 100) -> Timeline:
    """Mount the page under /ui/ and feed it from `service` (its event and verdict listeners). Returns the
    timeline, to which a device-side feed in the same process may post. The last `backfill` stored events
    are shown at once, so a restarted service does not open on an empty page."""
    timeline = timeline or Timeline(status=lambda: service_status(service),
                                    cloud_figures=service.figures.compute if service is not None else None)
    app[TIMELINE] = timeline
    if access is None:
        http = service.config.http if service is not None else None  # [http] login_ttl_s, session_ttl_s
        access = PageAccess(http.login_ttl_s, http.session_ttl_s) if http is not None else PageAccess()
    app[ACCESS] = access
    app[PAGE_STORE] = store
    for doc in reversed(store.list_events(limit=backfill)) if backfill else ():
        timeline.add_stored(doc)
    if service is not None:
        service.event_listeners.append(timeline.add_event)
        service.verdict_listeners.append(timeline.add_verdict)

    async def on_startup(_: web.Application) -> None:
        timeline.start()

    async def on_shutdown(_: web.Application) -> None:
        await timeline.close()  # ends open streams, so stopping does not wait for browsers

    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    router = app.router
    router.add_get("/ui", _to_index)
    router.add_get("/ui/", index)
    router.add_get("/ui/static/{name}", static)
    router.add_get("/ui/stream", stream)
    router.add_get("/ui/state", state)
    router.add_get(r"/ui/thumbs/{entry_id}.jpg", thumb)
    return timeline


def page_link(app: web.Application, base_url: str) -> str:
    """A fresh one-time link to the page, e.g. for the service to print at start."""
    return f"{base_url.rstrip('/')}/ui/?ticket={app[ACCESS].issue_ticket()}"


async def post_page_link(request: web.Request) -> web.Response:
    """POST /v1/page-link (the operator's token; the API's middleware checks it): a fresh one-time link."""
    access = request.app[ACCESS]
    path = f"/ui/?ticket={access.issue_ticket()}"
    return web.json_response({"path": path, "link": f"{request.url.origin()}{path}",
                              "expires_s": int(access.ticket_ttl_s)})
