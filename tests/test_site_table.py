"""One place for each camera's name and time zone (issue 38): `[[sites]]` in the cloud config. It fills [ask]
and refuses the same thing said otherwise there; what a device announces that differs is reported, never
followed: the event keeps the site's local time. The real config loader and CLI, events built from real crops."""

from __future__ import annotations

import time

import pytest
from edgetriage.cli import main
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.sites import SiteTable
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event

SITES = [{"name": "shop", "timezone": "Asia/Tokyo", "cameras": {"pi-floor": ["floor", "till"],
                                                                 "pi-back": ["yard"]}}]


def _event(jpeg: bytes, device: str, camera: str, local_time: str | None, at_ms: int) -> Event:
    return Event(event_id=uuid7(at_ms), device=device, camera=camera, captured_ms=at_ms, label="person", score=0.8,
                 track_id=1, detections=[Detection(label="person", score=0.8, box=(0.1, 0.1, 0.9, 0.9))],
                 phash="00ff00ff00ff00ff", reason="person", crop=jpeg, local_time=local_time)


def test_the_site_table_fills_ask_and_refuses_it_said_twice(tmp_path, capsys):
    config = CloudConfig.model_validate({"sites": SITES})
    assert config.ask.timezones == {"pi-floor": "Asia/Tokyo", "pi-back": "Asia/Tokyo"}
    assert config.ask.cameras == {"pi-floor": ["floor", "till"], "pi-back": ["yard"]}
    path = tmp_path / "cloud.toml"
    path.write_text('[[sites]]\nname = "shop"\ntimezone = "Asia/Tokyo"\ncameras = { pi-floor = ["floor"] }\n'
                    '[ask]\ntimezones = { pi-floor = "UTC" }\n')
    assert main(["cloud", "check-config", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "say it once, in [[sites]]" in err and "Traceback" not in err
    path.write_text('[[sites]]\nname = "shop"\ntimezone = "Asia/Tokyo"\ncameras = { pi-floor = ["floor"] }\n'
                    '[[sites]]\nname = "depot"\ncameras = { pi-floor = ["gate"] }\n')
    assert main(["cloud", "check-config", "--config", str(path)]) == 2
    assert "a device belongs to one site" in capsys.readouterr().err
    path.write_text('[[sites]]\nname = "shop"\ntimezone = "Asia/Tokyo"\ncameras = { pi-floor = ["floor", "till"] }\n')
    assert main(["cloud", "check-config", "--config", str(path)]) == 0
    assert "site shop (Asia/Tokyo): pi-floor: floor, till" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown time zone"):
        CloudConfig.model_validate({"sites": [{"name": "x", "timezone": "Mars/Olympus", "cameras": {}}]})


def test_what_a_device_claims_otherwise_is_reported_and_not_followed(visitor_jpeg):
    table = SiteTable(CloudConfig.model_validate({"sites": SITES}).sites)
    at = int(time.mktime((2026, 12, 7, 12, 0, 0, 0, 0, -1)) * 1000)
    tokyo = table.local_time("pi-floor", at)
    agreed = _event(visitor_jpeg, "pi-floor", "floor", tokyo, at)
    assert table.check(agreed) is agreed and table.claims() == []
    other = "00:00" if tokyo != "00:00" else "01:00"
    checked = table.check(_event(visitor_jpeg, "pi-back", "garage", other, at))
    assert checked.local_time == tokyo and checked.camera == "garage"  # the site's clock; the camera as named
    claims = table.claims()
    assert len(claims) == 2 and "'garage', which [[sites]] 'shop' does not list" in claims[0]
    assert f"says its local time is {other}" in claims[1] and "Asia/Tokyo" in claims[1]
    table.check(_event(visitor_jpeg, "pi-back", "garage", other, at))
    assert len(table.claims()) == 2  # each said once
    unlisted = _event(visitor_jpeg, "pi-else", "cam0", other, at)
    assert table.check(unlisted) is unlisted  # a device the table does not list is not judged
    assert table.compare("pi-back", ["yard", "garage"]) == [
        "device 'pi-back' runs camera 'garage', which [[sites]] does not list for it"]
