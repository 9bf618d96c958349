"""Two times in one question: "this morning and this afternoon", "yesterday or today", "between 7 and 9 this
morning or between 5 and 7 this evening".

when.py reads one range from a question. A second time said in another clause would otherwise be dropped
without a word, so each clause (cut at "and", "or", "but" and commas, never inside "between 7 and 9") is read
alone, and a clause whose range lies apart from the question's is decided:

    next to it      joined: "this morning and this afternoon" is 06:00-18:00, "monday or tuesday" both days
    apart from it   named as not used ("this evening"): one question counts over one range
"""

from __future__ import annotations

import re
from collections.abc import Callable
from zoneinfo import ZoneInfo

from .when import WEEKDAYS, Window, time_window

_NUMBER = r"(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon|midnight|half|quarter|twenty)"
_KEEP = frozenset("this last yesterday today tonight morning afternoon evening night overnight weekend week".split()
                  ) | set(WEEKDAYS)  # time words a shortest reading keeps ("this evening", never "evening")
# a clause that says a day, a part of one or a span is a time of its own; one with a clock time alone ("yesterday,
# before midnight") narrows the day the question names
_DAY_SAID = re.compile(r"\b(?:today|yesterday|tonight|tomorrow|morning|afternoon|evening|night|overnight|week|weekend|"
                       r"month|ago|last|past|hours?|minutes?|days?|" + "|".join(WEEKDAYS) + r")\b|\d{1,2}/\d{1,2}")
_CUT = re.compile(r"\s+(?:and|or|but|as well as|plus)\s+(?!" + _NUMBER + r")|\s*,\s*")


def _end(window: Window, now_ms: int) -> int:
    return now_ms if window.end_ms is None else window.end_ms


def joined_window(said: str, zone: ZoneInfo, now_ms: int, window: Window | None,
                  normalise: Callable[[str], str]) -> tuple[Window | None, tuple[str, ...]]:
    """The question's range with a time said in another clause joined to it where the two meet, and the
    clauses' times that lie apart from it (named as not used). `said` is the question as written (its commas),
    `normalise` the rules' (each clause is read as they read a question)."""
    if window is None or window.start_ms is None:
        return window, ()
    clauses = [c.strip() for c in _CUT.split(said.lower()) if c.strip()]
    if len(clauses) < 2:
        return window, ()
    apart: list[str] = []
    for clause in clauses:
        other = time_window(normalise(clause), zone, now_ms) if _DAY_SAID.search(normalise(clause)) else None
        if other is None or other.start_ms is None:
            continue
        start, end = window.start_ms, _end(window, now_ms)
        if other.start_ms < end and _end(other, now_ms) > start:
            continue  # the same time, or part of it
        if other.start_ms == end or _end(other, now_ms) == start:  # next to it: one range
            first, last = (window, other) if other.start_ms == end else (other, window)
            window = Window(first.start_ms, last.end_ms, f"{first.phrase} and {last.phrase}")
            continue
        apart.append(_shortest(normalise(clause).split(), other, zone, now_ms))
    return window, tuple(dict.fromkeys(apart))


def _shortest(words: list[str], window: Window, zone: ZoneInfo, now_ms: int) -> str:
    """The fewest words of a clause, from its front and its back, that still read as `window`: the time as
    the question said it ("this evening", not "at the back door this evening")."""
    same = lambda part: (found := time_window(" ".join(part), zone, now_ms)) is not None and (  # noqa: E731
        found.start_ms, found.end_ms) == (window.start_ms, window.end_ms)
    while len(words) > 1 and words[0] not in _KEEP and same(words[1:]):
        words = words[1:]
    while len(words) > 1 and words[-1] not in _KEEP and same(words[:-1]):
        words = words[:-1]
    return " ".join(words)
