"""What a question may be: text of bounded length, no control characters, not an instruction to the model.
Each refusal says what was wrong and what to do; the router answers it with a 4xx and does nothing else.
The instruction check reads the question made plain (shared.text: NFKC, no zero-width or bidi controls), so
"ｉｇｎｏｒｅ" or "ig<U+200B>nore" is read as "ignore"; the plain text is what the router goes on with."""

from __future__ import annotations

import re
import unicodedata

from ...shared.text import plain

_INJECTION = re.compile(
    r"(ignore|disregard|forget|override|bypass)\b.{0,40}\b(instruction|instructions|prompt|rules|above|previous|"
    r"system|guidelines)|\b(system prompt|jailbreak|developer mode|you are now|act as|pretend (to be|you)|"
    r"new instructions|reveal your|print your|repeat (the|your) (prompt|instructions))\b|"
    r"<\|?(im_start|im_end|system|endoftext)\|?>|\[/?inst\]|</?s>|^\s*(system|assistant)\s*:", re.IGNORECASE)


class AskError(ValueError):
    """A question refused; `status` is the HTTP status to answer with (400, 403, 404)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def check_question(raw: object, max_chars: int) -> str:
    """The question, stripped; AskError(400) when it is not one a person would ask about the events."""
    if not isinstance(raw, str):
        raise AskError(400, "question must be a string, e.g. {\"question\": \"How many people came today?\"}")
    question = raw.strip()
    if not question:
        raise AskError(400, "question is empty; ask something about the events, e.g. \"When was the last alert?\"")
    if len(question) > max_chars:
        raise AskError(400, f"question is {len(question)} characters long; the limit is {max_chars} "
                            "([ask] max_question_chars): ask a shorter question")
    for ch in question:  # refused, not stripped: a question is plain text
        if ch in "\t\n\r":
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs", "Co", "Cn") or ch == "\ufffd":
            raise AskError(400, f"question contains binary or control characters (U+{ord(ch):04X}); send plain text")
    question = plain(question).strip()  # what the checks below and the router read
    if not re.search(r"[^\W\d_]", question):
        raise AskError(400, "question has no words; ask something about the events in words")
    if _INJECTION.search(question):
        raise AskError(400, "question reads as instructions to the model, not a question about the events; "
                            "ask about what the cameras saw")
    return question
