"""Time words as people say them (cloud/ask/when.py, clockwords.py, clauses.py's reading of one range): each
phrasing here is one of a class (ranges whose ends are clock words, moments, "since", nights, spans and dates,
a clock time with a part of the day), read by the real rules in the zone it is asked in. No store, no model:
these run in a fraction of a second, fast enough to judge when.py's mutants by."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from edgetriage.cloud.ask.rules import normalise
from edgetriage.cloud.ask.when import time_window

ZONE = ZoneInfo("Europe/Berlin")


def at(day: int, hour: int, minute: int = 0) -> int:
    """Local time on a day of December 2026 (0 and below: the days of November before it)."""
    return int((datetime(2026, 12, 1, hour, minute, tzinfo=ZONE) + timedelta(days=day - 1)).timestamp() * 1000)


NOW = at(4, 21, 30)  # Friday 4 December 2026, evening, Berlin
HOUR = 3_600_000


def window(words: str, now: int = NOW, zone: ZoneInfo = ZONE) -> tuple[int | None, int | None] | None:
    found = time_window(normalise(words), zone, now)
    return None if found is None else (found.start_ms, found.end_ms)


# -- time words ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("words", "start", "end"), [
    ("from half past six until eight", at(4, 18, 30), at(4, 20)),
    ("between 7 and quarter past 9 this morning", at(4, 7), at(4, 9, 15)),
    ("between half seven and eight this morning", at(4, 7, 30), at(4, 8)),
    ("from 7 till half 8 yesterday", at(3, 7), at(3, 8, 30)),
    ("10-11am", at(4, 10), at(4, 11)),
    ("9 to 5", at(4, 9), at(4, 17)),
    ("from noon to 2", at(4, 12), at(4, 14)),
    ("from 6pm until midnight", at(4, 18), None),  # still running at 21:30
    ("between 10pm and 2am", at(3, 22), at(4, 2)),  # asked at 21:30: the last such night
    ("between 11 and 1 last night", at(3, 23), at(4, 1)),
])
def test_a_range_whose_ends_are_clock_words_is_that_range(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("around 9ish yesterday", at(3, 8, 30), at(3, 9, 30)),
    ("at nineish yesterday", at(3, 8, 30), at(3, 9, 30)),
    ("at quarter to seven", at(4, 18, 15), at(4, 19, 15)),  # a bare 6:45 said at night: the evening's
    ("at noon", at(4, 11, 30), at(4, 12, 30)),
    ("around midnight", at(3, 23, 30), at(4, 0, 30)),  # the last midnight, not tonight's still to come
    ("at lunchtime yesterday", at(3, 12), at(3, 14)),
])
def test_a_clock_moment_said_in_words_is_half_an_hour_either_side(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start"), [
    ("since breakfast", at(4, 7)),
    ("since lunch", at(4, 12)),
    ("since dinner", at(4, 19)),
    ("since 2", at(4, 14)),  # a bare hour at 21:30: the afternoon's, as people say it
    ("since 6 o'clock", at(4, 18)),
    ("since 9", at(4, 9)),
    ("since quarter past 8 this morning", at(4, 8, 15)),
    ("since midnight", at(4, 0)),
    ("since last night", at(3, 18)),
])
def test_since_a_moment_runs_to_now(words, start):
    assert window(words) == (start, None)


@pytest.mark.parametrize(("words", "now", "start", "end"), [
    ("tonight", at(5, 2), at(4, 18), None),  # asked after midnight: the night in progress
    ("tonight", NOW, at(4, 18), None),
    ("last night", NOW, at(3, 18), at(4, 6)),
    ("overnight", NOW, at(3, 22), at(4, 6)),
    ("the night before last", NOW, at(2, 18), at(3, 6)),
    ("on thursday night", NOW, at(3, 18), at(4, 6)),  # a weekday night runs into the next morning
    ("wednesday night", NOW, at(2, 18), at(3, 6)),
    ("last evening", NOW, at(3, 18), at(4, 0)),
    ("yesterday eve", NOW, at(3, 18), at(4, 0)),
    ("from yesterday evening to this morning", NOW, at(3, 18), at(4, 12)),
    ("from thursday night until now", NOW, at(3, 18), None),
])
def test_nights_and_evenings(words, now, start, end):
    assert window(words, now) == (start, end)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("earlier today", at(4, 0), None),
    ("so far", at(4, 0), None),
    ("in the past 45 minutes", NOW - HOUR * 3 // 4, None),
    ("in the last 3 hours", NOW - 3 * HOUR, None),
    ("within the hour", NOW - HOUR, None),
    ("in the last couple of hours", NOW - 2 * HOUR, None),
    ("this weekend", at(-2, 0), at(0, 0)),  # on a Friday: the last weekend, Saturday and Sunday
    ("on the 3rd", at(3, 0), at(4, 0)),
    ("on the morning of the 3rd", at(3, 6), at(3, 12)),
    ("around sunset", None, None),  # checked below: the sun's hour where the zone lies
])
def test_spans_and_dates(words, start, end):
    if words == "around sunset":
        start_ms, end_ms = window(words)
        assert at(4, 15, 20) < start_ms < at(4, 15, 40) and end_ms - start_ms == HOUR  # Berlin, early December
        return
    assert window(words) == (start, end)


def test_times_are_read_in_the_zone_they_are_asked_in():
    tokyo = ZoneInfo("Asia/Tokyo")
    noon_tokyo = int(datetime(2026, 12, 4, 12, tzinfo=tokyo).timestamp() * 1000)
    start, end = window("in the middle of the night", noon_tokyo, tokyo)
    assert start == int(datetime(2026, 12, 4, 0, tzinfo=tokyo).timestamp() * 1000)
    assert end == int(datetime(2026, 12, 4, 6, tzinfo=tokyo).timestamp() * 1000)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("before 8 this morning", at(4, 0), at(4, 8)),  # the small hours too: "before 8" has no start of its own
    ("before 10 in the morning yesterday", at(3, 0), at(3, 10)),
    ("after 10 this morning", at(4, 10), None),  # the part says am; "after" runs to the day's end, as "before"
    ("after 10 yesterday morning", at(3, 10), at(4, 0)),  # starts at the day's start
    ("yesterday between 8 and 9 in the morning", at(3, 8), at(3, 9)),
    ("between 7 and 9 tonight", at(4, 19), at(4, 21)),
    ("after 8 in the evening", at(4, 20), None),
    ("between 6 and 7 yesterday evening", at(3, 18), at(3, 19)),
    ("at around half eight last night", at(3, 20), at(3, 21)),
    ("in the early hours of yesterday", at(3, 0), at(3, 6)),
    ("until 8 am today", at(4, 0), at(4, 8)),
    ("between midnight and 6am today", at(4, 0), at(4, 6)),  # the midnight the day starts with
    ("from midnight to 5 yesterday", at(3, 0), at(3, 5)),
    ("in the hour before midnight yesterday", at(3, 23), at(4, 0)),  # the hour said, not the whole day
    ("the hour after 9pm yesterday", at(3, 21), at(3, 22)),
    ("in the hour before 8 this morning", at(4, 7), at(4, 8)),
])
def test_a_clock_time_with_a_part_of_the_day(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start"), [
    ("over the last two days", at(3, 0)),  # yesterday and today, whole, as people count days
    ("in the past 3 days", at(2, 0)),
    ("in the last day", NOW - 24 * HOUR),  # one day: the last 24 hours
    ("in the last 24 hours", NOW - 24 * HOUR),
    ("in the past week", NOW - 7 * 24 * HOUR),
])
def test_days_back_are_whole_days_and_hours_back_are_hours(words, start):
    assert window(words) == (start, None)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("on 3/12", at(3, 0), at(4, 0)),  # 3 December, not 12 March: the later day either order names
    ("on 12/3", at(3, 0), at(4, 0)),
    ("on 2/11", at(-28, 0), at(-27, 0)),  # 2 November (11 February is earlier)
    ("at 9.30 yesterday", at(3, 9), at(3, 10)),
])
def test_dates_in_figures_and_a_dotted_clock_time(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("from 9 in the morning to 5 in the afternoon", at(4, 9), at(4, 17)),  # each end in its own part
    ("from 10 at night to 6 in the morning", at(3, 22), at(4, 6)),  # asked at 21:30: the last such night
    ("from 8 this morning until 2", at(4, 8), at(4, 14)),
    ("tonight after 10", at(4, 22), None),  # "tonight" is today's, even still to come
    ("after lunch but before dinner", at(4, 13), at(4, 19)),  # after a meal: once it is over
    ("from quarter past six to quarter to seven this evening", at(4, 18, 15), at(4, 18, 45)),
])
def test_each_end_of_a_range_is_read_where_it_is_said(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("on 03.12.", at(3, 0), at(4, 0)),  # a dotted date: day first
    ("on 3.12.2026 around 10", at(3, 9, 30), at(3, 10, 30)),
    ("at 9.30.", at(4, 9), at(4, 10)),  # a clock time at the end of a sentence
])
def test_dotted_dates_and_times(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start", "end"), [
    ("since 6 yesterday evening", at(3, 18), None),
    ("since 8 last night", at(3, 20), None),
    ("since 5 in the afternoon", at(4, 17), None),
    ("past midnight", at(4, 0), at(4, 6)),
    ("during daylight hours", at(4, 6), at(4, 18)),
    ("this time yesterday", at(3, 21), at(3, 22)),  # now's clock time a day back, half an hour either side
    ("same time yesterday", at(3, 21), at(3, 22)),
])
def test_since_a_time_of_a_named_day_and_times_of_day_in_words(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "start"), [
    *[(f"after {word} yesterday", at(3, hour)) for word, hour in (
        ("one", 13), ("two", 14), ("three", 15), ("four", 16), ("five", 17), ("six", 18), ("seven", 7),
        ("eight", 8), ("nine", 9), ("ten", 10), ("eleven", 11), ("twelve", 12))],  # 7-11 morning, 1-6 afternoon
    ("after 9 p m yesterday", at(3, 21)), ("after 9 a m yesterday", at(3, 9)), ("after 12 am yesterday", at(3, 0)),
    ("after 12 pm yesterday", at(3, 12)), ("after 11 pm yesterday", at(3, 23)),
    ("after 11:59 yesterday", at(3, 11, 59)), ("after 23:59 yesterday", at(3, 23, 59)),
    ("after 5 oclock yesterday", at(3, 17)),
    ("after 5 o'clock yesterday", at(3, 17)), ("after 11 oclock yesterday", at(3, 11)),
    ("after 9:75 yesterday", at(3, 0)), ("after 25 yesterday", at(3, 0)),  # no such clock time: the whole day
])
def test_a_clock_hour_is_read_as_people_say_it(words, start):
    assert window(words)[0] == start


@pytest.mark.parametrize(("words", "start", "end"), [
    ("at 12 am yesterday", at(2, 23, 30), at(3, 0, 30)), ("at 5 last night", at(4, 4, 30), at(4, 5, 30)),
    ("at 6 last night", at(3, 17, 30), at(3, 18, 30)), ("before 6 yesterday afternoon", at(3, 12), at(3, 18)),
    ("at 3 this afternoon", at(4, 14, 30), at(4, 15, 30)), ("at 9 tonight", at(4, 20, 30), at(4, 21, 30)),
])
def test_the_part_of_the_day_decides_a_bare_hour(words, start, end):
    assert window(words) == (start, end)


@pytest.mark.parametrize(("words", "phrase"), [
    ("between 3 and 4 am", "today between 03:00 and 04:00"), ("between 8 and 10 pm", "today between 20:00 and 22:00"),
    ("between 9 and 5", "today between 09:00 and 17:00"), ("between 9am and 11", "today between 09:00 and 11:00"),
    ("between 10 pm and 2 am", "yesterday between 22:00 and 02:00"),
    ("between 2 and 3", "today between 14:00 and 15:00"),
    ("between 11 and 1 last night", "last night between 23:00 and 01:00"),
    ("between noon and 3", "today between 12:00 and 15:00"), ("between 9 and noon", "today between 09:00 and 12:00"),
    ("between 7 and 8 yesterday evening", "yesterday evening between 19:00 and 20:00"),
    ("after 10pm and before 2am", "yesterday between 22:00 and 02:00"),
    ("after 9 and before 11", "today between 09:00 and 11:00"), ("after 6:30 pm", "today after 18:30"),
    ("after midnight yesterday", "after midnight yesterday"), ("before 7:45", "today before 07:45"),
    ("at lunch", "today at lunchtime"), ("at lunchtime yesterday", "yesterday lunchtime"),
    ("at 3", "today around 15:00"), ("at 3 yesterday", "yesterday around 15:00"), ("at 3:15", "today around 15:15"),
    ("about 10 am", "today around 10:00"), ("circa 4", "today around 16:00"),
    ("at noon yesterday", "yesterday around 12:00"),
    ("around midnight", "yesterday around 00:00"),
    ("from 9 in the morning to 5 in the afternoon", "this morning between 09:00 and 17:00"),
    ("about 3 hours ago", "about 3 hours ago"), ("a week ago", "a week ago"),
    ("since yesterday at 5pm", "since yesterday 17:00"), ("since last tuesday at 9", "since Tuesday 09:00"),
    ("on dec the 3rd", "on December 3"), ("2026-12-03", "on December 3"), ("on 3/12/2025", "on December 3 2025"),
    ("between tuesday and thursday", "from Tuesday December 1 to Thursday December 3"),
    ("from december 1 to 3", "from Tuesday December 1 to Thursday December 3"),
    ("since 9", "since 09:00"), ("since 8 last night", "since 20:00 yesterday"),
    ("within the hour", "in the last hour"),
    ("this time yesterday", "this time yesterday"), ("last night", "last night"), ("overnight", "overnight"),
    ("tonight", "tonight"), ("this morning", "this morning"), ("yesterday after dark", "yesterday after dark"),
    ("during the day", "today during the day"), ("on 3 december in the evening", "on December 3 in the evening"),
    ("on 3 december at night", "on December 3 at night"), ("on thursday evening", "on Thursday evening"),
    ("the night before last", "the night before last"), ("this week", "this week"), ("this weekend", "at the weekend"),
    ("last month", "in November"), ("in november", "in November"), ("since november", "since November"),
    ("this month", "this month"),
])
def test_the_range_is_said_back_as_read(words, phrase):
    assert time_window(normalise(words), ZONE, NOW).phrase == phrase


JAN = int(datetime(2027, 1, 10, 12, tzinfo=ZONE).timestamp() * 1000)  # a Sunday in January


def on(day: datetime) -> int:
    return int(day.replace(tzinfo=ZONE).timestamp() * 1000)


@pytest.mark.parametrize(("words", "now", "start", "end"), [
    ("after 24 yesterday", NOW, at(3, 0), at(4, 0)), ("after 9:60 yesterday", NOW, at(3, 0), at(4, 0)),
    ("after 0 yesterday", NOW, at(3, 0), at(4, 0)), ("after 11 this evening", NOW, at(4, 23), None),
    ("from 9 in the evening to 11 at night", NOW, at(4, 21), None),
    ("between 3 and 4 a m", NOW, at(4, 3), at(4, 4)), ("between 8 and 8 pm", NOW, at(4, 8), at(4, 20)),
    ("between 11 and 1 tonight", NOW, at(4, 23), None), ("between 12 and 2 pm", NOW, at(4, 12), at(4, 14)),
    ("from midnight", NOW, at(4, 0), None), ("in the last half hour", NOW, at(4, 21), None),
    ("in the past half an hour", NOW, at(4, 21), None), ("a few minutes ago", NOW, at(4, 21), None),
    ("a moment ago", NOW, at(4, 21), None), ("at this minute", NOW, at(4, 21), None),
    ("since 9pm", NOW, at(4, 21), None), ("since 12 am", NOW, at(4, 0), None), ("since 12pm", NOW, at(4, 12), None),
    ("2 days ago", NOW, at(2, 0), at(3, 0)), ("2 weeks ago", NOW, at(-10, 0), at(-9, 0)),
    ("on tues", NOW, at(1, 0), at(2, 0)), ("last sat", NOW, at(-2, 0), at(-1, 0)), ("since weds", NOW, at(2, 0), None),
    ("on thurs", NOW, at(3, 0), at(4, 0)), ("last friday", NOW, at(-3, 0), at(-2, 0)),
    ("on friday", NOW, at(4, 0), None),
    ("in the past few minutes", NOW, NOW - 3 * 60_000, None), ("in the last several hours", NOW, NOW - 3 * HOUR, None),
    ("on 3/12/26", NOW, at(3, 0), at(4, 0)), ("on 13/12", NOW, on(datetime(2025, 12, 13)), on(datetime(2025, 12, 14))),
    ("on 12/25", NOW, on(datetime(2025, 12, 25)), on(datetime(2025, 12, 26))),
    ("on the 28th", NOW, at(-2, 0), at(-1, 0)),
    ("on the 5th", NOW, on(datetime(2026, 11, 5)), on(datetime(2026, 11, 6))),
    ("on 5 march", NOW, on(datetime(2026, 3, 5)), on(datetime(2026, 3, 6))),
    ("on march 5th 2025", NOW, on(datetime(2025, 3, 5)), on(datetime(2025, 3, 6))),
    ("last wednesday night", NOW, at(2, 18), at(3, 6)),
    ("on the 28th", JAN, on(datetime(2026, 12, 28)), on(datetime(2026, 12, 29))),  # last month's, in January
    ("on the 5th", JAN, on(datetime(2027, 1, 5)), on(datetime(2027, 1, 6))),
    ("in december", JAN, on(datetime(2026, 12, 1)), on(datetime(2027, 1, 1))),
    ("last month", JAN, on(datetime(2026, 12, 1)), on(datetime(2027, 1, 1))),
])
def test_more_clock_day_and_date_forms(words, now, start, end):
    assert window(words, now) == (start, end)


@pytest.mark.parametrize("words", ["since 25", "since 9:61", "on 31/11"])
def test_no_such_time_or_day_reads_as_no_range(words):
    assert window(words) is None


@pytest.mark.parametrize(("words", "start", "end"), [
    ("from 10 at night to 2", at(3, 22), at(4, 2)),  # the end said bare is the night's
    ("from 9 pm to 1", at(4, 21), None), ("from 6 am to 9", at(4, 6), at(4, 9)),
    ("from 7 in the evening to 9", at(4, 19), at(4, 21)),
])
def test_an_end_said_bare_follows_the_part_of_the_day_of_the_start(words, start, end):
    assert window(words) == (start, end)


MINUTE = 60_000


@pytest.mark.parametrize(("words", "now", "start", "end", "phrase"), [
    ("10 minutes ago", NOW, NOW - 15 * MINUTE, NOW - 5 * MINUTE, "about 10 minutes ago"),  # 5 min either side
    ("2 minutes ago", NOW, NOW - 7 * MINUTE, None, "about 2 minutes ago"),  # at least 5 min either side
    ("45 minutes ago", NOW, NOW - 67 * MINUTE - 30_000, NOW - 22 * MINUTE - 30_000, "about 45 minutes ago"),
    ("an hour ago", NOW, NOW - 90 * MINUTE, NOW - 30 * MINUTE, "about 1 hour ago"),
    ("3 hrs ago", NOW, NOW - 210 * MINUTE, NOW - 150 * MINUTE, "about 3 hours ago"),
    ("from friday to monday", NOW, at(-3, 0), at(1, 0), "from Friday November 27 to Monday November 30"),
    ("from saturday to sunday", NOW, at(-2, 0), at(0, 0), "from Saturday November 28 to Sunday November 29"),
    ("overnight before 5", NOW, at(3, 22), at(4, 5), "overnight before 05:00"),
    ("after dark before 9", NOW, at(4, 18), at(4, 21), "after dark before 21:00"),
    ("during the day after 3", NOW, at(4, 15), at(4, 18), "today during the day after 15:00"),
    ("last night after 1", NOW, at(4, 1), at(4, 6), "last night after 01:00"),
    ("last night between 11 and 2", NOW, at(3, 23), at(4, 2), "last night between 23:00 and 02:00"),
    ("last weekend", at(6, 12), at(-2, 0), at(0, 0), "at the weekend"),  # on a Sunday: the one before
    ("this weekend", at(5, 12), at(5, 0), None, "at the weekend"), ("last weekend", at(5, 12), at(-2, 0), at(0, 0),
                                                                    "at the weekend"),
    ("since 6", at(4, 10), at(4, 6), None, "since 06:00"), ("since 7", NOW, at(4, 7), None, "since 07:00"),
    ("since 1", at(4, 12, 30), at(4, 1), None, "since 01:00"),
    ("from 10pm yesterday to 6 this morning", NOW, at(3, 22), at(4, 6),
     "from yesterday 22:00 to this morning 06:00"),
    ("between 10 and 4", NOW, at(4, 10), at(4, 16), "today between 10:00 and 16:00"),
    ("this week", NOW, at(0, 0), None, "this week"), ("tonight", at(5, 3), at(4, 18), None, "tonight"),
    ("in the middle of the night yesterday", NOW, at(3, 0), at(3, 6), "after midnight yesterday"),
    ("after midnight last night", NOW, at(4, 0), at(4, 6), "after midnight"),
])
def test_moments_back_weekends_and_day_spans_with_their_phrases(words, now, start, end, phrase):
    found = time_window(normalise(words), ZONE, now)
    assert (found.start_ms, found.end_ms, found.phrase) == (start, end, phrase)


def test_time_words_that_give_no_range_are_said_back():
    from edgetriage.cloud.ask.when import unread_time

    assert unread_time("how many people") is None
    said = unread_time("people at 7pm on the 31st in march last spring")
    assert said.startswith('"7pm", "31st", "march", "last spring": read as no time range, so this is over every '
                           'stored event; say it as e.g. "this morning"')


@pytest.mark.parametrize("words", ["on 32/1", "on 0/12", "on 12/0"])
def test_figures_that_are_no_date_read_as_no_range(words):
    assert window(words) is None


@pytest.mark.parametrize(("words", "now", "start", "end", "phrase"), [
    # a date in figures: each reading's month 1-12 and day 1-31, both ends of each range
    ("on 31/12", NOW, on(datetime(2025, 12, 31)), on(datetime(2026, 1, 1)), "on December 31 2025"),
    ("on 13/1", NOW, on(datetime(2026, 1, 13)), on(datetime(2026, 1, 14)), "on January 13"),
    ("on 1/12", NOW, at(1, 0), at(2, 0), "on December 1"),
    # N minutes ago: half of N either side, at most half an hour
    ("90 minutes ago", NOW, NOW - 120 * MINUTE, NOW - 60 * MINUTE, "about 90 minutes ago"),
    # "since" a bare hour 1-6: the afternoon's once it has come, to the minute; 0 and 7 as said
    ("since 6", NOW, at(4, 18), None, "since 18:00"), ("since 6", at(4, 18), at(4, 18), None, "since 18:00"),
    ("since 6", at(4, 17, 59), at(4, 6), None, "since 06:00"), ("since 2", at(4, 14), at(4, 14), None, "since 14:00"),
    ("since 0", NOW, at(4, 0), None, "since 00:00"), ("since 7", at(4, 19), at(4, 7), None, "since 07:00"),
    ("since 1", NOW, at(4, 13), None, "since 13:00"),
    # overnight and after dark read a bare hour as the night's
    ("overnight after 10", NOW, at(3, 22), at(4, 6), "overnight after 22:00"),
    ("after dark after 7", NOW, at(4, 19), None, "after dark after 19:00"),
])
def test_date_figures_minutes_ago_since_a_bare_hour_and_night_hours_at_their_edges(words, now, start, end, phrase):
    found = time_window(normalise(words), ZONE, now)
    assert (found.start_ms, found.end_ms, found.phrase) == (start, end, phrase)
