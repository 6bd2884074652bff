"""Mutation testing of the checker: plant a bug in the table, see whether the checker catches it.

Mutants of a coordinator row (clients are the environment and stay correct):
  drop-conjunct   drop one conjunct (or disjunct) of the row's own condition
  flip-compare    < becomes <=, <= becomes <, = becomes ≠
  drop-effect     drop one update of one state variable
  redirect        move to another state than the row's target
  swap-error      answer another error than the row's
Each mutant runs the explicit checker on a world preset, for safety and
then for bounded liveness.  A mutant is killed when the checker reports a
violation, a deadlock, a state from which no client can get an
assignment again, a fair lasso stuck in a rebalance, or the table
failing to decide (no row applies); it survives when the world stays
correct; it is unreached when its row never fires in that world (no
world of that size can tell).
"""
from __future__ import annotations

import dataclasses
import random
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from groupspec.spec import engine as E
from groupspec.spec.kafka import ERRORS
from groupspec.spec.lang import TRUE, Not, Term, lift, walk
from groupspec.spec.rows import Out, Row, Set_
from groupspec.spec.schema import Error, STATES, legal_moves
from groupspec.spec.table import ROWS

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
    """Every mutant: (description, index of the row in ROWS, the mutated row)."""
    out = []

    def add(op, i, row, detail, new_row):
        out.append((Mutant(len(out), op, row.name, detail), i, new_row))
    for i, row in enumerate(ROWS):
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
    from groupspec.spec.lang import show
    text = show(t)
    return text if len(text) < 90 else text[:87] + "..."


def run_one(args) -> dict:
    """Check one mutant in each world in turn until one kills it (in a worker process:
    mutants are rebuilt there by index).  `worlds`: [(name, WorldConfig, liveness?)]."""
    index, worlds = args
    from .explicit import check
    m, i, row = mutants()[index]
    rows = list(ROWS)
    rows[i] = row
    out = {**dataclasses.asdict(m), "outcome": "unreached", "killed_by": "", "world": "",
           "counterexample_length": 0, "states": 0}
    for name, cfg, liveness in worlds:
        try:
            res = check(cfg, rows=rows)
            if res.result == "ok" and liveness:
                res = check(cfg, rows=rows, liveness=True)   # a mutant may only break progress
        except E.EngineError as e:
            return {**out, "outcome": "killed", "killed_by": f"the table: {e}", "world": name}
        out["states"] += res.distinct_states
        if res.result != "ok":
            return {**out, "outcome": "killed", "killed_by": res.violation, "world": name,
                    "counterexample_length": max(0, len(res.path) - 1)}
        if res.coverage.get(row.name, 0):
            out["outcome"], out["world"] = "survived", name
    if out["outcome"] == "survived":
        out["equivalent"] = explain(out, worlds[-1][1])
    return out


def run(worlds: list, sample: int | None = None, seed: int = 0, jobs: int = 2, progress=None) -> list[dict]:
    """`worlds`: [(name, WorldConfig, liveness?)], smallest first: a mutant goes on to the next
    world only if the ones before did not kill it."""
    all_m = mutants()
    indices = list(range(len(all_m)))
    if sample and sample < len(indices):
        indices = sorted(random.Random(seed).sample(indices, sample))
    results = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for r in pool.map(run_one, [(i, worlds) for i in indices]):
            results.append(r)
            if progress:
                progress(len(results), len(indices))
    return results


# Why a surviving mutant may be equivalent in a world: each reason names what the world
# does not exercise.  A survivor none of these explain is reported as unexplained: a
# missing invariant, or a world too small to show the bug.
DURATIONS = {"session_ms", "rebalance_ms", "join_delay_ms", "join_remaining_ms"}
STATIC = {"instance_of", "static"}
PROTOCOL = {"protos", "protocol_type", "protocol"}


def explain(r: dict, cfg) -> str:
    """Why a surviving mutant is equivalent in the world `cfg`, or '' if nothing explains it."""
    detail, row = r["detail"], r["row"]
    var = detail.split("`")[1] if r["operator"] == "drop-effect" and "`" in detail else ""
    if var in DURATIONS:
        return "time is abstract in the checker: durations never decide what happens"
    if (var in STATIC or "instance" in detail or "static[" in detail) and not cfg.instances:
        return "no client has a group.instance.id in this world"
    if (var in PROTOCOL or "ptype" in detail or "protocol" in detail) and cfg.sizes()["Protocol"] == 1:
        return "every client offers the same single protocol in this world"
    if "p.coord" in detail and not cfg.failover:
        return "the coordinator never loads or moves in this world"
    if "group_id_ok" in detail:
        return "clients always send a valid group id"
    if row.startswith(("LeaveGroup:", "LeaveMember:")) and r["operator"] == "swap-error":
        return "clients ignore the LeaveGroup response (they have left)"
    return ""


def summary(results: list[dict]) -> dict:
    reached = [r for r in results if r["outcome"] != "unreached"]
    killed = [r for r in reached if r["outcome"] == "killed"]
    by: dict = {}
    in_world: dict = {}
    for r in killed:
        by[r["killed_by"].split(":")[0]] = by.get(r["killed_by"].split(":")[0], 0) + 1
        in_world[r["world"]] = in_world.get(r["world"], 0) + 1
    survived = [r for r in reached if r["outcome"] == "survived"]
    why: dict = {}
    for r in survived:
        reason = r.get("equivalent") or "unexplained"
        why[reason] = why.get(reason, 0) + 1
    return {"mutants": len(results), "reached": len(reached), "killed": len(killed),
            "survived": len(survived), "unreached": len(results) - len(reached),
            "kill_rate": round(len(killed) / len(reached), 3) if reached else None, "killed_by": by,
            "killed_in_world": in_world,
            "survivors": why}
