"""The site's own words as a small language model for the CPU recogniser (cloud.ask.voice.sphinx).

Questions about a site's events are a narrow language: a few question forms, times, labels and the operator's
camera and zone names. A trigram model of that language makes "porch", "back door" and "after midnight" the
likely words where the general English model hears "so many people are they". It is written as ARPA text from

    the router's own training questions   (cloud/ask/data/complexity_train.jsonl: how people ask)
    the router's grammar at this site     (cloud.ask.voice.grammar: the rules' question forms, label, verdict
                                           and time words, at every camera and zone the operator named)
    the words the rules read              (each a sentence of its own, so the model knows them all)

Probabilities are absolute-discounted with back-off (D = 0.5), add-k smoothed unigrams. The bench's questions
are never read here: bench/voice.py measures on phrasings the model was not built from.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from ..complexity import TRAIN_FILE
from . import grammar

ORDER = 3
DISCOUNT = 0.5
UNIGRAM_K = 0.1
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen twenty").split()
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_UNITS = frozenset("am pm o'clock oclock hours hour minutes minute days day weeks week times seconds".split())
_BEFORE_TIMES = frozenset("since after before at until till by from to between and past around".split())

def _spelt(n: int) -> str:
    if n <= 20:
        return _NUMBERS[n]
    if n < 100:
        return _TENS[n // 10] + (f" {_NUMBERS[n % 10]}" if n % 10 else "")
    return " ".join(_NUMBERS[int(d)] for d in str(n))


def words_of(text: str) -> list[str]:
    """A sentence as the recogniser's words: lower case, digits spelt out, punctuation dropped, "5am" as
    "five a.m." (the dictionary's "am" is the verb)."""
    text = re.sub(r"(\d)\s*([ap])\.?m\b\.?", r"\1 \2m", text.lower())
    text = re.sub(r"\d+", lambda m: _spelt(int(m.group())), text)
    words = _WORD.findall(text.replace("_", " ").replace("-", " "))
    return ["a.m." if w == "am" and i and words[i - 1] in _NUMBERS else w for i, w in enumerate(words)]


def plain(hypothesis: str) -> str:
    """A recogniser's words as a question is typed: "a.m." and "p.m." as am and pm, and numbers said as
    times or amounts in digits ("since nine pm" -> "since 9 pm", "last three hours" -> "last 3 hours"), as
    the router reads them; "anyone" and "the last one" keep their words."""
    words = re.sub(r"\b([ap])\.m\.", r"\1m", hypothesis).split()
    out: list[str] = []
    i = 0
    while i < len(words):
        value, used = _number_at(words, i)
        after = words[i + used] if i + used < len(words) else ""
        if used and (after in _UNITS or (out and out[-1] in _BEFORE_TIMES)):
            out.append(str(value))
            i += used
        else:
            out.append(words[i])
            i += 1
    return " ".join(out)


def _number_at(words: list[str], i: int) -> tuple[int, int]:
    """The number said at words[i] ("forty five": 45, 2 words), or (0, 0)."""
    word = words[i]
    if word in _TENS[2:6]:
        tens = _TENS.index(word) * 10
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if nxt in _NUMBERS[1:10]:
            return tens + _NUMBERS.index(nxt), 2
        return tens, 1
    if word in _NUMBERS:
        return _NUMBERS.index(word), 1
    return 0, 0


def site_sentences(places: Iterable[str], keywords: Iterable[str], train_file: Path = TRAIN_FILE) -> list[list[str]]:
    """The corpus: the router's training questions, the question forms with every place name, the keywords."""
    sentences = [words_of(json.loads(line)["q"]) for line in train_file.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    sentences += [words_of(s) for s in grammar.sentences({" ".join(words_of(p)) for p in places})]
    sentences += [words_of(w) for w in sorted(set(keywords))]
    return [s for s in sentences if s]


def arpa(sentences: list[list[str]], known: Callable[[str], bool]) -> str:
    """An ARPA trigram model of `sentences`, over the words `known` accepts (the recogniser's dictionary);
    a sentence with a word it does not know is cut there."""
    counts: list[Counter[tuple[str, ...]]] = [Counter() for _ in range(ORDER)]
    for sentence in sentences:
        kept: list[str] = []
        for word in sentence:
            if not known(word):
                break
            kept.append(word)
        tokens = ["<s>", *kept, "</s>"]
        for n in range(1, ORDER + 1):
            for i in range(len(tokens) - n + 1):
                counts[n - 1][tuple(tokens[i:i + n])] += 1
    probs: list[dict[tuple[str, ...], float]] = [{} for _ in range(ORDER)]
    bows: dict[tuple[str, ...], float] = {}
    unigrams = counts[0]
    total = sum(c for g, c in unigrams.items() if g != ("<s>",))
    vocab = [g for g in unigrams if g != ("<s>",)]
    for gram in vocab:
        probs[0][gram] = (unigrams[gram] + UNIGRAM_K) / (total + UNIGRAM_K * len(vocab))

    def backed(gram: tuple[str, ...]) -> float:
        if len(gram) == 1:
            return probs[0].get(gram, 0.0)
        if gram in probs[len(gram) - 1]:
            return probs[len(gram) - 1][gram]
        return bows.get(gram[:-1], 1.0) * backed(gram[1:])

    for n in range(2, ORDER + 1):
        by_history: dict[tuple[str, ...], list[tuple[tuple[str, ...], int]]] = {}
        for gram, c in counts[n - 1].items():
            by_history.setdefault(gram[:-1], []).append((gram, c))
        for history, grams in by_history.items():
            seen = sum(c for _, c in grams)
            for gram, c in grams:
                probs[n - 1][gram] = (c - DISCOUNT) / seen
            left = 1.0 - sum(probs[n - 1][g] for g, _ in grams)
            lower = 1.0 - sum(backed(g[1:]) for g, _ in grams)
            bows[history] = left / lower if lower > 1e-9 else 1.0
    lines = ["\\data\\"] + [f"ngram {n + 1}={len(probs[n]) + (1 if n == 0 else 0)}" for n in range(ORDER)] + [""]
    for n in range(ORDER):
        lines.append(f"\\{n + 1}-grams:")
        if n == 0:
            lines.append(f"-99.0000\t<s>\t{math.log10(bows.get(('<s>',), 1.0)):.4f}")
        for gram, p in sorted(probs[n].items()):
            bow = f"\t{math.log10(bows[gram]):.4f}" if n < ORDER - 1 and gram in bows else ""
            lines.append(f"{math.log10(p):.4f}\t{' '.join(gram)}{bow}")
        lines.append("")
    lines.append("\\end\\")
    return "\n".join(lines) + "\n"
