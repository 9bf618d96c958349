"""`edgetriage edge replay VIDEO... [--config FILE] --events-out FILE.jsonl`: the device's vision pipeline and
decisions run offline on recorded clips, no broker, as fast as the CPU allows. One JSON line per event, written
when its track ends, so `last_ts` is final:

    {"event_id": "...", "video": "door.mp4", "camera": "door", "track_id": 3, "label": "person",
     "score": 0.91, "median_score": 0.88, "uncertain": false, "first_ts": 6.1, "last_ts": 18.7,
     "hits": 52, "zones": [], "dwell_s": 1.5, "source": "detector", "visit": "9f2c01ab-3", "classes": [["jean", 0.41]],
     "decision": "escalate", "reason": "person 0.91, verdict wanted", "phash": "..."}

A track the clip ended on before it was confirmed (the detector saw it, too few times) is written too, with
`"decision": "tentative"`: never counted as an event, never escalated, but not silently dropped.

Times are seconds from the start of the clip (frame index / the clip's fps). No cloud answers, so the device
verdict cache stays empty and "cached" never appears: a replay shows what the device would ask the cloud,
keep to itself, or drop.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from ..shared.ids import uuid7
from .config import CameraConfig, EdgeConfig, load_edge_config
from .triage.rules import Decision, Rules, Triage
from .triage.suppress import Suppressions
from .vision.capture import Frame, FrameSource
from .vision.closer import Stages, build_stages
from .vision.detect import Detector, build_detector
from .vision.events import PipelineOutput, TrackEvent
from .vision.pipeline import VisionPipeline
from .vision.zones import CameraGeometry


@dataclass
class ReplayedEvent:
    """One event of a replay: the track event, the decision made when it was emitted, its id. No decision:
    a tentative track the clip ended on (shown, never an event)."""

    video: str
    event_id: str
    event: TrackEvent
    decision: Decision | None

    def as_dict(self) -> dict[str, Any]:
        ev = self.event
        return {
            "event_id": self.event_id, "video": self.video, "camera": ev.camera, "track_id": ev.track_id,
            "label": ev.label, "score": round(ev.score, 4), "median_score": round(ev.median_score, 4),
            "uncertain": ev.uncertain, "first_ts": round(ev.first_ts, 3), "last_ts": round(ev.last_ts, 3),
            "hits": ev.hits, "zones": list(ev.zones), "dwell_s": round(ev.dwell_s, 3), "direction": ev.direction,
            "source": ev.source, "visit": ev.visit,
            "classes": [[name, round(p, 4)] for name, p in ev.classes],
            "decision": self.decision.kind if self.decision is not None else "tentative",
            "reason": self.decision.reason if self.decision is not None
            else f"seen {ev.hits} times, not confirmed when the clip ended",
            "phash": ev.phash,
        }


@dataclass
class ClipResult:
    video: str
    fps: float
    frames: int
    seconds: float  # wall time spent in the pipeline and decisions (decoding excluded)
    events: list[ReplayedEvent] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    tentative: list[ReplayedEvent] = field(default_factory=list)  # never events, see the module docstring


class Replayer:
    """The device's pipeline and triage for offline clips: models loaded once, a fresh pipeline (and
    fresh tracks) per clip, one Rules instance throughout (as on a device, cooldowns carry over)."""

    def __init__(self, config: EdgeConfig, *, detector: Detector | None = None, stages: Stages | None = None):
        self.config = config
        self.detector = detector if detector is not None else build_detector(config.vision.detector)
        self.stages = stages if stages is not None else build_stages(config.vision)
        self.rules = Rules(config.rules, timezone=config.timezone)
        self.triage = Triage(self.rules, device=config.device, site=config.site, classifier=self.stages.classifier,
                             suppressions=Suppressions(config.suppressions))

    def camera_for(self, video: str) -> CameraConfig:
        """The configured camera whose source is this file, else one named after the file."""
        target = Path(video).expanduser().resolve()
        for cam in self.config.cameras:
            try:
                if Path(cam.source).expanduser().resolve() == target:
                    return cam
            except (OSError, ValueError):
                continue
        slug = re.sub(r"[^a-z0-9_-]+", "-", Path(video).stem.lower()).strip("-")[:64] or "cam0"
        return CameraConfig(id=slug, source=video)

    def pipeline_for(self, camera: CameraConfig) -> VisionPipeline:
        geometry = CameraGeometry(camera.zones, camera.masks)
        return VisionPipeline(camera.id, self.config.vision, self.detector, stages=self.stages, geometry=geometry,
                              min_dwell=lambda zones: self.rules.min_dwell_s(camera.id, zones))

    def session(self, video: str) -> ReplaySession:
        """A fresh pipeline for one clip, fed frame by frame (what `run` does, for callers that time it)."""
        camera = self.camera_for(video)
        return ReplaySession(Path(video).name, camera.id, self.pipeline_for(camera), self.triage)

    def run(self, video: str, frames: Iterable[Frame] | None = None, *, fps: float | None = None,
            on_event: Callable[[ReplayedEvent], None] | None = None) -> ClipResult:
        """Replay one clip (decoded here, or the given frames). `on_event` sees each event when it ends."""
        session = self.session(video)
        session.on_event = on_event
        source: FrameSource | None = None
        if frames is None:
            source = FrameSource(video)
            source.open()
            frames = source
        spent = 0.0
        count = 0
        try:
            for frame in frames:
                t0 = time.perf_counter()
                session.process(frame)
                del frame  # not held while the next is decoded (the heap would keep room for two)
                spent += time.perf_counter() - t0
                count += 1
            t0 = time.perf_counter()
            session.finish()
            spent += time.perf_counter() - t0
        finally:
            if source is not None:
                fps = source.fps
                source.close()
        if fps is None:
            fps = frames.fps if isinstance(frames, FrameSource) else 0.0
        return ClipResult(video=session.video, fps=float(fps or 0.0), frames=count, seconds=spent,
                          events=session.events, stats=session.pipeline.stats.as_dict(),
                          tentative=session.tentative)


class ReplaySession:
    """One clip going through one camera's pipeline and the device's triage; events collect in `events`
    as their tracks end (the decision was made when each was emitted)."""

    def __init__(self, video: str, camera: str, pipeline: VisionPipeline, triage: Triage):
        self.video = video
        self.camera = camera
        self.pipeline = pipeline
        self.triage = triage
        self.events: list[ReplayedEvent] = []
        self.tentative: list[ReplayedEvent] = []
        self.on_event: Callable[[ReplayedEvent], None] | None = None
        self._pending: dict[int, ReplayedEvent] = {}
        self._now_ms = 0

    def process(self, frame: Frame) -> None:
        self._now_ms = frame.wall_ms
        self._handle(self.pipeline.process(frame))

    def finish(self) -> None:
        self._handle(self.pipeline.finish())

    def _handle(self, out: PipelineOutput) -> None:
        for ev in out.new_events:
            # decided when emitted, by the clip's clock (file frames are stamped open time + pts)
            triaged = self.triage.decide(self.camera, ev, max(self._now_ms, ev.captured_ms))
            replayed = ReplayedEvent(self.video, uuid7(ev.captured_ms), triaged.event, triaged.decision)
            self._pending[id(ev)] = replayed
        for ev in out.ended:
            pending = self._pending.pop(id(ev))
            # the track's end as the pipeline saw it, on the event as it was decided on
            done = replace(pending, event=replace(pending.event, last_ts=ev.last_ts, hits=ev.hits))
            self.events.append(done)
            if self.on_event is not None:
                self.on_event(done)
        for ev in out.tentative:
            shown = ReplayedEvent(self.video, uuid7(ev.captured_ms), ev, None)
            self.tentative.append(shown)
            if self.on_event is not None:
                self.on_event(shown)


def main(args: argparse.Namespace) -> int:
    """The `edge replay` command; a summary per clip goes to stderr."""
    config = load_edge_config(args.config)
    for video in args.videos:
        if not Path(video).is_file():
            print(f"edgetriage: error: video {video}: file not found; check the path", file=sys.stderr)
            return 2
    replayer = Replayer(config)
    out: IO[str] = sys.stdout if args.events_out == "-" else open(args.events_out, "w", encoding="utf-8")  # noqa: SIM115

    def write(event: ReplayedEvent) -> None:
        out.write(json.dumps(event.as_dict()) + "\n")

    try:
        for video in args.videos:
            result = replayer.run(video, on_event=write)
            out.flush()
            kinds: dict[str, int] = {}
            for e in result.events:
                kinds[e.decision.kind] = kinds.get(e.decision.kind, 0) + 1
            fps = result.frames / result.seconds if result.seconds > 0 else 0.0
            tentative = f", {len(result.tentative)} tentative" if result.tentative else ""
            print(f"{result.video}: {result.frames} frames at {fps:.0f} frames/s, {len(result.events)} events "
                  f"{json.dumps(kinds, sort_keys=True)}{tentative}, detector on {result.stats['frames_detected']} "
                  "frames", file=sys.stderr)
    finally:
        if out is not sys.stdout:
            out.close()
    return 0
