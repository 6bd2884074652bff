"""The catalog's invariants the equivalence check may assume: those proved, in this process, inductive for the
table at the sizes the check uses.

Candidates: the catalog's state invariants of the coordinator (spec/invariants.py) that are not structural
(lint proves those, and the check assumes them already), not settled (those hold between requests, not after
every row) and read no parameter, cut into conjuncts (`a ⇒ b ∧ c` into `a ⇒ b` and `a ⇒ c`), so that a
conjunct a row breaks does not take the rest of its invariant with it.  Houdini over the table's rows, with
what lint assumes of a step (checkers/proofs/lint.py: the structural invariants, well-formed values,
PARAM_FACTS, the trigger enabled): a candidate not true of the blank group (a group the coordinator does not
hold), or that some row leads out of from a state where the candidates left hold, is dropped, to a fixpoint.

A Load row reads the group's last record in the log (its `record` parameter), so a candidate about member
metadata only (no `state`, only variables the record keeps) also has a record form, the same formula over
the record's fields, as a candidate of its own: true of the empty log's record (the blank group's), and kept
by every row that appends a group record (the record spec/handling.py RECORD makes of the append's fields
meets it), so it holds of every record a Load can read, and a Load row may assume it.  What is left holds, as
a whole, of every state the table reaches from the blank group and of every record it appends, at these
sizes (each row keeps it; the structural invariants are inductive by lint's `preserves`).  Nothing is read from
docs/proofs.json, which goes stale: the proof is redone once per process (`proved`).
"""
from __future__ import annotations

import time

import z3

from groupspec.spec.handling import RECORD, SELECTED_ONLY
from groupspec.spec.invariants import INVARIANTS
from groupspec.spec.lang import Implies, Term, walk
from groupspec.spec.rows import Set_
from groupspec.spec.schema import GroupRecord, P, STATES
from groupspec.spec.symbolic import SymEnv, _eq, fresh, fresh_state, to_z3
from groupspec.spec.table import ROWS, enabled

TIMEOUT_MS = 10_000
_PROVED: list = []      # [(name, formula)], once per process
STATS: dict = {}        # how long the proof took and how many candidates it kept (benchmarks read it)


def _parts(name: str, t: Term) -> list[tuple[str, Term]]:
    """`t` cut into conjuncts, through the right side of an implication."""
    if t.op == "and":
        return [p for k, a in enumerate(t.args, 1) for p in _parts(f"{name}.{k}", a)]
    if t.op == "or" and len(t.args) == 2 and t.args[0].op == "not" and t.args[1].op == "and":
        return [(f"{name}.{k}", Implies(t.args[0].args[0], b)) for k, b in enumerate(t.args[1].args, 1)]
    return [(name, t)]


def _on_record(t: Term) -> Term:
    """`t` with each state variable read as the record's field of that name."""
    if t.op == "var":
        return P.record[t.data]
    return t if not t.args else Term(t.op, tuple(_on_record(a) for a in t.args), t.type, t.data)


def candidates() -> list[tuple[str, Term]]:
    """The catalog's conjuncts, and the record form of each that reads only what a record keeps."""
    out = []
    for inv in INVARIANTS:
        if inv.kind != "state" or inv.scope != "coordinator" or inv.structural or inv.settled:
            continue
        out += [(n, t) for n, t in _parts(inv.name, inv.formula) if not any(x.op == "param" for x in walk(t))]
    return out + [(f"{n} (record)", _on_record(t)) for n, t in out if _vars(t) <= set(RECORD)]


def _vars(t: Term) -> set:
    return {x.data for x in walk(t) if x.op == "var"}


def _written(r) -> set:
    return {k for st in r.steps if isinstance(st, Set_) for k in st.updates} | ({"state"} if r.target else set())


def _logged(rel, fields: dict) -> tuple:
    """The record an append with these fields leaves in the log (spec/handling.py RECORD), as the value of
    the `record` parameter; the host's `selected_only` is a function the proof knows nothing of."""
    params = {**{"rec." + k: fields[k] for k in RECORD}, "selected_only": fresh("assumed.selected_only",
                                                                               SELECTED_ONLY.type, rel.sizes)}
    env = SymEnv(rel.sizes, rel.state, params)
    kept = dict(zip(GroupRecord.values, rel.params["record"]))     # offsets: no candidate reads them
    return tuple(to_z3(RECORD[k], env) if k in RECORD else kept[k] for k in GroupRecord.values)


def houdini(rel, facts: list, cands: list[tuple[str, Term]], rows=ROWS, blank: Term | None = None):
    """The largest subset of `cands` that holds of the blank group (and its record) and that every row of
    `rows` keeps (in the state it leaves, and in each group record it appends), given `facts` (Z3 terms
    over rel.state and rel.params: what every step assumes) and the subset itself before the row.  `blank`
    describes the blank group (default: absent-holds-nothing's formula)."""
    env = SymEnv(rel.sizes, rel.state, rel.params)
    after = fresh_state(rel.sizes, prefix="assumed.after.")
    aenv = SymEnv(rel.sizes, after, rel.params)
    pre = {n: to_z3(t, env) for n, t in cands}
    post = {n: to_z3(t, aenv) for n, t in cands}
    reads = {n: _vars(t) for n, t in cands}
    on_record = {n for n, t in cands if any(x.op == "param" for x in walk(t))}
    blank = blank if blank is not None else next(i.formula for i in INVARIANTS if i.name == "absent-holds-nothing")
    blank_record = _record_env(rel, tuple(rel.state[k] for k in GroupRecord.values))
    solver = z3.Solver()
    solver.set("timeout", TIMEOUT_MS)
    solver.add(*facts)
    by_name = dict(cands)
    alive = [n for n, t in cands if _ask(solver, [
        rel.state["state"] == STATES.index("Absent"), to_z3(blank, env),
        z3.Not(to_z3(t, blank_record) if n in on_record else pre[n])]) is None]
    changed = True
    while changed:
        changed = False
        for r in rows:
            guard, post_r, outs = rel.of(r)
            appends = [(o.cond, _record_env(rel, _logged(rel, o.fields))) for o in outs
                       if o.kind == "append" and o.api != "offsets"]
            touched = [n for n in alive if (n in on_record and appends) or (n not in on_record and reads[n] & _written(r))]
            if not touched:
                continue
            kept = {n: z3.And([z3.Implies(c, to_z3(by_name[n], e)) for c, e in appends]) if n in on_record
                    else post[n] for n in touched}
            state_reads = set().union(*(reads[n] for n in touched if n not in on_record))
            same = [_eq(after[v], post_r[v]) for v in sorted(state_reads)]
            model = _ask(solver, [guard, to_z3(enabled(r.trigger), env), *[pre[n] for n in alive], *same,
                                  z3.Or([z3.Not(k) for k in kept.values()])])
            if model is None:
                continue
            # a counterexample drops what it breaks; Z3 giving up drops every candidate the row touches
            broken = [n for n in touched if model is not False and z3.is_false(model.eval(kept[n], True))]
            alive = [n for n in alive if n not in (broken or touched)]
            changed = True
    return [(n, t) for n, t in cands if n in alive]


def _record_env(rel, record: tuple) -> SymEnv:
    return SymEnv(rel.sizes, rel.state, {**rel.params, "record": record})


def _ask(solver, extra: list):
    """None if unsat; the model if sat; False if Z3 gave up."""
    solver.push()
    solver.add(*extra)
    res = solver.check()
    got = None if res == z3.unsat else (solver.model() if res == z3.sat else False)
    solver.pop()
    return got


def proved(rel, facts: list) -> list[tuple[str, Term]]:
    """The candidates proved inductive for the table (once per process)."""
    if not _PROVED:
        t0 = time.perf_counter()
        cands = candidates()
        _PROVED.append(houdini(rel, facts, cands))
        STATS.update(seconds=round(time.perf_counter() - t0, 2), candidates=len(cands), proved=len(_PROVED[0]))
    return _PROVED[0]
