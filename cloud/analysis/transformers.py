"""The default back-end: a small instruction-tuned LLM in this process (SmolLM2-135M via transformers; on the
GPU when `[analyzer] device` finds one, in bf16) that turns events into verdicts, several at a time.

The model cannot see images: it reads the translator's facts (translator.py), short sentences after the
prompt's fixed start. Its answer is constrained while decoding to one exact JSON shape (constrain.py, a
logits processor), so a finished answer always parses; at the verdict, the constraint lets greedy decoding
compare the model's likelihoods of the three verdicts, which also gives the model's own verdict distribution.
The answer is then held against the evidence (check.py). Anything wrong (bad output, timeout, exception)
becomes verdict "unknown" with `error` set, never an exception.

Prefix cache: every prompt of one template starts with the same ~280 tokens (system text and examples), and
on a CPU that prefill costs more than the answer. Its keys and values are computed once per template and
shared by every row of a batch; each row then only prefills its own ~30 tokens. This is what makes batching
pay on CPU: without it the batch is dominated by compute-bound prefill and runs barely faster than one event
at a time.

Why not lm-format-enforcer: its transformers glue does not import under transformers 5 (it imports
`transformers.tokenization_utils.PreTrainedTokenizerBase`); with its core driven directly, JsonSchemaParser
cannot bound a number to 0..1 and RegexParser walks the whole 49k-token vocabulary in Python for every
free-text token (1-5 s per token here). The answer format is tiny, so a purpose-built constraint is cheaper.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...shared.config import ConfigError
from ...shared.protocol import Event
from ..config import AnalyzerConfig
from .answer import ANSWER, Answer
from .base import Analysis, ThreadedBackend, fallback
from .calibrate import Calibration
from .check import judged
from .constrain import AnswerConstraint, TokenIndex, verdict_probabilities
from .decode import forward_last, generate, prefill, rows_after, static_cache
from .device import DeviceError, Placement, kv_bytes_per_token, place
from .llm import LoadedModel, loaded_model, locate_model, model_name
from .prompt import PLACEHOLDERS, Prompt, PromptBook, PromptBuilder, PromptTemplate
from .translator import Translator

log = logging.getLogger(__name__)

PREFIX_SAFETY = 2  # tokens left out of a template's shared prefix, where tokenisation may differ per event
LEANS_KEPT = 4096  # anchor prompts whose measured lean is kept (a few hundred bytes each)

# --- the model, shared per process --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prefix:
    """A template's fixed first tokens and their keys/values (batch of one; copied per use)."""

    ids: tuple[int, ...]
    cache: Any


class _Runtime:
    """What every analyzer on one loaded model shares: weights, tokenizer, the token index for constrained
    decoding, the per-template prefix caches, the batch size for the device, and the model's lock that
    serialises generation. Built once per entry of the one model cache (llm.loaded_model)."""

    def __init__(self, loaded: LoadedModel, placement: Placement):
        started = time.monotonic()
        self.folder = loaded.key.folder
        self.name = model_name(self.folder)
        self.tokenizer, self.model = loaded.tokenizer, loaded.model
        self.placement = placement
        self.load_s = loaded.load_s
        self.index = TokenIndex(self.tokenizer, self.model.config.vocab_size, ANSWER)
        self.eos_id = self.tokenizer.eos_token_id
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_id
        self.lock = loaded.lock
        weights = sum(p.numel() * p.element_size() for p in self.model.parameters())
        kv = kv_bytes_per_token(self.model.config, next(self.model.parameters()).element_size())
        self.batch = placement.batch_for(kv, weights)  # max_batch when the config leaves it unset
        self.prefixes: dict[tuple[str, str], _Prefix | None] = {}  # (template source, version) -> prefix
        # The model's lean for one anchor prompt (tokens) is a pure function of those tokens: kept, most recent
        # last, so events that share a context (camera, zone, minute, dwell) measure it once.
        self.leans: OrderedDict[tuple[int, ...], dict[str, float]] = OrderedDict()
        self.ready_s = self.load_s + time.monotonic() - started

    def encode(self, messages: list[dict[str, str]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self.tokenizer.encode(text + ANSWER.prefix, add_special_tokens=False)

    def prefix_for(self, template: PromptTemplate) -> _Prefix | None:
        """The template's shared prefix, computed on first use (call with `lock` held). The fixed part is
        what two renderings with different values have in common, less a margin where the first value's
        tokens could merge with the text before it; None for a template with almost nothing fixed."""
        key = (template.source, template.version)
        if key in self.prefixes:
            return self.prefixes[key]
        one = self.encode(template.render(dict.fromkeys(PLACEHOLDERS, "x")))
        two = self.encode(template.render(dict.fromkeys(PLACEHOLDERS, "7 y")))
        same = next((i for i, (a, b) in enumerate(zip(one, two, strict=False)) if a != b), min(len(one), len(two)))
        length = same - PREFIX_SAFETY
        prefix = None
        if length >= 16:
            prefix = _Prefix(tuple(one[:length]), prefill(self.model, one[:length]))
        self.prefixes[key] = prefix
        return prefix

    def static_cache(self, prefix: _Prefix | None, rows: int, length: int) -> Any:
        return static_cache(self.model, prefix.cache if prefix is not None else None, rows, length)

    def anchor_biases(self, anchors: list[list[int] | None], prefix: _Prefix | None) -> list[dict[str, float]]:
        """What to add to each verdict's score so that the facts' answer, not the prompt around it, moves the
        verdict, one per row (call with `lock` held; {} for a row without an anchor). A model this small leans
        towards one verdict whatever the facts say; its lean is measured on the same prompt with the answer
        left out ("Person: N/A."), and the log of its probability of each verdict there is subtracted
        (contextual calibration, Zhao et al. 2021). "unknown" is measured against the stronger of the other
        two: its own tiny prior would promote it. Anchors seen before (`leans`) are not run again; the rest
        run as one batched forward pass after the shared prefix."""
        out: list[dict[str, float]] = [{} for _ in anchors]
        todo: dict[tuple[int, ...], list[int]] = {}
        for row, anchor in enumerate(anchors):
            if not anchor:
                continue
            key = tuple(anchor)
            known = self.leans.get(key)
            if known is not None:
                self.leans.move_to_end(key)
                out[row] = known
            else:
                todo.setdefault(key, []).append(row)
        if todo:
            keys = list(todo)
            for key, lean in zip(keys, self._leans(keys, prefix), strict=True):
                self.leans[key] = lean
                for row in todo[key]:
                    out[row] = lean
            while len(self.leans) > LEANS_KEPT:
                self.leans.popitem(last=False)
        return out

    def _leans(self, anchors: list[tuple[int, ...]], prefix: _Prefix | None) -> list[dict[str, float]]:
        """One forward pass over the anchors' tails after the prefix (left-padded, positions as if unpadded), on
        the same kind of cache as generate()."""
        head = list(prefix.ids) if prefix is not None else []
        tails = [list(a[len(head):]) for a in anchors]
        input_ids, attention = rows_after(head, tails, self.pad_id, self.model.device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)[:, len(head):]
        cache = self.static_cache(prefix, len(tails), input_ids.shape[1])
        last = forward_last(self.model, input_ids[:, len(head):], attention, positions, cache).float().cpu()
        leans = []
        for row in range(len(tails)):
            p = verdict_probabilities(self.index, last[row])
            p["unknown"] = max(p.get("alert", 0.0), p.get("benign", 0.0))
            leans.append({v: -math.log(max(q, 1e-6)) for v, q in p.items()})
        return leans


def _runtime(folder: Path, threads: int, placement: Placement) -> _Runtime:
    """The runtime of the model in `folder` as placed, from the process's one model cache."""
    loaded = loaded_model(folder, threads, placement.device, placement.dtype)
    return loaded.derived("verdicts", lambda m: _Runtime(m, placement))


# --- the engine ---------------------------------------------------------------------------------------------


@dataclass
class _Generated:
    text: str
    new_tokens: int
    verdict_p: dict[str, float] | None


@dataclass
class _Row:
    """One event on its way through generate()."""

    event: Event
    prompt: Prompt
    ids: list[int]
    template: PromptTemplate
    anchor: list[int] | None = None  # the prompt with the facts' answer left out


class TransformersEngine:
    """The model answering, blocking and thread-safe: generate() runs under one lock per model, so concurrent
    callers queue rather than fight over the CPU. `analyze_batch` answers several events with one generate()
    per prompt template. The service gets it as a Backend through ThreadedBackend (`build_backend`)."""

    def __init__(self, runtime: _Runtime, prompts: PromptBook, translator: Translator, config: AnalyzerConfig,
                 calibration: Calibration | None = None):
        self.runtime = runtime
        self.prompts = prompts
        self.translator = translator
        self.builder = PromptBuilder(prompts, translator, vision=False, policies=config.policies)
        self.config = config
        self.calibration = calibration or Calibration.load()
        self.name = runtime.name
        self.max_batch = config.max_batch or runtime.batch
        # Answers by prompt (tokens with facts, tokens without): greedy decoding gives one prompt one answer,
        # so a caller judging many crops that read alike may keep them (bench/verdicts.py --shifted does).
        # None: every event is answered afresh, as the service does.
        self.memo: dict[tuple[tuple[int, ...], tuple[int, ...]], _Generated] | None = None

    def prompt_version(self, event: Event) -> str:
        return self.builder.version(event)

    def analyze(self, event: Event) -> Analysis:
        return self.analyze_batch([event])[0]

    def analyze_batch(self, events: list[Event]) -> list[Analysis]:
        """Answer several events, one generate() per template (left-padded rows after the shared prefix).
        Never raises; each event gets its own Analysis, in order."""
        if not events:
            return []
        started = time.perf_counter()
        try:
            rows = [self._prepare(event) for event in events]
        except Exception as exc:  # a translator or template problem must not reach the caller
            log.warning("analysis failed: %s: %s", type(exc).__name__, exc)
            return [self._fallback(event, f"{type(exc).__name__}: {exc}", started) for event in events]
        groups: dict[tuple[str, str], list[int]] = {}
        for i, row in enumerate(rows):
            groups.setdefault((row.template.source, row.template.version), []).append(i)
        results: list[Analysis | None] = [None] * len(rows)
        for members in groups.values():
            group = [rows[i] for i in members]
            for i, analysis in zip(members, self._run_group(group, started), strict=True):
                results[i] = analysis
        return [r for r in results if r is not None]

    def _prepare(self, event: Event) -> _Row:
        prompt = self.builder.build(event)
        template = self.prompts.for_label(event.label)
        anchor = self.runtime.encode(prompt.anchor) if prompt.anchor is not None else None
        return _Row(event, prompt, self.runtime.encode(prompt.messages), template, anchor)

    def _run_group(self, rows: list[_Row], started: float) -> list[Analysis]:
        try:
            outputs, timed_out, gen_s, cached = self._generate_remembered(rows)
        except Exception as exc:  # model trouble must not reach the caller
            log.warning("analysis failed: %s: %s", type(exc).__name__, exc)
            return [self._fallback(row.event, f"{type(exc).__name__}: {exc}", started, row.prompt.extra())
                    for row in rows]
        total_new = sum(out.new_tokens for out in outputs)
        results = []
        for row, out in zip(rows, outputs, strict=True):
            extra = row.prompt.extra()
            extra.update(prompt_tokens=len(row.ids), cached_tokens=cached, new_tokens=out.new_tokens,
                         generate_s=round(gen_s, 3), tokens_per_s=round(total_new / gen_s, 1) if gen_s > 0 else None,
                         raw=out.text[:300], batch=len(rows))
            results.append(self._interpret(row, out, timed_out, extra, started))
        return results

    def _generate_remembered(self, rows: list[_Row]) -> tuple[list[_Generated], bool, float, int]:
        """_generate, through `memo` when there is one: only prompts not answered before are generated."""
        if self.memo is None:
            return self._generate(rows)
        keys = [(tuple(r.ids), tuple(r.anchor or ())) for r in rows]
        fresh = {key: row for key, row in zip(keys, rows, strict=True) if key not in self.memo}
        timed_out, gen_s, cached = False, 0.0, 0
        answers = {key: self.memo[key] for key in keys if key in self.memo}
        if fresh:
            outputs, timed_out, gen_s, cached = self._generate(list(fresh.values()))
            answers.update(zip(fresh, outputs, strict=True))
            if not timed_out:
                self.memo.update(zip(fresh, outputs, strict=True))
        return [answers[key] for key in keys], timed_out, gen_s, cached

    def _generate(self, rows: list[_Row]) -> tuple[list[_Generated], bool, float, int]:
        """(outputs, timed out, seconds, prefix tokens taken from the cache)."""
        rt = self.runtime
        with rt.lock:
            prefix = rt.prefix_for(rows[0].template) if self.config.prefix_cache else None
            if prefix is not None and any(tuple(ids[: len(prefix.ids)]) != prefix.ids
                                          for r in rows for ids in (r.ids, r.anchor or r.ids)):
                prefix = None  # an event whose text merged into the fixed part: no sharing for this batch
            head = list(prefix.ids) if prefix is not None else []
            input_ids, attention = rows_after(head, [r.ids[len(head):] for r in rows], rt.pad_id, rt.model.device)
            full = input_ids.shape[1]
            cache = rt.static_cache(prefix, len(rows), full + self.config.max_new_tokens)
            bias = rt.anchor_biases([r.anchor for r in rows], prefix)
            constraint = AnswerConstraint(rt.index, full, self.config.max_new_tokens, rt.eos_id, bias)
            started = time.perf_counter()
            result = generate(rt.model, input_ids, attention, cache, max_new_tokens=self.config.max_new_tokens,
                              processors=[constraint], max_time=self.config.timeout_s, pad_id=rt.pad_id,
                              eos_id=rt.eos_id)
            elapsed = time.perf_counter() - started
        timed_out = elapsed >= self.config.timeout_s
        new = result.sequences[:, full:].cpu()
        first = result.scores[0].float().cpu() if result.scores else None
        outputs = []
        for row in range(new.shape[0]):
            tokens = new[row].tolist()
            used = tokens.index(rt.eos_id) + 1 if rt.eos_id in tokens else len(tokens)
            pieces = [rt.index.texts[t] or "" for t in tokens[:used]]
            # Joined from the same token texts the grammar checked, so no decode clean-up can change it.
            text = ANSWER.prefix + "".join(pieces)
            # The verdict is the first generated token (the prompt ends with the answer's prefix).
            verdict_p = verdict_probabilities(rt.index, first[row]) if first is not None else None
            outputs.append(_Generated(text, used, verdict_p))
        return outputs, timed_out, elapsed, len(head)

    def _interpret(self, row: _Row, out: _Generated, timed_out: bool, extra: dict, started: float) -> Analysis:
        try:
            answer = Answer.model_validate(json.loads(out.text))
        except (ValueError, ValidationError) as exc:
            if timed_out:
                return self._fallback(row.event, f"timed out after {self.config.timeout_s:g} s", started, extra)
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else f"bad JSON: {exc}"
            return self._fallback(row.event, f"unusable model output ({reason})", started, extra)
        return judged(answer, row.prompt, out.verdict_p, self.calibration, name=self.name, started=started,
                      extra=extra)

    def _fallback(self, event: Event, reason: str, started: float, extra: dict | None = None) -> Analysis:
        try:
            version = self.prompt_version(event)
        except Exception:  # the prompt book itself is broken: still answer
            version = "unknown"
        return fallback(self.name, version, reason, started, extra)


def build_engine(config: AnalyzerConfig, translator: Translator | None = None) -> TransformersEngine:
    """The in-process transformers engine, ready to answer: model files located (fetched/converted on first
    use), weights loaded once per process, prompt templates read. Raises LLMError or ConfigError with a
    message a user can act on."""
    if config.backend != "transformers":
        raise ConfigError(f"analyzer.backend is {config.backend!r}; build_engine makes the transformers one "
                          "(use edgetriage.cloud.analysis.build_backend)")
    try:
        placement = place(config.device)
    except DeviceError as exc:
        raise ConfigError(str(exc)) from None
    prompts = PromptBook(config.prompts_dir)
    runtime = _runtime(locate_model(config.model_path), config.threads, placement)
    return TransformersEngine(runtime, prompts, translator or Translator(), config)


def build_transformers_backend(config: AnalyzerConfig) -> ThreadedBackend:
    return ThreadedBackend(build_engine(config))
