"""Spacer, the second engine of `groupspec prove`: the table's steps as constrained Horn
clauses (checkers/proofs/chc.py).  It proves an invariant with a relation of its own; the
relation's lemmas are checked against the states the explicit checker reaches, and a false
one is caught; the table's functions become values Spacer accepts."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import z3

from groupspec.checkers.proofs import chc
from groupspec.checkers.proofs.prover import Prover, fixed_sizes
from groupspec.spec.invariants import INVARIANTS
from groupspec.spec.schema import STATES

REPO = Path(__file__).resolve().parent.parent
BY_NAME = {i.name: i for i in INVARIANTS}


def test_functions_become_values_that_agree_on_equal_arguments():
    f = z3.Function("f", z3.IntSort(), z3.IntSort())
    x, y = z3.Ints("x y")
    (out,), same = chc.ackermannize([z3.And(f(x) == 1, f(y) == 2)], keep="Inv")
    assert not chc._uninterpreted([out, *same], "Inv")[1]       # no application of f is left
    s = z3.Solver()
    s.add(out, *same, x == y)
    assert s.check() == z3.unsat            # equal arguments, so not 1 and 2
    s = z3.Solver()
    s.add(out, *same)
    assert s.check() == z3.sat


def test_spacer_proves_an_invariant_with_lemmas_that_hold_where_the_checker_goes():
    # in a fresh process, as `groupspec prove` proves each invariant: Z3 4.16's Spacer has
    # crashed (a segmentation fault) after some histories of other tests' queries in a worker
    import functools
    from groupspec.checkers.proofs.command import _isolated
    make = functools.partial(Prover, presets=("tiny",), engine="spacer", spacer_budget_s=600)
    (p,) = _isolated(make, [BY_NAME["empty-has-no-members"]], 1, None)
    assert p.status == "proved up to N" and p.bound == 2 and p.engine == "spacer", p.reason
    assert p.lemmas and all(n.startswith("spacer N=2: ") for n in p.lemmas)
    assert "hold in the" in p.reason and "PROVER BUG" not in p.reason


def test_a_false_lemma_is_caught_by_the_reachable_states():
    system = Prover(presets=()).system("coordinator", fixed_sizes(2))
    h = chc.Horn(system, chc.ALL)
    members, state = h.names["members"], h.names["state"]
    absent, empty = STATES.index("Absent"), STATES.index("Empty")
    true = z3.Or(members == 0, z3.And(state != absent, state != empty))   # members: not Absent nor Empty
    false = members == 0                          # every group is empty: reachable states break it
    r = chc.SpacerResult("proved", sorted(chc.ALL), [str(true), str(false)], formulas=[true, false], names=h.names)
    bad, checked = chc.refuted(r, system, ("tiny",))
    assert bad == {str(false): "tiny"} and checked > 0


def test_the_command_takes_an_engine_and_world_flags_only_for_bmc():
    exe = [sys.executable, "-m", "groupspec.checkers.cli", "prove"]
    r = subprocess.run(exe + ["--engine", "tla"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "--engine" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(exe + ["--no-crash"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "--bmc" in r.stderr
    r = subprocess.run(exe + ["--bmc", "2", "--preset", "tiny", "--no-crash", "--clients", "1", "--json"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == "ok"


def _planted(name: str, **change) -> list:
    from groupspec.spec.table import ROWS
    return [dataclasses.replace(r, **change) if r.name == name else r for r in ROWS]


# a planted bug: the assignment is stored and the group stays in CompletingRebalance, so every
# SyncGroup after it is answered with the assignment outside Stable
PLANTED = "StoreGroupDone: assignment stored"


@pytest.mark.slow      # 45-90 s of Spacer and unrolling (the 15-minute suite); its sibling below is slow too
def test_a_path_replays_on_the_table_it_was_found_in_and_not_on_another():
    """The path Spacer's derivation gives (its clauses unrolled, Z3's model read back) runs row by row
    through the concrete engine: on the planted table it breaks the invariant at the planted row; on
    the table itself the planted row's step ends elsewhere (Stable), so it does not replay."""
    from groupspec.checkers.proofs import paths
    from groupspec.spec.table import ROWS
    rows = _planted(PLANTED, target=None)
    system = Prover(rows=rows, presets=()).system("coordinator", fixed_sizes(2))
    h = chc.clauses(system, BY_NAME["assignment-only-when-stable"], chc.ALL, ())
    rules = paths.derivation(h, 600)
    assert rules[0].name == "init" and rules[-1].name.startswith("query")
    models = paths.unroll(h, rules, 600 * 7_000_000)
    assert not isinstance(models, str), models
    got = paths.Replay(h, rows)(rules, models)
    assert got.replayed and got.broken == "assignment-only-when-stable", got.detail
    assert PLANTED in got.steps[-1].row
    # the eager re-check of the pending join is due where the join can complete at once (a delayed
    # join), not after the first member's JoinGroup, which waits for the initial delay
    from groupspec.spec.schema import PARAM_TYPES, STATE_VARS
    replay, c1, m1 = paths.Replay(h, rows), system.row(rules[1].step), models[1]
    after = [paths.concrete(m1, c1.post[v.name], v.type, system.rd.sizes) for v in STATE_VARS]
    values = {n: paths.concrete(m1, c1.params[n], t, system.rd.sizes) for n, t in PARAM_TYPES.items()
              if t.kind != "fun"} | paths.functions(m1, c1.params, system.rd.sizes)
    assert replay.eager(c1.spec[0], tuple(after), values) is None
    after[[v.name for v in STATE_VARS].index("join_timer")] = 2          # delayed
    assert replay.eager(c1.spec[0], tuple(after), values)[0].startswith("CompleteJoin")
    other = paths.Replay(h, ROWS)(rules, models)
    assert not other.replayed and other.broken is None and "state" in other.detail, other.detail
    # printed as the command prints it: the rows in order, and the path as a scenario
    from rich.console import Console
    from groupspec.checkers.proofs.command import print_table
    from groupspec.checkers.proofs.results import Proof
    console = Console(record=True, width=200)
    print_table(console, [Proof("assignment-only-when-stable", "violated", "spacer", path=got)], Prover(presets=()))
    text = console.export_text()
    assert "Spacer's path: 1. JoinGroup" in text and "- send: SyncGroup" in text and "- storage: {complete: NONE}" in text


@pytest.mark.slow
def test_spacers_counterexample_is_a_path_that_replays_and_breaks_the_invariant():
    """Spacer's derivation of false on a planted bug, as a path of rows from the blank group, run by the
    concrete engine: it breaks the invariant Spacer was asked about, at the planted row."""
    import functools
    from groupspec.checkers.proofs.command import _isolated
    rows = _planted(PLANTED, target=None)
    make = functools.partial(Prover, rows=rows, presets=(), engine="spacer", spacer_budget_s=600)
    (p,) = _isolated(make, [BY_NAME["assignment-only-when-stable"]], 1, None)
    assert p.status == "violated" and p.path is not None, p.reason
    assert p.path.replayed and p.path.broken == "assignment-only-when-stable", p.path.detail
    assert PLANTED in p.path.steps[-1].row and "replayed concretely" in p.reason
    assert p.path.steps[0].row.startswith("JoinGroup") and "- send: SyncGroup" in p.path.scenario()
    assert json.loads(json.dumps(p.as_json()))["path"]["broken"] == "assignment-only-when-stable"
