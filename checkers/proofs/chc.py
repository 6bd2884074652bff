"""Z3's Spacer on constrained Horn clauses: the second engine of `groupspec prove`.

Houdini (`houdini.py`) can only keep or drop the candidate lemmas it is given; Spacer
finds its own.  The same steps Houdini goes over (`readings.steps_of`: every row, and each
append with each row of its completion) become Horn clauses over one unknown relation
Inv, read through the same `RowCtx` (the row's guard, post-state, outputs and the
environment's assumptions, as `symbolic.row_relation` gives them):

    Inv(blank group, blank record)
    Inv(s, rec) ∧ step(s, p, s')          ⇒ Inv(s', rec')
    Inv(s, rec) ∧ ¬goal                    ⇒ false

The group's state and the last group record in the log (what a Load reads) are Inv's
arguments; a step that appends a group record may leave the log's record as it was or
replace it with what the log keeps of the one it captured (what the record lemmas of
Houdini say, as state).

Horn clauses need a decidable background theory, so the fixed-size reading is used
(member sets as bit-vectors, maps as one value per member): a proof holds for up to N
members.  Spacer does not take uninterpreted functions; the table's few (the vote over
protocols, a protocol's name) are parameters of a step, so each application becomes a
fresh value, with Ackermann's constraints that equal arguments give equal values.

All of the group's variables at once is a large relation (Spacer took ten minutes on
leader-is-member at N=2); the search localizes instead: Inv first speaks only of the
invariant's variables, every other one free in every state, and is widened by the cone
of influence (the variables the rows that write Inv's variables read) until Spacer
proves it or Inv speaks of everything.  A proof over fewer variables is a proof (the
others were left free, an over-approximation); a counterexample is trusted only when
Inv spoke of every variable.  The relation Spacer finds is returned as lemmas: the
conjuncts of its interpretation, over the named variables.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from groupspec.spec.invariants import Invariant
from groupspec.spec.lang import walk
from groupspec.spec.schema import PARAM_TYPES, STATE_VARS, GroupRecord
from .obligations import RECORD_VARS, Work, params_of, is_config, rlimit
from .reached import reached_with_record, world_config
from .readings import appends_group_record, kind_goal, written
from groupspec.spec.lang import NONE, Term, default_of
from groupspec.spec.rows import Set_
from groupspec.spec.symbolic import concrete_to_z3

RECORD = "record"


@dataclass
class SpacerResult:
    status: str                        # proved | counterexample | unknown
    keep: list[str]                    # the variables Inv spoke of in the last attempt
    lemmas: list[str] = field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0
    attempts: list[dict] = field(default_factory=list)
    formulas: list = field(default_factory=list)    # the lemmas as Z3 terms over `names`
    names: dict = field(default_factory=dict)        # flattened position -> named constant
    horn: "Horn | None" = None      # a counterexample's clauses, for its path (paths.py)
    left: int = 0                   # the work its budget had left


def _flat(value, name: str) -> list[tuple[str, object]]:
    """A symbolic value (a Z3 term, a list for a map, a tuple for a record) as named leaves."""
    if isinstance(value, (list, tuple)):
        return [leaf for i, v in enumerate(value) for leaf in _flat(v, f"{name}[{i}]")]
    return [(name, value)]


def _record_fields(rec) -> dict:
    return {f: rec[i] for i, f in enumerate(GroupRecord.values)}


def _uninterpreted(exprs: list, keep: str | tuple) -> tuple[list, list]:
    """The free constants and the applications of uninterpreted functions in `exprs` (but not
    of the relations named `keep`)."""
    keep = (keep,) if isinstance(keep, str) else keep
    consts, apps, seen = {}, {}, set()
    todo = list(exprs)
    while todo:
        e = todo.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_quantifier(e):
            todo.append(e.body())
            continue
        if z3.is_app(e):
            d = e.decl()
            if d.kind() == z3.Z3_OP_UNINTERPRETED and d.name() not in keep:
                (consts if d.arity() == 0 else apps)[e.get_id()] = e
            todo.extend(e.children())
    return list(consts.values()), list(apps.values())


def ackermannize(exprs: list, keep: str | tuple) -> tuple[list, list]:
    """`exprs` with every application of an uninterpreted function (but `keep`) replaced by a
    fresh value, and the constraints that make those values a function (equal arguments,
    equal values)."""
    _, apps = _uninterpreted(exprs, keep)
    if not apps:
        return exprs, []
    subst, by_fn = [], {}
    for k, a in enumerate(apps):
        v = z3.Const(f"ack{k}!{a.decl().name()}", a.sort())
        subst.append((a, v))
        by_fn.setdefault(a.decl().name(), []).append((a, v))
    out = [z3.substitute(e, *subst) for e in exprs]
    same_fn = []
    for uses in by_fn.values():
        for i in range(len(uses)):
            for j in range(i + 1, len(uses)):
                (a, va), (b, vb) = uses[i], uses[j]
                same = z3.And([z3.substitute(x == y, *subst) for x, y in zip(a.children(), b.children())])
                same_fn.append(z3.Implies(same, va == vb))
    return out, same_fn


@dataclass
class Rule:
    """One Horn clause by its parts: Inv of `pre` (None: the initial clause) and `facts` imply Inv
    of `post` (None: false, a query).  `step`: the index of the step (system.specs) it is; `stores`:
    which of the step's group-record appends the log keeps after it (None: the record stays)."""
    name: str
    pre: list | None
    facts: list
    post: list | None
    step: int | None = None
    stores: int | None = None


class Horn:
    """The table's steps as Horn clauses over Inv(kept variables) in one fixed-size system."""

    def __init__(self, system, keep: set[str], rigid: tuple[str, ...] = ()):
        """`rigid`: the broker's configuration the invariant reads (group.max.size, ...), one value
        for every step: Inv's arguments too, each step keeping it (a step's parameters are
        otherwise its own)."""
        self.system, self.keep, self.rigid = system, keep, rigid
        rd, sh = system.rd, system.shared
        self.rec = sh.params[RECORD]
        self.pre = self._leaves(sh.state, self.rec)
        self.names = {n: z3.Const(n, e.sort()) for n, e in self.pre}
        self.inv = z3.Function("Inv", *[e.sort() for _, e in self.pre], z3.BoolSort())
        self.rules: list[Rule] = []
        config = [sh.pre(a.formula)[0] for a in system.assumptions
                  if is_config(a) and params_of(a.formula) <= set(rigid)]
        self.rules.append(Rule("init", None, config, self.args(rd.blank_state(), rd.blank_record())))

    def _leaves(self, state: dict, rec) -> list[tuple[str, object]]:
        out = [leaf for v in STATE_VARS if v.name in self.keep for leaf in _flat(state[v.name], v.name)]
        if RECORD in self.keep:
            fields = _record_fields(rec)
            # the record's fields of the kept variables (the others are free: a Load may read anything
            # of them), as the log keeps them (`Shared.logged`)
            out += [leaf for f in GroupRecord.values if f in RECORD_VARS and f in self.keep
                    for leaf in _flat(fields[f], f"{RECORD}.{f}")]
        return out + [(n, self.system.shared.params[n]) for n in self.rigid]

    def args(self, state: dict, rec) -> list:
        """Inv's arguments for this state and record."""
        return [e for _, e in self._leaves(state, rec)]

    def inv_of(self, state: dict, rec):
        return self.inv(*self.args(state, rec))

    def clause(self, rule: "Rule", false=None):
        """∀ free constants: the rule's body ⇒ its head (`false` for a query: z3's False, or a
        relation of no arguments that stands for it), with the table's functions made values."""
        name = (self.inv.name(),) + ((false.decl().name(),) if false is not None else ())
        body = ([self.inv(*rule.pre)] if rule.pre is not None else []) + rule.facts
        head = self.inv(*rule.post) if rule.post is not None else z3.BoolVal(False) if false is None else false
        (*body, head), same_fn = ackermannize([*body, head], name)
        consts, _ = _uninterpreted([*body, *same_fn, head], name)
        matrix = z3.Implies(z3.And(*body, *same_fn), head)
        return z3.ForAll(consts, matrix) if consts else matrix

    @property
    def clauses(self) -> list:
        return [self.clause(r) for r in self.rules]

    def step(self, c) -> None:
        """The clauses of one step (RowCtx `c`): from Inv before to Inv after.  A step that
        appends a group record leaves the log's record as it was (the append fails, or is not
        the last) or, once stored, replaces it with what the log keeps of the record it captured."""
        before = self.args(c.shared.state, self.rec)
        after = self.args(c.post, self.rec)      # (read first: reading it may add facts)
        self.rules.append(Rule(f"step {c.i}", before, c.facts(), after, c.i))
        if RECORD not in self.keep:
            return
        for k, (cond, fields) in enumerate(c.appends):
            rec, side, _ = c.shared.logged(fields)
            self.rules.append(Rule(f"step {c.i} stores {k}", before, c.facts() + side + [cond],
                                   self.args(c.post, rec), c.i, k))

    def query(self, body: list, step: int | None = None) -> None:
        """Inv ∧ body ⇒ false (body: what breaks the invariant; `step`: the step it is about, for a
        step or output invariant)."""
        self.rules.append(Rule(f"query {len(self.rules)}", self.args(self.system.shared.state, self.rec),
                               body, None, step))

    def solve(self, work: int, seed: int = 0):
        """sat: an Inv exists (safe); unsat: a derivation of false (a path to a violation).
        `work`: Z3's resource units it may spend (`obligations.Work`); `seed`: Spacer's random seed."""
        s = z3.SolverFor("HORN")
        s.set("rlimit", rlimit(work))
        s.set("fp.spacer.random_seed", seed)
        s.set("fp.xform.inline_eager", False)
        s.add(*self.clauses)
        return s.check(), s

    def lemmas(self, solver) -> list:
        """The conjuncts of the relation Spacer found, over the named variables."""
        inv = solver.model().eval(self.inv(*[self.names[n] for n, _ in self.pre]))
        inv = z3.simplify(inv)
        if z3.is_and(inv):
            return list(inv.children())
        return [] if z3.is_true(inv) else [inv]


def row_reads(row) -> set[str]:
    """The state variables a row reads (its guard, updates and outputs), and "record" where it
    reads the loaded record."""
    terms = [row.guard]
    for st in row.steps:
        if isinstance(st, Set_):
            terms += list(st.updates.values())
        else:
            terms += [t for t in (st.member, st.duration, st.over, st.when, *st.fields.values())
                      if isinstance(t, Term)]
    out = set()
    for t in terms:
        for n in walk(t):
            if n.op == "var":
                out.add(n.data.removeprefix("prev:"))
            elif n.op == "param" and n.data == RECORD:
                out.add(RECORD)
    return out


def _step_reads_writes(specs: list) -> list[tuple[set, set]]:
    """(reads, writes) of each step; a step that appends a group record writes "record"."""
    out = []
    for sp in specs:
        rows = [r for r in sp if not isinstance(r, int)]
        writes = set().union(*(written(r) for r in rows))
        if any(appends_group_record(r) for r in rows):
            writes.add(RECORD)
        out.append((set().union(*(row_reads(r) for r in rows)), writes))
    return out


def widen(keep: set[str], specs: list, by: int = 3) -> set[str]:
    """`keep` and the `by` variables outside it that the most steps writing a variable of
    `keep` read: a step of the cone of influence at a time (the whole cone at once is nearly
    every variable, where Spacer is slow)."""
    score: dict[str, int] = {}
    for reads, writes in _step_reads_writes(specs):
        if writes & keep:
            for v in reads - keep:
                score[v] = score.get(v, 0) + 1
    best = sorted(score, key=lambda v: (-score[v], v))[:by]
    return keep | set(best)


ALL = {v.name for v in STATE_VARS} | {RECORD}
CONFIG = tuple(n for n in PARAM_TYPES if n.startswith("cfg_"))


def clauses(system, inv: Invariant, keep: set[str], rigid: tuple[str, ...]) -> Horn:
    """The Horn clauses of every step of `system` and of what breaks `inv`, Inv over `keep` (and the
    configuration `rigid`).  Over every variable a path is believed: then every step has the one
    configuration (a path that changes it is no broker's), though the invariant may not read it."""
    h = Horn(system, keep, CONFIG if keep >= ALL else rigid)
    for i in range(len(system.specs)):
        h.step(system.row(i))
    for body, step in queries(system, inv)(h):
        h.query(body, step)
    return h


def spacer(system, inv: Invariant, budget_s: float = 30.0,
           start: set[str] | None = None, seed: int = 0) -> SpacerResult:
    """Spacer on the table's Horn clauses in `system` (a fixed-size reading), localized: Inv
    over the invariant's variables first, widened along the cone of influence (`widen`) while
    Spacer finds a path to a violation that may come from the variables left free."""
    t0 = time.perf_counter()
    budget = Work(budget_s)
    # the log's record from the start: without it a Load may read any group
    keep = set(start or ()) | {RECORD} | {n.data.removeprefix("prev:") for n in walk(inv.formula) if n.op == "var"}
    rigid = rigid_config(inv)
    attempts: list[dict] = []
    while True:
        if budget.spent():
            return SpacerResult("unknown", sorted(keep), reason=f"its budget ({budget_s:g} s of Z3 work) spent",
                                seconds=time.perf_counter() - t0, attempts=attempts)
        h = clauses(system, inv, keep, rigid)
        a0 = time.perf_counter()
        res, solver = h.solve(budget.left(), seed)
        attempts.append({"variables": sorted(keep), "result": str(res), "seconds": round(time.perf_counter() - a0, 3)})
        if res == z3.sat:
            formulas = h.lemmas(solver)
            return SpacerResult("proved", sorted(keep), [" ".join(str(f).split()) for f in formulas],
                                seconds=time.perf_counter() - t0,
                                attempts=attempts, formulas=formulas, names=h.names)
        if res == z3.unknown:
            return SpacerResult("unknown", sorted(keep), reason=f"Spacer gave up ({solver.reason_unknown()})",
                                seconds=time.perf_counter() - t0, attempts=attempts)
        if keep >= ALL:
            return SpacerResult("counterexample", sorted(keep), reason="Spacer derived a path from the blank "
                                "group to a state that breaks it in the clauses' over-approximation (requests "
                                "are any the environment's assumptions allow; a Load reads any offsets, and "
                                "members' protocols cut to one by a function the clauses know nothing of); not a "
                                "violation unless its path replays concretely",
                                seconds=time.perf_counter() - t0,
                                attempts=attempts, horn=h, left=budget.left())
        wider = widen(keep, system.specs)
        keep = wider if wider != keep else ALL


# -- the lemmas found, against the states the explicit checker reaches ----------------------

def _fit(value, t, sizes: dict):
    """A concrete value of a world as a value for the domain sizes `sizes`, or None when it
    speaks of an element past them (a state with more members than the proof's N)."""
    if t.kind == "record":
        parts = [_fit(v, ft, sizes) for v, ft in zip(value, t.args)]
        return None if any(p is None for p in parts) else tuple(parts)
    if t.kind == "map":
        n, dflt = sizes[t.key], default_of(t.value)
        if any(v != dflt for v in value[n:]):
            return None
        parts = [_fit(v, t.value, sizes) for v in list(value[:n]) + [dflt] * (n - len(value))]
        return None if any(p is None for p in parts) else parts
    if t.kind == "set":
        return None if value >> sizes[t.key] else value
    if t.kind == "dom":
        return None if value >= sizes[t.name] or value < NONE else value
    return value


def rigid_config(inv: Invariant) -> tuple[str, ...]:
    """The configuration parameters (`cfg_*`) the invariant reads."""
    return tuple(sorted({n.data for n in walk(inv.formula) if n.op == "param" and n.data.startswith("cfg_")}))


def refuted(result: SpacerResult, system, presets: tuple[str, ...], rows=None) -> tuple[dict, int]:
    """Each lemma Spacer found that a reachable state of `presets` (with no more members than
    the proof's N) breaks, with the world; and how many states were fit to check."""
    sizes = system.rd.sizes
    blank = system.rd.blank_record()
    rec_t = GroupRecord
    bad: dict[str, str] = {}
    checked = 0
    for preset in presets:
        _, pairs = reached_with_record(preset, rows)
        config = world_config(preset, rows)
        for group, rec in pairs:
            vals = [_fit(x, v.type, sizes) for x, v in zip(group, STATE_VARS)]
            r = _fit(rec, rec_t, sizes) if rec is not None else None
            if any(x is None for x in vals) or (rec is not None and r is None):
                continue
            checked += 1
            state = {v.name: concrete_to_z3(x, v.type, sizes) for x, v in zip(vals, STATE_VARS)}
            record = concrete_to_z3(r, rec_t, sizes) if r is not None else blank
            leaves = dict(_flat_named(state, record))
            leaves.update({n: z3.IntVal(v) for n, v in config.items()})
            subst = [(c, leaves[n]) for n, c in result.names.items()]
            for text, f in zip(result.lemmas, result.formulas):
                if text not in bad and z3.is_false(z3.simplify(z3.substitute(f, *subst))):
                    bad[text] = preset
    return bad, checked


def _flat_named(state: dict, rec) -> list[tuple[str, object]]:
    fields = _record_fields(rec)
    return ([leaf for v in STATE_VARS for leaf in _flat(state[v.name], v.name)]
            + [leaf for f in GroupRecord.values if f in RECORD_VARS for leaf in _flat(fields[f], f"{RECORD}.{f}")])


def queries(system, inv: Invariant):
    """What breaks `inv`, as the bodies of Horn queries with the step each is about (None for a
    state invariant: false of a well-formed state; a step or output invariant: false of a step)."""

    def of(h: Horn) -> list[list]:
        if inv.kind == "state":
            v, side, _ = system.shared.pre(inv.formula)
            return [(system.rd.well_formed(system.shared.state, {}) + side + [z3.Not(v)], None)]
        out = []
        for i in range(len(system.specs)):
            c = system.row(i)
            g = kind_goal(inv, c)
            if g is not None:
                out.append(([*c.facts(), z3.Not(g)], i))
        return out
    return of
