"""Clock times as people say them, written as when.py reads them (before it reads the question):

    half past six -> 6:30, quarter to seven -> 6:45, quarter past 8 -> 8:15, twenty past nine -> 9:20,
    ten to five -> 4:50, half six -> 6:30 (British), six thirty -> 6:30, seven fifteen -> 7:15,
    the hour before midnight -> between 23:00 and midnight, the hour after 9pm -> between 21:00 and 22:00
    meals           breakfast 7:00, lunch 12:00 (when.py's own word), dinner / supper 19:00; after a meal
                    from an hour later (after lunch 13:00, after dinner 20:00; since breakfast 7:00)
    a shop's hours  "after we closed at six" -> after 6 pm, "before the shop opened at nine" -> before 9 am,
                    "after closing (time)" alone -> after 6 pm (a shop's usual closing hour, said back)
    the sun         sunrise / dawn and sunset / dusk: the hour the sun rises or sets that day where the zone's
                    main city lies (its coordinates from the system's zone1970.tab; 07:00 and 18:00 where the
                    zone has none); "around sunrise" half an hour either side, as "around 8"

Whether a bare hour is morning or evening is when.py's to decide (the part of the day said, else 7-11 the
morning and 1-6 the afternoon), the minutes said or not.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from functools import lru_cache
from pathlib import Path

_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_H = r"(\d{1,2}|" + "|".join(_WORDS) + r")"
_MINUTES = {"five": 5, "ten": 10, "quarter": 15, "a quarter": 15, "twenty": 20, "twenty five": 25, "half": 30}
_M = r"(" + "|".join(sorted(_MINUTES, key=len, reverse=True)) + r"|\d{1,2}(?= minutes))"  # "7 to 10" is a range
_TENS = {"oh five": 5, "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "forty five": 45,
         "fifty": 50, "twenty five": 25, "thirty five": 35}
MEALS = {"breakfast": "7:00", "dinner": "19:00", "supper": "19:00", "brunch": "11:00"}
MEAL_H = 1  # "after lunch": from the hour the meal is over ("since breakfast", "after lunchtime": its start)
CLOSING_HOUR = 18  # "after closing" with no hour said
ZONE_TAB = Path("/usr/share/zoneinfo/zone1970.tab")


def _hour(said: str) -> int:
    return int(said) if said.isdigit() else _WORDS.index(said) + 1


def spoken_clock(text: str, moment: datetime) -> str:
    """A normalised question with its spoken clock times written as digits (see the module docstring);
    `moment` (now, in the question's zone) gives the day's sunrise and sunset."""
    def past(m: re.Match[str]) -> str:
        minutes = _MINUTES.get(m[1]) if not m[1].isdigit() else int(m[1])
        return f"{_hour(m[2])}:{minutes:02d}" if minutes is not None and minutes < 60 else m[0]

    def to(m: re.Match[str]) -> str:
        minutes = _MINUTES.get(m[1]) if not m[1].isdigit() else int(m[1])
        if minutes is None or not 0 < minutes < 60:
            return m[0]
        if minutes not in (15, 30) and re.search(r"\b(?:from|between)\s*$", m.string[:m.start()]):
            return m[0]  # "from ten to five": a range, not 4:50
        hour = (_hour(m[2]) - 1) or 12
        return f"{hour}:{60 - minutes:02d}"

    text = re.sub(rf"\b{_M} (?:minutes )?past {_H}\b(?! (?:minutes|hours))", past, text)
    text = re.sub(rf"\b{_M} (?:minutes )?(?:to|before) {_H}\b(?! (?:minutes|hours))", to, text)
    text = re.sub(rf"\bhalf {_H}\b(?! (?:hours?|an)\b)", lambda m: f"{_hour(m[1])}:30", text)
    text = re.sub(rf"\b(after|before|since|until|till|from|between|and|to|by) ({_H}(?::\d{{2}})?(?: ?[ap]m)?) ?ish\b",
                  r"\1 \2", text)  # "after 9ish": after 9
    text = re.sub(rf"\b(?:(?:at|around|about) )?({_H}(?::\d{{2}})?(?: ?[ap]m)?) ?ish\b", r"around \1", text)
    tens = "|".join(sorted(_TENS, key=len, reverse=True))
    text = re.sub(rf"\b({'|'.join(_WORDS)}) ({tens})\b(?! (?:minutes|hours|people|events|times))",
                  lambda m: f"{_hour(m[1])}:{_TENS[m[2]]:02d}", text)
    for meal, clock in {**MEALS, "lunch": "12:00"}.items():  # after a meal: once it is over, an hour on
        over = f"{int(clock.split(':')[0]) + MEAL_H}:00"
        text = re.sub(rf"\bafter (?:(?:the |my |our )?{meal}(?! ?time))\b", f"after {over}", text)
    for meal, clock in MEALS.items():
        text = re.sub(rf"\b(?:(?:the |my |our )?{meal}(?: ?time)?)\b", clock, text)
    who = r"\b(?:(?:we|they|the (?:shop|store|office|business)|it) )?"
    hour = rf"(?:at|around) ({_H}(?::\d{{2}})?)\b(?! ?(?:am|pm))"
    text = re.sub(who + r"(?:closed|close|closes|closing)(?: time)? " + hour,
                  lambda m: f"{_as_digits(m[1])} pm", text)
    text = re.sub(who + r"(?:opened|open|opens|opening)(?: time)? " + hour, lambda m: f"{_as_digits(m[1])} am", text)
    text = re.sub(r"\b(?:after|since) (?:we |they |the (?:shop|store) )?(?:closed|closing(?: time)?)\b",
                  f"after {CLOSING_HOUR}:00", text)
    text = re.sub(rf"\b(?:(?:in|during|within) )?the (?:last |first )?hour (before|after|leading up to|following) "
                  rf"({_H}|noon|midday|midnight)(?::(\d{{2}}))?(?: ?([ap]m))?\b", _hour_beside, text)
    if re.search(r"\b(?:sunrise|dawn|daybreak|sunset|dusk|nightfall)\b", text):
        rise, fall = sun_hours(moment)
        text = re.sub(r"\b(?:sunrise|dawn|daybreak|first light)\b", _hhmm(rise), text)
        text = re.sub(r"\b(?:sunset|dusk|nightfall)\b", _hhmm(fall), text)
    return text


def _hour_beside(m: re.Match[str]) -> str:
    """"the hour before midnight" -> "between 23:00 and midnight", "the hour after 9pm" -> "between 21:00 and
    22:00"; a bare hour ("the hour before 9") stays bare at both ends, for when.py to read as people say it."""
    named = {"noon": 12, "midday": 12, "midnight": 24}.get(m[2])
    if named is not None:
        hour = named
    else:
        hour = _hour(m[2]) if m[5] is None else _hour(m[2]) % 12 + (12 if m[5] == "pm" else 0)
    ends = (hour - 1, hour) if m[1] in ("before", "leading up to") else (hour, hour + 1)
    said = ["midnight" if h == 24 else f"{h % 24}:{m[4] or '00'}" for h in ends]
    return f"between {said[0]} and {said[1]}"


def _as_digits(said: str) -> str:
    head, _, tail = said.partition(":")
    return str(_hour(head)) + (f":{tail}" if tail else "")


def _hhmm(hour: float) -> str:
    minutes = round(hour * 60)
    return f"{minutes // 60}:{minutes % 60:02d}"


@lru_cache(maxsize=64)
def _place(zone: str) -> tuple[float, float] | None:
    """The zone's main city (latitude, longitude) from zone1970.tab, None where it is not listed."""
    try:
        lines = ZONE_TAB.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split("\t")
        if len(parts) >= 3 and parts[2] == zone:
            found = re.fullmatch(r"([+-])(\d{2})(\d{2})(\d{2})?([+-])(\d{3})(\d{2})(\d{2})?", parts[1])
            if found:
                lat = (int(found[2]) + int(found[3]) / 60 + int(found[4] or 0) / 3600) * (1 if found[1] == "+" else -1)
                lon = (int(found[6]) + int(found[7]) / 60 + int(found[8] or 0) / 3600) * (1 if found[5] == "+" else -1)
                return lat, lon
    return None


def sun_hours(moment: datetime) -> tuple[float, float]:
    """Local hours of sunrise and sunset on `moment`'s day (NOAA's simple formula, to a few minutes)."""
    place = _place(getattr(moment.tzinfo, "key", ""))
    if place is None:
        return 7.0, 18.0
    lat, lon = place
    day = moment.timetuple().tm_yday
    gamma = 2 * math.pi / 365 * (day - 1)
    eqtime = 229.18 * (0.000075 + 0.001868 * math.cos(gamma) - 0.032077 * math.sin(gamma)
                       - 0.014615 * math.cos(2 * gamma) - 0.040849 * math.sin(2 * gamma))
    decl = (0.006918 - 0.399912 * math.cos(gamma) + 0.070257 * math.sin(gamma) - 0.006758 * math.cos(2 * gamma)
            + 0.000907 * math.sin(2 * gamma) - 0.002697 * math.cos(3 * gamma) + 0.00148 * math.sin(3 * gamma))
    cos_h = (math.cos(math.radians(90.833)) / (math.cos(math.radians(lat)) * math.cos(decl))
             - math.tan(math.radians(lat)) * math.tan(decl))
    if not -1 <= cos_h <= 1:  # polar day or night
        return 7.0, 18.0
    h = math.degrees(math.acos(cos_h))
    offset = moment.utcoffset().total_seconds() / 60 if moment.utcoffset() else 0.0
    rise = (720 - 4 * (lon + h) - eqtime + offset) / 60
    fall = (720 - 4 * (lon - h) - eqtime + offset) / 60
    return rise, fall
