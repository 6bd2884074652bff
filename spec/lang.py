"""The expression language the table is written in: its types and terms.

A term is a small immutable tree.  Every row's guard, effects and response
fields, the closed world's actions and the invariants are terms, built with
the constructors here and Python's operators, so a guard reads like the
protocol: ``(state == PR) & member.in_(members)``.  Because ``==`` builds a
term, code that handles terms must never compare them with ``==``; it uses
``is``.

This module says what a term is, not what it means, and imports none of
its meanings.  Each term has four, each in a module of its own:

* ``concrete.py``: ``compile_term`` turns a term, once, into a Python
  closure over a flat state tuple (the runtime and the explicit checker
  run these);
* ``symbolic.py``: ``to_z3`` turns it into a Z3 expression for a world of
  fixed domain sizes (lint, bounded model checking, induction);
* ``unbounded.py``: Z3 over uninterpreted sorts, the same term for every
  number of members at once (the proofs for any N);
* ``checkers/tla/export.py``: TLA+ text, for TLC and a reader of the spec.

(``show`` below prints a term as the documents write it: a reading, not a
meaning.)  All four agree on the values a term denotes, fixed here: a set over a finite
domain is an int bitmask, a map keyed by a domain a tuple indexed by the
element, a record a tuple in field order, a domain element or enum value a
small int, an absent domain element ``NONE`` (-1), and a map looked up with
an absent key gives ``default_of`` its value type.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

NONE = -1  # the value of an absent domain element


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


def Record(t: Type, **fields) -> Term:
    """A record of type t, one term per field (the closed world writes its log's record with it)."""
    if t.kind != "record" or set(fields) != set(t.values):
        raise LangError(f"{t!r} needs exactly the fields {', '.join(t.values)}")
    return Term("record", tuple(lift(fields[n], ft) for n, ft in zip(t.values, t.args)), t)


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
    """The choices a term makes, by name (kept per term: a term never changes, and the
    readings ask this of the same terms for every row they read)."""
    got = _CHOICES.get(id(t))
    if got is None or got[0] is not t:
        got = _CHOICES[id(t)] = (t, {n.data: n for n in walk(t) if n.op == "choose"})
    return got[1]


_CHOICES: dict[int, tuple] = {}


_INFIX = {"and": " ∧ ", "or": " ∨ ", "eq": " = ", "lt": " < ", "le": " ≤ ",
          "add": " + ", "sub": " − ", "union": " ∪ ", "inter": " ∩ ", "diff": " \\ "}


def show(t: Term, names: dict | None = None, params: dict | None = None) -> str:
    """A readable rendering of a term (used in docs and lint messages).

    `params` renames parameters (docs show Kafka's names: `group.max.size`,
    `request.member_id`); a name written as an equation (`request.member_id = ""`)
    is shown negated as an inequation."""
    names = {} if names is None else names
    params = {} if params is None else params

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
            return params.get(n.data, "p." + n.data)
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
            if a.op == "param" and " = " in params.get(a.data, ""):
                return params[a.data].replace(" = ", " ≠ ")
            if a.op == "is_empty":
                return f"{go(a.args[0])} ≠ ∅"
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
        if op == "record":
            return "⟨" + ", ".join(f"{k}: {go(v)}" for k, v in zip(n.type.values, n.args)) + "⟩"
        return f"{op}(" + ", ".join(go(a) for a in n.args) + ")"

    return go(t)


def default_of(t: Type):
    """The value a map lookup with an absent key gives (and a variable's neutral value)."""
    if t.kind == "bool":
        return False
    if t.kind == "dom":
        return NONE
    return 0
