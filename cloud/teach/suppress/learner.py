"""From benign verdicts to suppression proposals.

Only honest judgements teach (`taught_as`): an event the model (or the check table) judged `benign` from its own
crop, or the operator did (feedback, `on_feedback`), becomes a sighting. A verdict the operator's policy decided
(a person allowed in daytime is still a person at night), a cache hit (a copy of another crop's verdict, maybe
another device's) and a site offer teach nothing; an event the operator corrected to `alert` is taken back out of
the evidence, and a suppression learned from it is withdrawn (rejected by "feedback") and the device sent its
rules without it. An event counts once, however often it is said benign. A sighting is the event's device,
camera, label, where its crop was cut (`crop_box`, the place both sides compute alike) and the cloud's own keys
of its crop (shared.cropkeys: the hash, and the appearance embedding where the shipped MobileNetV2 is at hand),
never the keys the device sent.
When one camera has `min_events` sightings within `window_s` near one place (centres within `near`), of about
one size, that look alike (shared.suppression.looks_alike), and no live suppression already answers the newest,
the learner proposes one: the region their crops cover (grown by `margin`, at most `max_region` of the frame),
their sizes, up to MAX_EXEMPLARS of their looks, an expiry `expiry_s` ahead. Its similarity bar is set from the
camera's own real visitors: `alert_margin` above the most alike of its recent alert crops (at any place), never
under `min_similarity_floor`; `min_similarity` while the camera has had no alert yet. The operator accepts or rejects
it (cloud.teach.suppress.api); with `auto_accept`
it is accepted at once. An accepted or expired one changes the device's remote config (cloud.teach.suppress.publish).

Work off the event loop: sightings are keyed and matched on one thread of the learner's own, as the device
config is published from it (a broker round trip).
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from ....shared import clock
from ....shared.cropkeys import decode_jpeg, phash_dct64
from ....shared.embedding import similarity
from ....shared.protocol import Verdict
from ....shared.suppression import (
    MAX_EXEMPLARS,
    SIZE_SLACK,
    Exemplar,
    SuppressionRule,
    area,
    looks_alike,
    suppression_matches,
)
from ...storage.store import Store, StoreError
from .config import SuppressionsConfig
from .store import MAX_EVIDENCE, Proposal, SuppressionStore

log = logging.getLogger("edgetriage.cloud.suppress")

ALERT = "alert"  # a learning item's source for a real visitor's event: it sets bars, it is never suppressed
FORGET = "forget"  # a learning item's source for an event the operator corrected to alert
MAX_ALERTS = 64  # per camera, the newest
MAX_REMEMBERED = 20_000  # event ids remembered as used in a proposal, or corrected to alert

Box = tuple[float, float, float, float]
Publisher = Callable[[str, list[SuppressionRule]], object]  # (device, its accepted live rules)
Embedder = Callable[[bytes], bytes | None]  # a crop's JPEG -> the cloud's appearance embedding


@dataclass(frozen=True)
class Sighting:
    event_id: str
    device: str
    camera: str
    label: str
    box: Box
    phash: str
    embedding: bytes | None
    ms: int
    source: str  # "model" or "feedback"


class Learner:
    """Sightings in, proposals out (see the module docstring). `publish` sends a device its accepted rules."""

    def __init__(self, config: SuppressionsConfig, proposals: SuppressionStore, events: Store, *,
                 embed: Embedder | None = None, publish: Publisher | None = None) -> None:
        self.config = config
        self.proposals = proposals
        self.events = events
        self._embed = embed
        self._publish = publish
        self._seen: dict[tuple[str, str, str], deque[Sighting]] = {}
        self._alerts: dict[tuple[str, str], deque[bytes]] = {}  # (device, camera) -> recent alert embeddings
        self._lock = threading.RLock()
        self._work: queue.SimpleQueue[tuple[str, str] | threading.Event | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._used: OrderedDict[str, None] = OrderedDict()  # events a proposal was made of: never again
        self._corrected: OrderedDict[str, None] = OrderedDict()  # events the operator said were alerts
        self.proposed = 0
        self.withdrawn = 0
        self.publish_errors = 0

    # -- input -----------------------------------------------------------------------------------------
    def on_verdict(self, verdict: Verdict) -> None:
        """Verdict listener (on the event loop): an alert (a yardstick for the bar) or an honest benign verdict
        (`taught_as`) is queued for the learner's thread."""
        if not self.config.enabled or verdict.provisional:  # only a final judgement teaches (cloud.route.finals)
            return
        if verdict.verdict == "alert":
            self._ensure_thread()
            self._work.put((verdict.event_id, ALERT))
        elif verdict.verdict == "benign" and (source := taught_as(verdict)) is not None:
            self.observe_benign(verdict.event_id, source)

    def on_feedback(self, verdict: Verdict) -> None:
        """Feedback listener (cloud.teach.feedback): the operator's benign is evidence; the operator's alert takes the
        event back out of the evidence and withdraws what was learned from it."""
        if not self.config.enabled:
            return
        if verdict.verdict == "benign":
            self.observe_benign(verdict.event_id, "feedback")
        elif verdict.verdict == "alert":
            self._ensure_thread()
            self._work.put((verdict.event_id, FORGET))

    def observe_benign(self, event_id: str, source: str = "feedback") -> None:
        """The seam for operator feedback: the event was benign by `source`; learned on the learner's thread."""
        self._ensure_thread()
        self._work.put((event_id, source))

    def forget(self, event_id: str) -> None:
        """An event is no longer benign (an operator corrected it): it stops counting towards a proposal, the
        model's word on it no longer teaches, and a proposal made with it is withdrawn (accepted: the device is
        sent its rules without it)."""
        with self._lock:
            _remember(self._corrected, event_id)
            self._used.pop(event_id, None)
            for sightings in self._seen.values():
                for s in [s for s in sightings if s.event_id == event_id]:
                    sightings.remove(s)
        for proposal in self.proposals.all():
            if event_id in proposal.evidence and proposal.status != "rejected":
                self.withdrawn += 1
                log.info("suppression %s withdrawn: the operator said event %s was an alert", proposal.id, event_id)
                self.decide(proposal.id, "rejected", "feedback")

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="suppress-learner", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while (item := self._work.get()) is not None:
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                self.learn(*item)
            except Exception:  # noqa: BLE001 - one bad event must not stop learning
                log.exception("learning from event %s failed", item[0])

    def close(self) -> None:
        if self._thread is not None:
            self._work.put(None)
            self._thread.join(timeout=10.0)

    def drain(self, timeout_s: float = 30.0) -> None:
        """Wait until the queued sightings are learned (tests, the bench)."""
        self._ensure_thread()
        done = threading.Event()
        self._work.put(done)
        done.wait(timeout_s)

    # -- learning --------------------------------------------------------------------------------------
    def sighting(self, event_id: str, source: str) -> Sighting | None:
        """The event as a sighting, with the cloud's own keys; None without its crop, place or picture."""
        event = self.events.get_event(event_id)
        crop = self.events.get_crop(event_id)
        if event is None or crop is None or event.get("crop_box") is None:
            return None
        if self.config.labels and event["label"] not in self.config.labels:
            return None
        image = decode_jpeg(crop)
        if image is None:
            return None
        embedding = self._embed(crop) if self._embed is not None else None
        return Sighting(event_id, event["device"], event["camera"], event["label"], tuple(event["crop_box"]),
                        phash_dct64(image), embedding, int(event["captured_ms"]), source)

    def learn(self, event_id: str, source: str = "model", now_ms: int | None = None) -> Proposal | None:
        """Add one benign event; the proposal it completes, if any."""
        if source == FORGET:
            self.forget(event_id)
            source = ALERT  # the operator's alert is a real visitor of this camera: a yardstick for the bar
        with self._lock:
            if source != ALERT and (event_id in self._used
                                    or (source != "feedback" and event_id in self._corrected)):
                return None  # counted once; the operator's alert outweighs the model's benign
            if source == "feedback":
                self._corrected.pop(event_id, None)  # the operator's latest word
        seen = self.sighting(event_id, source)
        if seen is None:
            return None
        if source == ALERT:
            if seen.embedding is not None:
                with self._lock:
                    alerts = self._alerts.setdefault((seen.device, seen.camera), deque(maxlen=MAX_ALERTS))
                    alerts.append(seen.embedding)
            return None
        now = clock.now_ms() if now_ms is None else now_ms
        key = (seen.device, seen.camera, seen.label)
        with self._lock:
            sightings = self._seen.setdefault(key, deque(maxlen=4 * MAX_EVIDENCE))
            if any(s.event_id == event_id for s in sightings):
                return None
            sightings.append(seen)
            horizon = max(now, seen.ms) - int(self.config.window_s * 1000)
            while sightings and sightings[0].ms < horizon:
                sightings.popleft()
            if self._covered(seen, now):
                return None
            bar = self._bar(seen.device, seen.camera, [Exemplar(phash=seen.phash, embedding=seen.embedding)])
            if bar is None:  # looks like a real visitor of this camera: never learned as benign
                return None
            alike = [s for s in sightings if self._same_thing(s, seen, bar)]
            if len(alike) < self.config.min_events:
                return None
            proposal = self._propose(seen, alike, now)
            if proposal is None:
                return None
            for s in alike:
                sightings.remove(s)
                _remember(self._used, s.event_id)
        self.proposals.put(proposal)
        self.proposed += 1
        log.info("suppression %s proposed for %s/%s (%s at %s): %d benign events alike within %.0f s, judged "
                 "benign by %s", proposal.id, seen.device, seen.camera, seen.label, _box_text(proposal.rule.region),
                 proposal.count, self.config.window_s,
                 ", ".join(f"{who} {n}" for who, n in sorted(proposal.sources.items())))
        if self.config.auto_accept:
            return self.decide(proposal.id, "accepted", "auto")
        return proposal

    def _same_thing(self, a: Sighting, b: Sighting, bar: float) -> bool:
        near = self.config.near
        apart = max(abs(a.box[0] + a.box[2] - b.box[0] - b.box[2]), abs(a.box[1] + a.box[3] - b.box[1] - b.box[3])) / 2
        sizes = sorted((area(a.box), area(b.box)))
        if apart > near or sizes[1] > sizes[0] * SIZE_SLACK:
            return False
        return looks_alike(
            a.phash, a.embedding, b.phash, b.embedding, max_distance=self.config.max_distance,
            min_similarity=bar)

    def _covered(self, seen: Sighting, now: int) -> bool:
        """A live suppression of this device already answers the sighting: proposed or accepted, or rejected (the
        operator said no; the same thing is not proposed again before that one would have expired)."""
        return any(p.device == seen.device and suppression_matches(
            p.rule, camera=seen.camera, label=seen.label, box=seen.box, phash=seen.phash, embedding=seen.embedding,
            now_ms=now) for p in self.proposals.all())

    def _region(self, boxes: list[Box]) -> Box | None:
        """The union of the boxes grown by `margin`; None when it is over `max_region` of the frame."""
        m = self.config.margin
        region = (max(0.0, min(b[0] for b in boxes) - m), max(0.0, min(b[1] for b in boxes) - m),
                  min(1.0, max(b[2] for b in boxes) + m), min(1.0, max(b[3] for b in boxes) + m))
        return tuple(round(v, 4) for v in region) if area(region) <= self.config.max_region else None

    def _propose(self, newest: Sighting, alike: list[Sighting], now: int) -> Proposal | None:
        boxes = [s.box for s in alike]
        region = self._region(boxes)
        if region is None:
            return None
        step = max(1, len(alike) // MAX_EXEMPLARS)  # looks spread over the evidence, the newest last
        looks = [Exemplar(phash=s.phash, embedding=s.embedding) for s in alike[::-1][::step][:MAX_EXEMPLARS]]
        bar = self._bar(newest.device, newest.camera, looks)
        if bar is None:
            return None
        digest = hashlib.sha256(f"{newest.device}|{newest.camera}|{newest.event_id}".encode()).hexdigest()[:12]
        rule = SuppressionRule(id=f"s-{digest}", camera=newest.camera, label=newest.label, region=region,
                               areas=(round(min(map(area, boxes)), 6), round(max(map(area, boxes)), 6)),
                               exemplars=looks, max_distance=self.config.max_distance,
                               min_similarity=bar, min_inside=self.config.min_inside,
                               expires_ms=now + int(self.config.expiry_s * 1000))
        sources: dict[str, int] = {}
        for s in alike:
            sources[s.source] = sources.get(s.source, 0) + 1
        return Proposal(device=newest.device, rule=rule, created_ms=now, count=len(alike), sources=sources,
                        evidence=[s.event_id for s in alike][-MAX_EVIDENCE:])

    def _bar(self, device: str, camera: str, looks: list[Exemplar]) -> float | None:
        """The rule's similarity bar from the camera's recent alerts (see the module docstring); None when even
        the highest bar would not keep them apart (no rule: it would answer a real visitor)."""
        alerts = list(self._alerts.get((device, camera), ()))
        if not alerts or any(e.embedding is None for e in looks):
            return self.config.min_similarity
        nearest = max(similarity(a, e.embedding) for a in alerts for e in looks if e.embedding is not None)
        bar = round(max(self.config.min_similarity_floor, nearest + self.config.alert_margin), 4)
        return bar if bar <= 0.99 else None

    # -- decisions -------------------------------------------------------------------------------------
    def decide(self, suppression_id: str, status: str, by: str) -> Proposal | None:
        """Accept or reject a proposal (`by`: "operator", "auto"); the device gets its new set of rules when
        what it holds changes. None when there is no such suppression."""
        proposal = self.proposals.get(suppression_id)
        if proposal is None:
            return None
        was = proposal.status
        decided = proposal.model_copy(update={"status": status, "decided_by": by, "decided_ms": clock.now_ms()})
        self.proposals.put(decided)
        log.info("suppression %s %s by %s", suppression_id, status, by)
        if "accepted" in (was, status) and was != status:
            self.send(decided.device)
        return decided

    def live_rules(self, device: str, now_ms: int | None = None) -> list[SuppressionRule]:
        """The device's accepted suppressions that have not expired."""
        now = clock.now_ms() if now_ms is None else now_ms
        return [p.rule for p in self.proposals.all()
                if p.device == device and p.status == "accepted" and p.rule.expires_ms > now]

    def send(self, device: str) -> bool:
        """Publish the device's live rules through its remote config; False (said in the log) when it failed."""
        if self._publish is None:
            return False
        try:
            self._publish(device, self.live_rules(device))
            return True
        except (OSError, StoreError, ValueError) as exc:
            self.publish_errors += 1
            log.warning("suppressions for device %s not sent: %s; accepting again retries", device, exc)
            return False


def taught_as(verdict: Verdict) -> str | None:
    """What a benign verdict teaches as: "feedback" (the operator's), "model" (the model's or the check table's
    judgement of this very crop), or None: a policy's decision, a cache hit or site offer (a copy of another
    crop's verdict), a fallback."""
    if verdict.decided_by == "operator":
        return "feedback"
    if verdict.source != "llm" or verdict.decided_by == "policy":
        return None
    return "model"


def _remember(ids: OrderedDict[str, None], event_id: str) -> None:
    ids[event_id] = None
    ids.move_to_end(event_id)
    while len(ids) > MAX_REMEMBERED:
        ids.popitem(last=False)


def _box_text(box: Box) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in box) + "]"


__all__ = ["Learner", "Sighting", "taught_as"]
