"""Live cameras: the device on real RTSP streams (GStreamer's RTSP server, bench/rtsp.py, serving H.264 made from
the shipped clips) rather than files replayed one at a time.

    frame_age_p95_s      p95 age of the frame handed to the pipeline (grab -> hand-over), one 720p 25 fps camera
                         at detect_fps 5 with the detector forced onto every frame handed over (no motion gate:
                         a look takes longer than the stream's 40 ms frame interval on these cores)  (goal <= 1)
    frame_age_p95_s_every_frame  the same with detect_fps 0: the pipeline takes every frame it can
    dropped_share        frames dropped at the reader (never converted, never queued) / frames read, detect_fps 0
    reconnect_s          the server stopped for a few seconds, then back: from its return to the first frame
                         through the pipeline, default backoff                                 (goal <= 10)
    wrong_place_crops    events of three cameras of three frame sizes (480x270, 1280x720, 1920x1080) on one
                         device at once whose box or crop lies off (IoU < 0.5) every box the same camera gives
                         alone: the shared detector and pipelines, the clip's frames            (goal 0)
    rss_{1,2,4}_cameras_mb  RSS of a device process (agent, MQTT, INT8 detector, classifier) reading 1, 2, 4 720p
                         streams at detect_fps 5, after warming up; _360p: 640x360 detect sub-streams
                                                                                        (4: goal <= 200)
    rss_per_camera_mb    (rss_4 - rss_1) / 3                                                  (goal <= 15)
    anon_4_cameras_mb / file_4_cameras_mb  rss_4's parts: anonymous memory (what the program allocates) and the
                         shared libraries' pages it touched. Every device process starts with the libraries'
                         cached pages dropped, as after a boot (bench/memory.py says why)
    cpu_720p / _360p / _1080p  CPU (share of one core) of one camera's process, 25 fps read and decoded,
                         detect_fps 5, the motion gate on (as a device runs)

    python bench/live.py [--quick]

Progress on stderr; the last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from brokers import Mosquitto  # noqa: E402
from memory import STATUS_SNIPPET, as_after_boot  # noqa: E402
from rtsp import RtspServer, h264_clip  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "edgetriage" / "live-clips"
SIZES = {"small": (480, 270), "hd": (1280, 720), "full": (1920, 1080)}


def log(message: str) -> None:
    print(f"[live] {message}", file=sys.stderr, flush=True)


def p95(values: list[float]) -> float | None:
    return round(float(np.percentile(values, 95)), 3) if values else None


# -- one device process: N cameras on streams, for RSS, CPU and frame age ---------------------------------------
_DEVICE = STATUS_SNIPPET + r"""
import json, resource, sys, time
from edgetriage.edge.agent import EdgeAgent
from edgetriage.edge.camera_worker import CameraWorker
from edgetriage.edge.config import EdgeConfig
from edgetriage.edge.daemon import share_one_heap

spec = json.loads(sys.argv[1])
if spec["one_heap"]:
    share_one_heap()  # as `edge run` does before its cameras start
config = EdgeConfig.model_validate({
    "device": "live-1", "mqtt": {"url": spec["mqtt"], "prefix": "live"}, "state_dir": spec["state"],
    "vision": {"detector": {"precision": spec["precision"]},
               # forced: the detector on every frame handed over (no motion gate), slower than the stream
               **({"motion": {"keyframe_interval_s": 0.001}, "tracked_interval_s": 0.0} if spec["forced"] else {})},
    "cameras": [{"id": f"cam{i}", "source": url, "detect_fps": spec["detect_fps"]}
                for i, url in enumerate(spec["urls"])]})
agent = EdgeAgent(config)
workers = [CameraWorker(cam, agent, on_change=lambda: None) for cam in config.cameras]
for w in workers:
    w.start()
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not all(w.first_frame.is_set() for w in workers):
    agent.wait_and_pump(0.05)
time.sleep(spec["warmup_s"])
for w in workers:
    w.ages.clear()
read0 = sum(w.frames_read for w in workers)
ru0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
end = t0 + spec["seconds"]
while time.monotonic() < end:
    agent.wait_and_pump(0.1)
ru1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
out = {**_rss_parts(),
       "cpu": (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) / (t1 - t0),
       "ages": [a for w in workers for a in w.ages],
       "read_fps": (sum(w.frames_read for w in workers) - read0) / (t1 - t0),
       "processed": sum(c.frames for c in agent.camera_counts.values()),
       "detected": sum(c.detected for c in agent.camera_counts.values()),
       "dropped": sum(w.frames_dropped for w in workers), "read": sum(w.frames_read for w in workers)}
for w in workers:
    w.stop()
for w in workers:
    w.join(10)
agent.close()
print("DEVICE " + json.dumps(out))
"""


def run_device(urls: list[str], mqtt: str, *, seconds: float, detect_fps: float = 5.0, precision: str = "int8",
               warmup_s: float = 3.0, forced: bool = False, one_heap: bool = True) -> dict:
    as_after_boot()  # the libraries read from disk, as on a device after a boot (bench/memory.py)
    with tempfile.TemporaryDirectory() as state:
        spec = {"urls": urls, "mqtt": mqtt, "state": state, "seconds": seconds, "detect_fps": detect_fps,
                "precision": precision, "warmup_s": warmup_s, "forced": forced,
                "one_heap": one_heap}
        proc = subprocess.run([sys.executable, "-c", _DEVICE, json.dumps(spec)], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, EDGETRIAGE_STATE=state))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("DEVICE ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"device process failed: {proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("DEVICE "):])


# -- reconnect: the server away, then back ------------------------------------------------------------------------
def measure_reconnect(server: RtspServer, mqtt: str, away_s: float) -> float:
    from edgetriage.edge.agent import EdgeAgent
    from edgetriage.edge.camera_worker import CameraWorker
    from edgetriage.edge.config import EdgeConfig

    with tempfile.TemporaryDirectory() as state:
        config = EdgeConfig.model_validate({
            "device": "live-2", "mqtt": {"url": mqtt, "prefix": "live"}, "state_dir": state,
            "cameras": [{"id": "gate", "source": server.url("sub"), "detect_fps": 5}]})
        agent = EdgeAgent(config)
        worker = CameraWorker(config.cameras[0], agent, on_change=lambda: None)
        worker.start()
        try:
            _wait(lambda: worker.first_frame_at is not None, 60, "the first frame")
            server.stop()
            _wait(lambda: worker.state == "reconnecting", 30, "the loss to be seen")
            time.sleep(away_s)
            back = time.monotonic()
            server.start()
            _wait(lambda: worker.first_frame_at is not None and worker.first_frame_at > back, 60, "the return")
            return round(worker.first_frame_at - back, 2)
        finally:
            worker.stop()
            worker.join(15)
            agent.close()


def _wait(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


# -- wrong place: three frame sizes at once against each alone ----------------------------------------------------
def wrong_place_crops(frames_per_camera: int) -> dict:
    import cv2
    from edgetriage.edge.vision.capture import FrameSource
    from edgetriage.edge.vision.closer import build_stages
    from edgetriage.edge.vision.detect import build_detector
    from edgetriage.edge.vision.events import VisionConfig
    from edgetriage.edge.vision.pipeline import VisionPipeline

    clip = HERE.parent / "models" / "media" / "one-by-one-person-detection.mp4"
    config = VisionConfig()
    detector, stages = build_detector(config.detector), build_stages(config)

    def frames(size):
        from edgetriage.edge.vision.capture import Frame

        with FrameSource(str(clip), start_frame=55) as source:
            n = 0
            for frame in source:
                if frame.index % 2:
                    continue
                yield Frame(n, n / 5.0, 1_700_000_000_000 + 200 * n, cv2.resize(frame.image, size))
                n += 1
                if n == frames_per_camera:
                    return

    def run(name, out):
        pipeline = VisionPipeline(name, config, detector, stages=stages)
        for frame in frames(SIZES[name]):
            out.extend((e.box, e.crop_box) for e in pipeline.process(frame).new_events)
        out.extend((e.box, e.crop_box) for e in pipeline.finish().new_events)

    alone = {name: [] for name in SIZES}
    for name in SIZES:
        run(name, alone[name])
    together = {name: [] for name in SIZES}
    threads = [threading.Thread(target=run, args=(name, together[name])) for name in SIZES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wrong = sum(1 for name in SIZES for box, crop in together[name]
                if not any(_iou(box, b) >= 0.5 and _iou(crop, c) >= 0.5 for b, c in alone[name]))
    return {"wrong_place_crops": wrong, "wrong_place_events": sum(len(v) for v in together.values())}


def _iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - ix * iy
    return ix * iy / union if union > 0 else 0.0


def measure_streams(server: RtspServer, mqtt: str, seconds: float, results: dict) -> None:
    """The full run's figures: every frame offered, then 1 and 4 cameras of 720p streams and of 360p sub-streams."""
    every = run_device([server.url("hd")], mqtt, seconds=seconds, detect_fps=0.0, forced=True)
    results["frame_age_p95_s_every_frame"] = p95(every["ages"])
    results["dropped_share"] = round(every["dropped"] / every["read"], 3) if every["read"] else None
    log(f"detect_fps 0, detector on every frame: age p95 {results['frame_age_p95_s_every_frame']} s, dropped "
        f"{results['dropped_share']}, processed {every['processed']} of {every['read']}")
    for name, mount in (("720p", "hd"), ("360p", "sub")):
        one = run_device([server.url(mount)], mqtt, seconds=seconds)
        four = run_device([server.url(mount)] * 4, mqtt, seconds=seconds)
        suffix = "" if mount == "hd" else "_360p"
        results[f"cpu_{name}"] = round(one["cpu"], 2)
        results[f"rss_1_cameras_mb{suffix}"] = round(one["rss_mb"], 1)
        results[f"rss_4_cameras_mb{suffix}"] = round(four["rss_mb"], 1)
        results[f"rss_per_camera_mb{suffix}"] = round((four["rss_mb"] - one["rss_mb"]) / 3, 1)
        results[f"anon_4_cameras_mb{suffix}"] = round(four["anon_mb"], 1)
        results[f"file_4_cameras_mb{suffix}"] = round(four["file_mb"], 1)
        results[f"frame_age_p95_s_4_cameras{suffix}"] = p95(four["ages"])
        log(f"{name} streams: one camera rss {one['rss_mb']:.0f} MB, cpu {one['cpu']:.2f}; four rss "
            f"{four['rss_mb']:.0f} MB, age p95 {p95(four['ages'])} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="for CI: frame age and memory of 1 and 4 720p cameras (detector on every frame), "
                             "reconnect, three sizes; no sub-stream, CPU, 2-camera or 1080p figures")
    args = parser.parse_args()
    quick = args.quick
    seconds = 5.0 if quick else 20.0
    t_start = time.monotonic()
    CACHE.mkdir(parents=True, exist_ok=True)
    length = 40.0 if quick else 75.0  # longer than any one run reads
    clips = {"hd": h264_clip(CACHE, (1280, 720), 25, seconds=length),
             "sub": h264_clip(CACHE, (640, 360), 25, seconds=length)}  # the reconnect's stream
    if not quick:
        clips["full"] = h264_clip(CACHE, (1920, 1080), 25, seconds=length)
    log(f"clips ready ({time.monotonic() - t_start:.0f} s)")
    results: dict = {"precision_rss": "int8"}
    with tempfile.TemporaryDirectory() as tmp, Mosquitto(None, Path(tmp) / "mqtt") as broker, \
            RtspServer(clips, user="admin:bench-pw") as server:
        one = run_device([server.url("hd")], broker.url, seconds=seconds, forced=True)
        results["frame_age_p95_s"] = p95(one["ages"])
        log(f"one 720p camera at detect_fps 5, detector on every frame: age p95 {results['frame_age_p95_s']} s, "
            f"{one['detected']} detector looks, {one['processed']} frames, read {one['read_fps']:.1f} fps")
        if quick:  # the 720p memory figures from the forced runs: two device processes in all
            four = run_device([server.url("hd")] * 4, broker.url, seconds=seconds, forced=True)
            results["rss_1_cameras_mb"] = round(one["rss_mb"], 1)
            results["rss_4_cameras_mb"] = round(four["rss_mb"], 1)
            results["rss_per_camera_mb"] = round((four["rss_mb"] - one["rss_mb"]) / 3, 1)
            results["anon_4_cameras_mb"] = round(four["anon_mb"], 1)
            results["file_4_cameras_mb"] = round(four["file_mb"], 1)
            results["frame_age_p95_s_4_cameras"] = p95(four["ages"])
            log(f"four 720p cameras, detector on every frame: rss {four['rss_mb']:.0f} MB (anonymous "
                f"{four['anon_mb']:.0f}, libraries {four['file_mb']:.0f}), age p95 "
                f"{results['frame_age_p95_s_4_cameras']} s")
        else:
            measure_streams(server, broker.url, seconds, results)
        if not quick:
            two = run_device([server.url("hd")] * 2, broker.url, seconds=seconds)
            results["rss_2_cameras_mb"] = round(two["rss_mb"], 1)
            full = run_device([server.url("full")], broker.url, seconds=seconds)
            results["cpu_1080p"] = round(full["cpu"], 2)
            fp32 = run_device([server.url("hd")] * 4, broker.url, seconds=seconds, precision="fp32")
            results["rss_4_cameras_mb_fp32"] = round(fp32["rss_mb"], 1)
            log(f"1080p cpu {full['cpu']:.2f}; two cameras rss {two['rss_mb']:.0f} MB; four fp32 {fp32['rss_mb']:.0f}")
        results["reconnect_s"] = measure_reconnect(server, broker.url, away_s=3.0 if quick else 10.0)
        log(f"reconnect_s {results['reconnect_s']}")
    results.update(wrong_place_crops(25 if quick else 70))
    results["seconds"] = round(time.monotonic() - t_start, 1)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
