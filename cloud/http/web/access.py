"""Who may open the page: whoever holds a one-time link. The link's ticket is exchanged, once, for a
session cookie (HttpOnly, SameSite=Strict), so the secret never stays in the address bar, the history or a
Referer header, and page scripts cannot read the session.

Tickets and sessions are kept as SHA-256 digests: a lookup by digest leaks nothing about a valid token
through its timing, and a memory dump holds nothing a browser could present.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict

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

    def issue_ticket(self) -> str:
        """A new one-time ticket for a link such as /ui/?ticket=..., valid for `ticket_ttl_s`."""
        ticket = secrets.token_urlsafe(24)
        self._tickets[_digest(ticket)] = time.monotonic() + self.ticket_ttl_s
        while len(self._tickets) > MAX_TICKETS:
            self._tickets.popitem(last=False)
        return ticket

    def redeem(self, ticket: str) -> str | None:
        """The session token for a valid, unused ticket (which is used up by this call), else None."""
        expiry = self._tickets.pop(_digest(ticket), None)
        if expiry is None or expiry < time.monotonic():
            return None
        session = secrets.token_urlsafe(32)
        self._sessions[_digest(session)] = time.monotonic() + self.session_ttl_s
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def valid(self, session: str | None) -> bool:
        if not session:
            return False
        key = _digest(session)
        expiry = self._sessions.get(key)
        if expiry is None:
            return False
        if expiry < time.monotonic():
            del self._sessions[key]
            return False
        return True
