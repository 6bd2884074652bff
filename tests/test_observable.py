"""What a group can still read in each state (spec/observable.py), and the mutation checks that rest on it."""
from __future__ import annotations

from groupspec.checkers.search import equivalence as Q
from groupspec.checkers.search import mutate as M
from groupspec.spec import engine as E
from groupspec.spec import observable as O
from groupspec.spec.table import ROWS


def _find(row: str, detail: str):
    for m, i, mutant in M.mutants():
        if m.row == row and detail in m.detail:
            return i, mutant
    raise AssertionError(f"no mutant of {row!r} with {detail!r}")


def test_every_row_depends_only_on_what_is_live_where_it_fires():
    """The fixpoint: what each row reads from a state, and keeps of what its target reads, is live there
    (for the rows a Dead group fires, what they read is what LIVE['Dead'] holds)."""
    for r in ROWS:
        for mode, to in O.moves(r):
            assert O.needs(r, O.LIVE_BY_MODE[to]) <= O.LIVE_BY_MODE[mode], (r.name, mode)
        assert not O.keeps_alike(r), r.name
    dead = [r for r in ROWS if "Dead" in r.states]
    assert any(r.name == "DescribeGroup: summary" for r in dead)
    assert {"members", "protocol_type", "hb_armed", "offsets"} <= O.LIVE["Dead"]
    # never read again once Dead: whether a new member joined the initial delay (only its extension reads it)
    assert "new_member_added" not in O.LIVE["Dead"] and "new_member_added" in O.LIVE["PreparingRebalance"]
    # the invariants are observers: no Dead row answers the members awaiting sync, but
    # awaiting-sync-only-completing reads them in every state
    assert "awaiting_sync" in O.LIVE["Dead"] and "awaiting_sync" in O.judged("Dead")


def test_a_state_invariant_reads_only_where_its_states_say():
    # absent-holds-nothing reads every variable, in Absent only
    assert "join_remaining_ms" in O.judged("Absent") and "join_remaining_ms" not in O.judged("Empty")
    assert "join_remaining_ms" in O.LIVE["Absent"] and "join_remaining_ms" not in O.LIVE["Dead"]


def test_the_snapshot_reads_only_what_observable_declares(monkeypatch):
    """The runtime's snapshot and member details (what the scenarios and the harness compare) read only
    SNAPSHOT: the liveness analysis counts them as read in every held state."""
    from groupspec.impl.coordinator import GroupCoordinator
    from tests.test_runtime import CFG, stable_group
    coord = GroupCoordinator(CFG)
    stable_group(coord)
    read, get = set(), E.get
    monkeypatch.setattr(E, "get", lambda s, v: read.add(v) or get(s, v))
    assert coord.snapshot("g") is not None
    coord.member_details("g")
    assert read and read <= O.SNAPSHOT, read - O.SNAPSHOT


def test_a_dropped_update_an_invariant_reads_is_not_equivalent():
    # a Dead group left with members awaiting sync answers no one differently, but breaks
    # awaiting-sync-only-completing: the search would kill it, so it is not called equivalent
    i, mutant = _find("JoinTimer: the group is Dead", "drop the update of `awaiting_sync`")
    assert Q.shown_equivalent(i, mutant) == ""
    # a deleted group left with a delay breaks absent-holds-nothing
    i, mutant = _find("DeleteGroup: Empty group is deleted", "drop the update of `join_delay_ms`")
    assert Q.shown_equivalent(i, mutant) == ""


def test_a_dropped_update_nothing_reads_again_is_equivalent_only_modulo_liveness(monkeypatch):
    i, mutant = _find("HeartbeatExpiry: member expires during Stable", "drop the update of `join_delay_ms`")
    assert Q.shown_equivalent(i, mutant)
    # compared on the whole post-state, as before, the dropped update shows
    monkeypatch.setattr(Q, "keeps_alike", lambda row: ["compare everything"])
    assert Q.shown_equivalent(i, mutant) == ""


def test_a_dropped_update_a_dead_group_still_reads_is_not_equivalent():
    # the members a Dead group keeps are in its snapshot and DescribeGroups answer
    i, mutant = _find("JoinTimer: the group is Dead", "drop the update of `members`")
    assert Q.shown_equivalent(i, mutant) == ""
    # a deleted group is created again from what Absent keeps: its offsets are read again
    i, mutant = _find("DeleteGroup: Empty group is deleted", "drop the update of `offsets`")
    assert Q.shown_equivalent(i, mutant) == ""


def test_a_mutant_that_depends_on_what_is_dead_where_it_fires_is_compared_whole():
    i, mutant = _find("JoinGroup: pending member rejoins and starts a rebalance (Empty)",
                      "drop the update of `join_delay_ms`")
    assert O.keeps_alike(mutant) == ["in Empty it depends on join_delay_ms, which nothing else reads there"]


def test_the_delay_of_a_delayed_join_is_read_only_while_the_initial_delay_runs():
    """`join_delay_ms` is read only by the initial delay's extension (join_timer = initial), and every move
    into the initial delay writes it: a rebalance of a group with members that leaves it stale (the
    DelayedJoin is armed with the rebalance timeout itself) is equivalent, which a liveness per group state
    alone does not show (PreparingRebalance reads it)."""
    initial, delayed = O.TIMERS[1], O.TIMERS[2]
    assert "join_delay_ms" in O.LIVE_BY_MODE[("PreparingRebalance", initial)]
    assert "join_delay_ms" not in O.LIVE_BY_MODE[("PreparingRebalance", delayed)]
    for row in ("JoinGroup: pending member rejoins and starts a rebalance (Stable)",
                "LeaveMember: member leaves during CompletingRebalance", "HeartbeatExpiry: member expires during Stable"):
        i, mutant = _find(row, "drop the update of `join_delay_ms`")
        assert Q.shown_equivalent(i, mutant), row


def test_the_initial_delay_still_tells_a_stale_delay_apart():
    # the initial delay is armed with join_delay_ms: leaving it stale changes when the join completes
    for row in ("JoinGroup: new member joins and starts a rebalance (Empty)",
                "JoinTimer: initial delay extended for new members"):
        i, mutant = _find(row, "drop the update of `join_delay_ms`")
        assert Q.shown_equivalent(i, mutant) == "", row
