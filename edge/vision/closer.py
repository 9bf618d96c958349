"""The closer looks the vision pipeline takes: confirming what the detector found once (looks.py says when),
resolving a persistent motion track nothing explained (the verifier's zoomed look, then the classifier), and
looking for the rider of a bicycle, motorcycle or horse the detector named.

`CloserLooks` is given what it uses (the detector and the shared stages, the camera's geometry, the look
planner, the counts) and the tracks and memories it is asked about; it says which squares to look at and
fills in what a look found in the track's `TrackMemory`. One camera's, on its thread."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .capture import Frame
from .classify import CropClassifier
from .counts import PipelineStats
from .crops import cut
from .detect import Det, Detector, Region, build_detector, input_side
from .events import VisionConfig
from .looks import CONFIRM_CLOSER, CONFIRM_ZOOM, LookPlanner
from .lowlight import DARK_BRIGHTNESS
from .memory import TrackMemory
from .motion import detection_regions, frame_pixels
from .track import IoUTracker, Track, with_tracks
from .zones import CameraGeometry

OTHER_EXPLAINS_MIN = 0.4  # an untracked label explains a motion blob from this score on
OBJECT = "object"  # what untracked labels and motion noise are tracked as; never an event
RIDDEN = frozenset({"bicycle", "motorcycle", "horse"})  # someone is usually on it: look for a rider


@dataclass
class Stages:
    """The models one device shares between its cameras besides the detector."""

    verifier: Detector | None = None
    classifier: CropClassifier | None = None


def build_stages(config: VisionConfig) -> Stages:
    """Load the verifier and classifier the config asks for (ModelError if a file is missing or damaged)."""
    return Stages(build_detector(config.verifier) if config.verifier is not None else None,
                  CropClassifier(config.classifier) if config.classifier is not None else None)


@dataclass(frozen=True, slots=True)
class Look:
    """A closer look to take: at `squares` of the frame (frame pixels), or at the whole frame (`squares` None,
    as `detection_regions` says when the squares around the tracks would be too many or cover most of it)."""

    squares: list[Region] | None


@dataclass(slots=True)
class Rider:
    """A person found on a ridden track: a track of its own, with its memory and the hit that started it."""

    track: Track
    memory: TrackMemory
    best: Det
    people: list[Det]


class CloserLooks:
    """One camera's closer looks."""

    def __init__(self, config: VisionConfig, detector: Detector, stages: Stages, geometry: CameraGeometry,
                 planner: LookPlanner, stats: PipelineStats) -> None:
        self.config = config
        self.detector = detector
        self.stages = stages
        self.geometry = geometry
        self.planner = planner
        self.stats = stats
        self.input_side = input_side(detector)  # how closely a look sees what it looks at
        self.labels = frozenset(config.track_labels)
        self.looked_pts = float("-inf")  # the frame of the squares in `looked` (frame pixels)
        self.looked: list[Region] = []

    def saw(self, pts: float, squares: list[Region]) -> None:
        """The pipeline's detector looked at these squares of the frame at `pts`."""
        if self.looked_pts != pts:
            self.looked_pts, self.looked = pts, []
        self.looked += squares

    def confirm(self, frame: Frame, tentative: list[Track], tracks: list[Track], last_pts: float
                ) -> Look | None:
        """The closer look at the tracks the detector found, has not confirmed yet (`tentative`)
        and did not find on this frame, moving or not (a few looks spread over about a second, see looks.py),
        where the look would see them CONFIRM_CLOSER times closer than this frame's looks did; None: no
        look."""
        pts = frame.pts_s
        h, w = frame.image.shape[:2]
        due = [t for t in self.planner.confirm_due(tentative, pts) if self._closer(t, pts, w, h)]
        if not due:
            return None
        self.planner.confirming(due, pts)
        self.stats.confirm_looks += 1
        return self._around(frame, due, tracks, last_pts)

    def in_the_dark(self, frame: Frame, tracks: list[Track], brightness: float, last_pts: float
                    ) -> Look | None:
        """In a dark scene, motion this frame's look started a track on, explaining nothing of it, looked at
        once more, as closely as a confirmation look, where that is CONFIRM_CLOSER times closer than this
        frame's look: in practice where that look was the whole frame (a stream's first second, a keyframe). A
        motion-only track is left to the tracker until it is resolved (`uncertain_after_s`), so a small person
        the whole frame cannot score would walk out before anything looked at them at the detail that finds
        them. Only under DARK_BRIGHTNESS: the darkness takes the contrast the whole frame's look needs (the
        parking lot's pedestrian scores 0.45-0.57 on the whole frame by day, 0 on every frame at a mean luma
        of 36, 0.3-0.7 in this look), while in a lit scene what the whole frame does not name is mostly what
        no look names (cars from above, a car's shadow darkening the road): there the look costs calls and
        finds nobody. Once per track, off the gate's schedule; a motion frame's own region look is not
        repeated. None: no look."""
        if brightness >= DARK_BRIGHTNESS:
            return None
        pts = frame.pts_s
        h, w = frame.image.shape[:2]
        due = [t for t in tracks if t.motion_only and t.first_ts == pts and self._closer(t, pts, w, h)]
        if not due:
            return None
        self.stats.closer_looks += 1
        return self._around(frame, due, tracks, last_pts)

    def _around(self, frame: Frame, due: list[Track], tracks: list[Track], last_pts: float) -> Look:
        """A look at squares around the `due` tracks, CONFIRM_ZOOM times the detector's input at most (squares
        that overlap merged; too many, or most of the frame: the whole frame, a look all the same)."""
        pts = frame.pts_s
        h, w = frame.image.shape[:2]
        # grown to the tracks they touch: a square must not cut through someone (a partial box misleads the
        # tracker)
        boxes = with_tracks([frame_pixels(track.predict(pts), w, h) for track in due], tracks, last_pts, w, h)
        side = min(zoom_side(self.input_side, px, CONFIRM_ZOOM) for px in boxes)  # the closest look any needs
        return Look(detection_regions(boxes, w, h, side, self.config.motion.max_regions))

    def _closer(self, track: Track, pts: float, w: int, h: int) -> bool:
        """Whether a look around the track (`_around`) would see it at least CONFIRM_CLOSER times closer than
        this frame's looks at it (none: yes). A look as close as the one that just missed it is a wasted
        call."""
        if self.looked_pts != pts:
            return True
        px = frame_pixels(track.predict(pts), w, h)
        cx, cy = (px[0] + px[2]) // 2, (px[1] + px[3]) // 2
        seen = [max(r[2] - r[0], r[3] - r[1]) for r in self.looked if r[0] <= cx < r[2] and r[1] <= cy < r[3]]
        return not seen or min(seen) >= CONFIRM_CLOSER * zoom_side(self.input_side, px, CONFIRM_ZOOM)

    def _zoomed(self, box: tuple[float, float, float, float], frame: Frame) -> list[Det]:
        """The verifier's (or the detector's) zoomed look at a box of the frame."""
        image = frame.image
        h, w = image.shape[:2]
        detector = self.stages.verifier or self.detector
        px = (int(box[0] * w), int(box[1] * h), int(np.ceil(box[2] * w)), int(np.ceil(box[3] * h)))
        side = zoom_side(input_side(detector), px)
        region = detection_regions([px], w, h, side, 1)
        self.stats.verifier_calls += 1
        return detector.detect(image, region[0] if region else None)

    def resolve(self, track: Track, memory: TrackMemory, frame: Frame) -> None:
        """A zoomed look by the verifier (or the detector) and, unless that settles it, the classifier:
        a person, something named, an uncertain person (faint person evidence, nothing else named), or
        noise (no sign of a person, nothing named: no event)."""
        cfg = self.config
        box = track.box
        found = self._zoomed(box, frame)
        dets = [d for d in found if overlaps(d.box, box) and not self.geometry.masked(d.box)]
        person = max((d for d in dets if d.label == "person"), key=lambda d: d.score, default=None)
        other = max((d for d in dets if d.label != "person"), key=lambda d: d.score, default=None)
        evidence = max(memory.evidence, person.score if person is not None else 0.0)
        crop = cut(frame.image, box, cfg.crop_margin)
        label, score, uncertain = "person", evidence, True
        if person is not None and person.score >= cfg.uncertain_below:
            label, score, uncertain, how, box = "person", person.score, False, "person", person.box
        elif (other is not None and other.score >= OTHER_EXPLAINS_MIN and other.score > evidence
              and not (other.label in RIDDEN and evidence >= cfg.uncertain_min_score)):
            label, score, uncertain, how, box = other.label, other.score, False, "named", other.box
            if label not in self.labels:  # a "cell phone" is an object: explained, never an event
                label, memory.noise = OBJECT, True
                memory.next_look_s = frame.pts_s + max(cfg.uncertain_after_s, frame.pts_s - track.first_ts)
        else:
            named = None
            classifier = self.stages.classifier
            if classifier is not None:
                memory.classification = classifier.classify(crop[0])
                self.stats.classifier_calls += 1
                named = memory.classification.names_other_than_person(cfg.veto_min_prob)
            if named is not None and named[0] != OBJECT:
                (label, score), uncertain, how = named, False, "classified"
            elif evidence >= cfg.uncertain_min_score and named is None and _may_see_person(memory, cfg):
                how = "uncertain"
            else:
                label, uncertain, how = OBJECT, False, "noise"
                memory.noise = True
                # again after twice as long as it has existed: a wheel entering the picture may be a cyclist
                memory.next_look_s = frame.pts_s + max(cfg.uncertain_after_s, frame.pts_s - track.first_ts)
        track.label = label
        memory.resolved = True
        memory.uncertain = uncertain
        memory.keep_best(score, box, dets, frame, crop)
        memory.scores.append(score)
        self.stats.resolved[how] = self.stats.resolved.get(how, 0) + 1

    def rider(self, ridden: Track, memory: TrackMemory, frame: Frame, tracker: IoUTracker) -> Rider | None:
        """A person on a bicycle (motorcycle, horse) just emitted: YOLOX often names the bike and misses the
        small rider. A zoomed look at the bike's box, once per track; a person there, even faint, becomes a
        track of its own (started on `tracker`), resolved as a person."""
        if ridden.label not in RIDDEN or memory.rider_checked:
            return None
        memory.rider_checked = True
        cfg = self.config
        box = ridden.predict(frame.pts_s)
        found = self._zoomed(box, frame)
        people = [d for d in found
                  if d.label == "person" and d.score >= cfg.uncertain_min_score and overlaps(d.box, box)]
        if not people:
            return None
        best = max(people, key=lambda d: d.score)
        track = tracker.start("person", best.box, frame.pts_s)
        track.first_ts = ridden.first_ts
        self.stats.resolved["rider"] = self.stats.resolved.get("rider", 0) + 1
        memory = TrackMemory(source="motion", resolved=True, uncertain=best.score < cfg.uncertain_below)
        return Rider(track, memory, best, people)


def _may_see_person(memory: TrackMemory, cfg: VisionConfig) -> bool:
    """Whether the classifier leaves room for a person on the crop: no classifier, a crop too small for it
    to judge, or at least `uncertain_min_person_mass` of its probability on what people wear and carry."""
    c = memory.classification
    return c is None or not c.reliable or c.categories["person"] >= cfg.uncertain_min_person_mass


def zoom_side(input_side: int, px: Region, max_zoom: int = 4) -> int:
    """Side of the square a closer look takes around a blob: 2.5x the blob, at least 1/max_zoom of the model
    input (up to 4x zoom on a speck), at most the input (never shrink what the model could see whole)."""
    return int(min(max(2.5 * max(px[2] - px[0], px[3] - px[1]), input_side // max_zoom), input_side))


def overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Boxes that share at least a third of the smaller one."""
    ix = min(a[2], b[2]) - max(a[0], b[0])
    iy = min(a[3], b[3]) - max(a[1], b[1])
    if ix <= 0 or iy <= 0:
        return False
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return ix * iy >= smaller / 3.0


__all__ = ["OBJECT", "OTHER_EXPLAINS_MIN", "RIDDEN", "CloserLooks", "Look", "Rider", "Stages", "build_stages",
           "overlaps", "zoom_side"]
