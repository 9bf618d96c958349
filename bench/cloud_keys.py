"""What the cloud's own reuse keys cost (cloud.reuse.trust): where a verdict reaches other devices (`[reuse] scope =
"site"`), the cloud hashes every event's crop itself and, on a cache miss, embeds it with the shipped
MobileNetV2, instead of taking the device's word for either. Measured side by side in one run:

    decode_ms, hash_ms, embed_ms   p50 per crop: JPEG decode; the perceptual hash of the decoded crop; the
                                   appearance embedding (decode included), one onnxruntime thread
    keys_ms_per_miss               decode + hash + embed: what a cache miss pays for the cloud's keys
    *_cpu_ms                       the same as this thread's CPU time (on shared cores: the cost itself)
    miss_ms_camera, miss_ms_site   p50 of the cache-miss path through the service (`CloudService.process`:
                                   accept, store, claim, single flight, the model, store the verdict), with a
                                   model that answers at once, so the figure is the service's own: scope
                                   "camera" (the device's keys) and "site" (the cloud's), event by event in turn
    extra_ms_per_miss              miss_ms_site - miss_ms_camera
    hit_ms_camera, hit_ms_site     p50 of the cache-hit path the same way (a site hit pays decode + hash)
    hash_bits_p50/max              device hash (of its pixels) vs the cloud's (of the JPEG it was sent)
    embedding_sim_p50/min          device embedding (edge.vision.classify: pixels) vs the cloud's (JPEG)

Crops: the spot where visitors stand in the shipped one-by-one clip, every second (people and empty ground).
A real model's answer takes far longer (docs/developers/benchmarks.md: seconds on the CPU model), so a miss's
share is smaller still. The last stdout line is one JSON object; progress goes to stderr.

    python bench/cloud_keys.py [--crops N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
from edgetriage.cloud.analysis import Analysis
from edgetriage.cloud.compose import build_service
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.reuse.trust import CloudKeys
from edgetriage.cloud.storage.store import SQLiteStore
from edgetriage.edge.vision.classify import ClassifierConfig, CropClassifier
from edgetriage.edge.vision.crops import encode_jpeg
from edgetriage.shared.cropkeys import decode_jpeg, phash_dct64
from edgetriage.shared.embedding import similarity
from edgetriage.shared.ids import uuid7
from edgetriage.shared.phash import hamming
from edgetriage.shared.protocol import Detection, Event
from edgetriage.shared.topics import Topics

CLIP = Path(__file__).resolve().parents[1] / "models" / "media" / "one-by-one-person-detection.mp4"
BOX = (370, 0, 560, 400)  # where visitors stand
DEVICE = "bench-keys"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 3)


class Instant:
    """The scheduler's Backend: "benign" at once, so a miss's figure is the service's own work."""

    name = "instant"
    max_batch = 1
    concurrency = 1

    def prompt_version(self, event: object) -> str:
        return "instant-1"

    def saturated(self) -> bool:
        return False

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        return [Analysis(verdict="benign", confidence=0.9, description="a visitor", model=self.name,
                         prompt_version="instant-1", analyze_ms=0.0) for _ in events]

    async def close(self) -> None:
        return None


def crops(n: int) -> list[np.ndarray]:
    cap = cv2.VideoCapture(str(CLIP))
    out = []
    try:
        for t in range(n):
            cap.set(cv2.CAP_PROP_POS_MSEC, (2 + t) * 1000)
            ok, frame = cap.read()
            if not ok:
                break
            x1, y1, x2, y2 = BOX
            out.append(frame[y1:y2, x1:x2].copy())
    finally:
        cap.release()
    return out


def event(jpeg: bytes, phash: str, n: int) -> Event:
    now = int(time.time() * 1000)
    return Event(event_id=uuid7(now), device=DEVICE, camera="hall", site="home", captured_ms=now, label="person",
                 score=0.6, uncertain=True, track_id=n, reason="detector unsure", phash=phash, crop=jpeg,
                 crop_size=(190, 400), detections=[Detection(label="person", score=0.6, box=(0.4, 0.0, 0.7, 0.9))])


def key_costs(jpegs: list[bytes], keys: CloudKeys) -> dict[str, float]:
    """Wall and this thread's CPU time (onnxruntime with one thread runs on the caller's), p50 per crop: on
    shared cores the CPU time is what the work costs, the wall time what it took there and then."""
    wall: dict[str, list[float]] = {"decode": [], "hash": [], "embed": []}
    cpu: dict[str, list[float]] = {"decode": [], "hash": [], "embed": []}
    keys.embedding(jpegs[0])  # the model loaded once, before timing
    for jpeg in jpegs:
        marks = [(time.perf_counter(), time.thread_time())]
        image = decode_jpeg(jpeg)
        marks.append((time.perf_counter(), time.thread_time()))
        phash_dct64(image)
        marks.append((time.perf_counter(), time.thread_time()))
        keys.embedding(jpeg)
        marks.append((time.perf_counter(), time.thread_time()))
        for step, (before, after) in zip(("decode", "hash", "embed"), zip(marks[:-1], marks[1:], strict=True),
                                         strict=True):
            wall[step].append((after[0] - before[0]) * 1000)
            cpu[step].append((after[1] - before[1]) * 1000)
    out = {f"{step}_ms": p50(wall[step]) for step in wall} | {f"{step}_cpu_ms": p50(cpu[step]) for step in cpu}
    out["keys_ms_per_miss"] = round(sum(out[f"{step}_ms"] for step in wall), 3)
    out["keys_cpu_ms_per_miss"] = round(sum(out[f"{step}_cpu_ms"] for step in cpu), 3)
    return out


def service_paths(pixels: list[np.ndarray], jpegs: list[bytes], workdir: Path) -> dict[str, float]:
    """Miss and hit path p50 per scope, the two services fed the same events in turn."""
    services = {}
    for scope in ("camera", "site"):
        for ttl, kind in ((0, "miss"), (3600, "hit")):  # ttl 0: no verdict outlives its own millisecond
            config = CloudConfig(store_path=str(workdir / f"{scope}-{kind}.db"), http={"enabled": False},
                                 reuse={"scope": scope, "ttl_s": ttl, "verify_sample": 0.0,
                                        "sites": {"home": [DEVICE]}})
            services[scope, kind] = build_service(config, Instant(), SQLiteStore(config.store_path))
    topic = Topics(CloudConfig().mqtt.prefix).events(DEVICE)
    times: dict[tuple[str, str], list[float]] = {k: [] for k in services}

    async def run() -> None:
        for service in services.values():  # warm: scheduler, claims, the appearance model
            await service.process(event(jpegs[0], phash_dct64(pixels[0]), 0), topic)
        for i, (crop, jpeg) in enumerate(zip(pixels, jpegs, strict=True)):
            own = phash_dct64(crop)
            for (scope, kind), service in services.items():
                if kind == "hit":  # its look-alike answered first by the model, then the timed one
                    await service.process(event(jpeg, own, i), topic)
                await asyncio.sleep(0.002)  # distinct event ids (UUIDv7 by the millisecond)
                t0 = time.perf_counter()
                verdict = await service.process(event(jpeg, own, i), topic)
                times[scope, kind].append((time.perf_counter() - t0) * 1000)
                want = "cloud_cache" if kind == "hit" else "llm"
                assert verdict.source == want, (scope, kind, verdict.source)
        for service in services.values():
            await service.stop()

    asyncio.run(run())
    for service in services.values():
        service.store.close()
    out = {f"{kind}_ms_{scope}": p50(v) for (scope, kind), v in times.items()}
    out["extra_ms_per_miss"] = round(out["miss_ms_site"] - out["miss_ms_camera"], 3)
    out["extra_ms_per_hit"] = round(out["hit_ms_site"] - out["hit_ms_camera"], 3)
    return out


def agreement(pixels: list[np.ndarray], jpegs: list[bytes], keys: CloudKeys) -> dict[str, float]:
    """How near the cloud's keys of the JPEG are to the device's keys of its pixels."""
    device = CropClassifier(ClassifierConfig())
    bits, sims = [], []
    for crop, jpeg in zip(pixels, jpegs, strict=True):
        bits.append(hamming(phash_dct64(crop), phash_dct64(decode_jpeg(jpeg))))
        mine, cloud = device.classify(crop).embedding, keys.embedding(jpeg)
        if mine is not None and cloud is not None:
            sims.append(similarity(mine, cloud))
    return {"hash_bits_p50": p50(bits), "hash_bits_max": max(bits), "embedding_sim_p50": p50(sims),
            "embedding_sim_min": round(min(sims), 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crops", type=int, default=60, help="crops, one a second of the clip (default 60)")
    args = parser.parse_args(argv)
    pixels = crops(args.crops)
    jpegs = [encode_jpeg(c)[0] for c in pixels]  # what the device sends: longer side at most 320, quality 85
    keys = CloudKeys(CloudConfig().reuse)
    say(f"{len(pixels)} crops of {CLIP.name}")
    figures: dict[str, float | int] = {"crops": len(pixels)}
    figures.update(key_costs(jpegs, keys))
    say(f"keys per miss: decode {figures['decode_ms']} ms + hash {figures['hash_ms']} ms + embedding "
        f"{figures['embed_ms']} ms = {figures['keys_ms_per_miss']} ms (CPU time: {figures['decode_cpu_ms']} + "
        f"{figures['hash_cpu_ms']} + {figures['embed_cpu_ms']} = {figures['keys_cpu_ms_per_miss']} ms)")
    with tempfile.TemporaryDirectory(prefix="bench-keys-") as tmp:
        figures.update(service_paths(pixels, jpegs, Path(tmp)))
    say(f"miss path p50: camera {figures['miss_ms_camera']} ms, site {figures['miss_ms_site']} ms "
        f"(+{figures['extra_ms_per_miss']} ms); hit path p50: camera {figures['hit_ms_camera']} ms, "
        f"site {figures['hit_ms_site']} ms (+{figures['extra_ms_per_hit']} ms)")
    figures.update(agreement(pixels, jpegs, keys))
    say(f"device vs cloud keys: hash {figures['hash_bits_p50']} bits p50 ({figures['hash_bits_max']} max), "
        f"embedding similarity {figures['embedding_sim_p50']} p50 ({figures['embedding_sim_min']} min)")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
