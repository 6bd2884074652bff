"""Rows as pieces of a transition relation, in Z3.

`row_relation(row, state, params)` gives a row's guard, the state after it
(its steps applied in order, symbolically) and its outputs, for a world of
fixed domain sizes.  The lint, the BMC and the induction checks all build
on this, and a test holds it to the concrete interpretation on many
states.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from .lang import NONE, SymEnv, Term, fresh, to_z3, well_formed
from .rows import ECHO, Out, Row, Set_
from .schema import PARAM_TYPES, STATE_VARS, STATES, Bounds


@dataclass
class SymOutput:
    kind: str
    api: str
    cond: object          # z3 Bool: the output happens
    member: object        # z3 Int or None
    fields: dict          # name -> z3 value
    timer: str = ""       # arm / cancel: which timer


def fresh_state(sizes: dict[str, int], prefix: str = "s.") -> dict:
    return {v.name: fresh(prefix + v.name, v.type, sizes) for v in STATE_VARS}


def fresh_params(sizes: dict[str, int], prefix: str = "p.", names=None) -> dict:
    names = PARAM_TYPES if names is None else names
    return {n: fresh(prefix + n, PARAM_TYPES[n], sizes) for n in names}


def state_well_formed(state: dict, sizes: dict[str, int]) -> list:
    cs = []
    for v in STATE_VARS:
        cs += well_formed(state[v.name], v.type, sizes)
    # sets are bit-vectors of exactly the domain's width: nothing outside the domain
    return cs


def params_well_formed(params: dict, sizes: dict[str, int]) -> list:
    cs = []
    for n, val in params.items():
        t = PARAM_TYPES.get(n)
        if t is not None and t.kind != "fun":
            cs += well_formed(val, t, sizes)
    return cs


def in_states(row: Row, state: dict):
    return z3.Or([state["state"] == STATES.index(s) for s in row.states])


def row_relation(row: Row, state: dict, params: dict, sizes: dict[str, int], choices: dict | None = None):
    """(guard, post-state, outputs) of a row; choices are fresh variables unless given."""
    env_params = dict(params)
    for name, val in (choices or {}).items():
        env_params["choice:" + name] = val
    cur = dict(state)
    outs: list[SymOutput] = []
    guard = z3.And(in_states(row, state), to_z3(row.guard, SymEnv(sizes, state, env_params)))
    constraints = []
    for step in row.steps:
        env = SymEnv(sizes, cur, env_params)
        _declare_choices(step, env, sizes, constraints)
        if isinstance(step, Set_):
            new = {k: to_z3(t, env) for k, t in step.updates.items()}
            cur.update(new)
        else:
            outs.extend(_outputs(step, env, sizes))
    if row.target is not None:
        cur["state"] = z3.IntVal(STATES.index(row.target))
    return z3.And(guard, *constraints), cur, outs


def _declare_choices(step, env: SymEnv, sizes, constraints: list) -> None:
    """A choice is a fresh element of its set (NONE when the set is empty)."""
    from .lang import choices_in, _Sym
    terms = list(step.updates.values()) if isinstance(step, Set_) else [
        t for t in (step.member, step.duration, step.over, step.when, *step.fields.values()) if isinstance(t, Term)]
    for t in terms:
        for name, ch in choices_in(t).items():
            key = "choice:" + name
            if key in env.params:
                continue
            v = z3.Int(f"choice_{name}")
            env.params[key] = v
            s = to_z3(ch.args[0], env)
            sym = _Sym(env)
            dom = ch.type.name
            constraints.append(z3.If(s == 0, v == NONE, sym.elem_in(v, s, dom)))


def _outputs(o: Out, env: SymEnv, sizes) -> list[SymOutput]:
    from .lang import _Sym
    res = []

    def one(bound: dict, cond):
        sym = _Sym(env)
        fields = {k: (v if v is ECHO or not isinstance(v, Term) else sym.go(v, bound)) for k, v in o.fields.items()}
        member = sym.go(o.member, bound) if isinstance(o.member, Term) else None
        when = sym.go(o.when, bound) if isinstance(o.when, Term) else z3.BoolVal(True)
        return SymOutput(o.kind, o.api, z3.And(cond, when), member, fields, o.timer)
    if o.over is None:
        res.append(one({}, z3.BoolVal(True)))
    else:
        sym = _Sym(env)
        over = sym.go(o.over, {})
        for i in range(sizes[o.var.type.name]):
            res.append(one({id(o.var): i}, sym.bit(over, i)))
    return res


def default_sizes() -> dict[str, int]:
    return dict(Bounds().sizes)
