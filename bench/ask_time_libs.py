"""Time words: the question reader's own rules (cloud/ask/when.py) against three libraries on PyPI that read
time expressions (ctparse, timefhuman, recognizers-text-date-time), on the phrasings issue 37 names: ranges
whose ends are clock words, half/quarter forms, meals, "tonight" after midnight, "last night", weekday nights,
a shop's hours in words, sunrise. Each phrase has the range it means (written from the phrase, at a fixed
`now`, in Europe/Berlin); a reading is right when both ends are within 1 minute (sunrise: 30 minutes) of it.
A library that gives one moment (no range) is right only where the phrase means a range starting there and
running to now. The libraries are not dependencies: install them beside edgetriage to run this.

    python bench/ask_time_libs.py            (ends with one JSON line: the share right per reader)
    python bench/ask_time_libs.py --blind3   the time words of bench/ask_questions_blind3.jsonl (written by
                                             someone who never read the rules) against their selections' from/to

A phrase with a weekday written "{D1:%A}" is filled in with D1's weekday.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from edgetriage.cloud.ask.rules import normalise
from edgetriage.cloud.ask.when import time_window

ZONE = ZoneInfo("Europe/Berlin")
D2 = datetime(2026, 12, 4, tzinfo=ZONE)  # a Friday; "now" is D2 21:30 unless a phrase says otherwise
NOW = D2.replace(hour=21, minute=30)
AFTER_MIDNIGHT = (D2 + timedelta(days=1)).replace(hour=2, minute=0)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    """day 0 = D2, -1 = D1, 1 = D3."""
    return (D2 + timedelta(days=day)).replace(hour=hour, minute=minute)


# phrase, now, start, end (None: to now), tolerance in minutes
PHRASES = [
    ("from half past six until eight", NOW, at(0, 18, 30), at(0, 20), 1),
    ("between quarter to seven and nine this evening", NOW, at(0, 18, 45), at(0, 21), 1),
    ("from 10 until half past 11 yesterday", NOW, at(-1, 10), at(-1, 11, 30), 1),
    ("yesterday between 3 and 5 pm", NOW, at(-1, 15), at(-1, 17), 1),
    ("between nine and noon yesterday", NOW, at(-1, 9), at(-1, 12), 1),
    ("after half past five", NOW, at(0, 17, 30), None, 1),
    ("since quarter past eight this morning", NOW, at(0, 8, 15), None, 1),
    ("since breakfast", NOW, at(0, 7), None, 1),
    ("since lunch", NOW, at(0, 12), None, 1),
    ("since noon", NOW, at(0, 12), None, 1),
    ("before lunch", NOW, at(0, 0), at(0, 12), 1),
    ("this morning", NOW, at(0, 6), at(0, 12), 1),
    ("this afternoon", NOW, at(0, 12), at(0, 18), 1),
    ("tonight", NOW, at(0, 18), None, 1),
    ("tonight", AFTER_MIDNIGHT, at(0, 18), None, 1),
    ("last night", NOW, at(-1, 18), at(0, 6), 1),
    ("last night", AFTER_MIDNIGHT, at(0, 18), None, 1),  # at 02:00: the night in progress
    ("Thursday night", NOW, at(-1, 18), at(0, 6), 1),
    ("in the middle of the night", NOW, at(0, 0), at(0, 6), 1),
    ("after we closed at six", NOW, at(0, 18), None, 1),
    ("before the shop opened at nine", NOW, at(0, 0), at(0, 9), 1),
    ("after closing at half past five yesterday", NOW, at(-1, 17, 30), at(0, 0), 1),
    ("since 8 this morning", NOW, at(0, 8), None, 1),
    ("in the last 2 hours", NOW, at(0, 19, 30), None, 1),
    ("yesterday evening", NOW, at(-1, 18), at(0, 0), 1),
    # Berlin, early December: sunrise about 08:05, sunset about 15:55; "around": half an hour either side
    ("around sunrise", NOW, at(0, 7, 35), at(0, 8, 35), 15),
    ("around sunset yesterday", NOW, at(-1, 15, 25), at(-1, 16, 25), 15),
]


def close(got: datetime | None, want: datetime | None, minutes: int, now: datetime) -> bool:
    if want is None:  # to now: an open end, or one at now
        return got is None or (isinstance(got, datetime) and abs((got - now).total_seconds()) <= 60 * minutes)
    return isinstance(got, datetime) and abs((got - want).total_seconds()) <= 60 * minutes


def ours(phrase: str, now: datetime):
    window = time_window(normalise(phrase), ZONE, int(now.timestamp() * 1000))
    if window is None or window.start_ms is None:
        return None
    end = None if window.end_ms is None else datetime.fromtimestamp(window.end_ms / 1000, ZONE)
    return datetime.fromtimestamp(window.start_ms / 1000, ZONE), end


def ctparse_reader(phrase: str, now: datetime):
    from ctparse import ctparse
    from ctparse.types import Interval, Time

    parsed = ctparse(phrase, ts=now.replace(tzinfo=None))
    if parsed is None:
        return None
    found = parsed.resolution
    if isinstance(found, Interval) and found.t_from is not None and found.t_from.hasDate:
        start = found.t_from.dt.replace(tzinfo=ZONE)
        end = found.t_to.dt.replace(tzinfo=ZONE) if found.t_to is not None and found.t_to.hasDate else None
        return start, end
    if isinstance(found, Time) and found.hasDate:
        start = found.start.dt.replace(tzinfo=ZONE) if found.start.hasDate else None
        end = found.end.dt.replace(tzinfo=ZONE) if found.end is not None and found.end.hasDate else None
        return start, end
    return None


def timefhuman_reader(phrase: str, now: datetime):
    from timefhuman import timefhuman
    from timefhuman.utils import Direction, tfhConfig

    found = timefhuman(phrase, config=tfhConfig(now=now.replace(tzinfo=None), direction=Direction.previous))
    if isinstance(found, list):
        found = found[0] if found else None
    if isinstance(found, tuple) and len(found) == 2:
        return found[0].replace(tzinfo=ZONE), found[1].replace(tzinfo=ZONE)
    if isinstance(found, datetime):
        return found.replace(tzinfo=ZONE), None
    return None


def recognizers_reader(phrase: str, now: datetime):
    from recognizers_date_time import recognize_datetime
    from recognizers_text import Culture

    results = recognize_datetime(phrase, Culture.English, reference=now.replace(tzinfo=None))
    for result in results:
        for value in (result.resolution or {}).get("values", []):
            if "start" in value:
                start = datetime.fromisoformat(value["start"]).replace(tzinfo=ZONE)
                end = datetime.fromisoformat(value["end"]).replace(tzinfo=ZONE) if value.get("end") else None
                return start, end
            if "value" in value and value.get("type") in ("datetime", "date", "time"):
                moment = datetime.fromisoformat(value["value"] if value["type"] != "time"
                                                else f"{now.date()} {value['value']}")
                return moment.replace(tzinfo=ZONE), None
    return None


def blind3_phrases() -> list[tuple]:
    """(time words, now, start, end, 1) of every blind3 question with time words and a plain selection's
    `from`; its site days D1, D2 are this file's, `now` D2 21:30."""
    import re
    from pathlib import Path

    days = {"D1": -1, "D2": 0, "D3": 1}

    def moment(code: str) -> datetime | None:
        if code == "now":
            return None
        day, clock = code.split()
        hour, minute = (int(x) for x in clock.split(":"))
        return at(days[day], 0) + timedelta(hours=hour, minutes=minute)

    out = []
    path = Path(__file__).resolve().parent / "ask_questions_blind3.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        q = json.loads(line) if line.strip() else {}
        words = q.get("time_words")
        (kind, sel), = q["expect"].items() if q else (("", {}),)
        if not words or kind == "compare" or "from" not in sel:
            continue
        words = re.sub(r"\{D1:%A\}", at(-1, 0).strftime("%A"), words)
        out.append((words, NOW, moment(sel["from"]), moment(sel.get("to", "now")), 1))
    return out


def main() -> int:
    global PHRASES
    if "--blind3" in sys.argv[1:]:
        PHRASES = blind3_phrases()
    readers = {"rules": ours, "ctparse": ctparse_reader, "timefhuman": timefhuman_reader,
               "recognizers": recognizers_reader}
    right = dict.fromkeys(readers, 0)
    for phrase, now, start, end, minutes in PHRASES:
        marks = []
        for name, reader in readers.items():
            try:
                got = reader(phrase, now)
            except ImportError:
                marks.append(f"{name}: not installed")
                right[name] = None
                continue
            except Exception as exc:  # noqa: BLE001 - a library failing on a phrase is a wrong reading
                got, marks = None, marks + [f"{name}: {type(exc).__name__}"]
            ok = got is not None and close(got[0], start, minutes, now) and close(got[1], end, minutes, now)
            if right[name] is not None:
                right[name] += ok
            if got is not None or not ok:
                until = "now" if got is None or got[1] is None else f"{got[1]:%a %H:%M}"
                shown = "-" if got is None else f"{got[0]:%a %H:%M}..{until}"
                marks.append(f"{name} {'ok' if ok else 'NO'} {shown}")
        print(f"{phrase!r} (now {now:%a %H:%M}): " + "; ".join(marks), file=sys.stderr)
    print(json.dumps({name: None if n is None else round(n / len(PHRASES), 3) for name, n in right.items()}
                     | {"phrases": len(PHRASES)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
