"""The operator's words compiled into a Policy (policy.py): plain regular expressions over the normalised text,
the way the question router reads times (cloud/ask/rules.py); no model. What no rule reads is kept as an
uncompiled part, shown by check-config, and left to the model: never a silent guess.

The text splits into clauses at ';', '.', ' otherwise' and ', but'; each clause names its verdict ("is an
alert", "alert if/when/only if", "are fine/family/customers/staff/allowed", "ignore"), and its conditions:

    times       08:00-20:00, 8am to 8pm, between 22:00 and 06:00, after 20:00, before 7am, at night (22-06),
                during the day / in daytime (06-22), opening/business hours (the policy's own window),
                after closing / after hours / outside opening hours (outside it)
    weekdays    on weekdays, at the weekend, on Mondays, Monday to Friday, Saturday and Sunday
    zones       at/in/on/near the <name> [zone|area], zone <name>; "not in"/"outside the" <name> deny
    dwell       stays/lingers/waits longer than / more than / over / at least N s|min; less than / under N
    direction   entering / coming in / arriving / approaching (towards the camera), leaving / going out /
                walking away (away from the camera), moving left / right
    count       more than / over / at least / fewer than N people, N or more people, a group (> 2), alone (<= 1)
    label       cars / vehicles / dogs ... as the subject
    appearance  hi-vis / high-visibility / safety vest (measured), in a <colour> top|shirt|jacket|coat|hoodie,
                <colour> trousers|jeans|skirt|shorts, with / carrying a bag|backpack|suitcase|umbrella|bike|dog
    except      "X except Y" / "X unless Y": X and not Y
"""

from __future__ import annotations

import re

from ...shared.policycell import zone_word
from .policy import DAYTIME, NIGHT, Clause, Cond, Policy

_NUM = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
        "ten": 10, "a": 1, "an": 1, "half a": 0.5, "a couple of": 2, "a few": 3}
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COLOURS = ("red", "orange", "yellow", "green", "blue", "purple", "brown", "white", "grey", "gray", "black",
            "dark")
_UPPER = r"(?:top|shirt|t-shirt|jacket|coat|hoodie|jumper|sweater|vest|blouse)"
_LOWER = r"(?:bottom|trousers|pants|jeans|skirt|shorts|leggings)"
_CARRIED = {"bag": ("backpack", "handbag", "suitcase"), "bags": ("backpack", "handbag", "suitcase"),
            "backpack": ("backpack",), "rucksack": ("backpack",), "handbag": ("handbag",),
            "suitcase": ("suitcase",), "luggage": ("suitcase",), "umbrella": ("umbrella",),
            "bike": ("bicycle",), "bicycle": ("bicycle",), "dog": ("dog",), "skateboard": ("skateboard",),
            "phone": ("cell phone",), "bottle": ("bottle",), "laptop": ("laptop",)}
_LABELS = {"car": "car", "cars": "car", "vehicle": "car", "vehicles": "car", "truck": "truck", "trucks": "truck",
           "dog": "dog", "dogs": "dog", "cat": "cat", "cats": "cat", "bicycle": "bicycle", "bicycles": "bicycle",
           "bike": "bicycle", "bikes": "bicycle", "motorcycle": "motorcycle", "motorcycles": "motorcycle"}
_PEOPLE = r"(?:people|persons|person|someone|somebody|anyone|anybody|everyone|visitors?|a person|people)"
_T = r"(\d{1,2})(?:[:.h](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?|(noon|midday|midnight)"
_ALERT = re.compile(r"\b(?:is|are|counts? as|means?|as)\s+(?:an?\s+)?(?:alert|alarm|intruders?|intrusion|"
                    r"suspicious|trespass\w*)\b|\b(?:alert|alarm|warn|notify)\b(?:\s+(?:me|us))?"
                    r"(?:\s+(?:only\s+)?(?:if|when|whenever|on|about|for))?|\bintruders?\b")
_BENIGN = re.compile(r"\b(?:is|are)\s+(?:an?\s+)?(?:fine|ok|okay|allowed|expected|welcome|normal|benign|"
                     r"harmless|customers?|family|guests?|staff|residents?|employees?|workers?|neighbou?rs?|"
                     r"friends?|not an? alert|no alert)\b|\b(?:ignore|don'?t alert|do not alert|never alert|"
                     r"no alert|allow(?:ed)?|fine|benign|ok)\b")
_OTHERWISE = re.compile(r"^(?:otherwise|else|everything else|anyone else|anything else|the rest|"
                        r"other(?:wise)? times?)\b[ ,:]*(?:is |are )?(?:an? )?(\w+)")
_ONLY = re.compile(r"\b(?:alert|alarm|warn|notify)(?:\s+(?:me|us))?\s+only\s+(?:if|when)\b|\bonly\s+alert\b")
_STOP = set("""a an the and or of to is are be been being it its this that those these there here in on at by
for with from into near inside only if when whenever while who whom which what someone somebody anyone anybody
anything people persons person everyone visitors visitor them they their he she his her me us we our you your
should must can may will would just any all ever always also then than as so do does not no time times here
one ones man men woman women kid kids child children stays stay stayed wait waits waiting gather gathers
gathering stand stands standing be site premises property grounds area just seen shows show up appear appears
appearing""".split())
_ROLES = (
    "customers",
    "customer",
    "family",
    "guests",
    "guest",
    "staff",
    "residents",
    "resident",
    "employees",
    "employee",
    "workers",
    "worker",
    "neighbours",
    "neighbors",
    "friends",
    "intruder",
    "intruders",
    "alert",
    "alarm",
    "fine",
    "ok",
    "okay",
    "allowed",
    "expected",
    "welcome",
    "normal",
    "benign",
    "harmless",
    "ignore",
    "warn",
    "notify",
    "alerts",
    "alarms",
    "suspicious",
    "trespassing",
    "trespasser",
    "trespassers",
    "intrusion",
    "counts",
    "count",
    "means",
    "mean",
)


def compile_policy(text: str, zones: tuple[str, ...] = (), camera: str | None = None) -> Policy:
    """The policy these words say; `zones`: the zone names the cloud knows for the camera (config), read as
    zone names wherever they stand in the words; `camera`: the camera the policy is for ("in the shop" on
    camera "shop" is the camera itself, not a zone in it)."""
    place = zone_word(camera) if camera else None
    norm = _normalise(text)
    opening = _first_window(norm)
    clauses: list[Clause] = []
    uncompiled: list[str] = []
    otherwise: str | None = None
    only = bool(_ONLY.search(norm))
    for part in _parts(norm):
        other = _OTHERWISE.match(part)
        if other:
            otherwise = "alert" if re.match(r"alert|alarm|intrud", other.group(1)) else "benign"
            continue
        clause, left = _clause(part, opening, zones, place)
        if clause is None:
            if left:
                uncompiled.append(left)
            continue
        clauses.append(clause)
        if left:
            uncompiled.append(left)
    if otherwise is None:
        verdicts = {c.verdict for c in clauses}
        otherwise = "benign" if only or verdicts == {"alert"} else "alert"
    return Policy(text, tuple(clauses), otherwise, tuple(uncompiled))


def _normalise(text: str) -> str:
    text = text.lower().replace("–", "-").replace("—", "-").replace("’", "'")
    text = re.sub(r"\bhigh[- ]?vis(?:ibility)?\b|\bhi[- ]?vis\b|\bhivis\b", "hivis", text)
    return re.sub(r"\s+", " ", text).strip()


def _parts(text: str) -> list[str]:
    """Clauses: at '.', ';', 'otherwise', 'but', and at a comma between two pieces that each name a verdict."""
    text = re.sub(r"(?<!\d)\.(?!\d)|;|,?\s+\botherwise\b|,\s*but\b|\bbut\b", lambda m: "|" + (
        "otherwise" if "otherwise" in m.group(0) else ""), text)
    parts = []
    for part in (p.strip(" ,") for p in text.split("|") if p.strip(" ,")):
        current = ""
        for piece in part.split(","):
            if current and _verdict(current) and _verdict(piece) and not re.match(
                    r"\s*(?:except|unless|apart from|other than)\b", piece):
                parts.append(current.strip())
                current = piece
            else:
                current = f"{current},{piece}" if current else piece
        parts.append(current.strip(" ,"))
    return [p for p in parts if p]


def _minute(h: str | None, m: str | None, ampm: str | None, word: str | None) -> int | None:
    if word:
        return 12 * 60 if word in ("noon", "midday") else 0
    hour, minute = int(h or 0), int(m or 0)
    if ampm:
        if hour > 12:
            return None
        hour = hour % 12 + (12 if ampm.startswith("p") else 0)
    if hour > 24 or minute > 59:
        return None
    return hour % 24 * 60 + minute


_RANGE = re.compile(rf"(?:between|from)?\s*(?:{_T})\s*(?:-|to|and|until|till)\s*(?:{_T})")


def _first_window(text: str) -> tuple[int, int] | None:
    for match in _RANGE.finditer(text):
        window = _window(match)
        if window is not None:
            return window
    return None


def _window(match: re.Match) -> tuple[int, int] | None:
    g = match.groups()
    if not (g[1] or g[2] or g[3] or g[5] or g[6] or g[7]) and not (match.group(0).strip().startswith(
            ("between", "from"))):
        return None  # "2 to 3 people" is no time
    start, end = _minute(*g[:4]), _minute(*g[4:8])
    if start is None or end is None or start == end:
        return None
    return start, end


def _clause(part: str, opening: tuple[int, int] | None, zones: tuple[str, ...],
            place: str | None) -> tuple[Clause | None, str]:
    """One clause and the words of it no rule read ("" when all were)."""
    verdict = _verdict(part)
    main, exception = (re.split(r"\b(?:except|unless|apart from|other than)\b", part, maxsplit=1) + [""])[:2]
    conds, left = _conds(main, opening, zones, place)
    if exception:
        more, left2 = _conds(exception, opening, zones, place)
        if len(more) == 1:
            conds.append(Cond(more[0].kind, more[0].value, not more[0].negated))
        elif more:
            conds.append(Cond("all", tuple(more), True))
        left = " ".join(w for w in (left, left2) if w)
    if verdict is None:
        return None, part if conds or left else ""
    who = re.search(r"\b(staff|employees?|workers?|residents?|family|guests?|customers?|deliver\w*|post(?:man|men)|"
                    r"couriers?|gardeners?|cleaners?|police|security|owners?|neighbou?rs?|friends?|contractors?)\b",
                    re.split(r"\b(?:is|are)\b", main, maxsplit=1)[0])
    if who and not any(c.kind in ("hivis", "upper", "lower", "carries") for c in conds) \
            and who.group(1) not in left.split():
        left = " ".join(w for w in (who.group(1), left) if w)  # who they are: only the picture could tell
    if left:
        conds.append(Cond("words", left))
    return Clause(verdict, tuple(conds), part), left


def _verdict(part: str) -> str | None:
    """The verdict a clause names: a negated alert is benign; else the first verdict phrase before any
    "except" decides ("anyone at night is an alert, except staff, who are fine" is an alert clause)."""
    if re.search(r"\b(?:no|not an?|don'?t|do not|never)\s+(?:alert|alarm)", part):
        return "benign"
    main = re.split(r"\b(?:except|unless|apart from|other than)\b", part, maxsplit=1)[0]
    found = [(m.start(), v) for v, m in (("alert", _ALERT.search(main)), ("benign", _BENIGN.search(main))) if m]
    return min(found)[1] if found else None


def _conds(text: str, opening: tuple[int, int] | None, zones: tuple[str, ...],
           place: str | None) -> tuple[list[Cond], str]:
    conds: list[Cond] = []
    spans: list[tuple[int, int]] = []

    def take(pattern: str, make) -> None:  # noqa: ANN001 - a local helper
        for match in re.finditer(pattern, text):
            if any(s < match.end() and match.start() < e for s, e in spans):
                continue
            made = make(match)
            if made is not None:
                conds.append(made)
                spans.append(match.span())

    take(r"\b(?:(\d+)|" + "|".join(k for k in _NUM if " " not in k and len(k) > 2) + r")\s+or more\s+" + _PEOPLE,
         lambda m: Cond("people", (">=", _count(m.group(0).split()[0]))))
    take(r"\b(more than|over|at least|fewer than|less than|under|no more than|exactly)\s+(\d+|\w+)\s+" + _PEOPLE,
         lambda m: _people(m.group(1), m.group(2)))
    take(r"\b(?:a )?groups? of " + _PEOPLE + r"|\b(?:a )?groups?\b", lambda m: Cond("people", (">", 2)))
    take(r"\b(?:alone|on (?:their|his|her) own|a single person|a lone person)\b", lambda m: Cond("people", ("<=", 1)))
    take(r"\b(?:(?:stays?|stayed|staying|lingers?|lingering|loiters?|loitering|remains?|waits?|waiting|dwells?|"
         r"is there|are there|there|hangs? around)\s+)?(?:for\s+)?(longer than|more than|over|at least|"
         r"less than|under|shorter than|within|no longer than)\s+(\d+(?:\.\d+)?|\w+(?: a)?)\s*"
         r"(s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b", lambda m: _dwell(m.group(1), m.group(2), m.group(3)))
    take(r"\b(?:loiter\w*|linger\w*|hangs? around|hanging around)\b", lambda m: Cond("dwell", (">", 60.0)))
    take(_RANGE.pattern, lambda m: (lambda w: Cond("time", w) if w else None)(_window(m)))
    take(rf"\b(after|before|past|from|since)\s+(?:{_T})", lambda m: _after(m))
    take(r"\b(?:at night|night ?time|nightly|overnight|during the night|in the night|night|after dark|in the dark|"
         r"when (?:it is|it's) dark)\b",
         lambda m: Cond("time", NIGHT))
    take(r"\b(?:during the day|in the day ?time|daytime|during daytime|by day|in daylight|daylight)\b",
         lambda m: Cond("time", DAYTIME))
    take(r"\b(?:outside (?:of )?(?:opening|business|working|office|shop|store) hours|after (?:closing|hours|"
         r"close)|after the (?:shop|store) (?:closes|is closed)|when (?:closed|the shop is closed)|"
         r"out of hours|closed)\b", lambda m: Cond("time", opening, True) if opening else None)
    take(r"\b(?:during |in )?(?:opening|business|working|office|shop|store) hours\b|\bwhile open\b",
         lambda m: Cond("time", opening) if opening else None)
    take(r"\b(?:on |at |during )?(?:the )?(weekdays?|weekends?|work ?days|(?:mon|tues|wednes|thurs|fri|satur|sun)"
         r"days?(?:\s*(?:-|to|through|and)\s*(?:mon|tues|wednes|thurs|fri|satur|sun)days?)?)\b",
         lambda m: _weekday(m.group(1)))
    take(r"\b(?:entering|enters?|coming in|comes in|arriv\w+|approach\w*|walking (?:towards|toward|in)|"
         r"coming towards|walks in|going in)\b", lambda m: Cond("direction", "towards the camera"))
    take(r"\b(?:leaving|leaves?|going out|goes out|walking away|walks away|walks out|depart\w*|exiting|exits?)\b",
         lambda m: Cond("direction", "away from the camera"))
    take(r"\b(?:moving|going|walking|heading) (left|right)\b", lambda m: Cond("direction", m.group(1)))
    take(r"\b(?:in |wearing |with )?(?:an? )?hivis(?: \w*(?:vests?|jackets?|clothing|clothes|gear))?\b|"
         r"\b(?:safety|reflective|fluorescent|neon) (?:vests?|jackets?)\b", lambda m: Cond("hivis", True))
    take(rf"\b(?:in |wearing )?(?:an? )?({'|'.join(_COLOURS)}) {_UPPER}s?\b",
         lambda m: Cond("upper", _colour(m.group(1))))
    take(rf"\b(?:in |wearing )?(?:an? )?({'|'.join(_COLOURS)}) {_LOWER}\b",
         lambda m: Cond("lower", _colour(m.group(1))))
    take(r"\b(?:with|carrying|holding|pushing|walking|riding|on) (?:an? |their |a big |a large )?(" +
         "|".join(_CARRIED) + r")s?\b", lambda m: Cond("carries", _CARRIED[m.group(1)]))
    for zone in sorted(zones, key=len, reverse=True):  # the names the cloud knows for the camera, as written
        word = zone_word(zone)
        take(rf"\b(not (?:in|at|on) (?:the )?|outside (?:of )?(?:the )?|away from (?:the )?)?"
             rf"{re.escape(word)}(?: zone| area)?\b", lambda m, w=word: Cond("zone", w, bool(m.group(1))))
    take(r"\b(not (?:in|at|on|near|by) |outside (?:of )?|away from )?(?:in|at|on|near|by|inside|into|around|"
         r"through|of|within)? ?(?:the|their|our|my) ([a-z][a-z0-9_-]*(?: (?!(?:" + "|".join(sorted(_ZONE_TAIL | _STOP))
         + r")\b)[a-z][a-z0-9_-]*)?)\b",
         lambda m: _zone(m.group(2), bool(m.group(1)), place))
    take(r"\b(?:in )?zone ([a-z0-9_-]+)\b", lambda m: Cond("zone", zone_word(m.group(1))))
    take(r"\b(" + "|".join(_LABELS) + r")\b", lambda m: Cond("label", _LABELS[m.group(1)]))
    left = _leftover(text, spans)
    return _either(text, _tidy(conds, spans)), left


_DEFAULTS = (Cond("dwell", (">", 60.0)), Cond("people", (">", 2)))  # "loitering", "a group": without a number


def _tidy(conds: list[Cond], spans: list[tuple[int, int]]) -> list[tuple[Cond, tuple[int, int]]]:
    """Conditions in the order they stand in the words, each once; a default ("loitering") only where the
    clause gives no number of its own."""
    out: list[tuple[Cond, tuple[int, int]]] = []
    for cond, span in sorted(zip(conds, spans, strict=True), key=lambda cs: cs[1]):
        if cond in _DEFAULTS and any(c.kind == cond.kind and c not in _DEFAULTS for c in conds):
            continue
        if all(cond != c for c, _ in out):
            out.append((cond, span))
    return out


def _either(text: str, found: list[tuple[Cond, tuple[int, int]]]) -> list[Cond]:
    """Two conditions joined by "or" (nothing but "or" between them) hold as one: "at night or on weekends"."""
    conds: list[Cond] = []
    spans: list[tuple[int, int]] = []
    for cond, span in found:
        if conds and re.fullmatch(r"[\s,]*or[\s,]*", text[spans[-1][1]:span[0]]):
            prev = conds[-1]
            conds[-1] = Cond("any", (*(prev.value if prev.kind == "any" else (prev,)), cond))  # type: ignore[misc]
            spans[-1] = (spans[-1][0], span[1])
            continue
        conds.append(cond)
        spans.append(span)
    return conds


_NOT_ZONES = {"day", "daytime", "night", "evening", "morning", "afternoon", "weekend", "weekends", "week",
              "camera", "picture", "frame", "policy", "rest", "same", "time", "hours", "shop hours", "closing"}
_ZONE_TAIL = {"is", "are", "after", "before", "between", "from", "during", "at", "for", "and", "or", "with",
              "longer", "more", "over", "in", "on", "who", "when", "if", "except", "unless", "stays", "stay",
              "lingers", "waits", "than", "people", "hivis", "vests", "staff", "anyone", "someone", "the", "a",
              "entering", "leaving", "to", "until", "till", "not", "but", "otherwise", "only", "alert", "fine"}


def _zone(words: str, negated: bool, place: str | None) -> Cond | None:
    """A zone named after a preposition and "the", unless the words are a time, a person, an object...; the
    policy's own camera named as a place ("in the shop" on camera shop) is the camera itself."""
    parts = words.split()
    if len(parts) > 1 and parts[1] in _ZONE_TAIL | _STOP | set(_ROLES):
        parts = parts[:1]
    name = zone_word(" ".join(parts))
    if not name or name in _NOT_ZONES or name.split()[0] in _STOP or name.split()[0] in _ROLES or \
            name.split()[0] in _CARRIED or re.fullmatch(r"\d.*", name):
        return None
    if name == place and not negated:
        return Cond("place", name)
    return Cond("zone", name, negated)


def _count(word: str) -> float:
    return float(word) if word.replace(".", "", 1).isdigit() else float(_NUM.get(word, -1))


def _people(op: str, n: str) -> Cond | None:
    count = int(_count(n))
    if count < 0:
        return None
    ops = {"more than": ">", "over": ">", "at least": ">=", "fewer than": "<", "less than": "<", "under": "<",
           "no more than": "<=", "exactly": "="}
    return Cond("people", (ops[op], count))


def _dwell(op: str, n: str, unit: str) -> Cond | None:
    value = _count(n.replace(" a", "")) if n.strip() != "half a" else 0.5
    if value < 0:
        return None
    seconds = value * (60 if unit.startswith("m") else 3600 if unit.startswith("h") else 1)
    ops = {"longer than": ">", "more than": ">", "over": ">", "at least": ">=", "less than": "<", "under": "<",
           "shorter than": "<", "within": "<=", "no longer than": "<="}
    return Cond("dwell", (ops[op], float(seconds)))


def _after(m: re.Match) -> Cond | None:
    """"before T": from midnight; "after T": to midnight, or through the night to 06:00 for an evening T."""
    minute = _minute(*m.groups()[1:5])
    if minute is None or (not m.group(3) and not m.group(4) and not m.group(5)):
        return None  # "after 5" alone: minutes? hours? not read as a time
    if m.group(1) == "before":
        return Cond("time", (0, minute)) if minute else None
    if minute >= 12 * 60:
        return Cond("time", (minute, 6 * 60))
    return Cond("time", (minute, 0)) if minute else None


def _weekday(words: str) -> Cond:
    if words.startswith("weekday") or words.startswith("work"):
        return Cond("weekday", 0b0011111)
    if words.startswith("weekend"):
        return Cond("weekday", 0b1100000)
    names = re.findall(r"(mon|tues|wednes|thurs|fri|satur|sun)day", words)
    days = [_DAYS.index(n + "day") for n in names]
    if len(days) == 2 and re.search(r"-|to|through", words):
        a, b = days
        days = list(range(a, b + 1)) if a <= b else [*range(a, 7), *range(0, b + 1)]
    return Cond("weekday", sum(1 << d for d in days))


def _colour(word: str) -> str:
    return "grey" if word == "gray" else word


def _leftover(text: str, spans: list[tuple[int, int]]) -> str:
    """The words no rule read, once verdict phrases, subjects and small words are set aside."""
    kept = list(text)
    for s, e in spans:
        kept[s:e] = " " * (e - s)
    rest = "".join(kept)
    rest = _ALERT.sub(" ", rest)
    rest = _BENIGN.sub(" ", rest)
    words = [w for w in re.findall(r"[a-z][a-z'-]*|\d+", rest) if w not in _STOP and w not in _ROLES]
    return " ".join(words)


__all__ = ["compile_policy"]
