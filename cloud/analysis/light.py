"""The light path: a verdict with no model, from the cloud's closer look and the operator's policy, for when
neither model can answer within T_max (cloud.routing, reason `neither_in_time`). The seed's L_light.

It says only what a model's answer could not change by much, and nothing else (None: a model is asked):

- with a policy for the place: the policy's leaning (gate.PolicyGate.light): a faint shape where the policy
  says alert for a person stays "alert, if someone is there"; a clause the facts cannot decide says nothing;
- without one, the check table (check.py) over the closer look: a label the closer look finds absent is benign
  (a model's alert is overruled there, its "unknown" becomes benign), one it sees ("Person: yes") is alert (a
  model's benign is overruled there; only its "unknown" could differ); a faint one, a label the detector does
  not know, or a crop that does not decode says nothing.

Its answer is provisional (no reuse rule) and the large model's final answer replaces it (cloud.finals).
Blocking: the closer look runs (once per event: the translator is the members' `Remembered` one).
"""

from __future__ import annotations

import time

from ...shared.protocol import Event
from .base import Analysis
from .check import ABSENT
from .describe import from_facts, seen
from .prompt import Translating
from .translator import Facts

MODEL = "check"  # on the verdict, after its lane: "light: check" ("light: policy" for a policy's leaning)


def by_check(facts: Facts, started: float) -> Analysis | None:
    """The check table's verdict over the closer look where no policy speaks (module docstring), or None."""
    if not facts.decoded or not facts.label_known:
        return None
    score = facts.label_score
    if score < ABSENT:
        verdict, confidence = "benign", 1 - score
        clause = f"absent: the closer look finds no {facts.label} ({score:.2f})"
    elif seen(facts):
        verdict, confidence = "alert", score
        clause = f"seen: the closer look finds a {facts.label} ({score:.2f})"
    else:
        return None  # faint: what a model is asked for
    return Analysis(verdict=verdict, confidence=round(confidence, 3), description=from_facts(facts, verdict),
                    model=MODEL, prompt_version="", analyze_ms=(time.perf_counter() - started) * 1000,
                    facts=tuple(facts.sentences()), decided_by="check", clause=clause,
                    extra={"person_score": score})


def leaning_said(leaning: Analysis | None) -> Analysis | None:
    """A policy's leaning as a light verdict: only where it says alert or benign."""
    return leaning if leaning is not None and leaning.verdict in ("alert", "benign") else None


class LightPath:
    """`judge` an event with no model and no policy (module docstring); `translator` the closer look the members
    share. With policies, gate.PolicyGate.light judges (it reads the zones the cloud knows, as its model does)."""

    def __init__(self, translator: Translating) -> None:
        self.translator = translator

    def light(self, event: Event) -> Analysis | None:
        started = time.perf_counter()
        return by_check(self.translator.translate(event), started)
