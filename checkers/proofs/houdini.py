"""Houdini: the largest subset of candidate lemmas that is inductive as a whole, over the table in
one reading with the environment's assumptions (induction queries, unsat cores)."""
from __future__ import annotations

import time
from typing import Callable

import z3

from groupspec.spec.invariants import Invariant
from groupspec.spec.table import ROWS

from .obligations import (Assumption, DEBUG, ENVIRONMENT, is_config, Lemma, QUERY_WORK, QUICK_WORK, rlimit, vars_of,
                          Work)
from .readings import Reading, RowCtx, Shared, appends_group_record, steps_of, written
from .results import model_value


class System:
    """The table in one reading, with the environment's assumptions: induction queries,
    Houdini, unsat cores."""

    def __init__(self, reading: Reading, rows=None, extra: tuple[Assumption, ...] = (),
                 work: int = QUERY_WORK, falsifier: "System | None" = None):
        self.rd = reading
        # the same table for fixed small sizes, where a query is decidable and a counterexample
        # comes fast: asked when this reading's query is undecided (`small_cti`)
        self.falsifier = falsifier
        self.rows = list(ROWS if rows is None else rows)
        self.assumptions = list(ENVIRONMENT) + list(extra)
        self.work = work
        self._ctx: dict[int, RowCtx] = {}
        self.shared = Shared(reading)
        self.specs = steps_of(self.rows)
        self.writes = [set().union(*(written(r) for r in sp if not isinstance(r, int))) for sp in self.specs]
        self.unknown: list[str] = []
        self.cores: dict[int, set] = {}     # the unsat core of each step in the last Houdini run

    def row(self, i: int) -> RowCtx:
        """Row i in this reading (built when first asked: a proof that only some rows can
        affect builds only those)."""
        c = self._ctx.get(i)
        if c is None:
            c = self._ctx[i] = RowCtx(self.rd, i, self.specs[i], self.assumptions, self.work, self.shared)
        return c

    def ctx_built(self) -> list[RowCtx]:
        """The steps built so far."""
        return list(self._ctx.values())

    @property
    def ctx(self) -> list[RowCtx]:
        return [self.row(i) for i in range(len(self.specs))]

    def affecting(self, lemmas) -> list[RowCtx]:
        """The steps that may break one of `lemmas` (built only now: the others are never read):
        those that write a variable a lemma reads, and those that append the group record a
        record lemma speaks of (an append's completion appends nothing more)."""
        reads = set().union(*(vars_of(lm.formula) for lm in lemmas if not lm.record))
        records = any(lm.record for lm in lemmas)
        return [self.row(i) for i, sp in enumerate(self.specs)
                if self.writes[i] & reads or (records and len(sp) == 1 and appends_group_record(sp[0]))]

    def touching(self, reads):
        """The rows that write some variable of `reads` (all rows when None; `reads` may also
        be a predicate on a row), each built as it is reached."""
        if callable(reads):
            return (self.row(i) for i, sp in enumerate(self.specs) if reads(sp[-1]))
        return (self.row(i) for i, w in enumerate(self.writes) if reads is None or w & reads)

    def stutter_invariant(self, inv: Invariant) -> bool:
        """A step invariant holds of every step that leaves the variables it reads unchanged."""
        st, params = self.rd.fresh("stutter")
        both = {**st, **{"prev:" + k: v for k, v in st.items()}}
        side: list = []
        v = self.rd.read(inv.formula, both, params, side, set())
        s = z3.Solver()
        s.set("rlimit", rlimit(self.work))
        s.add(*self.rd.well_formed(st, params), *side, z3.Not(v))
        return s.check() == z3.unsat

    def initially(self, lm: Lemma) -> bool:
        """The lemma holds of a group the coordinator does not hold (and of the blank record)."""
        s = z3.Solver()
        s.set("rlimit", rlimit(self.work))
        st = self.rd.blank_state()
        _, params = self.rd.fresh("init")
        if lm.record:
            params = {**params, "record": self.rd.blank_record()}
        side: list = []
        v = self.rd.read(lm.formula, st, params, side, set())
        config = [self.rd.read(a.formula, st, params, side, set()) for a in self.assumptions if is_config(a)]
        s.add(*side, *config, z3.Not(v))
        return s.check() == z3.unsat

    def houdini(self, cands: list[Lemma], budget: Work | None = None) -> tuple[list[Lemma] | None, dict]:
        """The largest subset of `cands` inductive as a whole (relative to the assumptions).
        Returns it and, for each candidate dropped, the row that broke it; None for the subset
        when the budget was spent first (nothing is claimed then)."""
        alive = {lm.name: lm for lm in cands if self.initially(lm)}
        dropped = {lm.name: "not true of a group the coordinator does not hold"
                   for lm in cands if lm.name not in alive}
        # a worklist of steps: a step shown to keep every obligation is asked again only when a
        # lemma its proof used (the query's unsat core) is dropped later
        core: dict[int, set] = {}
        self.cores = core
        todo = [c for c in self.affecting(alive.values())]
        while todo:
            c = todo.pop(0)
            if c.i in core:
                continue
            while True:
                if budget is not None and budget.spent():
                    return None, dropped
                obs = [(lm, c.obligation(lm)) for lm in alive.values()]
                obs = [(lm, o) for lm, o in obs if o is not None]
                if not obs:
                    core[c.i] = set()
                    break
                t0 = time.perf_counter()
                # all obligations at once, briefly: on unknown, each on its own with the full time
                res, solver, lits = c.ask([], z3.Or([z3.Not(o) for _, o in obs]), list(alive.values()),
                                          work=QUICK_WORK)
                if DEBUG:
                    print(f"  houdini {self.rd.label} {c.name[:60]:60} {res} {time.perf_counter() - t0:.3f}s "
                          f"{len(obs)} obligations", flush=True)
                if res == z3.unsat:
                    core[c.i] = {lits[x].name for x in solver.unsat_core() if x in lits}
                    break
                if res == z3.unknown:
                    # the small sizes' counterexamples first, as many as there are; then each
                    # obligation left on its own, from the lemmas left
                    small: set[str] = set()
                    while more := self.small_cti(c.i, [lm for lm in alive.values() if lm.name not in small],
                                                 lambda f: [(lm, f.obligation(lm)) for lm, _ in obs
                                                            if lm.name not in small]):
                        small |= more
                    rest = [lm for lm in alive.values() if lm.name not in small]
                    bad = [lm for lm, o in obs if lm.name in small]
                    alone = [(lm, o) for lm, o in obs if lm.name not in small]
                else:
                    m = solver.model()
                    bad = [lm for lm, o in obs if model_value(m, o) is False]
                    # the model left every obligation undecided: ask one at a time
                    rest, alone = list(alive.values()), ([] if bad else obs)
                for lm, o in alone:     # each a query of its own: the budget is looked at before each
                    if budget is not None and budget.spent():
                        return None, dropped
                    if c.ask(rest, z3.Not(o))[0] != z3.unsat:
                        bad.append(lm)
                if not bad:     # each obligation alone is kept: the step keeps them all
                    core[c.i] = {lm.name for lm in alive.values()}
                    break
                names = {lm.name for lm in bad}
                for lm in bad:
                    dropped[lm.name] = c.name
                    del alive[lm.name]
                for i in [i for i, used in core.items() if used & names]:
                    del core[i]
                    todo.append(self.row(i))
        return list(alive.values()), dropped

    def check_goal(self, goal_of: Callable[[RowCtx], object], lemmas: list[Lemma], reads: set[str] | None = None,
                   work: int | None = None, first: bool = False, small: bool = True):
        """For every row (that writes a variable of `reads`): lemmas before ∧ row ⇒ goal.
        Returns (failures [(ctx, model)], unknown rows, the lemmas the unsat cores used);
        `first`: stop at the first row that fails or is unknown; `small`: a row Z3 does not
        decide is asked in the falsifier's small sizes, for a counterexample."""
        fails, unknown, used = [], [], set()
        for c in self.touching(reads):
            if first and (fails or unknown):
                break
            o = goal_of(c)
            if o is None or z3.is_true(z3.simplify(o)):
                continue
            res, solver, lits = c.ask([], z3.Not(o), lemmas, work)
            if res == z3.unsat:
                used |= {lits[x].name for x in solver.unsat_core() if x in lits}
            elif res == z3.sat:
                fails.append((c, solver.model()))
            elif small and self.falsifier is not None and (
                    cex := self.falsifier.counterexample(c.i, lemmas, goal_of)):
                fails.append(cex)
            else:
                unknown.append(c.name)
        return fails, unknown, used

    def small_cti(self, i: int, lemmas: list[Lemma], obligations: Callable[["RowCtx"], list]) -> set[str]:
        """The lemmas whose obligations step i breaks from a state of the falsifier's small
        sizes where all of `lemmas` hold (none when there is no falsifier or no such state).
        Such a state is a real counterexample to induction in every reading, the unbounded
        one included: N members are one case of any number."""
        if self.falsifier is None:
            return set()
        f = self.falsifier.row(i)
        obs = [(lm, o) for lm, o in obligations(f) if o is not None]
        if not obs:
            return set()
        res, solver, _ = f.ask(lemmas, z3.Or([z3.Not(o) for _, o in obs]))
        if res != z3.sat:
            return set()
        m = solver.model()
        return {lm.name for lm, o in obs if model_value(m, o) is False}

    def counterexample(self, i: int, lemmas: list[Lemma], goal_of: Callable[["RowCtx"], object]):
        """(ctx, model) of step i breaking the goal from a state where `lemmas` hold, in this
        reading, or None."""
        c = self.row(i)
        o = goal_of(c)
        if o is None:
            return None
        res, solver, _ = c.ask(lemmas, z3.Not(o))
        return (c, solver.model()) if res == z3.sat else None

    def closure_by_cores(self, direct: set[str], lemmas: list[Lemma], cores: dict | None = None) -> list[str]:
        """As `closure`, from the unsat cores of the last Houdini run (or `cores`, those of an
        earlier one) instead of new queries: a lemma needs what the steps that may break it used
        (all their obligations at once: a superset of its own needs, still inductive as a whole)."""
        by = {lm.name: lm for lm in lemmas}
        cores = self.cores if cores is None else cores
        need, todo = set(direct), list(direct)
        while todo:
            for c in self.affecting([by[todo.pop()]]):
                for n in cores.get(c.i, ()):
                    if n not in need:
                        need.add(n)
                        todo.append(n)
        return sorted(need)

    def closure(self, direct: set[str], lemmas: list[Lemma]) -> list[str]:
        """The lemmas `direct` needs, with the lemmas each of those needs to stay true, and so on."""
        by = {lm.name: lm for lm in lemmas}
        need, todo = set(direct), list(direct)
        while todo:
            lm = by[todo.pop()]
            _, _, used = self.check_goal(lambda c, lm=lm: c.obligation(lm), lemmas,
                                         appends_group_record if lm.record else vars_of(lm.formula))
            for n in used - need:
                need.add(n)
                todo.append(n)
        return sorted(need)
