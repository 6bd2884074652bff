"""Bad input to the command line and what it costs: each refused in one line with exit 2, before
the work starts; signals stop the worker processes; a JoinGroup's cost grows linearly with its
protocols."""
from __future__ import annotations

from groupspec.impl.coordinator import GroupCoordinator


# -- a JoinGroup with many protocols -----------------------------------------------------------

def _join_calls(protocols: int, members: int = 2) -> int:
    """How many times the table asks for a protocol list's names while `members` members join
    with `protocols` protocols each and the join completes with the vote."""
    c = GroupCoordinator({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10},
                         lifecycle=False)
    calls = [0]
    names = c._proto_names

    def counted(pl):
        calls[0] += 1
        return names(pl)
    c._proto_names = counted
    c.cfg_params["proto_names"] = counted
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
    assert large <= 10 * small, (small, large)


import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent


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
