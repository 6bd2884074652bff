"""SIGTERM and Ctrl-C during a conformance run: the run stops at once, and a signal is never a finding.

Hypothesis runs the examples, and an exception raised inside one is, to it, the example failing: it
shrinks it, replays it, and when the replay does not fail alike reports the test as flaky.  A signal's
exception raised wherever the signal lands therefore became "the implementation is not deterministic"
(exit 1, with a scenario to keep); landing inside Hypothesis's own bookkeeping it broke its state (an
IndexError); landing in a finalizer it was dropped.  So, while `deferred()` is in force, the handlers
only note the signal, and `Interrupted` is raised where that is safe: at the start of each step of the
machine (`checkpoint`), and at once while the implementation is being called (`calling`: a call that
blocks, on a broker's socket say, would otherwise hold the stop off).  Interrupted is a
KeyboardInterrupt, which Hypothesis takes for the user stopping the run: it records nothing of the
example cut short and lets it through.  When the run is over, the signal is sent again to the handler
that was there before (the command line's: exit 143 or 130), outside Hypothesis.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(KeyboardInterrupt):
    """A signal came during the run (`signum`)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _State:
    active = False          # a run is under way in this process's main thread
    pending: int | None = None   # the first signal noted, not yet raised
    eager = 0               # how deep in calls to the implementation


_STATE = _State()


def _note(signum, frame) -> None:
    if _STATE.pending is None:      # the first one decides the exit code (a signal re-sent after a finalizer
        _STATE.pending = signum     # dropped its exception comes as SIGINT)
    if _STATE.eager:
        raise Interrupted(_STATE.pending)


def checkpoint() -> None:
    """Raise Interrupted if a signal came: a step boundary, where stopping leaves nothing half done."""
    if _STATE.active and _STATE.pending is not None:
        raise Interrupted(_STATE.pending)


@contextmanager
def calling() -> Iterator[None]:
    """Around a call into the implementation: a signal now raises Interrupted at once."""
    checkpoint()
    _STATE.eager += 1
    try:
        yield
    finally:
        _STATE.eager -= 1


@contextmanager
def deferred() -> Iterator[None]:
    """A run with signals noted and raised at safe points (the module's text); afterwards the signal, if
    one came, goes to the handler that was there before.  Outside the main thread (where no handler can be
    set) signals are left as they are."""
    if threading.current_thread() is not threading.main_thread() or _STATE.active:
        yield
        return
    before = {s: signal.signal(s, _note) for s in SIGNALS}
    _STATE.active, _STATE.pending, _STATE.eager = True, None, 0
    try:
        yield
    finally:
        pending = _STATE.pending
        _STATE.active, _STATE.pending = False, None
        for s, handler in before.items():
            signal.signal(s, handler)
        if pending is not None:
            signal.raise_signal(pending)
