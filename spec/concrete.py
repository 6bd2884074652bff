"""The concrete meaning of terms: Python closures over flat tuples.

``compile_term(t, layout)`` turns a term, once, into a function
``f(s, p, b)`` over a flat state tuple ``s``, a parameter tuple ``p`` and a
tuple ``b`` of values bound by quantifiers, with the values ``lang.py``
fixes (sets as int bitmasks, maps as tuples, elements as small ints, NONE
for absent).  Nothing in a closure depends on the size of a domain, so the
runtime can grow its member slots while the checkers run with fixed bounds.

It is apart from the terms because it is a compiler, read for speed (the
explicit checker's hot loop runs nothing else), while the terms are read
for what the rows say; and apart from Z3, so the runtime never loads Z3.
`compile_closure` is the plain reference interpretation the generated
source is tested against.  `iter_bits` and `mask_of` convert between
bitmasks and elements for the code that drives the closures.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

from .lang import NONE, LangError, Term, default_of


def iter_bits(mask: int) -> Iterable[int]:
    """The elements of a set's bitmask, lowest first (a small set's from a table: every quantifier of
    every row and every output over members walks one, so this is among the hottest calls)."""
    if 0 <= mask < _SMALL:
        return _BITS[mask]
    return _bits(mask)


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


_SMALL = 1 << 12
_BITS = [tuple(_bits(m)) for m in range(_SMALL)]


def mask_of(elems: Sequence[int]) -> int:
    """The bitmask of a set of elements (NONE ignored)."""
    m = 0
    for e in elems:
        if e >= 0:
            m |= 1 << e
    return m


class Layout:
    """Where each state variable and parameter lives in its tuple."""

    def __init__(self, state_index: dict[str, int], param_index: dict[str, int]):
        self.state_index = state_index
        self.param_index = param_index


def compile_term(t: Term, layout: Layout, depth: int = 0) -> Callable:
    """Compile term t once into a function f(s, p, b), generated as Python source.

    Each term becomes one flat Python expression (state slots, parameter
    slots, bit operations, generator expressions for quantifiers), so a
    guard costs one call instead of a call per node.  `compile_closure` is
    the reference interpretation it is tested against.
    """
    return _Source(layout).function(t, depth)


def compile_closure(t: Term, layout: Layout) -> Callable:
    """The reference concrete interpretation: a tree of closures, one per node."""
    return _Compiler(layout).go(t, 0)


def _get(m, k, d):
    return m[k] if k >= 0 else d


def _in(e, mask):
    return e >= 0 and (mask >> e) & 1 == 1


def _single(e):
    return 0 if e < 0 else 1 << e


def _lowest(m):
    return (m & -m).bit_length() - 1 if m else NONE


def _put(m: tuple, k: int, v):
    if k < 0:
        return m
    return m[:k] + (v,) + m[k + 1:]


def _put_all(m, keys, fn):
    out = list(m)
    for k in iter_bits(keys):
        out[k] = fn(k)
    return tuple(out)


def _bigor(values):
    acc = 0
    for v in values:
        acc |= v
    return acc


_UNSET = object()     # a memo slot not computed yet


def _memo_set(memo: list, i: int, value):
    memo[i] = value
    return value


BINDERS = ("forall", "exists", "filter", "maxover", "bigunion", "keys_where", "put_all")


class _Source:
    """Generates one Python expression per term.

    A subterm inside a quantifier's body that does not depend on the quantified
    variables (nor on those of the quantifiers around it) has one value per call:
    when it is costly (it holds a quantifier or applies a function) it is computed
    at most once per call, on first use, into a memo slot.  Without that, a term
    like the protocol vote's candidates, used inside a count inside a quantifier
    over the candidates, would be recomputed for every element of every loop: a
    JoinGroup's cost would grow with the cube of its number of protocols.
    """

    HELPERS = {"iter_bits": iter_bits, "_get": _get, "_in": _in, "_single": _single, "_lowest": _lowest,
               "_put": _put, "_put_all": _put_all, "_bigor": _bigor, "NONE": NONE,
               "_U": _UNSET, "_ms": _memo_set}

    def __init__(self, layout: Layout):
        self.layout = layout
        self.consts: dict[str, Any] = {}
        self.names: dict[int, str] = {}
        self.slots: dict[int, int] = {}          # id(term) -> memo slot
        self._free: dict[int, frozenset] = {}    # id(term) -> ids of the bound variables free in it
        self._costly: dict[int, bool] = {}

    def function(self, t: Term, depth: int = 0) -> Callable:
        self.depth = depth
        self.shared = self._shared(t)
        expr = self.go(t)
        if self.slots:
            expr = f"(lambda _m: {expr})([_U] * {len(self.slots)})"
        ns = dict(self.HELPERS, **self.consts)
        return eval(f"lambda s, p, b: {expr}", ns)  # noqa: S307 - source generated from our own terms

    def free(self, n: Term) -> frozenset:
        got = self._free.get(id(n))
        if got is None:
            if n.op == "bound":
                got = frozenset((id(n),))
            else:
                got = frozenset().union(*(self.free(a) for a in n.args))
                if n.op in BINDERS:
                    got -= {id(n.data)}
            self._free[id(n)] = got
        return got

    def costly(self, n: Term) -> bool:
        got = self._costly.get(id(n))
        if got is None:
            got = self._costly[id(n)] = n.op in BINDERS or n.op == "apply" or any(self.costly(a) for a in n.args)
        return got

    @staticmethod
    def _shared(t: Term) -> set:
        """The subterms used in more than one place of `t` (a term is a DAG: one object, many uses)."""
        parents: dict[int, int] = {}
        stack = [t]
        while stack:
            n = stack.pop()
            for a in n.args:
                k = parents.get(id(a), 0)
                parents[id(a)] = k + 1
                if not k:
                    stack.append(a)
        return {i for i, k in parents.items() if k > 1}

    def hoisted(self, n: Term) -> str | None:
        """A memo slot's read for `n` if it is costly and either inside a quantifier it does not
        depend on or used in more than one place."""
        if n.op in ("named", "bound", "const", "var", "param", "choose") or not self.costly(n):
            return None
        if not self.names and id(n) not in self.shared:
            return None
        if any(v in self.names for v in self.free(n)):
            return None
        i = self.slots.get(id(n))
        if i is None:
            i = self.slots[id(n)] = len(self.slots)
        saved, self.names = self.names, {}     # generated as at the top: nothing of the loops is in it
        try:
            expr = self.expr(n)
        finally:
            self.names = saved
        return f"(_m[{i}] if _m[{i}] is not _U else _ms(_m, {i}, {expr}))"

    def const(self, v) -> str:
        if isinstance(v, (bool, int)) and not isinstance(v, bool) or isinstance(v, bool):
            return repr(v)
        name = f"_k{len(self.consts)}"
        self.consts[name] = v
        return name

    def scoped(self, var: Term, *bodies: Term) -> tuple:
        """Generate `bodies` with `var` bound to a fresh name (restored afterwards: a term
        may occur inside itself, as the vote's candidates do)."""
        self.counter = getattr(self, "counter", 0) + 1
        name = f"_v{self.counter}"
        saved = self.names.get(id(var))
        self.names[id(var)] = name
        try:
            return (name,) + tuple(self.go(b) for b in bodies)
        finally:
            if saved is None:
                del self.names[id(var)]
            else:
                self.names[id(var)] = saved

    def go(self, n: Term) -> str:
        memo = self.hoisted(n)
        return memo if memo is not None else self.expr(n)

    def expr(self, n: Term) -> str:  # noqa: C901 - one case per operator
        op, a = n.op, n.args
        g = self.go
        if op == "const":
            return self.const(n.data)
        if op == "var":
            return f"s[{self.layout.state_index[n.data]}]"
        if op in ("param", "choose"):
            key = n.data if op == "param" else "choice:" + n.data
            return f"p[{self.layout.param_index[key]}]"
        if op == "bound":
            name = self.names.get(id(n))
            return name if name is not None else f"b[{n.data[0]}]"
        if op == "named":
            return g(a[0])
        if op == "and":
            return "(" + " and ".join(g(x) for x in a) + ")"
        if op == "or":
            return "(" + " or ".join(g(x) for x in a) + ")"
        if op == "not":
            return f"(not {g(a[0])})"
        if op == "ite":
            return f"({g(a[1])} if {g(a[0])} else {g(a[2])})"
        simple = {"eq": "==", "lt": "<", "le": "<=", "add": "+", "sub": "-", "union": "|", "inter": "&"}
        if op in simple:
            return f"({g(a[0])} {simple[op]} {g(a[1])})"
        if op == "diff":
            return f"({g(a[0])} & ~{g(a[1])})"
        if op == "in":
            return f"_in({g(a[0])}, {g(a[1])})"
        if op == "singleton":
            return f"_single({g(a[0])})"
        if op == "is_empty":
            return f"({g(a[0])} == 0)"
        if op == "count":
            return f"({g(a[0])}).bit_count()"
        if op == "get":
            return f"_get({g(a[0])}, {g(a[1])}, {self.const(default_of(n.type))})"
        if op == "put":
            return f"_put({g(a[0])}, {g(a[1])}, {g(a[2])})"
        if op == "fill":
            return f"(({g(a[1])},) * len({g(a[0])}))"
        if op == "field":
            return f"{g(a[0])}[{n.data}]"
        if op == "record":
            return "(" + "".join(g(x) + ", " for x in a) + ")"
        if op == "apply":
            return f"{g(a[0])}(" + ", ".join(g(x) for x in a[1:]) + ")"
        if op == "lowest":
            return f"_lowest({g(a[0])})"
        if op == "keys_where":
            m = g(a[0])
            v, body = self.scoped(n.data, a[1])
            return f"sum(1 << {v}k for {v}k, {v} in enumerate({m}) if {body})"
        if op == "put_all":
            m, keys = g(a[0]), g(a[1])
            v, body = self.scoped(n.data, a[2])
            return f"_put_all({m}, {keys}, lambda {v}: {body})"
        if op in ("forall", "exists", "filter", "maxover", "bigunion"):
            over = g(a[0])
            v, body = self.scoped(n.data, a[1])
            loop = f"for {v} in iter_bits({over})"
            if op == "forall":
                return f"all({body} {loop})"
            if op == "exists":
                return f"any({body} {loop})"
            if op == "filter":
                return f"sum(1 << {v} {loop} if {body})"
            if op == "maxover":
                return f"max({g(a[2])}, max(({body} {loop}), default={g(a[2])}))"
            return f"_bigor({body} {loop})"
        raise LangError(f"no concrete meaning for operator {op}")


class _Compiler:
    def __init__(self, layout: Layout):
        self.layout = layout

    def go(self, n: Term, depth: int) -> Callable:  # noqa: C901 — one case per operator
        op, a = n.op, n.args
        if op == "const":
            v = n.data
            return lambda s, p, b: v
        if op == "var":
            i = self.layout.state_index[n.data]
            return lambda s, p, b: s[i]
        if op in ("param", "choose"):
            key = n.data if op == "param" else "choice:" + n.data
            i = self.layout.param_index[key]
            return lambda s, p, b: p[i]
        if op == "bound":
            k = n.data[0]
            return lambda s, p, b: b[k]
        if op in ("forall", "exists", "filter", "maxover", "bigunion", "put_all"):
            return self.binder(n, depth)
        if op == "keys_where":
            n.data.data[0] = depth
            m = self.go(a[0], depth)
            body = self.go(a[1], depth + 1)
            return lambda s, p, b: sum(1 << k for k, v in enumerate(m(s, p, b)) if body(s, p, b + (v,)))
        f = [self.go(x, depth) for x in a]
        if op == "and":
            if len(f) == 2:
                f0, f1 = f
                return lambda s, p, b: f0(s, p, b) and f1(s, p, b)
            return lambda s, p, b: all(g(s, p, b) for g in f)
        if op == "or":
            if len(f) == 2:
                f0, f1 = f
                return lambda s, p, b: f0(s, p, b) or f1(s, p, b)
            return lambda s, p, b: any(g(s, p, b) for g in f)
        if op == "not":
            (f0,) = f
            return lambda s, p, b: not f0(s, p, b)
        if op == "ite":
            c, x, y = f
            return lambda s, p, b: x(s, p, b) if c(s, p, b) else y(s, p, b)
        if op == "eq":
            x, y = f
            return lambda s, p, b: x(s, p, b) == y(s, p, b)
        if op == "lt":
            x, y = f
            return lambda s, p, b: x(s, p, b) < y(s, p, b)
        if op == "le":
            x, y = f
            return lambda s, p, b: x(s, p, b) <= y(s, p, b)
        if op == "add":
            x, y = f
            return lambda s, p, b: x(s, p, b) + y(s, p, b)
        if op == "sub":
            x, y = f
            return lambda s, p, b: x(s, p, b) - y(s, p, b)
        if op == "union":
            x, y = f
            return lambda s, p, b: x(s, p, b) | y(s, p, b)
        if op == "inter":
            x, y = f
            return lambda s, p, b: x(s, p, b) & y(s, p, b)
        if op == "diff":
            x, y = f
            return lambda s, p, b: x(s, p, b) & ~y(s, p, b)
        if op == "in":
            x, y = f
            return lambda s, p, b: (lambda e: e >= 0 and (y(s, p, b) >> e) & 1 == 1)(x(s, p, b))
        if op == "singleton":
            (x,) = f
            return lambda s, p, b: (lambda e: 0 if e < 0 else 1 << e)(x(s, p, b))
        if op == "is_empty":
            (x,) = f
            return lambda s, p, b: x(s, p, b) == 0
        if op == "count":
            (x,) = f
            return lambda s, p, b: x(s, p, b).bit_count()
        if op == "get":
            m, k = f
            d = default_of(n.type)
            return lambda s, p, b: (lambda key: m(s, p, b)[key] if key >= 0 else d)(k(s, p, b))
        if op == "fill":
            m, v = f
            return lambda s, p, b: (v(s, p, b),) * len(m(s, p, b))
        if op == "named":
            return f[0]
        if op == "field":
            (r,) = f
            i = n.data
            return lambda s, p, b: r(s, p, b)[i]
        if op == "record":
            return lambda s, p, b: tuple(g(s, p, b) for g in f)
        if op == "put":
            m, k, v = f
            return lambda s, p, b: _put(m(s, p, b), k(s, p, b), v(s, p, b))
        if op == "apply":
            fn, *args = f
            if len(args) == 1:
                (x,) = args
                return lambda s, p, b: fn(s, p, b)(x(s, p, b))
            return lambda s, p, b: fn(s, p, b)(*(g(s, p, b) for g in args))
        if op == "lowest":
            (x,) = f
            return lambda s, p, b: (lambda m: (m & -m).bit_length() - 1 if m else NONE)(x(s, p, b))
        raise LangError(f"no concrete meaning for operator {op}")

    def binder(self, n: Term, depth: int) -> Callable:
        n.data.data[0] = depth  # the bound variable (n.data) reads b[depth]
        op = n.op
        if op == "put_all":
            m = self.go(n.args[0], depth)
            keys = self.go(n.args[1], depth)
            body = self.go(n.args[2], depth + 1)

            def put_all(s, p, b):
                out = list(m(s, p, b))
                for k in iter_bits(keys(s, p, b)):
                    out[k] = body(s, p, b + (k,))
                return tuple(out)
            return put_all
        s_f = self.go(n.args[0], depth)
        body = self.go(n.args[1], depth + 1)
        if op == "forall":
            return lambda s, p, b: all(body(s, p, b + (k,)) for k in iter_bits(s_f(s, p, b)))
        if op == "exists":
            return lambda s, p, b: any(body(s, p, b + (k,)) for k in iter_bits(s_f(s, p, b)))
        if op == "filter":
            return lambda s, p, b: sum(1 << k for k in iter_bits(s_f(s, p, b)) if body(s, p, b + (k,)))
        if op == "maxover":
            d = self.go(n.args[2], depth)
            return lambda s, p, b: max([d(s, p, b)] + [body(s, p, b + (k,)) for k in iter_bits(s_f(s, p, b))])
        if op == "bigunion":
            def bigunion(s, p, b):
                acc = 0
                for k in iter_bits(s_f(s, p, b)):
                    acc |= body(s, p, b + (k,))
                return acc
            return bigunion
        raise LangError(op)
