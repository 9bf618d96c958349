"""The `openai` back-end: any OpenAI-compatible chat-completions server over aiohttp. This is how vLLM runs in
production (`vllm serve <model>`), and it equally drives llama.cpp's server, `transformers serve` and hosted
APIs.

- One request per event; the server batches (vLLM batches continuously). Several base URLs spread the load,
  round-robin or to the one with the fewest requests in flight, so replicas scale out.
- The verdict's JSON schema goes with the request where the server enforces one: OpenAI `response_format`
  (also accepted by vLLM and llama.cpp) or vLLM's own `structured_outputs` (the older `guided_json` fields were
  removed in vLLM 0.12). A server that refuses the field is asked again without it, and the answer is parsed
  leniently instead.
- Vision models get the crop as an image data URL; text-only models get it described in words.
- Timeouts, retries with jittered exponential backoff (honouring Retry-After) on connection errors, 408, 429
  and 5xx; never an exception: what cannot be answered becomes "unknown" with the reason.
- The API key comes from the environment variable the config names, never from the config file.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from ...shared.protocol import Event
from ..config import AnalyzerConfig, OpenAIConfig
from .answer import answer_schema
from .base import Analysis, fallback
from .calibrate import Calibration
from .check import analysis_from_text
from .prompt import Prompt, PromptBuilder, chat_messages

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
SATURATED_STATUS = frozenset({429, 503})
SATURATED_FOR_S = 5.0  # how long a 429/503 marks the back-end as saturated
MAX_RESPONSE_BYTES = 1 << 20
UNREACHABLE_DOWN_S = 1.0  # at least this long out of rotation after a refused connection or a timeout
_SCHEMA_FIELDS = ("response_format", "structured_outputs", "json_schema")


@dataclass
class Endpoint:
    """One base URL and what we know of it."""

    url: str
    mode: str  # how the schema is sent to it: response_format | structured_outputs | none
    in_flight: int = 0
    failures: int = 0
    down_until: float = 0.0
    requests: int = 0

    @property
    def chat_url(self) -> str:
        return f"{self.url}/chat/completions"


class _Retry(Exception):
    """A failure another attempt may fix."""

    def __init__(self, reason: str, after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.after_s = after_s


class _Refused(Exception):
    """A failure no retry will fix (a 4xx other than the retryable ones)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def request_body(config: OpenAIConfig, prompt: Prompt, mode: str, max_tokens: int) -> dict[str, Any]:
    """The chat-completions request for one prompt, with the answer schema sent the way `mode` says."""
    body: dict[str, Any] = {"model": config.model, "messages": chat_messages(prompt), "max_tokens": max_tokens,
                            "temperature": config.temperature, "stream": False}
    if mode == "response_format":
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "verdict", "schema": answer_schema(), "strict": True}}
    elif mode == "structured_outputs":
        body["structured_outputs"] = {"json": answer_schema()}
    return body


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class OpenAIBackend:
    """Async; safe to call from one event loop at a time (its HTTP session is made in the loop that uses it)."""

    def __init__(self, config: AnalyzerConfig, builder: PromptBuilder,
                 calibration: Calibration | None = None) -> None:
        self.config = config
        self.settings = config.openai
        self.builder = builder
        self.calibration = calibration or Calibration.load()
        self.name = self.settings.model[-128:]
        first_mode = "response_format" if self.settings.structured_output == "auto" else self.settings.structured_output
        self.endpoints = [Endpoint(url, first_mode) for url in self.settings.base_urls]
        self.max_batch = 1
        self.concurrency = self.settings.max_in_flight * len(self.endpoints)
        self._next = 0
        self._saturated_until = 0.0
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    def prompt_version(self, event: Event) -> str:
        return self.builder.version(event)

    def saturated(self) -> bool:
        now = time.monotonic()
        return now < self._saturated_until or all(ep.down_until > now for ep in self.endpoints)

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    def _http(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            headers = {"Content-Type": "application/json"}
            key = os.environ.get(self.settings.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
            self._session = aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(
                limit=self.concurrency, limit_per_host=self.settings.max_in_flight))
            self._session_loop = loop
        return self._session

    def pick(self, avoid: Endpoint | None = None) -> Endpoint:
        """The endpoint for the next request: among those not marked down (all, if every one is), the next in
        turn, or the one with the fewest requests in flight (ties go in turn). A retry avoids the endpoint
        that just failed when there is another."""
        now = time.monotonic()
        candidates = [ep for ep in self.endpoints if ep.down_until <= now] or list(self.endpoints)
        if avoid is not None and len(candidates) > 1:
            candidates = [ep for ep in candidates if ep is not avoid] or candidates
        start = self._next
        self._next = (self._next + 1) % len(self.endpoints)
        order = sorted(candidates, key=lambda ep: (self.endpoints.index(ep) - start) % len(self.endpoints))
        if self.settings.balance == "least_loaded":
            return min(order, key=lambda ep: ep.in_flight)
        return order[0]

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        return list(await asyncio.gather(*(self.analyze(event) for event in events)))

    async def analyze(self, event: Event) -> Analysis:
        """One event, one request (with retries); never raises."""
        started = time.perf_counter()
        try:
            version = self.builder.version(event)
            prompt = await asyncio.to_thread(self.builder.build, event)
        except Exception as exc:  # noqa: BLE001 - a describer or template problem becomes "unknown"
            return fallback(self.name, "unknown", f"cannot build the prompt: {type(exc).__name__}: {exc}", started)
        # timeout_s bounds each attempt; this only guards against a hang outside the HTTP calls
        overall = self.config.timeout_s * (self.settings.retries + 1) + 30.0
        try:
            return await asyncio.wait_for(self._ask(prompt, started), overall)
        except TimeoutError:
            return fallback(self.name, version, f"timed out after {overall:g} s", started, prompt.extra())
        except Exception as exc:  # noqa: BLE001 - never raise to the scheduler
            log.warning("openai back-end failed: %s: %s", type(exc).__name__, exc)
            return fallback(self.name, version, f"{type(exc).__name__}: {exc}", started, prompt.extra())

    async def _ask(self, prompt: Prompt, started: float) -> Analysis:
        attempt = 0
        last: Endpoint | None = None
        reason = "no attempt made"
        while True:
            endpoint = self.pick(avoid=last)
            try:
                data = await self._post(endpoint, prompt)
                return self._to_analysis(data, prompt, endpoint, started, attempt)
            except _Retry as retry:
                reason = retry.reason
                if attempt >= self.settings.retries:
                    break
                pause = self.settings.backoff_s * (2 ** attempt) * random.uniform(0.5, 1.5)
                if retry.after_s is not None:
                    pause = max(pause, retry.after_s)
                attempt += 1
                last = endpoint
                await asyncio.sleep(pause)
            except _Refused as refused:
                return fallback(self.name, prompt.version, refused.reason, started, prompt.extra())
        return fallback(self.name, prompt.version, f"{reason} (after {attempt + 1} attempts)", started, prompt.extra())

    async def _post(self, endpoint: Endpoint, prompt: Prompt) -> dict[str, Any]:
        """One request; raises _Retry for what another attempt may fix, _Refused for what it will not."""
        http = self._http()
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_s, sock_connect=self.settings.connect_timeout_s)
        endpoint.in_flight += 1
        endpoint.requests += 1
        try:
            while True:
                body = request_body(self.settings, prompt, endpoint.mode, self.config.max_new_tokens)
                try:
                    async with http.post(endpoint.chat_url, json=body, timeout=timeout) as response:
                        raw = await response.content.read(MAX_RESPONSE_BYTES)
                        status, headers = response.status, response.headers
                except TimeoutError:  # before ClientError: aiohttp's timeouts are both
                    self._failed(endpoint, None, unreachable=True)
                    raise _Retry(f"{endpoint.url}: no answer within {self.config.timeout_s:g} s") from None
                except (aiohttp.ClientError, OSError) as exc:
                    self._failed(endpoint, None, unreachable=True)
                    raise _Retry(f"{endpoint.url}: {type(exc).__name__}: {exc}".strip().rstrip(":")) from None
                text = raw.decode("utf-8", "replace")
                if status == 200:
                    endpoint.failures = 0
                    try:
                        return json.loads(text)
                    except ValueError:
                        raise _Retry(f"{endpoint.url}: answered 200 with a body that is not JSON") from None
                if status in (400, 422) and endpoint.mode != "none" and self.settings.structured_output == "auto" \
                        and any(field in text for field in _SCHEMA_FIELDS):
                    log.warning("%s refuses the answer schema (%s); asking without it", endpoint.url, endpoint.mode)
                    endpoint.mode = "none"
                    continue
                if status in RETRY_STATUS:
                    self._failed(endpoint, status, _retry_after(headers))
                    raise _Retry(f"{endpoint.url} answered HTTP {status}: {text[:200]}", _retry_after(headers))
                raise _Refused(f"{endpoint.url} answered HTTP {status}: {text[:200]}")
        finally:
            endpoint.in_flight -= 1

    def _failed(self, endpoint: Endpoint, status: int | None, after_s: float | None = None,
                unreachable: bool = False) -> None:
        """Mark an endpoint down for a while: as long as it asked (Retry-After), else backing off with its
        consecutive failures; one that cannot be reached at all for at least UNREACHABLE_DOWN_S, so retries
        go to the replicas that answer."""
        endpoint.failures += 1
        pause = after_s if after_s is not None else min(30.0, self.settings.backoff_s * 2 ** min(endpoint.failures, 6))
        if unreachable:
            pause = max(pause, UNREACHABLE_DOWN_S)
        endpoint.down_until = time.monotonic() + pause
        if status in SATURATED_STATUS:
            self._saturated_until = time.monotonic() + max(SATURATED_FOR_S, after_s or 0.0)

    def _to_analysis(self, data: dict[str, Any], prompt: Prompt, endpoint: Endpoint, started: float,
                     retries: int) -> Analysis:
        extra = prompt.extra()
        extra.update(endpoint=endpoint.url, retries=retries, schema=endpoint.mode)
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            extra.update(prompt_tokens=usage.get("prompt_tokens"), new_tokens=usage.get("completion_tokens"))
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return fallback(self.name, prompt.version, "the server's answer has no choices[0].message.content",
                            started, extra)
        if not isinstance(content, str):
            return fallback(self.name, prompt.version, "the server answered without text", started, extra)
        return analysis_from_text(content, prompt, self.calibration, name=self.name, started=started, extra=extra)
