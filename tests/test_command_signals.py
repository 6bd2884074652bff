"""Signals (issue 25): every command stops at once on SIGTERM (143) and Ctrl-C (130), says so in one line
with no traceback, and leaves no process behind; a signal that lands in a finalizer is not lost; a signal
is never a finding (conform reports no divergence for it and writes no scenario)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest


from test_cli_input import run_cli

ROOT = Path(__file__).resolve().parent.parent
FINDINGS = str(ROOT / "tests" / "scenarios" / "findings.yaml")




class _SignalInFinalizer:
    """Sends `sig` to this process from its finalizer and stays there long enough for the handler to run
    inside it (where Python drops whatever the handler raises)."""

    def __init__(self, sig):
        self.sig = sig

    def __del__(self):
        os.kill(os.getpid(), self.sig)
        _busy(0.2)


def _busy(seconds: float) -> None:
    """Run Python code (where a signal's handler runs) for `seconds`."""
    until = time.monotonic() + seconds
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
        _busy(5)
        ran.append("to the end")
    monkeypatch.setattr(report, "run_files", run_files)
    got, out, err = run_cli(monkeypatch, capsys, "scenario", "run", FINDINGS)
    assert (got, ran) == (code, []) and "Traceback" not in err and "Exception ignored" not in err, err
    assert err.endswith(line)


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_that_comes_while_the_unraisable_hook_runs_waits_until_it_has_returned(monkeypatch, capsys, sig,
                                                                                        code):
    # what a handler raises inside sys.unraisablehook is dropped for good; under load the signal the hook
    # sends again can land there (two CI runs lost a Ctrl-C so).  It must raise only once the hook is done.
    from groupspec.checkers.scenarios import report
    stop = sys.modules["groupspec.checkers.cli.app"]._STOP
    ran = []

    def run_files(*a, **k):
        stop["in_hook"] = True          # as while the hook runs
        os.kill(os.getpid(), sig)
        _busy(0.3)
        ran.append("out of the hook")
        stop["in_hook"] = False
        _busy(5)
        ran.append("to the end")
    monkeypatch.setattr(report, "run_files", run_files)
    got, out, err = run_cli(monkeypatch, capsys, "scenario", "run", FINDINGS)
    assert (got, ran) == (code, ["out of the hook"]) and "Traceback" not in err, err


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


# -- prove: Z3 is interrupted, and no proof worker outlives the command --------------------------------

def _command(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "groupspec.checkers.cli", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, ..., start time at [19]); None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _descendants(root: int) -> dict[int, str]:
    """Every process below `root`, as pid -> start time (a pid taken again by another process is not it)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        fields = _stat(int(entry)) if entry.isdigit() else None
        if fields:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = {}, [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            fields = _stat(pid)
            if fields:
                found[pid] = fields[19]
                todo.append(pid)
    return found


def _running(procs: dict[int, str]) -> dict[int, str]:
    return {pid: start for pid, start in procs.items()
            if (fields := _stat(pid)) and fields[19] == start and fields[0] not in "ZX"}


def _left_after(seen: dict[int, str], seconds: float) -> list[str]:
    """The command lines of the processes in `seen` still running `seconds` from now (at once if none)."""
    until = time.monotonic() + seconds
    while _running(seen) and time.monotonic() < until:
        time.sleep(0.1)
    return [Path(f"/proc/{p}/cmdline").read_text()[:200] for p in _running(seen)]


@contextmanager
def _reaped(proc: subprocess.Popen) -> Iterator[dict[int, str]]:
    """The processes seen below `proc` (the test adds them): whatever the test found, none is left running
    after it."""
    seen: dict[int, str] = {}
    try:
        yield seen
    finally:
        for pid in _running(seen):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_no_proof_worker_outlives_a_sigkill_of_prove():
    # the proof workers are the forkserver's children, not the command's: they used to run on for 30-60 s
    # after a SIGKILL of the command, and the server with them
    proc = _command("prove", "--jobs", "2")
    with _reaped(proc) as seen:
        until = time.monotonic() + 90
        while len(seen) < 4 and time.monotonic() < until and proc.poll() is None:
            seen.update(_descendants(proc.pid))       # the resource tracker, the server, two workers
            time.sleep(0.1)
        assert len(seen) >= 4, seen
        proc.kill()
        proc.wait()             # not communicate(): it waits for every holder of the pipes, the workers too
        assert _left_after(seen, 5) == []


def test_a_sigterm_during_a_long_z3_query_stops_prove_bmc_at_once():
    # Z3 works in C, where Python's handler cannot run: one query of `--bmc 30` (tiny: depth 5 takes 4-8 s)
    # held a SIGTERM off for as long as it ran
    import threading
    proc = _command("prove", "--bmc", "30")
    guard = threading.Timer(120, proc.kill)
    guard.start()
    try:
        lines = []
        while not lines or lines[-1] and "depth 5 unrolled" not in lines[-1]:
            lines.append(proc.stderr.readline())
        assert lines[-1], lines
        time.sleep(1)           # well inside depth 5's query
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert err.endswith("groupspec: terminated (SIGTERM); the run was stopped\n") and took < 4, (took, err)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_sigterm_during_export_tla_run_tlc_leaves_no_jvm(tmp_path):
    # subprocess.run killed only its child (/usr/bin/time), and TLC's JVM below it ran on
    from groupspec.checkers.tla.tlc import find_jar, java
    if find_jar()[0] is None or java() is None:
        pytest.skip("no TLC jar or no java (.ci/setup fetches them)")
    proc = _command("export", "tla", str(tmp_path / "tla"), "--run-tlc", "--preset", "small", "--workers", "1")
    with _reaped(proc) as seen:
        until = time.monotonic() + 60
        while time.monotonic() < until and proc.poll() is None:
            seen.update(_descendants(proc.pid))
            if any(Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0].endswith(b"/java")
                   for p in _running(seen)):
                break       # the JVM itself, below /usr/bin/time
            time.sleep(0.1)
        assert proc.poll() is None and seen, "TLC did not start, or ended too soon to be stopped"
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 143 and "Traceback" not in err, err
        assert _left_after(seen, 5) == []
