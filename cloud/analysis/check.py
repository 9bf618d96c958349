"""The consistency check: the model's answer held against the translator's evidence, by a written table.

The model is asked on every cache miss and its answer stands unless one row below says the evidence
overrules it. An overruled verdict keeps `source: "llm"` and says so: `checked` carries the row's reason and
`model_verdict` what the model said. Rows (label = what the device asked about; "sure" = the shipped
detector's score for it on the crop at full size, >= SURE; "seen" = the facts' sentence says it is there,
>= MIN_OBJECT ("Person: yes"); "absent" = below ABSENT ("Person: no"), or not there at all):

| row           | the model says  | the evidence                                   | the verdict becomes |
|---------------|-----------------|------------------------------------------------|---------------------|
| absent        | alert           | absent, for a label the detector knows         | benign              |
| sure          | benign          | sure, and no operator policy for this place    | alert               |
| seen          | benign          | seen, and no operator policy for this place    | alert               |
| sure-unknown  | unknown         | sure                                           | alert               |
| absent-unknown| unknown         | absent, for a label the detector knows         | benign              |
| unreadable    | alert or benign | the crop does not decode as an image           | unknown             |

Between ABSENT and MIN_OBJECT (the facts say "faint") the model's answer always stands: that is where the
evidence cannot tell and the model is what is asked. Without a policy, "benign" means no person, so it cannot
stand where the facts say there is one. A policy can make a real person benign, so the `sure` and `seen` rows
do not apply to the verdict where one is configured; they still apply to the description (a sure person is a
person; the policy decides what a person there means).

The description is held against the facts too (describe.py: a person denied or made up, a colour, object,
zone, time, dwell or direction the facts do not hold): one that says more than they do is replaced by the
facts' own wording, its kinds in `corrected` (counted by the service) and, where the verdict itself stands,
the reason in `checked`. So no published verdict says what its facts contradict.

The confidence is calibrated (calibrate.py), never the model's number as written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .answer import Answer, AnswerError, parse_answer
from .base import Analysis, fallback
from .calibrate import Calibration, evidence_score, features
from .describe import contradictions, from_facts, seen
from .prompt import Prompt
from .translator import Facts

SURE = 0.60
ABSENT = 0.10


@dataclass(frozen=True)
class Ruling:
    verdict: str
    reason: str | None  # None: the model's verdict stands


def rule(model_verdict: str, facts: Facts | None, policy: str | None) -> Ruling:
    """The table above, for one answer."""
    if facts is None:
        return Ruling(model_verdict, None)
    label, score = facts.label, facts.label_score
    if not facts.decoded:
        if model_verdict != "unknown":
            return Ruling("unknown", "unreadable: the crop does not decode as an image, so nothing can be seen")
        return Ruling(model_verdict, None)
    absent = facts.label_known and score < ABSENT
    if model_verdict == "alert" and absent:
        return Ruling("benign", f"absent: the closer look finds no {label} at all ({score:.2f})")
    if model_verdict == "benign" and score >= SURE and not policy:
        return Ruling("alert", f"sure: the closer look is certain of a {label} ({score:.2f}) and no policy "
                               "allows one here")
    if model_verdict == "benign" and seen(facts) and not policy:
        return Ruling("alert", f"seen: the facts say there is a {label} ({score:.2f}) and no policy allows "
                               "one here")
    if model_verdict == "unknown" and score >= SURE:
        return Ruling("alert", f"sure-unknown: the closer look is certain of a {label} ({score:.2f})")
    if model_verdict == "unknown" and absent:
        return Ruling("benign", f"absent-unknown: the closer look finds no {label} at all ({score:.2f})")
    return Ruling(model_verdict, None)


def judged(answer: Answer, prompt: Prompt, verdict_p: dict[str, float] | None, calibration: Calibration, *,
           name: str, started: float, extra: dict) -> Analysis:
    """The model's answer after the check, with a calibrated confidence: what the service publishes."""
    facts = prompt.facts
    ruling = rule(answer.verdict, facts, prompt.policy)
    verdict = ruling.verdict
    description = answer.description
    checked = ruling.reason
    corrected: tuple[str, ...] = ()
    if facts is not None:
        said = contradictions(description, facts, verdict)
        if said or ruling.reason is not None:
            corrected = tuple(said)
            extra["description_fixed"] = list(said) or ["overruled"]
            extra["model_description"] = description
            description = from_facts(facts, verdict)
        if said and checked is None:
            checked = "description: " + "; ".join(f"{kind} {', '.join(what)}" for kind, what in said.items())[:140] \
                + " not in the facts, replaced by their words"
    if verdict_p is None:  # a server's answer: its stated confidence is all there is of its own belief
        verdict_p = {answer.verdict: answer.confidence}
    extra.update(model_confidence=answer.confidence, verdict_p={k: round(v, 3) for k, v in verdict_p.items()})
    extra["evidence_score"] = evidence_score(facts)
    confidence = calibration.confidence(features(verdict, verdict_p, extra["evidence_score"],
                                                 ruling.reason is not None, facts.picture if facts else ()))
    return Analysis(verdict=verdict, confidence=round(confidence, 3), description=description, model=name[:128],
                    prompt_version=prompt.version, analyze_ms=(time.perf_counter() - started) * 1000,
                    extra=extra, facts=tuple(facts.sentences()) if facts is not None else (),
                    model_verdict=answer.verdict, checked=checked, corrected=corrected)


def analysis_from_text(text: str, prompt: Prompt, calibration: Calibration, *, name: str, started: float,
                       extra: dict | None = None) -> Analysis:
    """A server's raw answer, checked: parsed leniently (servers without schema enforcement wrap it in chatter
    or code fences); anything unusable becomes "unknown" with the reason."""
    extra = dict(extra or {})
    extra["raw"] = text[:300]
    try:
        answer = parse_answer(text)
    except AnswerError as exc:
        return fallback(name, prompt.version, f"unusable model output ({exc})", started, extra)
    return judged(answer, prompt, None, calibration, name=name, started=started, extra=extra)
