"""The consistency check: the model's answer held against the translator's evidence, by a written table.

The model is asked on every cache miss and its answer stands unless one row below says the evidence
overrules it. An overruled verdict keeps `source: "llm"` and says so: `checked` carries the row's reason and
`model_verdict` what the model said. Rows (label = what the device asked about; "sure" = the shipped
detector's score for it on the crop at full size, >= SURE; "absent" = below ABSENT, or not there at all):

| row           | the model says  | the evidence                                   | the verdict becomes |
|---------------|-----------------|------------------------------------------------|---------------------|
| absent        | alert           | absent, for a label the detector knows         | benign              |
| sure          | benign          | sure, and no operator policy for this place    | alert               |
| sure-unknown  | unknown         | sure                                           | alert               |
| absent-unknown| unknown         | absent, for a label the detector knows         | benign              |
| unreadable    | alert or benign | the crop does not decode as an image           | unknown             |

Between ABSENT and SURE (a faint or partial shape) the model's answer always stands: that is where the
evidence cannot tell and the model is what is asked. A policy can make a real person benign, so the `sure`
row does not apply where one is configured. The description is checked too: one that names a COCO object
the facts do not name (or says "person" where the verdict says there is none) is replaced by the facts'
own wording, noted in `extra["description_fixed"]`.

The confidence is calibrated (calibrate.py), never the model's number as written.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from .answer import Answer, AnswerError, parse_answer
from .base import Analysis, fallback
from .calibrate import Calibration, evidence_score, features
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
    if model_verdict == "unknown" and score >= SURE:
        return Ruling("alert", f"sure-unknown: the closer look is certain of a {label} ({score:.2f})")
    if model_verdict == "unknown" and absent:
        return Ruling("benign", f"absent-unknown: the closer look finds no {label} at all ({score:.2f})")
    return Ruling(model_verdict, None)


_COCO_WORDS: set[str] | None = None


def _object_words() -> set[str]:
    global _COCO_WORDS
    if _COCO_WORDS is None:
        from ...shared.modelfiles import resolve

        names = resolve("yolox_nano", verify=False).labels
        _COCO_WORDS = {w for name in names for w in name.lower().split()} - {"the", "a", "of"}
    return _COCO_WORDS


def invented(description: str, facts: Facts, verdict: str) -> set[str]:
    """COCO object words in the description that the facts do not name; where the verdict says there is no
    such thing, the label itself too (unless it is said to be absent: "no person")."""
    text = description.lower()
    named = facts.words()
    if verdict != "alert":
        named = named - {facts.label.lower()}
        text = re.sub(rf"\b(no|not a|without a) {re.escape(facts.label.lower())}", " ", text)
    words = set(re.findall(r"[a-z]+", text))
    words |= {w[:-1] for w in words if w.endswith("s")}  # plurals
    return (words & _object_words()) - named


def facts_description(facts: Facts, verdict: str) -> str:
    """A description in the facts' own words, for when the model's would say something they do not."""
    others = ", ".join(name for name, _ in facts.objects)
    if not facts.decoded:
        return "The crop is not a readable image."
    if verdict == "alert" or facts.label_score >= SURE:
        colours = f" in a {facts.upper} top and {facts.lower} bottom" if facts.upper and facts.lower else ""
        text = f"A {facts.label}{colours}"
        return text + (f", with {others}." if others else ".")
    return f"No {facts.label}" + (f"; {others} seen." if others else "; only the background.")


def judged(answer: Answer, prompt: Prompt, verdict_p: dict[str, float] | None, calibration: Calibration, *,
           name: str, started: float, extra: dict) -> Analysis:
    """The model's answer after the check, with a calibrated confidence: what the service publishes."""
    facts = prompt.facts
    ruling = rule(answer.verdict, facts, prompt.policy)
    verdict = ruling.verdict
    description = answer.description
    if facts is not None:
        made_up = invented(description, facts, verdict)
        if made_up or ruling.reason is not None:
            extra["description_fixed"] = sorted(made_up) or ["overruled"]
            extra["model_description"] = description
            description = facts_description(facts, verdict)
    if verdict_p is None:  # a server's answer: its stated confidence is all there is of its own belief
        verdict_p = {answer.verdict: answer.confidence}
    extra.update(model_confidence=answer.confidence, verdict_p={k: round(v, 3) for k, v in verdict_p.items()})
    extra["evidence_score"] = evidence_score(facts)
    confidence = calibration.confidence(features(verdict, verdict_p, extra["evidence_score"],
                                                 ruling.reason is not None, facts.picture if facts else ()))
    return Analysis(verdict=verdict, confidence=round(confidence, 3), description=description, model=name[:128],
                    prompt_version=prompt.version, analyze_ms=(time.perf_counter() - started) * 1000,
                    extra=extra, facts=tuple(facts.sentences()) if facts is not None else (),
                    model_verdict=answer.verdict, checked=ruling.reason)


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
