"""The edge's closer looks at their edges (issue 31), through the public planner and the resolving of a
motion track: how long a still object waits between looks (one doubling at a time, never past the
survival bound), the person-mass boundary of an uncertain person, the rider exception, and the overlap
that ties a detection to a track."""

from __future__ import annotations

import numpy as np
import pytest
from edgetriage.edge.vision.capture import Frame
from edgetriage.edge.vision.classify import Classification
from edgetriage.edge.vision.detect import Det
from edgetriage.edge.vision.events import TrackEvent, VisionConfig
from edgetriage.edge.vision.looks import LookConfig, LookPlanner
from edgetriage.edge.vision.pipeline import Stages, VisionPipeline
from edgetriage.edge.vision.closer import overlaps
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
