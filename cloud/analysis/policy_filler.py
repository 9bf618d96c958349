"""Words that set no condition, taken out of a sentence by a named rule before the grammar reads the rest, and
named back in the clause's words (every word used or named):

- a reason after the verdict: "... - could be a wandering patient", "... - alert so I can open the second
  till", "..., we've had locks cut", "... - they might be asleep". It opens with a reason word ("could be",
  "so I can", "because", "in case" ...) after a dash, a comma or (for "so I/we can", "so that", "because") a
  space, runs to the end of the sentence, and holds no word that could set or undo a condition: no negation or
  exception word, no number, clock time, day, time of day, colour, carried object or zone. Otherwise it stays,
  and the sentence is read (or not) with it;
- a hedge: "obviously", "of course", "definitely", "certainly", "naturally";
- "also" / "and also" / "plus" opening a sentence, and "too" / "as well" / "also" ending it: a sentence that
  says its own verdict says it whether or not another came before ("Also alert me if ...": the sentence
  still needs its own verdict, so "Also anyone in red." stays NOT COMPILED).

What is left must compile by the grammar's rules on its own; this module never makes a sentence compile that
says a condition it did not read.
"""

from __future__ import annotations

import re

from ...shared.policycell import zone_word
from .policy_lexicon import _DAY_WORDS, COLOURS, NUMWORDS, OBJECTS

_REASON_AFTER_MARK = (r"(?:it|that|this|they|he|she)\s+(?:could|might|may|would)\s+be|could\s+be|might\s+be|"
                      r"may\s+be|(?:it|that|this)(?:'s|\s+is)\s+probably|probably|because|cos|in\s+case|"
                      r"(?:we|they|i)(?:'ve|\s+have)\s+had|so\s+(?:i|we)\s+can|so\s+that")
_REASON = re.compile(
    r"(?:\s+-+>?\s+|\s*,\s*|\s+-\s*)(?P<tail>(?:" + _REASON_AFTER_MARK + r")\b.*)$"
    r"|\s+(?P<so>(?:so\s+(?:i|we)\s+can|so\s+that|because)\b.*)$", re.IGNORECASE)
# words a reason may not hold: they could set or undo a condition
_GUARDED = frozenset((
    "not", "no", "never", "nobody", "none", "nothing", "without", "unless", "except", "but", "only", "other", "else",
    "until", "after", "before", "between", "from", "since", "during", "while", "when", "whenever",
    "if", "night", "nights", "morning", "mornings", "afternoon", "afternoons", "evening", "evenings", "day",
    "days", "daytime", "weekend", "weekends", "weekday", "weekdays", "week", "hours", "hour", "minutes", "minute",
    "mins", "min", "seconds", "midnight", "noon", "midday", "am", "pm", "late", "early", "tonight", "overnight",
    "hivis", "hi-vis", "vest", "alone", "more", "less", "fewer", "over", "under", "least", "most", "than",
    "alert", "alerts", "alarm", "ignore", "fine", "ok", "okay", "allowed", "always", "every", "any", "all", "time",
    "times", "inside", "outside", "entering", "leaving", "towards", "away", "past"))
_HEDGES = re.compile(r",?\s*\b(?:obviously|of\s+course|definitely|certainly|naturally)\b,?", re.IGNORECASE)
ALSO = ": another rule, no rule of its own"
_OPENER = re.compile(r"^\s*(?:and\s+also|also|plus)\b,?\s+", re.IGNORECASE)
_CLOSER = re.compile(r",?\s+(?:too|as\s+well|also)\s*$", re.IGNORECASE)


_BARE_NO = re.compile(r"(?:-+>?|=)\s*no\s*[.!]?\s*$", re.IGNORECASE)
_DASH_ALERT = re.compile(r"(?:-+>?|=)\s*(?:yes\b,?\s*)?(?:an?\s+)?(?:alert|alarm)\b", re.IGNORECASE)


def bare_no(sentences: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Each sentence, with "X - no" read as "X - no alert" where another sentence of the same policy gives its
    verdict the same way as an alert ("Y - alert", "Y -> yes alert"): the "no" answers the same question. Alone
    ("Cows in the yard - no"), "no" could be "no alert" or "no cows": the sentence stays as it is."""
    contrast = [i for i, s in enumerate(sentences) if _DASH_ALERT.search(s)]
    out: list[tuple[str, tuple[str, ...]]] = []
    for i, sentence in enumerate(sentences):
        m = _BARE_NO.search(sentence)
        if m and any(j != i for j in contrast):
            said = sentences[next(j for j in contrast if j != i)]
            out.append((sentence[:m.start()] + "- no alert",
                        (f"“{m.group(0).strip()}”: no alert, as “{_DASH_ALERT.search(said).group(0)}” is one",)))
        else:
            out.append((sentence, ()))
    return out


def _guarded(words: list[str], zones: tuple[str, ...]) -> bool:
    places = {w for z in zones for w in zone_word(z).split()}
    return any(w in _GUARDED or w.endswith("n't") or w in places or w in COLOURS or w in OBJECTS
               or w in NUMWORDS or w in _DAY_WORDS or any(ch.isdigit() for ch in w) for w in words)


def fillers(sentence: str, zones: tuple[str, ...] = ()) -> tuple[str, tuple[str, ...]]:
    """The sentence without the words that set no condition, and those words, each named by its rule."""
    named: list[str] = []
    text = sentence.replace("’", "'")
    m = _REASON.search(text)
    if m:
        tail = m.group("tail") or m.group("so")
        words = re.findall(r"[a-z0-9][a-z0-9'-]*", tail.lower())
        if words and not _guarded(words, zones):
            named.append(f"“{tail.strip()}”: a reason, no rule")
            text = text[:m.start()]
    for hedge in _HEDGES.finditer(text):
        named.append(f"“{hedge.group(0).strip(' ,')}”: a hedge, no rule")
    text = _HEDGES.sub(" ", text)
    m = _OPENER.match(text)
    if m:
        named.append(f"“{m.group(0).strip(' ,')}”{ALSO}")
        text = text[m.end():]
    m = _CLOSER.search(text)
    if m:
        named.append(f"“{m.group(0).strip(' ,')}”: said of another rule too, no rule of its own")
        text = text[:m.start()]
    return re.sub(r"\s+", " ", text).strip(" ,"), tuple(named)


__all__ = ["ALSO", "bare_no", "fillers"]
