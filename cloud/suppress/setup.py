"""Wiring: the learner for a running service (its store, its verdicts, the cloud's appearance model, the
device's remote config on the service's broker). The composition root (cloud.main, the demo) calls this."""

from __future__ import annotations

from ..config import CloudConfig
from ..service import CloudService
from .learner import Learner
from .publish import publish_suppressions
from .store import open_suppressions


def build_learner(config: CloudConfig, service: CloudService) -> Learner | None:
    """The learner hearing the service's verdicts; None when [suppressions] enabled = false."""
    settings = config.suppressions
    if not settings.enabled:
        return None
    learner = Learner(settings, open_suppressions(config, service.store), service.store,
                      embed=service.trust.keys.embedding,
                      publish=lambda device, rules: publish_suppressions(config.mqtt, device, rules,
                                                                         wait_s=settings.push_wait_s))
    service.verdict_listeners.append(learner.on_verdict)
    return learner


__all__ = ["build_learner"]
