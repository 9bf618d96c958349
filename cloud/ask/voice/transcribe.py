"""Speech to text behind one small interface: a `Transcriber` takes 16 kHz mono audio and returns the words.

    pocketsphinx   on this machine's CPU, with the model its wheel ships (cloud.ask.voice.sphinx)
    openai         any OpenAI-compatible POST /v1/audio/transcriptions (vLLM serving Whisper, faster-whisper
                   servers): the audio as a WAV file, the model and language of [ask.voice]

`build_transcriber` picks the one [ask.voice] backend names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Protocol
from zoneinfo import ZoneInfo

from ..rules import Names, read
from .audio import Audio
from .config import API_KEY_ENV, VoiceConfig

UTC = ZoneInfo("UTC")  # rules_answer asks whether a text is answerable, not about which hours: any zone does


class TranscribeError(RuntimeError):
    """The back-end could not turn the audio into words (down, refused, misconfigured); the message says why."""


class Transcriber(Protocol):
    """What the API needs of a speech recogniser."""

    name: str

    async def transcribe(self, audio: Audio) -> str:
        """The words heard, lower or mixed case, no trailing newline ('' for nothing heard)."""
        ...

    def close(self) -> None: ...


class OpenAITranscriber:
    """POST {url}/audio/transcriptions, multipart: file (WAV), model, language, response_format=json."""

    name = "openai"

    def __init__(self, config: VoiceConfig, api_key: str | None = None) -> None:
        if config.url is None:
            raise ValueError("[ask.voice] backend = \"openai\" needs url, the server's base URL "
                             "(e.g. http://gpu:8000/v1)")
        self.endpoint = str(config.url).rstrip("/") + "/audio/transcriptions"
        self.model = config.model
        self.language = config.language
        self.timeout_s = config.timeout_s
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)

    async def transcribe(self, audio: Audio) -> str:
        import aiohttp

        form = aiohttp.FormData()
        form.add_field("file", audio.wav(), filename="question.wav", content_type="audio/wav")
        form.add_field("model", self.model)
        form.add_field("response_format", "json")
        if self.language:
            form.add_field("language", self.language)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as session:
                async with session.post(self.endpoint, data=form, headers=headers) as response:
                    raw = await response.read()
                    if response.status != 200:
                        raise TranscribeError(f"the transcription server at {self.endpoint} answered HTTP "
                                              f"{response.status}: {raw[:200].decode('utf-8', 'replace')}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TranscribeError(f"cannot reach the transcription server at {self.endpoint} "
                                  f"({type(exc).__name__}); check [ask.voice] url") from None
        try:
            text = json.loads(raw)["text"]
        except (ValueError, KeyError, TypeError):
            raise TranscribeError(f"the transcription server at {self.endpoint} did not answer "
                                  "{\"text\": ...}") from None
        if not isinstance(text, str):
            raise TranscribeError(f"the transcription server at {self.endpoint} answered a text that is no string")
        return text.strip()

    def close(self) -> None:
        return None


def build_transcriber(config: VoiceConfig, names: Callable[[], Iterable[str]],
                      reads: Callable[[str], bool] | None = None) -> Transcriber:
    """The back-end [ask.voice] names; for the CPU one, `names` gives the site's words now (cameras, zones)
    and `reads` whether the router answers a text by its rules (rules_answer)."""
    if config.backend == "openai":
        return OpenAITranscriber(config)
    from .sphinx import SphinxTranscriber

    return SphinxTranscriber(config, names, reads)


def rules_answer(vocabulary: Callable[[], Names]) -> Callable[[str], bool]:
    """Whether the router's rules answer a text (an intent, no open question, no word that would have made it one
    set aside: "how many people wear ..." is a count that names "wear", a worse hearing) with the names
    `vocabulary` gives."""

    def reads(text: str) -> bool:
        query = read(text, vocabulary(), UTC, 0)
        return query.rule_answerable and not query.asked_open

    return reads
