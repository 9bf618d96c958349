"""The composition root: the one place that builds the cloud's parts and passes each the others it needs. The
service (`cloud.pipeline.service`), the HTTP API with its asker and learner, the Home Assistant bridge and the
automatic thresholds are made here; `cloud.main.serve`, the demo (`edgetriage.demo`) and the tests use these
same factories, so what runs in a test is what runs in production."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aiohttp import web

from .analysis import Backend
from .ask.api import build_asker
from .config import CloudConfig, HomeAssistantConfig, HTTPConfig
from .http.api import api_app
from .http.auth import ApiAuth
from .ops.ha import HomeAssistantBridge, known_cameras
from .pipeline.holding import Holding
from .pipeline.service import CloudService
from .storage.claims import Claims
from .storage.store import Store
from .teach.suppress.learner import Learner
from .teach.suppress.publish import publish_suppressions
from .teach.suppress.store import open_suppressions
from .teach.thresholds import AutoThresholds


def build_service(config: CloudConfig, backend: Backend, store: Store, *,
                  on_verdict: Callable[[Any], None] | None = None, claims: Claims | None = None) -> CloudService:
    """The event pipeline on `store`, answering with `backend` (the back-end stays its maker's to close);
    `claims` default to the config's, opened when the first event is claimed."""
    return CloudService(config, backend, store, holding=Holding(config, store, claims), on_verdict=on_verdict)


def build_learner(service: CloudService) -> Learner | None:
    """The learner hearing the service's verdicts (its store, the cloud's appearance model, the devices' remote
    config on the service's broker); None when [suppressions] enabled = false."""
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


def build_app(store: Store, service: CloudService | None, models_dir: Path | None = None, *,
              http: HTTPConfig | None = None, auth: ApiAuth | None = None,
              extras: Iterable[Callable[[web.Application], Any]] = ()) -> web.Application:
    """The HTTP API on `store` (and `service`, None for an API-only process) with the asker and the learner
    that hear the service; `auth` defaults to the tokens of `http` (or the service's config); `extras` are
    called with the app to add routes of their own."""
    asker = build_asker(store, service)
    learner = build_learner(service) if service is not None else None
    return api_app(store, service, models_dir, http=http, auth=auth, extras=extras, asker=asker, learner=learner)


def build_bridge(config: CloudConfig, store: Store, service: CloudService, *,
                 settings: HomeAssistantConfig | None = None,
                 client_id: str | None = None) -> HomeAssistantBridge | None:
    """The Home Assistant bridge on a connection of its own, attached to the service; None when disabled.
    `settings` and `client_id` default to the config's (the demo passes its own)."""
    settings = settings if settings is not None else config.homeassistant
    if not settings.enabled:
        return None
    client_id = client_id or f"{config.mqtt.client_id or config.group + '-cloud'}-ha"
    bridge = HomeAssistantBridge(settings, config.mqtt, client_id=client_id, known=known_cameras(store))
    bridge.attach(service)
    return bridge


def build_thresholds(config: CloudConfig, store: Store) -> AutoThresholds | None:
    """The automatic per-camera thresholds ([thresholds] auto), None when the operator accepts them by hand."""
    return AutoThresholds(store, config) if config.thresholds.auto else None


__all__ = ["build_app", "build_bridge", "build_learner", "build_service", "build_thresholds"]
