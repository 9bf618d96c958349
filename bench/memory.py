"""Memory figures that mean the same on every machine: a device process measured as after a boot.

A process's resident set counts the pages of the shared libraries it maps (cv2, onnxruntime, numpy: tens of MB).
How many of those pages a fault brings in depends on the page cache, not on the program: a wheel pip has just
written sits in the cache in large folios, and mapping it makes whole folios resident. Measured on one machine,
one wheel set, the same device process: 171 MB with the libraries read from disk, 233 MB right after
`pip install` (cv2's library alone 5 MB against 21 MB). A device reads its libraries from disk after a boot, so
the benches first ask the kernel to forget the cached pages of the interpreter's installed libraries
(posix_fadvise DONTNEED: a hint that drops only clean pages no process maps, never data) and report the resident
set in its parts: anonymous (what the program allocates) and file-backed (the code it touched).

Benchmarks import it as a sibling module (`from memory import ...`). Bench scaffolding only.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path


def as_after_boot() -> int:
    """Drop the page cache's clean, unmapped pages of every shared library under this interpreter's
    site-packages (the libraries a device process maps). Returns how many files were advised."""
    roots = {Path(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")}
    advised = 0
    for root in roots:
        for path in root.rglob("*.so*"):
            if not path.is_file():
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                advised += 1
            finally:
                os.close(fd)
    return advised


# Run inside the measured process: its resident set, whole and in parts (MiB).
STATUS_SNIPPET = r"""
def _rss_parts():
    keys = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")
    s = {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(keys)}
    return {"rss_mb": s["VmRSS"] / 1024, "hwm_mb": s["VmHWM"] / 1024,
            "anon_mb": (s["RssAnon"] + s.get("RssShmem", 0)) / 1024, "file_mb": s["RssFile"] / 1024}
"""
