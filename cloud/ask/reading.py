"""How a question was read, said back in one line, and the words it could not use.

Every answer starts from its reading: what was counted (people, visits, events, alerts, or the objects of a
label), where (cameras, zones, devices), when (clock times in the zone the times were read in: the camera's,
or the site's when no camera is named, and which of the two), and which filters (verdict, look). An operator
sees at once when a question was read otherwise than meant:

    People on porch, today 14:30–16:00 (Europe/Berlin, the camera's zone)

A reader of words consumes every word or names it (STYLE.md, third build): each word of the question is
either read by a rule (a name, a label, a verdict, a look, a time, the kind of question) or is a small word
that carries no filter; the rest are named in the answer ("I could not use: 'without a hi-vis vest'"), never
dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from .kinds import DURATION, OVERVIEW, UNUSUAL, unstored_said
from .rules import GREETING, LABEL_WORDS, NARROWING, QUIET, VERDICT_WORDS, Query, labels_said, open_words
from .when import MONTHS, WEEKDAYS, time_window

MEASURES = {"people": "People", "visits": "Visits"}
PLURALS = {"person": "people", "bus": "buses"}
# small words, question words and verbs of coming and seeing: they carry no filter of their own
PLAIN = frozenset("""
a an the and or of to in on at by for from with into onto up down out off over under near as is are was were be been
being am do does did done doing has have had having will would can could should shall may might must it its this that
these those there here they them their he she his her him we our us you your i me my mine what which who whom whose
when where why how many much any some all every each no not none nobody nothing anyone anybody anything everyone
everybody someone
somebody something one ones total number count counts tally list show give display tell let please just only also
even still yet so very really ever again more most less fewer same than then else come came comes coming arrive
arrived arriving arrival visit visited visiting visits visitor visitors go went gone going get got getting pass passed
passing walk walked walking stop stopped drop dropped appear appeared appearing seen see saw sees seeing spot spotted
notice noticed detect detected detecting record recorded recording capture captured happen happened happening show
showed showing turn turned check checked look looked happen stand stood standing hang hanging around round
about pick picked picking catch caught register registered raise raised leave left leaving keep keeps kept keeping
separate distinct different unique across altogether combined overall
compare compared versus vs against arrivals thing things escalated escalation escalations
marked real genuine actual
busier quieter busiest quietest
camera cameras cam cams zone zones view back area outside place property house home site total times time
often but if whether right currently moment didnt wasnt werent isnt arent hasnt havent hadnt doesnt dont
everything everyone everywhere anywhere ok okay hey hello thanks thank pls plz like way sort kind lot lots bit well
""".split())
TIME_WORDS = frozenset("""
today yesterday tonight tomorrow morning mornings afternoon afternoons evening evenings night nights overnight
midnight noon midday lunch lunchtime breakfast dinner supper brunch dawn dusk sunrise sunset daybreak nightfall dark
daylight daytime day days week weeks weekend month months hour hours minute minutes second seconds am pm oclock clock
half quarter past till til until since before after between earlier later early late ago last previous next this
recent recently lately far now just moment while during within throughout through thru around circa approximately
roughly middle small wee hours start beginning end open opened opens opening close closed closes closing shop store
office business hours working we the first earliest latest most
""".split()) | set(WEEKDAYS) | {d[:3] for d in WEEKDAYS} | set(MONTHS) | {m[:3] for m in MONTHS}
NUMBER_WORDS = frozenset("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                         "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty couple few several"
                         .split())
# kept with the unused words after them ("without a hi-vis vest", "my son")
GLUE = frozenset("a an the with without in wearing wore not no any some who that my our your his her their".split())
SEEMING = frozenset("look looks looked looking seem seems seemed seeming appear appears appeared".split())
_NUMBERS = re.compile(r"\d{1,2}(?::\d{2})?(?:am|pm)?(?:ish)?|\d+(?:st|nd|rd|th)?|\d{1,2}/\d{1,2}(?:/\d{2,4})?|"
                      r"(?:one|two|three|four|five|six|seven|"
                      r"eight|nine|ten|eleven|twelve)ish")


def _label_words() -> frozenset[str]:
    words = {w for forms in LABEL_WORDS.values() for p in forms for w in p.split()}
    words |= {w for forms in VERDICT_WORDS.values() for p in forms for w in p.split()}
    return frozenset((words - NARROWING) | set(LABEL_WORDS) | set(EVENT_NOUNS.split()))


# what is counted when it is not a label's objects ("alerts", "verdict" are the verdict's words)
EVENT_NOUNS = ("event events detection detections notification notifications recording recordings clip clips "
               "trigger triggered triggers incident incidents activity movement motion")


KNOWN = PLAIN | TIME_WORDS | NUMBER_WORDS | GLUE | _label_words()


def unused(words: Iterable[str], used: Iterable[str]) -> list[str]:
    """The phrases of a normalised question (its words, in order) that no reader used: runs of words that
    are neither known small words nor `used` by a rule, each with the small words just before it that shape
    its meaning ("without a hi vis vest")."""
    words = list(words)
    taken = set(used)
    free = [not (w in KNOWN or w in taken or _NUMBERS.fullmatch(w)) for w in words]
    phrases: list[str] = []
    i = 0
    while i < len(words):
        if not free[i]:
            i += 1
            continue
        start = i
        back = i
        while back > 0 and words[back - 1] in GLUE and back > i - 3:
            back -= 1
            if words[back] not in ("a", "an", "the", "any", "some"):
                start = back  # "without a hi vis vest", never "the driveway"
        if start > 0 and words[start - 1] in SEEMING:  # "look angry"
            start -= 1
        end = i
        while end + 1 < len(words) and (free[end + 1] or (words[end + 1] in GLUE - {"the", "a", "an"}
                                                          and end + 2 < len(words) and free[end + 2])):
            end += 1
        phrases.append(" ".join(words[start:end + 1]))
        i = end + 1
    return phrases


# words that say a time by themselves: when the reading has no time range, a run of them is named as not used
STRONG_TIME = frozenset("""
today yesterday tonight tomorrow morning mornings afternoon afternoons evening evenings night nights overnight
midnight noon midday lunchtime breakfast dinner supper brunch dawn dusk sunrise sunset daybreak nightfall daylight
daytime day days week weeks weekend month months hour hours minute minutes am pm oclock ago
""".split()) | set(WEEKDAYS) | set(MONTHS)
# a time said relative to something ("before the shop opened", "after the office closed"): named when unread
_RELATIONAL = frozenset("before after since until till til during between throughout".split())
_CLOCK = re.compile(r"\d{1,2}(?::\d{2}|am|pm|ish)|\d{1,2}:\d{2}(?:am|pm)?|\d+(?:st|nd|rd|th)")


# the frames of a request ("do you know", "i want to know"): their verbs carry no filter there, and are named
# anywhere else ("someone we know")
FRAMES = re.compile(r"\b(?:(?:do|does|would|could|can) (?:you|u) (?:know|tell me)|(?:i |we )?(?:want|need|would like|"
                    r"d like|wanted|wanna) (?:to )?(?:know|see|check)|let me know|i wonder(?: if| whether)?|"
                    r"(?:i |we )?(?:want|need)(?: you)? to)\b")
# "at the back", "round the back": a place no camera's name was read from (a word of "came back" elsewhere)
_THE_BACK = re.compile(r"\bthe back\b(?: (of the \w+))?(?! (?:door|gate|garden|yard|entrance))")
_BREAKDOWN = re.compile(r"\b(?:(?:for )?each|per|by|broken down by|split by|for every) (?:camera|cam|zone|hour|day|"
                        r"device)s?\b")
_SECOND_QUESTION = re.compile(r"\b(?:and|but) (?:also )?(?:when|how|what|who|which|where|why|did|was|were|is|are|"
                              r"has|have)\b.*$")
# how a ridden or driven thing moved: read with its noun ("who rode a bike", "cars driving past"); alone ("how
# many people cycled past") it narrows the people to riders, which no count reads, so it is named
RIDING_VERBS = frozenset("ride rides rode riding ridden drove driving driven cycled cycling".split())
_RIDDEN = re.compile(r"\b(?:bikes?|bicycles?|cycles?|cyclists?|motorbikes?|motorcycles?|scooters?|cars?|vehicles?|"
                     r"trucks?|vans?|bus(?:es)?|horses?)\b")
ALARM_VERBS = frozenset("ring rings rang ringing trip trips tripped tripping fire fires fired firing sound sounded set "
                        "trigger triggers triggered".split())
_ALARM = re.compile(r"\b(?:alarms?|alerts?|alerted|sirens?|sensors?|cameras?|cams?|motion|events?|notifications?|"
                    r"detections?|warnings?)\b")
STAYING = frozenset("stay stays stayed staying spend spent remain remained hang hung linger lingered busy occupied "
                    "active".split())  # "how long was the porch busy": the stays added up


def unread_times(words: Iterable[str]) -> list[str]:
    """For a question read with no time range: its runs of time words that say a time ("within the hour",
    "on the 31st"), which the answer names as not used rather than answering over every event silently."""
    words = list(words)
    timeish = [w in TIME_WORDS or w in NUMBER_WORDS or w in ("a", "an", "of", "in", "on", "at")
               or bool(_NUMBERS.fullmatch(w)) for w in words]
    phrases, i = [], 0
    while i < len(words):
        if not timeish[i]:
            i += 1
            continue
        end = i
        while end + 1 < len(words) and timeish[end + 1]:
            end += 1
        run = words[i:end + 1]
        said = [w for w in run if w not in _RELATIONAL and w not in ("the", "a", "an", "of", "in", "on", "at")]
        if any(w in STRONG_TIME or _CLOCK.fullmatch(w) for w in run) or (set(run) & _RELATIONAL and said):
            while run and run[0] in ("the", "a", "an", "of"):
                run = run[1:]
            while run and run[-1] in ("the", "a", "an", "of", "in", "on", "at"):
                run = run[:-1]
            phrases.append(" ".join(run))
        i = end + 1
    return phrases


def other_labels(said: str, query: Query, taken: set[str] = frozenset()) -> list[str]:
    """The words of labels other than the one read ("did anyone look into the car?": "car"), named: one query
    counts one label. Words of a look ("with their dog") or a negation are someone else's."""
    label = query.label
    if label is None and query.measure == "events":
        return []  # "how many events with people": every label
    return list(dict.fromkeys(w for w, of in labels_said(said) if of != label and w not in taken
                              and w not in ("nobody", "no one") and not (label is None and of == "person")))


def used_words(query: Query, names: Iterable[str] = ()) -> set[str]:
    """The words the rules read: the names matched, the look's words, the words of a quoted name."""
    taken = {w for phrase in names for w in phrase.split()}
    if query.look is not None:
        taken |= {w for phrase in query.look.phrases for w in phrase.split()}
    return taken


def model_unread(phrases: list[str]) -> list[str]:
    """Of the phrases the rules did not use, those the text model cannot read either: not the words that made
    the question open ("describe", "loitering": the model answers them from the descriptions), but who someone
    is, sounds, names ("my son", "rang the bell", "the postman"), which no stored description says."""
    return [p for p in phrases if set(p.split()) & _RELATIONAL  # a time ("before the shop opened"): the rules'
            or not all(w in KNOWN or w in SEEMING or w in _DESCRIBED or w in open_words(p) for w in p.split())]


# what the descriptions the model is given say: "what did they look like? clothes?"
_DESCRIBED = frozenset("clothes clothing outfit outfits dressed colour colours color colors appearance".split())


def could_not_use(phrases: list[str], original: str) -> str:
    """"I could not use: 'without a hi-vis vest'" with each phrase as the question wrote it."""
    return "I could not use: " + ", ".join(f"'{_as_written(p, original)}'" for p in phrases) + "."


def told_unused(said: str, phrases: list[str], original: str, first: bool = False) -> str:
    """The answer with the words it could not use named: after it, or `first` ("I could not use: 'plate';
    the stored events cannot tell number plates: ..."), one sentence still."""
    if not phrases:
        return said
    if first:
        return could_not_use(phrases, original)[:-1] + "; " + said[:1].lower() + said[1:]
    return said + " " + could_not_use(phrases, original)


def _as_written(phrase: str, original: str) -> str:
    """A normalised phrase as it stands in the question ("hi vis" -> "hi-vis"), else as it is."""
    pattern = r"[\W_]+".join(re.escape(w) for w in phrase.split())
    found = re.search(rf"(?<![a-z0-9]){pattern}(?![a-z0-9])", original.lower())
    return original[found.start():found.end()] if found else phrase


def what_counted(query: Query, measure: str | None) -> str:
    """"People", "Visits", "Alerts", "Cars", "Events judged benign"."""
    if measure == "events":
        if query.verdict == "alert":
            what = "Alerts"
        elif query.verdict is not None:
            what = f"Events judged {query.verdict}"
        else:
            what = "Events"
        if query.label:
            what += f" of {PLURALS.get(query.label, query.label + 's')}"
        return what
    if measure in ("people", "visits"):
        return MEASURES[measure]
    if query.label:
        return PLURALS.get(query.label, query.label + "s").capitalize()
    return "Events"


def when_said(query: Query, zone: ZoneInfo, now_ms: int) -> str:
    """The window as clock times in `zone`, days said relative to now: "today 06:00–12:00",
    "yesterday 18:00 – today 06:00", "since Thu 03 Dec 09:00", "any time"."""
    window = query.window
    if window is None:
        return "any time"
    now = datetime.fromtimestamp(now_ms / 1000, zone)
    start = None if window.start_ms is None else datetime.fromtimestamp(window.start_ms / 1000, zone)
    end = None if window.end_ms is None else datetime.fromtimestamp(window.end_ms / 1000, zone)
    if start is None:
        return f"until {_moment(end, now)}" if end else "any time"
    if end is None:
        return f"{_day(start, now)} {start:%H:%M}–now ({now:%H:%M})"
    if end.date() == start.date() or (end - start <= timedelta(days=1) and end.hour == 0 and end.minute == 0):
        last = "24:00" if end.date() != start.date() else f"{end:%H:%M}"
        return f"{_day(start, now)} {start:%H:%M}–{last}"
    return f"{_moment(start, now)} – {_moment(end, now)}"


def _day(moment: datetime, now: datetime) -> str:
    days = (now.date() - moment.date()).days
    return {0: "today", 1: "yesterday", -1: "tomorrow"}.get(days, moment.strftime("%a %d %b"))


def _moment(moment: datetime, now: datetime) -> str:
    return f"{_day(moment, now)} {moment:%H:%M}"


def where_said(query: Query) -> str:
    parts = []
    cameras = sorted({c for _, c in query.cameras})
    if cameras:
        parts.append("on " + " or ".join(cameras))
    if query.zones:
        parts.append("in zone " + " or ".join(sorted(query.zones)))
    if not cameras and query.devices:
        parts.append("from " + " or ".join(sorted(query.devices)))
    if query.excluded:
        parts.append(("on every camera " if not parts else "") + "except " + " and ".join(
            sorted({c for _, c in query.excluded})))
    if query.excluded_zones:
        parts.append("outside zone " + " and ".join(sorted(query.excluded_zones)))
    return " ".join(parts) or "on every camera"


def reading_line(query: Query, measure: str | None, zone: ZoneInfo, now_ms: int, camera_zone: bool,
                 unused_phrases: list[str] = (), also: tuple[str, ...] = ()) -> str:
    """One short line: what was counted, where, when (clock times, which zone), the filters and `also` (how a
    yes is decided, where the question says: "was it quiet?" is yes only if none)."""
    filters = list(also)
    if query.verdict is not None and measure != "events":
        filters.append("alerts only" if query.verdict == "alert" else f"judged {query.verdict}")
    if query.look is not None:
        filters.append(query.look.said)
    filters += [f"{PLURALS.get(of, of + 's')} left out" for of in sorted({of for of, _ in query.left_out})]
    whose = "the camera's zone" if camera_zone else "the site's zone"
    line = (f"{what_counted(query, measure)} {where_said(query)}, {when_said(query, zone, now_ms)} "
            f"({zone.key}, {whose})")
    if filters:
        line += "; " + ", ".join(filters)
    if unused_phrases:
        line += "; not used: " + ", ".join(f"'{p}'" for p in unused_phrases)
    return line


def read_back(said: str, query: Query, zone: ZoneInfo, now_ms: int) -> tuple[str, list[str]]:
    """For a normalised question and its query: the reading line, and the phrases no rule used."""
    taken = used_words(query, query.names) | (STAYING if query.intent == "duration" else set())
    kind = {"unusual": UNUSUAL, "overview": OVERVIEW, "duration": DURATION}.get(query.intent)
    if kind is not None:  # "anything unusual", "sum up", "how long": the words that chose the kind of answer
        taken |= {w for found in kind.finditer(said) for w in found[0].split()}
    if re.search(r"\bhow long (?:ago|(?:has it been |is it )?since)\b", said):  # a time since, not a stay
        taken |= {"long", "ago"}
    if _ALARM.search(said):  # "how often did the alarm ring": the alert's verb; "who rang the bell": named
        taken |= ALARM_VERBS
    if _RIDDEN.search(said):  # "who rode a bike": the bike's verb; "how many people cycled past": named
        taken |= RIDING_VERBS
    taken |= {w for phrase in query.negated for w in phrase.split()}
    taken |= {w for _, phrase in query.left_out for w in phrase.split()}  # "not counting the cars": held
    quiet = [m[0] for m in QUIET.finditer(said)] if query.intent == "exists" else []  # "was it quiet": none seen
    taken |= {w for phrase in quiet for w in phrase.split()}
    split = [m[0] for m in _BREAKDOWN.finditer(said)]  # "per camera": one total is given, never a split
    taken |= {w for phrase in split for w in phrase.split()}
    phrases = _with_names(unused(FRAMES.sub(" ", GREETING.sub("", said)).split(), taken), said, query.names)
    negated = [p for p in query.negated + query.negated_bare if not any(q in p for q in quiet)]  # "no activity"
    phrases += [p for p in negated if p in query.negated] + split
    phrases += [p for p in negated if p in query.negated_bare and not unused(p.split(), taken)]  # "not at home"
    phrases += [f"the back{' ' + m[1] if m[1] else ''}" for m in _THE_BACK.finditer(said) if "back" not in taken]
    phrases += other_labels(said, query, taken) + list(query.times_apart)
    named = {w for p in phrases for w in p.split()} | taken
    phrases += [p for p in query.asked_open if not set(p.split()) <= named]  # "came back" in a count: named
    told = unstored_said(said)
    if told and not any(set(told.split()) <= set(p.split()) for p in phrases):  # "plate numbers", "how fast"
        inside = [i for i, p in enumerate(phrases) if set(p.split()) <= set(told.split())]
        phrases = [p for i, p in enumerate(phrases) if i not in inside]
        phrases.insert(inside[0] if inside else len(phrases), told)
    second = _SECOND_QUESTION.search(said)
    if second and query.intent not in ("overview", "unusual"):  # "... and when did the last leave?": not answered
        phrases.append(second[0])
    if query.window is None and query.intent != "duration":  # time words said, no range read: named
        phrases += [p for p in unread_times(said.split()) if not set(p.split()) <= taken]
    phrases = list(dict.fromkeys(phrases))  # a word named by two readers ("the neighbours' cat") named once
    if query.intent == "count":  # a yes/no or a list shows the events (or the people) it stands on
        measure = query.measure
    else:
        measure = "events" if query.label is None else None  # a label's objects (people: "People")
    also = ("yes only if none",) if quiet else ()
    return reading_line(query, measure, zone, now_ms, bool(query.cameras or query.zones), phrases, also), phrases


def _with_names(phrases: list[str], said: str, names: Iterable[str]) -> list[str]:
    """An unused phrase just after a name it belongs to, named with it: "the back door handle" is the handle
    of the back door ('back door handle'); the camera is still read from the name."""
    out = []
    for phrase in phrases:
        owner = None if phrase.split()[0] in GLUE else next((n for n in sorted(names, key=len, reverse=True)
                      if re.search(rf"(?<![a-z0-9]){re.escape(n)} {re.escape(phrase)}(?![a-z0-9])", said)), None)
        out.append(f"{owner} {phrase}" if owner else phrase)
    return out


def both_read(a: Query, b: Query, measure: str | None, zone: ZoneInfo, now_ms: int,
              phrases: list[str]) -> tuple[str, list[str]]:
    """The reading of a comparison: each side's, first against second (a side's own label and time are used)."""
    sides = {a.label, b.label}
    phrases = [p for p in phrases if not any(of in sides and w not in NARROWING for w, of in labels_said(p))
               and time_window(p, zone, now_ms) is None]
    camera_zone = bool(a.cameras or b.cameras or a.zones or b.zones)
    line = (reading_line(a, measure, zone, now_ms, camera_zone).split(" (")[0] + " vs "
            + reading_line(b, measure, zone, now_ms, camera_zone, phrases)[0].lower()
            + reading_line(b, measure, zone, now_ms, camera_zone, phrases)[1:])
    return line, phrases
