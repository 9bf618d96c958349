"""Mutation testing of the modules that hold the product's promises: do the fast tests notice a one-line bug?

    nice -n 10 python bench/mutation.py                 # every module below (about an hour on two busy cores)
    python bench/mutation.py --module edge/delivery/outbox.py    # one module
    python bench/mutation.py --planted                  # only the hand-planted bugs (issues 18, 31, 40)
    python bench/mutation.py --retest FOLDER            # a --keep folder's survivors and untested, today's tests
    python bench/mutation.py --resume FOLDER            # a --keep folder's run that stopped, carried on

Not part of CI (it runs every fast test once per mutant). It needs mutmut 2 (`pip install '.[mutation]'`).
The working tree is copied to a scratch folder and the `edgetriage` package is pointed at that copy
(PYTHONPATH comes before the editable install), so mutants never touch your checkout, even if the run is
killed. Each module is mutated with only its own fast tests (no LLM, no video). A mutant counts as killed
when its tests fail (however slowly) or hang past mutmut's time limit. Prints killed ÷ mutants per module
and the surviving mutants (`mutmut show` diffs) so they can be judged; ends with one JSON line. Results and
the survivors' reasons: docs/developers/testing.md.
Never `mutmut show` in a kept folder while its run goes on: it reads the
module, mutated at that moment, into mutmut's cache, and the run stops ("Attribute Mutant.line is required").
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# third-party plugins (schemathesis, hypothesis, ...) cost seconds per run and none of these tests needs them:
# they are not loaded (PYTEST_DISABLE_PLUGIN_AUTOLOAD in scratch_copy's environment), but for the timeout
PYTEST = f"{shlex.quote(sys.executable)} -m pytest -x -q -p no:cacheprovider -p pytest_timeout --timeout 120"

# module -> the fast tests that speak for it (pytest arguments); the service test of test_boundaries starts a
# broker and a service, which none of these modules is part of, so it is left out to keep each mutant quick
_FAST = "tests/test_boundaries.py -k 'not in_the_store_when'"
_PROMISES = "tests/test_promises_cloud.py"
MODULES: dict[str, str] = {
    "edge/delivery/outbox.py": f"{_FAST} tests/test_outbox.py "
                      "tests/test_faults.py::test_outbox_full_policies_by_priority_and_age_with_exact_counts",
    "edge/triage/rules.py": f"{_FAST} tests/test_rules.py tests/test_edge_agent.py::test_rules_apply_in_order "
                     "tests/test_edge_cascade.py::test_schedule_windows_run_past_midnight "
                     "tests/test_edge_cascade.py::test_overrides_pick_the_most_specific_rule_and_inherit_the_rest "
                     "tests/test_edge_cascade.py::test_confirmation_dwell_cooldown_and_uncertain_flag "
                     "tests/test_edge_cascade.py::test_classifier_vetoes_an_uncertain_person_that_is_the_tv",
    "cloud/storage/claims.py": f"{_FAST} tests/test_faults.py::test_claims_are_exclusive_until_their_lease_runs_out",
    "cloud/storage/store.py": f"{_FAST} tests/test_store.py",
    "cloud/reuse/sites.py": "tests/test_site_table.py",  # issue 38: the site table and the devices' claims
    # issue 31: the modules that hold the newer promises, each with the fast tests that name it
    "shared/reuse.py": f"{_FAST} tests/test_promises_reuse.py",
    "cloud/reuse/verdicts.py": f"{_PROMISES}",
    "cloud/broker/takeover.py": f"{_PROMISES}",
    "cloud/scheduling/fairqueue.py": f"{_PROMISES}",
    "cloud/reuse/singleflight.py": f"{_PROMISES} tests/test_singleflight.py",
    "cloud/analysis/policy.py": "tests/test_policy_eval.py tests/test_policy_eval_edges.py",  # no parsing (2 s)
    # words -> verdicts, each sentence parsed once per machine (tests/policy_reads.py): ~8 s
    "cloud/analysis/policy_words.py": "tests/test_policy_compile.py tests/test_policy_words.py "
                                      "tests/test_policy_phrasing.py tests/test_policy_words_edges.py "
                                      "tests/test_policy_fillers.py tests/test_policy_sound.py "
                                      "tests/test_policy_said.py tests/test_policy_contrast.py",
    "cloud/analysis/gate.py": "tests/test_policy_gate.py",  # stub translator and model; sentences kept (6 s)
    "cloud/analysis/check.py": "tests/test_promises_ask.py tests/test_facts.py tests/test_verdicts.py -m 'not slow'",
    "cloud/ask/cache.py": "tests/test_promises_ask.py",
    "cloud/ask/router.py": "tests/test_promises_ask.py tests/test_promises_router.py tests/test_ask.py "
                           "tests/test_ask_words.py -m 'not slow'",
    "cloud/ask/when.py": "tests/test_ask_when.py tests/test_ask_when_edges.py --timeout 10",  # time words (0.3 s)
    "cloud/ask/reading.py": "tests/test_ask_readline.py --timeout 10",  # its unit tests (0.3 s)
    "cloud/ask/dates.py": "tests/test_ask_when.py tests/test_ask_when_edges.py --timeout 10",  # moved from when.py
    "cloud/ask/ranked.py": "tests/test_ask_phrasings.py -k 'superlative'",  # "which camera saw the most" (3 s)
    "cloud/ask/negation.py": "tests/test_ask_phrasings.py",
    "cloud/ask/visits.py": "tests/test_ask_reading.py",
    "edge/vision/closer.py": "tests/test_promises_edge.py",
    "edge/vision/looks.py": "tests/test_promises_edge.py",
    # issue 40: only the cloud's own keys reach other devices; only honest judgements teach (unit tests, seconds;
    # the thresholds' also push to a Mosquitto of their own and run the automatic round for 3 s)
    "cloud/reuse/trust.py": "tests/test_trust_rules.py "
                      "tests/test_trust_forgery.py::test_the_cloud_knows_a_picture_it_embedded_before_on_arrival "
                      "tests/test_trust_keys.py::test_the_cloud_keys_are_its_own_and_reach_what_the_devices_keys_reach",
    "cloud/teach/suppress/learner.py": "tests/test_learner_evidence.py --timeout 60",
    "cloud/teach/thresholds.py": "tests/test_thresholds_floor.py --timeout 60",
    # issue 40: the feedback, health and intake rules, each with pure tests of its own (no broker, no service)
    "cloud/broker/health.py": "tests/test_health_stall.py",
    "cloud/teach/feedback.py": "tests/test_feedback_rules.py",
    "cloud/broker/intake.py": "tests/test_intake_policy.py --timeout 30",  # 3 s; a mutant that loops for ever, 30 s
    "cloud/broker/admission.py": "tests/test_intake_policy.py --timeout 30",  # check_captured moved here (issue 43)
}


@dataclass(frozen=True)
class Plant:
    """A one-line bug, found by what it means, not by where it is: inside `function` (a qualified name,
    "Class.method" or "function"; a class too) of `module` (a dotted path in the package, e.g.
    "cloud.reuse.verdicts"; if the module has moved or lost the function, the function is looked for in every
    module of the package), `pattern` (a regular expression) matches exactly once and is replaced by
    `replacement` (re.sub syntax). `tests`: pytest arguments that must fail with the bug planted."""

    what: str
    module: str
    function: str
    pattern: str
    replacement: str
    tests: tuple[str, ...]


_B = ("tests/test_boundaries.py",)
_C = "tests/test_promises_cloud.py::"
_R = "tests/test_promises_reuse.py::"
_A = "tests/test_promises_ask.py::"
_E = "tests/test_promises_edge.py::"
_F = "tests/test_feedback_rules.py::"
_CLAIMS = ("tests/test_boundaries.py", "tests/test_promises_cloud.py")

PLANTED: list[Plant] = [
    # issue 18
    Plant("reuse refused at exactly max_distance", "shared.reuse", "_within", r"d <= max_distance\b",
          "d < max_distance", _B),
    Plant("reuse distance tightened by 2", "shared.reuse", "_within", r"d <= max_distance\b",
          "d <= max_distance - 2", _B),
    Plant("device cache expiry from the cloud's clock", "edge.triage.verdict_cache", "VerdictCache.add",
          r"made_ms = min\(verdict\.created_ms, now_ms\)", "made_ms = verdict.created_ms", _B),
    Plant("one verdict deletes every sent row", "edge.delivery.outbox", "Outbox.complete",
          r"DELETE FROM outbox WHERE event_id = \?\"", "DELETE FROM outbox WHERE event_id = ? OR state = 'sent'\"",
          _B),
    Plant("a verdict before its PUBACK is ignored", "edge.delivery.outbox", "Outbox.complete",
          r"SELECT LENGTH\(payload\) FROM outbox WHERE event_id = \?\"",
          "SELECT LENGTH(payload) FROM outbox WHERE event_id = ? AND state != 'inflight'\"", _B),
    Plant("a refused PUBACK deletes the event", "edge.delivery.outbox", "Outbox.mark_refused",
          r"UPDATE outbox SET mid = NULL WHERE event_id = \?", "DELETE FROM outbox WHERE event_id = ?", _B),
    Plant("a refused PUBACK counts as delivery", "edge.delivery.outbox", "Outbox.mark_refused",
          r"UPDATE outbox SET mid = NULL WHERE event_id = \?",
          "UPDATE outbox SET state = 'sent', mid = NULL WHERE event_id = ?", _B),
    Plant("the cooldown ignores the zone rule", "edge.triage.rules", "Rules.decide",
          r"key = \(camera, rule\.scope, ev\.label\)", 'key = (camera, "*", ev.label)', _B),
    Plant("a verdict published before it is stored", "cloud.pipeline.service", "CloudService._answer_claimed",
          r"\n(\s*)verdict = store_verdict\(", r"\n\1self._publish(verdict)\n\1verdict = store_verdict(",
          ("tests/test_boundaries.py::test_a_verdict_is_in_the_store_when_it_is_published",)),
    Plant("re-sends spend the budget", "edge.delivery.link", "Delivery._publish_due", r"if item\.attempts == 0:",
          "if True:", ("tests/test_edge_daemon.py::test_resends_do_not_spend_the_budget",)),
    Plant("the cloud config accepts unknown keys", "shared.config", "Strict", r'extra="forbid"', 'extra="ignore"',
          ("tests/test_boundaries.py::test_cloud_config_refuses_unknown_keys_by_name",)),
    Plant("SQLite store: TTL ends a millisecond early", "cloud.storage.store", "SQLiteStore.lookup_many",
          r"expires_ms >= \?", "expires_ms > ?", _B),
    Plant("Redis store: TTL ends a millisecond early", "cloud.storage.redis_store", "RedisStore.lookup_many",
          r'since, "\+inf"', 'since + 1, "+inf"', _B),
    # issue 31
    Plant("the least urgent tier first", "cloud.scheduling.fairqueue", "FairQueue.pop", r"min\(self\._tiers\)",
          "max(self._tiers)", (_C + "test_the_fair_queue_gives_the_most_urgent_tier_first",)),
    Plant("the eviction threshold one higher", "cloud.scheduling.fairqueue", "FairQueue.victim",
          r"self\.count\(newcomer\.event\.device\) \+ 1", "self.count(newcomer.event.device) + 2",
          (_C + "test_a_device_is_evicted_for_a_newcomer_only_when_it_holds_more_than_its_share",)),
    Plant("look-alikes by embedding each make their own model call", "cloud.reuse.singleflight",
          "SingleFlight.take_off", r"nearest\(earlier, phash, now, embedding=embedding\)",
          "nearest(earlier, phash, now)", (_C + "test_a_look_alike_by_embedding_only_waits_for_the_first_flight",)),
    Plant("a similarity exactly at min_similarity refused", "shared.reuse", "_reached",
          r"s >= c\.min_similarity", "s > c.min_similarity",
          (_R + "test_an_embedding_exactly_at_min_similarity_reaches_the_crop",)),
    Plant("gallery keys at full distance", "shared.reuse", "further_key", r"max_distance=c\.max_distance // 2",
          "max_distance=c.max_distance", (_R + "test_a_gallery_key_reaches_only_half_the_rule_s_distance",)),
    Plant("the track guard refuses a look exactly at min_similarity", "shared.reuse", "continues",
          r">= min_similarity", "> min_similarity",
          (_R + "test_a_look_exactly_at_min_similarity_continues_its_track",)),
    Plant("a chain of look-alikes keeps an answer alive past its TTL", "cloud.reuse.verdicts", "VerdictCache.reused",
          r"hit\.created_ms \+ hit\.cache\.ttl_s", "created + hit.cache.ttl_s",
          (_C + "test_a_reused_verdict_expires_with_the_model_answer_it_came_from",)),
    Plant("a site offer sent back to the device that asked", "cloud.reuse.verdicts", "offers_to",
          r" if device != verdict\.device", "", (_C + "test_a_site_offer_goes_to_the_site_s_other_devices_only",)),
    Plant("camera-scoped reuse looked up under the site key", "cloud.reuse.verdicts", "VerdictCache.scope_key",
          r"scope_key\(self\.policy\.scope,", 'scope_key("site",',
          (_C + "test_camera_scoped_reuse_answers_events_that_carry_a_site",)),
    Plant("an event this process answers taken over again", "cloud.broker.takeover", "TakeOver.run",
          r"if not self\._busy\(event_id\):", "if True:",
          (_C + "test_an_event_this_process_is_answering_is_not_taken_over_again",)),
    Plant("a lost claim race ignored", "cloud.broker.takeover", "TakeOver.take", r"if not keeper\.take\(event_id\):",
          "if not keeper.take(event_id) and False:", (_C + "test_a_lost_claim_race_leaves_the_event_to_the_winner",)),
    Plant("a lower-case bearer refused", "cloud.http.auth", "ApiAuth.principal", r'scheme\.lower\(\) != "bearer"',
          'scheme != "Bearer"', (_C + "test_the_bearer_scheme_is_case_insensitive",)),
    Plant("the check's SURE boundary", "cloud.analysis.check", "rule",
          r'model_verdict == "unknown" and score >= SURE', 'model_verdict == "unknown" and score > SURE',
          (_A + "test_the_check_s_sure_and_absent_rows_hold_at_their_exact_values",)),
    Plant("the check's ABSENT boundary", "cloud.analysis.check", "rule", r"score < ABSENT", "score <= ABSENT",
          (_A + "test_the_check_s_sure_and_absent_rows_hold_at_their_exact_values",)),
    Plant("an overruled verdict keeps the model's description", "cloud.analysis.check", "judged",
          r"if said or ruling\.reason is not None:", "if said:",
          (_A + "test_an_overruled_verdict_gets_the_facts_description_not_the_model_s",)),
    Plant("citation [0] cites the last event", "cloud.ask.router", "cite", r"if 1 <= n <= len\(context\):",
          "if 0 <= n <= len(context):", (_A + "test_citation_zero_cites_no_event",)),
    Plant("partial answers cached", "cloud.ask.router", "Asker._answered", r"if not result\.partial:", "if True:",
          (_A + "test_a_partial_answer_is_not_cached",)),
    Plant("a new verdict no longer drops cached answers", "cloud.ask.cache", "Coverage.holds",
          r"return True  # time unknown", "return False  # time unknown",
          (_A + "test_a_new_verdict_drops_the_answers_it_falls_in",)),
    Plant("a claim taken in its lease's last millisecond", "cloud.storage.claims", "SQLiteClaims.acquire",
          r"claims\.expires_ms < \?", "claims.expires_ms <= ?",
          (_C + "test_a_claim_holds_to_its_lease_s_last_millisecond",)),
    Plant("expired claims listed newest first", "cloud.storage.claims", "SQLiteClaims.expired",
          r"ORDER BY expires_ms LIMIT", "ORDER BY expires_ms DESC LIMIT",
          (_C + "test_expired_claims_are_listed_oldest_first",)),
    # issue 31: SQL strings mutmut does not mutate, planted by hand (cloud/storage/claims.py, SQLite)
    Plant("SQL: another owner's live claim taken", "cloud.storage.claims", "SQLiteClaims.acquire",
          r"WHERE claims\.expires_ms < \? OR claims\.owner = excluded\.owner", "WHERE 1 = 1 OR ? = 0", _CLAIMS),
    Plant("SQL: our own claim not taken again", "cloud.storage.claims", "SQLiteClaims.acquire",
          r"OR claims\.owner = excluded\.owner", "AND claims.owner = excluded.owner", _CLAIMS),
    Plant("SQL: a taken-over claim keeps the old expiry", "cloud.storage.claims", "SQLiteClaims.acquire",
          r"SET owner = excluded\.owner, expires_ms = excluded\.expires_ms", "SET owner = excluded.owner", _CLAIMS),
    Plant("SQL: a renewal extends another owner's claim", "cloud.storage.claims", "SQLiteClaims.renew",
          r"WHERE event_id = \? AND owner = \?\"", "WHERE event_id = ? AND ? IS NOT NULL\"", _CLAIMS),
    Plant("SQL: holds reads any row", "cloud.storage.claims", "SQLiteClaims.holds",
          r"WHERE event_id = \?\"", "WHERE event_id = ? OR 1 = 1 ORDER BY owner DESC\"", _CLAIMS),
    Plant("SQL: a release deletes another owner's claim", "cloud.storage.claims", "SQLiteClaims.release",
          r"WHERE event_id = \? AND owner = \?\"", "WHERE event_id = ? AND ? IS NOT NULL\"", _CLAIMS),
    Plant("SQL: abandoning ends another owner's claim", "cloud.storage.claims", "SQLiteClaims.abandon",
          r"WHERE event_id = \? AND owner = \?\"", "WHERE event_id = ? AND ? IS NOT NULL\"", _CLAIMS),
    Plant("SQL: a claim listed expired in its last millisecond", "cloud.storage.claims", "SQLiteClaims.expired",
          r"WHERE expires_ms < \?", "WHERE expires_ms <= ?", _CLAIMS),
    Plant("SQL: expired claims listed without a limit", "cloud.storage.claims", "SQLiteClaims.expired",
          r"LIMIT \?\"", "LIMIT -1 + 0 * ?\"", _CLAIMS),
    Plant("SQL: a live claim forgotten", "cloud.storage.claims", "SQLiteClaims.forget",
          r"AND expires_ms < \?", "AND expires_ms > -?", _CLAIMS),
    Plant("the person-mass boundary of an uncertain person", "edge.vision.closer", "_may_see_person",
          r'c\.categories\["person"\] >= cfg\.uncertain_min_person_mass',
          'c.categories["person"] > cfg.uncertain_min_person_mass',
          (_E + "test_an_uncertain_person_needs_exactly_the_person_mass",)),
    Plant("the rider exception dropped", "edge.vision.closer", "CloserLooks.resolve",
          r"\s+and not \(other\.label in RIDDEN and evidence >= cfg\.uncertain_min_score\)\)", ")",
          (_E + "test_a_bike_with_faint_person_evidence_is_looked_at_as_a_person",)),
    Plant("the overlap fraction a half", "edge.vision.closer", "overlaps", r"smaller / 3\.0", "smaller / 2.0",
          (_E + "test_a_detection_belongs_to_a_box_from_a_third_of_the_smaller_one",)),
    Plant("a still object waits one doubling longer", "edge.vision.looks", "LookPlanner.still_due",
          r"int\(math\.log2\(still_s / tracked_interval_s\)\)", "round(math.log2(still_s / tracked_interval_s))",
          (_E + "test_a_still_object_waits_one_doubling_at_a_time_up_to_still_interval",)),
    # issue 40
    Plant("a trickle of messages hides a stall from /healthz", "cloud.broker.health", "IntakeHealth.taken_in",
          r"if self\.waiting == 0:", "if True:",
          ("tests/test_health_stall.py::test_a_trickle_of_new_messages_does_not_hide_a_stall",)),
    Plant("the same feedback twice counted twice as suppression evidence", "cloud.teach.feedback", "Feedback.give",
          r"and old\.verdict == answer:", "and old.verdict == answer and False:",
          (_F + "test_the_same_feedback_twice_stores_sends_and_teaches_nothing_new",)),
    Plant("a second correction records the operator's first word as 'was'", "cloud.teach.feedback", "Feedback.give",
          r"was = old\.feedback\.was if old\.feedback is not None else old\.verdict", "was = old.verdict",
          (_F + "test_a_second_correction_records_what_the_model_said",)),
]

_PACKAGES = ("edge", "cloud", "shared", "app")


def _defined(tree: ast.AST, qualname: str) -> tuple[int, int] | None:
    """The first and last line (decorators included) of the function or class `qualname` in `tree`."""
    def walk(node: ast.AST, prefix: str) -> tuple[int, int] | None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if name == qualname:
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    return first, child.end_lineno or child.lineno
                found = walk(child, f"{name}.")
            else:
                found = walk(child, prefix)
            if found is not None:
                return found
        return None
    return walk(tree, "")


def _module_file(repo: Path, module: str) -> Path | None:
    base = repo.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def locate(repo: Path, plant: Plant) -> tuple[Path, int, int]:
    """The file and line range of the plant's function: in its module, else wherever the package defines it
    (one place only: a name defined in several modules must be named by its module)."""
    named = _module_file(repo, plant.module)
    if named is not None:
        span = _defined(ast.parse(named.read_text()), plant.function)
        if span is not None:
            return named, *span
    found = _everywhere(repo, plant.function)
    if not found:  # a function made a method (or a method a function): by its own name alone
        bare = plant.function.rsplit(".", 1)[-1]
        found = _everywhere(repo, bare, suffix=True)
    if len(found) != 1:
        where = ", ".join(str(f[0].relative_to(repo)) for f in found) or "nowhere"
        raise SystemExit(f"{plant.what!r}: {plant.function} is defined {where}, not in {plant.module} nor in "
                         "exactly one other module; update PLANTED")
    return found[0]


def _everywhere(repo: Path, name: str, *, suffix: bool = False) -> list[tuple[Path, int, int]]:
    """Every definition of `name` in the package: its qualified name, or (`suffix`) any qualified name
    ending in it."""
    found = []
    for package in _PACKAGES:
        for path in sorted((repo / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for qualname in (_qualnames(tree) if suffix else [name]):
                if qualname == name or qualname.endswith("." + name):
                    span = _defined(tree, qualname)
                    if span is not None:
                        found.append((path, *span))
    return found


def _qualnames(tree: ast.AST, prefix: str = "") -> list[str]:
    names = []
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(f"{prefix}{child.name}")
            names += _qualnames(child, f"{prefix}{child.name}.")
        else:
            names += _qualnames(child, prefix)
    return names


def plant_text(text: str, first: int, last: int, plant: Plant) -> str:
    """`text` with the plant's pattern replaced inside lines first..last (1-based, inclusive)."""
    lines = text.splitlines(keepends=True)
    body = "".join(lines[first - 1:last])
    hits = len(re.findall(plant.pattern, body))
    if hits != 1:
        raise SystemExit(f"{plant.what!r}: {plant.pattern!r} matches {hits} times in {plant.function}, not once; "
                         "update PLANTED")
    return "".join(lines[:first - 1]) + re.sub(plant.pattern, plant.replacement, body) + "".join(lines[last:])


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
            if not target.is_symlink():
                target.symlink_to(src)  # large and never mutated
        else:
            shutil.copy2(src, target)
    package = dest / "pkg" / "edgetriage"
    shutil.rmtree(package, ignore_errors=True)  # made again: a copy brought up to date gets every new module
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
    where = subprocess.run([sys.executable, "-c", "import edgetriage.shared.reuse as m; print(m.__file__)"],
                           cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not where.startswith(str(repo.parent)):
        raise SystemExit(f"the scratch copy is not the one imported ({where}); stopping before mutating anything")


def run_planted(repo: Path, env: dict[str, str]) -> list[dict]:
    where = [(plant, *locate(repo, plant)) for plant in PLANTED]  # every plant found before any test runs
    for plant, path, first, last in where:
        plant_text(path.read_text(), first, last, plant)
    every = sorted({t for plant in PLANTED for t in plant.tests})
    baseline = subprocess.run(f"{PYTEST} {' '.join(every)}", shell=True, cwd=repo, env=env, capture_output=True,
                              text=True)
    if baseline.returncode != 0:  # a test that fails without a bug proves nothing about the bug
        raise SystemExit("the tests fail on the unchanged copy:\n" + (baseline.stdout + baseline.stderr)[-3000:])
    out = []
    for plant, path, first, last in where:
        text = path.read_text()
        path.write_text(plant_text(text, first, last, plant))
        try:
            proc = subprocess.run(f"{PYTEST} {' '.join(plant.tests)}", shell=True, cwd=repo, env=env,
                                  capture_output=True, text=True)
        finally:
            path.write_text(text)
        caught = proc.returncode != 0
        name = str(path.relative_to(repo))
        out.append({"bug": plant.what, "file": name, "function": plant.function, "caught": caught})
        print(f"{'caught ' if caught else 'MISSED '} {plant.what} ({name}, {plant.function})", flush=True)
    return out


def _mutmut(module: str, *extra: str) -> list[str]:
    # mutmut 2 counts only exit status 1 as failing tests; a mutant that breaks an import makes pytest exit
    # with 2 (collection error) and would count as surviving, so every non-zero status is made 1
    runner = "sh -c " + shlex.quote(f"{PYTEST} {MODULES[module]}; test $? -eq 0")
    return ["mutmut", "run", *extra, "--paths-to-mutate", module, "--tests-dir", "tests", "--runner", runner,
            "--no-progress", "--simple-output"]


IDLE_LIMIT_S = 90  # mutmut with no worker for this long is stuck (its worker was killed), so it is restarted


def _children(pid: int) -> list[str]:
    """mutmut's worker processes (its multiprocessing resource tracker, which outlives a dead worker, is none)."""
    try:
        pids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    workers = []
    for child in pids:
        try:
            if b"resource_tracker" not in Path(f"/proc/{child}/cmdline").read_bytes():
                workers.append(child)
        except OSError:
            pass
    return workers


def _mutmut_watched(repo: Path, env: dict[str, str], module: str) -> int:
    """mutmut run, carried on where it stopped until it ends by itself. mutmut 2 waits forever for a worker
    that was killed (by the machine's other work, say); a mutmut with no worker for IDLE_LIMIT_S is stopped,
    the module restored (a killed worker may leave its mutant in place) and mutmut started again, which
    skips the mutants it has judged."""
    source = repo / module
    original = source.read_text()
    while True:
        proc = subprocess.Popen(_mutmut(module), cwd=repo, env=env, stdout=subprocess.DEVNULL)
        idle_since = time.monotonic()
        while proc.poll() is None:
            time.sleep(5)
            if _children(proc.pid):
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > IDLE_LIMIT_S:
                proc.kill()
                proc.wait()
                break
        else:
            return proc.returncode
        print(f"mutmut on {module} had no worker for {IDLE_LIMIT_S} s: started again", file=sys.stderr, flush=True)
        source.write_text(original)


def run_module(repo: Path, env: dict[str, str], module: str) -> dict:
    cache = repo / ".mutmut-cache"
    cache.unlink(missing_ok=True)
    started = time.monotonic()
    code = _mutmut_watched(repo, env, module)
    if code == 1 or not cache.exists():
        raise SystemExit(f"mutmut could not run on {module} (exit {code}); see its output above")
    return report(repo, env, module, time.monotonic() - started)


def retest(dest: Path) -> dict:
    """A kept folder's surviving mutants again, against the working tree as it is now (the tests added for
    them, and the rest of the code they run against: a test of today's code fails on yesterday's, and a
    baseline that fails judges nothing), without running every mutant again. The mutated module itself must
    be the copy's: after changing it, `--resume` first (its changed lines are mutated afresh)."""
    repo = dest / "repo"
    db = sqlite3.connect(str(repo / ".mutmut-cache"))
    (module,) = db.execute("SELECT filename FROM SourceFile").fetchone()
    ids = [i for (i,) in db.execute("SELECT id FROM Mutant WHERE status = 'bad_survived'")]
    db.close()
    if (ROOT / module).read_text() != (repo / module).read_text():
        raise SystemExit(f"{module} changed since this folder's run: --resume {dest} first")
    shutil.rmtree(repo / "tests")
    env = scratch_copy(dest)
    started = time.monotonic()
    for mutant in ids:
        subprocess.run(_mutmut(module, str(mutant)), cwd=repo, env=env, stdout=subprocess.DEVNULL)
    by_hand(repo, env, module)
    return report(repo, env, module, time.monotonic() - started)


def by_hand(repo: Path, env: dict[str, str], module: str) -> None:
    """The mutants mutmut left untested, run here one by one with mutmut's own mutation and the module's
    tests, their status written to its cache. mutmut 2 keys a mutant by its line's text and number; on a line
    whose text repeats in the file (`h, w = frame.image.shape[:2]`) its cache loses the line after a mutant
    that changes the line count, the run stops ("Mutant.line is required") and those mutants stay untested."""
    from mutmut import Context, RelativeMutationID, mutate

    db = sqlite3.connect(str(repo / ".mutmut-cache"))
    rows = db.execute('SELECT m.id, l.line, m."index", l.line_number FROM Mutant m JOIN Line l ON m.line = l.id '
                      "WHERE m.status = 'untested'").fetchall()
    source = repo / module
    original = source.read_text()
    for mutant, line, index, number in rows:
        mutated, _ = mutate(Context(source=original, mutation_id=RelativeMutationID(line, index, number),
                                    filename=str(source)))
        if mutated == original:
            continue
        source.write_text(mutated)
        try:
            failed = subprocess.run(f"{PYTEST} {MODULES[module]}", shell=True, cwd=repo, env=env,
                                    capture_output=True).returncode != 0
        finally:
            source.write_text(original)
        db.execute("UPDATE Mutant SET status = ? WHERE id = ?", ("ok_killed" if failed else "bad_survived", mutant))
        db.commit()
        print(f"mutant {mutant} (line {number + 1}) run by hand: {'killed' if failed else 'survived'}", flush=True)
    db.close()


def resume(dest: Path) -> dict:
    """A kept folder's run, carried on where it stopped (a killed or hung mutmut): the copy brought up to date
    with the working tree (code and tests), then the mutants not yet judged; those judged stay as they were
    (mutmut keys them by their line's text, so a line that changed is mutated afresh)."""
    repo = dest / "repo"
    db = sqlite3.connect(str(repo / ".mutmut-cache"))
    (module,) = db.execute("SELECT filename FROM SourceFile").fetchone()
    db.close()
    shutil.rmtree(repo / "tests")
    env = scratch_copy(dest)
    started = time.monotonic()
    _mutmut_watched(repo, env, module)
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
    parser.add_argument(
        "--planted", action="store_true", help="only plant the hand-planted bugs (issues 18, 31, 40), run their tests"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (its path is printed)")
    parser.add_argument("--retest", type=Path, metavar="FOLDER",
                        help="a folder kept with --keep: run its survivors again against the current tests")
    parser.add_argument("--resume", type=Path, metavar="FOLDER",
                        help="a folder kept with --keep whose run stopped: test the mutants not tested yet")
    args = parser.parse_args()
    if args.retest is not None or args.resume is not None:
        result = retest(args.retest) if args.retest is not None else resume(args.resume)
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
            caught = sum(p["caught"] for p in planted)
            print(f"caught/planted: {caught}/{len(planted)}")
            print(json.dumps({"planted": len(planted), "caught": caught,
                              "missed": [p["bug"] for p in planted if not p["caught"]]}))
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
