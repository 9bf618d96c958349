"""bench/policies.py's blind part for the compiler before issue 36 (no refusals, no "model" otherwise): the
"before" figures in BENCHMARKS.md. Run it in a checkout of main at d949983 with bench/policies_blind.py beside
it: `python bench/policies_blind_before.py`. Against today's code, use `python bench/policies.py --blind-only`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from edgetriage.cloud.analysis.policy import Seen, evaluate  # noqa: E402
from edgetriage.cloud.analysis.policy_words import compile_policy  # noqa: E402
from edgetriage.shared.policycell import EventFacts, zone_word  # noqa: E402
from policies_blind import BLIND  # noqa: E402

DEFAULTS = {"time": "12:00", "weekday": "Wed", "zones": [], "dwell_s": 5.0, "direction": None, "people": 1,
            "label": "person", "hivis": False, "upper": None, "lower": None, "carries": []}
WAYS = {"towards": "towards the camera", "away": "away from the camera", "left": "left", "right": "right"}
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def seen(f: dict) -> Seen:
    h, m = (int(x) for x in f["time"].split(":"))
    event = EventFacts(h * 60 + m, DAYS.index(f["weekday"]), frozenset(zone_word(z) for z in f["zones"]),
                       float(f["dwell_s"]), WAYS.get(f["direction"], ""), int(f["people"]))
    return Seen(event, f["label"], f["hivis"], f["upper"], f["lower"], frozenset(f["carries"]))


def main() -> None:
    figures = dict.fromkeys(("miscompiled_blind", "decided_wrong_blind", "correct", "flagged_blind", "cases_blind",
                             "cases_decided_blind"), 0)
    for entry in BLIND:
        policy = compile_policy(entry["words"], tuple(entry["zones"]), entry["camera"])
        if "refuse" in entry:  # nothing was ever refused: one accepted without a flag is a miscompile
            figures["miscompiled_blind"] += not policy.uncompiled
            continue
        flag, wrong = bool(policy.uncompiled), 0
        figures["flagged_blind"] += flag
        for case in entry["cases"]:
            f = {**DEFAULTS, **case}
            decision = evaluate(policy, seen(f))
            got, expected = decision.verdict or "model", entry["meaning"](f)
            figures["cases_blind"] += 1
            figures["cases_decided_blind"] += decision.verdict is not None
            wrong += got != expected
            figures["decided_wrong_blind"] += decision.verdict is not None and got != expected
        figures["miscompiled_blind"] += not flag and wrong > 0
        figures["correct"] += not flag and wrong == 0
    figures["compiled_correct_share_blind"] = round(figures.pop("correct") / len(BLIND), 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
