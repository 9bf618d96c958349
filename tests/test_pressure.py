"""Events before questions (issue 40, cloud.counts.pressure): while the service works on an event, a question worker
waits at its next step, never longer than the bound; an event waiting for the model is set aside; the count of
events worked on goes back to zero however an event ends (answered, from the cache, refused, over HTTP)."""

from __future__ import annotations

import asyncio
import threading
import time

import paho.mqtt.client as mqtt
from edgetriage.cloud.ask.config import AskConfig
from edgetriage.cloud.ask.router import Asker
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import AnalyzerConfig, CloudConfig
from edgetriage.cloud.counts.pressure import EventPressure
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.protocol import encode_event
from edgetriage.shared.topics import Topics
from fixed_model import FixedDelayModel, noise_events
from paho.mqtt.enums import CallbackAPIVersion


def _waits_in_thread(pressure: EventPressure) -> tuple[threading.Thread, list[float]]:
    waited: list[float] = []
    worker = threading.Thread(target=lambda: waited.append(pressure.give_way()))
    worker.start()
    return worker, waited


def test_a_worker_waits_while_an_event_is_worked_on_and_goes_on_when_it_is_done():
    pressure = EventPressure(max_pause_s=5.0)
    assert pressure.give_way() == 0.0 and pressure.gave_way == 0  # nothing worked on: no wait, not counted
    pressure.enter(2)
    worker, waited = _waits_in_thread(pressure)
    time.sleep(0.15)
    assert worker.is_alive()  # two events: it waits
    pressure.leave()
    time.sleep(0.1)
    assert worker.is_alive()  # one still worked on
    pressure.leave()
    worker.join(2)
    assert not worker.is_alive() and 0.2 <= waited[0] < 2.0
    assert pressure.gave_way == 1 and pressure.waited_s == waited[0]


def test_a_worker_never_waits_longer_than_the_bound():
    pressure = EventPressure(max_pause_s=0.2)
    pressure.enter()
    began = time.monotonic()
    assert 0.19 <= pressure.give_way() < 1.0  # events keep coming: questions slow down, never stop
    assert time.monotonic() - began < 1.0


def test_an_event_set_aside_for_the_model_lets_workers_run_and_counts_again_after():
    pressure = EventPressure(max_pause_s=5.0)
    with pressure.working():
        assert pressure.count == 1
        with pressure.aside():
            assert pressure.count == 0 and pressure.give_way() == 0.0
        assert pressure.count == 1
    assert pressure.count == 0
    with pressure.aside():  # set aside when none was counted (an event over HTTP before it was): no debt left
        pass
    assert pressure.count == 0
    pressure.leave(3)  # more done than entered: never below zero
    assert pressure.count == 0 and pressure.give_way() == 0.0


def test_a_question_gives_way_to_an_event_the_service_works_on(tmp_path):
    store = SQLiteStore(tmp_path / "cloud.db")
    pressure = EventPressure(max_pause_s=0.3)

    class Service:  # what the asker reads of the service (cloud.ops.observed.Listened, and the pressure)
        event_listeners: list = []
        verdict_listeners: list = []

    service = Service()
    service.pressure = pressure
    asker = Asker(store, AskConfig(timezone="UTC"), AnalyzerConfig(backend="vllm"))
    asker.attach(service)
    try:
        quick = asyncio.run(asker.ask("how many people today?"))
        pressure.enter()
        held = asyncio.run(asker.ask("how many people yesterday?"))
        pressure.leave()
        assert quick["route"] == held["route"] == "rules"
        assert held["latency_ms"] >= 300 and held["latency_ms"] > quick["latency_ms"] + 250
        figures = asker.figures()
        assert figures["gave_way"] >= 1 and figures["gave_way_s"] >= 0.3
    finally:
        asker.close()
        store.close()


def test_every_event_through_the_broker_leaves_nothing_counted(mosquitto, prefix, tmp_path):
    """Answered by a slow model (set aside meanwhile), repeated (the cache), malformed (refused), and over
    HTTP's path (`process`): once all are answered, no event is counted as worked on."""
    config = CloudConfig(mqtt=MQTTConfig(url=mosquitto.url, prefix=prefix, client_id=f"{prefix}-cloud"),
                         store_path=str(tmp_path / "cloud.db"))
    store = SQLiteStore(tmp_path / "cloud.db")
    topics = Topics(prefix)
    events = noise_events("pi-1", 4)
    got: list[str] = []

    async def scenario() -> tuple[int, int]:
        service = build_service(config, FixedDelayModel(1.0, 4), store)
        await service.start()
        assert await service.wait_connected(10)
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"{prefix}-dev", protocol=mqtt.MQTTv5)
        client.on_message = lambda c, u, m: got.append(m.topic)
        client.connect("127.0.0.1", mosquitto.port)
        client.subscribe(topics.verdicts("pi-1"), 1)
        client.loop_start()
        try:
            for event in events[:3]:
                client.publish(topics.events("pi-1"), encode_event(event), qos=1)
            client.publish(topics.events("pi-1"), b"\x93not an event", qos=1)
            await asyncio.sleep(0.5)  # the model takes 1 s: all three wait for it, set aside
            waiting_for_model = service.pressure.count
            await service.process(events[3], topics.events("pi-1"))
            deadline = time.monotonic() + 20
            while len(got) < 4 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            client.publish(topics.events("pi-1"), encode_event(events[0]), qos=1)  # a repeat: its stored verdict
            while len(got) < 5 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)
            return waiting_for_model, service.pressure.count
        finally:
            client.loop_stop()
            client.disconnect()
            await service.stop()

    try:
        waiting_for_model, after = asyncio.run(scenario())
    finally:
        store.close()
    assert len(got) >= 5
    assert waiting_for_model == 0  # three events with the model, none of them holds questions back
    assert after == 0


def test_the_model_thread_yields_to_the_loop():
    """A model on the CPU generates on a thread of its own that hands the interpreter over every 0.5 ms and
    runs below the loop's priority (Linux), so cache hits and first answers never wait on its generation."""
    import os
    import sys

    from edgetriage.cloud.analysis.base import Analysis, ThreadedBackend

    seen: dict[str, float] = {}

    class Engine:
        name, max_batch = "engine", 1

        def prompt_version(self, event) -> str:
            return "v1"

        def analyze_batch(self, events):
            seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            seen["loop_nice"] = os.getpriority(os.PRIO_PROCESS, os.getpid())
            seen["interval"] = sys.getswitchinterval()
            return [Analysis("benign", 0.9, "", "engine", "v1", 1.0) for _ in events]

    backend = ThreadedBackend(Engine())
    answers = asyncio.run(backend.analyze_batch(noise_events("pi-1", 1)))
    asyncio.run(backend.close())
    assert answers[0].verdict == "benign"
    assert seen["interval"] <= 0.0005
    assert seen["nice"] >= seen["loop_nice"] + 10 or seen["nice"] == 19


def test_the_light_paths_looks_yield_to_the_loop():
    """The closer looks of the light path run on threads below the loop's priority that hand the interpreter over
    every 0.5 ms: a first answer's publish (which waits for paho's lock, held by paho's thread while it waits for
    the interpreter) is not held up by a burst of looks (bench/tmax.py: first answers at 40 events at once)."""
    import os
    import sys

    from edgetriage.cloud.route.lanes import LOOK_NICENESS, LightLane

    seen: dict[str, float] = {}

    class Looking:
        def light(self, event):
            seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            seen["interval"] = sys.getswitchinterval()
            return None

    lane = LightLane(Looking())
    loop_nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    try:
        assert asyncio.run(lane.judge(noise_events("pi-1", 1)[0])) is None
    finally:
        lane.close()
    assert seen["interval"] <= 0.0005
    assert seen["nice"] == min(19, loop_nice + LOOK_NICENESS)
    assert lane.looked == 1 and lane.undecided == 1
