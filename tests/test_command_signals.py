"""Signals (issue 25): every command stops at once on SIGTERM (143) and Ctrl-C (130), says so in one line
with no traceback, and leaves no process behind; a signal that lands in a finalizer is not lost; a signal
is never a finding (conform reports no divergence for it and writes no scenario)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groupspec.checkers import cli as CLI

ROOT = Path(__file__).resolve().parent.parent
FINDINGS = str(ROOT / "tests" / "scenarios" / "findings.yaml")


def run_cli(monkeypatch, capsys, *args):
    monkeypatch.setattr(sys, "argv", ["groupspec", *args])
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    saved = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as e:
            CLI.main()
    finally:
        signal.signal(signal.SIGTERM, saved[0])
        signal.signal(signal.SIGINT, saved[1])
    out, err = capsys.readouterr()
    return e.value.code, out, err


class _SignalInFinalizer:
    """Sends `sig` to this process from its finalizer and stays there long enough for the handler to run
    inside it (where Python drops whatever the handler raises)."""

    def __init__(self, sig):
        self.sig = sig

    def __del__(self):
        os.kill(os.getpid(), self.sig)
        until = time.monotonic() + 0.2
        while time.monotonic() < until:
            pass


@pytest.mark.parametrize("sig,code,line", [(signal.SIGTERM, 143, "groupspec: terminated (SIGTERM); the run was "
                                                                   "stopped\n"),
                                           (signal.SIGINT, 130, "")])
def test_a_signal_that_lands_in_a_finalizer_still_stops_the_run(monkeypatch, capsys, sig, code, line):
    from groupspec.checkers.scenarios import report
    ran = []

    def run_files(*a, **k):
        _SignalInFinalizer(sig)          # dropped at once: its finalizer runs here
        until = time.monotonic() + 5
        while time.monotonic() < until:
            pass
        ran.append("to the end")
    monkeypatch.setattr(report, "run_files", run_files)
    got, out, err = run_cli(monkeypatch, capsys, "scenario", "run", FINDINGS)
    assert (got, ran) == (code, []) and "Traceback" not in err and "Exception ignored" not in err, err
    assert err.endswith(line)
