"""Edge benchmark: how close the device gets to the detector's own speed limit, and how right it is about
what it escalates, measured side by side in one run on every clip in the shared media folder.

Every decoded frame goes, in turn, through each loop below, so all of them see the same frames under the
same machine load (decoding is never timed):

    p1_overhead     the agent's cost per detector call (the vision pipeline with the detector forced onto every
                    whole frame: gate, detector with its pre/post-processing, tracker, crops, classifier; its
                    time / the detector calls it made) / a bare loop of resize + colour/layout conversion +
                    session.run on the same frames, same onnxruntime session               (goal <= 1.10)
    p1_detect_overhead  the same for the detector call alone (pre/post-processing, no tracking)
    p2_speedup      frames/s of the gated pipeline (what `edge replay` and the agent run: gate, regions, tracker,
                    uncertain regions, classifier, rules) / frames/s of the detector on every whole frame
                                                                                             (goal >= 5)
    p2_recall       share of the every-frame reference's person intervals an event of the gated pipeline
                    finds. Reference: the fp32 SSDLite on every whole frame at 300x300 (stretched), person
                    score >= 0.5, hits merged over gaps <= 1 s, intervals under 0.5 s dropped; found = a
                    person event overlaps the interval within 0.5 s                         (goal >= 0.99)
    p2_recall_labelled  share of the person visits in labels.json that produce a person event (each event
                    counts for one visit; overlap within 1 s, the labels' own resolution)    (goal >= 0.95)
    escalations_person_free  person escalations on the clips labels.json says have no person (goal 0)
    hard_cases      case -> recall of labelled visits on clips derived from the shared ones (cut mid-visit,
                    a frozen person, 5 fps, a 3 s GIF, night, standing still 20 s, and camera conditions:
                    people half as tall, shake, overexposed, JPEG quality 20, a 9:16 portrait cut, rain;
                    bench/hard_cases.py and bench/hard_cases.json), with hard_cases_min (the worst case;
                    goal >= 0.95),
                    hard_cases_reference (reference person intervals of those clips an event overlaps) and
                    hard_cases_escalations_person_free (the road clip derived the same ways; goal 0). Not
                    part of p2: p2 stays over the four shared clips.
    escalations_per_visit  person escalations per labelled visit on the shipped clips and on sets made from
                    them (re-timed to 5 and 2 fps, night, half size, shake, people staying two minutes, with and
                    without shake; bench/visits.py), with escalated_recall (visits an escalated person event
                    overlaps, one event per visit) and visits_detail per set              (goal <= 1.2)
    p3_bytes_ratio  bytes the device publishes for the clips (the real daemon through a counting relay, MQTT
                    overhead included) / the same clips as a 5 fps JPEG stream at quality 80 (goal <= 1/200), and
                    p3_bytes_ratio_10_per_hour, the same for a camera with 10 visits an hour (bench/wire.py says
                    how it is extrapolated)
    rss_mb          peak RSS of `edgetriage edge replay` with the INT8 detector, in its own process
                                                                                             (goal <= 250)
    clips           per-clip figures

Without --quick it also compares detector arrangements (recall per millisecond; `arrangements`) and the
perceptual hashes for verdict reuse (`hashes`). Progress goes to stderr; the last stdout line is one JSON
object.

    python bench/edge.py [--quick] [--media DIR] [--skip rss,arrangements,hashes,hard_cases,visits,wire]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from edgetriage.edge.config import EdgeConfig
from edgetriage.edge.replay import ReplayedEvent, Replayer
from edgetriage.edge.vision.capture import Frame, FrameSource
from edgetriage.edge.vision.crops import crop_box
from edgetriage.edge.vision.detect import Detector, DetectorConfig, build_detector
from edgetriage.edge.vision.pipeline import VisionPipeline
from edgetriage.shared.config import validate_config
from edgetriage.shared.modelfiles import resolve
from memory import as_after_boot
from recall import found_intervals, found_visits, intervals_from_hits, load_labels

DEFAULT_MEDIA = Path(__file__).resolve().parents[1] / "models" / "media"  # clips shipped in the repository
VIDEO_SUFFIXES = (".mp4", ".gif", ".avi", ".mkv", ".mov", ".webm")
REFERENCE = DetectorConfig(model="ssdlite_person", precision="fp32", fit="stretch", min_score=0.5, threads=2)
QUICK_FRAMES = 300  # per clip with --quick
HARD_QUICK_FRAMES = 150  # per derived clip of the hard cases with --quick
ARRANGEMENTS: dict[str, dict[str, Any]] = {
    "yolox": {"detector": {"model": "yolox_nano"}},
    "yolox_320": {"detector": {"model": "yolox_nano_320"}},
    "ssdlite+yolox_on_uncertain": {"detector": {"model": "ssdlite_person"}, "verifier": {"model": "yolox_nano"}},
    "ssdlite_int8+yolox_on_uncertain": {"detector": {"model": "ssdlite_person", "precision": "int8"},
                                        "verifier": {"model": "yolox_nano"}},
    "ssdlite": {"detector": {"model": "ssdlite_person"}},
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the bare loop p1 compares against --------------------------------------------------------------------
class BareLoop:
    """resize + colour/layout conversion + session.run, nothing else: the floor for one detector call. It runs
    the detector's own onnxruntime session, so both loops wake the same thread pool."""

    def __init__(self, config: DetectorConfig, session: Any):
        from edgetriage.edge.vision.detect import model_key

        self.model = resolve(model_key(config))
        entry = self.model.entry
        self.family = entry["family"]
        self.session = session
        self.input_name = entry["input"]["name"]
        width, height = entry["input"]["size"]
        self.size = (int(width), int(height))
        if self.family == "yolox":
            self.canvas = np.full((height, width, 3), 114, np.uint8)
            self.tensor = np.empty((1, 3, height, width), np.float32)
        else:
            self.tensor = np.empty((1, height, width, 3), np.uint8)
        self.outputs = None

    def __call__(self, image: np.ndarray) -> None:
        if self.family == "yolox":
            h, w = image.shape[:2]
            r = min(self.size[0] / w, self.size[1] / h)
            fit = (int(w * r), int(h * r))
            self.canvas[: fit[1], : fit[0]] = cv2.resize(image, fit, interpolation=cv2.INTER_LINEAR)
            self.tensor[0] = self.canvas.transpose(2, 0, 1)
        else:
            self.tensor[0] = cv2.cvtColor(cv2.resize(image, self.size, interpolation=cv2.INTER_LINEAR),
                                          cv2.COLOR_BGR2RGB)
        self.session.run(self.outputs, {self.input_name: self.tensor})


# -- one clip, every loop side by side --------------------------------------------------------------------
@dataclass
class Timer:
    """Wall time and this process's CPU time (all its threads: onnxruntime's too). Other processes on a
    shared machine stretch the first; the second counts only the work done here."""

    seconds: float = 0.0
    cpu: float = 0.0
    calls: int = 0

    def run(self, fn: Callable[[], Any]) -> Any:
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        self.seconds += time.perf_counter() - t0
        self.cpu += time.process_time() - c0
        self.calls += 1
        return out

    @property
    def ms(self) -> float:
        return 1000.0 * self.seconds / self.calls if self.calls else 0.0


@dataclass
class ClipRun:
    name: str
    fps: float
    frames: int = 0
    reference_hits: list[float] = field(default_factory=list)
    events: list[ReplayedEvent] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    gated: Timer = field(default_factory=Timer)
    every_frame: Timer = field(default_factory=Timer)
    bare: Timer = field(default_factory=Timer)
    forced: Timer = field(default_factory=Timer)
    forced_calls: int = 0  # detector calls the forced pipeline made (its looks, and its closer looks)
    detect_only: Timer = field(default_factory=Timer)


def frames_of(path: Path, limit: int | None) -> tuple[FrameSource, Iterator[Frame]]:
    source = FrameSource(str(path), max_frames=limit)
    source.open()
    return source, iter(source)


def run_clip(path: Path, replayer: Replayer, every: Detector, reference: Detector, bare: BareLoop,
             forced: VisionPipeline, limit: int | None, p1_every: int) -> ClipRun:
    """Every frame through: the gated pipeline + decisions, the detector on the whole frame, the reference;
    every p1_every-th frame also through the bare loop and the forced (every-frame) pipeline."""
    source, frames = frames_of(path, limit)
    run = ClipRun(path.name, source.fps)
    session = replayer.session(str(path))
    try:
        for frame in frames:
            run.gated.run(lambda f=frame: session.process(f))
            run.every_frame.run(lambda f=frame: every.detect(f.image))
            if any(d.label == "person" for d in reference.detect(frame.image)):
                run.reference_hits.append(frame.index / source.fps)
            if run.frames % p1_every == 0:
                # p1: the bare loop and the agent's two costs on the same frame, in a rotating order
                loops = [(run.bare, lambda f=frame: bare(f.image)),
                         (run.detect_only, lambda f=frame: every.detect(f.image)),
                         (run.forced, lambda f=frame: forced.process(f))]
                shift = (run.frames // p1_every) % 3
                for timer, fn in loops[shift:] + loops[:shift]:
                    timer.run(fn)
            run.frames += 1
        run.gated.run(session.finish)
        forced.finish()
        run.forced_calls = forced.stats.detector_calls + forced.stats.verifier_calls
    finally:
        source.close()
    run.gated.calls = run.frames
    run.events = session.events
    run.stats = session.pipeline.stats.as_dict()
    return run


def clip_figures(run: ClipRun, visits: list[tuple[float, float]] | None, duration_s: float) -> dict[str, Any]:
    persons = [(e.event.first_ts, e.event.last_ts) for e in run.events if e.event.label == "person"]
    reference = intervals_from_hits(run.reference_hits, 1.0 / run.fps)
    kinds: dict[str, int] = {}
    for e in run.events:
        kinds[e.decision.kind] = kinds.get(e.decision.kind, 0) + 1
    in_range = [v for v in visits or [] if v[0] < duration_s]
    return {
        "frames": run.frames,
        "fps": run.fps,
        "gated_fps": round(run.frames / run.gated.seconds, 1) if run.gated.seconds else None,
        "speedup": round(run.every_frame.seconds / run.gated.seconds, 2) if run.gated.seconds else None,
        "speedup_cpu": round(run.every_frame.cpu / run.gated.cpu, 2) if run.gated.cpu else None,
        "every_frame_fps": round(run.every_frame.calls / run.every_frame.seconds, 1)
        if run.every_frame.seconds
        else None,
        "detector_frames": run.stats.get("frames_detected"),
        "detector_calls": run.stats.get("detector_calls"),
        "frames_followed": run.stats.get("frames_followed"),
        "motion_tracks": run.stats.get("motion_tracks"),
        "resolved": run.stats.get("resolved"),
        "reference_intervals": len(reference),
        "reference_found": found_intervals(reference, persons),
        "visits": len(in_range) if visits is not None else None,
        "visits_found": found_visits(in_range, persons) if visits is not None else None,
        "events": len(run.events),
        "person_events": len(persons),
        "decisions": kinds,
        "person_escalations": sum(1 for e in run.events if e.event.label == "person" and e.decision.kind == "escalate"),
        "uncertain_events": sum(1 for e in run.events if e.event.uncertain),
    }


# -- peak RSS of the agent process -------------------------------------------------------------------------
_RSS_PROBE = """
import sys
from edgetriage.cli import main
code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    peak = next(line for line in status if line.startswith("VmHWM:"))
print("PEAK_KB", peak.split()[1], file=sys.stderr)
sys.exit(code)
"""


def measure_rss(clip: Path) -> float:
    """Peak RSS (MiB) of `edgetriage edge replay` with the INT8 detector, in a process of its own. Read from
    the child's own /proc/self/status (VmHWM): a forked child's rusage would count the parent's pages."""
    as_after_boot()  # the libraries read from disk, as on a device after a boot (bench/memory.py)
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "edge.toml"
        config.write_text('[vision.detector]\nprecision = "int8"\n', encoding="utf-8")
        cmd = [sys.executable, "-c", _RSS_PROBE, "edge", "replay", str(clip), "--config", str(config),
               "--events-out", str(Path(tmp) / "events.jsonl")]
        proc = subprocess.run(cmd, env=dict(os.environ, EDGETRIAGE_STATE=tmp), capture_output=True, text=True,
                              timeout=900)
    peaks = [line.split()[1] for line in proc.stderr.splitlines() if line.startswith("PEAK_KB")]
    if proc.returncode != 0 or not peaks:
        raise RuntimeError(f"edge replay failed: {proc.stderr[-2000:]}")
    return round(int(peaks[-1]) / 1024.0, 1)


# -- arrangements ------------------------------------------------------------------------------------------
def per_call_ms(configs: dict[str, DetectorConfig], frames: list[np.ndarray], rounds: int = 3) -> dict[str, float]:
    """Median ms of one whole-frame detect per model, the models interleaved round by round."""
    detectors = {name: build_detector(c) for name, c in configs.items()}
    samples: dict[str, list[float]] = {name: [] for name in detectors}
    for det in detectors.values():
        det.detect(frames[0])
    for _ in range(rounds):
        for image in frames:
            for name, det in detectors.items():
                t0 = time.perf_counter()
                det.detect(image)
                samples[name].append((time.perf_counter() - t0) * 1000.0)
    return {name: round(statistics.median(v), 2) for name, v in samples.items()}


def compare_arrangements(clips: list[Path], labels: dict[str, list[tuple[float, float]]],
                         reference_hits: dict[str, tuple[float, list[float]]], limit: int | None) -> dict[str, Any]:
    """Each arrangement replayed on every clip: recall (labelled visits, reference intervals), escalations
    on person-free clips, detector/verifier/classifier calls, and the modelled and measured ms per frame."""
    sample = [f.image for f in itertools.islice(FrameSource(str(clips[0])), 0, 400, 20)]
    models = {"ssdlite_person": DetectorConfig(model="ssdlite_person"),
              "ssdlite_person_int8": DetectorConfig(model="ssdlite_person", precision="int8"),
              "yolox_nano": DetectorConfig(model="yolox_nano"),
              "yolox_nano_320": DetectorConfig(model="yolox_nano_320")}
    call_ms = per_call_ms(models, sample)
    from edgetriage.edge.vision.classify import ClassifierConfig, CropClassifier

    classifier = CropClassifier(ClassifierConfig())
    crop = sample[0][100:300, 300:450]
    t0 = time.perf_counter()
    for _ in range(20):
        classifier.classify(crop)
    classify_ms = (time.perf_counter() - t0) * 50.0
    out: dict[str, Any] = {"per_call_ms": call_ms, "classify_ms": round(classify_ms, 2), "results": {}}
    for name, vision in ARRANGEMENTS.items():
        config = validate_config(EdgeConfig, {"vision": vision}, name)
        replayer = Replayer(config)
        primary = _key(config.vision.detector)
        verifier = _key(config.vision.verifier) if config.vision.verifier else None
        totals = {"frames": 0, "visits": 0, "visits_found": 0, "reference": 0, "reference_found": 0,
                  "person_escalations_person_free": 0, "detector_calls": 0, "verifier_calls": 0,
                  "classifier_calls": 0, "seconds": 0.0}
        for clip in clips:
            source = FrameSource(str(clip), max_frames=limit)
            result = replayer.run(str(clip), source)
            persons = [(e.event.first_ts, e.event.last_ts) for e in result.events if e.event.label == "person"]
            fps, hits = reference_hits[clip.name]
            reference = intervals_from_hits(hits, 1.0 / fps)
            visits = [v for v in labels.get(clip.name, []) if v[0] < result.frames / fps]
            totals["frames"] += result.frames
            totals["visits"] += len(visits)
            totals["visits_found"] += found_visits(visits, persons)
            totals["reference"] += len(reference)
            totals["reference_found"] += found_intervals(reference, persons)
            if clip.name in labels and not labels[clip.name]:
                totals["person_escalations_person_free"] += sum(
                    1 for e in result.events if e.event.label == "person" and e.decision.kind == "escalate")
            for key in ("detector_calls", "verifier_calls", "classifier_calls"):
                totals[key] += result.stats[key]
            totals["seconds"] += result.seconds
        modelled = (totals["detector_calls"] * call_ms[primary]
                    + totals["verifier_calls"] * call_ms[verifier or primary]
                    + totals["classifier_calls"] * classify_ms) / max(1, totals["frames"])
        recall = totals["visits_found"] / max(1, totals["visits"])
        out["results"][name] = {
            **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in totals.items()},
            "recall_labelled": round(recall, 4),
            "recall_reference": round(totals["reference_found"] / max(1, totals["reference"]), 4),
            "model_ms_per_frame": round(modelled, 3),
            "measured_ms_per_frame": round(1000.0 * totals["seconds"] / max(1, totals["frames"]), 3),
            "recall_per_ms": round(recall / modelled, 4) if modelled > 0 else None,
        }
        log(f"arrangement {name}: {out['results'][name]}")
    best = max(out["results"].items(), key=lambda kv: (kv[1]["recall_labelled"], kv[1]["recall_per_ms"] or 0.0))
    out["winner"] = best[0]
    return out


def _key(config: DetectorConfig) -> str:
    from edgetriage.edge.vision.detect import model_key

    return model_key(config)


# -- hashes for verdict reuse ------------------------------------------------------------------------------
def _dct64(grey: np.ndarray) -> int:
    small = cv2.resize(grey, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float32)
    low = cv2.dct(small)[:8, :8].ravel()
    return _pack(low > np.median(low[1:]))


def _ahash(grey: np.ndarray) -> int:
    small = cv2.resize(grey, (8, 8), interpolation=cv2.INTER_AREA).astype(np.float32)
    return _pack((small > small.mean()).ravel())


def _dhash(grey: np.ndarray) -> int:
    small = cv2.resize(grey, (9, 8), interpolation=cv2.INTER_AREA).astype(np.int16)
    return _pack((small[:, 1:] > small[:, :-1]).ravel())


def _pack(bits: np.ndarray) -> int:
    return int.from_bytes(np.packbits(bits.astype(np.uint8)).tobytes(), "big")


HASHES: dict[str, Callable[[np.ndarray], int]] = {"dct64": _dct64, "ahash64": _ahash, "dhash64": _dhash}


def compare_hashes(media: Path, labels: dict[str, list[tuple[float, float]]], threshold: int) -> dict[str, Any]:
    """Crops of the same visitor (two moments of one visit, 0.3-1 s apart, and any two of the visit) against
    crops of different visitors (two different visits of the same clip): how often each hash matches
    (Hamming distance <= threshold) for the same person, and how often two different people collide."""
    detector = build_detector(DetectorConfig(model="yolox_nano"))
    crops: list[tuple[str, int, float, np.ndarray]] = []  # clip, visit, t, grey crop
    for name, visits in labels.items():
        if not visits or not (media / name).is_file():
            continue
        if len(visits) > 1 and all(v == visits[0] for v in visits):
            continue  # simultaneous visits cannot be told apart by time
        source = FrameSource(str(media / name))
        step = max(1, round(source.fps / 3))  # three looks a second
        for frame in source:
            if frame.index % step:
                continue
            t = frame.index / source.fps
            visit = next((i for i, (a, b) in enumerate(visits) if a + 0.5 <= t <= b - 0.5), None)
            if visit is None:
                continue
            people = [d for d in detector.detect(frame.image) if d.label == "person" and d.score >= 0.5]
            if not people:
                continue
            best = max(people, key=lambda d: d.score)
            crop = crop_box(frame.image, best.box, 0.15)
            crops.append((name, visit, t, cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)))
    out: dict[str, Any] = {"threshold": threshold, "crops": len(crops), "results": {}}
    for alg, fn in HASHES.items():
        hashes = [fn(c[3]) for c in crops]
        near, same, diff = [], [], []
        for i, j in itertools.combinations(range(len(crops)), 2):
            a, b = crops[i], crops[j]
            if a[0] != b[0]:
                continue
            d = (hashes[i] ^ hashes[j]).bit_count()
            if a[1] == b[1]:
                same.append(d)
                if 0.3 <= abs(a[2] - b[2]) <= 1.0:
                    near.append(d)
            else:
                diff.append(d)
        out["results"][alg] = {
            "same_person_near_match": round(sum(d <= threshold for d in near) / max(1, len(near)), 4),
            "same_person_any_match": round(sum(d <= threshold for d in same) / max(1, len(same)), 4),
            "different_people_collide": round(sum(d <= threshold for d in diff) / max(1, len(diff)), 5),
            "pairs": {"near": len(near), "same": len(same), "different": len(diff)},
            "median_distance": {"near": statistics.median(near) if near else None,
                                "different": statistics.median(diff) if diff else None},
            # (threshold, same person near match, different people collide) along the threshold
            "sweep": [(t, round(sum(d <= t for d in near) / max(1, len(near)), 4),
                       round(sum(d <= t for d in diff) / max(1, len(diff)), 5)) for t in (4, 6, 8, 10, 12, 14)],
        }
        log(f"hash {alg}: {out['results'][alg]}")
    return out


# -- main --------------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a run of a few minutes (clips cut short)")
    parser.add_argument("--media", type=Path, default=DEFAULT_MEDIA,
                        help="folder with the clips and labels.json (default: models/media)")
    parser.add_argument("--config", help="edge TOML config for the gated pipeline (default: built-in defaults)")
    parser.add_argument("--skip", default="",
                        help="comma-separated parts to leave out: rss,arrangements,hashes,hard_cases,visits,wire")
    args = parser.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.quick:
        skip |= {"arrangements", "hashes"}
    media: Path = args.media
    clips = sorted(p for p in media.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES) if media.is_dir() else []
    if not clips:
        print(f"bench/edge.py: no clips in {media}; pass --media DIR (default: models/media)", file=sys.stderr)
        return 2
    labels = load_labels(media)
    limit = QUICK_FRAMES if args.quick else None
    p1_every = 4 if args.quick else 1

    from edgetriage.edge.config import load_edge_config

    config = load_edge_config(args.config)
    replayer = Replayer(config)
    every = build_detector(config.vision.detector)
    reference = build_detector(REFERENCE)
    bare = BareLoop(config.vision.detector, every.session)
    forced_vision = config.vision.model_copy(update={
        "motion": config.vision.motion.model_copy(update={"keyframe_interval_s": 1e-3}), "tracked_interval_s": 0.0})
    t_start = time.monotonic()
    runs: dict[str, ClipRun] = {}
    figures: dict[str, Any] = {}
    for clip in clips:
        forced = VisionPipeline("forced", forced_vision, every, stages=replayer.stages)
        run = run_clip(clip, replayer, every, reference, bare, forced, limit, p1_every)
        runs[clip.name] = run
        figures[clip.name] = clip_figures(run, labels.get(clip.name), run.frames / run.fps)
        log(f"{clip.name}: {figures[clip.name]}")

    gated_s = sum(r.gated.seconds for r in runs.values())
    every_s = sum(r.every_frame.seconds for r in runs.values())
    gated_cpu = sum(r.gated.cpu for r in runs.values())
    every_cpu = sum(r.every_frame.cpu for r in runs.values())
    cpu = {name: sum(getattr(r, name).cpu for r in runs.values()) for name in ("bare", "forced", "detect_only")}
    bare_calls = sum(r.bare.calls for r in runs.values())
    forced_calls = sum(r.forced_calls for r in runs.values())
    detect_calls = sum(r.detect_only.calls for r in runs.values())

    def per_call(total: float, calls: int, base: float) -> float | None:
        return round((total / calls) / (base / bare_calls), 3) if calls and base and bare_calls else None

    frames = sum(r.frames for r in runs.values())
    bare_s = sum(r.bare.seconds for r in runs.values())
    forced_s = sum(r.forced.seconds for r in runs.values())
    detect_s = sum(r.detect_only.seconds for r in runs.values())
    ref_total = sum(f["reference_intervals"] for f in figures.values())
    ref_found = sum(f["reference_found"] for f in figures.values())
    labelled = [f for f in figures.values() if f["visits"] is not None]
    visits = sum(f["visits"] for f in labelled)
    results: dict[str, Any] = {
        "p1_overhead": per_call(forced_s, forced_calls, bare_s),
        "p1_detect_overhead": per_call(detect_s, detect_calls, bare_s),
        "p2_speedup": round((frames / gated_s) / (frames / every_s), 2) if gated_s else None,
        "p2_recall": round(ref_found / ref_total, 4) if ref_total else None,
        "p2_recall_labelled": round(sum(f["visits_found"] for f in labelled) / visits, 4) if visits else None,
        "escalations_person_free": sum(f["person_escalations"] for name, f in figures.items()
                                       if name in labels and not labels[name]),
        "rss_mb": None,
        # the same ratios in CPU time: what the work costs, whatever else the machine was doing
        "p1_overhead_cpu": per_call(cpu["forced"], forced_calls, cpu["bare"]),
        "p2_speedup_cpu": round(every_cpu / gated_cpu, 2) if gated_cpu else None,
        "load_avg": round(os.getloadavg()[0], 2),
        "gated_fps": round(frames / gated_s, 1) if gated_s else None,
        "every_frame_fps": round(frames / every_s, 1) if every_s else None,
        "bare_ms": round(1000 * bare_s / max(1, sum(r.bare.calls for r in runs.values())), 2),
        "detector": config.vision.detector.model, "precision": config.vision.detector.precision,
        "quick": args.quick, "frames": frames, "clips": figures,
    }
    if "hard_cases" not in skip:
        from hard_cases import run_hard_cases

        results.update(run_hard_cases(media, lambda: Replayer(config, detector=replayer.detector,
                                                              stages=replayer.stages),
                                      reference, HARD_QUICK_FRAMES if args.quick else None, log))
    if "visits" not in skip:
        from visits import run_visits

        results.update(run_visits(media, lambda: Replayer(config, detector=replayer.detector, stages=replayer.stages),
                                  args.quick, log=log))
    if "wire" not in skip:
        from wire import measure_wire

        results.update(measure_wire(clips, labels, config, limit, log))
    if "rss" not in skip:
        # the longest clip with people (a busy camera) in a full run, the short road clip with --quick
        name = "car-detection.mp4" if args.quick else "one-by-one-person-detection.mp4"
        results["rss_mb"] = measure_rss(media / name if (media / name).is_file() else clips[0])
        log(f"rss_mb: {results['rss_mb']}")
    if "arrangements" not in skip:
        hits = {name: (r.fps, r.reference_hits) for name, r in runs.items()}
        results["arrangements"] = compare_arrangements(clips, labels, hits, limit)
    if "hashes" not in skip:
        results["hashes"] = compare_hashes(media, labels, config.cache.default_max_distance)
    results["seconds"] = round(time.monotonic() - t_start, 1)
    print(json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
