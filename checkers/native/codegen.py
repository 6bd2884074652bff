"""The world's step as C: spec/world_step.py's Next, as the symbolic host runs it, compiled.

`bmc.StepRelation` runs the world's step over Z3 terms once (the host `SymbolicWorld`): each way a
step may go is a path, its condition a list of tests in the order the step made them, its
post-state one term per leaf of the flat state.  The tests of paths that branched apart share
their prefix, so the paths form a tree; this module writes that tree out as nested `if`s over a
state vector of 64-bit integers (one per leaf: a Boolean, a set as a bit-vector, an enumeration,
a domain value or a plain integer), so a state pays only for the tests on the branches it takes.
A term used in more than one place is a function that computes it once per state (or once per
value of the row choices it depends on: `epoch`); a row's choice (a fresh element of its set) is
a loop over its range.  Nothing here knows what a request does: the terms are the spec's, as Z3
holds them, and the operators are the dozen the symbolic host produces (anything else is an
error here, never a guess).

What the generated code also says, from the same paths: for each path taken, the row invariants a
row breaks on its way (the explicit checker's InvariantViolation); for a path a bound cut, only
those (`cut`); and for a state, the state and world invariants it breaks.
"""
from __future__ import annotations

import collections

import z3

from groupspec.checkers.world.bmc import StepRelation, _flat

_CHOICE = "choice#"
MAX_SUCC = 4096           # successors of one state the search makes room for (more is an error, not a cut)
_ARITH = {z3.Z3_OP_LT: "<", z3.Z3_OP_LE: "<=", z3.Z3_OP_GT: ">", z3.Z3_OP_GE: ">=", z3.Z3_OP_EQ: "==",
          z3.Z3_OP_DISTINCT: "!="}
_NARY = {z3.Z3_OP_AND: " && ", z3.Z3_OP_OR: " || ", z3.Z3_OP_ADD: " + ", z3.Z3_OP_SUB: " - ",
         z3.Z3_OP_BOR: " | ", z3.Z3_OP_BAND: " & "}
_FORMS = {z3.Z3_OP_NOT: "(!{0})", z3.Z3_OP_IMPLIES: "(!{0} || {1})", z3.Z3_OP_ITE: "({0} ? {1} : {2})",
          z3.Z3_OP_UMINUS: "(-{0})"}


class Unsupported(Exception):
    """A term the generator has no C for: the world cannot run natively."""


def _is_choice(n) -> bool:
    return n.num_args() == 0 and str(n).startswith(_CHOICE)


class _Terms:
    """C expressions for Z3 terms over the state vector `x` and the choices `s->ch`."""

    def __init__(self, leaves: list, roots: list, kids: "_Children | None" = None):
        self.kids = kids or _Children()
        self.leaf = {x.get_id(): i for i, x in enumerate(leaves)}
        self.parents: collections.Counter = collections.Counter()
        self.choices: dict[int, frozenset] = {}      # the choices a term depends on
        self.functions: list[str] = []
        self._expr: dict[int, str] = {}
        self._value: dict[int, int | None] = {}
        self._cost: dict[int, int] = {}
        seen: set = set()
        for r in roots:         # a term tested or written in several places is used once per place
            self.parents[r.get_id()] += 1
            self._walk(r, seen)

    def _walk(self, root, seen: set) -> None:
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            i = n.get_id()
            if done:
                if _is_choice(n):
                    self.choices[i] = frozenset([str(n)])
                else:
                    deps = [self.choices[c.get_id()] for c in self.kids(n, i) if self.choices[c.get_id()]]
                    self.choices[i] = frozenset().union(*deps) if deps else frozenset()
                continue
            if i in seen:
                continue
            seen.add(i)
            stack.append((n, True))
            for c in self.kids(n, i):
                self.parents[c.get_id()] += 1
                stack.append((c, False))

    def expr(self, n) -> str:
        """`n` in C: a literal if it folds to a constant, inline if cheap, else a call of its memo
        function (a term used in more than one place whose C is more than a few operations)."""
        i = n.get_id()
        if i in self.leaf:
            return f"x[{self.leaf[i]}]"
        if i in self._expr:
            return self._expr[i]
        s, value, cost = self._compose(n)
        if value is not None:
            s, cost = _literal(value), 0
        elif self.parents[i] > 1 and cost >= MEMO_COST:
            j = len(self.functions)
            # a term of the state alone holds for the whole state; one of choices, for their values
            # (a term's epoch and value side by side: one cache line, where two arrays took two)
            valid = f"s->m[{j}].f == s->choice_epoch" if self.choices[i] else f"s->m[{j}].f >= s->state_epoch"
            # the test of the cache where the term is used, the call only to compute it: a call is not free, and
            # more than half the uses find the term computed (small: 475 uses a state, 221 computed)
            self.functions.append(f"static int64_t m{j}(const int64_t *x, S *s) {{ s->m[{j}].f = s->choice_epoch; "
                                  f"return s->m[{j}].t = {s}; }}")
            s, cost = f"({valid} ? s->m[{j}].t : m{j}(x, s))", 1
        self._expr[i], self._value[i], self._cost[i] = s, value, cost
        return s

    def value(self, n) -> int | None:
        """The constant `n` folds to (the world's bounds make many tests constant), or None."""
        i = n.get_id()
        if i in self.leaf:
            return None
        self.expr(n)
        return self._value[i]

    def _compose(self, n) -> tuple[str, int | None, int]:
        """(C, the constant it folds to or None, its cost in operations)."""
        if z3.is_true(n):
            return "1", 1, 0
        if z3.is_false(n):
            return "0", 0, 0
        if z3.is_int_value(n) or z3.is_bv_value(n):
            return "", n.as_long(), 0
        if _is_choice(n):
            return f"s->ch[{_choice_index(str(n))}]", None, 0
        k, a = n.decl().kind(), self.kids(n)
        args = [self.expr(c) for c in a]
        vals = [self.value(c) for c in a]
        cost = 1 + sum(self._cost.get(c.get_id(), 0) for c in a)
        if k == z3.Z3_OP_ITE:           # a decided test takes its branch, and only that branch's C
            if vals[0] is not None:
                b = a[1] if vals[0] else a[2]
                return self.expr(b), self.value(b), self._cost.get(b.get_id(), 0)
        elif k in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            absorbing = 0 if k == z3.Z3_OP_AND else 1
            if absorbing in [None if v is None else int(bool(v)) for v in vals]:
                return "", absorbing, 0
            kept = [(c, e) for c, e, v in zip(a, args, vals) if v is None]
            if not kept:
                return "", 1 - absorbing, 0
            if len(kept) == 1:
                return kept[0][1], None, self._cost.get(kept[0][0].get_id(), 0)
            return "(" + _NARY[k].join(e for _, e in kept) + ")", None, cost
        elif k == z3.Z3_OP_IMPLIES:
            if vals[0] == 0 or vals[1]:
                return "", 1, 0
            if vals[0] is not None:
                return args[1], vals[1], self._cost.get(a[1].get_id(), 0)
        if all(v is not None for v in vals) and k in _FOLD:
            return "", _FOLD[k](n, vals), 0
        args = [e if v is None else _literal(v) for e, v in zip(args, vals)]
        if k in _NARY:
            return "(" + _NARY[k].join(args) + ")", None, cost
        if k in _ARITH and len(args) == 2:
            return f"({args[0]} {_ARITH[k]} {args[1]})", None, cost
        if k in _FORMS:
            return _FORMS[k].format(*args), None, cost
        if k == z3.Z3_OP_BNOT:
            return f"((~{args[0]}) & {(1 << n.size()) - 1})", None, cost
        if k == z3.Z3_OP_EXTRACT:
            hi, lo = n.params()
            return f"(({args[0]} >> {lo}) & {(1 << (hi - lo + 1)) - 1})", None, cost
        raise Unsupported(f"no C for the operator {n.decl().name()} (in {str(n)[:80]})")


MEMO_COST = 3          # a shared term of fewer operations is cheaper computed again than looked up


def _mix(j: int) -> int:
    """A 64-bit constant for leaf j (splitmix64's output for j): what the leaf's value is multiplied by in a
    state's fingerprint (search.c `fp`)."""
    z = (j * 0x9E3779B97F4A7C15 + 0x9E3779B97F4A7C15) & (2 ** 64 - 1)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2 ** 64 - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2 ** 64 - 1)
    return z ^ (z >> 31)


def _literal(v: int) -> str:
    return f"((int64_t){v})" if not 0 <= v <= 1 else str(v)


def _mask(n, v: int) -> int:
    return v & ((1 << n.size()) - 1)


def _extract(n, v):
    hi, lo = n.params()
    return (v >> lo) & ((1 << (hi - lo + 1)) - 1)


# the operators' meaning on constants, as the C computes them (int64_t; Booleans 0 and 1)
_FOLD = {z3.Z3_OP_LT: lambda n, v: int(v[0] < v[1]), z3.Z3_OP_LE: lambda n, v: int(v[0] <= v[1]),
         z3.Z3_OP_GT: lambda n, v: int(v[0] > v[1]), z3.Z3_OP_GE: lambda n, v: int(v[0] >= v[1]),
         z3.Z3_OP_EQ: lambda n, v: int(v[0] == v[1]), z3.Z3_OP_DISTINCT: lambda n, v: int(len(set(v)) == len(v)),
         z3.Z3_OP_ADD: lambda n, v: sum(v), z3.Z3_OP_SUB: lambda n, v: v[0] - sum(v[1:]),
         z3.Z3_OP_UMINUS: lambda n, v: -v[0], z3.Z3_OP_NOT: lambda n, v: int(not v[0]),
         z3.Z3_OP_ITE: lambda n, v: v[1] if v[0] else v[2], z3.Z3_OP_IMPLIES: lambda n, v: int(not v[0] or bool(v[1])),
         z3.Z3_OP_BNOT: lambda n, v: _mask(n, ~v[0]), z3.Z3_OP_EXTRACT: lambda n, v: _extract(n, v[0])}


def _bits(op):
    def f(n, v):
        r = v[0]
        for w in v[1:]:
            r = op(r, w)
        return r
    return f


_FOLD[z3.Z3_OP_BOR] = _bits(lambda p, q: p | q)
_FOLD[z3.Z3_OP_BAND] = _bits(lambda p, q: p & q)


def _conjuncts(c) -> list:
    """The conjuncts of a test, nested conjunctions flattened, in their order."""
    return [t for a in c.children() for t in _conjuncts(a)] if z3.is_and(c) else [c]


def _choice_index(name: str) -> int:
    return int(name[len(_CHOICE):])


class _Children:
    """A term's children, asked of Z3 once: z3's `children()` builds a new Python object for each child
    at every call, and the generator walks the same terms many times (a third of its time went there).
    Keyed by the term's id, which stays the term's while the step relation holds every term alive."""

    def __init__(self):
        self._of: dict[int, list] = {}

    def __call__(self, n, i: int | None = None) -> list:
        i = n.get_id() if i is None else i
        got = self._of.get(i)
        if got is None:
            got = self._of[i] = n.children()
        return got


def _given(cond, held: set, kids: _Children):
    """`cond` where the tests `held` (by id) are known true: what of it is left, None if nothing.  A
    bad condition repeats the tests of the path it was found on (bmc.py: the path condition and what
    is broken); at the path's end they hold, and the C need not test them again."""
    if cond.get_id() in held:
        return None
    if z3.is_and(cond):
        kept = [r for r in (_given(c, held, kids) for c in kids(cond)) if r is not None]
        return None if not kept else (kept[0] if len(kept) == 1 else z3.And(*kept))
    return cond


class Generated:
    """The C source of one world's step and invariants, and what the search needs to read it back."""

    def __init__(self, rel: StepRelation):
        W = rel.world
        X = _flat(rel.X)
        self.leaves = len(X)
        state_bad = W.violations(rel.X)
        self.invariants = [n for n, _ in state_bad]          # 0..: state invariants, then rows' on the way
        index = {n: i for i, n in enumerate(self.invariants)}
        cut = W.cut_paths
        for p in [*rel.paths, *cut]:
            for name, _ in p.bad:
                if name not in index:
                    index[name] = len(self.invariants)
                    self.invariants.append(name)
        roots = [c for p in [*rel.paths, *cut] for c in p.pc] + [v for p in rel.paths for v in _flat(p.state)]
        # what a row breaks on a path's way, less the tests the path made already
        kids = _Children()
        self._bad = {id(p): [(n, r) for n, c in p.bad
                             if (r := _given(c, {t.get_id() for t in p.pc}, kids)) is not None]
                     for p in [*rel.paths, *cut]}
        self.redundant = 0
        for p in rel.paths:
            self._bad[id(p)] = self._not_at_the_end(p, X, state_bad, self._bad[id(p)])
        roots += [c for bad in self._bad.values() for _, c in bad] + [c for _, c in state_bad]
        self.terms = T = _Terms(X, roots, kids)
        self._X, self._W, self._index = X, W, index
        self._bound: set = set()
        tree: dict = {}
        self.path_rows = [p.rows for p in rel.paths]          # what each path fires, for coverage (`hits`)
        self._number = {id(p): i for i, p in enumerate(rel.paths)}
        for p in rel.paths:
            self._place(tree, p, "take")
        for p in cut:
            self._place(tree, p, "cut")
        # one function per first test (an action and its process): gcc's time grows faster than a
        # function's size, and one function of the whole step took it minutes
        parts, body = [], []
        for k, (key, branch) in enumerate(tree.items()):
            parts += [f"static int step{k}(const int64_t *x, int64_t *out, int n, int *bad, int *cut, S *s) {{",
                      *self._tree({key: branch}, "  "), "  return n;", "}"]
            body.append(f"  n = step{k}(x, out, n, bad, cut, s); if (n < 0 || *bad >= 0) return n;")
        invariants = [f"  if ({T.expr(c)}) return {index[n]};" for n, c in state_bad]
        n_choices = 1 + max((_choice_index(str(c)) for c in rel.choices), default=0)
        self.source = "\n".join([
            "#include <stdint.h>", "#include <string.h>",
            f"#define NL {len(X)}", f"#define NF {max(1, len(T.functions))}", f"#define MAX_SUCC {MAX_SUCC}",
            f"#define NPATHS {max(1, len(rel.paths))}",
            "/* a searching thread's own: the memo functions' cache, the choices, the steps taken per path */",
            "typedef struct { uint64_t counter, state_epoch, choice_epoch; "
            f"int64_t ch[{n_choices}]; struct {{ uint64_t f; int64_t t; }} m[NF]; long hits[NPATHS]; }} S;",
            f"static const uint64_t LEAF_KEY[NL] = {{{', '.join(f'{_mix(j)}ull' for j in range(len(X)))}}};",
            *T.functions, *parts,
            "/* the successors of x into out (NL each); *bad: an invariant a row of the last one breaks on its way;",
            "   *cut: a path a bound cut was enabled */",
            "static int step(const int64_t *x, int64_t *out, int *bad, int *cut, S *s) {",
            "  int n = 0; s->state_epoch = s->choice_epoch = ++s->counter;",
            *body, "  return n;", "}",
            "static int broken(const int64_t *x, S *s) {",
            "  s->state_epoch = s->choice_epoch = ++s->counter;",
            *invariants, "  return -1;", "}", '#include "search.c"', ""])

    def _not_at_the_end(self, p, X: list, state_bad: list, bad: list) -> list:
        """`bad` less what is the same term as a state invariant of the state the path ends in: the
        search judges that state by `broken` when it first reaches it (and every state it has reached
        was judged so), so the check on the way says nothing new, and half the checks were such."""
        if not state_bad or not bad:
            return bad
        pairs = [(a, b) for a, b in zip(X, _flat(p.state)) if a.get_id() != b.get_id()]
        whole = z3.And(*[c for _, c in state_bad], z3.BoolVal(True))    # one substitution for all, shared
        after = z3.substitute(whole, *pairs).children() if pairs else whole.children()
        if len(after) != len(state_bad) + 1:
            return bad
        at = {n: c.get_id() for (n, _), c in zip(state_bad, after)}
        kept = [(n, c) for n, c in bad if at.get(n) != c.get_id()]
        self.redundant += len(bad) - len(kept)
        return kept

    @staticmethod
    def _place(tree: dict, p, kind: str) -> None:
        node = tree
        for c in p.pc:
            node = node.setdefault(c.get_id(), (c, {}, []))[1]
        node.setdefault(None, (None, {}, []))[2].append((kind, p))

    def _loop(self, ch: str) -> str:
        """The head of the loop over a row choice's values (none, then each element of its domain)."""
        v = f"s->ch[{_choice_index(ch)}]"
        return f"for ({v} = -1; {v} < {self._W.choice_size[self._W._choice_of[ch]]}; {v}++) " \
               "{ s->choice_epoch = ++s->counter;"

    def _loops(self, terms: list, ind: str) -> tuple[list[str], list[str], str]:
        """Loops binding the choices `terms` read that no enclosing loop binds."""
        T = self.terms
        free = sorted(set().union(*[T.choices[t.get_id()] for t in terms]) - self._bound) if terms else []
        opened = []
        for ch in free:
            opened.append(ind + self._loop(ch))
            ind += "  "
        self._bound |= set(free)
        return opened, [ind[:len(ind) - 2 * (k + 1)] + "}" for k in range(len(free))], ind

    def _tree(self, tree: dict, ind: str) -> list[str]:
        T, out = self.terms, []
        for key, (c, sub, leaves) in tree.items():
            if key is None:
                for kind, p in leaves:
                    out += self._leaf(kind, p, ind)
                continue
            v = T.value(c)
            if v is not None:           # a test the world's bounds decide: its branch is dead, or taken always
                out += self._tree(sub, ind) if v else []
                continue
            saved = set(self._bound)
            lines, closed, inner = self._test(c, ind)
            out += lines + self._tree(sub, inner) + closed
            self._bound = saved
        return out

    def _test(self, c, ind: str) -> tuple[list[str], list[str], str]:
        """`if`s for the test `c` inside the loops over the choices it reads: each conjunct tested as
        soon as the choices it reads are bound (the loops open in the order `_loops` opens them), so a
        conjunct of the state alone is tested once, not once per value of the choices."""
        T = self.terms
        parts = [t for t in _conjuncts(c) if T.value(t) is None]
        free = sorted(T.choices[c.get_id()] - self._bound)
        lines, closed = [], []

        def ready() -> None:
            nonlocal ind
            now = [t for t in parts if T.choices[t.get_id()] <= self._bound]
            if now:
                lines.append(ind + "if (" + " && ".join(T.expr(t) for t in now) + ") {")
                closed.append(ind + "}")
                ind += "  "
                parts[:] = [t for t in parts if t not in now]

        ready()
        for ch in free:
            lines.append(ind + self._loop(ch))
            closed.append(ind + "}")
            ind += "  "
            self._bound.add(ch)
            ready()
        return lines, closed[::-1], ind

    def _leaf(self, kind: str, p, ind: str) -> list[str]:
        T, X = self.terms, self._X
        writes = [(j, v) for j, v in enumerate(_flat(p.state))
                  if v.get_id() != X[j].get_id() and T.expr(v) != f"x[{j}]"] if kind == "take" else []
        saved = set(self._bound)
        bad = [(n, c) for n, c in self._bad[id(p)] if T.value(c) != 0]
        opened, closed, inner = self._loops([v for _, v in writes] + [c for _, c in bad], ind)
        lines = list(opened)
        if kind == "cut":
            lines.append(inner + "*cut = 1;")
        else:
            lines += [inner + "{", inner + "  if (n >= MAX_SUCC) return -1;", inner + "  int64_t *y = out + (size_t)n * NL; memcpy(y, x, NL * sizeof(int64_t));",
                      *[inner + f"  y[{j}] = {T.expr(v)};" for j, v in writes],
                      inner + f"  n++; s->hits[{self._number[id(p)]}]++;", inner + "}"]
        lines += [inner + f"if (*bad < 0 && {T.expr(c)}) {{ *bad = {self._index[n]}; return n; }}" for n, c in bad]
        self._bound = saved
        return lines + closed
