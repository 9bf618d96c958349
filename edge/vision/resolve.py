"""The closer looks the vision pipeline takes: confirming what the detector found once (looks.py says when),
resolving a persistent motion track nothing explained (the verifier's zoomed look, then the classifier), and
looking for the rider of a bicycle, motorcycle or horse the detector named. Functions of one
camera's `VisionPipeline`, on its thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...shared.protocol import MAX_DETECTIONS
from .capture import Frame
from .crops import cut
from .detect import Region
from .events import TrackEvent, VisionConfig
from .looks import CONFIRM_CLOSER, CONFIRM_ZOOM
from .lowlight import DARK_BRIGHTNESS
from .motion import detection_regions, frame_pixels
from .track import Track, with_tracks

if TYPE_CHECKING:
    from .pipeline import VisionPipeline, _TrackMemory

OTHER_EXPLAINS_MIN = 0.4  # an untracked label explains a motion blob from this score on
OBJECT = "object"  # what untracked labels and motion noise are tracked as; never an event
RIDDEN = frozenset({"bicycle", "motorcycle", "horse"})  # someone is usually on it: look for a rider


def confirm(pipe: VisionPipeline, frame: Frame) -> None:
    """Look again, closer, at the tracks the detector found, has not confirmed yet and did not find on this
    frame, moving or not (a few looks spread over about a second, see looks.py), where the look would
    see them CONFIRM_CLOSER times closer than this frame's looks did."""
    pts = frame.pts_s
    h, w = frame.image.shape[:2]
    tentative = [t for t in pipe.tracks if t.label in pipe._track_labels and t.hits >= 1
                 and not pipe._confirmed(t, pipe._memory[t.track_id])]
    due = [t for t in pipe._looks.confirm_due(tentative, pts) if _closer(pipe, t, pts, w, h)]
    if due:
        pipe._looks.confirming(due, pts)
        pipe.stats.confirm_looks += 1
        _look_around(pipe, frame, due)


def look_closer(pipe: VisionPipeline, frame: Frame) -> None:
    """In a dark scene, motion this frame's look started a track on, explaining nothing of it, looked at once
    more, as closely as a confirmation look, where that is CONFIRM_CLOSER times closer than this frame's look:
    in practice where that look was the whole frame (a stream's first second, a keyframe). A motion-only track
    is left to the tracker until it is resolved (`uncertain_after_s`), so a small person the whole frame
    cannot score would walk out before anything looked at them at the detail that finds them. Only under
    DARK_BRIGHTNESS: the darkness takes the contrast the whole frame's look needs (the parking lot's pedestrian
    scores 0.45-0.57 on the whole frame by day, 0 on every frame at a mean luma of 36, 0.3-0.7 in this look),
    while in a lit scene what the whole frame does not name is mostly what no look names (cars from above, a
    car's shadow darkening the road): there the look costs calls and finds nobody. Once per track, off the
    gate's schedule; a motion frame's own region look is not repeated."""
    if pipe._gate.brightness() >= DARK_BRIGHTNESS:
        return
    pts = frame.pts_s
    h, w = frame.image.shape[:2]
    due = [t for t in pipe.tracks if t.motion_only and t.first_ts == pts and _closer(pipe, t, pts, w, h)]
    if due:
        pipe.stats.closer_looks += 1
        _look_around(pipe, frame, due)


def _look_around(pipe: VisionPipeline, frame: Frame, tracks: list[Track]) -> None:
    """One look, off the gate's schedule, at squares around the tracks, CONFIRM_ZOOM times the detector's input
    at most (squares that overlap merged; too many: the whole frame)."""
    pts = frame.pts_s
    h, w = frame.image.shape[:2]
    # grown to the tracks they touch: a square must not cut through someone (a partial box misleads the tracker)
    boxes = with_tracks([frame_pixels(track.predict(pts), w, h) for track in tracks], pipe.tracks, pipe._last_pts, w, h)
    side = min(zoom_side(pipe._detector, px, CONFIRM_ZOOM) for px in boxes)  # the closest look any of them needs
    pipe._detect(frame, detection_regions(boxes, w, h, side, pipe._config.motion.max_regions), [], paced=False)


def _closer(pipe: VisionPipeline, track: Track, pts: float, w: int, h: int) -> bool:
    """Whether a look around the track (`_look_around`) would see it at least CONFIRM_CLOSER times closer than
    this frame's looks at it (none: yes). A look as close as the one that just missed it is a wasted call."""
    if pipe._looked_pts != pts:
        return True
    px = frame_pixels(track.predict(pts), w, h)
    cx, cy = (px[0] + px[2]) // 2, (px[1] + px[3]) // 2
    seen = [max(r[2] - r[0], r[3] - r[1]) for r in pipe._looked if r[0] <= cx < r[2] and r[1] <= cy < r[3]]
    return not seen or min(seen) >= CONFIRM_CLOSER * zoom_side(pipe._detector, px, CONFIRM_ZOOM)


def resolve(pipe: VisionPipeline, track: Track, memory: _TrackMemory, frame: Frame) -> None:
    """A zoomed look by the verifier (or the detector) and, unless that settles it, the classifier:
    a person, something named, an uncertain person (faint person evidence, nothing else named), or
    noise (no sign of a person, nothing named: no event)."""
    cfg = pipe._config
    image, box = frame.image, track.box
    h, w = image.shape[:2]
    px = (int(box[0] * w), int(box[1] * h), int(np.ceil(box[2] * w)), int(np.ceil(box[3] * h)))
    detector = pipe._stages.verifier or pipe._detector
    region = detection_regions([px], w, h, zoom_side(detector, px), 1)
    dets = [d for d in detector.detect(image, region[0] if region else None)
            if overlaps(d.box, box) and not pipe._geometry.masked(d.box)]
    pipe.stats.verifier_calls += 1
    person = max((d for d in dets if d.label == "person"), key=lambda d: d.score, default=None)
    other = max((d for d in dets if d.label != "person"), key=lambda d: d.score, default=None)
    evidence = max(memory.evidence, person.score if person is not None else 0.0)
    crop, crop_at = cut(image, box, cfg.crop_margin)
    label, score, uncertain = "person", evidence, True
    if person is not None and person.score >= cfg.uncertain_below:
        label, score, uncertain, how, box = "person", person.score, False, "person", person.box
    elif (other is not None and other.score >= OTHER_EXPLAINS_MIN and other.score > evidence
          and not (other.label in RIDDEN and evidence >= cfg.uncertain_min_score)):
        label, score, uncertain, how, box = other.label, other.score, False, "named", other.box
        if label not in pipe._track_labels:  # a "cell phone" is an object: explained, never an event
            label, memory.noise = OBJECT, True
            memory.next_look_s = frame.pts_s + max(cfg.uncertain_after_s, frame.pts_s - track.first_ts)
    else:
        named = None
        classifier = pipe._stages.classifier
        if classifier is not None:
            memory.classification = classifier.classify(crop)
            pipe.stats.classifier_calls += 1
            named = memory.classification.names_other_than_person(cfg.veto_min_prob)
        if named is not None and named[0] != OBJECT:
            (label, score), uncertain, how = named, False, "classified"
        elif evidence >= cfg.uncertain_min_score and named is None and _classifier_may_see_person(memory, cfg):
            how = "uncertain"
        else:
            label, uncertain, how = OBJECT, False, "noise"
            memory.noise = True
            # again after twice as long as it has existed: a wheel entering the picture may be a cyclist
            memory.next_look_s = frame.pts_s + max(cfg.uncertain_after_s, frame.pts_s - track.first_ts)
    track.label = label
    memory.resolved = True
    memory.uncertain = uncertain
    memory.best_score = score
    memory.best_box = box
    memory.best_dets = dets[:MAX_DETECTIONS]
    memory.best_wall_ms = frame.wall_ms
    memory.best_crop = crop, crop_at
    memory.scores.append(score)
    pipe.stats.resolved[how] = pipe.stats.resolved.get(how, 0) + 1


def _classifier_may_see_person(memory: _TrackMemory, cfg: VisionConfig) -> bool:
    """Whether the classifier leaves room for a person on the crop: no classifier, a crop too small for it
    to judge, or at least `uncertain_min_person_mass` of its probability on what people wear and carry."""
    c = memory.classification
    return c is None or not c.reliable or c.categories["person"] >= cfg.uncertain_min_person_mass


def check_rider(pipe: VisionPipeline, track: Track, memory: _TrackMemory, frame: Frame,
                new_events: list[TrackEvent]) -> None:
    if track.label in RIDDEN and not memory.rider_checked:
        memory.rider_checked = True
        found = rider(pipe, track, frame)
        if found is not None:
            new_events.append(found)


def rider(pipe: VisionPipeline, ridden: Track, frame: Frame) -> TrackEvent | None:
    """A person on a bicycle (motorcycle, horse) just emitted: YOLOX often names the bike and misses the
    small rider. A zoomed look at the bike's box; a person there, even faint, is a person event too."""
    from .pipeline import _TrackMemory as TrackMemory  # the pipeline's own record of a track

    cfg = pipe._config
    image, box = frame.image, ridden.predict(frame.pts_s)
    h, w = image.shape[:2]
    detector = pipe._stages.verifier or pipe._detector
    px = (int(box[0] * w), int(box[1] * h), int(np.ceil(box[2] * w)), int(np.ceil(box[3] * h)))
    region = detection_regions([px], w, h, zoom_side(detector, px), 1)
    pipe.stats.verifier_calls += 1
    people = [d for d in detector.detect(image, region[0] if region else None)
              if d.label == "person" and d.score >= cfg.uncertain_min_score and overlaps(d.box, box)]
    if not people:
        return None
    best = max(people, key=lambda d: d.score)
    track = pipe._tracker.start("person", best.box, frame.pts_s)
    track.first_ts = ridden.first_ts
    memory = pipe._memory[track.track_id] = TrackMemory(source="motion", resolved=True,
                                                         uncertain=best.score < cfg.uncertain_below)
    pipe.stats.tracks += 1
    pipe._observe(memory, track, best, people, frame)
    pipe.stats.resolved["rider"] = pipe.stats.resolved.get("rider", 0) + 1
    return pipe._emit(track, memory, frame.pts_s)


def zoom_side(detector: object, px: Region, max_zoom: int = 4) -> int:
    """Side of the square a closer look takes around a blob: 2.5x the blob, at least 1/max_zoom of the model
    input (up to 4x zoom on a speck), at most the input (never shrink what the model could see whole)."""
    size = max(getattr(detector, "input_size", (300, 300)))
    return int(min(max(2.5 * max(px[2] - px[0], px[3] - px[1]), size // max_zoom), size))


def overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Boxes that share at least a third of the smaller one."""
    ix = min(a[2], b[2]) - max(a[0], b[0])
    iy = min(a[3], b[3]) - max(a[1], b[1])
    if ix <= 0 or iy <= 0:
        return False
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return ix * iy >= smaller / 3.0


__all__ = ["OBJECT", "OTHER_EXPLAINS_MIN", "RIDDEN", "check_rider", "confirm", "look_closer", "overlaps", "resolve",
           "rider", "zoom_side"]
