"""The names a question may use, and where each comes from.

    operator names  the cameras and zones in [ask] cameras / [ask] zones, and the device ids that send events
                    (the identities the operator issued): read as words of the question, in the ways people
                    write them ("back door", "rear door", "drive way", "camera 2")
    learned names   the camera, zone and label names the devices send with their events: matched only where the
                    question quotes them (`camera "porch"`, `in "front_door"`), never as a word of the question,
                    so a device that names a camera "today" or a zone "people" changes no question but one that
                    quotes those names

A name made only of words the rules read ("today", "alert", "people", "last") is matched only quoted, whoever
chose it. Learning is a few dictionary inserts per new name (no pattern is rebuilt), questions look their words
up (no pattern per name), and at most `max_learned` names are learned (a log line says when the cap is reached).
The vocabulary is shared by the event loop (learning) and the question workers (reading): one lock, held briefly.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz.distance import OSA

from .appearance import COLOURS, GARMENTS, OBJECTS
from .retrieve import STOP
from .rules import LABEL_WORDS, VERDICT_WORDS, label_said_first, spoken
from .spelling import KEYWORDS, SHORTHAND

log = logging.getLogger("edgetriage.cloud.ask")

MAX_LEARNED = 10_000
MAX_NAME_WORDS = 6  # the longest name (in words) read as words of a question
_QUOTES = "\"\u201c\u201d\u201e\u00ab\u00bb`"
_QUOTED = re.compile(rf"[{_QUOTES}]([^{_QUOTES}]{{1,64}})[{_QUOTES}]")
# the words the rules read, and the small words around them: a name made only of these is never a word
QUESTION_WORDS = frozenset(
    KEYWORDS | set(SHORTHAND.values()) | STOP | {w for words in LABEL_WORDS.values() for p in words for w in p.split()}
    | {w for words in VERDICT_WORDS.values() for p in words for w in p.split()} | set(LABEL_WORDS)
    | set("""how many much count often times first earliest last latest recent most list show give display which
    what when where who why time ago just now since after before between until till past next previous week weeks
    hour hours minute minutes day days night nights noon midnight morning evening afternoon tonight overnight early
    late small wee dawn dusk half couple few one two three four five six seven eight nine ten twelve twenty thirty
    came come comes coming seen see saw show showed appear appeared visit visited there here any all every no not
    yes is was were be been being did do does done has have had go went going stay stayed stays long
    """.split()))


# words a near spelling of a name is never read from: the rules' own words and the looks' words ("torch" is
# no "porch")
NOT_NAMES = QUESTION_WORDS | {w for forms in (*COLOURS.values(), *OBJECTS.values()) for p in forms
                              for w in p.split()} | {w for g in GARMENTS for w in g.split()}


def near(gram: str, form: str) -> bool:
    """A near spelling of an operator's name form: one edit (a letter added, dropped, changed, or two
    neighbours swapped) in a name of 4-7 letters, two from 8 on, spaces aside ("back dor", "porhc", "drivway");
    the first letter kept."""
    a, b = gram.replace(" ", ""), form.replace(" ", "")
    if len(b) < 4 or a[:1] != b[:1] or a == b:
        return a == b and len(b) >= 4 and gram != form
    return OSA.distance(a, b, score_cutoff=2) <= (1 if len(b) < 8 else 2)  # a swap of two letters is one


def key_of(name: str) -> str:
    """A name as a question writes it between quotes: lower case, `_` and `-` as spaces."""
    return re.sub(r"[\s_-]+", " ", name.lower()).strip()


def is_question_word(name: str) -> bool:
    """True when every word of the name is a word the rules read: such a name is matched only quoted."""
    words = key_of(name).split()
    return not words or all(w in QUESTION_WORDS for w in words)


def split_quoted(question: str) -> tuple[str, tuple[str, ...]]:
    """The question with its quoted names taken out (so the rules never read them as words), and those names."""
    names = tuple(key_of(m[1]) for m in _QUOTED.finditer(question) if key_of(m[1]))
    return _QUOTED.sub(" ", question), names


@dataclass(frozen=True)
class Quoted:
    """What the quoted names of a question name; `unknown`: those no camera, zone, device or label has."""

    cameras: frozenset[tuple[str, str]] = frozenset()
    zones: frozenset[str] = frozenset()
    devices: frozenset[str] = frozenset()
    label: str | None = None
    unknown: tuple[str, ...] = ()


class Vocabulary:
    """Operator names read as words, learned names matched when quoted (see the module docstring)."""

    def __init__(self, cameras: Iterable[tuple[str, str]] = (), labels: Iterable[str] = (),
                 zones: Iterable[str] | None = None, *, devices: Iterable[str] = (),
                 max_learned: int = MAX_LEARNED) -> None:
        self._lock = threading.Lock()
        self.max_learned = max_learned
        self.learned = 0
        self.full_logged = False
        self.cameras: set[tuple[str, str]] = set()  # every (device, camera) known, operator's or learned
        self.devices: set[str] = set()
        self.labels: set[str] = set(LABEL_WORDS)
        self.zones: set[str] = set()
        self._zones_of: set[tuple[str | None, str]] = set()
        # words -> names, for the operator's names read as words of a question
        self._camera_words: dict[str, set[tuple[str, str]]] = {}
        self._zone_words: dict[str, set[str]] = {}
        self._device_words: dict[str, set[str]] = {}
        self._camera_forms: set[str] = set()  # every way a camera is written: a zone spelt so is the camera
        self._said: set[str] = set()  # the operator's names as they are said aloud (no other words for them)
        # quoted key -> names, for every name known
        self._quoted_cameras: dict[str, set[tuple[str, str]]] = {}
        self._quoted_zones: dict[str, set[tuple[str | None, str]]] = {}  # (device, zone); None: the operator's
        self._quoted_devices: dict[str, set[str]] = {}
        self._quoted_labels: dict[str, str] = {}
        for device, camera in cameras:
            self._camera(device, camera, operator=True)
        for zone in zones or ():
            self._zone(None, zone, operator=True)
        for device in devices:
            self._device(device)
        for label in labels:
            self._label(label)

    # -- learning --------------------------------------------------------------------------------------
    def learn(self, device: str, camera: str, label: str, zones: Iterable[str] = ()) -> bool:
        """Learn the names of one event (as quoted names; its device id as a word); True when any was new.
        A few dictionary inserts per new name; past `max_learned` names new ones are not learned."""
        with self._lock:
            changed = False
            if device not in self.devices:
                changed |= self._device(device)
            if (device, camera) not in self.cameras:
                changed |= self._camera(device, camera, operator=False)
            if label not in self.labels:
                changed |= self._label(label)
            for zone in zones:
                if (device, zone) not in self._zones_of:
                    changed |= self._zone(device, zone, operator=False)
            return changed

    add = learn

    def _room(self) -> bool:
        if self.learned < self.max_learned:
            self.learned += 1
            return True
        if not self.full_logged:
            self.full_logged = True
            log.warning("questions: %d camera, zone and label names learned from events, the limit ([ask] "
                        "max_learned_names); names sent from now on are not learned: questions cannot quote them",
                        self.max_learned)
        return False

    def _camera(self, device: str, camera: str, *, operator: bool) -> bool:
        if not operator and not self._room():
            return False
        pair = (device, camera)
        self.cameras.add(pair)
        self.devices.add(device)
        self._quoted_cameras.setdefault(key_of(camera), set()).add(pair)
        if operator and not is_question_word(camera):
            self._said.update(spoken(camera, other_words=False))
            for form in spoken(camera):
                self._camera_words.setdefault(form, set()).add(pair)
                self._camera_forms.add(form)
        return True

    def _zone(self, device: str | None, zone: str, *, operator: bool) -> bool:
        if not operator and not self._room():
            return False
        self.zones.add(zone)
        self._zones_of.add((device, zone))
        self._quoted_zones.setdefault(key_of(zone), set()).add((device, zone))
        if operator and not is_question_word(zone):
            self._said.update(spoken(zone, other_words=False))
            for form in spoken(zone):
                self._zone_words.setdefault(form, set()).add(zone)
        return True

    def _device(self, device: str) -> bool:
        """A device id: the identity the operator issued (the broker or the API authenticated it)."""
        self.devices.add(device)
        self._quoted_devices.setdefault(key_of(device), set()).add(device)
        if not is_question_word(device):
            self._said.update(spoken(device, other_words=False))
            for form in spoken(device):
                self._device_words.setdefault(form, set()).add(device)
        return True

    def _label(self, label: str) -> bool:
        if label in LABEL_WORDS or not self._room():
            return False
        self.labels.add(label)
        self._quoted_labels.setdefault(key_of(label), label)
        return True

    def spoken_names(self) -> frozenset[str]:
        """The operator's camera, zone and device names as they are said ("back door", "rear door"): the
        words the speech recogniser is told to expect (cloud.ask.voice)."""
        with self._lock:
            return frozenset(self._said)

    # -- reading a question ----------------------------------------------------------------------------
    def cameras_in(self, text: str) -> frozenset[tuple[str, str]]:
        """The operator's cameras a normalised question names; one written as one word may be typed as two
        ("drive way")."""
        return frozenset(self.names_in(text)[0])

    def names_in(self, text: str) -> tuple[set[tuple[str, str]], set[str]]:
        """The operator's cameras a normalised question names, exactly or by a near spelling ("back dor",
        "porsh"), and the words of the question that named them."""
        found: set[tuple[str, str]] = set()
        said: set[str] = set()
        with self._lock:
            for gram, joined in _grams(text):
                hit = self._camera_words.get(gram, set())
                if joined is not None and len(joined) >= 6:
                    hit = hit | self._camera_words.get(joined, set())
                if hit:
                    found |= hit
                    said.add(gram)
            words = set(" ".join(said).split())
            for gram, _ in _grams(text, 3):
                if set(gram.split()) & words or all(w in NOT_NAMES for w in gram.split()):
                    continue
                for form, pairs in self._camera_words.items():
                    if near(gram, form):
                        found |= pairs
                        said.add(gram)
        return found, said

    def zone_names_in(self, text: str) -> tuple[set[str], set[str]]:
        """The operator's zones a normalised question names, exactly or by a near spelling, and its words."""
        found: set[str] = set()
        said: set[str] = set()
        with self._lock:
            for gram, _ in _grams(text):
                if gram not in self._camera_forms and gram in self._zone_words:
                    found |= self._zone_words[gram]
                    said.add(gram)
            words = set(" ".join(said).split())
            for gram, _ in _grams(text, 3):
                if set(gram.split()) & words or all(w in NOT_NAMES for w in gram.split()):
                    continue
                for form, zones in self._zone_words.items():
                    if form not in self._camera_forms and near(gram, form):
                        found |= zones
                        said.add(gram)
        return found, said

    def zones_in(self, text: str) -> frozenset[str]:
        """The operator's zones a normalised question names; a zone spelt like a camera is read as the camera."""
        return frozenset(self.zone_names_in(text)[0])

    def devices_in(self, text: str) -> frozenset[str]:
        found: set[str] = set()
        with self._lock:
            for gram, _ in _grams(text):
                found |= self._device_words.get(gram, set())
        return frozenset(found)

    def unquoted_in(self, text: str) -> tuple[str, ...]:
        """Names only a device sent that a normalised question writes as plain words: read as no name, so the
        answer says how to ask about them (in quotes)."""
        with self._lock:
            return tuple(sorted({gram for gram, _ in _grams(text)
                                 if (gram in self._quoted_cameras or gram in self._quoted_zones)
                                 and gram not in self._camera_words and gram not in self._zone_words
                                 and not is_question_word(gram)}))

    def label_in(self, text: str) -> str | None:
        """The label a normalised question asks about, from the fixed words ("people", "bikes"): the one said
        first ("did anyone look into the car?" is about people; the reading names "car"); a label a device
        sent is matched only quoted."""
        return label_said_first(text)

    def quoted(self, names: Iterable[str], devices: set[str] | None = None) -> Quoted:
        """What the quoted names name, among the cameras and zones of `devices` (None: all); a camera wins
        over a zone, a zone over a device, a device over a label."""
        cameras: set[tuple[str, str]] = set()
        zones: set[str] = set()
        found_devices: set[str] = set()
        label = None
        unknown = []
        with self._lock:
            for name in names:
                pairs = {p for p in self._quoted_cameras.get(name, ()) if devices is None or p[0] in devices}
                device_hits = {d for d in self._quoted_devices.get(name, ()) if devices is None or d in devices}
                zone_hits = {z for d, z in self._quoted_zones.get(name, ()) if devices is None or d in devices
                             or d is None}
                if pairs:
                    cameras |= pairs
                elif zone_hits:
                    zones |= zone_hits
                elif device_hits:
                    found_devices |= device_hits
                elif name in self._quoted_labels or name in LABEL_WORDS:
                    label = self._quoted_labels.get(name, name)
                else:
                    unknown.append(name)
        return Quoted(frozenset(cameras), frozenset(zones), frozenset(found_devices), label, tuple(unknown))

    def cameras_named(self, camera: str, devices: set[str] | None = None) -> set[tuple[str, str]]:
        """The known (device, camera) pairs with this camera id."""
        with self._lock:
            return {p for p in self._quoted_cameras.get(key_of(camera), ())
                    if p[1] == camera and (devices is None or p[0] in devices)}

    def all_devices(self) -> set[str]:
        with self._lock:
            return set(self.devices)


def _grams(text: str, longest: int = MAX_NAME_WORDS):
    """Every run of up to `longest` words of a normalised question, with its words run together."""
    words = text.split()
    for i in range(len(words)):
        for n in range(1, min(longest, len(words) - i) + 1):
            part = words[i:i + n]
            yield " ".join(part), ("".join(part) if n > 1 else None)
