"""The translator: the cloud's own closer look at an escalated crop, turned into facts a language model can
reason about (hybrid inference: the translator reads the picture, the model decides from what it says).

- The shipped COCO detector (YOLOX-Nano) runs on the crop alone, so the crop fills the model's input (the device
  saw it as a small part of a whole frame): is there a person, how sure, where; which other COCO objects are
  in it (bag, bicycle, dog, car...): only those it is sure of (SURE_OBJECT) and, when the label was found,
  that touch the label's box (`held`): what a person carries, rides or walks. Below that score an object is
  no fact at all: on the shipped clips' people the detector finds a "teddy bear" in a grey cardigan (0.26),
  a "tie" in a waistcoat's panel (0.41), a "skateboard" in a table's foot (0.30) (bench/objects.py).
- The label's score is the best of four views of the crop (`VIEWS`), because the crops a camera sends are
  rarely the clean ones a detector learnt from: as sent; mirrored (a person is symmetric, a detector is not
  quite); bordered, inside a grey border as wide as the crop (a crop cut tight, or cut to half a body, fills
  the input far beyond the size of the people the detector learnt; at half size it is a person among
  surroundings again); and normalised: sensor noise smoothed
  (non-local means) and the exposure brought to mid-grey. Measured on shifted crops (bench/verdicts.py
  --shifted); none of the views finds a person in an empty scene. On 405 crops (every 2nd of the set, clean and
  8 shifts) the normalised view lifted a person over 0.3 only on night crops, every one flagged dark, and a
  blurred one from nothing to faint; so it is taken for a dark or soft picture, or when the other three views
  found no clear person (under 0.3), and its denoising (most of the translator's cost) is not paid for a
  clear find on a good picture. Other objects come from the crop as sent.
- How good the picture is (`picture_flags`: dark, blown out, soft), for the confidence: a poor picture makes
  the closer look itself less sure.
- The colours of the upper and lower body of the person found (colours.py: pixel statistics, nothing learnt;
  none where the pixels cannot tell), and whether the upper body is a hi-vis vest (hivis.py; None: cannot tell).
- From the event: how many people the device's detections hold, and what the device knows of where and how
  long (zones, dwell, direction, local time), when it sends them.
- ImageNet's top class stays a weak hint: it names what the crop looks like, never the subject.

Runs after a cache miss only: three detector passes for a clear person on a good picture, four and the denoising
otherwise (a few tenths of a second on one core). Thread-safe (onnxruntime sessions are).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import cv2
import numpy as np

from ...shared import yolox
from ...shared.modelfiles import ModelFile, resolve
from ...shared.protocol import Event
from .colours import body_colours, colour_name  # noqa: F401  (colour_name: re-exported, its old home)
from .hivis import reading
from .imagenet import CropDescriber

log = logging.getLogger(__name__)

MIN_OBJECT = 0.30  # the label from this score is there ("Person: yes")
FAINT = 0.10  # ... from this score a faint one ("Person: faint"), whose box the objects must touch
SURE_OBJECT = 0.50  # another COCO object is a fact from this score (and touching the label's box), not below
MIN_SEEN = 0.05  # the detector's floor; the best score of the asked label is reported from here up
PEOPLE_MIN = 0.30  # event detections of a person at or above this count as people in the frame
MAX_OBJECTS = 4
MAX_ASPECT = 8.0
VIEWS = ("sent", "mirrored", "bordered", "normalised")
NORMALISE_FOR = {"dark", "soft"}  # the picture flags for which the normalised view is taken
DARK_LUMA = 50.0  # mean luma (0..255) below which a picture counts as dark
CLIPPED_SHARE = 0.2  # share of blown-out pixels (>= 250) above which it counts as blown out
SOFT_EDGES = 100.0  # Laplacian variance at 128 px high below which a picture with contrast counts as soft
SOFT_CONTRAST = 25.0
MID_GREY = 110.0  # the normalised view's mean luma
# The denoiser's search window: 11 px costs 0.56 of 15 px (the normalised view was most of an empty crop's look)
# and, on the 222 crops of bench/verdict_crops.py and its 8 shifts for which the view is taken, put none in
# another class (clear / faint / absent) for the worse: one night person faint where 15 px found none, one
# empty crop absent where 15 px found a faint shape (benchmarks.md, 2026-12-08).
DENOISE_SEARCH = 11

Box = tuple[float, float, float, float]  # x1, y1, x2, y2, normalised


@dataclass(frozen=True)
class Facts:
    """What the closer look found, in numbers; `sentences()` puts them in words."""

    label: str  # what the device asked about
    label_score: float  # the detector's best score for that label in the crop (0: not seen at all)
    label_box: tuple[float, float, float, float] | None  # where, normalised to the crop
    label_known: bool  # the detector has this label at all (COCO-80); if not, only the model can tell
    objects: tuple[tuple[str, float], ...] = ()  # other COCO objects in the crop, best first
    people_in_frame: int = 0  # person detections of the device, in the whole frame
    upper: str | None = None  # dominant colour of the upper body
    lower: str | None = None
    hivis: bool | None = None  # a hi-vis vest on the upper body, measured (hivis.py); None: cannot tell
    hint: str | None = None  # ImageNet's top class (weak)
    zones: tuple[str, ...] = ()
    dwell_s: float | None = None
    direction: str | None = None
    local_time: str | None = None
    decoded: bool = True  # False: the crop is not an image at all
    picture: tuple[str, ...] = ()  # what is wrong with the picture: "dark", "bright", "soft" (picture_flags)
    view: str | None = None  # the view of the crop the label's score comes from (VIEWS)
    extra: dict = field(default_factory=dict, compare=False)

    def sentences(self, anchor: bool = False) -> list[str]:
        """Short sentences, the one that answers the question (is the label there, with what, in what colours)
        last: a small model reads the words right before its answer best. `anchor`: the same with that answer
        left out ("Person: N/A."), to measure what the model would say without it. ImageNet's hint is only
        given where the detector has no class for the label (a weak hint, and a misleading one on an empty
        scene)."""
        if not self.decoded:
            return ["The crop is not a readable image."]
        out = []
        if self.zones:
            out.append("Zone: " + ", ".join(self.zones) + ".")
        if self.local_time:
            out.append(f"Local time {self.local_time}.")
        if self.dwell_s is not None:
            out.append(f"Stayed {self.dwell_s:.0f} s.")
        if self.direction:
            out.append("Not moving." if self.direction == "still" else f"Moving {self.direction}.")
        if self.people_in_frame > 1:
            out.append(f"{self.people_in_frame} people in the frame.")
        name = self.label[:1].upper() + self.label[1:]
        others = " and ".join(f"{_article(o)} {o}" for o, _ in self.objects)
        if anchor:
            out.append(f"{name}: N/A.")
        elif not self.label_known:
            out.append(f"{name}: unknown to the detector; it looks like {_article(self.hint or 'thing')} "
                       f"{self.hint or 'thing'}" + (f", with {others}." if others else "."))
        elif self.label_score >= MIN_OBJECT:
            worn = clothing(self.upper, self.lower, self.hivis)
            out.append(f"{name}: yes{worn}" + (f", with {others}." if others else "."))
        elif self.label_score >= FAINT:
            out.append(f"{name}: faint" + (f", with {others}." if others else "."))
        else:
            out.append(f"{name}: no" + (f", but {others}." if others else "."))
        return out

    def words(self) -> set[str]:
        """Every object name the facts mention, for the description check."""
        names = {self.label} | {name for name, _ in self.objects}
        if self.hint:
            names.add(self.hint)
        return {w for name in names for w in name.lower().split()}


def _article(word: str | None) -> str:
    return "an" if word and word[0].lower() in "aeiou" else "a"


def clothing(upper: str | None, lower: str | None, hivis: bool | None = None) -> str:
    """", in a grey top and blue bottom" from what is known of them ("" when neither is); a hi-vis vest
    measured is said as one (", in a hi-vis orange vest")."""
    if hivis:
        return ", in a hi-vis " + " ".join(w for w in (upper, "vest") if w) + (f" and {lower} bottom" if lower else "")
    parts = [f"{_article(upper)} {upper} top" if upper else "", f"{lower} bottom" if lower else ""]
    if upper and lower:
        return f", in {parts[0]} and {parts[1]}"
    if upper or lower:
        return f", in {parts[0] or _article(lower) + ' ' + parts[1]}"
    return ""


class Translator:
    """Crop + event -> Facts, with the shipped YOLOX-Nano at its own input size."""

    def __init__(self, model: str = "yolox_nano", threads: int = 1, describer: CropDescriber | None = None,
                 views: tuple[str, ...] = VIEWS):
        import onnxruntime as ort

        unknown = [v for v in views if v not in VIEWS]
        if unknown or VIEWS[0] not in views:
            raise ValueError(f"views {views!r}: must include {VIEWS[0]!r} and be among {VIEWS}")
        self.views = tuple(views)

        self.model: ModelFile = resolve(model)
        entry = self.model.entry
        if entry.get("family") != "yolox":
            raise ValueError(f"model {model!r} is not a YOLOX detector; the translator needs one")
        width, height = entry["input"]["size"]
        self.size = (int(width), int(height))
        self.labels = self.model.labels
        self.pad = int(entry.get("pad_value", 114))
        self.input_name = entry["input"]["name"]
        self.cells, self.strides = yolox.grid(width, height, entry.get("strides", (8, 16, 32)))
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.model.path), options, providers=["CPUExecutionProvider"])
        self.describer = describer if describer is not None else CropDescriber(threads=threads, top_k=1)

    def best_view(self, image: np.ndarray, label: str, found: list | None = None,
                  flags: tuple[str, ...] | None = None) -> tuple[float, Box | None, str | None]:
        """(best score of `label` over the VIEWS, its box in the crop's coordinates, the view); `found`: the
        look at the crop as sent, when already taken; `flags`: its picture_flags, when already known. The
        normalised view is taken for a dark or soft picture, or when the other views found no clear one."""
        flags = picture_flags(image) if flags is None else flags
        best: tuple[float, Box | None, str | None] = (0.0, None, None)
        for name, view, unmap in _views(image, self.views):
            if name == VIEWS[3] and not set(flags) & NORMALISE_FOR and best[0] >= MIN_OBJECT:
                break  # a good picture with a clear find: the denoising would not change the answer
            seen = found if name == VIEWS[0] and found is not None else self.look(view())
            for what, score, box in seen:
                if what == label and score > best[0]:
                    best = (score, unmap(box), name)
        return best

    def look(self, image: np.ndarray) -> list[tuple[str, float, tuple[float, float, float, float]]]:
        """[(COCO label, score, box normalised to the image)], best first."""
        h, w = image.shape[:2]
        in_w, in_h = self.size
        ratio = min(in_w / w, in_h / h)
        fit_w, fit_h = max(1, int(w * ratio)), max(1, int(h * ratio))
        canvas = np.full((in_h, in_w, 3), self.pad, np.uint8)
        canvas[:fit_h, :fit_w] = cv2.resize(image, (fit_w, fit_h), interpolation=cv2.INTER_LINEAR)
        tensor = canvas.transpose(2, 0, 1)[np.newaxis].astype(np.float32)
        (raw,) = self.session.run(None, {self.input_name: tensor})
        found = yolox.decode(raw[0], self.cells, self.strides, (w, h), ratio, MIN_SEEN, 0.45)
        return [(self.labels[c] if c < len(self.labels) else f"class_{c}", s, box) for c, s, box in found]

    def translate(self, event: Event) -> Facts:
        """The facts about one event; never raises (a crop that does not decode says so)."""
        device = _device_facts(event)
        image = _decode(event.crop)
        if image is None:
            return Facts(event.label, 0.0, None, event.label in self.labels, decoded=False, **device)
        found = self.look(image)
        label = event.label.lower()
        flags = picture_flags(image)
        score, box, view = self.best_view(image, label, found, flags) if label in self.labels else (0.0, None, None)
        objects = held(found, label, box if score >= FAINT else None)
        upper = lower = wearing = None
        if label == "person" and box is not None and score >= MIN_OBJECT:
            upper, lower = body_colours(image, box)
            wearing = reading(image, box).wearing
        hints = self.describer.describe(event.crop)
        return Facts(event.label, round(score, 3), box, label in self.labels, tuple(objects[:MAX_OBJECTS]),
                     upper=upper, lower=lower, hivis=wearing, hint=hints[0][0] if hints else None, picture=flags,
                     view=view, **device)


def held(found: list, label: str, box: Box | None) -> list[tuple[str, float]]:
    """[(name, score)] of the other objects that are facts, best first, one per name: those the detector is
    sure of (SURE_OBJECT) and, when the label has a box, that touch it (the boxes overlap): a bag in a hand,
    a bicycle under its rider, not a car parked across the crop from them."""
    objects: list[tuple[str, float]] = []
    for name, s, where in found:
        if name == label or s < SURE_OBJECT or name in (o for o, _ in objects):
            continue
        if box is None or touches(where, box):
            objects.append((name, round(s, 2)))
    return objects


def touches(a: Box, b: Box) -> bool:
    """The two boxes overlap (share some area)."""
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _views(image: np.ndarray, views: tuple[str, ...]):
    """(name, a function making the image, box back to the crop's coordinates) for each of `views`: an image
    is made only when asked for."""
    yield VIEWS[0], lambda: image, lambda b: b
    if VIEWS[1] in views:
        yield VIEWS[1], lambda: np.ascontiguousarray(image[:, ::-1]), lambda b: (1 - b[2], b[1], 1 - b[0], b[3])
    if VIEWS[2] in views:
        bordered, unborder = _bordered(image)
        yield VIEWS[2], lambda: bordered, unborder
    if VIEWS[3] in views:
        yield VIEWS[3], lambda: normalised(image), lambda b: b


def _bordered(image: np.ndarray):
    """The crop at the middle of a grey border as wide as itself, and the box back to the crop's coordinates."""
    h, w = image.shape[:2]
    bordered = cv2.copyMakeBorder(image, h // 2, h // 2, w // 2, w // 2, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    fy, fx = (h // 2) / bordered.shape[0], (w // 2) / bordered.shape[1]
    sy, sx = h / bordered.shape[0], w / bordered.shape[1]

    def unborder(b: Box) -> Box:
        return (min(1.0, max(0.0, (b[0] - fx) / sx)), min(1.0, max(0.0, (b[1] - fy) / sy)),
                min(1.0, max(0.0, (b[2] - fx) / sx)), min(1.0, max(0.0, (b[3] - fy) / sy)))

    return bordered, unborder


def normalised(image: np.ndarray) -> np.ndarray:
    """Sensor noise smoothed (non-local means, `DENOISE_SEARCH` px around each pixel) and the mean luma brought to
    MID_GREY by a gain."""
    smooth = cv2.fastNlMeansDenoisingColored(image, None, 10, 10, 5, DENOISE_SEARCH)
    luma = float(cv2.cvtColor(smooth, cv2.COLOR_BGR2GRAY).mean())
    return cv2.convertScaleAbs(smooth, alpha=MID_GREY / max(1.0, luma))


def picture_flags(image: np.ndarray) -> tuple[str, ...]:
    """What is wrong with the picture, if anything: "dark" (mean luma below DARK_LUMA), "bright" (a share
    over CLIPPED_SHARE blown out), "soft" (contrast without sharp edges: blur, or a low-resolution copy)."""
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    flags = []
    if grey.mean() < DARK_LUMA:
        flags.append("dark")
    if (grey >= 250).mean() > CLIPPED_SHARE:
        flags.append("bright")
    h, w = grey.shape
    scaled = cv2.resize(grey, (max(8, round(w * 128 / h)), 128), interpolation=cv2.INTER_AREA)
    if scaled.std() > SOFT_CONTRAST and cv2.Laplacian(scaled, cv2.CV_64F).var() < SOFT_EDGES:
        flags.append("soft")
    return tuple(flags)


def _device_facts(event: Event) -> dict:
    people = sum(1 for d in event.detections if d.label == "person" and d.score >= PEOPLE_MIN)
    return {"people_in_frame": people, "zones": tuple(event.zones), "dwell_s": event.dwell_s,
            "direction": event.direction, "local_time": event.local_time}


def _decode(jpeg: bytes) -> np.ndarray | None:
    try:
        image = cv2.imdecode(np.frombuffer(jpeg, dtype=np.uint8), cv2.IMREAD_COLOR)
    except (cv2.error, ValueError, TypeError):
        return None
    if image is None or image.size == 0:
        return None
    h, w = image.shape[:2]
    if max(h, w) > MAX_ASPECT * min(h, w):  # a sliver: keep its middle, so resizing stays bounded
        keep = int(MAX_ASPECT * min(h, w))
        image = image[(h - keep) // 2:(h + keep) // 2] if h > w else image[:, (w - keep) // 2:(w + keep) // 2]
    return image
