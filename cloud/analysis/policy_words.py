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
    days        weekdays Mon-Fri, the weekend Sat and Sun; a day named with a window that wraps midnight is
                the day the window starts on ("Friday night": Fri 22:00 - Sat 06:00)
    dwell       "longer than / more than / over 30 s": > 30; "at least": >= 30; "less than / under": < 30
    count       "more than two people": > 2; "two or more people": >= 2; "alone": <= 1
    except      "X except/unless/but not/other than Y": Y first with the other verdict, then X
    only        "alert only if X": X alert, otherwise benign; "only X may be in Z": X in Z benign, then Z alert
    otherwise   said ("otherwise ...", "anything else is ..."), or the model is asked, and the form says so
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput
from lark.lexer import Lexer

from .policy import DAYTIME, NIGHT, Clause, Cond, Policy, in_window
from .policy_check import PolicyRefused, check_policy
from .policy_grammar import GRAMMAR
from .policy_lexicon import LABELS, Tok, normalise, sentences, tokens

_PARTS = {"morning": (360, 720), "afternoon": (720, 1080), "evening": (1080, 1320), "night": NIGHT,
          "daytime": DAYTIME}
_OPS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "="}
_APPEARANCE = ("hivis", "upper", "lower", "carries")
_MAX_READINGS = 256


class _Lexer(Lexer):
    """The tokens were typed before parsing (policy_lexicon.tokens): hand them to the parser as they are."""

    def __init__(self, conf: object) -> None:
        pass

    def lex(self, data: list[Tok]) -> Iterable[Token]:  # type: ignore[override]
        for i, tok in enumerate(data):
            yield Token(tok.type, tok, start_pos=i)


@functools.lru_cache(maxsize=1)
def _parser() -> tuple[Lark, dict[str, str]]:
    parser = Lark(GRAMMAR, parser="earley", lexer=_Lexer, ambiguity="explicit", keep_all_tokens=True)
    keywords = {t.pattern.value: t.name for t in parser.terminals if t.pattern.type == "str"}
    return parser, keywords


class Flag(Exception):  # noqa: N818 - a sentence not compiled, and why
    pass


@dataclass(frozen=True)
class Piece:
    kind: str  # cond person label role only there dwell_verb opening none
    value: object = None
    words: str = ""
    night_of: bool = False  # "Friday or Saturday night": a day part after a list of days


@dataclass(frozen=True)
class Sent:
    kind: str  # lead copular nobody else otherwise defn
    verdict: str = ""
    pre: tuple[Piece, ...] = ()
    post: tuple[Piece, ...] = ()
    exc: tuple[Piece, ...] | None = None
    only: str = ""  # "" | "all" (alert only if) | "pre" (only <subject> may be) | "post" (are only allowed in)
    window: tuple[int, int] | None = None


@dataclass
class _Build:
    text: str
    zones: tuple[str, ...]
    place: str | None
    opening: tuple[int, int] | None = None
    clauses: list[Clause] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    uncompiled: list[str] = field(default_factory=list)
    otherwise: list[tuple[str, str]] = field(default_factory=list)


def compile_policy(text: str, zones: tuple[str, ...] = (), camera: str | None = None) -> Policy:
    """The policy these words say; `zones`: the zone names configured for the camera (read as zones wherever
    they stand); `camera`: its name ("in the shop" on camera shop is the camera itself). Raises PolicyRefused
    where the words cannot mean anything."""
    from ...shared.policycell import zone_word

    build = _Build(text, zones, zone_word(camera) if camera else None)
    read: list[tuple[str, tuple[Sent, ...] | str]] = []
    for sentence in sentences(text):
        try:
            read.append((sentence, _read(normalise(sentence), zones, camera)))
        except Flag as exc:
            read.append((sentence, str(exc)))
    for _, sents in read:  # opening hours first: "after closing" may come before "we are open 9 to 5"
        for sent in sents if isinstance(sents, tuple) else ():
            if sent.window is not None:
                build.opening = sent.window
    for group, (sentence, sents) in enumerate(read):
        if isinstance(sents, str):
            _flag(build, sentence, sents, group)
            continue
        start = len(build.clauses)
        try:
            for sent in sents:
                _rules(build, sent, sentence, group)
        except Flag as exc:
            del build.clauses[start:], build.groups[start:]
            _flag(build, sentence, str(exc), group)
    said = {v for v, _ in build.otherwise}
    if len(said) > 1:
        raise PolicyRefused(f"the words give two otherwises: {' / '.join(f'“{w}”' for _, w in build.otherwise)}")
    otherwise = said.pop() if said else "model"
    policy = Policy(text, tuple(build.clauses), otherwise, tuple(build.uncompiled), bool(build.otherwise))
    check_policy(policy, build.groups)
    return policy


def _flag(build: _Build, sentence: str, why: str, group: int) -> None:
    build.uncompiled.append(sentence)
    build.clauses.append(Clause("model", (Cond("words", sentence),), sentence, (f"not compiled: {why}",)))
    build.groups.append(group)


def _read(sentence: str, zones: tuple[str, ...], camera: str | None = None) -> tuple[Sent, ...]:
    """The sentence's one meaning, or Flag: a word no rule reads, or two readings that differ (remembered:
    Earley parsing takes a fraction of a second, and a config compiles the same sentences again)."""
    kind, value = _read_once(sentence, zones, camera)
    if kind == "flag":
        raise Flag(value)
    if kind == "refuse":
        raise PolicyRefused(value)
    return value  # type: ignore[return-value]


@functools.lru_cache(maxsize=1024)
def _read_once(sentence: str, zones: tuple[str, ...], camera: str | None) -> tuple[str, object]:
    try:
        return "ok", _parse(sentence, zones, camera)
    except Flag as exc:
        return "flag", str(exc)
    except PolicyRefused as exc:
        return "refuse", str(exc)


def _parse(sentence: str, zones: tuple[str, ...], camera: str | None) -> tuple[Sent, ...]:
    parser, keywords = _parser()
    toks = tokens(sentence, keywords, zones, camera)
    try:
        tree = parser.parse(toks)  # type: ignore[arg-type]
    except UnexpectedInput as exc:
        at = getattr(exc, "token", None)
        word = at.value.word if isinstance(at, Token) and isinstance(at.value, Tok) else None
        raise Flag(f"no rule reads “{word}” here" if word else "the sentence ends before its meaning does") from None
    meanings: dict = {}
    failures: list[str] = []
    for value in _values(tree):
        if isinstance(value, _Fail):
            failures.append(value.why)
        else:
            meanings.setdefault(_meaning(value), value)
    if not meanings:
        if any(f.startswith("!") for f in failures):
            raise PolicyRefused(next(f[1:] for f in failures if f.startswith("!")))
        raise Flag(failures[0] if failures else "no reading")
    if len(meanings) > 1:
        raise Flag("the words read two ways that mean different things")
    return next(iter(meanings.values()))


def _meaning(sents: tuple[Sent, ...]) -> tuple:
    """A reading without the words it was read from: two readings that differ only in which rule took a
    filler word ("on" as a link or as "on Friday") mean the same."""
    def bare(pieces: tuple[Piece, ...] | None) -> tuple | None:
        return None if pieces is None else tuple((p.kind, p.value) for p in pieces if p.kind != "only")

    def exc(s: Sent) -> tuple | None:  # "unless they are ...": "they" are the person the clause is about
        pieces = s.exc
        if pieces is not None and any(p.kind == "person" for p in s.pre + s.post):
            pieces = tuple(p for p in pieces if p.kind != "person")
        return bare(pieces)

    return tuple((s.kind, s.verdict, bare(s.pre), bare(s.post), exc(s), s.only, s.window) for s in sents)


@dataclass(frozen=True)
class _Fail:
    why: str


def _values(node: object) -> list:
    """Every meaning of a node (an ambiguous node has several), each distinct once; a reading that cannot
    mean anything is a _Fail ("!" first: a refusal, such as an impossible time)."""
    if isinstance(node, Token):
        return [node.value]
    assert isinstance(node, Tree)
    if node.data == "_ambig":
        out: list = []
        for child in node.children:
            out.extend(v for v in _values(child) if v not in out)
        return out[:_MAX_READINGS]
    options = [_values(c) for c in node.children]
    out = []
    for combo in itertools.islice(itertools.product(*options), _MAX_READINGS):
        fail = next((c for c in combo if isinstance(c, _Fail)), None)
        if fail is not None:
            value: object = fail
        else:
            try:
                value = _node(str(node.data), list(combo))
            except Flag as exc:
                value = _Fail(str(exc))
            except PolicyRefused as exc:
                value = _Fail("!" + str(exc))
            except (StopIteration, LookupError, TypeError, AttributeError, ValueError) as exc:
                value = _Fail(f"no reading of “{_words(list(combo))}” ({type(exc).__name__})")
        if value not in out:
            out.append(value)
    return out


def _words(values: list) -> str:
    out: list[str] = []
    for v in values:
        if isinstance(v, Tok):
            out.append(v.word)
        elif isinstance(v, Piece):
            out.append(v.words)
        elif isinstance(v, tuple) and v and all(isinstance(p, Piece) for p in v):
            out.extend(p.words for p in v)
        elif isinstance(v, _Words):
            out.append(v.words)
    return " ".join(w for w in out if w)


@dataclass(frozen=True)
class _Words:
    """A value with the words it was read from: a clock time, a window, a verdict mark..."""

    kind: str
    value: object
    words: str


def _find(values: list, kind: str) -> object:
    return next((v.value for v in values if isinstance(v, _Words) and v.kind == kind), None)


def _toks(values: list, type_: str) -> list:
    return [v.value for v in values if isinstance(v, Tok) and v.type == type_]


def _node(name: str, ch: list) -> object:  # noqa: C901, PLR0911, PLR0912 - one reading per rule of the grammar
    words = _words(ch)
    pieces = tuple(p for c in ch for p in (c if isinstance(c, tuple) else (c,)) if isinstance(p, Piece))
    if name == "start":
        return tuple(s for c in ch for s in (c if isinstance(c, tuple) else (c,)) if isinstance(s, Sent))
    if name in ("alert_lead", "benign_lead"):
        at = next(i for i, c in enumerate(ch) if isinstance(c, _Words) and c.kind == "head")
        exc = next((c for c in ch if isinstance(c, _Words) and c.kind == "exc"), None)
        body = tuple(p for c in ch[:at] + ch[at + 1:] if isinstance(c, tuple) for p in c)
        if not body:
            raise Flag("a verdict with no conditions: say when (or write it as “otherwise ...”)")
        only = "all" if (ch[at].value or any(p.kind == "only" for p in body)) else ""
        return Sent("lead", name.split("_")[0], body, (), exc.value if exc else None, only)
    if name in ("alert_head", "benign_head"):
        return _Words("head", any(isinstance(p, Piece) and p.kind == "only" for p in ch), words)
    if name in ("alert_after", "benign_after"):
        pred = next(i for i, c in enumerate(ch) if isinstance(c, _Words) and c.kind == "pred")
        pre = tuple(p for c in ch[:pred] if isinstance(c, tuple) for p in c)
        post = tuple(p for c in ch[pred + 1:] if isinstance(c, tuple) for p in c)
        exc = next((c.value for c in ch if isinstance(c, _Words) and c.kind == "exc"), None)
        first_only = isinstance(ch[0], Piece) and ch[0].kind == "only"
        later_only = any(isinstance(c, Piece) and c.kind == "only" for c in ch[1:]) or any(
            p.kind == "only" for p in post)
        if any(p.kind == "only" for p in pre) and not first_only:
            first_only = True
        verdict = name.split("_")[0]
        only = "all" if verdict == "alert" and (first_only or later_only) else \
            "pre" if first_only else "post" if later_only else ""
        return Sent("copular", verdict, pre, post, exc, only)
    if name in ("alert_pred", "benign_pred"):
        return _Words("pred", name.split("_")[0], words)
    if name == "nobody":
        subj = ch[0]
        excs = [c.value for c in ch if isinstance(c, _Words) and c.kind == "exc"]
        body = next((c for c in ch if isinstance(c, tuple)), ())
        if len(excs) > 1:
            raise Flag("two exceptions in one sentence")
        return Sent("nobody", "alert", (subj,), body, excs[0] if excs else None)
    if name == "nobody_subj":
        label = next((v for v in ch if isinstance(v, Piece)), None)
        return label or Piece("person", None, words)
    if name in ("else_alert", "else_benign"):
        pred = next(i for i, c in enumerate(ch) if isinstance(c, _Words) and c.kind == "pred")
        pre = tuple(p for c in ch[:pred] if isinstance(c, tuple) for p in c)
        if isinstance(ch[0], _Words) and ch[0].value == "person" and (pre or any(
                isinstance(c, tuple) and c for c in ch[pred + 1:])):
            pre = (Piece("person", None, ch[0].words), *pre)
        post = tuple(p for c in ch[pred + 1:] if isinstance(c, tuple) for p in c)
        verdict = name.split("_")[1]
        if isinstance(ch[0], _Words) and ch[0].value == "nothing":  # "nothing else is an alert": all else fine
            if pre or post:
                raise Flag("“nothing else” with conditions")
            verdict = {"alert": "benign", "benign": "alert"}[verdict]
        return Sent("else", verdict, pre, post)
    if name == "otherwise":
        return Sent("otherwise", _find(ch, "verdict"))  # type: ignore[arg-type]
    if name.startswith(("else_word_", "then_")):
        return _Words("verdict", name.rsplit("_", 1)[1], words)
    if name == "if_then":
        verdict = next(c.value for c in ch if isinstance(c, _Words) and c.kind == "verdict")
        body = next(c for c in ch if isinstance(c, tuple))
        return Sent("lead", verdict, body)
    if name == "then_verdict":  # an alert verb
        return _Words("verdict", "alert", words)
    if name == "defn_open":
        return Sent("defn", "", (), (), None, "", _find(ch, "window"))  # type: ignore[arg-type]
    if name == "body":
        for a, b, c in zip(ch, ch[1:], ch[2:], strict=False):  # "at night and on weekends": a list, either
            if isinstance(b, _Words) and b.kind == "link" and b.words == "and" and isinstance(a, Piece) and \
                    isinstance(c, Piece) and a.kind == c.kind == "cond" and _when(a.value) and _when(c.value):
                raise Flag("two times joined by “and” are a list")
        kept = [c for i, c in enumerate(ch) if not (isinstance(c, Piece) and c.kind == "there" and i + 1 < len(ch)
                and isinstance(ch[i + 1], _Words) and ch[i + 1].words in ("is", "are"))]  # "there are": exist
        pieces = tuple(p for c in kept for p in (c if isinstance(c, tuple) else (c,)) if isinstance(p, Piece))
        if any(p.kind == "count" for p in pieces):
            pieces = tuple(p for p in pieces if p.kind != "person")
        return _body(pieces)
    if name == "exception":
        body = next(c for c in ch if isinstance(c, tuple))
        return _Words("exc", body, words)
    if name == "nothing_else":
        return _Words("else_subj", "nothing", words)
    if name == "else_subj":
        things = {"anything", "everything", "cases", "case", "times", "time", "rest"}
        return _Words(name, None if set(words.split()) & things else "person", words)
    if name in ("link", "presence", "joiner", "det", "me", "be", "modal", "benign_adj", "alert_noun",
                "alert_verb", "urgent", "except_word", "people_word", "hours_words", "garment", "hivis_word",
                "upper_word", "lower_word", "wear_word", "not_wear", "carry_word", "not_carry", "place_prep",
                "leave_word", "neg_place", "otherwise_word", "role_noun", "person_noun", "label_noun"):
        return _Words(name, None, words)
    if name == "only":
        return Piece("only", None, words)
    if name == "there":
        return Piece("there", None, words)
    if name == "person":
        return Piece("person", None, words)
    if name == "label":
        nouns = [c.words.split()[-1] for c in ch if isinstance(c, _Words) and c.kind == "label_noun"]
        return Piece("label", tuple(dict.fromkeys(x for n in nouns for x in LABELS[n])), words)
    if name == "role":
        return Piece("role", None, words)
    if name.startswith("count_"):
        return Piece("count", _count(name, ch), words)
    if name in _OPS:
        return _Words("op", _OPS[name], words)
    if name == "num":
        got = _toks(ch, "T_NUM") + _toks(ch, "T_NUMWORD")
        return _Words("num", got[0] if got else 1.0, words)
    if name == "half":
        return _Words("num", 0.5, words)
    if name in ("seconds", "minutes", "hours"):
        return _Words("unit", {"seconds": 1, "minutes": 60, "hours": 3600}[name], words)
    if name == "subject":
        return pieces[0]
    if name == "and_list":
        members = tuple(p.value for p in pieces if p.kind == "cond")
        if not all(_when(c) for c in members) or len(members) != len(pieces):
            raise Flag("“and” joins conditions, not a list")
        return _either(pieces, words)
    if name == "part_list":
        return _either(pieces, words)
    if name == "when_all":
        conds = _nights(tuple(p.value for p in pieces if p.kind == "cond"))
        if any(p.kind == "none" for p in pieces):  # "or at any time at the weekend": the whole day, that day
            if any(c.kind == "time" for c in conds):
                raise Flag(f"“{words}”: any time, or a window?")
            conds = (Cond("time", (0, 1440)), *conds)
        parts = ("night", "nights", "evening", "evenings", "morning", "mornings", "afternoon", "afternoons")
        named = any(c.kind == "time" and len(c.value) > 2 for c in conds) or (  # type: ignore[arg-type]
            len(pieces) == 2 and pieces[0].kind == "cond" and pieces[0].value.kind == "weekday"
            and pieces[1].words.split()[0] in parts)  # a day and its part: "Sunday mornings"
        return Piece("cond", conds[0] if len(conds) == 1 else Cond("all", conds), words, named)
    if name == "any_mod":
        if any(p.value.kind == "weekday" and q.night_of for p, q in zip(pieces, pieces[1:], strict=False)):
            raise Flag("a day part after a list of days is each day's: “Friday or Saturday night”")
        if any(p.kind == "none" for p in pieces):
            raise Flag("“or at any time”: at any time of what?")
        conds = tuple(p.value for p in pieces if p.kind in ("cond", "zone"))
        if all(c.kind == "weekday" and not c.negated for c in conds):  # "on Friday or on Saturday"
            return Piece("cond", Cond("weekday", functools.reduce(lambda a, c: a | int(c.value), conds, 0)), words)
        if all(_when(c) for c in conds):
            return _either(pieces, words)
        return Piece("cond", Cond("any", conds), words)
    if name == "leave_place":
        zone = _place(False, [c.value for c in ch if isinstance(c, _Words) and c.kind == "zone"], words)
        return (Piece("cond", Cond("direction", "away from the camera"), words), zone)
    if name in ("place_in", "place_out"):
        return _place(name == "place_out", [c.value for c in ch if isinstance(c, _Words) and c.kind == "zone"],
                      words)
    if name == "zone_ref":
        names = [v.value for v in ch if isinstance(v, Tok) and v.type in ("T_ZONE", "T_WORD")]
        return _Words("zone", " ".join(str(n) for n in names), words)
    return _times(name, ch, words, pieces)


def _times(name: str, ch: list, words: str, pieces: tuple) -> object:  # noqa: C901, PLR0911, PLR0912
    """The rules of times, days, dwell, direction and the look (the grammar's lower half)."""
    if name in _PARTS:
        return Piece("cond", Cond("time", _PARTS[name]), words)
    if name in ("clock_num", "clock_word", "noon", "midnight", "half_past", "quarter_past", "quarter_to"):
        return _Words("clock", _clock(name, ch, words), words)
    if name in ("am", "pm"):
        return _Words("ampm", name, words)
    if name == "range":
        clocks = [c.value for c in ch if isinstance(c, _Words) and c.kind == "clock"]
        return _Words("window", _range(clocks[0], clocks[1], words), words)
    if name == "within":
        return Piece("cond", Cond("time", _find(ch, "window")), words)
    if name == "outside":
        return Piece("cond", Cond("time", _find(ch, "window"), True), words) if not _find(
            ch, "hours_words") else Piece("opening_def", (_find(ch, "window"), True), words)
    if name in ("after", "before"):
        clock = _find(ch, "clock")
        return Piece("cond", Cond("time", _after(clock, name == "after", words)), words)  # type: ignore[arg-type]
    if name == "during_hours":
        return Piece("opening_def", (_find(ch, "window"), False), words)
    if name in ("closed", "opened"):
        return Piece("opening", name == "closed", words)
    if name == "any_time":
        return Piece("none", None, words)
    if name == "day_mod":
        return Piece("cond", Cond("weekday", _find(ch, "days")), words)
    if name in ("weekdays", "weekend", "every_day"):
        return _Words("days", {"weekdays": 0b0011111, "weekend": 0b1100000, "every_day": 0b1111111}[name], words)
    if name == "days":
        return _Words("days", _find(ch, "daylist"), words)
    if name == "day_list":
        return _Words("daylist", sum(1 << int(d) for d in _toks(ch, "T_DAY")), words)
    if name == "day_span":
        a, b = (int(d) for d in _toks(ch, "T_DAY"))
        days = range(a, b + 1) if a <= b else [*range(a, 7), *range(0, b + 1)]
        return _Words("days", sum(1 << d for d in days), words)
    if name == "night_of":
        return Piece("cond", Cond("time", (*NIGHT, _find(ch, "daylist"))), words, True)
    if name in ("evening_of", "morning_of", "afternoon_of"):
        part = _PARTS[name.split("_")[0]]
        return Piece("cond", Cond("all", (Cond("weekday", _find(ch, "daylist")), Cond("time", part))), words, True)
    if name == "dwell_verb":
        return Piece("dwell_verb", None, words)
    if name.startswith("dwell_"):
        op = {"dwell_cmp": _find(ch, "op"), "dwell_or_more": ">=", "dwell_or_less": "<="}[name]
        seconds = float(_find(ch, "num")) * float(_find(ch, "unit"))  # type: ignore[arg-type]
        return Piece("cond", Cond("dwell", (op, seconds)), words)
    if name in ("towards", "away"):
        return Piece("cond", Cond("direction", f"{name} {'from ' if name == 'away' else ''}the camera"), words)
    if name == "sideways":
        return Piece("cond", Cond("direction", "left" if "left" in words.split() else "right"), words)
    if name == "not_direction":
        cond = pieces[0].value
        return Piece("cond", Cond(cond.kind, cond.value, True), words)
    if name in ("hivis_yes", "hivis_no"):
        return Piece("cond", Cond("hivis", True, name.endswith("no")), words)
    if name in ("colour_yes", "colour_no"):
        cond = next(c.value for c in ch if isinstance(c, _Words) and c.kind == "colour")
        return Piece("cond", Cond(cond.kind, cond.value, name.endswith("no")), words)
    if name in ("upper", "lower"):
        return _Words("colour", Cond(name, _toks(ch, "T_COLOUR")[0]), words)
    if name in ("hivis_np", "colour_np"):
        return _Words(name, None, words)
    if name in ("carry_yes", "carry_no"):
        objects = _find(ch, "objects")
        return Piece("cond", Cond("carries", objects, name.endswith("no")), words)
    if name == "objects":
        return _Words("objects", tuple(dict.fromkeys(o for t in _toks(ch, "T_OBJECT") for o in t)), words)
    if name == "dwell":
        return pieces[0] if pieces else Piece("none", None, words)
    raise Flag(f"no meaning for “{words}” ({name})")


def _body(pieces: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """A clause's pieces: "opening hours 07:00-19:00" is those hours (not the hours and, besides, a window); a
    day with a window that wraps midnight is the day it starts on (policy_words._nights)."""
    for p, q in zip(pieces, pieces[1:], strict=False):
        if p.kind == "opening" and q.kind == "cond" and q.value.kind == "time" and len(q.value.value) == 2:
            raise Flag(f"“{p.words} {q.words}”: the hours named are the opening hours")
    pieces = tuple(q for p in pieces for q in (  # "Sunday mornings" in a clause: Sunday and the morning
        [Piece("cond", c, p.words) for c in p.value.value] if p.kind == "cond" and p.value.kind == "all"
        and not p.value.negated else [p]))
    if len([p for p in pieces if p.kind == "label"]) > 1:
        raise Flag("two subjects in one clause")
    days = [p for p in pieces if p.kind == "cond" and p.value.kind == "weekday" and not p.value.negated]
    for p, q in itertools.combinations(days, 2):
        if not int(p.value.value) & int(q.value.value):
            raise PolicyRefused(f"“{p.words}” and “{q.words}” never hold at once")
    for p, q in zip(pieces, pieces[1:], strict=False):  # "Friday night or Saturday night": Friday's night
        if p.kind == "cond" and p.value.kind == "weekday" and q.words.split()[:1] and q.words.split()[0] in (
                "night", "nights", "evening", "evenings", "morning", "mornings", "afternoon", "afternoons"):
            raise Flag(f"“{p.words} {q.words}”: a day and its part")
    if any(p.kind == "cond" and p.value.kind == "time" for p in pieces) and any(
            p.kind == "cond" and p.value.kind == "any" and Cond("time", (0, 1440)) in _flat(p.value) for p in pieces):
        raise Flag("a window and “at any time” in one clause")
    times = [p for p in pieces if p.kind == "cond" and p.value.kind == "time" and not p.value.negated]
    for p, q in itertools.combinations(times, 2):
        if not _overlap(p.value.value, q.value.value):
            raise PolicyRefused(f"“{p.words}” and “{q.words}” never hold at once")
    for p, q in zip(pieces, pieces[1:], strict=False):  # "from 7pm until 7am" is one window, not two
        if p.words.startswith("from ") and q.words.startswith(("until ", "till ", "to ")):
            raise Flag(f"“{p.words} {q.words}” is one window")
    when = ("time", "weekday", "all")
    for p, q in zip(pieces, pieces[1:], strict=False):
        if p.kind == "cond" and p.value.kind == "any" and all(c.kind in when for c in p.value.value) and \
                len({c.kind for c in p.value.value}) > 1 and q.kind == "cond" and q.value.kind in when:
            raise Flag(f"“{q.words}” belongs to the last of “{p.words}”")
    conds = _nights(tuple(p.value for p in pieces if p.kind == "cond"))
    if all(p.kind != "cond" or p.value in conds for p in pieces):
        return pieces
    merged = next(c for c in conds if c.kind == "time" and len(c.value) > 2)
    out = []
    for p in pieces:
        if p.kind == "cond" and p.value.kind == "weekday" and not p.value.negated:
            continue
        out.append(Piece("cond", merged, p.words) if p.kind == "cond" and p.value.kind == "time"
                   and not p.value.negated and len(p.value.value) == 2 else p)
    return tuple(out)


def _either(pieces: tuple[Piece, ...], words: str) -> Piece:
    """A list of times or days, either of which holds. A day before the first or after the last member of
    the list, where no other member names a day, is every member's ("on a weekday before 7am or after 8pm",
    "mornings and afternoons on weekdays"): that reading is not this one. A list that covers the whole day
    ("day or night") is any time."""
    conds = [p.value for p in pieces]
    days = [any(c.kind == "weekday" or (c.kind == "all" and any(d.kind == "weekday" for d in c.value))
                for c in [m]) for m in conds]
    for i in (0, len(pieces) - 1):
        member = pieces[i]
        if member.value.kind == "all" and not member.night_of and sum(days) == 1 and days[i]:
            inner = member.value.value
            edge = inner[0] if i == 0 else inner[-1]
            if edge.kind == "weekday":
                raise Flag(f"the day in “{member.words}” is every member's")
    if len(conds) == 1:
        return pieces[0]
    if all(c.kind == "time" and not c.negated and len(c.value) == 2 for c in conds) and all(
            any(in_window(m, c.value) for c in conds) for m in range(1440)):
        return Piece("none", None, words)
    return Piece("cond", Cond("any", tuple(conds)), words)


def _when(cond: Cond) -> bool:
    return cond.kind in ("time", "weekday") or (cond.kind in ("any", "all") and all(_when(c) for c in cond.value))


def _flat(cond: Cond) -> list[Cond]:
    return [cond, *(d for c in cond.value for d in _flat(c))] if cond.kind in ("any", "all") else [cond]


def _overlap(a: tuple, b: tuple) -> bool:
    return any(in_window(m, a[:2]) and in_window(m, b[:2]) for m in range(0, 1440))


def _count(name: str, ch: list) -> tuple[str, float]:
    n = _find(ch, "num")
    if name == "count_alone":
        return ("<=", 1)
    if name == "count_cmp":
        return (_find(ch, "op"), int(n))  # type: ignore[return-value,arg-type]
    more = any(isinstance(c, Tok) and c.word == "more" for c in ch)
    if name == "count_group":
        op = _find(ch, "op") or (">=" if more else None)
        return (op or ">=", int(n))  # type: ignore[arg-type]
    return (">=" if more else "<=", int(n))  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Clock:
    minute: int  # 0..1440
    bare: bool  # an hour 1..12 with no am/pm: morning or evening is not said
    words: str


def _clock(name: str, ch: list, words: str) -> _Clock:
    if name == "noon":
        return _Clock(720, False, words)
    if name == "midnight":
        return _Clock(0, False, words)
    ampm = _find(ch, "ampm")
    clock = (_toks(ch, "T_CLOCK") or [None])[0]
    number = (_toks(ch, "T_NUM") + _toks(ch, "T_NUMWORD") or [None])[0]
    if clock is not None:
        hour, minute = clock
    else:
        if number is None or number != int(number):
            raise PolicyRefused(f"impossible time “{words}”")
        hour, minute = int(number), 0
    if name == "half_past":
        minute = 30
    elif name == "quarter_past":
        minute = 15
    elif name == "quarter_to":
        hour, minute = hour - 1, 45
    if minute > 59 or hour > 24 or (hour == 24 and minute) or (ampm and not 1 <= hour <= 12) or hour < 0:
        raise PolicyRefused(f"impossible time “{words}”")
    if ampm:
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    bare = not ampm and clock is None and 1 <= hour <= 12 or (name in ("half_past", "quarter_past", "quarter_to")
                                                               and not ampm and hour <= 12)
    return _Clock(hour * 60 + minute, bool(bare), words)


def _range(a: _Clock, b: _Clock, words: str) -> tuple[int, int]:
    """A window; bare hours read in the opening-hours sense where that is the only sense: "9 to 5" is
    09:00-17:00; "8 to 10" could be morning or evening, and is not compiled."""
    start, end = a.minute, b.minute
    if a.bare and b.bare:
        if start % 720 <= end % 720:
            raise Flag(f"“{words}”: morning or evening? (say am/pm or 24-hour times)")
        start, end = start % 720, end % 720 + 720
    elif a.bare or b.bare:
        raise Flag(f"“{words}”: morning or evening? (say am/pm or 24-hour times)")
    end %= 1440
    if start == end:
        raise PolicyRefused(f"“{words}” is no window: it starts where it ends")
    return start, end


def _after(clock: _Clock, after: bool, words: str) -> tuple[int, int]:
    if clock.bare:
        raise Flag(f"“{words}”: morning or evening? (say am/pm or 24-hour times)")
    minute = clock.minute % 1440
    if not after:
        if minute == 0:
            raise PolicyRefused(f"“{words}” never holds")
        return (0, minute)
    if minute >= 12 * 60:
        return (minute, 6 * 60)
    return (minute, 0) if minute else (0, 6 * 60)


def _place(negated: bool, names: list, words: str) -> Piece:
    conds = tuple(Cond("zone", str(n)) for n in names)
    if len(conds) == 1:
        return Piece("zone", Cond("zone", conds[0].value, negated), words)
    return Piece("zone", Cond("any", conds, negated), words)


def _rules(build: _Build, sent: Sent, sentence: str, group: int) -> None:
    """The clauses one sentence says, in the order the words rank them."""
    def add(verdict: str, pieces: tuple[Piece, ...], g: int = group) -> None:
        conds, used = _conds(build, pieces)
        build.clauses.append(Clause(verdict, conds, sentence, used))
        build.groups.append(g)

    other = {"alert": "benign", "benign": "alert"}
    if sent.kind == "defn":
        return
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


def _conds(build: _Build, pieces: tuple[Piece, ...]) -> tuple[tuple[Cond, ...], tuple[str, ...]]:
    conds: list[Cond] = []
    used: list[str] = []
    kinds = {p.kind for p in pieces}
    for p in pieces:
        if p.kind in ("person", "count", "role") and Cond("label", ("person",)) not in conds:
            conds.insert(0, Cond("label", ("person",)))
        if p.kind == "label":
            conds.insert(0, Cond("label", p.value))
        elif p.kind == "count":
            conds.append(Cond("people", p.value))
        elif p.kind in ("cond", "zone"):
            conds.append(_placed(p.value, build.place, build.zones))
        elif p.kind == "there":
            places = [c for c in build.clauses[-1].conds if c.kind in ("zone", "place")] if build.clauses else []
            if not places:
                raise Flag("“there”: no place named before it")
            conds.extend(places)
        elif p.kind == "opening":
            if build.opening is None:
                raise Flag(f"“{p.words}”: the words name no opening hours")
            conds.append(Cond("time", build.opening, bool(p.value)))
        elif p.kind == "opening_def":
            build.opening, negated = p.value  # type: ignore[misc]
            conds.append(Cond("time", build.opening, negated))
        elif p.kind == "dwell_verb" and not any(q.kind == "cond" and q.value.kind == "dwell" for q in pieces):
            raise Flag(f"“{p.words}” for how long? (say a time: longer than 2 minutes)")
        used.append(p.words)
    if "role" in kinds and not any(c.kind in _APPEARANCE for c in conds):
        role = next(p.words for p in pieces if p.kind == "role")
        raise Flag(f"who “{role}” are: only the picture could tell")
    return _nights(tuple(dict.fromkeys(conds))), tuple(w for w in used if w)


def _placed(cond: Cond, place: str | None, zones: tuple[str, ...]) -> Cond:
    """The camera itself named as a place ("in the shop" on camera shop, which has no zone "shop"): always
    true there."""
    from ...shared.policycell import zone_word

    if cond.kind == "zone" and place and cond.value == place and place not in {zone_word(z) for z in zones}:
        if cond.negated:
            raise Flag(f"“not in the {place}”: this camera is the {place}")
        return Cond("place", place)
    return cond


def _nights(conds: tuple[Cond, ...]) -> tuple[Cond, ...]:
    """Days named with a window that wraps midnight name the day it starts on ("Fridays after 9pm" runs to
    Saturday 06:00)."""
    days = [c for c in conds if c.kind == "weekday" and not c.negated]
    wraps = [c for c in conds if c.kind == "time" and not c.negated and len(c.value) == 2
             and c.value[0] > c.value[1]]  # type: ignore[arg-type,index]
    if len(days) != 1 or len(wraps) != 1:
        return conds
    merged = Cond("time", (*wraps[0].value, days[0].value))  # type: ignore[misc]
    return tuple(merged if c is wraps[0] else c for c in conds if c is not days[0])


__all__ = ["Flag", "PolicyRefused", "compile_policy"]
