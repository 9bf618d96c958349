"""What one camera's vision pipeline (edge/vision/pipeline.py) is configured with and what it hands out: the
`VisionConfig` schema, the `TrackEvent` of an object seen for a while, the `PipelineOutput` of each frame."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import Field

from ...shared.config import Strict
from ...shared.protocol import CROP_MARGIN
from .classify import Classification, ClassifierConfig
from .detect import Det, DetectorConfig
from .looks import LookConfig
from .motion import MotionConfig
from .samples import GalleryConfig, TrackLook
from .track import TrackerConfig

# what the detector's boxes are tracked as; other COCO labels only explain motion (a "tv" flickering, a
# car seen from above that YOLOX calls "cell phone") and are never events
DEFAULT_TRACK_LABELS = ["person", "bicycle", "car", "motorcycle", "bus", "truck", "bird", "cat", "dog", "horse",
                        "sheep", "cow", "bear"]

class VisionConfig(Strict):
    motion: MotionConfig = Field(default_factory=MotionConfig)
    detector: DetectorConfig = Field(default_factory=DetectorConfig)
    # a second detector for uncertain regions only (the "SSDLite first, YOLOX on doubt" arrangement);
    # None: the primary detector's own look decides
    verifier: DetectorConfig | None = None
    classifier: ClassifierConfig | None = Field(default_factory=ClassifierConfig)
    tracker: TrackerConfig = Field(default_factory=TrackerConfig)
    looks: LookConfig = Field(default_factory=LookConfig)  # looks motion does not ask for (looks.py)
    gallery: GalleryConfig = Field(default_factory=GalleryConfig)  # looks kept as reuse keys (samples.py)
    track_labels: list[str] = Field(default_factory=lambda: list(DEFAULT_TRACK_LABELS))
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.2  # detections under this are not tracked
    uncertain_below: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5  # best person score under this -> uncertain
    # a motion region is an uncertain person only with at least this person score somewhere in it (a
    # faint box the tracker ignores): motion with no sign of a person at all is a car, a shadow, a ghost
    uncertain_min_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.1
    # ... and only while the classifier, on a crop big enough to judge (`min_side`), gives a person at least
    # this much of its probability (what a person wears or carries): faint boxes alone are what noise, rain
    # and cars from above make; two models that each barely see a person are not one that does (0: off)
    uncertain_min_person_mass: Annotated[float, Field(ge=0.0, le=1.0)] = 0.3
    uncertain_regions: bool = True  # unexplained motion that persists becomes a track (pipeline.py, step 4)
    uncertain_after_s: Annotated[float, Field(ge=0.0)] = 1.0
    # a motion region the classifier gives this much vehicle/animal probability is named, not uncertain
    veto_min_prob: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    # while all motion belongs to tracked objects, the detector looks at most this often (0: every frame)
    tracked_interval_s: Annotated[float, Field(ge=0.0, le=60.0)] = 1.0
    # while some motion spills out of tracked objects' boxes (they move on), at most this often (0: every frame)
    moving_interval_s: Annotated[float, Field(ge=0.0, le=60.0)] = 0.25
    crop_max_side: Annotated[int, Field(ge=32, le=4096)] = 320
    crop_margin: Annotated[float, Field(ge=0.0, le=1.0)] = CROP_MARGIN


@dataclass
class TrackEvent:
    """One object seen for a while (a track's first event, or another when it walked into a new zone). Fields are
    fixed when the event is emitted, except `last_ts` and `hits`, which are updated once more when the track
    ends."""

    camera: str
    track_id: int
    label: str
    score: float  # best score seen up to emission
    median_score: float
    uncertain: bool  # best person score below VisionConfig.uncertain_below, or a resolved motion region
    first_ts: float  # seconds from stream start (pts)
    last_ts: float
    captured_ms: int  # wall_ms of the best frame
    box: tuple[float, float, float, float]  # best frame's box, normalised
    detections: list[Det]  # all detections on the best frame
    crop_jpeg: bytes
    crop_size: tuple[int, int]
    phash: str
    phash_alg: str = "dct64"
    hits: int = 0
    zones: list[str] = field(default_factory=list)  # zones the object stood in up to emission
    dwell_s: float = 0.0  # longest stay in one zone (no zones: age) up to emission
    source: Literal["detector", "motion"] = "detector"  # what first saw it
    classification: Classification | None = None  # set by the pipeline or, where a rule asks, the agent
    crop_box: tuple[float, float, float, float] | None = None  # where crop_jpeg was cut, frame-normalised
    direction: str | None = None  # its way across the picture up to emission (edge.vision.track.direction_of)
    embedding: bytes | None = None  # appearance embedding (shared.embedding), set by the triage when it may escalate
    # the visit it belongs to (edge.vision.track.IoUTracker.join_visit): tracks the tracker lost and found again,
    # or saw twice, share one; "" when not known (an event made elsewhere)
    visit: str = ""

    @property
    def classes(self) -> list[tuple[str, float]]:
        """The classifier's top classes, best first ([] when it did not look)."""
        return list(self.classification.classes) if self.classification is not None else []


@dataclass
class PipelineOutput:
    new_events: list[TrackEvent]
    ended: list[TrackEvent]  # a track emitted only when it ends appears in both lists of the same output
    # tracks the stream ended on before they were confirmed: shown by replay, never events, never escalated
    tentative: list[TrackEvent] = field(default_factory=list)
    # looks of tracks sampled for the gallery (edge/triage/gallery.py), each once its track's event is out
    looks: list[TrackLook] = field(default_factory=list)
