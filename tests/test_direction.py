"""The direction of travel the device sends with an event (`Event.direction`): from the track's first box to
its box at emission, in the protocol's words, and not fooled by a box the frame's edge cuts off."""

from __future__ import annotations

from edgetriage.edge.vision.track import direction_of


def test_direction_in_the_protocols_words():
    assert direction_of(None, (0.1, 0.1, 0.2, 0.5)) is None
    assert direction_of((0.40, 0.30, 0.50, 0.60), (0.41, 0.30, 0.51, 0.61)) == "still"
    assert direction_of((0.10, 0.30, 0.20, 0.60), (0.30, 0.30, 0.40, 0.60)) == "right"
    assert direction_of((0.60, 0.30, 0.70, 0.60), (0.40, 0.30, 0.50, 0.60)) == "left"
    assert direction_of((0.45, 0.30, 0.50, 0.45), (0.40, 0.30, 0.55, 0.70)) == "towards the camera"
    assert direction_of((0.40, 0.30, 0.55, 0.70), (0.45, 0.30, 0.50, 0.45)) == "away from the camera"
    # exactly at the thresholds: half a width sideways moves, 30 % growth comes closer
    assert direction_of((0.0, 0.3, 0.2, 0.6), (0.1, 0.3, 0.3, 0.6)) == "right"
    assert direction_of((0.0, 0.3, 0.2, 0.6), (0.099, 0.3, 0.299, 0.6)) == "still"
    assert direction_of((0.4, 0.3, 0.5, 0.5), (0.4, 0.3, 0.5, 0.56)) == "towards the camera"


def test_someone_walking_in_from_under_the_camera_is_not_coming_towards_it():
    # the box is cut off by the bottom edge at first and grows as the body comes into view, while the head
    # goes up the picture: that is walking away, not towards
    first = (0.35, 0.45, 0.60, 1.0)
    last = (0.40, 0.05, 0.55, 0.75)
    assert direction_of(first, last) == "away from the camera"
    # cut off at the bottom the whole time, coming down the picture: towards
    assert direction_of((0.4, 0.2, 0.6, 1.0), (0.4, 0.7, 0.6, 1.0)) == "towards the camera"


def test_replayed_visitors_have_a_direction_and_none_walking_in_is_called_towards(clip_one_by_one):
    from edgetriage.edge.config import EdgeConfig
    from edgetriage.edge.replay import Replayer

    events = Replayer(EdgeConfig()).run(str(clip_one_by_one)).events
    directions = [e.as_dict()["direction"] for e in events if e.event.label == "person"]
    assert len(directions) == 6 and all(d in {"left", "right", "away from the camera", "still"} for d in directions), \
        directions
