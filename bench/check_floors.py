"""Compare a benchmark's JSON result (its last stdout line) with its floors in bench/floors.json.

    python bench/edge.py --quick | tee edge.out; python bench/check_floors.py edge edge.out

Exit status 1 when a figure is under its `min` or over its `max`, naming each one; figures missing from the
result fail too, so a benchmark that silently stops measuring something is caught.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def last_json_line(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit("no JSON line in the benchmark's output")


def check(name: str, result: dict, floors: dict) -> list[str]:
    problems = []
    for key, bound in floors.get(name, {}).items():
        if key.startswith("_"):
            continue
        value = result.get(key)
        if not isinstance(value, (int, float)):
            problems.append(f"{key}: missing from the result")
            continue
        if "min" in bound and value < bound["min"]:
            problems.append(f"{key} = {value} is under its floor {bound['min']} (goal {bound.get('goal')})")
        if "max" in bound and value > bound["max"]:
            problems.append(f"{key} = {value} is over its ceiling {bound['max']} (goal {bound.get('goal')})")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    name, path = argv[1], Path(argv[2])
    floors = json.loads((Path(__file__).with_name("floors.json")).read_text())
    result = last_json_line(path.read_text())
    problems = check(name, result, floors)
    for p in problems:
        print(f"{name}: {p}", file=sys.stderr)
    shown = {k: result.get(k) for k in floors.get(name, {}) if not k.startswith("_")}
    print(f"{name}: {'FAIL' if problems else 'ok'} {json.dumps(shown)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
