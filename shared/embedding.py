"""The appearance embedding both sides speak of: how it is made from MobileNetV2's features, its wire form,
and how two are compared.

A second reuse key that still recognises a person after the perceptual hash has moved on (they turned, walked
closer, the light changed). The shipped MobileNetV2 files have a `features` output beside `logits`
(models/provenance/scripts/add_features_output.py), the 1280 pooled channels of the same run; `embedding_of`
averages them in groups of 5 consecutive channels to 256 values, scaled so the largest is ±127: EMBEDDING_BYTES
int8 bytes, raw in MessagePack, base64 in JSON (verdicts and stored documents). The study in
docs/developers/benchmarks.md ("Verdict reuse: appearance embedding") chose this: a random projection to 256 or 320
values separates same and different people worse, centring the features (subtracting a mean) much worse, and
grouping by 5 separates as well as all 1280 channels (same person, true matches at zero false matches: 0.80 against
0.79) at a fifth of the bytes of int8, with nothing fitted to the clips it is measured on. The device embeds only
crops that would leave it (edge.vision.classify); the cloud embeds the crops it reuses across devices itself
(shared.cropkeys, cloud.keys).
Two embeddings are compared by cosine similarity (`similarity`), which shared.reuse uses as the second reuse key
beside the perceptual hash.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

import numpy as np
from pydantic import BeforeValidator, Field, PlainSerializer, WithJsonSchema

EMBEDDING_BYTES = 256
EMBEDDING_ALGS = ("mnv2avg256",)
GROUP = 5  # 1280 channels / 5 = 256 values


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


def embedding_of(features: np.ndarray) -> bytes | None:
    """256 int8 bytes from MobileNetV2's 1280 pooled features; None for a vector that is all zeros (nothing
    to compare) or of another size."""
    flat = np.asarray(features, np.float32).reshape(-1)
    if flat.size != EMBEDDING_BYTES * GROUP:
        return None
    grouped = flat.reshape(EMBEDDING_BYTES, GROUP).mean(axis=1)
    peak = float(np.abs(grouped).max())
    if not np.isfinite(peak) or peak <= 0.0:
        return None
    return np.round(grouped * (127.0 / peak)).astype(np.int8).tobytes()
