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
