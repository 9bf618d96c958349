"""One place for each camera's name and time zone (issue 38): `[[sites]]` in the cloud config. It fills [ask]
and refuses the same thing said otherwise there; what a device announces that differs is reported, never
followed: the event keeps the site's local time. The real config loader and CLI, events built from real crops."""

from __future__ import annotations

import time

import pytest
from edgetriage.cli import main
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.reuse.sites import SiteTable
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


def test_each_claim_in_full_and_a_bounded_list(visitor_jpeg):
    table = SiteTable(CloudConfig.model_validate({"sites": SITES}).sites)
    at = 1_796_600_000_000  # 2026-12-06 23:33:20 UTC: 08:33 in Tokyo
    assert table.local_time("pi-floor", at) == "08:33" and table.local_time("pi-else", at) is None
    table.check(_event(visitor_jpeg, "pi-back", "garage", "23:33", at))
    assert table.claims() == [
        "device 'pi-back' announces camera 'garage', which [[sites]] 'shop' does not list for it (it lists yard); "
        "its events are kept, the camera is not added",
        "device 'pi-back' says its local time is 23:33 where [[sites]] 'shop' (Asia/Tokyo) gives 08:33: its time "
        "zone differs; the cloud reads the site's"]
    for n in range(300):
        table.check(_event(visitor_jpeg, "pi-floor", f"cam{n}", "08:33", at))
    assert len(table.claims()) == 256  # each said once, and only so many
    with pytest.raises(ValueError, match="'shop' is listed twice"):
        CloudConfig.model_validate({"sites": [SITES[0], {"name": "shop", "cameras": {"pi-x": ["a"]}}]})


def test_check_config_reads_the_online_devices_states(mosquitto, prefix, tmp_path, capsys):
    """`check-config --devices S` against a real broker holding the devices' retained states."""
    import paho.mqtt.client as mqtt
    from edgetriage.cloud.reuse.sites import report
    from edgetriage.shared.config import MQTTConfig
    from edgetriage.shared.topics import Topics
    from test_site import _state

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.connect("127.0.0.1", mosquitto.port)
    client.loop_start()
    topics = Topics(prefix)
    try:
        for device, cameras in (("pi-floor", ["floor", "garage"]), ("pi-stray", ["cam0"])):
            client.publish(topics.state(device), _state(device, cameras), qos=1, retain=True).wait_for_publish(10)
        client.publish(topics.state("pi-junk"), b"not a state", qos=1, retain=True).wait_for_publish(10)
        sites = CloudConfig.model_validate({"sites": SITES}).sites
        lines, differences = report(sites, MQTTConfig(url=mosquitto.url, prefix=prefix), 1.5)
        assert lines == ["site shop (Asia/Tokyo): pi-back: yard; pi-floor: floor, till"]
        assert differences == [
            "device 'pi-floor' runs camera 'garage', which [[sites]] does not list for it",
            "[[sites]] lists camera 'till' for device 'pi-floor', which the device does not run",
            "device 'pi-stray' is online but [[sites]] does not list it",
            "device 'pi-back' of site 'shop' has no state on the broker (offline, or never ran)"]
        assert report(sites, None, 1.0) == (lines, [])
        path = tmp_path / "cloud.toml"
        path.write_text(f'[mqtt]\nurl = "{mosquitto.url}"\nprefix = "{prefix}"\n[[sites]]\nname = "shop"\n'
                        'timezone = "Asia/Tokyo"\ncameras = { pi-floor = ["floor", "garage"] }\n')
        assert main(["cloud", "check-config", "--config", str(path), "--devices", "1"]) == 1  # pi-stray is on
        out = capsys.readouterr().out
        assert "DIFFERS: device 'pi-stray'" in out and "DIFFERS: device 'pi-floor'" not in out
    finally:
        for device in ("pi-floor", "pi-stray", "pi-junk"):
            client.publish(topics.state(device), b"", qos=1, retain=True).wait_for_publish(10)
        client.disconnect()
        client.loop_stop()
