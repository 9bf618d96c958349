"""Analyzer back-ends behind one asynchronous interface (`Backend`), chosen by `[analyzer] backend`:

    transformers  in-process CPU default (SmolLM2-135M), schema-constrained decoding, batched
    openai        any OpenAI-compatible server: vLLM (`vllm serve`), llama.cpp, `transformers serve`, hosted APIs
    vllm          vLLM's AsyncLLM in this process (the `gpu` extra)

Each is imported only when chosen, so the service never loads torch or vLLM it does not use.
"""

from __future__ import annotations

from ..config import AnalyzerConfig
from .base import Backend, ThreadedBackend, analysis_from_text, fallback
from .prompting import PromptBook, PromptBuilder

__all__ = ["Backend", "ThreadedBackend", "analysis_from_text", "build_backend", "fallback"]


def _builder(config: AnalyzerConfig, vision: bool) -> PromptBuilder:
    book = PromptBook(config.prompts_dir)
    if vision:
        return PromptBuilder(book, None, vision=True)
    from ..describe import CropDescriber

    return PromptBuilder(book, CropDescriber(), vision=False)


def build_backend(config: AnalyzerConfig) -> Backend:
    """The back-end the config asks for, ready to answer. Blocking (loads models); raises ConfigError or
    LLMError with a message a user can act on."""
    if config.backend == "openai":
        from .openai import OpenAIBackend

        return OpenAIBackend(config, _builder(config, config.openai.vision))
    if config.backend == "vllm":
        from .vllm import VLLMBackend

        return VLLMBackend(config, _builder(config, config.vllm.vision))
    from ..analyzer import build_analyzer

    return ThreadedBackend(build_analyzer(config), config.max_batch)
