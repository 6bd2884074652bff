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


# -- conform: a signal is never a divergence ------------------------------------------------------------

def test_a_sigterm_anywhere_in_a_conform_run_stops_it_with_no_finding(monkeypatch, capsys, tmp_path):
    # the signal from outside lands wherever the run is: in the implementation, in the spec, in Hypothesis's
    # generating, shrinking or replaying; once about half of such trials ended as "the implementation is not
    # deterministic" (exit 1, a scenario to keep), in a traceback, or not at all
    import threading
    sys.path.insert(0, str(Path(__file__).parent))
    for after in (1.2, 2.0, 2.8, 3.6, 4.4, 5.2):
        scenario = tmp_path / "found.yaml"
        timer = threading.Timer(after, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        try:
            got, out, err = run_cli(monkeypatch, capsys, "conform", "--no-corpus", "--adapter",
                                    "broken_coordinators:wrong_error_code", "--seed", "1", "--out", str(scenario))
        finally:
            timer.cancel()
        assert got == 143 and out == "" and not scenario.exists(), (after, got, out, err)
        assert err.endswith("groupspec: terminated (SIGTERM); the run was stopped\n") and "Traceback" not in err


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_inside_the_implementation_stops_conform_at_once(monkeypatch, capsys, tmp_path, sig, code):
    # the signal lands in a call to the implementation while a divergence is being shrunk: raised there at
    # once (a call may block), it still ends the run with the signal's exit code and no finding
    sys.path.insert(0, str(Path(__file__).parent))
    import hostile_adapters as H
    monkeypatch.setattr(H.lies_then_is_stopped, "SIGNAL", sig)
    monkeypatch.setattr(H.lies_then_is_stopped, "sent", 0)
    scenario = tmp_path / "found.yaml"
    got, out, err = run_cli(monkeypatch, capsys, "conform", "--no-corpus", "--adapter", "hostile_adapters:lies_then_is_stopped",
                            "--seed", "1", "--out", str(scenario))
    assert H.lies_then_is_stopped.sent >= H.lies_then_is_stopped.AT
    assert got == code and out == "" and not scenario.exists(), (got, out, err)
    assert "Traceback" not in err and "not deterministic" not in err
