"""The appearance embedding of an escalated crop: a second reuse key that still recognises a person after
the perceptual hash has moved on (they turned, walked closer, the light changed).

It costs nothing extra where the classifier already describes the crop: the shipped MobileNetV2 files have a
`features` output beside `logits` (models/provenance/scripts/add_features_output.py), the 1280 pooled
channels of the same run. They are averaged in groups of 5 consecutive channels to 256 values and scaled so
the largest is ±127, then sent as 256 int8 bytes (shared.embedding). The study in BENCHMARKS.md ("Verdict
reuse: appearance embedding") chose this: a random projection to 256 or 320 values separates same and
different people worse, centring the features (subtracting a mean) much worse, and grouping by 5 separates
as well as all 1280 channels (same person, true matches at zero false matches: 0.80 against 0.79) at a fifth
of the bytes of int8, with nothing fitted to the clips it is measured on.
Only crops that would leave the device are embedded (shared.reuse compares them, on the device and in the
cloud).
"""

from __future__ import annotations

import numpy as np

from ..shared.embedding import EMBEDDING_BYTES

GROUP = 5  # 1280 channels / 5 = 256 values


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
