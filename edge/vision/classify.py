"""What a crop shows, by the shipped MobileNetV2 ImageNet classifier: its top classes travel in the event
(so the cloud need not classify again), and their coarse category names what the person detector cannot
(a car, a dog) or vetoes a weak person detection that is plainly something else.

ImageNet has no "person" class: a person reads as what they wear or carry (jean, cardigan, backpack), so
those classes are evidence *for* a person and never veto one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from ...shared.config import Strict
from ...shared.cropkeys import Appearance, ImagenetInput, decode_jpeg
from ...shared.embedding import embedding_of
from ...shared.modelfiles import ModelError, resolve
from .detect import DetectorConfig, model_key, open_session

log = logging.getLogger(__name__)

Category = Literal["person", "vehicle", "animal", "object"]

# ImageNet-1k indices (torchvision order) grouped by what matters to a camera.
_WORN = frozenset({
    399, 400, 411, 414, 433, 439, 443, 445, 451, 452, 457, 459, 465, 474, 501, 514, 515, 518, 552, 560, 568,
    578, 601, 608, 610, 614, 615, 617, 630, 636, 638, 639, 643, 652, 655, 658, 667, 689, 697, 735, 748, 770,
    774, 775, 793, 796, 806, 808, 824, 834, 836, 837, 841, 842, 869, 887, 903, 906, 981, 982, 983,
})
_BICYCLE = frozenset({444, 671, 870, 880})
_MOTORCYCLE = frozenset({665, 670})
_BUS = frozenset({654, 779, 829, 874})
_TRUCK = frozenset({555, 569, 675, 717, 734, 757, 803, 864, 866, 867})
_CAR = frozenset({407, 436, 468, 475, 479, 511, 535, 573, 575, 581, 586, 609, 627, 656, 661, 705, 751, 817})
_VEHICLES = _BICYCLE | _MOTORCYCLE | _BUS | _TRUCK | _CAR


def category_of(index: int) -> Category:
    if index in _WORN:
        return "person"
    if index < 398:
        return "animal"
    if index in _VEHICLES:
        return "vehicle"
    return "object"


def coarse_label(index: int) -> str:
    """A COCO-style name for an ImageNet class, as the rules and the cloud speak of objects."""
    if index in _WORN:
        return "person"
    if 151 <= index <= 280:
        return "dog"
    if 281 <= index <= 293:
        return "cat"
    if 7 <= index <= 24 or 80 <= index <= 100 or 127 <= index <= 146:
        return "bird"
    if index < 398:
        return "animal"
    for group, name in ((_BICYCLE, "bicycle"), (_MOTORCYCLE, "motorcycle"), (_BUS, "bus"), (_TRUCK, "truck"),
                        (_CAR, "car")):
        if index in group:
            return name
    return "object"


@dataclass(frozen=True, slots=True)
class Classification:
    """Top classes (name, probability) best first, and the probability mass of each category over all
    1000 classes (so ten kinds of car add up to one "vehicle")."""

    classes: list[tuple[str, float]]
    categories: dict[str, float]
    top_index: int
    reliable: bool = True  # the crop was big enough for its names to veto anything (ClassifierConfig.min_side)
    embedding: bytes | None = None  # shared.embedding, from the same run (None: a model without a features output)

    @property
    def category(self) -> Category:
        """The category with the most probability mass."""
        return max(self.categories, key=self.categories.__getitem__)  # type: ignore[return-value]

    def names_other_than_person(self, min_mass: float) -> tuple[str, float] | None:
        """(coarse label, probability mass) of what this plainly is when that is not a person: a vehicle or
        an animal with at least `min_mass` and more than the person evidence, or an object with at least
        max(min_mass, 0.9) and next to no sign of a person. None: it may well be a person, or the crop was
        too small to say."""
        if not self.reliable:
            return None
        person = self.categories["person"]
        for category in ("vehicle", "animal"):
            mass = self.categories[category]
            if mass >= min_mass and mass > person:
                name = coarse_label(self.top_index) if category_of(self.top_index) == category else category
                return name, mass
        if self.categories["object"] >= max(min_mass, 0.9) and person < 0.05:
            return "object", self.categories["object"]
        return None


class ClassifierConfig(Strict):
    model: str = "mobilenet_v2"  # manifest key of a `classify` model
    precision: Literal["fp32", "int8"] = "int8"  # the INT8 file is 1.8x faster and agrees where fp32 is sure
    threads: Annotated[int, Field(ge=1, le=64)] = 1
    providers: list[str] = ["CPUExecutionProvider"]
    top_k: Annotated[int, Field(ge=1, le=10)] = 3
    # crops with a shorter side under this many pixels are described but never veto or name anything:
    # upscaled from a few pixels, a cyclist reads as a lynx
    min_side: Annotated[int, Field(ge=1, le=1024)] = 48


class CropClassifier:
    """MobileNetV2 (manifest family `imagenet`) on BGR crops; one crop per call, a few ms each."""

    def __init__(self, config: ClassifierConfig):
        self._model = resolve(model_key(DetectorConfig(model=config.model, precision=config.precision)))
        entry = self._model.entry
        if entry.get("task") != "classify":
            raise ModelError(f"model {self._model.name!r} is a {entry.get('task')!r} model; the classifier needs a "
                             "'classify' model such as 'mobilenet_v2'")
        self.labels = self._model.labels
        self.top_k = config.top_k
        self.min_side = config.min_side
        self._input_name = entry["input"]["name"]
        self._outputs = [entry["outputs"]["logits"]]
        if "features" in entry["outputs"]:
            self._outputs.append(entry["outputs"]["features"])
        self._input = ImagenetInput(entry)
        self.session = open_session(self._model, config.threads, config.providers)
        # the embedding alone, for a crop nobody asked to classify: the same session and recipe (shared.cropkeys)
        self._appearance = Appearance(self._model, self.session) if len(self._outputs) > 1 else None
        self._groups = np.array([("person", "vehicle", "animal", "object").index(category_of(i))
                                 for i in range(len(self.labels))])

    @property
    def model_name(self) -> str:
        return self._model.name

    def classify(self, crop_bgr: np.ndarray) -> Classification:
        logits, *features = self.session.run(self._outputs, {self._input_name: self._input.tensor(crop_bgr)})
        scores = logits[0].astype(np.float64)
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        order = np.argsort(probs)[::-1][: self.top_k]
        mass = np.bincount(self._groups, weights=probs, minlength=4)
        return Classification(
            classes=[(self.labels[i], float(probs[i])) for i in order],
            categories={"person": float(mass[0]), "vehicle": float(mass[1]), "animal": float(mass[2]),
                        "object": float(mass[3])},
            top_index=int(order[0]), reliable=min(crop_bgr.shape[:2]) >= self.min_side,
            embedding=embedding_of(features[0][0]) if features else None)

    def embed_jpeg(self, jpeg: bytes) -> bytes | None:
        """The crop's appearance embedding alone (shared.embedding), for a crop nobody asked to classify."""
        return self._appearance.embed_jpeg(jpeg) if self._appearance is not None else None

    def classify_jpeg(self, jpeg: bytes) -> Classification | None:
        image = decode_jpeg(jpeg)
        return self.classify(image) if image is not None else None
