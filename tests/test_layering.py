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
        "import sys, edgetriage.edge.agent, edgetriage.edge.pipeline, edgetriage.edge.outbox;"
        f"bad=[m for m in {HEAVY!r} if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
