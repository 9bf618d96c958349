"""Constrained decoding for the in-process model: the answer grammar (answer.py) on the token side.

`TokenIndex` indexes the vocabulary once per model; `AnswerConstraint` is a transformers logits processor that
masks every token the grammar does not allow next, so a finished answer always parses. At the verdict it
allows exactly one token per verdict (the first token of "alert", "benign", "unknown"), so greedy decoding
there compares the model's likelihoods of the three verdicts, and their softmax is the model's own verdict
distribution (`verdict_probabilities`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .answer import AnswerGrammar, State

MIN_SENTENCE = 16  # a description may end at a sentence end once it is this long


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
        # text_parts, kept: the plain-text tokens that fit `room` characters (by room and whether
        # the text is still empty) and the closing tokens allowed from a state. A batch's rows reach the same
        # ones over and over; recomputed per row and step they cost ~2.5 ms a row, more than a GPU's step.
        self._fitting: dict[tuple[int, bool], Any] = {}
        self._closing: dict[tuple[State, int, bool], list[int]] = {}
        # One token per verdict where the verdict starts: the longest token that begins each option.
        self.enum_state = grammar.enter(grammar.segment_index("enum"))
        options = grammar.segments[self.enum_state[0]][1]
        steps = self.steps(self.enum_state)
        self.verdict_tokens: dict[str, int] = {}
        for option in options:
            fitting = [t for t in steps.ids if option.startswith(self.texts[t] or "\0")]
            if fitting:
                self.verdict_tokens[option] = max(fitting, key=lambda t: len(self.texts[t] or ""))

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

    def text_parts(self, state: State, left: int, sentence_done: bool) -> tuple[Any | None, list[int]]:
        """Allowed tokens inside the text: bounded plain text while there is room (in characters and in tokens
        to finish the answer; a mask, None for none, not to be written to), and the tokens that close it."""
        progress = state[1]
        room = self.text_max - progress
        finish = self.distance((state[0], max(progress, 1)))  # tokens to finish after one more text token
        if sentence_done or room <= 0 or left - 1 < finish:
            return None, self._closers(state, left, sentence_done)
        key = (room, progress == 0)
        if key not in self._fitting:
            fitting = self.text_safe & (self.lengths <= room)
            self._fitting[key] = fitting & ~self.leading_space if progress == 0 else fitting
        return self._fitting[key], self._closers(state, left, sentence_done)

    def _closers(self, state: State, left: int, sentence_done: bool) -> list[int]:
        key = (state, left, sentence_done)
        known = self._closing.get(key)
        if known is None:
            progress, room = state[1], self.text_max - state[1]
            known = []
            for token_id, head_len in self.closers:
                if head_len > room or progress + head_len < 1 or (sentence_done and head_len):
                    continue
                after = self.grammar.walk(state, self.texts[token_id] or "")
                if after is not None and 1 + self.distance(after) <= left:
                    known.append(token_id)
            self._closing[key] = known
        return known


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

    def __init__(self, index: TokenIndex, prompt_width: int, max_new_tokens: int, eos_id: int,
                 verdict_bias: list[dict[str, float]] | None = None):
        self.index = index
        self.grammar = index.grammar
        self.prompt_width = prompt_width
        self.max_new_tokens = max_new_tokens
        self.eos_id = eos_id
        self.verdict_bias = verdict_bias  # per row: added to each verdict's score where the verdict starts
        self._walked: dict[int, tuple[int, str, State | None]] = {}  # row -> (tokens, text, state) last step

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        allowed = torch.zeros(scores.shape, dtype=torch.bool)
        bias: list[tuple[int, int, float]] = []  # (row, token, what to add), after the mask (a new tensor)
        for row, sequence in enumerate(input_ids[:, self.prompt_width :].tolist()):
            if self.eos_id in sequence:
                allowed[row, self.eos_id] = True
                continue
            text, state = self._walk(row, sequence)
            kind = "end" if state is None else self.grammar.kind(state)
            left = self.max_new_tokens - len(sequence)
            if kind == "end":  # None cannot happen: every token came through this mask
                allowed[row, self.eos_id] = True
            elif state == self.index.enum_state and len(self.index.verdict_tokens) == 3:
                for verdict, token_id in self.index.verdict_tokens.items():
                    allowed[row, token_id] = True
                    if self.verdict_bias is not None:
                        bias.append((row, token_id, self.verdict_bias[row].get(verdict, 0.0)))
            elif kind == "text":
                mask, closers = self.index.text_parts(state, left, _sentence_done(text[len(text) - state[1] :]))
                if mask is not None:
                    allowed[row, : mask.shape[0]] = mask
                allowed[row, closers] = True
            else:
                allowed[row, self.index.structural(state, left)] = True
        masked = scores.masked_fill(~allowed.to(scores.device), float("-inf"))
        for row, token_id, add in bias:
            masked[row, token_id] += add
        return masked

    def _walk(self, row: int, sequence: list[int]) -> tuple[str, State | None]:
        """The row's answer text and grammar state: last step's, one token further (a row grows by one token a
        step), else walked from the start."""
        known = self._walked.get(row)
        if known is not None and known[0] == len(sequence) - 1:
            piece = self.index.texts[sequence[-1]] or ""
            text, state = known[1] + piece, self.grammar.walk(known[2], piece)
        else:
            text = "".join(self.index.texts[t] or "" for t in sequence)
            state = self.grammar.walk(self.grammar.start, text)
        self._walked[row] = (len(sequence), text, state)
        return text, state




def verdict_probabilities(index: TokenIndex, scores: Any) -> dict[str, float]:
    """The model's distribution over the verdicts at the verdict step: the softmax of its scores for the one
    token each verdict starts with (`scores`: that step's logits for one row, before or after the mask)."""
    import torch

    options = list(index.verdict_tokens)
    logits = torch.stack([scores[index.verdict_tokens[v]].float() for v in options])
    return dict(zip(options, torch.softmax(logits, dim=0).tolist(), strict=True))
