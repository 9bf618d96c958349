"""The `vllm` back-end: vLLM's AsyncLLM in this process (the `gpu` extra), for a GPU host that wants no HTTP hop.

vLLM and model weights cannot reach the machines this project is tested on, so this back-end is kept small:
prompts, schema and answer mapping are the ones every back-end shares, and only the two functions that
translate to and from vLLM's objects (`sampling_options`, `engine_prompt`) are specific; those are unit-tested
without vLLM. The tested way to run vLLM is `vllm serve` with the `openai` back-end.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from typing import Any

from ...shared.config import ConfigError
from ...shared.protocol import Event
from ..config import AnalyzerConfig, VLLMConfig
from .answer import answer_schema
from .base import Analysis, fallback
from .calibrate import Calibration
from .check import analysis_from_text
from .prompt import Prompt, PromptBuilder


def sampling_options(config: VLLMConfig, max_tokens: int) -> dict[str, Any]:
    """Keyword arguments for vllm.SamplingParams: greedy by default, the answer schema enforced while decoding
    (`structured_outputs`, vLLM >= 0.12)."""
    return {"temperature": config.temperature, "max_tokens": max_tokens,
            "structured_outputs": {"json": answer_schema()}}


def engine_prompt(prompt: Prompt, apply_chat_template: Any) -> dict[str, Any]:
    """The prompt as vLLM takes it: the chat template applied to the messages (for a vision model the last
    user turn gets an image slot before its text), and the decoded crop as multi-modal data."""
    messages: list[dict[str, Any]] = [dict(m) for m in prompt.messages]
    if prompt.image is not None:
        messages[-1]["content"] = [{"type": "image"}, {"type": "text", "text": messages[-1]["content"]}]
    text = apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    out: dict[str, Any] = {"prompt": text}
    if prompt.image is not None:
        import cv2
        import numpy as np

        bgr = cv2.imdecode(np.frombuffer(prompt.image, dtype=np.uint8), cv2.IMREAD_COLOR)
        if bgr is None:
            raise ValueError("the crop does not decode as an image")
        out["multi_modal_data"] = {"image": cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)}  # HxWx3 RGB, as vLLM takes
    return out


class VLLMBackend:
    """AsyncLLM on this host's GPU; vLLM batches the concurrent requests itself."""

    def __init__(self, config: AnalyzerConfig, builder: PromptBuilder,
                 calibration: Calibration | None = None) -> None:
        try:
            from vllm import SamplingParams
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.sampling_params import StructuredOutputsParams
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as exc:
            raise ConfigError(f"analyzer.backend = \"vllm\" needs vLLM ({exc}): pip install 'edgetriage[gpu]' on a "
                              "GPU host, or run `vllm serve MODEL` and use analyzer.backend = \"openai\"") from None
        self.config = config
        self.settings = config.vllm
        self.builder = builder
        self.calibration = calibration or Calibration.load()
        self.name = self.settings.model[-128:]
        self.max_batch = 1
        self.concurrency = 256  # vLLM schedules its own batches; the scheduler only bounds what is queued
        options = sampling_options(self.settings, config.max_new_tokens)
        options["structured_outputs"] = StructuredOutputsParams(**options["structured_outputs"])
        self._params = SamplingParams(**options)
        self._engine = AsyncLLM.from_engine_args(AsyncEngineArgs(
            model=self.settings.model, max_model_len=self.settings.max_model_len,
            gpu_memory_utilization=self.settings.gpu_memory_utilization,
            tensor_parallel_size=self.settings.tensor_parallel_size,
            limit_mm_per_prompt={"image": 1} if self.settings.vision else None))
        self._tokenizer: Any = None

    def prompt_version(self, event: Event) -> str:
        return self.builder.version(event)

    def saturated(self) -> bool:
        return False

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        return list(await asyncio.gather(*(self.analyze(event) for event in events)))

    async def analyze(self, event: Event) -> Analysis:
        started = time.perf_counter()
        version = "unknown"
        try:
            version = self.builder.version(event)
            prompt = await asyncio.to_thread(self.builder.build, event)
            if self._tokenizer is None:
                self._tokenizer = await self._engine.get_tokenizer()
            request = engine_prompt(prompt, self._tokenizer.apply_chat_template)
            final = None
            async with asyncio.timeout(self.config.timeout_s):
                async for output in self._engine.generate(request, self._params, request_id=uuid.uuid4().hex):
                    final = output
        except TimeoutError:
            return fallback(self.name, version, f"timed out after {self.config.timeout_s:g} s", started)
        except Exception as exc:  # noqa: BLE001 - never raise to the scheduler
            return fallback(self.name, version, f"{type(exc).__name__}: {exc}", started)
        if final is None or not final.outputs:
            return fallback(self.name, version, "vLLM returned no output", started, prompt.extra())
        extra = prompt.extra()
        extra.update(prompt_tokens=len(final.prompt_token_ids or []), new_tokens=len(final.outputs[0].token_ids))
        return analysis_from_text(final.outputs[0].text, prompt, self.calibration, name=self.name, started=started,
                                  extra=extra)

    async def close(self) -> None:
        self._engine.shutdown()
