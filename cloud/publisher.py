"""The service's side of the broker once it runs: what it publishes (each verdict in both its forms, a site's
verdict offered to the site's other devices, the retained load report) and the connection's state as the
observers read it (`connected`, `subscribed`, `error`). The intake receives on the same link
(cloud.intake)."""

from __future__ import annotations

from ..shared.mqtt import MQTTLink
from ..shared.protocol import Verdict
from ..shared.topics import Topics
from ..shared.verdict_forms import encode_device_verdict, encode_public_verdict
from .scheduler import LoadState
from .servicestats import ServiceStats


class Publisher:
    """One service's publishing; `link` is None until the service starts and after it stops."""

    def __init__(self, topics: Topics, stats: ServiceStats) -> None:
        self.topics = topics
        self.stats = stats
        self.link: MQTTLink | None = None

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

    def verdict(self, verdict: Verdict) -> bool:
        """Hand the verdict to the broker (QoS 1, not retained) in both its forms (shared.verdict_forms): the
        device's on its `answers` topic, the subscribers' readable JSON on `verdicts`; False when there is no
        connection."""
        link = self.link
        if link is None:
            return False  # not started: a caller without MQTT (`process`) answers the sender itself
        device = verdict.device
        mid = link.publish(self.topics.answers(device), encode_device_verdict(verdict), qos=1, retain=False)
        if mid is None:
            self.stats.unpublished += 1
            return False
        link.publish(self.topics.verdicts(device), encode_public_verdict(verdict), qos=1, retain=False)
        self.stats.published += 1
        return True


    def load(self, load: LoadState) -> bool:
        """Retained `<prefix>/v1/_cloud/load`: devices hold or degrade their escalations while it says
        overloaded; {"overloaded": false} clears it. False: not sent (no broker), housekeeping retries."""
        link = self.link
        return link is not None and link.publish(self.topics.cloud_load(), load.payload(), qos=1,
                                                 retain=True) is not None
