"""Finding and verifying the model files the product ships (models/manifest.json).

A model is named by its manifest key (`ssdlite_person`) or given as a path to an .onnx file; either way its
sha256 is checked against the manifest when the manifest knows the file, and a mismatch is an error that
says which file and what to do.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path


class ModelError(RuntimeError):
    """A model file that is missing, unreadable or not the one the manifest describes."""


@dataclass(frozen=True)
class ModelFile:
    name: str
    path: Path
    entry: dict

    @property
    def labels(self) -> list[str]:
        if "labels_file" in self.entry:
            return (bundled_dir() / self.entry["labels_file"]).read_text(encoding="utf-8").splitlines()
        return []


def bundled_dir() -> Path:
    return Path(str(resources.files("edgetriage.models")))


@cache
def manifest() -> dict:
    return json.loads((bundled_dir() / "manifest.json").read_text(encoding="utf-8"))


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def resolve(name_or_path: str, *, verify: bool = True) -> ModelFile:
    """A manifest key or a file path -> the verified file with its manifest entry."""
    models = manifest()["models"]
    if name_or_path in models:
        entry = models[name_or_path]
        path = bundled_dir() / entry["file"]
        name = name_or_path
    else:
        path = Path(name_or_path).expanduser()
        match = [(k, e) for k, e in models.items() if e["file"] == path.name]
        if not match:
            known = ", ".join(sorted(models))
            raise ModelError(f"model {name_or_path!r}: not a manifest key ({known}) nor a file the manifest describes")
        name, entry = match[0]
    if not path.is_file():
        raise ModelError(f"model {name!r}: file {path} is missing; reinstall edgetriage or fix the model path")
    if verify:
        actual = sha256_of(path)
        if actual != entry["sha256"]:
            raise ModelError(
                f"model {name!r}: {path} has sha256 {actual[:12]}…, the manifest expects {entry['sha256'][:12]}…; "
                "the file is damaged or not the one shipped: restore it from the package"
            )
    return ModelFile(name, path, entry)


def bundled_clip() -> Path:
    return bundled_dir() / "media" / "one-by-one-person-detection.mp4"
