"""The verdict path's tensors: a template's shared prefix prefilled once, a static cache per batch with that
prefix in place, left-padded rows after it, and one greedy generate() for the whole batch, on whatever device
the model is on.

transformers.py drives these for every verdict; bench/gpu.py drives the very same functions with random token
ids to time the path by batch size. So this module imports nothing of ours (bench/gpu.py loads it by path on a
GPU machine that has only PyTorch and transformers) and torch only inside its functions.
"""

from __future__ import annotations

import warnings
from typing import Any


def prefill(model: Any, ids: list[int]) -> Any:
    """The keys/values of `ids` (batch of one) in a DynamicCache on the model's device."""
    import torch
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        model(input_ids=torch.tensor([ids], device=model.device), cache=cache, use_cache=True)
    return cache


def static_cache(model: Any, prefix: Any | None, rows: int, length: int) -> Any:
    """A cache of `length` positions for `rows` rows, the prefix's keys/values (a DynamicCache of one row, or
    None) already in place. It is written in place as generate() goes: a growing cache copies all of itself at
    every step of every layer, which at a batch of 16 cost more than the attention on a CPU (torch.cat: 2.9 s
    of a 15 s batch), and a fixed shape is what a GPU wants. Without a prefix the cache allocates itself on the
    device of the first keys written into it."""
    from transformers import StaticCache

    cache = StaticCache(config=model.config, max_cache_len=length)
    if prefix is not None:
        for layer, source in zip(cache.layers, prefix.layers, strict=True):
            keys, values = source.keys, source.values
            layer.lazy_initialization(keys.expand(rows, -1, -1, -1), values.expand(rows, -1, -1, -1))
            layer.keys[:, :, : keys.shape[2]] = keys
            layer.values[:, :, : values.shape[2]] = values
            layer.cumulative_length.fill_(keys.shape[2])
    return cache


def rows_after(head: list[int], tails: list[list[int]], pad_id: int, device: Any) -> tuple[Any, Any]:
    """(input_ids, attention_mask) for rows that share `head` and end in their own tails, left-padded so that
    every row's last token is the batch's last position."""
    import torch

    width = max(len(t) for t in tails)
    input_ids = torch.tensor([head + [pad_id] * (width - len(t)) + t for t in tails], dtype=torch.long,
                             device=device)
    attention = torch.tensor([[1] * len(head) + [0] * (width - len(t)) + [1] * len(t) for t in tails],
                             dtype=torch.long, device=device)
    return input_ids, attention


def generate(model: Any, input_ids: Any, attention: Any, cache: Any, *, max_new_tokens: int,
             processors: list[Any], max_time: float, pad_id: int, eos_id: int | None,
             min_new_tokens: int = 0) -> Any:
    """Greedy decoding of the whole batch into `cache`; the result has `sequences` and the first step's
    `scores` (the verdict step, with the constraint's mask applied)."""
    import torch
    from transformers import LogitsProcessorList

    lengths = {"min_new_tokens": min_new_tokens} if min_new_tokens else {}
    with torch.inference_mode(), warnings.catch_warnings():
        # generate() hands its cache to forward() under the old keyword, which transformers 5 warns about on
        # every call (issue 14): that exact warning only, here only.
        warnings.filterwarnings("ignore", message="`past_key_values` is deprecated", category=FutureWarning)
        return model.generate(
            input_ids=input_ids, attention_mask=attention, max_new_tokens=max_new_tokens, do_sample=False,
            logits_processor=LogitsProcessorList(processors),
            max_time=max_time, pad_token_id=pad_id, eos_token_id=eos_id, return_dict_in_generate=True,
            output_scores=True, past_key_values=cache, **lengths)


def forward_last(model: Any, input_ids: Any, attention: Any, positions: Any, cache: Any) -> Any:
    """One forward pass of the batch into `cache`; the logits of every row's last position."""
    import torch

    with torch.inference_mode():
        out = model(input_ids=input_ids, attention_mask=attention, position_ids=positions, cache=cache,
                    use_cache=True)
    return out.logits[:, -1]
