"""The search visits what it visited before its step was made faster (issue 28, item 2): every
count of the breadth-first search as main's code (1b69db9) gave them, state for state and level by
level, and the planted bugs' counterexamples step for step.  A change to the step, the encoding, the
fingerprints or the memo tables that changes what is reached fails here."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel
from groupspec.spec import table as T

from test_explicit import TINY, _with

# (preset, symmetry): (distinct, generated, depth, unreduced, distinct states first reached per depth)
RECORDED = {
    ("tiny", True): (375, 660, 23, 748, [
        1, 1, 2, 2, 3, 4, 5, 6, 10, 15, 15, 19, 22, 22, 26, 30, 30, 36, 36, 36, 28, 14, 8, 4]),
    ("tiny", False): (748, 1316, 23, 748, [
        1, 2, 3, 4, 6, 8, 10, 12, 20, 30, 30, 38, 44, 44, 52, 60, 60, 72, 72, 72, 56, 28, 16, 8]),
    ("small", True): (21420, 63516, 30, 42404, [
        1, 1, 3, 5, 11, 21, 40, 69, 112, 183, 277, 394, 558, 785, 1077, 1373, 1543, 1610, 1703, 1770, 1731,
        1610, 1463, 1324, 1205, 1009, 738, 454, 242, 92, 16]),
    ("small", False): (42404, 126351, 30, 42404, [
        1, 2, 5, 10, 21, 42, 80, 136, 222, 360, 544, 775, 1102, 1553, 2124, 2705, 3034, 3183, 3379, 3498,
        3423, 3195, 2894, 2636, 2410, 2014, 1472, 904, 472, 176, 32]),
    ("twogen", True): (2457, 4756, 32, 4908, [
        1, 1, 2, 2, 3, 4, 6, 8, 13, 20, 27, 37, 50, 62, 92, 117, 148, 179, 198, 213, 204, 186, 179, 167,
        141, 122, 95, 64, 42, 32, 26, 14, 2]),
    ("twogen", False): (4908, 9502, 32, 4908, [
        1, 2, 3, 4, 6, 8, 12, 16, 26, 40, 53, 74, 100, 124, 184, 234, 296, 357, 396, 426, 406, 372, 358,
        334, 282, 244, 190, 128, 84, 64, 52, 28, 4]),
}


@pytest.mark.parametrize("preset, symmetry", list(RECORDED))
def test_the_search_reaches_what_it_reached(preset, symmetry):
    r = check(WorldModel(PRESETS[preset]), symmetry=symmetry)
    assert r.result == "ok"
    assert (r.distinct_states, r.generated, r.depth, r.unreduced_states, r.levels) == RECORDED[preset, symmetry]


def _caught(rows) -> tuple:
    """How the search of tiny with `rows` ends: (result, violation, distinct, generated, depth), and the
    counterexample's actions step by step."""
    r = check(WorldModel(TINY, rows))
    return (r.result, r.violation, r.distinct_states, r.generated, r.depth), \
        [None if step is None else step.action for step, _ in r.path]


def test_a_row_that_breaks_an_invariant_is_caught_where_it_was():
    # checked after the row (check_after_row), whose verdict is now memoized per firing
    assert _caught(_with("StoreGroupDone: assignment stored", target=None)) == (
        ("violation", "assignment-only-when-stable", 23, 34, 7), [
        None,
        "c0: client starts and joins",
        "deliver c0's join",
        "c0: join: member id required, rejoin with it",
        "deliver c0's join",
        "the delayed join expires",
        "c0: join: joined, the leader assigns and syncs",
        "row 'StoreGroupDone: assignment stored' breaks assignment-only-when-stable",
    ])


def test_a_broken_state_is_caught_where_it_was():
    row = T.ROW_BY_NAME["JoinTimer: join completes, next generation"]
    steps = [dataclasses.replace(st, updates={k: v for k, v in st.updates.items() if k != "generation"})
             if hasattr(st, "updates") and "generation" in st.updates else st for st in row.steps]
    assert _caught(_with(row.name, steps=steps)) == (("violation", "no-shared-partition", 597, 986, 16), [
        None,
        "c0: client starts and joins",
        "c1: client starts and joins",
        "deliver c0's join",
        "c0: join: member id required, rejoin with it",
        "deliver c1's join",
        "c1: join: member id required, rejoin with it",
        "deliver c0's join",
        "the delayed join expires",
        "c0: join: joined, the leader assigns and syncs",
        "deliver c0's sync",
        "deliver c1's join",
        "c0: sync: assignment received",
        "the delayed join expires",
        "c1: join: joined, the leader assigns and syncs",
        "deliver c1's sync",
        "c1: sync: assignment received",
    ])


def test_a_firings_verdict_after_its_row_is_asked_once(monkeypatch):
    from groupspec.checkers.world import state_space
    asked = Counter()
    real = state_space.check_after_row

    def counted(prev, state, params, outputs, where=""):
        asked[prev, state, tuple(params), where] += 1
        return real(prev, state, params, outputs, where)
    monkeypatch.setattr(state_space, "check_after_row", counted)
    check(WorldModel(PRESETS["small"]))
    assert asked and max(asked.values()) == 1
