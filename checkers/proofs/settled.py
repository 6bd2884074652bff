"""A settled invariant (one that holds between requests, not after every row) proved by induction
over the world's step: a row and what it entails.

Every coordinator step ends in the eager rule (spec/handling.py: `handle` runs `settle` after each
row's branch, an append completed at once included, and LeaveGroup's batch ends in one more,
after the per-member rows each ended in theirs).  So the step's last act is the eager trigger's
row (CompleteJoin), or none when the group is not in the rule's state or no row of the trigger
applies, with the parameters the last row gives it (`handling.recheck_params`).  The invariant
holds after every step when each such ending establishes it: from any state (the rule may follow
any row), or, for the re-check after a LeaveGroup batch, from a state where it holds (one the
last per-member row's own re-check left).  No row is written again: the eager trigger's rows are
the table's, read through the same reading (`readings.Reading`) as every other proof, over
uninterpreted sorts, so a proof holds for any number of members."""
from __future__ import annotations

import z3

from groupspec.spec.handling import AFTER_BATCH, EAGER, recheck_params
from groupspec.spec.invariants import Invariant
from groupspec.spec.schema import STATES
from groupspec.spec.z3_fast import conj

from .obligations import Assumption, is_config, rlimit
from .readings import Reading
from .results import Proof


def prove_settled(inv: Invariant, rows: list, assumptions: list[Assumption], work: int) -> Proof:
    """`inv` proved over every ending of a step, or the first ending that breaks it."""
    method = (f"induction over the world step: every step ends in the eager {EAGER.trigger} (handling.settle), "
              "which establishes it (unbounded)")
    if EAGER.skip_after:
        return Proof(inv.name, "unknown", "none", reason=(
            "the eager rule is skipped after " + ", ".join(sorted(EAGER.skip_after)) + ": a step may end "
            "without it"))
    rd = Reading(None)
    eager = [r for r in rows if r.trigger == EAGER.trigger]
    # the parameters the rule may be given: after each row of the table, and after a batch
    afters = {tuple(sorted(recheck_params(r).items())): r.name for r in rows if r.trigger != EAGER.trigger}
    afters[tuple(sorted(recheck_params(AFTER_BATCH).items()))] = AFTER_BATCH.name
    for key, after in afters.items():
        state, params = rd.fresh("settle")
        params = {**params, **{k: z3.BoolVal(v) for k, v in key}}
        side: list = []
        facts = rd.well_formed(state, params)
        facts += [rd.read(a.formula, state, params, side, set()) for a in assumptions if is_config(a)]
        if after == AFTER_BATCH.name:    # the state the last per-member row's re-check left
            facts.append(rd.read(inv.formula, state, params, side, set()))
        inside = state["state"] == z3.IntVal(EAGER.state)
        for row in eager:
            g, post, _, row_side, _ = rd.relation(row, state, params, f"@{row.name}")
            goal = rd.read(inv.formula, post, params, row_side, set())
            if _holds(facts + side + row_side + [inside, g], goal, work) is not True:
                return _broken(inv, after, row.name)
        # no row applies: no row's guard holds in its states (the relation's guard also holds its
        # choices' constraints, which some choice always meets: Choose is none of an empty set)
        applies = z3.Or([z3.And(z3.Or([state["state"] == z3.IntVal(STATES.index(st)) for st in row.states]),
                                rd.read(row.guard, state, params, side, set())) for row in eager])
        goal = rd.read(inv.formula, state, params, side, set())
        if _holds(facts + side + [z3.Not(z3.And(inside, applies))], goal, work) is not True:
            return _broken(inv, after, f"no {EAGER.trigger} row (the join stays pending)")
    return Proof(inv.name, "proved", method, reason=(
        f"each step's last act is the eager {EAGER.trigger} (or none) after {len(afters)} kinds of row "
        f"(its parameters: handling.recheck_params), and each of its {len(eager) + 1} outcomes leaves the "
        f"invariant true; in {STATES[EAGER.state]} no row of it applies only where the invariant holds"))


def _holds(facts: list, goal, work: int) -> bool | None:
    s = z3.Solver()
    s.set("rlimit", rlimit(work))
    s.add(conj([*facts, z3.Not(goal)]))
    r = s.check()
    return True if r == z3.unsat else False if r == z3.sat else None


def _broken(inv: Invariant, after: str, outcome: str) -> Proof:
    return Proof(inv.name, "unknown", "induction over the world step", reason=(
        f"after row {after!r}, the eager {EAGER.trigger}'s outcome {outcome!r} may leave it false "
        "(or Z3 gave up: its limit of work)"))
