"""`groupspec simulate` (checkers/traces/simulate.py): consumers driven by the closed world's client rows,
their traces checked by the trace checker, injected bugs found exactly where they fired."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from groupspec.checkers.world import clients
from groupspec.checkers.traces import simulate as S
from groupspec.checkers.traces.bugs import BUGS
from groupspec.checkers.traces.codec import read_bugs
from groupspec.checkers.traces.check import check_group
from groupspec.impl.trace import ListSink
from groupspec.spec.world import CLIENT_ROWS

CLI = [sys.executable, "-m", "groupspec.checkers.cli"]


def _groups(records) -> dict:
    out = defaultdict(list)
    for r in records:
        out[r["group"]].append(r)
    return out


@pytest.fixture(scope="module")
def corpus():
    """60 groups, most of them on a coordinator with one of the bugs (every bug in turn): a bug fires
    only where the group meets its situation (a SyncGroup in PreparingRebalance, a leader's SyncGroup
    while writes are slow), in a few groups of ten."""
    sink = ListSink()
    info = S.simulate(60, sink, seed=8, events_per_group=150, bugs=S.choose_bugs("all"), fraction=0.8)
    return sink, info


def test_every_healthy_group_validates_and_every_bug_is_flagged_exactly_where_it_fired(corpus):
    sink, info = corpus
    fired = {b["group"]: b["bug"] for b in info if b["fired"]}
    verdicts = {g: check_group(g, recs) for g, recs in _groups(sink).items()}
    assert len(verdicts) == 60
    healthy = [g for g in verdicts if g not in fired]
    assert healthy and all(verdicts[g]["verdict"] == "ok" for g in healthy), \
        [(g, verdicts[g]["rule"], verdicts[g]["detail"]) for g in healthy if verdicts[g]["verdict"] != "ok"]
    assert all(verdicts[g]["verdict"] == "violation" for g in fired)
    # each bug fires somewhere (a bug that never fired would make "exactly" say nothing about it)
    assert set(fired.values()) == set(BUGS)


def test_the_same_seed_writes_the_same_traces_and_another_seed_others():
    def run(seed):
        sink = ListSink()
        info = S.simulate(5, sink, seed=seed, events_per_group=60, bugs=S.choose_bugs("all"), fraction=0.5)
        return [json.dumps(r, sort_keys=True) for r in sink], info
    assert run(3) == run(3)
    assert run(3)[0] != run(4)[0]


def test_the_cli_writes_the_corpus_and_the_bugs_file_and_traces_check_flags_exactly_the_fired(tmp_path):
    out = tmp_path / "c.jsonl.gz"
    r = subprocess.run([*CLI, "simulate", "--groups", "20", "--events-per-group", "100", "--seed", "7",
                        "--inject-bug", "all", "--fraction", "0.5", "--out", str(out), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # gzip'ed, as its name says: Spark reads a file by its name (it was written plain, beside it, then renamed)
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    res = json.loads(r.stdout)
    bugs = read_bugs(tmp_path / "c.jsonl.gz.bugs.jsonl")
    assert res["buggy_groups"] == len(bugs) and res["bug_fired"] == sum(b["fired"] for b in bugs) > 0
    r = subprocess.run([*CLI, "traces", "check", str(out), "--in-process", "--out", str(tmp_path / "v"), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr          # some group is not ok: the bugs that fired
    import pyarrow.parquet as pq
    rows = pq.read_table(tmp_path / "v" / "verdicts.parquet").to_pylist()
    assert len(rows) == 20
    assert {v["group"] for v in rows if v["verdict"] != "ok"} == {b["group"] for b in bugs if b["fired"]}


def test_the_consumers_are_the_client_rows(monkeypatch):
    """What a consumer does comes from spec/world.py's rows: take the heartbeat row away and no
    consumer heartbeats (the simulator has no heartbeat of its own to fall back on)."""
    def heartbeats(rows) -> int:
        monkeypatch.setattr(S, "CLIENTS", clients.ClientRows(rows))
        sink = ListSink()
        S.simulate(4, sink, seed=5, events_per_group=60)
        return sum(1 for r in sink if r.get("api") == "Heartbeat")
    assert heartbeats(CLIENT_ROWS) > 0
    assert heartbeats([r for r in CLIENT_ROWS if r.trigger != "ClientHeartbeat"]) == 0


def test_the_simulated_consumers_take_the_worlds_moves_and_only_those():
    fired: Counter = Counter()
    leaves = []
    for i in range(30):
        sink = ListSink()
        sim = S.GroupSim(f"g{i}", i, sink, None)
        sim.run(requests=150)
        fired += sim.rows_fired
        leaves += [r for r in sink if r.get("api") == "LeaveGroup"]
    names = {r.name for r in CLIENT_ROWS}
    assert set(fired) <= names
    # joins, both syncs, rejoins, heartbeats, commits, leaves (also during a rebalance), crashes, restarts
    assert {"client starts and joins", "join: member id required, rejoin with it",
            "join: joined, the leader assigns and syncs", "join: joined as a follower, sync",
            "sync: assignment received", "heartbeat or commit: rebalance in progress, rejoin", "heartbeat",
            "commit offsets", "leave the group", "leave the group during a rebalance", "crash",
            "restart after a crash"} <= set(fired)
    # a static member never sends LeaveGroup (spec/world.py LEAVE_TRIGGERS)
    assert leaves and all(m["instance"] is None for r in leaves for m in r["request"]["members"])


def test_a_response_no_client_row_reads_is_an_error_not_a_silent_stall(monkeypatch):
    monkeypatch.setattr(S, "CLIENTS", clients.ClientRows([r for r in CLIENT_ROWS
                                                          if r.name != "sync: assignment received"]))
    with pytest.raises(AssertionError, match="no client row reads SyncGroup"):
        S.simulate(1, ListSink(), seed=1, events_per_group=40)


def test_a_simulator_that_waits_on_nothing_due_stops_with_an_error(monkeypatch):
    """A clock that never moves by 0 leaves a timer armed to fire now unfired (group 66 of seed 1 arms
    one): the group then waits on nothing, which is an error, not a hang."""
    def run():
        S.GroupSim("group-1-0000066", hash((1, 66)) & 0xFFFFFFFF, ListSink(), None).run(requests=200)
    run()
    monkeypatch.setattr(S.GroupSim, "_advance", lambda self, ms: self.coord.advance(ms) if ms else None)
    with pytest.raises(AssertionError, match="waits at .* on nothing that is due"):
        run()
