"""What people looked like and what they had with them, as the stored facts say it: a question's colour,
clothing and object words ("in a grey top", "wearing red", "with a bag", "carrying a parcel") read into a
`Look`, and each event's description (what the model said it saw) checked against it.

A look is a filter like a camera or a time range: "did anyone carry a bag?" is a yes/no over the events whose
facts name a bag, and when none does the answer is no, never everyone. Only what the facts say counts: a
colour must be said of a garment ("a grey top", "a top in grey"), an object must be named (its near words
too: a backpack is a bag, a package a parcel).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COLOURS = {"grey": ("grey", "gray", "greyish", "grayish", "silver"), "black": ("black",), "white": ("white",),
           "red": ("red", "maroon"), "blue": ("blue", "navy"), "green": ("green", "olive"), "yellow": ("yellow",),
           "orange": ("orange",), "purple": ("purple", "violet"), "pink": ("pink",), "brown": ("brown", "tan"),
           "beige": ("beige", "cream", "khaki"), "dark": ("dark", "black", "navy"), "light": ("light", "white", "pale")}
UPPER = ("top", "shirt", "t shirt", "tshirt", "tee", "jacket", "coat", "hoodie", "hooded jacket", "sweater", "jumper",
         "sweatshirt", "blouse", "vest", "cardigan", "fleece", "raincoat", "parka", "uniform", "clothes",
         "clothing", "outfit", "dress")
LOWER = ("bottom", "bottoms", "trousers", "pants", "jeans", "shorts", "skirt", "leggings")
HEAD = ("hat", "cap", "beanie", "hood", "helmet")
GARMENTS = {**dict.fromkeys(UPPER, "top"), **dict.fromkeys(LOWER, "bottom"), **dict.fromkeys(HEAD, "hat"),
            "shoes": "shoes", "boots": "shoes", "trainers": "shoes", "sneakers": "shoes"}
OBJECTS = {"bag": ("bag", "bags", "backpack", "backpacks", "rucksack", "handbag", "purse", "tote", "shopping bag",
                   "satchel", "suitcase", "briefcase"),
           "parcel": ("parcel", "parcels", "package", "packages", "box", "boxes", "delivery"),
           "umbrella": ("umbrella", "umbrellas"), "phone": ("phone", "mobile", "smartphone", "cellphone"),
           "dog": ("dog", "dogs", "leash"), "stroller": ("stroller", "pram", "pushchair", "buggy"),
           "bottle": ("bottle", "bottles"), "ladder": ("ladder",), "tool": ("tool", "tools", "crowbar"),
           "flashlight": ("flashlight", "torch"), "cart": ("cart", "trolley"), "helmet": ("helmet",),
           "mask": ("mask", "balaclava"), "glasses": ("glasses", "sunglasses"),
           "cup": ("cup", "coffee"), "food": ("food", "pizza"), "letter": ("letter", "letters", "mail", "envelope"),
           "flowers": ("flowers", "bouquet")}
GARMENT_WORDS = {"top": "top", "bottom": "pair of trousers", "hat": "hat", "shoes": "pair of shoes"}
_WITH = r"(?:carry|carries|carrying|carried|holding|held|hold|holds|with|had|has|have|having|bringing|brought|" \
        r"bring|wheeling|pushing|pulling|walking)"
_WEAR = r"(?:in|wearing|wore|wears|wear|dressed in|had on|has on|with)"


@dataclass(frozen=True)
class Look:
    """A colour (of a garment: top, bottom, hat, shoes; None: any garment) and/or an object."""

    colour: str | None = None
    garment: str | None = None
    carries: str | None = None
    phrases: tuple[str, ...] = ()  # the question's words for it, left out when looking for open-question markers

    @property
    def said(self) -> str:
        """How an answer names it: "in a grey top", "with a bag", "in grey with a bag"."""
        worn = f"in a {self.colour} {GARMENT_WORDS[self.garment]}" if self.garment else f"in {self.colour}"
        carried = f"with {'an' if self.carries[:1] in 'aeiou' else 'a'} {self.carries}" if self.carries else None
        return " ".join(((worn,) if self.colour else ()) + ((carried,) if carried else ()))

    def holds(self, description: str) -> bool:
        """Whether an event's description says this look. The classifier's classes do not count: they are
        guesses over a thousand ImageNet names ("punching bag" on a person at 0.06), not what was seen."""
        facts = _words(description)
        if self.carries is not None and not _names(facts, OBJECTS[self.carries]):
            return False
        return self.colour is None or colour_of(facts, self.colour, self.garment)


def _words(text: str) -> str:
    return " " + re.sub(r"[^a-z]+", " ", text.lower().replace("t-shirt", "t shirt")).strip() + " "


def _names(facts: str, words: tuple[str, ...]) -> bool:
    return any(f" {w} " in facts for w in words)


def colour_of(facts: str, colour: str, garment: str | None) -> bool:
    """A colour said of a garment: "grey top", "grey and white jacket", "top in grey", "grey top and blue"."""
    shades = "|".join(COLOURS[colour])
    kinds = [g for g, kind in GARMENTS.items() if garment is None or kind == garment]
    clothes = "|".join(re.escape(g) + "s?" for g in sorted(kinds, key=len, reverse=True))
    before = rf" (?:{shades})(?: (?:and|or|with|\w+ish|light|dark|bright|pale) \w+)?(?: \w+)? (?:{clothes}) "
    after = rf" (?:{clothes}) (?:in|of|and) (?:a |an )?(?:\w+ )?(?:{shades}) "
    return bool(re.search(before, facts) or re.search(after, facts))


def look_in(text: str) -> Look | None:
    """The look a normalised question asks about, or None."""
    colour = garment = carries = None
    said = []
    words = " " + text + " "
    for name, forms in COLOURS.items():
        for form in forms:
            found = re.search(rf" (?:{_WEAR} )?(?:a |an |the )?{form}(?: (?:colou?red|clothes|clothing))?"
                              rf"(?: ([a-z]+(?: [a-z]+)?))? ", words)
            if not found:
                continue
            tail = found[1] or ""
            kind = next((GARMENTS[g] for g in sorted(GARMENTS, key=len, reverse=True)
                         if re.match(rf"{g}s?( |$)", tail)), None)
            worn = re.match(rf" {_WEAR} ", found[0]) is not None and not re.match(r" in the (dark|light) ", found[0])
            clothed = re.search(r" (?:clothes|clothing) ", found[0] + " ") is not None  # "in dark clothes"
            if kind is None and not clothed and (not worn or name in ("dark", "light")):
                continue  # "a red car", "white van", "in the dark": not clothing
            colour, garment = name, kind
            said.append((found[0][:found.start(1) - found.start()] if kind is None and found[1] else found[0]).strip())
            break
        if colour:
            break
    for name, forms in OBJECTS.items():
        pattern = "|".join(sorted(forms, key=len, reverse=True))
        found = re.search(rf" {_WITH} (?:a |an |the |any |some |his |her |their |a big |a large |a small )?"
                          rf"(?:[a-z]+ )?(?:{pattern}) ", words)
        if found and not (name == "bike" and re.search(r" (riding|on) (a |the )?(bike|bicycle) ", words)):
            carries = name
            said.append(found[0].strip())
            break
    if colour is None and carries is None:
        return None
    return Look(colour, garment, carries, tuple(said))
