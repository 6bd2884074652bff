"""`groupspec prove`: induction over the table's rows, in the unbounded and the fixed-size readings.

Cross-checks: the unbounded reading keeps values well formed across every step; a Z3
model of one row step, run concretely, gives the same post-state; a mutant of the table
that breaks an invariant gets a counterexample to induction naming the mutated row; every
lemma a proof used holds in every reachable state of the tiny and small worlds.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import z3

from groupspec.checkers.proofs.houdini import System
from groupspec.checkers.proofs.paths import concrete, functions, run
from groupspec.checkers.proofs.obligations import ENVIRONMENT, QUERY_WORK, STATUSES
from groupspec.checkers.proofs.prover import Prover, fixed_sizes
from groupspec.checkers.proofs.reached import refuted_by
from groupspec.checkers.proofs.readings import Reading, RowCtx, Shared, steps_of
from groupspec.checkers.proofs.results import model_value
from groupspec.spec.invariants import INVARIANTS, structural
from groupspec.spec.lang import Implies, singleton
from groupspec.spec.schema import PARAM_TYPES, STATE_VARS
from groupspec.spec.table import ROW_BY_NAME, ROWS

REPO = Path(__file__).resolve().parent.parent
BY_NAME = {i.name: i for i in INVARIANTS}


def test_the_cards_invariants_are_proved_for_any_number_of_members():
    prover = Prover(presets=())
    for name in ("one-leader-per-generation", "assignment-only-when-stable", "assignments-disjoint"):
        p = prover.prove(BY_NAME[name])
        assert p.status == "proved", (name, p.reason)
        assert "unbounded" in p.method
    # disjointness needs strengthening: every lemma it used holds where the checker goes
    pool = prover.named("closed-world")
    assert p.lemmas and refuted_by([pool[n] for n in p.lemmas], ("tiny", "small", "static")) == {}


def test_a_quantified_lemma_is_seen_false_in_a_counterexample():
    """Z3 leaves a quantifier unevaluated in a model; the search expands it over the model's
    universe, or it could never tell which candidate lemma rules a counterexample out."""
    srt = z3.DeclareSort("Elem")
    a, b = z3.Array("a", srt, z3.BoolSort()), z3.Array("b", srt, z3.BoolSort())
    x, e, f, k = (z3.Const(n, srt) for n in "xefk")
    s = z3.Solver()
    s.add(a[e], z3.Not(b[e]), e != f, b[f])
    assert s.check() == z3.sat
    m = s.model()
    # a lemma's shape: a quantifier over the keys a filter (a lambda) selects
    keys = z3.Lambda([k], z3.And(a[k], k != f))
    lemma = z3.ForAll([x], z3.Implies(keys[x], b[x]))
    assert not z3.is_false(m.eval(lemma, model_completion=True))     # what Z3 alone gives
    assert model_value(m, lemma) is False
    assert model_value(m, z3.ForAll([x], z3.Implies(a[x], b[x]))) is False
    assert model_value(m, z3.Exists([x], z3.And(a[x], z3.Not(b[x])))) is True
    assert model_value(m, z3.Not(z3.ForAll([x], z3.Implies(a[x], b[x])))) is True


def test_an_undecided_step_is_asked_for_a_small_counterexample_which_is_a_real_one():
    """Where Z3 cannot decide a query over unbounded sorts, the same question for N=2 (where
    it is decidable) may show a counterexample: a state of two members that keeps the other
    lemmas and that the row takes to one breaking the lemma.  Only false lemmas are named,
    and the row run concretely from that state breaks the lemma too."""
    prover = Prover(presets=())
    system = prover.system("coordinator")
    pool = {lm.name: lm for lm in prover.pool("coordinator")}
    i = next(k for k, sp in enumerate(system.specs) if len(sp) == 1
             and sp[0].name == "CompleteJoin: join completes, next generation")
    # Kafka keeps a member's assignment through a rebalance from Stable: false after the row
    false = pool["CompletingRebalance ⇒ assignment initial"]
    true = pool["members' assignments disjoint"]
    named = system.small_cti(i, [false, true], lambda f: [(lm, f.obligation(lm)) for lm in (false, true)])
    assert named == {false.name}
    f = system.falsifier.row(i)
    res, solver, _ = f.ask([false, true], z3.Not(f.obligation(false)))
    assert res == z3.sat
    before, after = _run_concretely(solver.model(), f, fixed_sizes(2))
    from groupspec.spec.concrete import compile_term
    from groupspec.spec.invariants import _layouts
    holds = compile_term(false.formula, _layouts()[0])
    assert holds(before, [], ()) and not holds(after, [], ())


def test_the_logged_records_protocols_are_spoken_of_and_hold_where_the_checker_goes():
    """The record a Load reads is what the log keeps (each member's protocols cut to the
    selected one): the lemmas about its protocols are candidates, and true in the worlds."""
    prover = Prover(presets=())
    names = {lm.name for lm in prover.candidates("coordinator")}
    assert "record: protos set only for members" in names


def test_one_set_has_one_count_in_the_unbounded_reading():
    """Count has no decidable meaning for every size: a count is an integer of its set, and with
    what finite cardinality says of two counts (`Sorts.cardinality`), two terms counting the same
    set written apart (a guard, a lemma) agree, and a count is 0 exactly when its set is empty."""
    from groupspec.spec import unbounded as U
    from groupspec.spec.lang import Count
    from groupspec.spec.schema import V
    sorts = U.Sorts()
    state, params = U.fresh_state(sorts), U.fresh_params(sorts)
    r = U.Reading(sorts, state, params)
    a = r.term(Count(V.members & V.awaiting_join))
    b = r.term(Count(V.members, lambda m: m.in_(V.awaiting_join)))
    s = z3.Solver()
    s.add(*r.side, *U.state_well_formed(sorts, state), a != b)
    assert s.check() == z3.sat          # two integers, nothing yet relates them
    s.add(*sorts.cardinality(r.side))
    assert s.check() == z3.unsat
    s = z3.Solver()
    s.add(*r.side, a == 0, z3.Exists([x := z3.Const("x", sorts.sort["Member"])],
                                     z3.And(state["members"][x], state["awaiting_join"][x])))
    assert s.check() == z3.unsat
    assert r.approximated == {"count"}


@pytest.mark.parametrize("grown,bound,holds", [
    # one id added: at most one more, and exactly one more is possible (the facts are not too strong)
    (lambda V, P: V.members | singleton(P.member), lambda V, P, a, b: b <= a + 1, True),
    (lambda V, P: V.members | singleton(P.member), lambda V, P, a, b: b == a + 1, False),
    # a subset: no more, and strictly fewer when an element is left out
    (lambda V, P: V.members & V.awaiting_join, lambda V, P, a, b: b <= a, True),
    (lambda V, P: V.members - singleton(P.member), lambda V, P, a, b: Implies(P.member.in_(V.members), b < a), True),
    # one id replaced by another (a static member's new id): no more
    (lambda V, P: (V.members - singleton(V.leader)) | singleton(P.member),
     lambda V, P, a, b: Implies(V.leader.in_(V.members), b <= a), True),
    # two ids added: up to two more, which a bound of one more must not claim
    (lambda V, P: V.members | singleton(P.member) | singleton(V.leader), lambda V, P, a, b: b <= a + 1, False),
])
def test_what_finite_cardinality_says_of_two_counts_for_any_number_of_members(grown, bound, holds):
    """The unbounded reading's counts, related by `Sorts.cardinality`: what a row that adds, keeps
    or replaces one member id does to a count follows for every size (so a bound on a count, such as
    group.max.size's, can be proved inductive), and no more than finite sets allow: a bound that
    fails for some finite sets is not proved."""
    from groupspec.spec import unbounded as U
    from groupspec.spec.lang import Count
    from groupspec.spec.schema import P, V
    sorts = U.Sorts()
    state, params = U.fresh_state(sorts), U.fresh_params(sorts)
    r = U.Reading(sorts, state, params)
    a, b = Count(V.members), Count(grown(V, P))
    claim = r.term(bound(V, P, a, b))
    s = z3.Solver()
    s.add(*r.side, *U.state_well_formed(sorts, state), *U.params_well_formed(sorts, params))
    s.add(*sorts.cardinality(r.side), z3.Not(claim))
    assert s.check() == (z3.unsat if holds else z3.sat)


def test_load_rebuilds_the_instance_id_map_faithfully_for_any_number_of_members():
    """Load rebuilds group.instance.id → member as the lowest member carrying each id, a Lowest
    read inside a binder: what is known of a lowest element (one of its set) holds for every
    value of the binder's variable, so from a record whose instance ids are distinct and carried
    by members only, the loaded group's map points back at the members that carry each id."""
    prover = Prover(presets=())
    system = prover.system("coordinator")
    pool = {lm.name: lm for lm in prover.pool("coordinator")}
    record = [pool["record: instance_of distinct over members"], pool["record: instance_of set only for members"]]
    i = next(k for k, sp in enumerate(system.specs) if sp[0].name == "Load: group with members")
    c = system.row(i)
    for name in ("static-ids-unique", "static maps back", "static maps to members"):
        assert c.ask(record, z3.Not(c.obligation(pool[name])))[0] == z3.unsat, name


def test_every_step_keeps_the_unbounded_values_well_formed():
    """No set ever holds `none`, no map sends it elsewhere than the default: the proofs assume
    this of the state before a step, so every step must keep it."""
    system = System(Reading(None))
    for c in system.ctx:
        s = z3.Solver()
        s.set("timeout", 5000)
        broken = z3.Not(z3.And(c.rd.well_formed(c.post, {})))
        s.add(*c.facts(), broken)
        assert s.check() == z3.unsat, c.name


@pytest.mark.parametrize("row", ["JoinGroup: new member joins and starts a rebalance (no group yet)",
                                 "CompleteJoin: join completes, next generation",
                                 "SyncGroup: leader sends the assignment",
                                 "HeartbeatExpiry: member expires during Stable",
                                 "Load: group with members"])
def test_a_z3_model_of_a_row_step_runs_concretely_to_the_same_state(row):
    sizes = fixed_sizes(2)
    rd = Reading(sizes)
    i = next(k for k, sp in enumerate(steps_of(ROWS)) if len(sp) == 1 and sp[0].name == row)
    c = RowCtx(rd, i, (ROW_BY_NAME[row],), list(ENVIRONMENT), QUERY_WORK, Shared(rd))
    s = z3.Solver()
    s.add(*c.facts(), *[c.pre(inv.formula) for inv in structural()])
    assert s.check() == z3.sat
    m = s.model()
    post = tuple(concrete(m, c.post[v.name], v.type, sizes) for v in STATE_VARS)
    assert _run_concretely(m, c, sizes)[1] == post


def _run_concretely(m, c, sizes) -> tuple:
    """(state before, state after) of the row of fixed-size step `c` run by the concrete engine
    from the state, parameters and choices of model `m`."""
    state = tuple(concrete(m, c.state[v.name], v.type, sizes) for v in STATE_VARS)
    values = {n: concrete(m, c.params[n], t, sizes) for n, t in PARAM_TYPES.items() if t.kind != "fun"}
    values.update(functions(m, c.params, sizes))
    # every choice made, read or not: the model names a value for each
    o = run(m, c.row, f"@{c.i}", state, values)
    assert o is not None
    return state, o.state


def _mutant(name: str, **change):
    return [dataclasses.replace(r, **change) if r.name == name else r for r in ROWS]


def test_a_mutant_that_hands_out_an_assignment_outside_stable_gets_a_counterexample_naming_its_row():
    bad = "StoreGroupDone: assignment stored"
    rows = _mutant(bad, target=None)       # stays CompletingRebalance while answering every SyncGroup
    p = Prover(rows=rows, presets=("tiny",)).prove(BY_NAME["assignment-only-when-stable"])
    assert p.status == "violated", p.reason
    assert p.cti is not None and bad in p.cti.row
    assert "CompletingRebalance" in p.cti.scenario and bad in p.cti.words


def test_a_mutant_that_changes_the_leader_within_a_generation_gets_a_counterexample_naming_its_row():
    from groupspec.spec.lang import Choose
    from groupspec.spec.rows import Set_
    from groupspec.spec.schema import V
    name = "HeartbeatExpiry: member expires during Stable"
    row = ROW_BY_NAME[name]
    steps = list(row.steps) + [Set_({"leader": Choose("any_leader", V.members)})]   # re-elect anyone
    rows = [dataclasses.replace(r, steps=steps) if r.name == name else r for r in ROWS]
    p = Prover(rows=rows, presets=(), strengthen=False).prove(BY_NAME["one-leader-per-generation"])
    assert p.status != "proved"
    assert p.cti is not None and name in p.cti.row


def test_every_lemma_the_saved_proofs_use_holds_in_every_reachable_state_of_tiny_and_small():
    saved = REPO / "docs" / "proofs.json"
    data = json.loads(saved.read_text(encoding="utf-8"))
    pool = {n: lm for scope in ("coordinator", "closed-world") for n, lm in Prover().named(scope).items()}
    # Houdini's lemmas by name (Spacer's, formulas of its own, are checked when found: tests/test_chc.py)
    used = {n for p in data["invariants"] if p.get("engine", "houdini") == "houdini" for n in p["lemmas"]}
    assert used <= set(pool), used - set(pool)
    assert refuted_by([pool[n] for n in sorted(used)], ("tiny", "small")) == {}


def test_proved_never_hides_an_unknown():
    """An unknown answer (Z3 out of work: one resource unit per query) is reported as unknown,
    never as proved; the limit counts work, not time, so this is so on any machine."""
    p = Prover(query_work=1, presets=(), strengthen=False, engine="houdini").prove(
        BY_NAME["one-leader-per-generation"])
    assert p.status == "unknown", p.status
    assert "limit of work" in p.reason or "gave up" in p.reason, p.reason


def test_a_crash_while_proving_one_invariant_is_that_invariants_unknown():
    """Z3 has crashed (a segmentation fault) deep into a full run: each invariant is proved in
    a process of its own, so a crash costs that invariant's proof, not the run."""
    import os
    import signal
    from groupspec.checkers.proofs.command import _isolated
    prover = Prover(presets=())
    real = prover.prove

    def prove(inv):
        if inv.name == "generation-monotone":
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(inv)
    prover.prove = prove
    # forked from here (not from the clean server the command uses), so the patched prove runs
    crashed, proved = _isolated(lambda spacer_seed: prover, [BY_NAME["generation-monotone"],
                                                             BY_NAME["assignment-only-when-stable"]], 2, None,
                                start="fork")
    assert crashed.status == "unknown" and "segmentation fault" in crashed.reason, crashed.reason
    assert proved.status == "proved"
    # Spacer crashes with one random seed and not another: a crashed invariant is tried with the next seeds
    assert "seeds 0 to 2" in crashed.reason, crashed.reason


def test_the_command_prints_json_and_refuses_bad_input():
    exe = [sys.executable, "-m", "groupspec.checkers.cli"]
    r = subprocess.run(exe + ["prove", "-i", "assignment-only-when-stable", "--json"], capture_output=True,
                       text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [(p["name"], p["status"]) for p in out["invariants"]] == [("assignment-only-when-stable", "proved")]
    assert set(out["invariants"][0]) >= {"name", "status", "method", "lemmas", "seconds"}
    r = subprocess.run(exe + ["prove", "-i", "no-such-invariant"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    r = subprocess.run(exe + ["prove", "--bound", "0"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = subprocess.run(exe + ["prove", "--jobs", "0"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "--jobs must be at least 1" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_every_invariant_gets_a_status_and_every_lemma_found_holds_where_the_checker_goes():
    from groupspec.checkers.proofs.command import run_induction
    proofs, prover = run_induction(None, presets=("tiny", "small"))
    assert all(p.status in STATUSES for p in proofs)
    assert not [p for p in proofs if p.status == "violated"]
    assert not [p for p in proofs if "PROVER BUG" in p.reason]


def test_a_settled_invariant_is_proved_over_the_world_step_for_the_scala_coordinator_only():
    """join-completes-once-all-rejoined holds between requests: every step ends in the eager
    CompleteJoin, whose outcomes each leave it true, for any number of members.  Kafka 4.0's Java
    coordinator does not re-check after a refusal at group.max.size, so without the Scala
    coordinator assumed the proof fails there; and a table that lost the join's completion to a
    next generation fails it too."""
    from groupspec.checkers.proofs.obligations import SCALA_COORDINATOR
    from groupspec.checkers.proofs.settled import prove_settled
    inv = BY_NAME["join-completes-once-all-rejoined"]
    p = Prover(presets=()).prove(inv)
    assert p.status == "proved", p.reason
    assert "world step" in p.method and "unbounded" in p.method
    assert SCALA_COORDINATOR.name in p.assumptions
    java = prove_settled(inv, ROWS, list(ENVIRONMENT), QUERY_WORK)
    assert java.status == "unknown" and "no CompleteJoin row" in java.reason, java.reason
    assert prove_settled(inv, ROWS, list(ENVIRONMENT) + [SCALA_COORDINATOR], QUERY_WORK).status == "proved"
    lost = [r for r in ROWS if r.name != "CompleteJoin: join completes, next generation"]
    broken = prove_settled(inv, lost, list(ENVIRONMENT) + [SCALA_COORDINATOR], QUERY_WORK)
    assert broken.status == "unknown" and "no CompleteJoin row" in broken.reason, broken.reason


def test_invariants_that_need_each_other_are_proved_together_for_any_number_of_members():
    """static-ids-unique and metadata-of-members-only are each inductive only given the other (a static
    member's rejoin keeps one where the other holds): Houdini over the catalog's conjuncts keeps both,
    so each is proved, for every size, together with the other; every lemma named holds where the
    checker goes."""
    prover = Prover(presets=())
    for name, other in (("static-ids-unique", "metadata-of-members-only"),
                        ("metadata-of-members-only", "static-ids-unique"),
                        ("timers-belong-to-members", "metadata-of-members-only")):
        p = prover.prove(BY_NAME[name])
        assert p.status == "proved" and "unbounded" in p.method, (name, p.reason)
        assert other in p.together, (name, p.together)
        named = prover.named("coordinator")
        assert refuted_by([named[n] for n in p.lemmas], ("tiny", "small", "static")) == {}


@pytest.mark.slow      # about five minutes; the counting facts it needs are in CI (the tests above)
def test_the_group_max_size_bound_is_proved_for_any_number_of_members():
    """max-size-after-join (a step invariant about a count) for every size: its goal follows from the joint
    search's lemmas with the bounds on |members ∩ awaiting_join| of its own vocabulary, which survive every
    step only with the counts related by finite cardinality; each lemma holds where the checker goes."""
    prover = Prover(presets=())
    p = prover.prove(BY_NAME["max-size-after-join"])
    assert p.status == "proved" and "unbounded" in p.method, (p.status, p.reason)
    assert {"|members ∩ awaiting_join| ≤ group.max.size",
            "Stable ⇒ |members ∩ awaiting_join| < group.max.size"} <= set(p.lemmas), p.lemmas
    named = prover.named("coordinator")
    assert refuted_by([named[n] for n in p.lemmas], ("tiny", "small", "static")) == {}


@pytest.mark.slow      # 40-60 s of Z3; the joint search itself is in CI (the test above)
def test_the_joint_search_drops_what_a_planted_bug_breaks():
    """Sound as a fixpoint: with a static member's rejoin that leaves the replaced id its
    group.instance.id (a planted bug), the conjuncts it breaks are dropped, and so is what needed them."""
    from groupspec.checkers.proofs.joint import jointly, part_lemmas
    from groupspec.checkers.proofs.obligations import catalog_lemmas, Work
    from groupspec.spec.rows import Set_
    from groupspec.spec.schema import P, V
    bad = "JoinGroup: known static member rejoins during PreparingRebalance (PreparingRebalance)"
    keep_old = lambda st: dataclasses.replace(st, updates={**st.updates, "instance_of": V.instance_of.put(   # noqa: E731
        P.fresh, P.instance)}) if isinstance(st, Set_) and "instance_of" in st.updates else st
    rows = _mutant(bad, steps=[keep_old(st) for st in ROW_BY_NAME[bad].steps])
    system = Prover(rows=rows, presets=()).system("coordinator")
    alive, dropped = jointly(system, part_lemmas(catalog_lemmas()), [], Work(60))
    left = {lm.name for lm in alive}
    # (on the table itself both are kept: the test above)
    assert dropped["metadata-of-members-only [2/7]"] == bad and "static-ids-unique [1/4]" not in left
