"""Analysis of escalated events, in one package with one interface (`Backend`, base.py):

    translator.py    the cloud's closer look at the crop, as facts (YOLOX at full size, colours, device facts)
    prompt.py        prompt templates (cloud/prompts), the facts and the operator's policy put in words
    answer.py        the answer every model gives: schema, grammar, lenient parser
    check.py         the consistency table that holds the model's answer against the evidence
    calibrate.py     confidence as the probability that a verdict is right
    transformers.py  in-process default (SmolLM2-135M; CPU, or CUDA in bf16), schema-constrained decoding, batched
    openai.py        any OpenAI-compatible server: vLLM (`vllm serve`), llama.cpp, `transformers serve`, hosted APIs
    vllm.py          vLLM's AsyncLLM in this process (the `gpu` extra)
    several.py       several of the above in one cloud ([[analyzer.backends]]; cloud.lanes routes between them)

Each back-end is imported only when chosen, so the service never loads torch or vLLM it does not use.
"""

from __future__ import annotations

from ..config import AnalyzerConfig
from .base import Analysis, Backend, Deciding, Leaning, Light, ThreadedBackend, decided_at_once, fallback
from .prompt import PromptBook, PromptBuilder

__all__ = ["Analysis", "Backend", "Deciding", "Leaning", "Light", "ThreadedBackend", "build_backend",
           "decided_at_once", "fallback"]


def _builder(config: AnalyzerConfig, vision: bool, translator) -> PromptBuilder:  # noqa: ANN001
    return PromptBuilder(PromptBook(config.prompts_dir), translator, vision=vision, policies=config.policies)


def build_backend(config: AnalyzerConfig, translator=None) -> Backend:  # noqa: ANN001
    """The back-end the config asks for, ready to answer, behind the operator's compiled policies where there
    are any (gate.py); several ([[analyzer.backends]]) as one (several.py), sharing one closer look per event
    (`translator`: the members' and the light path's). Blocking (loads models); raises ConfigError or LLMError
    with a message a user can act on."""
    from .translator import Translator

    if config.backends:
        from .gate import Remembered
        from .light import LightPath
        from .several import Member, Several

        shared = Remembered(Translator(), size=4096)  # a burst's looks, taken first, kept for the prompts
        return Several([Member(b.name, b.cost, b.latency_ms, build_backend(config.for_backend(b), shared))  # type: ignore[arg-type]
                        for b in config.backends], LightPath(shared))
    if translator is None and config.policies:
        from .gate import Remembered

        translator = Remembered(Translator())
    if translator is None:
        translator = Translator()
    backend: Backend
    if config.backend == "openai":
        from .openai import OpenAIBackend

        backend = OpenAIBackend(config, _builder(config, config.openai.vision, translator))
    elif config.backend == "vllm":
        from .vllm import VLLMBackend

        backend = VLLMBackend(config, _builder(config, config.vllm.vision, translator))
    else:
        from .base import ThreadedBackend
        from .transformers import build_engine

        backend = ThreadedBackend(build_engine(config, translator))  # type: ignore[arg-type]
    if config.policies:
        from .gate import PolicyBook, PolicyGate

        backend = PolicyGate(backend, PolicyBook(config.policies), translator)
    return backend
