"""The C heap of a device process (glibc's malloc), set up once before its cameras start: one heap for every
thread, and large blocks mapped on their own so that a freed one goes back to the system.

A device process reads frames of a few MB a few times a second on several threads. glibc's defaults suit it
badly in two ways, both measured with `bench/live.py` (four 720p cameras) and `bench/edge.py` (`rss_mb`):

- each thread that allocates gets a heap of its own (up to 8 a core) and keeps what was freed there: with a
  reader and a pipeline thread a camera, four 720p cameras took 25 MB each instead of 16 (M_ARENA_MAX = 1);
- a block over the mmap threshold is mapped on its own, but glibc raises the threshold to the size of the first
  such block freed, so every later frame comes from the heap, which keeps each page a frame ever used (and
  the holes between them). With the threshold fixed at 1 MiB a frame the pipeline is done with goes back to
  the system (M_MMAP_THRESHOLD; live frames are mapped by the reader itself, edge.vision.live, faulted in by
  one call rather than a page fault per 4 KB: docs/developers/benchmarks.md, History, issue 39 fourth session).

Where the C library is not glibc, nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_ARENA_MAX = -8
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1024 * 1024  # bytes: a block this big or bigger (a 720p BGR frame is 2.7 MB) is mapped


def share_one_heap() -> bool:
    """One malloc heap for the process, large blocks mapped on their own; call it before any camera thread
    starts. False where the C library is not glibc (nothing to do)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, 1)) and bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):
        return False


__all__ = ["MMAP_THRESHOLD", "share_one_heap"]
