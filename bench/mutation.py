"""Mutation testing of the modules that hold the product's promises: do the fast tests notice a one-line bug?

    nice -n 10 python bench/mutation.py                 # every module below (about an hour on two busy cores)
    python bench/mutation.py --module edge/delivery/outbox.py    # one module
    python bench/mutation.py --planted                  # only the hand-planted bugs of issue 18, each must fail
    python bench/mutation.py --retest FOLDER            # a --keep folder's survivors against today's tests

Not part of CI (it runs every fast test once per mutant). It needs mutmut 2 (`pip install '.[mutation]'`).
The working tree is copied to a scratch folder and the `edgetriage` package is pointed at that copy
(PYTHONPATH comes before the editable install), so mutants never touch your checkout, even if the run is
killed. Each module is mutated with only its own fast tests (no LLM, no video). A mutant counts as killed
when its tests fail (however slowly) or hang past mutmut's time limit. Prints killed ÷ mutants per module
and the surviving mutants (`mutmut show` diffs) so they can be judged; ends with one JSON line. Results and
the survivors' reasons: TESTING.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# third-party plugins (schemathesis, hypothesis, ...) cost seconds per run and none of these tests needs them:
# they are not loaded (PYTEST_DISABLE_PLUGIN_AUTOLOAD in scratch_copy's environment), but for the timeout
PYTEST = "python -m pytest -x -q -p no:cacheprovider -p pytest_timeout --timeout 120"

# module -> the fast tests that speak for it (pytest arguments); the service test of test_boundaries starts a
# broker and a service, which none of these modules is part of, so it is left out to keep each mutant quick
_FAST = "tests/test_boundaries.py -k 'not in_the_store_when'"
MODULES: dict[str, str] = {
    "shared/reuse.py": _FAST,
    "edge/delivery/outbox.py": f"{_FAST} tests/test_outbox.py "
                      "tests/test_faults.py::test_outbox_full_policies_by_priority_and_age_with_exact_counts",
    "edge/triage/rules.py": f"{_FAST} tests/test_rules.py "
                            "tests/test_edge_agent.py::test_rules_apply_in_order "
                     "tests/test_edge_cascade.py::test_schedule_windows_run_past_midnight "
                     "tests/test_edge_cascade.py::test_overrides_pick_the_most_specific_rule_and_inherit_the_rest "
                     "tests/test_edge_cascade.py::test_confirmation_dwell_cooldown_and_uncertain_flag "
                     "tests/test_edge_cascade.py::test_classifier_vetoes_an_uncertain_person_that_is_the_tv",
    "cloud/storage/claims.py": f"{_FAST} tests/test_faults.py::test_claims_are_exclusive_until_their_lease_runs_out",
    "cloud/storage/store.py": f"{_FAST} tests/test_store.py",
}

# The bugs issue 18 found surviving the fast tests: (what, file, original, planted, tests that must fail).
PLANTED: list[tuple[str, str, str, str, list[str]]] = [
    ("reuse refused at exactly max_distance", "shared/reuse.py", "d <= rule.max_distance", "d < rule.max_distance",
     ["tests/test_boundaries.py"]),
    ("reuse distance tightened by 2", "shared/reuse.py", "d <= rule.max_distance", "d <= rule.max_distance - 2",
     ["tests/test_boundaries.py"]),
    ("device cache expiry from the cloud's clock", "edge/triage/verdict_cache.py",
     "made_ms = min(verdict.created_ms, now_ms)",
     "made_ms = verdict.created_ms", ["tests/test_boundaries.py"]),
    ("one verdict deletes every sent row", "edge/delivery/outbox.py",
     'self._db.execute("DELETE FROM outbox WHERE event_id = ?", (event_id,))',
     'self._db.execute("DELETE FROM outbox WHERE event_id = ? OR state = \'sent\'", (event_id,))',
     ["tests/test_boundaries.py"]),
    ("a verdict before its PUBACK is ignored", "edge/delivery/outbox.py",
     '"SELECT LENGTH(payload) FROM outbox WHERE event_id = ?", (event_id,)',
     '"SELECT LENGTH(payload) FROM outbox WHERE event_id = ? AND state != \'inflight\'", (event_id,)',
     ["tests/test_boundaries.py"]),
    ("a refused PUBACK deletes the event", "edge/delivery/outbox.py",
     'self._db.execute("UPDATE outbox SET mid = NULL WHERE event_id = ?", (row[0],))\n            return row[0]',
     'self._db.execute("DELETE FROM outbox WHERE event_id = ?", (row[0],))\n            return row[0]',
     ["tests/test_boundaries.py"]),
    ("a refused PUBACK counts as delivery", "edge/delivery/outbox.py",
     'self._db.execute("UPDATE outbox SET mid = NULL WHERE event_id = ?", (row[0],))\n            return row[0]',
     'self._db.execute("UPDATE outbox SET state = \'sent\', mid = NULL WHERE event_id = ?", (row[0],))\n'
     '            return row[0]',
     ["tests/test_boundaries.py"]),
    ("the cooldown ignores the zone rule", "edge/triage/rules.py", "key = (camera, rule.scope, ev.label)",
     'key = (camera, "*", ev.label)', ["tests/test_boundaries.py"]),
    ("a verdict published before it is stored", "cloud/service.py",
     "            self.store.put_verdict(verdict)  # stored before it is published or acknowledged\n",
     "            self._publish(verdict)\n            self.store.put_verdict(verdict)\n",
     ["tests/test_boundaries.py::test_a_verdict_is_in_the_store_when_it_is_published"]),
    ("re-sends spend the budget", "edge/agent.py", "if item.attempts == 0:  # a first send", "if True:  # a first send",
     ["tests/test_edge_daemon.py::test_resends_do_not_spend_the_budget"]),
    ("the cloud config accepts unknown keys", "shared/config.py", 'extra="forbid"', 'extra="ignore"',
     ["tests/test_boundaries.py::test_cloud_config_refuses_unknown_keys_by_name"]),
    ("SQLite store: TTL ends a millisecond early", "cloud/storage/store.py", "r.expires_ms >= ?", "r.expires_ms > ?",
     ["tests/test_boundaries.py"]),
    ("Redis store: TTL ends a millisecond early", "cloud/storage/redis_store.py", "now_ms, \"+inf\")", "now_ms + 1, \"+inf\")",
     ["tests/test_boundaries.py"]),
]


def scratch_copy(dest: Path) -> dict[str, str]:
    """Copy the working tree (tracked and untracked, not ignored) to `dest` and build a package folder whose
    `edgetriage` points into the copy; returns the environment that makes Python import it."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    repo = dest / "repo"
    for name in filter(None, files):
        src = ROOT / name
        if not src.is_file():
            continue
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name.startswith("models/"):
            target.symlink_to(src)  # large and never mutated
        else:
            shutil.copy2(src, target)
    package = dest / "pkg" / "edgetriage"
    package.mkdir(parents=True)
    for src in (repo / "app").iterdir():
        (package / src.name).symlink_to(src)
    for sub in ("edge", "cloud", "shared", "models"):
        (package / sub).symlink_to(repo / sub)
    return _env(dest)


def _env(dest: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(dest / "pkg"), PYTHONDONTWRITEBYTECODE="1",
                PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")


def _check_copy(repo: Path, env: dict[str, str]) -> None:
    where = subprocess.run([sys.executable, "-c", "import edgetriage.edge.delivery.outbox as m; print(m.__file__)"],
                           cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not where.startswith(str(repo.parent)):
        raise SystemExit(f"the scratch copy is not the one imported ({where}); stopping before mutating anything")


def run_planted(repo: Path, env: dict[str, str]) -> list[dict]:
    every = sorted({t for *_, tests in PLANTED for t in tests})
    baseline = subprocess.run(f"{PYTEST} {' '.join(every)}", shell=True, cwd=repo, env=env, capture_output=True,
                              text=True)
    if baseline.returncode != 0:  # a test that fails without a bug proves nothing about the bug
        raise SystemExit("the tests fail on the unchanged copy:\n" + baseline.stdout[-3000:])
    out = []
    for what, name, old, new, tests in PLANTED:
        path = repo / name
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{name}: the line to plant {what!r} on is not there exactly once; update PLANTED")
        path.write_text(text.replace(old, new))
        try:
            proc = subprocess.run(f"{PYTEST} {' '.join(tests)}", shell=True, cwd=repo, env=env,
                                  capture_output=True, text=True)
        finally:
            path.write_text(text)
        caught = proc.returncode != 0
        out.append({"bug": what, "file": name, "caught": caught})
        print(f"{'caught ' if caught else 'MISSED '} {what} ({name})", flush=True)
    return out


def _mutmut(module: str, *extra: str) -> list[str]:
    # mutmut 2 counts only exit status 1 as failing tests; a mutant that breaks an import makes pytest exit
    # with 2 (collection error) and would count as surviving, so every non-zero status is made 1
    runner = "sh -c " + shlex.quote(f"{PYTEST} {MODULES[module]}; test $? -eq 0")
    return ["mutmut", "run", *extra, "--paths-to-mutate", module, "--tests-dir", "tests", "--runner", runner,
            "--no-progress", "--simple-output"]


def run_module(repo: Path, env: dict[str, str], module: str) -> dict:
    cache = repo / ".mutmut-cache"
    cache.unlink(missing_ok=True)
    started = time.monotonic()
    done = subprocess.run(_mutmut(module), cwd=repo, env=env, stdout=subprocess.DEVNULL)
    if done.returncode == 1 or not cache.exists():
        raise SystemExit(f"mutmut could not run on {module} (exit {done.returncode}); see its output above")
    return report(repo, env, module, time.monotonic() - started)


def retest(dest: Path) -> dict:
    """A kept folder's surviving mutants again, against the working tree's tests as they are now (after
    tests were added for them), without running every mutant again."""
    repo, env = dest / "repo", _env(dest)
    db = sqlite3.connect(str(repo / ".mutmut-cache"))
    (module,) = db.execute("SELECT filename FROM SourceFile").fetchone()
    ids = [i for (i,) in db.execute("SELECT id FROM Mutant WHERE status = 'bad_survived'")]
    db.close()
    shutil.rmtree(repo / "tests")
    shutil.copytree(ROOT / "tests", repo / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    started = time.monotonic()
    for mutant in ids:
        subprocess.run(_mutmut(module, str(mutant)), cwd=repo, env=env, stdout=subprocess.DEVNULL)
    return report(repo, env, module, time.monotonic() - started)


def report(repo: Path, env: dict[str, str], module: str, seconds: float) -> dict:
    db = sqlite3.connect(str(repo / ".mutmut-cache"))
    rows = db.execute("SELECT m.id, m.status FROM Mutant m JOIN Line l ON m.line = l.id "
                      "JOIN SourceFile f ON l.sourcefile = f.id WHERE f.filename = ?", (module,)).fetchall()
    db.close()
    # "ok_suspicious": the tests failed, only more slowly than without the mutant (a busy machine)
    killed = [i for i, s in rows if s in ("ok_killed", "ok_suspicious", "bad_timeout")]
    timeouts = [i for i, s in rows if s == "bad_timeout"]
    survived = [i for i, s in rows if s not in ("ok_killed", "ok_suspicious", "bad_timeout")]
    print(f"\n== {module}: {len(killed)} killed of {len(rows)} mutants ({len(timeouts)} of them by a timeout) "
          f"({len(killed) / max(1, len(rows)):.3f}) in {seconds:.0f} s", flush=True)
    for kind, ids in (("timed out (counted as killed)", timeouts), ("survivor", survived)):
        for mutant in ids:
            diff = subprocess.run(["mutmut", "show", str(mutant)], cwd=repo, env=env, capture_output=True, text=True)
            lines = [ln for ln in diff.stdout.splitlines() if ln.startswith(("-", "+", "@@")) and
                     not ln.startswith(("---", "+++"))]
            print(f"-- {kind} {mutant}:\n" + "\n".join(lines), flush=True)
    return {"module": module, "mutants": len(rows), "killed": len(killed), "timeouts": len(timeouts),
            "survived": len(survived), "score": round(len(killed) / max(1, len(rows)), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES), help="only these (repeatable)")
    parser.add_argument("--planted", action="store_true", help="only plant the bugs of issue 18 and run their tests")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (its path is printed)")
    parser.add_argument("--retest", type=Path, metavar="FOLDER",
                        help="a folder kept with --keep: run its survivors again against the current tests")
    args = parser.parse_args()
    if args.retest is not None:
        result = retest(args.retest)
        print(json.dumps({"modules": {result["module"]: result["score"]}, "mutants": result["mutants"],
                          "killed": result["killed"], "score": result["score"]}))
        return 0
    if not args.planted and shutil.which("mutmut") is None:
        print("mutmut is not installed: pip install '.[mutation]'", file=sys.stderr)
        return 2
    dest = Path(tempfile.mkdtemp(prefix="edgetriage-mutation-"))
    try:
        env = scratch_copy(dest)
        repo = dest / "repo"
        _check_copy(repo, env)
        if args.planted:
            planted = run_planted(repo, env)
            print(json.dumps({"planted": len(planted), "caught": sum(p["caught"] for p in planted)}))
            return 0 if all(p["caught"] for p in planted) else 1
        results = [run_module(repo, env, m) for m in (args.module or list(MODULES))]
        total = sum(r["mutants"] for r in results)
        killed = sum(r["killed"] for r in results)
        print(json.dumps({"modules": {r["module"]: r["score"] for r in results}, "mutants": total,
                          "killed": killed, "score": round(killed / max(1, total), 3)}))
        return 0
    finally:
        if args.keep:
            print(f"scratch folder kept: {dest}", file=sys.stderr)
        else:
            shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
