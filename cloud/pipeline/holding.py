"""What this process holds: its claims on events (cloud.storage.claims, opened from the config on first use
unless given, so a service that never starts opens nothing) and, for each event it is working on now, the
verdict being made, which a repeat of that event waits for instead of making another."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from ...shared.protocol import Event, ProtocolError, Verdict
from ..config import CloudConfig
from ..storage.claims import ClaimKeeper, Claims, new_owner, open_claims
from ..storage.store import Store


class Holding:
    def __init__(self, config: CloudConfig, store: Store, claims: Claims | None = None) -> None:
        self.config = config
        self.store = store
        self._claims = claims
        self._keeper: ClaimKeeper | None = None
        self._making: dict[str, asyncio.Future[Verdict]] = {}

    def keeper(self) -> ClaimKeeper:
        """The claims held, taken and renewed; the claims opened now if they were not given."""
        if self._keeper is None:
            if self._claims is None:
                owner = new_owner(self.config.mqtt.client_id or f"{self.config.group}-cloud")
                self._claims = open_claims(self.config, owner, self.store)
            self._keeper = ClaimKeeper(self._claims, self.config.delivery.claim_lease_s)
        return self._keeper

    def working_on(self, event_id: str) -> bool:
        return event_id in self._making

    @contextmanager
    def making(self, event_id: str) -> Iterator[asyncio.Future[Verdict]]:
        """The future a repeat of `event_id` waits on while its verdict is made here; cancelled if left unset."""
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._making[event_id] = future
        try:
            yield future
        finally:
            self._making.pop(event_id, None)
            if not future.done():
                future.cancel()

    async def earlier_verdict(self, event: Event) -> Verdict | None:
        """The verdict already given for a repeated event id, waiting for it if it is being made here now.
        ProtocolError when the id is another device's event: an event id belongs to its device, on every path."""
        stored = self.store.get_event(event.event_id)
        if stored is not None and stored.get("device") != event.device:
            raise ProtocolError(f"event id {event.event_id} is already taken by another device's event; "
                                "a device must make its own event ids (UUIDv7)")
        pending = self._making.get(event.event_id)
        if pending is not None:
            await asyncio.wait([pending])
            if not pending.cancelled() and pending.exception() is None:
                return pending.result()
        return self.store.get_verdict(event.event_id)

    def close(self) -> None:
        """The claims closed, if they were opened or given."""
        if self._claims is not None:
            self._claims.close()
