"""The service's side of the broker once it runs: what it publishes (each verdict in its forms, a site's
verdict offered to the site's other devices, the retained load report) and the connection's state as the
observers read it (`connected`, `subscribed`, `error`). The intake receives on the same link
(cloud.broker.intake).

A verdict's two forms (shared.verdict_forms) have different readers: the device's MessagePack on `answers` always
goes (the device's outbox waits for it); the subscribers' JSON on `verdicts` goes only where someone reads it.
The broker says so: an MQTT 5 PUBACK "No matching subscribers" (0x10) for a `verdicts` topic (shared.mqtt,
`MQTTLink.unread`) keeps that device's JSON from being encoded and sent for UNREAD_S; the first verdict after
that asks again. A subscriber that comes meanwhile misses at most UNREAD_S of JSON verdicts (home automation
subscribes once, at its start). Each hit's JSON cost the loop a pydantic encoding and paho a publish, a
PUBACK and the broker's work: bench/cloud.py `p5_ratio`. Where both forms go, they are made from one encoding
(shared.verdict_forms.Forms).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ...shared.mqtt import Incoming, MQTTLink, shared_subscription
from ...shared.protocol import Verdict
from ...shared.topics import Topics
from ...shared.verdict_forms import Forms, encode_device_verdict
from ..config import CloudConfig
from ..counts.servicestats import ServiceStats
from ..scheduling.capacity import LoadState

UNREAD_S = 1.0  # how long a device's `verdicts` topic the broker found unread goes without the JSON form
RECENT_MIDS = 1024  # `verdicts` publishes remembered until their PUBACK can say nobody read them


def events_link(config: CloudConfig, topics: Topics, on_message: Callable[[Incoming], None]) -> MQTTLink:
    """The service's one broker connection (not started): subscribed to every device's events, shared among the
    group's workers where `delivery.shared`, each message acknowledged by hand once it is answered."""
    delivery = config.delivery
    link = MQTTLink(config.mqtt, config.mqtt.client_id or f"{config.group}-cloud", on_message=on_message,
                    manual_ack=True, receive_maximum=delivery.receive_maximum)
    events = topics.all_events()
    link.subscribe(shared_subscription(config.group, events) if delivery.shared else events, qos=1)
    return link


class Publisher:
    """One service's publishing; `link` is None until the service starts and after it stops."""

    def __init__(self, topics: Topics, stats: ServiceStats) -> None:
        self.topics = topics
        self.stats = stats
        self.link: MQTTLink | None = None
        self._public: dict[int, str] = {}  # mid -> device, of recent `verdicts` publishes (this loop's own)
        self._unread_until: dict[str, float] = {}  # device -> until when nobody reads its `verdicts` (monotonic)

    @property
    def connected(self) -> bool:
        return self.link is not None and self.link.connected.is_set()

    @property
    def subscribed(self) -> bool:
        """The broker granted the intake's subscriptions on this connection: events published now reach us."""
        return self.link is not None and self.link.subscribed.is_set()

    @property
    def error(self) -> str:
        if self.link is None:
            return ""
        if self.link.refused_subscriptions:
            return f"the broker refused the subscription to {', '.join(self.link.refused_subscriptions)}"
        return self.link.last_error

    async def wait_connected(self, timeout: float) -> bool:
        """Connected and subscribed (SUBACK; before it the broker drops what devices publish) within `timeout`."""
        link = self.link
        if link is None:
            return False
        deadline = time.monotonic() + timeout
        if not await asyncio.to_thread(link.wait_connected, timeout):
            return False
        return await asyncio.to_thread(link.subscribed.wait, max(0.0, deadline - time.monotonic()))

    def verdict(self, verdict: Verdict) -> bool:
        """Hand the verdict to the broker (QoS 1, not retained) in its forms (shared.verdict_forms): the device's
        on its `answers` topic, the subscribers' readable JSON on `verdicts` unless nobody reads that (see the
        module's doc); False when there is no connection."""
        link = self.link
        if link is None:
            return False  # not started: a caller without MQTT (`process`) answers the sender itself
        device = verdict.device
        forms = Forms(verdict) if self._read(link, device) else None  # both forms from one encoding, or one form
        mid = link.publish(self.topics.answers(device), forms.device() if forms is not None else
                           encode_device_verdict(verdict), qos=1, retain=False)
        if mid is None:
            self.stats.unpublished += 1
            return False
        self.stats.published += 1
        self._public.pop(mid, None)  # mids wrap at 65,535: an old `verdicts` entry of this mid is not this one
        if forms is None:
            self.stats.json_unread += 1
            return True
        mid = link.publish(self.topics.verdicts(device), forms.public(), qos=1, retain=False)
        if mid is not None:
            self._public[mid] = device
            if len(self._public) > RECENT_MIDS:
                del self._public[next(iter(self._public))]
        return True

    def _read(self, link: MQTTLink, device: str) -> bool:
        """Whether anyone may read this device's `verdicts` now: no PUBACK said otherwise within UNREAD_S."""
        now = time.monotonic()
        while link.unread:
            unread = self._public.pop(link.unread.popleft(), None)
            if unread is not None:
                self._unread_until[unread] = now + UNREAD_S
        until = self._unread_until.get(device)
        if until is None:
            return True
        if until > now:
            return False
        del self._unread_until[device]
        return True


    def load(self, load: LoadState) -> bool:
        """Retained `<prefix>/v1/_cloud/load`: devices hold or degrade their escalations while it says
        overloaded; {"overloaded": false} clears it. False: not sent (no broker), housekeeping retries."""
        link = self.link
        return link is not None and link.publish(self.topics.cloud_load(), load.payload(), qos=1,
                                                 retain=True) is not None
