"""The complexity score: a small logistic regression over the words of a question that says whether a query
over the events can answer it (score near 0) or it needs the language model (near 1). Microseconds per
question; never a model call.

Trained by `python -m edgetriage.cloud.ask.complexity` on data/complexity_train.jsonl (questions written for
training only; the benchmark's questions are a separate file and the benchmark checks that none of them is
in the training file) and written to data/complexity.json, which ships with the package.
"""

from __future__ import annotations

import json
import math
import sys
from importlib import resources
from pathlib import Path
from zoneinfo import ZoneInfo

from .rules import intent_of, is_open, normalise, time_window

DATA = Path(__file__).resolve().parent / "data"
TRAIN_FILE = DATA / "complexity_train.jsonl"
MODEL_FILE = DATA / "complexity.json"
LABELS = ("query", "llm")


def features(question: str) -> list[str]:
    """Words, word pairs, and what the rules see (intent, open markers, a time range)."""
    text = normalise(question)
    words = text.split()
    out = [f"w:{w}" for w in words] + [f"b:{a}_{b}" for a, b in zip(words, words[1:], strict=False)]
    out.append(f"intent:{intent_of(text)}")
    out.append(f"open:{is_open(text)}")
    out.append(f"time:{time_window(text, ZoneInfo('UTC'), 0) is not None}")
    out.append(f"len:{min(len(words) // 4, 5)}")
    out.append("bias")
    return out


class ComplexityModel:
    """Weights per feature; score = sigmoid(sum of the weights of the features present)."""

    def __init__(self, weights: dict[str, float]) -> None:
        self.weights = weights

    @classmethod
    def load(cls, path: Path | None = None) -> ComplexityModel:
        if path is not None:
            raw = path.read_text(encoding="utf-8")
        else:
            raw = (resources.files("edgetriage.cloud.ask") / "data" / "complexity.json").read_text(encoding="utf-8")
        return cls(json.loads(raw)["weights"])

    def score(self, question: str) -> float:
        z = sum(self.weights.get(f, 0.0) for f in set(features(question)))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def train(rows: list[tuple[str, int]], epochs: int = 300, rate: float = 0.5, l2: float = 1e-3) -> dict[str, float]:
    """Plain batch gradient descent on the log loss with an L2 penalty; deterministic."""
    feats = [set(features(q)) for q, _ in rows]
    weights: dict[str, float] = {f: 0.0 for fs in feats for f in fs}
    n = len(rows)
    for _ in range(epochs):
        grad = dict.fromkeys(weights, 0.0)
        for fs, (_, y) in zip(feats, rows, strict=True):
            z = sum(weights[f] for f in fs)
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
            for f in fs:
                grad[f] += p - y
        for f in weights:
            weights[f] -= rate * (grad[f] / n + l2 * weights[f])
    return {f: round(w, 5) for f, w in sorted(weights.items()) if abs(w) >= 1e-4}


def read_rows(path: Path) -> list[tuple[str, int]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        item = json.loads(line)
        if item["needs"] not in LABELS:
            raise ValueError(f"{path}:{number}: needs must be one of {LABELS}")
        rows.append((item["q"], LABELS.index(item["needs"])))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Train on the training file and write the model; prints the training accuracy."""
    args = sys.argv[1:] if argv is None else argv
    source = Path(args[0]) if args else TRAIN_FILE
    rows = read_rows(source)
    weights = train(rows)
    model = ComplexityModel(weights)
    right = sum((model.score(q) >= 0.5) == bool(y) for q, y in rows)
    MODEL_FILE.write_text(json.dumps({"trained_on": source.name, "rows": len(rows), "weights": weights},
                                     indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"trained on {len(rows)} questions from {source.name}: {right}/{len(rows)} right; wrote {MODEL_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
