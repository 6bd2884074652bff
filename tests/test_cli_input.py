"""Bad input to the command line and what it costs: each refused in one line with exit 2, before
the work starts; signals stop the worker processes; a JoinGroup's cost grows linearly with its
protocols."""
from __future__ import annotations

from groupspec.impl.coordinator import GroupCoordinator


# -- a JoinGroup with many protocols -----------------------------------------------------------

def _join_calls(protocols: int, members: int = 2) -> int:
    """How many times the table asks for a protocol list's names while `members` members join
    with `protocols` protocols each and the join completes with the vote."""
    calls = [0]

    class Counted(GroupCoordinator):
        def _proto_names(self, pl):
            calls[0] += 1
            return super()._proto_names(pl)
    c = Counted({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10}, lifecycle=False)
    names_list = [f"p{i}" for i in range(protocols)]
    got = []
    for k in range(members):
        order = names_list if k % 2 == 0 else names_list[::-1]
        c.send("JoinGroup", dict(group="g", member="", client=f"c{k}", session_timeout_ms=10_000,
                                 rebalance_timeout_ms=10_000, protocol_type="consumer", protocols=order,
                                 require_known_member_id=False), on_response=got.append)
    c.advance(1)
    assert [r["error"] for r in got] == ["NONE"] * members
    assert {r["protocol"] for r in got} <= {"p0", f"p{protocols - 1}"}
    return calls[0]


def test_join_with_many_protocols_is_linear_in_them():
    # the vote once took time cubic in the protocols: its candidates were recomputed inside
    # the count inside the quantifier over the candidates
    small, large = _join_calls(50), _join_calls(400)
    assert 0 < small and large <= 10 * small, (small, large)


# -- bad flags: one line on stderr, exit 2, before any work --------------------------------------

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groupspec.checkers import cli as CLI
from groupspec.checkers.search.explicit import worker_limit

ROOT = Path(__file__).resolve().parent.parent
FINDINGS = str(ROOT / "tests" / "scenarios" / "findings.yaml")


def run_cli(monkeypatch, capsys, *args):
    """`groupspec ARGS` in this process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["groupspec", *args])
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)      # main sets its own: put back after
    saved = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as e:
            CLI.main()
    finally:
        signal.signal(signal.SIGTERM, saved[0])
        signal.signal(signal.SIGINT, saved[1])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def refused(monkeypatch, capsys, *args) -> str:
    code, out, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2, (args, code, out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, (args, out, err)
    return err


BAD = [
    # check: world bounds and flags
    (["check", "--max-generation", "0"], "--max-generation must be at least 1, got 0"),
    (["check", "--max-generation", str(2**31)], "at most 2,147,483,647, because Kafka's generation id is an int32"),
    (["check", "--max-states", "0"], "--max-states must be at least 1, got 0"),
    (["check", "--max-states", "-3"], "--max-states must be at least 1, got -3"),
    (["check", "--workers", "0"], "--workers must be at least 1, got 0"),
    (["check", "--workers", "1000"], f"--workers 1,000: at most {worker_limit()} here"),
    (["check", "--clients", "0"], "--clients must be at least 1, got 0"),
    (["check", "--clients", "40"], "--clients 40: at most 8, because the states grow"),
    (["check", "--clients", str(10**23)], "at most 8"),
    (["check", "--member-ids", "100000"], "--member-ids 100,000: at most 64"),
    (["check", "--topics", "100", "--partitions", "100"], "at most 1,024 partitions in all"),
    (["check", "--preset", "static", "--clients", "3"], "needs exactly 2 clients"),
    (["check", "--preset", ""], "--preset '': unknown preset"),
    (["check", "--liveness", "--workers", "2"], "--workers 2 with --liveness"),
    (["check", "--rebalance-budget"], "--rebalance-budget holds only for timely clients"),
    (["check", "--memory", "0"], "--memory must be more than 0 GB"),
    (["check", "--memory", "inf"], "(a finite number), got inf"),
    (["check", "--memory", "nan"], "got nan"),
    (["check", "--visited", "disk", "--liveness"], "leave out --visited and --memory"),
    (["check", "--visited-dir", "x"], "add --visited disk"),
    (["check", "--visited", "cloud"], "use memory or disk"),
    # usage errors are one line too, --json or not
    (["check", "--clients", "x", "--json"], "groupspec check: Invalid value for '--clients'"),
    (["check", "--bogus"], "No such option: --bogus"),
    (["nonsense"], "No such command 'nonsense'"),
    # mutate
    (["mutate", "--preset", ""], "--preset '' names no world"),
    (["mutate", "--preset", " , "], "names no world"),
    (["mutate", "--preset", "tiny,tiny"], "--preset names tiny more than once"),
    (["mutate", "--preset", "deep"], "--preset deep: the deep world's search does not finish"),
    (["mutate", "--preset", "tiny", "--liveness-in", "small"], "--liveness-in names small, which --preset does not"),
    (["mutate", "--preset", "tiny", "--sample", "-1"], "--sample must be between 1 and the"),
    (["mutate", "--preset", "tiny", "--sample", "0"], "--sample must be between 1 and the"),
    (["mutate", "--preset", "tiny", "--sample", "1000000"], "got 1,000,000"),
    (["mutate", "--preset", "tiny", "--jobs", "1000"], f"--jobs 1,000: at most {worker_limit()} here"),
    (["mutate", "--preset", "tiny", "--jobs", "0", "--json"], "--jobs must be at least 1, got 0"),
    # scenario run
    (["scenario", "run", FINDINGS, "--target", ""], "--target '': unknown target"),
    (["scenario", "run", ""], "a scenario path is empty"),
    (["scenario", "run", FINDINGS, "--junit", FINDINGS], "is one of the scenario files to run"),
    # scenario generate
    (["scenario", "generate", "--out", "x", "--preset", "nope"], "--preset 'nope': no such world"),
    (["scenario", "generate", "--out", "x", "--max-states", "0"], "--max-states must be at least 1, got 0"),
    (["scenario", "generate", "--out", ""], "--out is empty; give a folder"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_flags_are_refused_in_one_line(monkeypatch, capsys, args, message):
    assert message in refused(monkeypatch, capsys, *args)


# -- output paths: checked before the work, a write failure at the end is one line -------------

def test_output_paths_checked_before_the_work(monkeypatch, capsys, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    (tmp_path / "ce" / "counterexample.md").mkdir(parents=True)
    cases = [
        (["scenario", "run", FINDINGS, "--junit", str(tmp_path)], "is a folder; give a file name"),
        (["scenario", "run", FINDINGS, "--junit", f"{a_file}/x.xml"], "is a file, so no folder can be made"),
        (["scenario", "run", FINDINGS, "--junit", ""], "--junit is empty; give a file name"),
        (["check", "--out", str(a_file)], "is not a folder"),
        (["check", "--out", str(a_file / "sub")], "is a file, so no folder can be made"),
        (["check", "--out", str(tmp_path / "ce")], "counterexample.md is a folder"),
        (["docs", "--out", str(a_file)], "is not a folder"),
        (["scenario", "generate", "--preset", "tiny", "--out", str(a_file)], "is not a folder"),
        (["docs", "--out", ""], "--out is empty; give a folder"),
    ]
    for args, message in cases:
        assert message in refused(monkeypatch, capsys, *args), args
    # a full device is refused before the work too
    real = os.statvfs
    monkeypatch.setattr(os, "statvfs", lambda p: os.statvfs_result((4096, 4096, 100, 0, 0, 10, 0, 0, 0, 255)))
    assert "is full (no space left)" in refused(monkeypatch, capsys, "check", "--preset", "tiny", "--out",
                                                 str(tmp_path / "new"))
    monkeypatch.setattr(os, "statvfs", real)
    if os.geteuid() != 0:       # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        assert "cannot write in" in refused(monkeypatch, capsys, "check", "--out", str(ro / "x"))


def test_a_failed_write_at_the_end_still_prints_the_result(monkeypatch, capsys, tmp_path):
    # /dev/full: every write fails with ENOSPC
    code, out, err = run_cli(monkeypatch, capsys, "scenario", "run", FINDINGS, "--target", "runtime", "--json",
                             "--junit", "/dev/full")
    assert code == 2 and json.loads(out)["passed"] > 0
    assert err.count("\n") == 1 and "writing failed (No space left on device)" in err
    # a device that fills up during a search: the counterexample is printed, writing it fails

    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(Path, "write_text", full)
    code, out, err = run_cli(monkeypatch, capsys, "check", "--preset", "static", "--no-waivers", "--workers", "1",
                             "--json", "--out", str(tmp_path / "ce"))
    assert code == 2 and json.loads(out)["result"] == "violation" and json.loads(out)["counterexample"]
    assert err.count("\n") == 1 and f"--out {tmp_path / 'ce'}: writing failed (No space left on device)" in err


def test_a_full_standard_output_is_one_line():
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "scenario", "run", FINDINGS],
                              stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "groupspec: No space left on device (writing the standard output)\n"


def _process(args: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, **kw)


def test_columns_0_still_prints_results_errors_and_help():
    # rich takes COLUMNS=0 as a width of 0 and printed nothing at all: not the results, not an error
    env = {**os.environ, "COLUMNS": "0"}
    done = _process(["scenario", "run", FINDINGS, "-q"], env=env)
    assert done.returncode == 0 and "passed, 0 failed, 0 errors" in done.stdout, done
    done = _process(["scenario", "run", "/nonexistent"], env=env)
    assert done.returncode == 2 and done.stderr == ("groupspec: /nonexistent: no such file or folder; give a "
                                                    "scenario file (.yaml, .yml, .json) or a folder of them\n"), done
    assert "Usage" in _process(["--help"], env=env).stdout


def test_a_closed_or_full_standard_error_or_output_is_no_traceback():
    # stdout closed (`>&-`): Python has no sys.stdout at all
    done = subprocess.run(f"{sys.executable} -m groupspec.checkers.cli scenario run {FINDINGS} >&-", shell=True,
                          capture_output=False, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "the standard output is closed" in done.stderr
    # stderr on a full device: the one line cannot be written, the exit code still says bad input
    with open("/dev/full", "w") as full:
        for args in (["scenario", "run", "/nonexistent"], ["nonsense"]):
            done = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", *args], stdout=subprocess.PIPE,
                                  stderr=full, text=True, cwd=ROOT)
            assert done.returncode == 2 and done.stdout == "", (args, done)


def test_no_command_prints_the_help_once():
    done = _process([])
    assert done.returncode == 2 and done.stdout.count("Usage: groupspec") == 1, done.stdout


def test_a_scenario_folder_entry_that_cannot_be_read_is_an_error_not_skipped(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("scenario: s\nsteps:\n  - advance_ms: 1\n")
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    (tmp_path / "dangling.yml").symlink_to(tmp_path / "gone.yaml")
    os.mkfifo(tmp_path / "pipe.json")
    done = _process(["scenario", "run", str(tmp_path), "--json"], timeout=60)
    assert done.returncode == 2, done
    results = {Path(s["file"]).name: s for s in json.loads(done.stdout)["scenarios"]}
    assert results["good.yaml"]["result"] == "pass"
    assert "Too many levels of symbolic links" in results["loop.yaml"]["message"]
    assert "No such file" in results["dangling.yml"]["message"]
    assert "not a regular file" in results["pipe.json"]["message"]


def test_a_second_sigterm_while_the_first_is_reported_is_no_traceback(monkeypatch, capsys):
    from groupspec.checkers.scenarios import report
    monkeypatch.setattr(report, "run_files", lambda *a, **k: os.kill(os.getpid(), signal.SIGTERM))
    real = CLI.err.print

    def print_and_get_another(*a, **k):      # a supervisor's SIGTERM after `timeout`'s
        os.kill(os.getpid(), signal.SIGTERM)
        real(*a, **k)
    monkeypatch.setattr(CLI.err, "print", print_and_get_another)
    code, out, err = run_cli(monkeypatch, capsys, "scenario", "run", FINDINGS)
    assert code == 143 and err == "groupspec: terminated (SIGTERM); the run was stopped\n", err


def test_docs_without_graphviz_says_how_to_get_it(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    err = refused(monkeypatch, capsys, "docs", "--out", str(tmp_path / "docs"))
    assert "`dot` is not on PATH" in err and "apt-get install graphviz" in err
    assert not (tmp_path / "docs").exists()


# -- signals: the workers stop with their parent -------------------------------------------------

def _children(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def _running(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("verb", [["check", "--preset", "ci", "--workers", "2"],
                                  ["mutate", "--preset", "tiny", "--jobs", "2"]], ids=["check", "mutate"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_workers_stop_with_their_parent(verb, sig):
    proc = subprocess.Popen([sys.executable, "-m", "groupspec.checkers.cli", *verb], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    kids: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        kids = _children(proc.pid)
        assert len(kids) >= 2, "the workers did not start"
        time.sleep(0.5)                           # the workers are busy
        proc.send_signal(sig)
        code = proc.wait(timeout=15)
        stderr = proc.stderr.read()
        if sig == signal.SIGTERM:
            assert code == 143 and "Traceback" not in stderr, stderr
            assert stderr.strip().splitlines()[-1] == "groupspec: terminated (SIGTERM); the run was stopped"
        deadline = time.monotonic() + 5
        while any(_running(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [k for k in kids if _running(k)], "worker processes outlived their parent"
    finally:
        if proc.poll() is None:
            proc.kill()
        for k in kids:
            if _running(k):
                os.kill(k, signal.SIGKILL)
