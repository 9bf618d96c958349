"""A policy sentence parsed (lark's Earley parser over policy_grammar.GRAMMAR) and read into its one meaning:
every reading of an ambiguous parse is read; readings that cannot mean anything drop out; where two readings
that remain mean different things, the sentence is not compiled (Flag)."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput
from lark.lexer import Lexer

from .policy import Cond
from .policy_body import _body, _either, _when
from .policy_check import PolicyRefused
from .policy_grammar import GRAMMAR
from .policy_lexicon import LABELS, Tok, tokens
from .policy_reading import (
    _OPS,
    Flag,
    Piece,
    Sent,
    _count,
    _find,
    _nights,
    _place,
    _times,
    _toks,
    _Words,
    _words,
)

_MAX_READINGS = 256
_FILLER_RULES = frozenset((  # rules whose words are read by the rule above them
    "link", "presence", "joiner", "det", "me", "be", "modal", "benign_adj", "alert_noun", "alert_verb", "urgent",
    "except_word", "people_word", "garment", "hours_which", "work_word", "enter_word", "pass_word", "hivis_word",
    "upper_word", "lower_word", "wear_word", "not_wear", "carry_word", "not_carry", "place_prep", "leave_word",
    "neg_place", "otherwise_word", "role_noun", "person_noun", "label_noun", "pronoun", "judge", "judgement",
    "pos_alert", "never_verb", "minus_word", "uniform", "dash", "please", "benign_mark"))


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


@functools.lru_cache(maxsize=1)
def role_words() -> frozenset[str]:
    """The job nouns of the grammar ("staff", "guards" ...): words read through the look."""

    rule = GRAMMAR.split("\nrole_noun:", 1)[1].split("\n\n", 1)[0]
    return frozenset(re.findall(r'"([a-z]+)"', rule))


def role_key(words: str) -> str:
    """The role a phrase names, alike in "our cleaners" and "a cleaner": its last role noun, singular."""
    nouns = [w for w in words.split() if w in role_words()]
    return nouns[-1].removesuffix("s") if nouns else ""


def keywords() -> dict[str, str]:
    return _parser()[1]


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
    except (LookupError, TypeError, AttributeError, ValueError) as exc:  # a reading this reader gets wrong
        if isinstance(exc, PolicyRefused):
            return "refuse", str(exc)
        return "flag", f"no reading ({type(exc).__name__})"
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

    kind = {"copular": "lead"}  # "cats don't bother me": a verdict after its subject, or before: one meaning
    return tuple((kind.get(s.kind, s.kind), s.verdict, bare(s.pre), bare(s.post), exc(s), s.only, s.window)
                 for s in sents)


class _Body(tuple):
    """A clause's pieces, and whether a verb ("is", "are") stood among them."""

    verb: bool

    def __new__(cls, pieces: tuple, verb: bool = False) -> _Body:
        out = super().__new__(cls, pieces)
        out.verb = verb
        return out


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


def _node(name: str, ch: list) -> object:  # noqa: C901, PLR0911, PLR0912 - one reading per rule of the grammar
    words = _words(ch)
    pieces = tuple(p for c in ch for p in (c if isinstance(c, tuple) else (c,)) if isinstance(p, Piece))
    if name == "start":
        return tuple(s for c in ch for s in (c if isinstance(c, tuple) else (c,)) if isinstance(s, Sent))
    if name in ("alert_lead", "benign_lead"):
        at = next(i for i, c in enumerate(ch) if isinstance(c, _Words) and c.kind == "head")
        exc = next((c for c in ch if isinstance(c, _Words) and c.kind == "exc"), None)
        body = tuple(p for c in ch[:at] + ch[at + 1:] if isinstance(c, tuple) for p in c)
        if exc is not None and body and body[-1].kind in ("label", "person") and exc.value and exc.value[0].kind in (
                "label", "person") and exc.words.split()[0] in ("other", "except", "but", "apart", "besides") and \
                getattr(exc.value, "verb", False):  # "any vehicle other than a car is in the bay": its subject
            raise Flag(f"“{exc.words}”: the subject's exception, not the sentence's")
        if exc is not None and any(p.kind == "label" for p in body):  # "any person or vehicle ..., unless they":
            exc = _Words("exc", _Body(tuple(p for p in exc.value if not (  # "they" is that subject, not people
                p.kind == "person" and p.words in ("they", "them"))), getattr(exc.value, "verb", False)), exc.words)
        if not body and exc is not None:  # "don't alert unless X": X is the other verdict's, all else this one's
            other = {"alert": "benign", "benign": "alert"}[name.split("_")[0]]
            return Sent("lead", other, exc.value, (), None, "all")
        if not body:
            raise Flag("a verdict with no conditions: say when (or write it as “otherwise ...”)")
        only = "all" if (ch[at].value or any(p.kind == "only" for p in body)) else ""
        fronted = tuple(p for c in ch[:at] if isinstance(c, tuple) for p in c)
        if only and any(p.kind != "only" for p in fronted):  # "during school hours, alert only if X": within them
            rest = tuple(p for c in ch[at + 1:] if isinstance(c, tuple) for p in c)
            return Sent("lead", name.split("_")[0], fronted, rest, exc.value if exc else None, "within")
        return Sent("lead", name.split("_")[0], body, (), exc.value if exc else None, only)
    if name in ("alert_lead_or", "benign_lead_or"):  # "alert if A, or if B": two clauses, one verdict
        bodies = [c for c in ch if isinstance(c, tuple)]
        return tuple(Sent("lead", name.split("_")[0], b) for b in bodies)
    if name == "model_after":
        return Sent("copular", "model", pieces)
    if name == "nobody_alerts":  # "no car in the yard should trigger an alert": cars in the yard are fine
        subj = next(c for c in ch if isinstance(c, Piece))
        body = next((c for c in ch if isinstance(c, tuple)), ())
        exc = next((c.value for c in ch if isinstance(c, _Words) and c.kind == "exc"), None)
        return Sent("copular", "benign", (subj, *body), (), exc)
    if name == "nothing_else_alone":
        return Sent("nothing_else")
    if name == "note":
        return Sent("note")
    if name == "moot":
        return Sent("moot", str(_find(ch, "fact")))
    if name.startswith("moot_") and name != "moot_here":
        return _Words("fact", name.split("_")[1], words)
    if name == "moot_here":
        return Piece("none", None, words)
    if name in ("else_lead_alert", "else_lead_benign"):
        subj = next(c for c in ch if isinstance(c, _Words) and c.kind == "else_subj")
        body = next((c for c in ch if isinstance(c, tuple)), ())
        pre = (Piece("person", None, subj.words), *body) if subj.value == "person" and body else body
        return Sent("else", name.rsplit("_", 1)[1], pre)
    if name in ("alert_head", "benign_head"):
        return _Words("head", any(isinstance(p, Piece) and p.kind == "only" for p in ch), words)
    if name in ("alert_after", "benign_after"):
        pred = next(i for i, c in enumerate(ch) if isinstance(c, _Words) and c.kind == "pred")
        pre = tuple(p for c in ch[:pred] if isinstance(c, tuple) for p in c)
        post = tuple(p for c in ch[pred + 1:] if isinstance(c, tuple) for p in c)
        exc = next((c.value for c in ch if isinstance(c, _Words) and c.kind == "exc"), None)
        if not [p for p in pre + post if p.kind != "only"]:  # ", when it's fine": when?
            raise Flag(f"“{words}”: of what? (say who, where or when)")
        first_only = isinstance(ch[0], Piece) and ch[0].kind == "only"
        later_only = any(isinstance(c, Piece) and c.kind == "only" for c in ch[1:]) or any(
            p.kind == "only" for p in post)
        if any(p.kind == "only" for p in pre) and not first_only:
            first_only = True
        verdict = name.split("_")[0]
        only = "all" if verdict == "alert" and (first_only or later_only) else \
            "pre" if first_only else "post" if later_only else ""
        return Sent("copular", verdict, pre, post, exc, only)
    if name in ("alert_pred", "benign_pred", "model_pred"):
        return _Words("pred", name.split("_")[0], words)
    if name == "nobody":
        subj = next(c for c in ch if isinstance(c, Piece))
        excs = [c.value for c in ch if isinstance(c, _Words) and c.kind == "exc"]
        body = next((c for c in ch if isinstance(c, tuple)), ())
        if len(excs) > 1:
            raise Flag("two exceptions in one sentence")
        return Sent("nobody", "alert", (subj,), body, excs[0] if excs else None)
    if name == "nobody_subj":
        nouns = [c.words for c in ch if isinstance(c, _Words) and c.kind == "label_noun"]
        if nouns:  # "no cars": cars, not people
            return Piece("label", LABELS[nouns[0]], words)
        return Piece("person", None, words)
    if name in ("else_alert", "else_benign", "else_model"):
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
        return Sent("defn", _find(ch, "hours_words") or "opening", (), (), None, "", _find(ch, "span"))  # type: ignore[arg-type]
    if name == "defn_role":  # the role's look: a condition kept for the later words that name the role
        look = next(p for p in pieces if p.kind == "cond")
        return Sent("role", role_key(words), (look,))
    if name == "said_desc":  # who or what the hours are said of: no condition
        return _Words("said", None, words)
    if name == "defn_said":  # hours said of someone: "those hours" of what follows, no condition of their own
        return Sent("defn", "said", (), (), None, "", _find(ch, "span"))  # type: ignore[arg-type]
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
        verbs = {c.words for c in ch if isinstance(c, _Words) and c.kind == "link" and c.words in ("is", "are")}
        return _Body(_body(pieces), bool(verbs))
    if name == "exception":
        body = next(c for c in ch if isinstance(c, tuple))
        return _Words("exc", body, words)
    if name == "nothing_else":
        return _Words("else_subj", "nothing", words)
    if name == "else_subj":
        things = {"anything", "everything", "cases", "case", "times", "time", "rest"}
        return _Words(name, None if set(words.split()) & things else "person", words)
    if name in _FILLER_RULES:
        return _Words(name, None, words)
    if name == "only":
        return Piece("only", None, words)
    if name == "there":
        return Piece("there", None, words)
    if name == "person":
        return Piece("person", None, words)
    if name == "label":
        nouns = [c.words.split()[-1] for c in ch if isinstance(c, _Words) and c.kind in ("label_noun", "person_noun")]
        return Piece("label", tuple(dict.fromkeys(x for n in nouns for x in LABELS.get(n, ("person",)))), words)
    if name == "label_minus":  # "any vehicle other than a car": the vehicles but cars
        nouns = [c.words.split()[-1] for c in ch if isinstance(c, _Words) and c.kind == "label_noun"]
        left = tuple(x for x in LABELS[nouns[0]] if x not in {y for n in nouns[1:] for y in LABELS[n]})
        if not left or len(left) == len(LABELS[nouns[0]]):
            raise Flag(f"“{words}”: nothing is left, or nothing is taken out")
        return Piece("label", left, words)
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
        times = [c for c in conds if c.kind == "time" and not c.negated]
        if len(times) > 1 and not set.intersection(*(_minutes(c) for c in times)):
            raise Flag(f"“{words}”: two times that never meet")  # "Saturday nights from 10 till 2" (10:00-14:00)
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
        several = [v.value for v in ch if isinstance(v, Tok) and v.type == "T_ZONE" and isinstance(v.value, tuple)]
        if several:  # "a dock": any of the docks
            return _Words("zone", several[0], words)
        names = [v.value for v in ch if isinstance(v, Tok)
                 and v.type in ("T_ZONE", "T_WORD", "FRONT", "TOP", "BOTTOM", "LEFT", "RIGHT")]
        return _Words("zone", " ".join(str(n) for n in names), words)
    return _times(name, ch, words, pieces)


def _minutes(cond: Cond) -> set[int]:
    """The minutes of the day a time condition holds in (any day)."""
    start, end = (int(m) % 1440 for m in cond.value[:2])  # type: ignore[index]
    return set(range(start, end)) if start < end else set(range(start, 1440)) | set(range(end))


__all__ = ["_read", "keywords", "role_words"]
