"""Motion gating: decide per frame whether the detector needs to look, and where, by differencing a small
blurred grey copy of the frame against a slowly adapting background. Most camera frames show nothing new;
skipping them is what lets a Raspberry Pi keep up. Noise is ignored three ways: a grey-level threshold, a
minimum blob area, and masks (polygons of the camera's picture where motion never counts).

Where something moves, `detection_regions` turns the moving blobs into a few squares the detector looks at
scaled up to its input, as Frigate does: a person far away is a few pixels in a whole 16:9 frame squeezed
into 416x416, and many more in a square cut around them.

The gate also keeps that small grey frame and a model of the empty scene (which never learns what stands
under a tracked box), so the pipeline can ask cheaply whether someone is still in a box the detector missed
(`patch`, `scene_patch`, `presence`, `patch_difference`): that keeps a person who stands still one track.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated

import cv2
import numpy as np
from pydantic import Field

from ...shared.config import Strict
from .capture import Frame
from .detect import Region

PATCH_SIZE = (12, 24)  # (w, h) of appearance patches: enough to tell a person from the wall behind them
ALPHA_PERIOD_S = 0.1  # the adaptation rates are per this much stream time (one frame at 10 fps), whatever the rate
# the threshold is a grey-level change in a scene at least this bright; in a darker one (night) the same thing
# moving changes proportionally fewer levels, so the threshold scales down with it, as far as the noise allows:
FULL_BRIGHTNESS = 100.0
# never under this many standard deviations of the frame's measured noise (`MotionGate.noise`): a Gaussian
# pixel passes 5 sigma once in 1.7 million, so the ~14,000 pixels of the gate's working frame pass
# `min_area_frac` of them by noise practically never, whatever the sensor, its gain or the frame size
NOISE_SIGMAS = 5.0
# ... nor under this many grey levels: a uint8 picture is rounded to 1, the background model is not
MIN_LEVELS = 2.0
# the noise is measured on every NOISE_STEP-th pixel of every NOISE_STEP-th row: the blur makes neighbours
# alike anyway, and the middle of a quarter of the pixels (partitioned, not sorted) takes ~12 us a frame where
# np.median of all 14,400 takes ~280 us
NOISE_STEP = 2
GAUSS_MAD = 0.6745  # median |x| of a zero-mean Gaussian, in standard deviations


class MotionConfig(Strict):
    downscale_width: Annotated[int, Field(ge=32, le=1920)] = 160
    threshold: Annotated[int, Field(ge=1, le=255)] = 25  # grey-level change that counts as motion
    min_area_frac: Annotated[float, Field(ge=0.0, le=1.0)] = 0.002  # moving share of the frame that counts
    # the detector looks at the whole frame at least this often: someone who appeared without moving
    # (or moved only where a mask hides it) is found within this long
    keyframe_interval_s: Annotated[float, Field(gt=0.0)] = 5.0
    # adaptation per 0.1 s of stream time (ALPHA_PERIOD_S), so a 5 fps GIF and a 25 fps camera forget alike
    background_alpha: Annotated[float, Field(gt=0.0, le=1.0)] = 0.05  # moving background
    scene_alpha: Annotated[float, Field(gt=0.0, le=1.0)] = 0.01  # empty-scene model, never under tracks
    # a blob over this share of the frame is a lighting change or a camera move, not an object: the
    # detector looks at the whole frame and no motion track starts
    max_blob_frac: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5
    # detection regions (see detection_regions): squares at least region_min_side frame pixels (0: the
    # detector's input size), at most max_regions of them, else the whole frame is looked at
    region_min_side: Annotated[int, Field(ge=0, le=4096)] = 0
    max_regions: Annotated[int, Field(ge=0, le=16)] = 2


@dataclass(slots=True)
class MotionResult:
    run_detector: bool
    reason: str  # "first" | "motion" | "keyframe" | "still"
    regions: list[tuple[int, int, int, int]] = field(default_factory=list)  # x1, y1, x2, y2 full-frame pixels


class MotionGate:
    """Stateful per camera; feed it every frame in order. Buffers are allocated once per frame size."""

    def __init__(self, config: MotionConfig, mask: Callable[[int, int], np.ndarray | None] | None = None):
        """`mask(width, height)` gives a uint8 image of the gate's working size, 0 where motion is ignored
        (zones.CameraGeometry.motion_mask); it is asked once per frame size."""
        self._config = config
        self._mask_of = mask
        self._shape: tuple[int, ...] | None = None
        self._last_pts = float("-inf")
        self._last_run_pts = float("-inf")
        self._kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (3, 3))
        self._periods = 1.0  # stream time since the last frame, in ALPHA_PERIOD_S
        self.moving_frac = 0.0  # share of the last frame that moved, for diagnostics

    def _allocate(self, shape: tuple[int, ...]) -> None:
        height, width = shape[:2]
        small_w = min(self._config.downscale_width, width)
        small_h = max(1, round(height * small_w / width))
        self._shape = shape
        self._size = (small_w, small_h)
        self._scale = (width / small_w, height / small_h)
        self._full_grey = np.empty((height, width), np.uint8)
        # Halve with anti-aliasing (pyrDown) while the frame is over twice the target, then interpolate:
        # 7x cheaper than one INTER_AREA resize at a fractional ratio, and as clean.
        self._pyramid: list[np.ndarray] = []
        w, h = width, height
        while w >= 2 * small_w and h >= 2 * small_h:
            w, h = (w + 1) // 2, (h + 1) // 2
            self._pyramid.append(np.empty((h, w), np.uint8))
        self._grey = np.empty((small_h, small_w), np.uint8)
        self._blur = np.empty((small_h, small_w), np.uint8)
        self._background = np.empty((small_h, small_w), np.float32)
        self._background_u8 = np.empty((small_h, small_w), np.uint8)
        self._scene = np.empty((small_h, small_w), np.float32)
        self._scene_mask = np.empty((small_h, small_w), np.uint8)
        self._diff = np.empty((small_h, small_w), np.uint8)
        sampled = ((small_h + NOISE_STEP - 1) // NOISE_STEP, (small_w + NOISE_STEP - 1) // NOISE_STEP)
        self._blur_f = np.empty(sampled, np.float32)
        self._noise_diff = np.empty(sampled, np.float32)
        self._mask = np.empty((small_h, small_w), np.uint8)
        self._min_pixels = max(1, round(self._config.min_area_frac * small_w * small_h))
        self._ignore = self._mask_of(small_w, small_h) if self._mask_of is not None else None

    def check(self, frame: Frame) -> MotionResult:
        image = frame.image
        restart = image.shape != self._shape or frame.pts_s < self._last_pts  # new camera mode or rewound stream
        if restart:
            self._allocate(image.shape)
        else:  # a frame 0.2 s after the last one adapts as much as two 0.1 s apart (capped: a stall is not hours)
            self._periods = min(max(frame.pts_s - self._last_pts, 0.0) / ALPHA_PERIOD_S, 50.0)
        self._last_pts = frame.pts_s
        self._downscale(image)
        cv2.GaussianBlur(self._grey, (5, 5), 0, dst=self._blur)
        if restart:
            self._background[:] = self._blur
            self._scene[:] = self._blur
            self._last_run_pts = frame.pts_s
            self.moving_frac = 0.0
            return MotionResult(True, "first")

        cv2.convertScaleAbs(self._background, dst=self._background_u8)
        cv2.absdiff(self._blur, self._background_u8, dst=self._diff)
        cv2.threshold(self._diff, self.threshold(), 255, cv2.THRESH_BINARY, dst=self._mask)
        if self._ignore is not None:
            cv2.bitwise_and(self._mask, self._ignore, dst=self._mask)
        moving = cv2.countNonZero(self._mask)
        cv2.accumulateWeighted(self._blur, self._background, self._rate(self._config.background_alpha))
        self.moving_frac = moving / self._mask.size
        if moving >= self._min_pixels:
            self._last_run_pts = frame.pts_s
            return MotionResult(True, "motion", self._regions())
        if frame.pts_s - self._last_run_pts >= self._config.keyframe_interval_s - 1e-6:
            self._last_run_pts = frame.pts_s
            return MotionResult(True, "keyframe")
        return MotionResult(False, "still")

    def threshold(self) -> float:
        """The grey-level change that counts as motion on the last checked frame: the configured one scaled
        down with the scene's brightness (a dim person changes few levels), but at least NOISE_SIGMAS times
        the measured noise (and MIN_LEVELS), up to the configured threshold again: a dark scene never asks more
        change of a thing than a well-lit one. A fixed floor would have to guess the noise, which depends on the
        sensor, its gain, the compression and how much the gate's downscale averages away (a 1080p frame
        shrunk 12x keeps a quarter of the noise a 480-wide one shrunk 3x keeps); measured, a dark scene
        from a clean sensor keeps a dim person's motion, and a noisy one still ignores its noise."""
        full = float(self._config.threshold)
        signal = full * min(1.0, self.brightness() / FULL_BRIGHTNESS)
        if signal >= full:  # a well-lit scene: the configured threshold, as before (and no noise to measure)
            return full
        return max(signal, min(NOISE_SIGMAS * self.noise(), full), MIN_LEVELS)

    def noise(self) -> float:
        """Standard deviation (grey levels) of the last checked frame's difference from the background where
        nothing moves, estimated robustly: the median absolute difference over GAUSS_MAD. The median is the
        noise's as long as less than half the picture moves; when more does (a light, a camera move) it is
        higher and so is the threshold, which is when motion says least about where to look."""
        if self._shape is None:
            return 0.0
        step = NOISE_STEP
        np.copyto(self._blur_f, self._blur[::step, ::step])
        cv2.absdiff(self._blur_f, self._background[::step, ::step], dst=self._noise_diff)
        flat = self._noise_diff.reshape(-1)
        middle = flat.size // 2
        return float(np.partition(flat, middle)[middle]) / GAUSS_MAD

    def _downscale(self, image: np.ndarray) -> None:
        """Frame -> self._grey at the gate's working size."""
        if image.ndim == 3:
            cv2.cvtColor(image, cv2.COLOR_BGR2GRAY, dst=self._full_grey)
            source = self._full_grey
        else:
            source = image
        for level in self._pyramid:
            cv2.pyrDown(source, dst=level, dstsize=(level.shape[1], level.shape[0]))
            source = level
        cv2.resize(source, self._size, dst=self._grey, interpolation=cv2.INTER_LINEAR)

    def _regions(self) -> list[tuple[int, int, int, int]]:
        """Moving blobs (grown a little so one person is one blob), in full-frame pixels."""
        cv2.dilate(self._mask, self._kernel, dst=self._mask, iterations=2)
        count, _, stats, _ = cv2.connectedComponentsWithStats(self._mask, connectivity=8)
        sx, sy = self._scale
        regions = []
        for i in range(1, count):
            x, y, w, h, area = stats[i]
            if area >= self._min_pixels:
                regions.append((int(x * sx), int(y * sy), int(round((x + w) * sx)), int(round((y + h) * sy))))
        return regions

    def _pixels(self, box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
        h, w = self._blur.shape
        x1 = min(max(int(box[0] * w), 0), w - 1)
        y1 = min(max(int(box[1] * h), 0), h - 1)
        x2 = max(min(int(np.ceil(box[2] * w)), w), x1 + 1)
        y2 = max(min(int(np.ceil(box[3] * h)), h), y1 + 1)
        return x1, y1, x2, y2

    def _patch_of(self, source: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
        x1, y1, x2, y2 = self._pixels(box)
        out = cv2.resize(source[y1:y2, x1:x2], PATCH_SIZE, interpolation=cv2.INTER_AREA)
        if out.dtype != np.float32:
            out = out.astype(np.float32)
        out -= out.mean()  # structure, not brightness: a camera's exposure drift is not a change
        return out

    def patch(self, box: tuple[float, float, float, float]) -> np.ndarray:
        """The last checked frame's blurred grey pixels under a normalised box, as a small zero-mean
        float patch: compare two with `patch_difference`."""
        if self._shape is None:
            raise RuntimeError("MotionGate.patch called before any frame was checked")
        return self._patch_of(self._blur, box)

    def scene_patch(self, box: tuple[float, float, float, float]) -> np.ndarray:
        """Like `patch`, from the empty-scene model: what the box shows when nobody is there."""
        if self._shape is None:
            raise RuntimeError("MotionGate.scene_patch called before any frame was checked")
        return self._patch_of(self._scene, box)

    def brightness(self) -> float:
        """Mean grey level (0-255) of the last checked frame: how well lit the scene is."""
        return float(cv2.mean(self._blur)[0]) if self._shape is not None else 0.0

    def presence(self, box: tuple[float, float, float, float]) -> float:
        """How much the last frame under the box differs from the empty scene there (`patch_difference`
        units): high while someone stands there, back near 0 once they have gone."""
        return patch_difference(self.patch(box), self.scene_patch(box))

    def update_scene(self, occupied: list[tuple[float, float, float, float]]) -> None:
        """Let the empty-scene model learn from the last frame everywhere except under `occupied` boxes
        (the tracked objects), so people who stand still never become part of the scene."""
        if self._shape is None:
            return
        mask = self._scene_mask
        mask.fill(255)
        for box in occupied:
            x1, y1, x2, y2 = self._pixels(box)
            mask[y1:y2, x1:x2] = 0
        cv2.accumulateWeighted(self._blur, self._scene, self._rate(self._config.scene_alpha), mask=mask)

    def _rate(self, alpha: float) -> float:
        """The weight of this frame for a rate `alpha` per ALPHA_PERIOD_S of stream time."""
        return 1.0 - (1.0 - alpha) ** self._periods if self._periods != 1.0 else alpha


def patch_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute grey-level difference of two patches (0 = identical; a person replaced by the wall
    behind them is typically well over 15)."""
    return float(cv2.norm(a, b, cv2.NORM_L1)) / a.size


def frame_pixels(box: tuple[float, float, float, float], width: int, height: int) -> Region:
    """A normalised box in frame pixels, rounded outwards."""
    return int(box[0] * width), int(box[1] * height), int(np.ceil(box[2] * width)), int(np.ceil(box[3] * height))


def detection_regions(blobs: list[Region], width: int, height: int, min_side: int,
                      max_regions: int) -> list[Region] | None:
    """Squares of the frame for the detector to look at, covering every blob (frame pixels): each at least
    `min_side` (the detector input size, so nothing is shrunk more than the model needs) and 1.25x the blob
    group inside it, placed inside the frame. Blob groups whose squares overlap share one square. None when
    the whole frame is the better look: more than `max_regions` squares, a group too wide for any square,
    or squares covering most of the frame (a square costs as much as the whole frame)."""
    if not blobs or max_regions < 1:
        return None
    groups: list[list[int]] = [list(b) for b in sorted(blobs, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]),
                                                         reverse=True)]
    while True:
        squares = [_square(g, width, height, min_side) for g in groups]
        if any(s is None for s in squares):
            return None
        merged = False
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                a, b = squares[i], squares[j]
                assert a is not None and b is not None
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    g, h = groups[i], groups[j]
                    groups[i] = [min(g[0], h[0]), min(g[1], h[1]), max(g[2], h[2]), max(g[3], h[3])]
                    del groups[j]
                    merged = True
                    break
            if merged:
                break
        if not merged:
            break
    if len(squares) > max_regions:
        return None
    found = [s for s in squares if s is not None]
    if sum((s[2] - s[0]) * (s[3] - s[1]) for s in found) > 0.75 * width * height:
        return None
    return found


def _square(group: list[int], width: int, height: int, min_side: int) -> Region | None:
    x1, y1, x2, y2 = group
    side = max(min_side, round(1.25 * max(x2 - x1, y2 - y1)))
    limit = min(width, height)
    if max(x2 - x1, y2 - y1) > limit:
        return None
    side = min(side, limit)
    cx, cy = (x1 + x2) / 2.0, (y1 + y2) / 2.0
    left = int(min(max(cx - side / 2.0, 0), width - side))
    top = int(min(max(cy - side / 2.0, 0), height - side))
    return (left, top, left + side, top + side)
