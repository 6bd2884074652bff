"""The invariant catalog: named safety properties, each with its meaning, formula and source.

Two kinds:
  state  a formula over one state (the variables of schema.py);
  step   a formula over the state before (`prev.x`) and after (`x`) a step,
         with the step's parameters (the configuration) in scope.

Two scopes:
  coordinator   holds for the coordinator whatever its clients send; the
                runtime checks these after every step in debug mode, and
                lint assumes the structural ones when it asks whether the
                rows of a trigger cover every case (a `settled` one holds
                between requests, once the drivers have run the eager
                CompleteJoin that follows the step: the runtime checks it
                then, the checkers on every world state, which are settled);
  closed-world  holds only when the clients follow the protocol (a leader
                that assigns each partition once); the coordinator stores
                whatever the leader sends, so only the checkers, which
                model the clients, check these.

Where the property one would like is not what Kafka guarantees, the
formula states what Kafka does guarantee and `note` says where it differs;
these are findings for a design review, not bugs of the spec.
"""
from __future__ import annotations

from dataclasses import dataclass

from .concrete import Layout, compile_term
from .lang import And, Count, Filter, ForAll, Implies, Not, Or, Term, Var, lift
from .kafka import ERRORS
from .schema import JoinTimer, P, STATE_VARS, V
from .vocabulary import S, in_states


class _Prev:
    """Terms for the state before a step: `Prev.generation`, ..."""


for _v in STATE_VARS:
    setattr(_Prev, _v.name, Var("prev:" + _v.name, _v.type))
Prev = _Prev


@dataclass(frozen=True)
class Invariant:
    name: str
    meaning: str
    formula: Term
    source: str
    kind: str = "state"          # state | step | output (must hold after a step that hands out an assignment)
    scope: str = "coordinator"   # coordinator | closed-world
    structural: bool = False     # part of the type invariant lint assumes
    note: str = ""
    settled: bool = False        # holds between requests (after the eager CompleteJoin), not after every row
    # how Kafka 4.0's Java coordinator (group.coordinator.new.enable) does not keep it, with the source; empty
    # when both coordinators keep it.  Checks of the Java coordinator's behaviour leave such an invariant out.
    java_breaks: str = ""


held = Not(V.state == S("Absent"))

INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "leader-is-member",
        "A group with members has exactly one leader, and it is one of them; a group without members has none.",
        And(Implies(V.members.is_empty(), V.leader.is_none()),
            Implies(Not(V.members.is_empty()), V.leader.in_(V.members))),
        "GM.add (first member leads), GM.remove (a removed leader is replaced); seed 001",
        structural=True),
    Invariant(
        "one-leader-per-generation",
        "Within one generation the leader changes only when the leader itself leaves the group, "
        "or when a static leader rejoins under a new member id.",
        Implies(held & Not(Prev.state == S("Absent")) & (V.generation == Prev.generation)
                & Not(V.leader == Prev.leader),
                Or(Not(Prev.leader.in_(V.members)),
                   Prev.instance_of[Prev.leader].is_some()
                   & (V.instance_of[V.leader] == Prev.instance_of[Prev.leader]))),
        "GM.remove, GM.replaceStaticMember, GC.onCompleteJoin (maybeElectNewJoinedLeader)", kind="step"),
    Invariant(
        "empty-has-no-members",
        "An Empty group (and a group the coordinator does not hold) has no members, and nothing parked.",
        And(Implies(in_states("Empty", "Absent"),
                    V.members.is_empty() & V.awaiting_join.is_empty() & V.awaiting_sync.is_empty()),
            Implies(V.state == S("Absent"), V.pending.is_empty())),
        "ClassicGroupState Empty: 'the group has no more members'; seed 001", structural=True,
        note="An Empty group may still have pending members (ids issued with MEMBER_ID_REQUIRED)."),
    Invariant(
        "no-sync-held-while-preparing",
        "No SyncGroup is held while PreparingRebalance: entering it answers every parked SyncGroup "
        "with REBALANCE_IN_PROGRESS, and a SyncGroup in PreparingRebalance is answered at once.",
        Implies(V.state == S("PreparingRebalance"), V.awaiting_sync.is_empty()),
        "GC.prepareRebalance (resetAndPropagateAssignmentError); GC.doSyncGroup",
        note="Kafka keeps each member's last assignment in its MemberMetadata through PreparingRebalance "
             "(only DescribeGroups hides it); what it never does is hand one out there: see "
             "assignment-only-when-stable."),
    Invariant(
        "assignment-only-when-stable",
        "An assignment is handed out (a SyncGroup answered NONE) only by a step that leaves the group Stable.",
        V.state == S("Stable"),
        "GC.doSyncGroup, GC.setAndPropagateAssignment", kind="output",
        note="An output invariant: the formula must hold after every step that answers a SyncGroup with NONE."),
    Invariant(
        "assignments-disjoint",
        "In a Stable group no partition is assigned to two members.",
        Implies(V.state == S("Stable"),
                ForAll(V.members, lambda a: ForAll(V.members, lambda b: Or(a == b, (V.assignment[a] & V.assignment[b]).is_empty())))),
        "the leader's assignor (RangeAssignor, RoundRobinAssignor); seed 004", scope="closed-world",
        note="The coordinator stores whatever the leader sends (GC.doSyncGroup does not look inside it), "
             "so this holds only when the leader runs a correct assignor."),
    Invariant(
        "generation-monotone",
        "While the coordinator holds a group its generation never decreases, and it grows by exactly 1 "
        "only when a join completes (PreparingRebalance to CompletingRebalance or Empty).",
        Implies(held & Not(Prev.state == S("Absent")),
                Or(V.generation == Prev.generation,
                   (V.generation == Prev.generation + 1) & (Prev.state == S("PreparingRebalance"))
                   & in_states("CompletingRebalance", "Empty"))),
        "GM.initNextGeneration", kind="step",
        note="A coordinator that takes over loads the last persisted generation, which may be older than "
             "the last one the previous coordinator reached (research notes §5.4); load is not a step of a "
             "held group, so it is outside this property."),
    Invariant(
        "pending-not-members",
        "A pending member (an id issued with MEMBER_ID_REQUIRED) is never a member, nor awaited to sync.",
        (V.pending & (V.members | V.pending_sync)).is_empty(),
        "GM.addPendingMember, GM.add (removes the id from pending), GC.onCompleteJoin (the members are the ones "
        "awaited to sync)", structural=True),
    Invariant(
        "static-ids-unique",
        "Each group.instance.id maps to at most one member, which carries it; no two members share one, and "
        "no one but a member carries one.",
        And(V.instance_of.keys_where(lambda i: i.is_some()).subset_of(V.members),
            ForAll(V.members, lambda m: Implies(V.instance_of[m].is_some(), V.static[V.instance_of[m]] == m)),
            ForAll(V.static.keys_where(lambda m: m.is_some()),
                   lambda i: V.static[i].in_(V.members) & (V.instance_of[V.static[i]] == i)),
            ForAll(V.members, lambda a: ForAll(V.members, lambda b: Or(a == b, V.instance_of[a].is_none(),
                                                                      Not(V.instance_of[a] == V.instance_of[b]))))),
        "GM.add, GM.replaceStaticMember (KIP-345)", structural=True),
    Invariant(
        "awaiting-join-only-preparing",
        "JoinGroups are held only while PreparingRebalance, except a static member's rejoin while its new "
        "member id is being persisted in Stable, and a group marked Dead.",
        And(V.awaiting_join.subset_of(V.members),
            Implies(Not(V.awaiting_join.is_empty()),
                    in_states("PreparingRebalance", "Dead")
                    | ((V.state == S("Stable"))
                       & ForAll(V.awaiting_join, lambda m: V.instance_of[m].is_some())))),
        "GC.doCurrentMemberJoinGroup, GC.updateStaticMemberAndRebalance", structural=True,
        note="Kafka parks a rejoining static member's JoinGroup in Stable until the group with its new id "
             "is stored (GC.updateStaticMemberAndRebalance)."),
    Invariant(
        "awaiting-sync-only-completing",
        "SyncGroups are held only while CompletingRebalance (or in a group marked Dead).",
        And(V.awaiting_sync.subset_of(V.members),
            Implies(Not(V.awaiting_sync.is_empty()), in_states("CompletingRebalance", "Dead"))),
        "GC.doSyncGroup, GC.propagateAssignment", structural=True),
    Invariant(
        "max-size-after-join",
        "When a join completes, the members that rejoined number at most group.max.size.",
        Implies((Prev.state == S("PreparingRebalance")) & (V.state == S("CompletingRebalance")),
                Count(Prev.members, lambda m: m.in_(Prev.awaiting_join)) <= P.cfg_max_size),
        "GC.acceptJoiningMember", kind="step",
        note="Not the group's size: static members that did not rejoin stay members (GC.onCompleteJoin "
             "removes only dynamic ones), so a group with static members can exceed group.max.size after a "
             "join completes (tests/scenarios/findings.yaml shows it)."),
    Invariant(
        "timers-belong-to-members",
        "Session timers run only for members; the pending-sync timer runs only while some member has yet "
        "to sync in CompletingRebalance or Stable; the delayed join only while PreparingRebalance; so never "
        "both (a group marked Dead keeps the one it had).",
        And(V.hb_armed.subset_of(V.members),
            Implies(V.sync_timer, Not(V.pending_sync.is_empty()) & in_states("CompletingRebalance", "Stable", "Dead")),
            Implies(Not(V.join_timer == lift("none", JoinTimer)), in_states("PreparingRebalance", "Dead")),
            Not(V.sync_timer & Not(V.join_timer == lift("none", JoinTimer)))),
        "GC.removeHeartbeatForLeavingMember, GC.removePendingSyncMember, GC.prepareRebalance (removeSyncExpiration)",
        structural=True),
    Invariant(
        "new-members-are-members",
        "Members marked new (joined since the last join completion) are members.",
        V.new_members.subset_of(V.members), "GC.addMemberAndRebalance (isNew)", structural=True),
    Invariant(
        "join-completes-once-all-rejoined",
        "Between requests, a group in PreparingRebalance waiting on its DelayedJoin has a member yet to rejoin "
        "or a pending member: the join completes as soon as the last member rejoins, leaves or expires, or the "
        "last pending member joins or expires, not when the rebalance timeout fires.",
        Implies((V.state == S("PreparingRebalance")) & (V.join_timer == lift("delayed", JoinTimer)),
                Not(V.members.subset_of(V.awaiting_join) & V.pending.is_empty())),
        "GC.handleJoinGroup, removeMemberAndUpdateGroup, removePendingMemberAndUpdateGroup "
        "(rebalancePurgatory.checkAndComplete), DelayedJoin.tryComplete (GC.tryCompleteJoin, "
        "GM.hasAllMembersJoined); KAFKA-7909", settled=True,
        java_breaks="after refusing a member at group.max.size, Kafka 4.0's Java coordinator does not re-check the "
                    "join (GroupMetadataManager.classicGroupJoin: acceptJoiningMember's refusal returns without "
                    "maybeCompleteJoinPhase), so a group whose remaining members have all rejoined waits for the "
                    "rebalance timeout (found running Kafka 4.0.2: docs/kafka-conformance.md)",
        note="A settled invariant: within a request, the row that makes the last member rejoin (or leave) is "
             "followed by CompleteJoin, which the drivers run eagerly (Kafka's checkAndComplete), so it holds "
             "between requests, not after that row. The InitialDelayedJoin of a group that was Empty "
             "(group.initial.rebalance.delay.ms) never completes early (its tryComplete is false), so it is "
             "outside this property. Time is abstract in the checkers: a join its DelayedJoin completes at "
             "the rebalance timeout looks the same as one completed at once, except to this invariant "
             "(tests/test_planted_bugs.py plants a missed re-check)."),
)

_static_members = Filter(V.members, lambda m: V.instance_of[m].is_some())


def _blank(v) -> Term:
    """The variable `v` holds its initial value (what `reset` writes when the group is dropped)."""
    var = getattr(V, v.name)
    return var == (var.fill(v.initial) if v.type.kind == "map" else lift(v.initial, v.type))


INVARIANTS += (
    Invariant(
        "members-have-session-timers",
        "Every dynamic member of a group the coordinator holds has its session timer armed, or a parked "
        "JoinGroup or SyncGroup whose answer arms it again (a new member always has its timer: the new-member "
        "timeout, KIP-394): a consumer that dies is always removed in the end.",
        Implies(Not(in_states("Dead")), (V.members - _static_members).subset_of(
            V.hb_armed | ((V.awaiting_join | V.awaiting_sync) - V.new_members))),
        "GC.completeAndScheduleNextHeartbeatExpiration (on add, after every response, at join completion and "
        "on load), GC.onExpireHeartbeat (MemberMetadata.hasSatisfiedHeartbeat: a member awaiting join or sync "
        "is kept, and its timer is not re-armed until it is answered)",
        note="Not for static members: Kafka does not keep it for them. A static member that rejoins Stable with "
             "a new id is parked until the group is stored (GC.updateStaticMemberAndRebalance); if its session "
             "timer fires meanwhile it is kept (awaiting join) and not re-armed, and the store callback answers "
             "it without scheduling a heartbeat: a client that dies then is never removed "
             "(tests/scenarios/findings.yaml, static-member-can-outlive-its-session; found by "
             "tests/test_random_requests.py, seed 1296)."),
    Invariant(
        "metadata-of-members-only",
        "Only members have member metadata (group.instance.id, protocols, timeouts, assignment): what the "
        "coordinator knows of a member goes with it when it is removed. No SyncGroup is awaited while "
        "PreparingRebalance or Empty, and an id awaited to sync that is no longer a member's (a replaced "
        "static member's old id) keeps the DelayedSync running: the sync timeout clears it, by a rebalance.",
        And(V.assignment.keys_where(lambda a: Not(a.is_empty())).subset_of(V.members),
            V.instance_of.keys_where(lambda i: i.is_some()).subset_of(V.members),
            V.protos.keys_where(lambda x: x.is_some()).subset_of(V.members),
            V.session_ms.keys_where(lambda t: Not(t == 0)).subset_of(V.members),
            V.rebalance_ms.keys_where(lambda t: Not(t == 0)).subset_of(V.members),
            Implies(in_states("PreparingRebalance", "Empty"), V.pending_sync.is_empty()),
            Implies(Not(V.pending_sync.subset_of(V.members)), V.sync_timer | in_states("Dead"))),
        "GM.remove (the MemberMetadata is dropped, and the id from pendingSyncMembers), GC.prepareRebalance "
        "(removeSyncExpiration clears the pending-sync members), GC.tryCompletePendingSync, "
        "GC.onExpirePendingSync; GM.replaceStaticMember (pendingSyncMembers untouched)",
        note="Not 'only members are awaited to sync': GM.replaceStaticMember (and the Java ClassicGroup's) moves "
             "the MemberMetadata to the new id but leaves the old id in pendingSyncMembers, and neither the "
             "storeGroup callback of GC.updateStaticMemberAndRebalance nor the revert on a failed append touches "
             "it. So a static member replaced in Stable before it synced leaves its old id awaited: the new id's "
             "SyncGroup cannot complete the DelayedSync, and onExpirePendingSync removes the old id (no member) "
             "and rebalances (tests/scenarios/findings.yaml shows it)."),
    Invariant(
        "absent-holds-nothing",
        "A group the coordinator does not hold has no metadata left: every variable has its initial value, so "
        "a group created again starts at generation 0 with nothing of the old one.",
        Implies(V.state == S("Absent"), And(*[_blank(v) for v in STATE_VARS if v.name != "state"])),
        "GMM.removeGroupsForPartition (onGroupUnloaded), GMM.getOrMaybeCreateGroup (new GroupMetadata)"),
    Invariant(
        "commit-fenced",
        "Offsets are taken (appended) only from a member of the group at its current generation, or from a "
        "simple consumer (generation < 0) to a group with no members: a consumer fenced out of the group can "
        "never commit.",
        Implies(Not(V.pending_offsets.subset_of(Prev.pending_offsets)),
                Or(P.member.in_(Prev.members) & (P.generation == Prev.generation),
                   (P.generation < 0) & Prev.members.is_empty())),
        "GC.validateOffsetCommit, GC.doCommitOffsets (the member id and generation fence a removed consumer); seed 001",
        kind="step"),
)


class InvariantViolation(AssertionError):
    def __init__(self, inv: Invariant, where: str):
        self.invariant = inv
        super().__init__(f"invariant {inv.name} violated {where}: {inv.meaning}")


# -- concrete checking ----------------------------------------------------------------

def _layouts():
    from .engine import PARAM_INDEX, STATE_INDEX
    n = len(STATE_VARS)
    both = dict(STATE_INDEX)
    both.update({"prev:" + k: n + i for k, i in STATE_INDEX.items()})
    return Layout(STATE_INDEX, PARAM_INDEX), Layout(both, PARAM_INDEX)


_COMPILED = None


def compiled():
    global _COMPILED
    if _COMPILED is None:
        one, two = _layouts()
        _COMPILED = [(inv, compile_term(inv.formula, two if inv.kind == "step" else one)) for inv in INVARIANTS]
    return _COMPILED


def check_state(state: tuple, where: str = "", scope: str = "coordinator", settled: bool = False,
                java: bool = False) -> None:
    """Raise InvariantViolation if a state invariant of `scope` fails; the settled ones
    only when `settled` (the state is one between requests); for the Java coordinator (`java`), only
    those it keeps."""
    for inv, f in compiled():
        if inv.kind == "state" and inv.scope == scope and (settled or not inv.settled) and \
                not (java and inv.java_breaks) and not f(state, [], ()):
            raise InvariantViolation(inv, where)


def check_settled(state: tuple, where: str = "", scope: str = "coordinator", java: bool = False) -> None:
    """Raise InvariantViolation if a settled state invariant of `scope` fails (for the Java coordinator, one
    it keeps)."""
    for inv, f in compiled():
        if inv.kind == "state" and inv.settled and inv.scope == scope and not (java and inv.java_breaks) and \
                not f(state, [], ()):
            raise InvariantViolation(inv, where)


@dataclass(frozen=True)
class HandsOut:
    """What makes a row's outputs hand out an assignment (the steps output invariants are about):
    an output of one of these kinds, for this API, whose `error` field is this error."""
    kinds: tuple = ("reply", "answer")
    api: str = "SyncGroup"
    error: str = "NONE"


HANDS_OUT = HandsOut()


def hands_out(outputs: list) -> bool:
    """Whether a row's outputs hand out an assignment (HANDS_OUT)."""
    error = ERRORS.index(HANDS_OUT.error)
    return any(o.kind in HANDS_OUT.kinds and o.api == HANDS_OUT.api and o.fields.get("error") == error
               for o in outputs)


# What the checkers of the closed world check after every row of a step, in this order: a world
# step may chain rows (a request, its append's completion, the eager CompleteJoin, unload then
# load), and a row's broken state must not hide behind the next row's.  The first that fails is
# the one reported, so the explicit checker (checkers/world/state_space.py) and the TLA+ export (its
# `broken_in_step`) read this one order and report the same invariant.  Step invariants and
# output invariants first, then the state invariants that hold after every row (not the settled
# ones, which hold only between requests); the closed-world ones need the clients, which a row
# does not see.
CHECKED_AFTER_ROW: tuple[Invariant, ...] = tuple(
    [i for i in INVARIANTS if i.scope == "coordinator" and i.kind in ("step", "output")]
    + [i for i in INVARIANTS if i.scope == "coordinator" and i.kind == "state" and not i.settled])


def check_after_row(prev: tuple, state: tuple, params: list, outputs: list, where: str = "") -> None:
    """Raise InvariantViolation for the first of CHECKED_AFTER_ROW a row breaks (the group before
    the row `prev`, after it `state`, the trigger's parameters and the row's outputs)."""
    both = state + prev
    handed = hands_out(outputs)
    for inv, f in _after_row():
        if inv.kind == "step":
            ok = f(both, params, ())
        elif inv.kind == "output":
            ok = not handed or f(state, params, ())
        else:
            ok = f(state, params, ())
        if not ok:
            raise InvariantViolation(inv, where)


_AFTER_ROW = None


def _after_row():
    global _AFTER_ROW
    if _AFTER_ROW is None:
        by_name = {inv.name: f for inv, f in compiled()}
        _AFTER_ROW = [(inv, by_name[inv.name]) for inv in CHECKED_AFTER_ROW]
    return _AFTER_ROW


def structural() -> list[Invariant]:
    return [i for i in INVARIANTS if i.structural]
