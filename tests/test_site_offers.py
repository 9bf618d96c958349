"""Site offers go behind the answers: a new site-wide verdict in a site of 1,000 devices is 999 offers, and an
answer published just after it must not wait for the broker to take them all (cloud.reuse.offers). A real Mosquitto,
the cloud's own MQTT link, a subscriber that reads every device's answers topic in arrival order."""

from __future__ import annotations

import asyncio
import threading
import time

from edgetriage.cloud.config import ReusePolicy
from edgetriage.cloud.counts.servicestats import ServiceStats
from edgetriage.cloud.reuse.offers import SiteOffers
from edgetriage.cloud.reuse.trust import Sites
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.mqtt import MQTTLink
from edgetriage.shared.protocol import ReuseRule, Verdict
from edgetriage.shared.topics import Topics
from edgetriage.shared.verdict_forms import decode_device_verdict, encode_device_verdict

DEVICES = [f"dev-{k:04d}" for k in range(1000)]


def _verdict(device: str, event_id: str, site: str | None) -> Verdict:
    rule = ReuseRule(scope="site", device=device, camera="door", site=site, label="person", phash="0f" * 8,
                     prompt_version="p1")
    return Verdict(event_id=event_id, device=device, camera="door", label="person", verdict="benign",
                   confidence=0.8, description="a person at the door", model="m", source="llm",
                   created_ms=int(time.time() * 1000), cache=rule)


def test_an_answer_is_not_queued_behind_a_thousand_site_offers(mosquitto, prefix):
    topics = Topics(prefix)
    arrivals: list[str] = []  # event id of each message on any answers topic, in order
    done = threading.Event()

    def heard(msg) -> None:
        arrivals.append(decode_device_verdict(msg.payload).event_id)
        if len(arrivals) == len(DEVICES):
            done.set()

    reader = MQTTLink(MQTTConfig(url=mosquitto.url, prefix=prefix), f"{prefix}-reader", on_message=heard)
    reader.subscribe(f"{prefix}/v1/+/answers", 1)
    cloud = MQTTLink(MQTTConfig(url=mosquitto.url, prefix=prefix), f"{prefix}-cloud")
    reader.start()
    cloud.start()
    stats = ServiceStats()
    try:
        assert reader.wait_connected(10) and cloud.wait_connected(10) and reader.subscribed.wait(10)

        async def run() -> None:
            offers = SiteOffers(Sites(ReusePolicy(scope="site", sites={"big": DEVICES})), topics, lambda: cloud,
                                stats)
            sender = asyncio.create_task(offers.run())
            offers.offer(_verdict(DEVICES[0], "0001", "big"))  # 999 offers to the site's other devices
            await asyncio.sleep(0)
            # a cache hit answered on the next turn, for a device of the same site
            cloud.publish(topics.answers(DEVICES[1]), encode_device_verdict(_verdict(DEVICES[1], "0002", "big")))
            await asyncio.to_thread(done.wait, 60)
            sender.cancel()

        asyncio.run(run())
    finally:
        cloud.stop()
        reader.stop()
    assert len(arrivals) == len(DEVICES) and stats.site_offers == len(DEVICES) - 1
    assert arrivals.index("0002") <= 20, f"the answer came after {arrivals.index('0002')} offers"
