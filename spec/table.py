"""Kafka's classic group coordinator as a declarative transition table.

Each request handler of Kafka's `GroupCoordinator` is an if / else-if
cascade; here each branch is a row, written in the order Kafka checks its
conditions (a `Chain` negates the conditions of the rows above, so the
order of the checks is explicit and the rows of a trigger are exclusive).
The pieces Kafka itself reuses (prepareRebalance, removeMemberAndUpdateGroup,
onCompleteJoin, ...) are macros below, written once and used by every row
that needs them.

Sources are Kafka 3.9's Scala coordinator unless a row says otherwise
(`GC.` = GroupCoordinator.scala, `GM.` = GroupMetadata.scala,
`GMM.` = GroupMetadataManager.scala) and the seed articles in
shared/seeds/ (`seed 000` = the lecture on handleJoinGroup, and so on).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from .lang import (FALSE, TRUE, And, Apply, Choose, Count, Filter, ForAll, If, Implies, Max, MaxOver,
                   Min, Not, Or, Term, lift, named, none, INT)
from .lang import show
from .rows import (ROW_BUILDERS, Out, Row, Set_, answer, answer_each, append, arm, cancel, check_row,
                   each, labelled, park, reply, sets)
from .responses import (commit_errors, join_error, join_info, offset_commit_error, store_group_error,
                        sync_error)
from .schema import STATE_VARS, AppendKind, Coord, JoinTimer, P, V
from .vocabulary import (ALL, E, HELD, JAVA, LIVE, NO_MEMBER, NO_MEMBERS, NO_PARTS, NO_PROTOCOL, S,
                         Filter_instances, Filter_offsets, in_states, lift_single, names_of, rebalance_timeout,
                         static_members)

# validateCurrentMember (GC): the group.instance.id, if given, must map to this
# member id; then the member id must be a member.
fenced = named("the group.instance.id maps to another member id",
               P.instance.is_some() & V.static[P.instance].is_some() & (V.static[P.instance] != P.member))
instance_unknown = P.instance.is_some() & V.static[P.instance].is_none()
not_member = Not(P.member.in_(V.members))
member_error = named("FENCED_INSTANCE_ID if fenced, else UNKNOWN_MEMBER_ID",
                     If(fenced, E("FENCED_INSTANCE_ID"), E("UNKNOWN_MEMBER_ID")))
member_invalid = named("validateCurrentMember fails (fenced, unknown group.instance.id, or not a member)",
                       fenced | instance_unknown | not_member)


# -- macros: Kafka's shared helpers --------------------------------------------------

def rearm_heartbeats(ms: Term, duration: Callable[[Term], Term], awaiting_join: Term = V.awaiting_join,
                     awaiting_sync: Term = V.awaiting_sync) -> list:
    """GC.completeAndScheduleNextExpiration for every member of set `ms`.

    The member's current DelayedHeartbeat is completed first (checkAndComplete: its
    timer goes), then the next one is scheduled; it completes at once (no timer) when
    the member already satisfies it: not new, and awaiting a join or sync
    (MM.hasSatisfiedHeartbeat).  `awaiting_*` are the sets as they stand when the
    timers are scheduled.  The cancel reads `hb_armed` before it is updated.
    """
    def armed(m):
        return m.in_(V.new_members) | Not(m.in_(awaiting_join) | m.in_(awaiting_sync))
    return labelled(f"reschedule the session timers of {show(ms)} (completeAndScheduleNextHeartbeatExpiration)", [
        each(ms, lambda m: cancel("heartbeat", m, when=Not(armed(m)) & m.in_(V.hb_armed))),
        sets(hb_armed=(V.hb_armed - ms) | Filter(ms, armed)),
        each(ms, lambda m: arm("heartbeat", m, duration(m), when=armed(m))),
    ])


def session_of(m: Term) -> Term:
    return V.session_ms[m]


def forget(ms: Term) -> dict:
    """Clear every per-member attribute of the slots in `ms` (GM.remove's bookkeeping)."""
    return dict(
        members=V.members - ms, pending=V.pending - ms, awaiting_join=V.awaiting_join - ms,
        awaiting_sync=V.awaiting_sync - ms, pending_sync=V.pending_sync - ms,
        new_members=V.new_members - ms, hb_armed=V.hb_armed - ms,
        static=V.static.put_all(Filter_instances(ms), lambda i: NO_MEMBER),
        instance_of=V.instance_of.put_all(ms, lambda m: none("Instance")),
        protos=V.protos.put_all(ms, lambda m: none("ProtoList")),
        session_ms=V.session_ms.put_all(ms, lambda m: 0),
        rebalance_ms=V.rebalance_ms.put_all(ms, lambda m: 0),
        assignment=V.assignment.put_all(ms, lambda m: NO_PARTS),
    )


def remove_members(ms: Term, choice: str) -> list:
    """GM.remove for every member of `ms`; a removed leader is replaced by any
    remaining member (`members.keys.headOption`: Kafka leaves the choice open)."""
    rest = V.members - ms
    upd = forget(ms)
    upd["leader"] = If(V.leader.in_(ms), Choose(choice, rest), V.leader)
    return labelled(f"remove {show(ms)} from the group (GM.remove; a removed leader is replaced by any "
                    f"remaining member)", [each(ms & V.hb_armed, lambda m: cancel("heartbeat", m)), Set_(upd)])


def remove_member(m: Term, choice: str) -> list:
    from .lang import singleton
    return remove_members(singleton(m), choice)


def reset() -> list:
    """The coordinator drops the group: every variable back to its initial value."""
    upd = {}
    for v in STATE_VARS:
        var = getattr(V, v.name)
        upd[v.name] = var.fill(v.initial) if v.type.kind == "map" else lift(v.initial, v.type)
    return labelled("drop the group from the coordinator (its timers too)", [Out("cancel_all"), Set_(upd)])


def prepare_rebalance(src: str) -> list:
    """GC.prepareRebalance from state `src` (the row then moves to PreparingRebalance)."""
    steps: list = []
    if src == "CompletingRebalance":
        # resetAndPropagateAssignmentError(REBALANCE_IN_PROGRESS), then reschedule the
        # heartbeats of the members it answered.
        steps += [
            answer_each("SyncGroup", V.awaiting_sync, lambda m: sync_error("REBALANCE_IN_PROGRESS")),
            sets(assignment=V.assignment.put_all(V.members, lambda m: NO_PARTS)),
            *rearm_heartbeats(V.awaiting_sync, session_of, awaiting_sync=NO_MEMBERS),
            sets(awaiting_sync=NO_MEMBERS),
        ]
    # removeSyncExpiration
    steps += [cancel("sync", when=V.sync_timer), sets(pending_sync=NO_MEMBERS, sync_timer=FALSE())]
    if src == "Empty":
        delay = P.cfg_initial_delay_ms
        steps += [sets(join_timer=lift("initial", JoinTimer), join_delay_ms=delay,
                       join_remaining_ms=Max(rebalance_timeout - delay, 0)),
                  arm("initial-join", None, delay)]
    else:
        steps += [sets(join_timer=lift("delayed", JoinTimer), join_delay_ms=rebalance_timeout),
                  arm("join", None, rebalance_timeout)]
    what = ("answer parked SyncGroups REBALANCE_IN_PROGRESS, " if src == "CompletingRebalance" else "") + \
        ("arm the initial delayed join" if src == "Empty" else "arm the delayed join")
    return labelled(f"prepareRebalance ({what})", steps)


def add_member(m: Term, src: str, was_pending: bool) -> list:
    """GC.addMemberAndRebalance's bookkeeping for member m (without the rebalance)."""
    steps: list = []
    if src == "PreparingRebalance":
        # the initial delayed join is extended while new members keep joining generation 0 (Scala), or the
        # rebalance the group began from Empty (Java: previousState() == EMPTY, Kafka 4.0
        # GroupMetadataManager.classicGroupJoinNewMember)
        steps.append(sets(new_member_added=If(P.cfg_new_coordinator, V.join_timer == lift("initial", JoinTimer),
                                              V.generation == 0) | V.new_member_added))
    steps += [
        sets(static=V.static.put(P.instance, m),
             protocol_type=If(V.members.is_empty(), P.req_ptype, V.protocol_type),
             leader=If(V.leader.is_none(), m, V.leader),
             members=V.members.with_(m), awaiting_join=V.awaiting_join.with_(m),
             pending=V.pending.without(m), new_members=V.new_members.with_(m),
             instance_of=V.instance_of.put(m, P.instance), protos=V.protos.put(m, P.req_protos),
             session_ms=V.session_ms.put(m, P.session_ms), rebalance_ms=V.rebalance_ms.put(m, P.rebalance_ms),
             assignment=V.assignment.put(m, NO_PARTS), hb_armed=V.hb_armed.with_(m)),
        park("JoinGroup", m),
    ]
    if was_pending:
        steps.append(cancel("pending-member", m))
    # a new member's session does not run yet: it gets NewMemberJoinTimeoutMs
    steps.append(arm("heartbeat", m, P.cfg_new_member_timeout_ms))
    return labelled(f"add {show(m)} as a new member, its JoinGroup parked, its timer "
                    f"group.new.member.join.timeout.ms (GC.addMemberAndRebalance)", steps)


def update_member(m: Term) -> list:
    """GM.updateMember with a join callback: new protocols and timeouts; the JoinGroup parks."""
    return labelled(f"update {show(m)}'s protocols and timeouts, park its JoinGroup (GM.updateMember)",
                    [sets(protos=V.protos.put(m, P.req_protos), session_ms=V.session_ms.put(m, P.session_ms),
                          rebalance_ms=V.rebalance_ms.put(m, P.rebalance_ms),
                          awaiting_join=V.awaiting_join.with_(m)),
                     park("JoinGroup", m)])


def drop_from_group(m: Term, src: str, choice: str) -> list:
    """GC.removeMemberAndUpdateGroup (the caller's row moves on to PR when src is Stable or CR)."""
    steps = [answer("JoinGroup", m, when=m.in_(V.awaiting_join), **join_error("UNKNOWN_MEMBER_ID", member=NO_MEMBER))]
    steps += remove_member(m, choice)
    if src in ("Stable", "CompletingRebalance"):
        steps += prepare_rebalance(src)
    return steps


# -- the vote and join completion (GM.selectProtocol, GC.onCompleteJoin) ----------------

def candidates(ms: Term, protos_of=lambda m: V.protos[m]) -> Term:
    """Protocols every member of ms supports (`protos_of(m)`: member m's protocol list)."""
    from .lang import Lowest
    first = Lowest(ms)
    return Filter(names_of(protos_of(first)), lambda p: ForAll(ms, lambda m: p.in_(names_of(protos_of(m)))))


def most_voted(ms: Term, protos_of=lambda m: V.protos[m]) -> Term:
    """GM.selectProtocol: the candidates with the most votes, each member voting for its first
    candidate (ties: Kafka's map order, left open).  The most votes are counted once (the
    compiled term computes a quantifier-free part once per call), so the vote is linear in
    the number of candidates, not quadratic."""
    cands = candidates(ms, protos_of)

    def votes(p):
        return Count(ms, lambda m: Apply(P.vote, protos_of(m), cands) == p)
    most = MaxOver(cands, votes)
    return Filter(cands, lambda p: votes(p) == most)


def vote_winners(ms: Term) -> Term:
    """The candidate protocols with the most votes (ties: Kafka's map order, left open)."""
    return named(f"the protocols most members of {show(ms)} vote for (GM.selectProtocol)", most_voted(ms))


# Members that stay at join completion: those that rejoined, and static members
# (which are not removed for failing to rejoin).
rejoined = named("rejoined members", V.members & V.awaiting_join)
staying = named("members that stay (rejoined or static)", rejoined | static_members)
dropped = named("dynamic members that did not rejoin", V.members - staying)


def completion_outcomes(trigger: str, guard: Term, source: str) -> list[Row]:
    """The three outcomes of GC.onCompleteJoin from PreparingRebalance."""
    cleanup = remove_members(dropped, "leader_after_removal")
    to_cr = Row(
        f"{trigger}: join completes, next generation", trigger, ("PreparingRebalance",),
        guard & Not(rejoined.is_empty()),
        [
            *cleanup,
            # maybeElectNewJoinedLeader, then initNextGeneration (the vote runs over
            # the members that stay)
            sets(leader=If(V.leader.in_(V.awaiting_join), V.leader, Choose("leader", V.members & V.awaiting_join)),
                 generation=V.generation + 1, protocol=Choose("protocol", vote_winners(V.members)),
                 join_timer=lift("none", JoinTimer)),
            cancel("join"), cancel("initial-join"),
            answer_each("JoinGroup", V.awaiting_join, join_info),
            *rearm_heartbeats(V.members, session_of, awaiting_join=NO_MEMBERS),
            sets(awaiting_join=NO_MEMBERS, new_members=NO_MEMBERS, pending_sync=V.members, sync_timer=TRUE()),
            arm("sync", None, rebalance_timeout),
        ],
        "CompletingRebalance", source,
        response="every rejoined member gets its JoinGroup response (the leader with the member list)",
        doc="some member has rejoined")
    to_empty = Row(
        f"{trigger}: join completes with no members", trigger, ("PreparingRebalance",),
        guard & staying.is_empty(),
        [*cleanup,
         sets(generation=V.generation + 1, protocol=NO_PROTOCOL, leader=NO_MEMBER,
              join_timer=lift("none", JoinTimer)),
         cancel("join"), cancel("initial-join"),
         append("empty", **group_record(V.assignment.fill(NO_PARTS)))],
        "Empty", source, response="none; the empty group is written to the log",
        doc="no member stays")
    stuck = Row(
        f"{trigger}: no member rejoined, wait again", trigger, ("PreparingRebalance",),
        guard & rejoined.is_empty() & Not(staying.is_empty()),
        [*cleanup,
         sets(join_timer=lift("delayed", JoinTimer), join_delay_ms=rebalance_timeout),
         arm("join", None, rebalance_timeout)],
        None, source + " ('could not complete rebalance because no members rejoined')",
        response="none; another DelayedJoin is armed",
        doc="only static members that have not rejoined remain")
    return [to_cr, to_empty] if trigger == "CompleteJoin" else [to_cr, to_empty, stuck]


def completion(kind: str, f: dict) -> tuple[str, dict]:
    """How an append completes: the trigger, and its parameters (all but `error`) from the
    values the `append` output captured.  Every driver (runtime, checkers) completes appends
    through this, so what a completion sees is defined once, here beside the rows."""
    if kind == "offsets":
        return "StoreOffsetsDone", {"commit": f["commit"], "commit_parts": f["commit_parts"],
                                    "append_member": f["member"], "append_created": f.get("created", False)}
    from .lang import NONE as _NONE
    return "StoreGroupDone", {
        "append_kind": AppendKind.values.index(kind), "append_gen": f.get("append_gen", f["generation"]),
        "append_member": f.get("member", f.get("new", _NONE)), "append_old": f.get("old", _NONE),
        "append_old_protos": f.get("old_protos", _NONE), "append_old_session_ms": f.get("old_session_ms", 0),
        "append_old_rebalance_ms": f.get("old_rebalance_ms", 0), "append_old_leader": f.get("old_leader", _NONE),
        "supports_skip": f.get("supports_skip", False), "append_ptype": f["protocol_type"],
        "append_protocol": f["protocol"], "append_leader": f.get("append_leader", _NONE),
        "append_members": f.get("append_members", 0), "assignments": f.get("assignments", f["assignment"])}


def group_record(assignment: Term | None) -> dict:
    """What GMM.storeGroup writes: the group with an assignment per member (typed as a GroupRecord).
    GMM.groupMetadataValue writes one entry per member of the group, so of the leader's
    assignment only the members' entries are kept (the leader may name an id that is no longer
    a member's, e.g. a static member's replaced id)."""
    from .schema import GroupRecord
    if assignment is not None:
        assignment = assignment.fill(NO_PARTS).put_all(V.members, lambda m: assignment[m])
    fields = dict(generation=V.generation, protocol_type=V.protocol_type, protocol=V.protocol,
                  leader=V.leader, members=V.members, instance_of=V.instance_of, protos=V.protos,
                  session_ms=V.session_ms, rebalance_ms=V.rebalance_ms,
                  assignment=V.assignment if assignment is None else assignment)
    types = dict(zip(GroupRecord.values, GroupRecord.args))
    return {k: lift(v, types[k]) for k, v in fields.items()}


# -- chains: Kafka's if / else-if cascades -------------------------------------------

class Chain:
    """Rows of one trigger in Kafka's order of checks: each row's guard is its
    condition and the negation of every earlier condition in the chain."""

    def __init__(self, trigger: str, states: tuple[str, ...], base: Term | None = None, suffix: str = ""):
        self.trigger, self.states, self.suffix = trigger, states, suffix
        self.base = TRUE() if base is None else base
        self.before: list[Term] = []
        self.routing: list[Term] = []   # conditions checked without a row of their own
        self.rows: list[Row] = []

    def row(self, name: str, cond: Term, steps: list, target: str | None, source: str,
            response: str = "", doc: str = "", states: tuple[str, ...] | None = None,
            via: tuple[str, ...] = (), java_check: str = "", java_result: bool = False) -> Row:
        guard = And(self.base, *[Not(c) for c in self.before], cond) if self.before else And(self.base, cond)
        own = And(self.base, *[Not(c) for c in self.routing], cond)
        row_states = states or self.states
        r = Row(f"{self.trigger}: {name}{self.suffix}", self.trigger, states or self.states, guard, steps, target,
                source, response=response, via=via, doc=doc, otherwise=tuple(self.before), own=own,
                java_check=java_check, java_result=java_result)
        # later rows of the chain are the `else` of this one
        self.before.append(cond if row_states == self.states else And(in_states(*row_states), cond))
        self.rows.append(r)
        return r

    def check(self, cond: Term) -> None:
        """A condition that only routes: later rows see its negation."""
        if not any(c is cond for c in self.before):
            self.before.append(cond)
            self.routing.append(cond)

    def last(self, name: str, steps: list, target: str | None, source: str, **kw) -> Row:
        """The remaining case."""
        return self.row(name, TRUE(), steps, target, source, **kw)


ROW_BUILDERS.update(("Chain.row", "Chain.last"))


def gate(chain: Chain, api: str, fields: Callable[[Term], dict], loading: Callable[[], dict] | None = None,
         src: str = "GC.validateGroupStatus", java: Callable[[Term], dict] | None = None,
         java_loading: Callable[[], dict] | None = None, java_first: list | None = None) -> None:
    """validateGroupStatus: group id, then loading, then ownership.

    The Java coordinator (group.coordinator.new.enable) checks the group id in GroupCoordinatorService, then
    `java_first` (its other checks before the request reaches the coordinator: (name, condition, fields,
    source) each), then meets the partition's loading or absence in the runtime, answered through
    handleOperationException with `java` fields (else `fields`) and `java_loading` for loading (else
    `loading`): where they differ from the Scala coordinator's, the row carries each behaviour."""
    chain.row("invalid group id", Not(P.group_id_ok), [reply(api, **fields(E("INVALID_GROUP_ID")))], None, src,
              response="INVALID_GROUP_ID")
    for name, cond, got, source in java_first or ():
        chain.row(f"{name} (Java coordinator: before the partition's state)", P.cfg_new_coordinator & cond,
                  [reply(api, **got)], None, source, response=str(got.get("error", "")))
    load_fields = loading() if loading else fields(E("COORDINATOR_LOAD_IN_PROGRESS"))
    j_load = java_loading() if java_loading else java(E("COORDINATOR_LOAD_IN_PROGRESS")) if java else load_fields
    j_not = (java or fields)(E("NOT_COORDINATOR"))
    loading_now = P.coord == lift("loading", Coord)
    away = P.coord == lift("not_coordinator", Coord)
    for name, cond, scala_fields, java_fields, why in (
            ("coordinator loading", loading_now, load_fields, j_load,
             src + (" (and the API's mapping of it)" if loading else "")),
            ("not the coordinator", away, fields(E("NOT_COORDINATOR")), j_not, src)):
        if java_fields is scala_fields or repr(java_fields) == repr(scala_fields):
            chain.row(name, cond, [reply(api, **scala_fields)], None, why,
                      response=str(scala_fields.get("error", scala_fields.get("error_all", ""))))
            continue
        chain.row(f"{name} (Java coordinator)", cond & P.cfg_new_coordinator, [reply(api, **java_fields)], None,
                  f"{JAVA} (the runtime's error, handleOperationException)",
                  response=str(java_fields.get("error", java_fields.get("error_all", ""))))
        chain.row(name, cond, [reply(api, **scala_fields)], None, why,
                  response=str(scala_fields.get("error", scala_fields.get("error_all", ""))))


# ==================================================================================
# The rows
# ==================================================================================

ROWS: list[Row] = []


def _add(rows):
    ROWS.extend(rows)


# -- JoinGroup (GC.handleJoinGroup; seed 000) -------------------------------------------

def _join_rows() -> list[Row]:
    c = Chain("JoinGroup", ALL)
    out_of_bounds = (P.session_ms < P.cfg_min_session_ms) | (P.cfg_max_session_ms < P.session_ms)
    gate(c, "JoinGroup", lambda e: join_error(e), java=lambda e: join_error(e, member=NO_MEMBER),
         java_first=[("session timeout out of bounds", out_of_bounds, join_error("INVALID_SESSION_TIMEOUT"),
                      f"{JAVA}.joinGroup (the session timeout, before the runtime)")])
    c.row("session timeout out of bounds", out_of_bounds,
          [reply("JoinGroup", **join_error("INVALID_SESSION_TIMEOUT"))], None,
          "GC.handleJoinGroup; seed 000", response="INVALID_SESSION_TIMEOUT",
          doc="session_timeout_ms outside [group.min.session.timeout.ms, group.max.session.timeout.ms]")
    c.row("known member id but no such group", (V.state == S("Absent")) & Not(P.member_empty),
          [reply("JoinGroup", **join_error("UNKNOWN_MEMBER_ID"))], None,
          "GMM.getOrMaybeCreateGroup; seed 000", response="UNKNOWN_MEMBER_ID", states=("Absent",))
    rows = list(c.rows)

    # The group exists (or is created Empty for a new member): one cascade per state.
    for st in ("Absent",) + HELD:
        rows += _join_in_state(c, st)
    # The Java coordinator writes the group a JoinGroup creates (the record of an empty group), so that the
    # group is in the committed state; the Scala one writes nothing until a rebalance stores the group.  Each
    # row that creates a group has its Java twin, which also writes it.
    twins = []
    for r in rows:
        if r.states == ("Absent",) and (r.target is not None or r.via):
            twins.append(dataclasses.replace(
                r, name=f"{r.name} (Java coordinator: the new group is written)",
                guard=And(r.guard, P.cfg_new_coordinator), own=And(r.own, P.cfg_new_coordinator),
                steps=[*r.steps, append("create", **_created_record())],
                source=r.source + "; Kafka 4.0 GroupMetadataManager.classicGroupJoin ('append records to the log "
                                  "to commit the group to the timeline')"))
            r.guard, r.own = And(r.guard, Not(P.cfg_new_coordinator)), And(r.own, Not(P.cfg_new_coordinator))
    return rows + twins


def _created_record() -> dict:
    """GroupCoordinatorRecordHelpers.newEmptyGroupMetadataRecord: generation 0, no protocol type (""), no
    protocol, leader or members."""
    return {**group_record(None), "generation": lift(0, INT), "protocol_type": none("ProtocolType"),
            "protocol": NO_PROTOCOL, "leader": NO_MEMBER, "members": NO_MEMBERS}


def _accept(st: str) -> Term:
    """GC.acceptJoiningMember: group.max.size."""
    if st in ("Absent", "Empty", "Dead"):
        return TRUE()
    if st == "PreparingRebalance":
        return (P.member.in_(V.members) & P.member.in_(V.awaiting_join)) | \
            (Count(V.members & V.awaiting_join) < P.cfg_max_size)
    return P.member.in_(V.members) | (V.members.count() < P.cfg_max_size)


def _join_in_state(outer: Chain, st: str) -> list[Row]:
    tag = " (no group yet)" if st == "Absent" else f" ({st})"
    g = Chain("JoinGroup", (st,), base=And(*[Not(x) for x in outer.before]), suffix=tag)
    here = "Empty" if st == "Absent" else st   # a new group is created Empty first
    via = ("Empty",) if st == "Absent" else ()
    stay = "Empty" if st == "Absent" else None
    create = [sets(state=S("Empty"))] if st == "Absent" else []

    # acceptJoiningMember
    if st in ("PreparingRebalance", "CompletingRebalance", "Stable"):
        g.row("group is full", Not(_accept(st)),
              [cancel("pending-member", P.member, when=P.member.in_(V.pending)),
               *remove_member(P.member, "leader_after_full"),
               reply("JoinGroup", **join_error("GROUP_MAX_SIZE_REACHED", member=NO_MEMBER))],
              None, "GC.acceptJoiningMember; seed 000",
              response="GROUP_MAX_SIZE_REACHED (the member id, if any, is removed from the group)",
              doc="group.max.size reached: a new member when the group (PR: the members awaiting join) is full",
              java_check="none")

    rows: list[Row] = []
    # ---- a new member (empty member id): doNewMemberJoinGroup
    new = Chain("JoinGroup", (st,), base=And(g.base, *[Not(x) for x in g.before], P.member_empty), suffix=tag)
    if st == "Dead":
        new.last("new member, group is Dead",
                 [reply("JoinGroup", **join_error("COORDINATOR_NOT_AVAILABLE", member=NO_MEMBER))], None,
                 "GC.doNewMemberJoinGroup", response="COORDINATOR_NOT_AVAILABLE")
        rows += g.rows + new.rows
        rows += _join_known_member(g, st)
        return rows
    bad_protocol = _protocol_unsupported(here)
    new.row("new member, inconsistent protocol", bad_protocol,
            [*create, reply("JoinGroup", **join_error("INCONSISTENT_GROUP_PROTOCOL", member=NO_MEMBER))], stay,
            "GM.supportsProtocols; seed 000", response="INCONSISTENT_GROUP_PROTOCOL", via=())
    # static member whose group.instance.id is known: replace it (updateStaticMemberAndRebalance)
    known_static = P.instance.is_some() & V.static[P.instance].is_some()
    if st in ("Stable", "CompletingRebalance", "PreparingRebalance"):
        rows_static = _static_replace(new, st, known_static)
    else:
        rows_static = []
        new.check(known_static)  # impossible: Empty groups have no members (GC throws)
    # a new static member, or a dynamic one without requireKnownMemberId: add it now
    add_now = P.instance.is_some() | Not(P.require_known)
    if st in ("Absent", "Empty", "Stable", "CompletingRebalance"):
        new.row("new member joins and starts a rebalance", add_now,
                [*create, *add_member(P.fresh, here, False), *prepare_rebalance(here)],
                "PreparingRebalance", "GC.addMemberAndRebalance; seed 000", via=via,
                response="parked until the join completes", doc="a static member, or requireKnownMemberId is false")
    else:
        new.row("new member joins the rebalance", add_now, [*add_member(P.fresh, here, False)], None,
                "GC.addMemberAndRebalance; seed 000", response="parked until the join completes",
                doc="a static member, or requireKnownMemberId is false")
    new.last("new dynamic member must rejoin with its id",
             [*create, sets(pending=V.pending.with_(P.fresh)), arm("pending-member", P.fresh, P.session_ms),
              reply("JoinGroup", **join_error("MEMBER_ID_REQUIRED", member=P.fresh))], stay,
             "GC.doDynamicNewMemberJoinGroup (KIP-394); seed 000",
             response="MEMBER_ID_REQUIRED with the new member id, which is now pending")
    rows += g.rows + [r for r in new.rows] + rows_static
    if st != "Absent":
        rows += _join_known_member(g, st)
    return _dedupe(rows)


def _dedupe(rows: list[Row]) -> list[Row]:
    seen, out = set(), []
    for r in rows:
        if id(r) not in seen:
            seen.add(id(r))
            out.append(r)
    return out


def _protocol_unsupported(st: str) -> Term:
    """Not GM.supportsProtocols(protocolType, protocols)."""
    names = names_of(P.req_protos)
    if st == "Empty":
        return P.req_ptype_empty | names.is_empty()
    supported_by_all = Filter(names, lambda p: ForAll(V.members, lambda m: p.in_(names_of(V.protos[m]))))
    return (P.req_ptype != V.protocol_type) | supported_by_all.is_empty()


def _static_replace(new: Chain, st: str, known_static: Term) -> list[Row]:
    """GC.updateStaticMemberAndRebalance: a known group.instance.id rejoins with an empty member id."""
    old = V.static[P.instance]
    m = P.fresh
    remember = sets(scratch_member=old, scratch_leader=V.leader)
    forget_scratch = sets(scratch_member=NO_MEMBER, scratch_leader=NO_MEMBER)
    was, was_leader = V.scratch_member, V.scratch_leader
    replace = labelled("replace the member's id by the new one, fencing the old id's parked requests "
                       "(GM.replaceStaticMember), and park the JoinGroup", [
        # replaceStaticMember: fence the old id's parked requests, move the member to the new id
        answer("JoinGroup", old, when=old.in_(V.awaiting_join), **join_error("FENCED_INSTANCE_ID", member=old)),
        answer("SyncGroup", old, when=old.in_(V.awaiting_sync), **sync_error("FENCED_INSTANCE_ID")),
        cancel("heartbeat", old, when=old.in_(V.hb_armed)),
        # the Scala coordinator renames the member (it stays new, isNew, if it was); the Java one makes a member
        # afresh (ClassicGroup.replaceStaticMember: new ClassicGroupMember), not new, which therefore cannot
        # expire while it awaits the join (found by the harness against Kafka 4.0.2)
        sets(members=V.members.without(old).with_(m),
             new_members=If(old.in_(V.new_members) & Not(P.cfg_new_coordinator),
                            V.new_members.without(old).with_(m), V.new_members.without(old)),
             awaiting_join=V.awaiting_join.without(old), awaiting_sync=V.awaiting_sync.without(old),
             hb_armed=V.hb_armed.without(old).with_(m),
             leader=If(V.leader == old, m, V.leader), static=V.static.put(P.instance, m),
             instance_of=V.instance_of.put(old, none("Instance")).put(m, P.instance),
             protos=V.protos.put(old, none("ProtoList")).put(m, V.protos[old]),
             session_ms=V.session_ms.put(old, 0).put(m, V.session_ms[old]),
             rebalance_ms=V.rebalance_ms.put(old, 0).put(m, V.rebalance_ms[old]),
             assignment=V.assignment.put(old, NO_PARTS).put(m, V.assignment[old])),
        # completeAndScheduleNextHeartbeatExpiration(new), with the member's old session timeout
        arm("heartbeat", m, V.session_ms[m]),
        # updateMember(new, protocols, timeouts, callback)
        *update_member(m),
    ])
    rows = []
    src = "GC.updateStaticMemberAndRebalance (KIP-345)"
    if st == "Stable":
        # the protocol the next generation would select, with the new member's protocols
        unchanged = V.protocol.in_(_winners_after_replace())
        rows.append(new.row("known static member rejoins, protocol unchanged: persist the new id",
                            known_static & unchanged,
                            [remember,
                             sets(scratch_session_ms=V.session_ms[old], scratch_rebalance_ms=V.rebalance_ms[old],
                                  scratch_protos=V.protos[old]),
                             *replace,
                             append("static_replace", **group_record(None), old=was, new=m,
                                    old_protos=V.scratch_protos, old_session_ms=V.scratch_session_ms,
                                    old_rebalance_ms=V.scratch_rebalance_ms, old_leader=was_leader,
                                    supports_skip=P.supports_skip, append_gen=V.generation,
                                    append_leader=V.leader, append_members=V.members),
                             forget_scratch, sets(scratch_session_ms=0, scratch_rebalance_ms=0,
                                                  scratch_protos=none("ProtoList"))],
                            None, src, response="parked until the group is stored; then the current generation",
                            doc="the group.instance.id is known and the selected protocol would not change"))
        rows.append(new.row("known static member rejoins with a protocol change", known_static,
                            [*replace, *prepare_rebalance("Stable")], "PreparingRebalance", src,
                            response="parked until the join completes"))
    elif st == "CompletingRebalance":
        rows.append(new.row("known static member rejoins during CompletingRebalance", known_static,
                            [*replace, *prepare_rebalance("CompletingRebalance")], "PreparingRebalance", src,
                            response="parked until the join completes"))
    else:
        rows.append(new.row("known static member rejoins during PreparingRebalance", known_static,
                            replace, None, src, response="parked until the join completes"))
    return rows


def _winners_after_replace() -> Term:
    """GM.selectProtocol as it would be after the replacing member's protocols are in.

    The vote runs over the current members with the old member's protocols
    replaced by the request's; written with the same vote as join completion.
    """
    old = V.static[P.instance]

    def protos_of(m):
        return If(m == old, P.req_protos, V.protos[m])
    return named("the protocols the vote would pick with the rejoining member's protocols",
                 most_voted(V.members, protos_of))


def _join_known_member(g: Chain, st: str) -> list[Row]:
    """GC.doCurrentMemberJoinGroup: a request with a member id."""
    k = Chain("JoinGroup", (st,), base=And(g.base, *[Not(x) for x in g.before], Not(P.member_empty)),
              suffix=f" ({st})")
    src = "GC.doCurrentMemberJoinGroup; seed 000"
    if st == "Dead":
        k.last("member joins a Dead group", [reply("JoinGroup", **join_error("COORDINATOR_NOT_AVAILABLE"))],
               None, src, response="COORDINATOR_NOT_AVAILABLE")
        return k.rows
    bad = _protocol_unsupported(st)
    k.row("inconsistent protocol", bad, [reply("JoinGroup", **join_error("INCONSISTENT_GROUP_PROTOCOL"))],
          None, src, response="INCONSISTENT_GROUP_PROTOCOL")
    pending = P.member.in_(V.pending)
    k.row("pending member with a group.instance.id", pending & P.instance.is_some(),
          [reply("JoinGroup", **join_error("UNKNOWN_SERVER_ERROR", member=NO_MEMBER))], None,
          "GC.doCurrentMemberJoinGroup throws IllegalStateException; KafkaApis answers "
          "JoinGroupRequest.getErrorResponse (UNKNOWN_SERVER_ERROR, member '')",
          response="UNKNOWN_SERVER_ERROR")
    if st in ("Empty", "Stable", "CompletingRebalance"):
        k.row("pending member rejoins and starts a rebalance", pending,
              [*add_member(P.member, st, True), *prepare_rebalance(st)], "PreparingRebalance",
              "GC.doCurrentMemberJoinGroup, addMemberAndRebalance (KIP-394); seed 000",
              response="parked until the join completes")
    else:
        k.row("pending member rejoins", pending, add_member(P.member, st, True), None,
              "GC.doCurrentMemberJoinGroup, addMemberAndRebalance (KIP-394); seed 000",
              response="parked until the join completes")
    k.row("member id rejected", member_invalid, [reply("JoinGroup", **join_error(member_error))], None,
          "GC.validateCurrentMember", response="FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID",
          doc="the group.instance.id maps to another member (FENCED_INSTANCE_ID), or is unknown, "
              "or the member id is not a member (UNKNOWN_MEMBER_ID)")
    m = P.member
    same = V.protos[m] == P.req_protos
    if st == "PreparingRebalance":
        k.last("member rejoins the rebalance", update_member(m), None, src,
               response="parked until the join completes")
    elif st == "CompletingRebalance":
        k.row("member rejoins with the same metadata", same, [reply("JoinGroup", **join_info(m))], None, src,
              response="the current generation (the leader gets the member list)")
        k.last("member rejoins with new metadata", [*update_member(m), *prepare_rebalance(st)],
               "PreparingRebalance", src, response="parked until the join completes")
    elif st == "Stable":
        k.row("leader rejoins: rebalance", m == V.leader, [*update_member(m), *prepare_rebalance(st)],
              "PreparingRebalance", src + "; seed 003", response="parked until the join completes")
        k.row("follower rejoins with new metadata", Not(same), [*update_member(m), *prepare_rebalance(st)],
              "PreparingRebalance", src + "; seed 003", response="parked until the join completes")
        k.last("follower rejoins with the same metadata",
               [reply("JoinGroup", **join_info(m, members_to_leader=False))], None, src,
               response="the current generation")
    # Empty: validateCurrentMember has already failed (an Empty group has no members), so
    # Kafka's `case Empty | Dead => UNKNOWN_MEMBER_ID` branch cannot be reached.
    return k.rows


_add(_join_rows())


# -- delayed join (DelayedJoin, InitialDelayedJoin, GC.onCompleteJoin; seeds 000, 001) -----

all_joined = named("every member has rejoined and no member is pending (GM.hasAllMembersJoined)",
                   V.members.subset_of(V.awaiting_join) & V.pending.is_empty())
# The Scala coordinator re-checks with DelayedJoin.tryComplete, which the initial delay's InitialDelayedJoin
# never passes; the Java one as the row that fired says (Row.java_check)
_recheck = If(P.cfg_new_coordinator,
              named("the Java coordinator re-checks: completeClassicGroupJoin after a removal, maybeCompleteJoinPhase "
                    "(not during the initial delay) otherwise, nothing after a refusal at group.max.size",
                    Not(P.check_skipped) & (P.check_forced | (V.join_timer == lift("delayed", JoinTimer)))),
              Not(P.check_batch) & (V.join_timer == lift("delayed", JoinTimer)))
_add(completion_outcomes("CompleteJoin", _recheck & all_joined,
                         "GC.tryCompleteJoin, onCompleteJoin; seed 001; Kafka 4.0 GroupMetadataManager."
                         "maybeCompleteJoinPhase, removeMemberAndUpdateClassicGroup, "
                         "removePendingMemberAndUpdateClassicGroup"))

_extend = (V.join_timer == lift("initial", JoinTimer)) & V.new_member_added & (V.join_remaining_ms != 0)
_add([Row("JoinTimer: initial delay extended for new members", "JoinTimer", ("PreparingRebalance",), _extend,
          [sets(new_member_added=FALSE(), join_delay_ms=Min(P.cfg_initial_delay_ms, V.join_remaining_ms),
                join_remaining_ms=Max(V.join_remaining_ms - V.join_delay_ms, 0)),
           arm("initial-join", None, V.join_delay_ms)],
          None, "InitialDelayedJoin.onComplete", response="none",
          doc="a member joined during the initial delay and budget remains")])
_add(completion_outcomes("JoinTimer", Not(_extend), "DelayedJoin / InitialDelayedJoin expiry, GC.onCompleteJoin; seed 001"))
_add([Row("JoinTimer: the group is Dead", "JoinTimer", ("Dead",), TRUE(),
          [*remove_members(V.members - (V.awaiting_join | static_members), "leader_after_removal"),
           sets(join_timer=lift("none", JoinTimer))],
          None, "GC.onCompleteJoin ('is dead, skipping rebalance stage')", response="none")])


# -- SyncGroup (GC.handleSyncGroup; seeds 001, 003) ------------------------------------

def _sync_rows() -> list[Row]:
    c = Chain("SyncGroup", ALL)
    # KafkaApis answers before the coordinator sees the request (found by running Kafka 3.9.2's broker code:
    # docs/kafka-conformance.md)
    c.row("version 5+ without a protocol type and name", P.sync_v5 & (Not(P.req_ptype_given) |
                                                                       Not(P.req_protocol_given)),
          [reply("SyncGroup", **sync_error("INCONSISTENT_GROUP_PROTOCOL"))], None,
          "KafkaApis.handleSyncGroupRequest: SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent",
          response="INCONSISTENT_GROUP_PROTOCOL",
          doc="from version 5 a SyncGroup must name its protocol type and name")
    gate(c, "SyncGroup", sync_error, loading=lambda: sync_error("REBALANCE_IN_PROGRESS"),
         java_loading=lambda: sync_error("COORDINATOR_LOAD_IN_PROGRESS"))
    src = "GC.doSyncGroup; seed 001"
    c.row("no such group", V.state == S("Absent"), [reply("SyncGroup", **sync_error("UNKNOWN_MEMBER_ID"))], None,
          "GC.handleSyncGroup", response="UNKNOWN_MEMBER_ID", states=("Absent",))
    c.row("group is Dead", V.state == S("Dead"), [reply("SyncGroup", **sync_error("COORDINATOR_NOT_AVAILABLE"))],
          None, "GC.validateSyncGroup", response="COORDINATOR_NOT_AVAILABLE", states=("Dead",))
    c.row("member id rejected", member_invalid, [reply("SyncGroup", **sync_error(member_error))], None,
          "GC.validateCurrentMember", response="FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID", states=LIVE)
    c.row("wrong generation", P.generation != V.generation,
          [reply("SyncGroup", **sync_error("ILLEGAL_GENERATION"))], None, "GC.validateSyncGroup; seed 001",
          response="ILLEGAL_GENERATION", states=LIVE)
    # the Java coordinator finds a name inconsistent only against one the group has (isProtocolInconsistent):
    # a group with no protocol selected yet accepts any
    def differs(given, asked, own):
        return given & (asked != own) & (Not(P.cfg_new_coordinator) | own.is_some())
    bad = differs(P.req_ptype_given, P.req_ptype, V.protocol_type) | \
        differs(P.req_protocol_given, P.req_protocol, V.protocol)
    c.row("inconsistent protocol type or name", bad, [reply("SyncGroup", **sync_error("INCONSISTENT_GROUP_PROTOCOL"))],
          None, "GC.validateSyncGroup (v5+); Kafka 4.0 GroupMetadataManager.validateSyncGroup (isProtocolInconsistent: "
          "only against the group's own)", response="INCONSISTENT_GROUP_PROTOCOL", states=LIVE)
    m = P.member
    # (Kafka's `case Empty => UNKNOWN_MEMBER_ID` is unreachable: validateCurrentMember fails first.)
    c.row("during PreparingRebalance", TRUE(), [reply("SyncGroup", **sync_error("REBALANCE_IN_PROGRESS"))], None,
          src, response="REBALANCE_IN_PROGRESS", states=("PreparingRebalance",))
    parked = [sets(awaiting_sync=V.awaiting_sync.with_(m), pending_sync=V.pending_sync.without(m)),
              park("SyncGroup", m),
              # removePendingSyncMember: once every member has synced, DelayedSync completes
              cancel("sync", when=V.sync_timer & V.pending_sync.is_empty()),
              sets(sync_timer=V.sync_timer & Not(V.pending_sync.is_empty()))]
    c.row("leader sends the assignment", m == V.leader,
          [*parked,
           append("sync", **group_record(P.assignments), member=m, append_gen=V.generation,
                  assignments=P.assignments)],
          None, src + "; GMM.storeGroup", response="parked until the group is stored",
          states=("CompletingRebalance",), doc="the member is the leader")
    c.row("follower waits for the assignment", m != V.leader, parked, None, src,
          response="parked until the leader's assignment is stored", states=("CompletingRebalance",),
          doc="the member is not the leader")
    c.row("during Stable", TRUE(),
          [sets(pending_sync=V.pending_sync.without(m)),
           cancel("sync", when=V.sync_timer & V.pending_sync.is_empty()),
           sets(sync_timer=V.sync_timer & Not(V.pending_sync.is_empty())),
           reply("SyncGroup", error=E("NONE"), assignment=V.assignment[m], protocol_type=V.protocol_type,
                 protocol=V.protocol),
           *rearm_heartbeats(lift_single(m), session_of)],
          None, src, response="NONE with the member's stored assignment", states=("Stable",))
    return c.rows


_add(_sync_rows())

# storeGroup's callback (GC.doSyncGroup): only if still CompletingRebalance in the same generation
_same_gen = (V.state == S("CompletingRebalance")) & (P.append_gen == V.generation)
_sync_done = (P.append_kind == lift("sync", AppendKind)) & _same_gen
_add([
    Row("StoreGroupDone: assignment stored", "StoreGroupDone", ("CompletingRebalance",),
        _sync_done & (P.error == E("NONE")),
        [sets(assignment=V.assignment.put_all(V.members, lambda x: P.assignments[x])),
         answer_each("SyncGroup", V.awaiting_sync,
                     lambda x: dict(error=E("NONE"), assignment=V.assignment[x], protocol_type=V.protocol_type,
                                    protocol=V.protocol)),
         *rearm_heartbeats(V.awaiting_sync, session_of, awaiting_sync=NO_MEMBERS),
         sets(awaiting_sync=NO_MEMBERS)],
        "Stable", "GC.setAndPropagateAssignment; seed 001",
        response="every parked SyncGroup gets its member's assignment"),
    Row("StoreGroupDone: assignment not stored", "StoreGroupDone", ("CompletingRebalance",),
        _sync_done & (P.error != E("NONE")),
        [answer_each("SyncGroup", V.awaiting_sync, lambda x: sync_error(store_group_error(P.error))),
         sets(assignment=V.assignment.put_all(V.members, lambda x: NO_PARTS)),
         *rearm_heartbeats(V.awaiting_sync, session_of, awaiting_sync=NO_MEMBERS),
         sets(awaiting_sync=NO_MEMBERS),
         *prepare_rebalance("CompletingRebalance")],
        "PreparingRebalance", "GC.resetAndPropagateAssignmentError, maybePrepareRebalance",
        response="every parked SyncGroup gets the (mapped) error; the group rebalances"),
])


_add([Row("StoreGroupDone: the group moved on", "StoreGroupDone", ALL,
          (P.append_kind == lift("sync", AppendKind)) & Not(_same_gen), [], None,
          "GC.doSyncGroup (storeGroup callback ignored)", response="none",
          doc="the group is no longer CompletingRebalance in the append's generation")])
_add([Row("StoreGroupDone: empty group stored", "StoreGroupDone", ALL,
          P.append_kind == lift("empty", AppendKind), [], None,
          "GC.onCompleteJoin (a failed append is only logged)", response="none")])
_created = (P.append_kind == lift("create", AppendKind)) & P.cfg_new_coordinator
_add([Row("StoreGroupDone: new group stored (Java coordinator)", "StoreGroupDone", ALL,
          _created & (P.error == E("NONE")), [], None,
          "Kafka 4.0 GroupMetadataManager.classicGroupJoin (the new group's record committed)", response="none"),
      Row("StoreGroupDone: new group not stored, undone (Java coordinator)", "StoreGroupDone", HELD,
          _created & (P.error != E("NONE")),
          [answer_each("JoinGroup", V.awaiting_join, lambda m: join_error(store_group_error(P.error), member=NO_MEMBER)),
           *reset()], "Absent",
          "Kafka 4.0 GroupMetadataManager.classicGroupJoin (the append future's failure answers the JoinGroup); "
          "CoordinatorRuntime reverts the timeline to before the write (CoordinatorContext.failCurrentBatch)",
          response="a parked JoinGroup gets the (mapped) error; the group is gone", via=("Dead",)),
      Row("StoreGroupDone: new group not stored, already gone (Java coordinator)", "StoreGroupDone", ("Absent",),
          _created & (P.error != E("NONE")), [], None,
          "Kafka 4.0 CoordinatorRuntime (nothing left to revert)", response="none")])


def _static_done_rows() -> list[Row]:
    """storeGroup's callback after a static member was replaced in Stable
    (GC.updateStaticMemberAndRebalance).  Kafka checks no state here."""
    kind = P.append_kind == lift("static_replace", AppendKind)
    new, old = P.append_member, P.append_old
    present = new.in_(V.members)
    src = "GC.updateStaticMemberAndRebalance (storeGroup callback)"
    skip_leader = (new == V.leader) & P.supports_skip
    ok = Row("StoreGroupDone: static member's new id stored", "StoreGroupDone", HELD,
             kind & present & (P.error == E("NONE")),
             [answer("JoinGroup", new, when=new.in_(V.awaiting_join),
                     **{**join_info(new), "leader": If(P.supports_skip, V.leader, P.append_old_leader),
                        "members": If(skip_leader, V.members, NO_MEMBERS), "skip_assignment": skip_leader}),
              sets(awaiting_join=V.awaiting_join.without(new))],
             None, src, response="the new member id gets the current generation (v9+: the leader skips the assignment)")
    # On failure Kafka reverts the timeouts and the member id; it reads the "old"
    # protocols after updating them, so the new protocols stay (faithful to the code).
    failed = Row("StoreGroupDone: static member's new id not stored", "StoreGroupDone", HELD,
                 kind & present & (P.error != E("NONE")),
                 [answer("JoinGroup", new, when=TRUE(),
                                         **{**join_error(store_group_error(P.error), member=NO_MEMBER),
                                            "generation": V.generation, "protocol_type": V.protocol_type,
                                            "protocol": V.protocol, "leader": P.append_old_leader}),
                  cancel("heartbeat", new, when=new.in_(V.hb_armed)),
                  sets(members=V.members.without(new).with_(old),
                       new_members=If(new.in_(V.new_members) & Not(P.cfg_new_coordinator),
                                      V.new_members.without(new).with_(old), V.new_members.without(new)),
                       awaiting_join=V.awaiting_join.without(new), awaiting_sync=V.awaiting_sync.without(new),
                       hb_armed=V.hb_armed.without(new).with_(old),
                       leader=If(V.leader == new, old, V.leader),
                       static=V.static.put(V.instance_of[new], old),
                       instance_of=V.instance_of.put(new, none("Instance")).put(old, V.instance_of[new]),
                       # the Scala coordinator reads the "old" protocols after updating them (GC.
                       # updateStaticMemberAndRebalance), the Java one before (Kafka 4.0 GroupMetadataManager.
                       # updateStaticMemberThenRebalanceOrCompleteJoin): only the Java one restores them
                       protos=V.protos.put(new, none("ProtoList")).put(
                           old, If(P.cfg_new_coordinator, P.append_old_protos, V.protos[new])),
                       session_ms=V.session_ms.put(new, 0).put(old, P.append_old_session_ms),
                       rebalance_ms=V.rebalance_ms.put(new, 0).put(old, P.append_old_rebalance_ms),
                       assignment=V.assignment.put(new, NO_PARTS).put(old, V.assignment[new])),
                  arm("heartbeat", old, P.append_old_session_ms)],
                 None, src, response="the new member id's JoinGroup gets the (mapped) error; the old id is restored")
    gone = Row("StoreGroupDone: static member already gone", "StoreGroupDone", HELD,
               kind & Not(present), [], None, src,
               response="none (the member was removed or replaced meanwhile)")
    # The partition was unloaded meanwhile: Kafka's callback still holds the (detached)
    # group, unchanged since the unload, and answers the JoinGroup that made the append.
    skip_then = (new == P.append_leader) & P.supports_skip
    unloaded_ok = Row("StoreGroupDone: static member's new id stored after unload", "StoreGroupDone", ("Absent",),
                      kind & (P.error == E("NONE")),
                      [reply("JoinGroup", error=E("NONE"), member=new, generation=P.append_gen,
                             protocol_type=P.append_ptype, protocol=P.append_protocol,
                             leader=If(P.supports_skip, P.append_leader, P.append_old_leader),
                             members=If(skip_then, P.append_members, NO_MEMBERS), skip_assignment=skip_then)],
                      None, src + " (the detached group)", response="the generation the group had")
    unloaded_failed = Row("StoreGroupDone: static member's new id not stored after unload", "StoreGroupDone",
                          ("Absent",), kind & (P.error != E("NONE")),
                          [reply("JoinGroup", **{**join_error(store_group_error(P.error), member=NO_MEMBER),
                                                 "generation": P.append_gen, "protocol_type": P.append_ptype,
                                                 "protocol": P.append_protocol, "leader": P.append_old_leader})],
                          None, src + " (the detached group)", response="the (mapped) error")
    return [ok, failed, gone, unloaded_ok, unloaded_failed]


_add(_static_done_rows())


# -- Heartbeat (GC.handleHeartbeat; seeds 002, 003) --------------------------------------

def _heartbeat_rows() -> list[Row]:
    c = Chain("Heartbeat", ALL)
    gate(c, "Heartbeat", lambda e: dict(error=e), loading=lambda: dict(error=E("NONE")))
    c.row("no such group", V.state == S("Absent"), [reply("Heartbeat", error=E("UNKNOWN_MEMBER_ID"))], None,
          "GC.handleHeartbeat", response="UNKNOWN_MEMBER_ID", states=("Absent",))
    c.row("group is Dead", V.state == S("Dead"), [reply("Heartbeat", error=E("COORDINATOR_NOT_AVAILABLE"))], None,
          "GC.validateHeartbeat", response="COORDINATOR_NOT_AVAILABLE", states=("Dead",))
    c.row("member id rejected", member_invalid, [reply("Heartbeat", error=member_error)], None,
          "GC.validateCurrentMember", response="FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID", states=LIVE)
    c.row("wrong generation", P.generation != V.generation, [reply("Heartbeat", error=E("ILLEGAL_GENERATION"))],
          None, "GC.validateHeartbeat", response="ILLEGAL_GENERATION", states=LIVE)
    beat = rearm_heartbeats(lift_single(P.member), session_of)
    # (Kafka's `case Empty => UNKNOWN_MEMBER_ID` is unreachable: validateCurrentMember fails first.)
    # the Java coordinator returns these (classicGroupHeartbeatToClassicGroup), where it throws the errors above
    c.row("during CompletingRebalance", TRUE(), [*beat, reply("Heartbeat", error=E("NONE"))], None,
          "GC.handleHeartbeat (the code answers NONE; its comment is older)", response="NONE",
          states=("CompletingRebalance",), java_result=True)
    c.row("during PreparingRebalance", TRUE(), [*beat, reply("Heartbeat", error=E("REBALANCE_IN_PROGRESS"))], None,
          "GC.handleHeartbeat; seed 003", response="REBALANCE_IN_PROGRESS: the member learns of the rebalance",
          states=("PreparingRebalance",), java_result=True)
    c.row("during Stable", TRUE(), [*beat, reply("Heartbeat", error=E("NONE"))], None, "GC.handleHeartbeat; seed 002",
          response="NONE", states=("Stable",), java_result=True)
    return c.rows


_add(_heartbeat_rows())


# -- session expiry (DelayedHeartbeat, GC.onExpireHeartbeat; seed 002) ---------------------

def _expiry_rows() -> list[Row]:
    m = P.timer_member
    alive = Not(m.in_(V.new_members)) & (m.in_(V.awaiting_join) | m.in_(V.awaiting_sync))  # hasSatisfiedHeartbeat
    rows = [
        Row("HeartbeatExpiry: group is Dead", "HeartbeatExpiry", ("Dead",), TRUE(),
            [sets(hb_armed=V.hb_armed.without(m))], None, "GC.onExpireHeartbeat", response="none"),
        Row("HeartbeatExpiry: member kept alive by its parked request", "HeartbeatExpiry", LIVE,
            m.in_(V.members) & alive, [sets(hb_armed=V.hb_armed.without(m))], None,
            "MemberMetadata.hasSatisfiedHeartbeat; seed 002", response="none",
            doc="the member is not new and has a JoinGroup or SyncGroup parked"),
    ]
    expired = m.in_(V.members) & Not(alive)
    for st in ("PreparingRebalance", "CompletingRebalance", "Stable", "Empty"):
        if st == "Empty":
            continue  # Empty groups have no members
        rows.append(Row(f"HeartbeatExpiry: member expires during {st}", "HeartbeatExpiry", (st,), expired,
                        drop_from_group(m, st, "leader_after_expiry"),
                        # in PreparingRebalance the group stays; the join may now complete
                        None if st == "PreparingRebalance" else "PreparingRebalance",
                        "GC.onExpireHeartbeat, removeMemberAndUpdateGroup; seed 002",
                        response="a parked JoinGroup of the member gets UNKNOWN_MEMBER_ID",
                        doc="the member is new, or has nothing parked, and sent no heartbeat in time",
                        java_check="complete"))
    return rows


_add(_expiry_rows())

_add([
    Row("PendingExpiry: group is Dead", "PendingExpiry", ("Dead",), TRUE(), [], None, "GC.onExpireHeartbeat",
        response="none"),
    Row("PendingExpiry: pending member expires", "PendingExpiry", LIVE, TRUE(),
        [sets(pending=V.pending.without(P.timer_member))], None,
        "GC.onExpireHeartbeat, removePendingMemberAndUpdateGroup", response="none", java_check="complete"),
])


# -- the sync timeout (DelayedSync, GC.onExpirePendingSync) -------------------------------

_add([
    Row(f"SyncTimer: members that never synced are removed during {st}", "SyncTimer", (st,),
        Not(V.pending_sync.is_empty()),
        [sets(sync_timer=FALSE()),
         *remove_members(V.pending_sync & V.members, "leader_after_sync_expiry"),
         sets(pending_sync=NO_MEMBERS),
         *prepare_rebalance(st)],
        "PreparingRebalance", "GC.onExpirePendingSync",
        response="parked SyncGroups get REBALANCE_IN_PROGRESS (in CompletingRebalance)")
    for st in ("CompletingRebalance", "Stable")
] + [
    # (With every member synced, or the group gone to PreparingRebalance, DelayedSync has
    # already completed: the timer is cancelled then, invariant sync-timer-while-waiting.)
    Row("SyncTimer: the group is Dead", "SyncTimer", ("Dead",), TRUE(),
        [sets(sync_timer=FALSE())], None, "GC.onExpirePendingSync ('unexpected notification')", response="none"),
])


# -- LeaveGroup (GC.handleLeaveGroup; seed 003) ---------------------------------------

def _leave_rows() -> list[Row]:
    c = Chain("LeaveGroup", ALL)
    gate(c, "LeaveGroup", lambda e: dict(error=e, each=FALSE()))
    c.row("no such group", V.state == S("Absent"),
          [reply("LeaveGroup", error=E("NONE"), each=FALSE(), member_error=E("UNKNOWN_MEMBER_ID"))], None,
          "GC.handleLeaveGroup", response="NONE; every member UNKNOWN_MEMBER_ID", states=("Absent",))
    # the Java coordinator returns these (classicGroupLeaveToClassicGroup), where it throws for an unknown group
    c.row("group is Dead", V.state == S("Dead"), [reply("LeaveGroup", error=E("COORDINATOR_NOT_AVAILABLE"),
                                                        each=FALSE())], None,
          "GC.handleLeaveGroup", response="COORDINATOR_NOT_AVAILABLE", states=("Dead",), java_result=True)
    c.row("members leave one by one", TRUE(), [reply("LeaveGroup", error=E("NONE"), each=TRUE())], None,
          "GC.handleLeaveGroup", response="NONE, with an error per member (LeaveMember)", states=LIVE,
          java_result=True)

    m = Chain("LeaveMember", LIVE)
    src = "GC.handleLeaveGroup; seed 003"
    by_instance = P.member_empty
    target = V.static[P.instance]
    for st in LIVE:
        if st == "Empty":
            continue
        m.row(f"by group.instance.id during {st}", by_instance & target.is_some(),
              [*drop_from_group(target, st, "leader_after_leave"), reply("LeaveMember", error=E("NONE"))],
              "PreparingRebalance" if st != "PreparingRebalance" else None, src,
              response="NONE; the member is removed", states=(st,),
              doc="empty member id: the member the group.instance.id maps to (admin removal)", java_check="none")
    m.row("by unknown group.instance.id", by_instance, [reply("LeaveMember", error=E("UNKNOWN_MEMBER_ID"))],
          None, src, response="UNKNOWN_MEMBER_ID", doc="empty member id and no member for the group.instance.id")
    pending = P.member.in_(V.pending)
    for st in ("CompletingRebalance", "Stable"):
        # the Java coordinator rebalances once any member of the batch left, a pending one too; the Scala
        # one only removes the pending member (found running Kafka 4.0.2's harness)
        m.row(f"pending member leaves during {st} (Java coordinator: the group rebalances)",
              pending & P.cfg_new_coordinator,
              [sets(pending=V.pending.without(P.member)), cancel("pending-member", P.member), *prepare_rebalance(st),
               reply("LeaveMember", error=E("NONE"))], "PreparingRebalance",
              "Kafka 4.0 GroupMetadataManager.classicGroupLeaveToClassicGroup (maybePrepareRebalanceOrCompleteJoin "
              "after the batch when any member left)", response="NONE; the group rebalances", states=(st,),
              java_check="none")
    m.row("pending member leaves", pending,
          [sets(pending=V.pending.without(P.member)), cancel("pending-member", P.member),
           reply("LeaveMember", error=E("NONE"))], None, "GC.removePendingMemberAndUpdateGroup",
          response="NONE", java_check="none")
    m.row("member id rejected", member_invalid, [reply("LeaveMember", error=member_error)], None,
          "GC.validateCurrentMember", response="FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID")
    for st in LIVE:
        if st == "Empty":
            continue
        m.row(f"member leaves during {st}", TRUE(),
              [*drop_from_group(P.member, st, "leader_after_leave"), reply("LeaveMember", error=E("NONE"))],
              "PreparingRebalance" if st != "PreparingRebalance" else None, src,
              response="NONE; the member is removed", states=(st,), java_check="none")
    return c.rows + m.rows


_add(_leave_rows())


# -- OffsetCommit and OffsetFetch (GC.handleCommitOffsets, handleFetchOffsets; seed 001) ------

def _commit_rows() -> list[Row]:
    c = Chain("OffsetCommit", ALL)
    gate(c, "OffsetCommit", commit_errors)
    def store(created: bool) -> list:
        return [sets(pending_offsets=V.pending_offsets | P.commit_parts,
                     staged_offsets=V.staged_offsets.put_all(P.commit_parts, lambda p: P.commit[p])),
                append("offsets", commit=P.commit, commit_parts=P.commit_parts, member=P.member,
                       created=TRUE() if created else FALSE())]
    src = "GC.validateOffsetCommit, doCommitOffsets; seed 001"
    c.row("offsets-only commit creates the group", (V.state == S("Absent")) & (P.generation < 0),
          [sets(state=S("Empty")), *store(True)], "Empty", "GC.handleCommitOffsets ('simple consumer group')",
          response="parked until the offsets are stored", states=("Absent",))
    c.row("no such group (Java coordinator, version 9+)", (V.state == S("Absent")) & P.cfg_new_coordinator & P.commit_v9,
          [reply("OffsetCommit", **commit_errors("GROUP_ID_NOT_FOUND"))], None,
          "Kafka 4.0 OffsetMetadataManager.validateOffsetCommit (GroupIdNotFoundException from version 9)",
          response="GROUP_ID_NOT_FOUND for every partition", states=("Absent",), doc="generation ≥ 0")
    c.row("no such group", V.state == S("Absent"), [reply("OffsetCommit", **commit_errors("ILLEGAL_GENERATION"))],
          None, "GC.handleCommitOffsets; Kafka 4.0 OffsetMetadataManager.validateOffsetCommit (before version 9)",
          response="ILLEGAL_GENERATION for every partition", states=("Absent",), doc="generation ≥ 0")
    c.row("group is Dead", V.state == S("Dead"), [reply("OffsetCommit", **commit_errors("COORDINATOR_NOT_AVAILABLE"))],
          None, "GC.validateOffsetCommit", response="COORDINATOR_NOT_AVAILABLE", states=("Dead",))
    offsets_only = (P.generation < 0) & (V.state == S("Empty"))
    c.row("offsets-only commit to an Empty group", offsets_only, store(False), None, src,
          response="parked until the offsets are stored", states=("Empty",),
          doc="generation < 0 and the group is Empty")
    as_member = (P.generation >= 0) | Not(P.member_empty) | P.instance.is_some()
    c.row("member id rejected", as_member & member_invalid, [reply("OffsetCommit", **commit_errors(member_error))],
          None, "GC.validateCurrentMember", response="FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID", states=LIVE)
    c.row("wrong generation", as_member & (P.generation != V.generation),
          [reply("OffsetCommit", **commit_errors("ILLEGAL_GENERATION"))], None, src + "; seed 001",
          response="ILLEGAL_GENERATION", states=LIVE)
    c.row("anonymous commit to a group with members", Not(as_member) & (V.state != S("Empty")),
          [reply("OffsetCommit", **commit_errors("UNKNOWN_MEMBER_ID"))], None, src, response="UNKNOWN_MEMBER_ID",
          states=LIVE, doc="generation < 0, no member id and the group is not Empty")
    # (A commit to an Empty group with generation >= 0 was rejected above: it has no members.)
    c.row("commit during CompletingRebalance", TRUE(),
          [reply("OffsetCommit", **commit_errors("REBALANCE_IN_PROGRESS"))], None, src,
          response="REBALANCE_IN_PROGRESS", states=("CompletingRebalance",))
    c.row("member commits", TRUE(), [*rearm_heartbeats(lift_single(P.member), session_of), *store(False)], None,
          src + " (a commit counts as a heartbeat)", response="parked until the offsets are stored",
          states=("Stable", "PreparingRebalance"))
    return c.rows


_add(_commit_rows())

# the partitions whose latest staged commit is this one: GM.onOffsetCommitAppend and failPendingOffsetWrite
# clear a partition's pending commit only then (found by the conformance harness against Kafka 3.9.2: a later
# commit held behind this one was lost; docs/kafka-conformance.md)
_its_own = named("the partitions whose latest staged commit is this one",
                 Filter(P.commit_parts, lambda p: V.staged_offsets[p] == P.commit[p]))
_unstage = dict(pending_offsets=V.pending_offsets - _its_own,
                staged_offsets=V.staged_offsets.put_all(_its_own, lambda p: -1))
_add([
    Row("StoreOffsetsDone: offsets stored", "StoreOffsetsDone", LIVE, P.error == E("NONE"),
        [sets(offsets=V.offsets.put_all(P.commit_parts & V.pending_offsets, lambda p: P.commit[p]), **_unstage),
         reply("OffsetCommit", **commit_errors("NONE"))], None, "GMM.storeOffsets (onOffsetCommitAppend)",
        response="NONE for every partition"),
    Row("StoreOffsetsDone: the group the commit created is undone (Java coordinator)", "StoreOffsetsDone", LIVE,
        (P.error != E("NONE")) & P.cfg_new_coordinator & P.append_created,
        [reply("OffsetCommit", **commit_errors(offset_commit_error(P.error))), *reset()], "Absent",
        "Kafka 4.0 OffsetMetadataManager.commitOffset (getOrMaybeCreateClassicGroup in the write); the write failing, "
        "CoordinatorRuntime reverts the timeline to before it (CoordinatorContext.failCurrentBatch)",
        response="the mapped error for every partition; the group is gone", via=("Dead",)),
    Row("StoreOffsetsDone: offsets not stored", "StoreOffsetsDone", LIVE,
        (P.error != E("NONE")) & Not(P.cfg_new_coordinator & P.append_created),
        [sets(**_unstage),
         reply("OffsetCommit", **commit_errors(offset_commit_error(P.error)))], None,
        "GMM.storeOffsets (failPendingOffsetWrite), maybeConvertOffsetCommitError",
        response="the mapped error for every partition"),
    Row("StoreOffsetsDone: stored for a Dead group (Java coordinator)", "StoreOffsetsDone", ("Dead",),
        P.cfg_new_coordinator & (P.error == E("NONE")),
        [sets(offsets=V.offsets.put_all(P.commit_parts, lambda p: P.commit[p]), **_unstage),
         reply("OffsetCommit", **commit_errors("NONE"))], None,
        "Kafka 4.0 OffsetMetadataManager.commitOffset: the offsets are the write's records, replayed as it is made "
        "and read once it is committed, whatever became of the group meanwhile",
        response="NONE for every partition; the offsets are the group's"),
    Row("StoreOffsetsDone: group gone", "StoreOffsetsDone", ("Absent", "Dead"),
        Not(P.cfg_new_coordinator & (P.error == E("NONE")) & (V.state == S("Dead"))),
        [reply("OffsetCommit", **commit_errors(offset_commit_error(P.error)))], None,
        "GMM.storeOffsets (the cache is not updated for a Dead group)", response="the append's (mapped) result"),
])


def _fetch_rows() -> list[Row]:
    c = Chain("OffsetFetch", ALL)
    gate(c, "OffsetFetch", lambda e: dict(error=e, offsets=V.offsets, partitions=NO_PARTS))
    wanted = If(P.fetch_all, Filter_offsets(), P.fetch_parts)
    c.row("no such group", in_states("Absent", "Dead"),
          [reply("OffsetFetch", error=E("NONE"), offsets=V.offsets.fill(-1),
                 partitions=If(P.fetch_all, NO_PARTS, P.fetch_parts))], None,
          "GMM.getOffsets", response="-1 for every partition asked for", states=("Absent", "Dead"))
    c.row("offsets", TRUE(), [reply("OffsetFetch", error=E("NONE"), offsets=V.offsets, partitions=wanted)], None,
          "GMM.getOffsets (regardless of the group's state)", response="the committed offsets (-1 for none)",
          states=LIVE)
    return c.rows


_add(_fetch_rows())


# -- DescribeGroups, ListGroups, DeleteGroups (GC.handleDescribeGroup, handleListGroups,
#    handleDeleteGroups; GM.summary, GM.overview) ---------------------------------------

def summary(error: Term, state: Term, with_group: bool = True) -> dict:
    """GM.summary: protocol, member metadata and assignments only while Stable."""
    if not with_group:
        return dict(error=error, summary_state=state, protocol_type=none("ProtocolType"), protocol=NO_PROTOCOL,
                    members=NO_MEMBERS, assignment=V.assignment.fill(NO_PARTS))
    stable = V.state == S("Stable")
    return dict(error=error, summary_state=state, protocol_type=V.protocol_type,
                protocol=If(stable, V.protocol, NO_PROTOCOL), members=V.members,
                assignment=If(stable, V.assignment, V.assignment.fill(NO_PARTS)))


def _describe_rows() -> list[Row]:
    c = Chain("DescribeGroup", ALL)
    gate(c, "DescribeGroup", lambda e: summary(e, S("Absent"), with_group=False))
    c.row("unknown group (v6+)", (V.state == S("Absent")) & P.describe_not_found,
          [reply("DescribeGroup", **summary(E("GROUP_ID_NOT_FOUND"), S("Dead"), with_group=False))], None,
          "GC.handleDescribeGroup (KIP-1043)", response="GROUP_ID_NOT_FOUND", states=("Absent",))
    c.row("unknown group", V.state == S("Absent"),
          [reply("DescribeGroup", **summary(E("NONE"), S("Dead"), with_group=False))], None,
          "GC.handleDescribeGroup (GroupCoordinator.DeadGroup)", response="NONE, state Dead, no members",
          states=("Absent",), doc="version < 6")
    c.row("summary", TRUE(), [reply("DescribeGroup", **summary(E("NONE"), V.state))], None, "GM.summary",
          response="NONE with the group's summary", states=HELD)
    return c.rows


_add(_describe_rows())
_add([
    Row("ListGroups: coordinator loading", "ListGroups", ALL, P.coord == lift("loading", Coord),
        [reply("ListGroups", error=E("COORDINATOR_LOAD_IN_PROGRESS"))], None, "GC.handleListGroups",
        response="COORDINATOR_LOAD_IN_PROGRESS"),
    Row("ListGroups: listed", "ListGroups", ALL, P.coord != lift("loading", Coord),
        [reply("ListGroups", error=E("NONE"))], None, "GC.handleListGroups", response="NONE"),
    Row("ListGroupsEntry: held group", "ListGroupsEntry", HELD, TRUE(),
        [reply("ListGroupsEntry", listed=TRUE(), summary_state=V.state, protocol_type=V.protocol_type)], None,
        "GM.overview", response="the group, its protocol type and state"),
])


# a removed group's tombstone: the Scala coordinator writes one once the group has a record (generation > 0,
# GMM.cleanupGroupMetadata), the Java one always (ClassicGroup.createGroupTombstoneRecords: it writes a group
# from its creation on, at generation 0 too)
_tombstone = Out("tombstone", when=(V.generation > 0) | P.cfg_new_coordinator)


def _delete_rows() -> list[Row]:
    c = Chain("DeleteGroup", ALL)
    gate(c, "DeleteGroup", lambda e: dict(error=e))
    # the Java coordinator gathers every group's answer into its write operation's result (deleteGroups)
    c.row("no such group", in_states("Absent", "Dead"), [reply("DeleteGroup", error=E("GROUP_ID_NOT_FOUND"))],
          None, "GC.handleDeleteGroups (groupNotExists)", response="GROUP_ID_NOT_FOUND", states=("Absent", "Dead"),
          java_result=True)
    c.row("Empty group is deleted", TRUE(),
          [Out("delete_offsets", fields={"parts": Filter_offsets()}, when=Not(Filter_offsets().is_empty())),
           _tombstone, reply("DeleteGroup", error=E("NONE")), *reset()], "Absent",
          "GC.handleDeleteGroups, GMM.cleanupGroupMetadata", response="NONE; offsets and group removed",
          states=("Empty",), via=("Dead",), java_result=True)
    c.row("group has members", TRUE(), [reply("DeleteGroup", error=E("NON_EMPTY_GROUP"))], None,
          "GC.handleDeleteGroups", response="NON_EMPTY_GROUP",
          states=("PreparingRebalance", "CompletingRebalance", "Stable"), java_result=True)
    return c.rows


_add(_delete_rows())


# -- the coordinator: unload, load, a group marked Dead, offset expiry -----------------

_add([
    Row("Unload: parked joins answered NOT_COORDINATOR", "Unload", ("PreparingRebalance",), TRUE(),
        [answer_each("JoinGroup", V.awaiting_join, lambda m: join_error("NOT_COORDINATOR", member=m)), *reset()],
        "Absent", "GC.onGroupUnloaded; GMM.removeGroupsForPartition", via=("Dead",),
        response="every parked JoinGroup gets NOT_COORDINATOR"),
    Row("Unload: parked syncs answered NOT_COORDINATOR", "Unload", ("CompletingRebalance", "Stable"), TRUE(),
        [answer_each("SyncGroup", V.awaiting_sync, lambda m: sync_error("NOT_COORDINATOR")), *reset()],
        "Absent", "GC.onGroupUnloaded; GMM.removeGroupsForPartition", via=("Dead",),
        response="every parked SyncGroup gets NOT_COORDINATOR"),
    Row("Unload: nothing parked", "Unload", ("Empty", "Dead"), TRUE(), reset(), "Absent",
        "GC.onGroupUnloaded; GMM.removeGroupsForPartition", via=("Dead",), response="none"),
    Row("Unload: not held", "Unload", ("Absent",), TRUE(), [], None, "GMM.removeGroupsForPartition",
        response="none"),
])

def _member_of_instance(i: Term) -> Term:
    from .lang import Lowest
    return Lowest(Filter(V.members, lambda m: V.instance_of[m] == i))


_rec = P.record
_loaded = [sets(generation=_rec["generation"], protocol_type=_rec["protocol_type"], protocol=_rec["protocol"],
                leader=_rec["leader"], members=_rec["members"], instance_of=_rec["instance_of"],
                static=V.static.fill(NO_MEMBER), protos=_rec["protos"], session_ms=_rec["session_ms"],
                rebalance_ms=_rec["rebalance_ms"], assignment=_rec["assignment"], offsets=_rec["offsets"]),
           # GM.add rebuilds the group.instance.id map
           sets(static=V.static.put_all(Filter_instances(V.members), lambda i: _member_of_instance(i))),
           *rearm_heartbeats(V.members, session_of)]


_over = P.cfg_max_size < _rec["members"].count()
_add([
    Row("Load: group with members", "Load", ("Absent",), Not(_rec["members"].is_empty()) & Not(_over),
        [*_loaded], "Stable", "GMM.loadGroupsAndOffsets, GC.onGroupLoaded", response="none"),
    Row("Load: group over capacity rebalances", "Load", ("Absent",), Not(_rec["members"].is_empty()) & _over,
        [*_loaded, *prepare_rebalance("Stable")], "PreparingRebalance",
        "GC.onGroupLoaded ('Freshly-loaded group is over capacity')", via=("Stable",), response="none"),
    Row("Load: group without members", "Load", ("Absent",), _rec["members"].is_empty(), _loaded, "Empty",
        "GMM.loadGroupsAndOffsets (Empty if the record has no members)", response="none"),
    Row("Load: group already held", "Load", HELD, TRUE(), [], None, "GMM.addGroup (the cached group wins)",
        response="none"),
    Row("MarkDead: group marked Dead", "MarkDead", HELD, TRUE(), [sets(state=S("Dead"))], "Dead",
        "GC (a request racing with the group's removal sees it Dead)", response="none; nothing parked is answered"),
    Row("MarkDead: not held", "MarkDead", ("Absent",), TRUE(), [], None, "scenario contract (mark_dead)",
        response="none"),
])

# GM.removeExpiredOffsets: which offsets may expire depends on the group
_committed = Filter_offsets() - V.pending_offsets
_expired = named("the expired offsets (GM.removeExpiredOffsets)",
                If(V.protocol_type.is_some() & (V.state == S("Empty")),
                   If(P.state_aged, _committed, NO_PARTS),
                   If(V.protocol_type.is_none(), _committed & P.aged, NO_PARTS)))
_expire = [Out("delete_offsets", fields={"parts": _expired}, when=Not(_expired.is_empty())),
           sets(offsets=V.offsets.put_all(_expired, lambda p: -1))]
_add([
    Row("ExpireOffsets: Empty group loses its last offsets", "ExpireOffsets", ("Empty",),
        (Filter_offsets() - _expired).is_empty() & V.pending_offsets.is_empty(),
        [*_expire, _tombstone, *reset()], "Absent",
        "GMM.cleanupGroupMetadata ('transitioned to Dead'); Kafka 4.0 GroupMetadataManager.maybeDeleteGroup",
        via=("Dead",), response="none; the group is removed (a tombstone if its generation > 0, or by the Java "
                                 "coordinator)"),
    Row("ExpireOffsets: Empty group keeps offsets", "ExpireOffsets", ("Empty",),
        Not((Filter_offsets() - _expired).is_empty() & V.pending_offsets.is_empty()),
        _expire, None, "GM.removeExpiredOffsets", response="none"),
    Row("ExpireOffsets: offsets expire", "ExpireOffsets", ("PreparingRebalance", "CompletingRebalance", "Stable"),
        TRUE(), _expire, None,
        "GM.removeExpiredOffsets (offsets-only groups by commit time; consumer groups only when Empty: "
        "the subscribed topics of a Stable group are not known here)", response="none"),
    Row("ExpireOffsets: a Dead group is removed", "ExpireOffsets", ("Dead",), Not(P.cfg_new_coordinator),
        [*_expire, Out("tombstone", when=V.generation > 0), *reset()], "Absent",
        "GMM.cleanupGroupMetadata (groupMetadataCache.remove once Dead)",
        response="none; the group is removed (a tombstone if its generation > 0)"),
    Row("ExpireOffsets: a Dead group stays (Java coordinator)", "ExpireOffsets", ("Dead",), P.cfg_new_coordinator,
        _expire, None,
        "Kafka 4.0 GroupCoordinatorShard.cleanupGroupMetadata: GroupMetadataManager.maybeDeleteGroup deletes only an "
        "Empty group (ClassicGroup.isEmpty); its offsets expire as ClassicGroup.offsetExpirationCondition says",
        response="none; the group stays Dead"),
    Row("ExpireOffsets: nothing to do", "ExpireOffsets", ("Absent",), TRUE(), [], None,
        "GMM.cleanupGroupMetadata", response="none"),
])


for _r in ROWS:
    check_row(_r)

ROW_BY_NAME: dict[str, Row] = {}
for _r in ROWS:
    if _r.name in ROW_BY_NAME:
        raise ValueError(f"two rows are named {_r.name!r}")
    ROW_BY_NAME[_r.name] = _r


# The timers rows arm and cancel: the trigger each fires, and the state in which it may
# be armed (a member's timers are keyed by the member, the trigger's `timer_member`).
# The checkers' abstract time fires a timer whenever its condition holds; the runtime's
# timers are real, so lint proves every row keeps each armed timer's condition true
# (else the runtime fires a timer no row covers, or one a row's guard never sees).
TIMERS: dict[str, tuple[str, Term]] = {
    "heartbeat": ("HeartbeatExpiry", P.timer_member.in_(V.hb_armed)),
    "pending-member": ("PendingExpiry", P.timer_member.in_(V.pending)),
    "join": ("JoinTimer", V.join_timer == lift("delayed", JoinTimer)),
    "initial-join": ("JoinTimer", V.join_timer == lift("initial", JoinTimer)),
    "sync": ("SyncTimer", V.sync_timer),
}
TIMER_TRIGGERS: dict[str, str] = {name: trig for name, (trig, _) in TIMERS.items()}


def timer_armed(name: str) -> Term:
    """When timer `name` may be armed."""
    return TIMERS[name][1]


# When a trigger can happen at all: a timer fires only while armed, a batch's
# per-member leave only after the group-level checks passed.  Lint asks that
# the rows of each trigger cover exactly these cases.
ENABLED: dict[str, Term] = {
    **{trig: Or(*[cond for t, cond in TIMERS.values() if t == trig]) for trig in dict.fromkeys(TIMER_TRIGGERS.values())},
    "LeaveMember": in_states(*LIVE),
    "ListGroupsEntry": Not(V.state == S("Absent")),
    # only the Java coordinator writes the group a request creates
    "StoreGroupDone": Implies(P.append_kind == lift("create", AppendKind), P.cfg_new_coordinator),
}


def enabled(trigger: str) -> Term:
    return ENABLED.get(trigger, TRUE())


def _conjuncts(t: Term) -> list[Term]:
    return [c for a in t.args for c in _conjuncts(a)] if t.op == "and" else [t]


def coordinator_of(row: Row) -> bool | None:
    """Which coordinator a row's guard confines it to: True (the Java one: a conjunct
    group.coordinator.new.enable), False (the Scala one: its negation), None (both)."""
    for c in _conjuncts(row.guard):
        if c.op == "param" and c.data == "cfg_new_coordinator":
            return True
        if c.op == "not" and c.args[0].op == "param" and c.args[0].data == "cfg_new_coordinator":
            return False
    return None


def rows_for(new_coordinator: bool, rows: list[Row] | None = None) -> list[Row]:
    """The rows (the table's, or a mutant's) that can fire under one coordinator: a host that describes only
    one (the closed world describes the Scala coordinator) leaves the other's out."""
    return [r for r in (ROWS if rows is None else rows) if coordinator_of(r) in (None, new_coordinator)]
