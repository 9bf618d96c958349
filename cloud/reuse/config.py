"""The `[[sites]]` section of the cloud config: each site's name, its time zone and each device's cameras. The
table the service reads them through is cloud.reuse.sites."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from ...shared.config import Strict
from ...shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from ..ask.config import check_timezone

DeviceId = Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)]
CameraId = Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]


class SiteConfig(Strict):
    """One `[[sites]]` entry: a site's name, its time zone and each device's cameras."""

    name: Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)] = Field(description="the site's name")
    timezone: str = Field("UTC", description="the site's IANA time zone: its cameras' wall clock, which the "
                                             "policies' hours and the questions' days read")
    cameras: dict[DeviceId, Annotated[list[CameraId], Field(min_length=1)]] = Field(
        default_factory=dict, description="device -> the ids of its cameras, as its config names them")

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return check_timezone(value)


def check_sites(sites: list[SiteConfig]) -> None:
    """ValueError for a table that says a thing twice: a site or a device listed twice."""
    names: set[str] = set()
    devices: dict[str, str] = {}
    for site in sites:
        if site.name in names:
            raise ValueError(f"sites: {site.name!r} is listed twice; give each site one [[sites]] entry")
        names.add(site.name)
        for device in site.cameras:
            if device in devices:
                raise ValueError(f"sites: device {device!r} is in {devices[device]!r} and {site.name!r}; a device "
                                 "belongs to one site")
            devices[device] = site.name
