"""Bounded model checking of the closed world: the one entry point, over either solver.

The step relation is built once (bmc.py `StepRelation`, the world's Next over Z3 values); what asks
about its unrolling is Z3 itself (bmc.py `bmc_z3`) or an incremental SAT solver over the step
bit-blasted once (bmc_sat.py).  Both modules share the relation and the replay through the explicit
checker; this one only chooses between them, so neither imports the other's search.  It also joins
the two kinds of search: breadth-first to a depth (search/prefix.py), then SAT from the states there.
"""
from __future__ import annotations

import time

from groupspec.checkers.search.prefix import levels_to

from .bmc import Z3_MODES, BmcResult, StepRelation, bmc_z3
from .bmc_sat import OutOfBits, bmc_sat
from .presets import WorldConfig

MODES = (*Z3_MODES, "sat")
# The most states of a search's level the SAT search starts from: each is a Boolean and a clause per bit it does not
# share with the others (274 of a state's 1,031 bits at depth 10 of the 3-client world with faults), so 100 thousand
# are tens of millions of clauses.
MAX_STARTS = 100_000


def bmc(cfg: WorldConfig | StepRelation, depth: int, rows: list | None = None, timeout_ms: int = 0,
        progress=None, mode: str = "push", budget_s: float | None = None, only: set | None = None,
        leap: bool = False, after: int | None = None, widest: int | None = None, searched=None) -> BmcResult:
    """Search for a state breaking a state invariant within `depth` steps of the initial state,
    depth by depth (so the first violation found is at a shortest depth).

    `mode`, how the solver is asked at each depth: "sat", the step bit-blasted once and unrolled
    in an incremental SAT solver (bmc_sat.py; `timeout_ms` does not apply, `budget_s` interrupts the
    solver); "push", one incremental Z3 solver keeping the
    steps so far, the violation query pushed and popped; "assume", one solver, the violation
    query guarded by a literal that is assumed for its check only; "fresh", a new solver per
    depth given every step again (no incremental solving, for comparison).
    `budget_s`: stop deepening once this many seconds of solving (after the relation is built)
    have passed (result "stopped", `depth` the last depth answered); the solver's timeout is held
    to what is left of it.
    `only`: ask about these invariants alone (default: every state invariant of the world).
    `leap` (mode "sat" only): one question for every depth to `depth` at once, not depth by depth:
    sooner to a violation where proving each depth clean is what costs, but the violation is not
    shown shortest (bmc_sat.py `_Search.leap`).
    `after` (mode "sat" only): breadth-first search first, to `after` steps (search/prefix.py, with
    symmetry), then the SAT search from the states it kept at that depth; the depths are still counted
    from the initial state and the first violation found still at a shortest depth (but with `leap`).
    The search's own checks cover the depths up to `after`, every invariant of the world: a violation
    there (or no state that deep) ends it, so `only` is refused with it.  `widest`: the search stops short
    of `after` before the first level of more than that many states (each is clauses of the first state).
    `searched(prefix)` is called when the search is done (search/prefix.py's `Prefix`), before BMC starts.
    `cfg` may be a step relation built before (of its world and rows); its build is not timed again."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: use one of {', '.join(MODES)}")
    if leap and mode != "sat":
        raise ValueError(f"leap is a question of the SAT encoding (mode sat), not of mode {mode!r}")
    if after is not None and (mode != "sat" or not 0 <= after <= depth):
        raise ValueError(f"after {after}: BMC from breadth-first search's level is mode sat's, at a depth "
                         f"from 0 to {depth}")
    if after is not None and only is not None:
        # the world model checks every invariant as it steps (a row breaking one on its way ends the step), so
        # the search cannot look past an invariant it was not asked about
        raise ValueError("after and only: the search to `after` checks every invariant; ask about all of them")
    rel = cfg if isinstance(cfg, StepRelation) else StepRelation(cfg, rows)
    if after is not None:
        return _after_search(rel, depth, after, widest, progress, budget_s, leap, searched)
    if mode == "sat":
        return bmc_sat(rel, depth, progress=progress, budget_s=budget_s, only=only, leap=leap)
    return bmc_z3(rel, depth, timeout_ms=timeout_ms, progress=progress, mode=mode, budget_s=budget_s, only=only)


def _after_search(rel: StepRelation, depth: int, after: int, widest: int | None, progress, budget_s, leap,
                  searched) -> BmcResult:
    t0 = time.perf_counter()
    pre = levels_to(rel.world.model, after, deadlock=False, widest=widest)   # BMC asks about invariants only
    if searched:
        searched(pre)
    if pre.ended is not None:
        r = pre.ended
        detail = (f"breadth-first search reached every state within {r.depth} steps; none breaks an invariant"
                  if r.result == "ok" else "")
        res = BmcResult(r.result, depth if r.result == "ok" else r.depth, r.violation, r.path, detail=detail,
                        build_seconds=rel.build_seconds, steps=[(st.action, st.rows) for st, _ in r.path[1:]])
    elif len(pre.states) > MAX_STARTS:
        res = BmcResult("unknown", pre.depth, detail=f"breadth-first search keeps {len(pre.states):,} states at depth "
                        f"{pre.depth}, more than the {MAX_STARTS:,} BMC starts from (each is clauses of the first "
                        f"state): give a smaller depth to search to, or auto")
    else:
        left = None if budget_s is None else budget_s - (time.perf_counter() - t0)
        try:
            res = bmc_sat(rel, depth, progress=progress, budget_s=left, leap=leap, prefix=pre)
        except OutOfBits as e:
            res = BmcResult("unknown", pre.depth, detail=f"a state breadth-first search reached at depth {pre.depth} "
                            f"cannot be encoded: {e}")
    res.prefix_states, res.prefix_depth, res.prefix_level, res.prefix_seconds = (
        pre.distinct_states, pre.depth if pre.ended is None else pre.ended.depth, len(pre.states), pre.seconds)
    return res
