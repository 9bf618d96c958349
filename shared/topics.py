"""MQTT topics of protocol v1, all under one configurable prefix.

    <prefix>/v1/<device>/events     device -> cloud, MessagePack event, QoS 1
    <prefix>/v1/<device>/verdicts   cloud -> any subscriber, readable JSON verdict (no embedding), QoS 1
    <prefix>/v1/<device>/answers    cloud -> that device only, MessagePack verdict with its whole reuse rule, QoS 1
    <prefix>/v1/<device>/status     retained plain "online" / "offline" (also the last will)
    <prefix>/v1/<device>/state      device -> anyone, retained JSON: cameras, applied config version, refusals
    <prefix>/v1/<device>/config     cloud -> device, retained JSON: remote configuration and model announcement
    <prefix>/v1/_cloud/load         cloud -> devices, retained JSON {"overloaded", "queue_depth", "ts"}
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION = "v1"
KINDS = ("events", "verdicts", "answers", "status", "state", "config")
CLOUD = "_cloud"  # the pseudo-device of messages from the cloud to every device (never a device id)
ONLINE = b"online"
OFFLINE = b"offline"


@dataclass(frozen=True)
class Topics:
    prefix: str = "edgetriage"

    def events(self, device: str) -> str:
        return f"{self.prefix}/{VERSION}/{device}/events"

    def verdicts(self, device: str) -> str:
        return f"{self.prefix}/{VERSION}/{device}/verdicts"

    def answers(self, device: str) -> str:
        """The device's own copy of its verdicts and site offers (shared.verdict_forms): binary, for devices."""
        return f"{self.prefix}/{VERSION}/{device}/answers"

    def status(self, device: str) -> str:
        return f"{self.prefix}/{VERSION}/{device}/status"

    def state(self, device: str) -> str:
        return f"{self.prefix}/{VERSION}/{device}/state"

    def config(self, device: str) -> str:
        return f"{self.prefix}/{VERSION}/{device}/config"

    def cloud_load(self) -> str:
        return f"{self.prefix}/{VERSION}/{CLOUD}/load"

    def all_events(self) -> str:
        return f"{self.prefix}/{VERSION}/+/events"

    def all_verdicts(self) -> str:
        return f"{self.prefix}/{VERSION}/+/verdicts"

    def parse(self, topic: str) -> tuple[str, str] | None:
        """(device, kind) for one of our topics, None for anything else."""
        head = f"{self.prefix}/{VERSION}/"
        if not topic.startswith(head):
            return None
        rest = topic[len(head):].split("/")
        if len(rest) != 2 or rest[1] not in KINDS or not rest[0]:
            return None
        return rest[0], rest[1]
