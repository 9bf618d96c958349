"""The answer every back-end must give, in one place: the pydantic model, its JSON schema (sent to servers that
enforce one), the character-level grammar the in-process decoder enforces, and a lenient parser for servers
that enforce nothing. All of them agree on one shape:

    {"verdict": "alert|benign|unknown", "description": "<1..120 characters>", "confidence": <0..1>}

The verdict comes first: with the translator's facts in the prompt, a small model's first answer token is
where it reads them best, and the in-process decoder compares the three verdicts' likelihoods there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DESCRIPTION_MAX = 120


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


# The verdict comes first. Without facts (the first build: ImageNet classes only), neither order made
# SmolLM2-135M's verdict follow the evidence; with the translator's facts last in the prompt, the verdict
# token right after them follows them (bench/verdicts.py), and the description is written knowing it.
ANSWER = AnswerGrammar(
    prefix='{"verdict": "',
    segments=(
        ("enum", ("alert", "benign", "unknown")),
        ("literal", '", "description": "'),
        ("text", DESCRIPTION_MAX),
        ("literal", '", "confidence": '),
        ("number", None),
        ("literal", "}"),
    ),
)


def answer_schema() -> dict[str, Any]:
    """The JSON schema of an answer, keys in the order the model should write them."""
    return {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["alert", "benign", "unknown"]},
            "description": {"type": "string", "minLength": 1, "maxLength": DESCRIPTION_MAX},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["verdict", "description", "confidence"],
        "additionalProperties": False,
    }


class AnswerError(ValueError):
    """Model output that is not a usable answer; the message says what was wrong."""


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_answer(text: str) -> Answer:
    """The answer in a model's free text: the first JSON object in it (code fences and chatter around it are
    ignored), keys matched case-insensitively, an over-long description cut at the limit. Anything else
    wrong raises AnswerError."""
    body = _FENCE.sub("", text.strip())
    start = body.find("{")
    if start < 0:
        raise AnswerError("no JSON object in the answer")
    try:
        obj, _ = json.JSONDecoder().raw_decode(body[start:])
    except RecursionError:  # nested deeper than Python's parser goes: refused like any bad JSON
        raise AnswerError("bad JSON: nested too deeply") from None
    except ValueError as exc:
        raise AnswerError(f"bad JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise AnswerError("the answer is not a JSON object")
    fields = {str(k).strip().lower(): v for k, v in obj.items()}
    picked = {k: fields[k] for k in ("description", "verdict", "confidence") if k in fields}
    if isinstance(picked.get("verdict"), str):
        picked["verdict"] = picked["verdict"].strip().lower()
    if isinstance(picked.get("description"), str):
        picked["description"] = picked["description"].strip()[:DESCRIPTION_MAX]
    try:
        return Answer.model_validate(picked)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "answer"
        raise AnswerError(f"{where}: {err['msg']}") from None
