"""The explicit-state checker: exhaustive, shortest counterexamples, symmetry, and it catches planted bugs."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from groupspec.checkers.counterexample import mermaid, step_table, to_itf
from groupspec.checkers.explicit import PRESETS, check
from groupspec.checkers.world_model import WorldModel
from groupspec.spec import engine as E
from groupspec.spec import table as T

TINY = dataclasses.replace(PRESETS["small"], crash=False, expiry=False)


def test_the_protocol_holds_in_a_tiny_world():
    r = check(TINY)
    assert r.result == "ok" and r.complete
    assert r.distinct_states > 300          # a floor: the world is not trivially small
    assert r.coverage["sync: assignment received"] > 0
    assert r.coverage["JoinTimer: join completes, next generation"] > 0


def test_symmetry_reduction_keeps_verdict_and_shrinks_the_space():
    with_sym, without = check(TINY, symmetry=True), check(TINY, symmetry=False)
    assert with_sym.result == without.result == "ok"
    assert with_sym.distinct_states < without.distinct_states <= 2 * with_sym.distinct_states
    # the orbits of the canonical states are exactly the states of the unreduced search
    assert with_sym.unreduced_states == without.distinct_states


def test_canonical_form_is_one_representative_per_orbit():
    """Every renaming of clients of a reachable state has the same canonical form, and the
    orbit size the search adds up is the number of distinct renamings."""
    from itertools import permutations
    from groupspec.checkers.explicit import Symmetry, orbit_size, permute
    cfg = dataclasses.replace(PRESETS["small"], clients=3, member_ids=3)
    m, sym = WorldModel(cfg), Symmetry(cfg)
    frontier, seen, parked = [m.initial()], set(), 0
    while frontier and len(seen) < 3000:
        s = frontier.pop()
        if s in seen:
            continue
        seen.add(s)
        c = sym.canon(s)
        parked += s[0] != c[0]                 # renaming touched the parked-request references
        for order in permutations(range(3)):
            assert sym.canon(permute(s, order)) == c
        assert sym.orbit(c) == orbit_size(c, 3)
        frontier += [t for _, t in m.successors(s)]
    assert parked > 0


def _mutated(monkeypatch, name: str, **changes):
    """Run the checker with one row of the table changed (a planted bug)."""
    rows = list(T.ROWS)
    i = next(k for k, r in enumerate(rows) if r.name == name)
    rows[i] = dataclasses.replace(rows[i], **changes)
    return check(TINY, rows=rows)


def test_a_dropped_generation_bump_is_caught_with_a_shortest_path(monkeypatch):
    row = T.ROW_BY_NAME["JoinTimer: join completes, next generation"]
    steps = []
    for st in row.steps:
        if hasattr(st, "updates") and "generation" in st.updates:
            st = dataclasses.replace(st, updates={k: v for k, v in st.updates.items() if k != "generation"})
        steps.append(st)
    r = _mutated(monkeypatch, row.name, steps=steps)
    assert r.result == "violation"
    assert r.violation in ("no-shared-partition", "one-leader-per-generation")
    # breadth-first: no shorter path to a violation exists in the search (depth of the last state)
    assert len(r.path) - 1 == r.depth


def test_an_assignment_handed_out_outside_stable_is_caught(monkeypatch):
    r = _mutated(monkeypatch, "StoreGroupDone: assignment stored", target=None)
    assert r.result == "violation" and r.violation == "assignment-only-when-stable"


def test_counterexamples_render_as_itf_table_and_mermaid(monkeypatch):
    r = _mutated(monkeypatch, "StoreGroupDone: assignment stored", target=None)
    model = WorldModel(TINY)
    itf = to_itf(r.path, model, r.violation)
    assert itf["vars"] and len(itf["states"]) == len(r.path)
    assert itf["states"][0]["#meta"]["action"] == "init"
    json.dumps(itf)
    table = step_table(r.path, model)
    assert len(table) == len(r.path) and table[0]["action"] == "initial state"
    assert table[-1]["rows"] and any("state" in t["changes"] for t in table)
    diagram = mermaid(r.path, model, r.violation)
    assert diagram.startswith("sequenceDiagram") and "coordinator" in diagram


def test_check_cli_json_and_bad_input():
    cli = [sys.executable, "-m", "groupspec.checkers.cli", "check"]
    ok = subprocess.run(cli + ["--preset", "small", "--no-crash", "--no-expiry", "--json"], capture_output=True,
                        text=True)
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    for key in ("result", "distinct_states", "states_per_second", "depth", "invariants", "coverage"):
        assert key in doc
    assert doc["result"] == "ok"
    bad = subprocess.run(cli + ["--preset", "huge"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown preset" in bad.stderr and "Traceback" not in bad.stderr


def test_bounded_liveness_holds_in_a_tiny_world():
    assert check(TINY, liveness=True).result == "ok"


def test_a_join_that_never_completes_is_reported_as_a_lasso(monkeypatch):
    from groupspec.spec.lang import FALSE
    rows = []
    for r in T.ROWS:
        if r.name.startswith("CompleteJoin:"):
            r = dataclasses.replace(r, own=FALSE())                    # completion never re-checked
        elif r.name == "JoinTimer: join completes, next generation":
            r = dataclasses.replace(r, steps=[], target=None)          # and the timeout does nothing
        rows.append(r)
    r = check(TINY, liveness=True, rows=rows)
    assert r.result == "lasso"
    assert 0 <= r.loop_start < len(r.path) - 1
    assert r.depth == len(r.path) - 1          # the lasso's length (stem and one lap), not the search's depth
    stuck = {E.get(s, "state") for _, s in r.path[r.loop_start:]}
    assert stuck == {E.STATES.index("PreparingRebalance")}


def test_the_parallel_search_agrees_with_the_sequential_one():
    from groupspec.checkers.explicit import check_parallel
    seq, par = check(TINY), check_parallel(TINY, workers=2)
    assert (par.result, par.distinct_states, par.generated, par.depth) == \
        (seq.result, seq.distinct_states, seq.generated, seq.depth)
    assert set(par.coverage) == set(seq.coverage)


def test_the_static_zombie_window_is_found_without_the_waiver():
    cfg = dataclasses.replace(PRESETS["static"], waive=())
    r = check(cfg)
    assert r.result == "violation" and r.violation == "no-shared-partition"
    assert len(r.path) - 1 == r.depth <= 12
    actions = [st.action for st, _ in r.path[1:]]
    assert sum("deliver" in a and "join" in a for a in actions) >= 2   # two processes join, one instance id


def test_a_group_that_can_never_form_is_reported(monkeypatch):
    # every JoinGroup is refused: clients retry forever and never get an assignment
    r = _mutated_live("JoinGroup: invalid group id", own=T.ROW_BY_NAME["JoinGroup: invalid group id"].own.args[0])
    assert r.result == "no-progress", r.result
    assert len(r.path) >= 1
    assert r.depth == len(r.path) - 1 == 0     # the initial state is already stuck; the search went deeper


def test_a_hung_client_is_not_a_group_that_cannot_progress():
    """A consumer whose poll loop hangs gets no assignment whatever the coordinator does: like a
    crashed one it has stopped, so a group whose other consumers have stopped too is at an end,
    not stuck (here one process crashes and the other, with the same group.instance.id, hangs)."""
    cfg = dataclasses.replace(PRESETS["tiny"], instances=(0, 0), waive=PRESETS["static"].waive, crash=True,
                              hung_poll=True)
    r = check(cfg, liveness=True)
    assert r.result == "ok" and r.complete
    assert any(name.startswith("hung") for name in r.coverage)


def _mutated_live(name: str, **changes):
    rows = [dataclasses.replace(r, **changes) if r.name == name else r for r in T.ROWS]
    return check(TINY, liveness=True, rows=rows)


def test_surviving_mutants_are_explained_only_by_what_the_world_lacks():
    from groupspec.checkers.mutate import explain
    tiny, static = PRESETS["tiny"], PRESETS["static"]
    dur = {"operator": "drop-effect", "row": "JoinGroup: x", "detail": "drop the update of `session_ms` (step 0)"}
    assert "abstract" in explain(dur, tiny)
    inst = {"operator": "drop-effect", "row": "JoinGroup: x", "detail": "drop the update of `static` (step 0)"}
    assert explain(inst, tiny) and not explain(inst, static)       # static worlds do use it
    real = {"operator": "drop-effect", "row": "SyncGroup: x", "detail": "drop the update of `pending_sync` (step 0)"}
    assert explain(real, tiny) == ""


def test_reordering_finds_a_stale_sync_that_in_order_delivery_cannot():
    """Drop SyncGroup's generation check: with in-order delivery the world stays correct, but a
    request overtaken by its client's rejoin (a late JoinGroup, then that client's SyncGroup of
    the old generation) gets an empty assignment stored for the new generation."""
    from groupspec.spec.lang import FALSE
    rows = [dataclasses.replace(r, own=FALSE()) if r.name == "SyncGroup: wrong generation" else r for r in T.ROWS]
    world = dataclasses.replace(PRESETS["tiny"], max_generation=2, member_ids=3)
    assert check(world, rows=rows).result == "ok"
    r = check(dataclasses.replace(world, reordering=True), rows=rows)
    assert r.result == "violation" and r.violation == "stable-assignment-covers"
    assert len(r.path) - 1 == r.depth
    actions = [st.action for st, _ in r.path[1:]]
    assert any("late" in a for a in actions) and any("timed out in the network" in a for a in actions)


@pytest.mark.slow
def test_the_table_holds_under_reordering():
    world = dataclasses.replace(PRESETS["tiny"], max_generation=2, member_ids=3, reordering=True)
    assert check(world).result == "ok"


def _with(name: str, **changes):
    return [dataclasses.replace(r, **changes) if r.name == name else r for r in T.ROWS]


def test_a_rebalance_loop_breaks_the_rebalance_budget_of_a_timely_world():
    """A heartbeat in Stable answered REBALANCE_IN_PROGRESS sends a settled group round and
    round: in a timely world without faults the group would need more generations than
    membership changes."""
    from groupspec.spec.lang import lift
    from groupspec.spec.rows import Out
    from groupspec.spec.schema import Error
    row = T.ROW_BY_NAME["Heartbeat: during Stable"]
    steps = [dataclasses.replace(st, fields={**st.fields, "error": lift("REBALANCE_IN_PROGRESS", Error)})
             if isinstance(st, Out) and st.kind == "reply" else st for st in row.steps]
    settle = PRESETS["settle"]
    assert check(settle).result == "ok"
    r = check(settle, rows=_with(row.name, steps=steps))
    assert r.result == "violation" and r.violation == "rebalance-budget"
    assert len(r.path) - 1 == r.depth
    assert any("rebalance in progress, rejoin" in st.action for st, _ in r.path[1:])


def test_timely_worlds_hold_their_liveness_with_a_fair_heartbeat():
    assert check(PRESETS["settle"], liveness=True).result == "ok"


def test_an_acknowledged_commit_that_is_not_kept_is_caught():
    """Drop the offsets update of a stored commit: the client was told NONE, the log has the
    offsets, the coordinator's cache does not."""
    name = "StoreOffsetsDone: offsets stored"
    row = T.ROW_BY_NAME[name]
    steps = [dataclasses.replace(st, updates={k: v for k, v in st.updates.items() if k != "offsets"})
             if hasattr(st, "updates") else st for st in row.steps]
    r = check(PRESETS["faults"], rows=_with(name, steps=steps))
    assert r.result == "violation" and r.violation == "offsets-durable"


def test_the_rebalance_budget_is_refused_with_faults():
    out = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "check", "--preset", "settle", "--crash"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "--crash" in out.stderr and "Traceback" not in out.stderr
