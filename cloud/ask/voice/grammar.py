"""The question language the router reads, as sentences: what the site's language model (sitelm) learns from.

Every part comes from what the router itself reads, never from a bench's questions:

    things   the label and verdict words of the rules (rules.LABEL_WORDS, VERDICT_WORDS), plural and one
    forms    phrasings of each intent the rules recognise (count, first, last, list, exists, how long) and of
             the open questions that go to the model (what happened, who, describe, anything unusual)
    times    the time words when.py reads: days, parts of a day, clock times after each of its prepositions
             (after, since, before, until, by, around, at, between .. and ..), spans (in the last N hours)
    places   the operator's camera and zone names in each spoken form (given by the caller)

Each time phrase is said in a few forms and places, and each form at each place, with the things and times
taking turns: every word pair and triple of the language is seen, with a corpus of a few thousand sentences.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..rules import LABEL_WORDS, NOT_TAUGHT, VERDICT_WORDS
from ..when import WEEKDAYS

_PRONOUNS = frozenset("someone somebody anyone anybody nobody".split())
_COLLECTIVE = frozenset("people men women children kids guys ladies humans".split())


def _things() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(plural things, one thing, a thing's noun): "people", "cars", "alerts", "benign events"; "a person",
    "someone", "an alert"; "person", "car", "alert"."""
    plural: list[str] = ["events", "detections"]
    one: list[str] = ["anything", "something", "any motion"]
    noun: list[str] = ["event", "detection", "visit"]
    for word in (w for words in LABEL_WORDS.values() for w in words if w not in NOT_TAUGHT):
        if word in _PRONOUNS or word == "no one":
            one.append(word)
        elif word in _COLLECTIVE or word.endswith("s"):
            plural.append(word)
        else:
            one.append(("an " if word[0] in "aeiou" else "a ") + word)
            noun.append(word)
    for word in (w for words in VERDICT_WORDS.values() for w in words if w not in NOT_TAUGHT):
        if word.endswith("s") and not word.endswith("ss"):
            plural.append(word)  # "alerts", "false alarms", "false positives"
        elif word.split()[-1] in ("alert", "alarm", "positive"):
            one.append(("an " if word[0] in "aeiou" else "a ") + word)
            noun.append(word)
        elif " " not in word:
            plural.append(f"{word} events")  # "benign events", "unclassified events"
    return tuple(plural), tuple(one), tuple(noun)


PLURAL, ONE, NOUN = _things()
# questions the rules answer; {many}: a plural thing, {one}: one thing, {thing}: a thing's noun,
# {place}: a camera or zone, {time}: a time phrase (or none)
FORMS = (
    "how many {many} came to the {place} {time}", "how many {many} were at the {place} {time}",
    "how many {many} were seen on the {place} camera {time}", "how many {many} did the {place} get {time}",
    "number of {many} at the {place} {time}", "count the {many} on the {place} {time}",
    "how often was there {one} at the {place} {time}", "how many times did {one} come to the {place} {time}",
    "how many {many} {time}", "how many {many} were there {time}",
    "when was the first {thing} at the {place} {time}", "when did {one} first come to the {place} {time}",
    "the earliest {thing} at the {place} {time}",
    "when was the last {thing} at the {place}", "when did {one} last come to the {place}",
    "when was {one} last seen at the {place}", "the most recent {thing} at the {place}",
    "the latest {thing} on the {place}",
    "how long ago was {one} at the {place}",
    "list the {many} at the {place} {time}", "show me the {many} on the {place} camera {time}",
    "give me the {many} at the {place} {time}", "which events were at the {place} {time}",
    "was there {one} at the {place} {time}", "were there any {many} at the {place} {time}",
    "did {one} come to the {place} {time}", "did the {place} camera see {one} {time}",
    "any {many} at the {place} {time}", "has there been {one} at the {place} {time}",
    "is there {one} at the {place}", "anyone at the {place} {time}", "anything on the {place} camera {time}",
    "someone at the {place} {time}", "anybody on the {place} {time}", "was {one} there {time}",
    "did {one} show up at the {place} {time}", "were {many} on the {place} {time}",
    "how long did {one} stay at the {place} {time}",
)
# questions the router sends to the model (open ones): heard as well, answered by the model
OPEN_FORMS = (
    "what happened at the {place} {time}", "who was at the {place} {time}",
    "what was {one} at the {place} wearing", "describe the {many} at the {place} {time}",
    "is there anything unusual at the {place} {time}", "what did the {place} camera see {time}",
)


def _hours() -> list[str]:
    return [str(h) for h in range(1, 13)]


def times() -> tuple[str, ...]:
    """The time phrases the router reads (when.py), digits as typed (words_of says them)."""
    days = ["today", "earlier today", "so far today", "yesterday", "the day before yesterday", "this week",
            "this weekend", "last weekend"]
    days += [f"{prep}{day}" for day in WEEKDAYS for prep in ("on ", "last ", "since ", "")]
    parts = ["tonight", "last night", "overnight", "at night", "after dark", "after midnight", "in the early hours",
             "in the small hours", "before dawn", "in the middle of the night", "at lunchtime", "through the night"]
    for part in ("morning", "afternoon", "evening", "night"):
        parts += [f"in the {part}", f"yesterday {part}", f"during the {part}"] + ([f"this {part}"] * (part != "night"))
        parts += [f"{day} {part}" for day in WEEKDAYS[::3]]
    clock: list[str] = []
    named = ("noon", "midday", "midnight", "lunchtime")
    for prep in ("after", "since", "before", "until", "by", "around", "at", "from", "past", "till"):
        clock += [f"{prep} {hour}{suffix}" for hour in _hours() for suffix in ("", " am", " pm", " o'clock")]
        clock += [f"{prep} {word}" for word in named]
    clock += [f"between {a} and {b}" for a in _hours() for b in (*_hours(), "noon", "midnight") if a != b]
    clock += [f"from {a} to {b}" for a in _hours()[::2] for b in _hours()[1::2]]
    clock += [f"{prep} {h}:30" for prep in ("after", "since", "before", "at") for h in _hours()]
    spans = ["in the last hour", "in the last half hour", "just now", "a few minutes ago", "a minute ago",
             "since yesterday", "in the last week", "in the past day"]
    amounts = ("couple of", "few", "several", "2", "3", "4", "5", "6", "8", "10", "12", "15", "20", "30",
               "45")
    for lead in ("in the last", "in the past", "over the last", "during the last", "within the last", "the last"):
        spans += [f"{lead} {n} {unit}" for n in amounts for unit in ("minutes", "hours", "days")]
    days_after = ("today", "yesterday", "this morning", "this evening", "tonight", "last night", "on monday")
    said_with_day = [f"{c} {days_after[i % len(days_after)]}" for i, c in enumerate(clock)]
    return tuple(dict.fromkeys(days + parts + clock + spans + said_with_day))


def sentences(places: Iterable[str], times_said: tuple[str, ...] | None = None,
              forms: tuple[str, ...] = FORMS + OPEN_FORMS) -> list[str]:
    """The router's language at this site: each form at each place, each time phrase in a few forms."""
    places = sorted(set(places) - {""}) or ["camera"]
    said = times_said if times_said is not None else times()
    out: list[str] = []
    turn = 0

    def fill(form: str, place: str, time: str) -> str:
        nonlocal turn
        turn += 1
        return " ".join(form.format(many=PLURAL[turn % len(PLURAL)], one=ONE[turn % len(ONE)],
                                    thing=NOUN[turn % len(NOUN)], place=place, time=time).split())

    for place in places:
        for i, form in enumerate(forms):
            for k in range(4):
                out.append(fill(form, place, said[(i * 7 + k * 131) % len(said)] if k else ""))
    for i, time in enumerate(said):
        for k in range(2):
            out.append(fill(forms[(i * 3 + k * 11) % len(forms)], places[(i + k) % len(places)], time))
    return out
