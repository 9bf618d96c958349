"""What the observers read of the cloud service, as typed read-only views: the figures (cloud.ops.figures),
/metrics (cloud.ops.metrics), the page (cloud.http.web), questions (cloud.ask) and the Home Assistant bridge
(cloud.ops.ha). An observer reads these and adds itself to the listener lists; it never changes the service.

`Counted`, what the figures are computed from, is declared beside them (cloud.ops.figures). `CloudService` is the
one implementation; the views name exactly what is read, so a change to the service that an observer relies on
shows up here, and a test can hand an observer any object with these members.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ...shared.protocol import Event, Verdict
from .figures import Counted, Figures

if TYPE_CHECKING:
    from ..broker.health import IntakeHealth
    from ..config import CloudConfig
    from ..counts.pressure import EventPressure
    from ..reuse.sites import SiteTable


class Listened(Protocol):
    """Who hears of every new event (with its receipt time, ms) and every new verdict, on the service's loop."""

    @property
    def event_listeners(self) -> list[Callable[[Event, int], None]]: ...

    @property
    def verdict_listeners(self) -> list[Callable[[Verdict], None]]: ...

    @property
    def pressure(self) -> EventPressure:
        """The events worked on now, which questions give way to (cloud.counts.pressure)."""


class ObservedService(Listened, Counted, Protocol):
    """Everything an observer reads: the above, the live gauges, the figures and the configuration."""

    @property
    def pending(self) -> int: ...

    @property
    def overloaded(self) -> bool: ...

    @property
    def figures(self) -> Figures: ...

    @property
    def sites(self) -> SiteTable: ...

    @property
    def health(self) -> IntakeHealth: ...

    @property
    def config(self) -> CloudConfig: ...
