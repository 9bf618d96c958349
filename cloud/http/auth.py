"""Who may use the HTTP API: a bearer token for operators and tools, and optionally one token per device
(which may only send its own device's events, read its verdicts and fetch model files).

Tokens are compared as SHA-256 digests with `hmac.compare_digest`, against every known token on every
request (no early exit), so neither the comparison nor the lookup tells an attacker how close a guess was.
A service started without a configured token makes up a random one: the API is then closed to everyone
but the browser page's one-time link (cloud.http.web), never open.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from ..config import API_TOKEN_ENV, HTTPConfig


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class Principal:
    """Who a request is from: the operator (any route) or one device (its own data only)."""

    device: str | None  # None: the operator

    @property
    def is_operator(self) -> bool:
        return self.device is None


class ApiAuth:
    def __init__(self, admin_token: str | None, device_tokens: dict[str, str] | None = None) -> None:
        self.generated = admin_token is None
        admin = admin_token if admin_token is not None else secrets.token_urlsafe(32)
        self._keys: list[tuple[bytes, Principal]] = [(_digest(admin), Principal(None))]
        for device, token in (device_tokens or {}).items():
            self._keys.append((_digest(token), Principal(device)))
        self._admin = admin

    @classmethod
    def from_config(cls, config: HTTPConfig) -> ApiAuth:
        """Tokens from [http] and EDGETRIAGE_API_TOKEN (which wins)."""
        return cls(config.secret_token(),
                   {device: secret.get_secret_value() for device, secret in config.device_tokens.items()})

    @property
    def admin_token(self) -> str:
        """For the process that made this (tests, the demo); never logged."""
        return self._admin

    def principal(self, authorization: str | None) -> Principal | None:
        """The principal an `Authorization: Bearer <token>` header proves, or None."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():  # schemes are case-insensitive (RFC 7235)
            return None
        presented = _digest(token.strip())
        found: Principal | None = None
        for key, principal in self._keys:
            if hmac.compare_digest(key, presented):
                found = principal
        return found

    def hint(self) -> str:
        if self.generated:
            return (f"this service made up a random token at start; set {API_TOKEN_ENV} (or [http] token) and "
                    "send it as 'Authorization: Bearer <token>'")
        return "send 'Authorization: Bearer <token>' with the token from the service's configuration"
