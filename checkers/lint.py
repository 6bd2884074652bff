"""Table lint: is the table a well-formed specification?

For every trigger, asked of Z3 over a bounded world (every state the schema
allows that satisfies the structural invariants, every parameter value):

  exclusive   no two rows apply at once;
  covering    some row applies whenever the trigger can happen (requests
              always; a timer while armed; see table.ENABLED);
  reachable   every row applies in some such case (no dead rows).

And for the timers: the coverage above assumes a timer fires only when its
trigger's ENABLED term holds (a session timer only for a member in
`hb_armed`, ...).  That is an assumption about the rows' arm and cancel
outputs, which the runtime turns into real timers, so lint proves it too:

  timers      every row leaves armed only timers whose condition
              (table.TIMERS) holds in the state after it, given that this
              held before it (the timer that fired is gone, others stay
              until cancelled; a fresh member id has no timer).

And for the lifecycle: every state change a row makes is one of Kafka's
legal moves (or a move of the coordinator's group cache), and the
python-statemachine lifecycle allows exactly those.

A problem comes with a witness: the state and parameters Z3 found.

Each check lints the spec's rows unless given others (`table`,
`client_rows`): the tests plant a broken row in a copy of the table.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from groupspec.spec.invariants import structural
from groupspec.spec.lang import Not, walk
from groupspec.spec.rows import Out, Set_
from groupspec.spec.schema import MEMBER, P, STATES, V, TRIGGERS, kafka_moves, legal_moves
from groupspec.spec.symbolic import (SymEnv, default_sizes, fresh, fresh_params, fresh_state, in_states,
                                     params_well_formed, row_relation, state_well_formed, to_z3, well_formed)
from groupspec.spec.table import ROWS, TIMER_TRIGGERS, enabled, timer_armed

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
    rows: int           # how many coordinator rows were linted

    def as_json(self) -> dict:
        return {"result": "ok" if not self.problems else "problems", "checks": self.checks,
                "seconds": round(self.seconds, 2), "bounds": self.sizes, "rows": self.rows,
                "problems": [p.as_json() for p in self.problems]}


def lint(sizes: dict | None = None, timeout_ms: int = 20_000, progress=None, table: list = ROWS,
         client_rows: list | None = None) -> LintResult:
    """Every check below, of the coordinator's rows `table` and the clients' `client_rows`."""
    sizes = sizes or default_sizes()
    start = time.perf_counter()
    problems = check_moves(table)
    checks = 1
    state = fresh_state(sizes)
    params = fresh_params(sizes)
    assume = state_well_formed(state, sizes) + params_well_formed(params, sizes)
    env = SymEnv(sizes, state, params)
    assume += [to_z3(inv.formula, env) for inv in structural()]
    for trig in TRIGGERS:
        rows = [r for r in table if r.trigger == trig.name]
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
    c1, p1 = check_timers(sizes, timeout_ms, progress, table)
    c2, p2 = lint_clients(sizes, timeout_ms, client_rows)
    return LintResult(problems + p1 + p2, checks + c1 + c2, time.perf_counter() - start, sizes, len(table))


def check_timers(sizes: dict, timeout_ms: int, progress=None, table: list = ROWS) -> tuple[int, list[Problem]]:
    """Each row keeps the timer invariant: every armed timer's condition (table.TIMERS) holds.

    Which timers are armed before a row is free (fresh booleans), constrained only by
    the invariant itself; the timer that fires a timer row was armed and is gone when
    the row runs; the row's arm, cancel and cancel_all outputs, in order, give the
    timers armed after it.  A timer left armed where its condition fails is one the
    runtime fires and no row of its trigger covers (or covers as the wrong case)."""
    state, params = fresh_state(sizes), fresh_params(sizes)
    base = state_well_formed(state, sizes) + params_well_formed(params, sizes)
    base += [to_z3(inv.formula, SymEnv(sizes, state, params)) for inv in structural()]
    # a member's timer (its condition reads the trigger's timer_member) is one per member slot
    per_member = {k for k in TIMER_TRIGGERS if ("param", "timer_member") in _reads(timer_armed(k))}
    keys = [(k, i) for k in TIMER_TRIGGERS for i in (range(sizes[MEMBER]) if k in per_member else (None,))]
    read = {name for k in TIMER_TRIGGERS for op, name in _reads(timer_armed(k)) if op == "var"}

    def allowed(st: dict, k: str, i):
        ps = dict(params) if i is None else {**params, "timer_member": z3.IntVal(i)}
        return to_z3(timer_armed(k), SymEnv(sizes, st, ps))

    before = {key: z3.Bool(f"armed.{key[0]}.{key[1]}") for key in keys}
    invariant = [z3.Implies(before[key], allowed(state, *key)) for key in keys]
    # a fresh member id is one nothing uses yet: no member, no pending member, no timer
    invariant.append(to_z3(Not(P.fresh.in_(V.members) | P.fresh.in_(V.pending)), SymEnv(sizes, state, params)))
    invariant += [z3.Implies(params["fresh"] == i, z3.Not(before[(k, i)])) for (k, i) in keys if i is not None]
    problems, checks = [], 0
    if progress:
        progress("timers")
    for r in table:
        fired = [key for key in keys if TIMER_TRIGGERS[key[0]] == r.trigger]
        timing = any(isinstance(s, Out) and s.kind in ("arm", "cancel", "cancel_all") for s in r.steps)
        if not (fired or timing or any(isinstance(s, Set_) and read & set(s.updates) for s in r.steps)):
            continue     # the row neither fires, arms nor cancels a timer, nor changes what they depend on
        guard, post, outs = row_relation(r, state, params, sizes)
        armed, pre = dict(before), []
        if fired:
            # the timer that fires is one of the trigger's; it was armed, and it is gone now
            which = z3.Int("fired")
            hits = [z3.And(which == j, *([params["timer_member"] == i] if i is not None else []))
                    for j, (_, i) in enumerate(fired)]
            pre += [z3.Or(hits)] + [z3.Implies(h, before[key]) for h, key in zip(hits, fired)]
            armed.update({key: z3.And(before[key], z3.Not(h)) for h, key in zip(hits, fired)})
        for o in outs:
            for key in keys:
                if o.kind == "cancel_all":
                    armed[key] = z3.If(o.cond, z3.BoolVal(False), armed[key])
                elif o.kind in ("arm", "cancel") and o.timer == key[0]:
                    hit = o.cond if key[1] is None else z3.And(o.cond, o.member == key[1])
                    armed[key] = z3.If(hit, z3.BoolVal(o.kind == "arm"), armed[key])
        stray = {key: z3.And(armed[key], z3.Not(allowed(post, *key))) for key in keys}
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*base, *invariant, *pre, guard, to_z3(enabled(r.trigger), SymEnv(sizes, state, params)))
        checks += 1
        res = _check(solver, z3.Or(list(stray.values())))
        if res == z3.sat:
            m = solver._last_model
            left = [k + ("" if i is None else f" of m{i}") for (k, i), c in stray.items()
                    if z3.is_true(m.eval(c, model_completion=True))]
            problems.append(Problem("timers", r.trigger, [r.name],
                                    f"leaves armed a timer its condition does not allow: {', '.join(left)}",
                                    _witness(solver, state, params, sizes)))
        elif res == z3.unknown:
            problems.append(Problem("timers", r.trigger, [r.name], "Z3 gave up (timeout)"))
    return checks, problems


def _reads(t) -> set:
    """The (op, name) of every state variable and parameter term t reads."""
    return {(n.op, n.data) for n in walk(t) if n.op in ("var", "param")}


def lint_clients(sizes: dict, timeout_ms: int, client_rows: list | None = None) -> tuple[int, list[Problem]]:
    """The closed world's client rows (default the spec's): for each trigger, exclusive and
    reachable (a client's triggers are its choices, so they need not cover every state)."""
    from groupspec.spec.world import ALL_VARS, CLIENT, CLIENT_ROWS, WORLD_PARAMS
    wsizes = dict(sizes, **{CLIENT: 2})
    state = {v.name: fresh("w." + v.name, v.type, wsizes) for v in ALL_VARS}
    params = {"client": fresh("p.client", WORLD_PARAMS["client"], wsizes)}
    assume = [c for v in ALL_VARS for c in well_formed(state[v.name], v.type, wsizes)]
    assume += well_formed(params["client"], WORLD_PARAMS["client"], wsizes) + [params["client"] >= 0]
    env = SymEnv(wsizes, state, params)
    problems, checks = [], 0
    by_trigger: dict = {}
    for r in CLIENT_ROWS if client_rows is None else client_rows:
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


def check_moves(table: list = ROWS) -> list[Problem]:
    """Every row's state changes are legal; the lifecycle machine allows exactly the legal moves."""
    problems = []
    legal, kafka = legal_moves(), kafka_moves()
    for r in table:
        for mv in r.moves():
            if mv not in legal:
                problems.append(Problem("moves", r.trigger, [r.name], f"{mv[0]} -> {mv[1]} is not a legal move"))
            elif mv not in kafka and r.trigger not in CACHE_MOVE_TRIGGERS.get(mv, set()):
                problems.append(Problem("moves", r.trigger, [r.name],
                                        f"{mv[0]} -> {mv[1]} is a group-cache move, not one {r.trigger} makes"))
    made = {mv for r in table for mv in r.moves()}
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
