"""`edgetriage demo` as a user runs it: a subprocess, the embedded broker, the real LLM, a real clip."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

KEYS = ("frames_read", "frames_detected", "tracks", "events", "escalated", "verdicts_llm",
        "verdicts_device_cache", "verdicts_cloud_cache")


def test_demo_prints_escalations_verdicts_and_reuse(clip_one_by_one):
    result = subprocess.run(
        [sys.executable, "-m", "edgetriage", "demo", "--json", "--clip", str(clip_one_by_one), "--max-frames", "260"],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    for key in KEYS:
        assert isinstance(summary[key], int), key
    assert set(summary["latency_ms"]) >= {"detect", "verdict_llm", "verdict_cache"}
    assert summary["frames_read"] > 0 and summary["frames_detected"] <= summary["frames_read"]
    assert summary["verdicts_llm"] >= 1
    assert summary["verdicts_device_cache"] + summary["verdicts_cloud_cache"] >= 1
    assert any(line.startswith("ESCALATE") for line in lines)
    assert any(line.startswith("VERDICT") and "from LLM" in line for line in lines)
    assert "Traceback" not in result.stderr


def test_bad_config_is_one_clear_line(tmp_path):
    bad = tmp_path / "edge.toml"
    bad.write_text('device = "porch-1"\n[rules]\nmin_scor = 0.3\n')
    result = subprocess.run([sys.executable, "-m", "edgetriage", "edge", "check-config", "--config", str(bad)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "rules.min_scor" in result.stderr and "unknown key" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_clip_is_one_clear_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "edgetriage", "demo", "--clip", str(tmp_path / "nope.mp4")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "nope.mp4" in result.stderr and "Traceback" not in result.stderr
