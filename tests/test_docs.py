"""The README and the manual stay true: the README is short, the manual builds with `mkdocs build --strict`, the
generated configuration reference covers every key of both configs and is current, every example config passes
`check-config`, and every command the docs show in an `sh` block is run here (or named with the test that runs
it, or with why it needs a machine of its own)."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
REGENERATE = "python tools/docs_reference.py"


def _reference_tool():
    """tools/docs_reference.py, loaded once (a script, not a package module)."""
    if "docs_reference" not in sys.modules:
        spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "tools" / "docs_reference.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["docs_reference"] = module  # its dataclass looks its module up while being made
        spec.loader.exec_module(module)
    return sys.modules["docs_reference"]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "EDGETRIAGE_STATE": str(tmp_path / "state"), "NO_MKDOCS_2_WARNING": "1"}


def test_the_readme_is_read_in_five_minutes():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; keep it to 150 and move the rest into docs/"
    text = "\n".join(lines)
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), f"README.md links to {link}, which does not exist"


def test_the_manual_builds_strict(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(tmp_path / "site")], capture_output=True, text=True, env=_env(tmp_path),
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "site" / "operator" / "policies" / "index.html").is_file()


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    missing = sorted(p for p in pages if f": {p}" not in nav)
    assert not missing, f"pages no reader can reach from the menu (add them to mkdocs.yml's nav): {missing}"


def test_the_generated_reference_is_current():
    tool = _reference_tool()
    written, no_text, no_example = tool.pages()
    assert not no_text, ("config keys without a description (give the Field a description=, or add the key to "
                         "[description] in tools/config_descriptions.toml):\n  " + "\n  ".join(no_text))
    assert not no_example, ("config keys without an example (set them in an examples/ config, or add them to "
                            "[example] in tools/config_descriptions.toml):\n  " + "\n  ".join(no_example))
    stale = [str(path.relative_to(ROOT)) for path, text in written.items()
             if not path.is_file() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"stale generated pages {stale}: run {REGENERATE}"


@pytest.mark.parametrize("side", ["edge", "cloud"])
def test_the_reference_names_every_config_key(side):
    """Read from the committed page, not from the generator: each key has a row under its section's heading."""
    from edgetriage.cloud.config import CloudConfig
    from edgetriage.edge.config import EdgeConfig

    tool = _reference_tool()
    model = EdgeConfig if side == "edge" else CloudConfig
    page = (DOCS / "reference" / f"config-{side}.md").read_text(encoding="utf-8")
    rows: dict[str, set[str]] = {}
    heading = ""
    for line in page.splitlines():
        if line.startswith("## "):
            heading = line[3:].strip("` ")
        elif line.startswith("| `") and heading:
            rows.setdefault(heading, set()).add(line.split("`")[1])
    keys = tool.config_keys(model)
    missing = [key.path for key in keys
               if key.name not in rows.get(tool._heading(key.section) or "Top level", set())]
    assert not missing, f"keys missing from docs/reference/config-{side}.md: {missing}; run {REGENERATE}"
    assert len(keys) > 100


EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


def test_the_examples_show_a_whole_site():
    names = {path.name for path in EXAMPLES}
    assert {"cloud.toml", "edge-pi.toml", "edge-rtsp.toml"} <= names
    cloud = tomllib.loads((ROOT / "examples" / "cloud.toml").read_text(encoding="utf-8"))
    assert cloud["analyzer"]["policies"] and any("zone" in p for p in cloud["analyzer"]["policies"])
    assert cloud["sites"][0]["cameras"] and cloud["ask"]["zones"] and cloud["reuse"]["sites"]
    assert cloud["mqtt"]["tls"]["cert_file"]
    pi = tomllib.loads((ROOT / "examples" / "edge-pi.toml").read_text(encoding="utf-8"))
    assert [c["source"] for c in pi["cameras"]] == ["0"]
    rtsp = tomllib.loads((ROOT / "examples" / "edge-rtsp.toml").read_text(encoding="utf-8"))
    assert [c["source"][:7] for c in rtsp["cameras"]] == ["rtsp://", "rtsp://"]
    devices = {pi["device"], rtsp["device"]}
    assert devices == set(cloud["reuse"]["sites"]["home"]) == set(cloud["sites"][0]["cameras"])


def test_each_example_passes_check_config(tmp_path):
    """The three a reader starts from, and any other file in examples/, as `check-config` reads them."""
    examples = sorted({*EXAMPLES, *(ROOT / "examples" / name for name in ("cloud.toml", "edge-pi.toml",
                                                                         "edge-rtsp.toml"))})
    for example in examples:
        side = "cloud" if example.name.startswith("cloud") else "edge"
        run = subprocess.run([sys.executable, "-m", "edgetriage", side, "check-config", "--config", str(example)],
                             capture_output=True, text=True, env=_env(tmp_path), cwd=tmp_path, timeout=120)
        assert run.returncode == 0, f"{example.name}: {run.stderr}"
        assert f"{example}: OK" in run.stdout
        if side == "edge":  # a live camera is not openable here: check-config says so and passes
            assert "opened when the agent runs, retried while away" in run.stdout, run.stdout
        else:
            assert "NOT COMPILED" not in run.stdout and "compiled:" in run.stdout, run.stdout


# Every command line the docs show in an ```sh block: run here (None, or the command to run instead when the
# pasted one would write into the repository), run by another test (the file that runs it), run by .ci/run, or
# needing a machine of its own (why). A command added to the docs fails this test until it is listed here.
RUN, TESTED, CI, MACHINE = "run", "tested", "ci", "machine"
COMMANDS: dict[str, tuple[str, str | None]] = {
    "edgetriage edge check-config --config examples/edge-pi.toml": (RUN, None),
    "edgetriage edge check-config --config examples/edge-rtsp.toml": (RUN, None),
    "edgetriage cloud check-config --config examples/cloud.toml": (RUN, None),
    "python tools/docs_reference.py --check": (RUN, None),
    "edgetriage --help": (RUN, None),
    "edgetriage cloud proposals --device porch-pi --camera porch": (RUN, None),
    "edgetriage cloud export-dataset --since 7d --format coco dataset-out": (RUN, None),
    "deploy/mosquitto/make-certs.sh certs -n broker.lan porch-pi": (RUN, None),
    "deploy/mosquitto/make-certs.sh certs -n broker.lan porch-pi garage-pi": (RUN, None),
    "edgetriage cloud page-link": (TESTED, "tests/test_hardening.py"),
    "python3 deploy/mosquitto/dynsec.py /etc/mosquitto/edgetriage/dynamic-security.json --password "
    "edgetriage.homeassistant=SECRET porch-1 garage-2": (
        MACHINE, "writes into /etc on the broker host as root; tests/test_share_theft.py runs it into a temp folder"),
    "chown mosquitto: /etc/mosquitto/edgetriage/dynamic-security.json": (MACHINE, "needs root and a mosquitto user "
                                                                          "on the broker host"),
    "systemctl restart mosquitto": (MACHINE, "needs root and systemd as PID 1 on the broker host"),
    "edgetriage cloud push-config --device porch-pi change.toml --wait 15": (TESTED, "tests/test_first_week.py"),
    "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 --index-url "
    "https://download.pytorch.org/whl/cpu && pip install '.[demo]' && edgetriage demo":
        (MACHINE, "downloads torch from PyTorch's index, which the test machines cannot reach; the same install "
                  "without the index runs in .ci/run, and the demo in tests/test_demo.py"),
    "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install '.[demo]' && "
    "edgetriage demo": (CI, "the install in .ci/run; the demo in tests/test_demo.py"),
    "sudo apt-get install -y mosquitto redis-server chromium openssl espeak-ng sox python3-gi "
    "gir1.2-gst-rtsp-server-1.0 gstreamer1.0-rtsp gstreamer1.0-plugins-good gstreamer1.0-plugins-ugly "
    "gstreamer1.0-libav":
        (CI, ".ci/run installs these packages when missing"),
    "pip install '.[test]' && python -m pytest -q": (CI, ".ci/run runs exactly this"),
    "sudo systemctl enable --now edgetriage-cloud": (MACHINE, "needs root and systemd as PID 1 on the host; "
                                                              "tests/test_systemd.py checks the units"),
    "sudo systemctl enable --now edgetriage-edge": (MACHINE, "needs root and systemd as PID 1 on the device; "
                                                             "tests/test_systemd.py checks the units"),
    "sudo cp systemd/edgetriage-edge.service /etc/systemd/system/ && sudo systemctl enable --now edgetriage-edge":
        (MACHINE, "needs root and systemd as PID 1 on the device; tests/test_systemd.py checks the units"),
}


def doc_commands() -> dict[str, list[str]]:
    """Command line -> the files that show it, from every ```sh block of the README and the manual."""
    found: dict[str, list[str]] = {}
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        fence = False
        for line in path.read_text(encoding="utf-8").replace("\\\n", " ").splitlines():  # one command, continued
            text = " ".join(line.split())
            if text.startswith("```"):
                fence = text in ("```sh", "```bash", "```shell") if not fence else False
                continue
            if fence and text and not text.startswith("#"):
                found.setdefault(text.removeprefix("$ "), []).append(str(path.relative_to(ROOT)))
    return found


def test_every_pasted_command_is_accounted_for():
    shown = doc_commands()
    unlisted = sorted(set(shown) - set(COMMANDS))
    assert not unlisted, ("commands in the docs that no test runs (add each to COMMANDS in tests/test_docs.py): "
                          + "; ".join(f"{c!r} in {shown[c]}" for c in unlisted))
    gone = sorted(set(COMMANDS) - set(shown))
    assert not gone, f"COMMANDS lists commands the docs no longer show: {gone}"
    for command, (how, detail) in COMMANDS.items():
        if how in (TESTED, CI):
            path = ROOT / (detail or "").split()[0] if how == TESTED else ROOT / ".ci" / "run"
            assert path.is_file(), f"{command!r}: {path} does not exist"
        if how == TESTED:
            words = shlex.split(command)
            assert words[2] in path.read_text(encoding="utf-8"), f"{path.name} does not run `{words[2]}`"


def _argv(command: str) -> list[str]:
    words = [str(ROOT / w) if w.split("/")[0] in ("examples", "deploy", "tools") else w for w in shlex.split(command)]
    if words[0] == "edgetriage":
        return [sys.executable, "-m", "edgetriage", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    return ["bash", *words] if words[0].endswith(".sh") else words


@pytest.mark.parametrize("command", [c for c, (how, _) in COMMANDS.items() if how == RUN])
def test_the_docs_commands_run(command, tmp_path):
    """From an empty folder, with the state in it: what a reader pastes after cloning works as shown."""
    assert command in doc_commands(), f"{command!r} is listed as run here but no page shows it"
    run = subprocess.run(_argv(command), capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path),
                         timeout=120)
    assert run.returncode == 0, f"{command}\n{run.stdout}\n{run.stderr}"
