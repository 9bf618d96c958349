"""The site table: the one place the cloud reads each camera's name and time zone (`[[sites]]` in the cloud
config), and the claims of devices that differ from it.

    [[sites]]
    name = "shop"                      # the site
    timezone = "Europe/Berlin"         # its wall clock: the policies' hours, the questions' "today"
    cameras = { pi-floor = ["floor", "till", "door"], pi-back = ["yard", "store"] }   # device -> its camera ids

A device's config names its cameras and its time zone too, and every event says which camera it came from and
its local time. Those are the device's claims about itself: where a listed device announces a camera the table
does not list for it, or a local time its site's time zone does not give, the cloud says so (a warning once,
/healthz, the page, `check-config` with the device online) and goes on with its own table: the event's local
time is the site's (so a policy's hours read the cloud's clock), and the camera is kept as named (its verdict
still belongs to it) but listed as unknown. A device the table does not list is not judged.
"""

from __future__ import annotations

import logging
import queue
import time
import uuid
from collections.abc import Iterable
from datetime import datetime
from zoneinfo import ZoneInfo

from ...shared.config import MQTTConfig
from ...shared.mqtt import Incoming, MQTTLink
from ...shared.protocol import Event, ProtocolError, decode_device_state
from ...shared.topics import VERSION, Topics
from .config import SiteConfig

log = logging.getLogger("edgetriage.cloud.sites")

MAX_CLAIMS = 256  # differences kept to say (each said once)


class SiteTable:
    """The table, and what devices claimed that differs from it (`claims`: the newest last)."""

    def __init__(self, sites: Iterable[SiteConfig]) -> None:
        self._cameras: dict[str, frozenset[str]] = {}
        self._zone: dict[str, ZoneInfo] = {}
        self._site: dict[str, str] = {}
        for site in sites:
            for device, cameras in site.cameras.items():
                self._cameras[device] = frozenset(cameras)
                self._zone[device] = ZoneInfo(site.timezone)
                self._site[device] = site.name
        self._claims: dict[tuple[str, str, str], str] = {}

    def listed(self, device: str) -> bool:
        return device in self._cameras

    def cameras(self, device: str) -> frozenset[str]:
        return self._cameras.get(device, frozenset())

    def claims(self) -> list[str]:
        """Each difference a device announced, in words, once each."""
        return list(self._claims.values())

    def local_time(self, device: str, captured_ms: int) -> str | None:
        """The "HH:MM" of an instant on the device's site clock; None for a device the table does not list."""
        zone = self._zone.get(device)
        return None if zone is None else datetime.fromtimestamp(captured_ms / 1000, zone).strftime("%H:%M")

    def check(self, event: Event) -> Event:
        """The event with its site's local time, the differences it claims reported (module docstring)."""
        if not self.listed(event.device):
            return event
        if event.camera not in self._cameras[event.device]:
            self._claim(event.device, "camera", event.camera,
                        f"device {event.device!r} announces camera {event.camera!r}, which [[sites]] "
                        f"{self._site[event.device]!r} does not list for it (it lists "
                        f"{', '.join(sorted(self._cameras[event.device]))}); its events are kept, the camera "
                        "is not added")
        ours = self.local_time(event.device, event.captured_ms)
        if event.local_time is not None and event.local_time != ours:
            self._claim(event.device, "timezone", "",
                        f"device {event.device!r} says its local time is {event.local_time} where [[sites]] "
                        f"{self._site[event.device]!r} ({self._zone[event.device].key}) gives {ours}: its "
                        "time zone differs; the cloud reads the site's")
        return event if event.local_time == ours else event.model_copy(update={"local_time": ours})

    def compare(self, device: str, announced: Iterable[str]) -> list[str]:
        """What a device's state (its cameras) says that differs from the table, in words (check-config)."""
        if not self.listed(device):
            return [f"device {device!r} is online but [[sites]] does not list it"]
        mine, theirs = self._cameras[device], set(announced)
        out = [f"device {device!r} runs camera {c!r}, which [[sites]] does not list for it"
               for c in sorted(theirs - mine)]
        out += [f"[[sites]] lists camera {c!r} for device {device!r}, which the device does not run"
                for c in sorted(mine - theirs)]
        return out

    def _claim(self, device: str, kind: str, what: str, text: str) -> None:
        key = (device, kind, what)
        if key in self._claims or len(self._claims) >= MAX_CLAIMS:
            return
        self._claims[key] = text
        log.warning("%s", text)


def online_cameras(mqtt: MQTTConfig, wait_s: float, timeout_s: float = 10.0) -> dict[str, list[str]]:
    """device -> the cameras its retained state says it runs, for every device whose state the broker holds
    (read for `wait_s`); ConnectionError when the broker cannot be read."""
    topics = Topics(mqtt.prefix)
    got: queue.SimpleQueue[Incoming] = queue.SimpleQueue()
    link = MQTTLink(mqtt.model_copy(update={"session_expiry_s": 0}), f"edgetriage-sites-{uuid.uuid4().hex[:12]}",
                    on_message=got.put)
    link.subscribe(f"{mqtt.prefix}/{VERSION}/+/state", 1)
    link.start()
    found: dict[str, list[str]] = {}
    try:
        if not link.wait_connected(timeout_s) or not link.subscribed.wait(timeout_s):
            raise ConnectionError(f"cannot read the devices' state from the broker at {mqtt.url}: "
                                  f"{link.last_error or 'no answer'}")
        deadline = time.monotonic() + wait_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = got.get(timeout=left)
            except queue.Empty:
                break
            parsed = topics.parse(msg.topic)
            if parsed is None or not msg.payload:
                continue
            try:
                state = decode_device_state(msg.payload)
            except ProtocolError:
                continue
            if state.device == parsed[0]:
                found[parsed[0]] = sorted(state.cameras)
    finally:
        link.stop()
    return found


def report(sites: list[SiteConfig], mqtt: MQTTConfig | None, wait_s: float) -> tuple[list[str], list[str]]:
    """(the table in words, the differences the online devices' states announce) for check-config; with no
    `mqtt`, the devices are not asked."""
    lines = [f"site {s.name} ({s.timezone}): " + "; ".join(f"{d}: {', '.join(c)}" for d, c in sorted(s.cameras.items()))
             for s in sites]
    if mqtt is None:
        return lines, []
    table = SiteTable(sites)
    differences: list[str] = []
    online = online_cameras(mqtt, wait_s)
    for device, cameras in sorted(online.items()):
        differences += table.compare(device, cameras)
    for site in sites:
        differences += [f"device {d!r} of site {site.name!r} has no state on the broker (offline, or never ran)"
                        for d in sorted(site.cameras) if d not in online]
    return lines, differences
