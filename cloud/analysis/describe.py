"""Descriptions from facts: what a model's description says that the facts do not, and the description the
facts themselves give.

A description may say only what the facts say: who is there (the label, as the facts' sentence puts it: yes,
faint or no), what they wear (the colours the translator measured), what they carry (the COCO objects it
found), where (the event's zones), when (the event's local time) and how long (its dwell) and which way (its
direction). `contradictions` finds each kind of claim that goes beyond that, `from_facts` writes the facts'
own wording. A small model copies its prompt's examples ("at the door, 22:40") and its own habits ("No
person; only the background.") whatever the facts say; these are the lines that stop it.

Kinds (the keys of `contradictions`, counted by the service as `descriptions_corrected`):

| kind      | the description                                    | the facts                                   |
|-----------|----------------------------------------------------|---------------------------------------------|
| person    | says there is none (no person, nobody, empty...)   | say there is one ("Person: yes")            |
| person    | names one (a person, a man, someone...)            | say there is none, and the verdict is not alert |
| colour    | names a colour                                     | do not hold that colour                     |
| object    | names a COCO object                                | do not name it                              |
| zone      | names a place (at the door, in the yard...)        | the event has no such zone                  |
| time      | names a clock time or a part of the day            | the event's local time is another, or none  |
| dwell     | names a duration                                   | the event's dwell is another, or none       |
| direction | says which way (towards, away, leaving...)         | the event's direction is another, or none   |
"""

from __future__ import annotations

import re

from ...shared.protocol import CORRECTED_KINDS as KINDS
from .translator import FAINT, MIN_OBJECT, Facts, clothing

_PERSON_WORDS = ("person", "people", "persons", "man", "men", "woman", "women", "someone", "somebody", "human",
                 "visitor", "intruder", "child", "boy", "girl", "pedestrian", "individual", "figure")
_NONE_SAID = re.compile(r"\b(nobody|no one|no-one|empty|only the background|nothing|none)\b")
_COLOURS = {  # a word in a description -> the colour the translator would call it
    "red": "red", "orange": "orange", "yellow": "yellow", "green": "green", "blue": "blue", "navy": "blue",
    "denim": "blue", "purple": "purple", "violet": "purple", "pink": "pink", "brown": "brown", "beige": "brown",
    "tan": "brown", "black": "dark", "white": "white", "grey": "grey", "gray": "grey", "silver": "grey",
    "teal": "green", "maroon": "red", "khaki": "brown", "cream": "white", "turquoise": "blue"}
_SHADES = ("dark", "light", "bright", "pale")  # colour words only in front of a garment: "a dark top"
_GARMENTS = ("top", "shirt", "t-shirt", "jacket", "coat", "hoodie", "sweater", "jumper", "cardigan", "vest",
             "dress", "bottom", "trousers", "pants", "jeans", "skirt", "shorts", "clothes", "clothing", "outfit",
             "uniform", "hat", "cap", "shoes", "sweatshirt", "blouse", "leggings")
_UPPER = {"top", "shirt", "t-shirt", "jacket", "coat", "hoodie", "sweater", "jumper", "cardigan", "vest",
          "blouse", "sweatshirt"}
_LOWER = {"bottom", "trouser", "trousers", "pant", "pants", "jean", "jeans", "skirt", "short", "shorts", "legging"}
_WORN = re.compile(r"\b(?:" + "|".join(_COLOURS) + r")\s+(?:[a-z-]+\s+)?(?:" + "|".join(map(re.escape, _GARMENTS))
                   + r")s?\b")
_PLACES = ("door", "doorway", "entrance", "entry", "exit", "gate", "porch", "patio", "pool", "yard", "backyard",
           "garden", "driveway", "garage", "street", "road", "parking", "lot", "shop", "store", "kitchen", "hall",
           "hallway", "corridor", "lobby", "stairs", "staircase", "balcony", "fence", "sidewalk", "pavement",
           "path", "loading", "dock", "classroom", "office", "room", "window", "lawn", "deck", "terrace")
_NOT_PLACES = {"frame", "picture", "image", "crop", "scene", "background", "foreground", "camera", "view", "dark",
               "light", "shadow", "shadows", "distance", "middle", "centre", "center", "left", "right", "top",
               "bottom", "corner", "edge", "front", "back", "side"}
_PLACE_PHRASE = re.compile(r"\b(?:at|on|in|near|by|outside|inside|beside|through|into|from) the ([a-z]+)")
_CLOCK = re.compile(r"\b([01]?\d|2[0-3])[:.h]([0-5]\d)\b|\b(1[0-2]|0?[1-9])\s*(am|pm|a\.m\.|p\.m\.)")
_DAY_PARTS = {"morning": (5, 12), "noon": (11, 14), "afternoon": (12, 18), "evening": (17, 23),
              "night": (20, 6), "midnight": (23, 1), "tonight": (18, 6), "dawn": (4, 8), "dusk": (16, 21),
              "overnight": (20, 7)}
_DURATION = re.compile(r"\b(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|min|mins|minutes?|h|hours?)\b")
_DIRECTIONS = {"towards": "towards the camera", "toward": "towards the camera", "approaching": "towards the camera",
               "arriving": "towards the camera", "entering": "towards the camera", "away": "away from the camera",
               "leaving": "away from the camera", "departing": "away from the camera",
               "exiting": "away from the camera"}
_COCO: tuple[set[str], set[str]] | None = None


def _object_names() -> tuple[set[str], set[str]]:
    """(single-word COCO names and the last word of the others, the multi-word names): "traffic light" is
    found as itself, "light" alone is no object."""
    global _COCO
    if _COCO is None:
        from ...shared.modelfiles import resolve

        names = [n.lower() for n in resolve("yolox_nano", verify=False).labels]
        heads = {n.split()[-1] for n in names} - {"light", "sign", "person"}
        _COCO = (heads, {n for n in names if " " in n})
    return _COCO


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z][a-z'-]*", text)


def seen(facts: Facts) -> bool:
    """The facts' sentence says the label is there ("yes")."""
    return facts.label_known and facts.label_score >= MIN_OBJECT


def _denied(text: str, label: str) -> bool:
    """The description says the label is not there."""
    names = "|".join(map(re.escape, {label, *(_PERSON_WORDS if label == "person" else ())}))
    return bool(re.search(rf"\b(no|not an?|without an?|not any|no sign of an?)\s+({names})s?\b", text)
                or _NONE_SAID.search(text))


def _affirmed(text: str, label: str) -> bool:
    """The description names the label (or, for a person, one of its words) other than to deny it."""
    names = {label, *(_PERSON_WORDS if label == "person" else ())}
    kept = re.sub(r"\b(no|not an?|without an?|not any|no sign of an?)\s+[a-z]+", " ", text)
    return any(w in names or (w.endswith("s") and w[:-1] in names) for w in _words(kept))


def _colours_said(text: str, facts: Facts) -> set[str]:
    """Colours the description gives that the facts do not: any colour they lack, and a colour given to a
    garment the facts give another ("a red top" where the top is blue)."""
    words = _words(text)
    upper, lower = facts.upper, facts.lower
    known = {c for c in (upper, lower) if c}
    wrong = set()
    for i, word in enumerate(words):
        nxt = words[i + 1].removesuffix("s") if i + 1 < len(words) else ""
        if word in _COLOURS:
            colour = _COLOURS[word]
        elif word in _SHADES and nxt in _GARMENTS:
            colour = word  # "a dark top" is a colour the translator names; "a light top" one it never does
        else:
            continue
        garment = next((w.removesuffix("s") for w in words[i + 1:i + 3] if w.removesuffix("s") in _GARMENTS), None)
        if colour not in known:
            wrong.add(word)
        elif (garment in _UPPER and colour != upper) or (garment in _LOWER and colour != lower):
            wrong.add(f"{word} {garment}")
    return wrong


def _objects_said(text: str, facts: Facts) -> set[str]:
    heads, phrases = _object_names()
    said = {p for p in phrases if re.search(rf"\b{re.escape(p)}s?\b", text)}
    rest = _WORN.sub(" ", text)  # "an orange top" names a colour, not the fruit
    for p in said:
        rest = re.sub(rf"\b{re.escape(p)}s?\b", " ", rest)
    said |= {w for w in _words(rest) if w in heads} | {
        w[:-1] for w in _words(rest) if w.endswith("s") and w[:-1] in heads
    }
    named = {n.lower() for n, _ in facts.objects} | {facts.label.lower()}
    named_words = {w for n in named for w in n.split()}
    if facts.hint:
        named_words |= set(_words(facts.hint.lower()))
    return {s for s in said if s not in named and s.split()[-1] not in named_words}


def _zone_words(facts: Facts) -> set[str]:
    return {w for zone in facts.zones for w in re.split(r"[^a-z0-9]+", zone.lower()) if w}


def _places_said(text: str, facts: Facts) -> set[str]:
    known = _zone_words(facts)
    heads, phrases = _object_names()
    firsts = {p.split()[0] for p in phrases}  # "at the dining table" names an object, not a place
    said = {w for w in _words(text) if w in _PLACES}
    said |= {m for m in _PLACE_PHRASE.findall(text) if m not in _NOT_PLACES and m not in heads
             and m not in firsts and m not in _COLOURS and m not in _GARMENTS}
    return {w for w in said if w not in known and w.rstrip("s") not in known}


def _minutes(hh: int, mm: int) -> int:
    return hh * 60 + mm


def _times_said(text: str, facts: Facts) -> set[str]:
    local = None
    if facts.local_time:
        hh, mm = facts.local_time.split(":")
        local = _minutes(int(hh), int(mm))
    wrong = set()
    for match in _CLOCK.finditer(text):
        if match.group(1) is not None:
            said = _minutes(int(match.group(1)), int(match.group(2)))
            options = {said, said + 12 * 60} if int(match.group(1)) <= 12 else {said}
        else:
            hour = int(match.group(3)) % 12 + (12 if match.group(4).startswith("p") else 0)
            options = set(range(_minutes(hour, 0), _minutes(hour, 60)))
        if local is None or local not in options:
            wrong.add(match.group(0))
    for word in _words(text):
        span = _DAY_PARTS.get(word)
        if span is None:
            continue
        hour = None if local is None else local // 60
        start, end = span
        inside = hour is not None and (start <= hour < end if start < end else (hour >= start or hour < end))
        if not inside:
            wrong.add(word)
    return wrong


def _durations_said(text: str, facts: Facts) -> set[str]:
    wrong = set()
    for number, unit in _DURATION.findall(text):
        seconds = float(number) * (60 if unit.startswith("min") else 3600 if unit.startswith("h") else 1)
        if facts.dwell_s is None or abs(seconds - facts.dwell_s) > max(1.0, 0.1 * facts.dwell_s):
            wrong.add(f"{number} {unit}")
    return wrong


def _directions_said(text: str, facts: Facts) -> set[str]:
    return {w for w in _words(text) if w in _DIRECTIONS and _DIRECTIONS[w] != facts.direction}


def contradictions(description: str, facts: Facts, verdict: str) -> dict[str, list[str]]:
    """{kind: what the description says beyond the facts} (KINDS); empty when it says only what they say.
    A crop that does not decode has no facts to hold a description against but its own sentence."""
    if not facts.decoded:
        return {}
    text = description.lower()
    label = facts.label.lower()
    found: dict[str, set[str]] = {}
    if facts.label_known:
        if seen(facts) and _denied(text, label):
            found["person"] = {f"no {label}"}
        elif verdict != "alert" and facts.label_score < MIN_OBJECT and _affirmed(text, label):
            found["person"] = {label}
    found["colour"] = _colours_said(text, facts)
    found["object"] = _objects_said(text, facts)
    found["zone"] = _places_said(text, facts)
    found["time"] = _times_said(text, facts)
    found["dwell"] = _durations_said(text, facts)
    found["direction"] = _directions_said(text, facts)
    return {kind: sorted(found[kind]) for kind in KINDS if found.get(kind)}


def from_facts(facts: Facts, verdict: str) -> str:
    """The description in the facts' own words: who (as the facts' sentence says), in what colours, with
    what, where, when, how long and which way; nothing they do not hold."""
    if not facts.decoded:
        return "The crop is not a readable image."
    label = facts.label
    others = " and ".join(f"{_article(name)} {name}" for name, _ in facts.objects)
    if seen(facts) or (not facts.label_known and verdict == "alert"):
        colours = clothing(facts.upper, facts.lower, facts.hivis).removeprefix(",")
        who = f"{_article(label).capitalize()} {label}{colours}" + (f", with {others}" if others else "")
    elif facts.label_known and facts.label_score >= FAINT:
        who = f"A faint shape, no {label} clearly seen" + (f"; {others}" if others else "")
    elif not facts.label_known:
        who = f"No {label} the closer look can tell" + (f"; {others}" if others else "")
    else:
        who = f"No {label}" + (f"; {others} seen" if others else "; only the background")
    context = []
    if facts.zones:
        context.append("in zone " + ", ".join(facts.zones))
    if facts.local_time:
        context.append(f"at {facts.local_time}")
    if facts.dwell_s is not None:
        context.append(f"for {facts.dwell_s:.0f} s")
    if facts.direction:
        context.append("not moving" if facts.direction == "still" else f"moving {facts.direction}")
    return who + (", " + ", ".join(context) if context else "") + "."


def _article(word: str | None) -> str:
    return "an" if word and word[0].lower() in "aeiou" else "a"
