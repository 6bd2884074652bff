"""Planted bugs: the classes of real Kafka bugs, each caught with a shortest counterexample.

Five classes, each planted as two or more variants a Kafka engineer could
write (the Kafka code each one breaks is named in its test):

  1. a member that two clients share      member ids reused or not fenced
  2. a group stuck in CompletingRebalance the DelayedSync missing or idle (KAFKA-12890)
  3. a removed member's timer left armed  GM.remove without removeHeartbeatForLeavingMember
  4. a join completion never re-checked   DelayedJoin.tryComplete / checkAndComplete missed
  5. membership answered but not stored   storeGroup skipped (KAFKA-2017, KAFKA-10284)

Each bug is one row (or macro use) of spec/table.py changed on a copy of
ROWS, except two of class 4: the re-check after a step is done by the
drivers (the world model and the runtime run CompleteJoin eagerly after
every step), not by a row, so "a leave that does not re-check" is planted
in a copy of the world model.  Safety bugs must come back as a violation
whose path is a shortest one (breadth-first: `len(path) - 1 == depth`),
liveness bugs as a fair lasso stuck in the rebalance.  Every world used is
checked clean with the correct table first (`test_the_worlds_are_clean`),
so a verdict is the planted bug's.
"""
from __future__ import annotations

import dataclasses

import pytest

from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.state_space import WorldModel
from groupspec.checkers.world.presets import PRESETS
from groupspec.spec import engine as E
from groupspec.spec import table as T
from groupspec.spec.handling import Eager
from groupspec.spec.lang import FALSE, TRUE, If, Lowest, Not, Term
from groupspec.spec.responses import join_info
from groupspec.spec.rows import Out, Set_, answer, cancel, sets
from groupspec.spec.schema import P, V
from groupspec.spec.vocabulary import NO_MEMBERS

# -- the worlds ----------------------------------------------------------------------------

TINY = PRESETS["tiny"]          # 2 clients, 1 generation, no faults but leaving
SMALL = PRESETS["small"]        # and crashes, session and pending-member expiry
TINY_GEN2 = dataclasses.replace(TINY, max_generation=2)   # a second rebalance
# two consumer processes configured with one group.instance.id (a zombie and its replacement)
ZOMBIE = dataclasses.replace(TINY, instances=(0, 0), waive=PRESETS["static"].waive)
# KAFKA-12890's setting: a consumer may hang (it sends nothing more) while its heartbeat
# thread keeps its session alive (no expiry); the others' requests time out and are retried
HUNG = dataclasses.replace(TINY, crash=True, loss=True, member_ids=2)
# the same as a client behaviour (the hung_poll fault): the poll loop hangs after the JoinGroup
# response and the heartbeat thread goes on heartbeating, in CompletingRebalance too
HUNG_POLL = PRESETS["hung"]
FAILOVER = dataclasses.replace(TINY, failover=True)           # the coordinator moves: it loads the log

CR = E.STATES.index("CompletingRebalance")
PR = E.STATES.index("PreparingRebalance")


@pytest.mark.parametrize("cfg,liveness", [(TINY, True), (SMALL, False), (TINY_GEN2, False), (ZOMBIE, False),
                                          (HUNG, True), (HUNG_POLL, True), (FAILOVER, False)],
                         ids=["tiny", "small", "tiny-gen2", "zombie", "hung", "hung-poll", "failover"])
def test_the_worlds_are_clean(cfg, liveness):
    r = check(WorldModel(cfg), liveness=liveness)
    assert r.result == "ok" and r.complete
    assert "join-completes-once-all-rejoined" in r.invariants


# -- planting ----------------------------------------------------------------------------

def plant(change, names) -> list:
    """A copy of the table with `change` applied to the rows whose name satisfies `names`."""
    rows, hit = [], 0
    for r in T.ROWS:
        if names(r.name):
            r, hit = change(r), hit + 1
        rows.append(r)
    assert hit, "the planted bug matches no row"
    return rows


def subst(t, old: Term, new: Term):
    """t with every occurrence of parameter `old` replaced by `new`."""
    if not isinstance(t, Term):
        return t
    if t.op == "param" and t.data == old.data:
        return new
    if not t.args:
        return t
    args = tuple(subst(a, old, new) for a in t.args)
    return t if all(a is b for a, b in zip(args, t.args)) else Term(t.op, args, t.type, t.data)


def subst_row(r, old: Term, new: Term):
    steps = []
    for st in r.steps:
        if isinstance(st, Set_):
            st = dataclasses.replace(st, updates={k: subst(v, old, new) for k, v in st.updates.items()})
        else:
            st = dataclasses.replace(st, member=subst(st.member, old, new), duration=subst(st.duration, old, new),
                                     when=subst(st.when, old, new), over=subst(st.over, old, new),
                                     fields={k: subst(v, old, new) for k, v in st.fields.items()})
        steps.append(st)
    return dataclasses.replace(r, steps=steps, guard=subst(r.guard, old, new), own=subst(r.own, old, new))


def edit_sets(r, fn):
    """Rewrite the updates of every Set_ step of r with fn(updates) -> updates."""
    return dataclasses.replace(r, steps=[dataclasses.replace(s, updates=fn(dict(s.updates))) if isinstance(s, Set_)
                                         else s for s in r.steps])


def without_outputs(r, pred):
    return dataclasses.replace(r, steps=[s for s in r.steps if isinstance(s, Set_) or not pred(s)])


def rows_fired(r) -> set:
    return {name for st, _ in r.path[1:] for name in st.rows}


def assert_shortest_violation(r, invariant: str | set, planted: set):
    """`invariant`: the one broken, or the set of those a shortest path may break first (BFS
    meets them at the same depth; which one it sees first depends on the order of actions)."""
    assert r.result == "violation", (r.result, r.violation)
    assert r.violation in ({invariant} if isinstance(invariant, str) else invariant)
    assert len(r.path) - 1 == r.depth          # breadth-first: no shorter path reaches a violation
    assert rows_fired(r) & planted, "the counterexample does not go through the planted bug"


def assert_stuck_lasso(r, state: int, planted: set):
    assert r.result == "lasso", (r.result, r.violation)
    assert 0 <= r.loop_start < len(r.path) - 1
    assert r.depth == len(r.path) - 1          # the lasso's own length, stem and one lap
    assert {E.get(s, "state") for _, s in r.path[r.loop_start:]} == {state}
    assert rows_fired(r) & planted, "the counterexample does not go through the planted bug"


# == 1. a member that two clients share ======================================================

def _new_member_rows(n: str) -> bool:
    return n.startswith("JoinGroup:") and "static" not in n


def test_member_id_from_client_id_alone():
    # GM.generateMemberId without the UUID (`clientId` only): every consumer of the world has the
    # same client.id, so a new member is handed the id a member or pending member already holds
    in_use = V.members | V.pending
    rows = plant(lambda r: subst_row(r, P.fresh, If(in_use.is_empty(), P.fresh, Lowest(in_use))), _new_member_rows)
    r = check(WorldModel(TINY, rows))
    # the coordinator issues a member's id as a new pending id: the second consumer is told to
    # rejoin as the first one (the group's record breaks, and two consumers hold one id)
    assert_shortest_violation(r, {"pending-not-members", "no-shared-member-id"},
                              {row.name for row in T.ROWS if _new_member_rows(row.name)})


def test_member_ids_recycled():
    # ids from a per-group counter (the lowest slot not in use) instead of a UUID: an id freed by
    # an expiry is issued again while the consumer that held it still uses it
    slots = V.session_ms.keys_where(lambda v: TRUE())          # every member slot
    rows = plant(lambda r: subst_row(r, P.fresh, Lowest(slots - (V.members | V.pending))), _new_member_rows)
    r = check(WorldModel(SMALL, rows))
    assert_shortest_violation(r, "no-shared-member-id", {"PendingExpiry: pending member expires"})


def test_static_member_id_without_uuid():
    # generateMemberId for a static member as its group.instance.id alone: the replacing process gets
    # the zombie's member id, so GC.updateStaticMemberAndRebalance fences nothing (KIP-345)
    rows = plant(lambda r: subst_row(r, P.fresh, V.static[P.instance]), lambda n: "known static member rejoins" in n)
    r = check(WorldModel(ZOMBIE, rows))
    assert_shortest_violation(r, "no-shared-member-id",
                              {"JoinGroup: known static member rejoins, protocol unchanged: persist the new id (Stable)"})


def test_static_replacement_keeps_the_old_member_id():
    # GM.replaceStaticMember without `members.remove(oldMemberId)`: the member is registered under the
    # zombie's id and the new one, both carrying the group.instance.id
    def keep_old(u):
        if "members" in u and "static" in u:
            u["members"] = V.members.with_(P.fresh)
            u["instance_of"] = V.instance_of.put(P.fresh, P.instance)
        return u
    rows = plant(lambda r: edit_sets(r, keep_old), lambda n: "known static member rejoins" in n)
    r = check(WorldModel(ZOMBIE, rows))
    assert_shortest_violation(r, "static-ids-unique",
                              {"JoinGroup: known static member rejoins during PreparingRebalance (PreparingRebalance)"})


# == 2. a group stuck in CompletingRebalance (KAFKA-12890) ======================================
# The leader hangs after its JoinGroup response; the follower syncs and waits.  Kafka's DelayedSync
# (GC.onExpirePendingSync) removes the leader after the rebalance timeout; without it the group waits
# in CompletingRebalance forever: in HUNG while the follower's SyncGroups time out and are retried,
# in HUNG_POLL while the hung leader's heartbeat thread goes on heartbeating.

def test_pending_sync_expiry_does_nothing():
    # GC.onExpirePendingSync treats the expiry as unexpected and returns (only the timer is gone)
    rows = plant(lambda r: dataclasses.replace(r, steps=[Set_({"sync_timer": FALSE()})], target=None),
                 lambda n: n.startswith("SyncTimer: members that never synced are removed"))
    r = check(WorldModel(HUNG, rows), liveness=True)
    assert_stuck_lasso(r, CR, {"SyncTimer: members that never synced are removed during CompletingRebalance"})


def no_delayed_sync(r):
    """GC.onCompleteJoin without schedulePendingSync."""
    r = edit_sets(r, lambda u: {**u, "sync_timer": FALSE()} if "pending_sync" in u and "sync_timer" in u else u)
    return without_outputs(r, lambda o: o.kind == "arm" and o.timer == "sync")


COMPLETES = {"CompleteJoin: join completes, next generation", "JoinTimer: join completes, next generation"}


def test_no_delayed_sync_armed():
    # Kafka before KAFKA-12890: GC.onCompleteJoin arms no DelayedSync
    r = check(WorldModel(HUNG, plant(no_delayed_sync, COMPLETES.__contains__)), liveness=True)
    assert_stuck_lasso(r, CR, COMPLETES)


def heartbeat_counts_as_sync(r):
    """A heartbeat in CompletingRebalance that does what a SyncGroup does to the sync deadline
    (GC.removePendingSyncMember): KAFKA-12890 itself, where heartbeats, newly allowed in
    CompletingRebalance (apache/kafka#8834), completed the DelayedHeartbeat that had been the
    deadline for the SyncGroup."""
    deadline = [sets(pending_sync=V.pending_sync.without(P.member)),
                cancel("sync", when=V.sync_timer & V.pending_sync.is_empty()),
                sets(sync_timer=V.sync_timer & Not(V.pending_sync.is_empty()))]
    return dataclasses.replace(r, steps=deadline + list(r.steps))


@pytest.mark.parametrize("change,names", [
    (heartbeat_counts_as_sync, {"Heartbeat: during CompletingRebalance"}),
    (no_delayed_sync, COMPLETES),
], ids=["heartbeat-counts-as-sync", "no-delayed-sync"])
def test_a_hung_poll_loop_holds_the_group_in_completing_rebalance(change, names):
    # the leader's poll loop hangs after its JoinGroup response; its heartbeat thread goes on, the
    # follower syncs and waits: only the pending-sync timeout (GC.onExpirePendingSync) removes the
    # leader, so without it the group stays in CompletingRebalance while the leader heartbeats
    rows = plant(change, names.__contains__)
    assert_stuck_lasso(check(WorldModel(HUNG_POLL, rows), liveness=True), CR, names)
    # and without the fault no client ever fails to sync: the same table passes, which is why the
    # world needs a client that hangs
    r = check(WorldModel(dataclasses.replace(HUNG_POLL, hung_poll=False), rows), liveness=True)
    assert r.result == "ok" and r.complete


def test_delayed_sync_completed_by_the_first_sync():
    # GC.removePendingSyncMember completes the DelayedSync without asking
    # hasReceivedSyncFromAllMembers: the follower's SyncGroup cancels the leader's deadline
    parks = {"SyncGroup: leader sends the assignment", "SyncGroup: follower waits for the assignment"}
    rows = plant(lambda r: edit_sets(r, lambda u: {"sync_timer": FALSE()} if list(u) == ["sync_timer"] else u),
                 parks.__contains__)
    r = check(WorldModel(HUNG, rows), liveness=True)
    assert_stuck_lasso(r, CR, parks)


# == 3. a removed member's timer left armed ===================================================

def keep_session_timer(r):
    """GM.remove without removeHeartbeatForLeavingMember: the removed members' session timers stay armed."""
    out: list = []
    for st in r.steps:
        if isinstance(st, Set_) and "members" in st.updates and "hb_armed" in st.updates:
            st = dataclasses.replace(st, updates={k: v for k, v in st.updates.items() if k != "hb_armed"})
            if out and isinstance(out[-1], Out) and out[-1].kind == "cancel" and out[-1].timer == "heartbeat":
                out.pop()                         # remove_members: cancel the timers, then forget the members
        out.append(st)
    return dataclasses.replace(r, steps=out)


def test_leave_group_keeps_the_session_timer():
    # GC.handleLeaveGroup without removeHeartbeatForLeavingMember before removeMemberAndUpdateGroup
    rows = plant(keep_session_timer, lambda n: n.startswith("LeaveMember: member leaves during"))
    r = check(WorldModel(TINY, rows))
    assert_shortest_violation(r, "timers-belong-to-members", {"LeaveMember: member leaves during Stable"})


def test_join_completion_keeps_the_timers_of_members_it_drops():
    # GC.onCompleteJoin removes the dynamic members that did not rejoin without
    # removeHeartbeatForLeavingMember (a second rebalance is needed: the first has only new members)
    drops = lambda n: n.startswith(("JoinTimer: join completes", "JoinTimer: no member", "CompleteJoin:"))  # noqa: E731
    r = check(WorldModel(TINY_GEN2, plant(keep_session_timer, drops)))
    assert_shortest_violation(r, "timers-belong-to-members", {"JoinTimer: join completes, next generation"})


def test_sync_expiry_keeps_the_timers_of_members_it_drops():
    # GC.onExpirePendingSync removes the members that never synced but leaves their session timers
    r = check(WorldModel(TINY, plant(keep_session_timer, lambda n: n.startswith("SyncTimer: members that never synced"))))
    assert_shortest_violation(r, "timers-belong-to-members",
                              {"SyncTimer: members that never synced are removed during CompletingRebalance"})


# == 4. a join completion never re-checked ===================================================
# Time is abstract in the checkers, so a join the DelayedJoin completes at the rebalance timeout
# looks like one completed at once; the invariant join-completes-once-all-rejoined (a settled one)
# is what tells them apart.  A DelayedJoin that never completes at all is a lasso.

def test_delayed_join_never_completes_early():
    # DelayedJoin.tryComplete always false (as InitialDelayedJoin's): no checkAndComplete helps,
    # only the rebalance timeout completes the join
    rows = plant(lambda r: dataclasses.replace(r, own=FALSE()), lambda n: n.startswith("CompleteJoin:"))
    r = check(WorldModel(TINY, rows))
    # the last member is removed (here by the sync expiry) and the empty group waits in
    # PreparingRebalance for the timeout instead of completing to Empty
    assert_shortest_violation(r, "join-completes-once-all-rejoined", {"SyncTimer: members that never synced are "
                                                                      "removed during CompletingRebalance"})


def _check_without_recheck(cfg, after: set):
    # the re-check is spec/handling.py's eager rule, not a row: plant the bug by giving the world
    # a rule that leaves it out after the rows in `after`
    return check(WorldModel(cfg, eager=Eager(skip_after=frozenset(after))))


def test_leave_during_preparing_rebalance_does_not_recheck():
    # GC.removeMemberAndUpdateGroup without `case PreparingRebalance => checkAndComplete`
    # (the bug of KoP's port, streamnative/kop#380): the last member to rejoin is waited for
    # no more, but the join completes only at the rebalance timeout
    leave = {"LeaveMember: member leaves during PreparingRebalance"}
    r = _check_without_recheck(TINY, leave)
    assert_shortest_violation(r, "join-completes-once-all-rejoined", leave)
    assert leave <= set(r.path[-1][0].rows)


def test_pending_member_expiry_does_not_recheck():
    # GC.removePendingMemberAndUpdateGroup without checkAndComplete (KAFKA-7909)
    expiry = {"PendingExpiry: pending member expires"}
    r = _check_without_recheck(SMALL, expiry)
    assert_shortest_violation(r, "join-completes-once-all-rejoined", expiry)
    assert expiry <= set(r.path[-1][0].rows)


def test_delayed_join_expiry_does_not_force_completion():
    # DelayedJoin's expiry re-checks and waits again instead of forcing onCompleteJoin: a member that
    # never rejoins (here a stable consumer that sends nothing more) holds the group in
    # PreparingRebalance forever
    rearm = [s for s in T.ROW_BY_NAME["JoinTimer: no member rejoined, wait again"].steps
             if not (isinstance(s, Set_) and "members" in s.updates) and not (isinstance(s, Out) and s.kind == "cancel")]
    forced = {"JoinTimer: join completes, next generation", "JoinTimer: join completes with no members"}
    rows = plant(lambda r: dataclasses.replace(r, steps=rearm, target=None), forced.__contains__)
    r = check(WorldModel(TINY, rows), liveness=True)
    assert_stuck_lasso(r, PR, forced)


# == 5. membership answered but not stored (KAFKA-2017, KAFKA-10284) ============================
# A coordinator that answers what it has not stored looks right until it fails over: the next one
# loads the log, and a consumer that was told otherwise is fenced.  membership-durable catches the
# answer itself, no-fencing-by-an-older-generation the fencing it leads to.

STORED = T.ROW_BY_NAME["StoreGroupDone: assignment stored"]
LEADER_SYNCS = "SyncGroup: leader sends the assignment"


def propagate_without_storing(r):
    """GC.doSyncGroup that does at once what storeGroup's callback does (setAndPropagateAssignment,
    Stable) and never appends the group: the coordinator state is not persisted (KAFKA-2017)."""
    r = without_outputs(r, lambda o: o.kind == "append")
    return dataclasses.replace(r, steps=r.steps + list(STORED.steps), target="Stable")


def test_an_assignment_answered_before_it_is_stored():
    r = check(WorldModel(TINY, plant(propagate_without_storing, LEADER_SYNCS.__eq__)))
    assert_shortest_violation(r, "membership-durable", {LEADER_SYNCS})


def test_a_group_lost_by_a_failover_fences_its_consumers():
    # the same bug, seen where a consumer meets it: after a failover the new coordinator has no record
    # of the group, and the consumer's assignment is of a generation the group no longer has
    world = dataclasses.replace(FAILOVER, waive=(("membership-durable", "to see what the bug leads to"),))
    r = check(WorldModel(world, plant(propagate_without_storing, LEADER_SYNCS.__eq__)))
    assert_shortest_violation(r, "no-fencing-by-an-older-generation", {LEADER_SYNCS})
    assert r.path[-1][0].action.startswith("coordinator failover")


def test_a_static_replacement_answered_but_not_stored():
    # GC.updateStaticMemberAndRebalance before KAFKA-10284: in Stable the new member id is answered
    # (with the current generation and the old leader) without storeGroup, so the log keeps the old id
    replaces = "JoinGroup: known static member rejoins, protocol unchanged: persist the new id (Stable)"

    def answer_unstored(r):
        new = P.fresh
        answered = [answer("JoinGroup", new, **{**join_info(new), "leader": V.scratch_leader,
                                                "members": NO_MEMBERS}),
                    sets(awaiting_join=V.awaiting_join.without(new))]
        appends = lambda st: isinstance(st, Out) and st.kind == "append"  # noqa: E731
        return dataclasses.replace(r, steps=[x for st in r.steps for x in (answered if appends(st) else [st])])
    r = check(WorldModel(ZOMBIE, plant(answer_unstored, replaces.__eq__)))
    assert_shortest_violation(r, "membership-durable", {replaces})
