"""[ask.voice] in the cloud config: how spoken questions are heard (cloud.ask.voice)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, HttpUrl, model_validator

from ....shared.config import Strict

API_KEY_ENV = "EDGETRIAGE_TRANSCRIBE_API_KEY"  # the openai back-end's key: a secret, so from the environment


class VoiceConfig(Strict):
    """Spoken questions on POST /v1/ask (an audio/* body) and the page's microphone button.

    `pocketsphinx` recognises on this machine's CPU with the model its wheel ships, told the site's words
    (cameras, zones, the router's question words); `openai` posts the audio to any OpenAI-compatible
    /v1/audio/transcriptions endpoint (vLLM serving Whisper, a faster-whisper server) at `url`, with the
    key from $EDGETRIAGE_TRANSCRIBE_API_KEY when it needs one."""

    enabled: bool = True
    backend: Literal["pocketsphinx", "openai"] = "pocketsphinx"
    max_audio_bytes: Annotated[int, Field(ge=16_384, le=16 << 20)] = Field(
        2 << 20, description="largest audio body accepted (413 above it)")
    max_audio_s: Annotated[float, Field(gt=0, le=120)] = Field(
        30.0, description="longest question accepted, in seconds of audio (400 above it)")
    max_waiting: Annotated[int, Field(ge=1, le=64)] = Field(
        4, description="spoken questions heard or waiting at once; one more is refused (503) until one is done")
    url: HttpUrl | None = Field(None, description="openai: the server's base URL, e.g. http://gpu:8000/v1")
    model: str = Field("whisper-1", min_length=1, max_length=200, description="openai: the model to ask for")
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0
    language: str | None = Field("en", pattern=r"^[a-z]{2}$", description="openai: the language spoken")
    language_weight: Annotated[float, Field(ge=1, le=30)] = Field(
        8.0, description="pocketsphinx: how much the site's language model counts against the sound")

    @model_validator(mode="after")
    def _url_for_openai(self) -> VoiceConfig:
        if self.backend == "openai" and self.url is None:
            raise ValueError("backend = \"openai\" needs url, the transcription server's base URL "
                             "(e.g. http://gpu:8000/v1)")
        return self
