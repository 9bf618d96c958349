"""The one place questions reach a language model: free text from the configured back-end ([analyzer]).

    transformers  the CPU default (SmolLM2-135M), the same weights the analyzer loaded, greedy decoding with
                  a time limit, one question at a time on a thread of its own
    openai        any OpenAI-compatible chat-completions server (vLLM's `vllm serve`, llama.cpp, hosted)
    vllm          (in-process) not used for questions: run `vllm serve` and the openai back-end instead

This module only imports what it needs from the analyzer side (cloud.analysis.llm for the model files), so moving
those modules means changing the imports here and nowhere else in cloud.ask.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Protocol

from ..config import AnalyzerConfig


class TextModelError(RuntimeError):
    """No text model can answer (not configured, failed to load, server down); the message says why."""


class TextModel(Protocol):
    name: str

    async def warm(self) -> None: ...

    async def complete(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str: ...


class TransformersText:
    """Greedy decoding on the in-process model (CPU or CUDA, as `[analyzer] device` says); `max_time` stops
    generation at the deadline (the text so far)."""

    def __init__(self, config: AnalyzerConfig) -> None:
        self.config = config
        self.name = "smollm2-135m-instruct" if config.model_path is None else os.path.basename(config.model_path)
        self._lock = threading.Lock()
        self._model = None

    def _load(self):
        if self._model is None:
            from ..analysis.device import DeviceError, place
            from ..analysis.llm import LLMError, loaded_model, locate_model

            try:
                placement = place(self.config.device)
                self._model = loaded_model(locate_model(self.config.model_path, progress=False), self.config.threads,
                                           placement.device, placement.dtype)
            except (LLMError, DeviceError) as exc:
                raise TextModelError(str(exc)) from None
        return self._model

    def _generate(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str:
        import torch

        with self._lock:
            loaded = self._load()
            tokenizer, model = loaded.tokenizer, loaded.model
            messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                return_dict=True).to(model.device)
            with torch.inference_mode():
                out = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False,
                                     max_time=max(0.05, deadline_s), pad_token_id=tokenizer.eos_token_id,
                                     stop_strings=["\n"], tokenizer=tokenizer)
            return tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)

    async def warm(self) -> None:
        """Load the weights and run one token now (seconds: the first generation pays one-time costs), so the
        first question does not."""
        await asyncio.to_thread(self._generate, "You answer briefly.", "Say yes.", 1, 30.0)

    async def complete(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str:
        return await asyncio.to_thread(self._generate, system, user, max_new_tokens, deadline_s)


class OpenAIText:
    """One chat-completions request to the first base URL that answers, within the deadline."""

    def __init__(self, config: AnalyzerConfig) -> None:
        self.settings = config.openai
        self.name = self.settings.model[-128:]

    async def warm(self) -> None:
        return None

    async def complete(self, system: str, user: str, max_new_tokens: int, deadline_s: float) -> str:
        import aiohttp

        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.settings.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {"model": self.settings.model, "max_tokens": max_new_tokens, "temperature": 0.0, "stream": False,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        ends = time.monotonic() + deadline_s
        reasons = []
        async with aiohttp.ClientSession(headers=headers) as http:
            for url in self.settings.base_urls:
                left = ends - time.monotonic()
                if left <= 0:
                    break
                try:
                    async with http.post(f"{url}/chat/completions", json=body,
                                         timeout=aiohttp.ClientTimeout(total=left)) as response:
                        data = await response.json(content_type=None)
                        if response.status != 200:
                            reasons.append(f"{url}: HTTP {response.status}")
                            continue
                        return str(data["choices"][0]["message"]["content"] or "")
                except (aiohttp.ClientError, TimeoutError, ValueError, KeyError, IndexError, TypeError) as exc:
                    reasons.append(f"{url}: {type(exc).__name__}")
        raise TextModelError("no answer from the OpenAI-compatible server: " + ("; ".join(reasons) or "no time left"))


def build_text_model(config: AnalyzerConfig) -> TextModel | None:
    """The text model for questions, made lazily (the weights load on the first question); None when the
    configured back-end has none (in-process vLLM)."""
    if config.backend == "openai":
        return OpenAIText(config)
    if config.backend == "transformers":
        return TransformersText(config)
    return None
