"""The operator's compiled policies in front of a back-end: a Backend that decides what the policy decides and
asks the model only for the rest.

For each event: the translator's closer look (remembered for the back-end behind, so it is taken once), then
the event's policy (the most specific `[[analyzer.policies]]` entry, prompt.policy_for) compiled when the
config loaded (policy_words.py):

- no sure person is there (the detector's score for the label < check.ABSENT): benign, decided by the check,
  as the check table would have made any answer of the model;
- a sure person (>= check.SURE): the policy decides what a person there means; the model is not asked;
- a faint one: the policy decides where its verdict is benign either way; where it says alert for a person
  there, the model says whether someone is (its alert or benign stands);
- a clause that may hold but needs an uncompiled part, or a fact the event did not send: the model is asked,
  and the verdict says so (`decided_by: "model"`, `clause`: what was not known).

Zone names and any other text a device sends are compared with the policy's own zone names, never read as
words: a zone the cloud does not know for the camera (named by a policy entry or in a policy's words) is left
out of the facts and the prompt, so a zone called `policy-allows-this-person-benign` decides nothing.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...shared.config import ConfigError
from ...shared.policycell import zone_word
from ...shared.protocol import Event
from ...shared.reuse import event_facts, with_inputs
from ..config import PolicyConfig
from .base import Analysis, Backend
from .check import ABSENT, SURE
from .describe import from_facts
from .hivis import hivis
from .light import by_check, leaning_said
from .policy import Policy, Seen, evaluate, inputs
from .policy_check import PolicyRefused
from .policy_form import explain, from_form
from .policy_words import compile_policy
from .prompt import Translating, policy_for
from .translator import MIN_OBJECT, Facts


class PolicyBook:
    """Every configured policy, compiled once into the form that decides (words through policy_words, `rules`
    through policy_form); the known zones of a camera are the zones its entries name. Words that cannot mean
    anything (policy_check.PolicyRefused) are a ConfigError naming the policy: the config is refused."""

    def __init__(self, entries: Sequence[PolicyConfig]) -> None:
        self.entries = list(entries)
        self.compiled: dict[str, Policy] = {}
        for i, entry in enumerate(self.entries, 1):
            # a camera's known zones are those its own entries name: a zone-only entry (any camera) says nothing
            # of which zones this camera has, so it must not make the camera's other places unreadable
            known = tuple(e.zone for e in self.entries if e.zone and e.camera == entry.camera)
            key = self._key(entry.camera, entry.said)
            if key in self.compiled:
                continue
            try:
                self.compiled[key] = compile_policy(entry.text, known, entry.camera) if entry.text is not None \
                    else from_form(entry.rules or [], entry.otherwise or "model", entry.said)
            except PolicyRefused as exc:
                raise ConfigError(f"analyzer.policies[{i}]: refused: {exc}") from None

    def report(self) -> list[str]:
        """Each policy with the form that runs, what was not compiled and what the evaluator does with it, and
        the situations that decide it (check-config)."""
        lines = []
        for i, entry in enumerate(self.entries, 1):
            policy = self.compiled[self._key(entry.camera, entry.said)]
            where = ", ".join(f"{k} {v}" for k, v in (("camera", entry.camera), ("zone", entry.zone)) if v)
            said = f"\"{entry.text}\"" if entry.text is not None else f"{len(entry.rules or [])} rules"
            lines.append(f"policy {i} ({where or 'everywhere'}): {said}")
            lines.append(f"  compiled: {policy.plain()}")
            lines += [f"  {line}" for line in explain(policy)]
            done, total = policy.compiled_share()
            lines.append(f"  {done} of {total} clauses compiled")
        return lines

    def for_event(self, event: Event) -> Policy | None:
        text = policy_for(self.entries, event.camera, event.zones)  # the entry's words, or its rules (`said`)
        if text is None:
            return None
        return self.compiled.get(self._key(event.camera, text)) or self.compiled.get(self._key(None, text))

    @staticmethod
    def _key(camera: str | None, text: str) -> str:
        return f"{camera or ''}\x00{text}"

    def known_zones(self, camera: str) -> set[str]:
        """The zones the cloud knows for a camera: named by its policy entries or read in their words."""
        names = {zone_word(e.zone) for e in self.entries if e.zone and e.camera in (None, camera)}
        for entry in self.entries:
            if entry.camera in (None, camera):
                names.update(self.compiled[self._key(entry.camera, entry.said)].zones())
        return names


class Remembered:
    """A translator whose last few answers are kept by event id: the gate and the back-end behind it read
    the same facts, taken once."""

    def __init__(self, translator: Translating, size: int = 256) -> None:
        self.translator = translator
        self.size = size
        self._kept: OrderedDict[str, Facts] = OrderedDict()
        self._lock = threading.Lock()

    def translate(self, event: Event) -> Facts:
        with self._lock:
            kept = self._kept.get(event.event_id)
        if kept is not None:
            return kept
        facts = self.translator.translate(event)
        with self._lock:
            self._kept[event.event_id] = facts
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return facts


@dataclass(frozen=True)
class _Ruled:
    analysis: Analysis | None  # None: the model is asked
    policy: Policy | None
    clause: str | None
    leaning: Analysis | None = None  # the model asked: what the facts and the policy say meanwhile (provisional)


LEANINGS_KEPT = 1024  # events left to the model whose leaning waits for their first answer
AT_ONCE_MODEL = "policy"  # the `model` of a verdict the policy or the check decided at once: no model was asked


class PolicyGate:
    """A Backend: the compiled policy's verdicts at once, the model's for the rest (module docstring)."""

    def __init__(self, inner: Backend, book: PolicyBook, translator: Translating) -> None:
        self.inner = inner
        self.book = book
        self.translator = translator
        self.name = inner.name
        self.max_batch = inner.max_batch
        self.concurrency = inner.concurrency
        self._leanings: OrderedDict[str, Analysis] = OrderedDict()
        self._lock = threading.Lock()

    def prompt_version(self, event: Event) -> str:
        """The back-end's, with the policy inputs' ranges folded in (shared.reuse.with_inputs)."""
        version = self.inner.prompt_version(event)
        policy = self.book.for_event(event)
        return with_inputs(version, inputs(policy, event_facts(event))) if policy is not None else version

    def saturated(self) -> bool:
        return self.inner.saturated()

    async def close(self) -> None:
        await self.inner.close()

    async def analyze(self, event: Event) -> Analysis:
        """One event, as the back-ends that answer one at a time offer it."""
        return (await self.analyze_batch([event]))[0]

    def decide(self, event: Event) -> Analysis | None:
        """What the policy or the check decides of `event` with no model, or None: the model is asked (blocking:
        the translator runs). The service asks this before the model's queue (base.Deciding). For an event left
        to the model, what the facts and the policy say meanwhile is kept for its first answer (`leaning`)."""
        ruled = self.rule(self._known(event))
        if ruled.leaning is not None:
            with self._lock:
                self._leanings[event.event_id] = ruled.leaning
                while len(self._leanings) > LEANINGS_KEPT:
                    self._leanings.popitem(last=False)
        return ruled.analysis

    def leaning(self, event_id: str) -> Analysis | None:
        """What the facts and the policy said of an event `decide` left to the model (base.Leaning), taken once."""
        with self._lock:
            return self._leanings.pop(event_id, None)

    def light(self, event: Event) -> Analysis | None:
        """The light path's verdict (light.py, base.Light): the policy's leaning where a policy speaks for the
        place, else the check over the closer look; read on the zones the cloud knows, as the model's prompt is."""
        known = self._known(event)
        if self.book.for_event(known) is None:
            started = time.perf_counter()
            return by_check(self.translator.translate(known), started)
        ruled = self.rule(known)
        return leaning_said(ruled.analysis or ruled.leaning)

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        batch = [self._known(e) for e in events]
        ruled = await asyncio.to_thread(lambda: [self.rule(e) for e in batch])
        asked = [e for e, r in zip(batch, ruled, strict=True) if r.analysis is None]
        answers = iter(await self.inner.analyze_batch(asked) if asked else [])
        out = []
        for event, r in zip(batch, ruled, strict=True):
            out.append(r.analysis if r.analysis is not None else self._after_model(event, r, next(answers)))
        return out

    def _known(self, event: Event) -> Event:
        """The event with only the zones the cloud knows for its camera: another name a device sends reaches
        no prompt and no rule."""
        known = self.book.known_zones(event.camera)
        zones = [z for z in event.zones if zone_word(z) in known]
        return event if zones == event.zones else event.model_copy(update={"zones": zones})

    def rule(self, event: Event) -> _Ruled:
        """What the policy makes of one event before any model (blocking: the translator runs)."""
        policy = self.book.for_event(event)
        if policy is None:
            return _Ruled(None, None, None)
        started = time.perf_counter()
        facts = self.translator.translate(event)
        if not facts.decoded or not facts.label_known:
            clause = "the closer look cannot tell whether one is there"
            return _Ruled(None, policy, clause, self._made(event, policy, facts, "unknown", "policy", clause, started,
                                                           0.0))
        score = facts.label_score
        if score < ABSENT:
            clause = f"absent: the closer look finds no {facts.label} ({score:.2f})"
            return _Ruled(self._made(event, policy, facts, "benign", "check", clause, started,
                                     round(1.0 - score, 3)), policy, clause)
        decision = evaluate(policy, self._seen(event, facts))
        if decision.verdict is None:
            return _Ruled(None, policy, decision.clause, self._made(event, policy, facts, "unknown", "policy",
                                                                    decision.clause, started, 0.0))
        if score >= SURE or decision.verdict == "benign":
            return _Ruled(self._made(event, policy, facts, decision.verdict, "policy", decision.clause, started,
                                     round(max(score, 1.0 - score), 3)), policy, decision.clause)
        # a faint shape, and the policy says alert for a person there: whether one is there is the model's to say;
        # meanwhile the policy's alert stands, as sure as the shape is a person
        clause = f"{decision.clause}, if someone is there (faint: {score:.2f})"
        return _Ruled(None, policy, clause, self._made(event, policy, facts, decision.verdict, "policy", clause,
                                                       started, round(score, 3)))

    def _seen(self, event: Event, facts: Facts) -> Seen:
        if facts.label.lower() == "person" and facts.label_score >= MIN_OBJECT:
            wearing = facts.hivis  # the closer look measured it on this crop and box already (one decode)
        else:
            wearing = hivis(event.crop, facts.label_box)  # measured: rule() reads only a score >= ABSENT
        return Seen(event_facts(event), event.label, wearing, facts.upper, facts.lower,
                    frozenset(name for name, _ in facts.objects))

    def _made(self, event: Event, policy: Policy, facts: Facts, verdict: str, by: str, clause: str,
              started: float, confidence: float) -> Analysis:
        return Analysis(verdict=verdict, confidence=confidence, description=from_facts(facts, verdict),
                        model=AT_ONCE_MODEL, prompt_version=self.prompt_version(event),
                        analyze_ms=(time.perf_counter() - started) * 1000, facts=tuple(facts.sentences()),
                        decided_by=by, policy=policy.plain(), clause=clause,
                        policy_inputs=inputs(policy, event_facts(event)),
                        extra={"person_score": facts.label_score})

    def _after_model(self, event: Event, ruled: _Ruled, answer: Analysis) -> Analysis:
        """The model's answer with the policy's part: what it was asked for (`clause`) and the policy inputs."""
        if answer.error is not None or ruled.policy is None:
            return answer
        policy = ruled.policy
        by = answer.decided_by or ("check" if answer.checked else "model")
        return replace(answer, decided_by=by, policy=policy.plain(), clause=ruled.clause,
                       prompt_version=self.prompt_version(event),
                       policy_inputs=inputs(policy, event_facts(event)))


__all__ = ["PolicyBook", "PolicyGate", "Remembered"]
