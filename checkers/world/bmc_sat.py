"""Bounded model checking with the world's step bit-blasted once and unrolled in a SAT solver.

bmc.py hands Z3 a fresh copy of the step relation at every depth, and Z3's SMT core works it
again from its terms each time: a depth cost about twice the one before.  Here the same
relation (`bmc.StepRelation`, spec/world_step.py's Next over `SymbolicWorld`) is turned into
clauses once, by Z3's finite-domain solver (bounded integers as bit-vectors, bit-vectors as
bits), and depth k's copy is those clauses with their variables renumbered: the pre-state's
bits are depth k's, the post-state's depth k+1's, every other variable fresh.  An incremental
SAT solver (Glucose 4.1, through python-sat) keeps every step added and asks each depth's question
under an assumption, so what it learnt at one depth serves the next; the encoding grows by one
copy of the step per depth.  A question's literal is equivalent to its invariant being broken, so a
depth answered clean is said for good (each of its literals false): every deeper question then has
the invariants holding at every step before it, which it would otherwise have to derive.

Bits need bounds, and bounds are checked, never assumed:
- a member, client or other domain value, and an enumeration, has its type's range (as before,
  `well_formed`); a row's choice is an element of its set or none, so in its domain's range
  (checked per row, `SymbolicWorld._check_choice_ranges`);
- a plain integer (a generation, a timeout, an offset) gets [-1, H], H the largest value any
  step writes or the initial state holds.  A step from a state within the bounds that would
  write a value outside them is itself a question asked at every depth ("the bound is
  broken"): answered yes, the search stops and says so; answered no up to depth k, every state
  within k steps is within the bounds, so the encoding lost none of them.

A model is read back into concrete states and replayed through the explicit checker, as
bmc.py's are (`bmc._replayed`).
"""
from __future__ import annotations

import time

import numpy as np
import z3
from pysat.solvers import Solver

from groupspec.checkers.interruptible import interruptible
from groupspec.spec.symbolic import well_formed
from groupspec.spec.world import ALL_VARS
from groupspec.spec.z3_fast import conj, disj, eq, implies, neg

from groupspec.checkers.search.prefix import Prefix

from .bmc import BmcResult, StepRelation, _flat, _leaves, _replayed

# The finite-domain solver is used only to turn terms into clauses: it must not simplify the
# clauses it prints (eliminating or merging variables would drop the constraints of the state
# bits the copies are joined by), nor search (the clauses are what is wanted).
_CNF_PARAMS = {"sat.elim_vars": False, "sat.scc": False, "sat.bce": False, "sat.abce": False, "sat.cce": False,
               "sat.acce": False, "sat.ate": False, "sat.probing": False, "sat.subsumption": False,
               "sat.asymm_branch": False, "sat.lookahead_simplify": False, "sat.anf": False,
               "sat.cardinality.solver": False, "sat.pb.solver": "circuit", "sat.max_conflicts": 0}
OUT_OF_BOUNDS = "(bmc: a step writes an integer outside the bounds the bit encoding gives it)"
# Glucose 4.1 over CaDiCaL 1.9.5 (both in python-sat): on tiny, every depth to 10 in 18.6 CPU s
# against 57.9 (the same clauses, one run each; docs/benchmarks.md)
SOLVER = "glucose4"


class OutOfBits(ValueError):
    """A concrete state's integer outside the range its leaf's bits hold."""


class _Leaf:
    """One Z3 leaf of a state (a Bool, a bit-vector or a bounded integer) and its bits' names."""

    def __init__(self, term, kind: str, lo: int = 0, hi: int = 0):
        self.term, self.kind, self.lo, self.hi = term, kind, lo, hi
        if kind == "bool":
            self.width = 1
        elif kind == "bv":
            self.width = term.size()
        else:
            self.width = max(1, (hi - lo).bit_length())
        self.bits = [term] if kind == "bool" else [z3.Bool(f"{term}#{i}") for i in range(self.width)]

    def channel(self) -> list:
        """Constraints that tie the bits to the leaf (the bits are what the copies share)."""
        if self.kind == "bool":
            return []
        if self.kind == "bv":
            return [b == (z3.Extract(i, i, self.term) == 1) for i, b in enumerate(self.bits)]
        value = self.lo + z3.Sum([z3.If(b, 1 << i, 0) for i, b in enumerate(self.bits)])
        return [self.term == value, self.term >= self.lo, self.term <= self.hi]

    def encode(self, v) -> list[bool]:
        if self.kind == "bool":
            return [bool(v)]
        x = v - self.lo
        if not (self.kind == "bv" or self.lo <= v <= self.hi):
            raise OutOfBits(f"{self.term} = {v} is outside [{self.lo}, {self.hi}]")
        return [bool(x >> i & 1) for i in range(self.width)]

    def decode(self, bits: list[bool]):
        if self.kind == "bool":
            return z3.BoolVal(bits[0])
        x = sum(1 << i for i, b in enumerate(bits) if b)
        return z3.BitVecVal(x, self.width) if self.kind == "bv" else z3.IntVal(self.lo + x)


def _typed_leaves(value, t):
    if t.kind == "record":
        for v, ft in zip(value, t.args):
            yield from _typed_leaves(v, ft)
    elif t.kind == "map":
        for v in value:
            yield from _typed_leaves(v, t.value)
    else:
        yield value, t


def _int_ceiling(terms) -> int:
    """The largest integer literal the terms can evaluate to (conditions are not walked)."""
    seen, stack, top = set(), list(terms), 0
    while stack:
        e = stack.pop()
        if e.get_id() in seen or e.sort() == z3.BoolSort():
            continue
        seen.add(e.get_id())
        if z3.is_int_value(e):
            top = max(top, e.as_long())
        elif z3.is_app(e) and e.decl().kind() == z3.Z3_OP_ITE:
            stack += e.children()[1:]
        else:
            stack += e.children()
    return top


def int_ceiling(rel: StepRelation) -> int:
    """H: the largest integer literal the step's post-states and the initial state can hold (a plain integer
    leaf's range is taken as [-1, H]; a step that writes outside it is a question of its own, OUT_OF_BOUNDS)."""
    post_ints = [v for p in rel.paths for n in _INT_VARS for v in _leaves_of(p.state[n])]
    init = rel.world.initial()
    return _int_ceiling(post_ints + [v for n in _INT_VARS for v in _leaves_of(init[n])])


def typed_leaves(state: dict, sizes: dict, hi: int) -> list[_Leaf]:
    """The leaves of a state (template) in flat order, each with its kind and range from the declared types:
    a set is a bit-vector, an enumeration or a domain value a bounded integer, a plain integer [-1, hi]."""
    out = []
    for v in ALL_VARS:
        for term, t in _typed_leaves(state[v.name], v.type):
            if t.kind == "bool":
                out.append(_Leaf(term, "bool"))
            elif t.kind == "set":
                out.append(_Leaf(term, "bv"))
            elif t.kind == "enum":
                out.append(_Leaf(term, "int", 0, len(t.values) - 1))
            elif t.kind == "dom":
                out.append(_Leaf(term, "int", -1, sizes[t.name] - 1))
            else:
                out.append(_Leaf(term, "int", -1, hi))
    return out


class SatStep:
    """A step relation as clauses: `step` over the pre-state's bits, the post-state's and its own;
    `state` (the questions asked of one state) over a state's bits and its own."""

    def __init__(self, rel: StepRelation, hi: int | None = None):
        """`hi`: H given rather than found (to see the bound checked)."""
        t0 = time.perf_counter()
        self.rel, W = rel, rel.world
        sizes = W.sizes
        self.hi = int_ceiling(rel) if hi is None else hi
        self.X = typed_leaves(rel.X, sizes, self.hi)
        self.Y = typed_leaves(rel.X2, sizes, self.hi)
        self.init = self.bits(W.initial())
        self.slots = [b for leaf in self.X for b in leaf.bits]          # a state's bits, in order
        choice_bounds = [c for ch in rel.choices for c in W.choice_bound(ch)]

        inside = [(n, z3.Bool(f"q.inside.{n}")) for n in rel.inside]
        wf = [c for v in ALL_VARS for c in well_formed(rel.X2[v.name], v.type, sizes)]
        self.inside = [n for n, _ in inside]
        self.step = _Cnf([*_framed_relation(rel), *wf, *choice_bounds, *(c for leaf in self.X + self.Y for c in leaf.channel()),
                          *(eq(q, rel.inside[n]) for n, q in inside)],
                         {"x": self.slots, "y": [b for leaf in self.Y for b in leaf.bits],
                          "q": [q for _, q in inside], "pick": rel.picks}, optional=("pick",))

        bad = W.violations(rel.X)
        over = self._out_of_bounds()
        self.violations = [n for n, _ in bad] + [OUT_OF_BOUNDS]
        qs = [z3.Bool(f"q.state.{i}") for i in range(len(self.violations))]
        self.state = _Cnf([*(eq(q, c) for q, (_, c) in zip(qs, bad + [(OUT_OF_BOUNDS, over)])),
                           *choice_bounds, *(c for leaf in self.X for c in leaf.channel())],
                          {"x": self.slots, "q": qs})
        self.seconds = time.perf_counter() - t0

    def _out_of_bounds(self):
        """Some path from the pre-state writes a plain integer outside [-1, H]."""
        inside = {leaf.term.get_id() for leaf in self.X if leaf.kind == "int" and -1 <= leaf.lo and leaf.hi <= self.hi}
        ways = []
        for p in self.rel.paths:
            outside = [disj([v < -1, v > self.hi]) for n in _INT_VARS for v, x in zip(_leaves_of(p.state[n]),
                                                                                        _leaves_of(self.rel.X[n]))
                       if v is not x and not _within(v, -1, self.hi, inside)]
            if outside:
                ways.append(conj([*p.pc, disj(outside)]))
        return disj(ways)

    def bits(self, state: dict) -> list[bool]:
        """A concrete state's bits, in `slots` order (OutOfBits if an integer is outside its leaf's range)."""
        return [b for leaf, v in zip(self.X, _flat(state)) for b in leaf.encode(_value(v))]

    def decode(self, values: list[bool]) -> dict:
        """A state's bits (in `slots` order) as Z3 values of the template pre-state's leaves."""
        out, i = {}, 0
        for leaf in self.X:
            out[leaf.term.get_id()] = leaf.decode(values[i:i + leaf.width])
            i += leaf.width
        return out


def _framed_relation(rel: StepRelation) -> list:
    """The step relation as SAT wants it: exactly one path is taken; a path taken constrains only
    the leaves it writes (its condition holds and they equal its post-state), and a leaf no
    taken path writes keeps its value.  The frame conditions are shared by every path that
    leaves the leaf alone, where `bmc._paths_relation` equates the whole state once per path
    (on tiny, 415,956 clauses a step against 618,088).  Equivalent to it: with one path taken,
    the post-state is that path's."""
    xs, ys = _flat(rel.X), _flat(rel.X2)
    writers: list = [[] for _ in ys]
    out = []
    for pick, p in zip(rel.picks, rel.paths):
        eqs = []
        for j, v in enumerate(_flat(p.state)):
            if v is not xs[j]:
                writers[j].append(pick)
                eqs.append(eq(ys[j], v))
        out.append(implies(pick, conj([*p.pc, *eqs])))
    for j, ws in enumerate(writers):
        out.append(implies(conj([neg(w) for w in ws]), eq(ys[j], xs[j])) if ws else eq(ys[j], xs[j]))
    out.append(disj(rel.picks))
    # at most one: a ladder (some of the first i taken) rather than every pair
    before = None
    for i, pick in enumerate(rel.picks):
        if before is not None:
            out.append(implies(pick, neg(before)))
        now = z3.Bool(f"amo.{i}")
        out.append(eq(now, pick if before is None else disj([before, pick])))
        before = now
    return out


_INT_VARS = [v.name for v in ALL_VARS if v.type.kind == "int"
             or (v.type.kind == "map" and v.type.value.kind == "int")
             or (v.type.kind == "record" and any(a.kind == "int" or (a.kind == "map" and a.value.kind == "int")
                                                 for a in v.type.args))]


def _leaves_of(v) -> list:
    return [x for x in _leaves(v) if x.sort() == z3.IntSort()]


def _within(v, lo: int, hi: int, inside: set) -> bool:
    """Within [lo, hi] by its form: a literal there, a pre-state leaf whose range is (`inside`),
    or an if-then-else of such."""
    if z3.is_int_value(v):
        return lo <= v.as_long() <= hi
    if v.get_id() in inside:
        return True
    if z3.is_app(v) and v.decl().kind() == z3.Z3_OP_ITE:
        return all(_within(c, lo, hi, inside) for c in v.children()[1:])
    return False


def _value(v):
    if z3.is_true(v) or z3.is_false(v):
        return z3.is_true(v)
    return v.as_long()


class _Cnf:
    """Terms as clauses (Z3's finite-domain solver's), with named groups of variables kept apart:
    each group's variables by their position, the rest local to a copy.  A variable of an
    `optional` group may be missing from the clauses (Z3 simplified it away: a path's Boolean
    where the path cannot be taken, as its post-state breaks a type's range); it is then a fresh
    variable of each copy, constrained by nothing."""

    def __init__(self, constraints: list, groups: dict[str, list], optional: tuple = ()):
        s = z3.SolverFor("QF_FD")
        s.set(**_CNF_PARAMS)
        s.add(*constraints)
        s.check()            # translates, and stops at once (max_conflicts 0)
        ids, clauses, n = {}, [], 0
        for line in s.dimacs(True).splitlines():
            if line.startswith("c "):
                _, i, name = line.split(" ", 2)
                ids[name] = int(i)
            elif line.startswith("p "):
                n = int(line.split()[2])
            elif line:
                clauses.append([int(x) for x in line.split()[:-1]])
        self.n = n
        self.group = {}
        local = np.ones(n + 1, dtype=bool)
        local[0] = False
        for g, atoms in groups.items():
            got = np.array([ids.get(str(a), 0) for a in atoms], dtype=np.int64)
            missing = [str(a) for a, i in zip(atoms, got) if i == 0]
            if missing and g not in optional:
                raise RuntimeError(f"Z3's clauses lost variables the unrolling joins copies by: {missing[:5]}")
            self.group[g] = got
            local[got[got != 0]] = False
        self.local = np.flatnonzero(local)
        self.lits = np.array([x for c in clauses for x in c], dtype=np.int64)
        self.ends = np.cumsum([len(c) for c in clauses])

    def copy(self, sat: "_Sat", groups: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Add a copy of the clauses to `sat`, the groups' variables given, the rest fresh; the
        variables of the groups not given (fresh) are returned."""
        m = np.zeros(self.n + 1, dtype=np.int64)
        m[self.local] = sat.fresh(len(self.local))
        out = {}
        for g, tpl in self.group.items():
            if g in groups:
                m[tpl] = groups[g]
            else:
                out[g] = sat.fresh(len(tpl))
                m[tpl[tpl != 0]] = out[g][tpl != 0]
        lits = (np.sign(self.lits) * m[np.abs(self.lits)]).tolist()
        start = 0
        add = sat.solver.add_clause
        for end in self.ends.tolist():
            add(lits[start:end])
            start = end
        return out


class _Sat:
    def __init__(self):
        self.solver = Solver(name=SOLVER)
        self.top = 0

    def fresh(self, n: int) -> np.ndarray:
        got = np.arange(self.top + 1, self.top + n + 1, dtype=np.int64)
        self.top += n
        return got

    def solve(self, assumptions: list, seconds: float | None) -> bool | None:
        """The solver's answer, or None when `seconds` ran out first.  It solves in a thread of its
        own with the GIL released (pysat's `expect_interrupt`), so a signal's handler (Ctrl-C,
        SIGTERM) interrupts the solver before its exception goes on up, rather than waiting for a
        query that may take many minutes (checkers/interruptible.py)."""
        try:
            return interruptible(lambda: self.solver.solve_limited(assumptions=assumptions, expect_interrupt=True),
                                 self.solver.interrupt, seconds)
        finally:
            self.solver.clear_interrupt()


class _Unrolled:
    """Copies of the step's clauses from the initial state on, in one SAT solver: `states[k]` are
    depth k's bits, `picks[k]` the paths' Booleans of the step from k; `questions()` asks how
    the last state, or the step into it, breaks an invariant (`only`: these alone).  With a `prefix`
    (search/prefix.py), `states[0]` is any one of the states breadth-first search kept at its depth,
    and the depths are counted from the initial state."""

    def __init__(self, S: SatStep, only: set | None, prefix: Prefix | None = None):
        self.S, self.only, self.prefix = S, only, prefix
        self.sat = _Sat()
        self.states = [self.sat.fresh(len(S.slots))]
        self.chosen = self._start([S.init] if prefix is None else
                                  [S.bits(S.rel.world.valued(prefix.model.flat(t))) for t in prefix.states])
        self.picks: list = []
        self.pending: list = []       # (name, literal): broken inside the step into the last state

    def _start(self, starts: list) -> np.ndarray:
        """states[0] is one of `starts` (bit lists): a bit they all share is a unit clause; else a
        Boolean per start (returned) says it is the one, and some start is.  Two starts differ in some
        bit, so at most one is chosen without saying so."""
        bits = np.array(starts, dtype=bool)
        x = self.states[0]
        add = self.sat.solver.add_clause
        same = (bits == bits[0]).all(axis=0)
        for v, b in zip(x[same].tolist(), bits[0][same].tolist()):
            add([v if b else -v])
        if len(starts) == 1:
            return np.zeros(1, dtype=np.int64)
        chosen = self.sat.fresh(len(starts))
        add(chosen.tolist())
        vary = x[~same]
        lits = np.where(bits[:, ~same], vary, -vary)
        for c, row in zip(chosen.tolist(), lits.tolist()):
            for lit in row:
                add([-c, lit])
        return chosen

    def questions(self) -> list:
        qs = self.S.state.copy(self.sat, {"x": self.states[-1]})["q"].tolist()
        asked = self.pending + list(zip(self.S.violations, qs))
        return [(n, q) for n, q in asked if self.only is None or n in self.only or n == OUT_OF_BOUNDS]

    def extend(self) -> None:
        got = self.S.step.copy(self.sat, {"x": self.states[-1]})
        self.states.append(got["y"])
        self.picks.append(got["pick"])
        self.pending = list(zip(self.S.inside, got["q"].tolist()))

    def truth(self) -> np.ndarray:
        """The model the solver found, as a truth value per variable."""
        truth = np.zeros(self.sat.top + 1, dtype=bool)
        truth[np.array([x for x in self.sat.solver.get_model() if x > 0], dtype=np.int64)] = True
        return truth

    def replayed(self, truth: np.ndarray, name: str, k: int, earliest: bool = False) -> BmcResult:
        """The model's first k steps read back into concrete states and replayed (`bmc._replayed`)."""
        rel, S = self.S.rel, self.S
        trace = [rel.world.concrete(_Values(S.decode(truth[s].tolist())), rel.X) for s in self.states[:k + 1]]
        steps = [(rel.paths[i].label, rel.paths[i].rows) for i in (int(np.argmax(truth[p])) for p in self.picks[:k])]
        if self.prefix is not None:
            before = self.prefix.path(int(np.argmax(truth[self.chosen])) if len(self.chosen) > 1 else 0)
            trace = [f for _, f in before] + trace[1:]
            steps = [(st.action, st.rows) for st, _ in before[1:]] + steps
            k += self.prefix.depth
        res = _replayed(rel.world, trace, name, k, earliest=earliest)
        res.steps = steps[:res.depth]
        return res


def bmc_sat(rel: StepRelation, depth: int, progress=None, budget_s: float | None = None,
            only: set | None = None, sat_step: SatStep | None = None, leap: bool = False,
            prefix: Prefix | None = None) -> BmcResult:
    """bmc_search.bmc's search (shortest depth first, every model replayed concretely), over clauses.
    `budget_s`: seconds from the call (making the clauses included); a question under way when they run
    out is interrupted.  `sat_step`: the clauses, if made before.  `leap`: see `_Search.leap`.  `prefix`:
    start from the states breadth-first search kept at its depth (`depth` counts from the initial state)."""
    search = _Search(rel, sat_step, only, budget_s, progress, prefix)
    steps = depth - search.offset
    return search.leap(steps) if leap else search.deepen(steps)


class _Search:
    """One search over one unrolling: its clock, its budget and the seconds each depth took."""

    def __init__(self, rel: StepRelation, sat_step: SatStep | None, only: set | None, budget_s: float | None,
                 progress, prefix: Prefix | None = None):
        self.t0 = time.perf_counter()
        self.S = S = sat_step or SatStep(rel)
        self.built, self.n_paths = rel.build_seconds + S.seconds, len(rel.paths)
        self.budget_s, self.progress = budget_s, progress
        self.offset = 0 if prefix is None else prefix.depth    # what the steps unrolled here are counted from
        if progress:
            progress(0, self.n_paths, self.built)
        self.U = _Unrolled(S, only, prefix)
        self.secs: list = []
        self.cpu: list = []

    def result(self, kind: str, k: int, **kw) -> BmcResult:
        """The result at k steps unrolled (a depth counted from the initial state)."""
        return BmcResult(kind, self.offset + k, seconds_per_depth=self.secs, cpu_seconds_per_depth=self.cpu,
                         paths_per_step=self.n_paths, build_seconds=self.built, **kw)

    def left(self) -> float | None:
        return None if self.budget_s is None else self.budget_s - (time.perf_counter() - self.t0)

    def ask(self, assumptions: list) -> bool | None:
        """The solver's answer, None when the budget is spent (before or while it is asked)."""
        left = self.left()
        return None if left is not None and left <= 0 else self.U.sat.solve(assumptions, left)

    def stopped(self, k: int) -> BmcResult:
        """Stopped with k steps answered (-1: none; from a search's level, that level is answered by the search)."""
        return self.result("stopped", max(k, 0) if self.U.prefix is not None else k,
                           detail=f"the budget of {self.budget_s:g} s was spent")

    def timed(self, t1: float, c1: float, k: int | None = None) -> None:
        """Depth k's seconds, from (t1, c1) on (k None: a new depth's)."""
        at = len(self.secs) if k is None else k
        del self.secs[at:], self.cpu[at:]
        self.secs.append(time.perf_counter() - t1)
        self.cpu.append(time.process_time() - c1)

    def found(self, truth, asked: list, k: int, earliest: bool) -> BmcResult:
        name = next(n for n, q in asked if truth[q])
        if name == OUT_OF_BOUNDS:
            return self.result("unknown", k, detail=f"depth {self.offset + k}: {OUT_OF_BOUNDS[6:-1]} ([-1, {self.S.hi}]); "
                                                    f"BMC over Z3's terms (mode push) has no such bound")
        res = self.U.replayed(truth, name, k, earliest=earliest)
        res.seconds_per_depth, res.cpu_seconds_per_depth = self.secs, self.cpu
        res.paths_per_step, res.build_seconds = self.n_paths, self.built
        return res

    def deepen(self, depth: int) -> BmcResult:
        """Depth by depth: each depth's question answered before the next step is unrolled."""
        U = self.U
        for k in range(depth + 1):
            t1, c1 = time.perf_counter(), time.process_time()
            asked = U.questions()
            act = int(U.sat.fresh(1)[0])
            U.sat.solver.add_clause([-act] + [q for _, q in asked])
            answer = self.ask([act])
            self.timed(t1, c1)
            if answer is None:
                return self.stopped(k - 1)
            if answer:
                return self.found(U.truth(), asked, k, earliest=False)
            # this depth's question is answered: retire it, and say what the answer showed (no state this
            # deep breaks what was asked), which every deeper question may use
            U.sat.solver.add_clause([-act])
            for _, q in asked:
                U.sat.solver.add_clause([-q])
            if k == depth:
                break
            U.extend()
            self.timed(t1, c1, k)
            if self.progress:
                self.progress(self.offset + k + 1, self.n_paths, self.secs[-1])
        return self.result("ok", depth)

    def leap(self, depth: int) -> BmcResult:
        """One question for every depth at once: does some state within `depth` steps break an invariant?
        Every step is unrolled first and the solver asked once, without proving each depth before it
        clean, which is what costs depth by depth (on the 3-client world with faults, about three times
        the depth before).  No: no state within `depth` steps breaks one (as depth by depth).  Yes: the
        model's first state that breaks one, replayed; a violation the replay meets on the way is
        reported where it is met.  The counterexample is not shown shortest (`shortest` is False)."""
        U = self.U
        asked: list = []                 # (depth, name, literal)
        for k in range(depth + 1):
            t1, c1 = time.perf_counter(), time.process_time()
            asked += [(k, n, q) for n, q in U.questions()]
            if k < depth:
                U.extend()
            self.timed(t1, c1)
            if self.progress and k < depth:
                self.progress(self.offset + k + 1, self.n_paths, self.secs[-1])
        U.sat.solver.add_clause([q for _, _, q in asked])
        t1, c1 = time.perf_counter(), time.process_time()
        answer = self.ask([])
        solve_seconds, solve_cpu_seconds = time.perf_counter() - t1, time.process_time() - c1
        if answer is None:
            res = self.stopped(-1)
        elif not answer:
            res = self.result("ok", depth)
        else:
            truth = U.truth()
            k = min(k for k, _, q in asked if truth[q])
            res = self.found(truth, [(n, q) for j, n, q in asked if j == k], k, earliest=True)
            clean = self.offset if self.U.prefix is not None else -1        # the depths shown clean before the leap
            res.shortest = res.depth <= clean + 1
        res.solve_seconds, res.solve_cpu_seconds = solve_seconds, solve_cpu_seconds
        return res


class _Values:
    """A model given as Z3 values of the template leaves (what `SymbolicWorld.concrete` reads)."""

    def __init__(self, values: dict):
        self.values = values

    def eval(self, v, model_completion=True):
        return self.values[v.get_id()]
