"""Bounded model checking of the closed world (checkers/bmc.py) against the explicit checker.

BMC reads the same declarations the explicit checker compiles, through the symbolic meaning
of terms and `handling.handle` with a symbolic host; each violation it finds is replayed
through the explicit checker's world model, and a trace that does not replay is reported as
a disagreement.  So these tests hold the two interpretations to each other.
"""
from __future__ import annotations

import pytest

from groupspec.checkers.bmc import bmc
from groupspec.checkers.explicit import check
from groupspec.checkers.world_model import WorldModel
from groupspec.checkers.worlds import PRESETS

from test_planted_bugs import LEADER_SYNCS, plant, propagate_without_storing

TINY = PRESETS["tiny"]


def test_no_state_within_two_steps_of_the_tiny_world_breaks_an_invariant():
    r = bmc(TINY, 2)
    assert (r.result, r.depth) == ("ok", 2), r.detail
    assert r.paths_per_step > 100      # every row of every trigger a step may take, under its guard


@pytest.mark.slow
def test_bmc_and_the_explicit_checker_find_a_planted_bug_at_the_same_depth():
    # KAFKA-2017's class: the leader's assignment propagated without storing the group
    rows = plant(propagate_without_storing, LEADER_SYNCS.__eq__)
    explicit = check(WorldModel(TINY, rows))
    assert explicit.result == "violation"
    r = bmc(TINY, explicit.depth, rows=rows)
    assert r.result == "violation", r.detail           # replayed concretely: not a disagreement
    assert r.depth == explicit.depth
    assert len(r.path) == len(explicit.path)
    assert r.violation == explicit.violation == "membership-durable"
