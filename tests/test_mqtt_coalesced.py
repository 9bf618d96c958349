"""MQTTLink.coalesced: the packets one loop turn queues (its cache hits' verdicts and acknowledgements) wake paho's
network thread once, at the end, and every one of them is still sent at once; a reconnect meanwhile is safe."""

from __future__ import annotations

import queue
import statistics
import time

from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.mqtt import MQTTLink


class Counting:
    def __init__(self, sock) -> None:  # noqa: ANN001
        self.sock, self.writes = sock, 0

    def send(self, data: bytes) -> int:
        self.writes += 1
        return self.sock.send(data)

    def close(self) -> None:
        self.sock.close()


def _links(mosquitto, prefix: str) -> tuple[MQTTLink, MQTTLink, queue.Queue]:
    got: queue.Queue = queue.Queue()
    config = MQTTConfig(url=mosquitto.url, prefix=prefix)
    reader = MQTTLink(config, f"{prefix}-reader", on_message=lambda m: got.put((time.monotonic(), m.payload)))
    reader.subscribe(f"{prefix}/x", qos=1)
    writer = MQTTLink(config, f"{prefix}-writer")
    for link in (reader, writer):
        link.start()
        assert link.wait_connected(10)
    assert reader.subscribed.wait(10)
    return reader, writer, got


def test_a_turns_packets_wake_the_network_thread_once_and_all_go_out_at_once(mosquitto, prefix):
    reader, writer, got = _links(mosquitto, prefix)
    try:
        wake = writer.client._sockpairW
        for n in (1, 200):  # one packet, and a turn of many: none waits for the network thread's 0.2 s poll
            delays = []
            for _ in range(5):
                began = time.monotonic()
                with writer.coalesced():
                    assert writer.client._sockpairW is not wake  # the wake-ups owed, not written
                    with writer.coalesced():  # nested: the outer one wakes
                        for i in range(n):
                            assert writer.publish(f"{prefix}/x", str(i).encode()) is not None
                assert writer.client._sockpairW is wake
                payloads = [got.get(timeout=5) for _ in range(n)]
                assert sorted(int(p) for _, p in payloads) == list(range(n))
                delays.append(max(at for at, _ in payloads) - began)
            if n == 1:  # not left for the network thread's 0.2 s poll: woken at the end of the turn
                assert statistics.median(delays) < 0.15, delays
        counting = Counting(wake)  # paho's wake-up socket, its writes counted (QoS 0: each packet queued at once,
        writer.client._sockpairW = counting  # none held back by the in-flight window of QoS 1)
        for _ in range(50):
            writer.publish(f"{prefix}/x", b"plain", qos=0)
        plain, counting.writes = counting.writes, 0
        with writer.coalesced():
            for _ in range(50):
                writer.publish(f"{prefix}/x", b"turn", qos=0)
        assert (plain, counting.writes) == (50, 1)
        assert [got.get(timeout=5)[1] for _ in range(100)].count(b"turn") == 50
        writer.client._sockpairW = wake
        with writer.coalesced():  # a reconnect in the middle: the new socket pair paho makes is left in place
            writer.redeliver()
            writer.publish(f"{prefix}/x", b"late")  # queued or refused (not connected): either is fine
        assert writer.wait_connected(10) and writer.client._sockpairW is not None
        assert writer.publish(f"{prefix}/x", b"after") is not None
        while (payload := got.get(timeout=5)[1]) != b"after":  # "late" may come first (resent on reconnecting)
            assert payload == b"late"
    finally:
        writer.stop()
        reader.stop()


def test_coalescing_before_the_link_runs_does_nothing(mosquitto, prefix):
    link = MQTTLink(MQTTConfig(url=mosquitto.url, prefix=prefix), f"{prefix}-idle")
    with link.coalesced():
        assert link.publish(f"{prefix}/x", b"x") is None  # not connected: nothing queued, nothing owed
