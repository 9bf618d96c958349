"""The config's structured policy form (cloud.policyform) to the Policy that decides, and back: `rules` in the
config become the same Clauses the words compile into; `policy explain --write` writes a compiled policy as
that form (TOML), the words kept as a comment. Also the lines check-config and `policy explain` print: the form
that runs, what was not compiled and what the evaluator does with it, and the table of deciding situations."""

from __future__ import annotations

import json

from ..policyform import CondForm, RuleForm, clock_minutes
from .policy import WEEKDAY_NAMES, Clause, Cond, Policy
from .policy_check import PolicyRefused, check_policy, deciding

_DIRECTIONS = {"towards": "towards the camera", "away": "away from the camera", "left": "left", "right": "right"}
_WAYS = {v: k for k, v in _DIRECTIONS.items()}


def _mask(days: list[str]) -> int:
    return sum(1 << WEEKDAY_NAMES.index(d) for d in days)


def _days(mask: int) -> list[str]:
    return [d for i, d in enumerate(WEEKDAY_NAMES) if mask >> i & 1]


def cond_of(form: CondForm) -> Cond:
    neg = form.negated
    if form.time is not None:
        start, end = (clock_minutes(t) % 1440 for t in form.time.split("-"))
        value: tuple = (start, end) if form.starts_on is None else (start, end, _mask(form.starts_on))
        return Cond("time", value, neg)
    if form.days is not None:
        return Cond("weekday", _mask(form.days), neg)
    for key, kind in (("dwell_s", "dwell"), ("people", "people")):
        text = getattr(form, key)
        if text is not None:
            op = text.rstrip("0123456789. ").strip()
            n = float(text[len(op):]) if kind == "dwell" else int(text[len(op):])
            return Cond(kind, (op, n), neg)
    if form.zone is not None:
        from ...shared.policycell import zone_word

        return Cond("zone", zone_word(form.zone), neg)
    if form.direction is not None:
        return Cond("direction", _DIRECTIONS[form.direction], neg)
    if form.label is not None:
        return Cond("label", tuple(x.lower() for x in form.label), neg)
    if form.hivis is not None:
        return Cond("hivis", True, neg)
    if form.upper is not None or form.lower is not None:
        return Cond("upper" if form.upper else "lower", form.upper or form.lower, neg)
    if form.carries is not None:
        return Cond("carries", tuple(form.carries), neg)
    group = form.any if form.any is not None else form.all
    return Cond("any" if form.any is not None else "all", tuple(cond_of(c) for c in group or []), neg)


def from_form(rules: list[RuleForm], otherwise: str, said: str) -> Policy:
    """The Policy a config's `rules` say; PolicyRefused where a rule can never hold or two contradict."""
    clauses = tuple(Clause(r.verdict, tuple(cond_of(c) for c in r.when), r.words or f"rule {i}")
                    for i, r in enumerate(rules, 1))
    policy = Policy(said, clauses, otherwise)
    check_policy(policy, [0] * len(clauses))  # rules are ordered by the operator: only never-true ones refused
    return policy


def form_of(cond: Cond) -> dict:
    """A condition as the config writes it (cloud.policyform.CondForm)."""
    kind, v = cond.kind, cond.value
    out: dict
    if kind == "time":
        out = {"time": f"{v[0] // 60:02d}:{v[0] % 60:02d}-{v[1] // 60:02d}:{v[1] % 60:02d}"}  # type: ignore[index]
        if len(v) > 2 and v[2] is not None:  # type: ignore[arg-type]
            out["starts_on"] = _days(v[2])  # type: ignore[index]
    elif kind == "weekday":
        out = {"days": _days(int(v))}  # type: ignore[call-overload]
    elif kind in ("dwell", "people"):
        out = {"dwell_s" if kind == "dwell" else "people": f"{v[0]} {v[1]:g}"}  # type: ignore[index]
    elif kind == "direction":
        out = {"direction": _WAYS[str(v)]}
    elif kind in ("label", "carries"):
        out = {kind: list(v)}  # type: ignore[call-overload]
    elif kind in ("any", "all"):
        out = {kind: [form_of(c) for c in v]}  # type: ignore[attr-defined]
    else:
        out = {kind: v}
    if cond.negated:
        out["negated"] = True
    return out


def to_toml(policy: Policy, camera: str | None, zone: str | None) -> str:
    """The policy as a `[[analyzer.policies]]` entry with `rules`, its words kept as comments."""
    lines = ["[[analyzer.policies]]"]
    lines += [f"# {line}" for line in f"words: {policy.text}".splitlines()]
    if camera:
        lines.append(f"camera = {json.dumps(camera)}")
    if zone:
        lines.append(f"zone = {json.dumps(zone)}")
    lines.append(f"otherwise = {json.dumps(policy.otherwise)}")
    for clause in policy.clauses:
        if not clause.compiled:
            raise PolicyRefused(f"“{clause.source}” is not compiled: it has no rule form to write")
        lines += ["", "[[analyzer.policies.rules]]", f"verdict = {json.dumps(clause.verdict)}",
                  f"words = {json.dumps(clause.source[:300], ensure_ascii=False)}"]
        conds = ", ".join(_inline(form_of(c)) for c in clause.conds if c.kind != "place")  # the camera: its entry
        lines.append(f"when = [{conds}]")
    return "\n".join(lines) + "\n"


def _inline(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def explain(policy: Policy) -> list[str]:
    """The form that runs, each clause with the words it used, what is not compiled and what the evaluator does
    with it, and the table of deciding situations with the verdict each gets."""
    lines = ["runs as:"]
    for i, clause in enumerate(policy.clauses, 1):
        if clause.compiled:
            lines.append(f"  {i}. {clause.verdict} if: {clause.words()}")
            if clause.used:
                lines.append(f"     from the words: {' | '.join(clause.used)}")
        else:
            lines.append(f"  {i}. NOT COMPILED: “{clause.source}”: every event no rule before it decides goes to "
                         f"the model (decided_by: model); {' '.join(clause.used)}")
    tail = "the model is asked" if policy.otherwise == "model" else policy.otherwise
    lines.append(f"  otherwise: {tail}" + ("" if policy.otherwise_said else " (the words give no otherwise)"))
    rows = deciding(policy)
    if rows:
        width = max(len(s) for s, _ in rows)
        lines.append("deciding situations:")
        lines += [f"  {s.ljust(width)}  -> {v}" for s, v in rows]
    return lines


__all__ = ["cond_of", "explain", "form_of", "from_form", "to_toml"]
