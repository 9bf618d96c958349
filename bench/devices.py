"""Virtual devices for the fleet benchmark, all in one asyncio process (aiomqtt): each device is its own MQTT 5
session (client id = device id, a persistent session, its own user name and password, a retained "online"
status and an "offline" will), subscribes to its own answers, its own remote config and the cloud's load
report, and keeps the device's delivery rules:

- outbox: an event stays in the outbox until its verdict arrives; one that is still unanswered after
  `verdict_timeout_s` is published again with the same event id (the cloud must answer it from its store,
  never analyse it twice);
- budget: the device's escalation budget (edgetriage.edge.delivery.budget.EscalationBudget, the device's own class)
  is charged when an event first goes out; an event the budget cannot pay for now waits, oldest first.

One sweeper task looks after every device's re-sends and waiting events once a second: a thousand devices do
not need a thousand timers.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import deque
from dataclasses import dataclass, field

import aiomqtt
from edgetriage.edge.delivery.budget import EscalationBudget
from edgetriage.edge.delivery.outbox import OutboxConfig
from edgetriage.shared.protocol import Event, ProtocolError, Verdict, encode_event
from edgetriage.shared.topics import OFFLINE, ONLINE, Topics
from edgetriage.shared.verdict_forms import decode_device_verdict
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

CONNECTS_AT_ONCE = 32  # connection attempts in flight at once (a listen backlog is not a queue of 1,000)


@dataclass
class Pending:
    payload: bytes
    published: float = 0.0  # perf_counter of the first publish, 0 while waiting for the budget
    last: float = 0.0  # perf_counter of the latest publish


@dataclass
class VirtualDevice:
    name: str
    password: str
    topics: Topics
    per_minute: int = 30
    per_hour: int = 600
    verdict_timeout_s: float = field(default_factory=lambda: OutboxConfig().verdict_timeout_s)  # the device's
    sent: dict[str, float] = field(default_factory=dict)  # event id -> first publish (perf_counter)
    answers: dict[str, tuple[Verdict, float]] = field(default_factory=dict)  # first answer and when it came
    copies: dict[str, set[tuple]] = field(default_factory=dict)  # distinct answers per event id
    outbox: dict[str, Pending] = field(default_factory=dict)
    waiting: deque[str] = field(default_factory=deque)  # over budget, oldest first
    offers: int = 0
    resent: int = 0
    load_reports: int = 0
    refused: int = 0
    client: aiomqtt.Client | None = None

    def __post_init__(self) -> None:
        self.budget = EscalationBudget(self.per_minute, self.per_hour)

    # -- the session ---------------------------------------------------------------------------------------
    async def run(self, port: int, ready: asyncio.Event, gate: asyncio.Semaphore, stop: asyncio.Event) -> None:
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 3600
        will = aiomqtt.Will(self.topics.status(self.name), OFFLINE, qos=1, retain=True)
        client = aiomqtt.Client("127.0.0.1", port, identifier=self.name, username=self.name, password=self.password,
                                protocol=aiomqtt.ProtocolVersion.V5, clean_start=False, properties=props, will=will,
                                keepalive=120, timeout=60, max_inflight_messages=20)
        async with gate:
            await client.__aenter__()
        try:
            await client.subscribe([(self.topics.answers(self.name), 1), (self.topics.config(self.name), 1),
                                    (self.topics.cloud_load(), 1)])
            await client.publish(self.topics.status(self.name), ONLINE, qos=1, retain=True)
            self.client = client
            ready.set()
            receiving = asyncio.create_task(self._receive(client))
            await stop.wait()
            receiving.cancel()
            await client.publish(self.topics.status(self.name), OFFLINE, qos=1, retain=True)
        finally:
            self.client = None
            await client.__aexit__(None, None, None)

    async def _receive(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            now = time.perf_counter()
            if message.topic.matches(self.topics.cloud_load()):
                self.load_reports += 1
                continue
            if not message.topic.matches(self.topics.answers(self.name)):
                continue
            try:
                verdict = decode_device_verdict(bytes(message.payload))
            except ProtocolError as exc:
                print(f"[fleet bench] {self.name}: undecodable answer: {exc}", file=sys.stderr)
                continue
            if verdict.reused_from == verdict.event_id:  # a site offer, not an answer to one of ours
                self.offers += 1
                continue
            self.outbox.pop(verdict.event_id, None)
            self.answers.setdefault(verdict.event_id, (verdict, now))
            self.copies.setdefault(verdict.event_id, set()).add(
                (verdict.created_ms, verdict.description, verdict.source, verdict.verdict))

    # -- delivery ------------------------------------------------------------------------------------------
    async def send(self, event: Event) -> None:
        """Into the outbox; out now if the budget pays for it, else it waits its turn."""
        self.outbox[event.event_id] = Pending(encode_event(event))
        self.waiting.append(event.event_id)
        await self.pump()

    async def pump(self) -> None:
        """Waiting events the budget pays for now go out; unanswered ones past the verdict timeout again."""
        now = time.perf_counter()
        while self.waiting and self.budget.available(time.monotonic()) >= 1:
            event_id = self.waiting.popleft()
            if event_id in self.outbox:
                self.budget.charge(time.monotonic())
                await self._publish(event_id, now)
        for event_id, pending in list(self.outbox.items()):
            if pending.published and now - pending.last > self.verdict_timeout_s:
                self.resent += 1
                await self._publish(event_id, now)

    async def _publish(self, event_id: str, now: float) -> None:
        pending = self.outbox.get(event_id)
        if pending is None or self.client is None:
            return
        if not pending.published:
            pending.published = now
            self.sent[event_id] = now
        pending.last = now
        try:
            await self.client.publish(self.topics.events(self.name), pending.payload, qos=1)
        except aiomqtt.MqttCodeError:
            self.refused += 1  # kept in the outbox: the sweeper sends it again after the verdict timeout


class Fleet:
    """`devices` virtual devices, connected and kept until `close`."""

    def __init__(self, devices: list[VirtualDevice], port: int) -> None:
        self.devices = devices
        self.port = port
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._sends: set[asyncio.Task] = set()

    async def connect(self, timeout: float = 300.0) -> float:
        """Every device connected, subscribed and online; the seconds it took."""
        started = time.perf_counter()
        gate = asyncio.Semaphore(CONNECTS_AT_ONCE)
        ready = [asyncio.Event() for _ in self.devices]
        self._tasks = [asyncio.create_task(d.run(self.port, r, gate, self._stop))
                       for d, r in zip(self.devices, ready, strict=True)]
        self._tasks.append(asyncio.create_task(self._sweep()))
        all_ready = asyncio.ensure_future(asyncio.gather(*(r.wait() for r in ready)))
        await asyncio.wait([all_ready, *self._tasks], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        all_ready.cancel()
        for task in self._tasks:
            if task.done() and task.exception() is not None:
                raise SystemExit(f"a virtual device could not connect: {task.exception()!r}")
        missing = sum(1 for r in ready if not r.is_set())
        if missing:
            raise SystemExit(f"{missing} of {len(self.devices)} virtual devices did not connect in {timeout:g} s")
        return time.perf_counter() - started

    def send(self, k: int, event: Event) -> None:
        task = asyncio.create_task(self.devices[k].send(event))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _sweep(self) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(1.0)
            for device in self.devices:
                if device.outbox:
                    await device.pump()

    def answered(self, ids: set[str], owner: dict[str, int]) -> int:
        return sum(1 for i in ids if i in self.devices[owner[i]].answers)

    async def close(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
