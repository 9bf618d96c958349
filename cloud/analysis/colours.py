"""The colours a person wears, from pixels (nothing learnt), or None where the pixels cannot say.

Measured on the shipped clips' people and on transformed copies (darkened, cropped, warm-lit, garments
recoloured to a known hue: bench/colours.py), the first version named colours nobody wore: the wooden floor
and a person's hair as "brown" or "red", a grey cardigan under warm light as "orange". The rules now:

- Only the garment: the torso is the middle 40 % of the box's width at 22-48 % of its height (clear of the head,
  the arms and the background beside them), the legs the same width at 58-88 %.
- The light's colour removed first: the near-neutral pixels of the whole crop (walls, floors, grey clothes:
  low saturation, or the least saturated quarter under a strong cast, neither black nor blown out) are made
  grey on average by a gain per channel, within [1 / MAX_GAIN, MAX_GAIN] (a grey-world estimate over the
  pixels that should be grey). The crop is read at most WORK_HEIGHT pixels high: statistics need no detail.
- Skin, hair and wood are left out: a low-to-mid saturated red-orange-yellow (SKIN_*) is never a garment colour
  the translator names; a saturated orange (a hi-vis vest) is.
- Each pixel is dark (low value), white or grey (low saturation), or a hue bin (saturation and value gates):
  red, orange, yellow, green, blue, purple, pink; orange and red that are dim are brown.
- Nothing on a monochrome picture (an infrared night image, `monochrome`): its grey is no garment's colour
  (an orange vest reads light grey there).
- A name only with a clear majority: at least MIN_VALID of the region's pixels counted and the winner holding
  MIN_SHARE of them; otherwise None ("unknown": the facts then say nothing of that garment's colour).
"""

from __future__ import annotations

import cv2
import numpy as np

DARK_V = 60  # HSV value (0..255) below which a pixel is dark whatever its hue
GREY_S = 60  # saturation below which a lit pixel is grey or white
WHITE_V = 185
COLOUR_S = 85  # saturation from which a pixel has a hue worth naming (between GREY_S and this: not counted)
SKIN_H = (0, 25)  # OpenCV hue (0..180) of skin, hair and wood...
SKIN_S = (GREY_S, 165)  # ... at these saturations: never named as a garment
BROWN_V = 150  # an orange pixel dimmer than this is brown (wood, leather); a hi-vis orange is far brighter
BACKGROUND_MIN = 0.15  # share of the crop outside the box from which its colours are known...
BACKGROUND_CLASS = 0.15  # ... and a class holding this share of those counted is background inside the box too
MAX_GAIN = 1.35
NEUTRAL_MIN = 0.05  # share of the crop that must read near-neutral for the cast to be measured
MIN_VALID = 0.3
WORK_HEIGHT = 160
MIN_SHARE = 0.45
MONOCHROME = 0.08  # a lit pixel is coloured when off the crop's even tint by this share of its value...
LIT = 20  # ... (lit: value >= LIT, and counted from twice that)
COLOURED_MIN = 0.02  # ... and the crop is monochrome when fewer than this share of its lit pixels are
HUES = ((0, 6, "red"), (6, 19, "orange"), (19, 36, "yellow"), (36, 85, "green"), (85, 128, "blue"),
        (128, 150, "purple"), (150, 170, "pink"), (170, 181, "red"))
NAMES = ("dark", "grey", "white") + tuple(dict.fromkeys(name for _, _, name in HUES)) + ("brown",)

Box = tuple[float, float, float, float]


def neutral_gains(image: np.ndarray, rounds: int = 3) -> np.ndarray:
    """Per-channel gains (B, G, R) that make the crop's near-neutral pixels grey on average (1, 1, 1 when
    too few of them); a few rounds, as a strong cast hides some of them at first. Pixels with a clipped
    channel say nothing of the light and are left out."""
    channels = [np.ascontiguousarray(image[..., i]).reshape(-1).astype(np.float32) for i in range(3)]
    top = np.maximum(np.maximum(channels[0], channels[1]), channels[2])
    usable = (top < 250) & (top >= DARK_V)
    channels = [c[usable] for c in channels]
    gains = np.ones(3, np.float32)
    if channels[0].size < NEUTRAL_MIN * image.shape[0] * image.shape[1]:
        return gains
    for _ in range(rounds):
        b, g, r = (c * k for c, k in zip(channels, gains, strict=True))
        hi, lo = np.maximum(np.maximum(b, g), r), np.minimum(np.minimum(b, g), r)
        saturation = (hi - lo) / np.maximum(hi, 1.0)
        # the near-neutral: HSV saturation under ~90, or, under a strong cast, the least saturated quarter
        neutral = saturation < min(0.5, max(0.35, float(np.percentile(saturation, 25))))
        if neutral.sum() < NEUTRAL_MIN * image.shape[0] * image.shape[1]:
            break
        mean = np.array([b[neutral].mean(), g[neutral].mean(), r[neutral].mean()], np.float32)
        gains = np.clip(gains * mean.mean() / np.maximum(mean, 1.0), 1 / MAX_GAIN, MAX_GAIN).astype(np.float32)
    return gains


def monochrome(image: np.ndarray) -> bool:
    """A grey picture (an infrared night image): the lit pixels' colour is one even tint (a camera's), at most
    MONOCHROME of their value (counted from LIT up, so a dark pixel's noise weighs no more than a dim one's)."""
    pixels = image.reshape(-1, 3).astype(np.float32)
    value = pixels.max(axis=1)
    lit = value >= LIT
    if lit.sum() < 16:
        return False  # too dark to say: the reference says so
    tint = pixels[lit] - pixels[lit].mean(axis=1, keepdims=True)  # each pixel's colour off its grey
    residual = np.abs(tint - np.percentile(tint, 50, axis=0)).max(axis=1) / np.maximum(value[lit], 2 * LIT)
    return float((residual >= MONOCHROME).mean()) < COLOURED_MIN


def balanced(image: np.ndarray) -> np.ndarray:
    """The crop with the light's colour taken out (neutral_gains)."""
    return np.clip(image * neutral_gains(image), 0, 255).astype(np.uint8)


def classes_of(bgr_pixels: np.ndarray) -> np.ndarray:
    """Each pixel's index in NAMES, -1 where it is not counted (skin, hair, wood; a faint tint)."""
    hsv = cv2.cvtColor(bgr_pixels.reshape(-1, 1, 3).astype(np.uint8), cv2.COLOR_BGR2HSV).reshape(-1, 3)
    h, s, v = (hsv[:, i].astype(np.int32) for i in range(3))
    classes = np.full(h.shape, -1, np.int32)  # -1: not counted
    dark = v < DARK_V
    classes[dark] = NAMES.index("dark")
    plain = ~dark & (s < GREY_S)
    classes[plain & (v >= WHITE_V)] = NAMES.index("white")
    classes[plain & (v < WHITE_V)] = NAMES.index("grey")
    skin = (h >= SKIN_H[0]) & (h <= SKIN_H[1]) & (s >= SKIN_S[0]) & (s < SKIN_S[1])
    hued = ~dark & (s >= COLOUR_S) & ~skin
    for lo, hi, name in HUES:
        classes[hued & (h >= lo) & (h < hi)] = NAMES.index(name)
    classes[hued & (h >= 6) & (h < 19) & (v < BROWN_V)] = NAMES.index("brown")
    return classes


def colour_name(bgr_pixels: np.ndarray, background: frozenset[int] = frozenset()) -> str | None:
    """The colour most of a region's pixels have, in plain words (NAMES); None for an empty region or one
    without a clear majority. `background`: classes (NAMES indexes) not counted, being the scene's."""
    if bgr_pixels.size == 0:
        return None
    return _vote(classes_of(bgr_pixels), background)


def _vote(classes: np.ndarray, background: frozenset[int] = frozenset()) -> str | None:
    classes = classes.reshape(-1)
    if classes.size == 0:
        return None
    if background:  # the scene's colours are not the garment's: with too little else, it cannot be told
        classes = np.where(np.isin(classes, list(background)), -1, classes)
    counted = classes[classes >= 0]
    if counted.size < MIN_VALID * classes.size or counted.size == 0:
        return None
    votes = np.bincount(counted, minlength=len(NAMES))
    best = int(votes.argmax())
    return NAMES[best] if votes[best] >= MIN_SHARE * counted.size else None


def region(image: np.ndarray, box: Box, top: float, bottom: float) -> np.ndarray:
    """The middle 40 % of the box's width between `top` and `bottom` (shares of its height)."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    left, right = int(x1 + 0.3 * (x2 - x1)), int(np.ceil(x2 - 0.3 * (x2 - x1)))
    return image[int(y1 + top * (y2 - y1)):int(np.ceil(y1 + bottom * (y2 - y1))), left:right]


def background_classes(classes: np.ndarray, box: Box) -> frozenset[int]:
    """The hued classes (NAMES indexes) of the scene around the person, from a crop's class map: those holding
    BACKGROUND_CLASS of the crop outside the box, when enough of the crop is (BACKGROUND_MIN); the wooden floor
    beside a half-cut person. Grey, white and dark are left to count: too many people wear them."""
    h, w = classes.shape[:2]
    outside = np.ones((h, w), bool)
    outside[int(box[1] * h):int(np.ceil(box[3] * h)), int(box[0] * w):int(np.ceil(box[2] * w))] = False
    if outside.mean() < BACKGROUND_MIN:
        return frozenset()
    around = classes[outside]
    counted = around[around >= 0]
    if counted.size == 0:
        return frozenset()
    votes = np.bincount(counted, minlength=len(NAMES))
    hued = range(NAMES.index("white") + 1, len(NAMES))  # a wall's white or a shadow's dark is also worn
    return frozenset(int(i) for i in np.flatnonzero(votes >= BACKGROUND_CLASS * counted.size) if i in hued)


def body_colours(image: np.ndarray, box: Box) -> tuple[str | None, str | None]:
    """(upper body, lower body) colours of the person in `box` (normalised to the crop). Colour statistics
    need no detail: the crop is read at most WORK_HEIGHT pixels high (a few ms)."""
    h, w = image.shape[:2]
    if h > WORK_HEIGHT:
        image = cv2.resize(image, (max(1, round(w * WORK_HEIGHT / h)), WORK_HEIGHT), interpolation=cv2.INTER_AREA)
    if monochrome(image):
        return None, None
    light = balanced(image)
    classes = classes_of(light).reshape(light.shape[:2])
    scene = background_classes(classes, box)
    return _vote(region(classes, box, 0.22, 0.48), scene), _vote(region(classes, box, 0.58, 0.88), scene)
