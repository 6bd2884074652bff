"""Mutation testing of the checker: plant a bug in the table, see whether the checker catches it.

Mutants of a coordinator row (clients are the environment and stay correct):
  drop-conjunct   drop one conjunct (or disjunct) of the row's own condition
  flip-compare    < becomes <=, <= becomes <, = becomes ≠
  drop-effect     drop one update of one state variable
  redirect        move to another state than the row's target
  swap-error      answer another error than the row's
A mutant `groupspec lint` rejects (its row no longer keeps a structural invariant) is killed
first; a mutant Z3 shows equivalent (equivalence.py: its row behaves as the table's wherever it
is selected, as far as anything reads it again) is not searched.  Each other mutant meets a sequence of worlds, smallest first, until
one kills it.  In each world it is first compared with the table on every coordinator firing the
world can reach: if it answers alike everywhere the world cannot tell it (its state graph is the
table's; the concrete checkers below still may, and only if they cannot is it equivalent);
otherwise the checker searches the world with it, for safety and, in the worlds that ask for it, for bounded
liveness.  A mutant is killed by a violated invariant, a deadlock, a state from which no
client can get an assignment again, a fair lasso stuck in a rebalance, or the table failing to
decide (no row applies).  A survivor is reported with where it first behaves differently and
why that is harmless: it only removes behaviour, it touches what the worlds do not model
(durations, a second protocol), or a conformance scenario pins what it changes (an error code
the clients recover from alike); what is left is unexplained: a missing invariant, or a world
too small to show the bug.
"""
from __future__ import annotations

import dataclasses
import os
import random
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Callable

from groupspec.spec import engine as E
from groupspec.spec.kafka import ERRORS
from groupspec.spec.lang import TRUE, Not, Term, lift, walk
from groupspec.spec.rows import Out, Row, Set_
from groupspec.spec.schema import Error, STATES, legal_moves
from groupspec.spec.table import ROWS, coordinator_of
from groupspec.spec.world import WORLD_COORDINATOR

from .equivalence import lint_breaks, shown_equivalent

SWAPS = {"NONE": "REBALANCE_IN_PROGRESS", "REBALANCE_IN_PROGRESS": "NONE", "UNKNOWN_MEMBER_ID": "ILLEGAL_GENERATION",
         "ILLEGAL_GENERATION": "UNKNOWN_MEMBER_ID", "MEMBER_ID_REQUIRED": "NONE", "FENCED_INSTANCE_ID": "NONE",
         "NOT_COORDINATOR": "NONE", "COORDINATOR_NOT_AVAILABLE": "NONE", "GROUP_MAX_SIZE_REACHED": "NONE"}


@dataclass
class Mutant:
    index: int
    operator: str
    row: str
    detail: str


def _replace(t: Term, target: Term, new: Term) -> Term:
    if t is target:
        return new
    if not t.args:
        return t
    args = tuple(_replace(a, target, new) for a in t.args)
    if all(a is b for a, b in zip(args, t.args)):
        return t
    return Term(t.op, args, t.type, t.data)


def mutants() -> list[tuple[Mutant, int, Row]]:
    """Every mutant: (description, index of the row in ROWS, the mutated row), of the rows of the coordinator the
    closed world describes (spec/world.py WORLD_COORDINATOR): a row only the other coordinator fires is never
    reached here, so its mutants would look equivalent (its behaviour is held to Kafka's by the harness)."""
    out = []

    def add(op, i, row, detail, new_row):
        out.append((Mutant(len(out), op, row.name, detail), i, new_row))
    for i, row in enumerate(ROWS):
        if coordinator_of(row) not in (None, WORLD_COORDINATOR):
            continue
        own = row.own if row.own is not None else row.guard
        cond = own.args[-1] if own.op == "and" and row.own is not None else own
        # drop a conjunct / disjunct of the row's own condition
        if cond.op in ("and", "or") and len(cond.args) > 1:
            for k in range(len(cond.args)):
                rest = cond.args[:k] + cond.args[k + 1:]
                new_cond = Term(cond.op, rest, cond.type) if len(rest) > 1 else rest[0]
                add("drop-conjunct", i, row, f"drop `{_show(cond.args[k])}`",
                    dataclasses.replace(row, own=_replace(own, cond, new_cond)))
        elif not (cond.op == "const"):
            add("drop-conjunct", i, row, f"drop the whole condition `{_show(cond)}`",
                dataclasses.replace(row, own=_replace(own, cond, TRUE())))
        # flip one comparison
        for n in walk(cond):
            if n.op in ("lt", "le"):
                flipped = Term("le" if n.op == "lt" else "lt", n.args, n.type)
                add("flip-compare", i, row, f"`{_show(n)}` → `{_show(flipped)}`",
                    dataclasses.replace(row, own=_replace(own, n, flipped)))
            elif n.op == "eq" and n.args[0].type.kind in ("int", "dom", "enum"):
                add("flip-compare", i, row, f"`{_show(n)}` negated",
                    dataclasses.replace(row, own=_replace(own, n, Not(n))))
        # drop one effect
        for k, st in enumerate(row.steps):
            if isinstance(st, Set_):
                for var in st.updates:
                    if var.startswith("scratch_"):
                        continue
                    steps = list(row.steps)
                    steps[k] = dataclasses.replace(st, updates={v: t for v, t in st.updates.items() if v != var})
                    add("drop-effect", i, row, f"drop the update of `{var}` (step {k})",
                        dataclasses.replace(row, steps=steps))
        # redirect the target
        if row.target is not None:
            for other in STATES:
                if other != row.target and all((s, other) in legal_moves() for s in row.states) \
                        and other != "Absent":
                    add("redirect", i, row, f"→ {other} instead of {row.target}",
                        dataclasses.replace(row, target=other))
                    break
            add("redirect", i, row, f"stay instead of → {row.target}", dataclasses.replace(row, target=None))
        # swap an error code in a response
        for k, st in enumerate(row.steps):
            if isinstance(st, Out) and st.kind in ("reply", "answer"):
                err = st.fields.get("error")
                if isinstance(err, Term) and err.op == "const" and ERRORS[err.data] in SWAPS:
                    swap = SWAPS[ERRORS[err.data]]
                    steps = list(row.steps)
                    steps[k] = dataclasses.replace(st, fields={**st.fields, "error": lift(swap, Error)})
                    add("swap-error", i, row, f"{ERRORS[err.data]} → {swap}", dataclasses.replace(row, steps=steps))
    return out


def _show(t: Term) -> str:
    """A mutated term as the reports show it: in Kafka's names, cut to a line."""
    from groupspec.spec.vocabulary import kafka_text
    text = kafka_text(t)
    return text if len(text) < 90 else text[:87] + "..."


# -- telling a mutant from the table ------------------------------------------------------
# A mutant changes one row, so it behaves differently in a world only where that row's trigger
# fires.  The reference search of a world keeps every firing of the coordinator's engine
# (group state, trigger, parameters -> outcomes); if the mutant's rows give the same outcomes on
# every one of them, its reachable graph is the table's own (by induction from the initial
# state), so no checker could tell them apart in that world: an equivalent mutant, proved by
# exhaustion rather than argued.  Only mutants that differ somewhere are searched.

@dataclass
class Reference:
    """A world's reachable coordinator firings under the table, by trigger."""
    name: str
    world: Callable      # (rows, keep_firings=False) -> the world's model with those coordinator rows
    cfg: object          # the world's configuration (what `explain` asks of it)
    liveness: bool
    states: int
    firings: dict        # trigger -> [(g, params, [(row name, state, outputs)])]


def reference(name: str, world: Callable, liveness: bool) -> Reference:
    """`world`: builds the world's model for a table, `world(rows=None, keep_firings=False)`
    (a WorldModel's class bound to its configuration): the reference searches it with the
    spec's table, a mutant with its own rows."""
    from .explicit import check
    model = world(None, keep_firings=True)
    res = check(model)
    if res.result != "ok":
        raise RuntimeError(f"world {name!r} is not correct under the table itself ({res.result}: "
                           f"{res.violation}); mutants cannot be judged in it")
    firings: dict = {}
    for g, trigger, p, outs in model.firings():
        firings.setdefault(trigger, []).append((g, p, [(o.row.name, o.state, o.outputs) for o in outs]))
    return Reference(name, world, model.cfg, liveness, res.distinct_states, firings)


def first_difference(ref: Reference, index: int, row: Row) -> tuple[str | None, bool, bool]:
    """Where the mutant (row `index` replaced by `row`) first behaves unlike the table in the
    reference world: (a description or None if nowhere, whether the row fires there, whether
    any outcome is new).  A mutant whose every outcome is one the table has on the same firing
    only removes behaviour: its reachable graph is a part of the table's, which no safety
    property can tell from the whole (a deadlock or a liveness check may)."""
    engine = _engine_with(index, row)
    fires, first, new = False, None, False
    for g, p, want in ref.firings.get(row.trigger, ()):
        fires = fires or any(name == row.name for name, _, _ in want)
        try:
            got = engine.fire(g, row.trigger, list(p))
        except E.EngineError as e:
            return f"in {STATES[g[E.STATE_I]]}, {row.trigger}: {e}", True, True
        mine = [(o.state, o.outputs) for o in got]
        theirs = [(st, outs) for _, st, outs in want]
        if mine != theirs:
            first = first or _describe(g, row.trigger, want, got)
            new = new or any(x not in theirs for x in mine)
    return first, fires or first is not None, new


def _engine_with(index: int, row: Row) -> E.Engine:
    """An engine for the mutated row's trigger: the table's rows (compiled once a process), row `index` replaced."""
    from groupspec.checkers.world.state_space import SKIPPED_OUTPUTS
    engine = E.Engine([], skip_outputs=SKIPPED_OUTPUTS)
    chain = [E.compiled(row if i == index else r) for i, r in enumerate(ROWS) if r.trigger == row.trigger]
    engine.by_trigger[row.trigger] = chain
    return engine


def _describe(g: tuple, trigger: str, want: list, got: list) -> str:
    """What the mutant does differently on one reachable firing, in the spec's names."""
    from groupspec.spec.schema import STATE_VARS
    where = f"in {STATES[g[E.STATE_I]]}, {trigger}"
    if len(want) != len(got):
        return f"{where}: {len(got)} outcome(s) instead of {len(want)}"
    for (name, st, outs), o in zip(want, got):
        changed = [v.name for v, a, b in zip(STATE_VARS, st, o.state) if a != b]
        if changed:
            return f"{where}: {', '.join(changed)} differ"
        if outs != o.outputs:
            mine = [f"{x.kind} {x.api} {ERRORS[x.fields['error']] if 'error' in (x.fields or {}) else ''}".strip()
                    for x in o.outputs]
            theirs = [f"{x.kind} {x.api} {ERRORS[x.fields['error']] if 'error' in (x.fields or {}) else ''}".strip()
                      for x in outs]
            return f"{where}: outputs {mine} instead of {theirs}"
    return where


_REFS: dict = {}          # world name -> Reference, built before the worker processes fork
_MUTANTS: list = []


def run_one(args) -> dict:
    """Judge one mutant in each world in turn until one kills it (in a worker process: mutants are
    rebuilt there by index, references inherited from the parent)."""
    index, names = args
    from .explicit import check
    if not _MUTANTS:
        _MUTANTS.extend(mutants())
    m, i, row = _MUTANTS[index]
    rows = list(ROWS)
    rows[i] = row
    out = {**dataclasses.asdict(m), "outcome": "equivalent", "killed_by": "", "world": "",
           "counterexample_length": 0, "states": 0, "fires_in": [], "differs": ""}
    broken = lint_breaks(i, row)
    if broken:      # lint rejects the mutant table: caught before any world is searched
        return {**out, "outcome": "killed", "killed_by": broken, "world": "lint", "checker": "lint"}
    shown = shown_equivalent(i, row)
    if shown:       # no search can tell it from the table: proved, not assumed
        return {**out, "equivalent": shown, "equivalent_by": "z3"}
    new_behaviour = False
    for name in names:
        ref = _REFS[name]
        diff, fires, new = first_difference(ref, i, row)
        if fires:
            out["fires_in"].append(name)
        if diff is None:
            continue            # this world cannot tell the mutant from the table
        new_behaviour = new_behaviour or new
        try:
            model = ref.world(rows)
            res = check(model)
            if res.result == "ok" and ref.liveness:
                res = check(model, liveness=True)   # a mutant may only break progress
        except E.EngineError as e:
            return {**out, "outcome": "killed", "killed_by": f"the table: {e}", "world": name,
                    "checker": "explicit search"}
        out["states"] += res.distinct_states
        if res.result != "ok":
            return {**out, "outcome": "killed", "killed_by": res.violation, "world": name,
                    "counterexample_length": max(0, len(res.path) - 1),
                    "checker": "liveness" if res.result in ("lasso", "no-progress") else "explicit search"}
        if not out["differs"]:
            out["outcome"], out["world"], out["differs"] = "survived", name, f"{name}: {diff}"
    if out["outcome"] == "equivalent" and out["fires_in"]:
        # every reachable firing answers as the table's: the worlds' state graphs are the table's own.  Z3 found
        # a state where the row differs, which abstract time or the worlds' bounds may keep out of reach: the
        # concrete checkers judge it first, and it is equivalent only if they cannot tell it either
        out["equivalent"] = (f"identical state graphs: the same outcome as the table on every reachable firing "
                             f"of {row.trigger} in {', '.join(out['fires_in'])}")
        out["equivalent_by"] = "state graphs"
        return judge_concretely(out, rows)
    if out["outcome"] == "equivalent":
        # no world reaches the row: untested by search, not equivalent; the conformance suite and the harness,
        # which reach every row, judge it
        out["outcome"], out["not_covered"] = "not covered", f"its row never fires in {', '.join(names)}: " \
                                                            f"{_unreached_why(row)}"
        out["equivalent"] = ""
    else:
        out["equivalent"] = explain(out, [_REFS[n].cfg for n in names])
        if not new_behaviour:
            out["equivalent"] = out["equivalent"] or ("it only removes behaviour (every outcome is one the table "
                                                      "has on the same firing): no safety property can tell, and "
                                                      "no deadlock or liveness check did")
    return judge_concretely(out, rows)


def judge_concretely(out: dict, rows: list) -> dict:
    """A mutant search did not kill, judged on concrete histories: the conformance scenarios (the suite
    generated from the closed worlds first, then the hand-written ones: every answer as the table gives it),
    then the conformance harness (concrete time, every answer compared).  Killed by the first that tells it
    from the table; else it is left as it was (survived with its reason, not covered, or equivalent)."""
    killed = _scenario_kill(out, rows)
    if killed:
        return killed
    from groupspec.checkers.conform.mutants import harness_kills
    killed = harness_kills(rows)
    if killed:
        return {**out, "outcome": "killed", "killed_by": f"harness: {killed[0]}", "world": "conform",
                "counterexample_length": killed[1], "checker": "harness"}
    return out


_SCENARIOS: list = []     # the conformance suite, parsed once per process, the generated part first


def _scenario_kill(out: dict, rows: list) -> dict | None:
    """The mutant's result if a conformance scenario tells it from the table: killed by the generated suite
    or by a hand-written scenario."""
    caught, generated = _scenarios_catch(rows)
    if not caught:
        return None
    checker = "generated scenarios" if generated else "scenarios"
    return {**out, "outcome": "killed", "killed_by": f"scenario: {caught}", "world": "scenarios", "checker": checker}


def _scenarios_catch(rows: list) -> tuple[str, bool]:
    """The first conformance scenario (tests/scenarios, spec target) the mutant table fails, and whether it
    is one of the generated suite; ('', False) if none.  A survivor of the checker that a scenario catches
    changes an answer no safety property is about (an error code the clients recover from alike); the
    scenario pins it."""
    from groupspec.checkers.paths import REPO, default_scenario_paths, generated_first, is_generated
    from groupspec.checkers.scenarios.model import load_file
    from groupspec.checkers.scenarios.report import scenario_files
    from groupspec.checkers.scenarios.runner import run_scenario
    if not _SCENARIOS:
        _SCENARIOS.extend(sc for f in generated_first(scenario_files(default_scenario_paths()))
                          for sc in load_file(f))
    engine = E.Engine(rows)
    for sc in _SCENARIOS:
        try:
            r = run_scenario(sc, "spec", engine)
        except Exception as e:          # a mutant may break what the coordinator relies on
            return f"{_rel(sc.file, REPO)}: {sc.name} (the coordinator fails: {type(e).__name__}: {e})", \
                is_generated(sc.file)
        if r.result != "pass":
            return f"{_rel(sc.file, REPO)}: {sc.name}", is_generated(sc.file)
    return "", False


def _rel(path, root) -> str:
    from pathlib import Path
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return str(path)


def _unreached_why(row: Row) -> str:
    """Why a row cannot fire in the closed world, from its trigger."""
    from groupspec.spec.world import NOT_IN_WORLD
    return NOT_IN_WORLD.get(row.trigger, "no reachable state of these worlds meets its condition")


# Worlds a mutant cannot be judged in: each needs a complete reference search
UNFIT_WORLDS = {"deep": "the deep world's search does not finish (it is the nightly search), so there is no "
                        "reference to compare the mutants with; use the smaller worlds"}


def run(worlds: list, sample: int | None = None, seed: int = 0, jobs: int = 2, progress=None) -> list[dict]:
    """`worlds`: [(name, world, liveness?)], smallest first (`world` as `reference` takes it): a
    mutant goes on to the next world only if the ones before did not kill it."""
    for name, world, liveness in worlds:
        _REFS[name] = reference(name, world, liveness)
    all_m = mutants()
    indices = list(range(len(all_m)))
    if sample and sample < len(indices):
        indices = sorted(random.Random(seed).sample(indices, sample))
    names = [n for n, _, _ in worlds]
    return _in_workers(run_one, [(i, names) for i in indices], jobs, progress)


def rejudge(results: list[dict], preset: str, jobs: int = 2, progress=None) -> list[dict]:
    """A run's results (`mutate --json`'s), judged again where the concrete checkers may now say more: a
    mutant that was equivalent because no world reaches its row is not covered, and goes to the scenarios
    and the harness; a survivor goes to the scenarios again (they may have grown; its harness run, at a
    fixed seed, would say what it said).  Killed ones are kept, and equivalent ones whose row fires or that Z3
    showed equivalent (judged before any world: no `fires_in`, and nothing concrete could tell them apart)."""
    todo = [(k, r, preset) for k, r in enumerate(results)
            if r["outcome"] in ("survived", "not covered")
            or (r["outcome"] == "equivalent" and not r["fires_in"] and r.get("equivalent_by") != "z3")]
    out = list(results)
    for k, r in zip([k for k, _, _ in todo], _in_workers(_rejudge_one, todo, jobs, progress)):
        out[k] = r
    return out


def _rejudge_one(args) -> dict:
    _, r, preset = args
    if not _MUTANTS:
        _MUTANTS.extend(mutants())
    m, i, row = _MUTANTS[r["index"]]
    rows = list(ROWS)
    rows[i] = row
    r = {k: v for k, v in r.items() if k != "caught_by_scenario"}
    if r["outcome"] == "equivalent":
        r.update(outcome="not covered", equivalent="",
                 not_covered=f"its row never fires in {preset}: {_unreached_why(row)}")
        return judge_concretely(r, rows)
    return _scenario_kill(r, rows) or r


def _in_workers(fn, items: list, jobs: int, progress) -> list:
    """`fn` over `items` in `jobs` worker processes (forked: they inherit the references), in order."""
    import multiprocessing as mp
    results = []
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("fork"),
                               initializer=_pool_worker, initargs=(os.getpid(),))
    try:
        for r in pool.map(fn, items, chunksize=4):
            results.append(r)
            if progress:
                progress(len(results), len(items))
    except BaseException:
        # interrupted (SIGINT, SIGTERM) or failed: the workers are in the middle of mutants, and
        # shutting the pool down would wait for them; kill them (the pool keeps them in _processes)
        for proc in list((pool._processes or {}).values()):
            proc.kill()
        pool.shutdown(wait=True, cancel_futures=True)    # quick: the pool sees its workers dead
        raise
    pool.shutdown()
    return results


def _pool_worker(parent: int) -> None:
    """A pool worker ends with the parent; Ctrl-C is the parent's to handle (it kills the pool)."""
    import signal
    from .explicit import die_with_parent
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# Why a surviving mutant may be equivalent in a world: each reason names what the world
# does not exercise.  A survivor none of these explain is reported as unexplained: a
# missing invariant, or a world too small to show the bug.
DURATIONS = {"session_ms", "rebalance_ms", "join_delay_ms", "join_remaining_ms"}
STATIC = {"instance_of", "static"}
PROTOCOL = {"protos", "protocol_type", "protocol"}


# Survivors classified by reading them (row, operator, detail -> why the mutant is harmless).
# Each was reviewed against Kafka's code; `groupspec mutate` prints the rest as unexplained.
REVIEWED = {
    ("JoinGroup: pending member rejoins and starts a rebalance (CompletingRebalance)", "drop-effect",
     "drop the update of `assignment` (step 5)"):
        "equivalent: CompletingRebalance to PreparingRebalance without clearing the stored assignment leaves "
        "it as Stable to PreparingRebalance does; nothing reads it before the leader's next SyncGroup replaces "
        "it (DescribeGroups shows assignments only in Stable)",
    ("StoreGroupDone: assignment not stored", "drop-effect", "drop the update of `awaiting_sync` (step 5)"):
        "equivalent: the SyncGroups answered with the append's error are answered again by the rebalance "
        "that follows, and a second answer reaches nobody (Kafka nulls a member's awaitingSyncCallback once "
        "it is invoked; the world forgets the parked request)",
    ("HeartbeatExpiry: member kept alive by its parked request", "drop-effect",
     "drop the update of `hb_armed` (step 0)"):
        "equivalent up to timing: the timer of a member kept alive fires again and keeps it alive again, "
        "and answering its parked request re-arms it either way",
}
_NEW_MEMBER = ("timing only: the new-member timeout (KIP-394) decides how soon a new member whose client "
               "vanished while its JoinGroup is parked is removed; unmarked, it is removed later by the sync "
               "timeout instead, which abstract time cannot tell apart")


def explain(r: dict, cfgs) -> str:
    """Why a mutant that behaves differently but breaks nothing is still harmless in the worlds
    `cfgs` (one config or several), or '' if nothing explains it."""
    cfgs = cfgs if isinstance(cfgs, (list, tuple)) else [cfgs]
    detail, row = r["detail"], r["row"]
    if (row, r["operator"], detail) in REVIEWED:
        return "reviewed, " + REVIEWED[(row, r["operator"], detail)]
    var = detail.split("`")[1] if r["operator"] == "drop-effect" and "`" in detail else ""
    if var == "new_members" and row.startswith("JoinGroup:"):
        return "reviewed, " + _NEW_MEMBER
    if var in DURATIONS:
        return "time is abstract in the checker: durations never decide what happens"
    if (var in STATIC or "instance" in detail or "static[" in detail) and not any(c.instances for c in cfgs):
        return "no client has a group.instance.id in these worlds"
    if (var in PROTOCOL or "ptype" in detail or "protocol" in detail) and \
            all(c.sizes()["Protocol"] == 1 for c in cfgs):
        return "every client offers the same single protocol in these worlds"
    if row.startswith(("LeaveGroup:", "LeaveMember:")) and r["operator"] == "swap-error":
        return "clients ignore the LeaveGroup response (they have left)"
    return ""


def summary(results: list[dict]) -> dict:
    """Killed (and by which checker: explicit search, liveness, a conformance scenario, the harness),
    equivalent (identical state graphs in every world), survived (behaves differently somewhere, killed by
    none: with why, or unexplained) and not covered (no world reaches its row, and neither a scenario nor
    the harness tells it from the table).  One kill rate, over every mutant not shown equivalent."""
    killed = [r for r in results if r["outcome"] == "killed"]
    equivalent = [r for r in results if r["outcome"] == "equivalent"]
    survived = [r for r in results if r["outcome"] == "survived"]
    uncovered = [r for r in results if r["outcome"] == "not covered"]
    by: dict = {}
    in_world: dict = {}
    for r in killed:
        key = r["killed_by"].split(":")[0]
        by[key] = by.get(key, 0) + 1
        in_world[r["world"]] = in_world.get(r["world"], 0) + 1
    why: dict = {}
    for r in survived:
        reason = r.get("equivalent") or "unexplained"
        why[reason] = why.get(reason, 0) + 1
    for r in uncovered:
        why["not covered: " + r["not_covered"]] = why.get("not covered: " + r["not_covered"], 0) + 1
    judged = len(killed) + len(survived) + len(uncovered)
    checkers = {c: sum(1 for r in killed if r.get("checker", "explicit search") == c)
                for c in ("lint", "explicit search", "liveness", "generated scenarios", "scenarios", "harness")}
    shown_by = {how: sum(1 for r in equivalent if r.get("equivalent_by", "state graphs") == how)
                for how in ("z3", "state graphs")}
    return {"mutants": len(results), "killed": len(killed), "survived": len(survived),
            "not_covered": len(uncovered), "equivalent": len(equivalent), "equivalent_by": shown_by,
            "survived_unexplained": why.get("unexplained", 0),
            "kill_rate": round(len(killed) / judged, 3) if judged else None, "killed_by": by,
            "killed_by_checker": checkers, "killed_in_world": in_world, "survivors": why}