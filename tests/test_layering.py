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
CLASS_HEADROOM_LINES = 315  # no class within 10 % of MAX_CLASS_LINES: room to grow without a cut in two


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


def test_every_class_has_headroom_under_the_limit():
    """A class near the limit is met next time by cutting it in two; one with head-room grows by one job."""
    _, classes = _sizes()
    pressed = {c: n for c, n in classes.items() if n > CLASS_HEADROOM_LINES}
    assert pressed == {}, f"classes over {CLASS_HEADROOM_LINES} lines (within 10 % of {MAX_CLASS_LINES}): {pressed}"
    assert "cloud/scheduling/scheduler.py::Scheduler" in classes and "cloud/http/web/timeline.py::Timeline" in classes


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
    # (the perceptual hash's threshold, a median of 63 DCT coefficients, is np.partition's middle one)
    assert sorted(others) == [], others
    assert median([]) is None and median([1.0, 2.0, 3.0, 4.0]) == 2.5 and median([1.23456], 1) == 1.2
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.95) == 4.0 and percentile([], 0.5) is None


OBSERVERS = ("cloud/ops/figures.py", "cloud/ops/metrics.py", "cloud/ops/ha.py", "cloud/http/web", "cloud/ask")


def test_observers_read_the_service_through_its_typed_view():
    """The figures, /metrics, the page, questions and Home Assistant read the service through cloud.ops.observed:
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
    from edgetriage.cloud.compose import build_service
    from edgetriage.cloud.config import CloudConfig
    from edgetriage.cloud.ops.observed import Counted, Listened, ObservedService
    from edgetriage.cloud.storage.store import SQLiteStore

    members = {name for view in (Listened, Counted, ObservedService)
               for name, value in vars(view).items() if isinstance(value, property)}
    assert {"stats", "scheduler", "figures", "config", "event_listeners", "overloaded"} <= members
    config = CloudConfig.model_validate({"analyzer": {"backend": "openai"}, "store_path": str(tmp_path / "c.db")})
    store = SQLiteStore(config.store_path)
    try:
        service = build_service(config, build_backend(config.analyzer), store)
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


WINGS = ("edge", "cloud", "shared", "app")


def _module_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, anywhere in the file (inside functions and under
    `if TYPE_CHECKING:` too: an import made only for the type checker still ties the two files together).
    Names are paths without `.py` (`edge.vision.pipeline`); a package is its `__init__`."""
    files = {}
    for wing in WINGS:
        for path in (ROOT / wing).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = (node.module or "").removeprefix("edgetriage.")
            if name.startswith("app") and node.level and not target.startswith("app."):
                target = target.removeprefix("app.")  # app is the package edgetriage itself
            named = [f"{target}.{alias.name}" for alias in node.names]
            # `from . import x` names x, not the package
            for candidate in ([target] if node.module else []) + named:
                if candidate in files and candidate != name:
                    graph[name].add(candidate)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles():
    """No two modules of edge/, cloud/, shared/ or app/ import each other, directly or round a ring, counting
    imports made only for type checking: a circle is one job cut in two (or two jobs tied together)."""
    graph = _module_graph()
    assert "edge.vision.pipeline" in graph and "edge.vision.closer" in graph["edge.vision.pipeline"]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the finder finds
    assert _circles(graph) == []


# edge's rooms, bottom up: each may import shared/ and the rooms before it, never one after it nor the top
# (agent, daemon, config, ...), except the agent's plain counters (edge/stats.py: imports nothing of ours)
ROOMS = ("vision", "triage", "delivery")


def test_edge_rooms_import_only_downwards():
    graph = _module_graph()
    wrong = []
    for name, targets in graph.items():
        parts = name.split(".")
        if parts[0] != "edge" or len(parts) < 3 or parts[1] not in ROOMS:
            continue
        allowed = ROOMS[: ROOMS.index(parts[1]) + 1]
        for target in targets:
            t = target.split(".")
            if t[0] == "cloud" or t[0] == "app" or (t[0] == "edge" and target != "edge.stats"
                                                     and (len(t) < 3 or t[1] not in allowed)):
                wrong.append(f"{name} -> {target}")
    assert wrong == []
    assert graph["edge.stats"] == set()


def test_ruff_finds_nothing_and_no_line_is_over_the_declared_length():
    """`ruff check` (pyproject's rules, E501 at its `line-length` included) passes on the whole tree; a line too
    long, an unused import or an unsorted import block fails here, not only in a reviewer's editor."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
    assert config["line-length"] == 120 and "E501" not in config["lint"].get("ignore", [])
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
