"""The invariants the equivalence check may assume (checkers/search/assumed.py): proved in the run, and what
they let it show."""
from __future__ import annotations

from groupspec.checkers.search import assumed as A
from groupspec.checkers.search import equivalence as Q
from groupspec.spec.lang import Implies
from groupspec.spec.schema import V
from groupspec.spec.table import ROWS
from groupspec.spec.vocabulary import S
from tests.test_observable import _find


def test_the_catalog_invariants_proved_for_the_table():
    rel, facts = Q._relations()
    proved = {n for n, _ in A.proved(rel, facts)}
    assert {"no-sync-held-while-preparing", "metadata-of-members-only.3", "metadata-of-members-only.3 (record)",
            "metadata-of-members-only.6"} <= proved
    assert all(f"absent-holds-nothing.{k}" in proved for k in range(1, 31))
    # members-have-session-timers does not hold after every row (a static member's new id stored in Stable)
    assert "members-have-session-timers" not in proved


def test_a_candidate_some_row_breaks_is_dropped():
    """An Empty group keeps its protocol type (Kafka does): the candidate that says it has none is not
    inductive, nor is the record form of one a Load row needs (a record's non-members hold no protocols)
    when no row that appends is asked to keep it."""
    rel, facts = Q._relations()
    false = ("empty-has-no-protocol-type", Implies(V.state == S("Empty"), V.protocol_type.is_none()))
    kept = A.houdini(rel, facts, [false, *A.candidates()])
    assert "empty-has-no-protocol-type" not in {n for n, _ in kept}
    rows = [r for r in ROWS if r.trigger == "Load"]
    only_state = [c for c in A.candidates() if c[0] == "metadata-of-members-only.3"]
    assert A.houdini(rel, facts, only_state, rows=rows) == []


def test_dropped_updates_of_metadata_an_empty_group_never_holds_are_equivalent():
    for row, detail in (("DeleteGroup: Empty group is deleted", "drop the update of `protos`"),
                        ("DeleteGroup: Empty group is deleted", "drop the update of `rebalance_ms`"),
                        ("DeleteGroup: Empty group is deleted", "drop the update of `pending_sync`"),
                        ("JoinGroup: group is full (CompletingRebalance)", "drop the update of `assignment`")):
        i, mutant = _find(row, detail)
        assert Q.shown_equivalent(i, mutant), (row, detail)


def test_mutants_that_differ_are_still_told_apart_under_the_invariants():
    # an Empty group keeps its offsets, generation and protocol type: deleting it must clear them
    for row, detail in (("DeleteGroup: Empty group is deleted", "drop the update of `offsets`"),
                        ("DeleteGroup: Empty group is deleted", "drop the update of `generation`"),
                        ("DeleteGroup: Empty group is deleted", "drop the update of `protocol_type`"),
                        ("JoinGroup: new member joins and starts a rebalance (Stable)", "drop the update of `protos`"),
                        ("JoinTimer: the group is Dead", "drop the update of `members`")):
        i, mutant = _find(row, detail)
        assert Q.shown_equivalent(i, mutant) == "", (row, detail)
