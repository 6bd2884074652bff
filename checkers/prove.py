"""Inductive proofs of the coordinator invariants (`groupspec prove`).

For an invariant Inv of the catalog and every row of the table, Z3 is asked
whether Inv ∧ row ⇒ Inv′: the row's guard, post-state and outputs come from
`symbolic.row_relation`, read either over uninterpreted sorts
(`spec/unbounded.py`: for any number of members, instance ids, partitions and
protocols) or over fixed domain sizes (`spec/symbolic.py`: "up to N").  No
row is written again here.

Where Inv alone is not inductive, the strengthening is searched
automatically: Houdini over the catalog's state invariants and over
candidate lemmas generated from the schema's variables (templates over member
sets, the group's states, member-keyed maps) and their forms about the logged
record.  The candidates are first sifted by the states the explicit checker
reaches in small worlds (`SAMPLE_WORLDS`), so Z3 spends its queries on lemmas
that may be invariants; Houdini then starts from those about the invariant's
own variables and widens that vocabulary by the variables of the candidates a
counterexample to induction breaks (`Prover._widening`), keeping the largest
subset that is inductive as a whole.  The lemmas a proof used are the unsat
cores of its queries, closed under the lemmas those needed in turn.  Where
Houdini finds no proof, Z3's Spacer, a second engine on constrained Horn
clauses over the same rows, searches for an inductive relation of its own
(`chc.py`; for fixed sizes).

What the table leaves to its environment is assumed, in words and as terms
(`ENVIRONMENT`): a fresh member id is one never issued; a request's member id
is one the group knows; a loaded record is one a coordinator wrote (the record
lemmas, checked at every row that appends a group record, and on the blank
record); a timer fires only when armed (`table.ENABLED`).  Closed-world
invariants add what the clients guarantee (`CLOSED_WORLD`).

Every query has a limit; `unknown` is reported as unknown, never as proved.  The
limits and the search's budget are counted in Z3's resource units, not seconds
(`Work`), so a loaded machine proves what a quiet one does.  (Z3 5.x crashes in
its model-based quantifier instantiation when such a limit runs out, Z3Prover/z3
issue 10385: pyproject.toml keeps Z3 below 5.)
"""
from __future__ import annotations

import functools
import itertools
import time
from dataclasses import dataclass, field
from typing import Callable

import z3

from groupspec.spec import unbounded as U
from groupspec.spec.invariants import INVARIANTS, Invariant
from groupspec.spec.lang import Count, ForAll, Implies, Not, Or, Term, lift, walk
from groupspec.spec.rows import Out, Set_
from groupspec.spec.schema import (MEMBER, PARAM_TYPES, STATE_VARS, STATES, TRIGGER_BY_NAME,
                                   GroupRecord, GroupState, P, V)
from groupspec.spec.symbolic import (FixedMeaning, Lazy, SymEnv, concrete_to_z3, fresh, fresh_params, fresh_state,
                                     params_well_formed, row_relation, state_well_formed, to_z3)
from groupspec.spec.table import ROWS, enabled
from groupspec.spec.z3_fast import conj, implies

# Z3's resource units (its `rlimit`) in a second of solving on this machine (about 6 to 8
# million on the induction queries of assignments-disjoint, measured 2026-11): the seconds
# given on the command line are converted at this rate.
WORK_PER_SECOND = 7_000_000
QUERY_WORK = 3 * WORK_PER_SECOND
# a query that asks many things at once (about 75 ms; the slowest that answered, unsat, took a fifth of it): on unknown it is split rather than waited on
QUICK_WORK = WORK_PER_SECOND // 14
DEBUG = False


def rlimit(work: int) -> int:
    """`work` as Z3's `rlimit` parameter: at least 1, and within its unsigned 32 bits (a larger
    value is not refused, but wraps)."""
    return max(1, min(work, 2**32 - 1))


def z3_work() -> int:
    """Z3's resource counter now (one for every solver of the context)."""
    s = z3.Solver()
    s.check()
    st = s.statistics()
    return st.get_key_value("rlimit count") if "rlimit count" in st.keys() else 0


class Work:
    """A budget of Z3 work (`seconds` converted at WORK_PER_SECOND): unlike a deadline, it is
    spent the same whatever else the machine runs."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.limit = int(seconds * WORK_PER_SECOND)
        self.start = z3_work()

    def spent(self) -> bool:
        return z3_work() - self.start > self.limit

    def left(self) -> int:
        return max(1, self.limit - (z3_work() - self.start))


STATUSES = ("proved", "proved up to N", "violated", "unknown")


# -- lemmas and assumptions ---------------------------------------------------------------

@dataclass(frozen=True)
class Lemma:
    name: str
    meaning: str
    formula: Term
    origin: str = "template"     # catalog | template | record
    record: bool = False         # about the last record in the log (P.record), not the group


@dataclass(frozen=True)
class Assumption:
    name: str
    meaning: str
    formula: Term


def _params_of(t: Term) -> frozenset[str]:
    return _names_of(t)[1]


def _vars_of(t: Term) -> frozenset[str]:
    return _names_of(t)[0]


def _names_of(t: Term) -> tuple:
    """(state variables, parameters) term t reads, kept per term (terms never change)."""
    got = _NAMES.get(id(t))
    if got is None or got[0] is not t:
        nodes = list(walk(t))
        got = _NAMES[id(t)] = (t, frozenset(n.data for n in nodes if n.op == "var"),
                               frozenset(n.data for n in nodes if n.op == "param"))
    return got[1:]


_NAMES: dict[int, tuple] = {}


_USES = (V.members | V.pending | V.awaiting_join | V.awaiting_sync | V.pending_sync | V.new_members | V.hb_armed)
ENVIRONMENT: tuple[Assumption, ...] = (
    Assumption("fresh-id-never-issued",
               "a member id the coordinator issues (JoinGroup's `fresh`) was never issued before: no member, "
               "pending member or parked request has it, no group.instance.id maps to it, and nothing is kept "
               "of it",
               P.fresh.is_some() & Not(P.fresh.in_(_USES)) & V.instance_of[P.fresh].is_none()
               & V.protos[P.fresh].is_none() & V.assignment[P.fresh].is_empty()
               & (V.session_ms[P.fresh] == 0) & (V.rebalance_ms[P.fresh] == 0)
               & ForAll(V.static.keys_where(lambda m: m.is_some()), lambda i: Not(V.static[i] == P.fresh))),
    Assumption("config-valid",
               "the broker's group.max.size is at least 1 (Kafka validates its configuration); the "
               "configuration is one value for every step",
               P.cfg_max_size >= 1),
    Assumption("request-member-known",
               "a request's member id is the group's (a member or a pending member), or none: the coordinator "
               "looks the id up in the group",
               P.member.is_none() | P.member.in_(V.members) | P.member.in_(V.pending)),
    Assumption("empty-member-id-names-none",
               "a request whose member id is empty (UNKNOWN_MEMBER_ID) names no member: the coordinator "
               "looks up no id for it",
               Implies(P.member_empty, P.member.is_none())),
)

# what the clients of a closed world guarantee, by invariant
_disjoint = (lambda m, keys: ForAll(keys, lambda a: ForAll(keys, lambda b: (a == b) | (m[a] & m[b]).is_empty())))
CLOSED_WORLD: dict[str, tuple[Assumption, ...]] = {
    "assignments-disjoint": (
        Assumption("assignor-disjoint",
                   "the leader's assignor gives no partition to two members (SyncGroup's `assignments`, and the "
                   "assignment a group-record write carries to its completion)",
                   _disjoint(P.assignments, P.assignments.keys_where(lambda s: Not(s.is_empty())))),),
}


def is_config(a: Assumption) -> bool:
    """An assumption only about the broker's configuration: true before and after every step."""
    params = _params_of(a.formula)
    return bool(params) and all(n.startswith("cfg_") for n in params)


def _st(name: str) -> Term:
    return lift(name, GroupState)


def _blank_of(v) -> Term:
    var = getattr(V, v.name)
    return var == (var.fill(v.initial) if v.type.kind == "map" else lift(v.initial, v.type))


MEMBER_SETS = [v.name for v in STATE_VARS if v.type.kind == "set" and v.type.key == MEMBER]
MEMBER_MAPS = [v for v in STATE_VARS if v.type.kind == "map" and v.type.key == MEMBER]


def _nondefault(v) -> Term:
    """The keys of member-keyed map `v` whose value is not the default (what a member carries)."""
    var = getattr(V, v.name)
    t = v.type.value
    if t.kind == "dom":
        return var.keys_where(lambda x: x.is_some())
    if t.kind == "set":
        return var.keys_where(lambda x: Not(x.is_empty()))
    return var.keys_where(lambda x: Not(x == 0))


def templates() -> list[Lemma]:
    """Candidate lemmas generated from the schema: over the member sets, the group's states,
    the member-keyed maps, the leader and the group.instance.id map."""
    out: list[Lemma] = []
    sets_ = {n: getattr(V, n) for n in MEMBER_SETS}
    for a in MEMBER_SETS:
        for b in MEMBER_SETS:
            if a != b:
                out.append(Lemma(f"{a} ⊆ {b}", f"every element of {a} is in {b}", sets_[a].subset_of(sets_[b])))
                if a < b:
                    out.append(Lemma(f"{a} ∩ {b} = ∅", f"no member id is in both {a} and {b}",
                                     (sets_[a] & sets_[b]).is_empty()))
    conds = [(st, f"in {st}", V.state == _st(st)) for st in STATES]
    conds += [("join timer", "while a delayed join is armed", Not(V.join_timer == lift("none", V.join_timer.type))),
              ("sync timer", "while the pending-sync timer is armed", V.sync_timer)]
    for label, words, cond in conds:
        for v in STATE_VARS:
            if v.name != "state":
                out.append(Lemma(f"{label} ⇒ {v.name} initial", f"{words}, {v.name} holds its initial value",
                                 Implies(cond, _blank_of(v))))
    for v in MEMBER_MAPS:
        for b in MEMBER_SETS:
            out.append(Lemma(f"{v.name} set only for {b}", f"only ids in {b} have a {v.name}",
                             _nondefault(v).subset_of(sets_[b])))
    for v in MEMBER_MAPS:
        if v.type.value.kind == "dom":      # an id-valued map: no two members share a value
            var = getattr(V, v.name)
            out.append(Lemma(f"{v.name} distinct over members", f"no two members have the same {v.name}",
                             ForAll(V.members, lambda a, var=var: ForAll(V.members, lambda b, var=var: Or(
                                 a == b, var[a].is_none(), Not(var[a] == var[b]))))))
    for b in MEMBER_SETS:
        if b != "members":      # group.max.size (a broker's config: one value for every step)
            out.append(Lemma(f"|members ∩ {b}| ≤ group.max.size",
                             f"at most group.max.size members are in {b}",
                             Count(V.members & sets_[b]) <= P.cfg_max_size))
    for b in MEMBER_SETS:
        out.append(Lemma(f"leader ∈ {b}", f"the leader, if any, is in {b}", V.leader.is_none() | V.leader.in_(sets_[b])))
        out.append(Lemma(f"sync timer ⇒ {b} ≠ ∅", f"the pending-sync timer runs only while {b} is not empty",
                         Implies(V.sync_timer, Not(sets_[b].is_empty()))))
    out += [
        Lemma("no members ⇒ no leader", "a group without members has no leader",
              Implies(V.members.is_empty(), V.leader.is_none())),
        Lemma("members ⇒ leader", "a group with members has a leader",
              Implies(Not(V.members.is_empty()), V.leader.is_some())),
        Lemma("generation ≥ 0", "the generation is never negative", V.generation >= 0),
        Lemma("static maps to members", "every group.instance.id maps to a member, or to none",
              ForAll(V.static.keys_where(lambda m: m.is_some()), lambda i: V.static[i].in_(V.members))),
        Lemma("static maps back", "a group.instance.id maps to a member that carries it",
              ForAll(V.static.keys_where(lambda m: m.is_some()), lambda i: V.instance_of[V.static[i]] == i)),
        Lemma("members' instance ids map back", "a member's group.instance.id maps to it",
              ForAll(V.members, lambda m: Implies(V.instance_of[m].is_some(), V.static[V.instance_of[m]] == m))),
        Lemma("members' assignments disjoint", "no partition is in two members' assignments",
              _disjoint(V.assignment, V.members)),
        Lemma("assignments disjoint", "no partition is in two member ids' assignments",
              _disjoint(V.assignment, V.assignment.keys_where(lambda s: Not(s.is_empty())))),
    ]
    return out


def catalog_lemmas(scope: str = "coordinator") -> list[Lemma]:
    """The catalog's state invariants as candidates (not the settled ones: they hold between
    requests only, not after every row)."""
    return [Lemma(i.name, i.meaning, i.formula, "catalog") for i in INVARIANTS
            if i.kind == "state" and not i.settled and (i.scope == "coordinator" or i.scope == scope)]


# the record's fields a lemma may speak of (offsets: the log keeps commits apart; the members'
# protocols are what the log keeps of them, `Shared.logged`)
RECORD_VARS = {f for f in GroupRecord.values} - {"offsets"}


def substitute(t: Term, mapping: dict[str, Term]) -> Term:
    """Term t with each state variable named in `mapping` replaced (bound variables are kept)."""
    memo: dict[int, Term] = {}

    def go(n: Term) -> Term:
        if n.op == "var" and n.data in mapping:
            return mapping[n.data]
        if not n.args:
            return n
        got = memo.get(id(n))
        if got is None:
            args = tuple(go(a) for a in n.args)
            got = n if all(a is b for a, b in zip(args, n.args)) else Term(n.op, args, n.type, n.data)
            memo[id(n)] = got
        return got
    return go(t)


def record_lemmas(lemmas: list[Lemma]) -> list[Lemma]:
    """Each lemma that speaks only of what the log's record holds, about the record."""
    rec = {f: P.record[f] for f in RECORD_VARS}
    for lm in lemmas:
        _RECORD_VOCAB["record: " + lm.name] = _vars_of(lm.formula)
    return [Lemma("record: " + lm.name, f"the last group record written: {lm.meaning}", substitute(lm.formula, rec),
                  "record", record=True)
            for lm in lemmas if _vars_of(lm.formula) and _vars_of(lm.formula) <= RECORD_VARS]


# -- the two readings ----------------------------------------------------------------------

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
        from groupspec.spec.lang import default_of
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
    from groupspec.spec.kafka import ERRORS
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
        from groupspec.spec.handling import SELECTED_ONLY
        self.selected_only = rd.fresh_value("selected_only", SELECTED_ONLY.type)
        self._pre: dict[int, tuple] = {}

    def logged(self, fields: dict) -> tuple:
        """The record the log keeps of an append that captured `fields` (handling.RECORD: each
        member's protocols cut to the selected one, by the host's `selected_only`, a function
        the proof knows nothing of), as a GroupRecord tuple; offsets as captured.  Returns it,
        with the facts its reading added and the operators it over-approximated."""
        from groupspec.spec.handling import RECORD
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
        from groupspec.spec.table import completion
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
        self.assumed = [a for a in assumptions if _params_of(a.formula) <= set(trig.params) or is_config(a)]
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
        """What every query of this step assumes: the step, and the facts its readings added."""
        return self.base + [f for side in self.sides for f in side]

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
        if not (_vars_of(lm.formula) & self.written):
            return None
        return self.post_of(lm.formula)


# -- results -------------------------------------------------------------------------------

@dataclass
class CTI:
    """A counterexample to induction: a state where the lemmas hold, a row, and the state after it."""
    row: str
    reading: str
    pre: dict
    params: dict
    post: dict
    words: str
    scenario: str
    approximated: list = field(default_factory=list)

    def as_json(self) -> dict:
        return {"row": self.row, "reading": self.reading, "pre": self.pre, "params": self.params,
                "post": self.post, "words": self.words, "scenario_fragment": self.scenario,
                "approximated": self.approximated}


@dataclass
class Proof:
    name: str
    status: str
    method: str
    lemmas: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reason: str = ""
    assumptions: list[str] = field(default_factory=list)
    cti: CTI | None = None
    bound: int | None = None
    approximated: list = field(default_factory=list)
    engine: str = "houdini"     # houdini: lemmas are the candidates' names; spacer: Spacer's conjuncts

    def as_json(self) -> dict:
        d = {"name": self.name, "status": self.status, "method": self.method, "lemmas": self.lemmas,
             "seconds": round(self.seconds, 3), "reason": self.reason, "assumptions": self.assumptions,
             "engine": self.engine}
        if self.bound is not None:
            d["bound"] = self.bound
        if self.cti is not None:
            d["cti"] = self.cti.as_json()
        if self.approximated:
            d["approximated"] = self.approximated
        return d


def model_value(m: z3.ModelRef, e) -> bool | None:
    """The truth of formula e in model m (None: undecided).  Z3's own evaluation leaves a
    quantifier over an uninterpreted sort unevaluated; here it is expanded over the model's
    finite universe of that sort first, so a quantified lemma can be seen false in a
    counterexample."""
    memo: dict = {}

    def ground(x):
        key = x.get_id()
        if key in memo:
            return memo[key]
        if z3.is_quantifier(x) and not x.is_lambda():
            vs = [z3.Const(x.var_name(i), x.var_sort(i)) for i in range(x.num_vars())]
            unis = []
            for v in vs:
                u = m.get_universe(v.sort()) if v.sort().kind() == z3.Z3_UNINTERPRETED_SORT else None
                if u is None:
                    raise _Undecided
                unis.append(list(u))
            # de Bruijn index 0 is the last variable bound
            body = x.body()
            cases = [ground(z3.substitute_vars(body, *reversed(combo))) for combo in itertools.product(*unis)]
            got = z3.And(cases) if x.is_forall() else z3.Or(cases)
        elif z3.is_app(x) and x.decl().kind() in _CONNECTIVES:
            kids = [ground(a) for a in x.children()]
            got = x.decl()(*kids) if x.decl().kind() != z3.Z3_OP_AND and x.decl().kind() != z3.Z3_OP_OR else \
                (z3.And if x.decl().kind() == z3.Z3_OP_AND else z3.Or)(kids)
        else:
            got = x
        memo[key] = got
        return got

    try:
        v = m.eval(ground(e), model_completion=True)
    except _Undecided:
        return None
    return True if z3.is_true(v) else False if z3.is_false(v) else None


_CONNECTIVES = {z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_NOT, z3.Z3_OP_IMPLIES, z3.Z3_OP_IFF, z3.Z3_OP_XOR}


class _Undecided(Exception):
    pass


# -- Houdini -----------------------------------------------------------------------------

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
        reads = set().union(*(_vars_of(lm.formula) for lm in lemmas if not lm.record))
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

    def closure_by_cores(self, direct: set[str], lemmas: list[Lemma]) -> list[str]:
        """As `closure`, from the unsat cores of the last Houdini run instead of new queries:
        a lemma needs what the steps that may break it used (all their obligations at once: a
        superset of its own needs, still inductive as a whole)."""
        by = {lm.name: lm for lm in lemmas}
        need, todo = set(direct), list(direct)
        while todo:
            for c in self.affecting([by[todo.pop()]]):
                for n in self.cores.get(c.i, ()):
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
                                         appends_group_record if lm.record else _vars_of(lm.formula))
            for n in used - need:
                need.add(n)
                todo.append(n)
        return sorted(need)


# -- the prover -----------------------------------------------------------------------------

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


class Prover:
    """Proves the catalog's invariants; the strengthening found is kept for every invariant."""

    def __init__(self, rows=None, query_work: int = QUERY_WORK, strengthen: bool = True,
                 bound: int = 2, progress: Callable[[str], None] | None = None, budget_s: float = 60.0,
                 presets: tuple[str, ...] = ("tiny", "small"), search: str = "vocabulary", engine: str = "both",
                 spacer_budget_s: float = 60.0, spacer_seed: int = 0):
        self.rows = list(ROWS if rows is None else rows)
        self.query_work, self.strengthen, self.bound = query_work, strengthen, bound
        self.budget_s, self.search, self.engine = budget_s, search, engine
        self.spacer_budget_s, self.spacer_seed = spacer_budget_s, spacer_seed
        self.presets = tuple(presets)
        self.rows_arg = rows
        self.progress = progress or (lambda s: None)
        self._systems: dict = {}
        self._lemmas: dict = {}
        self._candidates: dict = {}
        self.houdini_seconds = 0.0
        self.dropped: dict = {}

    def system(self, scope: str, sizes: dict | None = None) -> System:
        key = (scope, None if sizes is None else tuple(sorted(sizes.items())))
        if key not in self._systems:
            extra = tuple(a for name, asm in CLOSED_WORLD.items() if scope == "closed-world" for a in asm)
            small = self.system(scope, fixed_sizes(self.bound)) if sizes is None else None
            self._systems[key] = System(Reading(sizes), self.rows, extra, self.query_work, falsifier=small)
        return self._systems[key]

    def pool(self, scope: str) -> list[Lemma]:
        """The candidate lemmas: the catalog's state invariants, the schema's templates, and the
        forms of both about the logged record."""
        base = catalog_lemmas(scope) + templates()
        return base + record_lemmas(base)

    def lemmas(self, scope: str, sizes: dict | None = None) -> list[Lemma] | None:
        """The largest inductive subset of the candidates (catalog, templates, their record forms,
        less those a state of the sample worlds breaks: no invariant is among them); None when
        the budget was spent first."""
        key = (scope, None if sizes is None else tuple(sorted(sizes.items())))
        if key not in self._lemmas:
            t0 = time.perf_counter()
            self.progress(f"strengthening search ({'unbounded' if sizes is None else 'N=' + str(sizes[MEMBER])})")
            alive, dropped = self.system(scope, sizes).houdini(self.candidates(scope), budget=Work(self.budget_s))
            self._lemmas[key] = alive
            self.dropped[key] = dropped
            self.houdini_seconds += time.perf_counter() - t0
        return self._lemmas[key]

    def prove(self, inv: Invariant) -> Proof:
        t0 = time.perf_counter()
        self.progress(inv.name)
        p = self._prove(inv)
        p.seconds = time.perf_counter() - t0
        if self.presets and p.status not in ("proved", "violated") and inv.scope == "coordinator":
            self._confirm(inv, p)
        if self.presets and p.lemmas:
            pool = {lm.name: lm for lm in self.pool(inv.scope)}
            bad = refuted_by([pool[n] for n in p.lemmas if n in pool], self.presets, self.rows_arg)
            if bad:     # a lemma some reachable state breaks: the prover is wrong, say so loudly
                p.status, p.reason = "unknown", (
                    "PROVER BUG: lemmas the search found are false in reachable states: "
                    + ", ".join(f"{n} (world {w})" for n, w in bad.items()) + "; " + p.reason)
        return p

    def _confirm(self, inv: Invariant, p: Proof) -> None:
        """An invariant not proved is looked for in the reachable states of the check worlds:
        broken there, it is violated."""
        from groupspec.spec.concrete import compile_term
        from groupspec.spec.invariants import _layouts
        for preset in self.presets:
            groups, _, broken = reachable(preset, self.rows_arg)
            if inv.name in broken:
                p.status, p.reason = "violated", f"a step of world {preset} breaks it: {broken[inv.name]}; " + p.reason
                return
            if inv.kind == "state" and not inv.settled:
                from groupspec.spec.engine import make_params
                f = compile_term(inv.formula, _layouts()[0])
                config = make_params(world_config(preset, self.rows_arg))
                if not all(f(g, config, ()) for g in groups):
                    p.status, p.reason = "violated", f"a reachable state of world {preset} breaks it; " + p.reason
                    return

    def _prove(self, inv: Invariant) -> Proof:
        asm = [a.name for a in ENVIRONMENT] + [a.name for a in CLOSED_WORLD.get(inv.name, ())]
        if inv.settled:
            return Proof(inv.name, "unknown", "none", reason=(
                "a settled invariant: it holds between requests, after the eager CompleteJoin that follows a "
                "row, not after every row, so row-by-row induction does not apply; the explicit checker "
                "checks it on every world state"), assumptions=asm)
        if inv.scope == "closed-world" and inv.name not in CLOSED_WORLD:
            return Proof(inv.name, "unknown", "none", reason="a closed-world invariant without a declared "
                         "assumption about the clients (CLOSED_WORLD)", assumptions=asm)
        if self.engine == "spacer":
            p = self._spacer(inv)
            p.assumptions = asm
            return p
        p = self._houdini(inv, asm)
        if self.engine == "both" and p.status == "unknown":
            sp = self._spacer(inv)
            if sp.status == "proved up to N":
                sp.assumptions, sp.reason = asm, f"Houdini: {p.reason}; {sp.reason}"
                return sp
            p.reason += f"; Spacer (N={self.bound}): {sp.reason}"
        return p

    def _spacer(self, inv: Invariant) -> Proof:
        """The second engine: Spacer on the table's Horn clauses, for fixed sizes (`chc.py`).
        Its lemmas are checked against the reachable states that fit those sizes."""
        from .chc import refuted, spacer
        sizes = fixed_sizes(self.bound)
        system = self.system(inv.scope, sizes)
        r = spacer(system, inv, budget_s=self.spacer_budget_s, seed=self.spacer_seed)
        method = f"Spacer, constrained Horn clauses (fixed sizes, N={self.bound}; Inv over {len(r.keep)} variables)"
        if r.status != "proved":
            return Proof(inv.name, "unknown", method, reason=r.reason, engine="spacer")
        p = Proof(inv.name, "proved up to N", method, [f"spacer N={self.bound}: {t}" for t in r.lemmas],
                  bound=self.bound, engine="spacer",
                  reason=f"Spacer found an inductive relation for {_sizes_words(sizes)} (Horn clauses need a "
                         f"decidable theory: member sets as bit-vectors of N, so the sizes are fixed)")
        if self.presets:
            bad, checked = refuted(r, system, self.presets, self.rows_arg)
            if bad:     # a lemma some reachable state breaks: the prover is wrong, say so loudly
                p.status, p.reason = "unknown", ("PROVER BUG: Spacer's lemmas are false in reachable states: "
                                                 + ", ".join(f"{n} (world {w})" for n, w in bad.items()))
            else:
                p.reason += f"; its {len(r.lemmas)} lemmas hold in the {checked:,} reachable states with at " \
                            f"most {self.bound} member ids"
        return p

    def _houdini(self, inv: Invariant, asm: list[str]) -> Proof:
        """The first engine: induction, then Houdini's strengthening, for every size; where
        that fails, for fixed sizes."""
        attempt = self._attempt(inv, None)
        if attempt.status in ("proved", "violated"):
            attempt.assumptions = asm
            return attempt
        # the same question for fixed sizes, where counting and the vote are exact
        fixed = self._attempt(inv, fixed_sizes(self.bound))
        fixed.assumptions = asm
        cti = attempt.cti
        why = (f"not shown inductive for every size: counterexample to induction at row {cti.row!r}" if cti
               else attempt.reason)
        if cti and cti.approximated:
            why += (" (that counterexample reads " + ", ".join(cti.approximated) + " over-approximated: they have "
                    "no decidable meaning for every size, so it may not be a real one)")
        if fixed.status == "proved" and fixed.lemmas:
            general = self._generalize(inv, fixed.lemmas)
            if general is not None:
                general.assumptions = asm
                return general
        if fixed.status == "proved":
            fixed.status, fixed.bound = "proved up to N", self.bound
            fixed.method = fixed.method.replace("(N=", "(fixed sizes, N=")
            fixed.reason = why + f"; proved for {_sizes_words(fixed_sizes(self.bound))}"
            fixed.cti = cti
            return fixed
        fixed.status = "unknown"
        fixed.reason = why + f"; for N={self.bound}: " + (f"row {fixed.cti.row!r} breaks it too" if fixed.cti
                                                          else fixed.reason)
        fixed.cti = fixed.cti or cti
        return fixed

    def _generalize(self, inv: Invariant, names: list[str]) -> Proof | None:
        """The lemmas found for fixed sizes, asked again for every size: Houdini over just them
        in the unbounded reading; the invariant proved if it (or its goal) survives."""
        pool = {lm.name: lm for lm in self.pool(inv.scope)}
        own = [as_lemma(inv)] if inv.kind == "state" else []
        system = self.system(inv.scope)
        alive, _ = system.houdini(own + [pool[n] for n in names if n in pool],
                                  budget=Work(self.budget_s))
        if alive is None:
            return None
        if own and inv.name not in {lm.name for lm in alive}:
            return None
        if not own:
            fails, unknown, _ = system.check_goal(lambda c: kind_goal(inv, c), alive, self._reads(inv, system))
            if fails or unknown:
                return None
        return Proof(inv.name, "proved", f"induction with lemmas found for N={self.bound}, kept for every size "
                     "(unbounded)", sorted(lm.name for lm in alive if lm.name != inv.name))

    def _attempt(self, inv: Invariant, sizes: dict | None) -> Proof:
        """Induction for `inv` in one reading: plain, then with the strengthening found."""
        where = "unbounded" if sizes is None else f"N={sizes[MEMBER]}"
        system = self.system(inv.scope, sizes)
        goal = lambda c: kind_goal(inv, c)     # noqa: E731
        own = [as_lemma(inv)] if inv.kind == "state" else []
        if own and not system.initially(own[0]):
            return Proof(inv.name, "unknown", "induction", reason="not true of a group the coordinator does not hold")
        reads = self._reads(inv, system)
        # plain induction, briefly when a strengthening search follows (an unknown leads to it)
        # (a search follows any failure: the first one is enough to know it is needed, and a
        # counterexample for an undecided row is looked for only if the search finds none)
        fails, unknown, _ = system.check_goal(goal, own, reads, QUICK_WORK if self.strengthen else None,
                                              first=self.strengthen, small=not self.strengthen)
        if not fails and not unknown:
            return Proof(inv.name, "proved", f"induction ({where})")
        plain = fails[0] if fails else (None, None)
        plain_unknown = list(unknown)
        if plain[0] is not None and self.presets and inv.scope == "coordinator":
            probe = Proof(inv.name, "unknown", "induction")
            self._confirm(inv, probe)
            if probe.status == "violated":     # a real violation: no strengthening can help
                c, model = plain
                probe.cti = self.cti(inv, c, model, where)
                probe.reason += f"the counterexample to induction: row {c.name!r}"
                return probe
        if not self.strengthen:
            c, model = plain
        elif self.search == "full":
            found = self._over_all(inv, system, own, goal, reads, where, sizes)
            if isinstance(found, Proof):
                return found
            c, model = found or plain
        else:
            found = self._widening(inv, system, own, goal, reads, where)
            if isinstance(found, Proof):
                return found
            (c, model), unknown = found
            if sizes is not None:
                # for fixed sizes Houdini over every candidate is cheap (the queries are
                # decidable), and does not hang on the path the widening took
                over_all = self._over_all(inv, system, own, goal, reads, where, sizes)
                if isinstance(over_all, Proof):
                    return over_all
            c, model = (c, model) if c is not None else plain
        if c is None and plain_unknown and system.falsifier is not None:
            rows = {r.name: r.i for r in system.ctx_built()}
            for name in plain_unknown:
                cex = system.falsifier.counterexample(rows[name], own, goal)
                if cex is not None:
                    c, model = cex
                    break
        if c is not None:
            return Proof(inv.name, "unknown", "induction", cti=self.cti(inv, c, model, where),
                         reason=f"row {c.name!r} breaks it")
        return Proof(inv.name, "unknown", "induction", reason=f"Z3 gave up (its limit of work) on {', '.join(unknown[:3])}")

    def _over_all(self, inv: Invariant, system: System, own: list[Lemma], goal, reads, where: str, sizes):
        """Houdini over every candidate: the largest inductive subset, then the unsat cores.
        Returns the proof, the first counterexample (ctx, model), or None."""
        lemmas = self.lemmas(inv.scope, sizes)
        if lemmas is None:
            return None
        ctx = own + [lm for lm in lemmas if lm.name != inv.name]
        fails, unknown, used = system.check_goal(goal, ctx, reads)
        if not fails and not unknown:
            names = system.closure(used - {inv.name}, lemmas)
            return Proof(inv.name, "proved", f"induction with Houdini strengthening over every candidate ({where})",
                         [n for n in names if n != inv.name])
        return fails[0] if fails else None

    def _widening(self, inv: Invariant, system: System, own: list[Lemma], goal, reads, where: str):
        """Houdini over the candidates that speak only of the invariant's vocabulary (its
        variables, and the record's fields of them), widened while it fails: by the variables
        of the candidates that a counterexample to induction breaks, which would rule it out.
        The candidates are those no state of the sample worlds breaks (`candidates`): Houdini
        then spends its queries on lemmas that may well be invariants.  Returns the proof, or
        (the last counterexample (ctx, model) or (None, None), rows Z3 gave up on)."""
        cands = self.candidates(inv.scope)
        vocab = {v.removeprefix("prev:") for v in _vars_of(inv.formula)} | {"record"}
        budget = Work(self.budget_s)
        cex, unknown = (None, None), []
        while True:
            chosen = [lm for lm in cands if _vocabulary(lm) <= vocab and lm.name != inv.name]
            alive, _ = system.houdini(own + chosen, budget=budget)
            if alive is None:
                return cex, [f"the strengthening search (its {self.budget_s:g} s budget spent)"]
            kept = [lm for lm in alive if lm.name != inv.name]
            if own and len(kept) < len(alive):
                # the invariant survived: Houdini's own queries proved it, from their cores
                names = system.closure_by_cores({inv.name}, alive)
                return Proof(inv.name, "proved", f"induction with Houdini strengthening over the "
                             f"invariant's vocabulary ({where})", [n for n in names if n != inv.name])
            if not own:
                fails, unknown, used = system.check_goal(goal, alive, reads)
                if not fails and not unknown:
                    names = system.closure(used - {inv.name}, kept)
                    return Proof(inv.name, "proved", f"induction with Houdini strengthening over the "
                                 f"invariant's vocabulary ({where})", [n for n in names if n != inv.name])
            else:   # the invariant itself was dropped: the row that breaks it from a state where it
                # and what was kept hold (from `kept` alone the pre-state may already break it, and
                # such a model says nothing about which candidates would rule the step out)
                fails, unknown, _ = system.check_goal(goal, own + kept, reads)
            if not fails:
                return cex, unknown
            c, m = cex = fails[0]
            wider = vocab | set().union(*[_vocabulary(lm) for lm in cands
                                          if model_value(m, c.pre(lm.formula)) is False])
            if wider == vocab:
                return cex, unknown
            vocab = wider

    def explore_samples(self, scope: str) -> None:
        """Explore the sample worlds (and the lemma-checking ones) and sift the candidates by
        them: done once per process, before any proof's clock starts."""
        for world in dict.fromkeys(SAMPLE_WORLDS + self.presets):
            reachable(world, self.rows_arg)
        self.candidates(scope)

    def candidates(self, scope: str) -> list[Lemma]:
        """The candidate lemmas no reachable state of the sample worlds breaks."""
        if scope not in self._candidates:
            pool = self.pool(scope)
            bad = refuted_by(pool, SAMPLE_WORLDS, self.rows_arg) if SAMPLE_WORLDS else {}
            self._candidates[scope] = [lm for lm in pool if lm.name not in bad]
        return self._candidates[scope]

    @staticmethod
    def _reads(inv: Invariant, system: System):
        """Which rows can matter to `inv` (None: all)."""
        if inv.kind == "state":
            return _vars_of(inv.formula)
        if inv.kind == "step":
            post = {v for v in _vars_of(inv.formula) if not v.startswith("prev:")}
            return post if system.stutter_invariant(inv) else None
        if inv.kind == "output":
            return lambda r: any(isinstance(o, Out) and o.kind in ("reply", "answer") and o.api == "SyncGroup"
                                 for o in r.steps)
        return None

    # -- counterexamples to induction --------------------------------------------------
    def cti(self, inv: Invariant, c: RowCtx, model, reading: str) -> CTI:
        from .prove_report import describe_cti
        return describe_cti(inv, c, model, reading)


# the worlds whose reachable states sift the candidate lemmas before any is given to Z3 (static:
# for the group.instance.id lemmas)
SAMPLE_WORLDS = ("tiny", "small", "static")


def _vocabulary(lm: Lemma) -> set[str]:
    """The state variables a lemma speaks of (a record lemma: of the record's fields, and 'record')."""
    if lm.record:
        return set(_RECORD_VOCAB.get(lm.name, ())) | {"record"}
    return _vars_of(lm.formula)


_RECORD_VOCAB: dict[str, set[str]] = {}


def as_lemma(inv: Invariant) -> Lemma:
    return Lemma(inv.name, inv.meaning, inv.formula, "catalog")


def _sizes_words(sizes: dict) -> str:
    return ", ".join(f"{n} {d}" for d, n in sizes.items())


def fixed_sizes(n: int) -> dict:
    from groupspec.spec.schema import Bounds
    sizes = dict(Bounds().sizes)
    sizes[MEMBER] = n
    return sizes


# -- the states the explicit checker reaches ------------------------------------------------

_REACHED: dict = {}


def reachable(preset: str, rows=None) -> tuple[set, set, dict]:
    """The group states (the spec's variables) and the group records in the log of every state
    the closed world `preset` reaches (its whole graph, breadth-first, without symmetry), and
    the coordinator invariants a step broke on the way ({name: row}: the world model checks
    every one after every row)."""
    key = (preset, None if rows is None else id(rows))
    if key not in _REACHED:
        from groupspec.spec.invariants import InvariantViolation
        from .world_model import LOG, LOG_HAS, WorldModel
        from .worlds import PRESETS
        model = WorldModel(PRESETS[preset], rows)
        n = len(STATE_VARS)
        seen = set(model.init_states())
        level = list(seen)
        broken: dict[str, str] = {}
        while level:
            nxt = []
            for s in level:
                try:
                    succ, _ = model.successors(s)
                except InvariantViolation as e:
                    broken.setdefault(e.invariant.name, str(e))
                    continue
                for _, t in succ:
                    if t not in seen:
                        seen.add(t)
                        nxt.append(t)
            level = nxt
        groups = {model.flat(s)[:n] for s in seen}
        records = {s[0][LOG] for s in seen if s[0][LOG_HAS]}
        _REACHED[key] = (groups, records, broken)
        _CONFIG[key] = {k: v for k, v in model.base.items() if k.startswith("cfg_")}
        _PAIRS[key] = (model.sizes, {(model.flat(s)[:n], s[0][LOG] if s[0][LOG_HAS] else None) for s in seen})
    return _REACHED[key]


_PAIRS: dict = {}
_CONFIG: dict = {}      # the world's configuration (group.max.size, ...): what a lemma's P.cfg_* reads


def world_config(preset: str, rows=None) -> dict:
    reachable(preset, rows)
    return _CONFIG[(preset, None if rows is None else id(rows))]


def reached_with_record(preset: str, rows=None) -> tuple[dict, set]:
    """The world's domain sizes, and each reachable (group state, the log's last group record
    or None) together: what a lemma over both must hold of."""
    reachable(preset, rows)
    return _PAIRS[(preset, None if rows is None else id(rows))]


def refuted_by(lemmas: list[Lemma], presets: tuple[str, ...], rows=None) -> dict[str, str]:
    """Each lemma some reachable state (or logged record) breaks, with the world that shows it."""
    from groupspec.spec.concrete import compile_term
    from groupspec.spec.engine import PARAM_INDEX, make_params
    from groupspec.spec.invariants import _layouts
    one = _layouts()[0]
    out: dict[str, str] = {}
    for preset in presets:
        groups, records, _ = reachable(preset, rows)
        for lm in lemmas:
            if lm.name in out:
                continue
            # a lemma's name says what it is: its verdict in a world is kept, as the world's states are
            key = (lm.name, preset, None if rows is None else id(rows))
            if key not in _BROKEN:
                f = compile_term(lm.formula, one)
                config = make_params(world_config(preset, rows))
                if lm.record:
                    ps = [list(config) for _ in records]
                    for p, rec in zip(ps, records):
                        p[PARAM_INDEX["record"]] = rec
                    _BROKEN[key] = not all(f((), p, ()) for p in ps)
                else:
                    _BROKEN[key] = not all(f(g, config, ()) for g in groups)
            if _BROKEN[key]:
                out[lm.name] = preset
    return out


_BROKEN: dict = {}
