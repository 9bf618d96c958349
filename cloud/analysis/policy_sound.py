"""Miscompiles as a class, caught on the compiled form (after policy_check.check_policy): the form is tried on the
situations at the edges of its conditions (policy_check.situations), not on the words, so a misreading of any
phrasing is caught by what it compiled into.

- two verdicts for one case inside one sentence, where the words do not say which wins ("alert on anyone in the
  yard, people in hi-vis are fine": a person in the yard in hi-vis): the sentence is NOT COMPILED (`unordered`);
  an "except", "unless", "only", "anyone else" or a later clause about "them" orders clauses by the words;
- two places in one clause ("in the yard and in the garden"): an event is in every zone whose outline holds its
  foot point, so zones may overlap and "in both" can hold; but the words may as well mean either place: NOT
  COMPILED (`two_places`);
- two sentences about two places with two verdicts: policy_check lets them stand (two places are two places),
  but zones may overlap, and the order the sentences stand in must not decide an event in both: the alert wins
  over "fine" there, the model's where either leaves it to the model, and the form says so (`overlaps`);
- a clause no case reaches, because the clauses before it take every case it names with another verdict ("alert
  on anyone in the yard unless they're in the yard"): refused, naming both (`check_reached`);
- a clause that says again what another says (same verdict, same conditions): flagged (`check_reached`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from .policy import Clause, Cond, _all
from .policy_check import PolicyRefused, _count, _say, _witness, situations

_REACH_LIMIT = 20_000  # situations tried for whether a clause is reached; beyond it, it is taken to be


def _zones(clause: Clause) -> set[object]:
    return {c.value for c in clause.conds if c.kind == "zone" and not c.negated}


def two_places(clauses: Sequence[Clause]) -> str | None:
    """Why a clause that needs two places at once is not compiled, or None."""
    for clause in clauses:
        places = sorted(str(z) for z in _zones(clause))
        if clause.compiled and len(places) > 1 and _witness(clause.conds) is not None:  # else: refused
            return (f"“{' … '.join(places)}” in one clause: in both at once (where the zones overlap), or in "
                    f"either? (say “in the {places[0]} or the {places[1]}”)")
    return None


def unordered(made: Sequence[tuple[Sequence[Clause], bool]]) -> str | None:
    """`made`: each clause of one sentence (in the sentence's order) with its clauses and whether the words
    order them before the ones said earlier (a clause about "them", an exception). Two clauses of different
    parts, neither ordered by the words, that give two verdicts for one case: why, or None."""
    for (first, ordered_a), (second, ordered_b) in itertools.combinations(made, 2):
        if ordered_a or ordered_b:
            continue
        for a, b in itertools.product(first, second):
            if a.verdict == b.verdict or not (a.compiled and b.compiled):
                continue
            seen = _witness(a.conds + b.conds)
            if seen is not None:
                return (f"“{a.verdict} if: {a.words()}” and “{b.verdict} if: {b.words()}” both hold for "
                        f"{_say(seen)}: which wins? (join them with unless / except)")
    return None


def overlaps(clauses: Sequence[Clause], groups: Sequence[int]) -> list[Clause]:
    """Two sentences about two places with two verdicts: where an event stands in both (zones may overlap), the
    alert wins over "fine" (a sentence about one place never silences an alert about another), and a sentence
    that leaves its place to the model leaves the overlap to it too; a clause before both says so in the form."""
    out = list(clauses)
    pairs = [(a, b) for (a, ga), (b, gb) in itertools.combinations(zip(clauses, groups, strict=True), 2)
             if a.compiled and b.compiled and ga != gb and -1 not in (ga, gb) and a.verdict != b.verdict
             and _zones(a) and _zones(b) and not _zones(a) & _zones(b)]
    for a, b in pairs:
        conds = tuple(dict.fromkeys(a.conds + b.conds))
        if _witness(conds) is None:
            continue
        verdict = "model" if "model" in (a.verdict, b.verdict) else "alert"
        where = " and ".join(sorted(str(z) for z in _zones(a) | _zones(b)))
        why = "the model is asked" if verdict == "model" else "the alert wins"
        note = f"in {where} at once (zones may overlap): “{a.source}” and “{b.source}” both hold: {why}"
        out.insert(out.index(a), Clause(verdict, conds, f"{a.source} / {b.source}", (note,)))
    return out


def check_reached(clauses: Sequence[Clause]) -> list[str]:
    """Refuse a clause that no case reaches where the clauses before it give another verdict; what is said of
    a clause that repeats another (the same verdict and conditions)."""
    notes: list[str] = []
    for j, late in enumerate(clauses):
        if not late.compiled:
            continue
        same = next((c for c in clauses[:j] if c.compiled and c.verdict == late.verdict
                     and set(c.conds) == set(late.conds)), None)
        if same is not None:
            notes.append(f"“{late.source}” says again what “{same.source}” says ({late.verdict} if: "
                         f"{late.words()}): a duplicate rule")
            continue
        before = [c for c in clauses[:j] if c.compiled]
        if not before or all(c.verdict == late.verdict for c in before):
            continue
        conds: tuple[Cond, ...] = tuple(dict.fromkeys(late.conds + tuple(d for c in before for d in c.conds)))
        if _count(conds) > _REACH_LIMIT:
            continue  # too many situations to try: taken to be reached
        takers: set[int] = set()
        for seen in situations(conds):
            if _all(late.conds, seen) is True:
                taker = next((i for i, c in enumerate(before) if _all(c.conds, seen) is True), None)
                if taker is None:
                    break
                takers.add(taker)
        else:
            other = [before[i] for i in sorted(takers) if before[i].verdict != late.verdict]
            if other:
                raise PolicyRefused(f"“{late.source}” ({late.verdict} if: {late.words()}) never decides: the rules "
                                    f"before it (“{other[0].source}”: {other[0].verdict}) take every case it names")
    return notes


__all__ = ["check_reached", "overlaps", "two_places", "unordered"]
