"""Who may open the page: whoever holds a one-time link. The link's ticket is exchanged, once, for a
session cookie (HttpOnly, SameSite=Strict), so the secret never stays in the address bar, the history or a
Referer header, and page scripts cannot read the session.

A ticket is spent by a successful sign-in only: exchanging it gives a session that stays pending (and the
ticket valid) until the browser comes back with its cookie. A load that fails on the way (the answer lost,
the cookie refused, a link previewer fetching it) leaves the link working; the first session that is used
spends the ticket and ends the other pending ones. `edgetriage cloud page-link` (POST /v1/page-link) mints
a fresh link at any time.

Tickets and sessions are kept as SHA-256 digests: a lookup by digest leaks nothing about a valid token
through its timing, and a memory dump holds nothing a browser could present.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict

from aiohttp import web

COOKIE = "edgetriage_page"
TICKET_TTL_S = 15 * 60
SESSION_TTL_S = 12 * 3600
MAX_SESSIONS = 256
MAX_TICKETS = 64


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class PageAccess:
    """Issues one-time tickets and the sessions they turn into; all in memory (a restart signs everyone
    out and prints a new link)."""

    def __init__(self, ticket_ttl_s: float = TICKET_TTL_S, session_ttl_s: float = SESSION_TTL_S) -> None:
        self.ticket_ttl_s = ticket_ttl_s
        self.session_ttl_s = session_ttl_s
        self._tickets: OrderedDict[bytes, float] = OrderedDict()  # digest -> expiry (monotonic)
        self._sessions: OrderedDict[bytes, float] = OrderedDict()
        self._pending: OrderedDict[bytes, bytes] = OrderedDict()  # session digest -> its ticket's digest

    def issue_ticket(self) -> str:
        """A new one-time ticket for a link such as /ui/?ticket=..., valid for `ticket_ttl_s`."""
        ticket = secrets.token_urlsafe(24)
        self._tickets[_digest(ticket)] = time.monotonic() + self.ticket_ttl_s
        while len(self._tickets) > MAX_TICKETS:
            self._tickets.popitem(last=False)
        return ticket

    def redeem(self, ticket: str) -> str | None:
        """A pending session token for a valid, unspent ticket, else None. The ticket stays valid until one
        of its sessions is first used (`valid`): only a sign-in that reached the page spends it."""
        key = _digest(ticket)
        expiry = self._tickets.get(key)
        if expiry is None or expiry < time.monotonic():
            self._tickets.pop(key, None)
            return None
        session = secrets.token_urlsafe(32)
        self._pending[_digest(session)] = key
        while len(self._pending) > MAX_SESSIONS:
            self._pending.popitem(last=False)
        return session

    def valid(self, session: str | None) -> bool:
        if not session:
            return False
        key = _digest(session)
        expiry = self._sessions.get(key)
        if expiry is None:
            return self._sign_in(key)
        if expiry < time.monotonic():
            del self._sessions[key]
            return False
        return True

    def _sign_in(self, key: bytes) -> bool:
        """A pending session's first use: its ticket is spent (if no other session spent it first)."""
        ticket = self._pending.pop(key, None)
        expiry = self._tickets.pop(ticket, None) if ticket is not None else None
        if expiry is None or expiry < time.monotonic():
            return False
        for other in [k for k, t in self._pending.items() if t == ticket]:
            del self._pending[other]
        self._sessions[key] = time.monotonic() + self.session_ttl_s
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return True


ACCESS = web.AppKey("page_access", PageAccess)  # the app's page access, set by the page's routes (cloud.http.web)
