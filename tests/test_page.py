"""The live page as a user sees it: `edgetriage demo --serve` in a subprocess (the real detector, the real LLM,
a Mosquitto of the test's own), opened in a real headless Chromium driven over the DevTools protocol.

The page must load through its one-time link, show the run's events with their thumbnails and boxes, the
decision path and the verdicts, update while it is open, filter, and show the figures, with the same α as
GET /v1/stats. The screenshot goes to a temporary directory (docs/demo-page.png, which the README shows, is
made by `python docs/make_screenshot.py`). Home Assistant discovery must appear on the broker during the run,
and Ctrl-C must stop the demo cleanly.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import aiohttp
import paho.mqtt.client as mqtt
import pytest

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--remote-debugging-port=0", "--window-size=1400,1000"]


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("Chromium is not installed (apt-get install -y chromium)")


class CDP:
    """Just enough of the Chrome DevTools Protocol: one browser, one page (flat session), commands and
    JavaScript evaluation. Chromium writes its DevTools port to DevToolsActivePort in the profile."""

    def __init__(self, flags: tuple[str, ...] = ()) -> None:
        self.flags = flags  # more Chromium flags (a fake microphone: tests/test_voice.py)
        self.proc: subprocess.Popen | None = None
        self.profile = tempfile.mkdtemp(prefix="edgetriage-chromium-")
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._next = 0
        self._pending: dict[int, asyncio.Future] = {}
        self._reader: asyncio.Task | None = None
        self.session = ""

    async def start(self) -> None:
        self.proc = subprocess.Popen([chromium_path(), *CHROMIUM_FLAGS, *self.flags, f"--user-data-dir={self.profile}",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while True:
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            if len(lines) >= 2:
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Chromium did not start (exit {self.proc.poll()})")
            await asyncio.sleep(0.05)
        self._http = aiohttp.ClientSession()
        self._ws = await self._http.ws_connect(f"ws://127.0.0.1:{lines[0]}{lines[1]}", max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        target = await self.send("Target.createTarget", {"url": "about:blank"}, browser=True)
        attached = await self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                                   browser=True)
        self.session = attached["sessionId"]
        await self.send("Emulation.setDeviceMetricsOverride",
                        {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        await self.send("Page.enable")

    async def _read(self) -> None:
        assert self._ws is not None
        async for msg in self._ws:
            data = json.loads(msg.data)
            future = self._pending.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(data)

    async def send(self, method: str, params: dict | None = None, *, browser: bool = False) -> dict:
        assert self._ws is not None
        self._next += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[self._next] = future
        message = {"id": self._next, "method": method, "params": params or {}}
        if not browser:
            message["sessionId"] = self.session
        await self._ws.send_str(json.dumps(message))
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    async def js(self, expression: str):
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while True:
            value = await self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                page = await self.js("location.href + ' | ' + document.body.innerText.slice(0, 500)")
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} ({expression}); "
                                     f"the page: {page}")
            await asyncio.sleep(0.25)

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", {"format": "png"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._http is not None:
            await self._http.close()
        if self._reader is not None:
            self._reader.cancel()
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


class Lines:
    """A subprocess stream read on a thread, so neither pipe can fill up and block the demo."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        self._new: queue.SimpleQueue[str] = queue.SimpleQueue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))
            self._new.put(line)

    def wait_for(self, needle: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        for line in self.lines:
            if needle in line:
                return line
        while time.monotonic() < deadline:
            try:
                line = self._new.get(timeout=0.5)
            except queue.Empty:
                continue
            if needle in line:
                return line.rstrip("\n")
        raise AssertionError(f"{needle!r} did not appear within {timeout:.0f} s; got: {self.lines[-20:]}")


class RetainedWatch:
    """Records every message under the Home Assistant discovery prefix."""

    def __init__(self, port: int) -> None:
        self.messages: list[tuple[str, bytes, bool]] = []
        ready = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        self.client.on_connect = lambda c, u, f, rc, p: (c.subscribe("homeassistant/#", 1), ready.set())
        self.client.on_message = lambda c, u, m: self.messages.append((m.topic, bytes(m.payload), m.retain))
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        assert ready.wait(10)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


CARDS = "document.querySelectorAll('article.card')"


async def _drive_page(link: str, out: Lines, screenshot: Path) -> dict:
    browser = CDP()
    try:
        await browser.start()
        await browser.send("Page.navigate", {"url": link})
        await browser.wait_for("document.getElementById('live') && document.getElementById('live').textContent "
                               "=== 'live'", 30, "the page to connect its live stream")
        # the run goes on while the page is open: verdicts and the second pass arrive live
        await asyncio.to_thread(out.wait_for, "summary:", 600)
        await browser.wait_for(f"{CARDS}.length >= 2 && ![...{CARDS}].some(c => c.classList.contains('waiting'))",
                               60, "every event with its verdict")
        await browser.wait_for("[...document.images].every(i => i.complete && i.naturalWidth > 0)", 30,
                               "the thumbnails to load")
        await browser.wait_for(
            "document.getElementById('s-queue').textContent === '0' && "
            "document.getElementById('s-latency').rows[3].cells[1].textContent === "
            f"String([...{CARDS}].filter(c => c.querySelector('.verdict.alert, .verdict.benign, .verdict.unknown'))"
            ".length)", 15,
            "the figures to count every verdict")
        await asyncio.sleep(1.5)  # the highlight of the latest card fades before the screenshot
        page = await browser.js(f"""(async () => {{
            const cards = [...{CARDS}];
            const state = await (await fetch('state')).json();
            return {{
              state_alpha: state.stats.alpha,
              at_ms: state.entries.map(e => e.at_ms),
              cards: cards.length,
              live: cards.filter(c => c.dataset.live === '1').length,
              thumbs: cards.filter(c => c.querySelector('.thumb img')).length,
              boxes: document.querySelectorAll('.thumb .box').length,
              paths: cards.map(c => [...c.querySelectorAll('.step b')].map(b => b.textContent)),
              verdicts: cards.map(c => c.querySelector('.verdict').textContent),
              described: cards.filter(c => c.querySelector('.desc q')).length,
              alpha: document.getElementById('s-alpha').textContent,
              camera_row: [...document.getElementById('s-cameras').rows[0].cells].map(c => c.textContent),
              lines: document.querySelectorAll('#chart polyline').length,
              formula: document.getElementById('s-formula').textContent,
            }};
        }})()""")
        await browser.screenshot(screenshot)
        # filters: by verdict (nothing is still waiting) and by camera (all of them are cam0)
        page["waiting_shown"] = await browser.js("""(() => {
            const s = document.getElementById('f-verdict'); s.value = 'waiting';
            s.dispatchEvent(new Event('change'));
            return [...document.querySelectorAll('article.card')].filter(c => !c.hidden).length; })()""")
        page["cam0_shown"] = await browser.js("""(() => {
            const v = document.getElementById('f-verdict'); v.value = ''; v.dispatchEvent(new Event('change'));
            const s = document.getElementById('f-camera'); s.value = 'cam0'; s.dispatchEvent(new Event('change'));
            return [...document.querySelectorAll('article.card')].filter(c => !c.hidden).length; })()""")
        base = link.split("/ui/")[0]
        async with aiohttp.ClientSession() as http:
            async with http.get(link, allow_redirects=False) as used:
                page["reused_link"] = used.status
            async with http.get(f"{base}/ui/state") as anonymous:
                page["anonymous_state"] = anonymous.status
        return page
    finally:
        await browser.close()


def _exited(proc: subprocess.Popen, err) -> int:
    """The demo's exit status once Ctrl-C stopped it; one that does not exit within 60 s is made to print
    where each of its threads is (faulthandler, on SIGABRT) and the test fails with that."""
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        proc.wait(10)
        time.sleep(0.5)  # the reader thread takes the last lines
        raise AssertionError("the demo did not exit within 60 s of Ctrl-C; where its threads were:\n"
                             + "\n".join(err.lines[-80:])) from None


@pytest.mark.slow
def test_demo_serve_page_in_chromium(mosquitto, clip_one_by_one, tmp_path):
    watch = RetainedWatch(mosquitto.port)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgetriage", "--log-json", "-vv", "demo", "--serve", "--broker", mosquitto.url,
         "--protocol", "5",
         "--clip", str(clip_one_by_one), "--max-frames", "200"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = Lines(proc.stdout), Lines(proc.stderr)
        link = err.wait_for("live page (one-time link): ", 300).split(": ", 1)[1].split()[0]
        try:
            page = asyncio.run(_drive_page(link, out, tmp_path / "demo-page.png"))
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n(demo exit status {proc.poll()}; its stderr ends: {err.lines[-15:]})"
            ) from None
        err.wait_for("the page stays up until Ctrl-C", 30)
        assert proc.poll() is None, "--serve must keep the page up after the summary"
        token = err.wait_for("Authorization: Bearer ", 1).split("Bearer ", 1)[1].split("'")[0]
        base = link.split("/ui/")[0]
        request = urllib.request.Request(f"{base}/v1/stats", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            api_figures = json.load(answer)["figures"]
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as answer:
            metrics = answer.read().decode()
        proc.send_signal(signal.SIGINT)
        assert _exited(proc, err) == 0, err.lines[-20:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watch.close()

    assert page["cards"] >= 2, page
    assert page["live"] >= 1, f"nothing arrived while the page was open: {page}"
    assert page["thumbs"] == page["cards"] and page["boxes"] >= page["cards"], page
    assert all(p[:3] == ["motion", "detector", "rule"] for p in page["paths"]), page["paths"]
    outcomes = {p[-1] for p in page["paths"]}
    assert "model" in outcomes, page["paths"]
    assert outcomes & {"device cache", "cloud cache"}, f"the second pass reused no verdict: {page['paths']}"
    assert all(v.split()[0] in ("alert", "benign", "unknown") for v in page["verdicts"]), page["verdicts"]
    assert page["described"] >= 1
    assert 0.0 < float(page["alpha"]) < 1.0, page["alpha"]
    # one definition of α: the page, GET /v1/stats and /metrics agree (the device cache's answers count)
    assert page["state_alpha"] == api_figures["alpha"] and page["alpha"] == f"{api_figures['alpha']:.2f}", \
        (page["state_alpha"], page["alpha"], api_figures)
    assert f"edgetriage_cloud_alpha_ratio {api_figures['alpha']}" in metrics
    assert api_figures["L_light_ms"] is not None and api_figures["device_cache_answers"] >= 1, api_figures
    assert max(page["at_ms"]) <= time.time() * 1000, "a card's time is never in the future"
    assert page["camera_row"][1].isdigit() and int(page["camera_row"][1]) > 0, page["camera_row"]
    assert page["lines"] == 2 and "measured median" in page["formula"], page
    assert page["waiting_shown"] == 0 and page["cam0_shown"] == page["cards"], page
    assert page["reused_link"] == 403 and page["anonymous_state"] == 401, page
    assert (tmp_path / "demo-page.png").stat().st_size > 20_000

    configs = {t for t, payload, retain in watch.messages if t.endswith("/config") and payload}
    device = next(iter(configs)).split("/")[2].removeprefix("edgetriage_")
    assert configs == {f"homeassistant/{c}/edgetriage_{device}/cam0_{w}/config"
                       for c, w in (("binary_sensor", "alert"), ("sensor", "verdict"), ("image", "thumbnail"))}
    removed = {t for t, payload, retain in watch.messages if t.endswith("/config") and not payload}
    assert removed == configs, "the demo must remove its Home Assistant entities when it stops"
    assert "Traceback" not in "\n".join(err.lines)

    # --log-json: one escalated event can be followed from the camera to its verdict by its id
    steps: dict[str, set[tuple[str, str]]] = {}
    for line in err.lines:
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("event_id"):
                steps.setdefault(record["event_id"], set()).add((record["logger"], record["msg"].split()[0]))
    journey = {("edgetriage.edge.agent", "decision"), ("edgetriage.cloud.service", "event"),
               ("edgetriage.cloud.service", "verdict"), ("edgetriage.edge.agent", "verdict")}
    assert any(journey <= seen for seen in steps.values()), steps


async def _page_and_api_figures(link: str, token: str) -> tuple[dict, dict, str]:
    """The page's figures and entries (/ui/state, signed in through `link`), GET /v1/stats and /metrics."""
    base = link.split("/ui/")[0]
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link) as signed_in:
            assert signed_in.status == 200
        async with http.get(f"{base}/ui/state") as r:
            state = await r.json()
        async with http.get(f"{base}/v1/stats", headers={"Authorization": f"Bearer {token}"}) as r:
            stats = await r.json()
        async with http.get(f"{base}/metrics") as r:
            metrics = await r.text()
    return state, stats, metrics


@pytest.mark.slow
def test_demo_page_and_api_agree_on_alpha(mosquitto, clip_one_by_one):
    """One definition of each figure: after a demo run (the second pass answered from the device's cache)
    the page, GET /v1/stats and /metrics give the same α, and no card's time is ahead of the clock."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgetriage", "demo", "--serve", "--no-ha", "--broker", mosquitto.url,
         "--clip", str(clip_one_by_one), "--max-frames", "200"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"})
    try:
        out, err = Lines(proc.stdout), Lines(proc.stderr)
        token = err.wait_for("Authorization: Bearer ", 300).split("Bearer ", 1)[1].split("'")[0]
        out.wait_for("summary:", 600)
        link = err.wait_for("a fresh one-time link: ", 60).split("link: ", 1)[1].strip()
        state, stats, metrics = asyncio.run(_page_and_api_figures(link, token))
        proc.send_signal(signal.SIGTERM)  # a service manager's stop: as clean as Ctrl-C
        assert _exited(proc, err) == 0, err.lines[-20:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    page, api = state["stats"], stats["figures"]
    assert api["device_cache_answers"] >= 1 and 0.0 < api["alpha"] < 1.0, api
    for page_key, api_key in (("alpha", "alpha"), ("l_light_ms", "L_light_ms"), ("l_llm_ms", "L_llm_ms"),
                              ("l_total_ms", "L_total_ms"), ("measured_median_ms", "measured_total_p50_ms")):
        assert page[page_key] == api[api_key], (page_key, page[page_key], api[api_key])
    assert f"edgetriage_cloud_alpha_ratio {api['alpha']}" in metrics
    now = time.time() * 1000
    assert state["entries"] and all(e["at_ms"] <= now for e in state["entries"]), "a card's time is in the future"
    assert "Traceback" not in "\n".join(err.lines)


# -- the page's server side, fast: a real aiohttp server, a real store, real crops, no model ------------------
def _crop(clip: Path) -> bytes:
    import cv2

    capture = cv2.VideoCapture(str(clip))
    capture.set(cv2.CAP_PROP_POS_FRAMES, 100)
    ok, frame = capture.read()
    capture.release()
    assert ok
    h, w = frame.shape[:2]
    ok, jpeg = cv2.imencode(".jpg", frame[h // 8: h, w // 4: 3 * w // 4])
    return jpeg.tobytes()


def _event(crop: bytes, camera: str = "door"):
    from edgetriage.shared.ids import uuid7
    from edgetriage.shared.protocol import Detection, Event

    return Event(event_id=uuid7(), device="porch-1", camera=camera, captured_ms=int(time.time() * 1000),
                 label="person", score=0.42, uncertain=True, track_id=7,
                 detections=[Detection(label="person", score=0.42, box=(0.3, 0.2, 0.6, 0.9))],
                 phash="0123456789abcdef", reason="uncertain score 0.42", crop=crop)


def _verdict(event, source: str, **timings):
    from edgetriage.shared.protocol import Timings, Verdict

    return Verdict(event_id=event.event_id, device=event.device, camera=event.camera, label=event.label,
                   verdict="alert", confidence=0.8, description="a person at the door at night", model="m",
                   source=source, created_ms=int(time.time() * 1000), timings=Timings(**timings))


async def _sse(response, count: int, timeout: float = 10.0) -> list[dict]:
    """The next `count` SSE messages as {"id", "event", "data"} (comments and retry lines skipped)."""
    messages: list[dict] = []
    current: dict = {}
    deadline = time.monotonic() + timeout
    while len(messages) < count:
        line = await asyncio.wait_for(response.content.readline(), max(0.1, deadline - time.monotonic()))
        text = line.decode().rstrip("\n")
        if not text:
            if "event" in current:
                messages.append(current)
            current = {}
        elif text.startswith(("id: ", "event: ", "data: ")):
            key, _, value = text.partition(": ")
            current[key] = json.loads(value) if key == "data" else value
    return messages


async def _page_server_checks(clip: Path, store_path: Path) -> None:
    from edgetriage.cloud.compose import build_app
    from edgetriage.cloud.http.api import run_api
    from edgetriage.cloud.http.web import DeviceDecision, page_link
    from edgetriage.cloud.http.web.routes import TIMELINE
    from edgetriage.cloud.storage.store import SQLiteStore

    store = SQLiteStore(store_path)
    app = build_app(store, None)
    timeline = app[TIMELINE]
    runner = await run_api(app, "127.0.0.1", 0)
    port = runner.addresses[0][1]
    base = f"http://127.0.0.1:{port}"
    crop = _crop(clip)
    try:
        async with aiohttp.ClientSession() as anonymous:
            for path in ("/ui/", "/ui/stream", "/ui/state"):
                async with anonymous.get(base + path) as r:
                    assert r.status == 401, path
            async with anonymous.get(base + "/ui/static/app.js") as r:
                assert r.status == 200 and r.content_type == "text/javascript"
            async with anonymous.get(base + "/ui/thumbs/x.jpg") as r:
                assert r.status == 401

        link = page_link(app, base)
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as browser:
            async with browser.get(link, allow_redirects=False) as r:
                assert r.status == 303 and r.headers["Location"] == "./"
                cookie = r.headers["Set-Cookie"]
                assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui/" in cookie
            async with browser.get(base + "/ui/") as r:
                assert r.status == 200 and "static/app.js" in await r.text()
                assert "default-src 'self'" in r.headers["Content-Security-Policy"]
            async with aiohttp.ClientSession() as other, other.get(link, allow_redirects=False) as r:
                assert r.status == 403, "a page link works once"

            first = _event(crop)
            store.put_event(first, first.captured_ms)
            timeline.add_event(first, first.captured_ms)
            async with browser.get(base + "/ui/stream") as stream:
                assert stream.content_type == "text/event-stream"
                entry, stats = await _sse(stream, 2)
                assert entry["event"] == "entry" and entry["data"]["id"] == first.event_id
                assert entry["data"]["outcome"] == "waiting" and entry["data"]["thumb"]
                box = entry["data"]["boxes"][0]
                assert box["main"] and 0.0 < box["x1"] < box["x2"] < 1.0 and 0.0 < box["y1"] < box["y2"] < 1.0
                assert stats["event"] == "stats" and stats["data"]["alpha"] is None
                seen_seq = int(entry["id"])
                # live: the verdict arrives while the stream is open
                timeline.add_verdict(_verdict(first, "llm", queue_ms=40.0, analyze_ms=900.0, total_ms=950.0))
                (update,) = await _sse(stream, 1)
                assert update["data"]["id"] == first.event_id and update["data"]["verdict"] == "alert"
                assert [s["step"] for s in update["data"]["path"]] == ["motion", "detector", "rule", "llm"]
                assert int(update["id"]) > seen_seq

            # a device's own cache answer, and a second escalation answered by the cloud's cache
            ahead_ms = int(time.time() * 1000) + 90_000  # a clip read faster than real time stamps ahead
            timeline.add_device_decision(DeviceDecision(
                device="porch-1", camera="door", track_id=8, label="person", score=0.45, uncertain=True,
                captured_ms=ahead_ms, decision="cached", reason="cached alert",
                box=(0.3, 0.2, 0.6, 0.9), detections=(("person", 0.45, (0.3, 0.2, 0.6, 0.9)),), crop_jpeg=crop,
                cached=_verdict(first, "llm"), decided_ms=0.2))
            second = _event(crop)
            store.put_event(second, second.captured_ms)
            timeline.add_event(second, second.captured_ms)
            timeline.add_verdict(_verdict(second, "cloud_cache", total_ms=3.0))

            # a reconnecting page asks only for what it missed
            async with browser.get(base + "/ui/stream", headers={"Last-Event-ID": str(seen_seq + 1)}) as stream:
                missed = [m for m in await _sse(stream, 3) if m["event"] == "entry"]
            assert {m["data"]["outcome"] for m in missed} == {"device_cache", "cloud_cache"}
            assert first.event_id not in {m["data"]["id"] for m in missed}

            async with browser.get(base + "/ui/state") as r:
                state = await r.json()
            figures = state["stats"]
            assert len(state["entries"]) == 3
            cached = next(e for e in state["entries"] if e["outcome"] == "device_cache")
            assert cached["captured_ms"] == ahead_ms and cached["at_ms"] <= time.time() * 1000, cached
            assert figures["alpha"] == round(2 / 3, 4)  # two cache answers, one model verdict
            assert figures["l_llm_ms"] == 900.0 and figures["l_sched_ms"] == 40.0
            assert figures["l_light_ms"] == round((0.2 + 3.0) / 2, 2)
            assert figures["l_total_ms"] == round(40.0 + 0.6667 * 1.6 + (1 - 0.6667) * 900.0, 2)
            assert figures["measured_median_ms"] == 3.0
            assert figures["hit_rate"] == {"device_cache": round(1 / 3, 3), "cloud_cache": 0.5}
            (camera,) = figures["cameras"]
            assert (camera["escalated"], camera["device_cache"], camera["cloud_cache"], camera["llm"]) == (2, 1, 1, 1)
            assert camera["frames_read"] is None, "no device reported its frames"

            for entry in state["entries"]:
                async with browser.get(base + "/ui/" + entry["thumb"]) as r:
                    assert r.status == 200 and await r.read() == crop

            # stopping the server ends open streams at once instead of waiting for browsers to leave
            stream = await browser.get(base + "/ui/stream")
            await _sse(stream, 1)
            started = time.monotonic()
            await runner.cleanup()
            runner = None
            assert time.monotonic() - started < 5.0
            stream.close()
    finally:
        if runner is not None:
            await runner.cleanup()
        store.close()


def test_page_server_access_stream_resume_and_figures(clip_one_by_one, tmp_path):
    asyncio.run(_page_server_checks(clip_one_by_one, tmp_path / "cloud.db"))


def test_a_page_that_falls_behind_is_cut_off_not_waited_for():
    from edgetriage.cloud.http.web.listeners import LISTENER_QUEUE, Listener

    async def run() -> None:
        listener = Listener()
        for i in range(LISTENER_QUEUE + 1):
            listener.offer((i, "entry", "{}"))
        assert listener.closed and await listener.queue.get() is None

    asyncio.run(run())
