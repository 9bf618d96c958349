"""Wiring: the learner for a running service (its store, its verdicts, the cloud's appearance model, the
device's remote config on the service's broker). cloud.http.api.build_app calls it, beside the page and the asker."""

from __future__ import annotations

from ...pipeline.service import CloudService
from .learner import Learner
from .publish import publish_suppressions
from .store import open_suppressions


def build_learner(service: CloudService) -> Learner | None:
    """The learner hearing the service's verdicts; None when [suppressions] enabled = false."""
    config = service.config
    settings = config.suppressions
    if not settings.enabled:
        return None
    learner = Learner(settings, open_suppressions(config, service.store), service.store,
                      embed=service.trust.keys.embedding,
                      publish=lambda device, rules: publish_suppressions(config.mqtt, device, rules,
                                                                         wait_s=settings.push_wait_s))
    service.verdict_listeners.append(learner.on_verdict)
    service.feedback.listeners.append(learner.on_feedback)  # benign feedback teaches, an alert takes back
    return learner


__all__ = ["build_learner"]
