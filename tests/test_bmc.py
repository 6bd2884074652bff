"""Bounded model checking of the closed world (checkers/world/bmc.py) against the explicit checker.

BMC reads the same declarations the explicit checker compiles, through the symbolic meaning
of terms and `handling.handle` with a symbolic host; each violation it finds is replayed
through the explicit checker's world model, and a trace that does not replay is reported as
a disagreement.  So these tests hold the two interpretations to each other: the states BMC
reaches within k steps are the explicit search's, depth by depth, and a planted bug is found
by both at the same shortest depth.
"""
from __future__ import annotations

import dataclasses
import html
import json
from functools import partial

import pytest

from groupspec.checkers.world import bmc_search as BMC
from groupspec.checkers.world.bmc import StepRelation, _replayed, reachable
from groupspec.checkers.world.bmc_search import bmc
from groupspec.checkers.world.bmc_sat import SatStep, bmc_sat
from groupspec.checkers.search.explicit import check
from groupspec.checkers.search.prefix import levels_to
from groupspec.checkers.world.state_space import WorldModel
from groupspec.checkers.world.presets import PRESETS
from groupspec.spec.handling import Eager
from groupspec.spec.lang import If, Lowest
from groupspec.spec.table import ROWS
from groupspec.spec.schema import P, V

from test_cli_input import refused, run_cli
from test_planted_bugs import (LEADER_SYNCS, TINY, _new_member_rows, edit_sets, keep_session_timer, plant,
                               propagate_without_storing, rows_fired, subst_row)

# the tiny world with one client: the cheapest world a violation can be found in end to end
ONE = dataclasses.replace(TINY, clients=1)


@pytest.fixture(scope="module")
def tiny_step() -> StepRelation:
    return StepRelation(TINY)         # built once (seconds), unrolled by each test


def test_no_state_within_two_steps_of_the_tiny_world_breaks_an_invariant(tiny_step):
    r = bmc(tiny_step, 2)
    assert (r.result, r.depth) == ("ok", 2), r.detail
    assert r.paths_per_step > 100      # every row of every trigger a step may take, under its guard
    assert len(r.seconds_per_depth) == 3


def test_bmc_reaches_the_states_the_explicit_search_reaches_depth_by_depth(tiny_step):
    k = 3
    levels = reachable(tiny_step, k)              # the states reachable in exactly j steps, by Z3
    explicit = check(WorldModel(TINY), symmetry=False)
    seen, first_reached = set(), []
    for states in levels:
        first_reached.append(len(states - seen))
        seen |= states
    assert first_reached == explicit.levels[:k + 1]
    assert sum(first_reached) > k + 1            # more than one path: interleavings of the two clients
    # and they are the same states: depth j's are the concrete successors of depth j-1's
    model = WorldModel(TINY)
    for j in range(1, k + 1):
        assert {model.flat(t) for s in levels[j - 1] for _, t in model.successors(model.unflat(s))[0]} == levels[j]


def member_also_pending(r):
    """GC.doDynamicNewMemberJoinGroup that adds the new id to the members as well as parking it
    as pending (both at once: the group's record breaks at the first JoinGroup)."""
    def add(u):
        if "pending" in u:
            u["members"] = V.members.with_(P.fresh)
        return u
    return edit_sets(r, add)


def test_prove_bmc_writes_its_counterexample_in_the_three_formats(monkeypatch, capsys, tmp_path):
    rows = plant(member_also_pending, lambda n: n.startswith("JoinGroup: new dynamic member must rejoin"))
    monkeypatch.setitem(PRESETS, "tiny", ONE)
    monkeypatch.setattr(BMC, "bmc", partial(BMC.bmc, rows=rows))      # the CLI's BMC, of the planted table
    code, out, err = run_cli(monkeypatch, capsys, "prove", "--bmc", "3", "--preset", "tiny", "--json",
                             "--out", str(tmp_path / "ce"))
    assert code == 1, err
    doc = json.loads(out)
    explicit = check(WorldModel(ONE, rows))
    assert (doc["result"], doc["depth"], doc["violation"]) == ("violation", explicit.depth, explicit.violation)
    files = {p.name: p.read_text() for p in (tmp_path / "ce").iterdir() if p.suffix != ".js"}
    # the three formats, and the page for a review that check --out writes too
    assert set(files) == {"counterexample.itf.json", "counterexample.mmd", "counterexample.md", "counterexample.html"}
    assert html.escape(files["counterexample.mmd"]) in files["counterexample.html"]
    itf = json.loads(files["counterexample.itf.json"])
    assert itf["#meta"]["source"] == "groupspec prove --bmc" and len(itf["states"]) == len(explicit.path)
    assert itf == doc["counterexample"]["itf"]
    assert "JoinGroup: new dynamic member must rejoin with its id (no group yet)" in files["counterexample.md"]
    assert files["counterexample.mmd"].startswith("sequenceDiagram")
    assert f"violates {explicit.violation}" in files["counterexample.mmd"]


@pytest.mark.parametrize("args,says", [
    (["--bmc", "2", "--out", "{file}"], "is not a folder"),
    (["--out", "{dir}"], "--out is for --bmc's counterexample"),
    (["--bmc", "2", "--timeout", "0"], "--timeout 0: give seconds in (0, 86400]"),
    (["--bmc", "65"], "--bmc 65: give a depth from 0 to 64"),
    (["--bmc", "2", "--preset", "huge"], "--preset 'huge': unknown preset"),
    (["--bmc", "2", "--clients", "0"], "--clients"),
    (["--no-crash"], "a closed world is for --bmc K"),
    (["--leap"], "--leap is for --bmc K's search of a closed world; give --bmc K with it"),
    (["--bmc-solver", "sat"], "--bmc-solver is for --bmc K's search"),
    (["--bmc", "2", "--leap"], "--leap asks the SAT solver one question for every depth: give --bmc-solver sat"),
    (["--bmc", "2", "--bmc-solver", "cvc5"], "--bmc-solver 'cvc5': use z3 or sat"),
    (["--bmc", "2", "--bmc-solver", "sat", "--timeout", "5"], "--timeout 5 is Z3's time per query"),
    (["--after-search", "2"], "--after-search is for --bmc K's search of a closed world"),
    (["--bmc", "3", "--after-search", "2"], "--after-search 2: BMC from the search's level is the SAT solver's"),
    (["--bmc", "3", "--bmc-solver", "sat", "--after-search", "5"], "--after-search 5: give a depth from 0 to --bmc's 3"),
    (["--bmc", "3", "--bmc-solver", "sat", "--after-search", "-1"], "--after-search -1: give a depth from 0 to"),
    (["--bmc", "3", "--bmc-solver", "sat", "--after-search", "soon"], "(the search goes that deep, BMC the rest of the way), or auto"),
    (["--bmc", "3", "--bmc-solver", "sat", "--after-search", "\u00b2"], "give a depth from 0 to --bmc's 3"),
    (["--bmc", "3", "--bmc-solver", "sat", "--after-search", "2", "-i", "leader-is-member"],
     "--after-search with -i: the search to depth D checks every invariant"),
])
def test_prove_bmc_refuses_bad_input(monkeypatch, capsys, tmp_path, args, says):
    (tmp_path / "f").write_text("")
    args = [a.format(file=tmp_path / "f", dir=tmp_path / "d") for a in args]
    assert says in refused(monkeypatch, capsys, "prove", *args)


def _same_shortest_violation(rows, cfg=TINY, mode="push"):
    """The explicit checker's shortest violation, and BMC's at that depth: the same length,
    replayed concretely, and BMC asked about the explicit checker's invariant alone finds it
    broken at that depth too (a shortest path may break more than one)."""
    explicit = check(WorldModel(cfg, rows))
    assert explicit.result == "violation"
    rel = StepRelation(cfg, rows)
    r = bmc(rel, explicit.depth, mode=mode)
    assert r.result == "violation", r.detail           # replayed concretely: not a disagreement
    assert r.depth == explicit.depth and len(r.path) == len(explicit.path)
    same = bmc(rel, explicit.depth, only={explicit.violation}, mode=mode)
    assert (same.result, same.depth, same.violation) == ("violation", explicit.depth, explicit.violation)
    return explicit, r


@pytest.mark.parametrize("mode", [pytest.param("push", marks=pytest.mark.slow), pytest.param("sat", marks=pytest.mark.slow)])
def test_bmc_and_the_explicit_checker_find_kafka_2017_at_the_same_depth(mode):
    # KAFKA-2017's class: the leader's assignment propagated without storing the group
    explicit, r = _same_shortest_violation(plant(propagate_without_storing, LEADER_SYNCS.__eq__), mode=mode)
    assert r.violation == explicit.violation == "membership-durable"
    assert LEADER_SYNCS in rows_fired(r)


@pytest.mark.parametrize("mode", [pytest.param("push", marks=pytest.mark.slow), pytest.param("sat", marks=pytest.mark.slow)])
def test_bmc_and_the_explicit_checker_find_a_member_id_from_the_client_id_at_the_same_depth(mode):
    # GM.generateMemberId without the UUID: a new member is handed an id a member already holds
    in_use = V.members | V.pending
    rows = plant(lambda r: subst_row(r, P.fresh, If(in_use.is_empty(), P.fresh, Lowest(in_use))), _new_member_rows)
    explicit, r = _same_shortest_violation(rows, mode=mode)
    assert {r.violation, explicit.violation} <= {"pending-not-members", "no-shared-member-id"}


def test_sat_bmc_checks_the_integer_bound_it_encodes_rather_than_assuming_it(tiny_step):
    r = bmc(tiny_step, 3, mode="sat")
    assert (r.result, r.depth, len(r.seconds_per_depth)) == ("ok", 3, 4), r.detail
    # with integers held to [-1, 0], a client's JoinGroup writes its session timeout out of them:
    # the search must stop and say so, not report the depths clean
    r = bmc_sat(tiny_step, 3, sat_step=SatStep(tiny_step, hi=0))
    assert r.result == "unknown" and "outside the bounds" in r.detail, r.detail


def test_bmc_takes_a_planted_eager_re_check_as_the_world_model_does():
    # the re-check left out after every row (test_planted_bugs' KAFKA-7909 and kop#380, widened):
    # the bug is in spec/handling.py's eager rule, not in a row, and BMC must search that world
    skip = Eager(skip_after=frozenset(r.name for r in ROWS))
    explicit = check(WorldModel(ONE, eager=skip))
    assert explicit.result == "violation"
    r = bmc(StepRelation(ONE, eager=skip), explicit.depth, mode="sat")
    assert (r.result, r.depth) == ("violation", explicit.depth), r.detail


PLANTED_ONE = plant(member_also_pending, lambda n: n.startswith("JoinGroup: new dynamic member must rejoin"))


@pytest.fixture(scope="module")
def planted_one() -> SatStep:
    return SatStep(StepRelation(ONE, PLANTED_ONE))      # clauses made once (seconds), unrolled by each test


def test_a_leap_finds_a_violation_within_its_depth_replays_it_and_does_not_call_it_shortest(planted_one):
    explicit = check(WorldModel(ONE, PLANTED_ONE))
    r = bmc_sat(planted_one.rel, 8, sat_step=planted_one, leap=True)
    assert r.result == "violation", r.detail        # replayed concretely, cut at the first violation met
    assert explicit.depth <= r.depth <= 8 and len(r.path) == r.depth + 1 and len(r.steps) == r.depth
    assert r.violation == explicit.violation and not r.shortest and r.solve_seconds > 0
    # depth by depth, the same clauses find it at the explicit search's depth, and say it is shortest
    by_depth = bmc_sat(planted_one.rel, 8, sat_step=planted_one)
    assert (by_depth.result, by_depth.depth, by_depth.shortest) == ("violation", explicit.depth, True)


def test_a_leap_short_of_the_violation_answers_for_every_depth_at_once(planted_one):
    r = bmc_sat(planted_one.rel, 1, sat_step=planted_one, leap=True)      # the violation is 2 steps deep
    assert (r.result, r.depth) == ("ok", 1), r.detail
    # one question, so one time for solving; each depth's entry is its unrolling
    assert len(r.seconds_per_depth) == 2 and r.solve_seconds > 0
    with pytest.raises(ValueError, match="mode sat"):
        bmc(planted_one.rel, 3, mode="push", leap=True)


def test_a_leap_s_replay_cuts_the_trace_at_the_first_violation_it_meets(planted_one):
    # a leap's model may break an invariant before the depth whose question it answered (the
    # questions imply the violations, not the converse): the replay reports the first, where
    # the depth-by-depth search, which showed every depth before clean, calls it a disagreement
    explicit = check(WorldModel(ONE, PLANTED_ONE))
    states = [flat for _, flat in explicit.path[:-1]]   # its last entry is the row breaking it on its way
    trace = states + [states[-1], states[-1]]          # and the model went on past it
    W = planted_one.rel.world
    cut = _replayed(W, trace, "whatever-the-model-said", len(trace) - 1, earliest=True)
    assert (cut.result, cut.depth, cut.violation) == ("violation", explicit.depth, explicit.violation)
    assert len(cut.path) == len(explicit.path) and cut.states == trace[:explicit.depth + 1]
    assert _replayed(W, trace, explicit.violation, len(trace) - 1).result == "disagreement"


def test_prove_bmc_leap_says_its_counterexample_is_not_shown_shortest(monkeypatch, capsys, planted_one):
    from groupspec.checkers.world import bmc_sat as SAT
    monkeypatch.setitem(PRESETS, "tiny", ONE)
    # the CLI's BMC, of the planted table, over the clauses made once for these tests
    real = BMC.bmc
    monkeypatch.setattr(BMC, "bmc", lambda cfg, depth, **kw: real(planted_one.rel, depth, **kw))
    monkeypatch.setattr(SAT, "SatStep", lambda rel: planted_one)
    code, out, err = run_cli(monkeypatch, capsys, "prove", "--bmc", "4", "--bmc-solver", "sat", "--leap")
    assert code == 1, err
    assert "bmc: asking once for a violation within 4 steps" in err and "step 4 unrolled" in err
    first = out.splitlines()[0]
    assert first.startswith("bmc tiny: violation at depth ") and ": leader-is-member (replayed: " in first, first
    assert first.endswith("); not shown shortest (a leap): `--bmc` without --leap finds a shortest"), first
    code, out, err = run_cli(monkeypatch, capsys, "prove", "--bmc", "4", "--bmc-solver", "sat", "--leap", "--json")
    doc = json.loads(out)
    assert (code, doc["solver"], doc["leap"], doc["shortest"], doc["result"]) == (1, "sat", True, False, "violation")
    assert doc["solve_seconds"] > 0 and len(doc["counterexample"]["steps"]) == doc["depth"] + 1
    # asked about another invariant alone, the same clauses answer clean, and say what they were asked
    code, out, err = run_cli(monkeypatch, capsys, "prove", "--bmc", "4", "--bmc-solver", "sat", "-i", "no-shared-member-id")
    assert (code, out.splitlines()[0]) == (0, "bmc tiny: ok at depth 4 (asked about no-shared-member-id only)"), err
    code, out, err = run_cli(monkeypatch, capsys, "prove", "--bmc", "4", "--bmc-solver", "sat", "-i", "leader-is-member",
                             "--json")
    doc = json.loads(out)
    assert (code, doc["violation"], doc["invariants"], doc["shortest"]) == (1, "leader-is-member", ["leader-is-member"],
                                                                            True)


def _pigeons(sat, n: int) -> None:
    """n+1 pigeons in n holes: unsatisfiable, and hard for a CDCL solver (minutes at n = 11)."""
    x = {(p, h): int(sat.fresh(1)[0]) for p in range(n + 1) for h in range(n)}
    for p in range(n + 1):
        sat.solver.add_clause([x[p, h] for h in range(n)])
    for h in range(n):
        for p in range(n + 1):
            for q in range(p):
                sat.solver.add_clause([-x[p, h], -x[q, h]])


class _Stop(Exception):
    pass


def test_a_long_sat_question_stops_at_its_budget_and_at_a_signal():
    # a leap's one question ran 10 minutes and more on the 3-client world; its solver runs in C, where a
    # signal's handler (Ctrl-C, SIGTERM) cannot run until it returns
    import os
    import signal
    import threading
    import time
    from groupspec.checkers.world.bmc_sat import _Sat
    sat = _Sat()
    _pigeons(sat, 11)
    # Glucose looks at its interrupt now and then (0.5-2.5 s here): "at once" is seconds, not the minutes of the question
    t = time.perf_counter()
    assert sat.solve([], 0.5) is None and time.perf_counter() - t < 10
    before = signal.signal(signal.SIGUSR1, lambda *_: (_ for _ in ()).throw(_Stop()))
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        timer.start()
        t = time.perf_counter()
        with pytest.raises(_Stop):
            sat.solve([], None)
        assert time.perf_counter() - t < 10
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, before)
    assert sat.solve([], 0.2) is None        # interrupted, not broken: it answers (or runs out) again


# == BMC after breadth-first search: the search to depth D, then SAT from the states it kept there ==

def test_the_search_to_a_depth_keeps_the_explicit_search_s_levels_as_states_at_the_end_of_their_paths():
    model = WorldModel(PRESETS["small"])
    full = check(model)
    for d in (0, 3, 7):
        pre = levels_to(model, d)
        assert pre.ended is None and pre.levels == full.levels[:d + 1] and len(pre.states) == full.levels[d]
        assert pre.distinct_states == sum(full.levels[:d + 1])
        for i in range(0, len(pre.states), max(1, len(pre.states) // 7)):
            path = pre.path(i)          # concrete, each state a successor of the one before, ending at the kept one
            assert len(path) == d + 1 and path[-1][1] == model.flat(pre.states[i])
            for (_, a), (step, b) in zip(path, path[1:]):
                assert any(st is step and model.flat(t) == b for st, t in model.successors(model.unflat(a))[0])
    # no level wider than asked: the search stops at the deepest level within it
    widest = full.levels[5]
    pre = levels_to(model, 30, widest=widest)
    stop = next(d for d, n in enumerate(full.levels) if d > 0 and n > widest) - 1
    assert pre.ended is None and pre.depth == stop >= 5 and len(pre.states) == full.levels[stop] <= widest
    assert pre.levels == full.levels[:stop + 1] and pre.distinct_states == sum(full.levels[:stop + 1])
    # deeper than the world: it ends, every state reached
    deep = levels_to(WorldModel(TINY), 64)
    assert deep.ended is not None and deep.ended.result == "ok" and deep.distinct_states == check(WorldModel(TINY)).distinct_states


LEAVE_KEEPS_TIMER = plant(keep_session_timer, lambda n: n.startswith("LeaveMember: member leaves during"))


@pytest.fixture(scope="module")
def leave_keeps_timer() -> SatStep:
    return SatStep(StepRelation(TINY, LEAVE_KEEPS_TIMER))


def test_bmc_after_the_search_finds_the_shortest_violation_from_any_depth_and_replays_it(leave_keeps_timer):
    explicit = check(WorldModel(TINY, LEAVE_KEEPS_TIMER))
    assert (explicit.result, explicit.depth) == ("violation", 10)
    rel = leave_keeps_timer.rel
    for after in (0, 5, 9):
        r = bmc_sat(rel, 12, sat_step=leave_keeps_timer, prefix=levels_to(rel.world.model, after))
        assert (r.result, r.depth, r.violation, r.shortest) == ("violation", 10, explicit.violation, True), r.detail
        assert len(r.path) == len(explicit.path) and len(r.steps) == 10     # the search's steps, then BMC's
        assert len(r.seconds_per_depth) == 10 - after + 1        # BMC asked the depths from `after` on only
    # the search alone reaches it: BMC is not asked, the result is the search's, its path concrete
    r = bmc(rel, 12, mode="sat", after=12)
    assert (r.result, r.depth, r.violation) == ("violation", 10, explicit.violation) and r.prefix_states > 0
    assert r.seconds_per_depth == [] and len(r.path) == len(explicit.path)
    # short of it: clean to the depth asked
    r = bmc_sat(rel, 9, sat_step=leave_keeps_timer, prefix=levels_to(rel.world.model, 6))
    assert (r.result, r.depth) == ("ok", 9)


def test_bmc_after_the_search_is_the_sat_search_s_and_within_its_depth():
    with pytest.raises(ValueError, match="mode sat's, at a depth from 0 to 3"):
        bmc(PRESETS["tiny"], 3, mode="push", after=2)
    with pytest.raises(ValueError, match="from 0 to 3"):
        bmc(PRESETS["tiny"], 3, mode="sat", after=4)
    with pytest.raises(ValueError, match="checks every invariant"):
        bmc(PRESETS["tiny"], 3, mode="sat", after=2, only={"leader-is-member"})


def test_a_leap_from_the_search_s_level_is_shortest_one_step_past_it(leave_keeps_timer):
    # the search showed every depth to its level clean: a leap's violation one step past it is a shortest one
    rel = leave_keeps_timer.rel
    r = bmc_sat(rel, 10, sat_step=leave_keeps_timer, prefix=levels_to(rel.world.model, 9), leap=True)
    assert (r.result, r.depth, r.shortest) == ("violation", 10, True), r.detail
    r = bmc_sat(rel, 12, sat_step=leave_keeps_timer, prefix=levels_to(rel.world.model, 6), leap=True)
    assert r.result == "violation" and 10 <= r.depth <= 12 and not r.shortest, r.detail


def test_prove_bmc_after_search_says_what_the_search_did(monkeypatch, capsys):
    code, out, err = run_cli(monkeypatch, capsys, "prove", "--bmc", "6", "--bmc-solver", "sat", "--after-search", "4")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "bmc tiny: ok at depth 6", out
    assert lines[1].startswith("  breadth-first search to depth 4 first: ") and " states, BMC from the " in lines[1]
    assert "depth 4 answered, depth 5 unrolled" in err and "depth 0 answered" not in err
    assert "bmc: breadth-first search to depth 4: " in err and " states, " in err and " at depth 4, in " in err
    code, out, err = run_cli(monkeypatch, capsys, "prove", "--bmc", "12", "--bmc-solver", "sat", "--after-search", "auto",
                             "--preset", "small", "--json")
    doc = json.loads(out)
    assert (code, doc["result"], doc["depth"]) == (0, "ok", 12)
    levels = check(WorldModel(PRESETS["small"])).levels        # auto: the deepest level of at most 4,096 states
    assert doc["after_search"]["depth"] == min(12, next((d for d, n in enumerate(levels) if n > 4096), 99) - 1)
    assert doc["after_search"]["last_level"] == levels[doc["after_search"]["depth"]]
    code, out, err = run_cli(monkeypatch, capsys, "prove", "--bmc", "40", "--bmc-solver", "sat", "--after-search", "40",
                             "--json")
    doc = json.loads(out)
    assert (code, doc["result"], doc["depth"]) == (0, "ok", 40)
    deepest = check(WorldModel(TINY)).depth
    assert doc["detail"] == f"breadth-first search reached every state within {deepest} steps; none breaks an invariant"
    assert doc["after_search"]["depth"] == deepest < 40


def test_bmc_after_the_search_stopped_by_its_budget_says_the_search_answered_its_level(leave_keeps_timer):
    rel = leave_keeps_timer.rel
    r = bmc_sat(rel, 12, sat_step=leave_keeps_timer, prefix=levels_to(rel.world.model, 5), budget_s=1e-9)
    assert (r.result, r.depth) == ("stopped", 5)
    r = bmc_sat(rel, 12, sat_step=leave_keeps_timer, prefix=levels_to(rel.world.model, 0), budget_s=1e-9)
    assert (r.result, r.depth) == ("stopped", 0)


def test_clean_depths_kept_for_the_invariants_asked_alone_keep_the_depth_found(planted_one):
    # each depth answered clean is kept as clauses of the questions asked there, and only those: asked about
    # the broken invariant alone, or about every one, the same shortest depth
    explicit = check(WorldModel(ONE, PLANTED_ONE))
    for only in (None, {explicit.violation}):
        r = bmc_sat(planted_one.rel, 8, sat_step=planted_one, only=only)
        assert (r.result, r.depth, r.violation) == ("violation", explicit.depth, explicit.violation), r.detail


def test_bmc_after_a_search_level_too_wide_to_start_from_says_so(monkeypatch, leave_keeps_timer):
    monkeypatch.setattr(BMC, "MAX_STARTS", 2)
    r = bmc(leave_keeps_timer.rel, 12, mode="sat", after=6)
    assert r.result == "unknown" and r.detail.startswith(f"breadth-first search keeps {r.prefix_level} states at depth 6, "
                                                         f"more than the 2 BMC starts from"), r.detail
    assert r.detail.endswith("give a smaller depth to search to, or auto")
