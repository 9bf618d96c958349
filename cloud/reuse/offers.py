"""Site offers, sent behind the answers: a new site-wide model verdict goes to each of the site's other devices
(cloud.reuse.verdicts.site_offers), one message each, and with a thousand devices in a site that is a thousand
messages at once. Handed to the MQTT client all together they filled its window of unacknowledged publishes,
and every answer published after them waited until the broker had taken them all (seconds on a loaded host):
a cache hit answered in milliseconds reached its device seconds later. So offers wait in a queue of their own
and go to the client only while fewer than WINDOW of its publishes are unacknowledged; an answer is never
queued behind more than that. Each offer is encoded as it is sent, not all on one loop turn.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from ...shared.mqtt import MQTTLink
from ...shared.protocol import Verdict
from ...shared.topics import Topics
from ...shared.verdict_forms import encode_device_verdict
from ..counts.servicestats import ServiceStats
from .trust import Sites

WINDOW = 10  # the client's unacknowledged publishes under which offers may go (its own window is 20)
IDLE_S = 0.005  # how long the sender waits for the window to open again


class SiteOffers:
    """`offer(verdict)` (a verdict listener) queues its offers to the site's other devices; `run()` (a task on
    the service's loop) sends them on `link()`'s `answers` topics, counting each in `stats.site_offers`. An
    offer that finds no connection is dropped: it only saves a device a question."""

    def __init__(self, sites: Sites, topics: Topics, link: Callable[[], MQTTLink | None], stats: ServiceStats) -> None:
        self._sites = sites
        self._topics = topics
        self._link = link
        self._stats = stats
        self._queue: deque[Verdict] = deque()
        self._wake = asyncio.Event()

    def offer(self, verdict: Verdict) -> None:
        offers = self._sites.offers(verdict) if self._link() is not None else []
        if offers:
            self._queue.extend(offers)
            self._wake.set()

    def send(self, offers: list[Verdict]) -> None:
        """Offers made elsewhere (an operator's correction, cloud.teach.feedback), sent as the service's own."""
        if offers and self._link() is not None:
            self._queue.extend(offers)
            self._wake.set()

    @property
    def waiting(self) -> int:
        return len(self._queue)

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                link = self._link()
                if link is not None and link.unacknowledged >= WINDOW:
                    await asyncio.sleep(IDLE_S)
                    continue
                offer = self._queue.popleft()
                if link is not None and link.publish(self._topics.answers(offer.device), encode_device_verdict(offer),
                                                     qos=1) is not None:
                    self._stats.site_offers += 1
                await asyncio.sleep(0)  # one offer a turn: the intake and the answers go between them
