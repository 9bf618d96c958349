"""The verdict path's throughput and latency by batch size, on whatever device torch finds (issue 29).

    python bench/gpu.py --quick              # CPU: SmolLM2-135M, batches 1 and 4
    python bench/gpu.py --check              # the same answers on CPU float32, CUDA float32 and bf16
    python bench/gpu.py --shape all          # on a GPU: 135M, 1.7B and a 7B-shaped model, batches 1..256

It times the same functions the transformers back-end runs for every verdict (cloud/analysis/decode.py): the
template's shared prefix prefilled once, a static cache per batch with that prefix copied into every row,
left-padded rows of their own tokens after it, one greedy generate() for the batch, with the model placed as
`[analyzer] device = "auto"` places it (cloud/analysis/device.py: bf16 on CUDA). Those two modules import only
torch and transformers, and this script loads them by path, so it runs from the repo root on a GPU machine
that has PyTorch and transformers and nothing else of this package (no pydantic, no network, no weights).

Weights: the shipped SmolLM2-135M folder when the package and its cached model are here (`random_weights`
false, and the real answer constraint runs: `constraint` true); otherwise random weights of the shape's
configuration (SmolLM2-135M, SmolLM2-1.7B, Qwen2.5-7B hyperparameters) and random prompt tokens, which cost
the same per token as real ones; the JSON says which. Every row generates exactly `--new` tokens.

The last line is one JSON object: `verdicts_per_s` and `ms_per_verdict` at the best batch, `batch1` and `best`
for the first shape, `shapes` with each shape's per-batch table, the device's name, the model's shape.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _by_path(name: str):
    """A module of ours that imports nothing of ours, loaded from its file (the package may not import here)."""
    spec = importlib.util.spec_from_file_location(
        f"edgetriage_bench_{name}", ROOT / "cloud" / "analysis" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


decode = _by_path("decode")
device = _by_path("device")

# Published hyperparameters of each shape (the models' config.json).
SHAPES: dict[str, dict] = {
    "135M": {"kind": "llama", "name": "SmolLM2-135M", "hidden_size": 576, "intermediate_size": 1536,
             "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152,
             "rope_theta": 100000.0, "tie_word_embeddings": True, "max_position_embeddings": 8192},
    "1.7B": {"kind": "llama", "name": "SmolLM2-1.7B", "hidden_size": 2048, "intermediate_size": 8192,
             "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 49152,
             "rope_theta": 130000.0, "tie_word_embeddings": True, "max_position_embeddings": 8192},
    "7B": {"kind": "qwen2", "name": "Qwen2.5-7B-shaped", "hidden_size": 3584, "intermediate_size": 18944,
           "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
           "rope_theta": 1000000.0, "tie_word_embeddings": False, "max_position_embeddings": 32768},
}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def random_model(shape: str, placement, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    spec = {k: v for k, v in SHAPES[shape].items() if k not in ("kind", "name")}
    config_cls, model_cls = ((LlamaConfig, LlamaForCausalLM) if SHAPES[shape]["kind"] == "llama"
                             else (Qwen2Config, Qwen2ForCausalLM))
    config = config_cls(**spec, bos_token_id=1, eos_token_id=2, pad_token_id=2)
    torch.manual_seed(seed)
    dtype = getattr(torch, placement.dtype)
    with torch.device(placement.device):  # weights created where they run: a 7B in float32 on the host is 30 GB
        model = model_cls(config).to(dtype)
    return model.eval()


def shipped_model(placement):
    """(model, tokenizer, constraint factory) of the shipped SmolLM2-135M, or None where the package or its
    cached folder is not here."""
    try:
        from edgetriage.cloud.analysis.answer import ANSWER
        from edgetriage.cloud.analysis.constrain import AnswerConstraint, TokenIndex
        from edgetriage.cloud.analysis.llm import HF_DIR_NAME, cache_dir, loaded_model
    except ImportError as exc:
        say(f"gpu: the package does not import here ({exc}); random weights")
        return None
    folder = cache_dir() / "models" / HF_DIR_NAME
    if not (folder / "config.json").is_file():
        say(f"gpu: no converted model in {folder}; random weights")
        return None
    import torch

    loaded = loaded_model(folder, torch.get_num_threads(), placement.device, placement.dtype)
    index = TokenIndex(loaded.tokenizer, loaded.model.config.vocab_size, ANSWER)
    eos = loaded.tokenizer.eos_token_id

    def constraint(width: int, new: int):
        return AnswerConstraint(index, width, new, eos)

    return loaded.model, constraint


def time_batch(model, prefix_ids, prefix_cache, rows: int, tail: int, new: int, constraint, seed: int) -> float:
    """Seconds for one batch of `rows` verdicts through the verdict path."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    vocab = model.config.vocab_size
    tails = [torch.randint(3, vocab, (tail - (r % 4),), generator=gen).tolist() for r in range(rows)]
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
    sync()
    started = time.perf_counter()
    input_ids, attention = decode.rows_after(list(prefix_ids), tails, 0, model.device)
    cache = decode.static_cache(model, prefix_cache, rows, input_ids.shape[1] + new)
    processors = [constraint(input_ids.shape[1], new)] if constraint else []
    out = decode.generate(model, input_ids, attention, cache, max_new_tokens=new, processors=processors,
                          max_time=600.0, pad_id=0, eos_id=None if constraint is None else model.config.eos_token_id,
                          min_new_tokens=0 if constraint else new)
    sync()
    seconds = time.perf_counter() - started
    assert out.sequences.shape[0] == rows
    return seconds


def run_shape(shape: str, placement, args, deadline: float) -> dict:
    import torch

    shipped = shipped_model(placement) if shape == "135M" and not args.random else None
    model, constraint = shipped if shipped else (random_model(shape, placement), None)
    params = sum(p.numel() for p in model.parameters())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    kv = device.kv_bytes_per_token(model.config, next(model.parameters()).element_size())
    chosen = placement.batch_for(kv, weight_bytes)
    gen = torch.Generator().manual_seed(1)
    prefix_ids = torch.randint(3, model.config.vocab_size, (args.prefix,), generator=gen).tolist()
    prefix_cache = decode.prefill(model, prefix_ids)
    time_batch(model, prefix_ids, prefix_cache, 1, args.tail, 4, constraint, 0)  # warm-up, not timed
    out = {"shape": shape, "model": SHAPES[shape]["name"], "random_weights": shipped is None,
           "constraint": constraint is not None, "params_m": round(params / 1e6, 1),
           "layers": model.config.num_hidden_layers, "hidden": model.config.hidden_size, "dtype": placement.dtype,
           "prompt_tokens": args.prefix + args.tail, "prefix_tokens": args.prefix, "new_tokens": args.new,
           "chosen_batch": chosen, "batches": []}
    say(f"gpu: {shape} ({out['params_m']} M parameters, {'random' if shipped is None else 'shipped'} weights, "
        f"{placement.dtype} on {placement.name}); device batch {chosen}")
    last_s = 0.0
    for rows in args.batches:
        if last_s and time.monotonic() + last_s * 2.5 * args.repeats > deadline:
            out["stopped"] = f"time budget: batch {rows} would not finish in it"
            say(f"gpu: {shape}: {out['stopped']}")
            break
        try:
            runs = [time_batch(model, prefix_ids, prefix_cache, rows, args.tail, args.new, constraint, 7 + i)
                    for i in range(args.repeats)]
        except torch.OutOfMemoryError:
            out["stopped"] = f"out of memory at batch {rows}"
            say(f"gpu: {shape}: {out['stopped']}")
            torch.cuda.empty_cache()
            break
        last_s = min(runs)
        row = {"batch": rows, "s": round(last_s, 3), "ms_per_verdict": round(last_s * 1000 / rows, 2),
               "verdicts_per_s": round(rows / last_s, 2)}
        out["batches"].append(row)
        say(f"gpu: {shape} batch {rows:>3}: {row['s']:8.3f} s  {row['ms_per_verdict']:8.2f} ms/verdict  "
            f"{row['verdicts_per_s']:8.2f} verdicts/s")
    if out["batches"]:
        one = out["batches"][0]
        best = max(out["batches"], key=lambda r: r["verdicts_per_s"])
        out["batch1"] = {"batch": one["batch"], "ms_per_verdict": one["ms_per_verdict"],
                         "verdicts_per_s": one["verdicts_per_s"]}
        out["best"] = {"batch": best["batch"], "ms_per_verdict": best["ms_per_verdict"],
                       "verdicts_per_s": best["verdicts_per_s"]}
        out["best_over_batch1"] = round(best["verdicts_per_s"] / one["verdicts_per_s"], 2)
    del model, prefix_cache
    if placement.cuda:
        torch.cuda.empty_cache()
    return out


def tiny_model(seed: int):
    """A two-layer random Llama with a 512-token vocabulary; weights large enough that its choices are clear."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=512, max_position_embeddings=256, initializer_range=0.3,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).eval()


VERDICT_TOKENS = (5, 6, 7)  # the tiny model's stand-in for the first tokens of "alert", "benign", "unknown"
TIE_LOGITS = 0.25  # verdicts the float32 model prefers by less than this may differ in bf16


def answers(model, seed: int, rows: int = 8, new: int = 12) -> tuple[list[list[int]], list[int], list[float]]:
    """(greedy tokens per row, the verdict per row, its margin over the runner-up in logits) through the verdict
    path: a shared prefix prefilled once,
    left-padded rows of different lengths after it; the verdict is the first step's choice among three tokens,
    as the answer constraint makes it."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    prefix = torch.randint(3, 512, (24,), generator=gen).tolist()
    tails = [torch.randint(3, 512, (5 + 3 * r,), generator=gen).tolist() for r in range(rows)]
    input_ids, attention = decode.rows_after(prefix, tails, 0, model.device)
    cache = decode.static_cache(model, decode.prefill(model, prefix), rows, input_ids.shape[1] + new)
    out = decode.generate(model, input_ids, attention, cache, max_new_tokens=new, processors=[], max_time=60.0,
                          pad_id=0, eos_id=None, min_new_tokens=new)
    first = out.scores[0].float().cpu()[:, list(VERDICT_TOKENS)]
    top = first.topk(2, dim=-1).values
    return (out.sequences[:, input_ids.shape[1]:].cpu().tolist(), first.argmax(-1).tolist(),
            (top[:, 0] - top[:, 1]).tolist())


def equivalence(seed: int = 0) -> dict:
    """The same tiny model's answers on the CPU in float32 against each other placement this machine has: on
    CUDA in float32 every token must match, in bfloat16 (what device = "auto" picks there) every verdict the
    float32 model did not take by a hair (a margin under TIE_LOGITS, which bf16's rounding can flip on any
    device); bfloat16 on the CPU stands in where no GPU is. `ok` says whether all held."""
    import torch

    reference = tiny_model(seed)
    tokens, verdicts, margins = answers(reference, seed)
    targets = [("cuda", torch.float32), ("cuda", torch.bfloat16)] if torch.cuda.is_available() else []
    targets.append(("cpu", torch.bfloat16))
    out: dict = {"cuda": torch.cuda.is_available(), "rows": len(tokens), "checks": []}
    for where, dtype in targets:
        model = tiny_model(seed).to(device=where, dtype=dtype)
        got_tokens, got_verdicts, _ = answers(model, seed)
        same = sum(a == b for x, y in zip(tokens, got_tokens, strict=True) for a, b in zip(x, y, strict=True))
        clear = [i for i, m in enumerate(margins) if dtype == torch.float32 or m >= TIE_LOGITS]
        check = {"device": where, "dtype": str(dtype).removeprefix("torch."),
                 "verdicts_same": all(got_verdicts[i] == verdicts[i] for i in clear),
                 "near_ties": len(verdicts) - len(clear), "near_ties_same": got_verdicts == verdicts,
                 "tokens_same_share": round(same / sum(len(t) for t in tokens), 3)}
        check["ok"] = check["verdicts_same"] and (dtype != torch.float32 or check["tokens_same_share"] == 1.0)
        out["checks"].append(check)
    out["ok"] = all(c["ok"] for c in out["checks"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="CPU-sized: batches 1 and 4, 24 new tokens, the first shape only"
    )
    parser.add_argument("--shape", default="135M", help="135M, 1.7B, 7B or all (comma-separated too)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--batches", default=None, help="comma-separated; default 1,4,8 (quick), "
                                                          "1,16,64,128,256 on a GPU, 1,4,8,16 on a CPU")
    parser.add_argument("--prefix", type=int, default=540, help="the template's shared prefix, tokens (person: 557)")
    parser.add_argument("--tail", type=int, default=40, help="each row's own prompt tokens after it (the facts)")
    parser.add_argument("--new", type=int, default=40, help="tokens each verdict generates")
    parser.add_argument("--repeats", type=int, default=None, help="runs per batch size (fastest kept)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="stop starting batches after this")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: 1 on a CPU, as [analyzer] threads; torch's own on a GPU)")
    parser.add_argument("--check", action="store_true", help="only the CPU-against-CUDA answers check")
    parser.add_argument("--random", action="store_true", help="random weights even where the model is here")
    args = parser.parse_args(argv)
    import torch
    import transformers

    if args.check:
        result = equivalence()
        for check in result["checks"]:
            say(f"gpu: {check['device']} {check['dtype']}: verdicts the same as the CPU's: {check['verdicts_same']}, "
                f"tokens the same: {check['tokens_same_share']:.0%}")
        print(json.dumps({"bench": "gpu", "check": "equivalence", **result}), flush=True)
        return 0 if result["ok"] else 1

    try:
        placement = device.place(args.device)
    except device.DeviceError as exc:
        say(f"gpu: {exc}")
        return 2
    shapes = list(SHAPES) if args.shape == "all" else [s.strip() for s in args.shape.split(",")]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        say(f"gpu: unknown --shape {', '.join(unknown)}; use {', '.join(SHAPES)} or all")
        return 2
    if args.quick:
        shapes = shapes[:1]
    if args.quick:
        args.new = min(args.new, 24)  # a verdict's answer is ~22 tokens
    default = "1,4" if args.quick else ("1,16,64,128,256" if placement.cuda else "1,4,8,16")
    args.batches = [int(b) for b in (args.batches or default).split(",")]
    args.repeats = args.repeats or (2 if placement.cuda else 1)
    torch.set_num_threads(args.threads or (torch.get_num_threads() if placement.cuda else 1))
    deadline = time.monotonic() + args.budget_s
    results = []
    for shape in shapes:
        if time.monotonic() > deadline:
            results.append({"shape": shape, "stopped": "time budget spent before this shape"})
            continue
        try:
            results.append(run_shape(shape, placement, args, deadline))
        except Exception as exc:  # noqa: BLE001 - one shape failing must not lose the others' figures
            say(f"gpu: {shape} failed: {type(exc).__name__}: {exc}")
            results.append({"shape": shape, "error": f"{type(exc).__name__}: {exc}"[:300]})
    first = next((r for r in results if "best" in r), None)
    summary = {
        "bench": "gpu", "device": placement.device, "device_name": placement.name, "dtype": placement.dtype,
        "torch": torch.__version__, "transformers": transformers.__version__, "threads": torch.get_num_threads(),
        "quick": args.quick, "shape": first["shape"] if first else None,
        "model": first["model"] if first else None, "random_weights": first["random_weights"] if first else None,
        "verdicts_per_s": first["best"]["verdicts_per_s"] if first else None,
        "ms_per_verdict": first["best"]["ms_per_verdict"] if first else None,
        "batch1": first["batch1"] if first else None, "best": first["best"] if first else None,
        "best_over_batch1": first["best_over_batch1"] if first else None,
        "shapes": results,
    }
    print(json.dumps(summary), flush=True)
    return 0 if first else 1


if __name__ == "__main__":
    sys.exit(main())
