"""Superlatives and splits over groups: "which camera saw the most people?", "busiest hour", "the quietest day
this week"; "how many people per camera?", "alerts by hour".

Each group (a camera, a zone, a day, an hour of the day) is counted the way the question counts (people,
visits or events, as compare.py counts a side), every group in scope is shown with its count, and the answer
names the group with the most (or the fewest: groups that saw nothing count, at 0). A plain total is never the
answer to a superlative: the reading says "per camera", "per hour". A split shows every group's count and the
total beside.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from .compare import measured
from .facts import EventFact
from .query import Answer, _things, scope_phrase
from .reading import read_back, reading_line, what_counted
from .rules import Query, label_said_first, measure_of

_GROUP = (r"(?P<g>cameras?|cams?|zones?|days?|dates?|weekdays?|hours?|time of (?:the )?day|times? of day|"
          r"time(?! of)\b|doors?|entrances?|places?|spots?|areas?|locations?)")
_MOST = r"(?<!at )(?P<m>most|fewest|least|busiest|quietest)(?! recent| of\b| bit\b)"
_NUMBER = _MOST.replace("quietest", "quietest|highest|lowest")  # "which camera had the highest count": a number's
_FORMS = (re.compile(r"\b(?P<w>which|what) (?:\w+ ){0,2}?" + _GROUP + r"\b.*?\b" + _NUMBER + r"\b"),  # which ... most
          re.compile(r"\b" + _MOST.replace("quietest", "quietest|top") + r" (?:active |busy )?" + _GROUP
                     + r"\b"),  # "busiest camera", "top camera", "most active hour"
          re.compile(r"\b" + _GROUP + r" (?:with|that had|that saw|had|saw|got) the " + _MOST + r"\b"),
          re.compile(r"^(?P<w>where)\b.*?\b" + _MOST + r"\b"),  # "where did most people come": a camera
          re.compile(r"^(?P<w>when)\b.*?\b" + _MOST + r"\b"),  # "when was it busiest": an hour
          re.compile(r"\b(?P<w>saw|see|sees|had|have|has|got|get|gets|was|is|were)(?: the \w+(?: \w+)?)? the " + _MOST
                     + r"\b"))
# "did the porch see the most?", "was the porch the busiest?": about the camera or zone named (else no form)
_WHICH = re.compile(r"^(?P<w>which|what) (?P<g>cameras?|cams?|zones?|days?|dates?|hours?)\b")  # which cameras saw..
_NONE = re.compile(r"\b(?:nobody|no one|noone|nothing|no \w+)\b")
_SPLIT = re.compile(r"\b(?:(?:for )?each|per|by|broken down by|split by|for every) (?P<g>camera|cam|zone|hour|day)s?\b")
_KIND = {"cam": "camera", "zon": "zone", "day": "day", "dat": "day", "wee": "day", "hou": "hour", "tim": "hour"}
TIES_SHOWN = 6  # groups named in a tie; more are counted ("23 hours, 0 each"), all of them in `value`
FEWEST = frozenset("fewest least quietest lowest".split())


@dataclass(frozen=True)
class Superlative:
    group: str  # camera | zone | day | hour
    fewest: bool
    words: frozenset[str]  # the words that asked for it ("which", "camera", "most"): used
    split: str = ""  # "per camera": every group's count asked for, no superlative
    named: bool = False  # "did the porch see the most?": only about a camera or zone the question names
    which: str = ""  # "which cameras saw people?": the groups that saw some; "no cars": those that saw none


def superlative_of(text: str) -> Superlative | None:
    """The superlative a normalised question asks for over groups, or None."""
    for form in _FORMS:
        found = form.search(text)
        if found:
            said = found.groupdict().get("g") or {"where": "camera", "when": "hour"}.get(found["w"], "camera")
            group = _KIND.get(said[:3], "camera")  # a door, an entrance, a place: a camera
            words = {found["m"], *said.split(), found.groupdict().get("w") or "", "active", "busy"} - {""}
            return Superlative(group, found["m"] in FEWEST, frozenset(words), named=form is _FORMS[-1])
    split = _SPLIT.search(text)
    if split:  # "how many people per camera": each group's count
        return Superlative(_KIND[split["g"][:3]], False, frozenset(split[0].split()), split[0])
    which = _WHICH.search(text)
    if which:  # "which cameras saw people today?", "which camera saw nobody?": the groups, not the events
        return Superlative(_KIND[which["g"][:3]], False, frozenset(which[0].split()),
                           which=none[0] if (none := _NONE.search(text)) else "some")
    return None


def about(asked: Superlative, query: Query) -> frozenset[str]:
    """The cameras or zones a yes/no superlative asks about ("was the porch the busiest?"): counted among all."""
    if not (asked.named or query.intent == "exists") or asked.split or asked.which:
        return frozenset()
    if asked.group == "camera":
        return frozenset(c for _, c in query.cameras)
    return frozenset(query.zones) if asked.group == "zone" else frozenset()


def counted_over(asked: Superlative, query: Query) -> Query:
    """The query whose events are grouped: a camera or zone asked about is one of the groups, not a filter;
    "which camera saw no cars?" counts cars (the negation says what is counted)."""
    none = label_said_first(asked.which) if asked.which not in ("", "some") and query.label is None else None
    if none is not None:
        query = query.with_scope(label=none, measure=measure_of(asked.which, none))
    if not about(asked, query):
        return query
    return query.with_scope(cameras=frozenset() if asked.group == "camera" else query.cameras,
                            zones=frozenset() if asked.group == "zone" else query.zones)


def _key(fact: EventFact, group: str, zone: ZoneInfo) -> list[str]:
    if group == "zone":
        return list(fact.zones)
    if group == "camera":
        return [fact.camera]
    moment = fact.local(zone)
    if moment is None:
        return []
    return [f"{moment:%a %d %b}"] if group == "day" else [f"{moment:%H}:00–{(moment.hour + 1) % 24:02d}:00"]


def _every(group: str, query: Query, cameras: Iterable[str], zones: Iterable[str], zone: ZoneInfo,
           now_ms: int, facts: Sequence[EventFact]) -> list[str]:
    """The groups in scope that may have seen nothing: configured cameras and zones, the window's days and
    hours (a day's hours when the window is a day or more)."""
    if group == "camera":
        named = {c for _, c in query.cameras} or set(cameras)
        return sorted(named - {c for _, c in query.excluded})
    if group == "zone":
        return sorted(set(query.zones or zones) - set(query.excluded_zones))
    window = query.window
    start_ms = window.start_ms if window and window.start_ms is not None else min(
        (f.captured_ms for f in facts), default=now_ms)
    end_ms = window.end_ms if window and window.end_ms is not None else now_ms
    start, end = (datetime.fromtimestamp(ms / 1000, zone) for ms in (start_ms, end_ms))
    if group == "day":
        days = [start + timedelta(days=d) for d in range((end.date() - start.date()).days + 1)]
        return [f"{d:%a %d %b}" for d in days if d < end or d.date() == start.date()]
    hours = range(24) if end - start >= timedelta(days=1) else sorted(
        {(start + timedelta(hours=h)).hour for h in range(int((end - start).total_seconds() // 3600) + 1)
         if start + timedelta(hours=h) < end} | {start.hour})
    return [f"{h:02d}:00–{(h + 1) % 24:02d}:00" for h in hours]


def ranked(asked: Superlative, query: Query, facts: Sequence[EventFact], zone: ZoneInfo, now_ms: int,
           cameras: Iterable[str] = (), zones: Iterable[str] = ()) -> Answer:
    """Each group counted, the one with the most (fewest) named, every count shown; `cameras` and `zones` the
    operator's, so that one that saw nothing counts at 0."""
    if query.look is not None:
        facts = [f for f in facts if query.look.holds(f.description)]
    asked_about, query = about(asked, query), counted_over(asked, query)
    label = query.label
    measure = query.measure or ("people" if label == "person" else None)
    grouped: dict[str, list[EventFact]] = {}
    for fact in facts:
        for key in _key(fact, asked.group, zone):
            grouped.setdefault(key, []).append(fact)
    if asked.fewest or ((asked.split or asked.which) and asked.group in ("camera", "zone")):
        for key in _every(asked.group, query, cameras, zones, zone, now_ms, facts):
            grouped.setdefault(key, [])
    counts = {key: measured(events, query, measure) for key, events in grouped.items()}
    order = sorted(counts, key=lambda k: (counts[k][0] if asked.fewest else -counts[k][0], k))
    noun = "visits" if measure == "visits" else _things(label, query.verdict if measure == "events" else None, 2)
    scope = scope_phrase(query)
    if asked.split:  # every group's count (days and hours in time's order), the whole beside it
        if asked.group in ("day", "hour"):
            order = sorted(order, key=lambda k: min(f.captured_ms for f in grouped[k]) if asked.group == "day" else k)
        shown = ", ".join(f"{k} {counts[k][0]}" for k in order)
        outside = [f for f in facts if not f.zones] if asked.group == "zone" else []
        shown += f", in no zone {measured(outside, query, measure)[0]}" if outside else ""
        total, cited = measured(facts, query, measure)
        return Answer(f"{what_counted(query, measure)} per {asked.group}{scope}: {shown} ({total} in all).", "rules",
                      cited, value={k: counts[k][0] for k in order}, extra={"per": asked.group, "group_counts":
                                                                            {k: counts[k][0] for k in order}})
    if asked.which:  # the groups that saw some (or none), each with its count
        names = [k for k in order if (counts[k][0] == 0) == (asked.which != "some")]
        rest = ", ".join(f"{k} {counts[k][0]}" for k in order if k not in names)
        said = f"{asked.group.capitalize()}s {'that saw' if asked.which == 'some' else 'with no'} {noun}{scope}: "
        said += ", ".join(f"{k} {counts[k][0]}" if asked.which == "some" else k for k in names) or "none"
        cited = [e for k in names for e in counts[k][1]]
        return Answer(said + (f" (the others: {rest})." if rest else "."), "rules", cited, value=names,
                      extra={"per": asked.group, "group_counts": {k: counts[k][0] for k in order}})
    if not order or (not asked.fewest and counts[order[0]][0] == 0):
        return Answer(f"No {noun}{scope}, so no {asked.group} had the most.", "rules", [], value=None,
                      extra={"per": asked.group, "group_counts": {}})
    best = counts[order[0]][0]
    top = [k for k in order if counts[k][0] == best]
    rest = ", ".join(f"{k} {counts[k][0]}" for k in order if k not in top)
    named = " and ".join(top) if len(top) <= TIES_SHOWN else f"{len(top)} {asked.group}s"  # 23 quiet hours
    most = "Fewest" if asked.fewest else "Most"
    each = " each" if len(top) > 1 else ""
    text = f"{most} {noun}{scope}: {named}, {best}{each}" + (f" (then {rest})." if rest else ".")
    value: object = best if query.intent == "count" else top[0] if len(top) == 1 else top
    if asked_about:  # "was the porch the busiest?": yes when it is among the most
        value = bool(asked_about & set(top))
        text = f"{'Yes' if value else 'No'}: {text[:1].lower()}{text[1:]}"
    cited = list(dict.fromkeys(e for k in top for e in counts[k][1]))
    return Answer(text, "rules", cited, value=value,
                  extra={"per": asked.group, "group_counts": {k: counts[k][0] for k in order}})


def read_per(said: str, query: Query, asked: Superlative, zone: ZoneInfo, now_ms: int) -> tuple[str, list[str]]:
    """The reading of a superlative: what was counted per which group ("People per camera, ..."), the words
    that asked for it used."""
    query = counted_over(asked, query)
    phrases = read_back(said, query.with_scope(names=query.names | asked.words), zone, now_ms)[1]
    measure = query.measure or ("people" if query.label == "person" else None)
    phrases = [p for p in phrases if p != asked.split and asked.which not in p]  # "per camera", "no cars": read
    line, what = reading_line(query, measure, zone, now_ms, bool(query.cameras or query.zones), phrases), \
        what_counted(query, measure)
    return f"{what} per {asked.group},{line[len(what):]}", phrases
