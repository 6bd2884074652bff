"""Kafka's helpers that several of the coordinator's handlers share, each written once for every row that uses it.

The rows (table.py) are Kafka's if / else-if cascades; what Kafka calls from more than one handler is here,
under Kafka's names (the sources as table.py's docstring abbreviates them):

- checks: validateCurrentMember (`member_invalid`, answered `member_error`), and validateGroupStatus (`gate`,
  which writes a request's first rows onto its chain);
- the group's bookkeeping, as a row's steps: completeAndScheduleNextHeartbeatExpiration (`rearm_heartbeats`),
  GM.remove (`remove_members`), prepareRebalance, addMemberAndRebalance (`add_member`), GM.updateMember,
  removeMemberAndUpdateGroup (`drop_from_group`), and dropping the group (`reset`);
- the protocol vote (GM.selectProtocol) and GC.onCompleteJoin's outcomes (`completion_outcomes`: the rows the
  delayed join's timer and its eager re-check share);
- the group record GMM.storeGroup writes (`group_record`).
"""
from __future__ import annotations

from typing import Callable

from .lang import (FALSE, TRUE, Apply, Choose, Count, Filter, ForAll, If, Lowest, Max, MaxOver, Not, Term, lift,
                   named, none, singleton)
from .rows import Chain, Out, Row, Set_, answer, answer_each, append, arm, cancel, each, labelled, park, reply, sets
from .responses import join_error, join_info, sync_error
from .schema import STATE_VARS, Coord, GroupRecord, JoinTimer, P, V
from .vocabulary import (JAVA, E, NO_MEMBER, NO_MEMBERS, NO_PARTS, NO_PROTOCOL, Filter_instances, names_of,
                         kafka_text, rebalance_timeout, static_members)

# -- validateCurrentMember (GC) ----------------------------------------------------------

# the group.instance.id, if given, must map to this member id; then the member id must be a member.
fenced = named("the group.instance.id maps to another member id",
               P.instance.is_some() & V.static[P.instance].is_some() & (V.static[P.instance] != P.member))
instance_unknown = P.instance.is_some() & V.static[P.instance].is_none()
not_member = Not(P.member.in_(V.members))
member_error = named("FENCED_INSTANCE_ID if fenced, else UNKNOWN_MEMBER_ID",
                     If(fenced, E("FENCED_INSTANCE_ID"), E("UNKNOWN_MEMBER_ID")))
member_invalid = named("validateCurrentMember fails (fenced, unknown group.instance.id, or not a member)",
                       fenced | instance_unknown | not_member)


# -- the group's bookkeeping (GM, GC) -------------------------------------------------

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
    return labelled(f"reschedule the session timers of {kafka_text(ms)} (completeAndScheduleNextHeartbeatExpiration)", [
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
    return labelled(f"remove {kafka_text(ms)} from the group (GM.remove; a removed leader is replaced by any "
                    f"remaining member)", [each(ms & V.hb_armed, lambda m: cancel("heartbeat", m)), Set_(upd)])


def remove_member(m: Term, choice: str) -> list:
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
    return labelled(f"add {kafka_text(m)} as a new member, its JoinGroup parked, its timer "
                    f"group.new.member.join.timeout.ms (GC.addMemberAndRebalance)", steps)


def update_member(m: Term) -> list:
    """GM.updateMember with a join callback: new protocols and timeouts; the JoinGroup parks."""
    return labelled(f"update {kafka_text(m)}'s protocols and timeouts, park its JoinGroup (GM.updateMember)",
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
    return named(f"the protocols most members of {kafka_text(ms)} vote for (GM.selectProtocol)", most_voted(ms))


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


# -- the group record (GMM.storeGroup) ----------------------------------------------------

def group_record(assignment: Term | None) -> dict:
    """What GMM.storeGroup writes: the group with an assignment per member (typed as a GroupRecord).
    GMM.groupMetadataValue writes one entry per member of the group, so of the leader's
    assignment only the members' entries are kept (the leader may name an id that is no longer
    a member's, e.g. a static member's replaced id)."""
    if assignment is not None:
        assignment = assignment.fill(NO_PARTS).put_all(V.members, lambda m: assignment[m])
    fields = dict(generation=V.generation, protocol_type=V.protocol_type, protocol=V.protocol,
                  leader=V.leader, members=V.members, instance_of=V.instance_of, protos=V.protos,
                  session_ms=V.session_ms, rebalance_ms=V.rebalance_ms,
                  assignment=V.assignment if assignment is None else assignment)
    types = dict(zip(GroupRecord.values, GroupRecord.args))
    return {k: lift(v, types[k]) for k, v in fields.items()}


# -- validateGroupStatus (GC) ----------------------------------------------------------

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
