"""Which events the language model reads: those in the question's time range, camera, label and verdict
(filtered before this), ranked by lexical similarity to the question (Okapi BM25 over each event's facts and
description), newest first among equals. Small and in memory: the candidates are one question's events."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from .facts import EventFact

K1 = 1.2
B = 0.75
STOP = frozenset("a an the at on in of to and or was were is are did do does any anyone anybody someone what "
                 "who when where why how many much it they them there their this that with for from by be been "
                 "have has had i me my we our you your last today yesterday night morning evening afternoon "
                 "camera cam".split())


def tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOP]


def bm25(query: str, documents: Sequence[str]) -> list[float]:
    """The BM25 score of each document for the query's terms."""
    docs = [Counter(tokens(d)) for d in documents]
    if not docs:
        return []
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / len(docs) or 1.0
    terms = set(tokens(query))
    df = {t: sum(1 for d in docs if t in d) for t in terms}
    n = len(docs)
    scores = []
    for doc, length in zip(docs, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = doc.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        scores.append(score)
    return scores


def pick(question: str, candidates: Sequence[EventFact], texts: Sequence[str], k: int) -> list[EventFact]:
    """The `k` candidates the question matches best (BM25, then the newest), returned oldest first so the
    model reads them in the order they happened."""
    scores = bm25(question, texts)
    ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], -candidates[i].captured_ms))[:k]
    return sorted((candidates[i] for i in ranked), key=lambda f: f.captured_ms)
