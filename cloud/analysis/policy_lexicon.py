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
NUMWORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
            "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45,
            "fifty": 50, "sixty": 60, "ninety": 90}
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


@dataclass(frozen=True)
class Tok:
    type: str  # a keyword's terminal name, or T_NUM T_NUMWORD T_CLOCK T_ZONE T_WORD T_DAY T_COLOUR T_OBJECT
    value: object
    word: str  # as written (normalised)


def normalise(text: str) -> str:
    text = text.lower().replace("–", "-").replace("—", "-").replace("’", "'").replace("‘", "'")
    text = re.sub(r"\bhigh[- ]?vis(?:ibility)?\b|\bhi[- ]?vi[sz]\b|\bhivis\b|\bhigh[- ]viz\b", "hivis", text)
    text = re.sub(r"\b(a|p)\.m\.?(?=\s|$|[,;])", r"\1m", text)
    text = re.sub(r"(\d)\.(\d\d)\b", r"\1:\2", text)  # 7.30 -> 7:30
    text = re.sub(r"(\d)\s*(am|pm|s|secs?|seconds?|mins?|minutes?|m|h|hrs?|hours?)\b", r"\1 \2", text)
    text = re.sub(r"(\d)\s*-\s*(\d)", r"\1 - \2", text)
    text = re.sub(r"\b(mon|tue|tues|wed|thu|thurs|fri|sat|sun)(\w*)\s*-\s*(mon|tue|wed|thu|fri|sat|sun)",
                  r"\1\2 - \3", text)
    text = re.sub(r"\b([a-z]+)'(?:s|ve) been\b", r"\1 has been", text)  # "someone's been": has, not is
    text = re.sub(r"[\"()\[\]]", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def sentences(text: str) -> list[str]:
    """The text's sentences: at '.', ';', '!', '?' and line breaks (a '.' inside a number stays)."""
    text = re.sub(r"\b([aApP])\.[mM]\.?", r"\1m", text)
    parts = re.split(r"(?<!\d)[.](?!\d)|[.](?=\s|$)|[;!?\n]", text)
    return [p.strip(" ,") for p in parts if p.strip(" ,")]


def tokens(sentence: str, keywords: dict[str, str], zones: tuple[str, ...], camera: str | None = None) -> list[Tok]:
    """The typed tokens of one normalised sentence. `keywords`: word -> terminal name of the grammar; the
    camera's own name reads as a place too (the camera itself, policy_words._placed)."""
    text = " " + sentence + " "
    names = sorted({zone_word(z) for z in zones if zone_word(z)}, key=len, reverse=True)
    zoned = bool(names)
    if camera and zone_word(camera) and zone_word(camera) not in names:
        names = sorted([*names, zone_word(camera)], key=len, reverse=True)
    out: list[Tok] = []
    words = re.findall(r"\d{1,2}:\d{2}|\d+(?:\.\d+)?|[a-z][a-z'-]*[a-z]|[a-z]|[,:-]", text)
    i = 0
    while i < len(words):
        matched = _zone_at(words, i, names)
        if matched:
            out.append(Tok("T_ZONE", " ".join(words[i:i + matched]), " ".join(words[i:i + matched])))
            i += matched
            continue
        word = words[i]
        i += 1
        if word in _CONTRACTIONS:
            for part in _CONTRACTIONS[word].split():
                out.append(_typed(part, keywords, zoned))
            continue
        if word == ":":
            word = ","
        out.append(_typed(word, keywords, zoned))
    return out


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


__all__ = ["COLOURS", "DAYS", "LABELS", "NUMWORDS", "OBJECTS", "Tok", "normalise", "sentences", "tokens"]
