"""p3: the bytes a device puts on the wire, against streaming the same clips as JPEG frames.

The real device (`EdgeDaemon`: the edge agent, its outbox and MQTT link, the retained state message) runs
every clip, connected to a private Mosquitto through a counting TCP relay. The relay splits what the device
sends into MQTT packets (fixed header, topic, properties, packet id, payload: every byte on the TCP stream)
and adds them up by kind: `events` (escalated events with their crops, and whatever optional fields they
carry), `state`, `status`, and the protocol's own packets (CONNECT, SUBSCRIBE, PUBACK for each verdict,
PINGREQ, DISCONNECT). A plain client stands in for the cloud and answers every event with a small verdict
(no reuse rule, so the device's verdict cache saves nothing: every escalation goes up).

    p3_bytes_ratio  device -> broker bytes over all clips / the same clips as a 5 fps JPEG stream
                    (cv2.imencode at quality 80, the frame nearest each 1/5 s of clip time)   (goal <= 1/200)
    p3_bytes_ratio_10_per_hour  the same for a camera with 10 visits an hour: bytes per labelled visit
                    (all event bytes and verdict PUBACKs of the run / the labelled visits in it) x 10, plus
                    one hour of what an idle device sends (a state message every `daemon.state_interval_s`,
                    measured size, and a PINGREQ every keepalive), over one hour of the clips' mean JPEG
                    stream bytes per second

The clips run as fast as the device processes them (not in real time), so the state messages are published
on the clips' clock: one when a clip starts, one every `state_interval_s` of clip time, one when it ends
(the camera's state changes); keepalive pings are not exercised and enter the hourly figure by count.

    python bench/wire.py [--media DIR] [--quick]     (alone: prints the figures as one JSON line)
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import cv2
import paho.mqtt.client as mqtt
from brokers import Mosquitto, free_port
from edgetriage.edge.config import CameraConfig, EdgeConfig
from edgetriage.edge.vision.capture import FrameSource
from edgetriage.shared.protocol import Verdict, decode_event
from edgetriage.shared.topics import Topics
from edgetriage.shared.verdict_forms import encode_device_verdict

JPEG_FPS = 5.0
JPEG_QUALITY = 80
VISITS_PER_HOUR = 10
PACKET_KINDS = {1: "connect", 4: "puback", 8: "subscribe", 10: "unsubscribe", 12: "pingreq", 14: "disconnect"}
PINGREQ_BYTES = 2
CAMERA = "door"


class PacketCounter:
    """Splits one direction of an MQTT byte stream into packets and adds up their sizes by kind."""

    def __init__(self, topics: Topics):
        self._topics = topics
        self._buf = bytearray()
        self.bytes: Counter[str] = Counter()
        self.packets: Counter[str] = Counter()
        self.lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        with self.lock:
            self._buf += data
            while True:
                size = self._packet_size()
                if size is None or len(self._buf) < size:
                    return
                kind = self._kind(bytes(self._buf[:size]))
                self.bytes[kind] += size
                self.packets[kind] += 1
                del self._buf[:size]

    def _packet_size(self) -> int | None:
        """1 + the remaining-length varint + the remaining length, once the header is in."""
        length, shift = 0, 0
        for i in range(1, min(len(self._buf), 5)):
            length |= (self._buf[i] & 0x7F) << shift
            if not self._buf[i] & 0x80:
                return 1 + i + length
            shift += 7
        return None

    def _kind(self, packet: bytes) -> str:
        ptype = packet[0] >> 4
        if ptype != 3:
            return PACKET_KINDS.get(ptype, f"type{ptype}")
        i = 1
        while packet[i] & 0x80:
            i += 1
        start = i + 1
        topic = packet[start + 2:start + 2 + int.from_bytes(packet[start:start + 2], "big")].decode("utf-8", "replace")
        parsed = self._topics.parse(topic)
        return parsed[1] if parsed is not None else "publish_other"


class CountingRelay:
    """A TCP relay on a free loopback port in front of the broker: every connection's client -> broker bytes
    go through `counter` on their way."""

    def __init__(self, broker_port: int, counter: PacketCounter):
        self.port = free_port()
        self._broker_port = broker_port
        self.counter = counter
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._broker_port))
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._socks += [client, upstream]
            for src, dst, count in ((client, upstream, True), (upstream, client, False)):
                t = threading.Thread(target=self._pump, args=(src, dst, count), daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, count: bool) -> None:
        try:
            while data := src.recv(65536):
                if count:
                    self.counter.feed(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        for s in self._socks:
            s.close()
        for t in self._threads:
            t.join(2.0)


class Responder:
    """Stands in for the cloud: answers every event with a small verdict, no reuse rule."""

    def __init__(self, port: int, topics: Topics):
        self.answered = 0
        self._topics = topics
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="wire-responder",
                                  protocol=mqtt.MQTTv5)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.subscribe(topics.all_events(), qos=1)
        self.client.loop_start()

    def _on_message(self, client: mqtt.Client, userdata: object, message: mqtt.MQTTMessage) -> None:
        event = decode_event(message.payload)
        verdict = Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                          verdict="benign", confidence=0.9, description="someone known", model="bench",
                          created_ms=int(time.time() * 1000))
        client.publish(self._topics.answers(event.device), encode_device_verdict(verdict), qos=1)
        self.answered += 1

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def jpeg_stream(clip: Path, limit: int | None) -> tuple[int, float]:
    """Bytes of the clip as JPEG frames at quality 80, the frame nearest each 1/5 s, and the clip's seconds."""
    source = FrameSource(str(clip), max_frames=limit)
    total, frames, next_t = 0, 0, 0.0
    for frame in source:
        frames += 1
        if frame.pts_s + 0.5 / source.fps >= next_t:
            ok, buf = cv2.imencode(".jpg", frame.image, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
            assert ok
            total += len(buf)
            next_t += 1.0 / JPEG_FPS
    return total, frames / source.fps


def measure_wire(clips: list[Path], labels: dict[str, list[tuple[float, float]]], config: EdgeConfig,
                 limit: int | None = None, log: Any = print) -> dict[str, Any]:
    """Every clip through the real device, counting what it sends; the figures in the module docstring."""
    from edgetriage.edge.daemon import EdgeDaemon

    topics = Topics(config.mqtt.prefix)
    counter = PacketCounter(topics)
    with tempfile.TemporaryDirectory(prefix="edgetriage-wire-") as tmp:
        broker = Mosquitto(None, Path(tmp) / "broker").start()
        relay = CountingRelay(broker.port, counter)
        responder = Responder(broker.port, topics)
        # one camera (the state message lists it), its source each clip in turn
        device = config.model_copy(update={
            "device": "wire-1", "state_dir": Path(tmp) / "state",
            "cameras": [CameraConfig(id=CAMERA, source=str(clips[0]))],
            "mqtt": config.mqtt.model_copy(update={"url": f"mqtt://127.0.0.1:{relay.port}"})})
        daemon = None
        try:
            daemon = EdgeDaemon(device)
            agent = daemon.agent
            if not agent.link.wait_connected(10.0):
                raise RuntimeError("the device did not connect through the relay")
            interval = device.daemon.state_interval_s
            jpeg_bytes, seconds, visits = 0, 0.0, 0
            for clip in clips:
                camera = CameraConfig(id=CAMERA, source=str(clip))
                daemon.publish_state()
                agent.run_source(camera, max_frames=limit)
                size, duration = jpeg_stream(clip, limit)
                for _ in range(math.floor(duration / interval)):
                    daemon.publish_state()
                daemon.publish_state()
                jpeg_bytes += size
                seconds += duration
                visits += sum(1 for a, _ in labels.get(clip.name, []) if a < duration)
            idle = agent.wait_idle(60.0)
            state_bytes = counter.bytes["state"] / max(1, counter.packets["state"])
        finally:
            if daemon is not None:
                daemon.agent.close()  # publishes "offline" and disconnects
            time.sleep(0.5)
            responder.close()
            relay.close()
            broker.stop()
    sent = sum(counter.bytes.values())
    per_visit = (counter.bytes["events"] + counter.bytes["puback"]) / max(1, visits)
    idle_hour = 3600.0 / interval * state_bytes + 3600.0 / device.mqtt.keepalive_s * PINGREQ_BYTES
    jpeg_hour = jpeg_bytes / seconds * 3600.0 if seconds else 0.0
    out = {
        "p3_bytes_ratio": round(sent / jpeg_bytes, 6) if jpeg_bytes else None,
        "p3_bytes_ratio_10_per_hour": round((VISITS_PER_HOUR * per_visit + idle_hour) / jpeg_hour, 6)
        if jpeg_hour else None,
        "p3_detail": {"device_bytes": sent, "jpeg_5fps_bytes": jpeg_bytes, "clip_seconds": round(seconds, 1),
                      "visits": visits, "bytes_per_visit": round(per_visit), "idle_bytes_per_hour": round(idle_hour),
                      "by_kind": dict(counter.bytes), "packets": dict(counter.packets),
                      "verdicts_answered": responder.answered, "all_answered": idle},
    }
    log(f"wire: {out}")
    return out


def main() -> int:
    from edgetriage.edge.config import load_edge_config
    from recall import load_labels

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--media", type=Path, default=Path(__file__).resolve().parents[1] / "models" / "media")
    parser.add_argument("--quick", action="store_true", help="every clip cut to 300 frames")
    args = parser.parse_args()
    clips = sorted(p for p in args.media.iterdir() if p.suffix.lower() in (".mp4", ".gif", ".avi", ".mkv", ".mov"))
    result = measure_wire(clips, load_labels(args.media), load_edge_config(None), limit=300 if args.quick else None,
                          log=lambda m: print(m, file=sys.stderr, flush=True))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
