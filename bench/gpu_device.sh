#!/usr/bin/env bash
# The GPU machine's whole visit in one script (issue 29): versions, the device, the CPU-against-CUDA answers
# check, and bench/gpu.py for each model shape within a time budget. Run from the repo root:
#
#     OUT=/some/folder bash bench/gpu_device.sh          # ~8 minutes at most; BUDGET_S=... to change
#
# Every step runs under `timeout` and the script goes on when one fails; everything lands in $OUT (console.log,
# versions.txt, nvidia-smi.txt, check.json, gpu_<shape>.json, summary.json). Without CUDA it runs the CPU's quick
# form instead, so the same script can be tried anywhere. Needs only python with torch and transformers.
set -u
OUT=${OUT:-/tmp/edgetriage-gpu}
BUDGET_S=${BUDGET_S:-450}
PY=${PYTHON:-python}
mkdir -p "$OUT"
STARTED=$(date +%s)
exec > >(tee -a "$OUT/console.log") 2>&1

left() { echo $(( BUDGET_S - ($(date +%s) - STARTED) )); }
step() {  # step NAME SECONDS COMMAND...: run it under timeout, say how it ended, never stop the script
    local name=$1 limit=$2; shift 2
    local room; room=$(left)
    if (( room < 20 )); then echo "== $name: skipped, ${room}s of the budget left" >&2; return 0; fi
    (( limit > room )) && limit=$room
    echo "== $name (at most ${limit}s): $*" >&2
    timeout --kill-after=10 "$limit" "$@"
    local rc=$?
    echo "== $name: exit $rc$([ $rc -eq 124 ] && echo ' (timed out)') after $(( $(date +%s) - STARTED ))s in all" >&2
    return 0
}

step versions 60 "$PY" -c "import sys, torch, transformers; print('python', sys.version.split()[0]); \
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available()); \
print('transformers', transformers.__version__); \
print('device', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')" | tee "$OUT/versions.txt"
if command -v nvidia-smi > /dev/null; then
    step nvidia-smi 30 nvidia-smi | tee "$OUT/nvidia-smi.txt"
else
    echo "== nvidia-smi: not on this machine"
fi
CUDA=$("$PY" -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null || echo 0)

# The answers check: through pytest where it and the package import (tests/test_device.py), else plainly.
if "$PY" -c "import pytest, edgetriage" 2> /dev/null; then
    step pytest-device 150 "$PY" -m pytest -q -p no:cacheprovider tests/test_device.py
fi
step check 120 "$PY" bench/gpu.py --check | tee "$OUT/check.json"

if [ "$CUDA" = 1 ]; then
    # Largest last: a shape that runs out of time or memory leaves the others' figures.
    for shape in 135M 1.7B 7B; do
        room=$(left)
        share=$(( room - 15 ))
        [ "$shape" = 135M ] && share=$(( room / 3 ))
        [ "$shape" = 1.7B ] && share=$(( room / 2 ))
        step "gpu $shape" "$share" "$PY" bench/gpu.py --shape "$shape" --budget-s $(( share - 45 )) \
            | tail -n 1 | tee "$OUT/gpu_$shape.json"
    done
else
    echo "== no CUDA here: the CPU's quick form"
    step "gpu cpu quick" "$(left)" "$PY" bench/gpu.py --quick --random --budget-s $(( $(left) - 60 )) \
        | tail -n 1 | tee "$OUT/gpu_cpu_quick.json"
fi

# One summary: every JSON line written above, by file.
"$PY" - "$OUT" <<'EOF' || true
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
summary = {}
for path in sorted(out.glob("*.json")):
    if path.name == "summary.json":
        continue
    lines = [l for l in path.read_text().splitlines() if l.startswith("{")]
    summary[path.stem] = json.loads(lines[-1]) if lines else None
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
for name, result in summary.items():
    if result and "best" in result and result["best"]:
        print(f"{name}: {result['model']} on {result['device_name']}: batch 1 {result['batch1']['ms_per_verdict']} ms, "
              f"best batch {result['best']['batch']}: {result['best']['verdicts_per_s']} verdicts/s")
    elif result and "ok" in result:
        print(f"{name}: answers check ok={result['ok']}")
    else:
        print(f"{name}: no figures")
EOF
echo "== done in $(( $(date +%s) - STARTED ))s; results in $OUT"
