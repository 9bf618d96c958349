"""What the page shows, kept in one place: the recent events with their decision path and verdict (entries.py),
the figures derived from them (panel.StatsPanel), and the listeners (one per open page) that get every change as it
happens.

Everything here runs on the API's event loop. The cloud service calls `add_event` / `add_verdict` from its
listener hooks (already on the loop); a device-side feed in the same process (the demo) posts through
`post`, which is thread-safe. Nothing here blocks or does I/O, so a slow browser can never slow the
service: a listener that falls behind is cut off and its browser reconnects, asking only for what it missed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ....shared.protocol import Event, Verdict
from .boxes import boxes_in_crop, crop_region, event_boxes
from .entries import MODEL_SOURCES, DeviceDecision, Entry, now_ms, wall_time
from .listeners import Listener, Listeners
from .panel import CameraCounts, CameraSource, FiguresSource, StatsPanel, StatusSource
from .thumbs import Thumbs

log = logging.getLogger("edgetriage.cloud.web")

DEFAULT_CAPACITY = 500  # entries kept; also the window the page's figures are computed over
BACKLOG = 200  # entries a newly opened page receives
THUMB_BUDGET_BYTES = 32 * 1024 * 1024  # crops kept in memory for entries the store does not hold
TICK_S = 1.0  # how often figures are recomputed (when something changed) and the live gauges sent


class Timeline:
    """Recent entries by id (oldest first) and per-camera counters, told to every open page as they change;
    `panel` (panel.StatsPanel, given `status`, `camera_stats` and `cloud_figures`) turns them into figures,
    sent once per tick when they changed."""

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY, status: StatusSource | None = None,
                 camera_stats: CameraSource | None = None, cloud_figures: FiguresSource | None = None,
                 thumb_budget: int = THUMB_BUDGET_BYTES) -> None:
        self.capacity = capacity
        self.panel = StatsPanel(status=status, camera_stats=camera_stats, cloud_figures=cloud_figures)
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._thumbs = Thumbs(thumb_budget)  # crops the store does not hold
        self._device_feed = False  # whether any device reports its own decisions here (then its cache is known)
        self._cameras: dict[tuple[str, str], CameraCounts] = {}
        self._listeners = Listeners()
        self._seq = 0
        self._last_stats = ""
        self._last_sent = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ticker: asyncio.Task | None = None

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Bind to the running loop and start the tick that sends figures and gauges."""
        self._loop = asyncio.get_running_loop()
        if self._ticker is None:
            self._ticker = self._loop.create_task(self._tick_forever(), name="timeline-tick")

    async def close(self) -> None:
        """End every open stream (so the server can stop at once) and the tick."""
        self._listeners.close()
        if self._ticker is not None:
            self._ticker.cancel()
            try:
                await self._ticker
            except asyncio.CancelledError:
                pass
            self._ticker = None

    def post(self, fn: Callable[..., None], *args: Any) -> None:
        """Run `fn(*args)` on the timeline's loop, from any thread; dropped if the loop is gone."""
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._guarded, fn, args)
        except RuntimeError:
            pass

    @staticmethod
    def _guarded(fn: Callable[..., None], args: tuple) -> None:
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - a bad feed must not stop the loop
            log.exception("timeline update failed")

    # -- input ----------------------------------------------------------------------------------------
    def add_event(self, event: Event, received_ms: int | None = None) -> None:
        """An escalated event reached the cloud: show it (waiting for its verdict)."""
        entry = self._entries.get(event.event_id)
        new = entry is None
        if entry is None:
            entry = Entry(id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                          score=event.score, uncertain=event.uncertain, captured_ms=event.captured_ms,
                          reason=event.reason, track_id=event.track_id,
                          at_ms=wall_time(event.captured_ms, received_ms))
        entry.local_time = event.local_time  # the time its facts and description give
        dets = [(d.label, d.score, tuple(d.box)) for d in event.detections]
        if not entry.boxes:
            entry.boxes = event_boxes(event.label, event.score, dets, region=event.crop_box)
        entry.thumb = True
        if new:
            self._camera(entry).events += 1
            self._camera(entry).escalated += 1
        self._put(entry)

    def add_stored(self, doc: dict[str, Any]) -> None:
        """An event as the store lists it (with its verdict or None): the backlog shown after a restart."""
        try:
            dets = [(d["label"], float(d["score"]), tuple(d["box"])) for d in doc.get("detections", [])]
            entry = Entry(id=doc["event_id"], device=doc["device"], camera=doc["camera"], label=doc["label"],
                          score=float(doc["score"]), uncertain=bool(doc.get("uncertain")),
                          captured_ms=int(doc["captured_ms"]), reason=doc.get("reason", ""),
                          track_id=doc.get("track_id"), thumb=bool(doc.get("crop_bytes")),
                          at_ms=wall_time(int(doc["captured_ms"]), doc.get("received_ms")),
                          boxes=event_boxes(doc["label"], float(doc["score"]), dets, region=doc.get("crop_box")))
            verdict = Verdict.model_validate(doc["verdict"]) if doc.get("verdict") else None
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("stored event %s not shown: %s", doc.get("event_id"), exc)
            return
        if entry.id in self._entries:
            return
        self._count_new(entry)
        if verdict is not None:
            self._apply_verdict(entry, verdict)
        self._put(entry)

    def add_verdict(self, verdict: Verdict) -> None:
        """The cloud answered an event (model, cloud cache or fallback)."""
        entry = self._entries.get(verdict.event_id)
        if entry is None:  # the event was not seen here (page started later, or shown elsewhere)
            entry = Entry(id=verdict.event_id, device=verdict.device, camera=verdict.camera, label=verdict.label,
                          score=0.0, uncertain=False, captured_ms=verdict.created_ms,
                          at_ms=wall_time(verdict.created_ms))
            self._count_new(entry)
        self._apply_verdict(entry, verdict)
        self._put(entry)

    def add_device_decision(self, d: DeviceDecision) -> None:
        """A device decided on a track; escalations are later completed by add_event/add_verdict."""
        self._device_feed = True
        entry_id = d.event_id or f"{d.device}~{d.camera}~{d.track_id}~{d.captured_ms}"
        entry = self._entries.get(entry_id)
        new = entry is None
        if entry is None:
            entry = Entry(id=entry_id, device=d.device, camera=d.camera, label=d.label, score=d.score,
                          uncertain=d.uncertain, captured_ms=d.captured_ms, track_id=d.track_id,
                          at_ms=wall_time(d.captured_ms))
        entry.decision = d.decision
        entry.reason = d.reason
        entry.score, entry.uncertain = d.score, d.uncertain
        if d.box is not None:
            detections = d.detections
            if not any(det[2] == d.box for det in detections):  # tracked without a detection on its best frame
                detections = ((d.label, d.score, d.box), *detections)
            entry.boxes = boxes_in_crop(detections, d.crop_box or crop_region(d.box), d.box)
        if d.crop_jpeg and not entry.thumb:
            for old_id in self._thumbs.keep(entry_id, d.crop_jpeg):
                if (old_entry := self._entries.get(old_id)) is not None:
                    old_entry.thumb = False
            entry.thumb = True
        if new:
            camera = self._camera(entry)
            camera.events += 1
            if d.decision == "escalate":
                camera.escalated += 1
        if d.decision == "cached" and d.cached is not None:
            entry.verdict, entry.confidence = d.cached.verdict, d.cached.confidence
            entry.description, entry.model = d.cached.description, d.cached.model
            entry.decided_by, entry.policy, entry.clause = d.cached.decided_by, d.cached.policy, d.cached.clause
            entry.reused_from = d.cached.reused_from or d.cached.event_id
            entry.source = "device_cache"
            entry.latency_ms = d.decided_ms
            self._camera(entry).device_cache += 1
            if d.cached.verdict == "alert":
                self._camera(entry).alerts += 1
        self._put(entry)

    def add_device_latency(self, event_id: str, latency_ms: float | None) -> None:
        """The device measured escalation -> verdict for an event: the figure a user feels."""
        entry = self._entries.get(event_id)
        if entry is None or latency_ms is None:
            return
        entry.latency_ms = latency_ms
        self._put(entry)

    def _count_new(self, entry: Entry) -> None:
        camera = self._camera(entry)
        camera.events += 1
        camera.escalated += 1

    def _apply_verdict(self, entry: Entry, verdict: Verdict) -> None:
        if verdict.provisional and verdict.source == "fallback":  # a first answer: the verdict follows
            if entry.source is None:
                entry.provisional, entry.description = True, verdict.description
                if verdict.verdict != "unknown":  # the policy's word on the closer look's facts (cloud.route.finals)
                    entry.verdict, entry.confidence = verdict.verdict, verdict.confidence
            return
        first = entry.source is None
        entry.provisional, entry.routed_by = verdict.provisional, verdict.routed_by
        entry.provisional_was = verdict.provisional_was
        entry.verdict, entry.confidence = verdict.verdict, verdict.confidence
        entry.description, entry.model = verdict.description, verdict.model
        entry.source, entry.reused_from = verdict.source, verdict.reused_from
        entry.facts, entry.checked = list(verdict.facts), verdict.checked
        entry.decided_by, entry.policy, entry.clause = verdict.decided_by, verdict.policy, verdict.clause
        mark = verdict.feedback
        if mark is not None and (entry.feedback or {}).get("at_ms") != mark.at_ms and mark.was != verdict.verdict:
            self._camera(entry).corrections += 1  # an operator's correction, counted once
        entry.feedback = mark.model_dump(mode="json") if mark is not None else None
        entry.cloud_ms = verdict.timings.total_ms
        entry.queue_ms = verdict.timings.queue_ms if verdict.source in MODEL_SOURCES else None
        entry.analyze_ms = verdict.timings.analyze_ms if verdict.source in MODEL_SOURCES else None
        if entry.latency_ms is None:
            entry.latency_ms = verdict.timings.total_ms
        if first:
            camera = self._camera(entry)
            setattr(camera, verdict.source, getattr(camera, verdict.source) + 1)
            if verdict.verdict == "alert":
                camera.alerts += 1

    def _camera(self, entry: Entry) -> CameraCounts:
        key = (entry.device, entry.camera)
        camera = self._cameras.get(key)
        if camera is None:
            camera = self._cameras[key] = CameraCounts()
        return camera

    def _put(self, entry: Entry) -> None:
        self._seq += 1
        entry.seq = self._seq
        entry.updated_ms = now_ms()
        self._entries[entry.id] = entry
        self._entries.move_to_end(entry.id)
        while len(self._entries) > self.capacity:
            old_id, _ = self._entries.popitem(last=False)
            self._thumbs.drop(old_id)
        self.panel.changed()
        if self._listeners:
            self._listeners.offer((entry.seq, "entry", json.dumps(entry.as_json(), separators=(",", ":"))))

    # -- output ---------------------------------------------------------------------------------------
    def thumb(self, entry_id: str) -> bytes | None:
        """A crop held in memory (device-side decisions); None when the store is the place to look."""
        return self._thumbs.get(entry_id)

    def entries(self, after_seq: int = 0, limit: int = BACKLOG) -> list[Entry]:
        """Entries changed after `after_seq`, oldest change first, at most the `limit` latest."""
        changed = sorted((e for e in self._entries.values() if e.seq > after_seq), key=lambda e: e.seq)
        return changed[-limit:]

    def listen(self) -> Listener:
        return self._listeners.listen()

    def forget(self, listener: Listener) -> None:
        self._listeners.forget(listener)

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    def figures(self) -> dict[str, Any]:
        """The stats panel's figures over the entries held (panel.StatsPanel.figures)."""
        return self.panel.figures(self._entries.values(), self._cameras, device_feed=self._device_feed)

    def stats_message(self, full_history: bool = False) -> str:
        """The figures as JSON, with the chart's whole history or only its latest point (panel.StatsPanel)."""
        return self.panel.message(self._entries.values(), self._cameras, device_feed=self._device_feed,
                                  full_history=full_history)

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self._tick()
            except Exception:  # noqa: BLE001 - keep ticking; the page shows stale figures meanwhile
                log.exception("timeline tick failed")

    def _tick(self) -> None:
        if not self._listeners:
            if self.panel.stale:
                self.figures()  # keep the chart's history growing while nobody watches
            return
        message = self.stats_message()
        now = time.monotonic()
        if message == self._last_stats and now - self._last_sent < 10.0:
            return
        self._last_stats, self._last_sent = message, now
        self._listeners.offer((None, "stats", message))
