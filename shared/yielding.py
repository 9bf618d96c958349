"""Background threads that yield to the event loop: work that can wait (a model's generation on the CPU, a
question) runs on a thread that hands Python's interpreter lock over every 0.5 ms instead of every 5 ms (the
loop takes the lock back dozens of times an event, and each wait can last one interval) and runs at a lower CPU
priority than the loop's, where the system lets a thread have one (Linux; threads it starts, such as a math
library's pool, inherit it)."""

from __future__ import annotations

import os
import sys
import threading

SWITCH_INTERVAL_S = 0.0005  # how often a busy thread hands the interpreter lock to the others
NICENESS = 10  # a yielding thread's CPU priority below the event path's


def yielding_thread(niceness: int = NICENESS) -> None:
    """For a ThreadPoolExecutor's `initializer`: the calling thread yields (see the module's doc)."""
    if sys.getswitchinterval() > SWITCH_INTERVAL_S:
        sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:  # below the thread that started it (a service run under `nice` keeps its threads' order), at most 19
        me = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, me, min(19, os.getpriority(os.PRIO_PROCESS, me) + niceness))
    except (AttributeError, OSError):  # not Linux, or not allowed: the shorter interval alone
        pass
