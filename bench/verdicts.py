"""Are the cloud's verdicts worth having? The CPU default (translator + SmolLM2-135M + check) on a balanced,
labelled crop set built from the clips this repository ships (bench/verdict_crops.py): people from every
labelled visit, false detections from empty scenes, the road and the parking lot.

Every crop is sent the same way (label "person", score 0.45, uncertain, one detection: its own box), so only
the picture can decide. Reported side by side with what a constant answer would get:

- agreement: final verdicts equal to the labels; recall per class; majority_share: the share of the most
  common verdict (a constant answer shows as 1.0);
- agreement_model: the model's own answers before the check; overrides: the share the check overruled;
  corrected: the share whose description said more than the facts and was replaced by their words;
- ece: expected calibration error of the confidence (10 bins), calibrated leave-one-clip-out (each clip's
  crops get a calibration fitted on the other clips only);
- p50_ms: median verdict latency (translator + model + check, one event at a time).

With --shifted, the same crops also as a camera would send them under eight shifts (verdict_shifts.py: night,
small, jpeg30, blur, upper, lower, mirrored, bright), judged in batches (one model answer per distinct prompt,
so their latency is not reported): agreement and recall per shift next to the clean figures, and the ECE of
the leave-one-clip-out calibration over clean and shifted crops together.

    python bench/verdicts.py            # the whole set (89 crops; ~5 min on a quiet 2-core machine)
    python bench/verdicts.py --fit      # also refit the shipped calibration (cloud/analysis/calibration.json)
    python bench/verdicts.py --every 4  # every 4th crop, for a quick look
    python bench/verdicts.py --every 4 --shifted --shift-every 2 --fit   # what calibration.json is fitted on
    python bench/verdicts.py --shifted --views sent   # the translator's single look of before, for comparison

Last stdout line: one JSON object with `agreement`, `recall`, `majority_share`, `ece`, `overrides`, `corrected`,
`agreement_model`, `p50_ms`, `crops`; with --shifted also `shift_agreement` ({shift: {agreement, recall}},
"clean" included), `shift_min` (the lowest agreement of them), `shift_benign_min` (the lowest benign recall),
`ece_shifted` and `shifted_crops`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from edgetriage.cloud.analysis.calibrate import Calibration, ece, features, fit  # noqa: E402
from edgetriage.cloud.analysis.transformers import build_engine  # noqa: E402
from edgetriage.cloud.analysis.translator import VIEWS, Translator  # noqa: E402
from edgetriage.cloud.config import AnalyzerConfig  # noqa: E402
from edgetriage.shared.ids import uuid7  # noqa: E402
from edgetriage.shared.protocol import Detection, Event  # noqa: E402
from verdict_crops import build  # noqa: E402
from verdict_shifts import SHIFTS, shifted_sets  # noqa: E402

CALIBRATION = Path(__file__).resolve().parent.parent / "cloud" / "analysis" / "calibration.json"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def event_for(crop) -> Event:
    """The same label, score and flag for every crop: only the picture differs."""
    return Event(event_id=uuid7(), device="bench", camera="cam", captured_ms=int(time.time() * 1000),
                 label="person", score=0.45, uncertain=True, track_id=1,
                 detections=[Detection(label="person", score=0.45, box=crop.box)], phash="0" * 16,
                 reason="score in the uncertain band", crop=crop.jpeg)


def leave_one_clip_out(rows: list[dict]) -> list[float]:
    """Each row's confidence from a calibration fitted on the rows of the other clips."""
    out = [0.0] * len(rows)
    for clip in sorted({r["clip"] for r in rows}):
        train = [r for r in rows if r["clip"] != clip]
        calibration = fit([r["x"] for r in train], [r["correct"] for r in train])
        for i, r in enumerate(rows):
            if r["clip"] == clip:
                out[i] = calibration.confidence(r["x"])
    return out


def row_for(crop, analysis, ms: float) -> dict:
    verdict_p = analysis.extra.get("verdict_p") or {}
    overruled = analysis.checked is not None and analysis.verdict != analysis.model_verdict
    x = features(analysis.verdict, verdict_p, analysis.extra.get("evidence_score"), overruled,
                 analysis.extra.get("picture") or ())
    return {
        "clip": crop.clip,
        "expected": crop.expected,
        "verdict": analysis.verdict,
        "model": analysis.model_verdict,
        "overruled": overruled,
        "corrected": list(analysis.corrected),
        "ms": ms,
        "x": x,
        "correct": analysis.verdict == crop.expected,
        "shipped": analysis.confidence,
        "score": analysis.extra.get("person_score"),
    }


def say_row(number: int, crop, analysis, ms: float) -> None:
    say(f"{number:3d} {crop.what[:26]:26s} {crop.clip[:12]:12s} {crop.seconds:6.1f}s expected {crop.expected:6s} "
        f"model {analysis.model_verdict or '-':7s} final {analysis.verdict:7s} conf {analysis.confidence:.2f} "
        f"{ms:6.0f} ms  {analysis.description}" + (f"  [checked: {analysis.checked}]" if analysis.checked else "")
        + (f"  [error: {analysis.error}]" if analysis.error else ""))


def judge_shifted(engine, crops: list, batch: int) -> list[dict]:
    """The shifted crops, several at a time (their latency is not reported: batches answer faster per crop)."""
    rows = []
    for start in range(0, len(crops), batch):
        group = crops[start:start + batch]
        for number, (crop, analysis) in enumerate(zip(group, engine.analyze_batch([event_for(c) for c in group]),
                                                      strict=True), start + 1):
            rows.append(row_for(crop, analysis, 0.0))
            if not rows[-1]["correct"]:
                say_row(number, crop, analysis, 0.0)
    return rows


def agreement_of(rows: list[dict]) -> dict:
    """Agreement and recall per class of one set of rows."""
    counts = Counter(r["expected"] for r in rows)
    return {"agreement": round(sum(r["correct"] for r in rows) / len(rows), 3),
            "recall": {label: round(sum(r["correct"] for r in rows if r["expected"] == label) / counts[label], 3)
                       for label in sorted(counts)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=int, default=1, help="take every n-th crop (default: all)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (more only on an idle machine)")
    parser.add_argument("--fit", action="store_true", help="refit the shipped calibration on the whole set "
                        "(with --shifted: on the clean and the shifted crops)")
    parser.add_argument("--shifted", action="store_true", help="also judge every crop under each shift "
                        "(verdict_shifts.py: night, small, jpeg30, blur, upper, lower, mirrored, bright)")
    parser.add_argument("--shift-every", type=int, default=1, help="shift every n-th crop of the whole set "
                        "(whatever --every takes for the clean figures)")
    parser.add_argument("--shifts", default=",".join(SHIFTS), help="which shifts, comma-separated")
    parser.add_argument("--views", default=",".join(VIEWS), help="the translator's views of a crop "
                        f"(comma-separated, of {', '.join(VIEWS)}; 'sent' alone is the single look of before)")
    args = parser.parse_args(argv)
    names = tuple(n.strip() for n in args.shifts.split(",") if n.strip()) if args.shifted else ()
    unknown = [n for n in names if n not in SHIFTS]
    if unknown:
        parser.error(f"unknown shift(s) {', '.join(unknown)}; known: {', '.join(SHIFTS)}")

    started = time.monotonic()
    config = AnalyzerConfig(threads=args.threads)
    try:
        translator = Translator(views=tuple(v.strip() for v in args.views.split(",") if v.strip()))
    except ValueError as exc:
        parser.error(str(exc))
    engine = build_engine(config, translator)
    labelled = build(engine.translator.look)
    crops = labelled[:: max(1, args.every)]
    counts = Counter(c.expected for c in crops)
    say(f"{len(crops)} crops: {dict(counts)}; model {engine.name}, loaded in {time.monotonic() - started:.1f} s")
    engine.analyze(event_for(crops[0]))  # the template's prefix cache is built once per process, not timed
    rows = []
    for number, crop in enumerate(crops, 1):
        t0 = time.perf_counter()
        analysis = engine.analyze(event_for(crop))
        ms = (time.perf_counter() - t0) * 1000
        rows.append(row_for(crop, analysis, ms))
        say_row(number, crop, analysis, ms)
    shifted_rows: dict[str, list[dict]] = {}
    engine.memo = {}  # shifted crops often read alike ("Person: no."): one answer per distinct prompt
    for name, shifted_crops in shifted_sets(labelled[:: max(1, args.shift_every)], names).items():
        t0 = time.monotonic()
        say(f"-- {name}: {len(shifted_crops)} crops (wrong verdicts listed)")
        shifted_rows[name] = judge_shifted(engine, shifted_crops, engine.max_batch)
        say(f"-- {name}: {agreement_of(shifted_rows[name])} in {time.monotonic() - t0:.0f} s")
    n = len(rows)
    clean = agreement_of(rows)
    agreement, recall = clean["agreement"], clean["recall"]
    agreement_model = sum(r["model"] == r["expected"] for r in rows) / n
    majority_share = Counter(r["verdict"] for r in rows).most_common(1)[0][1] / n
    overrides = sum(r["overruled"] for r in rows) / n
    corrected = sum(bool(r["corrected"]) for r in rows) / n
    every = rows + [r for name in shifted_rows for r in shifted_rows[name]]
    held_out = leave_one_clip_out(every)
    error = ece(held_out[:n], [r["correct"] for r in rows])
    constant = max(counts.values()) / n
    say(f"agreement {agreement:.3f} (a constant answer: {constant:.3f}); the model alone {agreement_model:.3f}; "
        f"recall {recall}; most common verdict {majority_share:.3f} of all; overruled by the check {overrides:.3f}; "
        f"descriptions replaced by the facts' words {corrected:.3f}")
    if shifted_rows:
        say(f"ECE leave-one-clip-out fitted on the clean crops only: "
            f"{ece(leave_one_clip_out(rows), [r['correct'] for r in rows]):.3f}")
    say(f"ECE leave-one-clip-out {error:.3f} (shipped calibration on the same set: "
        f"{ece([r['shipped'] for r in rows], [r['correct'] for r in rows]):.3f}); "
        f"confidences {min(held_out[:n]):.2f}..{max(held_out[:n]):.2f}")
    if args.fit:
        calibration = fit([r["x"] for r in every], [r["correct"] for r in every])
        fitted_on = f"bench/verdicts.py, {n} crops" + (f" and {len(every) - n} shifted ({', '.join(names)})"
                                                        if names else "")
        CALIBRATION.write_text(json.dumps({"weights": [round(w, 4) for w in calibration.weights],
                                           "fitted_on": fitted_on}) + "\n")
        say(f"wrote {CALIBRATION}")
    else:
        Calibration.load()  # the shipped file must stay readable
    result = {
        "agreement": agreement,
        "recall": recall,
        "majority_share": round(majority_share, 3),
        "ece": round(error, 3),
        "overrides": round(overrides, 3),
        "corrected": round(corrected, 3),
        "agreement_model": round(agreement_model, 3),
        "p50_ms": round(statistics.median(r["ms"] for r in rows), 1),
        "crops": n,
    }
    if shifted_rows:
        table = {"clean": clean} | {name: agreement_of(r) for name, r in shifted_rows.items()}
        shifted_all = [r for name in shifted_rows for r in shifted_rows[name]]
        for name, line in table.items():
            say(f"{name:9s} agreement {line['agreement']:.3f}  recall " +
                "  ".join(f"{k} {v:.3f}" for k, v in line["recall"].items()))
        result.update(shift_agreement=table, shift_min=min(t["agreement"] for t in table.values()),
                      shift_benign_min=min(t["recall"].get("benign", 1.0) for t in table.values()),
                      ece_shifted=round(ece(held_out[n:], [r["correct"] for r in shifted_all]), 3),
                      shifted_crops=len(shifted_all))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
