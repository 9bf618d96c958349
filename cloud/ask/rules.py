"""Keyword rules: what a question asks for (intent), about what (camera, device, label, verdict) and when (a
time range in the device's local time). Plain regular expressions over the normalised question; no model.

A question whose intent a rule recognises and that has none of the markers of an open question ("what were
they doing", "why", "same person") is a database query and never reaches a model.

Time words, read in the device's zone at the moment of asking (`now`):
    today, yesterday, this morning/afternoon/evening, tonight, last night (18:00 yesterday to 06:00 today),
    yesterday morning/afternoon/evening/night, on <weekday> (the latest one, today included),
    in the last hour / N minutes / N hours / N days / a couple of hours / half an hour, just now and a few
    minutes ago (the last half hour), after midnight and the early hours (00:00 to 06:00 today), the day
    before yesterday, since 9 | 9am | 9pm | 21:30 (today, or yesterday when that time has not come yet today;
    "since 9" is 09:00, "since 8 this evening" 20:00, "since 10 yesterday" yesterday's 10:00), since
    yesterday / this morning / last night / <weekday> (from its start to now).
Typing slips and chat shorthand are spelt out first (spelling.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from .spelling import spell

INTENTS = ("count", "last", "first", "list", "exists")
LABEL_WORDS = {
    "person": ("person", "persons", "people", "someone", "somebody", "anyone", "anybody", "visitor", "visitors",
               "man", "men", "woman", "women", "pedestrian", "pedestrians", "human", "humans"),
    "car": ("car", "cars", "vehicle", "vehicles", "truck", "trucks"),
    "bicycle": ("bicycle", "bicycles", "bike", "bikes", "cyclist", "cyclists"),
    "dog": ("dog", "dogs"),
    "cat": ("cat", "cats"),
}
VERDICT_WORDS = {"alert": ("alert", "alerts", "alarm", "alarms", "alerted"),
                 "benign": ("benign", "harmless", "nothing to worry", "false alarm", "false alarms", "false alert",
                            "false alerts", "false positive", "false positives"),
                 "unknown": ("unknown verdict", "verdict unknown", "judged unknown", "unclassified",
                             "not classified", "could not be classified", "couldnt be classified", "undecided",
                             "inconclusive")}  # the longest phrase found wins: "false alarms" is benign
_OPEN = re.compile(
    r"\b(doing|do there|did they do|why|describe|description|wearing|wore|wear|look like|looked like|looks like|"
    r"carrying|carried|holding|same|again|came back|come back|coming back|return|returned|suspicious|unusual|"
    r"strange|odd|tell me about|summar\w*|explain|who|what happened|what was going on|behav\w*|"
    r"recogni[sz]e|familiar|worried|worry|should i|"
    r"sum up|recap|overview|run ?down|catch me up|fill me in|"  # asking for a summary
    r"what (set|sets) off|what (triggered|caused)|"  # asking for a cause
    r"what\b.{0,24}\b(going on|happening|went on)|(were|was|are|is) \w+ up to|"  # what they were doing
    r"deliver\w*|packages?|parcels?|drop(ped|s)? off|stranger|parked|passing|loiter\w*|linger\w*|waiting)\b|"
    r"^(was|were|is|are) (it|that|this|these|those|he|she|they)\b")
_INTENT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("count", re.compile(r"\b(how many|number of|count|how often|how many times)\b")),
    ("first", re.compile(r"\b(first|earliest)\b")),
    ("last", re.compile(r"\b(last (time|seen|one|event|alert|visit|visitor|person|car)|most recent|latest|"
                        r"(when|what time) (was|were|did|is) .*\blast\b|last (\w+ )?(seen|came|showed|appeared|there|visit))")),
    ("list", re.compile(r"^(list|show|give me|display)\b|\b(which|what) (events|alerts|detections)\b|"
                        r"\bshow me\b|\blist (of )?(the )?(events|alerts|all)\b")),
    ("exists", re.compile(r"^(was|were|is|are|did|does|do|has|have|had|any)\b.*\b(any|anyone|anybody|someone|"
                          r"somebody|anything|something|activity|movement|motion|events?|detections?|"
                          + "|".join(w for words in (*LABEL_WORDS.values(), *VERDICT_WORDS.values()) for w in words)
                          + r")\b|^(anyone|anybody|anything|someone|somebody|something)\b")),
)
SYNONYMS = (("back", "rear"), ("rear", "back"))  # words of camera names people swap
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_UNITS_S = {"minute": 60, "min": 60, "hour": 3600, "hr": 3600, "day": 86400}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10,
            "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "couple": 2, "couple of": 2, "few": 3}
_PARTS = {"morning": (6, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}


@dataclass(frozen=True)
class Window:
    """[start_ms, end_ms) in epoch ms; end None: up to now (and on, for cache invalidation)."""

    start_ms: int | None
    end_ms: int | None
    phrase: str  # how the answer names it: "today", "last night", "since 09:00"

    def holds(self, captured_ms: int) -> bool:
        return ((self.start_ms is None or captured_ms >= self.start_ms)
                and (self.end_ms is None or captured_ms < self.end_ms))


@dataclass(frozen=True)
class Query:
    """What the rules read from a question."""

    intent: str | None
    open: bool  # has markers of a question a query cannot answer
    cameras: frozenset[tuple[str, str]] = frozenset()  # (device, camera) pairs the question names
    devices: frozenset[str] = frozenset()
    zones: frozenset[str] = frozenset()  # zone names the question names (events in any of them)
    label: str | None = None
    verdict: str | None = None
    window: Window | None = None
    words: tuple[str, ...] = field(default=(), compare=False)

    @property
    def rule_answerable(self) -> bool:
        return self.intent is not None and not self.open

    def with_scope(self, **changes) -> Query:
        return replace(self, **changes)


def normalise(question: str) -> str:
    """Lower case, one space between words, punctuation dropped (a possessive 's with it: "today's" reads
    "today"), shorthand and slips spelt out (spelling.py): the cache key and the text every rule reads."""
    text = re.sub(r"['\u2019]s\b", "", question.lower()).replace("'", "").replace("\u2019", "")
    text = re.sub(r"[^a-z0-9:]+", " ", text)
    return spell(re.sub(r"\s+", " ", text).strip())


def spoken(identifier: str) -> list[str]:
    """The ways a camera or device id is written in a sentence: back_door -> back door, backdoor, back_door,
    rear door; cam2 -> cam 2, camera 2."""
    base = identifier.lower()
    spaced = re.sub(r"[_-]+", " ", base).strip()
    forms = {base, spaced, spaced.replace(" ", "")}
    for word, other in SYNONYMS:
        forms |= {re.sub(rf"\b{word}\b", other, form) for form in list(forms)}
    digits = re.match(r"^(cam|camera)\s*(\d+)$", spaced)
    if digits:
        forms |= {f"cam {digits[2]}", f"camera {digits[2]}", f"cam{digits[2]}", f"camera{digits[2]}"}
    return sorted(forms, key=len, reverse=True)


class Names(Protocol):
    """The names a question may use (cloud.ask.vocab.Vocabulary): the operator's, read as words."""

    def cameras_in(self, text: str) -> frozenset[tuple[str, str]]: ...

    def devices_in(self, text: str) -> frozenset[str]: ...

    def zones_in(self, text: str) -> frozenset[str]: ...

    def label_in(self, text: str) -> str | None: ...


def __getattr__(name: str):  # Vocabulary lives in vocab.py (where names come from); kept importable from here
    if name == "Vocabulary":
        from .vocab import Vocabulary

        return Vocabulary
    raise AttributeError(name)


_VERDICT_PHRASES = sorted(((w, v) for v, words in VERDICT_WORDS.items() for w in words), key=lambda p: -len(p[0]))


def verdict_in(text: str) -> str | None:
    for phrase, verdict in _VERDICT_PHRASES:
        if re.search(rf"\b{re.escape(phrase)}\b", text):
            return verdict
    return None


def intent_of(text: str) -> str | None:
    for intent, pattern in _INTENT_RULES:
        if pattern.search(text):
            return intent
    return None


def is_open(text: str) -> bool:
    """Markers of a question about what happened rather than how many or when; a second question joined
    with "and" ("was anyone there, and what were they doing") counts too."""
    return bool(_OPEN.search(text)) or bool(re.search(r"\band (what|how|why|who|did|were|was)\b", text))


def read(question: str, vocabulary: Names, zone: ZoneInfo, now_ms: int) -> Query:
    text = normalise(question)
    return Query(intent=intent_of(text), open=is_open(text), cameras=vocabulary.cameras_in(text),
                 devices=vocabulary.devices_in(text), zones=vocabulary.zones_in(text),
                 label=vocabulary.label_in(text), verdict=verdict_in(text),
                 window=time_window(text, zone, now_ms), words=tuple(text.split()))


# -- time ----------------------------------------------------------------------------------------------
def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _at(day: datetime, hour: float) -> datetime:
    """`day`'s midnight plus `hour` hours, in the zone (a DST day has its own length)."""
    midnight = day.replace(hour=0, minute=0, second=0, microsecond=0)
    whole = int(hour)
    moment = midnight + timedelta(hours=whole, minutes=round((hour - whole) * 60))
    return moment.replace(tzinfo=None).replace(tzinfo=day.tzinfo)


def _part(day: datetime, name: str, now: datetime, phrase: str) -> Window:
    start, end = _PARTS[name]
    end_at = _at(day, end)
    return Window(_ms(_at(day, start)), None if end_at > now else _ms(end_at), phrase)


def _clock(match: re.Match[str]) -> float | None:
    hour, minute, half = int(match["h"]), int(match["m"] or 0), match["ampm"]
    if half == "pm" and hour < 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        return None
    return hour + minute / 60


_SINCE = re.compile(r"\bsince (?P<h>\d{1,2})(?::(?P<m>\d{2}))?(?: ?(?P<ampm>am|pm))?(?: (?:this |in the )?"
                    r"(?P<part>morning|afternoon|evening|tonight|last night|yesterday))?\b")
_SPAN = re.compile(r"\b(?:in the |during the |over the |within the )?(?:last|past) (?:(\d+|an?|one|two|three|four|"
                   r"five|six|ten|twelve|fifteen|twenty|thirty|couple(?: of)?|few) )?(minute|min|hour|hr|day)s?\b")
_HALF_HOUR = re.compile(r"\b(?:in the |within the )?(?:last|past) half (?:an )?hour\b|\bhalf an hour\b")
_JUST_NOW = re.compile(r"\bjust now\b|\b(?:a )?(?:few|couple of) minutes ago\b|\ba (?:moment|minute) ago\b")
_SMALL_HOURS = re.compile(r"\bafter midnight\b|\b(?:early|small|wee) hours\b|\bbefore dawn\b")
JUST_NOW_S = 1800  # "just now", "a few minutes ago": the last half hour


def time_window(text: str, zone: ZoneInfo, now_ms: int) -> Window | None:
    """The time range a normalised question names, or None when it names none. "since" before a named range
    ("since yesterday", "since this morning") keeps its start and runs to now."""
    window = _named_window(text, zone, now_ms)
    if window is not None and window.end_ms is not None:
        named = window.phrase.lower().removeprefix("on ")
        if re.search(rf"\bsince (on )?{re.escape(named)}\b", text):
            return Window(window.start_ms, None, f"since {window.phrase.removeprefix('on ')}")
    return window


def _named_window(text: str, zone: ZoneInfo, now_ms: int) -> Window | None:
    now = datetime.fromtimestamp(now_ms / 1000, zone)
    today = now
    yesterday = now - timedelta(days=1)
    since = _SINCE.search(text)
    if since and _clock(since) is not None:  # "since 9", "since 9pm", "since 8 this evening", "since 10 yesterday"
        hour, part = _clock(since), since["part"]
        if since["ampm"] is None and part in ("afternoon", "evening", "tonight", "last night") and hour < 12:
            hour += 12
        day = yesterday if part in ("yesterday", "last night") else today
        start = _at(day, hour)
        if start > now and part is None:
            day, start = yesterday, _at(yesterday, hour)
        return Window(_ms(start), None, f"since {start.strftime('%H:%M')}" + (" yesterday" if day is yesterday else ""))
    if re.search(r"\bday before yesterday\b", text):
        day = now - timedelta(days=2)
        return Window(_ms(_at(day, 0)), _ms(_at(yesterday, 0)), "the day before yesterday")
    if _SMALL_HOURS.search(text):  # after midnight: today's small hours
        end = _at(today, 6)
        return Window(_ms(_at(today, 0)), None if end > now else _ms(end), "after midnight")
    if re.search(r"\blast night\b|\bovernight\b", text):
        end = _at(today, 6)
        return Window(_ms(_at(yesterday, 18)), None if end > now else _ms(end), "last night")
    part = re.search(r"\byesterday (morning|afternoon|evening|night)\b", text)
    if part:
        window = _part(yesterday, part[1], now, f"yesterday {part[1]}")
        return window
    part = re.search(r"\b(this|today) (morning|afternoon|evening)\b|\btonight\b", text)
    if part:
        name = part[2] or "evening"
        return _part(today, name, now, part[0])
    if re.search(r"\byesterday\b", text):
        return Window(_ms(_at(yesterday, 0)), _ms(_at(today, 0)), "yesterday")
    if re.search(r"\btoday\b|\bso far\b", text):
        return Window(_ms(_at(today, 0)), None, "today")
    if _HALF_HOUR.search(text):
        return Window(now_ms - 1_800_000, None, "in the last half hour")
    if _JUST_NOW.search(text):
        return Window(now_ms - JUST_NOW_S * 1000, None, "in the last half hour")
    span = _SPAN.search(text)
    if span and not re.search(r"\blast (minute|hour|day)s? (was|were)\b", text):
        count = int(span[1]) if span[1] and span[1].isdigit() else _NUMBERS.get(span[1] or "a", 1)
        seconds = count * _UNITS_S[span[2]]
        return Window(now_ms - seconds * 1000, None, span[0].strip())
    for index, name in enumerate(_WEEKDAYS):
        if re.search(rf"\b(on )?{name}\b", text):
            back = (now.weekday() - index) % 7
            day = now - timedelta(days=back)
            end = _at(day + timedelta(days=1), 0)
            return Window(_ms(_at(day, 0)), None if end > now else _ms(end), f"on {name.capitalize()}")
    return None
