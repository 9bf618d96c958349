"""The site's words as other Englishes say them: extra pronunciations for the recogniser's US dictionary.

The model in pocketsphinx's wheel knows General American: "after" is AE F T ER, "door" D AO R. Most English
speakers outside North America (England, Wales, Australia, New Zealand, South Africa, much of the Caribbean)
are non-rhotic and many split the TRAP and BATH vowels, so they say AA F T AH and D AO. Two regular sound
rules give each word of the site's language model those pronunciations as alternatives; the US ones stay:

    non-rhotic   R after a vowel and before a consonant or the word's end is not said; ER there is AH
                 ("after" AE F T AH, "porch" P AO CH, "car" K AA, "yesterday" Y EH S T AH D EY)
    BATH         AE before F, S, TH, or N followed by T, S, CH, D is AA ("after" AA F T ER, "last" L AA S T,
                 "can't" K AA N T, "answer" AA N S ER)

Only words with a pronunciation the rules change get one; nothing else in the dictionary moves.
"""

from __future__ import annotations

from collections.abc import Iterable

_VOWELS = frozenset("AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW".split())
_BATH_NEXT = frozenset("F S TH".split())
_BATH_NASAL_NEXT = frozenset("T S CH D".split())


def non_rhotic(phones: list[str]) -> list[str]:
    out: list[str] = []
    for i, phone in enumerate(phones):
        after = phones[i + 1] if i + 1 < len(phones) else None
        before_vowel = after in _VOWELS
        if phone == "R" and out and out[-1] in _VOWELS and not before_vowel:
            continue
        out.append("AH" if phone == "ER" and not before_vowel else phone)
    return out


def bath(phones: list[str]) -> list[str]:
    out = list(phones)
    for i, phone in enumerate(phones[:-1]):
        nxt = phones[i + 1]
        nasal = nxt == "N" and i + 2 < len(phones) and phones[i + 2] in _BATH_NASAL_NEXT
        if phone == "AE" and (nxt in _BATH_NEXT or nasal):
            out[i] = "AA"
    return out


def variants(phones: str) -> list[str]:
    """Other pronunciations of a word said `phones` (ARPABET, space-separated), without it."""
    said = phones.split()
    found = [" ".join(rule(said)) for rule in (non_rhotic, bath, lambda p: non_rhotic(bath(p)))]
    return [p for p in dict.fromkeys(found) if p != phones]


def pronunciations(words: Iterable[str], lookup) -> list[tuple[str, str]]:
    """(word(n), phones) to add for `words`: each variant of each pronunciation `lookup(word(n))` gives that
    no pronunciation of the word already has; n follows the dictionary's own alternatives."""
    added: list[tuple[str, str]] = []
    for word in words:
        known: list[str] = []
        while (phones := lookup(word if not known else f"{word}({len(known) + 1})")) is not None:
            known.append(phones)
        fresh = [v for p in known for v in variants(p) if v not in known]
        for n, phones in enumerate(dict.fromkeys(fresh), start=len(known) + 1):
            added.append((f"{word}({n})", phones))
    return added
