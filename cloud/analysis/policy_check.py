"""What a compiled policy can mean, found by trying it: the situations at every edge of its conditions (each
time edge and the minute before it on every day, each threshold and either side of it, in and out of each
zone, with and without each look), for

- refusing what cannot mean anything: a clause that never holds, and two sentences that both apply to some
  situation with different verdicts where the words do not say which wins (an "except", "unless", "anyone
  else" ... orders clauses by the words; two separate sentences are not ordered by where they stand);
- `policy explain` and check-config: the table of deciding situations, each with the verdict it gets.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from ...shared.policycell import EventFacts
from .policy import WEEKDAY_NAMES, Clause, Cond, Policy, Seen, _all, evaluate

_LIMIT = 200_000  # situations tried for one question; beyond it a clause is taken to hold somewhere
_DIRECTIONS = ("towards the camera", "away from the camera", "left", "right")


class PolicyRefused(ValueError):
    """Words that cannot mean anything: one line saying which."""


def check_policy(policy: Policy, groups: Sequence[int]) -> None:
    """Refuse a clause that never holds, and two sentences that overlap with different verdicts."""
    compiled = [(c, g) for c, g in zip(policy.clauses, groups, strict=True) if c.compiled]
    for clause, _ in compiled:
        if not _possible(clause.conds):
            raise PolicyRefused(f"“{clause.source}” can never hold ({clause.words()})")
    for (a, ga), (b, gb) in itertools.combinations(compiled, 2):
        if ga == gb or gb == -1 or a.verdict == b.verdict or not _possible(a.conds + b.conds, apart=(a, b)):
            continue
        raise PolicyRefused(f"“{a.source}” and “{b.source}” both apply to {_say(_witness(a.conds + b.conds))} "
                            "and the words do not say which wins (join them with except / unless)")


def _possible(conds: tuple[Cond, ...], apart: tuple[Clause, Clause] | None = None) -> bool:
    if apart is not None:
        zones = [{c.value for c in x.conds if c.kind == "zone" and not c.negated} for x in apart]
        if zones[0] and zones[1] and not zones[0] & zones[1]:
            return False  # two sentences about two places are about two places
    return _witness(conds) is not None


def _witness(conds: tuple[Cond, ...]) -> Seen | None:
    for seen in itertools.islice(situations(conds), _LIMIT):
        if _all(conds, seen) is True:
            return seen
    return None if _count(conds) <= _LIMIT else _default()


def _flat(conds: Sequence[Cond]) -> list[Cond]:
    out: list[Cond] = []
    for c in conds:
        out.append(c)
        if c.kind in ("any", "all"):
            out.extend(_flat(c.value))  # type: ignore[arg-type]
    return out


def candidates(conds: Sequence[Cond]) -> dict[str, list]:
    """The values of each fact the conditions read at which their answers change (and one beyond)."""
    flat = _flat(conds)
    kinds = {c.kind for c in flat}
    out: dict[str, list] = {}
    if kinds & {"time", "weekday"}:
        minutes = {720}
        for c in flat:
            if c.kind == "time":
                for m in c.value[:2]:  # type: ignore[index]
                    minutes |= {m % 1440, (m - 1) % 1440}
        by_day = any(c.kind == "weekday" or (c.kind == "time" and len(c.value) > 2) for c in flat)  # type: ignore[arg-type]
        days = range(7) if by_day else (2,)
        out["when"] = [(m, d) for d in days for m in sorted(minutes)]
    if "zone" in kinds:
        names = sorted({str(c.value) for c in flat if c.kind == "zone"})
        subsets = [frozenset(s) for n in range(len(names) + 1) for s in itertools.combinations(names, n)] if len(
            names) <= 4 else [frozenset(), *(frozenset({n}) for n in names)]
        out["zones"] = subsets
    for kind, step in (("dwell", 0.1), ("people", 1)):
        if kind in kinds:
            values = {5.0 if kind == "dwell" else 1}
            for c in flat:
                if c.kind == kind:
                    n = c.value[1]  # type: ignore[index]
                    values |= {max(0, n - step), n, n + step}
            out[kind] = sorted(values)
    if "direction" in kinds:
        out["direction"] = list(_DIRECTIONS)
    if "label" in kinds:
        out["label"] = sorted({v for c in flat if c.kind == "label" for v in c.value} | {"person", "car"})  # type: ignore[attr-defined]
    if "hivis" in kinds:
        out["hivis"] = [False, True]
    for kind in ("upper", "lower"):
        if kind in kinds:
            out[kind] = sorted({str(c.value) for c in flat if c.kind == kind} | {"grey"})
    if "carries" in kinds:
        objects = sorted({o for c in flat if c.kind == "carries" for o in c.value})  # type: ignore[attr-defined]
        out["carries"] = [frozenset(), *(frozenset({o}) for o in objects)]
    return out


def _count(conds: Sequence[Cond]) -> int:
    n = 1
    for values in candidates(conds).values():
        n *= len(values)
    return n


def situations(conds: Sequence[Cond]) -> Iterator[Seen]:
    """Every combination of the candidate values (policy_check.candidates)."""
    table = candidates(conds)
    keys = list(table)
    for combo in itertools.product(*(table[k] for k in keys)):
        seen = seen_of(dict(zip(keys, combo, strict=True)))
        if seen.label == "person" and seen.event.people < 1:
            continue  # a person's event shows at least that person: "fewer than one person" never holds
        yield seen


def _default() -> Seen:
    return seen_of({})


def seen_of(f: dict) -> Seen:
    minute, day = f.get("when", (720, 2))
    event = EventFacts(minute, day, frozenset(f.get("zones", frozenset())), float(f.get("dwell", 5.0)),
                       f.get("direction", ""), int(f.get("people", 1)))
    return Seen(event, f.get("label", "person"), f.get("hivis", False), f.get("upper"), f.get("lower"),
                frozenset(f.get("carries", frozenset())))


def _say(seen: Seen | None) -> str:
    return "no situation" if seen is None else describe(seen, ("day", "when", "zones", "dwell", "people", "direction",
                                                               "label", "hivis", "upper", "lower", "carries"))


def describe(seen: Seen, read: Sequence[str]) -> str:
    ev, parts = seen.event, []
    if "when" in read:
        day = f"{WEEKDAY_NAMES[ev.weekday]} " if "day" in read else ""
        parts.append(f"{day}{ev.minute // 60:02d}:{ev.minute % 60:02d}")
    if "zones" in read:
        parts.append("in " + ", ".join(sorted(ev.zones)) if ev.zones else "in no zone")
    if "dwell" in read:
        parts.append(f"dwell {ev.dwell_s:g} s")
    if "people" in read:
        parts.append(f"{ev.people} people")
    if "direction" in read:
        parts.append(ev.direction or "no direction")
    if "label" in read:
        parts.append(seen.label)
    if "hivis" in read:
        parts.append("hi-vis" if seen.hivis else "hi-vis unknown" if seen.hivis is None else "no hi-vis")
    for kind in ("upper", "lower"):
        if kind in read:
            parts.append(f"{'top' if kind == 'upper' else 'bottom'} {getattr(seen, kind) or 'unknown'}")
    if "carries" in read:
        parts.append("carrying " + ", ".join(sorted(seen.objects)) if seen.objects else "carrying nothing")
    return ", ".join(parts)


def deciding(policy: Policy) -> list[tuple[str, str]]:
    """(situation, verdict) at every edge of every clause: each clause's first situation that it decides,
    then that situation with one fact moved to each of its candidate values."""
    conds = tuple(c for clause in policy.clauses for c in clause.conds)
    table = candidates(conds)
    read = list(table)
    rows: dict[str, str] = {}
    if len({d for _, d in table.get("when", [])}) > 1:
        read.append("day")
    bases: list[dict] = []
    for i, clause in enumerate(policy.clauses):
        base = _deciding_base(policy, i, clause, table)
        if base is not None:
            bases.append(base)
    for base in bases or [{k: v[0] for k, v in table.items()}]:
        for key in table:
            for value in table[key]:
                f = {**base, key: value}
                seen = seen_of(f)
                if key == "hivis" and value is False:
                    _row(rows, policy, seen_of({**base, "hivis": None}), read)
                _row(rows, policy, seen, read)
    return list(rows.items())


def _deciding_base(policy: Policy, index: int, clause: Clause, table: dict[str, list]) -> dict | None:
    keys = list(table)
    for combo in itertools.islice(itertools.product(*(table[k] for k in keys)), _LIMIT):
        f = dict(zip(keys, combo, strict=True))
        if evaluate(policy, seen_of(f)).index == index:
            return f
    return None


def _row(rows: dict[str, str], policy: Policy, seen: Seen, read: list[str]) -> None:
    decision = evaluate(policy, seen)
    rows.setdefault(describe(seen, read), decision.verdict or "model")


__all__ = ["PolicyRefused", "candidates", "check_policy", "deciding", "describe", "seen_of", "situations"]
