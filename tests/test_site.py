"""A scripted site (issue 38), as an operator runs one: a cloud with a `[[sites]]` table, a policy and a busy
model; two devices with five cameras between them, crops from frames of three sizes; then `watch`, feedback,
/healthz and /v1/stats, `export-dataset`, `proposals`, `check-config --devices` and the page's filters in the real
headless Chromium. Real Mosquitto, the real cloud service with the real translator and the real OpenAI back-end
against a slow OpenAI-compatible server of the test's own, the real CLI; the devices are MQTT clients that send
what a device sends (events of real clip crops, their retained state), so the site takes seconds, not minutes."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import queue
import threading
import time

import cv2
import numpy as np
import paho.mqtt.client as mqtt
import pytest
import requests
from aiohttp import web
from conftest import MEDIA, free_port
from edgetriage.cli import main
from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.analysis.translator import Translator
from edgetriage.cloud.config import CloudConfig
from edgetriage.demo import CloudThread
from edgetriage.edge.vision.crops import phash_dct64
from edgetriage.shared.config import MQTTConfig
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import (
    AppliedConfig,
    BudgetState,
    CameraState,
    CloudSeen,
    Detection,
    DeviceState,
    Event,
    RunningModel,
    decode_verdict,
    encode_device_state,
    encode_event,
)
from edgetriage.shared.topics import Topics
from edgetriage.watch import watch
from test_page import CDP

MODEL_S = 1.0  # the busy model's time per answer, one at a time
POLICY = "Alert only if someone stays at the door longer than 30 s"
# camera -> (device, clip, second, frame size, label): three frame sizes, the door one the policy's
CAMERAS = {
    "floor": ("pi-floor", "one-by-one-person-detection.mp4", 12.0, (768, 432), "person"),
    "till": ("pi-floor", "face-demographics-walking.gif", 1.0, (480, 270), "person"),
    "door": ("pi-floor", "one-by-one-person-detection.mp4", 30.0, (1280, 720), "person"),
    "yard": ("pi-back", "car-detection.mp4", 2.0, (768, 432), "car"),
    "store": ("pi-back", "person-bicycle-car-detection.gif", 1.0, (480, 270), "person"),
}


def _shot(translator: Translator, camera: str) -> tuple[bytes, tuple[float, float, float, float]]:
    """(JPEG crop, the detection's box in the frame) of the clip's frame at the camera's size: the object the
    cloud's detector finds best, cut with a margin, as a device cuts it."""
    _, clip, second, size, label = CAMERAS[camera]
    cap = cv2.VideoCapture(str(MEDIA / clip))
    cap.set(cv2.CAP_PROP_POS_MSEC, second * 1000)
    ok, frame = cap.read()
    cap.release()
    assert ok, (clip, second)
    frame = cv2.resize(frame, size)
    found = [(s, b) for name, s, b in translator.look(frame) if name == label]
    x1, y1, x2, y2 = max(found)[1] if found else (0.3, 0.2, 0.7, 0.9)
    w, h = size
    cut = frame[max(0, int((y1 - 0.05) * h)):int(min(1.0, y2 + 0.05) * h),
                max(0, int((x1 - 0.05) * w)):int(min(1.0, x2 + 0.05) * w)]
    return cv2.imencode(".jpg", cut)[1].tobytes(), (x1, y1, x2, y2)


@pytest.fixture(scope="module")
def shots() -> dict[str, tuple[bytes, tuple[float, float, float, float]]]:
    translator = Translator()
    return {camera: _shot(translator, camera) for camera in CAMERAS}


def _event(shots, camera: str, *, device: str | None = None, score: float = 0.8, **facts) -> Event:
    jpeg, box = shots[camera if camera in shots else "floor"]
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    label = CAMERAS.get(camera, CAMERAS["floor"])[4]
    now = int(time.time() * 1000)
    return Event(event_id=uuid7(now), device=device or CAMERAS[camera][0], camera=camera, captured_ms=now,
                 label=label, score=score, uncertain=score < 0.5, track_id=now % 1000,
                 detections=[Detection(label=label, score=score, box=box)], phash=phash_dct64(image),
                 reason="uncertain" if score < 0.5 else label, crop=jpeg, crop_size=(image.shape[1], image.shape[0]),
                 **facts)


def _state(device: str, cameras: list[str]) -> bytes:
    now = int(time.time() * 1000)
    cams = {c: CameraState(state="streaming", source=f"file:{c}.mp4", reconnects=0, last_error="", frames_read=1,
                           frames_processed=1, fps_read=5.0, fps_detected=5.0, detect_fps=5.0) for c in cameras}
    return encode_device_state(DeviceState(
        device=device, ts_ms=now, started_ms=now, running=True, ready=True, watchdog_healthy=True,
        config=AppliedConfig(version="1", source="file", applied_ms=now),
        model=RunningModel(name="yolox_nano", sha256="0" * 64, since_ms=now), cameras=cams,
        cloud=CloudSeen(connected=True, overloaded=False),
        budget=BudgetState(per_minute=10, per_hour=100, policy="drop", waiting=0, dropped=0, local=0), outbox={}))


class SlowModel:
    """An OpenAI-compatible chat server that answers "alert" after MODEL_S, on a loop of its own."""

    def __init__(self) -> None:
        self.port = free_port()
        self.asked = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        assert ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        async def chat(request: web.Request) -> web.Response:
            await request.read()
            self.asked += 1
            await asyncio.sleep(MODEL_S)
            answer = json.dumps({"verdict": "alert", "description": "A person.", "confidence": 0.9})
            return web.json_response({"choices": [{"message": {"content": answer}}], "model": "slow",
                                      "usage": {"prompt_tokens": 50, "completion_tokens": 20}})

        async def start() -> None:
            app = web.Application()
            app.router.add_post("/v1/chat/completions", chat)
            self.runner = web.AppRunner(app)
            await self.runner.setup()
            await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(start())
        ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


class Devices:
    """The two devices' MQTT side: publish events and retained state; the verdicts they get, with arrival times."""

    def __init__(self, port: int, topics: Topics) -> None:
        self.topics = topics
        self.verdicts: queue.Queue = queue.Queue()
        ready = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        self.client.on_message = lambda c, u, m: self.verdicts.put((time.monotonic(), decode_verdict(m.payload)))
        self.client.on_subscribe = lambda *a: ready.set()
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe(f"{topics.prefix}/v1/+/verdicts", 1)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        assert ready.wait(10)

    def send(self, event: Event) -> float:
        self.client.publish(self.topics.events(event.device), encode_event(event), qos=1).wait_for_publish(10)
        return time.monotonic()

    def announce(self, device: str, cameras: list[str]) -> None:
        self.client.publish(self.topics.state(device), _state(device, cameras), qos=1, retain=True
                            ).wait_for_publish(10)

    def until(self, ids: set[str], timeout: float) -> dict[str, tuple[float, object]]:
        got: dict[str, tuple[float, object]] = {}
        deadline = time.monotonic() + timeout
        while not ids <= set(got) and time.monotonic() < deadline:
            try:
                at, verdict = self.verdicts.get(timeout=0.2)
            except queue.Empty:
                continue
            got.setdefault(verdict.event_id, (at, verdict))
        assert ids <= set(got), f"no verdict for {len(ids - set(got))} event(s) within {timeout} s"
        return got

    def close(self) -> None:
        for device in ("pi-floor", "pi-back"):
            self.client.publish(self.topics.state(device), b"", qos=1, retain=True).wait_for_publish(10)
        self.client.disconnect()
        self.client.loop_stop()


def test_a_site_with_two_devices_and_five_cameras(mosquitto, prefix, tmp_path, shots):
    model = SlowModel()
    sites = [{"name": "shop", "timezone": "Asia/Tokyo",
              "cameras": {"pi-floor": ["floor", "till", "door"], "pi-back": ["yard", "store"]}}]
    raw = {"mqtt": {"url": mosquitto.url, "prefix": prefix, "client_id": f"{prefix}-cloud"},
           "store_path": str(tmp_path / "cloud.db"), "sites": sites,
           "analyzer": {"backend": "openai", "openai": {"base_urls": [f"http://127.0.0.1:{model.port}/v1"],
                                                        "max_in_flight": 1},
                        "policies": [{"camera": "door", "text": POLICY}]},
           "scheduler": {"deadline_s": 120}}
    config = CloudConfig.model_validate(raw)
    toml = tmp_path / "cloud.toml"  # the same config for the CLI commands
    toml.write_text(f'store_path = "{raw["store_path"]}"\n[mqtt]\nurl = "{mosquitto.url}"\nprefix = "{prefix}"\n'
                    '[[sites]]\nname = "shop"\ntimezone = "Asia/Tokyo"\n'
                    'cameras = { pi-floor = ["floor", "till", "door"], pi-back = ["yard", "store"] }\n')
    cloud = CloudThread(config, build_backend(config.analyzer), free_port())
    cloud.start()
    devices = Devices(mosquitto.port, Topics(prefix))
    out = io.StringIO()
    watching = threading.Event()
    threading.Thread(target=watch, args=(MQTTConfig(url=mosquitto.url, prefix=prefix),),
                     kwargs={"out": out, "seconds": 90, "ready": watching.set}, daemon=True).start()
    operator = {"Authorization": f"Bearer {cloud.auth.admin_token}"}
    try:
        assert watching.wait(20)
        devices.announce("pi-floor", ["floor", "till", "door"])
        devices.announce("pi-back", ["yard", "store", "garage"])  # a camera the table does not list
        # the model's events first: it is busy with them while the door's are decided
        modelled = [_event(shots, c) for c in ("floor", "till", "yard", "store")]
        modelled.append(_event(shots, "floor", score=0.19))  # an uncertain track under the rules' min_score
        modelled.append(_event(shots, "garage", device="pi-back", local_time="03:07"))  # another camera, clock
        sent = {e.event_id: devices.send(e) for e in modelled}
        door = [_event(shots, "door", zones=["door"], dwell_s=dwell) for dwell in (60.0, 5.0)]
        sent.update({e.event_id: devices.send(e) for e in door})
        got = devices.until(set(sent), timeout=len(modelled) * MODEL_S + 60)

        # 2. the policy's verdicts at once, the model busy
        for event, want in zip(door, ("alert", "benign"), strict=True):
            at, verdict = got[event.event_id]
            assert (verdict.verdict, verdict.decided_by) == (want, "policy")
            assert at - sent[event.event_id] < 3 * MODEL_S, "a policy verdict waited for the model"
        assert max(got[e.event_id][0] for e in modelled) - min(sent.values()) >= 4 * MODEL_S  # it was busy

        # 1. feedback, then health and stats stay 200
        corrected = modelled[0]
        assert got[corrected.event_id][1].verdict == "alert"
        answer = requests.post(f"{cloud.base_url}/v1/verdicts/{corrected.event_id}/feedback", headers=operator,
                               json={"verdict": "benign", "note": "staff: allowed"}, timeout=10)
        assert answer.status_code == 200, answer.text
        health = requests.get(f"{cloud.base_url}/healthz", timeout=10)
        assert health.status_code == 200, health.text
        assert requests.get(f"{cloud.base_url}/v1/stats", headers=operator, timeout=10).status_code == 200
        # 7. what pi-back claims otherwise is said, not followed
        claims = health.json()["site_claims"]
        assert any("'garage'" in c for c in claims) and any("says its local time is 03:07" in c for c in claims)

        # 4. a re-send: watch prints nothing new for it
        devices.send(corrected)
        time.sleep(1.0)

        # 5. the export: the allowed person is still a person; classes from the fixed list
        assert main(["cloud", "export-dataset", "--config", str(toml), "--json", "--min-confidence", "0.5",
                     str(tmp_path / "dataset")]) == 0
        manifest = json.loads((tmp_path / "dataset" / "manifest.json").read_text())
        item = next(i for i in manifest["items"] if i["event_id"] == corrected.event_id)
        assert item["boxes"] == ["person"] and item["verdict"] == "benign" and item["decided_by"] == "operator"
        assert manifest["classes"][0] == "person" and "benign by operator" in manifest["labels_from"]["person"]

        # 6. proposals: the floor the device escalated from
        proposals = io.StringIO()
        with contextlib.redirect_stdout(proposals):
            assert main(["cloud", "proposals", "--config", str(toml), "--device", "pi-floor",
                         "--camera", "floor"]) == 0
        assert "escalates from score 0.19" in proposals.getvalue()

        # 7. check-config with the devices online
        checked = io.StringIO()
        with contextlib.redirect_stdout(checked):
            assert main(["cloud", "check-config", "--config", str(toml), "--devices", "2"]) == 1
        assert "DIFFERS: device 'pi-back' runs camera 'garage'" in checked.getvalue()

        # 3. the page's filter hides the other cameras
        link = cloud.page_link()
        count, says, claims = asyncio.run(_door_cards_shown(link))
        assert (count, says) == (2, "2 of 8 shown")
        assert "'garage'" in claims and "says its local time is 03:07" in claims  # 7. on the page too
    finally:
        devices.close()
        cloud.stop()
        model.stop()

    # 4. watch: who decided, once each, at capture time
    lines = out.getvalue().splitlines()
    tail = corrected.event_id[-6:]
    about = [line for line in lines if tail in line]
    assert len(about) == 3, about  # escalated, the model's, the operator's: the re-send printed nothing
    assert "(model, +" in about[1] and "benign 1.00 (operator: corrected, was alert, +" in about[2]
    assert "(policy, +" in next(line for line in lines if door[0].event_id[-6:] in line and "alert" in line)


async def _door_cards_shown(link: str) -> tuple[int, str, str]:
    shown = 'Array.from(document.querySelectorAll("article.card")).filter(c => c.getClientRects().length > 0)'
    browser = CDP()
    try:
        await browser.start()
        await browser.send("Page.navigate", {"url": link})
        await browser.wait_for('document.querySelectorAll("article.card").length === 8', 30, "8 cards")
        await browser.js("""(() => { const s = document.getElementById('f-camera'); s.value = 'door';
            s.dispatchEvent(new Event('change')); return true; })()""")
        claims = await browser.wait_for('!document.getElementById("site-claims").hidden && '
                                        'document.getElementById("site-claims").textContent', 30, "the claims")
        return await browser.js(f"{shown}.length"), await browser.js('document.getElementById("shown").textContent'), \
            claims
    finally:
        await browser.close()

