"""Questions as people type them: chat shorthand ("ppl", "wen", "nite"), numbers glued to units ("24h",
"30mins") and one-letter slips in the words the rules read ("alerst", "yesterdya", "evning") are written out,
so that the rules, the classifier and the cache see the same words whichever way a question was typed.

Only the rules' own vocabulary is corrected, only words of five letters or more that are not already a word
the rules know, only to a word with the same first letter one edit away (one letter added, dropped, changed,
or two neighbours swapped), and only when one such word exists (or several that are one word and its plural:
"alerst" -> "alerts"): "there" stays "there".
"""

from __future__ import annotations

import re
from functools import lru_cache

SHORTHAND = {
    "ppl": "people", "ppls": "people", "peeps": "people", "hw": "how", "wen": "when", "wht": "what", "wat": "what",
    "lst": "last", "nite": "night", "tonite": "tonight", "2nite": "tonight", "2day": "today", "tday": "today",
    "yday": "yesterday", "ytd": "yesterday", "yest": "yesterday", "ystrday": "yesterday", "mins": "minutes",
    "hrs": "hours", "sb": "somebody", "smb": "somebody", "sth": "something", "smth": "something", "b4": "before",
    "u": "you", "r": "are", "thru": "through", "abt": "about", "evng": "evening", "mornin": "morning",
    "arvo": "afternoon", "eve": "evening", "tmrw": "tomorrow", "2moro": "tomorrow", "ystday": "yesterday",
    "aft": "afternoon", "morn": "morning", "any1": "anyone", "some1": "someone", "every1": "everyone",
    "sum1": "someone", "no1": "nobody", "ne1": "anyone",
}
# the words the rules read that are long enough to correct safely (camera names are matched apart)
KEYWORDS = frozenset("""
today yesterday tonight morning afternoon evening overnight midnight minute minutes hours since earlier
monday tuesday wednesday thursday friday saturday sunday
alert alerts alarm alarms alerted benign harmless events detections detection activity movement motion
people person persons someone somebody anyone anybody anything something visitor visitors pedestrian
pedestrians bicycle bicycles cyclist vehicle vehicles trucks
earliest latest recent recently number total often display happened describe description wearing carrying
holding suspicious unusual strange summary summarise summarize explain behaviour behavior recognise recognize
familiar delivery package parcel stranger strangers
""".split())
_UNIT = re.compile(r"\b(\d+)(h|hr|hrs|m|min|mins)\b")  # "24h" (not "2day", shorthand for today)
_UNITS = {"h": "hours", "hr": "hours", "hrs": "hours", "m": "minutes", "min": "minutes", "mins": "minutes"}


def _edits(word: str) -> set[str]:
    """Every string one edit from `word` (deletes, swaps, changes, inserts over a-z)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return ({a + b[1:] for a, b in splits if b}
            | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
            | {a + c + b[1:] for a, b in splits if b for c in letters}
            | {a + c + b for a, b in splits for c in letters})


@lru_cache(maxsize=4096)
def corrected(word: str) -> str:
    """`word` as the rules spell it: shorthand written out, else a slip one edit from a keyword fixed."""
    if word in SHORTHAND:
        return SHORTHAND[word]
    if len(word) < 5 or word in KEYWORDS or not word.isalpha() or word.removesuffix("s") in KEYWORDS:
        return word  # "numbers" is a word of its own, no slip for "number"
    near = sorted(k for k in _edits(word) & KEYWORDS if k[0] == word[0])
    if len({k.removesuffix("s") for k in near}) != 1:
        return word  # none, or two different words: leave it
    return min(near, key=lambda k: abs(len(k) - len(word)))


def spell(text: str) -> str:
    """Lower-case words with single spaces in, the same out with units spelt and slips fixed."""
    text = " ".join(SHORTHAND.get(word, word) for word in text.split())
    text = _UNIT.sub(lambda m: f"{m[1]} {_UNITS[m[2]]}", text)
    return " ".join(corrected(word) for word in text.split())
