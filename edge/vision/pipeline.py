"""The vision half of the device, per camera: frame -> motion gate -> detector (whole frame or motion
regions scaled up) -> tracker -> one `TrackEvent` per object that stayed long enough, carrying the best crop
seen of it.

The cascade, cheapest first:
1. the motion gate decides whether anything changed, and where (masks and small blobs ignored);
2. while every moving blob belongs to an object already tracked, the detector looks again only every
   `tracked_interval_s` (the tracker follows the blobs in between), so a person walking around a room costs
   a few detector calls a second, not one per frame;
3. otherwise the detector looks at squares around the blobs scaled up to its input (the whole frame on the
   first frame, on periodic keyframes, or when the blobs cover most of it; when one blob is most of the
   picture, a lighting change that says nothing about where, at most every `moving_interval_s`);
4. a blob nothing explains, that persists (`uncertain_after_s`), is *resolved*: the verifier (a second
   detector, if configured) and the classifier look at it. A person they find is a person; something they
   name (a car, a dog) is that; anything else becomes `label="person", uncertain=True` for the rules
   (closer.py, with the look for a bicycle's rider).
Extra looks (a stream's first second, confirming what was found) are looks.py's; at the end of a stream
confirmed tracks become events whatever their length, tentative ones come back in `PipelineOutput.tentative`.
A track whose event is out and that walks into a zone the event had not been in becomes another event (of
the same visit, track.py), with the zones so far: the rules decide whether the new zone is worth a verdict.

Nothing here does I/O or decides what an event means; the agent (or the replay) reads `PipelineOutput`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ...shared.stats import median
from . import lowlight
from .capture import Frame
from .closer import OBJECT, OTHER_EXPLAINS_MIN, RIDDEN, CloserLooks, Stages, overlaps
from .counts import PipelineStats
from .detect import Det, Detector, Region, input_side
from .events import PipelineOutput, TrackEvent, VisionConfig
from .looks import LookPlanner
from .lowlight import DARK_BRIGHTNESS
from .memory import TrackMemory, event_of
from .motion import MotionGate, detection_regions
from .presence import PresenceHold
from .samples import LookSampler
from .track import MOTION, IoUTracker, Track, inside_fraction, with_tracks
from .zones import CameraGeometry


class VisionPipeline:
    """One camera's stages wired together; call `process` for every frame in order, `finish` at the end.

    `stages` holds the shared verifier/classifier (none: motion tracks are resolved by the detector alone);
    `geometry` the camera's zones and masks; `min_dwell(zones)` how long a track must have stayed before
    its event is emitted (the rules' min_dwell_s; a track that ends sooner is emitted when it ends)."""

    def __init__(self, camera: str, config: VisionConfig, detector: Detector, *, stages: Stages | None = None,
                 geometry: CameraGeometry | None = None,
                 min_dwell: Callable[[frozenset[str]], float] | None = None):
        self.camera = camera
        self._config = config
        self._detector = detector
        self._geometry = geometry or CameraGeometry()
        self._min_dwell = min_dwell
        self._gate = MotionGate(config.motion, self._geometry.motion_mask if self._geometry.masks else None)
        self._tracker = IoUTracker(config.tracker)
        self._hold = PresenceHold(config.tracker, self._gate, self._tracker)
        self._looks = LookPlanner(config.looks, config.tracker.max_missed_s)
        self._memory: dict[int, TrackMemory] = {}
        self._track_labels = frozenset(config.track_labels)
        self._gallery = LookSampler(camera, config, self._track_labels)
        self._last_pts = float("-inf")
        self._last_detect_pts = float("-inf")
        self._last_whole_pts = float("-inf")
        self._last_frame: Frame | None = None  # for the rider looks made when the stream ends
        self._region_side = config.motion.region_min_side or input_side(detector)
        self.stats = PipelineStats()
        self._closer = CloserLooks(config, detector, stages or Stages(), self._geometry, self._looks,
                                   self.stats)

    @property
    def tracks(self) -> list[Track]:
        return self._tracker.tracks

    def process(self, frame: Frame) -> PipelineOutput:
        self.stats.frames_read += 1
        pts = frame.pts_s
        out = PipelineOutput([], [], looks=self._gallery.sink())
        new_events = out.new_events
        if pts < self._last_pts:  # the source restarted (reconnect, replay): its tracks cannot continue
            self._end(self._tracker.end_all(), out, stream_end=True)
            self._restart()
        self._last_pts = pts
        motion = self._gate.check(frame)
        start = self._looks.starting(pts)  # everyone already in view is seen and confirmed, moving or not
        if motion.run_detector:
            self._look(frame, motion.reason, motion.regions, whole=start)
        if start:
            if self._last_whole_pts == pts:  # the gate's own look took the whole frame
                self._looks.start_looked(pts)
            elif self._looks.start_due(pts):  # off the gate's schedule, which stays as if this look never was
                self.stats.start_looks += 1
                self._looks.start_looked(pts)
                self._detect(frame, None, [], paced=False)
        closer = self._closer  # closer looks at what the detector found and has not confirmed, ...
        tentative = [t for t in self.tracks if t.label in self._track_labels and t.hits >= 1
                     and not self._confirmed(t, self._memory[t.track_id])]
        if (look := closer.confirm(frame, tentative, self.tracks, self._last_pts)) is not None:
            self._detect(frame, look.squares, [], paced=False)  # squares None: the whole frame
        # ... and at new motion in the dark
        if (look := closer.in_the_dark(frame, self.tracks, self._gate.brightness(), self._last_pts)) is not None:
            self._detect(frame, look.squares, [], paced=False)
        self._hold.hold(pts, self._memory)
        self._gate.update_scene([track.box for track in self._tracker.tracks])
        self._end(self._tracker.expire(pts), out)
        self._resolve_motion(frame)
        for track in list(self._tracker.tracks):
            memory = self._memory[track.track_id]
            if memory.event is None and self._ready(track, memory, pts):
                new_events.append(self._emit(track, memory, pts))
                self._check_rider(track, memory, frame, new_events)
            elif memory.new_zone:  # walked on into a zone its event had not been in: another event
                memory.new_zone = False
                new_events.append(self._emit(track, memory, pts))
        riders_due = any(t.label in RIDDEN and not self._memory[t.track_id].rider_checked for t in self.tracks)
        self._last_frame = frame if riders_due else None  # held only for finish(): a frame unmapped (vision.live)
        return out

    def finish(self) -> PipelineOutput:
        """End of stream: every live track ends now; confirmed ones not yet emitted are emitted first,
        tentative ones (the detector saw them, too few times) come back in `tentative`."""
        out = PipelineOutput([], [], looks=self._gallery.sink())
        if self._last_frame is not None:  # a bike confirmed just before the end: its rider is looked for too
            for track in list(self._tracker.tracks):
                memory = self._memory[track.track_id]
                if memory.event is None and self._confirmed(track, memory):
                    self._check_rider(track, memory, self._last_frame, out.new_events)
        self._last_frame = None
        self._end(self._tracker.end_all(), out, stream_end=True)
        self._last_pts = float("-inf")
        self._restart()
        return out

    def _restart(self) -> None:
        """The next frame starts a stream: start-up looks, a fresh keyframe clock."""
        self._last_detect_pts = self._last_whole_pts = float("-inf")
        self._looks.restart()
        self._tracker.forget_visits()

    # -- looking -----------------------------------------------------------------------------------------
    def _look(self, frame: Frame, reason: str, blob_px: list[Region], whole: bool = False) -> None:
        """Detector (or tracker alone) on a frame the gate passed; feeds the tracker. `whole`: a look, if the
        gate's schedule makes one, takes the whole frame."""
        image, pts, cfg = frame.image, frame.pts_s, self._config
        h, w = image.shape[:2]
        max_area = cfg.motion.max_blob_frac * w * h
        lighting = any((b[2] - b[0]) * (b[3] - b[1]) > max_area for b in blob_px)
        blobs = [] if lighting else [(b[0] / w, b[1] / h, b[2] / w, b[3] / h) for b in blob_px]
        if (reason == "motion" and not lighting and blobs
                and pts - self._last_detect_pts < min(self._look_due(b) for b in blobs)):
            self.stats.frames_followed += 1
            self._tracker.update(pts, [], blobs, start_motion=False)
            return
        # the whole picture changed (exposure, a light, a big car darkening it): motion says nothing about
        # where, so the whole frame is looked at as often as things moving on are, not on every frame
        if lighting and pts - self._last_detect_pts < cfg.moving_interval_s - 1e-6:
            self.stats.frames_followed += 1
            return
        looks: list[Region] | None = None
        keyframe = pts - self._last_whole_pts >= cfg.motion.keyframe_interval_s - 1e-6
        if reason == "motion" and blobs and not keyframe and not whole:
            looks = detection_regions(
                with_tracks(blob_px, self._tracker.tracks, self._last_pts, w, h),
                w,
                h,
                self._region_side,
                cfg.motion.max_regions,
            )
        self._detect(frame, looks, blobs)

    def _detect(self, frame: Frame, looks: list[Region] | None, blobs: list[tuple[float, float, float, float]],
                paced: bool = True) -> None:
        """The detector on the whole frame (`looks` None) or on those regions; its finds and the motion
        blobs go to the tracker. Only `paced` looks (the gate's) set the clocks of the gate's schedule, so
        the extra looks leave it as it was: two runs over the same frames from different starting frames (a
        replay from a few frames later, the demo's second pass) still look at the same frames."""
        image, pts, cfg = frame.image, frame.pts_s, self._config
        t0 = time.perf_counter()
        if looks is None:
            found = self._detector.detect(image)
            if paced:
                self._last_whole_pts = pts
            self.stats.detector_calls += 1
        else:
            dark = self._gate.brightness() < DARK_BRIGHTNESS  # closer looks see denoised pixels there
            found = [d for region in looks for d in lowlight.look(self._detector, image, region, dark)]
            self.stats.detector_calls += len(looks)
            self.stats.region_looks += len(looks)
        self.stats.detect_ms.add((time.perf_counter() - t0) * 1000.0)
        self._closer.saw(pts, looks or [(0, 0, image.shape[1], image.shape[0])])
        self.stats.frames_detected += 1
        if paced:
            self._last_detect_pts = pts
        geometry = self._geometry
        tracked: list[Det] = []
        faint: list[Det] = []
        for d in found:
            if geometry.masked(d.box):
                continue
            if d.score >= cfg.min_score and d.label in self._track_labels:
                tracked.append(d)
            elif d.label == "person":
                faint.append(d)
            elif d.score >= OTHER_EXPLAINS_MIN:
                # tracked as a plain "object" (YOLOX names a car seen from above "cell phone" one frame and
                # "kite" the next): it explains its motion and is followed, but is never an event
                tracked.append(Det(OBJECT, d.score, d.box))
        before = {track.track_id: track.box for track in self._tracker.tracks}
        update = self._tracker.update(pts, tracked, blobs, start_motion=cfg.uncertain_regions)
        for track in update.started:
            memory = self._memory[track.track_id] = TrackMemory(first_box=track.box)
            self.stats.tracks += 1
            if track.label == MOTION:
                memory.source = "motion"
                self.stats.motion_tracks += 1
        for track, det in update.matched:
            self._observe(self._memory[track.track_id], track, det, tracked, frame, paced)
            self._looks.looked(track, before.get(track.track_id), pts)
            self._gallery.offer(self._memory[track.track_id], track, det,
                                update.expected.get(track.track_id, det.box), tracked, frame)
        self._hold.started(update.started, self._memory)
        if faint:
            for track in self._tracker.tracks:
                if track.label == MOTION:
                    memory = self._memory[track.track_id]
                    for d in faint:
                        if d.score > memory.evidence and overlaps(d.box, track.box):
                            memory.evidence = d.score

    def _look_due(self, blob: tuple[float, float, float, float]) -> float:
        """How long after the last look this blob may wait for the next one (0: look now).

        Within the box of a confirmed track, or of motion the detector already looked at, it is that object
        (or that unexplained motion) moving in place: the tracker follows it for `tracked_interval_s`. Partly
        outside such a box it is that object moving on (or growing as it enters the picture):
        `moving_interval_s`. A blob no track accounts for, or on a track still being confirmed, is looked at
        now, so new things are seen at once and confirmed quickly (plain objects are never confirmed: they
        are never events)."""
        cfg = self._config
        min_hits = cfg.tracker.min_hits
        due = 0.0
        for track in self._tracker.tracks:
            # where it was seen last and where it should be now: a moving object's blob covers both
            x1, y1, x2, y2 = track.predict(self._last_pts)
            bx1, by1, bx2, by2 = track.box
            swept = (min(x1, bx1), min(y1, by1), max(x2, bx2), max(y2, by2))
            share = inside_fraction(blob, swept)
            if share <= 0.0:
                continue
            if not (track.motion_only or track.hits >= min_hits or track.label == OBJECT
                    or self._memory[track.track_id].resolved):
                if share >= 0.6:  # while it is new as often as confirmation looks come; then like a thing moving on
                    return (min(self._looks.confirm_spacing_s, cfg.moving_interval_s)
                            if self._looks.new(track, self._last_pts) else cfg.moving_interval_s)
                continue
            due = max(
                due,
                self._looks.still_due(track, cfg.tracked_interval_s, self._last_pts, self._last_detect_pts)
                if share >= 0.6
                else min(cfg.moving_interval_s, cfg.tracked_interval_s),
            )
        return due

    def _observe(self, memory: TrackMemory, track: Track, det: Det, dets: list[Det], frame: Frame,
                 paced: bool = True) -> None:
        """A hit; it may give the track's best crop (`TrackMemory.better_crop`)."""
        if track.hits == 1:  # where the detector first saw it (a blob box, grown and trailing, is not comparable)
            memory.first_box = det.box
        memory.appearance = self._gate.patch(det.box)
        if memory.enter(self._geometry.zones_of(det.box), frame.pts_s) and memory.event is not None:
            memory.rezone(det, dets, frame, self._config.crop_margin)
        memory.hit(det, dets, frame, self._config.crop_margin, paced)

    # -- uncertain regions -------------------------------------------------------------------------------
    def _resolve_motion(self, frame: Frame) -> None:
        """Look closely, once, at the persistent motion tracks nothing explained."""
        cfg = self._config
        for track in self._tracker.tracks:
            memory = self._memory[track.track_id]
            if track.motion_only:
                memory.enter(self._geometry.zones_of(track.box), frame.pts_s)
            if memory.noise and track.motion_only and frame.pts_s >= memory.next_look_s:
                track.label, memory.noise, memory.resolved = MOTION, False, False  # look again: it may have grown
            if track.label != MOTION or memory.resolved:
                continue
            if (frame.pts_s - track.first_ts < cfg.uncertain_after_s or track.blob_hits < cfg.tracker.min_hits
                    or track.last_hit_ts != frame.pts_s):
                continue  # resolve on a frame where the blob is fresh, so the crop shows the thing
            memory.enter(self._geometry.zones_of(track.box), frame.pts_s)
            self._closer.resolve(track, memory, frame)

    def _check_rider(self, track: Track, memory: TrackMemory, frame: Frame, new_events: list[TrackEvent]
                     ) -> None:
        """A ridden track just emitted: a rider the closer look finds is a track and an event of its own."""
        rider = self._closer.rider(track, memory, frame, self._tracker)
        if rider is not None:
            self._memory[rider.track.track_id] = rider.memory
            self.stats.tracks += 1
            self._observe(rider.memory, rider.track, rider.best, rider.people, frame)
            new_events.append(self._emit(rider.track, rider.memory, frame.pts_s))

    # -- ending, emitting -----------------------------------------------------------------------------------
    def _confirmed(self, track: Track, memory: TrackMemory) -> bool:
        if track.label == OBJECT:
            return False
        if memory.resolved:
            return not memory.noise
        tc = self._config.tracker
        if track.label == MOTION or track.hits < tc.min_hits:
            return False
        return not tc.min_median_score or (median(memory.scores, None) or 0.0) >= tc.min_median_score

    def _ready(self, track: Track, memory: TrackMemory, pts: float) -> bool:
        if track.last_seen_ts - track.first_ts < self._config.tracker.emit_after_s or not self._confirmed(
            track, memory
        ):
            return False
        if self._min_dwell is not None:
            need = self._min_dwell(frozenset(memory.zone_since))
            if need and memory.dwell(track, pts) < need:
                return False
        return True

    def _end(self, tracks: list[Track], out: PipelineOutput, stream_end: bool = False) -> None:
        short = self._config.tracker.min_track_s
        for track in tracks:
            memory = self._memory.pop(track.track_id)
            self._looks.ended(track)
            if memory.event is None:
                left = memory.left(track, self._track_labels, self._config.tracker.min_hits)
                if not (self._confirmed(track, memory) or left):
                    if stream_end and track.label in self._track_labels and memory.best_crop is not None:
                        self.stats.tentative += 1  # seen, too few times: shown, never an event
                        event = event_of(self.camera, track, memory, track.last_seen_ts, self._config)
                        out.tentative.append(event)
                    continue
                if not (stream_end or left) and track.last_seen_ts - track.first_ts < short:
                    continue  # too short: a flicker, dropped silently
                out.new_events.append(self._emit(track, memory, track.last_seen_ts))
            for event in memory.events():
                event.last_ts = track.last_seen_ts
                event.hits = track.hits
                out.ended.append(event)

    def _emit(self, track: Track, memory: TrackMemory, pts: float) -> TrackEvent:
        if memory.event is not None:
            memory.earlier.append(memory.event)
        else:
            self._tracker.join_visit(track, memory.first_box or memory.best_box, memory.best_box, pts)
        event = memory.event = event_of(self.camera, track, memory, pts, self._config)
        memory.best_crop = None
        self._gallery.emitted(memory.looks)
        self.stats.events += 1
        return event
