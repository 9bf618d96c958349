"""`edgetriage watch`: the live stream of escalated events and verdicts on the broker, one line each, in words.

It decodes the binary topics itself (events are MessagePack with a JPEG crop) and never prints bytes:

    14:42:10  porch-pi/cam0  person 0.41  escalated  #3f9a1c  uncertain score 0.41 (zones door; left)
    14:42:10  porch-pi/cam0  person  alert 0.80 (model, +2.9 s)  #3f9a1c  A person standing near the door
    14:42:10  porch-pi/cam0  person  benign 1.00 (operator: corrected, was alert, +5 min)  #3f9a1c  ...

Every line about an event starts with the time its camera captured it (the time of the event's id when the
event itself was not seen), so an event and its verdicts sort together; a verdict says who decided it (model,
policy, check, cache, operator, fallback) and how long after the capture it was made. A verdict the cloud
sends again unchanged (a device re-sent its event) and an event sent again are printed once.

The broker comes from a config's [mqtt] section (a cloud or a device TOML: url, prefix, username, tls) and the
environment (EDGETRIAGE_MQTT_USERNAME, EDGETRIAGE_MQTT_PASSWORD), as for the other commands; `--broker`
replaces its url. With the shipped broker config, use the cloud's certificate (it may read every device's
events) on the cloud's listener. Needs only the edge install (paho, msgpack, pydantic).
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import time
import tomllib
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Any, TextIO

from .shared import clock
from .shared.broker_check import BrokerUnreachable, check_broker
from .shared.config import ConfigError, MQTTConfig, validate_config
from .shared.ids import uuid7_ms
from .shared.mqtt import Incoming, MQTTLink
from .shared.protocol import Event, ProtocolError, Verdict, decode_event, decode_verdict
from .shared.topics import VERSION, Topics
from .shared.verdict_forms import event_summary


def _clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%H:%M:%S")


def _short(event_id: str) -> str:
    return "#" + event_id[-6:]  # a UUIDv7's tail is random: enough to pair an event with its verdict by eye


def event_line(event: Event) -> str:
    where = [f"zones {', '.join(event.zones)}"] if event.zones else []
    if event.direction:
        where.append(event.direction)
    if event.dwell_s is not None:
        where.append(f"stayed {event.dwell_s:.0f} s")
    more = f" ({'; '.join(where)})" if where else ""
    return (f"{_clock(event.captured_ms)}  {event.device}/{event.camera}  {event.label} {event.score:.2f}  "
            f"escalated  {_short(event.event_id)}  {event.reason}{more}")


def decided_by(verdict: Verdict) -> str:
    """Who made this verdict, in a word or three: an operator's correction is the operator's, not the model's."""
    if verdict.decided_by == "operator":
        mark = verdict.feedback
        if mark is not None and mark.was != verdict.verdict:
            return f"operator: corrected, was {mark.was}"
        return "operator: confirmed"
    if verdict.source == "cloud_cache":
        return "cache, reused"
    if verdict.source == "fallback":
        return "fallback"
    return verdict.decided_by or "model"


def _after(ms: float) -> str:
    seconds = max(0.0, ms / 1000)
    return f"+{seconds:.1f} s" if seconds < 60 else f"+{seconds / 60:.0f} min" if seconds < 5400 else \
        f"+{seconds / 3600:.0f} h"


def verdict_line(verdict: Verdict, captured_ms: int | None = None) -> str:
    """The verdict in words, at its event's capture time (`captured_ms`; else the time in its event id)."""
    at = captured_ms if captured_ms is not None else uuid7_ms(verdict.event_id)
    return (f"{_clock(at)}  {verdict.device}/{verdict.camera}  {verdict.label}  "
            f"{verdict.verdict} {verdict.confidence:.2f} ({decided_by(verdict)}, {_after(verdict.created_ms - at)})  "
            f"{_short(verdict.event_id)}  {verdict.description}")


def _as_json(kind: str, device: str, message: Event | Verdict | str) -> dict[str, Any]:
    if isinstance(message, Event):
        return {"kind": kind, **event_summary(message)}
    if isinstance(message, Verdict):
        return {"kind": kind, **json.loads(message.model_dump_json(by_alias=True, exclude={"cache"}))}
    return {"kind": kind, "device": device, "status": message}


class Watcher:
    """Turns each message on the watched topics into one line (`line`); the network thread only queues."""

    REMEMBERED = 10_000  # events whose capture time and last verdict are kept, to pair and to skip repeats

    def __init__(self, topics: Topics, as_json: bool) -> None:
        self.topics = topics
        self.as_json = as_json
        self.inbox: queue.SimpleQueue[Incoming] = queue.SimpleQueue()
        self._captured: OrderedDict[str, int] = OrderedDict()  # event id -> capture time, events printed
        self._said: OrderedDict[str, tuple] = OrderedDict()  # event id -> the last verdict printed, in short

    def _new(self, message: Event | Verdict) -> bool:
        """False for what was printed already: an event sent again, a verdict sent again unchanged."""
        if isinstance(message, Event):
            table, key = self._captured, message.captured_ms
            if message.event_id in table:
                return False
        else:
            mark = message.feedback
            table, key = self._said, (message.verdict, message.decided_by, message.source,
                                      mark.at_ms if mark is not None else None)
            if table.get(message.event_id) == key:
                return False
        table[message.event_id] = key
        while len(table) > self.REMEMBERED:
            table.popitem(last=False)
        return True

    def line(self, msg: Incoming) -> str | None:
        """The message in words (or one JSON object); None for a topic that is not ours, or a repeat."""
        parsed = self.topics.parse(msg.topic)
        if parsed is None:
            return None
        device, kind = parsed
        try:
            if kind == "events":
                message: Event | Verdict | str = decode_event(msg.payload)
            elif kind == "verdicts":
                message = decode_verdict(msg.payload)
            elif kind == "status":
                message = msg.payload.decode("utf-8", "replace").strip()[:32] or "cleared"
            else:
                return None
        except ProtocolError as exc:
            text = f"{kind} on {msg.topic} could not be read: {exc.reason}"
            return json.dumps({"kind": "unreadable", "topic": msg.topic, "error": exc.reason}) if self.as_json else text
        if isinstance(message, Event | Verdict) and not self._new(message):
            return None
        if self.as_json:
            return json.dumps(_as_json(kind[:-1] if kind != "status" else kind, device, message), ensure_ascii=False)
        if isinstance(message, Event):
            return event_line(message)
        if isinstance(message, Verdict):
            return verdict_line(message, self._captured.get(message.event_id))
        return f"{_clock(clock.now_ms())}  {device}  {message}"


def _mqtt(args: argparse.Namespace) -> MQTTConfig:
    data: dict[str, Any] = {}
    if args.config:
        try:
            with open(args.config, "rb") as f:
                data = dict(tomllib.load(f).get("mqtt", {}))
        except OSError as exc:
            raise FileNotFoundError(f"cannot read {args.config}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{args.config}: not valid TOML: {exc}") from None
    overrides = {"url": args.broker, "prefix": args.prefix}
    data.update({k: v for k, v in overrides.items() if v})
    data["session_expiry_s"] = 0  # nothing kept at the broker once the watch ends
    return validate_config(MQTTConfig, data, args.config or "--broker/--prefix")


def _wait_subscribed(link: MQTTLink, timeout_s: float = 30.0) -> None:
    """Until the broker granted every subscription; a refused one is a user's error (the login's ACL)."""
    deadline = time.monotonic() + timeout_s
    while not link.subscribed.is_set() and not link.refused_subscriptions and time.monotonic() < deadline:
        time.sleep(0.05)
    if link.refused_subscriptions:
        raise BrokerUnreachable(f"the broker refused the subscription to {', '.join(link.refused_subscriptions)}: "
                                "this login may not read it (with deploy/mosquitto's ACL, use the cloud's "
                                "certificate on the cloud's listener)")


def watch(mqtt: MQTTConfig, *, device: str | None = None, as_json: bool = False, count: int = 0,
          seconds: float = 0.0, out: TextIO = sys.stdout, ready: Callable[[], None] | None = None) -> int:
    """Print lines until Ctrl-C, `count` lines or `seconds`; returns how many were printed."""
    topics = Topics(mqtt.prefix)
    watcher = Watcher(topics, as_json)
    link = MQTTLink(mqtt, f"edgetriage-watch-{uuid.uuid4().hex[:8]}", on_message=watcher.inbox.put)
    who = device or "+"
    for kind in ("events", "verdicts", "status"):
        link.subscribe(f"{mqtt.prefix}/{VERSION}/{who}/{kind}", 1)
    link.start()
    printed = 0
    deadline = time.monotonic() + seconds if seconds else None
    try:
        _wait_subscribed(link)
        if ready is not None:
            ready()
        while (not count or printed < count) and (deadline is None or time.monotonic() < deadline):
            try:
                msg = watcher.inbox.get(timeout=0.2)
            except queue.Empty:
                continue
            text = watcher.line(msg)
            if text is not None:
                print(text, file=out, flush=True)
                printed += 1
    finally:
        link.stop()
    return printed


def cmd_watch(args: argparse.Namespace) -> int:
    mqtt = _mqtt(args)
    where = "--broker" if args.broker else f"[mqtt] url in {args.config}" if args.config else \
        "the default url; give --broker URL or --config FILE"
    check_broker(mqtt, where=where)

    def ready() -> None:
        print(f"watching {mqtt.url} ({mqtt.prefix}/{VERSION}/{args.device or '+'}/...); Ctrl-C stops", file=sys.stderr,
              flush=True)

    watch(mqtt, device=args.device, as_json=args.json, count=args.count, seconds=args.seconds, ready=ready)
    return 0


def add_parser(sub: Any) -> None:
    cmd = sub.add_parser(
        "watch", help="print the live events and verdicts on the broker, one line each, in words",
        description="Print every escalated event and every verdict on the broker as one line each (time, "
                    "device/camera, label, decision or verdict, description); the binary topics are decoded.",
        epilog="example:\n  edgetriage watch --config /etc/edgetriage/cloud.toml\n\n"
               + (__doc__.split("\n\n", 2)[2] if __doc__ else ""),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("--config", metavar="FILE", help="a cloud or device TOML; its [mqtt] section says how to "
                     "reach the broker (default: mqtt://127.0.0.1:1883, prefix edgetriage)")
    cmd.add_argument("--broker", metavar="URL", help="MQTT broker URL (mqtt://HOST:PORT or mqtts://...), "
                     "instead of the config's")
    cmd.add_argument("--prefix", help="topic prefix (default: the config's, else edgetriage)")
    cmd.add_argument("--device", help="only this device (default: every device)")
    cmd.add_argument("--json", action="store_true", help="one JSON object per line (no crop or embedding bytes)")
    cmd.add_argument("--count", type=int, default=0, metavar="N", help="stop after N lines (default: never)")
    cmd.add_argument("--seconds", type=float, default=0.0, metavar="S", help="stop after S seconds (default: never)")
    cmd.set_defaults(func=cmd_watch)

