"""Keyword rules: what a question asks for (intent), about what (camera, device, label, verdict) and when (a
time range in the device's local time). Plain regular expressions over the normalised question; no model.

A question whose intent a rule recognises and that has none of the markers of an open question ("what were
they doing", "why", "same person") is a database query and never reaches a model.

Time words are read by when.py, looks ("in a grey top", "with a bag") by appearance.py, the kinds beyond a
query (how long, anything unusual, what the store cannot say) by kinds.py.
Typing slips and chat shorthand are spelt out first (spelling.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Protocol
from zoneinfo import ZoneInfo

from .appearance import Look, look_in
from .clauses import joined_window
from .kinds import kind_of
from .negation import NOT_ALERTED, negated
from .spelling import spell
from .when import Window, time_window

INTENTS = (
    "count",
    "last",
    "first",
    "list",
    "exists",
    "duration",
    "unusual",
    "overview",
    "unstored",
)  # the last three: kinds.py
# who someone is, which no stored fact says: read as a person, and named as not used
ROLES = ("teenager", "teenagers", "teen", "teens", "youth", "youths", "toddler", "toddlers", "baby", "babies",
         "neighbour", "neighbours", "neighbor", "neighbors", "postwoman", "postie", "worker", "workers", "workman",
         "workmen", "builder", "builders", "gardener", "gardeners", "cleaner", "cleaners", "customer", "customers",
         "guest", "guests", "burglar", "burglars", "thief", "thieves", "policeman", "police",
         # family and friends ("did my son come home?"), and people by what they were doing ("the first jogger")
         "son", "sons", "daughter", "daughters", "wife", "husband", "partner", "mum", "mom", "mother", "dad",
         "father", "brother", "sister", "friend", "friends", "family", "grandma", "grandpa", "granny", "nanny",
         "babysitter", "roommate", "flatmate", "tenant", "tenants", "landlord", "jogger", "joggers", "runner",
         "runners", "walker", "walkers", "hiker", "hikers", "driver", "drivers", "deliveryman", "deliverymen",
         "salesman", "plumber", "electrician",
         "technician", "nurse", "carer", "caregiver", "owner", "owners")
LABEL_WORDS = {
    "person": ("person", "persons", "people", "someone", "somebody", "anyone", "anybody", "visitor", "visitors",
               "man", "men", "woman", "women", "pedestrian", "pedestrians", "human", "humans", "guy", "guys",
               "lady", "ladies", "kid", "kids", "child", "children", "boy", "girl", "nobody", "no one",
               "postman", "mailman", "courier", "intruder", "intruders", "folks", "folk", "individuals",
               "individual", "adult", "adults", *ROLES),
    "car": ("car", "cars", "vehicle", "vehicles", "truck", "trucks", "van", "vans", "suv", "suvs", "lorry", "lorries",
            "automobile", "automobiles"),
    "bicycle": ("bicycle", "bicycles", "bike", "bikes", "cyclist", "cyclists"),
    "dog": ("dog", "dogs"),
    "cat": ("cat", "cats"),
}
# words the reader reads that the speech recogniser is not taught (cloud.ask.voice): each word more it expects
# makes it hear the usual ones worse, and these are rarely said
NOT_TAUGHT = frozenset(ROLES) | frozenset("""folks folk individuals individual adult adults van vans suv suvs lorry
lorries automobile automobiles flagged warning warnings non verdicts tomorrow everyone unknowns uncertain undetermined
unclear""".split()) | {"non alert", "non alerts", "unknown verdicts", "unknown events"}
VERDICT_WORDS = {"alert": ("alert", "alerts", "alarm", "alarms", "alerted", "flagged", "warning", "warnings"),
                 "benign": ("benign", "harmless", "nothing to worry", "false alarm", "false alarms", "false alert",
                            "non alert", "non alerts",
                            "false alerts", "false positive", "false positives"),
                 "unknown": ("unknown verdict", "unknown verdicts", "verdict unknown", "judged unknown", "unclassified",
                             "unknown events", "unknowns", "uncertain", "undetermined", "unclear",
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
    (
        "last",
        re.compile(
            r"\bhow long ago\b|\bhow long (?:has it been |is it )?since\b|"
            r"\b(last (time|seen|one|event|alert|visit|visitor|person|car|detection|sighting|thing|arrival|"
            r"notification|recording|activity|movement|motion)|most recent|latest|"
            r"(when|what time) (was|were|did|is) .*\blast\b|last (\w+ )?(seen|came|showed|appeared|there|visit))"
        ),
    ),
    (
        "list",
        re.compile(
            r"^(list|show|give me|display)\b|\b(which|what) (events|alerts|detections)\b|"
            r"\bshow me\b|\blist (of )?(the )?(events|alerts|all)\b"
        ),
    ),
    (
        "exists",
        re.compile(
            r"^(was|were|is|are|did|does|do|has|have|had|any)\b.*\b(any|anyone|anybody|someone|"
            r"somebody|anything|something|activity|movement|motion|events?|detections?|"
            + "|".join(w for words in (*LABEL_WORDS.values(), *VERDICT_WORDS.values()) for w in words)
            + r")\b|^(anyone|anybody|anything|someone|somebody|something)\b"
        ),
    ),
)
# words of camera and zone names people swap ("rear door", "back entrance", "back yard"), and whole names said
# otherwise ("the drive" for a driveway, "the doorstep" for a porch): only ever forms of the operator's own names
SYNONYMS = (("back", "rear"), ("rear", "back"), ("door", "entrance"), ("garden", "yard"), ("yard", "garden"),
            ("gate", "gates"), ("garage", "carport"))
WHOLE_SYNONYMS = {"driveway": ("the drive", "drive way"), "porch": ("doorstep", "stoop", "veranda", "front step",
                                                                    "front steps"),
                  "garage": ("car port",), "garden": ("backyard", "back yard"), "yard": ("garden",)}
# words read as "person" that say more than the stored facts can check (age, sex, role): the answer names them
NARROWING = frozenset("man men woman women lady ladies kid kids child children boy boys girl girls postman mailman "
                      "courier intruder intruders".split()) | set(ROLES)
# a terse question that is only a noun phrase and a question mark ("people between 2 and 5 yesterday?",
# "driveway detections last 24h?") asks how many; a comparison's "same number" is no "same person"
_TERSE = re.compile(r"^(?!(?:what|who|which|when|where|why|how|is|are|was|were|did|do|does|has|have|had|any|can|could|"
                    r"show|list|tell|give|describe)\b)(?:\w+ ){0,3}?(?:people|persons|visitors|cars|vehicles|bikes|"
                    r"bicycles|events|alerts|alarms|detections|visits|notifications|recordings)\b")
_ASKING = (r"(?:what|who|which|when|where|why|how|show|list|tell|give|describe|can|could|would|should|will|"
           r"is|are|was|were|did|do|does|has|have|had)\b")
# who someone is, which neither the stored facts nor a model reading their descriptions can tell
_WHO_IS = frozenset("stranger familiar recognise recognize".split())
_SAME_COUNT = re.compile(r"\b(?:the )?same (?:number|amount|count)\b|\bas many\b")
# what "how many" counts (cloud.ask.visits): events and alerts as stored, visits ("how many times"), or people
_EVENT_WORDS = re.compile(r"\b(events?|alerts?|alarms?|detections?|notifications?|recordings?|clips?|triggers?|"
                          r"triggered|incidents?|captures?|false positives?|go(?:es|ne)? off|went off|going off)\b")
_VISIT_WORDS = re.compile(r"\b(how many times|how often|number of times|no of times|times did|times was|"
                          r"times were|visits|arrivals)\b")
# "the last visitor", "who came first": one event picked; "the last 6 hours", "last night" are time words
_NOT_A_SPAN = (r"(?! (?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|few|couple|several|"
               r"hours?|minutes?|days?|weeks?|months?|night|evening|morning|afternoon|weekend|fortnight|thing)\b)")
PICK = re.compile(r"\b(last|latest|most recent|first|earliest)\b" + _NOT_A_SPAN)
# "was the porch quiet?", "all clear last night?", "nothing happened?": a yes/no whose yes is that none were seen
QUIET = re.compile(r"\b(?:(?:(?:stay|stays|stayed|remain|remains|remained) )?(?:quiet|calm|peaceful|uneventful|"
                   r"deserted)|all clear|(?<=was )(?:the )?\w+(?: \w+)? empty|(?:nothing|no (?:activity|movement|"
                   r"motion|events?|alerts?))(?: at all)? (?:happen|happened|happening|going on|went on|to report|seen|"
                   r"detected|recorded)|(?:^|(?<=was there )|(?<=were there )|(?<=is there )|(?<=any ))no "
                   r"(?:activity|movement|motion))\b")
# the first words say what kind of answer is wanted: a number, a yes or no, a list, a time
_LEAD = (("count", re.compile(r"^(?:how many|how much|number of|no of|total|count|tally)\b")),
         ("first", re.compile(r"^(?:when|what time|at what time)\b.*\b(?:first|earliest)\b")),
         ("last", re.compile(r"^(?:when|what time|at what time)\b")),
         ("first", re.compile(r"^who\b.*\b(?:first|earliest)\b" + _NOT_A_SPAN)),  # "who came first?"
         ("last", re.compile(r"^who\b.*\b(?:last|latest|most recent)\b" + _NOT_A_SPAN)),
         ("list", re.compile(r"^(?:which|list|show|display|give me)\b|^who (?:came|was|were|went|visited|"
                             r"showed|stopped|dropped|walked|has been|have been|passed|appeared|is)\b")),
         ("exists", re.compile(r"^(?:(?:everything |all )?(?:quiet|calm|clear)|nothing|no activity|no movement|"
                               r"any|anyone|anybody|anything|someone|somebody|something|was|were|did|has|"
                               r"have|had|is|are|didnt|wasnt|werent|hasnt|havent|hadnt|isnt|arent|doesnt|dont)\b"
                               r"(?!.*\b(?:how many|number of)\b)")))


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
    look: Look | None = None  # colour, clothing, object the facts must say (appearance.py)
    measure: str | None = None  # what a count counts: people, visits, events (None: the label's objects)
    names: frozenset[str] = field(default=frozenset(), compare=False)  # the words that named cameras, zones
    excluded: frozenset[tuple[str, str]] = frozenset()  # cameras a negation leaves out ("except the porch")
    excluded_zones: frozenset[str] = frozenset()
    negated: tuple[str, ...] = ()  # negated words no rule can apply ("not carrying a bag"): named, not applied
    negated_bare: tuple[str, ...] = ()  # negations of nothing a rule reads ("not at home"): named
    left_out: tuple[tuple[str, str], ...] = ()  # (label, phrase): other labels left out ("not counting cars")
    times_apart: tuple[str, ...] = ()  # a second time apart from the range read ("... or this evening"): named
    asked_open: tuple[str, ...] = ()  # what would make a count open ("came back", "delivery"): named, not read

    @property
    def labels_left_out(self) -> frozenset[str]:
        return frozenset(of for of, _ in self.left_out)

    @property
    def rule_answerable(self) -> bool:
        return self.intent is not None and not self.open

    def with_scope(self, **changes) -> Query:
        return replace(self, **changes)


_CLOCK_DASH = re.compile(r"(?<![\d:-])(\d{1,2}(?::\d{2})?\s*(?:am|pm)?)\s*[-\u2013]\s*"
                         r"(?=\d{1,2}(?::\d{2})?\s*(?:am|pm)?(?![\d:-]))")


def normalise(question: str) -> str:
    """Lower case, one space between words, punctuation dropped (a possessive 's with it: "today's" reads
    "today"; "#" reads "number of"), shorthand and slips spelt out (spelling.py): the cache key and the text
    every rule reads."""
    text = re.sub(r"(^|\s)#\s*", r"\1number of ", question.lower())
    text = _CLOCK_DASH.sub(r"\1 to ", text)  # "10-11am": a range of clock times
    text = re.sub(r"\b([a-z]{3,}?)(cam|camera)s?\b", r"\1 \2", text)  # "porchcam": the porch camera
    text = re.sub(r"['\u2019]s\b", "", text).replace("'", "").replace("\u2019", "")
    text = re.sub(r"\b(\d{1,2})\.(0?[1-9]|1[0-2])\.(?:(\d{4}|\d{2})\b)?",
                  lambda m: f"{m[1]}/{m[2]}" + (f"/{m[3]}" if m[3] else ""), text)  # "05.12.": a date
    text = re.sub(r"\b(\d{1,2})\.(\d{2})(?=\s*(?:am|pm)?\b)(?!\.?\d)", r"\1:\2", text)  # "9.30": 9:30
    text = re.sub(r"[^a-z0-9:/]+|(?<![0-9])[:/]|[:/](?![0-9])", " ", text)  # ":" in a clock, "/" in a date
    text = re.sub(r"\b(leave|leaving|leaves) ((?:the |all |any )?[a-z]+) out\b", r"\1 out \2", text)  # leave X out
    return spell(re.sub(r"\s+", " ", text).strip())


def spoken(identifier: str, other_words: bool = True) -> list[str]:
    """The ways a camera or device id is written in a sentence: back_door -> back door, backdoor, back_door,
    rear door; cam2 -> cam 2, camera 2; with `other_words`, also the other words for its words (back entrance,
    the drive): read in a typed question, not taught to the speech recogniser."""
    base = identifier.lower()
    spaced = re.sub(r"[_-]+", " ", base).strip()
    forms = {base, spaced, spaced.replace(" ", "")}
    for word, other in SYNONYMS if other_words else SYNONYMS[:2]:  # the first two: back and rear, always
        forms |= {re.sub(rf"\b{word}\b", other, form) for form in list(forms)}
    forms |= set(WHOLE_SYNONYMS.get(spaced, ()) if other_words else ())
    digits = re.match(r"^(cam|camera)\s*(\d+)$", spaced)
    if digits:
        forms |= {f"cam {digits[2]}", f"camera {digits[2]}", f"cam{digits[2]}", f"camera{digits[2]}"}
    return sorted(forms, key=len, reverse=True)


class Names(Protocol):
    """The names a question may use (cloud.ask.vocab.Vocabulary): the operator's, read as words."""

    def cameras_in(self, text: str) -> frozenset[tuple[str, str]]: ...

    def names_in(self, text: str) -> tuple[set[tuple[str, str]], set[str]]: ...

    def zone_names_in(self, text: str) -> tuple[set[str], set[str]]: ...

    def devices_in(self, text: str) -> frozenset[str]: ...

    def zones_in(self, text: str) -> frozenset[str]: ...

    def label_in(self, text: str) -> str | None: ...


_LABEL_AT = re.compile(r"\b(" + "|".join(sorted((re.escape(w) for words in LABEL_WORDS.values() for w in words),
                                                 key=len, reverse=True)) + r")\b")
_LABEL_OF = {w: label for label, words in LABEL_WORDS.items() for w in words}


def label_said_first(text: str) -> str | None:
    """The label of the first label word of a normalised question, or None. A label word just before another
    label's word says which kind of the second ("dog walkers", "car drivers" are people; "the neighbours' cat" a
    cat)."""
    found = list(_LABEL_AT.finditer(text))
    for here, after in zip(found, [*found[1:], None], strict=False):
        owned = _LABEL_OF[here[1]] == "person" and _LABEL_OF[after[1]] in ("dog", "cat") if after else False
        if not owned and (after is None or after.start() != here.end() + 1 or after[1] not in ROLES
                          or _LABEL_OF[here[1]] == "person"):
            return _LABEL_OF[here[1]]  # "cars, people" (the comma gone) is no compound: only a role is modified
    return None


def labels_said(text: str) -> list[tuple[str, str]]:
    """(word, label) for every label word of a normalised question, in order."""
    return [(m[1], _LABEL_OF[m[1]]) for m in _LABEL_AT.finditer(text)]


_VERDICT_PHRASES = sorted(((w, v) for v, words in VERDICT_WORDS.items() for w in words), key=lambda p: -len(p[0]))


# "came back as unknown", "marked as alerts": the verdict, said of the events
JUDGED_AS = re.compile(r"\b(?:(?:came|come|comes|coming) back|returned|marked|judged|rated|flagged|labell?ed|tagged|"
                       r"classed|verdict(?: was| is| of)?|as) (?:as )?(?:an? )?"
                       r"(unknown|alerts?|alarms?|benign|harmless)\b")


def verdict_in(text: str) -> str | None:
    judged = JUDGED_AS.search(text)
    if judged and judged[1] == "unknown":
        return "unknown"
    if re.search(r"\b(?:not|never|non) (?:an? |the )?(?:real )?(?:alert|alarm)(?:s|ed)?\b|\bnon alerts?\b", text) \
            or NOT_ALERTED.search(text):
        return "benign"  # "events that were not alerts", "cars that did not trigger an alert"
    if re.search(r"\breal (?:alert|alarm)s?\b", text):
        return "alert"  # "real alarms", not the false ones
    for phrase, verdict in _VERDICT_PHRASES:
        if re.search(rf"\b{re.escape(phrase)}\b", text):
            return verdict
    return None


def measure_of(text: str, label: str | None) -> str | None:
    """What a count counts: "events" (events, alerts, detections...), "visits" (how many times, how often),
    "people" (about people), None (the objects of another label, one per visit; or events with no label)."""
    if _EVENT_WORDS.search(text):
        return "events"
    if _VISIT_WORDS.search(text):
        return "visits"
    if label == "person":
        return "people"
    return None if label else "events"


GREETING = re.compile(r"^(?:(?:yo|hey|hi|hello|ok|okay|so|um|uh|well|please|quick question)\b\s*)+")


def lead_intent(text: str) -> str | None:
    """The kind of answer the question's first words ask for, or None; after a clause that sets the scope
    ("yesterday evening, was anybody at the porch?"), the next clause's first words."""
    for clause in re.split(r"\s*[,:;]\s*|\s+-+\s+", text):
        said = GREETING.sub("", normalise(clause))  # "hey, any1 at the porch?": the question after it
        found = next((intent for intent, pattern in _LEAD if pattern.search(said)), None)
        if found is not None:
            return found
    return None


def intent_of(text: str, said: str | None = None) -> str | None:
    """The answer a normalised question wants; `said`: the question as written (its clauses)."""
    kind = kind_of(text)
    lead = lead_intent(said if said is not None else text)
    if kind == "unstored" and lead in ("count", "first", "last"):
        return lead  # "how many times did a car come speeding?": a number, what the store cannot tell named
    if kind is not None:
        return kind
    if re.search(r"\bhow (?:long|many (?:seconds|minutes|hours|days)) ago\b", text):
        return "last"
    if lead in ("count", "list") or (lead in ("first", "last") and re.search(r"\bwho\b", text)):
        return lead  # "who came to the porch first?": a time, the first one
    for intent, pattern in _INTENT_RULES:
        if pattern.search(text):
            return intent
    # asked ("people at the porch?"), not a title to list ("recent alerts on the porch"); ", right?" is a yes/no
    terse = (said or "").rstrip().endswith("?") and _TERSE.search(text) and not re.search(r"\b(?:right|correct)$",
                                                                                           text)
    # "porch visits since 6pm": visits are only ever counted (a list of them is the events, said so)
    tally = re.match(r"(?!(?:what|who|which|when|where|why|how|show|list|give|describe|recent|latest|last|all)\b)"
                     r"(?:\w+ ){0,3}?(?:visits|arrivals|visit count|number of visits)\b", text)
    if lead or terse or tally:
        return lead or "count"
    # a place or a time and a question mark, no noun to count ("porch 9ish this morning?"): was anything there
    asked = (said or "").rstrip().endswith("?") and not re.match(_ASKING, text)
    named = _EVENT_WORDS.search(text) or re.search(r"\b(?:activity|movement|motion)\b", text) or label_said_first(text)
    return "exists" if asked and not named else None  # "driveway activity?": what was there, the classifier's


def is_open(text: str) -> bool:
    """Markers of a question about what happened rather than how many or when; a second question joined
    with "and" ("was anyone there, and what were they doing") counts too."""
    return bool(_OPEN.search(text)) or bool(re.search(r"\band (what|how|why|who|did|were|was)\b", text))


def open_words(text: str) -> set[str]:
    """The words of a question that make it open ("describe", "loitering", "parcel"): what the model reads."""
    return {w for found in _OPEN.finditer(text) for w in found[0].split()}


def read(question: str, vocabulary: Names, zone: ZoneInfo, now_ms: int) -> Query:
    text = normalise(question)
    look, intent = look_in(text), intent_of(text, question)
    rest = JUDGED_AS.sub(" ", _SAME_COUNT.sub(" ", text))  # "came back as unknown" is a verdict
    for phrase in look.phrases if look else ():  # "carrying a bag" is a filter, not an open question
        rest = rest.replace(phrase, " ")
    lead = lead_intent(question)
    if lead in ("list", "first", "last") and re.search(r"(?:^|[,:;]\s*)who\b", question.lower()):
        rest = re.sub(r"\bwho\b", " ", rest, count=1)  # "who came to the porch?", "since 3, who was first?"
    asked_open: tuple[str, ...] = ()
    if intent == "duration":  # a length of stay; open only when a second question is joined on
        opened = bool(re.search(r"\band (what|why|who|did|were|was)\b", rest))
    else:
        opened = intent not in ("unusual", "overview", "unstored") and is_open(rest)
    said_open = tuple(dict.fromkeys(m[0] for m in _OPEN.finditer(rest))) if opened else ()
    if opened and (lead == "count" or (lead is not None and set(said_open) <= _WHO_IS)):
        opened, asked_open = False, said_open  # "how many delivery drivers?", "did a stranger come?": named
    cameras, camera_words = vocabulary.names_in(text)
    zones, zone_words = vocabulary.zone_names_in(text)
    no = negated(text, vocabulary)  # "other than the porch", "not carrying a bag" (negation.py)
    if look is not None and any(n in p or p in n for p in look.phrases for n in no.look_phrases):
        look = None
    labelled = text
    for phrase in no.unusable + (look.phrases if look is not None else ()):  # "with their dog" is a look
        labelled = labelled.replace(phrase, " ")
    label = vocabulary.label_in(labelled) or ("person" if re.search(r"\bwho\b", text) else None)
    # "how many people, not counting the cars": another label left out holds of every person counted (used)
    left_out = tuple((of, phrase) for of, phrase in no.left_out if of != label)  # with no label: not counted
    window, apart = joined_window(question, zone, now_ms, time_window(text, zone, now_ms), normalise)
    return Query(intent=intent, open=opened, look=look, cameras=frozenset(cameras - no.cameras),
                 devices=vocabulary.devices_in(text), zones=frozenset(zones - no.zones), label=label,
                 verdict=verdict_in(text), window=window, words=tuple(text.split()), times_apart=apart,
                 measure=measure_of(labelled, label), names=frozenset(camera_words | zone_words | no.words),
                 excluded=no.cameras, excluded_zones=no.zones, left_out=left_out,
                 negated=tuple(p for p in no.unusable if p not in {p for _, p in left_out}), negated_bare=no.bare,
                 asked_open=asked_open)
