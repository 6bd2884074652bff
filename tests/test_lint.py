"""The table lint proves the table well-formed, and catches what it is meant to catch."""
from __future__ import annotations

import copy
import dataclasses
import re

from groupspec.checkers.proofs import lint as L
from groupspec.spec import table as T
from groupspec.spec.lang import TRUE
from groupspec.spec.rows import Set_


def test_the_table_is_exclusive_covering_reachable_and_legal():
    res = L.lint()
    assert res.problems == [], [p.as_json() for p in res.problems]
    assert res.checks > 500


def test_lint_finds_overlapping_rows():
    rows = list(T.ROWS)
    victim = T.ROW_BY_NAME["Heartbeat: during Stable"]
    loose = copy.copy(victim)
    loose.name = "Heartbeat: planted overlap"
    loose.guard = TRUE()
    rows.append(loose)
    res = L.lint(table=rows, triggers={"Heartbeat"})      # every check is of one trigger's rows, or one row
    # the table linted, not the spec's: its Heartbeat rows, the planted one among them
    assert res.as_json()["rows"] == len([r for r in T.ROWS if r.trigger == "Heartbeat"]) + 1
    assert res.as_json()["triggers"] == ["Heartbeat"]
    problems = res.problems
    assert any(p.check == "exclusive" and "Heartbeat: planted overlap" in p.rows for p in problems)


def test_lint_finds_a_gap_and_a_dead_row():
    rows = [r for r in T.ROWS if r.name != "Heartbeat: during Stable"]
    dead = copy.copy(T.ROW_BY_NAME["SyncGroup: during PreparingRebalance"])
    dead.name = "SyncGroup: planted dead row"
    dead.states = ("Empty",)   # Empty groups have no members: rejected earlier in the chain
    rows.append(dead)
    problems = L.lint(table=rows, triggers={"Heartbeat", "SyncGroup"}).problems
    assert any(p.check == "covering" and p.trigger == "Heartbeat" for p in problems)
    assert any(p.check == "reachable" and "SyncGroup: planted dead row" in p.rows for p in problems)


def test_lint_finds_an_illegal_move():
    rows = list(T.ROWS)
    bad = copy.copy(T.ROW_BY_NAME["Heartbeat: during Stable"])
    bad.name = "Heartbeat: planted illegal move"
    bad.target = "Empty"     # Stable -> Empty is not one of Kafka's moves
    rows.append(bad)
    assert any(p.check == "moves" and "Heartbeat: planted illegal move" in p.rows for p in L.check_moves(rows))


def test_client_rows_are_linted_too():
    from groupspec.spec import world
    assert L.lint_clients(dict(L.default_sizes()), 20_000)[1] == []
    rows = list(world.CLIENT_ROWS)
    dup = copy.copy(next(r for r in rows if r.name == "heartbeat"))
    dup.name = "planted: commit whenever a heartbeat could be sent"
    rows.append(dup)
    problems = L.lint_clients(dict(L.default_sizes()), 20_000, rows)[1]
    assert any(p.check == "exclusive" and dup.name in p.rows for p in problems)


def test_lint_finds_a_timer_left_armed_where_no_row_expects_one():
    """Issue 9: the session-timer reschedule cancelled the old timer only when the member was
    still in `hb_armed`, read after `hb_armed` had dropped it: the timer stayed armed, and once
    the member was gone it fired where no row of HeartbeatExpiry applies.  Planted back in one
    row, lint's timer check names the row."""
    rows = list(T.ROWS)
    victim = T.ROW_BY_NAME["Heartbeat: during PreparingRebalance"]
    cancel, update, arm, *rest = victim.steps
    assert (cancel.kind, arm.kind, list(update.updates)) == ("cancel", "arm", ["hb_armed"])
    late = copy.copy(victim)
    late.steps = [update, arm, cancel, *rest]     # the cancel now reads the updated hb_armed
    rows[rows.index(victim)] = late
    problems = L.check_timers(dict(L.default_sizes()), 20_000, table=[r for r in rows if r.trigger == victim.trigger])[1]
    assert [(p.check, p.rows) for p in problems] == [("timers", [victim.name])]
    assert "heartbeat of m" in problems[0].detail


def test_lint_finds_a_row_that_breaks_a_structural_invariant():
    """GM.remove without `staticMembers.remove`: a static member that leaves stays mapped from its
    group.instance.id.  Every other check assumes the structural invariants and so passes; only
    the proof that each row keeps them names the row, the invariant and a witness."""
    rows = list(T.ROWS)
    victim = T.ROW_BY_NAME["LeaveMember: member leaves during Stable"]
    assert any(isinstance(st, Set_) and "static" in st.updates for st in victim.steps)
    keeps_mapping = copy.copy(victim)
    keeps_mapping.steps = [dataclasses.replace(st, updates={k: v for k, v in st.updates.items() if k != "static"})
                           if isinstance(st, Set_) else st for st in victim.steps]
    rows[rows.index(victim)] = keeps_mapping
    problems = L.lint(table=rows, triggers={victim.trigger}).problems
    assert [(p.check, p.rows) for p in problems] == [("preserves", [victim.name])]
    assert "static-ids-unique" in problems[0].detail
    assert problems[0].witness["state"] == "Stable" and problems[0].witness["after.state"] == "PreparingRebalance"


def test_lint_of_some_triggers_from_the_command_line(tmp_path):
    """`--trigger` lints those triggers' rows (what a table's author asks while editing one trigger); a
    trigger no row has is one line and exit 2, naming the ones there are."""
    import json
    import subprocess
    import sys
    cli = [sys.executable, "-m", "groupspec.checkers.cli"]
    ok = subprocess.run([*cli, "lint", "--trigger", "LeaveGroup", "--json"], capture_output=True, text=True)
    doc = json.loads(ok.stdout)
    assert ok.returncode == 0 and doc["result"] == "ok" and doc["triggers"] == ["LeaveGroup"], ok.stderr
    assert doc["rows"] == len([r for r in T.ROWS if r.trigger == "LeaveGroup"])
    text = subprocess.run([*cli, "lint", "-t", "LeaveGroup"], capture_output=True, text=True)
    assert text.returncode == 0 and re.fullmatch(r"lint: ok \(\d+ Z3 checks over \d+ rows of LeaveGroup, [\d.]+s\)\n",
                                                 text.stdout), text.stdout
    bad = subprocess.run([*cli, "lint", "--trigger", "Hartbeat"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "--trigger 'Hartbeat': no row of the table has that trigger; use one of " in bad.stderr
    assert "Heartbeat" in bad.stderr
