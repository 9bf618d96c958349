"""The installed edgetriage version, for start-up log lines and discovery messages."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    try:
        return metadata.version("edgetriage")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
