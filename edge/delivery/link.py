"""The agent's delivery side: the durable outbox, the MQTT link, publishing and the verdicts coming back.

Escalated events are stored in the outbox before anything is sent, so a crash, a power cut or a missing broker
costs a delay, never an event. What leaves the outbox is metered by the spending policy (edge.delivery.budget:
the escalation budget, held while the cloud says it is overloaded). Verdicts (MessagePack, on the device's own
`answers` topic: the subscribers' JSON on `verdicts` lacks the embedding the cache reuses by) complete their
outbox entries, fill the device's verdict cache and are timed from escalation to arrival.

Threads: paho's network thread only puts (kind, value) tuples on a queue; everything else happens on the
thread that calls `pump()` or `wait_and_pump()`, under the agent's lock.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from ...shared.clock import now_ms
from ...shared.config import MQTTConfig
from ...shared.ids import uuid7_ms
from ...shared.mqtt import Incoming, MQTTLink, Will
from ...shared.protocol import ProtocolError, Verdict
from ...shared.topics import OFFLINE, ONLINE, Topics
from ...shared.verdict_forms import decode_device_verdict
from ..stats import EdgeStats
from ..triage.verdict_cache import VerdictCache
from .budget import EscalationBudgetConfig, OverloadConfig, SpendingPolicy
from .outbox import Outbox, OutboxConfig

log = logging.getLogger("edgetriage.edge.agent")

OnVerdict = Callable[[Verdict, "float | None"], None]
OnControl = Callable[[Incoming], None]

_SEEN_IDS = 10_000  # verdict event ids remembered for duplicate counting
_SCAN_EVERY_MS = 1_000  # how often the outbox is scanned for overdue items when nothing new was added
_REQUEUE_GRACE_MS = 1_500  # after a reconnect that kept the session, verdicts queued at the broker arrive first


class DeliverySections(Protocol):
    """The sections of the device's config the delivery side reads (edge.config.EdgeConfig has them)."""

    @property
    def device(self) -> str: ...
    @property
    def mqtt(self) -> MQTTConfig: ...
    @property
    def outbox(self) -> OutboxConfig: ...
    @property
    def budget(self) -> EscalationBudgetConfig: ...
    @property
    def overload(self) -> OverloadConfig: ...


class Delivery:
    """Outbox, MQTT link and verdict intake of one device. The MQTT connection starts in the constructor and
    reconnects on its own; `close()` publishes "offline" and stops."""

    def __init__(self, config: DeliverySections, stats: EdgeStats, cache: VerdictCache, lock: threading.RLock,
                 *,
                 on_verdict: OnVerdict | None = None, on_control: OnControl | None = None) -> None:
        self.config = config
        self.device = config.device
        self.stats = stats
        self.cache = cache
        self.on_verdict = on_verdict
        self.on_control = on_control
        self.outbox = Outbox.from_config(config.outbox)
        self.spending = SpendingPolicy(config.device, config.budget, config.overload, self.outbox, stats,
                                       forget=self.forget)
        self.verdict_counts: OrderedDict[str, int] = OrderedDict()  # event id -> verdicts received
        self.provisional_ids: OrderedDict[str, bool] = OrderedDict()  # events whose last verdict was provisional
        self.escalated_at: dict[str, float] = {}  # event id -> monotonic time, for precise latencies
        self.dirty = True
        self.closed = False
        self._inbox: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._lock = lock
        self._next_scan_ms = 0
        self._requeue_at_ms: int | None = None

        topics = Topics(config.mqtt.prefix)
        self._status_topic = topics.status(self.device)
        self._verdict_topic = topics.answers(self.device)  # the device's form: the whole reuse rule (not `verdicts`)
        self._load_topic = topics.cloud_load()
        self.link = MQTTLink(
            config.mqtt,
            config.mqtt.client_id or self.device,  # one identity, one client id (deploy/mosquitto)
            on_message=lambda m: self._inbox.put(("message", m)),
            on_published=lambda mid: self._inbox.put(("puback", mid)),
            on_refused=lambda mid, reason: self._inbox.put(("refused", (mid, reason))),
            on_connected=lambda present: self._inbox.put(("connected", present)),
            on_disconnected=lambda reason: self._inbox.put(("disconnected", reason)),
            will=Will(self._status_topic, OFFLINE, qos=1, retain=True),
        )
        self.link.subscribe(self._verdict_topic, 1)
        self.link.subscribe(self._load_topic, 1)
        self.link.start()

    def reconfigure(self, config: DeliverySections) -> None:
        self.config = config
        self.spending.reconfigure(config.budget, config.overload)
        self.dirty = True

    def escalated(self, event_id: str) -> None:
        """An event was stored in the outbox: time it and send it at the next pump."""
        self.escalated_at[event_id] = time.monotonic()
        if len(self.escalated_at) > _SEEN_IDS:  # verdicts that never came (events aged out of the outbox)
            del self.escalated_at[next(iter(self.escalated_at))]
        self.dirty = True

    def forget(self, event_id: str) -> None:
        """An event given up before it was sent: no latency to measure."""
        self.escalated_at.pop(event_id, None)

    def pump(self) -> None:
        """Handle what MQTT delivered (PUBACKs, verdicts, connects) and publish what the outbox has due."""
        with self._lock:
            self._drain()
            self._publish_due()

    def wait_and_pump(self, timeout_s: float) -> None:
        """Sleep up to `timeout_s`, waking to handle MQTT events as they arrive."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                item = self._inbox.get(timeout=min(left, 0.25))
            except queue.Empty:
                self.pump()  # overdue items and deferred requeues are time-driven
                continue
            with self._lock:
                self._handle(item)
                self._drain()
                self._publish_due()

    def wait_idle(self, timeout_s: float) -> bool:
        """Keep delivering until every escalated event has its verdict; False if `timeout_s` ran out first."""
        deadline = time.monotonic() + timeout_s
        self.pump()
        while len(self.outbox):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.wait_and_pump(min(left, 0.5))
        return True

    def _drain(self) -> None:
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._handle(item)

    def _handle(self, item: tuple[str, Any]) -> None:
        kind, value = item
        if kind == "refused":  # the broker said no (MQTT 5 reason code): not delivered, goes again later
            mid, reason = value
            event_id = self.outbox.mark_refused(mid)
            self.stats.publish_refused += 1
            self._warn_refused(event_id, reason)
        elif kind == "puback":
            self.outbox.mark_sent(value)
        elif kind == "message":
            self._on_message(value)
        elif kind == "connected":
            self._on_connected(bool(value))
        elif kind == "disconnected" and not self.closed:
            log.warning("MQTT connection lost (%s); events are kept in the outbox until it returns", value)

    def _warn_refused(self, event_id: str | None, reason: str) -> None:
        n = self.stats.publish_refused
        if n == 1 or n % 100 == 0:  # a broker ACL refuses every message alike: say it, do not flood the log
            what = f"event {event_id}" if event_id else "a message"
            log.warning("the broker refused %s: %s (%d refused so far); check this device's ACL and "
                        "credentials; events are kept and re-sent after outbox.verdict_timeout_s", what, reason, n)

    def _on_connected(self, session_present: bool) -> None:
        self.stats.connects += 1
        self.link.publish(self._status_topic, ONLINE, qos=1, retain=True)
        now = now_ms()
        if session_present:
            # verdicts the broker kept for us while we were away arrive first; then resend what is still open
            self._requeue_at_ms = now + _REQUEUE_GRACE_MS
        else:
            self._requeue(now)
        self.dirty = True
        if self.stats.connects > 1:
            log.warning("MQTT connected again (session %s)", "kept" if session_present else "new")

    def _requeue(self, now: int) -> None:
        n = self.outbox.requeue_sent()
        self._requeue_at_ms = None
        if n:
            log.info("re-sending %d event(s) still waiting for a verdict", n)

    def _publish_due(self) -> None:
        if not self.link.connected.is_set() or self.spending.holding():
            return
        now = now_ms()
        if self._requeue_at_ms is not None and now >= self._requeue_at_ms:
            self._requeue(now)
            self.dirty = True
        if not self.dirty and now < self._next_scan_ms:
            return
        self.dirty = False
        self._next_scan_ms = now + _SCAN_EVERY_MS
        due = self.outbox.due(now, self.config.outbox.verdict_timeout_s)
        mono = time.monotonic()
        allowance = self.spending.allowance(mono)
        published = 0
        for item in due:
            if item.attempts == 0:  # a first send is paid from the budget; a re-send is free
                if allowance < 1:
                    continue  # waits in the outbox; the periodic scan tries again
                allowance -= 1
                self.spending.charge(item.event_id, mono)
            mid = self.link.publish(item.topic, item.payload, qos=1)
            if mid is None:  # connection went away meanwhile; the next connect starts over
                self.dirty = True
                return
            self.outbox.mark_published(item.event_id, mid, now)
            published += 1
            self.stats.published += 1
            if item.attempts:
                self.stats.republished += 1
        if len(due) >= 100 and published:
            self.dirty = True  # more than one batch was due

    def _on_message(self, msg: Incoming) -> None:
        if msg.topic == self._load_topic:
            self.spending.on_load(msg.payload, self._load_topic)
            self.dirty = True
            return
        if msg.topic != self._verdict_topic:
            if self.on_control is not None:
                try:
                    self.on_control(msg)
                except Exception:  # noqa: BLE001 - a control handler must not stop delivery
                    log.exception("handling a message on %s failed", msg.topic)
            return
        try:
            verdict = decode_device_verdict(msg.payload)
        except ProtocolError as exc:
            self.stats.verdicts_invalid += 1
            log.warning("ignored a message on %s: %s", msg.topic, exc.reason)
            return
        if verdict.device != self.device:
            self.stats.verdicts_invalid += 1
            log.warning("ignored a verdict for device %r on %s", verdict.device, msg.topic)
            return
        self._on_verdict(verdict)

    def _on_verdict(self, verdict: Verdict) -> None:
        now = now_ms()
        eid = verdict.event_id
        count = self.verdict_counts.get(eid, 0) + 1
        self.verdict_counts[eid] = count
        self.verdict_counts.move_to_end(eid)
        if len(self.verdict_counts) > _SEEN_IDS:
            self.verdict_counts.popitem(last=False)
        completed = self.outbox.complete(eid)
        self.cache.add(verdict, now)  # a final answer carries the reuse rule its provisional one lacked
        replaces = self.provisional_ids.pop(eid, False)
        if verdict.provisional:
            self.provisional_ids[eid] = True
            if len(self.provisional_ids) > _SEEN_IDS:
                self.provisional_ids.popitem(last=False)
        if count > 1:
            if not replaces:
                self.stats.verdicts_duplicate += 1
                return
            self.stats.verdicts_replaced += 1
            self._tell(verdict, None)
            return
        latency = self._latency_ms(eid, now)
        log.info("verdict %s (%.2f) for camera %s event %s from %s, %s ms after escalation", verdict.verdict,
                 verdict.confidence, verdict.camera, eid, verdict.source, "?" if latency is None else f"{latency:.0f}",
                 extra={"event_id": eid, "device": verdict.device, "camera": verdict.camera})
        if completed:
            source = verdict.source
            if verdict.provisional:
                self.stats.verdicts_provisional += 1
            elif source == "llm":
                self.stats.verdicts_llm += 1
            elif source == "cloud_cache":
                self.stats.verdicts_cloud_cache += 1
            else:
                self.stats.verdicts_fallback += 1
            if latency is not None:
                self.stats.add_latency(source, latency)
        else:
            self.stats.verdicts_unmatched += 1
        self._tell(verdict, latency)

    def _tell(self, verdict: Verdict, latency: float | None) -> None:
        if self.on_verdict is not None:
            try:
                self.on_verdict(verdict, latency)
            except Exception:  # noqa: BLE001 - a reporting hook must not stop delivery
                log.exception("on_verdict callback failed")

    def _latency_ms(self, event_id: str, now: int) -> float | None:
        """Escalation to verdict: monotonic when this process escalated it, else from the id's own clock."""
        started = self.escalated_at.pop(event_id, None)
        if started is not None:
            return (time.monotonic() - started) * 1000.0
        try:
            return float(max(0, now - uuid7_ms(event_id)))
        except ValueError:
            return None

    def close(self) -> None:
        """Publish "offline", disconnect and close the outbox (the caller holds the lock)."""
        self.closed = True
        self._drain()
        self.link.stop(final=(self._status_topic, OFFLINE))
        self._drain()
        self.outbox.close()


__all__ = ["Delivery", "OnControl", "OnVerdict"]
