"""Spacer's counterexamples as paths of rows, replayed concretely.

When Spacer derives false from the Horn clauses (`chc.py`) with Inv over every variable, the
clauses it used, in order, are a path: the blank group, one step per clause (a row, or a row
and its append's completion), and the query that breaks the invariant.  Z3's fixedpoint
engine names them (`get_rule_names_along_trace`); the steps are then unrolled along that
sequence in the same fixed-size reading (one path's bounded model check: each step's
constants copied, the broker's configuration and the table's functions one for the whole
path, as they are in a world), and Z3's model is read back as concrete groups and
parameters.  Each row is then run by the concrete engine (`engine.run_row`, the explicit
checker's compiled rows) from the state the replay reached: the row must be the one of its
trigger whose guard holds there, must reach the state the model says, and the invariants are
checked after every row as the explicit checker checks them (`invariants.check_after_row`).
Where the coordinator's step ends in the eager re-check of a pending join (`handling.settle`)
and that re-check changes the group, the path's next step must be it.  A Load reads the
record the path's last stored append captured, as the log keeps it.

A path that does not replay is the clauses' over-approximation (a request the environment's
assumptions allow but the table's functions or the configuration change along the way, a
record the log never held), not a violation, and is reported as such.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import z3

from groupspec.spec import engine as E
from groupspec.spec.handling import EAGER, RECORD_FIELDS, record_of, recheck_params
from groupspec.spec.invariants import InvariantViolation, check_after_row
from groupspec.spec.lang import Type
from groupspec.spec.schema import PARAM_TYPES, PROTOCOL, STATE_VARS, TRIGGER_BY_NAME, GroupRecord
from groupspec.spec.table import completion

from .chc import Horn, Rule, _uninterpreted
from .describe import ModelValues, event_lines, shown_params, snapshot
from .obligations import WORK_PER_SECOND, rlimit


@dataclass
class PathStep:
    row: str              # the row, or "row → completion row"
    params: dict          # the request's parameters, as a reader sees them
    after: dict           # the group after the step (every variable)
    lines: list = field(default_factory=list)     # the step as scenario lines


@dataclass
class SpacerPath:
    """A path Spacer's derivation gave, and what its concrete replay found."""
    replayed: bool                    # every step ran concretely to the state the path says
    broken: str | None                # the invariant the replay found broken (None: none)
    detail: str
    steps: list[PathStep] = field(default_factory=list)

    def words(self) -> str:
        return "; ".join(f"{k}. {s.row} ({_kv(s.params) or 'no parameters'})" for k, s in enumerate(self.steps, 1))

    def scenario(self) -> str:
        lines = [f"# Spacer's path, replayed concretely: {self.detail}"]
        for s in self.steps:
            lines += s.lines + snapshot(s.after)
        return "\n".join(lines)

    def as_json(self) -> dict:
        return {"replayed": self.replayed, "broken": self.broken, "detail": self.detail,
                "steps": [{"row": s.row, "params": s.params, "after": s.after} for s in self.steps],
                "scenario": self.scenario()}


def derivation(h: Horn, seconds: float, seed: int = 0) -> list[Rule] | None:
    """The clauses of Spacer's derivation of false, from the initial one to the query (None when
    Z3's fixedpoint engine finds none in `seconds`: the HORN solver's answer gives no path)."""
    fp = z3.Fixedpoint()
    fp.set(engine="spacer")
    fp.set("xform.inline_eager", False)
    fp.set("spacer.random_seed", seed)
    fp.set("timeout", max(1, int(seconds * 1000)))
    err = z3.Function("Err", z3.BoolSort())
    fp.register_relation(h.inv, err)
    by_name = {r.name: r for r in h.rules}
    for r in h.rules:
        fp.add_rule(h.clause(r, err()), None, r.name)
    if fp.query(err) != z3.sat:
        return None
    names = [n for n in reversed(fp.get_rule_names_along_trace()) if n in by_name]
    return [by_name[n] for n in names]


class StepModel:
    """Z3's model of the unrolled path, read at one step: that step's copy of the constants."""

    def __init__(self, model, pairs: list):
        self.model, self.pairs = model, pairs

    def eval(self, e, model_completion: bool = True):
        return self.model.eval(z3.substitute(e, *self.pairs) if self.pairs else e, model_completion=model_completion)


def unroll(h: Horn, rules: list[Rule], work: int) -> list[StepModel] | str:
    """The path along `rules` (init, steps, query) as one query, each rule's constants copied
    (but the configuration's); a model read at each rule, or Z3's answer when there is none
    (unsat: the path needs the configuration or the table's functions to change along the way)."""
    config = {v.get_id() for n, v in h.system.shared.params.items() if n.startswith("cfg_")}
    s = z3.Solver()
    s.set("rlimit", rlimit(work))
    copies, before = [], None
    for t, r in enumerate(rules):
        parts = [*(r.pre or []), *r.facts, *(r.post or [])]
        consts, _ = _uninterpreted(parts, h.inv.name())
        pairs = [(c, z3.Const(f"{c}#{t}", c.sort())) for c in consts if c.get_id() not in config]
        sub = (lambda e: z3.substitute(e, *pairs)) if pairs else (lambda e: e)
        if r.pre is not None:
            s.add(*[sub(a) == b for a, b in zip(r.pre, before)])
        s.add(*[sub(f) for f in r.facts])
        before = [sub(a) for a in r.post] if r.post is not None else None
        copies.append(pairs)
    verdict = s.check()
    if verdict != z3.sat:
        return str(verdict) if verdict == z3.unsat else f"unknown ({s.reason_unknown()})"
    m = s.model()
    return [StepModel(m, pairs) for pairs in copies]


def concrete(m, v, t: Type, sizes: dict):
    """A fixed-size symbolic value read in model `m` as the concrete engine's value."""
    if t.kind == "record":
        return tuple(concrete(m, x, ft, sizes) for x, ft in zip(v, t.args))
    if t.kind == "map":
        return tuple(concrete(m, x, t.value, sizes) for x in v)
    if t.kind == "bool":
        return z3.is_true(m.eval(v, model_completion=True))
    return m.eval(v, model_completion=True).as_long()


def functions(m, params: dict, sizes: dict) -> dict:
    """The table's functions (the vote, protocol names) as the model has them."""
    names, vote = params["proto_names"], params["vote"]
    w = sizes[PROTOCOL]
    return {"proto_names": lambda pl: m.eval(names(z3.IntVal(pl)), model_completion=True).as_long(),
            "vote": lambda pl, cands: m.eval(vote(z3.IntVal(pl), z3.BitVecVal(cands, w)),
                                             model_completion=True).as_long()}


def run(m, row, tag: str, state: tuple, values: dict):
    """The outcome of `row` run concretely from `state`, with the choices model `m` made for it
    (None when the concrete row makes none of them)."""
    outcomes = E.run_row(E.CompiledRow(row, lazy=False), state, E.make_params(values))
    for o in outcomes:
        if all(m.eval(z3.Int(f"choice_{k}{tag}"), model_completion=True).as_long() == v for k, v in o.choices.items()):
            return o
    return None


class Replay:
    """A path of Horn rules run concretely, step by step."""

    def __init__(self, h: Horn, rows: list):
        self.h, self.system = h, h.system
        self.sizes = self.system.rd.sizes
        self.engine = E.Engine(rows)
        self.record = None

    def __call__(self, rules: list[Rule], models: list[StepModel]) -> SpacerPath:
        m0 = models[0]
        state = tuple(concrete(m0, self.system.rd.blank_state()[v.name], v.type, self.sizes) for v in STATE_VARS)
        self.record = concrete(m0, self.system.rd.blank_record(), GroupRecord, self.sizes)
        steps: list[PathStep] = []
        self.due = None
        for r, m in zip(rules, models):
            if r.step is None:
                continue
            c = self.system.row(r.step)
            if self.due is not None and not self.eager_taken(c, m):
                return SpacerPath(False, None, f"after step {len(steps)} the coordinator's eager re-check fires "
                                  f"{self.due[0]!r} (handling.settle); the path takes {c.name!r} instead", steps)
            try:
                state, why = self.step(r, c, m, state)
            except InvariantViolation as e:
                steps.append(self.shown(c, m, c.post))
                return SpacerPath(True, e.invariant.name, f"step {len(steps)} ({c.name}) breaks "
                                  f"{e.invariant.name}", steps)
            if why:
                return SpacerPath(False, None, f"step {len(steps) + 1} ({c.name}) does not replay: {why}", steps)
            steps.append(self.shown(c, m, c.post))
        return SpacerPath(True, None, "every step replays, and no invariant breaks on it", steps)

    def step(self, r: Rule, c, m: StepModel, state: tuple) -> tuple[tuple, str]:
        """The state after step `c` run concretely from `state`, or why it cannot be."""
        first = c.spec[0]
        values = {n: concrete(m, c.params[n], t, self.sizes) for n, t in PARAM_TYPES.items() if t.kind != "fun"}
        values.update(functions(m, c.params, self.sizes))
        if "record" in TRIGGER_BY_NAME[first.trigger].params:
            values["record"] = self.record
        after, outs, why = self.fire(first, f"@{c.i}", m, state, values)
        if why:
            return state, why
        self.due = self.eager(first, after, values)
        if len(c.spec) == 3:
            if self.due is not None:
                return state, f"the eager re-check fires {self.due[0]!r} before the append completes"
            _, k, done = c.spec
            o = [x for x in outs if x.kind == "append"][k]
            trig, mapped = completion(o.api, o.fields)
            values = {**values, **mapped, "error": concrete(m, c.shared.error, PARAM_TYPES["error"], self.sizes)}
            after, _, why = self.fire(done, f"@{c.i}b", m, after, values)
            if why:
                return state, why
            self.due = self.eager(done, after, values)
        want = tuple(concrete(m, c.post[v.name], v.type, self.sizes) for v in STATE_VARS)
        if after != want:
            diff = [v.name for v, a, b in zip(STATE_VARS, after, want) if a != b]
            return state, f"the concrete row leaves {', '.join(diff)} other than the clauses say"
        if r.stores is not None:
            self.stored(c, m, outs, r.stores)
        return after, ""

    def eager(self, after, state: tuple, values: dict) -> tuple[str, dict] | None:
        """The row of the eager rule (handling.settle: in PreparingRebalance, CompleteJoin with
        `recheck_params`) that changes the group after row `after`, with its parameters; None when
        it changes nothing there (a path's next step must be it, as the coordinator's step ends in it)."""
        if state[E.STATE_I] != EAGER.state or after.name in EAGER.skip_after or after.trigger == EAGER.trigger:
            return None
        params = {**values, **recheck_params(after)}
        cr = self.engine.select(state, EAGER.trigger, E.make_params(params))
        if cr is None or all(o.state == state for o in E.run_row(cr, state, E.make_params(params))):
            return None
        return cr.row.name, recheck_params(after)

    def eager_taken(self, c, m: StepModel) -> bool:
        """Step `c` is the eager re-check that was due, with its parameters."""
        name, params = self.due
        return c.spec[0].name == name and all(
            concrete(m, c.params[k], PARAM_TYPES[k], self.sizes) == v for k, v in params.items())

    def fire(self, row, tag: str, m: StepModel, state: tuple, values: dict) -> tuple[tuple, list, str]:
        applies = self.engine.enabled(state, row.trigger, E.make_params(values))
        if [cr.row.name for cr in applies] != [row.name]:
            return state, [], (f"in that state {row.trigger} fires {[cr.row.name for cr in applies] or 'no row'}, "
                               f"not {row.name!r}")
        row = applies[0].row        # the replayed table's row of that name
        o = run(m, row, tag, state, values)
        if o is None:
            return state, [], f"the concrete row {row.name!r} makes none of the choices the path made"
        check_after_row(state, o.state, E.make_params({**values, **{f"choice:{k}": v for k, v in o.choices.items()}}),
                        o.outputs, where=f"by row {row.name!r}")
        return o.state, o.outputs, ""

    def stored(self, c, m: StepModel, outs: list, k: int) -> None:
        """The log keeps what the k-th group-record append of the step captured (`handling.RECORD`,
        each member's protocols cut by the model's `selected_only`, one for the whole path)."""
        fields = [o.fields for o in outs if o.kind == "append" and o.api != "offsets"][k]
        sel = self.system.shared.selected_only
        cut = lambda pl, proto: m.eval(sel(z3.IntVal(pl), z3.IntVal(proto)), model_completion=True).as_long()  # noqa: E731
        rec = record_of(fields, cut)
        self.record = tuple(rec[f] if f in RECORD_FIELDS else fields.get(f, self.record[i])
                            for i, f in enumerate(GroupRecord.values))

    def shown(self, c, m: StepModel, post: dict) -> PathStep:
        mv = ModelValues(m, self.system.rd)
        params = shown_params(mv, c)
        after = {v.name: mv.value(post[v.name], v.type) for v in STATE_VARS}
        lines = event_lines(c.spec[0], params)
        if len(c.spec) == 3:     # the append's completion
            lines += event_lines(c.row, {"error": mv.value(c.shared.error, PARAM_TYPES["error"])})
        return PathStep(c.name, params, after, lines)


def _kv(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


def spacer_path(h: Horn, rows: list, seconds: float, seed: int = 0) -> SpacerPath:
    """Spacer's derivation of false in `h` as a path of rows, replayed concretely."""
    rules = derivation(h, seconds, seed)
    if rules is None:
        return SpacerPath(False, None, f"Z3's fixedpoint engine gave no derivation within {seconds:g} s")
    models = unroll(h, rules, int(seconds * WORK_PER_SECOND))
    if models == "unsat":
        return SpacerPath(False, None, f"the derivation's {len(rules) - 2} steps have no common model with one "
                          "configuration and one vote, protocol naming and record cut for the whole path")
    if isinstance(models, str):
        return SpacerPath(False, None, f"Z3 gave up on the derivation's {len(rules) - 2} steps: {models}")
    return Replay(h, rows)(rules, models)
