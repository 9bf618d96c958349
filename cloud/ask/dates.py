"""Calendar days, weeks and months a question names (when.py reads the rest of its time words with them):

    dates       28 November, Nov 28th, the 28th of November, 2026-11-28, 5/12 (either order: the later day
                either reading names, up to today), "on the 28th" (the latest such day, today included)
    weeks       this week (Monday on), this weekend / at the weekend (the last one, or the one in progress)
    months      this month (the 1st on), last month (the calendar month before), in <month> (the latest, this
                one included), since <month>
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from .timebase import MONTHS, Window
from .timebase import at as _at
from .timebase import ms as _ms
from .timebase import upto as _upto

MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_DAY_MONTH = re.compile(r"\b(?:the )?(\d{1,2})(?:st|nd|rd|th)? (?:of )?" + MONTH + r"(?: (20\d\d))?\b")
_MONTH_DAY = re.compile(r"\b" + MONTH + r" (?:the )?(\d{1,2})(?:st|nd|rd|th)?(?: (20\d\d))?\b")
_ISO_DATE = re.compile(r"\b(20\d\d) (\d{1,2}) (\d{1,2})\b")  # 2026-11-28, as normalise leaves it
_SLASH_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?\b")  # 5/12, 12/5/2026: either order
_NTH = re.compile(r"\b(?:on|since|of|for|from) the (\d{1,2})(?:st|nd|rd|th)\b")  # "on the 28th": the latest


def month_number(word: str) -> int:
    """1-12 for a month's name or its short form ("nov", "sept")."""
    return [m[:3] for m in MONTHS].index(word[:3]) + 1


def date_of(text: str, now: datetime) -> tuple[datetime, str] | None:
    """A calendar date the question names: the latest such day up to today when it names no year."""
    slashed = _SLASH_DATE.search(text)
    if slashed:  # day/month or month/day: the later of the days either reading names, up to today
        a, b, said_year = int(slashed[1]), int(slashed[2]), slashed[3]
        year = (2000 + int(said_year) if len(said_year) == 2 else int(said_year)) if said_year else None
        found = [date_of(f"{d} {MONTHS[m - 1]} {year or ''}".strip(), now) for d, m in ((a, b), (b, a))
                 if 1 <= m <= 12]  # a day that no month has: no such date (below)
        found = [f for f in found if f is not None and f[0].date() <= now.date()]
        return max(found, key=lambda f: f[0]) if found else None
    year, back = None, "year"
    iso, day_month, month_day = _ISO_DATE.search(text), _DAY_MONTH.search(text), _MONTH_DAY.search(text)
    if iso:
        year, month, day = int(iso[1]), int(iso[2]), int(iso[3])
    elif day_month or month_day:
        found = day_month or month_day
        day, word, said_year = (found[1], found[2], found[3]) if day_month else (found[2], found[1], found[3])
        day, month = int(day), month_number(word)
        year = int(said_year) if said_year else None
    elif nth := _NTH.search(text):
        day, month, back = int(nth[1]), now.month, "month"
    else:
        return None
    try:
        date = now.replace(year=year or now.year, month=month, day=day)
        if year is None and date.date() > now.date():  # later this year (or month): the last one that was
            earlier = (now.year, now.month - 1) if back == "month" and now.month > 1 else (now.year - 1, 12)
            date = (date.replace(year=now.year - 1) if back == "year"
                    else now.replace(year=earlier[0], month=earlier[1], day=day))
    except ValueError:  # 31 April, 30 February: no such day
        return None
    said = f"on {MONTHS[date.month - 1].capitalize()} {date.day}"
    return date, said + (f" {date.year}" if date.year != now.year else "")


def week(text: str, now: datetime) -> Window | None:
    """this week (Monday on), this weekend / at the weekend ("last week" is the last 7 days, a span)."""
    monday = _at(now - timedelta(days=now.weekday()), 0)
    if re.search(r"\bthis week\b|\b(?:start|beginning) of (?:the|this) week\b", text):
        return Window(_ms(monday), None, "this week")
    if re.search(r"\b(this|the|last|past) weekend\b", text):
        back = (now.weekday() - 5) % 7
        saturday = _at(now - timedelta(days=back), 0)
        if "last weekend" in text and back < 2:
            saturday = _at(saturday - timedelta(days=7), 0)
        return _upto(saturday, _at(saturday + timedelta(days=2), 0), now, "at the weekend")
    return None



def month(text: str, now: datetime) -> Window | None:
    """this month (the 1st on), last month (the calendar month before this one), in <month> (the latest, this
    one included)."""
    first = _at(now.replace(day=1), 0)
    if re.search(r"\bthis month\b|\b(?:start|beginning) of (?:the|this) month\b", text):
        return Window(_ms(first), None, "this month")
    if re.search(r"\b(?:last|previous) month\b", text):
        before = _at((first - timedelta(days=1)).replace(day=1), 0)
        return Window(_ms(before), _ms(first), f"in {MONTHS[before.month - 1].capitalize()}")
    named = re.search(r"\b(?:in|during|throughout|for|since|over) (?:the month of )?" + MONTH + r"\b(?! \d)", text)
    if named:
        month = month_number(named[1])
        year = now.year if month <= now.month else now.year - 1
        start = _at(now.replace(year=year, month=month, day=1), 0)
        end = _at((start + timedelta(days=32)).replace(day=1), 0)
        if named[0].startswith("since"):
            return Window(_ms(start), None, f"since {MONTHS[month - 1].capitalize()}")
        return _upto(start, end, now, f"in {MONTHS[month - 1].capitalize()}")
    return None
