"""The edge's closer looks at their edges (issue 31), through the public planner and the resolving of a
motion track: how long a still object waits between looks (one doubling at a time, never past the
survival bound), the person-mass boundary of an uncertain person, the rider exception, and the overlap
that ties a detection to a track."""

from __future__ import annotations

import pytest
from edgetriage.edge.vision.looks import LookConfig, LookPlanner
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
