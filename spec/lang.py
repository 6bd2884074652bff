"""The expression language the table is written in.

A term is a small immutable tree.  Guards, effects and response fields of
every row are terms, and each term has exactly two meanings:

* concrete: ``compile_term(t)`` turns it, once, into a Python closure
  ``f(s, p, b)`` over a flat state tuple ``s``, a parameter tuple ``p`` and
  a tuple ``b`` of values bound by quantifiers.  Sets over a finite domain
  are int bitmasks, maps keyed by a domain are tuples indexed by the
  element, domain elements and enum values are small ints, and an absent
  domain element is -1.  Nothing in a closure depends on the size of a
  domain, so the runtime can grow its member slots while the checkers run
  with fixed bounds.
* symbolic: ``to_z3(t, env)`` turns it into a Z3 expression for a world
  with fixed domain sizes: a set is a bit-vector, a map a Python list of
  Z3 terms (one per element), an element or enum an Int, and quantifiers
  over a set expand into a finite conjunction, so every query stays
  quantifier-free.

Operators are overloaded so a guard reads like the protocol:
``(state == PR) & member.in_(members)``.  Because ``==`` builds a term,
terms must never be compared with ``==`` by the code that handles them;
use ``is``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import z3

NONE = -1  # concrete value of an absent domain element


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Type:
    kind: str                       # bool int enum dom set map fun
    name: str = ""                  # enum or domain name
    values: tuple = ()              # enum value names
    key: str = ""                   # map key domain / set element domain
    value: "Type | None" = None     # map value type; fun result type
    args: tuple = ()                # fun argument types

    def __repr__(self) -> str:
        if self.kind in ("bool", "int"):
            return self.kind
        if self.kind in ("enum", "dom"):
            return self.name
        if self.kind == "set":
            return f"Set[{self.key}]"
        if self.kind == "map":
            return f"Map[{self.key}, {self.value!r}]"
        if self.kind == "record":
            return self.name
        return f"Fun[{', '.join(map(repr, self.args))} -> {self.value!r}]"


BOOL = Type("bool")
INT = Type("int")


def Enum(name: str, *values: str) -> Type:
    return Type("enum", name=name, values=tuple(values))


def Dom(name: str) -> Type:
    """An element of the finite domain `name`, or NONE."""
    return Type("dom", name=name)


def SetOf(dom: str) -> Type:
    return Type("set", key=dom)


def MapOf(dom: str, value: Type) -> Type:
    return Type("map", key=dom, value=value)


def RecordOf(name: str, **fields: Type) -> Type:
    """A record: named fields of their own types (concretely a tuple in field order)."""
    return Type("record", name=name, values=tuple(fields), args=tuple(fields.values()))


def Fun(result: Type, *args: Type) -> Type:
    """A function supplied as a parameter (an interning table of the driver)."""
    return Type("fun", value=result, args=tuple(args))


class LangError(TypeError):
    """A term was built with operands of the wrong type."""


# --------------------------------------------------------------------------
# Terms
# --------------------------------------------------------------------------

class Term:
    __slots__ = ("op", "args", "type", "data")
    __hash__ = object.__hash__

    def __init__(self, op: str, args: tuple, type: Type, data: Any = None):
        self.op, self.args, self.type, self.data = op, args, type, data

    # -- boolean connectives (also set union / intersection) --
    def __and__(self, other):
        other = lift(other, self.type)
        if self.type.kind == "set":
            return _same("inter", self, other)
        return And(self, other)

    def __or__(self, other):
        other = lift(other, self.type)
        if self.type.kind == "set":
            return _same("union", self, other)
        return Or(self, other)

    def __invert__(self):
        return Not(self)

    def __sub__(self, other):
        other = lift(other, self.type)
        if self.type.kind == "set":
            return _same("diff", self, other)
        return _arith("sub", self, other)

    def __add__(self, other):
        return _arith("add", self, lift(other, INT))

    def __radd__(self, other):
        return _arith("add", lift(other, INT), self)

    def __rsub__(self, other):
        return _arith("sub", lift(other, INT), self)

    # -- comparisons --
    def __eq__(self, other):  # type: ignore[override]
        return _cmp("eq", self, lift(other, self.type))

    def __ne__(self, other):  # type: ignore[override]
        return Not(_cmp("eq", self, lift(other, self.type)))

    def __lt__(self, other):
        return _cmp("lt", self, lift(other, INT))

    def __le__(self, other):
        return _cmp("le", self, lift(other, INT))

    def __gt__(self, other):
        return _cmp("lt", lift(other, INT), self)

    def __ge__(self, other):
        return _cmp("le", lift(other, INT), self)

    def __bool__(self):
        raise LangError("a term has no truth value in Python; combine terms with & | ~")

    # -- sets and maps --
    def in_(self, s: "Term") -> "Term":
        """Membership of this element in set `s`."""
        if s.type.kind != "set" or self.type.kind != "dom" or self.type.name != s.type.key:
            raise LangError(f"{self!r} in {s!r}: element and set domains differ")
        return Term("in", (self, s), BOOL)

    def __getitem__(self, key) -> "Term":
        if self.type.kind == "record":
            if key not in self.type.values:
                raise LangError(f"{self.type.name} has no field {key!r}; fields: {', '.join(self.type.values)}")
            i = self.type.values.index(key)
            return Term("field", (self,), self.type.args[i], i)
        if self.type.kind != "map":
            raise LangError(f"{self!r} is not a map")
        key = lift(key, Dom(self.type.key))
        return Term("get", (self, key), self.type.value)

    def put(self, key, value) -> "Term":
        """The map with `key` mapped to `value`; unchanged when key is NONE."""
        key = lift(key, Dom(self.type.key))
        value = lift(value, self.type.value)
        return Term("put", (self, key, value), self.type)

    def put_all(self, keys: "Term", fn: Callable[["Term"], Any]) -> "Term":
        """The map with every key in set `keys` mapped to fn(key)."""
        if keys.type.kind != "set" or keys.type.key != self.type.key:
            raise LangError("put_all keys must be a set over the map's domain")
        var, body = _bind(Dom(self.type.key), fn)
        return Term("put_all", (self, keys, lift(body, self.type.value)), self.type, var)

    def fill(self, value) -> "Term":
        """The map with every entry set to `value`."""
        if self.type.kind != "map":
            raise LangError(f"{self!r} is not a map")
        return Term("fill", (self, lift(value, self.type.value)), self.type)

    def keys_where(self, fn: Callable[["Term"], Any]) -> "Term":
        """The set of keys whose value satisfies fn (iterates the map's own keys)."""
        if self.type.kind != "map":
            raise LangError(f"{self!r} is not a map")
        var, body = _bind(self.type.value, fn)
        return Term("keys_where", (self, lift(body, BOOL)), SetOf(self.type.key), var)

    def with_(self, elem) -> "Term":
        """Set with `elem` added (unchanged when elem is NONE)."""
        return _same("union", self, singleton(lift(elem, Dom(self.type.key))))

    def without(self, elem) -> "Term":
        return _same("diff", self, singleton(lift(elem, Dom(self.type.key))))

    def is_empty(self) -> "Term":
        return Term("is_empty", (self,), BOOL)

    def count(self) -> "Term":
        return Term("count", (self,), INT)

    def subset_of(self, other: "Term") -> "Term":
        return (self - other).is_empty()

    def is_none(self) -> "Term":
        return _cmp("eq", self, Const(NONE, self.type))

    def is_some(self) -> "Term":
        return Not(self.is_none())

    def __repr__(self) -> str:
        return show(self)


def _bind(elem_type: Type, fn: Callable[[Term], Any]):
    """Create a fresh bound variable, apply fn, return (var, body)."""
    var = Term("bound", (), elem_type, data=[None])  # data[0]: de Bruijn slot, set at compile
    body = fn(var)
    return var, body


def lift(x, t: Type) -> Term:
    """Turn a Python literal into a constant of type t (terms pass through)."""
    if isinstance(x, Term):
        if not _compatible(x.type, t):
            raise LangError(f"expected {t!r}, got {x!r} of type {x.type!r}")
        return x
    if t.kind == "bool":
        return Const(bool(x), BOOL)
    if t.kind == "int":
        return Const(int(x), INT)
    if t.kind == "enum":
        if isinstance(x, str):
            if x not in t.values:
                raise LangError(f"{x!r} is not a value of {t.name}")
            return Const(t.values.index(x), t)
        return Const(int(x), t)
    if t.kind == "dom" and (x is None or (isinstance(x, int) and not isinstance(x, bool))):
        return Const(NONE if x is None else x, t)
    if t.kind == "set" and x == 0:
        return Const(0, t)
    raise LangError(f"cannot use {x!r} as {t!r}")


def _compatible(a: Type, b: Type) -> bool:
    if a == b:
        return True
    # enum and int never mix; everything else must match exactly
    return False


def _same(op: str, a: Term, b: Term) -> Term:
    if a.type != b.type:
        raise LangError(f"{op}: {a.type!r} vs {b.type!r}")
    return Term(op, (a, b), a.type)


def _arith(op: str, a: Term, b: Term) -> Term:
    if a.type.kind != "int" or b.type.kind != "int":
        raise LangError(f"{op} needs ints, got {a.type!r} and {b.type!r}")
    return Term(op, (a, b), INT)


def _cmp(op: str, a: Term, b: Term) -> Term:
    if op != "eq" and (a.type.kind != "int" or b.type.kind != "int"):
        raise LangError(f"{op} needs ints")
    if a.type != b.type:
        raise LangError(f"cannot compare {a.type!r} with {b.type!r}")
    return Term(op, (a, b), BOOL)


# -- constructors --------------------------------------------------------

def Const(value, t: Type) -> Term:
    return Term("const", (), t, value)


def TRUE() -> Term:
    return Const(True, BOOL)


def FALSE() -> Term:
    return Const(False, BOOL)


def Var(name: str, t: Type) -> Term:
    return Term("var", (), t, name)


def Param(name: str, t: Type) -> Term:
    return Term("param", (), t, name)


def And(*xs) -> Term:
    xs = tuple(lift(x, BOOL) for x in xs)
    if len(xs) == 1:
        return xs[0]
    return Term("and", xs, BOOL)


def Or(*xs) -> Term:
    xs = tuple(lift(x, BOOL) for x in xs)
    if len(xs) == 1:
        return xs[0]
    return Term("or", xs, BOOL)


def Not(x) -> Term:
    return Term("not", (lift(x, BOOL),), BOOL)


def Implies(a, b) -> Term:
    return Or(Not(a), b)


def If(c, a, b) -> Term:
    c = lift(c, BOOL)
    if isinstance(a, Term):
        t = a.type
    elif isinstance(b, Term):
        t = b.type
    else:
        raise LangError("If needs at least one term branch to know its type")
    return Term("ite", (c, lift(a, t), lift(b, t)), t)


def Min(a, b) -> Term:
    a, b = lift(a, INT), lift(b, INT)
    return If(a <= b, a, b)


def Max(a, b) -> Term:
    a, b = lift(a, INT), lift(b, INT)
    return If(a <= b, b, a)


def singleton(elem: Term) -> Term:
    if elem.type.kind != "dom":
        raise LangError("singleton needs a domain element")
    return Term("singleton", (elem,), SetOf(elem.type.name))


def empty(dom: str) -> Term:
    return Const(0, SetOf(dom))


def none(dom: str) -> Term:
    return Const(NONE, Dom(dom))


def ForAll(s: Term, fn: Callable[[Term], Any]) -> Term:
    var, body = _bind(Dom(s.type.key), fn)
    return Term("forall", (s, lift(body, BOOL)), BOOL, var)


def Exists(s: Term, fn: Callable[[Term], Any]) -> Term:
    var, body = _bind(Dom(s.type.key), fn)
    return Term("exists", (s, lift(body, BOOL)), BOOL, var)


def Filter(s: Term, fn: Callable[[Term], Any]) -> Term:
    """{x in s | fn(x)}."""
    var, body = _bind(Dom(s.type.key), fn)
    return Term("filter", (s, lift(body, BOOL)), s.type, var)


def Count(s: Term, fn: Callable[[Term], Any] | None = None) -> Term:
    """Number of elements of s (satisfying fn)."""
    return (Filter(s, fn) if fn else s).count()


def MaxOver(s: Term, fn: Callable[[Term], Any], default: int = 0) -> Term:
    """max(default, fn(x) for x in s)."""
    var, body = _bind(Dom(s.type.key), fn)
    return Term("maxover", (s, lift(body, INT), Const(default, INT)), INT, var)


def Union(s: Term, fn: Callable[[Term], Term]) -> Term:
    """The union over x in s of the set fn(x)."""
    var, body = _bind(Dom(s.type.key), fn)
    if body.type.kind != "set":
        raise LangError("Union body must be a set")
    return Term("bigunion", (s, body), body.type, var)


def Choose(name: str, s: Term) -> Term:
    """A nondeterministic choice of one element of s (NONE when s is empty).

    The concrete side enumerates every element; the symbolic side makes
    the choice a fresh variable constrained to s.
    """
    if s.type.kind != "set":
        raise LangError("Choose needs a set")
    return Term("choose", (s,), Dom(s.type.key), name)


def named(label: str, t: Term) -> Term:
    """The same term, shown in documents as `label` (Kafka's name for a derived notion)."""
    return Term("named", (t,), t.type, label)


def Apply(fn: Term, *args) -> Term:
    """Apply a function parameter (an interning table of the driver)."""
    if fn.type.kind != "fun":
        raise LangError(f"{fn!r} is not a function")
    args = tuple(lift(a, t) for a, t in zip(args, fn.type.args))
    return Term("apply", (fn,) + args, fn.type.value)


def Lowest(s: Term) -> Term:
    """The element of s with the smallest index (NONE if empty): a deterministic pick."""
    return Term("lowest", (s,), Dom(s.type.key))


# --------------------------------------------------------------------------
# Walking terms
# --------------------------------------------------------------------------

def walk(t: Term):
    """Every node of t, once, parents before children."""
    seen = set()
    stack = [t]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(reversed(n.args))


def choices_in(t: Term) -> dict[str, Term]:
    return {n.data: n for n in walk(t) if n.op == "choose"}


_INFIX = {"and": " ∧ ", "or": " ∨ ", "eq": " = ", "lt": " < ", "le": " ≤ ",
          "add": " + ", "sub": " − ", "union": " ∪ ", "inter": " ∩ ", "diff": " \\ "}


def show(t: Term, names: dict | None = None) -> str:
    """A readable rendering of a term (used in docs and lint messages)."""
    names = {} if names is None else names

    def bound_name(var):
        key = id(var)
        if key not in names:
            names[key] = "xyzuvw"[len(names) % 6] + ("" if len(names) < 6 else str(len(names) // 6))
        return names[key]

    def go(n: Term) -> str:
        op = n.op
        if op == "const":
            if n.type.kind == "enum":
                return n.type.values[n.data]
            if n.type.kind == "dom" and n.data == NONE:
                return "none"
            if n.type.kind == "set" and n.data == 0:
                return "∅"
            return repr(n.data)
        if op == "var":
            return n.data
        if op == "param":
            return "p." + n.data
        if op == "bound":
            return bound_name(n)
        if op == "choose":
            return f"choose {n.data} ∈ {go(n.args[0])}"
        if op in _INFIX:
            return "(" + _INFIX[op].join(go(a) for a in n.args) + ")"
        if op == "not":
            a = n.args[0]
            if a.op == "eq":
                return f"({go(a.args[0])} ≠ {go(a.args[1])})"
            if a.op == "in":
                return f"{go(a.args[0])} ∉ {go(a.args[1])}"
            return "¬" + go(a)
        if op == "in":
            return f"{go(n.args[0])} ∈ {go(n.args[1])}"
        if op == "get":
            return f"{go(n.args[0])}[{go(n.args[1])}]"
        if op == "put":
            return f"{go(n.args[0])}[{go(n.args[1])} ↦ {go(n.args[2])}]"
        if op == "put_all":
            v = bound_name(n.data)
            return f"{go(n.args[0])}[{v} ↦ {go(n.args[2])} for {v} ∈ {go(n.args[1])}]"
        if op == "ite":
            return f"(if {go(n.args[0])} then {go(n.args[1])} else {go(n.args[2])})"
        if op == "singleton":
            return "{" + go(n.args[0]) + "}"
        if op == "is_empty":
            return f"{go(n.args[0])} = ∅"
        if op == "count":
            return f"|{go(n.args[0])}|"
        if op == "keys_where":
            v = bound_name(n.data)
            return f"{{k | {go(n.args[0])}[k] = {v}, {go(n.args[1])}}}"
        if op in ("forall", "exists", "filter", "maxover", "bigunion"):
            v = bound_name(n.data)
            s, body = go(n.args[0]), go(n.args[1])
            return {"forall": f"∀{v} ∈ {s}: {body}", "exists": f"∃{v} ∈ {s}: {body}",
                    "filter": f"{{{v} ∈ {s} | {body}}}",
                    "maxover": f"max{v} ∈ {s}: {body}", "bigunion": f"⋃{v} ∈ {s}: {body}"}[op]
        if op == "apply":
            return f"{go(n.args[0])}(" + ", ".join(go(a) for a in n.args[1:]) + ")"
        if op == "lowest":
            return f"lowest {go(n.args[0])}"
        if op == "fill":
            return f"{go(n.args[0])}[* ↦ {go(n.args[1])}]"
        if op == "named":
            return n.data
        if op == "field":
            return f"{go(n.args[0])}.{n.args[0].type.values[n.data]}"
        return f"{op}(" + ", ".join(go(a) for a in n.args) + ")"

    return go(t)


# --------------------------------------------------------------------------
# Concrete interpretation: closures over (state tuple, param tuple, bound tuple)
# --------------------------------------------------------------------------

def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


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


def _put_all(m, keys, fn):
    out = list(m)
    for k in _bits(keys):
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


_BINDERS = ("forall", "exists", "filter", "maxover", "bigunion", "keys_where", "put_all")


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

    HELPERS = {"_bits": None, "_get": _get, "_in": _in, "_single": _single, "_lowest": _lowest,
               "_put": None, "_put_all": _put_all, "_bigor": _bigor, "NONE": NONE,
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
        ns = dict(self.HELPERS, _bits=_bits, _put=_put, **self.consts)
        return eval(f"lambda s, p, b: {expr}", ns)  # noqa: S307 - source generated from our own terms

    def free(self, n: Term) -> frozenset:
        got = self._free.get(id(n))
        if got is None:
            if n.op == "bound":
                got = frozenset((id(n),))
            else:
                got = frozenset().union(*(self.free(a) for a in n.args))
                if n.op in _BINDERS:
                    got -= {id(n.data)}
            self._free[id(n)] = got
        return got

    def costly(self, n: Term) -> bool:
        got = self._costly.get(id(n))
        if got is None:
            got = self._costly[id(n)] = n.op in _BINDERS or n.op == "apply" or any(self.costly(a) for a in n.args)
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
            loop = f"for {v} in _bits({over})"
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
                for k in _bits(keys(s, p, b)):
                    out[k] = body(s, p, b + (k,))
                return tuple(out)
            return put_all
        s_f = self.go(n.args[0], depth)
        body = self.go(n.args[1], depth + 1)
        if op == "forall":
            return lambda s, p, b: all(body(s, p, b + (k,)) for k in _bits(s_f(s, p, b)))
        if op == "exists":
            return lambda s, p, b: any(body(s, p, b + (k,)) for k in _bits(s_f(s, p, b)))
        if op == "filter":
            return lambda s, p, b: sum(1 << k for k in _bits(s_f(s, p, b)) if body(s, p, b + (k,)))
        if op == "maxover":
            d = self.go(n.args[2], depth)
            return lambda s, p, b: max([d(s, p, b)] + [body(s, p, b + (k,)) for k in _bits(s_f(s, p, b))])
        if op == "bigunion":
            def bigunion(s, p, b):
                acc = 0
                for k in _bits(s_f(s, p, b)):
                    acc |= body(s, p, b + (k,))
                return acc
            return bigunion
        raise LangError(op)


def default_of(t: Type):
    """The value a map lookup with an absent key gives (and a variable's neutral value)."""
    if t.kind == "bool":
        return False
    if t.kind == "dom":
        return NONE
    return 0


def _put(m: tuple, k: int, v):
    if k < 0:
        return m
    return m[:k] + (v,) + m[k + 1:]


# --------------------------------------------------------------------------
# Symbolic interpretation: Z3 over fixed domain sizes
# --------------------------------------------------------------------------

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
        if op == "var":
            return env.state[n.data]
        if op == "param":
            return env.params[n.data]
        if op == "choose":
            return env.params["choice:" + n.data]
        if op == "bound":
            v = bound[id(n)]
            return z3.IntVal(v) if isinstance(v, int) else v
        if op in ("forall", "exists", "filter", "maxover", "bigunion", "put_all"):
            return self.binder(n, bound)
        if op == "keys_where":
            m = self.go(n.args[0], bound)
            w = self.width(n.type.key)
            return _sum_bits([(self.go(n.args[1], {**bound, id(n.data): v}), i) for i, v in enumerate(m)], w)
        a = [self.go(x, bound) for x in n.args]
        if op == "and":
            return z3.And(a)
        if op == "or":
            return z3.Or(a)
        if op == "not":
            return z3.Not(a[0])
        if op == "ite":
            return _ite(a[0], a[1], a[2])
        if op == "eq":
            return _eq(a[0], a[1])
        if op == "lt":
            return a[0] < a[1]
        if op == "le":
            return a[0] <= a[1]
        if op == "add":
            return a[0] + a[1]
        if op == "sub":
            return a[0] - a[1]
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
            out = concrete_to_z3(default_of(n.type), n.type, env.sizes)
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


def _sum_bits(conds_bits, width):
    acc = z3.BitVecVal(0, width)
    for c, i in conds_bits:
        acc = acc | z3.If(c, z3.BitVecVal(1 << i, width), z3.BitVecVal(0, width))
    return acc


def _ite(c, x, y):
    if isinstance(x, tuple):
        return tuple(_ite(c, xi, yi) for xi, yi in zip(x, y))
    if isinstance(x, list):
        return [_ite(c, xi, yi) for xi, yi in zip(x, y)]
    return z3.If(c, x, y)


def _eq(x, y):
    if isinstance(x, tuple):
        return z3.And([_eq(xi, yi) for xi, yi in zip(x, y)]) if x else z3.BoolVal(True)
    if isinstance(x, list):
        return z3.And([_eq(xi, yi) for xi, yi in zip(x, y)]) if x else z3.BoolVal(True)
    return x == y


def iter_bits(mask: int) -> Iterable[int]:
    return _bits(mask)


def mask_of(elems: Sequence[int]) -> int:
    m = 0
    for e in elems:
        if e >= 0:
            m |= 1 << e
    return m
