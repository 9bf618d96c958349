"""Accepted suppressions to the device, through its remote configuration (cloud.broker.push): the retained config
message on `<prefix>/v1/<device>/config` is read, its `suppressions` section replaced by the device's accepted,
unexpired rules, and the whole message published again, retained, under a new version. The other sections
(an operator's `cloud push-config`) are kept as they were; the device validates the message as any other and
reports the version it applied on its state topic.
"""

from __future__ import annotations

import json
import queue
import uuid
from typing import Any

from ....shared import clock
from ....shared.config import MQTTConfig
from ....shared.mqtt import Incoming, MQTTLink
from ....shared.protocol import ProtocolError, decode_remote_config
from ....shared.suppression import SuppressionRule, SuppressionsSection
from ....shared.topics import Topics
from ...broker.push import PushResult, config_message, push_config

SECTION = "suppressions"


def retained_config(mqtt: MQTTConfig, device: str, wait_s: float, timeout_s: float = 10.0) -> dict[str, Any]:
    """The device's retained remote config as a push document (sections and model), {} when none is there
    (or it does not decode: the cloud then says the whole config again from nothing but its suppressions)."""
    topic = Topics(mqtt.prefix).config(device)
    got: queue.SimpleQueue[bytes] = queue.SimpleQueue()

    def on_message(msg: Incoming) -> None:
        if msg.topic == topic:
            got.put(msg.payload)

    link = MQTTLink(mqtt.model_copy(update={"session_expiry_s": 0}), f"edgetriage-supp-{uuid.uuid4().hex[:12]}",
                    on_message=on_message)
    link.subscribe(topic, 1)
    link.start()
    try:
        if not link.wait_connected(timeout_s) or not link.subscribed.wait(timeout_s):
            raise ConnectionError(f"cannot read {topic} from the broker at {mqtt.url}: "
                                  f"{link.last_error or 'no answer'}")
        try:
            payload = got.get(timeout=wait_s)
        except queue.Empty:
            return {}
    finally:
        link.stop()
    if not payload:
        return {}
    try:
        message = decode_remote_config(payload)
    except ProtocolError:
        return {}
    doc: dict[str, Any] = dict(message.config)
    if message.model is not None:
        doc["model"] = message.model.model_dump(exclude_none=True)
    return doc


def publish_suppressions(mqtt: MQTTConfig, device: str, rules: list[SuppressionRule], *,
                         wait_s: float = 1.0) -> PushResult:
    """Replace the device's `suppressions` section with `rules` (none: the section is removed)."""
    doc = retained_config(mqtt, device, wait_s)
    doc.pop(SECTION, None)
    if rules:
        doc[SECTION] = json.loads(SuppressionsSection(rules=rules).model_dump_json(exclude_none=True))
    version, payload = config_message(doc, version=f"suppressions-{clock.now_ms()}")
    return push_config(mqtt, device, payload, version=version)


def with_kept_suppressions(mqtt: MQTTConfig, device: str, doc: dict[str, Any], wait_s: float = 1.0) -> dict[str, Any]:
    """`doc` (an operator's `cloud push-config` FILE) with the device's accepted suppressions carried over from
    its retained config, so a push of other sections does not take them off the device; `doc` itself when it
    says `suppressions` (its word wins) or the broker cannot be read (the push then says why)."""
    if SECTION in doc:
        return doc
    try:
        kept = retained_config(mqtt, device, wait_s).get(SECTION)
    except ConnectionError:
        return doc
    return doc if kept is None else {**doc, SECTION: kept}


__all__ = ["SECTION", "publish_suppressions", "retained_config", "with_kept_suppressions"]
