"""The TLA+ meaning of terms: each term printed as a TLA+ expression.

A third interpreter beside ``concrete.py`` and ``symbolic.py``: the same
tree, read as text.  Values are written as TLA+ writes them: a set over a
finite domain is a set of elements, a map a function over its domain, a
record a record, an enum value a string ("Stable"), a domain element an
integer (clients are TLC model values, so that TLC may permute them), and
the absent element ``None`` (the module defines ``None == -1``).  The
language's two partial operations are total helpers of the module: a map
looked up with an absent key gives its value type's default (``Get``), and
an update at an absent key changes nothing (``Put``); where the printer
can see that a key is present (a bound variable, a parameter the caller
declares present, a constant) it writes the plain ``f[k]`` and
``[f EXCEPT ![k] = v]``.

The closed world that strings these expressions into a TLA+ module is
``checkers/tla/export.py``; this module knows terms only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .concrete import iter_bits
from .kafka import ERRORS
from .lang import NONE, Term, Type, default_of

# each finite domain's TLA+ set (a constant of the module)
DOMAIN_SETS = {"Member": "Members", "Instance": "Instances", "Partition": "Partitions", "Protocol": "Protocols",
               "ProtoList": "ProtoLists", "ProtocolType": "ProtocolTypes", "Client": "Clients"}
# the helper operators every module that prints terms defines (the language's partial operations made total)
# (each with its Apalache type: a domain's elements, None among them, are integers)
HELPERS = r"""\* @type: Int;
None == -1  \* the absent element of every domain

\* A map looked up with an absent key gives the default d; an update at an absent key changes nothing.
\* @type: (a -> b, a, b) => b;
Get(f, k, d) == IF k \in DOMAIN f THEN f[k] ELSE d
\* @type: (a -> b, a, b) => (a -> b);
Put(f, k, v) == IF k \in DOMAIN f THEN [f EXCEPT ![k] = v] ELSE f
\* @type: (Int) => Set(Int);
Single(e) == IF e = None THEN {} ELSE {e}
\* @type: (Set(Int)) => Int;
Lowest(S) == IF S = {} THEN None ELSE CHOOSE x \in S : \A y \in S : x <= y
\* @type: (Set(Int)) => Int;
MaxOf(S) == CHOOSE x \in S : \A y \in S : y <= x
\* a nondeterministic choice of one element of S (None when S is empty)
\* @type: (Set(Int)) => Set(Int);
Options(S) == IF S = {} THEN {None} ELSE S"""


@dataclass
class TlaEnv:
    """How the leaves of a term are written: state variables, parameters and choices; which
    parameters are known to be present (never None)."""
    var: Callable[[str], str]
    param: Callable[[str], str]
    choice: Callable[[str], str] = lambda name: name
    present: frozenset = frozenset()
    bound: dict = field(default_factory=dict)
    names: list = field(default_factory=lambda: [0])   # bound names made so far (shared: unique per module)
    elements: set = field(default_factory=set)    # the bound variables that range over a set's elements


def client_name(i: int) -> str:
    return f"c{i}"


def literal(value, t: Type, depth: int = 0) -> str:
    """A concrete value (the encoding lang.py fixes) as a TLA+ value of type t."""
    k = t.kind
    if k == "bool":
        return "TRUE" if value else "FALSE"
    if k == "int":
        return str(int(value))
    if k == "enum":
        return '"' + (ERRORS[value] if t.name == "Error" else t.values[value]) + '"'
    if k == "dom":
        return element(value, t.name)
    if k == "set":
        return "{" + ", ".join(element(i, t.key) for i in iter_bits(value)) + "}"
    if k == "map":
        vals = [literal(v, t.value, depth + 1) for v in value]
        if len(set(vals)) == 1:
            return f"[lit{depth} \\in {DOMAIN_SETS[t.key]} |-> {vals[0]}]"
        return "(" + " @@ ".join(f"{element(i, t.key)} :> {v}" for i, v in enumerate(vals)) + ")"
    if k == "record":
        return "[" + ", ".join(f"{f} |-> {literal(v, ft, depth)}" for f, ft, v in zip(t.values, t.args, value)) + "]"
    raise TypeError(f"no TLA+ literal for {t!r}")


def element(i: int, dom: str) -> str:
    if i == NONE:
        return "None"
    return client_name(i) if dom == "Client" else str(i)


def type_set(t: Type) -> str:
    """The TLA+ set of every value of type t (for TypeOK)."""
    k = t.kind
    if k == "bool":
        return "BOOLEAN"
    if k == "int":
        return "Int"
    if k == "enum":
        names = ERRORS if t.name == "Error" else t.values
        return "{" + ", ".join(f'"{v}"' for v in names) + "}"
    if k == "dom":
        return f"({DOMAIN_SETS[t.name]} \\cup {{None}})"
    if k == "set":
        return f"SUBSET {DOMAIN_SETS[t.key]}"
    if k == "map":
        return f"[{DOMAIN_SETS[t.key]} -> {type_set(t.value)}]"
    if k == "record":
        return "[" + ", ".join(f"{f}: {type_set(ft)}" for f, ft in zip(t.values, t.args)) + "]"
    raise TypeError(f"no TLA+ set for {t!r}")


def apalache_type(t: Type) -> str:
    """Apalache's type of a value of type t, as written in a `@type:` annotation: an enum value is a
    string, a domain element an integer (None is -1), a set of elements Set(Int), a map a
    function, a record a record."""
    k = t.kind
    if k == "bool":
        return "Bool"
    if k == "int":
        return "Int"
    if k == "enum":
        return "Str"
    if k == "dom":
        return "Int"
    if k == "set":
        return "Set(Int)"
    if k == "map":
        return f"(Int -> {apalache_type(t.value)})"
    if k == "record":
        return "{" + ", ".join(f"{f}: {apalache_type(ft)}" for f, ft in zip(t.values, t.args)) + "}"
    raise TypeError(f"no Apalache type for {t!r}")


def to_tla(t: Term, env: TlaEnv) -> str:
    """The TLA+ expression term t denotes in env."""
    return _Printer(env).go(t)


_BIN = {"and": r" /\ ", "or": r" \/ ", "eq": " = ", "lt": " < ", "le": " <= ", "add": " + ", "sub": " - ",
        "union": r" \cup ", "inter": r" \cap ", "diff": " \\ "}


class _Printer:
    def __init__(self, env: TlaEnv):
        self.env = env

    def fresh(self, hint: str) -> str:
        self.env.names[0] += 1
        return f"{hint}{self.env.names[0]}"

    def present(self, n: Term) -> bool:
        """Whether element term n is never None: a bound variable, a declared parameter, a constant."""
        if n.op == "bound":
            return id(n) in self.env.elements
        if n.op == "param":
            return n.data in self.env.present
        if n.op == "const":
            return n.data != NONE
        return False

    def bind(self, var: Term, text: str, body: Term, element: bool = True) -> str:
        """Print body with var written as text (an element of a set, unless a map's value)."""
        self.env.bound[id(var)] = text
        if element:
            self.env.elements.add(id(var))
        try:
            return self.go(body)
        finally:
            del self.env.bound[id(var)]
            self.env.elements.discard(id(var))

    def go(self, n: Term) -> str:
        op, a = n.op, n.args
        if op == "const":
            return literal(n.data, n.type)
        if op == "var":
            return self.env.var(n.data)
        if op == "param":
            return self.env.param(n.data)
        if op == "choose":
            return self.env.choice(n.data)
        if op == "bound":
            return self.env.bound[id(n)]
        if op == "named":
            return self.go(a[0])
        if op in ("and", "or"):
            parts = [self.go(x) for x in a]
            unit, zero = ("TRUE", "FALSE") if op == "and" else ("FALSE", "TRUE")
            if zero in parts:
                return zero
            parts = [p for p in parts if p != unit]
            if not parts:
                return unit
            return parts[0] if len(parts) == 1 else "(" + _BIN[op].join(parts) + ")"
        if op == "not":
            x = a[0]
            if x.op == "eq":
                l, r = self.go(x.args[0]), self.go(x.args[1])
                if x.args[1].op == "const" and x.args[1].data == NONE and self.present(x.args[0]):
                    return "TRUE"
                return f"({l} # {r})"
            if x.op == "in":
                return f"({self.go(x.args[0])} \\notin {self.go(x.args[1])})"
            inner = self.go(x)
            return {"TRUE": "FALSE", "FALSE": "TRUE"}.get(inner, f"~{inner}")
        if op == "eq" and a[1].op == "const" and a[1].data == NONE and self.present(a[0]):
            return "FALSE"
        if op in _BIN:
            return "(" + _BIN[op].join(self.go(x) for x in a) + ")"
        if op == "in":
            return f"({self.go(a[0])} \\in {self.go(a[1])})"
        if op == "get":
            m, k = self.go(a[0]), self.go(a[1])
            if self.present(a[1]):
                return f"{m}[{k}]"
            return f"Get({m}, {k}, {literal(default_of(n.type), n.type)})"
        if op == "put":
            m, k, v = (self.go(x) for x in a)
            if self.present(a[1]):
                return f"[{m} EXCEPT ![{k}] = {v}]"
            return f"Put({m}, {k}, {v})"
        if op == "put_all":
            m, keys = self.go(a[0]), self.go(a[1])
            k = self.fresh("k")
            return f"[{k} \\in DOMAIN {m} |-> IF {k} \\in {keys} THEN {self.bind(n.data, k, a[2])} ELSE {m}[{k}]]"
        if op == "fill":
            m, v = self.go(a[0]), self.go(a[1])
            k = self.fresh("k")
            return f"[{k} \\in DOMAIN {m} |-> {v}]"
        if op == "keys_where":
            m = self.go(a[0])
            k = self.fresh("k")
            return f"{{{k} \\in DOMAIN {m} : {self.bind(n.data, f'{m}[{k}]', a[1], element=False)}}}"
        if op == "ite":
            c = self.go(a[0])
            if c == "TRUE":
                return self.go(a[1])
            if c == "FALSE":
                return self.go(a[2])
            return f"(IF {c} THEN {self.go(a[1])} ELSE {self.go(a[2])})"
        if op == "singleton":
            e = self.go(a[0])
            return f"{{{e}}}" if self.present(a[0]) else f"Single({e})"
        if op == "is_empty":
            return f"({self.go(a[0])} = {{}})"
        if op == "count":
            return f"Cardinality({self.go(a[0])})"
        if op in ("forall", "exists", "filter", "maxover", "bigunion"):
            s = self.go(a[0])
            x = self.fresh("x")
            body = self.bind(n.data, x, a[1])
            if op == "forall":
                return f"(\\A {x} \\in {s} : {body})"
            if op == "exists":
                return f"(\\E {x} \\in {s} : {body})"
            if op == "filter":
                return f"{{{x} \\in {s} : {body}}}"
            if op == "maxover":
                return f"MaxOf({{{body} : {x} \\in {s}}} \\cup {{{self.go(a[2])}}})"
            return f"UNION {{{body} : {x} \\in {s}}}"
        if op == "apply":
            return f"{self.go(a[0])}[" + ", ".join(self.go(x) for x in a[1:]) + "]"
        if op == "lowest":
            return f"Lowest({self.go(a[0])})"
        if op == "field":
            return f"{self.go(a[0])}.{a[0].type.values[n.data]}"
        if op == "record":
            return "[" + ", ".join(f"{f} |-> {self.go(x)}" for f, x in zip(n.type.values, a)) + "]"
        raise TypeError(f"no TLA+ reading of {op}")
