"""Bounded by design (issue 40): one device's crops stop at its quota ([retention] crop_quota_mb: its events are
still answered, their crops not stored, counted on /metrics, a warning once), and the device ids an anonymous
broker lets anyone invent stop at [delivery] max_devices. The real service on a SQLite store, its HTTP API.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
import requests
from conftest import free_port
from edgetriage.cloud.compose import build_app, build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.http.api import run_api
from edgetriage.cloud.http.auth import ApiAuth
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.protocol import ProtocolError, encode_event
from test_heal import DEVICE, OPERATOR, InstantModel, _event


def test_a_devices_crops_stop_at_its_quota_its_events_are_still_answered(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="edgetriage.cloud.service")
    events = [_event(n) for n in range(12)]
    size = max(len(e.crop) for e in events)
    config = CloudConfig.model_validate({"store_path": str(tmp_path / "cloud.db"), "http": {"port": 0},
                                         "retention": {"crop_quota_mb": 4.5 * size / (1 << 20)}})
    store = SQLiteStore(config.store_path)
    service = build_service(config, InstantModel(), store)

    async def run() -> str:
        port = free_port()
        runner = await run_api(build_app(store, service, auth=ApiAuth(OPERATOR)), "127.0.0.1", port)
        try:
            for event in events:
                verdict = await service.process(encode_event(event), service.topics.events(DEVICE))
                assert verdict.verdict == "benign"  # answered, crop or not
            return await asyncio.to_thread(lambda: requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
        finally:
            await service.stop()
            await runner.cleanup()

    try:
        metrics = asyncio.run(run())
        kept = [store.get_crop(e.event_id) is not None for e in events]
    finally:
        store.close()
    assert 3 <= sum(kept) <= 4 and kept[0] and not kept[-1]
    assert f'edgetriage_cloud_crops_not_kept_total{{device="{DEVICE}"}} {12 - sum(kept)}' in metrics
    assert sum("reached its crop quota" in r.getMessage() for r in caplog.records) == 1


def test_device_ids_stop_at_max_devices_but_configured_ones_always_enter(tmp_path):
    config = CloudConfig.model_validate({"store_path": str(tmp_path / "cloud.db"), "http": {"port": 0},
                                         "delivery": {"max_devices": 3},
                                         "reuse": {"sites": {"home": ["listed-1", "listed-2"]}}})
    store = SQLiteStore(config.store_path)
    service = build_service(config, InstantModel(), store)
    try:
        def accept(device: str) -> None:
            event = _event(int(time.time() * 1000) % 1000).model_copy(update={"device": device})
            service.accept(encode_event(event), service.topics.events(device))

        for device in ("listed-1", "listed-2", "invented-1", "invented-1"):
            accept(device)
        with pytest.raises(ProtocolError, match="max_devices = 3") as err:
            accept("invented-2")
        assert err.value.code == "devices"
        accept("listed-2")  # the configured ones are always in
    finally:
        store.close()


def test_a_devices_zone_named_like_the_operators_joins_no_question(tmp_path):
    """dev-x (no camera of the operator's) names its zone "front_door" like the operator's: "anyone at the
    front door?" still counts the operator's own front door only."""
    from test_ask import NOW, asker_for, at, put  # the site of tests/test_ask.py

    store = SQLiteStore(tmp_path / "ask.db")
    try:
        door = put(store, "house", "porch", "person", at(29, 19, 0), "benign", "a person at the door", ("front_door",))
        for minute in range(5):
            put(store, "dev-x", "gate", "person", at(29, 19, 10 + minute), "alert", "", ("front_door",))
        count = asyncio.run(asker_for(store).ask("How many people stood at the front door today?"))
        assert count["value"] == 1 and count["events"] == [door.event_id], (count, NOW)
    finally:
        store.close()


def test_a_messagepack_bomb_is_refused_in_well_under_a_millisecond_and_a_full_event_still_decodes():
    import msgpack
    from edgetriage.shared.protocol import (
        MAX_CLASSES,
        MAX_DETECTIONS,
        MAX_ZONES,
        ClassScore,
        Detection,
        decode_event,
    )

    bomb = msgpack.packb({"v": 1, "detections": [[[{}] * 60] * 60] * 60})  # 216,000 values in 227 KB
    started = time.perf_counter()
    for _ in range(20):
        with pytest.raises(ProtocolError, match="not valid MessagePack") as err:
            decode_event(bomb)
    assert err.value.code == "encoding" and (time.perf_counter() - started) / 20 < 0.002
    full = _event(1).model_copy(update={
        "detections": [Detection(label="person", score=0.5, box=(0.1, 0.1, 0.2, 0.2))] * MAX_DETECTIONS,
        "classes": [ClassScore(label="person", score=0.5)] * MAX_CLASSES,
        "zones": [f"z{i}" for i in range(MAX_ZONES)], "crop_box": (0.1, 0.1, 0.5, 0.5)})
    assert decode_event(encode_event(full)) == full
