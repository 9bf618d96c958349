"""`edgetriage cloud run`: the service and its API in one asyncio loop until SIGTERM/SIGINT.

Shutdown is graceful: new HTTP events are refused (503), queued and running analyses get
`drain_timeout_s` to finish, whatever is left is released to the broker (or the next worker), then the
API closes."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
import time
from pathlib import Path

from ..shared.version import package_version
from .analysis import Backend, build_backend
from .compose import build_app, build_bridge, build_service, build_thresholds
from .config import CloudConfig
from .http.api import run_api
from .http.auth import ApiAuth
from .http.web import page_link
from .storage.redis_store import open_store

SETTLE_AGAIN_S = 60.0  # after start-up, once more: what the first minute loaded stays too

log = logging.getLogger("edgetriage.cloud")


def show_page_link(link: str, keep_in: Path | None = None) -> None:
    """The page's one-time link is a credential: shown on the terminal of an interactive start only, never
    written to a log or the journal. Without a terminal (systemd) it goes to `keep_in` (mode 600, beside the
    store), and the log says where."""
    if sys.stderr.isatty():
        print(f"live page (one-time link): {link}", file=sys.stderr, flush=True)
        return
    if keep_in is None:
        log.info("live page: the one-time link is shown only when started on a terminal")
        return
    try:
        keep_in.parent.mkdir(parents=True, exist_ok=True)  # with a Redis store, nothing made the folder yet
        keep_in.unlink(missing_ok=True)
        fd = os.open(keep_in, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(link + "\n")
        log.info("live page: a one-time link is in %s (readable by this service's user only)", keep_in)
    except OSError as exc:
        log.warning("live page: could not write the one-time link to %s (%s); start on a terminal to see it",
                    keep_in, exc.strerror or exc)


def settle_heap() -> None:
    """What start-up made (modules, models, the service) is kept out of the garbage collector's full passes
    (`gc.freeze`): a full pass then walks what questions and events made since, not the whole process. Before
    this, a full pass took 100-250 ms here, holding every thread, and was the event path's slowest moments
    while questions ran (their scans make many short-lived objects, and so many passes)."""
    gc.collect()
    gc.freeze()


async def serve(config: CloudConfig, *, backend: Backend | None = None, stop: asyncio.Event | None = None,
                config_file: str | None = None) -> None:
    """Until SIGTERM/SIGINT (or `stop`). `backend`: the model to use instead of the configured one (tests);
    `config_file`: where `config` came from, for the start-up line."""
    loop = asyncio.get_running_loop()
    if stop is None:
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    store = open_store(config)  # SQLite, or Redis when delivery.redis_url is set; first: it fails fast
    log.info("edgetriage %s cloud service: config %s; broker %s (prefix %s); store %s", package_version(),
             config_file or "none (defaults)", config.mqtt.url, config.mqtt.prefix,
             "Redis" if config.delivery.redis_url else config.store_path)
    if backend is None:
        started = time.monotonic()
        log.info("loading the analyzer (%s, %s)", config.analyzer.backend,
                 config.analyzer.model_path or "the default model, SmolLM2-135M")
        backend = await loop.run_in_executor(None, build_backend, config.analyzer)
        log.info("analyzer %s ready in %.1f s", backend.name, time.monotonic() - started)
    service = build_service(config, backend, store)
    ha = build_bridge(config, store, service)
    if ha is not None:
        ha.start()
    await service.start()
    thresholds = build_thresholds(config, store)
    auto = loop.create_task(thresholds.loop()) if thresholds is not None else None
    runner = None
    if config.http.enabled:
        auth = ApiAuth.from_config(config.http)
        app = build_app(store, service, auth=auth)
        runner = await run_api(app, config.http.host, config.http.port)
        base = f"http://{config.http.host}:{config.http.port}"
        log.info("API on %s", base)
        show_page_link(page_link(app, base), Path(config.store_path).parent / "page-link")
        if auth.generated:
            log.warning("no API token configured: /v1 is closed; %s", auth.hint())
    log.info("cloud service running; broker %s, prefix %s", config.mqtt.url, config.mqtt.prefix)
    settle_heap()
    loop.call_later(SETTLE_AGAIN_S, settle_heap)  # the models and sessions loaded on the first events
    await stop.wait()
    log.info("stopping: finishing in-flight work")
    await service.stop()
    if auto is not None:
        auto.cancel()
    if ha is not None:
        await ha.stop()
    if runner is not None:
        await runner.cleanup()
    await backend.close()
