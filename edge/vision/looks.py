"""Looks the motion gate does not ask for, and looks it may skip. The gate decides where to look for new
things; it must not decide whether a thing the detector already found gets confirmed, nor whether the people
already in view when a stream starts are seen:

- the start of a stream (agent start, reconnect, a new file): the detector looks at the whole frame every
  `start_every_s` of the first `start_look_s`, so everyone already there is confirmed, moving or not;
- a tentative track (the detector saw it, not yet confirmed) that this frame's look missed or that no look
  saw: looked at again, closer, motion or not, up to `confirm_looks` times spread over `confirm_within_s`
  after the detector first found it, until it is confirmed. The look is a square around it, 2.5x its size,
  scaled to the detector's input but blown up at most CONFIRM_ZOOM (2x), and it is made only where it sees
  the track at least CONFIRM_CLOSER (1.5x) closer than the look that just missed it. The people a whole
  frame loses are the small ones (far away, or a low-resolution camera), and a closer look is what finds
  them again: on his nine frames 0-0.64 s, the shared clips' smallest person (17x33 px in a 480x270 GIF)
  scores 0.45, 0.57, then nothing on the whole frame, 0.81, 0.79, 0.60, -, -, -, 0.64, 0.64, 0.27 at 2x,
  and 0.54, 0.45, 0.76, -, -, -, -, 0.39, 0.53 at 4x (blowing a few pixels up further does not help). Motion on
  a new track is looked at as often as these looks come (`confirm_spacing_s`); then like anything moving;
- a track one hit short of confirmation whose box walked out through a frame edge is not a flicker: the
  pipeline makes it an event when it ends (`edge.vision.track.leaving`, "exit evidence");
- a confirmed object standing still: the longer the looks have found it where it was, the longer the next
  one may wait, doubling from the pipeline's `tracked_interval_s` up to `still_interval_s`, as long as the
  presence check keeps its track alive in between (it is looked at before the track would end unseen). This
  pays for the looks above.

Every setting is in stream seconds, so a 5 fps GIF and a 25 fps camera get the same looks per second of scene.
The start-up and confirmation looks stay off the gate's schedule (the pipeline's "paced" looks): two runs over
the same frames from different first frames (a replay from a few frames later, the demo's second pass) still
look at the same frames, so their crops stay near-identical and a verdict is reused.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field

from ...shared.config import Strict
from .track import Box, Track

STILL_IOU = 0.7  # a box that overlaps its last one this much did not move
CONFIRM_ZOOM = 2  # a confirmation look scales up at most this much (see above)
CONFIRM_CLOSER = 1.5  # ... and is made only when it sees the thing this much closer than the look that missed it
SURVIVE_SHARE = 0.8  # a still object is looked at again before this share of max_missed_s passes unseen


class LookConfig(Strict):
    start_look_s: Annotated[float, Field(ge=0.0, le=60.0)] = 1.0  # 0: no start-up looks
    start_every_s: Annotated[float, Field(ge=0.0, le=10.0)] = 0.2  # 0: every frame of the start
    confirm_looks: Annotated[int, Field(ge=0, le=30)] = 4  # 0: tentative tracks wait for motion
    confirm_within_s: Annotated[float, Field(gt=0.0, le=10.0)] = 1.0
    still_interval_s: Annotated[float, Field(ge=0.0, le=60.0)] = 4.0  # 0: no slower looks at still objects


class LookPlanner:
    """One camera's extra looks. `restart` at every stream start; the pipeline asks `starting`,
    `confirm_due` and `still_due`, and reports what its looks found with `looked` and `ended`."""

    def __init__(self, config: LookConfig, max_missed_s: float):
        self._config = config
        self._survive_s = SURVIVE_SHARE * max_missed_s
        self._start_pts: float | None = None
        self._last_start_pts = float("-inf")
        self._last_confirm_pts = float("-inf")
        self._forced: dict[int, int] = {}  # track id -> confirmation looks made for it
        self._still_since: dict[int, float] = {}  # track id -> pts of the first look that found it where it is
        self._found: dict[int, float] = {}  # track id -> pts the detector first found it (motion may be older)

    def restart(self) -> None:
        self._start_pts = None
        self._last_start_pts = float("-inf")
        self._last_confirm_pts = float("-inf")
        self._forced.clear()
        self._still_since.clear()
        self._found.clear()

    @property
    def confirm_spacing_s(self) -> float:
        """The time between two looks at a tentative track."""
        return self._config.confirm_within_s / (self._config.confirm_looks + 1)

    def starting(self, pts: float) -> bool:
        """Whether this frame is in the stream's first `start_look_s` (the first frame starts the clock)."""
        if self._start_pts is None:
            self._start_pts = pts
        return pts - self._start_pts < self._config.start_look_s - 1e-6

    def start_due(self, pts: float) -> bool:
        """Whether a start-up look at the whole frame is due on this frame of the start (`starting`): the
        last one is `start_every_s` back."""
        return pts - self._last_start_pts >= self._config.start_every_s - 1e-6

    def start_looked(self, pts: float) -> None:
        """The whole frame was looked at during the start (a start-up look, or the gate's own)."""
        self._last_start_pts = pts

    def confirm_due(self, tentative: list[Track], pts: float) -> list[Track]:
        """The tentative tracks to look at closer on this frame: not found on it yet, still within their
        confirmation time, with looks left, and the last confirmation look far enough back that the looks
        spread over `confirm_within_s`."""
        cfg = self._config
        if not cfg.confirm_looks or not tentative:
            return []
        if pts - self._last_confirm_pts < self.confirm_spacing_s - 1e-6:
            return []
        return [t for t in tentative if self.new(t, pts)
                and t.last_hit_ts < pts and self._forced.get(t.track_id, 0) < cfg.confirm_looks]

    def new(self, track: Track, pts: float) -> bool:
        """Whether the detector first found the track at most `confirm_within_s` ago (its confirmation time)."""
        return pts - self._found.get(track.track_id, track.first_ts) <= self._config.confirm_within_s + 1e-6

    def confirming(self, tracks: list[Track], pts: float) -> None:
        """A confirmation look is being made at these tracks."""
        self._last_confirm_pts = pts
        for track in tracks:
            self._forced[track.track_id] = self._forced.get(track.track_id, 0) + 1

    def still_due(self, track: Track, tracked_interval_s: float, pts: float, last_look_pts: float) -> float:
        """How long after the last look a confirmed object moving only in place may wait for the next: a power
        of two times `tracked_interval_s` (so the waits nest on the stream clock) no longer than it has stood
        still, but never so long that its track ends unseen."""
        if self._config.still_interval_s <= tracked_interval_s or tracked_interval_s <= 0.0:
            return tracked_interval_s
        still_s = pts - self._still_since.get(track.track_id, pts)
        doublings = int(math.log2(still_s / tracked_interval_s)) if still_s >= 2 * tracked_interval_s else 0
        backoff = min(tracked_interval_s * 2 ** doublings, self._config.still_interval_s)
        return min(backoff, max(tracked_interval_s, track.last_seen_ts + self._survive_s - last_look_pts))

    def looked(self, track: Track, before: Box | None, pts: float) -> None:
        """A look found the track; `before` is its box at the previous hit (None: it was not tracked yet)."""
        self._found.setdefault(track.track_id, pts)
        if before is None or _iou(before, track.box) < STILL_IOU or track.track_id not in self._still_since:
            self._still_since[track.track_id] = pts

    def ended(self, track: Track) -> None:
        self._forced.pop(track.track_id, None)
        self._still_since.pop(track.track_id, None)
        self._found.pop(track.track_id, None)


def _iou(a: Box, b: Box) -> float:
    ix = min(a[2], b[2]) - max(a[0], b[0])
    iy = min(a[3], b[3]) - max(a[1], b[1])
    if ix <= 0 or iy <= 0:
        return 0.0
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)
