"""The appearance embedding both sides speak of: its wire form and how two are compared.

The device (edge.embed) sends, with an escalated crop, MobileNetV2's pooled features (1280 channels averaged
in groups of 5, scaled to int8): EMBEDDING_BYTES bytes, raw in MessagePack, base64 in JSON (verdicts and
stored documents). Two embeddings are compared by cosine similarity (`similarity`), which shared.reuse
uses as the second reuse key beside the perceptual hash.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

import numpy as np
from pydantic import BeforeValidator, Field, PlainSerializer, WithJsonSchema

EMBEDDING_BYTES = 256
EMBEDDING_ALGS = ("mnv2avg256",)


def _embedding_in(value: Any) -> Any:
    if isinstance(value, str):  # JSON
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("embedding must be base64") from None
    return value


Embedding = Annotated[bytes, BeforeValidator(_embedding_in),
                      PlainSerializer(lambda b: base64.b64encode(b).decode(), return_type=str, when_used="json"),
                      Field(min_length=EMBEDDING_BYTES, max_length=EMBEDDING_BYTES),
                      WithJsonSchema({"type": "string", "contentEncoding": "base64", "minLength": 344, "maxLength": 344,
                                      "description": f"{EMBEDDING_BYTES} int8 values (raw bytes in MessagePack)"})]


def similarity(a: bytes, b: bytes) -> float:
    """Cosine similarity of two int8 embeddings, rounded to 4 places (so every side compares the same
    number with a threshold); 0.0 for a zero vector or unequal lengths."""
    if len(a) != len(b):
        return 0.0
    x = np.frombuffer(a, np.int8).astype(np.int32)
    y = np.frombuffer(b, np.int8).astype(np.int32)
    norm = float(np.sqrt(float(x @ x) * float(y @ y)))
    return round(float(x @ y) / norm, 4) if norm else 0.0
