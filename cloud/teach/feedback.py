"""Operator feedback on verdicts: a person says a verdict was right, or what it should have been.

The corrected (or confirmed) verdict replaces the stored one (the store's `put_verdict`: SQLite and Redis alike),
so the cloud cache answers look-alikes with it from then on; its reuse rule is marked `operator`, which
shared.reuse ranks before any model's verdict. It is sent again on the device's topics (its verdict cache files
it over the old one: same event id), offered again to the site's other devices where its rule covers the site,
and the cached copies made from it (cache hits that reused it) are corrected the same way. The same word said
again changes nothing and sends nothing (`published` false); each new word is told to `listeners` (the
suppression learner: benign is evidence, alert takes the event back out). Each carries
`decided_by: "operator"` and `feedback` (who, when, the note, and what the verdict was).

Readers (the suppression proposals, the dataset export): `is_operator_verdict`, `benign_by_feedback`,
`benign_events`; /work/notes/feedback_api.txt lists them for other components.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...shared import clock
from ...shared.feedbackmark import FeedbackMark
from ...shared.protocol import VERDICTS, Verdict
from ..reuse.verdicts import offers_to, site_of
from ..storage.store import Store

log = logging.getLogger("edgetriage.cloud.feedback")

COPIES_MAX = 500  # cached copies of one verdict looked for and corrected with it
COPIES_WINDOW_MS = 600_000
COPIES_PAGE = 200  # copies are looked for among events received from this long before the verdict
FLIP = {"alert": "benign", "benign": "alert"}


class FeedbackError(ValueError):
    """Feedback that cannot be taken; `status` is the HTTP status that says why (400, 404)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Correction:
    """What one piece of feedback did: the verdict now stored, whether it was sent to its device, how many
    cached copies were corrected with it and how many site offers went out."""

    verdict: Verdict
    kind: str  # "confirmed" or "corrected"
    published: bool
    copies: int
    offers: int

    def as_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict.model_dump(mode="json", by_alias=True, exclude={"cache": {"embedding"}}),
                "kind": self.kind, "published": self.published, "copies": self.copies, "offers": self.offers}


def wanted_verdict(old: str, correct: bool | None, verdict: str | None) -> str:
    """The verdict the operator means: `verdict` when given, the same one for `correct: true`, the other of
    alert/benign for `correct: false`. FeedbackError (400) for what says neither or both ways."""
    if verdict is not None and verdict not in VERDICTS:
        raise FeedbackError(f"verdict must be one of {', '.join(VERDICTS)}, not {str(verdict)[:24]!r}")
    if verdict is not None:
        if correct is True and verdict != old:
            raise FeedbackError(f"'correct': true with 'verdict': {verdict!r} contradicts the stored verdict {old!r}; "
                                "send one of them")
        return verdict
    if correct is None:
        raise FeedbackError("send 'correct' (true or false) or the right 'verdict' (alert, benign, unknown)")
    if correct:
        return old
    if old not in FLIP:
        raise FeedbackError(f"the verdict was {old!r}: say which is right with 'verdict' (alert or benign)")
    return FLIP[old]


def operator_copy(verdict: Verdict, answer: str, mark: FeedbackMark, now_ms: int) -> Verdict:
    """`verdict` as the operator decided it: the answer, made now (its rule lives its TTL from now), marked
    `operator` in its rule, kept as its own answer (not a copy of another, so every cache files it)."""
    rule = verdict.cache.model_copy(update={"operator": True}) if verdict.cache is not None else None
    clause = verdict.clause if answer == verdict.verdict else None  # the clause that said otherwise decides nothing
    return verdict.model_copy(update={"clause": clause,
        "verdict": answer, "confidence": 1.0, "decided_by": "operator", "feedback": mark, "created_ms": now_ms,
        "cache": rule, "reused_from": None if verdict.reused_from == verdict.event_id else verdict.reused_from,
        "model_verdict": verdict.model_verdict or verdict.verdict, "provisional": False})  # the word is final


class Feedback:
    """Takes an operator's feedback on `store`'s verdicts. `publish` sends a verdict on its device's topics
    (False: no broker now), `offer(verdict, offers)` sends site offers to other devices' answers topics (the
    service's, as it offers a new model verdict), `site_devices` lists
    a site's devices (cloud.reuse.trust.Sites), `counts` is where corrections are counted per camera
    (ServiceStats.feedback: /metrics and the page read it)."""

    def __init__(self, store: Store, publish: Callable[[Verdict], bool],
                 offer: Callable[[Verdict, list[Verdict]], None],
                 site_devices: Callable[[str], list[str]], counts: dict[tuple[str, str, str], int]) -> None:
        self.store = store
        self._publish = publish
        self._offer = offer
        self._site_devices = site_devices
        self.counts = counts
        self.listeners: list[Callable[[Verdict], None]] = []  # told each operator verdict (the learner's evidence)

    def give(self, event_id: str, *, correct: bool | None = None, verdict: str | None = None, note: str = "",
             by: str = "operator", now_ms: int | None = None) -> Correction:
        """Store and send the verdict the operator means for `event_id` (see the module docstring)."""
        old = self.store.get_verdict(event_id)
        if old is None:
            raise FeedbackError(f"no verdict for event {event_id!r} (yet): feedback needs a verdict to correct", 404)
        answer = wanted_verdict(old.verdict, correct, verdict)
        if old.decided_by == "operator" and old.feedback is not None and old.verdict == answer:
            # said before: nothing new is stored or sent (a repeated request, a double click)
            return Correction(old, "confirmed" if answer == old.feedback.was else "corrected", False, 0, 0)
        now = now_ms if now_ms is not None else clock.now_ms()
        was = old.feedback.was if old.feedback is not None else old.verdict  # the model's, after a second word
        mark = FeedbackMark(by=by, at_ms=now, note=note, was=was)
        new = operator_copy(old, answer, mark, now)
        kind = "confirmed" if answer == old.verdict else "corrected"
        self.store.put_verdict(new)  # stored before it is sent, as every verdict
        published = self._publish(new)
        offers = self._send_offers(new) if published else 0
        copies = 0
        for row in self._copies(old):
            copy = Verdict.model_validate(row["verdict"])
            fixed = operator_copy(copy, answer, mark, now)
            self.store.put_verdict(fixed)
            self._publish(fixed)
            copies += 1
        key = (old.device, old.camera, kind)
        self.counts[key] = self.counts.get(key, 0) + 1
        for listener in self.listeners:
            listener(new)
        log.info("feedback on %s/%s event %s by %s: %s -> %s (%d cached copies corrected)", old.device, old.camera,
                 event_id, by, old.verdict, answer, copies,
                 extra={"event_id": event_id, "device": old.device, "camera": old.camera})
        return Correction(new, kind, published, copies, offers)

    def _send_offers(self, verdict: Verdict) -> int:
        """The corrected verdict offered again to the other devices of its site, when its rule covers the site
        (they hold the first offer in their caches)."""
        site = site_of(verdict)
        if site is None:
            return 0
        offers = offers_to(verdict, self._site_devices(site))
        self._offer(verdict, offers)
        return len(offers)

    def _copies(self, old: Verdict) -> list[dict[str, Any]]:
        """Stored cache hits that copied `old` (reused_from its event), newest first: the events received since
        shortly before it, read page by page from the newest (ids sort by capture time) until older ones."""
        since = old.created_ms - COPIES_WINDOW_MS
        found: list[dict[str, Any]] = []
        before = None
        while len(found) < COPIES_MAX:
            rows = self.store.list_events(limit=COPIES_PAGE, before=before)
            found += [r for r in rows if r["received_ms"] >= since and r["verdict"] is not None
                      and r["verdict"].get("reused_from") == old.event_id and r["event_id"] != old.event_id]
            if len(rows) < COPIES_PAGE or rows[-1]["received_ms"] < since:
                return found[:COPIES_MAX]
            before = rows[-1]["event_id"]
        return found[:COPIES_MAX]


def is_operator_verdict(verdict: Verdict | dict[str, Any] | None) -> bool:
    """A verdict an operator's feedback decided (the Verdict, or the dict a Store.list_events row holds)."""
    if verdict is None:
        return False
    decided = verdict.get("decided_by") if isinstance(verdict, dict) else verdict.decided_by
    return decided == "operator"


def benign_events(store: Store, device: str, camera: str, since_ms: int | None = None,
                  limit: int = 1000) -> list[tuple[dict[str, Any], str]]:
    """Every benign event of the camera (Store.list_events rows, newest first) with who made it benign:
    "operator" (feedback) or "model" (the model, the check table or a policy); the operator's first."""
    rows = store.list_events(device, None, limit, camera=camera, verdict="benign", since_ms=since_ms)
    marked = [(row, "operator" if is_operator_verdict(row["verdict"]) else "model") for row in rows]
    return sorted(marked, key=lambda pair: pair[1] != "operator")  # stable: newest first within each


def benign_by_feedback(store: Store, device: str, camera: str, since_ms: int | None = None,
                       limit: int = 1000) -> list[dict[str, Any]]:
    """The camera's events (newest first) whose verdict an operator's feedback made benign."""
    return [row for row, who in benign_events(store, device, camera, since_ms, limit) if who == "operator"]
