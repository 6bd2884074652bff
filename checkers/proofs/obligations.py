"""What a proof assumes and what it may use: the budget of Z3 work, the environment's assumptions
(`ENVIRONMENT`, `CLOSED_WORLD`), and the candidate lemmas (the catalog's, the templates over the schema's
variables, and their forms about the logged record)."""
from __future__ import annotations

from dataclasses import dataclass

import z3

from groupspec.spec.invariants import INVARIANTS, Invariant
from groupspec.spec.lang import Count, ForAll, Implies, Not, Or, Term, lift, walk
from groupspec.spec.schema import MEMBER, STATE_VARS, STATES, GroupRecord, P, V
from groupspec.spec.vocabulary import S, in_states

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


def params_of(t: Term) -> frozenset[str]:
    return _names_of(t)[1]


def vars_of(t: Term) -> frozenset[str]:
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


# what an invariant Kafka 4.0's Java coordinator does not keep (its `java_breaks`) is proved under
SCALA_COORDINATOR = Assumption(
    "scala-coordinator",
    "the coordinator is Kafka 3.9's Scala one (group.coordinator.new.enable off): the invariant says how the Java "
    "coordinator does not keep it (java_breaks)",
    Not(P.cfg_new_coordinator))


def assumed_for(inv) -> tuple[Assumption, ...]:
    """What a proof of invariant `inv` assumes beyond ENVIRONMENT: its clients' guarantees in a
    closed world, and the Scala coordinator where the Java one does not keep it."""
    return CLOSED_WORLD.get(inv.name, ()) + ((SCALA_COORDINATOR,) if inv.java_breaks else ())


def every_assumption() -> list[Assumption]:
    """Every assumption some proof of the catalog makes, once each."""
    extra = {a.name: a for inv in INVARIANTS for a in assumed_for(inv)}
    return list(ENVIRONMENT) + list(extra.values())


def is_config(a: Assumption) -> bool:
    """An assumption only about the broker's configuration: true before and after every step."""
    params = params_of(a.formula)
    return bool(params) and all(n.startswith("cfg_") for n in params)


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
    conds = [(st, f"in {st}", V.state == S(st)) for st in STATES]
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
            # in Stable a join is accepted from an unknown id only below the limit (GC.acceptJoiningMember
            # counts the group's size there), so what Stable holds parked (a static member's rejoin
            # while its new id is stored) is below it, and the leader's rejoin keeps it within
            out.append(Lemma(f"Stable ⇒ |members ∩ {b}| < group.max.size",
                             f"in Stable, fewer than group.max.size members are in {b}",
                             Implies(V.state == S("Stable"), Count(V.members & sets_[b]) < P.cfg_max_size)))
    for b in MEMBER_SETS:
        out.append(Lemma(f"leader ∈ {b}", f"the leader, if any, is in {b}", V.leader.is_none() | V.leader.in_(sets_[b])))
        out.append(Lemma(f"sync timer ⇒ {b} ≠ ∅", f"the pending-sync timer runs only while {b} is not empty",
                         Implies(V.sync_timer, Not(sets_[b].is_empty()))))
        # the converse, while a sync is awaited (a group marked Dead keeps what it had, its timer gone)
        out.append(Lemma(f"{b} ≠ ∅ ⇒ sync timer (CompletingRebalance, Stable)",
                         f"in CompletingRebalance or Stable, the pending-sync timer runs while {b} is not empty",
                         Implies(Not(sets_[b].is_empty()) & in_states("CompletingRebalance", "Stable"),
                                 V.sync_timer)))
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


_RECORD_VOCAB: dict[str, set[str]] = {}     # a record lemma's name -> the state variables it came from


def record_lemmas(lemmas: list[Lemma]) -> list[Lemma]:
    """Each lemma that speaks only of what the log's record holds, about the record."""
    rec = {f: P.record[f] for f in RECORD_VARS}
    for lm in lemmas:
        _RECORD_VOCAB["record: " + lm.name] = vars_of(lm.formula)
    return [Lemma("record: " + lm.name, f"the last group record written: {lm.meaning}", substitute(lm.formula, rec),
                  "record", record=True)
            for lm in lemmas if vars_of(lm.formula) and vars_of(lm.formula) <= RECORD_VARS]



def as_lemma(inv: Invariant) -> Lemma:
    return Lemma(inv.name, inv.meaning, inv.formula, "catalog")


def vocabulary(lm: Lemma) -> set[str]:
    """The state variables a lemma speaks of (a record lemma: of the record's fields, and 'record')."""
    if lm.record:
        return set(_RECORD_VOCAB.get(lm.name, ())) | {"record"}
    return vars_of(lm.formula)
