"""A long call into native code (a SAT solver, the compiled search) that Ctrl-C and SIGTERM still stop.

Python runs a signal's handler only between bytecodes, so a handler waits for as long as a call into C lasts:
minutes for a SAT query, an hour for a big search.  The call runs in a thread of its own (ctypes and pysat
release the GIL) while this thread waits on an Event; whatever a handler raises here interrupts the call
(`interrupt`), waits until its thread is out of the native code, and goes on up.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, TypeVar

T = TypeVar("T")


def interruptible(work: Callable[[], T], interrupt: Callable[[], None], seconds: float | None = None) -> T:
    """What `work()` returns; `interrupt()` is called when `seconds` run out (work then returns as it does when
    interrupted) and when a handler raises while waiting (then the exception goes on, once work has returned)."""
    got: list = []
    failed: list = []
    done = threading.Event()        # not Thread.join: one a handler's exception broke off may return early

    def run() -> None:
        try:
            got.append(work())
        except BaseException as e:          # handed to the waiting thread, which raises it
            failed.append(e)
        finally:
            done.set()
    threading.Thread(target=run, daemon=True).start()
    until = None if seconds is None else time.perf_counter() + seconds
    try:
        while not done.wait(0.05):
            if until is not None and time.perf_counter() >= until:
                interrupt()
                until = None
    except BaseException:
        interrupt()
        while not done.wait(0.05):      # what the call holds is not to be touched until its thread is out
            pass
        raise
    if failed:
        raise failed[0]
    return got[0]
