"""The translator: the cloud's own closer look at an escalated crop, turned into facts a language model can
reason about (hybrid inference: the translator reads the picture, the model decides from what it says).

- The shipped COCO detector (YOLOX-Nano) runs on the crop alone, so the crop fills the model's input (the device
  saw it as a small part of a whole frame): is there a person, how sure, where; which other COCO objects are
  in it (bag, bicycle, dog, car...).
- Dominant colours of the upper and lower body of the person found (pixel statistics, nothing learnt).
- From the event: how many people the device's detections hold, and what the device knows of where and how
  long (zones, dwell, direction, local time), when it sends them.
- ImageNet's top class stays a weak hint: it names what the crop looks like, never the subject.

Runs after a cache miss only; ~40 ms on one core. Thread-safe (onnxruntime sessions are).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import cv2
import numpy as np

from ...shared import yolox
from ...shared.modelfiles import ModelFile, resolve
from ...shared.protocol import Event
from .imagenet import CropDescriber

log = logging.getLogger(__name__)

MIN_OBJECT = 0.30  # COCO objects below this score are not mentioned
MIN_SEEN = 0.05  # the detector's floor; the best score of the asked label is reported from here up
PEOPLE_MIN = 0.30  # event detections of a person at or above this count as people in the frame
MAX_OBJECTS = 4
MAX_ASPECT = 8.0


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
    hint: str | None = None  # ImageNet's top class (weak)
    zones: tuple[str, ...] = ()
    dwell_s: float | None = None
    direction: str | None = None
    local_time: str | None = None
    decoded: bool = True  # False: the crop is not an image at all
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
            out.append(f"Moving {self.direction}.")
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
            colours = f", in {_article(self.upper)} {self.upper} top and {self.lower} bottom" \
                if self.upper and self.lower else ""
            out.append(f"{name}: yes{colours}" + (f", with {others}." if others else "."))
        elif self.label_score >= 0.1:
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


_COLOURS = (  # hue ranges on OpenCV's 0..180 scale
    (0, 8, "red"), (8, 20, "orange"), (20, 33, "yellow"), (33, 85, "green"), (85, 130, "blue"),
    (130, 160, "purple"), (160, 181, "red"))


def _article(word: str | None) -> str:
    return "an" if word and word[0].lower() in "aeiou" else "a"


def colour_name(bgr_pixels: np.ndarray) -> str | None:
    """The colour most pixels of a region have, in plain words; None for an empty region."""
    if bgr_pixels.size == 0:
        return None
    hsv = cv2.cvtColor(bgr_pixels.reshape(-1, 1, 3), cv2.COLOR_BGR2HSV).reshape(-1, 3).astype(np.int32)
    h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    names = np.where(v < 60, 0, np.where(s < 50, np.where(v > 190, 2, 1), 3))  # dark, grey, white, colourful
    counts = np.bincount(names, minlength=4)
    kind = int(counts.argmax())
    if kind < 3:
        return ("dark", "grey", "white")[kind]
    hues = h[names == 3]
    votes = {name: 0 for _, _, name in _COLOURS}
    for lo, hi, name in _COLOURS:
        votes[name] += int(((hues >= lo) & (hues < hi)).sum())
    best = max(votes, key=votes.__getitem__)
    if best == "orange" and np.median(v[names == 3]) < 150:
        return "brown"
    return best


class Translator:
    """Crop + event -> Facts, with the shipped YOLOX-Nano at its own input size."""

    def __init__(self, model: str = "yolox_nano", threads: int = 1, describer: CropDescriber | None = None):
        import onnxruntime as ort

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
        mine = [(s, box) for name, s, box in found if name == label]
        score, box = max(mine, default=(0.0, None))
        objects: list[tuple[str, float]] = []
        for name, s, _ in found:
            if name != label and s >= MIN_OBJECT and name not in (o for o, _ in objects):
                objects.append((name, round(s, 2)))
        upper = lower = None
        if label == "person" and box is not None and score >= MIN_OBJECT:
            upper, lower = _body_colours(image, box)
        hints = self.describer.describe(event.crop)
        return Facts(event.label, round(score, 3), box, label in self.labels, tuple(objects[:MAX_OBJECTS]),
                     upper=upper, lower=lower, hint=hints[0][0] if hints else None, **device)


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


def _body_colours(image: np.ndarray, box: tuple[float, float, float, float]) -> tuple[str | None, str | None]:
    """Upper body (20-50 % of the box height) and lower body (55-90 %), the middle half of its width."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    left, right = int(x1 + 0.25 * (x2 - x1)), int(x2 - 0.25 * (x2 - x1))

    def band(top: float, bottom: float) -> np.ndarray:
        return image[int(y1 + top * (y2 - y1)):int(y1 + bottom * (y2 - y1)), left:right]

    return colour_name(band(0.2, 0.5)), colour_name(band(0.55, 0.9))
