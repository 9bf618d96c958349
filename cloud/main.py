"""`edgetriage cloud run`: the service and its API in one asyncio loop until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import logging
import signal

from .analyzer import build_analyzer
from .api import build_app, run_api
from .config import CloudConfig
from .service import CloudService
from .store import Store

log = logging.getLogger("edgetriage.cloud")


async def serve(config: CloudConfig) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    analyzer = await loop.run_in_executor(None, build_analyzer, config.analyzer)
    store = Store(config.store_path)
    service = CloudService(config, analyzer, store)
    await service.start()
    runner = None
    if config.http.enabled:
        runner = await run_api(build_app(store, service), config.http.host, config.http.port)
        log.warning("API on http://%s:%d", config.http.host, config.http.port)
    log.warning("cloud service running; broker %s, prefix %s", config.mqtt.url, config.mqtt.prefix)
    await stop.wait()
    log.warning("stopping: finishing in-flight work")
    await service.stop()
    if runner is not None:
        await runner.cleanup()
