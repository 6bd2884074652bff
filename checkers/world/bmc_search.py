"""Bounded model checking of the closed world: the one entry point, over either solver.

The step relation is built once (bmc.py `StepRelation`, the world's Next over Z3 values); what asks
about its unrolling is Z3 itself (bmc.py `bmc_z3`) or an incremental SAT solver over the step
bit-blasted once (bmc_sat.py).  Both modules share the relation and the replay through the explicit
checker; this one only chooses between them, so neither imports the other's search.
"""
from __future__ import annotations

from .bmc import Z3_MODES, BmcResult, StepRelation, bmc_z3
from .bmc_sat import bmc_sat
from .presets import WorldConfig

MODES = (*Z3_MODES, "sat")


def bmc(cfg: WorldConfig | StepRelation, depth: int, rows: list | None = None, timeout_ms: int = 0,
        progress=None, mode: str = "push", budget_s: float | None = None, only: set | None = None,
        leap: bool = False) -> BmcResult:
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
    `cfg` may be a step relation built before (of its world and rows); its build is not timed again."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: use one of {', '.join(MODES)}")
    if leap and mode != "sat":
        raise ValueError(f"leap is a question of the SAT encoding (mode sat), not of mode {mode!r}")
    rel = cfg if isinstance(cfg, StepRelation) else StepRelation(cfg, rows)
    if mode == "sat":
        return bmc_sat(rel, depth, progress=progress, budget_s=budget_s, only=only, leap=leap)
    return bmc_z3(rel, depth, timeout_ms=timeout_ms, progress=progress, mode=mode, budget_s=budget_s, only=only)
