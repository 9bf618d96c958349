"""Text a sender wrote, made plain before anything reads it, and bad input shown back only in part.

`plain(text)`: Unicode NFKC (fullwidth and other compatibility letters become the ordinary ones), with the
characters that change how text looks without being seen removed: zero-width and bidi controls (Unicode
category Cf: U+200B..U+200F, U+202A..U+202E, U+2066..U+2069, U+FEFF, ...), NUL and the other C0/C1 controls
(tab, newline and carriage return stay), and line/paragraph separators turned into spaces. Every free-text
field a device sends (shared.protocol) and every question (cloud.ask.guard) goes through it, so a filter or a
reader sees what a person would read: "ｉｇｎｏｒｅ" and "ig\u200bnore" are "ignore".

`shown(value)`: a value as an error message may echo it: its repr, cut to a short prefix (a 400 KB field is
not sent back whole).
"""

from __future__ import annotations

import re
import unicodedata

_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_KEEP = frozenset("\t\n\r")
SHOWN_CHARS = 40  # the most of a bad value an error message echoes


def plain(text: str) -> str:
    """`text` as a person reads it (see the module doc); ASCII text without controls is returned as is."""
    if text.isascii() and not _ASCII_CONTROL.search(text):
        return text
    text = unicodedata.normalize("NFKC", text)
    out = []
    for ch in text:
        if ch in _KEEP:
            out.append(ch)
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf"):
            continue
        out.append(" " if category in ("Zl", "Zp") else ch)
    return "".join(out)


def plain_or_as_is(value: object) -> object:
    """`plain` for a string, anything else unchanged (for a validator that runs before the type check)."""
    return plain(value) if isinstance(value, str) else value


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """repr(value) cut to `limit` characters, saying how long it was when cut."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str | bytes) else ""
    return text[:limit] + "..." + size
