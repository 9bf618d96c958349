"""A spoken question on POST /v1/ask: the audio body read within its limit, decoded, transcribed, counted.

    POST /v1/ask?camera=&device=&since=    Content-Type: audio/wav | audio/webm | audio/ogg | ...
    -> the answer to the words heard, as for {"question": ...}, with "transcript": the words heard

The body is read from the stream with [ask.voice] max_audio_bytes as its limit (413 past it, nothing more read),
apart from [http] max_body_bytes, which bounds JSON bodies. Figures (one measurement, read by /v1/stats and
/metrics): transcriptions, their latency, and the share of them answered.

Spoken questions never wait where events are worked on: the audio is decoded on a thread of the hearing's own
(the recogniser has its own too), and at most [ask.voice] max_waiting are heard or waiting at once; one more is
a 503 saying so. A recording with no speech in it is a 400 "no speech heard", never a 500.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from ....shared.stats import median, percentile
from ..guard import AskError
from .audio import ACCEPTED, AudioError, decode
from .config import VoiceConfig
from .transcribe import TranscribeError, Transcriber

QUERY_FIELDS = frozenset({"camera", "device", "since"})
WINDOW = 1000


def is_audio(request: web.Request) -> bool:
    return request.content_type.startswith("audio/") or request.content_type == "video/webm"


class VoiceStats:
    """Transcriptions, their latency (ms) and how many were answered (a 200 to the words heard)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.transcriptions = 0
        self.failed = 0  # the back-end could not transcribe
        self.refused = 0  # audio refused: too large, too long, undecodable, nothing heard
        self.answered = 0
        self.latency_ms: deque[float] = deque(maxlen=WINDOW)
        self.audio_s: deque[float] = deque(maxlen=WINDOW)

    def count(self, **changes: int) -> None:
        with self._lock:
            for name, n in changes.items():
                setattr(self, name, getattr(self, name) + n)

    def heard(self, ms: float, seconds: float) -> None:
        with self._lock:
            self.transcriptions += 1
            self.latency_ms.append(ms)
            self.audio_s.append(seconds)

    def figures(self, backend: str) -> dict[str, Any]:
        with self._lock:
            latency = sorted(self.latency_ms)
            rtf = sum(self.latency_ms) / 1000 / sum(self.audio_s) if self.audio_s and sum(self.audio_s) else None
            return {"backend": backend, "transcriptions": self.transcriptions, "answered": self.answered,
                    "answered_share": round(self.answered / self.transcriptions, 4) if self.transcriptions else None,
                    "failed": self.failed, "refused": self.refused, "transcribe_p50_ms": median(latency),
                    "transcribe_p95_ms": percentile(latency, 0.95),
                    "rtf": round(rtf, 4) if rtf is not None else None}


class Hearing:
    """Audio bodies to questions, with the figures of how that went."""

    def __init__(self, config: VoiceConfig, transcriber: Transcriber) -> None:
        self.config = config
        self.transcriber = transcriber
        self.stats = VoiceStats()
        self._decoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="voice-decode")
        self._waiting = 0  # questions being heard or waiting to be (read and changed on the event loop only)

    def figures(self) -> dict[str, Any]:
        return self.stats.figures(self.transcriber.name)

    async def question(self, request: web.Request) -> dict[str, Any]:
        """The ask body for the words heard in the request's audio: {"question", "camera"?, ...}; AskError
        413 (too large), 400 (too long, undecodable, nothing heard, bad parameter), 415, 502 (back-end down)."""
        if self._waiting >= self.config.max_waiting:
            self.stats.count(refused=1)
            raise AskError(503, f"busy: {self._waiting} spoken questions are being heard ([ask.voice] max_waiting); "
                                "ask again in a moment, or type the question")
        self._waiting += 1
        try:
            return await self._heard(request)
        finally:
            self._waiting -= 1

    async def _heard(self, request: web.Request) -> dict[str, Any]:
        try:
            body = self._fields(request)
            data = await self._read(request)
            audio = await asyncio.get_running_loop().run_in_executor(
                self._decoder, lambda: decode(data, max_seconds=self.config.max_audio_s))
        except AudioError as exc:
            self.stats.count(refused=1)
            raise AskError(exc.status, str(exc)) from None
        started = time.perf_counter()
        try:
            text = await self.transcriber.transcribe(audio)
        except TranscribeError as exc:
            self.stats.count(failed=1)
            raise AskError(502, str(exc)) from None
        self.stats.heard((time.perf_counter() - started) * 1000, audio.seconds)
        if not text.strip():
            raise AskError(400, "no speech heard in the recording; speak closer to the microphone and ask again")
        return {**body, "question": text.strip()}

    def close(self) -> None:
        self._decoder.shutdown(wait=True, cancel_futures=True)
        self.transcriber.close()

    def answered(self) -> None:
        self.stats.count(answered=1)

    def _fields(self, request: web.Request) -> dict[str, Any]:
        if request.content_type not in ACCEPTED and request.content_type != "video/webm":
            raise AudioError(415, f"Content-Type {request.content_type} is not audio this service reads; send "
                                  f"one of {', '.join(ACCEPTED[:6])}, ...")
        unknown = sorted(set(request.query) - QUERY_FIELDS)
        if unknown:
            raise AudioError(400, f"unknown parameter(s) {', '.join(unknown)[:80]} with audio; allowed: "
                                  f"{', '.join(sorted(QUERY_FIELDS))}")
        body: dict[str, Any] = {name: request.query[name] for name in ("camera", "device") if name in request.query}
        if "since" in request.query:
            since = request.query["since"]
            body["since"] = int(since) if since.isdigit() else since
        return body

    async def _read(self, request: web.Request) -> bytes:
        limit = self.config.max_audio_bytes
        too_large = AudioError(413, f"the audio is over {limit} bytes ([ask.voice] max_audio_bytes); record "
                                    f"at most {self.config.max_audio_s:g} s")
        if request.content_length is not None and request.content_length > limit:
            raise too_large
        data = bytearray()
        async for chunk in request.content.iter_chunked(64 * 1024):
            data += chunk
            if len(data) > limit:
                raise too_large
        return bytes(data)
