"""Time words at their edges (cloud/ask/when.py): a range whose two ends are the same clock time, an hour said
that is no clock time at one end of a range, the am/pm of a bare start beside an end said with pm, noon said
bare in the afternoon. Each case is one that a one-character slip in when.py reads differently (a `<` for a
`<=`, an `and` for an `or`); the mutation score of when.py (bench/mutation.py) is judged with these and
test_ask_when.py. No store, no model: a fraction of a second."""

from __future__ import annotations

from datetime import datetime

import pytest
from edgetriage.cloud.ask.rules import normalise
from edgetriage.cloud.ask.when import time_window
from test_ask_when import NOW, ZONE, at, on


def said(words: str, now: int = NOW) -> tuple[int | None, int | None, str] | None:
    found = time_window(normalise(words), ZONE, now)
    return None if found is None else (found.start_ms, found.end_ms, found.phrase)


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    # the same clock time at both ends: a whole turn of the clock, not an empty range
    ("from 9 in the morning to 9 in the morning", at(4, 9), None, "this morning between 09:00 and 09:00"),
    # an end that is no clock time: the other words as if it were not said, never a range from half of it
    # an end that is no clock time leaves "after 9 in the morning": from 09:00 on (not only the morning's rest)
    ("from 9 in the morning to 25 in the afternoon", at(4, 9), None, "today after 09:00"),
    ("from 25 in the morning to 5 in the afternoon", at(4, 6), at(4, 12), "this morning"),
    ("between 9 and 25", at(4, 0), None, "today"), ("between 25 and 9", at(4, 0), None, "today"),
    ("around 24 yesterday", at(3, 0), at(4, 0), "yesterday"),  # 24 is no clock time (midnight is said so)
    # a bare start before an end said with pm: the evening's when it is more than 12 hours before the end
    ("between 8 and 9 pm", at(4, 20), at(4, 21), "today between 20:00 and 21:00"),
    ("between 8 and 8 pm", at(4, 8), at(4, 20), "today between 08:00 and 20:00"),
    # one clock time at both ends: a whole turn of the clock (bare, 9 to 9 is the shop's 09:00-21:00)
    ("between 11 and 11 last night", at(3, 23), None, "last night between 23:00 and 23:00"),
    ("between 5 and 5 yesterday", at(3, 17), at(4, 17), "yesterday between 17:00 and 17:00"),
    ("after 5 and before 5 yesterday", at(3, 17), at(4, 17), "yesterday between 17:00 and 17:00"),
    ("between 9 and 9 yesterday", at(3, 9), at(3, 21), "yesterday between 09:00 and 21:00"),
    # an end before the start: the next day's (24-hour figures as said), or pm when said bare and 12 or under
    ("between 18:00 and 13:00 yesterday", at(3, 18), at(4, 13), "yesterday between 18:00 and 13:00"),
    ("between 2 pm and 12 yesterday", at(3, 14), at(4, 0), "yesterday between 14:00 and 00:00"),
    ("before 25 yesterday", at(3, 0), at(4, 0), "yesterday"),  # no clock time: the day
    ("from midnight", at(4, 0), None, "today after 00:00"),
    # noon said bare is noon, whatever the part of the day
    ("between 12 and 2 this afternoon", at(4, 12), at(4, 14), "this afternoon between 12:00 and 14:00"),
    # a bare end before the start is the next time its clock shows: the next morning's, never the afternoon's
    ("between 11 pm and 5 yesterday", at(3, 23), at(4, 5), "yesterday between 23:00 and 05:00"),
    ("between 10 pm and 10 yesterday", at(3, 22), at(4, 10), "yesterday between 22:00 and 10:00"),
    ("between 9pm and 3 yesterday", at(3, 21), at(4, 3), "yesterday between 21:00 and 03:00"),
    ("between 9 and 5 yesterday", at(3, 9), at(3, 17), "yesterday between 09:00 and 17:00"),
])
def test_ranges_at_their_edges(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    # a run of days whose first day is a date said each way
    ("from 1 december to 3 december", at(1, 0), at(4, 0), "from Tuesday December 1 to Thursday December 3"),
    ("between the 1st of december and the 3rd", at(1, 0), at(4, 0), "from Tuesday December 1 to Thursday December 3"),
    ("from the 1st to the 3rd", at(1, 0), at(4, 0), "from Tuesday December 1 to Thursday December 3"),
    # now, in each of its words: the last half hour
    ("just now", at(4, 21), None, "in the last half hour"), ("right now", at(4, 21), None, "in the last half hour"),
    ("currently", at(4, 21), None, "in the last half hour"),
    ("at the moment", at(4, 21), None, "in the last half hour"),
])
def test_runs_of_dates_and_now(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    # "since" a clock time: 23 and 59 are the last of each, 24 and 60 are none
    ("since 11 pm", at(3, 23), None, "since 23:00 yesterday"),
    ("since 23:00", at(3, 23), None, "since 23:00 yesterday"),
    ("since 9:59", at(4, 9, 59), None, "since 09:59"), ("since 9:30", at(4, 9, 30), None, "since 09:30"),
    ("since 12:59 am", at(4, 0, 59), None, "since 00:59"),
    ("the day before yesterday", at(2, 0), at(3, 0), "the day before yesterday"),
    ("today", at(4, 0), None, "today"),
    ("on 3/12/25", at(3 - 365, 0), at(4 - 365, 0), "on December 3 2025"),  # a year in two figures: 20xx
    ("in the last hour", NOW - 3_600_000, None, "in the last hour"),  # no count: one
])
def test_since_a_clock_time_named_days_and_years(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


@pytest.mark.parametrize("words", ["since 24", "since 9:60"])
def test_since_no_clock_time_is_no_range(words):
    assert said(words) is None


JAN = at(41, 12)  # Sunday 10 January 2027, noon
FEB = at(72, 12)  # Wednesday 10 February 2027, noon


@pytest.mark.parametrize(("words", "now", "start", "end", "phrase"), [
    # a date named that is today is today's, not last year's
    ("on 4/12", NOW, at(4, 0), None, "on December 4"), ("on 4 december", NOW, at(4, 0), None, "on December 4"),
    # later this year: last year's; later this month in February: January's
    ("on 20 january", JAN, on(datetime(2026, 1, 20)), on(datetime(2026, 1, 21)), "on January 20 2026"),
    ("on the 28th", FEB, at(59, 0), at(60, 0), "on January 28"),
    ("during lunch time yesterday", NOW, at(3, 12), at(3, 14), "yesterday lunchtime"),
    ("since yesterday at 12 am", NOW, at(3, 0), None, "since yesterday 00:00"),
    ("since weds", NOW, at(2, 0), None, "since Wednesday"),
    ("from 9pm wednesday to 7am thursday", NOW, at(2, 21), at(3, 7),
     "from Wednesday 21:00 to Thursday 07:00"),
])
def test_dates_today_and_in_the_months_before_and_days_named_at_each_end(words, now, start, end, phrase):
    assert said(words, now) == (start, end, phrase)


@pytest.mark.parametrize("words", ["from 6 am today to 6 am today", "from yesterday evening to yesterday afternoon"])
def test_a_range_from_a_time_to_itself_or_back_is_never_empty(words):
    start, end, _ = said(words)
    assert end is None or start < end


def test_a_range_up_to_now_and_words_that_name_no_day():
    start, end, phrase = said("from thursday night until now")
    assert (start, end) == (at(3, 18), None)
    assert phrase.startswith("from ") and phrase.endswith(" Thursday night to now")
    assert said("from this to now") is None


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    ("from thursday to thursday", at(3, 0), at(4, 0), "from Thursday December 3 to Thursday December 3"),  # one day
    ("from the 1st to 3", at(1, 0), at(4, 0), "from Tuesday December 1 to Thursday December 3"),
])
def test_a_run_of_days_from_a_day_to_itself_or_to_a_bare_day(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


def test_a_run_of_days_from_no_such_day_is_no_range():
    assert said("between the 45th and the 3rd") is None


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    # a weekday before a date more than a week back: the one before that date
    ("from friday to 25 november", at(-10, 0), at(-4, 0), "from Friday November 20 to Wednesday November 25"),
    ("from friday to 19 november", at(-17, 0), at(-10, 0), "from Friday November 13 to Thursday November 19"),
    # "since" a bare hour with its part of the day; noon and midnight in words
    ("since 8 tonight", at(4, 20), None, "since 20:00"), ("since 12 this afternoon", at(4, 12), None, "since 12:00"),
    ("since noon", at(4, 12), None, "since 12:00"), ("since midnight", at(4, 0), None, "since 00:00"),
])
def test_weekdays_a_week_back_and_since_a_part_of_the_day(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    ("in the last half hour", at(4, 21), None, "in the last half hour"),
    ("over the last two days", at(3, 0), None, "over the last two days"),
    ("5 minutes ago", NOW - 10 * 60_000, None, "about 5 minutes ago"),  # 5 either side: up to now
])
def test_spans_and_moments_said_back(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


def test_the_last_day_as_the_subject_is_no_span():
    assert said("the last day was quiet") is None


@pytest.mark.parametrize(("text", "back_min", "to_min", "phrase"), [
    ("10 min ago", 15, 5, "about 10 minutes ago"), ("2 hr ago", 150, 90, "about 2 hours ago"),
])
def test_short_units_as_when_reads_them(text, back_min, to_min, phrase):
    found = time_window(text, ZONE, NOW)  # not normalised: when.py's own reading of "min" and "hr"
    assert (found.start_ms, found.end_ms, found.phrase) == (NOW - back_min * 60_000, NOW - to_min * 60_000, phrase)


def test_tonight_asked_at_half_past_six_in_the_morning_is_the_coming_night():
    assert said("tonight", at(5, 6, 30)) == (at(5, 18), None, "tonight")


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    # "before" an hour at or before the part's start: from the day's start, said as today
    ("before 6 this evening", at(4, 0), at(4, 18), "today before 18:00"),
    ("before 12 this afternoon", at(4, 0), at(4, 12), "today before 12:00"),
    ("from midnight this evening", at(5, 0), at(5, 0), "this evening after 00:00"),  # empty, even still to come
    ("after 21:30", NOW, None, "today after 21:30"),  # starting this minute: today's, not yesterday's
])
def test_before_and_after_at_the_edges_of_a_part_of_the_day(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


def test_last_weekend_asked_on_monday_is_the_one_just_gone():
    assert said("last weekend", at(7, 12)) == (at(5, 0), at(7, 0), "at the weekend")


def test_this_month_by_name_is_this_year_s():
    assert said("in december") == (at(1, 0), None, "in December")


def test_month_words_read_as_no_range_are_named_with_the_advice():
    from edgetriage.cloud.ask.when import unread_time

    assert unread_time("people on jan or dec") == (
        '"jan", "dec": read as no time range, so this is over every stored event; say it as e.g. "this morning", '
        '"since 6", "on November 28", "3 hours ago"')


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    # "the 3rd" after "the 28th": the latest 3rd, in the month after the first day's
    ("from the 28th to the 3rd", at(-2, 0), at(4, 0), "from Saturday November 28 to Thursday December 3"),
    # one small hour at both ends of a night: a whole turn of the clock, as in the day
    ("between 1 and 1 last night", at(4, 1), None, "last night between 01:00 and 01:00"),
])
def test_a_run_of_days_across_a_month_and_a_night_from_an_hour_to_itself(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


@pytest.mark.parametrize(("words", "same_as"), [
    ("at 12 tonight", "at midnight tonight"),
    ("at 12 last night", "at midnight last night"),
    ("between 10 and 12 last night", "between 10 pm and midnight last night"),
])
def test_twelve_said_of_a_night_is_midnight(words, same_as):
    assert said(words) == said(same_as) and said(words)[2].endswith("00:00")
    assert said("at 12 this afternoon")[2] == "this afternoon around 12:00"  # of a day, noon


@pytest.mark.parametrize(("words", "start", "end", "phrase"), [
    # a day and a clock time at each end, in either order, with or without "from": the range spans both days
    ("from 10pm thursday to 6 friday", at(3, 22), at(4, 6), "from Thursday 22:00 to Friday 06:00"),
    ("from thursday 10pm to friday 6am", at(3, 22), at(4, 6), "from Thursday 22:00 to Friday 06:00"),
    ("from 10pm on thursday until 6 on friday", at(3, 22), at(4, 6), "from Thursday 22:00 to Friday 06:00"),
    ("thursday 22:00 - friday 06:00", at(3, 22), at(4, 6), "from Thursday 22:00 to Friday 06:00"),
    ("between wednesday 11pm and thursday 5", at(2, 23), at(3, 5), "from Wednesday 23:00 to Thursday 05:00"),
    ("from yesterday 9pm to this morning 7", at(3, 21), at(4, 7), "from yesterday 21:00 to this morning 07:00"),
    ("from 8pm yesterday till 2 today", at(3, 20), at(4, 2), "from yesterday 20:00 to today 02:00"),
    # a bare end the start's next turn of the clock does not reach on its day: as people say an hour
    ("from 9am monday to 5 tuesday", at(0, 9), at(1, 17), "from Monday 09:00 to Tuesday 17:00"),
    ("from noon wednesday to 1 thursday", at(2, 12), at(3, 13), "from Wednesday 12:00 to Thursday 13:00"),
    # each weekday the latest one, the end's first: the start the latest such day before the end
    ("from 10pm friday to 6 saturday", at(-3, 22), at(-2, 6), "from Friday 22:00 to Saturday 06:00"),
    ("from thursday 22:00 to monday 06:00", at(-4, 22), at(0, 6), "from Thursday 22:00 to Monday 06:00"),
    # the start's next turn of the clock on the end's day, the evening's; minutes at either end kept
    ("from 4am tuesday to 3 tuesday", at(1, 4), at(1, 15), "from Tuesday 04:00 to Tuesday 15:00"),
    ("from 10pm thursday to 6:30 friday", at(3, 22), at(4, 6, 30), "from Thursday 22:00 to Friday 06:30"),
    ("from 10:30pm friday to 6 saturday", at(-3, 22, 30), at(-2, 6), "from Friday 22:30 to Saturday 06:00"),
    ("from friday 10pm to thursday 6", at(-3, 22), at(3, 18), "from Friday 22:00 to Thursday 18:00"),
    # two moments joined by "and" without "between" are no range; a range after them still is
    ("at 9pm monday and 8 tuesday, and from 10pm thursday to 6 friday", at(3, 22), at(4, 6),
     "from Thursday 22:00 to Friday 06:00"),
    ("at 10pm yesterday and 6 this morning", at(3, 21, 30), at(3, 22, 30), "yesterday morning around 22:00"),
    # parts of days at each end, with "between ... and" as with "from ... to"
    ("between friday night and saturday morning", at(-3, 18), at(-2, 12), "from Friday night to Saturday morning"),
    ("between yesterday evening and this morning", at(3, 18), at(4, 12), "from yesterday evening to this morning"),
    ("from friday evening to now", at(4, 18), None, "from Friday evening to now"),
    ("thursday night into friday morning", at(3, 18), at(4, 12), "from Thursday night to Friday morning"),
    # the end's clock alone, after a day and a clock time: the next time the clock shows it after the start
    ("between 9 last night and 2", at(3, 21), at(4, 2), "from last night 21:00 to 02:00"),
    ("from 9pm yesterday to 7", at(3, 21), at(4, 7), "from yesterday 21:00 to 07:00"),
    ("from 10 pm yesterday until 1 am", at(3, 22), at(4, 1), "from yesterday 22:00 to 01:00"),
    ("between 11 yesterday and 13:00", at(3, 11), at(3, 13), "from yesterday 11:00 to 13:00"),
    ("from tuesday 5pm till 9", at(1, 17), at(1, 21), "from Tuesday 17:00 to 21:00"),
])
def test_a_day_and_a_clock_time_at_each_end_span_both_days(words, start, end, phrase):
    assert said(words) == (start, end, phrase)


def test_a_weekday_range_asked_on_its_last_day_runs_to_now():
    assert said("between friday night and saturday morning", at(5, 3)) == (at(4, 18), None,
                                                                          "from Friday night to Saturday morning")


@pytest.mark.parametrize(("words", "start", "end"), [
    # a clock time written with a leading zero is the 24-hour clock's: "06:00" is the morning, in any part
    ("before 06:00", at(4, 0), at(4, 6)), ("between 05:00 and 07:00", at(4, 5), at(4, 7)),
    ("since 06:00", at(4, 6), None), ("at 07:30", at(4, 7), at(4, 8)),
    ("between 23:00 and 05:00 yesterday", at(3, 23), at(4, 5)),
])
def test_a_leading_zero_is_the_24_hour_clock(words, start, end):
    assert said(words)[:2] == (start, end)


@pytest.mark.parametrize(("words", "start", "end"), [
    # a bare end before the start: the next time its clock shows, the same evening when that comes first
    ("between 8 pm and 9 yesterday", at(3, 20), at(3, 21)),
    ("between eight pm and nine yesterday", at(3, 20), at(3, 21)),
    ("between 9 pm and 9 yesterday", at(3, 21), at(4, 9)),  # its own hour: the next morning's, never empty
    # a bare 12 at both ends: noon to midnight; 12 said of an evening or a night is midnight
    ("between 12 and 12 yesterday", at(3, 12), at(4, 0)), ("between 11 and 12 last night", at(3, 23), at(4, 0)),
    ("between 10 and 12 this evening", at(4, 22), None),
    # from midnight: a bare end is its morning's only between 13 and 18 (as said in the afternoon)
    ("between midnight and 12 yesterday", at(3, 0), at(3, 12)),
    ("between midnight and 19:00 yesterday", at(3, 0), at(3, 19)),
])
def test_a_bare_end_and_twelve_at_the_edges_of_the_clock(words, start, end):
    assert said(words)[:2] == (start, end)
