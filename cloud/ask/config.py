"""[ask] in the cloud config: how questions about the events are answered (cloud.ask.router)."""

from __future__ import annotations

from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import Field, field_validator

from ...shared.config import Strict
from ...shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from .voice.config import VoiceConfig

DeviceId = Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)]
CameraId = Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
ZoneName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")]


def check_timezone(value: str) -> str:
    """An IANA zone name (Europe/Berlin, UTC), or ValueError saying what is expected."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        near = sorted(z for z in available_timezones() if z.lower().endswith(value.lower().split("/")[-1]))[:3]
        hint = f" (did you mean {', '.join(near)}?)" if near else " (an IANA name such as Europe/Berlin or UTC)"
        raise ValueError(f"unknown time zone {value!r}{hint}") from None
    return value


class AskConfig(Strict):
    """Questions in words (POST /v1/ask): answer cache, keyword rules, complexity score, then the LLM.

    Times in questions ("today", "last night", "since 9") are read in the asking device's local time: the
    zone of the device in `timezones` (copy it from the device config's `timezone`), else `timezone`.
    Camera and zone names are the operator's: those in `cameras` and `zones` are read as words of a question;
    a name only a device sent is matched where the question quotes it (cloud.ask.vocab)."""

    enabled: bool = True
    timezone: str = "UTC"
    timezones: dict[DeviceId, str] = Field(default_factory=dict, description="device -> IANA time zone")
    t_max_ms: Annotated[float, Field(gt=0, le=600_000)] = Field(
        10_000.0, description="latency budget: an LLM answer expected to take longer is answered from the "
                              "fast path instead, marked partial")
    complexity_threshold: Annotated[float, Field(ge=0.0, le=1.0)] = Field(
        0.5, description="questions no rule answers go to the LLM when the classifier's score is at least this")
    cache_ttl_s: Annotated[float, Field(ge=0, le=86_400)] = 300.0
    cache_entries: Annotated[int, Field(ge=0, le=100_000)] = 1024
    max_question_chars: Annotated[int, Field(ge=16, le=4000)] = 500
    max_scan: Annotated[int, Field(ge=10, le=100_000)] = Field(
        5000, description="newest events a question looks at (per device or camera asked about)")
    context_events: Annotated[int, Field(ge=1, le=32)] = Field(8, description="events the LLM is given")
    max_new_tokens: Annotated[int, Field(ge=8, le=512)] = 48
    cameras: dict[DeviceId, list[CameraId]] = Field(
        default_factory=dict, description="device -> the camera names questions may use as words (\"the porch\"); "
                                          "other cameras only quoted (camera \"porch\")")
    zones: list[ZoneName] = Field(default_factory=list, description="zone names questions may use as words; "
                                                                    "other zones only quoted")
    max_learned_names: Annotated[int, Field(ge=0, le=1_000_000)] = Field(
        10_000, description="camera, zone and label names learned from events (for quoting), at most")
    workers: Annotated[int, Field(ge=1, le=32)] = Field(
        1, description="threads that answer questions, off the event loop (one: the interpreter lock lets no "
                          "two run Python at once, and each more takes turns from the event loop)")
    voice: VoiceConfig = Field(default_factory=VoiceConfig, description="spoken questions ([ask.voice])")

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return check_timezone(value)

    @field_validator("timezones")
    @classmethod
    def _zones(cls, value: dict[str, str]) -> dict[str, str]:
        for device, zone in value.items():
            try:
                check_timezone(zone)
            except ValueError as exc:
                raise ValueError(f"{device}: {exc}") from None
        return value

    def zone_for(self, devices: set[str] | None) -> ZoneInfo:
        """The zone questions are read in: the device's own when one device is asked about (or all asked
        about share one), else the default."""
        zones = {self.timezones.get(d, self.timezone) for d in devices} if devices else set()
        return ZoneInfo(zones.pop() if len(zones) == 1 else self.timezone)
