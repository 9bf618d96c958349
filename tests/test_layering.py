"""The device install must not need the cloud side: edge/ never imports cloud/ (nor the reverse), shared/
imports neither, and importing the whole agent loads no torch, transformers, vllm or aiohttp."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "vllm", "aiohttp")


def _imports(folder: str) -> set[tuple[str, str]]:
    found = set()
    for path in (ROOT / folder).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                # relative imports: "..cloud" -> level 2, module "cloud"
                found.add((str(path.relative_to(ROOT)), ("." * node.level) + mod))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    found.add((str(path.relative_to(ROOT)), alias.name))
    return found


def _offenders(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for path, mod in _imports(folder):
        bare = mod.lstrip(".")
        head = bare.split(".")[0]
        if bare.startswith("edgetriage."):
            head = bare.split(".")[1]
        if mod.startswith("..") and head in forbidden or bare.startswith("edgetriage.") and head in forbidden:
            bad.append(f"{path}: {mod}")
    return bad


def test_wings_do_not_import_each_other():
    assert _offenders("edge", ("cloud",)) == []
    assert _offenders("cloud", ("edge",)) == []
    assert _offenders("shared", ("edge", "cloud")) == []


def test_edge_extra_pulls_no_heavy_packages():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["edge"]
    names = {d.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower() for d in deps}
    assert not names & set(HEAVY), names & set(HEAVY)


def test_importing_the_agent_loads_no_cloud_stack():
    code = (
        "import sys, edgetriage.edge.agent, edgetriage.edge.vision.pipeline, edgetriage.edge.delivery.outbox;"
        f"bad=[m for m in {HEAVY!r} if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


MAX_MODULE_LINES = 550
MAX_CLASS_LINES = 350


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    modules, classes = {}, {}
    for folder in ("edge", "cloud", "shared", "app"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = str(path.relative_to(ROOT))
            text = path.read_text(encoding="utf-8")
            modules[rel] = len(text.splitlines())
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef):
                    classes[f"{rel}::{node.name}"] = node.end_lineno - node.lineno + 1
    return modules, classes


def test_no_module_or_class_over_the_standing_limit():
    modules, classes = _sizes()
    big_modules = {m: n for m, n in modules.items() if n > MAX_MODULE_LINES}
    big_classes = {c: n for c, n in classes.items() if n > MAX_CLASS_LINES}
    assert big_modules == {}, f"modules over {MAX_MODULE_LINES} lines: {big_modules}"
    assert big_classes == {}, f"classes over {MAX_CLASS_LINES} lines: {big_classes}"
    assert modules["edge/agent.py"] > 0 and len(classes) > 20  # the walk really found the code


def test_one_median_for_the_whole_product():
    """Every median a user reads comes from shared.stats.median: no module defines or imports another."""
    from edgetriage.shared.stats import median, percentile

    others = []
    for folder in ("edge", "cloud", "shared", "app"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = str(path.relative_to(ROOT))
            if rel == "shared/stats.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") in ("median", "percentile") \
                        and not (rel == "edge/vision/counts.py" and node.name == "median"):  # delegates to it
                    others.append(f"{rel}: def {node.name}")
                if isinstance(node, ast.Attribute) and node.attr == "median" and \
                        isinstance(node.value, ast.Name) and node.value.id in ("statistics", "np", "numpy"):
                    others.append(f"{rel}: {node.value.id}.median")
    # pixel statistics, not figures anyone reads: the perceptual hash's threshold (a median of DCT
    # coefficients)
    assert sorted(others) == ["shared/cropkeys.py: np.median"], others
    assert median([]) is None and median([1.0, 2.0, 3.0, 4.0]) == 2.5 and median([1.23456], 1) == 1.2
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.95) == 4.0 and percentile([], 0.5) is None


OBSERVERS = ("cloud/figures.py", "cloud/metrics.py", "cloud/ha.py", "cloud/http/web", "cloud/ask")


def test_observers_read_the_service_through_its_typed_view():
    """The figures, /metrics, the page, questions and Home Assistant read the service through cloud.observed:
    no `getattr(service, ...)`, no `service: Any`, no import of the service itself."""
    found = []
    for name in OBSERVERS:
        target = ROOT / name
        for path in [target] if target.is_file() else target.rglob("*.py"):
            rel = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                        and "service" in ast.unparse(node.args[0]):
                    found.append(f"{rel}: {ast.unparse(node)}")
                if isinstance(node, ast.arg) and "service" in node.arg and node.annotation is not None \
                        and "Any" in ast.unparse(node.annotation):
                    found.append(f"{rel}: {node.arg}: {ast.unparse(node.annotation)}")
                if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("service"):
                    found.append(f"{rel}: from {node.module}")
    assert found == [], found


def test_the_cloud_service_has_every_member_its_observers_read(tmp_path):
    from edgetriage.cloud.analysis import build_backend
    from edgetriage.cloud.config import CloudConfig
    from edgetriage.cloud.observed import Counted, Listened, ObservedService
    from edgetriage.cloud.service import CloudService
    from edgetriage.cloud.storage.store import SQLiteStore

    members = {name for view in (Listened, Counted, ObservedService)
               for name, value in vars(view).items() if isinstance(value, property)}
    assert {"stats", "scheduler", "figures", "config", "event_listeners", "overloaded"} <= members
    config = CloudConfig.model_validate({"analyzer": {"backend": "openai"}, "store_path": str(tmp_path / "c.db")})
    store = SQLiteStore(config.store_path)
    try:
        service = CloudService(config, build_backend(config.analyzer), store)
        assert sorted(m for m in members if not hasattr(service, m)) == []
    finally:
        store.close()


def test_no_two_config_classes_share_a_name():
    """Each component's config has its own name (edge's [budget] is EscalationBudgetConfig, the cloud's
    [scheduler.budget] TokenBudgetConfig), so a reader never wonders which one a module means."""
    where: dict[str, list[str]] = {}
    for folder in ("edge", "cloud", "shared", "app"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and node.name.endswith("Config"):
                    where.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    assert {n: p for n, p in where.items() if len(p) > 1} == {}
    assert len(where) > 20 and "EscalationBudgetConfig" in where and "TokenBudgetConfig" in where


def test_the_outbox_and_budget_sections_are_defined_beside_their_components():
    from edgetriage.edge import config
    from edgetriage.edge.delivery import budget, outbox

    assert config.EdgeConfig.model_fields["outbox"].annotation is outbox.OutboxConfig
    assert config.EdgeConfig.model_fields["budget"].annotation is budget.EscalationBudgetConfig
    assert config.EdgeConfig.model_fields["overload"].annotation is budget.OverloadConfig
