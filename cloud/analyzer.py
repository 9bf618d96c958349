"""The default analyzer: a small instruction-tuned LLM on CPU (SmolLM2-135M via transformers) that turns an event
into a verdict.

The model cannot see images, so the crop is described in words first (the device's own classes, or the top
ImageNet classes of the crop). Its answer is constrained while decoding to one exact JSON shape (AnswerGrammar,
applied as a logits processor), so a finished answer always parses; it is still validated afterwards, and
anything wrong (bad output, timeout, exception) becomes verdict "unknown" with `error` set, never an exception.

Why not lm-format-enforcer: its transformers glue does not import under transformers 5 (it imports
`transformers.tokenization_utils.PreTrainedTokenizerBase`); with its core driven directly, JsonSchemaParser
cannot bound a number to 0..1 and RegexParser walks the whole 49k-token vocabulary in Python for every
free-text token (1-5 s per token here). The answer format is tiny, so a purpose-built constraint is cheaper.
"""

from __future__ import annotations

import json
import logging
import re
import string
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..shared.config import ConfigError, Strict
from ..shared.protocol import Event
from .analysis import Analysis, Analyzer
from .describe import CropDescriber
from .llm import load_model, locate_model, model_name

log = logging.getLogger(__name__)

DESCRIPTION_MAX = 120
MIN_SENTENCE = 16  # a description may end at a sentence end once it is this long
PLACEHOLDERS = ("label", "score", "camera", "time_utc", "detections", "uncertain", "seen", "seen_source", "reason")
MAX_PROMPT_DETECTIONS = 5


class AnalyzerConfig(Strict):
    """[analyzer] in the cloud config."""

    backend: Literal["transformers"] = "transformers"
    model_path: str | None = Field(None, description="GGUF file or model folder; default: SmolLM2-135M, fetched once")
    threads: Annotated[int, Field(ge=1, le=256)] = 1
    max_new_tokens: Annotated[int, Field(ge=32, le=1024)] = 96
    prompts_dir: str | None = Field(None, description="folder with <label>.txt and default.txt prompt templates")
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60.0


class Answer(BaseModel):
    """The JSON the model must produce."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    verdict: Literal["alert", "benign", "unknown"]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    description: Annotated[str, Field(min_length=1, max_length=DESCRIPTION_MAX)]


# --- the answer format ------------------------------------------------------------------------------------------

State = tuple[int, Any]


@dataclass(frozen=True)
class AnswerGrammar:
    """The exact answer text, as a character-level state machine over fixed segments: an enum, literals,
    a 0..1 number with at most two decimals, a one-line text of 1..max characters without escapes. Every
    complete walk, after `prefix`, is valid JSON for `Answer`.

    `prefix` goes at the end of the prompt (the model continues after it), which saves decoding steps. A state
    is (segment index, progress): the partial text of an enum/literal/number segment, or the number of text
    characters so far; small hashable tuples, so allowed-token sets can be cached per state."""

    prefix: str
    segments: tuple[tuple[str, Any], ...]

    _NUMBER_PREFIX: ClassVar[re.Pattern] = re.compile(r"0(\.[0-9]{0,2})?|1(\.0{0,2})?")
    _NUMBER_FULL: ClassVar[re.Pattern] = re.compile(r"0(\.[0-9]{1,2})?|1(\.0{1,2})?")

    @property
    def start(self) -> State:
        return self.enter(0)

    @property
    def end(self) -> State:
        return (len(self.segments), "")

    def enter(self, index: int) -> State:
        """The state at the start of segment `index`."""
        return (index, 0) if index < len(self.segments) and self.segments[index][0] == "text" else (index, "")

    def kind(self, state: State) -> str:
        return self.segments[state[0]][0] if state[0] < len(self.segments) else "end"

    def segment_index(self, kind: str) -> int:
        return next(i for i, (k, _) in enumerate(self.segments) if k == kind)

    @staticmethod
    def is_text_char(ch: str) -> bool:
        return ch not in '"\\\ufffd' and ch >= " " and ch != "\x7f"

    def feed(self, state: State, ch: str) -> State | None:
        """The state after one more character, or None if the character is not allowed there."""
        index, progress = state
        if index >= len(self.segments):
            return None
        kind, arg = self.segments[index]
        if kind == "enum":
            text = progress + ch
            if text in arg:
                return self.enter(index + 1)
            return (index, text) if any(option.startswith(text) for option in arg) else None
        if kind == "literal":
            text = progress + ch
            if text == arg:
                return self.enter(index + 1)
            return (index, text) if arg.startswith(text) else None
        if kind == "number":
            if ch in "0123456789.":
                text = progress + ch
                return (index, text) if self._NUMBER_PREFIX.fullmatch(text) else None
            return self.feed(self.enter(index + 1), ch) if self._NUMBER_FULL.fullmatch(progress) else None
        # text, always followed by a literal that starts with '"'
        if ch == '"':
            return self.feed(self.enter(index + 1), ch) if progress >= 1 else None
        if not self.is_text_char(ch) or progress >= arg or (progress == 0 and ch == " "):
            return None
        return (index, progress + 1)

    @property
    def example(self) -> str:
        """A complete answer, for messages."""
        parts = {"enum": lambda a: a[0], "literal": lambda a: a, "number": lambda a: "0.8",
                 "text": lambda a: "A person in a grey cardigan."}
        return self.prefix + "".join(parts[kind](arg) for kind, arg in self.segments)

    def walk(self, state: State | None, text: str) -> State | None:
        for ch in text:
            if state is None:
                return None
            state = self.feed(state, ch)
        return state


# The description comes first, so the verdict is written after the evidence has been put into words (reason,
# then answer: the order that helps instruction-tuned models). With SmolLM2-135M neither order made the verdict
# follow the evidence; with a few examples in the prompt, this order keeps the descriptions short and on topic.
ANSWER = AnswerGrammar(
    prefix='{"description": "',
    segments=(
        ("text", DESCRIPTION_MAX),
        ("literal", '", "verdict": "'),
        ("enum", ("alert", "benign", "unknown")),
        ("literal", '", "confidence": '),
        ("number", None),
        ("literal", "}"),
    ),
)


# --- prompt templates ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptTemplate:
    """One prompt file: a `# version: ...` line, a [system] section, optionally example turns
    ([user] then [assistant], as often as wanted: a model this small copies examples far better than it
    follows instructions), and a final [user] section. Sections use $placeholders (see PLACEHOLDERS)."""

    version: str
    turns: tuple[tuple[str, string.Template], ...]  # (role, content), system first, user last
    source: str

    @classmethod
    def parse(cls, text: str, source: str) -> PromptTemplate:
        version = None
        sections: list[tuple[str, list[str]]] = []
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if not sections and (not stripped or stripped.startswith("#")):
                match = re.match(r"#\s*version:\s*(\S+)\s*$", stripped)
                if match:
                    version = match.group(1)
                continue
            if stripped in ("[system]", "[user]", "[assistant]"):
                sections.append((stripped[1:-1], []))
                continue
            if not sections:
                raise ConfigError(f"{source}:{number}: text before the [system] section; start it with [system]")
            sections[-1][1].append(line)
        if version is None or not re.fullmatch(r"[A-Za-z0-9._-]{1,32}", version):
            raise ConfigError(f"{source}: needs a first line like '# version: person-1' "
                              "(letters, digits, '.', '_', '-'; at most 32)")
        roles = [role for role, _ in sections]
        expected = ["system"] + ["user", "assistant"] * ((len(roles) - 2) // 2) + ["user"]
        if roles != expected:
            raise ConfigError(f"{source}: sections must be [system], then optional [user]/[assistant] example "
                              f"pairs, then [user]; found {', '.join(f'[{r}]' for r in roles) or 'none'}")
        turns = []
        for role, lines in sections:
            content = "\n".join(lines).strip()
            if not content:
                raise ConfigError(f"{source}: a [{role}] section is empty")
            if role == "assistant":
                answer = content.removeprefix(ANSWER.prefix)
                if not content.startswith(ANSWER.prefix) or ANSWER.walk(ANSWER.start, answer) != ANSWER.end:
                    raise ConfigError(f"{source}: an [assistant] example must be one answer in the exact form "
                                      f"{ANSWER.example} (keys in that order, confidence 0..1 with at most two "
                                      f"decimals, description 1..{DESCRIPTION_MAX} characters)")
            turns.append((role, string.Template(content)))
        template = cls(version, tuple(turns), source)
        try:
            template.render(dict.fromkeys(PLACEHOLDERS, "x"))
        except KeyError as exc:
            raise ConfigError(f"{source}: unknown placeholder ${exc.args[0]}; known: "
                              + ", ".join(f"${p}" for p in PLACEHOLDERS)) from None
        except ValueError as exc:
            raise ConfigError(f"{source}: bad placeholder ({exc}); write $$ for a literal $") from None
        return template

    def render(self, values: dict[str, str]) -> list[dict[str, str]]:
        return [{"role": role, "content": content.substitute(values)} for role, content in self.turns]


def template_key(label: str) -> str:
    """The file stem a label's template lives under: 'Person' -> 'person', 'fire hydrant' -> 'fire_hydrant'."""
    return re.sub(r"[^a-z0-9_-]+", "_", label.lower()).strip("_") or "default"


class PromptBook:
    """All templates of one folder, read once at start-up so a broken file stops the service there, not
    per event. `<label>.txt` answers that label; `default.txt` (required) answers the rest."""

    def __init__(self, directory: str | Path | None = None):
        if directory is None:
            root = resources.files("edgetriage.cloud") / "prompts"
            files = {Path(entry.name).stem: (entry.read_text(encoding="utf-8"), f"prompts/{entry.name}")
                     for entry in root.iterdir() if entry.name.endswith(".txt")}
        else:
            folder = Path(directory).expanduser()
            if not folder.is_dir():
                raise ConfigError(f"analyzer.prompts_dir {folder} is not a folder; create it with default.txt "
                                  "(copy edgetriage/cloud/prompts/) or remove the key")
            files = {path.stem: (path.read_text(encoding="utf-8"), str(path)) for path in folder.glob("*.txt")}
        self.templates = {stem: PromptTemplate.parse(text, source) for stem, (text, source) in files.items()}
        if "default" not in self.templates:
            raise ConfigError(f"{directory or 'prompts'}: default.txt is missing; every label needs a fallback")

    def for_label(self, label: str) -> PromptTemplate:
        return self.templates.get(template_key(label)) or self.templates["default"]


# --- prompt content -----------------------------------------------------------------------------------------


def _detections_text(event: Event) -> str:
    parts = []
    for det in event.detections[:MAX_PROMPT_DETECTIONS]:
        x1, y1, x2, y2 = det.box
        area = max(0.0, x2 - x1) * max(0.0, y2 - y1)
        parts.append(f"{det.label} score {det.score:.2f} at x {x1:.2f}-{x2:.2f}, y {y1:.2f}-{y2:.2f} "
                     f"({area:.0%} of the frame)")
    if len(event.detections) > MAX_PROMPT_DETECTIONS:
        parts.append(f"and {len(event.detections) - MAX_PROMPT_DETECTIONS} more")
    return "; ".join(parts) or f"{event.label} score {event.score:.2f}"


def _seen_text(seen: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{label} {score:.0%}" for label, score in seen) or "nothing recognisable"


def prompt_values(event: Event, seen: Sequence[tuple[str, float]], seen_source: str) -> dict[str, str]:
    """The placeholder values for one event."""
    when = datetime.fromtimestamp(event.captured_ms / 1000, UTC).strftime("%H:%M")
    reason = event.reason.strip()
    uncertain = f"yes ({reason})" if event.uncertain and reason else ("yes" if event.uncertain else "no")
    return {"label": event.label, "score": f"{event.score:.2f}", "camera": event.camera, "time_utc": when,
            "detections": _detections_text(event), "uncertain": uncertain, "seen": _seen_text(seen),
            "seen_source": seen_source, "reason": reason or "none given"}


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


class _Runtime:
    """What every analyzer on one model folder shares: weights, tokenizer, the token index for constrained
    decoding, and the lock that serialises generate()."""

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
        self.ready_s = time.monotonic() - started


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
    model, so concurrent callers queue rather than fight over the CPU."""

    def __init__(self, runtime: _Runtime, prompts: PromptBook, describer: CropDescriber, config: AnalyzerConfig):
        self.runtime = runtime
        self.prompts = prompts
        self.describer = describer
        self.config = config
        self.name = runtime.name

    def prompt_version(self, label: str) -> str:
        return self.prompts.for_label(label).version

    def analyze(self, event: Event) -> Analysis:
        return self.analyze_batch([event])[0]

    def analyze_batch(self, events: list[Event]) -> list[Analysis]:
        """One generate() for several events (left-padded). Never raises; each event gets its own Analysis."""
        if not events:
            return []
        started = time.perf_counter()
        try:
            prepared = [self._prepare(event) for event in events]
            outputs, timed_out, gen_s = self._generate([ids for ids, _ in prepared])
        except Exception as exc:  # model trouble must not reach the caller
            log.warning("analysis failed: %s: %s", type(exc).__name__, exc)
            return [self._fallback(event, f"{type(exc).__name__}: {exc}", started) for event in events]
        total_new = sum(out.new_tokens for out in outputs)
        results = []
        for event, (ids, extra), out in zip(events, prepared, outputs, strict=True):
            extra.update(prompt_tokens=len(ids), new_tokens=out.new_tokens, generate_s=round(gen_s, 3),
                         tokens_per_s=round(total_new / gen_s, 1) if gen_s > 0 else None,
                         verdict_p=None if out.verdict_p is None else round(out.verdict_p, 3),
                         raw=out.text[:300], batch=len(events))
            results.append(self._interpret(event, out.text, timed_out, extra, started))
        return results

    def _prepare(self, event: Event) -> tuple[list[int], dict]:
        if event.classes:
            seen = [(c.label, c.score) for c in event.classes[: self.describer.top_k]]
            source = "on the device"
        else:
            seen = self.describer.describe(event.crop)
            source = "ImageNet"
        template = self.prompts.for_label(event.label)
        messages = template.render(prompt_values(event, seen, source))
        tokenizer = self.runtime.tokenizer
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = tokenizer.encode(text + ANSWER.prefix, add_special_tokens=False)
        extra = {"seen": [[label, round(score, 3)] for label, score in seen], "seen_source": source,
                 "prompt_file": template.source}
        return ids, extra

    def _generate(self, prompts: list[list[int]]) -> tuple[list[_Generated], bool, float]:
        import torch
        from transformers import LogitsProcessorList

        rt = self.runtime
        width = max(len(ids) for ids in prompts)
        input_ids = torch.tensor([[rt.pad_id] * (width - len(ids)) + ids for ids in prompts], dtype=torch.long)
        attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompts], dtype=torch.long)
        constraint = AnswerConstraint(rt.index, width, self.config.max_new_tokens, rt.eos_id)
        with rt.lock:
            started = time.perf_counter()
            with torch.inference_mode():
                result = rt.model.generate(
                    input_ids=input_ids, attention_mask=attention, max_new_tokens=self.config.max_new_tokens,
                    do_sample=False, logits_processor=LogitsProcessorList([constraint]),
                    max_time=self.config.timeout_s, pad_token_id=rt.pad_id, eos_token_id=rt.eos_id,
                    return_dict_in_generate=True, output_scores=True)
            elapsed = time.perf_counter() - started
        timed_out = elapsed >= self.config.timeout_s
        new = result.sequences[:, width:]
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
        return outputs, timed_out, elapsed

    def _interpret(self, event: Event, text: str, timed_out: bool, extra: dict, started: float) -> Analysis:
        try:
            answer = Answer.model_validate(json.loads(text))
        except (ValueError, ValidationError) as exc:
            if timed_out:
                return self._fallback(event, f"timed out after {self.config.timeout_s:g} s", started, extra)
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else f"bad JSON: {exc}"
            return self._fallback(event, f"unusable model output ({reason})", started, extra)
        return Analysis(verdict=answer.verdict, confidence=answer.confidence, description=answer.description,
                        model=self.name, prompt_version=self.prompt_version(event.label),
                        analyze_ms=(time.perf_counter() - started) * 1000, extra=extra)

    def _fallback(self, event: Event, reason: str, started: float, extra: dict | None = None) -> Analysis:
        try:
            version = self.prompt_version(event.label)
        except Exception:  # the prompt book itself is broken: still answer
            version = "unknown"
        return Analysis(verdict="unknown", confidence=0.0, description="no usable answer from the model",
                        model=self.name, prompt_version=version, analyze_ms=(time.perf_counter() - started) * 1000,
                        error=reason[:300], extra=extra or {})


def build_analyzer(config: AnalyzerConfig) -> Analyzer:
    """The analyzer the config asks for, ready to answer: model files located (fetched/converted on first use),
    weights loaded once per process, prompt templates read. Raises LLMError or ConfigError with a message a
    user can act on."""
    if config.backend != "transformers":  # the Literal already guards this; kept for future back-ends
        raise ConfigError(f"analyzer.backend {config.backend!r} is not supported")
    prompts = PromptBook(config.prompts_dir)
    runtime = _runtime(locate_model(config.model_path), config.threads)
    return TransformersAnalyzer(runtime, prompts, CropDescriber(), config)
