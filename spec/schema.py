"""The state of one group, the parameters of its triggers, and their domains.

Every variable's meaning is stated once, here (the habit of Lamport's TLA+
specifications).  The rows in `table.py` read and write only these.

Finite domains.  A group's members, group.instance.ids, partitions,
protocol names, protocol lists and protocol types are elements of finite
domains: the runtime interns each real value (a member id string, a
partition `t0-2`) to a small index, the checkers fix how many exist.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .kafka import ERRORS
from .lang import BOOL, INT, NONE, Dom, Enum, Fun, MapOf, Param, RecordOf, SetOf, Type, Var

# -- domains ---------------------------------------------------------------
MEMBER = "Member"          # a member id (or a pending member id) of this group
INSTANCE = "Instance"      # a group.instance.id
PARTITION = "Partition"    # a topic partition (assignments and offsets)
PROTOCOL = "Protocol"      # an assignment protocol name ("range")
PROTOLIST = "ProtoList"    # a member's ordered list of (protocol name, metadata)
PTYPE = "ProtocolType"     # a protocol type ("consumer")

# -- the lifecycle ------------------------------------------------------------
# Kafka's five states, plus Absent: the coordinator holds no such group (it was
# never created, was removed once Dead, or its partition is not loaded here).
STATES = ("Absent", "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
GroupState = Enum("GroupState", *STATES)

# Kafka's legal moves, declared as ClassicGroupState declares them: for each
# state, the states it may be entered from (GroupMetadata.scala, validPreviousStates).
VALID_PREVIOUS: dict[str, tuple[str, ...]] = {
    "PreparingRebalance": ("Stable", "CompletingRebalance", "Empty"),
    "CompletingRebalance": ("PreparingRebalance",),
    "Stable": ("CompletingRebalance",),
    "Dead": ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"),
    "Empty": ("PreparingRebalance",),
}
# Moves of the coordinator's group cache rather than of the group: a group is
# created Empty (JoinGroup from a new member, a manual offset commit), loaded
# Empty or Stable from the log, and dropped once Dead.
CACHE_MOVES: dict[str, tuple[str, ...]] = {
    "Empty": ("Absent",),
    "Stable": ("Absent",),
    "Absent": ("Dead",),
}


def legal_moves() -> set[tuple[str, str]]:
    """Every (from, to) the lifecycle allows, Kafka's moves and cache moves."""
    moves = {(src, dst) for dst, srcs in VALID_PREVIOUS.items() for src in srcs}
    moves |= {(src, dst) for dst, srcs in CACHE_MOVES.items() for src in srcs}
    return moves


def kafka_moves() -> set[tuple[str, str]]:
    return {(src, dst) for dst, srcs in VALID_PREVIOUS.items() for src in srcs}


# -- small enums ----------------------------------------------------------------
Error = Enum("Error", *ERRORS)
JoinTimer = Enum("JoinTimer", "none", "initial", "delayed")
Coord = Enum("Coordinator", "active", "loading", "not_coordinator")
AppendKind = Enum("AppendKind", "sync", "empty", "static_replace", "create")


# -- state variables -------------------------------------------------------------
@dataclass(frozen=True)
class VarDecl:
    name: str
    type: Type
    meaning: str
    initial: object = None   # concrete initial value (for maps: per-element value)


STATE_VARS: tuple[VarDecl, ...] = (
    VarDecl("state", GroupState, "the group's state (Absent: not held by this coordinator)", 0),
    VarDecl("generation", INT, "generation id; bumped at every join completion", 0),
    VarDecl("protocol_type", Dom(PTYPE), "protocol type, set by the first member to join", NONE),
    VarDecl("protocol", Dom(PROTOCOL), "protocol selected by the vote at join completion", NONE),
    VarDecl("leader", Dom(MEMBER), "leader member id", NONE),
    VarDecl("members", SetOf(MEMBER), "members of the group", 0),
    VarDecl("pending", SetOf(MEMBER), "pending members: ids issued with MEMBER_ID_REQUIRED, not yet joined", 0),
    VarDecl("awaiting_join", SetOf(MEMBER), "members whose JoinGroup is parked", 0),
    VarDecl("awaiting_sync", SetOf(MEMBER), "members whose SyncGroup is parked", 0),
    VarDecl("pending_sync", SetOf(MEMBER), "members expected to send SyncGroup in this generation", 0),
    VarDecl("new_members", SetOf(MEMBER), "members added since the last join completion (isNew)", 0),
    VarDecl("hb_armed", SetOf(MEMBER), "members whose session-expiry timer is armed", 0),
    VarDecl("instance_of", MapOf(MEMBER, Dom(INSTANCE)), "each member's group.instance.id", NONE),
    VarDecl("static", MapOf(INSTANCE, Dom(MEMBER)), "the member each group.instance.id maps to", NONE),
    VarDecl("protos", MapOf(MEMBER, Dom(PROTOLIST)), "each member's protocols with metadata", NONE),
    VarDecl("session_ms", MapOf(MEMBER, INT), "each member's session timeout", 0),
    VarDecl("rebalance_ms", MapOf(MEMBER, INT), "each member's rebalance timeout", 0),
    VarDecl("assignment", MapOf(MEMBER, SetOf(PARTITION)), "each member's assignment of this generation", 0),
    VarDecl("join_timer", JoinTimer, "the delayed join armed: none, initial (InitialDelayedJoin) or delayed (DelayedJoin)", 0),
    VarDecl("join_delay_ms", INT, "the delay of the armed delayed join", 0),
    VarDecl("join_remaining_ms", INT, "InitialDelayedJoin's remaining budget", 0),
    VarDecl("new_member_added", BOOL, "a member joined during the initial delay (it is extended)", False),
    VarDecl("sync_timer", BOOL, "the pending-sync timer (DelayedSync) is armed", False),
    VarDecl("offsets", MapOf(PARTITION, INT), "committed offset per partition (-1: none)", NONE),
    # Scratch: a row that rewrites what it must still refer to remembers it here
    # first (a static member's replacement); unset again before the row ends.
    VarDecl("scratch_member", Dom(MEMBER), "scratch: the member a row replaced (unset between steps)", NONE),
    VarDecl("scratch_leader", Dom(MEMBER), "scratch: the leader before a row changed it (unset between steps)", NONE),
    VarDecl("scratch_session_ms", INT, "scratch: a replaced member's session timeout (0 between steps)", 0),
    VarDecl("scratch_rebalance_ms", INT, "scratch: a replaced member's rebalance timeout (0 between steps)", 0),
    VarDecl("scratch_protos", Dom(PROTOLIST), "scratch: a replaced member's protocols (unset between steps)", NONE),
    VarDecl("pending_offsets", SetOf(PARTITION), "partitions with an offset commit appended but not completed", 0),
    VarDecl("staged_offsets", MapOf(PARTITION, INT), "the offset of the latest commit appended but not completed, per "
            "partition (GM.pendingOffsetCommits: a completion clears it only if it is that commit's)", NONE),
)
VAR_TYPES: dict[str, Type] = {v.name: v.type for v in STATE_VARS}


class V:
    """Terms for the state variables: `V.members`, `V.state`, ..."""


for _v in STATE_VARS:
    setattr(V, _v.name, Var(_v.name, _v.type))


# What GroupMetadataManager.storeGroup writes and a coordinator taking over reads
# back (GroupMetadataValue), with the group's committed offsets.
GroupRecord = RecordOf(
    "GroupRecord", generation=INT, protocol_type=Dom(PTYPE), protocol=Dom(PROTOCOL), leader=Dom(MEMBER),
    members=SetOf(MEMBER), instance_of=MapOf(MEMBER, Dom(INSTANCE)), protos=MapOf(MEMBER, Dom(PROTOLIST)),
    session_ms=MapOf(MEMBER, INT), rebalance_ms=MapOf(MEMBER, INT), assignment=MapOf(MEMBER, SetOf(PARTITION)),
    offsets=MapOf(PARTITION, INT))

# -- trigger parameters ------------------------------------------------------------
PARAM_DECLS: dict[str, tuple[Type, str]] = {
    # the coordinator and the request's group id
    "coord": (Coord, "whether this coordinator owns the group's partition and has loaded it"),
    "group_id_ok": (BOOL, "the group id is valid for this API (non-empty where Kafka requires it)"),
    # who sends the request
    "member": (Dom(MEMBER), "the member id of the request, if this group knows it (a member or pending member)"),
    "member_empty": (BOOL, "the request's member id is empty (UNKNOWN_MEMBER_ID)"),
    "instance": (Dom(INSTANCE), "the request's group.instance.id (none for dynamic members)"),
    "fresh": (Dom(MEMBER), "a member slot not in use, for a newly issued member id"),
    # JoinGroup
    "require_known": (BOOL, "requireKnownMemberId (JoinGroup v4+, dynamic members)"),
    "session_ms": (INT, "session timeout of the request"),
    "rebalance_ms": (INT, "rebalance timeout of the request"),
    "req_ptype": (Dom(PTYPE), "protocol type of the request"),
    "req_ptype_empty": (BOOL, "the request's protocol type is the empty string"),
    "req_protos": (Dom(PROTOLIST), "the request's ordered protocols with metadata"),
    "proto_names": (Fun(SetOf(PROTOCOL), Dom(PROTOLIST)), "the protocol names of a protocol list"),
    "vote": (Fun(Dom(PROTOCOL), Dom(PROTOLIST), SetOf(PROTOCOL)),
             "a member's vote: the first protocol of its list among the candidates"),
    # SyncGroup / Heartbeat / OffsetCommit
    "generation": (INT, "the generation id of the request"),
    "req_protocol": (Dom(PROTOCOL), "SyncGroup v5+ protocol name, if given"),
    "req_protocol_given": (BOOL, "SyncGroup names a protocol name"),
    "req_ptype_given": (BOOL, "SyncGroup names a protocol type"),
    "sync_v5": (BOOL, "SyncGroup version 5 or later, where a protocol type and name are mandatory"),
    "assignments": (MapOf(MEMBER, SetOf(PARTITION)), "the leader's assignment per member"),
    "commit": (MapOf(PARTITION, INT), "OffsetCommit: offset per partition"),
    "commit_parts": (SetOf(PARTITION), "OffsetCommit: the partitions committed"),
    "fetch_parts": (SetOf(PARTITION), "OffsetFetch: the partitions asked for"),
    "fetch_all": (BOOL, "OffsetFetch asks for every partition"),
    "describe_not_found": (BOOL, "DescribeGroups v6+: an unknown group is GROUP_ID_NOT_FOUND"),
    "check_forced": (BOOL, "the eager re-check after a row that, in the Java coordinator, completes a join once "
                           "every member has rejoined, even during the initial delay"),
    "check_skipped": (BOOL, "the eager re-check after a row after which the Java coordinator does not re-check"),
    "check_batch": (BOOL, "the re-check after a whole LeaveGroup batch, which only the Java coordinator makes"),
    "commit_v9": (BOOL, "OffsetCommit v9+: the Java coordinator answers GROUP_ID_NOT_FOUND for an unknown group"),
    # storage completions
    "error": (Error, "the result of a log append"),
    "append_kind": (AppendKind, "what a group-metadata append stored"),
    "append_gen": (INT, "the generation the append was made in"),
    "append_member": (Dom(MEMBER), "the member whose request made the append"),
    "append_created": (BOOL, "the offsets commit created the group (the Java coordinator undoes that if it fails)"),
    "append_old": (Dom(MEMBER), "static replacement: the replaced member"),
    "append_old_protos": (Dom(PROTOLIST), "static replacement: the replaced member's protocols"),
    "append_old_session_ms": (INT, "static replacement: the replaced member's session timeout"),
    "append_old_rebalance_ms": (INT, "static replacement: the replaced member's rebalance timeout"),
    "append_old_leader": (Dom(MEMBER), "static replacement: the leader when the member was replaced"),
    "supports_skip": (BOOL, "JoinGroup v9+: the client can skip the assignment (KIP-814)"),
    "append_ptype": (Dom(PTYPE), "static replacement: the group's protocol type when it was stored"),
    "append_protocol": (Dom(PROTOCOL), "static replacement: the group's protocol when it was stored"),
    "append_leader": (Dom(MEMBER), "static replacement: the group's leader when it was stored"),
    "append_members": (SetOf(MEMBER), "static replacement: the group's members when it was stored"),
    # timers, coordinator events
    "timer_member": (Dom(MEMBER), "the member a heartbeat or pending-member timer belongs to"),
    "aged": (SetOf(PARTITION), "offset expiry: offsets committed at least offsets.retention.minutes ago"),
    "state_aged": (BOOL, "offset expiry: the group has been in its state at least offsets.retention.minutes"),
    # the persisted group record, for load
    "record": (GroupRecord, "the group as its last record in the log left it (a GroupRecord)"),
    # configuration (Kafka's keys)
    "cfg_min_session_ms": (INT, "group.min.session.timeout.ms"),
    "cfg_max_session_ms": (INT, "group.max.session.timeout.ms"),
    "cfg_max_size": (INT, "group.max.size"),
    "cfg_initial_delay_ms": (INT, "group.initial.rebalance.delay.ms"),
    "cfg_new_member_timeout_ms": (INT, "group.new.member.join.timeout.ms (GroupCoordinator.NewMemberJoinTimeoutMs)"),
    "cfg_new_coordinator": (BOOL, "group.coordinator.new.enable: Kafka 4.0's Java coordinator, not 3.9's Scala one"),
}
PARAM_TYPES: dict[str, Type] = {k: t for k, (t, _) in PARAM_DECLS.items()}


class P:
    """Terms for the trigger parameters: `P.member`, `P.generation`, ..."""


for _name, (_t, _) in PARAM_DECLS.items():
    setattr(P, _name, Param(_name, _t))

# the table's config parameters and the Kafka keys they are read from
CONFIG_KEYS = {
    "cfg_min_session_ms": "group.min.session.timeout.ms",
    "cfg_max_session_ms": "group.max.session.timeout.ms",
    "cfg_max_size": "group.max.size",
    "cfg_initial_delay_ms": "group.initial.rebalance.delay.ms",
    "cfg_new_member_timeout_ms": "group.new.member.join.timeout.ms",
    "cfg_new_coordinator": "group.coordinator.new.enable",
}
CONFIG_PARAMS = tuple(CONFIG_KEYS)

# How documents name each parameter: as Kafka names it (a request's field as in its
# JSON schema, a config key), so a reviewer reads `request.member_id`, not `p.member`.
# A boolean written as an equation is shown negated as an inequation.
KAFKA_NAMES: dict[str, str] = {
    "coord": "coordinator",
    "group_id_ok": "valid(request.group_id)",
    "member": "request.member_id",
    "member_empty": 'request.member_id = ""',
    "instance": "request.group_instance_id",
    "fresh": "newMemberId",
    "require_known": "requireKnownMemberId",
    "session_ms": "request.session_timeout_ms",
    "rebalance_ms": "request.rebalance_timeout_ms",
    "req_ptype": "request.protocol_type",
    "req_ptype_empty": 'request.protocol_type = ""',
    "req_protos": "request.protocols",
    "proto_names": "names",
    "vote": "vote",
    "generation": "request.generation_id",
    "req_protocol": "request.protocol_name",
    "req_protocol_given": "request.protocol_name given",
    "req_ptype_given": "request.protocol_type given",
    "sync_v5": "request.version >= 5",
    "assignments": "request.assignments",
    "commit": "request.offsets",
    "commit_parts": "request.partitions",
    "fetch_parts": "request.partitions",
    "fetch_all": "request.partitions = null",
    "describe_not_found": "request.version ≥ 6",
    "commit_v9": "request.version ≥ 9",
    "check_forced": "the row removed a member (Java: completeClassicGroupJoin)",
    "check_skipped": "the row refused a member at group.max.size (Java: no re-check)",
    "check_batch": "after the LeaveGroup batch (Java: maybeCompleteJoinPhase)",
    "error": "appendError",
    "append_kind": "stored.kind",
    "append_gen": "stored.generation_id",
    "append_member": "stored.member_id",
    "append_created": "stored.created_the_group",
    "append_old": "stored.oldMemberId",
    "append_old_protos": "stored.oldProtocols",
    "append_old_session_ms": "stored.oldSessionTimeoutMs",
    "append_old_rebalance_ms": "stored.oldRebalanceTimeoutMs",
    "append_old_leader": "stored.oldLeaderId",
    "supports_skip": "request.version ≥ 9",
    "append_ptype": "stored.protocol_type",
    "append_protocol": "stored.protocol_name",
    "append_leader": "stored.leader",
    "append_members": "stored.members",
    "timer_member": "timer.member_id",
    "aged": "expiredOffsets",
    "state_aged": "stateAged(offsets.retention.minutes)",
    "record": "record",
    **CONFIG_KEYS,
}


# -- triggers ---------------------------------------------------------------------
@dataclass(frozen=True)
class Trigger:
    name: str
    kind: str            # request, member-request, timer, storage, coordinator, internal
    params: tuple[str, ...]
    meaning: str
    total: bool = True   # its rows must cover every case (internal triggers fire only when enabled)
    enabled: str = ""    # when the driver can fire it at all (a timer that is armed...): see table.ENABLED


_REQ = ("coord", "group_id_ok") + CONFIG_PARAMS
_WHO = ("member", "member_empty", "instance")
TRIGGERS: tuple[Trigger, ...] = (
    Trigger("JoinGroup", "request", _REQ + _WHO + (
        "fresh", "require_known", "session_ms", "rebalance_ms", "req_ptype", "req_ptype_empty",
        "req_protos", "proto_names", "vote", "supports_skip"), "a JoinGroup request (handleJoinGroup)"),
    Trigger("SyncGroup", "request", _REQ + _WHO + (
        "generation", "req_ptype", "req_ptype_given", "req_protocol", "req_protocol_given", "sync_v5",
        "assignments"), "a SyncGroup request (handleSyncGroup)"),
    Trigger("Heartbeat", "request", _REQ + _WHO + ("generation",), "a Heartbeat request (handleHeartbeat)"),
    Trigger("LeaveGroup", "request", _REQ, "a LeaveGroup request, group-level checks (handleLeaveGroup)"),
    Trigger("LeaveMember", "request", _REQ + _WHO,
            "one member identity of a LeaveGroup batch, in request order"),
    Trigger("OffsetCommit", "request", _REQ + _WHO + ("generation", "commit", "commit_parts", "commit_v9"),
            "an OffsetCommit request (handleCommitOffsets)"),
    Trigger("OffsetFetch", "request", _REQ + ("fetch_parts", "fetch_all"),
            "an OffsetFetch request for this group (handleFetchOffsets)"),
    Trigger("DescribeGroup", "request", _REQ + ("describe_not_found",),
            "one group of a DescribeGroups request (handleDescribeGroup)"),
    Trigger("ListGroups", "request", ("coord",) + CONFIG_PARAMS,
            "a ListGroups request, coordinator-level (handleListGroups)"),
    Trigger("ListGroupsEntry", "request", ("coord",) + CONFIG_PARAMS,
            "this group's entry in a ListGroups response"),
    Trigger("DeleteGroup", "request", _REQ, "one group of a DeleteGroups request (handleDeleteGroups)"),
    Trigger("HeartbeatExpiry", "timer", ("timer_member",) + CONFIG_PARAMS,
            "a member's session (or new-member join) timer fires (DelayedHeartbeat)"),
    Trigger("PendingExpiry", "timer", ("timer_member",) + CONFIG_PARAMS,
            "a pending member's timer fires (DelayedHeartbeat, isPending)"),
    Trigger("JoinTimer", "timer", CONFIG_PARAMS,
            "the delayed join expires (InitialDelayedJoin / DelayedJoin)"),
    Trigger("SyncTimer", "timer", CONFIG_PARAMS, "the pending-sync timer expires (DelayedSync)"),
    Trigger("StoreGroupDone", "storage", ("error", "append_kind", "append_gen", "append_member", "append_old",
                                           "append_old_protos", "append_old_session_ms",
                                           "append_old_rebalance_ms", "append_old_leader", "supports_skip",
                                           "append_ptype", "append_protocol", "append_leader", "append_members",
                                           "assignments", "proto_names", "vote") + CONFIG_PARAMS,
            "a group-metadata append completes (storeGroup's callback)"),
    Trigger("StoreOffsetsDone", "storage", ("error", "commit", "commit_parts", "append_member", "append_created")
            + CONFIG_PARAMS,
            "an offset-commit append completes (storeOffsets' callback)"),
    Trigger("Unload", "coordinator", CONFIG_PARAMS,
            "the group's offsets partition moves away (onGroupUnloaded)"),
    Trigger("Load", "coordinator", ("record",) + CONFIG_PARAMS,
            "the group is loaded from its last persisted record (onGroupLoaded)"),
    Trigger("MarkDead", "coordinator", CONFIG_PARAMS,
            "the group is marked Dead while requests can still reach it"),
    Trigger("ExpireOffsets", "coordinator", ("aged", "state_aged") + CONFIG_PARAMS,
            "the offset-expiry task runs (cleanupGroupMetadata)"),
    Trigger("CompleteJoin", "internal", ("check_forced", "check_skipped", "check_batch") + CONFIG_PARAMS,
            "every member has rejoined: the delayed join completes at once (tryCompleteJoin)", total=False),
)
TRIGGER_BY_NAME: dict[str, Trigger] = {t.name: t for t in TRIGGERS}


@dataclass
class Bounds:
    """Domain sizes of a bounded world (the symbolic side and the checkers)."""
    sizes: dict[str, int] = field(default_factory=lambda: {
        MEMBER: 3, INSTANCE: 2, PARTITION: 2, PROTOCOL: 2, PROTOLIST: 3, PTYPE: 2})
