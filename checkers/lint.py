"""Table lint: is the table a well-formed specification?

For every trigger, asked of Z3 over a bounded world (every state the schema
allows that satisfies the structural invariants, every parameter value):

  exclusive   no two rows apply at once;
  covering    some row applies whenever the trigger can happen (requests
              always; a timer while armed; see table.ENABLED);
  reachable   every row applies in some such case (no dead rows).

And for the lifecycle: every state change a row makes is one of Kafka's
legal moves (or a move of the coordinator's group cache), and the
python-statemachine lifecycle allows exactly those.

A problem comes with a witness: the state and parameters Z3 found.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from groupspec.spec.invariants import structural
from groupspec.spec.lang import to_z3, SymEnv
from groupspec.spec.schema import STATES, TRIGGERS, kafka_moves, legal_moves
from groupspec.spec.symbolic import (default_sizes, fresh_params, fresh_state, in_states, params_well_formed,
                                     state_well_formed)
from groupspec.spec.table import ROWS, enabled, rows_of

# Which triggers may make the cache moves (create, load, drop a group).
CACHE_MOVE_TRIGGERS = {
    ("Absent", "Empty"): {"JoinGroup", "OffsetCommit", "Load"},
    ("Absent", "Stable"): {"Load"},
    ("Dead", "Absent"): {"Unload", "DeleteGroup", "ExpireOffsets"},
}


@dataclass
class Problem:
    check: str          # exclusive, covering, reachable, moves
    trigger: str
    rows: list[str]
    detail: str
    witness: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return {"check": self.check, "trigger": self.trigger, "rows": self.rows, "detail": self.detail,
                "witness": self.witness}


@dataclass
class LintResult:
    problems: list[Problem]
    checks: int
    seconds: float
    sizes: dict

    def as_json(self) -> dict:
        return {"result": "ok" if not self.problems else "problems", "checks": self.checks,
                "seconds": round(self.seconds, 2), "bounds": self.sizes, "rows": len(ROWS),
                "problems": [p.as_json() for p in self.problems]}


def lint(sizes: dict | None = None, timeout_ms: int = 20_000, progress=None) -> LintResult:
    sizes = sizes or default_sizes()
    start = time.perf_counter()
    problems = check_moves()
    checks = 1
    state = fresh_state(sizes)
    params = fresh_params(sizes)
    assume = state_well_formed(state, sizes) + params_well_formed(params, sizes)
    env = SymEnv(sizes, state, params)
    assume += [to_z3(inv.formula, env) for inv in structural()]
    for trig in TRIGGERS:
        rows = rows_of(trig.name)
        if not rows:
            continue
        if progress:
            progress(trig.name)
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*assume)
        solver.add(to_z3(enabled(trig.name), env))
        conds = [z3.And(in_states(r, state), to_z3(r.guard, env)) for r in rows]
        # reachable
        for r, c in zip(rows, conds):
            checks += 1
            res = _check(solver, c)
            if res == z3.unsat:
                problems.append(Problem("reachable", trig.name, [r.name],
                                        "no state and parameters make this row apply"))
            elif res == z3.unknown:
                problems.append(Problem("reachable", trig.name, [r.name], "Z3 gave up (timeout)"))
        # exclusive
        for i in range(len(rows)):
            for j in range(i + 1, len(rows)):
                if not set(rows[i].states) & set(rows[j].states):
                    continue
                checks += 1
                res = _check(solver, z3.And(conds[i], conds[j]))
                if res == z3.sat:
                    problems.append(Problem("exclusive", trig.name, [rows[i].name, rows[j].name],
                                            "both rows apply", _witness(solver, state, params, sizes)))
                elif res == z3.unknown:
                    problems.append(Problem("exclusive", trig.name, [rows[i].name, rows[j].name],
                                            "Z3 gave up (timeout)"))
        # covering
        if trig.total:
            checks += 1
            res = _check(solver, z3.Not(z3.Or(conds)))
            if res == z3.sat:
                problems.append(Problem("covering", trig.name, [], "no row applies",
                                        _witness(solver, state, params, sizes)))
            elif res == z3.unknown:
                problems.append(Problem("covering", trig.name, [], "Z3 gave up (timeout)"))
    c2, p2 = lint_clients(sizes, timeout_ms)
    return LintResult(problems + p2, checks + c2, time.perf_counter() - start, sizes)


def lint_clients(sizes: dict, timeout_ms: int) -> tuple[int, list[Problem]]:
    """The closed world's client rows: for each trigger, exclusive and reachable (a client's
    triggers are its choices, so they need not cover every state)."""
    from groupspec.spec.lang import fresh, well_formed
    from groupspec.spec.world import ALL_VARS, CLIENT, CLIENT_ROWS, WORLD_PARAMS
    wsizes = dict(sizes, **{CLIENT: 2})
    state = {v.name: fresh("w." + v.name, v.type, wsizes) for v in ALL_VARS}
    params = {"client": fresh("p.client", WORLD_PARAMS["client"], wsizes)}
    assume = [c for v in ALL_VARS for c in well_formed(state[v.name], v.type, wsizes)]
    assume += well_formed(params["client"], WORLD_PARAMS["client"], wsizes) + [params["client"] >= 0]
    env = SymEnv(wsizes, state, params)
    problems, checks = [], 0
    by_trigger: dict = {}
    for r in CLIENT_ROWS:
        by_trigger.setdefault(r.trigger, []).append(r)
    for trig, rows in by_trigger.items():
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*assume)
        conds = [to_z3(r.guard, env) for r in rows]
        for r, c in zip(rows, conds):
            checks += 1
            if _check(solver, c) == z3.unsat:
                problems.append(Problem("reachable", trig, [r.name], "no world state makes this client row apply"))
        for i in range(len(rows)):
            for j in range(i + 1, len(rows)):
                checks += 1
                if _check(solver, z3.And(conds[i], conds[j])) == z3.sat:
                    problems.append(Problem("exclusive", trig, [rows[i].name, rows[j].name],
                                            "both client rows apply"))
    return checks, problems


def _check(solver: z3.Solver, cond):
    solver.push()
    solver.add(cond)
    res = solver.check()
    if res != z3.sat:
        solver.pop()
        return res
    # keep the model readable by the caller, then pop
    solver._last_model = solver.model()
    solver.pop()
    return res


def _witness(solver, state: dict, params: dict, sizes) -> dict:
    m = getattr(solver, "_last_model", None)
    if m is None:
        return {}
    out = {"state": STATES[m.eval(state["state"], model_completion=True).as_long()]}
    for k in ("generation", "members", "pending", "awaiting_join", "awaiting_sync", "leader", "join_timer"):
        out[k] = str(m.eval(state[k], model_completion=True))
    for k in ("coord", "member", "member_empty", "instance", "generation", "timer_member"):
        if k in params and not isinstance(params[k], list):
            out["param." + k] = str(m.eval(params[k], model_completion=True))
    return out


def check_moves() -> list[Problem]:
    """Every row's state changes are legal; the lifecycle machine allows exactly the legal moves."""
    problems = []
    legal, kafka = legal_moves(), kafka_moves()
    for r in ROWS:
        for mv in r.moves():
            if mv not in legal:
                problems.append(Problem("moves", r.trigger, [r.name], f"{mv[0]} -> {mv[1]} is not a legal move"))
            elif mv not in kafka and r.trigger not in CACHE_MOVE_TRIGGERS.get(mv, set()):
                problems.append(Problem("moves", r.trigger, [r.name],
                                        f"{mv[0]} -> {mv[1]} is a group-cache move, not one {r.trigger} makes"))
    made = {mv for r in ROWS for mv in r.moves()}
    for mv in sorted(legal - made):
        problems.append(Problem("moves", "", [], f"{mv[0]} -> {mv[1]} is declared legal but no row makes it"))
    try:
        from groupspec.impl.lifecycle import GroupLifecycle
        allowed = {(t.source.id, t.target.id) for s in GroupLifecycle.states for t in s.transitions}
        if allowed != legal:
            problems.append(Problem("moves", "", [], f"the lifecycle machine differs from the declared moves: "
                                                     f"{sorted(allowed ^ legal)}"))
    except ImportError:  # pragma: no cover - impl is optional for lint
        pass
    return problems
