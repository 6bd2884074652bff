"""The table read for Z3, in one of two readings (unbounded sorts, or fixed sizes): fresh states,
the rows' relations, what a row writes and hands out, and what it must establish for an invariant
(`kind_goal`)."""
from __future__ import annotations

import functools

import z3

from groupspec.spec import unbounded as U
from groupspec.spec.handling import RECORD, SELECTED_ONLY
from groupspec.spec.invariants import Invariant
from groupspec.spec.kafka import ERRORS
from groupspec.spec.lang import Term, default_of
from groupspec.spec.rows import Out, Set_
from groupspec.spec.schema import MEMBER, PARAM_TYPES, STATE_VARS, TRIGGER_BY_NAME, GroupRecord
from groupspec.spec.symbolic import (FixedMeaning, Lazy, SymEnv, concrete_to_z3, fresh, fresh_params, fresh_state,
                                     params_well_formed, row_relation, state_well_formed, to_z3)
from groupspec.spec.table import completion, enabled
from groupspec.spec.z3_fast import conj, implies

from .obligations import Assumption, Lemma, params_of, vars_of, as_lemma, is_config, rlimit

class Reading:
    """One reading of the table (unbounded, or fixed sizes): fresh states, terms, rows."""

    def __init__(self, sizes: dict | None = None):
        self.sizes = sizes
        self.sorts = None if sizes else U.Sorts()
        self.label = "unbounded" if sizes is None else "N=" + str(sizes[MEMBER])

    def fresh(self, tag: str):
        if self.sizes:
            return fresh_state(self.sizes, f"s{tag}."), fresh_params(self.sizes, f"p{tag}.")
        return U.fresh_state(self.sorts, f"s{tag}."), U.fresh_params(self.sorts, f"p{tag}.")

    def fresh_value(self, name: str, t):
        return fresh(name, t, self.sizes) if self.sizes else self.sorts.fresh(name, t)

    def well_formed(self, state, params) -> list:
        """What makes a state (None: no state) and parameters type-correct."""
        if self.sizes:
            return (state_well_formed(state, self.sizes) if state else []) + params_well_formed(params, self.sizes)
        return (U.state_well_formed(self.sorts, state) if state else []) + U.params_well_formed(self.sorts, params)

    def read(self, t: Term, state: dict, params: dict, side: list, approx: set):
        if self.sizes:
            return to_z3(t, SymEnv(self.sizes, state, params))
        r = U.Reading(self.sorts, state, params)
        v = r.term(t)
        side += r.side
        approx |= r.approximated
        return v

    def cardinality(self, facts: list) -> list:
        """What finite cardinality says of the counts among `facts` (unbounded: `Sorts.cardinality`;
        for fixed sizes a count is exact)."""
        return self.sorts.cardinality(facts) if self.sorts else []

    def relation(self, row, state, params, tag: str):
        if self.sizes:
            g, post, outs = row_relation(row, state, params, self.sizes, meaning=FixedMeaning(self.sizes, tag),
                                         lazy=True)
            return g, post, outs, [], set()
        m = U.UnboundedMeaning(self.sorts, tag)
        g, post, outs = row_relation(row, state, params, None, meaning=m, lazy=True)
        return g, post, outs, m.side, m.approximated

    def value(self, v, t):
        if self.sizes:
            return concrete_to_z3(v, t, self.sizes)
        if t.kind == "map":
            srt = self.sorts.sort[t.key]
            return z3.Store(z3.K(srt, self.sorts.value(v, t.value)), self.sorts.none[t.key], self.sorts.default(t.value))
        if t.kind == "record":
            return tuple(self.value(x, ft) for x, ft in zip(v, t.args))
        return self.sorts.value(v, t)

    def blank_state(self) -> dict:
        out = {}
        for v in STATE_VARS:
            if self.sizes and v.type.kind == "map":
                out[v.name] = [concrete_to_z3(v.initial, v.type.value, self.sizes)] * self.sizes[v.type.key]
            else:
                out[v.name] = self.value(v.initial, v.type)
        return out

    def blank_record(self):
        vals = []
        for t in GroupRecord.args:
            if t.kind == "map":
                vals.append(self.value(default_of(t.value), t) if not self.sizes else
                            [concrete_to_z3(default_of(t.value), t.value, self.sizes)] * self.sizes[t.key])
            else:
                vals.append(self.value(default_of(t), t))
        return tuple(vals)


def written(row) -> set[str]:
    """The state variables a row may change."""
    out = {k for s in row.steps if isinstance(s, Set_) for k in s.updates}
    if row.target is not None:
        out.add("state")
    return out


def handed_out(outs: list) -> object:
    """The step answers some SyncGroup with NONE (it hands out an assignment)."""
    none = ERRORS.index("NONE")
    conds = []
    for o in outs:
        if o.kind in ("reply", "answer") and o.api == "SyncGroup" and "error" in o.fields:
            c = z3.And(o.cond, o.fields["error"] == none)
            var = getattr(o, "var", None)
            conds.append(z3.Exists([var], c) if var is not None else c)
    return z3.Or(conds) if conds else z3.BoolVal(False)


def appends_group_record(row) -> bool:
    """The row appends to the group-metadata log (not only offsets)."""
    return any(isinstance(st, Out) and st.kind == "append" and st.api != "offsets" for st in row.steps)


def appended_records(outs: list) -> list:
    """(condition, record fields) of each group-record append of a row."""
    res = []
    for o in outs:
        if o.kind == "append" and o.api != "offsets":
            res.append((o.cond, o.fields))
    return res


COMPLETIONS = {"StoreGroupDone", "StoreOffsetsDone"}


def steps_of(rows: list) -> list[tuple]:
    """The steps induction goes over: every row but the append completions, and each append
    output of a row followed by each row of its completion (an append completes before the
    group changes otherwise, as in the closed world: the completion's parameters are what the
    append captured, `table.completion`)."""
    done = {t: [r for r in rows if r.trigger == t] for t in COMPLETIONS}
    out = [(r,) for r in rows if r.trigger not in COMPLETIONS]
    for r in rows:
        appends = [st for st in r.steps if isinstance(st, Out) and st.kind == "append"]
        for k, o in enumerate(appends):
            trig = "StoreOffsetsDone" if o.api == "offsets" else "StoreGroupDone"
            out += [(r, k, b) for b in done[trig]]
    return out


class Shared:
    """The state before every step and the parameters, one set of Z3 constants for all
    rows (each row has its own solver), so that a lemma is read before the steps once."""

    def __init__(self, rd: Reading):
        self.rd = rd
        self.state, self.params = rd.fresh("")
        self.error = rd.fresh("b")[1]["error"]
        self.well_formed = rd.well_formed(self.state, self.params)
        self.selected_only = rd.fresh_value("selected_only", SELECTED_ONLY.type)
        self._pre: dict[int, tuple] = {}

    def logged(self, fields: dict) -> tuple:
        """The record the log keeps of an append that captured `fields` (handling.RECORD: each
        member's protocols cut to the selected one, by the host's `selected_only`, a function
        the proof knows nothing of), as a GroupRecord tuple; offsets as captured.  Returns it,
        with the facts its reading added and the operators it over-approximated."""
        blank = self.rd.blank_record()
        raw = {name: fields.get(name, blank[i]) for i, name in enumerate(GroupRecord.values)}
        params = {"rec." + k: v for k, v in raw.items()}
        params["selected_only"] = self.selected_only
        side: list = []
        approx: set = set()
        rec = tuple(raw[name] if name not in RECORD or RECORD[name].op == "param"
                    else self.rd.read(RECORD[name], {}, params, side, approx) for name in GroupRecord.values)
        return rec, side, approx

    def pre(self, t: Term):
        got = self._pre.get(id(t))
        if got is None:
            side: list = []
            approx: set = set()
            v = self.rd.read(t, self.state, self.params, side, approx)
            got = self._pre[id(t)] = (v, side, approx, t)
        return got[:3]


@functools.lru_cache(maxsize=None)
def _literal(name: str) -> z3.BoolRef:
    """The literal that stands for lemma `name` in a query (its unsat core names lemmas by it)."""
    return z3.Bool(f"L:{name}")


class RowCtx:
    """One step (a row, or a row and the completion of its append) in one reading: its
    relation, the facts assumed before it, and a solver."""

    def __init__(self, rd: Reading, i: int, spec: tuple, assumptions: list[Assumption], work: int,
                 shared: "Shared"):
        self.rd, self.i, self.spec, self.shared = rd, i, spec, shared
        row = spec[0]
        self.state, self.params = shared.state, shared.params
        self.guard, self.post, self.outs, side, self.approx = rd.relation(row, self.state, self.params, f"@{i}")
        self.row, self.name = row, row.name
        # the post-state is built as it is read: the facts its reading introduces (`side`, a
        # list that grows with it) are asked with every query
        self.sides = [side]
        self.base = shared.well_formed + [self.guard]
        self.step_state, self.step_params = self.state, self.params
        self.written = written(row)
        self.appends = appended_records(self.outs)
        if len(spec) == 3:
            _, k, done = spec
            o = [x for x in self.outs if x.kind == "append"][k]
            _, mapped = completion(o.api, o.fields)
            pb = dict(self.params, error=shared.error)
            for n, v in mapped.items():
                pb[n] = v if isinstance(v, (z3.ExprRef, tuple, list)) else rd.value(v, PARAM_TYPES[n])
            g2, post, outs2, side2, approx2 = rd.relation(done, self.post, pb, f"@{i}b")
            self.base += rd.well_formed({}, {"error": pb["error"]}) + [o.cond, g2]
            self.sides.append(side2)
            self.step_state, self.step_params = self.post, pb
            self.post, self.outs = post, outs2
            self.approx |= approx2
            self.row, self.name = done, f"{row.name} → {done.name}"
            self.written |= written(done)
            self.appends = []
        trig = TRIGGER_BY_NAME[row.trigger]
        self.base.append(self.pre(enabled(row.trigger)))
        self.assumed = [a for a in assumptions if params_of(a.formula) <= set(trig.params) or is_config(a)]
        self.base += [self.pre(a.formula) for a in self.assumed]
        self.loads = "record" in trig.params
        self.work = work
        self._obl: dict = {}

    def _facts(self, side: list) -> None:
        """Facts about fresh values (counts, maxima) a reading introduced: always true."""
        if side:
            self.base.extend(side)

    def pre(self, t: Term):
        v, side, approx = self.shared.pre(t)
        self.approx |= approx
        self._facts(side)
        return v

    def post_of(self, t: Term):
        side: list = []
        v = self.rd.read(t, self.post, self.params, side, self.approx)
        self._facts(side)
        return v

    def facts(self) -> list:
        """What every query of this step assumes: the step, the facts its readings added, and what
        finite cardinality says of the counts among them."""
        facts = self.base + [f for side in self.sides for f in side]
        return facts + self.rd.cardinality(facts)

    def step_of(self, t: Term):
        """Step term t of the step's last row (from the state before it)."""
        both = Lazy(self.post, {"prev:" + v.name: (lambda k=v.name: self.step_state[k]) for v in STATE_VARS})
        side: list = []
        v = self.rd.read(t, both, self.step_params, side, self.approx)
        self._facts(side)
        return v

    def record_of(self, t: Term, fields: dict):
        """Term t (about P.record) of the record an append output captured."""
        rec, side, approx = self.shared.logged(fields)
        self.approx |= approx
        v = self.rd.read(t, self.state, {**self.params, "record": rec}, side, self.approx)
        self._facts(side)
        return v

    def ask(self, lemmas: list[Lemma], bad, extra: list[Lemma] = (), work: int | None = None) -> tuple:
        """Is there a step from a state where `lemmas` hold to one where `bad` holds?  A fresh
        solver each time: one kept across queries gathers the lemmas and goals of every earlier
        question, and Z3 then gives up (unknown) on queries it answers at once alone.  `extra`
        lemmas are assumed through literals, for an unsat core.  Returns (result, solver, the
        literals of `extra`)."""
        s = z3.Solver()
        s.set("rlimit", rlimit(self.work if work is None else min(work, self.work)))
        pre = [self.pre_lemma(lm) for lm in lemmas]
        lits = {_literal(lm.name): lm for lm in extra}
        s.add(conj([*pre, bad, *[implies(x, self.pre_lemma(lm)) for x, lm in lits.items()], *self.facts()]))
        return s.check(*lits), s, lits

    def pre_lemma(self, lm: Lemma):
        """Lemma `lm` before the step (a record lemma is about the record a Load reads)."""
        if lm.record and not self.loads:
            return z3.BoolVal(True)
        return self.pre(lm.formula)

    def obligation(self, lm: Lemma):
        """What the row must keep of lemma `lm` (None: it cannot break it)."""
        key = (lm.name, id(lm.formula))
        if key not in self._obl:
            self._obl[key] = self._obligation(lm)
        return self._obl[key]

    def _obligation(self, lm: Lemma):
        if lm.record:
            obs = []
            for cond, fields in self.appends:
                obs.append(z3.Implies(cond, self.record_of(lm.formula, fields)))
            return z3.And(obs) if obs else None
        if not (vars_of(lm.formula) & self.written):
            return None
        return self.post_of(lm.formula)



def kind_goal(inv: Invariant, c: RowCtx):
    """What row `c` must establish for invariant `inv` (None: nothing)."""
    if inv.kind == "state":
        return c.obligation(as_lemma(inv))
    if inv.kind == "step":
        return c.step_of(inv.formula)
    if inv.kind == "output":
        h = handed_out(c.outs)
        if z3.is_false(z3.simplify(h)):
            return None
        return z3.Implies(h, c.post_of(inv.formula))
    raise ValueError(inv.kind)
