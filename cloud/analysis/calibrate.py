"""Confidence that means something: the probability that a verdict is right, from a small logistic model
over what the model and the evidence say, fitted on the labelled crop set (bench/verdicts.py --fit writes
calibration.json; the bench reports its ECE leave-one-clip-out, on crops of clips the fit never saw).

Features of a final verdict v: the model's own probability of v (its verdict distribution; a server's stated
confidence), how strongly the closer look agrees with v (the label's score for alert, one minus it for
benign), whether the check overruled the model, and whether the picture is poor (dark, blown out or soft:
translator.picture_flags), where the closer look itself is less to be trusted. A fit made before a feature
existed weighs it 0.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .translator import Facts

EPS = 1e-3


def _logit(p: float) -> float:
    p = min(1 - EPS, max(EPS, p))
    return math.log(p / (1 - p))


def evidence_score(facts: Facts | None) -> float | None:
    """The closer look's score for the label, None where it cannot say (no facts, no image, no such class)."""
    if facts is None or not facts.decoded or not facts.label_known:
        return None
    return facts.label_score


def features(verdict: str, verdict_p: dict[str, float], score: float | None, overruled: bool,
             picture: tuple[str, ...] | list[str] = ()) -> list[float]:
    """[1, logit(model's p of the verdict), logit(evidence for it), overruled, poor picture]; `score` from
    evidence_score, `picture` the translator's picture flags."""
    p = verdict_p.get(verdict, 0.0)
    if score is None or verdict == "unknown":
        evidence = 0.5
    else:
        evidence = score if verdict == "alert" else 1.0 - score
    return [1.0, _logit(p), _logit(evidence), 1.0 if overruled else 0.0, 1.0 if picture else 0.0]


@dataclass(frozen=True)
class Calibration:
    weights: tuple[float, ...]

    def confidence(self, x: list[float]) -> float:
        weights = self.weights + (0.0,) * (len(x) - len(self.weights))  # a feature newer than the fit: 0
        z = sum(w * v for w, v in zip(weights, x, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    @classmethod
    def load(cls, path: str | Path | None = None) -> Calibration:
        """The shipped fit (calibration.json next to this module), or the one at `path`."""
        if path is None:
            text = (resources.files("edgetriage.cloud.analysis") / "calibration.json").read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        return cls(tuple(float(w) for w in json.loads(text)["weights"]))


def fit(rows: list[list[float]], correct: list[bool], l2: float = 1.0, steps: int = 50) -> Calibration:
    """Logistic regression by Newton's method with an L2 penalty on every weight, the intercept too: a prior
    that pulls towards 0.5 where the data say little. The labelled set is small and the verdicts on it are
    nearly all right, so without it the fit runs off to a constant 1.0 that says nothing about a new crop."""
    import numpy as np

    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    w = np.zeros(x.shape[1])
    penalty = np.eye(x.shape[1]) * l2
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        gradient = x.T @ (p - y) + penalty @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty + np.eye(x.shape[1]) * 1e-9
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Calibration(tuple(float(v) for v in w))


def ece(confidences: list[float], correct: list[bool], bins: int = 10) -> float:
    """Expected calibration error over equal-width confidence bins."""
    total = len(confidences)
    if not total:
        return 0.0
    error = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [i for i, c in enumerate(confidences) if lo <= c < hi or (b == bins - 1 and c == 1.0)]
        if members:
            mean_conf = sum(confidences[i] for i in members) / len(members)
            accuracy = sum(correct[i] for i in members) / len(members)
            error += len(members) / total * abs(mean_conf - accuracy)
    return error
