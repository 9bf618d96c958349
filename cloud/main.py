"""`edgetriage cloud run`: the service and its API in one asyncio loop until SIGTERM/SIGINT.

Shutdown is graceful: new HTTP events are refused (503), queued and running analyses get
`drain_timeout_s` to finish, whatever is left is released to the broker (or the next worker), then the
API closes."""

from __future__ import annotations

import asyncio
import logging
import signal

from .analysis import build_backend
from .api import build_app, run_api
from .auth import ApiAuth
from .config import CloudConfig
from .ha import HomeAssistantBridge, known_cameras
from .redis_store import open_store
from .service import CloudService
from .web import page_link

log = logging.getLogger("edgetriage.cloud")


async def serve(config: CloudConfig) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    backend = await loop.run_in_executor(None, build_backend, config.analyzer)
    store = open_store(config)  # SQLite, or Redis when delivery.redis_url is set
    service = CloudService(config, backend, store)
    ha = None
    if config.homeassistant.enabled:
        client_id = f"{config.mqtt.client_id or config.group + '-cloud'}-ha"
        ha = HomeAssistantBridge(config.homeassistant, config.mqtt, client_id=client_id, known=known_cameras(store))
        ha.attach(service)
        ha.start()
    await service.start()
    runner = None
    if config.http.enabled:
        auth = ApiAuth.from_config(config.http)
        app = build_app(store, service, auth=auth)
        runner = await run_api(app, config.http.host, config.http.port)
        base = f"http://{config.http.host}:{config.http.port}"
        log.warning("API on %s; live page (one-time link): %s", base, page_link(app, base))
        if auth.generated:
            log.warning("no API token configured: /v1 is closed; %s", auth.hint())
    log.warning("cloud service running; broker %s, prefix %s", config.mqtt.url, config.mqtt.prefix)
    await stop.wait()
    log.warning("stopping: finishing in-flight work")
    await service.stop()
    if ha is not None:
        await ha.stop()
    if runner is not None:
        await runner.cleanup()
    await backend.close()
