"""Holding a track the detector missed: it stays alive while something still stands in its box and looks much
as it did at the last hit (the tracker's `hold_min_presence` and `hold_max_change`), judged on the motion
gate's patches of the frame and of the empty scene."""

from __future__ import annotations

from collections.abc import Mapping

from .memory import TrackMemory
from .motion import FULL_BRIGHTNESS, MotionGate, patch_difference
from .track import IoUTracker, Track, TrackerConfig

HOLD_EVERY_S = 0.25  # how often a track the detector did not see is checked for presence
# the hold thresholds are grey levels of a scene at least this bright; in a darker one (night) a person
# differs from the wall behind them by proportionally fewer, so the thresholds scale down with the brightness
HOLD_FULL_BRIGHTNESS = FULL_BRIGHTNESS


class PresenceHold:
    """One camera's holds, on its gate and its tracker."""

    def __init__(self, config: TrackerConfig, gate: MotionGate, tracker: IoUTracker) -> None:
        self.config = config
        self.gate = gate
        self.tracker = tracker

    def scale(self) -> float:
        return max(0.1, min(1.0, self.gate.brightness() / HOLD_FULL_BRIGHTNESS))

    def started(self, tracks: list[Track], memory: Mapping[int, TrackMemory]) -> None:
        """New tracks: whether the empty-scene model already looked like each where it was found."""
        if not tracks or self.config.hold_min_presence <= 0.0:
            return
        least = self.scale() * self.config.hold_min_presence
        for track in tracks:
            remembered = memory[track.track_id]
            if remembered.appearance is not None:
                remembered.scene_unknown = patch_difference(remembered.appearance,
                                                            self.gate.scene_patch(track.box)) < least

    def hold(self, pts: float, memory: Mapping[int, TrackMemory]) -> None:
        """Keep the tracks the detector missed alive while something still stands in their box and looks
        much as it did at the last hit."""
        tc = self.config
        if tc.hold_min_presence <= 0.0 or not self.tracker.tracks:
            return
        gate = self.gate
        scale: float | None = None
        for track in self.tracker.tracks:
            # a track lives max_missed_s unseen: checking it a few times a second is plenty
            if track.last_hit_ts == pts or track.motion_only or pts - track.last_seen_ts < HOLD_EVERY_S:
                continue
            remembered = memory[track.track_id]
            if remembered.appearance is None:
                continue
            if scale is None:
                scale = self.scale()
            now = gate.patch(track.box)
            # there since the stream started: the scene model learnt the place with them in it
            if ((remembered.scene_unknown
                 or patch_difference(now, gate.scene_patch(track.box)) >= scale * tc.hold_min_presence)
                    and patch_difference(now, remembered.appearance) <= scale * tc.hold_max_change):
                self.tracker.hold(track, pts)
