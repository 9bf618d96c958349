"""The cloud's rooms and the one direction its imports run: each room imports only the rooms before it (and
`shared/` and the config schema), every import counted, those made only for the type checker and those made
inside a function too; only the composition root (`cloud/compose.py`) and `cloud/main.py` sit over all of them.
README's layout line and the architecture page are checked against the same order."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from test_layering import _module_graph

ROOT = Path(__file__).resolve().parents[1]

# bottom up: what a room may import is every room before it
ROOMS = ("storage", "analysis", "counts", "scheduling", "reuse", "route", "broker", "webbase", "ops", "teach",
         "pipeline", "ask", "http")
TOP = ("compose", "main")  # cloud/compose.py builds the parts, cloud/main.py runs them
SCHEMA_ROOT = ("cloud", "cloud.config", "cloud.policyform")  # the package, the config schema and its policy form


def _is_schema(module: str) -> bool:
    """The config schema: cloud/config.py, the policy form it holds, and any room's config.py. Every room may
    read it; it reads nothing of ours but shared/ and other parts of the schema."""
    return module in SCHEMA_ROOT or module.startswith("cloud.") and module.rsplit(".", 1)[-1] == "config"


def _rank(module: str) -> int:
    """Where a module stands: its room's place, a top module above every room, the schema below them all."""
    if _is_schema(module):
        return -1
    parts = module.split(".")
    if parts[1] in ROOMS:
        return ROOMS.index(parts[1])
    if parts[1] in TOP:
        return len(ROOMS) + TOP.index(parts[1])
    raise AssertionError(f"{module}: a cloud module in no room; put it in one of {ROOMS} (or add a room)")


def _upward(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for name, targets in sorted(graph.items()):
        if not name.startswith("cloud"):
            continue
        for target in sorted(targets):
            head = target.split(".")[0]
            if head in ("edge", "app"):
                wrong.append(f"{name} -> {target}")
            elif head != "cloud":
                continue
            elif _is_schema(name):
                if not _is_schema(target):
                    wrong.append(f"{name} -> {target} (the schema reads only the schema)")
            elif not _is_schema(target) and _rank(target) > _rank(name):
                wrong.append(f"{name} -> {target}")
    return wrong


def test_every_cloud_module_lives_in_a_room():
    graph = _module_graph()
    loose = [m for m in graph if m.startswith("cloud.") and m.split(".")[1] not in ROOMS + TOP
             and not _is_schema(m)]
    assert loose == [], f"cloud modules outside the rooms {ROOMS}: {loose}"
    assert all((ROOT / "cloud" / room / "__init__.py").is_file() for room in ROOMS)


def test_cloud_imports_run_one_way():
    """No room imports a room after it, the composition root or main; the schema imports only the schema."""
    graph = _module_graph()
    assert "cloud.pipeline.service" in graph and "cloud.route.lanes" in graph["cloud.pipeline.service"]
    assert _upward(graph) == []


def test_the_check_sees_type_checking_and_lazy_imports():
    """An import under `if TYPE_CHECKING:` or inside a function ties two files together as much as one at the
    top: the graph has both kinds, and the check flags an upward one of either."""
    graph = _module_graph()
    # cloud/ops/observed.py imports the pressure only for the type checker; cloud/broker/health.py imports the
    # store's error inside a function
    assert "cloud.counts.pressure" in graph["cloud.ops.observed"]
    assert "cloud.storage.store" in graph["cloud.broker.health"]
    source = (ROOT / "cloud" / "broker" / "health.py").read_text(encoding="utf-8")
    lazy = [n for f in ast.walk(ast.parse(source)) if isinstance(f, ast.FunctionDef)
            for n in ast.walk(f) if isinstance(n, ast.ImportFrom)]
    assert lazy, "cloud/broker/health.py no longer imports inside a function: pick another example"
    assert _upward({"cloud.reuse.verdicts": {"cloud.pipeline.service"}}) == [
        "cloud.reuse.verdicts -> cloud.pipeline.service"]
    assert _upward({"cloud.config": {"cloud.reuse.sites"}}) != []
    assert _upward({"cloud.ask.api": {"cloud.http.web.routes"}}) == ["cloud.ask.api -> cloud.http.web.routes"]
    assert _upward({"cloud.http.api": {"cloud.reuse.config", "cloud.config", "cloud.storage.store"}}) == []


def layout_line() -> str:
    """The one line README.md shows for the cloud's rooms, made from ROOMS."""
    return "cloud/   " + " → ".join([*ROOMS, *TOP])


def test_the_readme_and_the_architecture_page_show_the_rooms_in_order():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert layout_line() in readme, f"README.md's layout section should show:\n{layout_line()}"
    page = (ROOT / "docs" / "developers" / "architecture.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1].strip().strip("`") for line in page.splitlines() if line.startswith("| `cloud/")]
    rooms = [row.removeprefix("cloud/").rstrip("/") for row in rows if row.count("/") == 2]
    assert rooms == list(ROOMS), f"architecture.md's table lists the cloud's rooms as {rooms}, not {list(ROOMS)}"


def _calls(folder: str, names: set[str]) -> dict[str, list[str]]:
    """File -> the calls of `names` in it (constructors and factories called by name or attribute)."""
    where: dict[str, list[str]] = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if name in names:
                    where.setdefault(str(path.relative_to(ROOT)), []).append(name)
    return where


def test_the_parts_around_the_service_are_built_in_the_composition_root_only():
    """The service, the asker and the learner that hear it, the Home Assistant bridge and the automatic
    thresholds are made in cloud/compose.py; main, the demo and the HTTP side take them from there."""
    parts = {"CloudService", "build_asker", "Learner", "HomeAssistantBridge", "AutoThresholds"}
    built = {**_calls("cloud", parts), **_calls("app", parts)}
    assert set(built) == {"cloud/compose.py"}, built
    assert set(built["cloud/compose.py"]) == parts
    assert _calls("tests", {"CloudService"}) == {}  # the tests build it with compose.build_service too


def test_one_error_answer_and_one_offer_maker():
    """Every HTTP route answers an error through cloud/webbase/errors.py, and every site offer (a new model
    verdict's, an operator's correction's) is made by cloud.reuse.verdicts.offers_to."""
    errors, offers = [], []
    for path in sorted((ROOT / "cloud").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        if 'json_response({"error"' in text:
            errors.append(rel)
        if '"reused_from": verdict.event_id' in text:
            offers.append(rel)
    # cloud/ask/api.py keeps its own copy until the questions' branch (editing it now) lands: issue 43
    assert errors == ["cloud/ask/api.py", "cloud/webbase/errors.py"]
    assert offers == ["cloud/reuse/verdicts.py"]


def test_every_package_folder_is_in_the_wheel():
    """pyproject lists its packages by name: a room missing there is missing from an installed cloud."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {"edgetriage." + ".".join(init.parent.relative_to(ROOT).parts)
               for wing in ("cloud", "edge", "shared") for init in (ROOT / wing).rglob("__init__.py")}
    assert folders - set(setup["packages"]) == set()
    assert {f"edgetriage.cloud.{room}" for room in ROOMS} <= set(setup["packages"])
