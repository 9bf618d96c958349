"""What ships for deployment. The systemd units: valid for systemd (`systemd-analyze verify`), hardened
(`systemd-analyze security`
exposure at most 2.0), and carrying what the edge agent needs on a Pi (notify + watchdog, a dynamic user,
state directory, only the camera device).

`verify` checks that ExecStart's binary exists, and /opt/edgetriage/bin/edgetriage is not installed on a test
machine. So the units are verified inside a temporary root that holds what a real install has there: the
system's own unit files and, at the ExecStart path, a copy of the `edgetriage` entry point of this
installation. Nothing is rewritten in the units themselves.

Also: the annotated example configs validate, and the Grafana dashboard asks only for metrics the cloud
service and the edge agent really expose (both rendered here and parsed as Prometheus text).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UNITS = sorted((ROOT / "systemd").glob("*.service"))
MAX_EXPOSURE = 2.0


def _analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.fail("systemd-analyze is not installed (it comes with the systemd package)")
    return found


def _directives(path: Path) -> dict[str, list[str]]:
    """Key -> every value given for it (systemd allows repeats), across sections."""
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def _exec_path(path: Path) -> str:
    return _directives(path)["ExecStart"][0].split()[0].lstrip("-@:+!")


def _entry_point() -> Path:
    found = shutil.which("edgetriage") or str(Path(sys.executable).with_name("edgetriage"))
    if not Path(found).is_file():
        pytest.fail("the edgetriage entry point is not installed (pip install -e .)")
    return Path(found)


@pytest.fixture(scope="module")
def system_root(tmp_path_factory) -> Path:
    """A root directory laid out as an installed system: the distribution's units, ours, the binary."""
    root = tmp_path_factory.mktemp("root")
    system_units = next((p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")) if p.is_dir()),
                        None)
    if system_units is None:
        pytest.fail("no /usr/lib/systemd/system on this machine; systemd is not installed")
    shutil.copytree(system_units, root / "usr/lib/systemd/system", symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    for unit in UNITS:
        shutil.copy(unit, root / "etc/systemd/system" / unit.name)
        binary = root / _exec_path(unit).lstrip("/")
        binary.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_entry_point(), binary)
    return root


def _verify(root: Path, *names: str) -> subprocess.CompletedProcess:
    return subprocess.run([_analyze(), "verify", f"--root={root}", *names], capture_output=True, text=True,
                          timeout=60)


def test_units_exist():
    assert {u.name for u in UNITS} == {"edgetriage-edge.service", "edgetriage-cloud.service"}


def test_units_verify_cleanly(system_root):
    result = _verify(system_root, *(u.name for u in UNITS))
    # verify exits 0 on many warnings (an unknown key, a bad value): any output is a failure here
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr


def test_verify_would_catch_a_broken_unit(system_root):
    """The check above can fail: a typo and a missing binary are both reported."""
    unit = system_root / "etc/systemd/system/broken.service"
    text = (ROOT / "systemd/edgetriage-edge.service").read_text()
    unit.write_text(text.replace("WatchdogSec=30", "WatchdogSec=thirty").replace(
        "/opt/edgetriage/bin/edgetriage", "/opt/edgetriage/bin/missing"))
    try:
        result = _verify(system_root, "broken.service")
    finally:
        unit.unlink()
    output = result.stdout + result.stderr
    assert "thirty" in output and "missing" in output, output


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_exposure_at_most_two(unit, system_root):
    result = subprocess.run([_analyze(), "security", "--offline=yes", f"--root={system_root}",
                             f"--threshold={int(MAX_EXPOSURE * 10)}", unit.name],
                            capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout[-2000:] + result.stderr
    exposure = float(match.group(1))
    assert exposure <= MAX_EXPOSURE, f"{unit.name}: exposure {exposure} > {MAX_EXPOSURE}\n{result.stdout}"
    assert result.returncode == 0, result.stderr


def test_edge_unit_is_a_supervised_camera_daemon():
    d = _directives(ROOT / "systemd/edgetriage-edge.service")
    assert d["Type"] == ["notify"] and d["Restart"] == ["on-failure"]
    assert int(d["WatchdogSec"][0]) > 0
    assert d["DynamicUser"] == ["yes"] and d["StateDirectory"] == ["edgetriage-edge"]
    assert d["DevicePolicy"] == ["closed"] and "/dev/video0 rw" in d["DeviceAllow"]
    assert d["SupplementaryGroups"] == ["video"]
    assert "PrivateDevices" not in d, "PrivateDevices=yes would hide the camera"
    assert any(v.startswith("-/etc/edgetriage/") for v in d["EnvironmentFile"]), "secrets come from an env file"


def test_cloud_unit_keeps_its_state_and_secrets_outside_the_unit():
    d = _directives(ROOT / "systemd/edgetriage-cloud.service")
    assert d["Restart"] == ["on-failure"] and d["DynamicUser"] == ["yes"]
    assert d["StateDirectory"] == ["edgetriage-cloud"] and d["PrivateDevices"] == ["yes"]
    assert any(v.startswith("-/etc/edgetriage/") for v in d["EnvironmentFile"])
    assert not any("PASSWORD" in v or "TOKEN" in v for v in d.get("Environment", []))


@pytest.mark.parametrize(("side", "example", "unit"), [("edge", "edge-pi.toml", "edgetriage-edge.service"),
                                                       ("cloud", "cloud.toml", "edgetriage-cloud.service")])
def test_example_configs_pass_check_config(side, example, unit):
    """The annotated examples are what the units run (/etc/edgetriage/<side>.toml): they must validate."""
    exec_start = _directives(ROOT / "systemd" / unit)["ExecStart"][0]
    assert f"--config /etc/edgetriage/{side}.toml" in exec_start
    result = subprocess.run([sys.executable, "-m", "edgetriage", side, "check-config", "--config",
                             str(ROOT / "examples" / example)], capture_output=True, text=True, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)})
    hint = ("\nCloudConfig needs `homeassistant: HomeAssistantConfig = HomeAssistantConfig()` (config.py)"
            if "homeassistant: unknown key" in result.stderr else "")
    assert result.returncode == 0, result.stderr + hint
    # secrets only from the environment, or a client certificate (the shipped broker config's cloud login)
    assert "OK" in result.stdout and ("password not set" in result.stdout or "client certificate" in result.stdout)
    assert "Traceback" not in result.stderr


def _exposed_metric_names(tmp_path: Path) -> set[str]:
    """Every sample name the cloud service's /metrics and the edge agent's endpoint expose, parsed with the
    Prometheus text parser (so a malformed exposition fails here too)."""
    from edgetriage.cloud.analysis import build_backend
    from edgetriage.cloud.compose import build_service
    from edgetriage.cloud.config import CloudConfig
    from edgetriage.cloud.ops.metrics import CloudMetrics
    from edgetriage.cloud.storage.store import SQLiteStore
    from edgetriage.edge.metrics import CameraSnapshot, DeviceSnapshot, EdgeMetrics
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    config = CloudConfig.model_validate({"analyzer": {"backend": "openai"}, "store_path": str(tmp_path / "c.db")})
    service = build_service(config, build_backend(config.analyzer), SQLiteStore(config.store_path))
    metrics = CloudMetrics()
    metrics.attach(service)
    snapshot = DeviceSnapshot(
        cameras=[CameraSnapshot("cam0", "streaming", 10, 10, 4, 1, 0, 5.0, 2.0)], counters={}, outbox={},
        outbox_dropped=0, mqtt_connected=True, cloud_overloaded=False, budget_available=1.0, config_version="1",
        config_refusals=0, model_name="ssdlite_person", model_sha256="0" * 64, model_swaps=0, model_refusals=0,
        watchdog_healthy=True)
    texts = [metrics.render(service), generate_latest(EdgeMetrics(lambda: snapshot).registry).decode()]
    return {sample.name for text in texts for family in text_string_to_metric_families(text)
            for sample in family.samples}


def test_grafana_dashboard_uses_only_exposed_metrics(tmp_path):
    dashboard = json.loads((ROOT / "deploy/grafana/edgetriage.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 20
    assert all(t["datasource"]["uid"] == "${datasource}" for p in dashboard["panels"] for t in p.get("targets", []))
    used = set(re.findall(r"edgetriage_[a-z_]+", " ".join(exprs)))
    exposed = _exposed_metric_names(tmp_path)
    assert used - exposed == set(), f"the dashboard asks for metrics nobody exposes: {sorted(used - exposed)}"
    assert {n for n in used if n.startswith("edgetriage_cloud_")} and {
        n for n in used if n.startswith("edgetriage_edge_")
    }
