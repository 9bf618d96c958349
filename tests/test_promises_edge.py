"""The edge's closer looks at their edges (issue 31), through the public planner and the resolving of a
motion track: how long a still object waits between looks (one doubling at a time, never past the
survival bound), the person-mass boundary of an uncertain person, the rider exception, and the overlap
that ties a detection to a track."""

from __future__ import annotations

import numpy as np
import pytest
from edgetriage.edge.vision.capture import Frame
from edgetriage.edge.vision.classify import Classification
from edgetriage.edge.vision.closer import overlaps
from edgetriage.edge.vision.detect import Det
from edgetriage.edge.vision.events import TrackEvent, VisionConfig
from edgetriage.edge.vision.looks import LookConfig, LookPlanner
from edgetriage.edge.vision.pipeline import Stages, VisionPipeline
from edgetriage.edge.vision.track import Track

BOX = (0.4, 0.1, 0.6, 0.9)


@pytest.mark.parametrize(("still_s", "wait_s"), [
    (0.0, 0.5), (0.99, 0.5), (1.0, 1.0), (1.99, 1.0), (2.0, 2.0), (3.99, 2.0), (4.0, 4.0), (60.0, 4.0)])
def test_a_still_object_waits_one_doubling_at_a_time_up_to_still_interval(still_s, wait_s):
    planner = LookPlanner(LookConfig(still_interval_s=4.0), max_missed_s=100.0)
    track = Track(1, "person", BOX, 0.0, 0.0, 0.0)
    planner.looked(track, None, 10.0)  # found where it is from pts 10 on
    planner.looked(track, BOX, 10.0 + still_s / 2)  # found again in the same place: still since 10
    track.last_seen_ts = 10.0 + still_s
    assert planner.still_due(track, 0.5, 10.0 + still_s, 10.0 + still_s) == wait_s


def test_a_still_object_is_looked_at_before_its_track_would_end_unseen():
    planner = LookPlanner(LookConfig(still_interval_s=4.0), max_missed_s=2.0)  # looked at within 1.6 s unseen
    track = Track(1, "person", BOX, 0.0, 0.0, 0.0)
    planner.looked(track, None, 0.0)
    track.last_seen_ts = 10.0
    assert planner.still_due(track, 0.5, 10.0, 10.0) == pytest.approx(1.6)
    assert planner.still_due(track, 0.5, 10.0, 11.5) == 0.5  # never under the pipeline's own interval


def test_a_moved_object_starts_waiting_from_the_shortest_interval_again():
    planner = LookPlanner(LookConfig(still_interval_s=4.0), max_missed_s=100.0)
    track = Track(1, "person", BOX, 0.0, 0.0, 0.0)
    planner.looked(track, None, 0.0)
    track.last_seen_ts = 8.0
    assert planner.still_due(track, 0.5, 8.0, 8.0) == 4.0
    moved = (0.1, 0.1, 0.3, 0.9)
    before, track.box = track.box, moved
    planner.looked(track, before, 8.0)  # it moved: still only since now
    assert planner.still_due(track, 0.5, 8.0, 8.0) == 0.5
    assert planner.still_due(track, 0.5, 9.0, 9.0) == 1.0
    planner.ended(track)
    assert planner.still_due(track, 0.5, 20.0, 20.0) == 0.5  # forgotten: as if new
    off = LookPlanner(LookConfig(still_interval_s=0.0), max_missed_s=100.0)
    assert off.still_due(track, 0.5, 20.0, 20.0) == 0.5 and off.still_due(track, 0.0, 20.0, 20.0) == 0.0


# -- resolving a motion track nothing explained ---------------------------------------------------------------
class Sees:
    """A detector of the test's own: the same detections on every look (the decision after the look is what
    is tested here, not the model)."""

    input_size = (320, 320)

    def __init__(self, *found: Det) -> None:
        self.found = list(found)

    def detect(self, image: np.ndarray, region=None) -> list[Det]:
        return list(self.found)


class Weighs:
    """A classifier of the test's own: this much probability mass on what people wear and carry."""

    def __init__(self, person: float) -> None:
        self.person = person

    def classify(self, crop: np.ndarray) -> Classification:
        return Classification([], {"person": self.person, "vehicle": 0.0, "animal": 0.0,
                                   "object": 1.0 - self.person}, 0, True)


def _moving_blob(verifier: Sees, person_mass: float) -> list[TrackEvent]:
    """Three seconds of a dark blob crossing a grey wall at 10 fps that the detector never names: the
    pipeline resolves the motion track with the verifier's look and the classifier."""
    pipe = VisionPipeline("cam", VisionConfig(), Sees(), stages=Stages(verifier, Weighs(person_mass)))
    events: list[TrackEvent] = []
    for i in range(30):
        image = np.full((180, 320, 3), 128, np.uint8)
        image[60:140, 40 + 3 * i:70 + 3 * i] = 30
        events += pipe.process(Frame(i, i / 10, 1000 + 100 * i, image)).new_events
    return events + pipe.finish().new_events


WHOLE = (0.0, 0.0, 1.0, 1.0)
FAINT = Det("person", 0.3, WHOLE)  # faint person evidence: above uncertain_min_score, under uncertain_below


def test_an_uncertain_person_needs_exactly_the_person_mass():
    at = VisionConfig().uncertain_min_person_mass
    assert [(e.label, e.uncertain) for e in _moving_blob(Sees(FAINT), at)] == [("person", True)]
    assert _moving_blob(Sees(FAINT), at - 0.01) == []  # the classifier sees no room for a person: noise


def test_a_bike_with_faint_person_evidence_is_looked_at_as_a_person():
    bike = Det("bicycle", 0.6, WHOLE)
    assert [(e.label, e.uncertain) for e in _moving_blob(Sees(FAINT, bike), 0.5)] == [("person", True)]
    assert [(e.label, e.uncertain) for e in _moving_blob(Sees(bike), 0.5)] == [("bicycle", False)]


def test_a_detection_belongs_to_a_box_from_a_third_of_the_smaller_one():
    assert overlaps((0.0, 0.0, 3.0, 1.0), (2.0, 0.0, 5.0, 1.0))  # exactly a third
    assert not overlaps((0.0, 0.0, 3.0, 1.0), (2.25, 0.0, 5.25, 1.0))
    assert overlaps((0.0, 0.0, 1.0, 3.0), (0.0, 2.0, 1.0, 5.0)) and not overlaps((0, 0, 1, 3), (0, 2.25, 1, 5.25))
    assert overlaps((0.0, 0.0, 4.0, 4.0), (1.0, 1.0, 2.0, 2.0))  # inside a bigger box: all of the smaller
    assert not overlaps((0.0, 0.0, 1.0, 1.0), (1.0, 0.0, 2.0, 1.0))  # touching is not overlapping
    assert not overlaps((0.0, 0.0, 1.0, 1.0), (0.0, 1.0, 1.0, 2.0))


# -- the look planner's other looks: the start of a stream, tentative tracks, what it forgets ----------------
def test_look_settings_default_to_the_documented_looks_and_refuse_values_out_of_range():
    from pydantic import ValidationError

    cfg = LookConfig()
    assert (cfg.start_look_s, cfg.start_every_s, cfg.confirm_looks, cfg.confirm_within_s, cfg.still_interval_s) == (
        1.0, 0.2, 4, 1.0, 4.0)
    edges = {"start_look_s": (0.0, 60.0), "start_every_s": (0.0, 10.0), "confirm_looks": (0, 30),
             "confirm_within_s": (None, 10.0), "still_interval_s": (0.0, 60.0)}
    for name, (low, high) in edges.items():
        assert getattr(LookConfig(**{name: high}), name) == high
        with pytest.raises(ValidationError, match=name):
            LookConfig(**{name: high + 1})
        if low is not None:
            assert getattr(LookConfig(**{name: low}), name) == low
        with pytest.raises(ValidationError, match=name):
            LookConfig(**{name: -1})
    with pytest.raises(ValidationError, match="confirm_within_s"):
        LookConfig(confirm_within_s=0.0)  # looks spread over no time at all
    with pytest.raises(ValidationError, match="confirm_look\\b"):
        LookConfig(confirm_look=3)  # a misspelt key is named, not ignored


def test_start_up_looks_cover_the_first_start_look_s_every_start_every_s():
    planner = LookPlanner(LookConfig(start_look_s=1.0, start_every_s=0.2), max_missed_s=2.0)
    assert planner.starting(5.0) and planner.starting(5.9) and planner.starting(6.0 - 2e-6)
    assert not planner.starting(6.0)  # the first frame started the clock: one second of start
    assert planner.start_due(5.0)  # nothing looked at yet
    planner.start_looked(5.0)
    assert not planner.start_due(5.19) and planner.start_due(5.2)
    planner.restart()  # a reconnect: the start again, from its own first frame
    assert planner.starting(20.0) and planner.starting(20.99) and not planner.starting(21.0)
    assert planner.start_due(20.0)
    off = LookPlanner(LookConfig(start_look_s=0.0, start_every_s=0.0), max_missed_s=2.0)
    assert not off.starting(0.0)
    off.start_looked(0.0)
    assert off.start_due(0.0)  # 0: every frame of the start


def test_a_tentative_track_gets_its_looks_spread_over_its_confirmation_time_then_none():
    planner = LookPlanner(LookConfig(confirm_looks=4, confirm_within_s=1.0), max_missed_s=2.0)
    assert planner.confirm_spacing_s == pytest.approx(0.2)
    track = Track(1, "person", BOX, 10.0, 10.0, 10.0)
    planner.looked(track, None, 10.0)  # the detector found it at 10.0
    assert planner.confirm_due([track], 10.0) == []  # found on this very frame
    assert planner.confirm_due([], 10.1) == []
    made = []
    for pts in (10.1, 10.2, 10.3, 10.4, 10.5, 10.6, 10.7, 10.8, 10.9, 11.0, 11.1):
        due = planner.confirm_due([track], pts)
        if due:
            assert due == [track]
            planner.confirming(due, pts)
            made.append(pts)
    assert made == [10.1, 10.3, 10.5, 10.7]  # four looks, 0.2 s apart, then no more
    other = Track(2, "person", BOX, 10.7, 10.7, 10.7)
    planner.looked(other, None, 10.7)
    assert planner.confirm_due([other], 10.85) == []  # the last look (10.7) is less than the spacing back
    assert planner.confirm_due([other], 10.9) == [other]  # the looks of one track leave the other its own
    assert planner.new(other, 11.7) and not planner.new(other, 11.71)  # its confirmation time, found at 10.7
    planner.ended(track)
    assert planner.confirm_due([track], 10.95) == [track]  # forgotten: its looks (and time) start again
    planner.restart()
    assert planner.confirm_due([other], 10.75) == [other]  # a new stream: no look is recent, no track known


def test_a_tentative_track_never_found_by_a_look_counts_its_time_from_its_first_frame():
    planner = LookPlanner(LookConfig(), max_missed_s=2.0)
    track = Track(1, "person", BOX, 3.0, 3.0, 3.0)  # motion started it at 3.0; no look has found it
    assert planner.new(track, 4.0) and not planner.new(track, 4.01)
    assert planner.confirm_due([track], 4.0) == [track] and planner.confirm_due([track], 4.01) == []
    assert LookPlanner(LookConfig(confirm_looks=0), max_missed_s=2.0).confirm_due([track], 3.5) == []
    hit_now = Track(2, "person", BOX, 3.0, 3.5, 3.5)  # this frame's look found it: no closer look
    assert planner.confirm_due([hit_now], 3.5) == [] and planner.confirm_due([hit_now], 3.6) == [hit_now]


def test_a_still_object_counts_its_stillness_from_the_look_that_found_it_where_it_is():
    wide, narrower, narrowest = (0.0, 0.0, 10.0, 1.0), (0.0, 0.0, 7.0, 1.0), (0.0, 0.0, 6.9, 1.0)
    planner = LookPlanner(LookConfig(still_interval_s=4.0), max_missed_s=100.0)
    track = Track(1, "person", wide, 0.0, 0.0, 0.0)
    planner.looked(track, None, 0.0)
    track.last_seen_ts = 8.0
    track.box = narrower
    planner.looked(track, wide, 8.0)  # IoU 0.7 with its last box, exactly: it did not move
    assert planner.still_due(track, 0.5, 8.0, 8.0) == 4.0
    track.box = narrowest
    planner.looked(track, narrower, 8.0)  # IoU 0.986: still
    assert planner.still_due(track, 0.5, 8.0, 8.0) == 4.0
    track.box = narrower
    planner.looked(track, wide, 8.0)
    track.box = (0.0, 0.0, 6.99, 1.0)
    planner.looked(track, wide, 8.0)  # IoU 0.699: it moved, still only since now
    assert planner.still_due(track, 0.5, 8.0, 8.0) == 0.5
    for before in ((5.0, 5.0, 6.0, 6.0), (6.99, 0.0, 8.0, 1.0), (0.0, 1.0, 6.99, 2.0)):  # apart, or edge to edge
        apart = LookPlanner(LookConfig(still_interval_s=4.0), max_missed_s=100.0)
        apart.looked(track, None, 0.0)
        apart.looked(track, before, 8.0)
        assert apart.still_due(track, 0.5, 8.0, 8.0) == 0.5, before
    first = LookPlanner(LookConfig(still_interval_s=4.0), max_missed_s=100.0)
    first.looked(track, track.box, 2.0)  # a box to compare with, but no look found it before: still from 2.0
    assert first.still_due(track, 0.5, 8.0, 8.0) == 4.0 and first.still_due(track, 0.5, 2.9, 2.9) == 0.5


def test_a_still_object_waits_no_longer_than_tracked_interval_when_the_slower_looks_are_off_or_not_slower():
    planner = LookPlanner(LookConfig(still_interval_s=1.0), max_missed_s=100.0)
    track = Track(1, "person", BOX, 0.0, 0.0, 0.0)
    planner.looked(track, None, 0.0)
    track.last_seen_ts = 30.0
    assert planner.still_due(track, 1.0, 30.0, 30.0) == 1.0  # still_interval_s no longer than the pipeline's own
    assert planner.still_due(track, 0.25, 30.0, 30.0) == 1.0
    assert planner.still_due(track, -1.0, 30.0, 30.0) == -1.0  # a pipeline that looks every frame: as asked
    assert planner.still_due(track, 0.0, 30.0, 30.0) == 0.0


# -- CloserLooks itself: what a zoomed look decides, the rider, the looks it asks for ------------------------
class Records(Sees):
    """A detector of the test's own that also keeps the squares it was asked to look at."""

    def __init__(self, *found: Det) -> None:
        super().__init__(*found)
        self.regions: list = []

    def detect(self, image: np.ndarray, region=None) -> list[Det]:
        self.regions.append(region)
        return list(self.found)


SMALL = (0.45, 0.45, 0.55, 0.55)  # 40x20 px of a 400x200 frame


def _closer(detector: Sees, classifier=None, verifier=None, masks=None, config: VisionConfig | None = None):
    from edgetriage.edge.vision.closer import CloserLooks
    from edgetriage.edge.vision.closer import Stages as Shared
    from edgetriage.edge.vision.counts import PipelineStats
    from edgetriage.edge.vision.zones import CameraGeometry

    config = config or VisionConfig()
    planner = LookPlanner(config.looks, max_missed_s=2.0)
    return CloserLooks(config, detector, Shared(verifier, classifier), CameraGeometry(masks=masks), planner,
                       PipelineStats())


def _frame(pts: float = 5.0, value: int = 128) -> Frame:
    return Frame(50, pts, 1000, np.full((200, 400, 3), value, np.uint8))


def _resolved(*found: Det, classifier=None, box=SMALL, evidence: float = 0.0, masks=None, first_ts: float = 4.0):
    from edgetriage.edge.vision.memory import TrackMemory

    closer = _closer(Sees(*found), classifier=classifier, masks=masks)
    track = Track(7, "motion", box, first_ts, 5.0, 5.0, hits=0)
    memory = TrackMemory(source="motion", evidence=evidence)
    closer.resolve(track, memory, _frame())
    return track, memory, closer.stats


def test_a_zoomed_look_with_a_sure_person_resolves_the_track_as_that_person():
    at = VisionConfig().uncertain_below
    person = Det("person", at, (0.46, 0.44, 0.54, 0.56))
    track, memory, stats = _resolved(person, Det("car", at + 0.2, SMALL))  # a person named surely wins
    assert (track.label, memory.uncertain, memory.resolved, stats.resolved) == ("person", False, True, {"person": 1})
    assert memory.best_box == person.box and list(memory.scores) == [at] and memory.best_dets == [
        person, Det("car", at + 0.2, SMALL)]
    assert stats.verifier_calls == 1 and not memory.noise
    track, memory, stats = _resolved(Det("person", at - 0.01, SMALL))  # under uncertain_below: uncertain
    assert (track.label, memory.uncertain, stats.resolved) == ("person", True, {"uncertain": 1})
    assert list(memory.scores) == [at - 0.01] and memory.best_box == SMALL


def test_a_zoomed_look_naming_something_else_explains_the_motion():
    from edgetriage.edge.vision.closer import OBJECT, OTHER_EXPLAINS_MIN

    car = Det("car", OTHER_EXPLAINS_MIN, (0.44, 0.44, 0.56, 0.56))
    track, memory, stats = _resolved(car, Det("person", 0.2, SMALL))
    assert (track.label, memory.uncertain, stats.resolved, memory.best_box) == ("car", False, {"named": 1}, car.box)
    assert list(memory.scores) == [OTHER_EXPLAINS_MIN] and not memory.noise
    track, memory, stats = _resolved(Det("car", OTHER_EXPLAINS_MIN - 0.01, SMALL), Det("person", 0.2, SMALL))
    assert (track.label, stats.resolved) == ("person", {"uncertain": 1})  # too faint to explain anything
    track, _, stats = _resolved(Det("car", 0.45, SMALL), evidence=0.45)  # no more than the person evidence
    assert (track.label, stats.resolved) == ("person", {"uncertain": 1})
    track, memory, stats = _resolved(Det("cell phone", 0.9, SMALL), first_ts=1.0)  # explained, never an event
    assert (track.label, memory.noise, stats.resolved) == (OBJECT, True, {"named": 1})
    assert memory.next_look_s == 5.0 + 4.0  # looked at again after as long as it has existed
    _, memory, _ = _resolved(Det("cell phone", 0.9, SMALL), first_ts=4.5)
    assert memory.next_look_s == 5.0 + VisionConfig().uncertain_after_s  # at least uncertain_after_s later


def test_what_a_zoomed_look_ignores_detections_apart_from_the_track_or_masked():
    from edgetriage.edge.vision.closer import OBJECT

    apart = Det("person", 0.9, (0.0, 0.0, 0.1, 0.1))
    track, memory, stats = _resolved(apart)  # nothing of the track's own: noise
    assert (track.label, memory.noise, stats.resolved) == (OBJECT, True, {"noise": 1})
    mask = [(0.4, 0.4), (0.6, 0.4), (0.6, 0.6), (0.4, 0.6)]
    track, memory, stats = _resolved(Det("person", 0.9, SMALL), masks=[mask])
    assert (track.label, stats.resolved) == (OBJECT, {"noise": 1})
    track, memory, stats = _resolved(evidence=VisionConfig().uncertain_min_score)  # earlier faint evidence
    assert (track.label, memory.uncertain, list(memory.scores)) == ("person", True, [0.1])
    track, memory, stats = _resolved(evidence=VisionConfig().uncertain_min_score - 0.01, first_ts=1.0)
    assert (track.label, memory.noise, stats.resolved, memory.next_look_s) == (OBJECT, True, {"noise": 1}, 9.0)
    _, memory, _ = _resolved(first_ts=4.5)
    assert memory.next_look_s == 6.0


def test_the_classifier_names_what_the_zoomed_look_did_not():
    from edgetriage.edge.vision.closer import OBJECT

    class Car(Weighs):
        def classify(self, crop: np.ndarray) -> Classification:
            return Classification([], {"person": 0.1, "vehicle": 0.8, "animal": 0.0, "object": 0.1}, 500, True)

    track, memory, stats = _resolved(Det("person", 0.3, SMALL), classifier=Car(0.0))
    assert (track.label, memory.uncertain, stats.resolved, stats.classifier_calls) == (
        "vehicle", False, {"classified": 1}, 1)
    assert list(memory.scores) == [0.8] and memory.classification is not None
    track, memory, stats = _resolved(Det("person", 0.3, SMALL), classifier=Weighs(0.0))  # "object": no name
    assert (track.label, memory.noise, stats.resolved) == (OBJECT, True, {"noise": 1})
    track, _, stats = _resolved(Det("person", 0.3, SMALL), classifier=Weighs(0.5))
    assert (track.label, stats.resolved, stats.classifier_calls) == ("person", {"uncertain": 1}, 1)

    class TooSmall(Weighs):
        def classify(self, crop: np.ndarray) -> Classification:
            return Classification([], {"person": 0.0, "vehicle": 0.0, "animal": 0.0, "object": 1.0}, 0, False)

    track, _, stats = _resolved(Det("person", 0.3, SMALL), classifier=TooSmall(0.0))  # a crop too small to judge
    assert (track.label, stats.resolved) == ("person", {"uncertain": 1})


def test_the_zoomed_look_is_the_verifier_s_at_two_and_a_half_times_the_box():
    from edgetriage.edge.vision.memory import TrackMemory

    detector, verifier = Records(), Records(Det("person", 0.9, SMALL))
    closer = _closer(detector, verifier=verifier)
    closer.resolve(Track(7, "motion", SMALL, 4.0, 5.0, 5.0, hits=0), TrackMemory(source="motion"), _frame())
    assert detector.regions == [] and len(verifier.regions) == 1 and closer.stats.verifier_calls == 1
    x1, y1, x2, y2 = verifier.regions[0]
    assert x2 - x1 == y2 - y1 and 100 <= x2 - x1 <= 102  # 2.5 x its 40 px (and room for the box around it)
    assert x1 <= 180 and y1 <= 90 and x2 >= 220 and y2 >= 110
    alone = Records()
    _closer(alone).resolve(Track(7, "motion", SMALL, 4.0, 5.0, 5.0, hits=0), TrackMemory(source="motion"), _frame())
    assert alone.regions == [verifier.regions[0]]  # no verifier: the detector looks the same way
    whole = Records()
    _closer(whole).resolve(Track(7, "motion", (0.0, 0.0, 1.0, 1.0), 4.0, 5.0, 5.0, hits=0),
                           TrackMemory(source="motion"), _frame())
    assert whole.regions == [None]  # a box the size of the frame: the whole frame


def test_a_bike_s_rider_becomes_a_person_track_of_its_own_once():
    from edgetriage.edge.vision.memory import TrackMemory
    from edgetriage.edge.vision.track import IoUTracker, TrackerConfig

    cfg = VisionConfig()
    faint, sure = Det("person", cfg.uncertain_min_score, SMALL), Det("person", 0.6, (0.46, 0.4, 0.54, 0.55))
    closer = _closer(Sees(faint, sure, Det("person", 0.9, (0.0, 0.0, 0.1, 0.1)), Det("bicycle", 0.9, SMALL)))
    tracker = IoUTracker(TrackerConfig(), first_id=20)
    bike = Track(3, "bicycle", SMALL, 2.0, 5.0, 5.0)
    memory = TrackMemory()
    rider = closer.rider(bike, memory, _frame(), tracker)
    assert rider is not None and rider.best == sure and rider.people == [faint, sure]
    assert (rider.track.label, rider.track.box, rider.track.first_ts, rider.track.track_id) == (
        "person", sure.box, 2.0, 20)
    assert tracker.tracks == [rider.track] and closer.stats.resolved == {"rider": 1}
    assert (rider.memory.source, rider.memory.resolved, rider.memory.uncertain) == ("motion", True, False)
    assert memory.rider_checked and closer.rider(bike, memory, _frame(), tracker) is None  # once per track
    assert closer.stats.verifier_calls == 1
    unsure = _closer(Sees(Det("person", cfg.uncertain_below - 0.01, SMALL))).rider(
        Track(3, "horse", SMALL, 2.0, 5.0, 5.0), TrackMemory(), _frame(), IoUTracker(TrackerConfig()))
    assert unsure is not None and unsure.memory.uncertain
    nobody = _closer(Sees(Det("person", cfg.uncertain_min_score - 0.01, SMALL)))
    assert nobody.rider(Track(3, "motorcycle", SMALL, 2.0, 5.0, 5.0), TrackMemory(), _frame(),
                        IoUTracker(TrackerConfig())) is None
    for ridden in ("bicycle", "motorcycle", "horse"):
        found = _closer(Sees(sure)).rider(Track(3, ridden, SMALL, 2.0, 5.0, 5.0), TrackMemory(), _frame(),
                                          IoUTracker(TrackerConfig()))
        assert found is not None and found.best == sure, ridden
    car = _closer(Sees(sure))
    assert car.rider(Track(3, "car", SMALL, 2.0, 5.0, 5.0), TrackMemory(), _frame(), IoUTracker(TrackerConfig())) \
        is None and car.stats.verifier_calls == 0  # no look for a rider of a car


def test_a_tentative_track_is_looked_at_closer_only_where_the_look_sees_it_closer():
    detector = Records()
    closer = _closer(detector)
    track = Track(1, "person", SMALL, 5.0, 5.0, 5.0)
    closer.planner.looked(track, None, 5.0)
    frame = _frame(5.2)
    closer.saw(5.2, [(0, 0, 400, 200)])  # this frame's look was the whole frame
    look = closer.confirm(frame, [track], [track], 5.0)
    assert look is not None and look.squares is not None and len(look.squares) == 1
    assert closer.stats.confirm_looks == 1
    x1, y1, x2, y2 = look.squares[0]
    assert x2 - x1 == y2 - y1 == 160 and x1 <= 180 and x2 >= 220  # the detector's 320 px input, zoomed 2x at most
    assert closer.confirm(_frame(5.3), [track], [track], 5.2) is None  # the next one is confirm_spacing_s later
    closer.saw(5.4, [(0, 0, 400, 200)])
    assert closer.confirm(_frame(5.4), [track], [track], 5.2) is not None and closer.stats.confirm_looks == 2
    near = _closer(Records())
    near.planner.looked(track, None, 5.0)
    near.saw(5.2, [(100, 20, 300, 180)])  # 200 px around it: a 160 px look is not 1.5x closer
    assert near.confirm(frame, [track], [track], 5.0) is None and near.stats.confirm_looks == 0
    near.saw(5.2, [(0, 0, 240, 240)])  # looks add up on one frame: the 200 px one is still the closest
    assert near.confirm(frame, [track], [track], 5.0) is None
    far = _closer(Records())
    far.planner.looked(track, None, 5.0)
    far.saw(5.2, [(0, 0, 240, 240)])  # 240 px = 1.5 x 160: closer enough
    assert far.confirm(frame, [track], [track], 5.0) is not None
    other = _closer(Records())
    other.planner.looked(track, None, 5.0)
    other.saw(5.1, [(180, 90, 220, 110)])  # a look of another frame says nothing of this one
    other.saw(5.2, [(0, 0, 100, 100)])  # this frame's look did not cover it
    assert other.confirm(frame, [track], [track], 5.0) is not None


def test_new_motion_in_the_dark_gets_one_closer_look_on_its_first_frame():
    from edgetriage.edge.vision.lowlight import DARK_BRIGHTNESS

    closer = _closer(Records())
    blob = Track(4, "motion", SMALL, 5.0, 5.0, 5.0, hits=0)
    frame = _frame(5.0, 20)
    closer.saw(5.0, [(0, 0, 400, 200)])
    assert closer.in_the_dark(frame, [blob], DARK_BRIGHTNESS, 4.9) is None  # not dark
    look = closer.in_the_dark(frame, [blob], DARK_BRIGHTNESS - 0.1, 4.9)
    assert look is not None and look.squares is not None and len(look.squares) == 1
    assert closer.stats.closer_looks == 1
    assert closer.in_the_dark(_frame(5.1, 20), [blob], 10.0, 5.0) is None  # not on its first frame
    detected = Track(5, "person", SMALL, 5.0, 5.0, 5.0)
    assert closer.in_the_dark(frame, [detected], 10.0, 4.9) is None  # a detection explained it
    assert closer.stats.closer_looks == 1


def test_a_closer_look_s_square_is_two_and_a_half_times_the_blob_within_the_zoom():
    from edgetriage.edge.vision.closer import zoom_side

    assert zoom_side(320, (0, 0, 40, 20)) == 100
    assert zoom_side(320, (0, 0, 10, 30)) == 80  # a speck: a quarter of the input at least (4x zoom)
    assert zoom_side(320, (0, 0, 10, 10), 2) == 160
    assert zoom_side(320, (0, 0, 200, 20)) == 320  # never more than the input


def test_stages_are_built_only_for_the_models_the_config_names():
    from edgetriage.edge.vision.classify import CropClassifier
    from edgetriage.edge.vision.closer import build_stages

    stages = build_stages(VisionConfig(classifier=None))
    assert stages.verifier is None and stages.classifier is None
    stages = build_stages(VisionConfig())  # the default: the classifier, no verifier
    assert stages.verifier is None and isinstance(stages.classifier, CropClassifier)


def test_one_confirmation_look_is_one_look():
    planner = LookPlanner(LookConfig(confirm_looks=1), max_missed_s=2.0)
    track = Track(1, "person", BOX, 0.0, 0.0, 0.0)
    assert planner.confirm_due([track], 0.5) == [track]
    planner.confirming([track], 0.5)
    assert planner.confirm_due([track], 0.9) == []  # its one look made


def test_stillness_is_judged_by_the_boxes_overlap_wherever_they_are():
    planner = LookPlanner(LookConfig(still_interval_s=4.0), max_missed_s=100.0)
    last, now = (0.1, 0.2, 0.6, 0.3), (0.1, 0.2, 0.45, 0.3)  # 0.5 x 0.1 and 0.35 x 0.1: IoU 0.7
    track = Track(1, "person", last, 0.0, 0.0, 0.0)
    planner.looked(track, None, 0.0)
    track.box, track.last_seen_ts = now, 8.0
    planner.looked(track, last, 8.0)
    assert planner.still_due(track, 0.5, 8.0, 8.0) == 4.0
    track.box = (0.1, 0.2, 0.44, 0.3)  # IoU 0.68: moved
    planner.looked(track, last, 8.0)
    assert planner.still_due(track, 0.5, 8.0, 8.0) == 0.5


def test_a_pipeline_without_a_verifier_or_classifier_resolves_motion_with_its_detector():
    class Closer(Sees):
        """Names the faint person only on a closer look (a region), never on the whole frame."""

        def detect(self, image: np.ndarray, region=None) -> list[Det]:
            return [FAINT] if region is not None else []

    pipe = VisionPipeline("cam", VisionConfig(), Closer())  # no stages given: the detector looks closer
    events: list[TrackEvent] = []
    for i in range(30):
        image = np.full((180, 320, 3), 128, np.uint8)
        image[60:140, 40 + 3 * i:70 + 3 * i] = 30
        events += pipe.process(Frame(i, i / 10, 1000 + 100 * i, image)).new_events
    events += pipe.finish().new_events
    assert [(e.label, e.uncertain) for e in events] == [("person", True)]
    assert pipe.stats.classifier_calls == 0 and pipe.stats.verifier_calls >= 1
    assert pipe.stats.resolved == {"uncertain": 1}


UPPER_RIGHT = (0.6, 0.2, 0.7, 0.4)  # 240-280 x 40-80 px of a 400x200 frame: its centre (260, 60)
LOWER_LEFT = (0.1, 0.7, 0.2, 0.9)  # 40-80 x 140-180 px: its centre (60, 160)


@pytest.mark.parametrize(("box", "looked", "closer_look"), [
    (UPPER_RIGHT, (259, 59, 459, 259), False),  # a 200 px look saw its centre: 160 px is not 1.5x closer
    (UPPER_RIGHT, (61, -139, 261, 61), False),  # its centre in the look's last pixel
    (LOWER_LEFT, (59, 100, 259, 300), False),
    (UPPER_RIGHT, (260, 59, 460, 259), False),  # the look's first column is the centre's
    (UPPER_RIGHT, (259, 60, 459, 260), False),  # ... its first row
    (UPPER_RIGHT, (60, 59, 260, 259), True),  # the centre one past the look's last column: not seen
    (UPPER_RIGHT, (259, -140, 459, 60), True),  # ... one past its last row
    (UPPER_RIGHT, (259, 100, 459, 300), True),  # the centre's column, not its row
    (UPPER_RIGHT, (100, 59, 200, 259), True),  # its row, not its column
    (UPPER_RIGHT, (259, 59, 359, 309), True),  # a 100x250 look (a portrait frame): 250 px, 1.5x of 160 and more
    (UPPER_RIGHT, (259, 59, 499, 299), True),  # 240 px: exactly 1.5x as far, closer enough
])
def test_a_confirmation_look_is_made_only_where_this_frame_s_looks_saw_the_centre_less_closely(box, looked,
                                                                                            closer_look):
    closer = _closer(Records())
    track = Track(1, "person", box, 5.0, 5.0, 5.0)
    closer.planner.looked(track, None, 5.0)
    closer.saw(5.2, [looked])
    assert (closer.confirm(_frame(5.2), [track], [track], 5.0) is not None) is closer_look


def test_a_confirmation_look_is_made_when_nothing_looked_at_this_frame():
    closer = _closer(Records())
    track = Track(1, "person", UPPER_RIGHT, 5.0, 5.0, 5.0)
    closer.planner.looked(track, None, 5.0)
    closer.saw(5.0, [(0, 0, 400, 200)])  # a look of an earlier frame
    assert closer.confirm(_frame(5.2), [track], [track], 5.0) is not None


def test_the_zoomed_look_is_around_the_box_wherever_it_is_and_every_look_is_counted():
    from edgetriage.edge.vision.memory import TrackMemory

    verifier = Records()
    closer = _closer(Records(), verifier=verifier)
    for box in (UPPER_RIGHT, LOWER_LEFT):
        closer.resolve(Track(7, "motion", box, 4.0, 5.0, 5.0, hits=0), TrackMemory(source="motion"), _frame())
    (ux1, uy1, ux2, uy2), (lx1, ly1, lx2, ly2) = verifier.regions
    assert 100 <= ux2 - ux1 == uy2 - uy1 <= 102 and ux1 <= 240 and uy1 <= 40 and ux2 >= 280 and uy2 >= 80
    assert 100 <= lx2 - lx1 == ly2 - ly1 <= 102 and lx1 <= 40 and ly1 <= 140 and lx2 >= 80 and ly2 >= 180
    assert closer.stats.verifier_calls == 2


def test_the_best_of_several_detections_decides():
    at = VisionConfig().uncertain_below
    track, memory, _ = _resolved(Det("person", at - 0.2, SMALL), Det("person", at, SMALL), Det("person", 0.2, SMALL))
    assert (track.label, memory.uncertain, list(memory.scores)) == ("person", False, [at])
    track, memory, _ = _resolved(Det("dog", 0.5, SMALL), Det("car", 0.8, SMALL), Det("cat", 0.6, SMALL))
    assert (track.label, list(memory.scores)) == ("car", [0.8])


def test_every_look_in_the_dark_is_counted():
    closer = _closer(Records())
    for n, pts in enumerate((5.0, 6.0), 1):
        blob = Track(n, "motion", SMALL, pts, pts, pts, hits=0)
        closer.saw(pts, [(0, 0, 400, 200)])
        assert closer.in_the_dark(_frame(pts, 20), [blob], 10.0, pts - 0.1) is not None
    assert closer.stats.closer_looks == 2


def test_the_rider_exception_holds_from_exactly_the_faint_evidence_threshold():
    at = VisionConfig().uncertain_min_score
    track, memory, stats = _resolved(Det("person", at, SMALL), Det("bicycle", 0.6, SMALL))
    assert (track.label, memory.uncertain, stats.resolved) == ("person", True, {"uncertain": 1})
    track, memory, stats = _resolved(Det("bicycle", 0.6, SMALL), evidence=at - 0.01)
    assert (track.label, memory.uncertain, stats.resolved) == ("bicycle", False, {"named": 1})


def test_the_classifier_is_shown_the_crop_and_every_call_is_counted():
    from edgetriage.edge.vision.memory import TrackMemory

    shown = []

    class Looks(Weighs):
        def classify(self, crop: np.ndarray) -> Classification:
            shown.append(crop)
            return super().classify(crop)

    closer = _closer(Sees(), classifier=Looks(0.5))
    for n in (1, 2):
        track, memory = Track(n, "motion", SMALL, 4.0, 5.0, 5.0, hits=0), TrackMemory(source="motion")
        closer.resolve(track, memory, _frame())
        assert memory.uncertain is False and memory.noise  # nothing there: noise, not an uncertain person
    assert closer.stats.classifier_calls == 2 and closer.stats.resolved == {"noise": 2}
    assert all(isinstance(c, np.ndarray) and c.ndim == 3 and c.shape[2] == 3 and c.shape[0] >= 20 for c in shown)


def test_overlap_is_a_third_of_the_smaller_box_wherever_the_boxes_are_and_in_either_order():
    small, big = (1.0, 3.5, 4.0, 4.5), (3.0, 3.5, 9.0, 9.5)  # 3x1 and 6x6: they share 1x1, a third of the small
    assert overlaps(small, big) and overlaps(big, small)
    just_off = (3.01, 3.5, 9.0, 9.5)  # 0.99x1: just under a third
    assert not overlaps(small, just_off) and not overlaps(just_off, small)


def test_a_tall_speck_s_closer_look_is_two_and_a_half_times_its_height():
    from edgetriage.edge.vision.closer import zoom_side

    assert zoom_side(320, (5, 10, 15, 110)) == 250


def test_riders_are_counted_and_a_rider_scoring_exactly_uncertain_below_is_sure():
    from edgetriage.edge.vision.memory import TrackMemory
    from edgetriage.edge.vision.track import IoUTracker, TrackerConfig

    at = VisionConfig().uncertain_below
    closer = _closer(Sees(Det("person", at, SMALL)))
    tracker = IoUTracker(TrackerConfig())
    riders = [closer.rider(Track(n, "bicycle", SMALL, 2.0, 5.0, 5.0), TrackMemory(), _frame(), tracker) for n in (1, 2)]
    assert all(r is not None and not r.memory.uncertain for r in riders)
    assert closer.stats.resolved == {"rider": 2}
