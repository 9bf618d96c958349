"""What an adversary with one device's credentials (or none) tries at the cloud's doors: another device's
event id, requests without a Content-Type, a lower-case "bearer", reading the server's software from its
headers; and the credentials the service must not write into logs."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import free_port
from edgetriage.cli import main as cli_main
from edgetriage.shared.protocol import ProtocolError, encode_event
from test_cloud_api import DEVICE_TOKEN, OPERATOR, _event, _json_body, api, crops  # noqa: F401 - fixtures

# -- an event id belongs to its device ----------------------------------------------------------------------


def test_another_devices_event_id_is_refused_on_every_path(api, crops):  # noqa: F811
    garage = _event(crops[1], 2, device="pi-garage")
    assert api.post("/v1/events", json=_json_body(garage)).status_code == 200  # the operator sends pi-garage's
    stored = api.get(f"/v1/verdicts/{garage.event_id}").json()
    # pi-door's token, an event of pi-door's own, but with pi-garage's event id
    borrowed = _event(crops[0], 3).model_copy(update={"event_id": garage.event_id})
    r = api.post("/v1/events", token=DEVICE_TOKEN, json=_json_body(borrowed))
    assert r.status_code == 400 and "another device" in r.json()["error"], r.text
    assert stored["description"] not in r.text
    assert api.get(f"/v1/verdicts/{garage.event_id}", token=DEVICE_TOKEN).status_code == 404
    # the MQTT intake (the same code path a message on pi-door's own events topic takes): refused, no verdict
    topic = api.service.topics.events("pi-door")
    with pytest.raises(ProtocolError, match="another device"):
        api.call(api.service.process(encode_event(borrowed), topic))
    assert api.service.stats.rejected_by.get("invalid", 0) >= 2
    assert api.get(f"/v1/verdicts/{garage.event_id}").json() == stored  # pi-garage's verdict untouched


# -- HTTP details -------------------------------------------------------------------------------------------


def test_content_type_is_required_and_bearer_is_case_insensitive(api, crops):  # noqa: F811
    event = _event(crops[0], 1)
    r = api.post("/v1/events", data=encode_event(event), headers={"Content-Type": ""})
    assert r.status_code == 415 and "Content-Type" in r.json()["error"], r.text
    import requests

    raw = requests.post(api.base + "/v1/events", data=encode_event(event),
                        headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=30)
    assert "Content-Type" not in raw.request.headers and raw.status_code == 415, raw.text
    ok = api.post("/v1/events", data=encode_event(event), headers={"Content-Type": "application/msgpack"})
    assert ok.status_code == 200
    for scheme in ("bearer", "BEARER", "Bearer"):
        r = requests.get(api.base + "/v1/stats", headers={"Authorization": f"{scheme} {OPERATOR}"}, timeout=30)
        assert r.status_code == 200, scheme
    r = requests.get(api.base + "/v1/stats", headers={"Authorization": f"Basic {OPERATOR}"}, timeout=30)
    assert r.status_code == 401


def test_the_server_header_names_no_software_versions(api):  # noqa: F811
    for path in ("/healthz", "/v1/stats", "/nowhere"):
        server = api.get(path).headers.get("Server", "")
        assert server == "edgetriage", (path, server)


# -- credentials stay out of logs ------------------------------------------------------------------------------


def test_the_page_ticket_is_not_logged_by_a_service_without_a_terminal(caplog, capsys, tmp_path):
    from edgetriage.cloud.main import show_page_link

    caplog.set_level(logging.DEBUG, logger="edgetriage.cloud")  # whatever level an earlier CLI run left it at
    show_page_link("http://127.0.0.1:1/ui/?ticket=SECRET-TICKET")  # pytest's stderr is no terminal
    assert "SECRET-TICKET" not in caplog.text and "SECRET-TICKET" not in capsys.readouterr().err
    assert "only when started on a terminal" in caplog.text
    keep = tmp_path / "page-link"
    show_page_link("http://127.0.0.1:1/ui/?ticket=SECRET-TICKET", keep)  # a service (systemd): a private file
    assert "SECRET-TICKET" not in caplog.text and "SECRET-TICKET" not in capsys.readouterr().err
    assert keep.read_text().strip().endswith("SECRET-TICKET") and keep.stat().st_mode & 0o777 == 0o600
    assert str(keep) in caplog.text


def test_check_config_names_a_certificate_login(tmp_path, capsys):
    config = tmp_path / "cloud.toml"
    config.write_text('[mqtt]\nurl = "mqtts://broker.lan:8885"\n[mqtt.tls]\nca_file = "/x/ca.crt"\n'
                      'cert_file = "/x/edgetriage.cloud.crt"\nkey_file = "/x/edgetriage.cloud.key"\n')
    assert cli_main(["cloud", "check-config", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "anonymous" not in out and "client certificate /x/edgetriage.cloud.crt" in out, out




# -- a store that cannot be used ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["corrupt", "directory", "parent-is-a-file", "unwritable"])
def test_an_unusable_store_path_is_one_line_and_exit_2(case, tmp_path, mosquitto):
    """`cloud run` with a store_path that cannot be used: one line naming it, exit 2, no traceback, at once
    (before any model is loaded)."""
    if case == "corrupt":
        store = tmp_path / "cloud.db"
        store.write_bytes(b"this is not an SQLite database, it was overwritten\n" * 200)
    elif case == "directory":
        store = tmp_path / "a-folder"
        store.mkdir()
    elif case == "parent-is-a-file":
        (tmp_path / "file").write_text("x")
        store = tmp_path / "file" / "cloud.db"
    else:  # root may write anywhere a test could chmod; /proc takes no new files from anyone
        store = Path("/proc/edgetriage-test/cloud.db")
    config = tmp_path / "cloud.toml"
    config.write_text(f'store_path = "{store}"\n[http]\nport = {free_port()}\n[mqtt]\nurl = "{mosquitto.url}"\n')
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "edgetriage", "cloud", "run", "--config", str(config)],
                         capture_output=True, text=True, timeout=120)
    assert time.monotonic() - started < 60
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and len(lines) == 1, run.stderr
    assert str(store) in lines[0] and "store" in lines[0], lines[0]
