"""Where the in-process model runs: `[analyzer] device` ("auto", "cpu", "cuda") turned into a device, a dtype and
a batch size for that device.

On a GPU one verdict costs about the same whatever the model size (kernel launches, ~17 ms per generated token
on an H200), so the GPU pays only with many verdicts per generate(): the batch grows with the memory the device
has for the rows' key/value caches. On a CPU the batch stays small: there a batch of 8 already costs seconds.

This module imports nothing of ours and torch only inside `detect`, so bench/gpu.py can load it by path on a
machine that has PyTorch and nothing else of this package's dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass

CPU_BATCH = 8  # events per generate() on a CPU: the prefix cache makes 8 pay; more only adds latency
MAX_BATCH = 256  # the config's upper bound for max_batch
MIN_GPU_BATCH = 16
KV_SHARE = 0.25  # of a GPU's memory, what the rows' key/value caches may take (the rest: weights, activations)
ROW_TOKENS = 1024  # positions one row's cache is sized for when choosing the batch (a verdict uses ~400-700)


class DeviceError(ValueError):
    """The configured device cannot be used here; the message says why and what to set instead."""


@dataclass(frozen=True)
class Accelerator:
    """What this process can see: whether CUDA works, and its first device's name and memory."""

    cuda: bool
    name: str = "cpu"
    memory_bytes: int = 0
    bf16: bool = False


@dataclass(frozen=True)
class Placement:
    """The answer to `[analyzer] device`: torch device string, dtype name, and a batch size for the device."""

    device: str  # "cpu" | "cuda"
    dtype: str  # "float32" | "bfloat16" | "float16"
    name: str  # what to show: "cpu" or the GPU's name
    memory_bytes: int = 0

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def batch_for(self, kv_bytes_per_token: int, weight_bytes: int = 0) -> int:
        """Events per generate(): CPU_BATCH on a CPU; on a GPU the most rows (a power of two, MIN_GPU_BATCH to
        MAX_BATCH) whose key/value caches of ROW_TOKENS positions fit in KV_SHARE of what the weights leave."""
        if not self.cuda:
            return CPU_BATCH
        room = max(0, self.memory_bytes - weight_bytes) * KV_SHARE
        rows = int(room // max(1, kv_bytes_per_token * ROW_TOKENS))
        batch = MIN_GPU_BATCH
        while batch * 2 <= min(rows, MAX_BATCH):
            batch *= 2
        return batch


def detect() -> Accelerator:
    """The accelerator torch sees (no CUDA when torch is a CPU build or no driver answers)."""
    import torch

    if not torch.cuda.is_available():
        return Accelerator(cuda=False)
    props = torch.cuda.get_device_properties(0)
    return Accelerator(cuda=True, name=props.name, memory_bytes=int(props.total_memory),
                       bf16=bool(torch.cuda.is_bf16_supported()))


def place(requested: str, seen: Accelerator | None = None) -> Placement:
    """`[analyzer] device` on what this process sees. "auto": CUDA when torch sees one, else the CPU; "cuda"
    without one is a DeviceError, not a silent CPU (a GPU host that lost its driver should say so)."""
    if requested not in ("auto", "cpu", "cuda"):
        raise DeviceError(f"analyzer.device is {requested!r}; use \"auto\", \"cpu\" or \"cuda\"")
    if requested == "cpu":
        return Placement("cpu", "float32", "cpu")
    seen = seen if seen is not None else detect()
    if not seen.cuda:
        if requested == "cuda":
            raise DeviceError("analyzer.device is \"cuda\" but torch sees no CUDA device (a CPU-only torch build, "
                              "no driver, or CUDA_VISIBLE_DEVICES hides it); install a CUDA build of torch, or "
                              "set analyzer.device = \"auto\" or \"cpu\"")
        return Placement("cpu", "float32", "cpu")
    # bf16 keeps float32's range (no overflow in the logits); a GPU without it gets float16.
    return Placement("cuda", "bfloat16" if seen.bf16 else "float16", seen.name, seen.memory_bytes)


def kv_bytes_per_token(config: object, dtype_bytes: int) -> int:
    """Bytes one position of one row takes in the key/value cache of a transformers model config."""
    layers = int(config.num_hidden_layers)  # type: ignore[attr-defined]
    heads = int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads)  # type: ignore[attr-defined]
    head_dim = int(getattr(config, "head_dim", None)
                   or config.hidden_size // config.num_attention_heads)  # type: ignore[attr-defined]
    return 2 * layers * heads * head_dim * dtype_bytes
