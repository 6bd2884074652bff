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

And for the structural invariants themselves: every check above assumes
them of the state before a row, which is sound only if no row can lead out
of them, so lint proves that too:

  preserves   every row keeps every structural invariant: if they held
              before it and its guard held, they hold after its steps
              (given what the drivers guarantee about the row's
              parameters, PARAM_FACTS).

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
from groupspec.spec.lang import ForAll, Implies, Not, Or, lift, walk
from groupspec.spec.rows import Out, Set_
from groupspec.spec.schema import MEMBER, AppendKind, P, STATES, V, TRIGGERS, kafka_moves, legal_moves
from groupspec.spec.symbolic import (SymEnv, default_sizes, fresh, fresh_params, fresh_state, in_states,
                                     params_well_formed, row_relation, state_well_formed, to_z3, well_formed)
from groupspec.spec.table import ROWS, TIMER_TRIGGERS, enabled, timer_armed

_REC = P.record
# What the drivers guarantee about a row's parameters, and the table (as Kafka's code) relies on:
# lint assumes these when it proves what a row keeps.
PARAM_FACTS = (
    (P.fresh.is_some() & Not(P.fresh.in_(V.members | V.pending | V.pending_sync)),
     "a new member id is one the group has never used (GM.generateMemberId: clientId-UUID)"),
    (P.member.is_none() | P.member.in_(V.members | V.pending),
     "`member` is the request's member id only if the group knows it (a member or a pending member)"),
    (Implies(P.member_empty, P.member.is_none()),
     "a request without a member id names no member (spec/world.py WHO, impl/coordinator.py `_who`)"),
    (Implies(P.append_kind == lift("static_replace", AppendKind),
             P.append_old.is_some() & Not(P.append_old.in_(V.members | V.pending))),
     "the id a static member's replacement replaced is never the group's again (ids are never reused)"),
    (Implies(_REC["members"].is_empty(), _REC["leader"].is_none())
     & Implies(Not(_REC["members"].is_empty()), _REC["leader"].in_(_REC["members"]))
     & ForAll(_REC["members"], lambda a: ForAll(_REC["members"], lambda b: Or(
         a == b, _REC["instance_of"][a].is_none(), Not(_REC["instance_of"][a] == _REC["instance_of"][b]))))
     & _REC["instance_of"].keys_where(lambda x: x.is_some()).subset_of(_REC["members"]),
     "a record to load is what GMM.storeGroup wrote of a group that met the structural invariants: its "
     "leader is a member, and only its members carry a group.instance.id, no two the same"),
)

# Which triggers may make the cache moves (create, load, drop a group).  A write's completion drops a group
# only in the Java coordinator: its failed write of a group it created is reverted (the group is undone).
CACHE_MOVE_TRIGGERS = {
    ("Absent", "Empty"): {"JoinGroup", "OffsetCommit", "Load"},
    ("Absent", "Stable"): {"Load"},
    ("Dead", "Absent"): {"Unload", "DeleteGroup", "ExpireOffsets", "StoreGroupDone", "StoreOffsetsDone"},
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
    triggers: list | None = None    # the triggers linted, when not all (`lint(triggers=...)`)

    def as_json(self) -> dict:
        return {"result": "ok" if not self.problems else "problems", "checks": self.checks,
                "seconds": round(self.seconds, 2), "bounds": self.sizes, "rows": self.rows,
                "triggers": self.triggers, "problems": [p.as_json() for p in self.problems]}


def lint(sizes: dict | None = None, timeout_ms: int = 20_000, progress=None, table: list = ROWS,
         client_rows: list | None = None, triggers: set[str] | None = None) -> LintResult:
    """Every check below, of the coordinator's rows `table` and the clients' `client_rows`; with
    `triggers`, of those triggers' rows only (each check is of one trigger's rows or of one row, so
    what the others would say does not change; the clients' rows are not linted then).  The
    lifecycle's moves are checked over the whole table either way: it is one pass, no Z3."""
    sizes = sizes or default_sizes()
    start = time.perf_counter()
    problems = check_moves(table)
    checks = 1
    if triggers is not None:
        table = [r for r in table if r.trigger in triggers]
    shared = Relations(sizes)
    state, params = shared.state, shared.params
    assume = shared.assumed()
    env = SymEnv(sizes, state, params)
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
    c1, p1 = check_timers(sizes, timeout_ms, progress, table, shared)
    c2, p2 = lint_clients(sizes, timeout_ms, client_rows) if triggers is None else (0, [])
    c3, p3 = check_preserved(sizes, timeout_ms, progress, shared, table)
    return LintResult(problems + p1 + p2 + p3, checks + c1 + c2 + c3, time.perf_counter() - start, sizes,
                      len(table), None if triggers is None else sorted(triggers))


class Relations:
    """Fresh symbolic state and parameters, what every check assumes of them, and each row's
    relation over them, translated once: translating into Z3 is most of lint's time, and the
    checks need most rows alike."""

    def __init__(self, sizes: dict):
        self.sizes = sizes
        self.state, self.params = fresh_state(sizes), fresh_params(sizes)
        self._done: dict = {}
        self._assumed: list | None = None

    def assumed(self) -> list:
        """Well-formed state and parameters, and the structural invariants of the state."""
        if self._assumed is None:
            env = SymEnv(self.sizes, self.state, self.params)
            self._assumed = (state_well_formed(self.state, self.sizes) + params_well_formed(self.params, self.sizes)
                             + [to_z3(inv.formula, env) for inv in structural()])
        return self._assumed

    def of(self, r):
        """(guard, post-state, outputs) of row r (symbolic.row_relation)."""
        got = self._done.get(id(r))
        if got is None:      # the row is kept with its relation, so that its id is not reused
            got = self._done[id(r)] = (r, row_relation(r, self.state, self.params, self.sizes))
        return got[1]


def check_preserved(sizes: dict, timeout_ms: int, progress=None, relations: Relations | None = None,
                    table: list = ROWS) -> tuple[int, list[Problem]]:
    """Each row keeps the structural invariants: assumed before it (with its guard and
    PARAM_FACTS), each holds after its steps.  Rows that write nothing an invariant reads keep
    it trivially and are not asked."""
    relations = relations or Relations(sizes)
    state, params = relations.state, relations.params
    env = SymEnv(sizes, state, params)
    # The invariants are translated once, over a second state that each query equates with the
    # row's post-state (translating them anew over every row's post-state took most of the time).
    after_state = fresh_state(sizes, prefix="after.")
    invariants = [(inv, {name for op, name in _reads(inv.formula) if op == "var"},
                   to_z3(inv.formula, SymEnv(sizes, after_state, params))) for inv in structural()]
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*relations.assumed(), *[to_z3(f, env) for f, _ in PARAM_FACTS])
    problems, checks = [], 0
    if progress:
        progress("structure")
    for r in table:
        written = {k for st in r.steps if isinstance(st, Set_) for k in st.updates} | ({"state"} if r.target else set())
        touched = [(inv, read, f) for inv, read, f in invariants if read & written]
        if not touched:
            continue
        guard, post, _ = relations.of(r)
        same = [_equal(after_state[v], post[v]) for v in sorted(set().union(*(read for _, read, _ in touched)))]
        checks += 1
        res = _check(solver, z3.And(guard, to_z3(enabled(r.trigger), env), *same,
                                    z3.Or([z3.Not(f) for _, _, f in touched])))
        if res == z3.sat:
            m = solver._last_model
            broken = [inv.name for inv, _, f in touched if z3.is_false(m.eval(f, model_completion=True))]
            problems.append(Problem("preserves", r.trigger, [r.name], f"breaks {', '.join(broken)}",
                                    _witness(solver, state, params, sizes, after=post)))
        elif res == z3.unknown:
            problems.append(Problem("preserves", r.trigger, [r.name], "Z3 gave up (timeout)"))
    return checks, problems


def _equal(a, b):
    """Two symbolic values of one type are equal (a map's entries one by one)."""
    if isinstance(a, list):
        return z3.And([_equal(x, y) for x, y in zip(a, b)])
    return a == b


def check_timers(sizes: dict, timeout_ms: int, progress=None, table: list = ROWS,
                 relations: Relations | None = None) -> tuple[int, list[Problem]]:
    """Each row keeps the timer invariant: every armed timer's condition (table.TIMERS) holds.

    Which timers are armed before a row is free (fresh booleans), constrained only by
    the invariant itself; the timer that fires a timer row was armed and is gone when
    the row runs; the row's arm, cancel and cancel_all outputs, in order, give the
    timers armed after it.  A timer left armed where its condition fails is one the
    runtime fires and no row of its trigger covers (or covers as the wrong case)."""
    relations = relations or Relations(sizes)
    state, params = relations.state, relations.params
    base = relations.assumed()
    # a member's timer (its condition reads the trigger's timer_member) is one per member slot
    per_member = {k for k in TIMER_TRIGGERS if ("param", "timer_member") in _reads(timer_armed(k))}
    keys = [(k, i) for k in TIMER_TRIGGERS for i in (range(sizes[MEMBER]) if k in per_member else (None,))]
    read = {name for k in TIMER_TRIGGERS for op, name in _reads(timer_armed(k)) if op == "var"}

    def allowed(st: dict, k: str, i):
        ps = dict(params) if i is None else {**params, "timer_member": z3.IntVal(i)}
        return to_z3(timer_armed(k), SymEnv(sizes, st, ps))

    before = {key: z3.Bool(f"armed.{key[0]}.{key[1]}") for key in keys}
    invariant = [z3.Implies(before[key], allowed(state, *key)) for key in keys]
    # a fresh member id is one nothing uses yet (PARAM_FACTS), so no timer of it is armed
    invariant.append(to_z3(PARAM_FACTS[0][0], SymEnv(sizes, state, params)))
    invariant += [z3.Implies(params["fresh"] == i, z3.Not(before[(k, i)])) for (k, i) in keys if i is not None]
    problems, checks = [], 0
    if progress:
        progress("timers")
    for r in table:
        fired = [key for key in keys if TIMER_TRIGGERS[key[0]] == r.trigger]
        timing = any(isinstance(s, Out) and s.kind in ("arm", "cancel", "cancel_all") for s in r.steps)
        if not (fired or timing or any(isinstance(s, Set_) and read & set(s.updates) for s in r.steps)):
            continue     # the row neither fires, arms nor cancels a timer, nor changes what they depend on
        guard, post, outs = relations.of(r)
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


_SHOWN = ("generation", "members", "pending", "awaiting_join", "awaiting_sync", "leader", "join_timer")


def _witness(solver, state: dict, params: dict, sizes, after: dict | None = None) -> dict:
    """The state and parameters Z3 found; with `after`, also the values a row's steps changed."""
    m = getattr(solver, "_last_model", None)
    if m is None:
        return {}

    def shown(st: dict) -> dict:
        got = {"state": STATES[m.eval(st["state"], model_completion=True).as_long()]}
        got.update({k: str(m.eval(st[k], model_completion=True)) for k in _SHOWN})
        return got
    out = shown(state)
    for k in ("coord", "member", "member_empty", "instance", "generation", "timer_member"):
        if k in params and not isinstance(params[k], list):
            out["param." + k] = str(m.eval(params[k], model_completion=True))
    if after is not None:
        out.update({"after." + k: v for k, v in shown(after).items() if v != out[k]})
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
