"""The instrument behind `p3_bytes_ratio` (bench/wire.py): the relay in front of the broker counts every byte a
client sends, split into MQTT packets by kind, with a real Mosquitto and a real paho client."""

from __future__ import annotations

import time

import paho.mqtt.client as mqtt
from edgetriage.shared.topics import Topics
from wire import CountingRelay, PacketCounter


def _varint(n: int) -> int:
    return 1 if n < 128 else 2 if n < 16384 else 3


def test_the_relay_counts_each_published_byte_by_kind(mosquitto, prefix):
    topics = Topics(prefix)
    counter = PacketCounter(topics)
    relay = CountingRelay(mosquitto.port, counter)
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{prefix}-dev", protocol=mqtt.MQTTv5)
    try:
        client.connect("127.0.0.1", relay.port)
        client.loop_start()
        event_topic, state_topic = topics.events("d1"), topics.state("d1")
        client.publish(event_topic, b"x" * 1000, qos=1).wait_for_publish(5)
        client.publish(state_topic, b"{}", qos=1, retain=True).wait_for_publish(5)
        client.disconnect()
        client.loop_stop()
        deadline = time.monotonic() + 5
        while counter.packets["disconnect"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        relay.close()
    # PUBLISH, QoS 1, MQTT 5: fixed header, topic (2 + length), packet id (2), properties length (1), payload
    rest = 2 + len(event_topic) + 2 + 1 + 1000
    assert counter.bytes["events"] == 1 + _varint(rest) + rest and counter.packets["events"] == 1
    rest = 2 + len(state_topic) + 2 + 1 + 2
    assert counter.bytes["state"] == 1 + _varint(rest) + rest
    assert counter.packets["connect"] == 1 and counter.bytes["disconnect"] == 2
    assert (
        sum(counter.bytes.values()) == counter.bytes["connect"] + counter.bytes["events"] + counter.bytes["state"] + 2
    )
