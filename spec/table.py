"""Kafka's classic group coordinator as a declarative transition table.

Each request handler of Kafka's `GroupCoordinator` is an if / else-if
cascade; here each branch is a row, written in the order Kafka checks its
conditions (a `Chain` negates the conditions of the rows above, so the
order of the checks is explicit and the rows of a trigger are exclusive).
The pieces Kafka itself reuses (prepareRebalance, removeMemberAndUpdateGroup,
onCompleteJoin, ...) are written once, in `kafka_steps.py`, and used by
every row that needs them; the words rows are written in (states, errors,
empty values) are in `vocabulary.py`, the responses and Kafka's error
mappings in `responses.py`.  After the rows: the timers rows arm (`TIMERS`),
when each trigger can happen (`ENABLED`), and how an append completes
(`completion`), which every driver reads.

Sources are Kafka 3.9's Scala coordinator unless a row says otherwise
(`GC.` = GroupCoordinator.scala, `GM.` = GroupMetadata.scala,
`GMM.` = GroupMetadataManager.scala) and the seed articles in
shared/seeds/ (`seed 000` = the lecture on handleJoinGroup, and so on).
"""
from __future__ import annotations

import dataclasses

from .kafka_steps import (add_member, completion_outcomes, drop_from_group, gate, group_record, member_error,
                          member_invalid, most_voted, prepare_rebalance, rearm_heartbeats, remove_member,
                          remove_members, reset, session_of, update_member)
from .lang import (FALSE, TRUE, And, Count, Filter, ForAll, If, Implies, Lowest, Max, Min, Not, Or, Term, default_of,
                   lift, named, none, INT, NONE)
from .rows import Chain, Out, Row, answer, answer_each, append, arm, cancel, check_row, labelled, park, reply, sets
from .responses import (commit_errors, join_error, join_info, offset_commit_error, store_group_error,
                        sync_error)
from .schema import MEMBER, AppendKind, Coord, GroupRecord, JoinTimer, P, V
from .vocabulary import (ALL, E, HELD, JAVA, LIVE, NO_MEMBER, NO_MEMBERS, NO_PARTS, NO_PROTOCOL, S,
                         Filter_instances, Filter_offsets, in_states, lift_single, names_of, static_members)


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
    protocol, leader or members, so nothing of a member either (the record keeps a member's metadata in
    its entry of the members list: a Load of this record knows nothing of the member that created the
    group; kept, its protocols and group.instance.id would be metadata of no member)."""
    blank = {k: getattr(V, k).fill(lift(default_of(t.value), t.value))
             for k, t in zip(GroupRecord.values, GroupRecord.args) if t.kind == "map" and t.key == MEMBER}
    return {**group_record(None), **blank, "generation": lift(0, INT), "protocol_type": none("ProtocolType"),
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
    """JoinGroup's cascade once the group is looked up in state `st`: acceptJoiningMember (chain `g`), then a
    new member's checks (chain `new`, the static member's replacement among them), then a known member's.
    Each row is on one chain, and the rows are the chains' rows, in that order."""
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

    # ---- a new member (empty member id): doNewMemberJoinGroup
    new = Chain("JoinGroup", (st,), base=And(g.base, *[Not(x) for x in g.before], P.member_empty), suffix=tag)
    if st == "Dead":
        new.last("new member, group is Dead",
                 [reply("JoinGroup", **join_error("COORDINATOR_NOT_AVAILABLE", member=NO_MEMBER))], None,
                 "GC.doNewMemberJoinGroup", response="COORDINATOR_NOT_AVAILABLE")
        return g.rows + new.rows + _join_known_member(g, st)
    bad_protocol = _protocol_unsupported(here)
    new.row("new member, inconsistent protocol", bad_protocol,
            [*create, reply("JoinGroup", **join_error("INCONSISTENT_GROUP_PROTOCOL", member=NO_MEMBER))], stay,
            "GM.supportsProtocols; seed 000", response="INCONSISTENT_GROUP_PROTOCOL", via=())
    # static member whose group.instance.id is known: replace it (updateStaticMemberAndRebalance)
    known_static = P.instance.is_some() & V.static[P.instance].is_some()
    if st in ("Stable", "CompletingRebalance", "PreparingRebalance"):
        _static_replace(new, st, known_static)
    else:
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
    return g.rows + new.rows + (_join_known_member(g, st) if st != "Absent" else [])


def _protocol_unsupported(st: str) -> Term:
    """Not GM.supportsProtocols(protocolType, protocols)."""
    names = names_of(P.req_protos)
    if st == "Empty":
        return P.req_ptype_empty | names.is_empty()
    supported_by_all = Filter(names, lambda p: ForAll(V.members, lambda m: p.in_(names_of(V.protos[m]))))
    return (P.req_ptype != V.protocol_type) | supported_by_all.is_empty()


def _static_replace(new: Chain, st: str, known_static: Term) -> None:
    """GC.updateStaticMemberAndRebalance: a known group.instance.id rejoins with an empty member id.  Its rows
    are written onto `new`, the new member's chain, where Kafka checks for them."""
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
    src = "GC.updateStaticMemberAndRebalance (KIP-345)"
    if st == "Stable":
        # the protocol the next generation would select, with the new member's protocols
        unchanged = V.protocol.in_(_winners_after_replace())
        new.row("known static member rejoins, protocol unchanged: persist the new id",
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
                doc="the group.instance.id is known and the selected protocol would not change")
        new.row("known static member rejoins with a protocol change", known_static,
                [*replace, *prepare_rebalance("Stable")], "PreparingRebalance", src,
                response="parked until the join completes")
    elif st == "CompletingRebalance":
        new.row("known static member rejoins during CompletingRebalance", known_static,
                [*replace, *prepare_rebalance("CompletingRebalance")], "PreparingRebalance", src,
                response="parked until the join completes")
    else:
        new.row("known static member rejoins during PreparingRebalance", known_static,
                replace, None, src, response="parked until the join completes")


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


def completion(kind: str, f: dict) -> tuple[str, dict]:
    """How an append completes: the trigger, and its parameters (all but `error`) from the
    values the `append` output captured.  Every driver (runtime, checkers) completes appends
    through this, so what a completion sees is defined once, here beside the rows."""
    if kind == "offsets":
        return "StoreOffsetsDone", {"commit": f["commit"], "commit_parts": f["commit_parts"],
                                    "append_member": f["member"], "append_created": f.get("created", False)}
    return "StoreGroupDone", {
        "append_kind": AppendKind.values.index(kind), "append_gen": f.get("append_gen", f["generation"]),
        "append_member": f.get("member", f.get("new", NONE)), "append_old": f.get("old", NONE),
        "append_old_protos": f.get("old_protos", NONE), "append_old_session_ms": f.get("old_session_ms", 0),
        "append_old_rebalance_ms": f.get("old_rebalance_ms", 0), "append_old_leader": f.get("old_leader", NONE),
        "supports_skip": f.get("supports_skip", False), "append_ptype": f["protocol_type"],
        "append_protocol": f["protocol"], "append_leader": f.get("append_leader", NONE),
        "append_members": f.get("append_members", 0), "assignments": f.get("assignments", f["assignment"])}


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
