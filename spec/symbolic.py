"""The symbolic meaning of terms and rows: Z3 over fixed domain sizes.

Terms: ``to_z3(t, env)`` turns a term into a Z3 expression for a world of
fixed domain sizes: a set is a bit-vector, a map a Python list of Z3 terms
(one per element), a record a tuple, an element or enum an Int, and a
quantifier over a set expands into a finite conjunction, so every query
stays quantifier-free.

Rows: ``row_relation(row, state, params)`` gives a row's guard, the state
after it (its steps applied in order, symbolically) and its outputs.  The
lint, the BMC and the induction checks all build on these, and a test holds
them to the concrete interpretation (``concrete.py``) on many states.
Both parts live here, apart from the terms, so that only what reasons in Z3
imports it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import z3

from .lang import NONE, LangError, Term, Type, choices_in, default_of
from .rows import ECHO, Out, Row, Set_
from .schema import PARAM_TYPES, STATE_VARS, STATES, Bounds
from .z3_fast import conj, disj, eq, ite, neg


# -- terms ---------------------------------------------------------------------

LEAVES = ("var", "param", "choose", "bound")


def leaf(n: Term, state: dict, params: dict, bound: dict):
    """The value of a variable, parameter, choice or bound variable (LEAVES): every Z3 reading of
    the terms (fixed sizes here, unbounded sorts in unbounded.py) looks them up alike."""
    if n.op == "var":
        return state[n.data]
    if n.op == "param":
        return params[n.data]
    if n.op == "choose":
        return params["choice:" + n.data]
    return bound[id(n)]


class SymEnv:
    """Z3 values of state variables, parameters and choices, for fixed domain sizes."""

    def __init__(self, sizes: dict[str, int], state: dict[str, Any], params: dict[str, Any]):
        self.sizes = sizes
        self.state = state
        self.params = params


def z3_sort(t: Type, sizes: dict[str, int]):
    if t.kind == "bool":
        return z3.BoolSort()
    if t.kind in ("int", "enum", "dom"):
        return z3.IntSort()
    if t.kind == "set":
        return z3.BitVecSort(max(1, sizes[t.key]))
    raise LangError(f"no single Z3 sort for {t!r}")


def fresh(name: str, t: Type, sizes: dict[str, int]):
    """A fresh symbolic value of type t (a list of them for a map, a tuple for a record)."""
    if t.kind == "record":
        return tuple(fresh(f"{name}.{f}", ft, sizes) for f, ft in zip(t.values, t.args))
    if t.kind == "map":
        return [fresh(f"{name}[{i}]", t.value, sizes) for i in range(sizes[t.key])]
    if t.kind == "fun":
        return z3.Function(name, *[z3_sort(a, sizes) for a in t.args], z3_sort(t.value, sizes))
    return z3.Const(name, z3_sort(t, sizes))


def well_formed(value, t: Type, sizes: dict[str, int]) -> list:
    """Range constraints that make a symbolic value a value of type t."""
    if t.kind == "record":
        return [c for v, ft in zip(value, t.args) for c in well_formed(v, ft, sizes)]
    if t.kind == "map":
        return [c for v in value for c in well_formed(v, t.value, sizes)]
    if t.kind == "enum":
        return [value >= 0, value < len(t.values)]
    if t.kind == "dom":
        return [value >= NONE, value < sizes[t.name]]
    return []


def concrete_to_z3(value, t: Type, sizes: dict[str, int]):
    """A concrete value as a Z3 value (used to compare both interpretations)."""
    if t.kind == "record":
        return tuple(concrete_to_z3(v, ft, sizes) for v, ft in zip(value, t.args))
    if t.kind == "map":
        return [concrete_to_z3(v, t.value, sizes) for v in value]
    if t.kind == "bool":
        return z3.BoolVal(bool(value))
    if t.kind in ("int", "enum", "dom"):
        return z3.IntVal(int(value))
    if t.kind == "set":
        return z3.BitVecVal(value, max(1, sizes[t.key]))
    raise LangError(f"no Z3 value for {t!r}")


def to_z3(t: Term, env: SymEnv):
    """The Z3 meaning of term t in env."""
    return _Sym(env).go(t, {})


class _Sym:
    def __init__(self, env: SymEnv):
        self.env = env

    def bit(self, s, i):
        return z3.Extract(i, i, s) == 1

    def elem_in(self, e, s, dom: str):
        n = self.env.sizes[dom]
        if isinstance(e, int):
            return self.bit(s, e) if 0 <= e < n else z3.BoolVal(False)
        return z3.Or([z3.And(e == i, self.bit(s, i)) for i in range(n)]) if n else z3.BoolVal(False)

    def width(self, dom):
        return max(1, self.env.sizes[dom])

    def go(self, n: Term, bound: dict):  # noqa: C901 — one case per operator
        op, env = n.op, self.env
        if op == "const":
            return concrete_to_z3(n.data, n.type, env.sizes)
        if op in LEAVES:
            v = leaf(n, env.state, env.params, bound)
            return z3.IntVal(v) if op == "bound" and isinstance(v, int) else v
        if op in ("forall", "exists", "filter", "maxover", "bigunion", "put_all"):
            return self.binder(n, bound)
        if op == "keys_where":
            m = self.go(n.args[0], bound)
            w = self.width(n.type.key)
            return _sum_bits([(self.go(n.args[1], {**bound, id(n.data): v}), i) for i, v in enumerate(m)], w)
        a = [self.go(x, bound) for x in n.args]
        scalar = SCALAR_OPS.get(op)
        if scalar is not None:
            return scalar(a)
        if op == "union":
            return a[0] | a[1]
        if op == "inter":
            return a[0] & a[1]
        if op == "diff":
            return a[0] & ~a[1]
        if op == "in":
            return self.elem_in(a[0], a[1], n.args[1].type.key)
        if op == "singleton":
            dom = n.type.key
            w, size = self.width(dom), env.sizes[dom]
            e = a[0]
            return _sum_bits([(e == i, i) for i in range(size)], w)
        if op == "is_empty":
            return a[0] == 0
        if op == "count":
            dom = n.args[0].type.key
            return z3.Sum([z3.If(self.bit(a[0], i), 1, 0) for i in range(env.sizes[dom])] or [z3.IntVal(0)])
        if op == "get":
            m, k = a
            out = _default(n.type, env.sizes)
            for i in range(len(m)):
                out = _ite(k == i, m[i], out)
            return out
        if op == "fill":
            m, v = a
            return [v for _ in m]
        if op == "named":
            return a[0]
        if op == "field":
            return a[0][n.data]
        if op == "record":
            return tuple(a)
        if op == "put":
            m, k, v = a
            return [_ite(k == i, v, m[i]) for i in range(len(m))]
        if op == "apply":
            fn, *args = a
            return fn(*args)
        if op == "lowest":
            dom = n.args[0].type.key
            out = z3.IntVal(NONE)
            for i in reversed(range(env.sizes[dom])):
                out = z3.If(self.bit(a[0], i), z3.IntVal(i), out)
            return out
        raise LangError(f"no symbolic meaning for operator {op}")

    def binder(self, n: Term, bound: dict):
        op = n.op
        dom = n.data.type.name
        size = self.env.sizes[dom]
        if op == "put_all":
            m = self.go(n.args[0], bound)
            keys = self.go(n.args[1], bound)
            out = []
            for i in range(size):
                body = self.go(n.args[2], {**bound, id(n.data): i})
                out.append(_ite(self.bit(keys, i), body, m[i]))
            return out
        s = self.go(n.args[0], bound)
        bodies = [(self.bit(s, i), self.go(n.args[1], {**bound, id(n.data): i})) for i in range(size)]
        if op == "forall":
            return z3.And([z3.Implies(c, x) for c, x in bodies]) if bodies else z3.BoolVal(True)
        if op == "exists":
            return z3.Or([z3.And(c, x) for c, x in bodies]) if bodies else z3.BoolVal(False)
        if op == "filter":
            return _sum_bits([(z3.And(c, x), i) for i, (c, x) in enumerate(bodies)], self.width(dom))
        if op == "maxover":
            acc = self.go(n.args[2], bound)
            for c, x in bodies:
                acc = z3.If(z3.And(c, x > acc), x, acc)
            return acc
        if op == "bigunion":
            w = self.width(n.type.key)
            acc = z3.BitVecVal(0, w)
            for c, x in bodies:
                acc = acc | z3.If(c, x, z3.BitVecVal(0, w))
            return acc
        raise LangError(op)


# Operators both Z3 readings (fixed sizes here, unbounded in unbounded.py) read alike.
SCALAR_OPS = {
    "and": lambda a: conj(a) if _all_z3(a) else z3.And(a), "or": lambda a: disj(a) if _all_z3(a) else z3.Or(a),
    "not": lambda a: neg(a[0]) if _all_z3(a) else z3.Not(a[0]),
    "ite": lambda a: _ite(a[0], a[1], a[2]), "eq": lambda a: _eq(a[0], a[1]),
    "lt": lambda a: a[0] < a[1], "le": lambda a: a[0] <= a[1],
    "add": lambda a: a[0] + a[1], "sub": lambda a: a[0] - a[1],
}


def _sum_bits(conds_bits, width):
    acc = z3.BitVecVal(0, width)
    for c, i in conds_bits:
        acc = acc | z3.If(c, z3.BitVecVal(1 << i, width), z3.BitVecVal(0, width))
    return acc


def _default(t: Type, sizes: dict):
    """What a lookup with an absent key gives (default_of), as a Z3 value; of a map type, a map
    of defaults (default_of cannot know a domain's size)."""
    if t.kind == "map":
        return [_default(t.value, sizes) for _ in range(sizes[t.key])]
    return concrete_to_z3(default_of(t), t, sizes)


def _all_z3(a) -> bool:
    """Every one of `a` a Z3 term (not a Python value z3py would convert): the fast builders apply."""
    return all(isinstance(x, z3.ExprRef) for x in a)


def _ite(c, x, y):
    if isinstance(x, tuple):
        return tuple(_ite(c, xi, yi) for xi, yi in zip(x, y))
    if isinstance(x, list):
        return [_ite(c, xi, yi) for xi, yi in zip(x, y)]
    return ite(c, x, y) if _all_z3((c, x, y)) and x.sort_kind() == y.sort_kind() else z3.If(c, x, y)


def _eq(x, y):
    if isinstance(x, tuple):
        return z3.And([_eq(xi, yi) for xi, yi in zip(x, y)]) if x else z3.BoolVal(True)
    if isinstance(x, list):
        return z3.And([_eq(xi, yi) for xi, yi in zip(x, y)]) if x else z3.BoolVal(True)
    return eq(x, y) if _all_z3((x, y)) and x.sort_kind() == y.sort_kind() else x == y


# -- rows ----------------------------------------------------------------------

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


class FixedMeaning:
    """How `row_relation` reads terms, choices and outputs for fixed domain sizes (the
    default; `unbounded.py` gives the same row its meaning over uninterpreted sorts)."""

    def __init__(self, sizes: dict[str, int], tag: str = ""):
        self.sizes, self.tag = sizes, tag     # tag: tells apart the choices of rows read together

    def term(self, t: Term, state: dict, params: dict):
        return to_z3(t, SymEnv(self.sizes, state, params))

    def choice(self, name: str, ch: Term, state: dict, params: dict):
        """A choice is a fresh element of its set (NONE when the set is empty)."""
        v = z3.Int(f"choice_{name}{self.tag}")
        env = SymEnv(self.sizes, state, params)
        s = to_z3(ch.args[0], env)
        return v, z3.If(s == 0, v == NONE, _Sym(env).elem_in(v, s, ch.type.name))

    def outputs(self, o: Out, state: dict, params: dict) -> list:
        return _outputs(o, SymEnv(self.sizes, state, params), self.sizes)


class Lazy(Mapping):
    """A state over `base` whose variables in `thunks` are read when first asked for: a query
    about a few variables after a row then builds only what those variables depend on."""

    def __init__(self, base: Mapping, thunks: dict[str, Callable[[], Any]]):
        self.base, self.thunks, self.done = base, thunks, {}

    def __getitem__(self, k):
        if k in self.thunks:
            if k not in self.done:
                self.done[k] = self.thunks[k]()
            return self.done[k]
        return self.base[k]

    def __iter__(self):
        yield from self.thunks
        yield from (k for k in self.base if k not in self.thunks)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def row_relation(row: Row, state: dict, params: dict, sizes: dict[str, int] | None, choices: dict | None = None,
                 meaning=None, lazy: bool = False):
    """(guard, post-state, outputs) of a row; choices are fresh variables unless given.
    `meaning` reads the terms (FixedMeaning(sizes) unless given).  `lazy`: the post-state is
    a `Lazy` mapping, each variable built when first read (the meaning's side facts and
    approximations then grow as it is)."""
    meaning = meaning or FixedMeaning(sizes)
    env_params = dict(params)
    for name, val in (choices or {}).items():
        env_params["choice:" + name] = val
    cur = dict(state)
    outs: list = []
    guard = z3.And(in_states(row, state), meaning.term(row.guard, state, env_params))
    constraints = []
    for step in row.steps:
        _declare_choices(step, meaning, cur, env_params, constraints)
        if isinstance(step, Set_) and lazy:
            cur = Lazy(cur, {k: (lambda t=t, pre=cur: meaning.term(t, pre, env_params))
                             for k, t in step.updates.items()})
        elif isinstance(step, Set_):
            new = {k: meaning.term(t, cur, env_params) for k, t in step.updates.items()}
            cur.update(new)
        else:
            outs.extend(meaning.outputs(step, cur, env_params))
    if row.target is not None:
        target = z3.IntVal(STATES.index(row.target))
        if lazy:
            cur = Lazy(cur, {"state": lambda: target})
        else:
            cur["state"] = target
    return z3.And(guard, *constraints), cur, outs


def _declare_choices(step, meaning, state: dict, params: dict, constraints: list) -> None:
    terms = list(step.updates.values()) if isinstance(step, Set_) else [
        t for t in (step.member, step.duration, step.over, step.when, *step.fields.values()) if isinstance(t, Term)]
    for t in terms:
        for name, ch in choices_in(t).items():
            key = "choice:" + name
            if key in params:
                continue
            params[key], c = meaning.choice(name, ch, state, params)
            constraints.append(c)


def _outputs(o: Out, env: SymEnv, sizes) -> list[SymOutput]:
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
