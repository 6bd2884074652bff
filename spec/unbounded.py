"""The third meaning of terms: Z3 over uninterpreted sorts, for any number of elements.

``symbolic.py`` reads a term in a world of fixed domain sizes (sets as
bit-vectors, quantifiers unrolled).  Here the same terms mean the same
things for *every* size at once, so an induction proof in this reading
holds for any number of members, instance ids, partitions and protocols:

* each domain (Member, Instance, Partition, Protocol, ProtoList,
  ProtocolType) is an uninterpreted Z3 sort with one distinguished constant,
  its ``none`` (lang's NONE);
* a set is an array from its sort to Bool, a map an array from its key sort
  to its value (a record a tuple of them), and a well-formed value never
  holds ``none`` (a set) or maps it to the default (a map), as concretely
  ``none`` is no element (``well_formed``);
* quantifiers are Z3 quantifiers, filters and ``put_all`` Z3 lambdas;
* function parameters (``vote``, ``proto_names``) are uninterpreted
  functions, and a choice (``Choose``) a fresh constant constrained to its set.

Counting and maximum (``Count``, ``MaxOver``) and ``Lowest`` have no
decidable meaning over an uninterpreted sort.  They are over-approximated
soundly: an integer constant of each set for a count (related to the other
counts of a query by what finite sets obey: ``Sorts.cardinality``), an
uninterpreted function of the set for a lowest element, a fresh value for
a maximum (a fresh function of the bound variables in scope, for all three,
inside a binder), with what is surely known of it (a count of a set is >= 0
and 0 exactly when the set is empty; a maximum is at least its default; the
lowest element of a set is some element of it, none when it is empty).  Every
behaviour of the table is then among the behaviours of this reading, so a
property proved here holds; a counterexample found here may be one the
approximation made up, and ``Reading.approximated`` says whether one was
used.  Enums and ints are Z3 Ints, as in ``symbolic.py``.
"""
from __future__ import annotations

import itertools
from typing import Any

import z3

from .lang import NONE, LangError, Term, Type, default_of
from .schema import INSTANCE, MEMBER, PARAM_TYPES, PARTITION, PROTOCOL, PROTOLIST, PTYPE, STATE_VARS
from .symbolic import LEAVES, SCALAR_OPS, Lazy, leaf
from .z3_fast import conj, disj, eq, exists, forall, implies, ite, lam, neg, select, store

_TRUE = z3.BoolVal(True)

DOMAINS = (MEMBER, INSTANCE, PARTITION, PROTOCOL, PROTOLIST, PTYPE)


class Sorts:
    """One uninterpreted sort per domain, with its `none`."""

    def __init__(self, domains=DOMAINS):
        self.sort = {d: z3.DeclareSort(d) for d in domains}
        self.none = {d: z3.Const(f"none_{d}", s) for d, s in self.sort.items()}
        self._measures: dict = {}
        # each count of a set read outside a binder, (key, set, count, its facts): by its set's id,
        # and by the id of its first fact (which `cardinality` finds among a query's facts); what
        # finite cardinality says of two of them, made once a pair
        self._count_of: dict[int, tuple] = {}
        self._counted: dict[int, tuple] = {}
        self._pairs: dict[tuple[int, int], list] = {}

    def measure(self, op: str, key: str, result):
        """The uninterpreted function `op` (lowest) of the sets of `key`."""
        name = f"{op}_{key}"
        if name not in self._measures:
            self._measures[name] = z3.Function(name, z3.ArraySort(self.sort[key], z3.BoolSort()), result)
        return self._measures[name]

    def count(self, key: str, s) -> tuple:
        """The count of set `s` of `key` (a set read outside a binder): one integer constant for
        each set (the same set counted in two places, a guard and the chain's earlier guards, a
        lemma and a goal, has one count), with what is surely known of it: at least 0, and 0
        exactly when `s` is empty.  A constant, not a function applied to the set: a function of
        an array that is a lambda leaves Z3's array theory incomplete (every such query
        'unknown'); sets equal but written apart are told equal by `cardinality`."""
        got = self._count_of.get(s.get_id())
        if got is None:
            v = z3.Int(f"count_{key}!{len(self._count_of)}")
            e = z3.Const(f"count_{key}_e", self.sort[key])
            facts = [v >= 0, (v == 0) == forall(e, neg(select(s, e)))]
            got = self._count_of[s.get_id()] = self._counted[facts[0].get_id()] = (key, s, v, facts)
        return got[2], got[3]

    def cardinality(self, facts: list) -> list:
        """What the counts of finite sets say of every two counts among `facts` of sets of one
        sort (A, B): A ⊆ B gives |A| ≤ |B|, and |A| < |B| when B has an element A has not;
        B ⊆ A ∪ {d} gives |B| ≤ |A| + 1, and |B| ≤ |A| when A has an element B has not (a
        member id replaced), for `d` an element of B not in A if there is one (a fresh constant:
        each fact holds whichever element it is).  Without them two counts are any integers, and
        no lemma bounding a count (`group.max.size`) survives a join that adds one member.  True
        of every finite set, so still an over-approximation."""
        counts = [self._counted[f.get_id()] for f in facts if f.get_id() in self._counted]
        out: list = []
        for i, a in enumerate(counts):
            for b in counts[i + 1:]:
                if a[0] == b[0] and not a[2].eq(b[2]):
                    key = (a[2].get_id(), b[2].get_id())
                    if key not in self._pairs:
                        self._pairs[key] = self._pair(a[0], a[1], a[2], b[1], b[2])
                    out += self._pairs[key]
        return out

    def _pair(self, key: str, a, ca, b, cb) -> list:
        srt = self.sort[key]
        n = len(self._pairs)
        e = z3.Const(f"card_e{n}", srt)

        def subset(x, y, plus=None):
            """x ⊆ y (∪ {plus}), said of elements: no store over a lambda, which leaves Z3's
            array theory incomplete"""
            inside = select(y, e) if plus is None else disj([select(y, e), eq(e, plus)])
            return forall(e, implies(select(x, e), inside))

        # d[x, y]: an element of y not in x, if there is one
        d = {("a", "b"): z3.Const(f"card_d{n}ab", srt), ("b", "a"): z3.Const(f"card_d{n}ba", srt)}
        out = []
        for (x, cx, y, cy, tag) in ((a, ca, b, cb, ("a", "b")), (b, cb, a, ca, ("b", "a"))):
            new, gone = d[tag], d[tag[::-1]]
            x_in_y, y_in_x = subset(x, y), subset(y, x)
            y_in_x_and_new = subset(y, x, new)
            out += [disj([y_in_x, conj([select(y, new), neg(select(x, new))])]),
                    implies(x_in_y, cx <= cy),
                    implies(conj([x_in_y, neg(y_in_x)]), cx + 1 <= cy),
                    # y is x with at most one element added ...
                    implies(y_in_x_and_new, cy <= cx + 1),
                    # ... and, when one of x is not in y, as large as x at most (a replacement)
                    implies(conj([y_in_x_and_new, select(x, gone), neg(select(y, gone))]), cy <= cx)]
        return out

    def of(self, t: Type):
        if t.kind == "bool":
            return z3.BoolSort()
        if t.kind in ("int", "enum"):
            return z3.IntSort()
        if t.kind == "dom":
            return self.sort[t.name]
        if t.kind == "set":
            return z3.ArraySort(self.sort[t.key], z3.BoolSort())
        if t.kind == "map":
            return z3.ArraySort(self.sort[t.key], self.of(t.value))
        raise LangError(f"no single Z3 sort for {t!r}")

    def fresh(self, name: str, t: Type):
        """A fresh value of type t (a tuple for a record, a Z3 function for a function parameter)."""
        if t.kind == "record":
            return tuple(self.fresh(f"{name}.{f}", ft) for f, ft in zip(t.values, t.args))
        if t.kind == "fun":
            return z3.Function(name, *[self.of(a) for a in t.args], self.of(t.value))
        return z3.Const(name, self.of(t))

    def value(self, v, t: Type):
        """A concrete constant of lang's values (only those with a meaning for every size)."""
        if t.kind == "bool":
            return z3.BoolVal(bool(v))
        if t.kind in ("int", "enum"):
            return z3.IntVal(int(v))
        if t.kind == "dom":
            if v == NONE:
                return self.none[t.name]
            raise LangError(f"element {v} of {t.name} has no meaning for every size of {t.name}")
        if t.kind == "set":
            if v == 0:
                return z3.K(self.sort[t.key], z3.BoolVal(False))
            raise LangError(f"a non-empty constant set of {t.key} has no meaning for every size")
        raise LangError(f"no unbounded constant of {t!r}")

    def default(self, t: Type):
        return self.value(default_of(t), t)

    def well_formed(self, v, t: Type) -> list:
        """What makes v a value of t: enums in range, no set holds none, maps send none to the default."""
        if t.kind == "record":
            return [c for x, ft in zip(v, t.args) for c in self.well_formed(x, ft)]
        if t.kind == "enum":
            return [v >= 0, v < len(t.values)]
        if t.kind == "set":
            return [z3.Not(z3.Select(v, self.none[t.key]))]
        if t.kind == "map":
            out = [z3.Select(v, self.none[t.key]) == self.default(t.value)]
            if t.value.kind in ("set", "enum"):
                k = z3.Const(f"wf_{t.key}", self.sort[t.key])
                inner = self.well_formed(z3.Select(v, k), t.value)
                out.append(z3.ForAll([k], z3.And(inner)))
            return out
        return []


class Reading:
    """The unbounded meaning of terms for one state and one set of parameters.

    `approximated` collects the operators read by over-approximation (count, maxover,
    lowest); `side` the facts known of their fresh values, to be assumed with the term."""

    _ids = itertools.count()

    def __init__(self, sorts: Sorts, state: dict, params: dict, tag: str = ""):
        self.sorts, self.state, self.params = sorts, state, params
        self.tag = tag
        self.approximated: set[str] = set()
        self.side: list = []

    def fresh_name(self, what: str) -> str:
        return f"{what}{self.tag}!{next(self._ids)}"

    def term(self, t: Term):
        return self.go(t, {})

    def go(self, n: Term, bound: dict):  # noqa: C901 — one case per operator
        op, so = n.op, self.sorts
        if op == "const":
            return so.value(n.data, n.type)
        if op in LEAVES:
            return leaf(n, self.state, self.params, bound)
        if op in ("forall", "exists", "filter", "bigunion", "put_all"):
            return self.binder(n, bound)
        if op in ("count", "maxover", "lowest"):
            return self.approximate(n, bound)
        if op == "keys_where":
            m = self.go(n.args[0], bound)
            k = z3.Const(self.fresh_name("k"), so.sort[n.type.key])
            body = self.go(n.args[1], {**bound, id(n.data): select(m, k)})
            return lam(k, conj([neg(eq(k, so.none[n.type.key])), body]))
        a = [self.go(x, bound) for x in n.args]
        scalar = SCALAR_OPS.get(op)
        if scalar is not None:
            return scalar(a)
        if op in ("union", "inter", "diff"):
            # as lambdas, not Z3's set operators: those are array maps, which model-based
            # quantifier instantiation cannot evaluate ('incomplete quantifiers')
            k = z3.Const(self.fresh_name("e"), so.sort[n.type.key])
            x, y = select(a[0], k), select(a[1], k)
            return lam(k, disj([x, y]) if op == "union" else conj([x, y]) if op == "inter" else conj([x, neg(y)]))
        if op == "in":
            return select(a[1], a[0])
        if op == "singleton":
            dom = n.type.key
            empty = z3.K(so.sort[dom], z3.BoolVal(False))
            return ite(eq(a[0], so.none[dom]), empty, store(empty, a[0], _TRUE))
        if op == "is_empty":
            # no element in it, said of the elements: an equation with the empty array under a
            # quantifier (a subset or disjointness lemma) leaves model-based instantiation
            # 'incomplete'; about elements, the lemmas stay in a fragment Z3 decides
            e = z3.Const(self.fresh_name("e"), so.sort[n.args[0].type.key])
            return forall(e, neg(select(a[0], e)))
        if op == "get":
            return select(a[0], a[1])
        if op == "put":
            m, k, v = a
            return ite(eq(k, so.none[n.type.key]), m, store(m, k, v))
        if op == "fill":
            dom = n.type.key
            return z3.Store(z3.K(so.sort[dom], a[1]), so.none[dom], so.default(n.type.value))
        if op == "named":
            return a[0]
        if op == "field":
            return a[0][n.data]
        if op == "apply":
            fn, *args = a
            return fn(*args)
        raise LangError(f"no unbounded meaning for operator {op}")

    def binder(self, n: Term, bound: dict):
        op, so = n.op, self.sorts
        dom = n.data.type.name
        one = self.single(n.args[0], bound) if op != "put_all" else None
        if one is not None:
            # over a set of at most one element the binder is that element's case: no quantifier
            # for Z3 to instantiate (a quantifier inside a lambda, as a union over {member}'s
            # instance id is, leaves Z3's model search 'incomplete')
            e, holds = one
            body = self.go(n.args[1], {**bound, id(n.data): e})
            if op == "forall":
                return implies(holds, body)
            if op == "exists":
                return conj([holds, body])
            empty = z3.K(so.sort[n.type.key], z3.BoolVal(False))
            if op == "filter":
                return ite(conj([holds, body]), store(empty, e, _TRUE), empty)
            return ite(holds, body, empty)
        x = z3.Const(self.fresh_name("x"), so.sort[dom])
        inner = {**bound, id(n.data): x}
        if op == "put_all":
            m = self.go(n.args[0], bound)
            keys = self.go(n.args[1], bound)
            return lam(x, ite(select(keys, x), self.go(n.args[2], inner), select(m, x)))
        s = self.go(n.args[0], bound)
        body = self.go(n.args[1], inner)
        if op == "forall":
            return forall(x, implies(select(s, x), body))
        if op == "exists":
            return exists(x, conj([select(s, x), body]))
        if op == "filter":
            return lam(x, conj([select(s, x), body]))
        # bigunion: y is in the union when some x of s has y in body(x)
        y = z3.Const(self.fresh_name("y"), so.sort[n.type.key])
        return lam(y, exists(x, conj([select(s, x), select(body, y)])))

    def single(self, t: Term, bound: dict):
        """(e, holds) when set term t has at most one element, e when `holds` (a singleton, or a
        filter of one); None otherwise."""
        if t.op == "singleton":
            e = self.go(t.args[0], bound)
            return e, neg(eq(e, self.sorts.none[t.type.key]))
        if t.op == "filter":
            inner = self.single(t.args[0], bound)
            if inner is not None:
                e, holds = inner
                return e, conj([holds, self.go(t.args[1], {**bound, id(t.data): e})])
        return None

    def approximate(self, n: Term, bound: dict):
        """A fresh value for count / maxover / lowest, a function of the bound variables in
        scope; what is surely known of it is added to `side` when nothing is bound."""
        self.approximated.add(n.op)
        free = list(bound.values())
        result = self.sorts.of(n.type)
        s = self.go(n.args[0], bound)
        if free:
            v = z3.Function(self.fresh_name(n.op), *[x.sort() for x in free], result)(*free)
        else:
            # lowest is a function of the set alone, as count is (`Sorts.count`): the same set read
            # in two places has one value; maxover depends on its body too, so it stays fresh
            if n.op == "count":
                v, facts = self.sorts.count(n.args[0].type.key, s)
                self.side += facts
                return v
            v = (self.sorts.measure(n.op, n.args[0].type.key, result)(s) if n.op == "lowest"
                 else z3.Const(self.fresh_name(n.op), result))
        empty = s == z3.K(self.sorts.sort[n.args[0].type.key], z3.BoolVal(False))
        if n.op == "count":
            facts = [v >= 0, (v == 0) == empty]
        elif n.op == "maxover":
            facts = [v >= self.go(n.args[2], bound)]
        else:
            facts = [z3.If(empty, v == self.sorts.none[n.type.name], z3.Select(s, v))]
        # inside a binder the facts hold for every value of its variables (without them a
        # lowest member read per instance id, as Load rebuilds the group.instance.id map, is any
        # member at all, and no lemma about that map survives a Load)
        over = [x for x in free if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED]
        self.side += [z3.ForAll(over, conj(facts))] if over else facts
        return v


class UnboundedMeaning:
    """`symbolic.row_relation`'s reading of a row over uninterpreted sorts."""

    def __init__(self, sorts: Sorts, tag: str = ""):
        self.sorts, self.tag = sorts, tag
        self.approximated: set[str] = set()
        self.side: list = []

    def _reading(self, state, params) -> Reading:
        r = Reading(self.sorts, state, params, self.tag)
        # what its readings add is the meaning's, also when a value is read later (lazily)
        r.side, r.approximated = self.side, self.approximated
        return r

    def term(self, t: Term, state: dict, params: dict):
        return self._reading(state, params).term(t)

    def choice(self, name: str, ch: Term, state: dict, params: dict):
        r = self._reading(state, params)
        s = r.term(ch.args[0])
        v = z3.Const(f"choice_{name}{self.tag}", self.sorts.sort[ch.type.name])
        empty = s == z3.K(self.sorts.sort[ch.type.name], z3.BoolVal(False))
        return v, z3.If(empty, v == self.sorts.none[ch.type.name], z3.Select(s, v))

    def outputs(self, o, state: dict, params: dict) -> list:
        """One output, with `var` the bound element when it is repeated over a set (`cond` then
        says it happens for that element: it is in the set and its `when` holds)."""
        from .rows import ECHO
        from .symbolic import SymOutput
        r = self._reading(state, params)
        bound, cond = {}, z3.BoolVal(True)
        var = None
        if o.over is not None:
            var = z3.Const(r.fresh_name("o"), self.sorts.sort[o.var.type.name])
            bound = {id(o.var): var}
            cond = z3.Select(r.term(o.over), var)
        # the fields are read when asked for (most queries read none of them)
        fields = Lazy({k: v for k, v in o.fields.items() if v is ECHO or not isinstance(v, Term)},
                      {k: (lambda v=v: r.go(v, bound)) for k, v in o.fields.items()
                       if not (v is ECHO or not isinstance(v, Term))})
        member = r.go(o.member, bound) if isinstance(o.member, Term) else None
        when = r.go(o.when, bound) if isinstance(o.when, Term) else z3.BoolVal(True)
        out = SymOutput(o.kind, o.api, z3.And(cond, when), member, fields, o.timer)
        out.var = var
        return [out]


def fresh_state(sorts: Sorts, prefix: str = "s.") -> dict:
    return {v.name: sorts.fresh(prefix + v.name, v.type) for v in STATE_VARS}


def fresh_params(sorts: Sorts, prefix: str = "p.") -> dict[str, Any]:
    return {n: sorts.fresh(prefix + n, t) for n, t in PARAM_TYPES.items()}


def state_well_formed(sorts: Sorts, state: dict) -> list:
    return [c for v in STATE_VARS for c in sorts.well_formed(state[v.name], v.type)]


def params_well_formed(sorts: Sorts, params: dict) -> list:
    return [c for n, v in params.items() if PARAM_TYPES.get(n) is not None and PARAM_TYPES[n].kind != "fun"
            for c in sorts.well_formed(v, PARAM_TYPES[n])]
