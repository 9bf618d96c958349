"""Where the in-process model runs (`[analyzer] device`, issue 29) and the process's one model cache (issue 30).

The device choice is tested here on whatever machine runs the tests (a CPU one in CI: "auto" must pick the CPU,
"cuda" must refuse clearly); the same answers on CPU and CUDA are checked with a tiny random model where a GPU
is present (bench/gpu.py's `equivalence`, which the GPU machine's script also runs), and with bf16 on the CPU
everywhere else."""

from __future__ import annotations

import shutil

import pytest
import torch
from edgetriage.cloud.analysis import build_backend
from edgetriage.cloud.analysis.device import (
    CPU_BATCH,
    MAX_BATCH,
    Accelerator,
    DeviceError,
    kv_bytes_per_token,
    place,
)
from edgetriage.cloud.analysis.llm import HF_DIR_NAME, cache_dir, loaded_model
from edgetriage.cloud.analysis.transformers import _runtime, build_engine
from edgetriage.cloud.config import AnalyzerConfig
from edgetriage.shared.config import ConfigError
from gpu import equivalence, tiny_model
from pydantic import ValidationError

H200 = Accelerator(cuda=True, name="NVIDIA H200", memory_bytes=143_771_000_000, bf16=True)
SMALL_GPU = Accelerator(cuda=True, name="a 4 GB card", memory_bytes=4 << 30, bf16=False)
SMOLLM2_KV = 2 * 30 * 3 * 64 * 2  # bytes per position: 30 layers, 3 key/value heads of 64, bf16


def test_auto_takes_the_gpu_when_there_is_one_and_the_cpu_otherwise():
    assert place("auto", Accelerator(cuda=False)) == place("cpu", H200)
    cpu = place("auto", Accelerator(cuda=False))
    assert (cpu.device, cpu.dtype, cpu.cuda) == ("cpu", "float32", False)
    gpu = place("auto", H200)
    assert (gpu.device, gpu.dtype, gpu.name) == ("cuda", "bfloat16", "NVIDIA H200")
    assert place("cuda", SMALL_GPU).dtype == "float16"  # no bf16 on that card


def test_auto_on_this_machine_matches_what_torch_sees():
    assert place("auto").device == ("cuda" if torch.cuda.is_available() else "cpu")


def test_cuda_without_cuda_is_a_clear_error_not_a_silent_cpu():
    with pytest.raises(DeviceError, match=r'analyzer.device is "cuda" but torch sees no CUDA device.*"auto" or "cpu"'):
        place("cuda", Accelerator(cuda=False))
    with pytest.raises(DeviceError, match="use \"auto\", \"cpu\" or \"cuda\""):
        place("gpu", H200)
    with pytest.raises(ValidationError, match="device"):
        AnalyzerConfig(device="gpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_the_service_refuses_device_cuda_here_with_a_config_error():
    with pytest.raises(ConfigError, match="torch sees no CUDA device"):
        build_engine(AnalyzerConfig(device="cuda"))


def test_the_batch_grows_with_the_device():
    assert place("cpu").batch_for(SMOLLM2_KV) == CPU_BATCH
    assert place("auto", H200).batch_for(SMOLLM2_KV, 270_000_000) == MAX_BATCH
    small = place("auto", SMALL_GPU).batch_for(SMOLLM2_KV, 270_000_000)
    assert 16 <= small < MAX_BATCH and small & (small - 1) == 0  # a power of two that fits a quarter of 4 GB
    assert small * SMOLLM2_KV * 1024 <= (4 << 30) * 0.25
    # A 7B's weights leave an H200 less room for rows: 28 layers, 4 key/value heads of 128.
    assert place("auto", H200).batch_for(2 * 28 * 4 * 128 * 2, 15_000_000_000) == MAX_BATCH
    assert place("auto", SMALL_GPU).batch_for(2 * 28 * 4 * 128 * 2, 3_500_000_000) == 16


def test_kv_bytes_per_token_reads_the_model_config():
    assert kv_bytes_per_token(tiny_model(0).config, 4) == 2 * 2 * 2 * 16 * 4


def test_max_batch_default_follows_the_device_and_an_explicit_one_wins():
    engine = build_engine(AnalyzerConfig())
    assert engine.runtime.placement.device == place("auto").device
    assert engine.max_batch == engine.runtime.batch
    if not torch.cuda.is_available():
        assert engine.max_batch == CPU_BATCH
    assert build_backend(AnalyzerConfig()).max_batch == engine.max_batch  # what the scheduler takes
    assert build_backend(AnalyzerConfig(max_batch=3)).max_batch == 3


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """A tiny random model with the shipped tokenizer, saved as a model folder."""
    shipped = cache_dir() / "models" / HF_DIR_NAME
    if not (shipped / "tokenizer_config.json").is_file():
        pytest.skip("the shipped model is not fetched here")
    folder = tmp_path_factory.mktemp("tiny-model")
    tiny_model(0).save_pretrained(folder)
    for path in shipped.iterdir():
        if path.name.startswith(("tokenizer", "special_tokens", "vocab", "merges")):
            shutil.copy(path, folder / path.name)
    return folder


def test_one_model_cache_keyed_by_everything_that_changes_the_model(tiny_folder):
    threads = torch.get_num_threads()
    try:
        one = loaded_model(tiny_folder, 1)
        assert loaded_model(tiny_folder / ".", 1) is one  # the same folder, however it is written
        assert loaded_model(tiny_folder, 2) is not one
        half = loaded_model(tiny_folder, 1, dtype="bfloat16")
        assert half is not one and next(half.model.parameters()).dtype == torch.bfloat16
        assert next(one.model.parameters()).dtype == torch.float32
        # The analyzer's runtime hangs off the cache's entry: one per key, threads included.
        cpu = place("cpu")
        runtime = _runtime(tiny_folder, 1, cpu)
        assert _runtime(tiny_folder, 1, cpu) is runtime and runtime.model is one.model and runtime.lock is one.lock
        assert _runtime(tiny_folder, 2, cpu) is not runtime
    finally:
        torch.set_num_threads(threads)


def test_bf16_gives_the_cpu_float32_verdicts():
    """Where no GPU is, bf16 on the CPU stands in for the GPU's dtype: same verdicts, bar near ties."""
    result = equivalence(seed=0)
    cpu_bf16 = [c for c in result["checks"] if c["device"] == "cpu"]
    assert cpu_bf16 and all(c["ok"] for c in cpu_bf16), result


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_gives_the_cpu_answers():
    """float32 on CUDA: every token the CPU's; bf16 on CUDA (what "auto" picks): every clear verdict."""
    for seed in range(3):
        result = equivalence(seed=seed)
        cuda = [c for c in result["checks"] if c["device"] == "cuda"]
        assert len(cuda) == 2 and all(c["ok"] for c in cuda), result


def test_the_constraint_carried_row_by_row_masks_as_a_fresh_walk_does(tiny_folder):
    """The answer constraint keeps each row's state from step to step (a GPU batch of 256 rows paid ~2 ms a
    row re-walking it): step by step it must allow exactly what a fresh constraint, walking every row from
    the start, allows, the verdict's bias included."""
    from edgetriage.cloud.analysis.answer import ANSWER
    from edgetriage.cloud.analysis.constrain import AnswerConstraint, TokenIndex

    loaded = loaded_model(tiny_folder, 1)
    tokenizer = loaded.tokenizer
    vocab = len(tokenizer)
    index = TokenIndex(tokenizer, vocab, ANSWER)
    rows, width, new = 6, 3, 48
    bias = [{"alert": 0.5 * r, "benign": -0.25 * r} for r in range(rows)]
    carried = AnswerConstraint(index, width, new, tokenizer.eos_token_id, bias)
    ids = torch.zeros(rows, width, dtype=torch.long)
    gen = torch.Generator().manual_seed(3)
    stops = [t for t, text in enumerate(index.texts) if text and text.endswith(".") and len(text) <= 2]
    for step in range(new):
        scores = torch.randn(rows, vocab, generator=gen) * 4
        if step >= 12:
            scores[:, stops] += 6.0  # rows end their sentence: the text the constraint carries decides then
        got = carried(ids, scores)
        fresh = AnswerConstraint(index, width, new, tokenizer.eos_token_id, bias)(ids, scores)
        assert torch.equal(got, fresh)
        ids = torch.cat([ids, got.argmax(-1, keepdim=True)], 1)
    texts = ["".join(index.texts[t] or "" for t in row[width:].tolist() if t != tokenizer.eos_token_id)
             for row in ids]
    assert all(ANSWER.walk(ANSWER.start, t) == ANSWER.end for t in texts), texts  # every answer complete
