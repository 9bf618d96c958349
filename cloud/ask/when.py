"""Time words: the range of the device's local time a normalised question names. No model.

A range is a day (or a run of days) narrowed by a part of it and by clock times, read in the device's zone at
the moment of asking (`now`):

    days        today, earlier today, so far, yesterday, the day before yesterday, on <weekday> (the latest
                one, today included; "last <weekday>" the one before today), N days ago, a week ago, a date
                (28 November, Nov 28th, the 28th of November, 2026-11-28, "on the 28th": the latest such day,
                today included), this week, this weekend, this month, last month (the calendar month before),
                in <month> (the latest, this one included); runs of days: between Friday and Sunday, from
                November 20 to 25 (the last day whole); short day names after on/last/since (on tues)
    parts       morning 06-12, afternoon 12-18, evening 18-24 (this evening), tonight 18-06 (after midnight: the
                night in progress, from 18:00 the day before), night 18-06 ("last night",
                "<weekday> night", "the night before last"), overnight 22-06, after midnight / the early hours /
                the middle of the night 00-06, lunchtime 12-14, during the day / in daylight 06-18
    clock       after 5 pm, before 8, between 9 and noon, from 9 to 11, around 3 (half an hour either side);
                spoken forms first written as digits (clockwords.py: half past six, quarter to seven, since
                breakfast, after we closed at six, around sunrise);
                noon / midday / midnight; a clock time without a day means today. A bare hour with no am/pm
                is read as people say it: 7-11 in the morning, 12 noon, 1-6 in the afternoon (in the evening
                or at night: +12); "between 9 and 5" ends at 17:00
    spans       in the last hour / last week / past two hours / N minutes / a fortnight / a couple of hours / N days
                (N > 1: whole days, today the last: "the last two days" is yesterday and today) /
                half an hour, just now, a few minutes ago (the last half hour), since 9 | 9pm | 21:30 | yesterday |
                Monday | Tuesday noon | yesterday at 5pm
    moments     N hours ago (half an hour either side), N minutes ago (half of N either side, 5 to 30 minutes)
    across days a day and a clock time at each end, either order, with from/to, between/and or a dash: "from 10pm
                thursday to 6 friday", "thursday 22:00 - friday 06:00", "from yesterday 9pm to this morning 7"
                (a bare end hour the start's next turn of the clock when that is on the end's day; a weekday's
                start the latest one before the end); a part of a day at each end: "between friday night and
                saturday morning". A clock time with a leading zero ("06:00") is the 24-hour clock's.
Calendar dates, weeks and months: dates.py.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from .clockwords import spoken_clock
from .dates import MONTH as _MONTH
from .dates import date_of as _date_of
from .dates import month as _month
from .dates import week as _week
from .timebase import AROUND_H, JUST_NOW_S, MONTHS, NUMBERS, PARTS, WEEKDAYS, Window  # noqa: F401 (re-exported)
from .timebase import SHORT_DAYS as _SHORT_DAYS
from .timebase import UNITS_S as _UNITS_S
from .timebase import at as _at
from .timebase import ms as _ms
from .timebase import upto as _upto

# -- clock times ---------------------------------------------------------------------------------------
_HOUR_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_HOUR = (r"(?:(?P<{n}h>\d{{1,2}}|" + "|".join(_HOUR_WORDS) + r")(?::(?P<{n}m>\d{{2}}))?"
         r"(?: ?(?P<{n}ampm>am|pm|a m|p m|oclock|o clock))?|(?P<{n}word>noon|midday|midnight|lunch ?time|lunch))")
_NOT_A_TIME = (r"(?!\s*(?:minutes?|mins?|hours?|hrs?|days?|weeks?|people|persons?|cars?|events?|alerts?|times?|"
               r"cameras?|cams?|visits?|visitors?|bikes?|dogs?|of|s\b))")  # "after 2 cars" is no clock time
_AFTER = re.compile(r"\b(?:after|later than|past|from)\s+" + _HOUR.format(n="a") + _NOT_A_TIME + r"\b")
_BEFORE = re.compile(r"\b(?:before|until|till|til|up to|earlier than|by)\s+" + _HOUR.format(n="b") + _NOT_A_TIME
                     + r"\b")
_BETWEEN = re.compile(r"\b(?:between|from)\s+" + _HOUR.format(n="a") + r"\s+(?:and|to|till|until|-)\s+"
                      + _HOUR.format(n="b") + r"\b")
_BARE = re.compile(r"\b" + _HOUR.format(n="a") + r"\s+(?:to|till|until|til)\s+" + _HOUR.format(n="b") + _NOT_A_TIME
                   + r"\b")  # "10 to 11am", "9 to 5" (normalise writes "10-11am" so)
_PART_SAID = r" (?:in the|this|at) (?:morning|afternoon|evening|night)"
_FROM_TO = re.compile(r"\bfrom\s+" + _HOUR.format(n="a") + r"(?P<mid>" + _PART_SAID + r"| (?:am|pm))\s+"
                      r"(?:to|till|until|til)\s+" + _HOUR.format(n="b") + r"(?P<tail>(?:" + _PART_SAID + r")?)")
_AROUND = re.compile(r"\b(?:around|about|at|near|circa)\s+" + _HOUR.format(n="a") + _NOT_A_TIME + r"\b")


def _hour(match: re.Match[str], n: str, context: str | None) -> float | None:
    """The hour a clock phrase names (0-24), read in the part of the day the question speaks of."""
    word = match[f"{n}word"]
    if word:
        return 24.0 if word == "midnight" else 12.0
    said = match[f"{n}h"]
    hour = int(said) if said.isdigit() else _HOUR_WORDS.index(said) + 1
    minute, half = int(match[f"{n}m"] or 0), (match[f"{n}ampm"] or "").replace(" ", "")
    if hour > 23 or minute > 59:
        return None
    if half == "pm" and hour < 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    elif half in ("", "oclock") and hour == 12 and context in ("night", "evening"):
        hour = 24  # "at 12 tonight", "12 last night": midnight, as the word says it
    elif half in ("", "oclock") and 1 <= hour <= 11 and not said.startswith("0"):  # "06:00": the 24-hour clock
        if context in ("evening", "afternoon") or (context == "night" and hour >= 6):
            hour += 12
        elif context is None and hour <= 6:
            hour += 12  # "after 5": the afternoon, as people say it
    return hour + minute / 60


def _twelve(said: str) -> bool:
    """An hour said as on a twelve-hour clock ("5", "five"), which the day's half must place; "13" is itself."""
    return not said.isdigit() or (int(said) <= 12 and not said.startswith("0"))


def _clock_range(text: str, context: str | None) -> tuple[float | None, float | None, str] | None:
    """(from hour, to hour, phrase) a question's clock words name, or None; hours past 24 run into the next day."""
    spread = _FROM_TO.search(text)
    if spread:  # "from 9 in the morning to 5 in the afternoon": each end read in its own part of the day
        first = "evening" if spread["mid"].endswith("pm") else spread["mid"].split()[-1]  # "am": as "morning"
        start = _hour(spread, "a", first)  # "from 10 at night to 2": the night's 2; "from 8 this morning until 2": 14
        end = _hour(spread, "b", spread["tail"].split()[-1] if spread["tail"] else "night" if first in (
            "night", "evening") else None)
        if start is not None and end is not None:
            end += 24 if end <= start else 0
            return start, end, f"between {_hhmm(start)} and {_hhmm(end)}"
    between = _BETWEEN.search(text) or _BARE.search(text)
    if between:
        start, end = _hour(between, "a", context), _hour(between, "b", context)
        if start is None or end is None:
            return None
        start %= 24  # "between midnight and 6": the midnight a day starts with, and 6 its morning's
        end -= 12 if start == 0 and 12 < end < 19 and between["bampm"] is None and between["bword"] is None else 0
        if between["aampm"] is None and between["aword"] is None and between["bampm"] in ("am", "a m"):
            start %= 12  # "between 3 and 4 am": 03:00
        elif between["aampm"] is None and between["aword"] is None and start + 12 < end:  # (so start < 12)
            start += 12  # "between 8 and 10 pm": 20:00
        if end <= start and context == "night":
            end += 24  # "between 11 and 1 last night": past midnight
        elif end < start and between["bampm"] is None and between["bword"] is None and _twelve(between["bh"]):
            # a bare end is the next time its clock shows after the start: "between 9 and 5" 17:00, "between
            # 11 pm and 5" 05:00 the next morning, "between 10 pm and 10" 10:00 the next morning
            end = min(h for h in (end % 12 + 12 * k for k in range(5)) if h > start)
        elif end <= start and end + 12 <= 24 and between["bampm"] is None and between["bword"] is None \
                and _twelve(between["bh"]):
            end += 12  # "between 9 and 9": to 21:00
        elif end <= start:
            end += 24  # "between 10 pm and 2 am"
        return start, end, f"between {_hhmm(start)} and {_hhmm(end)}"
    after, before = _AFTER.search(text), _BEFORE.search(text)
    start = _hour(after, "a", context) if after else None
    end = _hour(before, "b", context) if before else None
    if after and before and start is not None and end is not None:
        if end <= start:
            end += 24
        return start, end, f"between {_hhmm(start)} and {_hhmm(end)}"
    if after and start is not None:
        return (0.0 if start == 24 else start), None, f"after {_hhmm(start)}"
    if before and end is not None:
        return None, end, f"before {_hhmm(end)}"
    around = _AROUND.search(text)
    if around and around["aword"] and around["aword"].startswith("lunch"):
        return 12.0, 14.0, "" if context == "lunchtime" else "at lunchtime"  # the lunch hours, as the part says
    if around:  # "at 3", "around 3pm", "about 10 am": a moment, half an hour either side
        hour = _hour(around, "a", context)
        if hour is not None:
            return hour - AROUND_H, hour + AROUND_H, f"around {_hhmm(hour)}"
    return None


def _hhmm(hour: float) -> str:
    """An hour (0 up to 48: past 24 is the next day's) as the clock shows it."""
    whole = int(hour) % 24
    return f"{whole:02d}:{round((hour - int(hour)) * 60):02d}"


# -- days and parts of days ----------------------------------------------------------------------------
_SINCE = re.compile(r"\bsince (?P<h>\d{1,2})(?::(?P<m>\d{2}))?(?: ?(?P<ampm>am|pm))?(?: (?:this |in the )?"
                    r"(?P<part>(?:yesterday )?(?:morning|afternoon|evening)|tonight|last night|yesterday))?\b")
_COUNT = (r"(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
          r"forty five|forty|fifty|couple(?: of)?|few|several)")
_SPAN = re.compile(r"\b(?:in the |during the |over the |within the |for the )?(?:last|past|previous) (?:"
                   + _COUNT + r" )?(minute|min|hour|hr|day|week|fortnight)s?\b")
_AGO = re.compile(r"\b(?:about |around |some )?" + _COUNT + r" (minute|min|hour|hr|day|week)s? ago\b")
_SINCE_DAY_CLOCK = re.compile(r"\bsince (?P<day>(?:last )?(?:" + "|".join(WEEKDAYS) + r")|yesterday)(?: at| around)? "
                              + _HOUR.format(n="s") + _NOT_A_TIME + r"\b")
_A_DAY = (r"(?:last |previous )?(?:" + "|".join(WEEKDAYS) + r")|yesterday|today|the day before yesterday|"
          r"(?:the )?\d{1,2}(?:st|nd|rd|th)? (?:of )?" + _MONTH + r"|" + _MONTH + r" (?:the )?\d{1,2}(?:st|nd|rd|th)?|"
          r"the \d{1,2}(?:st|nd|rd|th)")
_DAY_RANGE = re.compile(r"\b(?:between|from) (?P<a>" + _A_DAY + r") (?:and|to|till|until|through|thru) (?:on )?"
                        r"(?P<b>" + _A_DAY + r"|(?:the )?\d{1,2}(?:st|nd|rd|th)?)\b")
_HALF_HOUR = re.compile(r"\b(?:in the |within the )?(?:last|past) half (?:an )?hour\b|\bhalf an hour\b")
_WITHIN = re.compile(r"\bwithin (?:the|an?) (hour|day|week)\b")
_JUST_NOW = re.compile(r"\bjust now\b|\b(?:a )?(?:few|couple of) minutes ago\b|\ba (?:moment|minute) ago\b|"
                       r"\bright now\b|\bcurrently\b|\bat (?:the|this) (?:moment|minute)\b")
_SMALL_HOURS = re.compile(r"\b(?:after|past) midnight\b|\b(?:early|small|wee) hours\b|\bbefore dawn\b|"
                          r"\bmiddle of the night\b")


def _clock_hour(match: re.Match[str]) -> float | None:
    hour, minute, half = int(match["h"]), int(match["m"] or 0), match["ampm"]
    if half == "pm" and hour < 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        return None
    return hour + minute / 60


def _day_of(text: str, now: datetime) -> tuple[datetime, str] | None:
    """The one day a question names, and how the answer says it."""
    dated = _date_of(text, now)
    if dated is not None:
        return dated
    ago = _AGO.search(text)
    if ago and ago[2] in ("day", "week"):
        return now - timedelta(days=_count(ago[1]) * (7 if ago[2] == "week" else 1)), ago[0].strip()
    if re.search(r"\bnight before last\b", text):
        return now - timedelta(days=2), "the night before last"
    if re.search(r"\bday before yesterday\b", text):
        return now - timedelta(days=2), "the day before yesterday"
    if re.search(r"\byesterday\b|\blast (?:evening|afternoon)\b", text):
        return now - timedelta(days=1), "yesterday"
    for index, name in enumerate(WEEKDAYS):
        short = "|".join(_SHORT_DAYS[index])  # "on tues", "last sat": a short name only after such a word
        found = (re.search(rf"\b(last |previous )?{name}\b", text)
                 or re.search(rf"\b(?:on |since |(last |previous ))(?:{short})\b", text))
        if found:
            back = (now.weekday() - index) % 7 or (7 if found[1] else 0)
            return now - timedelta(days=back), f"on {name.capitalize()}"
    if re.search(r"\b(today|so far)\b|\b(?:of|for) the day\b|\b(?:all|the whole|the entire) day\b", text):
        return now, "today"
    return None


def _count(said: str | None) -> int:
    return int(said) if said and said.isdigit() else NUMBERS[said] if said else 1  # every _COUNT word is one


def _part_of(text: str) -> str | None:
    if re.search(r"\bafter dark\b|\bwhen it was dark\b|\bin the dark\b", text):
        return "dark"
    if re.search(r"\bovernight\b|\bthrough the night\b", text):
        return "overnight"
    if re.search(r"\b(?:last|during the|in the|at|yesterday|\w+day) night\b|\bnight before last\b|\btonight\b", text):
        return "tonight" if "tonight" in text else "night"
    if re.search(r"\bduring the day\b|\b(?:in|during) (?:the )?daylight\b|\bdaylight hours\b|\bdaytime\b|\bby day\b",
                 text):
        return "day"
    found = re.search(r"\b(morning|afternoon|evening|lunchtime|lunch time)\b", text)
    return found[1].replace("lunch time", "lunchtime") if found else None


def time_window(text: str, zone: ZoneInfo, now_ms: int) -> Window | None:
    """The time range a normalised question names, or None when it names none. "since" before a named range
    ("since yesterday", "since this morning") keeps its start and runs to now."""
    now = datetime.fromtimestamp(now_ms / 1000, zone)
    text = spoken_clock(text, now)  # "half past six" -> 6:30, "since breakfast" -> since 7:00 (clockwords.py)
    days = _days(text, now)
    if days is not None:
        return days
    since = _SINCE_DAY_CLOCK.search(text)  # "since Tuesday noon", "since yesterday at 5pm"
    if since and _hour(since, "s", None) is not None:
        named_day = _day_of(since["day"], now)
        assert named_day is not None  # a weekday or "yesterday" is always a day
        day, phrase = named_day
        start = _at(day, _hour(since, "s", None) or 0.0)
        return Window(_ms(start), None, f"since {phrase.removeprefix('on ')} {start.strftime('%H:%M')}")
    across = _across(text, zone, now_ms)  # "from 10pm yesterday to 6 this morning": each end with its own day
    if across is not None:
        return across
    spanned = _SPANNED.search(text)
    if spanned and (spanned["lead"] == "between") == (spanned["sep"] == "and") \
            and (spanned["lead"] or spanned["sep"] == "into"):  # "thursday night into friday morning"
        # "from yesterday evening to this morning", "between friday night and saturday morning", "... until now"
        first = _named_window(spanned["a"], zone, now_ms)
        last = _named_window(spanned["b"], zone, now_ms)  # "now" names no range: None
        if first is not None and first.start_ms is not None and (spanned["b"] == "now" or last is not None):
            end = None if last is None else last.end_ms  # None: it runs on to now
            start = _ms(_before(first.start_ms, end or now_ms, spanned["a"], zone))
            if start < (end or now_ms):
                to = _day_said(last.phrase) if last else "now"
                return Window(start, end, f"from {_day_said(first.phrase)} to {to}")
    window = _named_window(text, zone, now_ms)
    if window is not None and window.end_ms is not None:
        named = window.phrase.lower().removeprefix("on ")
        after = text.split("since", 1)[1].strip() if "since" in text else None  # "since the 20th", "since wed"
        again = _named_window("on " + after, zone, now_ms) if after is not None else None
        if (again is not None and again.start_ms == window.start_ms
                or re.search(rf"\bsince (on )?{re.escape(named)}\b", text)):
            return Window(window.start_ms, None, f"since {window.phrase.removeprefix('on ')}")
    return window


_DAY_WORD = r"(?:yesterday|today|tonight|this morning|this afternoon|this evening|last night|(?:on |last )?(?:" + \
    "|".join(WEEKDAYS) + r")(?: morning| afternoon| evening| night)?)"
_CLOCK_AT = r"(?:\d{1,2}(?::\d{2})?(?: ?(?:am|pm|oclock))?|noon|midday|midnight)"
_END = (r"(?:(?P<{n}c>" + _CLOCK_AT + r") (?:on )?(?P<{n}d>" + _DAY_WORD + r")|(?P<{n}e>" + _DAY_WORD
        + r") (?:at )?(?P<{n}k>" + _CLOCK_AT + r"))")
_ACROSS = re.compile(r"\b(?:(?P<lead>from|between) )?" + _END.replace("{n}", "a") + r" (?:(?P<sep>to|until|till|"
                     r"through|up to|into|and) )?(?:" + _END.replace("{n}", "b") + r"|(?P<bo>" + _CLOCK_AT + r"))\b")
# "thu 22:00 - fri 06:00": no word between; "between 9 last night and 2": the end's day the next the clock shows


_ONE = re.compile(_HOUR.format(n="a"))


def _across(text: str, zone: ZoneInfo, now_ms: int) -> Window | None:
    """A range whose two ends each say a day and a clock time ("from 10pm thursday to 6 friday", "from
    yesterday 9pm to this morning 7"). A bare hour at the end is the next time the clock shows it after the
    start when that falls on the end's day ("to 6 friday" after Thursday 22:00: 06:00), else as people say it."""
    now = datetime.fromtimestamp(now_ms / 1000, zone)
    for found in _ACROSS.finditer(text):
        if (found["sep"] == "and") != (found["lead"] == "between") or (found["bo"] and not found["sep"]):
            continue  # "at 10pm yesterday and 6 this morning": two moments, no range
        day_a, day_b = found["ad"] or found["ae"], found["bd"] or found["be"]
        clock_a, clock_b = found["ac"] or found["ak"], found["bc"] or found["bk"]
        first = _named_window(f"from {clock_a} {day_a}", zone, now_ms)
        if found["bo"] and first is not None and first.start_ms is not None:  # the end's clock alone
            start, hour = datetime.fromtimestamp(first.start_ms / 1000, zone), _hour(_ONE.match(found["bo"]), "a", None)
            if hour is None:
                continue
            bare = re.fullmatch(r"(?:[1-9]|1[0-2])(?::\d{2})?", found["bo"])
            hours = (hour % 12, hour % 12 + 12) if bare else (hour,)
            end = min(t for t in (_at(start + timedelta(days=d), h) for d in (0, 1) for h in hours) if t > start)
            return Window(_ms(start), None if end > now else _ms(end),
                          f"from {_day_said(day_a)} {start:%H:%M} to {end:%H:%M}")
        last = _named_window(f"before {clock_b} {day_b}", zone, now_ms)
        if first is None or last is None or first.start_ms is None or last.start_ms is None:
            continue
        said = _clock_part(last.phrase)
        if said is None:
            continue
        end = _at(datetime.fromtimestamp(last.start_ms / 1000, zone), said)
        start = _before(first.start_ms, _ms(end), day_a, zone)
        bare = re.fullmatch(r"(?:[1-9]|1[0-2])(?::\d{2})?", clock_b)
        if bare and re.fullmatch(r"(?:on |last )?\w+", day_b):  # no part of the day says am or pm
            turn = [_at(start + timedelta(days=d), said % 12 + h) for d in (0, 1) for h in (0, 12)]
            following = min(t for t in turn if t > start)
            end = following if following.date() == end.date() else end
        if start < end:
            return Window(_ms(start), None if end > now else _ms(end),
                          f"from {_day_said(day_a)} {start:%H:%M} to {_day_said(day_b)} {end:%H:%M}")
    return None


def _clock_part(phrase: str) -> float | None:
    """The hour a phrase of _named_window's says last ("on Friday before 18:00": 18.0), or None."""
    found = re.findall(r"(\d{2}):(\d{2})$", phrase)
    return int(found[-1][0]) + int(found[-1][1]) / 60 if found else None


def _day_said(day: str) -> str:
    """A day as said at one end of a range: "on thursday" -> "Thursday"."""
    day = day.removeprefix("on ")
    return " ".join(w.capitalize() if w in WEEKDAYS else w for w in day.split())


def _before(start_ms: int, end_ms: int | None, said: str, zone: ZoneInfo) -> datetime:
    """A range's start on a weekday said: the latest one before its end ("from 10pm friday to 6 saturday" asked
    on a Friday: last week's Friday, the Saturday being the latest one), as in "from Friday to Monday"."""
    start = datetime.fromtimestamp(start_ms / 1000, zone)
    if end_ms is not None and start_ms >= end_ms and any(d in said.split() for d in WEEKDAYS):
        back = 7 * ((start_ms - end_ms) // (7 * 86_400_000) + 1)
        return _at(start - timedelta(days=back), start.hour + start.minute / 60)
    return start


_PART_OF_DAY = (r"(?:(?:yesterday|today|this|last|(?:on )?(?:" + "|".join(WEEKDAYS)
                + r"))(?: morning| afternoon| evening| night)?|tonight|last night|overnight)")
_SPANNED = re.compile(r"\b(?:(?P<lead>from|between) )?(?P<a>" + _PART_OF_DAY + r") (?P<sep>to|until|till|through|"
                      r"up to|into|and) (?P<b>" + _PART_OF_DAY + r"|now)\b")


def _days(text: str, now: datetime) -> Window | None:
    """A run of days: "between Friday and Sunday", "from November 20 to 25" (the last day whole)."""
    found = _DAY_RANGE.search(text)
    if not found:
        return None
    first = _day_of(("on " if found["a"].startswith("the ") else "") + found["a"], now)
    last = _day_of(("on " if found["b"].startswith("the ") else "") + found["b"], now)
    bare = re.fullmatch(r"(?:the )?(\d{1,2})(?:st|nd|rd|th)?", found["b"])
    if first is None or (last is None and bare is None):
        return None
    start = first[0]
    if last is not None:
        end = last[0]
    else:  # "from November 20 to 25": the first day's month
        try:
            end = start.replace(day=int(bare[1]))
        except ValueError:
            return None
    if end < start and found["a"].split()[-1] in WEEKDAYS:  # "from Friday to Monday": the Friday before
        start -= timedelta(days=7 * ((start - end).days // 7 + 1))
    if end < start:
        return None
    said = f"from {start.strftime('%A %B')} {start.day} to {end.strftime('%A %B')} {end.day}"
    return _upto(_at(start, 0), _at(end + timedelta(days=1), 0), now, said)


def _named_window(text: str, zone: ZoneInfo, now_ms: int) -> Window | None:
    now = datetime.fromtimestamp(now_ms / 1000, zone)
    yesterday = now - timedelta(days=1)
    since = _SINCE.search(text)
    if since and _clock_hour(since) is not None:  # "since 9", "since 9pm", "since 8 this evening"
        hour, part = _clock_hour(since), since["part"]
        if since["ampm"] is None and part and part.split()[-1] in ("afternoon", "evening", "tonight", "night") \
                and hour < 12:
            hour += 12
        if since["ampm"] is None and part is None and 1 <= hour < 7 and _at(now, hour + 12) <= now \
                and not since["h"].startswith("0"):
            hour += 12  # "since 2", asked at 21:30: 14:00, as people say a bare hour (see _hour)
        day = yesterday if part and part.split()[0] in ("yesterday", "last") else now
        start = _at(day, hour)
        if start > now and part is None:
            day, start = yesterday, _at(yesterday, hour)
        return Window(_ms(start), None, f"since {start.strftime('%H:%M')}" + (" yesterday" if day is yesterday else ""))
    named_since = re.search(r"\bsince (noon|midday|lunch ?time|lunch|midnight)\b", text)
    if named_since:
        start = _at(now, 0 if named_since[1] == "midnight" else 12)
        return Window(_ms(start), None, f"since {start.strftime('%H:%M')}")
    if re.search(r"\b(?:at )?(?:this|the same) time yesterday\b|\bsame time yesterday\b", text):
        start = now - timedelta(days=1, hours=AROUND_H)  # "this time yesterday": half an hour either side
        return Window(_ms(start), _ms(start + timedelta(hours=2 * AROUND_H)), "this time yesterday")
    within = _WITHIN.search(text)
    if within:  # "within the hour": the last one
        return Window(now_ms - _UNITS_S[within[1]] * 1000, None, f"in the last {within[1]}")
    if _HALF_HOUR.search(text):
        return Window(now_ms - 1_800_000, None, "in the last half hour")
    if _JUST_NOW.search(text):
        return Window(now_ms - JUST_NOW_S * 1000, None, "in the last half hour")
    span = _SPAN.search(text)
    if span and not re.search(r"\blast (minute|hour|day|week)s? (was|were)\b", text):
        if span[2] == "day" and _count(span[1]) > 1:  # "the last two days": today and yesterday, whole
            return Window(_ms(_at(now - timedelta(days=_count(span[1]) - 1), 0)), None, span[0].strip())
        return Window(now_ms - _count(span[1]) * _UNITS_S[span[2]] * 1000, None, span[0].strip())
    ago = _AGO.search(text)
    if ago and ago[2] not in ("day", "week"):  # "3 hours ago": a moment, and some time either side of it
        back_s = _count(ago[1]) * _UNITS_S[ago[2]]
        half_s = min(AROUND_H * 3600, max(300, back_s / 2))  # half of N, 5 to 30 minutes: an hour on, AROUND_H
        end = now_ms - (back_s - half_s) * 1000
        count, unit = _count(ago[1]), {"min": "minute", "hr": "hour"}.get(ago[2], ago[2])
        return Window(int(now_ms - (back_s + half_s) * 1000), None if end >= now_ms else int(end),
                      f"about {count} {unit}{'' if count == 1 else 's'} ago")
    week = _week(text, now) or _month(text, now)
    if week is not None:
        return week
    if _SMALL_HOURS.search(text):  # after midnight: the small hours of today, or of the day named
        day, phrase = (None if "last night" in text else _day_of(text, now)) or (now, "today")
        return _upto(_at(day, 0), _at(day, 6), now, "after midnight" + ("" if phrase == "today" else f" {phrase}"))
    part = _part_of(text)
    found = _day_of(text, now)
    if part is None and found is None and not (_AFTER.search(text) or _BEFORE.search(text)
                                                or _BETWEEN.search(text) or _BARE.search(text)
                                                or _AROUND.search(text)):
        return None
    day, phrase = found or (now, "today")
    if part in ("night", "overnight") and phrase == "today" and re.search(r"\b(last night|overnight)\b", text):
        day, phrase = yesterday, ("last night" if part == "night" else "overnight")
    elif part == "tonight" and phrase == "today" and now.hour < 6:  # after midnight: the night in progress
        day, phrase = yesterday, "tonight"
    elif part == "dark":
        phrase = "after dark" if phrase == "today" else f"{phrase} after dark"
    elif part == "day":
        phrase = f"{phrase} during the day"
    elif part is not None and phrase == "today":
        phrase = "tonight" if "tonight" in text else f"this {part}"
    elif part is not None and phrase[-1].isdigit():  # a date: "on 28 November in the evening"
        phrase = f"{phrase} {'at night' if part == 'night' else 'in the ' + part}"
    elif part is not None and phrase != "the night before last":
        phrase = f"{phrase} {part}"
    if part is not None:
        lo, hi = PARTS[part]
        start, end = _at(day, lo), _at(day, hi)
    else:
        start, end = _at(day, 0), _at(day + timedelta(days=1), 0)
    context = {"overnight": "night", "dark": "night", "day": None, "tonight": "night"}.get(part, part) if part else None
    clock = _clock_range(text, context)
    if clock is not None:
        if clock[0] is None and (part == "morning" or (part in ("afternoon", "evening") and clock[1] is not None
                                                       and clock[1] <= PARTS[part][0])):
            # "before 8 this morning", "before 6 this evening" (the part only says am or pm, and "before" has
            # no start of its own): from the day's start, never an empty range
            start = _at(day, 0)
            phrase = phrase if part == "morning" else phrase.replace(f"this {part}", "today")
        elif clock[1] is None and part in ("morning", "afternoon"):  # "after 10 this morning": to the day's end
            end = _at(day + timedelta(days=1), 0)
            phrase = phrase.replace(f"this {part}", "today")
        start, end, phrase = _narrow(day, start, end, clock, phrase)
        if start >= end:
            return Window(_ms(start), _ms(start), phrase)  # an empty range: nothing can be in it
        if found is None and start > now and not re.search(r"\b(?:this|tonight|today)\b", text):
            # "around midnight", "after 11pm", "from 10 at night to 6" asked at 21:30: the last one
            start, end = start - timedelta(days=1), end - timedelta(days=1)
            phrase = phrase.replace("today", "yesterday")  # said once
    return _upto(start, end, now, phrase)


def _narrow(day: datetime, start: datetime, end: datetime, clock: tuple[float | None, float | None, str],
            phrase: str) -> tuple[datetime, datetime, str]:
    """The part of [start, end) that the clock words keep: each clock time at its first moment in the range."""
    lo, hi, said = clock

    def first(hour: float) -> datetime:
        moment = _at(day, hour)  # past 24: the next day's, on its wall clock
        while moment < start:
            moment += timedelta(days=1)
        return moment

    if lo is not None and hi is not None:  # "between 5 and 7", "around 3": the hours said, the part only hints
        start -= timedelta(hours=6)
        a = first(lo)
        return a, a + timedelta(hours=hi - lo), f"{phrase} {said}".strip()
    if lo is not None:
        a, b = first(lo), end
    else:
        a, b = start, first(hi)
    return max(a, start), min(b, end), f"{phrase} {said}".strip()


_TIME_LIKE = re.compile(r"\b(?:ago|dawn|dusk|sunrise|sunset|daybreak|nightfall|fortnight|months?|years?|decade|"
                        r"(?:last|this|next) (?:spring|summer|autumn|fall|winter|season|quarter|term|holiday)|"
                        + _MONTH[1:-1] + r"|\d{1,2}(?:st|nd|rd|th)|\d{1,2} ?(?:am|pm)|\d{1,2}:\d{2})\b")


def unread_time(text: str) -> str | None:
    """For a normalised question whose time words gave no range: the words that look like a time, which the
    answer then says it did not read (it is over every stored event), or None."""
    found = [m[0] for m in _TIME_LIKE.finditer(text)]
    if not found:
        return None
    said = ", ".join(f'"{w}"' for w in dict.fromkeys(found))
    return (f"{said}: read as no time range, so this is over every stored event; say it as e.g. \"this morning\", "
            f"\"since 6\", \"on November 28\", \"3 hours ago\"")
