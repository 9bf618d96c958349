"""The default analyzer: a small instruction-tuned LLM on CPU (SmolLM2-135M via transformers) that turns events
into verdicts, several at a time.

The model cannot see images, so the crop is described in words first (the device's own classes, or the top
ImageNet classes of the crop; see backends.prompting). Its answer is constrained while decoding to one exact
JSON shape (AnswerGrammar, applied as a logits processor), so a finished answer always parses; it is still
validated afterwards, and anything wrong (bad output, timeout, exception) becomes verdict "unknown" with
`error` set, never an exception.

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

import copy
import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..shared.config import ConfigError
from ..shared.protocol import Event
from .analysis import Analysis
from .backends.answer import ANSWER, DESCRIPTION_MAX, Answer, AnswerGrammar, State
from .backends.prompting import (
    PLACEHOLDERS,
    Prompt,
    PromptBook,
    PromptBuilder,
    PromptTemplate,
    prompt_values,
    template_key,
)
from .config import AnalyzerConfig
from .describe import CropDescriber
from .llm import load_model, locate_model, model_name

__all__ = ["ANSWER", "DESCRIPTION_MAX", "PLACEHOLDERS", "Analysis", "AnalyzerConfig", "Answer", "AnswerConstraint",
           "AnswerGrammar", "PromptBook", "PromptTemplate", "TokenIndex", "TransformersAnalyzer", "build_analyzer",
           "prompt_values", "template_key"]

log = logging.getLogger(__name__)

MIN_SENTENCE = 16  # a description may end at a sentence end once it is this long
PREFIX_SAFETY = 2  # tokens left out of a template's shared prefix, where tokenisation may differ per event


# --- constrained decoding: the token side -------------------------------------------------------------


class TokenIndex:
    """The vocabulary as text, indexed for a grammar: a character trie for the structural parts (walked once
    per state, then cached), and per-token masks for free text, where nearly every token is allowed and
    walking the trie each step would cost more than the model's forward pass. Built once per model (~1 s)."""

    def __init__(self, tokenizer: Any, vocab_size: int, grammar: AnswerGrammar):
        import torch

        self.grammar = grammar
        self.vocab_size = vocab_size
        zero = tokenizer.encode("0", add_special_tokens=False)[-1]
        # Decoding after "0" keeps the leading space a word-start token carries (SentencePiece drops it alone).
        decoded = tokenizer.batch_decode([[zero, i] for i in range(min(len(tokenizer), vocab_size))],
                                         clean_up_tokenization_spaces=False)
        excluded = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}))
        self.texts: list[str | None] = [None] * vocab_size
        for token_id, text in enumerate(decoded):
            text = text[1:]
            if token_id not in excluded and text and "\ufffd" not in text:
                self.texts[token_id] = text
        self.trie: dict = {}
        for token_id, text in enumerate(self.texts):
            if text is None:
                continue
            node = self.trie
            for ch in text[:-1]:
                node = node.setdefault(ch, ({}, []))[0]
            node.setdefault(text[-1], ({}, []))[1].append(token_id)
        self.lengths = torch.tensor([len(t) if t else 0 for t in self.texts], dtype=torch.long)
        self.text_safe = torch.tensor(
            [bool(t) and all(grammar.is_text_char(c) for c in t) for t in self.texts], dtype=torch.bool)
        self.leading_space = torch.tensor([bool(t) and t[0] == " " for t in self.texts], dtype=torch.bool)
        # Tokens that end the text: optional text, a '"', then the start of the literal after it ('."', '",').
        text_at = grammar.segment_index("text")
        after_text = grammar.segments[text_at + 1][1]
        self.text_max: int = grammar.segments[text_at][1]
        self.closers: list[tuple[int, int]] = []  # (token id, characters of text before the quote)
        for token_id, text in enumerate(self.texts):
            if text and '"' in text:
                head, _, tail = text.partition('"')
                if all(grammar.is_text_char(c) for c in head) and after_text.startswith('"' + tail):
                    self.closers.append((token_id, len(head)))
        self.text_at = text_at
        self._steps: dict[State, _Steps] = {}
        self._distance: dict[State, int] = {}

    def steps(self, state: State) -> _Steps:
        """The tokens allowed in a non-text state, with where each leads: a depth-first walk of the trie along
        the grammar, done once per state (a few dozen, the same for every event) and cached."""
        cached = self._steps.get(state)
        if cached is None:
            pairs: list[tuple[int, State]] = []
            stack = [(self.trie, state)]
            while stack:
                node, current = stack.pop()
                for ch, (children, ids) in node.items():
                    after = self.grammar.feed(current, ch)
                    if after is None:
                        continue
                    pairs.extend((token_id, after) for token_id in ids)
                    if children:
                        stack.append((children, after))
            cached = _Steps([t for t, _ in pairs], [self.distance(after) for _, after in pairs])
            self._steps[state] = cached
        return cached

    def distance(self, state: State) -> int:
        """The fewest tokens that finish the answer from `state` (0 at the end), so that the constraint can
        always finish within max_new_tokens, whatever the model prefers."""
        known = self._distance.get(state)
        if known is not None:
            return known
        if state == self.grammar.end:
            best = 0
        elif self.grammar.kind(state) == "text":
            progress = state[1]
            best = _FAR
            for token_id, head_len in self.closers:
                if progress + head_len >= 1 and progress + head_len <= self.text_max:
                    after = self.grammar.walk(state, self.texts[token_id] or "")
                    if after is not None:
                        best = min(best, 1 + self.distance(after))
            if progress == 0:  # one token of text first, then the cheapest closer
                best = min(best, 1 + self.distance((state[0], 1)))
        else:
            best = min(self.steps(state).distances, default=_FAR - 1) + 1
        self._distance[state] = best
        return best

    def structural(self, state: State, left: int) -> list[int]:
        """Token ids allowed in a non-text state with `left` new tokens still to come."""
        steps = self.steps(state)
        if left >= 1 + steps.farthest:
            return steps.ids
        fits = [t for t, d in zip(steps.ids, steps.distances, strict=True) if 1 + d <= left]
        return fits or steps.ids  # cannot finish either way; the result is caught as unusable output

    def text_mask(self, state: State, left: int, sentence_done: bool) -> Any:
        """Allowed tokens inside the text: bounded plain text while there is room (in characters and in tokens
        to finish the answer), and the tokens that close it."""
        import torch

        progress = state[1]
        room = self.text_max - progress
        finish = self.distance((state[0], max(progress, 1)))  # tokens to finish after one more text token
        if sentence_done or room <= 0 or left - 1 < finish:
            allowed = torch.zeros(self.vocab_size, dtype=torch.bool)
        else:
            allowed = self.text_safe & (self.lengths <= room)
            if progress == 0:
                allowed &= ~self.leading_space
        for token_id, head_len in self.closers:
            if head_len > room or progress + head_len < 1 or (sentence_done and head_len):
                continue
            after = self.grammar.walk(state, self.texts[token_id] or "")
            if after is not None and 1 + self.distance(after) <= left:
                allowed[token_id] = True
        return allowed


_FAR = 1 << 30


@dataclass(frozen=True)
class _Steps:
    ids: list[int]
    distances: list[int]  # tokens still needed after each of `ids`

    @property
    def farthest(self) -> int:
        return max(self.distances, default=0)


def _sentence_done(text: str) -> bool:
    """True when the description so far ends a sentence of some length ('.' not inside a number like 0.9)."""
    return (len(text) >= MIN_SENTENCE and text[-1] in ".!?"
            and not (text[-1] == "." and text[-2].isdigit()))


class AnswerConstraint:
    """A transformers logits processor that masks every token the grammar does not allow next, row by row.
    Stateless between calls (the state is re-derived from the generated tokens), so it is batch-safe.
    The text is closed after its first full sentence (the prompt asks for one), and no token is allowed that
    would leave too few of the max_new_tokens to finish, so the answer is always complete."""

    def __init__(self, index: TokenIndex, prompt_width: int, max_new_tokens: int, eos_id: int):
        self.index = index
        self.grammar = index.grammar
        self.prompt_width = prompt_width
        self.max_new_tokens = max_new_tokens
        self.eos_id = eos_id

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        allowed = torch.zeros(scores.shape, dtype=torch.bool)
        for row, sequence in enumerate(input_ids[:, self.prompt_width :].tolist()):
            if self.eos_id in sequence:
                allowed[row, self.eos_id] = True
                continue
            text = "".join(self.index.texts[t] or "" for t in sequence)
            state = self.grammar.walk(self.grammar.start, text)
            kind = "end" if state is None else self.grammar.kind(state)
            left = self.max_new_tokens - len(sequence)
            if kind == "end":  # None cannot happen: every token came through this mask
                allowed[row, self.eos_id] = True
            elif kind == "text":
                mask = self.index.text_mask(state, left, _sentence_done(text[len(text) - state[1] :]))
                allowed[row, : mask.shape[0]] = mask
            else:
                allowed[row, self.index.structural(state, left)] = True
        return scores.masked_fill(~allowed, float("-inf"))


# --- the model, shared per process --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prefix:
    """A template's fixed first tokens and their keys/values (batch of one; copied per use)."""

    ids: tuple[int, ...]
    cache: Any


class _Runtime:
    """What every analyzer on one model folder shares: weights, tokenizer, the token index for constrained
    decoding, the per-template prefix caches, and the lock that serialises generate()."""

    def __init__(self, folder: Path, threads: int):
        started = time.monotonic()
        self.folder = folder
        self.name = model_name(folder)
        self.tokenizer, self.model = load_model(folder, threads)
        self.load_s = time.monotonic() - started
        self.index = TokenIndex(self.tokenizer, self.model.config.vocab_size, ANSWER)
        self.eos_id = self.tokenizer.eos_token_id
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_id
        self.lock = threading.Lock()
        self.prefixes: dict[tuple[str, str], _Prefix | None] = {}  # (template source, version) -> prefix
        self.ready_s = time.monotonic() - started

    def encode(self, messages: list[dict[str, str]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self.tokenizer.encode(text + ANSWER.prefix, add_special_tokens=False)

    def prefix_for(self, template: PromptTemplate) -> _Prefix | None:
        """The template's shared prefix, computed on first use (call with `lock` held). The fixed part is
        what two renderings with different values have in common, less a margin where the first value's
        tokens could merge with the text before it; None for a template with almost nothing fixed."""
        import torch
        from transformers import DynamicCache

        key = (template.source, template.version)
        if key in self.prefixes:
            return self.prefixes[key]
        one = self.encode(template.render(dict.fromkeys(PLACEHOLDERS, "x")))
        two = self.encode(template.render(dict.fromkeys(PLACEHOLDERS, "7 y")))
        same = next((i for i, (a, b) in enumerate(zip(one, two, strict=False)) if a != b), min(len(one), len(two)))
        length = same - PREFIX_SAFETY
        prefix = None
        if length >= 16:
            cache = DynamicCache(config=self.model.config)
            with torch.inference_mode():
                self.model(input_ids=torch.tensor([one[:length]]), past_key_values=cache, use_cache=True)
            prefix = _Prefix(tuple(one[:length]), cache)
        self.prefixes[key] = prefix
        return prefix


_runtimes: dict[Path, _Runtime] = {}
_runtimes_lock = threading.Lock()


def _runtime(folder: Path, threads: int) -> _Runtime:
    key = folder.resolve()
    with _runtimes_lock:
        if key not in _runtimes:
            _runtimes[key] = _Runtime(key, threads)
        return _runtimes[key]


# --- the analyzer -------------------------------------------------------------------------------------------


@dataclass
class _Generated:
    text: str
    new_tokens: int
    verdict_p: float | None


@dataclass
class _Row:
    """One event on its way through generate()."""

    event: Event
    prompt: Prompt
    ids: list[int]
    template: PromptTemplate


def _verdict_step(pieces: list[str]) -> int | None:
    """Which generated token started the verdict: its probability (under the constraint) says how firmly the
    model chose between alert, benign and unknown."""
    enum_at = ANSWER.segment_index("enum")
    state: State | None = ANSWER.start
    for step, piece in enumerate(pieces):
        before = state
        state = ANSWER.walk(state, piece)
        if state is None:
            return None
        if before[0] <= enum_at and state[0] >= enum_at and (state[0] > enum_at or state[1]):
            # This token entered the enum; if it also carried the literal before it, it is still the one.
            return step
    return None


class TransformersAnalyzer:
    """Analyzer on a local transformers causal LM. Blocking and thread-safe: generate() runs under one lock per
    model, so concurrent callers queue rather than fight over the CPU. `analyze_batch` answers several events
    with one generate() per prompt template."""

    def __init__(self, runtime: _Runtime, prompts: PromptBook, describer: CropDescriber, config: AnalyzerConfig):
        self.runtime = runtime
        self.prompts = prompts
        self.describer = describer
        self.builder = PromptBuilder(prompts, describer, vision=False)
        self.config = config
        self.name = runtime.name
        self.max_batch = config.max_batch

    def prompt_version(self, label: str) -> str:
        return self.builder.version(label)

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
        except Exception as exc:  # a describer or template problem must not reach the caller
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
        return _Row(event, prompt, self.runtime.encode(prompt.messages), template)

    def _run_group(self, rows: list[_Row], started: float) -> list[Analysis]:
        try:
            outputs, timed_out, gen_s, cached = self._generate(rows)
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
                         verdict_p=None if out.verdict_p is None else round(out.verdict_p, 3),
                         raw=out.text[:300], batch=len(rows))
            results.append(self._interpret(row, out.text, timed_out, extra, started))
        return results

    def _generate(self, rows: list[_Row]) -> tuple[list[_Generated], bool, float, int]:
        """(outputs, timed out, seconds, prefix tokens taken from the cache)."""
        import torch
        from transformers import LogitsProcessorList

        rt = self.runtime
        with rt.lock:
            prefix = rt.prefix_for(rows[0].template) if self.config.prefix_cache else None
            if prefix is not None and any(tuple(r.ids[: len(prefix.ids)]) != prefix.ids for r in rows):
                prefix = None  # an event whose text merged into the fixed part: no sharing for this batch
            head = list(prefix.ids) if prefix is not None else []
            tails = [r.ids[len(head):] for r in rows]
            width = max(len(t) for t in tails)
            input_ids = torch.tensor([head + [rt.pad_id] * (width - len(t)) + t for t in tails], dtype=torch.long)
            attention = torch.tensor([[1] * len(head) + [0] * (width - len(t)) + [1] * len(t) for t in tails],
                                     dtype=torch.long)
            extra: dict[str, Any] = {}
            if prefix is not None:
                cache = copy.deepcopy(prefix.cache)
                if len(rows) > 1:
                    cache.batch_repeat_interleave(len(rows))
                extra["past_key_values"] = cache
            full = input_ids.shape[1]
            constraint = AnswerConstraint(rt.index, full, self.config.max_new_tokens, rt.eos_id)
            started = time.perf_counter()
            with torch.inference_mode():
                result = rt.model.generate(
                    input_ids=input_ids, attention_mask=attention, max_new_tokens=self.config.max_new_tokens,
                    do_sample=False, logits_processor=LogitsProcessorList([constraint]),
                    max_time=self.config.timeout_s, pad_token_id=rt.pad_id, eos_token_id=rt.eos_id,
                    return_dict_in_generate=True, output_scores=True, **extra)
            elapsed = time.perf_counter() - started
        timed_out = elapsed >= self.config.timeout_s
        new = result.sequences[:, full:]
        outputs = []
        for row in range(new.shape[0]):
            tokens = new[row].tolist()
            used = tokens.index(rt.eos_id) + 1 if rt.eos_id in tokens else len(tokens)
            pieces = [rt.index.texts[t] or "" for t in tokens[:used]]
            # Joined from the same token texts the grammar checked, so no decode clean-up can change it.
            text = ANSWER.prefix + "".join(pieces)
            step = _verdict_step(pieces)
            verdict_p = None
            if step is not None and step < len(result.scores):
                probs = torch.softmax(result.scores[step][row].float(), dim=-1)
                verdict_p = float(probs[tokens[step]])
            outputs.append(_Generated(text, used, verdict_p))
        return outputs, timed_out, elapsed, len(head)

    def _interpret(self, row: _Row, text: str, timed_out: bool, extra: dict, started: float) -> Analysis:
        try:
            answer = Answer.model_validate(json.loads(text))
        except (ValueError, ValidationError) as exc:
            if timed_out:
                return self._fallback(row.event, f"timed out after {self.config.timeout_s:g} s", started, extra)
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else f"bad JSON: {exc}"
            return self._fallback(row.event, f"unusable model output ({reason})", started, extra)
        return Analysis(verdict=answer.verdict, confidence=answer.confidence, description=answer.description,
                        model=self.name, prompt_version=row.prompt.version,
                        analyze_ms=(time.perf_counter() - started) * 1000, extra=extra)

    def _fallback(self, event: Event, reason: str, started: float, extra: dict | None = None) -> Analysis:
        try:
            version = self.prompt_version(event.label)
        except Exception:  # the prompt book itself is broken: still answer
            version = "unknown"
        return Analysis(verdict="unknown", confidence=0.0, description="no usable answer from the model",
                        model=self.name, prompt_version=version, analyze_ms=(time.perf_counter() - started) * 1000,
                        error=reason[:300], extra=extra or {})


def build_analyzer(config: AnalyzerConfig) -> TransformersAnalyzer:
    """The in-process transformers analyzer, ready to answer: model files located (fetched/converted on first
    use), weights loaded once per process, prompt templates read. For any back-end, use
    backends.build_backend. Raises LLMError or ConfigError with a message a user can act on."""
    if config.backend != "transformers":
        raise ConfigError(f"analyzer.backend is {config.backend!r}; build_analyzer makes the transformers one "
                          "(use edgetriage.cloud.backends.build_backend)")
    prompts = PromptBook(config.prompts_dir)
    runtime = _runtime(locate_model(config.model_path), config.threads)
    return TransformersAnalyzer(runtime, prompts, CropDescriber(), config)
