"""Capacity in the load report (issue 29): the scheduler measures verdicts/s, what the model would answer kept
busy, and the wait for it; the retained load report carries them, and devices of either age still decode it."""

from __future__ import annotations

import asyncio
import json

from edgetriage.cloud.config import SchedulerConfig
from edgetriage.cloud.scheduling.capacity import Capacity, CapacityMeter, LoadState
from edgetriage.cloud.scheduling.scheduler import Scheduler
from edgetriage.shared.protocol import CloudSeen, LoadReport, decode_load_report, encode_load_report
from edgetriage.shared.wire import Message
from fixed_model import FixedDelayModel, noise_events
from pydantic import Field


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_meter_counts_the_last_minute_only():
    clock = Clock()
    meter = CapacityMeter(concurrency=1, clock=clock)
    assert meter.snapshot() == Capacity()  # nothing measured: nothing claimed
    clock.now += 30
    meter.finished(8, 2.0, [float(w) for w in range(100, 900, 100)])
    clock.now += 10
    meter.finished(8, 2.0, [50.0] * 8)
    got = meter.snapshot()
    assert got.capacity_per_s == 4.0  # 16 verdicts in 4 s of model time
    assert got.verdicts_per_s == round(16 / 40, 2)  # over the 40 s since start (under a minute)
    assert got.queue_wait_ms == 800.0  # the 95th percentile of the 16 waits
    clock.now += 55  # the first batch left the window
    assert meter.snapshot().capacity_per_s == 4.0 and meter.snapshot().verdicts_per_s == round(8 / 60, 2)
    assert meter.snapshot().queue_wait_ms == 50.0
    clock.now += 10
    assert meter.snapshot() == Capacity()
    two = CapacityMeter(concurrency=2, clock=clock)
    two.finished(1, 0.5, [0.0])
    assert two.snapshot().capacity_per_s == 4.0  # two calls at once, each 0.5 s


def test_a_report_without_figures_is_byte_for_byte_the_old_one_and_old_reports_decode():
    old_bytes = b'{"overloaded":true,"queue_depth":3,"ts":1700000000000}'
    assert LoadState(True, 3, 1700000000000).payload() == old_bytes
    report = decode_load_report(old_bytes)
    assert report.verdicts_per_s is None and report.capacity_per_s is None and report.headroom_per_s is None


class V1LoadReport(Message):
    """The load report as devices before issue 29 decode it."""

    overloaded: bool
    queue_depth: int = Field(0, ge=0)
    ts: int = Field(ge=0)


def test_an_older_device_decodes_the_new_report_and_a_newer_one_reads_the_headroom():
    payload = LoadState(False, 0, 1700000000000, Capacity(12.5, 40.0, 230.0)).payload()
    assert json.loads(payload) == {"overloaded": False, "queue_depth": 0, "ts": 1700000000000,
                                   "verdicts_per_s": 12.5, "capacity_per_s": 40.0, "queue_wait_ms": 230.0}
    old = V1LoadReport.model_validate_json(payload)
    assert (old.overloaded, old.queue_depth, old.ts) == (False, 0, 1700000000000)
    new = decode_load_report(payload)
    assert new.headroom_per_s == 27.5 and new.queue_wait_ms == 230.0
    assert decode_load_report(encode_load_report(new)) == new
    assert CloudSeen(connected=True, overloaded=False, headroom_per_s=27.5).headroom_per_s == 27.5
    assert LoadReport(overloaded=False, ts=1, verdicts_per_s=50.0, capacity_per_s=40.0).headroom_per_s == 0.0


def test_the_scheduler_measures_its_model_and_reports_it_while_not_overloaded():
    told: list[LoadState] = []

    async def run() -> Scheduler:
        model = FixedDelayModel(delay_s=0.05, concurrency=2)
        config = SchedulerConfig(batch_wait_ms=0, load_refresh_s=0.5, capacity_report_s=0.5)
        scheduler = Scheduler(model, config, on_load=told.append)
        await scheduler.start()
        try:
            assert scheduler.load_now().figures()["capacity_per_s"] is None
            outcomes = await asyncio.gather(*(scheduler.submit(e) for e in noise_events("cam-dev", 12)))
            assert all(o.analysis is not None and o.analysis.verdict == "benign" for o in outcomes)
            await asyncio.sleep(1.2)
        finally:
            await scheduler.stop()
        return scheduler

    scheduler = asyncio.run(run())
    figures = scheduler.load_now().figures()
    assert 10.0 <= figures["capacity_per_s"] <= 40.0, figures  # 2 at a time, 50 ms each: at most 40/s
    assert figures["verdicts_per_s"] > 0 and figures["headroom_per_s"] > 0
    assert figures["queue_wait_ms"] >= 100.0  # 12 events, 2 at a time: the last waited 5 rounds of 50 ms
    assert not told[-1].overloaded and told[-1].capacity.capacity_per_s is not None  # sent without an overload
    report = decode_load_report(told[-1].payload())
    assert report.capacity_per_s == told[-1].capacity.capacity_per_s


def test_reports_only_on_overload_changes_when_capacity_reports_are_off():
    told: list[LoadState] = []

    async def run() -> None:
        model = FixedDelayModel(delay_s=0.01, concurrency=1)
        scheduler = Scheduler(model, SchedulerConfig(batch_wait_ms=0, load_refresh_s=0.5, capacity_report_s=0),
                              on_load=told.append)
        await scheduler.start()
        await asyncio.gather(*(scheduler.submit(e) for e in noise_events("cam-dev", 3)))
        await asyncio.sleep(1.1)
        await scheduler.stop()

    asyncio.run(run())
    assert len(told) == 1 and told[0].capacity == Capacity()  # the start's report only
