"""Which messages become events: a payload decoded and validated once, on its own device's topic, captured within
the clock's and the store's bounds, admitted by trust (cloud.reuse.trust) and read against the site table
(cloud.reuse.sites). The MQTT intake and the HTTP API hand every event here before anything is stored or asked."""

from __future__ import annotations

from ...shared.clock import now_ms
from ...shared.protocol import Event, ProtocolError, decode_event
from ...shared.text import shown
from ...shared.topics import Topics
from ..config import CloudConfig
from ..counts.servicestats import ServiceStats
from ..reuse.sites import SiteTable
from ..reuse.trust import Trust


def check_captured(event: Event, now: int, config: CloudConfig) -> Event:
    """The event, unless it was captured outside [now - retention, now + the allowed clock skew] (ProtocolError):
    one from the future (a wrong clock, or a crafted 2^53-1) or older than the store keeps anything is
    refused at intake, before it is stored or asked about. One ahead within the skew is shown when the cloud got
    it (captured_ms = now): a device's clock never puts the "last alert" in the future."""
    captured = event.captured_ms
    retention_days, max_skew_s = config.retention.events_days, config.delivery.max_clock_skew_s
    if captured > now + max_skew_s * 1000:
        raise ProtocolError(f"captured_ms {captured} is {(captured - now) / 1000:.0f} s ahead of the cloud's clock, "
                            f"more than delivery.max_clock_skew_s = {max_skew_s:g}; set the device's clock (NTP)")
    if retention_days and captured < now - retention_days * 86_400_000:
        raise ProtocolError(f"captured_ms {captured} is {(now - captured) / 86_400_000:.1f} days old, older than "
                            f"retention.events_days = {retention_days:g}; nothing that old is kept")
    return event.model_copy(update={"captured_ms": now}) if captured > now else event



class Admission:
    """Turns a message into an event the pipeline may work on, or refuses it (ProtocolError, counted by the
    caller); `received` counts every message offered."""

    def __init__(self, config: CloudConfig, topics: Topics, trust: Trust, sites: SiteTable,
                 stats: ServiceStats) -> None:
        self.config = config
        self.topics = topics
        self.trust = trust
        self.sites = sites
        self.stats = stats

    def accept(self, message: bytes | Event, topic: str) -> Event:
        """The event, decoded and validated once, admitted by cloud.reuse.trust; ProtocolError when it is not one."""
        self.stats.received += 1
        parsed = self.topics.parse(topic)
        if parsed is None or parsed[1] != "events":
            raise ProtocolError(
                f"topic {shown(topic, 80)} is not <prefix>/v1/<device>/events under {self.topics.prefix}"
            )
        event = message if isinstance(message, Event) else decode_event(message)
        event = check_captured(event, now_ms(), self.config)
        if event.device != parsed[0]:
            raise ProtocolError(f"event is from device {event.device!r} but came on the topic of {parsed[0]!r}; "
                                "a device publishes only on its own topic")
        return self.sites.check(self.trust.admit(event))
