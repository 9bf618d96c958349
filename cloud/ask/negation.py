"""Negation and exclusion in questions: "people other than at the porch", "anyone not in the front door zone",
"everything except the driveway", "anyone not carrying a bag", "non-person events".

A keyword spotter turns what it skips into the opposite meaning (STYLE.md, third build): "not carrying a bag"
read as "carrying a bag", "not on the driveway" as "on the driveway". So each negating word is read with the
words it governs (its scope: the words after it, up to a time word or a new clause), and what the scope names
decides:

    a place     a camera or zone of the operator's: excluded (the answer is over the others, and says so)
    a look      what someone wore or carried: named as not used ("not carrying a bag"); a description says what
                was seen, and a bag it does not name is no evidence of no bag; the look is not applied
    a label     "no people", "non-person", "other than cars": named as not used; the label is not applied
    nothing     "not wearing hi-vis": the words are named as not used by the reading (reading.py)

"nobody" and "no one" are people (the label), not a negation; "not an alert" is a verdict (rules.verdict_in);
"or not" asks a yes/no and negates nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from .appearance import look_in

# a negating word and the words it takes ("apart from"): what follows is its scope
MARKERS = re.compile(r"\b(?:(?:not|without|never) (?:counting|including|incl|inc)|(?:leave|leaving) out|"
                     r"ignor(?:e|es|ing)|disregard(?:ing)?|discount(?:ing)?|omit(?:ting)?|minus|barring|save for|"
                     r"with the exception of|except(?:ing| for)?|exclud(?:e|es|ing)|"
                     r"not|never|no(?! one\b)|without|besides|apart from|"
                     r"aside from|other than|outside(?: of)?|but not|wasnt|werent|isnt|arent|didnt|dont|doesnt|"
                     r"hasnt|havent|hadnt|non|nor|neither|(?:everything|anything|everyone|anyone|all|everywhere|cameras|"
                     r"camera|events) but)\b")
# "did not trigger an alert", "never set off the alarm": a verdict (benign), read by the rules
NOT_ALERTED = re.compile(r"\b(?:not|never|didnt|did not|wasnt|werent|doesnt|dont) (?:trigger|raise|set off|cause|"
                         r"produce|give|generate|get|fire|sound|ring|trip)(?:s|ed)? (?:an? |any |the )?(?:real )?"
                         r"(?:alert|alarm)s?\b")
_NOT_NEGATING = re.compile(NOT_ALERTED.pattern + r"|\bor not\b|\bnot (?:counted|included)\b|"
                           r"\bnot (?:an? |the )?(?:real )?(?:alert|alarm)s?\b|\bnot (?:classified|sure)\b|"
                           r"\bnon alerts?\b|\bno (?:one|body)\b|\bnot (?:just|only)\b|\bno more than\b|"
                           r"\bnot long\b|\bno longer\b|\bno of\b|"  # "no. of people": number of
                           r"\b(?:didnt|wasnt|werent|isnt|arent|hasnt|havent|hadnt|doesnt|dont) (?:there|any|anyone|"
                           r"anybody|anything|someone|somebody|something|it|they|we|you|i)\b")  # "didnt anyone come?"
# where a scope ends: a time, a new clause
_SCOPE_END = frozenset("""
today yesterday tonight this last morning afternoon evening night overnight since after before between until till
during within from but that which who when where than what how was were is are did do does
""".split())  # "in", "and", "or" go on: "not in the front door zone", "except the porch and the back door"
_LEADING = frozenset("a an the at on in by near from to of any some their his her its my our".split())
# markers that leave something out of what is counted ("not counting the cars"), not a fact about it ("no cars")
EXCLUDING = re.compile(r"^(?:not counting|not including|not incl|not inc|without counting|without including|never "
                       r"counting|leave out|leaving out|ignor|disregard|discount|omit|minus|barring|save for|with the "
                       r"exception|except|exclud|besides|apart from|aside from|other than|but not)")
# the same said after what it leaves out ("porch and back door excluded"): only a place of yours is left out
_AFTER = re.compile(r"\b(?:excluded|not counted|not included|left out|ignored|aside|omitted|disregarded)\b")
# who is left out before where ("except those at the porch", "excluding both the porch and ..."): the place
_GENERIC = re.compile(r"^(?:(?:those|ones|the ones|anyone|anybody|everyone|everybody|people|persons|someone|somebody|"
                      r"visitors|events|both|either|of|who|that|which|were|was|are|is|seen|caught|spotted|"
                      r"detected)\s+)+")
SCOPE_WORDS = 10  # at most this many words after the negating word


class Places(Protocol):
    def names_in(self, text: str) -> tuple[set[tuple[str, str]], set[str]]: ...

    def zone_names_in(self, text: str) -> tuple[set[str], set[str]]: ...

    def label_in(self, text: str) -> str | None: ...


@dataclass(frozen=True)
class Negated:
    """What a question's negating words exclude, and what they govern that no rule can apply."""

    cameras: frozenset[tuple[str, str]] = frozenset()
    zones: frozenset[str] = frozenset()
    look_phrases: tuple[str, ...] = ()  # the look words in a negated scope: not applied
    labels: frozenset[str] = frozenset()  # labels in a negated scope: not applied
    unusable: tuple[str, ...] = ()  # "not carrying a bag", "non person": named as not used
    bare: tuple[str, ...] = ()  # a negation whose scope names nothing a rule reads ("not at home"): named
    left_out: tuple[tuple[str, str], ...] = ()  # (label, phrase) a marker leaves out ("not counting the cars")
    words: frozenset[str] = frozenset()  # the negating words read (used, so never named as unused)

    def __bool__(self) -> bool:
        return bool(self.cameras or self.zones or self.look_phrases or self.labels)


def scopes(text: str) -> list[tuple[str, str]]:
    """(negating words, the words they govern) in a normalised question."""
    blanked = _NOT_NEGATING.sub(lambda m: "_" * len(m[0]), text)  # keep positions, hide what negates nothing
    found = []
    for match in MARKERS.finditer(blanked):
        after = text[match.end():].split()
        scope: list[str] = []
        for word in after[:SCOPE_WORDS]:
            if word in _SCOPE_END and scope:
                break
            if word in _SCOPE_END:
                continue
            scope.append(word)
        found.append((match[0], " ".join(scope)))
    for match in _AFTER.finditer(text):  # "the porch and the back door excluded": the words before it
        before = text[:match.start()].split()[-SCOPE_WORDS:]
        while before and any(w in _SCOPE_END for w in before):
            before = before[next(i for i, w in enumerate(before) if w in _SCOPE_END) + 1:]
        found.append((match[0], " ".join(before)))
    return found


def negated(text: str, names: Places) -> Negated:
    """What the negating words of a normalised question govern (see the module docstring)."""
    cameras: set[tuple[str, str]] = set()
    zones: set[str] = set()
    looks: list[str] = []
    labels: set[str] = set()
    unusable: list[str] = []
    words: set[str] = set()
    bare: list[str] = []
    left_out: list[tuple[str, str]] = []
    for marker, scope in scopes(text):
        if not scope or MARKERS.match(scope):
            continue  # "anyone but not the porch": the next negating word's scope
        if _AFTER.fullmatch(marker):
            place_words = names.names_in(scope)[1] | names.zone_names_in(scope)[1]
            at = _first(scope, place_words)
            if at is None:
                continue  # "not counted" of nothing of yours: named by the reading, if no rule reads it
            scope = " ".join(scope.split()[at:])
        said = f"{marker} {scope}"
        trimmed = _GENERIC.sub("", scope)
        if EXCLUDING.match(marker) and trimmed != scope and (names.names_in(trimmed)[0]
                                                             or names.zone_names_in(trimmed)[0]):
            words |= set(scope.split()) - set(trimmed.split())  # "except those at the porch": the porch
            scope = trimmed
        place, place_words = names.names_in(scope)
        zone, zone_words = names.zone_names_in(scope)
        look = look_in(scope)
        label_words = re.sub(r"\bno (?:one|body)\b|\bnobody\b", "_", scope)
        heads = {"place": _first(scope, place_words | zone_words),  # the thing said first is what is negated
                 "look": _first(scope, set(look.phrases)) if look is not None else None,
                 "label": next((i for i, w in enumerate(label_words.split()) if names.label_in(w)), None)}
        first = next((i for i, w in enumerate(scope.split()) if w not in _LEADING), 0)
        found = [(at, what) for what, at in heads.items() if at is not None and at <= first]
        if marker.startswith("outside") and not (found and min(found)[1] == "place"):
            continue  # "anyone outside the house?": every camera is outside; only a place of yours is left out
        if not found:  # nothing, or not what the negation governs ("not in uniform on the porch": uniform)
            bare.append(said)
            continue
        what = min(found)[1]
        if what == "place":
            cameras |= place
            zones |= zone
            words |= set(marker.split())
        elif what == "look":
            looks.extend(look.phrases)
            unusable.append(_through(said, look.phrases[0]))
        else:
            labels.add(names.label_in(label_words))
            unusable.append(" ".join(said.split()[:len(marker.split()) + heads["label"] + 1]))
            if EXCLUDING.match(marker):
                left_out.append((names.label_in(label_words), unusable[-1]))
    return Negated(frozenset(cameras), frozenset(zones), tuple(looks), frozenset(labels),
                   tuple(dict.fromkeys(unusable)), bare=tuple(bare), words=frozenset(words),
                   left_out=tuple(left_out))


def _first(scope: str, phrases: set[str]) -> int | None:
    """The word index in `scope` where the first of `phrases` begins, or None."""
    starts = [len(scope[:found.start()].split()) for p in phrases
              if (found := re.search(rf"(?<![a-z0-9]){re.escape(p)}(?![a-z0-9])", scope))]
    return min(starts) if starts else None


def _through(said: str, phrase: str) -> str:
    """The negating words up to the end of `phrase`: "not carrying a bag", "not in a grey top"."""
    at = said.find(phrase)
    return said[:at + len(phrase)] if at >= 0 else said


def excluded(cameras: frozenset[tuple[str, str]], zones: frozenset[str], row: dict,
             labels: frozenset[str] = frozenset()) -> bool:
    """A stored event on an excluded camera, standing in an excluded zone, or of a label left out."""
    return ((row.get("device"), row.get("camera")) in cameras or bool(zones.intersection(row.get("zones") or ()))
            or row.get("label") in labels)
