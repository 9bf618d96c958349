"""The words of a policy as tokens for its grammar (policy_grammar.py): contractions spelled out ("isn't" is
"is not", so the grammar reads the "not"), times and units split off their numbers ("7pm" is "7 pm"), a zone
the camera is configured with as one token however many words it has, and every word typed: a keyword of the
grammar, a number, a clock time, a day, a colour, a carried object, or WORD (only a zone name may use one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...shared.policycell import zone_word

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_WORDS = {**{d: i for i, d in enumerate(DAYS)}, **{d + "s": i for i, d in enumerate(DAYS)},
              **{d[:3]: i for i, d in enumerate(DAYS)}, "tues": 1, "weds": 2, "thur": 3, "thurs": 3}
COLOURS = {"red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "white", "grey", "gray", "black"}
OBJECTS = {"bag": ("backpack", "handbag", "suitcase"), "bags": ("backpack", "handbag", "suitcase"),
           "backpack": ("backpack",), "backpacks": ("backpack",), "rucksack": ("backpack",),
           "rucksacks": ("backpack",), "handbag": ("handbag",), "handbags": ("handbag",),
           "suitcase": ("suitcase",), "suitcases": ("suitcase",), "luggage": ("suitcase",),
           "umbrella": ("umbrella",), "umbrellas": ("umbrella",), "bottle": ("bottle",), "bottles": ("bottle",),
           "knife": ("knife",), "knives": ("knife",), "phone": ("cell phone",), "phones": ("cell phone",),
           "laptop": ("laptop",), "laptops": ("laptop",), "skateboard": ("skateboard",)}
NUMWORDS = {"zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
            "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
            "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90}
LABELS = {"car": ("car",), "cars": ("car",), "vehicle": ("car", "truck", "bus", "motorcycle"),
          "vehicles": ("car", "truck", "bus", "motorcycle"), "truck": ("truck",), "trucks": ("truck",),
          "lorry": ("truck",), "lorries": ("truck",), "dog": ("dog",), "dogs": ("dog",), "cat": ("cat",),
          "cats": ("cat",), "animal": ("dog", "cat", "bird", "horse", "sheep", "cow"),
          "animals": ("dog", "cat", "bird", "horse", "sheep", "cow"), "pet": ("dog", "cat"), "pets": ("dog", "cat"),
          "bicycle": ("bicycle",), "bicycles": ("bicycle",), "bike": ("bicycle",), "bikes": ("bicycle",),
          "motorbike": ("motorcycle",), "motorbikes": ("motorcycle",), "motorcycle": ("motorcycle",),
          "motorcycles": ("motorcycle",), "bird": ("bird",), "birds": ("bird",), "bus": ("bus",),
          "buses": ("bus",), "horse": ("horse",), "horses": ("horse",), "sheep": ("sheep",), "cow": ("cow",),
          "cows": ("cow",)}
_CONTRACTIONS = {"isn't": "is not", "aren't": "are not", "don't": "do not", "doesn't": "does not",
                 "didn't": "did not", "can't": "can not", "cannot": "can not", "won't": "will not",
                 "shouldn't": "should not", "mustn't": "must not", "wasn't": "was not", "weren't": "were not",
                 "it's": "it is", "they're": "they are", "there's": "there is", "that's": "that is",
                 "we're": "we are", "o'clock": "oclock", "no-one": "no one", "noone": "no one",
                 "t-shirt": "tshirt", "t-shirts": "tshirt", "everyone's": "everyone is", "nobody's": "nobody is",
                 "someone's": "someone is", "anyone's": "anyone is", "mayn't": "may not"}
# the same, typed without the apostrophe ("isnt", "dont"): only the spellings that are no other word ("its",
# "were", "well" are, and stay as they are)
_CONTRACTIONS.update({"isnt": "is not", "arent": "are not", "dont": "do not", "doesnt": "does not",
                      "didnt": "did not", "cant": "can not", "wont": "will not", "shouldnt": "should not",
                      "mustnt": "must not", "wasnt": "was not", "werent": "were not", "theyre": "they are",
                      "theres": "there is", "thats": "that is", "everyones": "everyone is", "nobodys": "nobody is"})


@dataclass(frozen=True)
class Tok:
    type: str  # a keyword's terminal name, or T_NUM T_NUMWORD T_CLOCK T_ZONE T_WORD T_DAY T_COLOUR T_OBJECT
    value: object
    word: str  # as written (normalised)


def normalise(text: str) -> str:
    text = text.lower().replace("–", "-").replace("—", "-").replace("’", "'").replace("‘", "'")
    text = re.sub(r"\bhigh[- ]?vis(?:ibility)?\b|\bhi[- ]?vi[sz]\b|\bhivis\b|\bhigh[- ]viz\b", "hivis", text)
    text = re.sub(r"\b(a|p)\.m\.?(?=\s|$|[,;])", r"\1m", text)
    text = re.sub(r"(\d)\.(\d\d)(?=\b|\s*[ap]m\b)", r"\1:\2", text)  # 7.30 -> 7:30, 7.30am -> 7:30am
    text = re.sub(r"(\d)\s*\+", r"\1 or more ", text).replace("&", " and ")  # "6+ people"; "cats & dogs"
    text = re.sub(r"(\d)\s*(am|pm|s|secs?|seconds?|mins?|minutes?|m|h|hrs?|hours?)\b", r"\1 \2", text)
    text = re.sub(r"(\d)\s*-\s*(\d)", r"\1 - \2", text)
    text = re.sub(r"\b(mon|tue|tues|wed|thu|thurs|fri|sat|sun)(\w*)\s*-\s*(mon|tue|wed|thu|fri|sat|sun)",
                  r"\1\2 - \3", text)
    text = re.sub(r"\b([a-z]+)'(?:s|ve) been\b", r"\1 has been", text)  # "someone's been": has, not is
    text = re.sub(r"[\"()\[\]]", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def impossible_time(text: str) -> str | None:
    """A clock time no day has, wherever it stands in the words ("at 25:30", "3:70pm", "13pm"): refused even
    where no rule reads the sentence around it."""
    text = normalise(text)
    for m in re.finditer(r"\b(\d{1,2}):(\d{2})\b(?:\s*([ap]m)\b)?|\b(\d{1,2})\s+([ap]m)\b", text):
        hour, minute = int(m.group(1) or m.group(4)), int(m.group(2) or 0)
        if minute > 59 or hour > 24 or (hour == 24 and minute) or ((m.group(3) or m.group(5)) and not 1 <= hour <= 12):
            return m.group(0)
    return None


_ASIDE = re.compile(r"\((?:that's|that is|they're|they are|these are|those are|i\.e\.,?|e\.g\.,?)\s+([^()]{1,80})\)",
                    re.IGNORECASE)
_DETS = {"the", "a", "an", "our", "my", "their", "his", "her", "its"}


def asides(sentence: str, keywords: dict[str, str], roles: frozenset[str], zones: tuple[str, ...]) -> tuple[
        str, tuple[str, ...]]:
    """The sentence without its asides, and the asides: a bracket that says who someone is ("(that's the
    security patrol)") and nothing a rule reads: only determiners, job nouns, and words no rule knows (no
    time, day, number, colour, object, zone, nor a word of the grammar such as "not")."""
    places = {w for z in zones for w in zone_word(z).split()}
    found: list[str] = []

    def strip(match: re.Match) -> str:
        words = re.findall(r"[a-z0-9']+", match.group(1).lower())
        if words and all(w in _DETS or w in roles or not (
                w in keywords or w in places or w in COLOURS or w in OBJECTS or w in NUMWORDS or w in _DAY_WORDS
                or w in LABELS or any(ch.isdigit() for ch in w)) for w in words):
            found.append(match.group(0).strip())
            return " "
        return match.group(0)

    return _ASIDE.sub(strip, sentence), tuple(found)


def sentences(text: str) -> list[str]:
    """The text's sentences: at '.', ';', '!', '?' and line breaks (a '.' inside a number stays)."""
    return [s for s, _ in sentence_breaks(text)]


def sentence_breaks(text: str) -> list[tuple[str, bool]]:
    """The text's sentences, each with whether a ';' joins it to the one before."""
    text = re.sub(r"\b([aApP])\.[mM]\.?", r"\1m", text)
    parts = re.split(r"((?<!\d)[.](?!\d)|[.](?=\s|$)|[;!?\n])", text)
    out: list[tuple[str, bool]] = []
    joined = False
    for i, part in enumerate(parts):
        if i % 2:
            joined = part == ";"
        elif part.strip(" ,"):
            out.append((part.strip(" ,"), joined and bool(out)))
    return out


def tokens(sentence: str, keywords: dict[str, str], zones: tuple[str, ...], camera: str | None = None) -> list[Tok]:
    """The typed tokens of one normalised sentence. `keywords`: word -> terminal name of the grammar; the
    camera's own name reads as a place too (the camera itself, policy_words._placed)."""
    text = " " + sentence + " "
    names = sorted({zone_word(z) for z in zones if zone_word(z)}, key=len, reverse=True)
    zoned = bool(names)
    if camera and zone_word(camera) and zone_word(camera) not in names:
        names = sorted([*names, zone_word(camera)], key=len, reverse=True)
    short = _short_names(names, keywords)
    out: list[Tok] = []
    words = re.findall(r"\d{1,2}:\d{2}|\d+(?:\.\d+)?|[a-z][a-z'-]*[a-z]|[a-z]|[,:=+-]", text)
    i = 0
    while i < len(words):
        matched = _zone_at(words, i, names)
        if matched:
            out.append(Tok("T_ZONE", " ".join(words[i:i + matched]), " ".join(words[i:i + matched])))
            i += matched
            continue
        alias = _alias_at(words, i, short)
        if alias:
            n, value = alias
            out.append(Tok("T_ZONE", value, " ".join(words[i:i + n])))
            i += n
            continue
        word = words[i]
        i += 1
        if word in _CONTRACTIONS:
            for part in _CONTRACTIONS[word].split():
                out.append(_typed(part, keywords, zoned))
            continue
        if word == ":":
            word = ","
        elif word == "=":  # "dogs = alert": a verdict mark, as a dash is
            word = "-"
        out.append(_typed(word, keywords, zoned))
    return out


_SOME = ("a", "an", "any", "either", "each")


def _short_names(names: list[str], keywords: dict[str, str]) -> dict[tuple[str, ...], tuple[str, tuple[str, ...]]]:
    """Shorter names of the zones, each (words) -> (how it must be introduced, the zones it names):
    the other number ("the charging bay" for "charging bays"), "the" and the end or start of one zone's name
    ("the entrance" for "site entrance", when no other zone's name has it), "a"/"any" and what the names of
    numbered zones share ("a dock": "dock 1" or "dock 2"). A short name that is a word of the grammar, or
    that two zones share (but for "a ..."), names none."""
    out: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {}
    whole = {tuple(n.split()) for n in names}
    parts: dict[tuple[str, ...], set[str]] = {}
    for name in names:
        ws = name.split()
        last = ws[-1]
        other = last[:-1] if last.endswith("s") and len(last) > 3 else last + "s"
        numbered = len(ws) > 1 and (ws[-1].isdigit() or len(ws[-1]) == 1)  # "dock 1", "bay a"
        if not numbered:
            out[(*ws[:-1], other)] = ("any", (name,))
        for k in range(1, len(ws)):  # the name's head noun ("entrance"), or its noun before the number
            part = tuple(ws[:k]) if numbered and k == len(ws) - 1 else tuple(ws[k:])
            if len("".join(part)) >= 4 and not all(w in keywords for w in part):
                parts.setdefault(part, set()).add(name)
        if numbered:  # "a dock", "any bay": one of them
            out[("_some", *ws[:-1])] = ("a", tuple(sorted({*out.get(("_some", *ws[:-1]), ("", ()))[1], name})))
    for part, owners in parts.items():
        if len(owners) == 1 and part not in whole and part not in out:
            out[part] = ("the", tuple(owners))
    return {k: v for k, v in out.items() if k not in whole}


def _alias_at(words: list[str], i: int, short: dict) -> tuple[int, object] | None:
    """(words used, the zone name or names) of a shorter zone name at words[i], its determiner first."""
    det = words[i]
    for (key, (how, owners)) in sorted(short.items(), key=lambda kv: -len(kv[0])):
        if how == "a" and det in _SOME and tuple(words[i + 1:i + len(key)]) == key[1:]:
            return len(key), owners if len(owners) > 1 else owners[0]
        if how == "any" and i > 0 and words[i - 1] in ("the", "our", "my", *_SOME) and tuple(
                words[i:i + len(key)]) == key:
            return len(key), owners[0]
        if how == "the" and i > 0 and words[i - 1] in ("the", "our", "my") and tuple(words[i:i + len(key)]) == key:
            return len(key), owners[0]
    return None


def _zone_at(words: list[str], i: int, names: list[str]) -> int:
    for name in names:
        parts = name.split()
        if words[i:i + len(parts)] == parts:
            return len(parts)
    return 0


def _typed(word: str, keywords: dict[str, str], zoned: bool = False) -> Tok:
    """The word's type; an unknown word is T_WORD, which a zone may be named with, unless the camera's zones
    are configured (`zoned`): then a place must be one of them, and the word is T_OTHER, which names none."""
    if re.fullmatch(r"\d{1,2}:\d{2}", word):
        h, m = word.split(":")
        return Tok("T_CLOCK", (int(h), int(m)), word)
    if re.fullmatch(r"\d+(?:\.\d+)?", word):
        return Tok("T_NUM", float(word), word)
    if word in _DAY_WORDS:
        return Tok("T_DAY", _DAY_WORDS[word], word)
    if word in COLOURS:
        return Tok("T_COLOUR", "grey" if word == "gray" else word, word)
    if word in OBJECTS:
        return Tok("T_OBJECT", OBJECTS[word], word)
    if word in NUMWORDS:
        return Tok("T_NUMWORD", float(NUMWORDS[word]), word)
    if word in keywords:
        return Tok(keywords[word], word, word)
    return Tok("T_OTHER" if zoned else "T_WORD", word, word)


__all__ = ["COLOURS", "DAYS", "LABELS", "NUMWORDS", "OBJECTS", "Tok", "asides", "impossible_time", "normalise",
           "sentence_breaks", "sentences", "tokens"]
