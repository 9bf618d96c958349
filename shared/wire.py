"""What every message between device and cloud is, and how a receiver refuses one: the immutable base model
that ignores unknown fields (a newer sender may add some within v1), `ProtocolError` with a reason a person can
act on and a `code` to count refusals by, and the JSON object and validation steps every decoder shares.
The messages themselves: shared.protocol (events, verdicts) and shared.control (load, config, state)."""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from .text import plain_or_as_is

# free text a sender writes: made plain (shared.text: NFKC, no zero-width or bidi controls, no NUL) on decoding
FreeText = Annotated[str, BeforeValidator(plain_or_as_is)]
REJECT_CODES = ("too_large", "encoding", "schema_version", "invalid", "image", "site", "devices")


class ProtocolError(ValueError):
    """A message that cannot be accepted, with the reason a person can act on and a short `code` (one of
    REJECT_CODES) to count rejections by."""

    def __init__(self, reason: str, code: str = "invalid"):
        super().__init__(reason)
        self.reason = reason
        self.code = code


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def short(value: object) -> str:
    """A value as a receiver quotes it in a refusal: its repr, cut to 24 characters."""
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def validation_reason(exc: ValidationError) -> str:
    """A pydantic error as one line naming the fields, as the decoders say it."""
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "message"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def json_object(data: bytes, what: str, limit: int) -> dict:
    """`data` as a JSON object, refused (ProtocolError) when over `limit` bytes, not JSON or not an object."""
    if len(data) > limit:
        raise ProtocolError(f"{what} is {len(data)} bytes, over the {limit}-byte limit", "too_large")
    try:
        obj = json.loads(data)
    except RecursionError:
        raise ProtocolError(f"{what} is not JSON: nested too deeply", "encoding") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"{what} is not JSON: {str(exc)[:120]}", "encoding") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what} must be a JSON object", "encoding")
    return obj


def validated(model: type[BaseModel], obj: dict, what: str):
    """`obj` as a `model`, refused with the fields that were wrong."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise ProtocolError(f"invalid {what}: {validation_reason(exc)}") from None
    except RecursionError:
        raise ProtocolError(f"invalid {what}: values nested too deeply") from None
