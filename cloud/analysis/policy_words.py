"""The operator's words compiled into a Policy (policy.py) by a grammar (policy_grammar.py, lark's Earley
parser): a sentence compiles only when every word is consumed by a rule of the grammar that gives it its
meaning; otherwise it is NOT COMPILED and stays in its place as a clause that sends to the model every event
reaching it. Where the grammar reads a sentence two ways that mean different things, it is NOT COMPILED too.
A policy that cannot mean anything is refused as a whole (PolicyRefused, one line naming the words): an
impossible time ("25:00"), a clause that can never hold, two sentences that both apply with different
verdicts where the words do not say which wins (policy_check.py).

The meanings (the conventions the documentation states, docs/operator/policies.md):
    times       07:00-19:00 includes 07:00, excludes 19:00; "between 9 and 5" (bare hours, the first larger)
                is 09:00-17:00; "after 9pm" runs to 06:00, "after 7am" to midnight, "before 7am" from midnight;
                morning 06-12, afternoon 12-18, evening 18-22, night 22-06, daytime 06-22
    days        weekdays Mon-Fri, the weekend Sat and Sun; a named night is the night it starts on ("Friday
                night": Fri 22:00 - Sat 06:00); other hours past midnight with days are not compiled
    dwell       "longer than / more than / over 30 s": > 30; "at least": >= 30; "less than / under": < 30
    count       "more than two people": > 2; "two or more people": >= 2; "alone": <= 1
    except      "X except/unless/but not/other than Y": Y first with the other verdict, then X
    only        "alert only if X": X alert, otherwise benign; "only X may be in Z": X in Z benign, then Z alert
    otherwise   said ("otherwise ...", "anything else is ..."), or the model is asked, and the form says so
    said once   hours said of someone with no verdict are what a later "those hours" names; a role's look said
                once ("our staff wear green tops") tells the role apart later; either unused is not compiled
Miscompiles are also caught on the compiled form as a class (policy_sound.py): two verdicts for one case that
the words do not order, two places in one clause, a clause that never decides, a rule said twice, two places
that may overlap (the alert wins, said in the form).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .policy import Clause, Cond, Policy
from .policy_check import PolicyRefused, check_policy
from .policy_filler import ALSO, bare_no, fillers
from .policy_lexicon import asides, impossible_time, normalise, sentence_breaks
from .policy_reading import Flag, Piece, Sent, _nights
from .policy_sound import check_reached, overlaps, two_places, unordered
from .policy_tree import _read, keywords, role_key, role_words

_APPEARANCE = ("hivis", "upper", "lower", "carries")


@dataclass
class _Build:
    text: str
    zones: tuple[str, ...]
    place: str | None
    hours: dict[str, Cond] = field(default_factory=dict)  # "opening" (the opening hours), "quiet" ...: when
    last_when: Cond | None = None  # the times of the last clause that named any: "those hours"
    clauses: list[Clause] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    uncompiled: list[str] = field(default_factory=list)
    otherwise: list[tuple[str, str]] = field(default_factory=list)
    joined: set[int] = field(default_factory=set)  # sentences a ';' joins to the one before
    moot: list[tuple[str, str, int]] = field(default_factory=list)  # ("hivis", sentence, group): "... doesn't matter"
    said: list[tuple[str, int, Cond]] = field(default_factory=list)  # hours said of someone, not yet used
    roles: dict[str, tuple[Cond, str, int]] = field(default_factory=dict)  # "staff": (their look, sentence, group)
    looked: set[str] = field(default_factory=set)  # the roles later words named

def compile_policy(text: str, zones: tuple[str, ...] = (), camera: str | None = None) -> Policy:
    """The policy these words say; `zones`: the zone names configured for the camera (read as zones wherever
    they stand); `camera`: its name ("in the shop" on camera shop is the camera itself). Raises PolicyRefused
    where the words cannot mean anything."""
    from ...shared.policycell import zone_word

    build = _Build(text, zones, zone_word(camera) if camera else None)
    wrong = impossible_time(text)
    if wrong:
        raise PolicyRefused(f"impossible time “{wrong}”")
    read: list[tuple[str, tuple[Sent, ...] | str]] = []
    notes: list[tuple[str, ...]] = []
    cleaned: list[str] = []  # each read sentence's words as the grammar read them
    breaks = sentence_breaks(text)
    for (sentence, joined), (said, no) in zip(breaks, bare_no([s for s, _ in breaks]), strict=True):
        if joined:
            build.joined.add(len(read))
        clean, aside = asides(said, keywords(), role_words(), zones)
        clean, filler = fillers(clean, zones)
        notes.append((*(f"{a}: an aside, no rule" for a in aside), *filler, *no))
        try:
            read.append((sentence, _read(normalise(clean), zones, camera)))
            cleaned.append(clean)
        except Flag as exc:
            if _join_exception(clean, read, cleaned, notes, zones, camera):
                continue
            read.append((sentence, _also(clean, filler, read, zones, camera, notes) or str(exc)))
            cleaned.append(clean)
    _unread_exceptions(read)
    for _, sents in read:  # opening hours first: "after closing" may come before "we are open 9 to 5"
        for sent in sents if isinstance(sents, tuple) else ():
            if sent.window is not None:
                build.hours[sent.verdict] = sent.window
    for group, (sentence, sents) in enumerate(read):
        if isinstance(sents, str):
            _flag(build, sentence, sents, group)
            continue
        start = len(build.clauses)
        try:
            made: list[tuple[list[Clause], bool]] = []  # each part's clauses; ordered by the words?
            for sent in sents:
                old = build.clauses[start:]
                _rules(build, sent, sentence, group)
                now = list(enumerate(build.clauses[start:], start))
                last = max((i for i, c in now if any(c is o for o in old)), default=-1)
                new = [(i, c) for i, c in now if not any(c is o for o in old) and build.groups[i] != -1]
                made.append(([c for _, c in new], any(i < last for i, _ in new)))  # "them" narrowed: before
            why = unordered(made) or two_places(build.clauses[start:])
            if why:
                raise Flag(why)
            build.clauses[start:] = [Clause(c.verdict, c.conds, c.source, c.used + notes[group])
                                     for c in build.clauses[start:]]
        except Flag as exc:
            del build.clauses[start:], build.groups[start:]
            _flag(build, sentence, str(exc), group)
    for role, (_, sentence, group) in build.roles.items():
        if role not in build.looked:
            _flag(build, sentence, "a look said of a role, and no later words name the role", group)
    for sentence, group, _ in build.said:  # "the cleaners are here 6 to 9" and nothing said of those hours
        _flag(build, sentence, "hours said, and no later words say what happens in them (“during those hours”)", group)
    _moot(build)
    said = {v for v, _ in build.otherwise}
    if len(said) > 1:
        raise PolicyRefused(f"the words give two otherwises: {' / '.join(f'“{w}”' for _, w in build.otherwise)}")
    otherwise = said.pop() if said else "model"
    policy = Policy(text, tuple(build.clauses), otherwise, tuple(build.uncompiled), bool(build.otherwise))
    check_policy(policy, build.groups)
    notes = check_reached(policy.clauses)  # a rule said twice: flagged with what was not compiled
    clauses = overlaps(policy.clauses, build.groups)
    return Policy(text, tuple(clauses), otherwise, (*build.uncompiled, *notes), policy.otherwise_said)


def _circumstances(sents: tuple[Sent, ...]) -> set[str]:
    """Which of where and when the sentence's clauses say."""
    out: set[str] = set()
    for p in (p for s in sents for p in (*s.pre, *s.post)):
        if p.kind in ("zone", "there") or (p.kind == "cond" and p.value.kind in ("zone", "place")):
            out.add("where")
        if p.kind in ("opening", "those", "opening_def") or (p.kind == "cond" and _when(p.value)) or (
                p.kind == "none" and {"time", "times", "always", "anytime", "night"} & set(p.words.split())):
            out.add("when")
    return out


def _also(clean: str, filler: tuple[str, ...], read: list, zones: tuple[str, ...], camera: str | None,
          notes: list) -> tuple[Sent, ...] | None:
    """ "Also X." with no verdict of its own, after a sentence with one: X gets that verdict ("Alert on anyone
    with a knife on the landing. Also anybody on the landing at night."), only where X says again each of
    where and when the sentence before said (else: its place and hours too, or not? not compiled)."""
    if not any(f.endswith(ALSO) for f in filler) or not read or isinstance(read[-1][1], str):
        return None
    before = read[-1][1]
    verdicts = {s.verdict for s in before}
    if any(s.kind not in ("lead", "copular") or s.exc is not None or s.only for s in before) or not (
            verdicts == {"alert"} or verdicts == {"benign"}):
        return None
    verdict = verdicts.pop()
    try:
        sents = _read(normalise(f"{clean} - {'alert' if verdict == 'alert' else 'fine'}"), zones, camera)
    except Flag:
        return None
    if not _circumstances(before) <= _circumstances(sents):
        return None
    notes[-1] = (*notes[-1], f"“also”: the verdict of the sentence before ({verdict})")
    return sents


_JOIN = re.compile(r"^(not\s+if|not\s+when|unless|except\s+if|except\s+when|except\s+for|except|but\s+not|"
                   r"apart\s+from|other\s+than|not)\b[\s,]*", re.IGNORECASE)
_RESTATED = re.compile(r"[\s,-]*(?:then\s+)?(?:(?:it|that|they)(?:'s|'re|\s+is|\s+are)\s+(?:fine|ok|okay)"
                       r"|(?:never|don't|do\s+not)\s+alert\s+(?:on|for|about)\s+(?:them|those|him|her))\s*$",
                       re.IGNORECASE)


def _join_exception(clean: str, read: list, cleaned: list[str], notes: list, zones: tuple[str, ...],
                    camera: str | None) -> bool:
    """ "A - alert. Not if B." / "A. Unless B, then it's fine.": a sentence that opens with an exception word
    and reads as nothing on its own is the exception of the sentence before, read as one sentence ("A - alert,
    unless B"), where that one was read and has no exception of its own, and where the words say the
    exception's verdict: "not" (not that verdict: the other one), or the verdict said again after it ("then
    it's fine", "never alert on them"), which must be the other one. "Except B." alone (the other verdict
    there, or only no alert?) is not joined."""
    m = _JOIN.match(clean)
    if not m or not read or isinstance(read[-1][1], str) or len(read[-1][1]) != 1:
        return False
    before = read[-1][1][0]
    if before.kind not in ("lead", "copular") or before.exc is not None or before.only or before.verdict not in (
            "alert", "benign"):
        return False
    rest, said = clean[m.end():], ()
    again = _RESTATED.search(rest)
    if again:
        if before.verdict != "alert":  # "fine" / "never alert" said again: the exception of an alert only
            return False
        rest, said = rest[:again.start()], (f"“{again.group(0).strip(' ,-')}”: the exception's verdict, said again",)
    word = " ".join(m.group(1).lower().split())
    if not (word.startswith("not") or said):  # "Except B." alone: the other verdict there, or no verdict?
        return False
    joiner = "unless" if word.startswith("not ") else "except" if word == "not" else word
    try:
        sents = _read(normalise(f"{cleaned[-1]}, {joiner} {rest}"), zones, camera)
    except (Flag, PolicyRefused):
        return False
    if len(sents) != 1 or sents[0].exc is None:
        return False
    sentence = read[-1][0]
    read[-1] = (f"{sentence}. {clean}", sents)
    cleaned[-1] = f"{cleaned[-1]}, {joiner} {rest}"
    notes[-2:] = [(*notes[-2], *notes[-1], *said, f"“{m.group(0).strip(' ,')}”: the exception of the sentence before")]
    return True


_EXCEPTION_OPENERS = frozenset(("except", "unless", "but", "apart", "not", "excluding", "besides", "save", "however",
                                "though", "although", "only"))


def _unread_exceptions(read: list) -> None:
    """A sentence not compiled that opens with an exception word ("Except someone heading out ...", "Not the
    guards though") changes the sentence before it in words no rule read: that one is not compiled either."""
    for i in range(len(read) - 1, 0, -1):
        first = (normalise(read[i][0]).split() or [""])[0]
        if isinstance(read[i][1], str) and first in _EXCEPTION_OPENERS and not isinstance(read[i - 1][1], str):
            read[i - 1] = (read[i - 1][0], f"the next sentence, “{read[i][0]}”, changes it and is not compiled")


def _flag(build: _Build, sentence: str, why: str, group: int) -> None:
    build.uncompiled.append(sentence)
    build.clauses.append(Clause("model", (Cond("words", sentence),), sentence, (f"not compiled: {why}",)))
    build.groups.append(group)

def _rules(build: _Build, sent: Sent, sentence: str, group: int) -> None:
    """The clauses one sentence says, in the order the words rank them."""
    said, sent = _said_before(build, sent, group)
    # a clause about the same who as the one before it in the sentence narrows it: it comes first ("alert on
    # cars in the yard, but at night ignore them": at night, the cars are ignored)
    at = [len(build.clauses) - 1] if said and build.groups[-1] == group else []

    def add(verdict: str, pieces: tuple[Piece, ...], g: int = group) -> None:
        conds, used = _conds(build, pieces)
        conds = tuple(dict.fromkeys(said + conds))
        i = at[0] if at else len(build.clauses)
        build.clauses.insert(i, Clause(verdict, conds, sentence, used))
        build.groups.insert(i, g)
        if at:
            at[0] += 1
        when = [c for c in conds if _when(c)]
        if when:
            build.last_when = when[0] if len(when) == 1 else Cond("all", tuple(when))

    other = {"alert": "benign", "benign": "alert"}
    if sent.kind == "defn":
        build.last_when = sent.window
        if sent.verdict == "said":
            build.said.append((sentence, group, sent.window))  # type: ignore[arg-type]
        return
    if sent.kind == "note":
        return
    if sent.kind == "role":  # "our staff wear green tops": what later words call staff
        build.roles[sent.verdict] = (sent.pre[0].value, sentence, group)  # type: ignore[assignment]
        return
    if sent.kind == "nothing_else":  # "Nothing else." after alerts: nothing else is an alert
        if not build.clauses or any(c.verdict != "alert" for c in build.clauses):
            raise Flag("“nothing else”: nothing else is what? (say “everything else is fine”)")
        build.otherwise.append(("benign", sentence))
        return
    if sent.kind == "moot":
        build.moot.append((sent.verdict, sentence, group))
        return
    if sent.verdict == "model" and (sent.exc is not None or sent.only):
        raise Flag("an exception to “leave it to the model”: say the verdict the exception gets")
    if sent.kind == "otherwise":
        build.otherwise.append((sent.verdict, sentence))
        return
    main = sent.pre + sent.post
    if sent.kind == "else":
        if not [p for p in main if p.kind != "none"]:
            build.otherwise.append((sent.verdict, sentence))
            return
        add(sent.verdict, main, -1)  # "anyone else there": after every clause before it, by the words
        return
    if sent.exc is not None:
        add(other[sent.verdict], main + sent.exc)
    if sent.only == "within":  # the other verdict within the conditions said first, not everywhere
        add(sent.verdict, main)
        add(other[sent.verdict], sent.pre)
        return
    if sent.only == "pre":
        add(sent.verdict, main)
        add(other[sent.verdict], sent.post)
        return
    if sent.only == "post":
        add(sent.verdict, main)
        add(other[sent.verdict], sent.pre)
        return
    add(sent.verdict, main)
    if sent.only == "all":
        build.otherwise.append((other[sent.verdict], sentence))


_PRONOUNS = ("they", "them", "those", "he or she")


def _said_before(build: _Build, sent: Sent, group: int) -> tuple[tuple[Cond, ...], Sent]:
    """Who and where a clause of times alone, or one whose subject is "they"/"them", is about when it follows
    another in the same sentence: "people in the run are fine by day; at night, tell me" (the people in the run
    at night, not anything at night); "alert on cars in the yard, but at night ignore them" (the cars). The
    clause, its pronoun taken out. "Them" in a sentence of its own, after others: who? (not compiled)."""
    pieces = sent.pre + sent.post
    same = build.groups and (build.groups[-1] == group or (group in build.joined and build.groups[-1] == group - 1))
    pronoun = [p for p in pieces if p.kind == "person" and p.words in _PRONOUNS]
    subjects = [p for p in pieces if p.kind in ("person", "label", "role", "count") and p not in pronoun]
    if sent.kind not in ("lead", "copular") or not pieces:
        return (), sent
    if pronoun and not subjects:
        # what the clause says of "them" that the clause before said otherwise ("without hi-vis ...; with hi-vis
        # they're fine"): the new words replace the old on that fact, and "they" are the same people
        said = {_fact(p.value) for p in pieces if p.kind == "cond"} | {"people" for p in pieces if p.kind == "count"}
        before = build.clauses[-1].conds if build.clauses else ()
        stated = [p.value for p in pieces if p.kind == "cond" and not _when(p.value)]  # a time: as before
        contrast = bool(build.clauses) and build.clauses[-1].compiled and any(
            _fact(c) in {_fact(b) for b in before} and c not in before for c in stated)  # the other side of it
        if not same and not contrast:
            if build.clauses:
                raise Flag(f"“{pronoun[0].words}”: who? (say who again)")
            return (), sent
        keep = lambda ps: tuple(p for p in ps if p not in pronoun)  # noqa: E731
        sent = Sent(sent.kind, sent.verdict, keep(sent.pre), keep(sent.post), sent.exc, sent.only, sent.window)
        placed = any(p.kind in ("zone", "there") for p in pieces)
        timed = any(p.kind == "cond" and _when(p.value) for p in pieces)  # a time of its own: theirs replaced
        return tuple(c for c in before if not (_when(c) and (timed or not contrast)) and _fact(c) not in said
                     and not (placed and c.kind in ("zone", "place", "any"))), sent
    if not same or subjects or any(
            p.kind not in ("opening", "those", "opening_def") and not (p.kind == "cond" and _when(p.value))
            for p in pieces):
        return (), sent
    return tuple(c for c in build.clauses[-1].conds if not _when(c)), sent


_MOOT = {"hivis": ("hivis",), "time": ("time", "weekday"), "direction": ("direction",)}


def _moot(build: _Build) -> None:
    """ "Hi-vis doesn't matter" says no rule reads hi-vis: true, or the sentence is not compiled (a rule that
    reads it is the words disagreeing with themselves)."""
    for fact, sentence, group in build.moot:
        kinds = _MOOT[fact]
        read = [c for c in build.clauses if c.compiled and any(
            d.kind in kinds for d in Policy("", (c,), "model").conds())]
        if read:
            _flag(build, sentence, f"a rule reads it: “{read[0].source}”", group)


def _conds(build: _Build, pieces: tuple[Piece, ...]) -> tuple[tuple[Cond, ...], tuple[str, ...]]:
    conds: list[Cond] = []
    used: list[str] = []
    kinds = {p.kind for p in pieces}
    # "they" in an exception is the subject said before it: "cars ... unless they stay" are cars, not people
    # (a subject of people makes them people by itself)
    labelled = any(q.kind == "label" for q in pieces)
    for p in pieces:
        if p.kind in ("person", "count", "role") and Cond("label", ("person",)) not in conds and not (
                labelled and p.kind == "person" and p.words in _PRONOUNS):
            conds.insert(0, Cond("label", ("person",)))
        if p.kind == "label":
            conds.insert(0, Cond("label", p.value))
        elif p.kind == "count":  # one comparison, or a range of two ("more than two and fewer than five")
            conds.extend(Cond("people", v) for v in (p.value if isinstance(p.value[0], tuple) else (p.value,)))
        elif p.kind in ("cond", "zone"):
            conds.append(_placed(p.value, build.place, build.zones))
        elif p.kind == "there" and any(q.kind in ("cond", "zone") and q.value.kind in ("zone", "place")
                                       and not q.value.negated for q in pieces):
            pass  # "... for the kitchen unless there's a person in there": the place this clause names
        elif p.kind == "there":
            places = [c for c in build.clauses[-1].conds if c.kind in ("zone", "place") or (
                c.kind == "any" and all(d.kind == "zone" for d in c.value))] if build.clauses else []
            if not places:
                raise Flag("“there”: no place named before it")
            conds.extend(places)
        elif p.kind == "opening":
            closed, name = p.value  # type: ignore[misc]
            if name not in build.hours:
                raise Flag(f"“{p.words}”: the words name no {'opening' if name == 'opening' else name} hours")
            hours = build.hours[name]
            conds.append(Cond(hours.kind, hours.value, closed))
        elif p.kind == "opening_def":
            name, hours, negated = p.value  # type: ignore[misc]
            build.hours[name] = hours
            conds.append(Cond(hours.kind, hours.value, negated))
        elif p.kind == "dwell_that":  # "for less than that": the time the clause before named
            said = [c for clause in build.clauses for c in clause.conds if c.kind == "dwell" and not c.negated]
            if not said:
                raise Flag(f"“{p.words}”: no time named before it")
            conds.append(Cond("dwell", (p.value, said[-1].value[1])))  # type: ignore[index]
        elif p.kind == "those":
            if build.last_when is None:
                raise Flag(f"“{p.words}”: no hours named before it")
            conds.append(Cond(build.last_when.kind, build.last_when.value, bool(p.value)))
            build.said = [s for s in build.said if s[2] is not build.last_when]
        elif p.kind == "dwell_verb" and not any(q.kind == "cond" and q.value.kind == "dwell" for q in pieces):
            raise Flag(f"“{p.words}” for how long? (say a time: longer than 2 minutes)")
        used.append(p.words)
    for p in (p for p in pieces if p.kind == "role" and role_key(p.words) in build.roles):
        build.looked.add(role_key(p.words))  # who they are: the look said of them
        conds.append(build.roles[role_key(p.words)][0])
    if "role" in kinds and not any(c.kind in _APPEARANCE for c in conds):
        role = next(p.words for p in pieces if p.kind == "role")
        raise Flag(f"who “{role}” are: only the picture could tell")
    return _nights(tuple(dict.fromkeys(conds))), tuple(w for w in used if w)


def _fact(cond: Cond) -> str | None:
    """The fact a condition reads ("hivis", "dwell", "people", "upper"...): one kind, or None for a mix."""
    if cond.kind in ("any", "all"):
        kinds = {_fact(c) for c in cond.value}  # type: ignore[union-attr]
        return kinds.pop() if len(kinds) == 1 else None
    return cond.kind


def _when(cond: Cond) -> bool:
    return cond.kind in ("time", "weekday") or (cond.kind in ("any", "all") and all(_when(c) for c in cond.value))


def _placed(cond: Cond, place: str | None, zones: tuple[str, ...]) -> Cond:
    """The camera itself named as a place ("in the shop" on camera shop, which has no zone "shop"): always
    true there."""
    from ...shared.policycell import zone_word

    if cond.kind == "zone" and place and cond.value == place and place not in {zone_word(z) for z in zones}:
        near = [z for z in zones if set(zone_word(z).split()) & set(place.split())]
        if near:  # "in the back garden" on camera back garden with a zone "garden": the camera, or the zone?
            raise Flag(f"“the {place}”: this camera, or its zone “{near[0]}”?")
        if cond.negated:
            raise Flag(f"“not in the {place}”: this camera is the {place}")
        return Cond("place", place)
    return cond



__all__ = ["Flag", "PolicyRefused", "compile_policy"]
