"""What the observers read of the cloud service, as typed read-only views: the figures (cloud.figures),
/metrics (cloud.metrics), the page (cloud.http.web), questions (cloud.ask) and the Home Assistant bridge
(cloud.ha). An observer reads these and adds itself to the listener lists; it never changes the service.

`CloudService` is the one implementation; the views name exactly what is read, so a change to the service
that an observer relies on shows up here, and a test can hand an observer any object with these members.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..shared.protocol import Event, Verdict

if TYPE_CHECKING:
    from .analysis import Backend
    from .config import CloudConfig
    from .figures import Figures
    from .health import IntakeHealth
    from .scheduler import Scheduler
    from .servicestats import ServiceStats


class Listened(Protocol):
    """Who hears of every new event (with its receipt time, ms) and every new verdict, on the service's loop."""

    @property
    def event_listeners(self) -> list[Callable[[Event, int], None]]: ...

    @property
    def verdict_listeners(self) -> list[Callable[[Verdict], None]]: ...


class Counted(Protocol):
    """What the figures are computed from: the service's counters and latency windows, its scheduler, the
    model back-end and the broker connection."""

    @property
    def stats(self) -> ServiceStats: ...

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def backend(self) -> Backend: ...

    @property
    def mqtt_connected(self) -> bool: ...


class ObservedService(Listened, Counted, Protocol):
    """Everything an observer reads: the above, the live gauges, the figures and the configuration."""

    @property
    def analyzer(self) -> Backend: ...

    @property
    def pending(self) -> int: ...

    @property
    def overloaded(self) -> bool: ...

    @property
    def figures(self) -> Figures: ...

    @property
    def health(self) -> IntakeHealth: ...

    @property
    def config(self) -> CloudConfig: ...
