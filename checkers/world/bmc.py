"""Bounded model checking of the closed world with Z3.

The world step is not written again here.  It is spec/world_step.py's Next,
the one the explicit checker runs, with `SymbolicWorld` as its host, over Z3
values (spec/symbolic.py gives terms their symbolic meaning):

- a client's move: its rows (spec/world.py CLIENT_ROWS) as Z3 relations;
- a condition of the step (a delivery's kind, an armed timer, the failover's,
  the bounds) splits the path in two, each under its condition;
- a coordinator step is `handling.handle` itself: every row of a trigger is
  followed under its guard (and the branch where none fires), a route's
  effect (ROUTE_EFFECTS) is applied under the output's condition, a write's
  completion row fires in each way the write may end (append_errors), and the
  eager re-check splits on whether the group is in PreparingRebalance;
- a step a bound cuts is kept only for what it broke on its way.

The step thus yields, for each action, a set of paths, each a path condition,
a post-state and the invariants broken on the way (after every row, as the
explicit checker checks them).  The step relation (`StepRelation`) is built
once over template variables; depth k+1 is a fresh copy of the world's
variables equal to the post-state of some path from depth k (a Boolean per
path says it is taken).  `bmc_search.bmc(cfg, K)` asks, depth by depth (incrementally, by default with
push/pop), for a state that breaks a state invariant of the catalog or of the
closed world; a model is read back into concrete states and replayed through
the explicit checker's world model, and a trace that does not replay is
reported as a disagreement between the two interpretations.  `reachable(cfg,
K)` enumerates the states of each depth, to hold them to the explicit
search's.

Step and output invariants (which compare a row's state before and after, or
judge its outputs) are checked by the explicit search only.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import z3
from z3.z3 import _to_expr_ref

from groupspec.spec.handling import EAGER, REC, RECORD_FIELDS, Eager
from groupspec.spec.invariants import INVARIANTS, InvariantViolation
from groupspec.spec.lang import NONE, Dom
from groupspec.spec.rows import ECHO
from groupspec.spec.schema import MEMBER, PARAM_TYPES, PARTITION, PROTOCOL, TRIGGER_BY_NAME
from groupspec.spec.symbolic import (SymEnv, SymOutput, concrete_to_z3, fresh, in_states, row_relation,
                                     to_z3, well_formed)
from groupspec.spec.table import rows_for
from groupspec.spec.world import (WORLD_COORDINATOR, ALL_VARS, CLIENT, CLIENT_ROWS, ISSUED, MAX_GENERATION, OUT, REQ,
                                  ROUTE_EFFECTS, WORLD_INVARIANT_PARAMS, append_errors)
from groupspec.spec.world_step import disjuncts, instance_of, step as world_step, takes

from groupspec.spec.z3_fast import Sub, conj, disj, eq, ite
from .state_space import SKIPPED_OUTPUTS, WorldModel, world_invariants
from .presets import WorldConfig

# How many eager re-checks one step may enter (each may re-enter after a row that stays in
# PreparingRebalance): symbolically the nesting has no end, concretely a step enters at most
# two.  A path that would enter one more, with a row of it enabled, is reported (BOUND_BROKEN):
# the bound is checked, never assumed.
EAGER_LIMIT = 4
BOUND_BROKEN = "(bmc: the eager re-check nests deeper than its bound)"


@dataclass
class _NoRow:
    """The branch of a trigger where no row fires (handling.Host.outcomes)."""
    guard: object
    row: None = None
    outputs: tuple = ()


@dataclass
class _SymOutcome:
    row: object
    guard: object
    state: dict
    outputs: list


@dataclass
class Path:
    """One way a step may go: its condition, the world after it, the invariants it breaks on
    the way (name, condition) and the rows it fires."""
    state: dict
    pc: list = field(default_factory=list)
    bad: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    sender: int = NONE
    echo: object = NONE
    label: str = ""
    eager: int = 0           # eager re-checks entered on this path (EAGER_LIMIT)

    def copy(self) -> "Path":
        return Path(dict(self.state), list(self.pc), list(self.bad), list(self.rows), self.sender, self.echo,
                    self.label, self.eager)


class SymbolicWorld:
    """The closed world of `cfg`, symbolically: the host of spec/handling.py over Z3 values."""

    def __init__(self, cfg: WorldConfig, rows: list | None = None, eager: Eager = EAGER):
        """`eager`: the re-check after every row (spec/handling.py; another one plants a bug, as
        the world model takes one)."""
        self.cfg = cfg
        self.eager = eager
        self.sizes = cfg.sizes()
        self.model = WorldModel(cfg, rows, eager)        # the concrete world: initial state, replay
        self.rows = {}
        for r in rows_for(WORLD_COORDINATOR, rows):
            self.rows.setdefault(r.trigger, []).append(r)
        self.client_rows = {}
        for r in CLIENT_ROWS:
            self.client_rows.setdefault(r.trigger, []).append(r)
        self.base = self._base_params()
        self._ids = itertools.count()
        # Every row, route effect and invariant is translated to Z3 once, over template
        # variables, and instantiated on a path's state by substitution (in Z3, not Python).
        self.T = {v.name: fresh("t." + v.name, v.type, self.sizes) for v in ALL_VARS}
        self._tleaves = [(n, _leaves(t)) for n, t in self.T.items()]
        self.TP = {n: fresh("tp." + n, t, self.sizes) for n, t in PARAM_TYPES.items() if t.kind != "fun"}
        self.TE = {n: fresh("te." + n, t, self.sizes) for n, t in _ROUTE_PARAM_TYPES.items()}
        self._rows_tpl: dict = {}
        self.choice_size: dict = {}       # a row's choice (`choice_<name>`): the size of its domain
        self._choice_of: dict = {}        # a step's choice (`choice#<i>`): the row's choice it renames
        self._effects_tpl: dict = {}
        tenv = self._env(self.T, {})
        self.row_invariants = [(i.name, z3.Not(to_z3(i.formula, tenv))) for i in INVARIANTS
                               if i.kind == "state" and i.scope == "coordinator" and not i.settled]
        self.state_invariants = [i for i in INVARIANTS if i.kind == "state"]
        self.world_invariants = world_invariants(cfg)

    # -- parameters every trigger gets (the world model's base, as Z3 values) ----------------

    @property
    def base_values(self) -> dict:
        """The base parameters that have template variables (all but the functions)."""
        return {k: v for k, v in self.base.items() if k in self.TP}

    def _base_params(self) -> dict:
        m = self.model
        out = {}
        for k, v in m.base.items():
            if callable(v):
                continue
            out[k] = z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v)
        width_p = max(1, self.sizes[PROTOCOL])
        out["proto_names"] = lambda pl: z3.If(pl != NONE, z3.BitVecVal(1, width_p), z3.BitVecVal(0, width_p))
        # the world's one protocol list holds protocol 0: a member votes for it if it is a candidate
        out["vote"] = lambda pl, c: z3.If(z3.And(pl != NONE, z3.Extract(0, 0, c) == 1), z3.IntVal(0),
                                          z3.IntVal(NONE))
        out["assign"] = self._assign
        out["selected_only"] = lambda pl, proto: pl
        out[MAX_GENERATION.data] = z3.IntVal(self.cfg.max_generation)
        return out

    def _assign(self, members):
        """The leader's assignor (Range over the member list), as a lookup on the member set."""
        n, width = self.sizes[MEMBER], max(1, self.sizes[PARTITION])
        table = [self.model.assign(mask) for mask in range(1 << n)]
        out = []
        for slot in range(n):
            v = z3.BitVecVal(0, width)
            for mask in range(1 << n):
                v = z3.If(members == mask, z3.BitVecVal(table[mask][slot], width), v)
            out.append(v)
        return out

    def _env(self, state: dict, params: dict) -> SymEnv:
        return SymEnv(self.sizes, state, {**self.base, **params})

    # -- the host of spec/handling.py --------------------------------------------------------

    def _row(self, r):
        """Row r over the template state and parameters: (guard, what it writes, outputs, choices)."""
        got = self._rows_tpl.get(id(r))
        if got is None:
            # row_relation declares each choice (as `choice_<name>`) with its constraint: an element
            # of its set, or none if the set is empty; each use renames them apart
            doms = _choices(r)
            choices = {name: z3.Int(f"choice_{name}") for name in doms}
            guard, post, outs = row_relation(r, self.T, {**self.base, **self.TP}, self.sizes)
            self._check_choice_ranges(r, guard, {choices[n]: self.sizes[d] for n, d in doms.items()})
            # whether the row applies, without its choices' constraints (the branch where no row
            # applies must not be had by choosing a value outside a choice's set)
            applies = z3.And(in_states(r, self.T), to_z3(r.guard, self._env(self.T, self.TP)))
            written = {k: v for k, v in post.items() if v is not self.T[k]}
            outs = [o for o in outs if o.kind not in SKIPPED_OUTPUTS]
            got = self._rows_tpl[id(r)] = (guard, applies, written, outs, list(choices.values()))
        return got

    def _check_choice_ranges(self, r, guard, sizes: dict) -> None:
        """A choice is an element of its set or none: where its row fires, it lies in [-1, n) of
        its domain of n values, which a bit encoding of it (bmc_sat.py) relies on.  Checked here,
        once per row, rather than assumed."""
        for c, n in sizes.items():
            s = z3.Solver()
            s.add(guard, z3.Or(c < NONE, c >= n))
            if s.check() != z3.unsat:
                raise AssertionError(f"row {r.name!r}: its choice {c} may lie outside [{NONE}, {n})")
            self.choice_size[str(c)] = n

    def choice_bound(self, c) -> list:
        """The range of a choice variable of the step (`choice#<i>`), as constraints."""
        return [c >= NONE, c < self.choice_size[self._choice_of[str(c)]]]

    def _pairs(self, state: dict, tparams: dict, params: dict) -> list:
        """(template leaf, its value) for the variables of `state` and the `params` of `tparams`."""
        pairs = []
        for n, tl in self._tleaves:
            v = state[n]
            if v is not self.T[n]:
                pairs += [(a, b) for a, b in zip(tl, _leaves(v)) if a is not b]
        for n, v in params.items():
            t = tparams.get(n)
            if t is not None:
                pairs += list(zip(_leaves(t), _leaves(v)))
        return pairs

    def outcomes(self, p: Path, trigger: str, params: dict) -> list:
        given = {k: self._param(k, v) for k, v in params.items()}
        res, guards = [], []
        pairs = None
        for r in self.rows.get(trigger, ()):
            if z3.is_false(z3.simplify(in_states(r, p.state))):
                continue         # the group is in none of the row's states on this path
            tguard, tapplies, twritten, touts, tchoices = self._row(r)
            if pairs is None:
                pairs = self._pairs(p.state, self.TP, {**self.base_values, **given})
            fresh_choices = [(c, z3.Int(f"choice#{next(self._ids)}")) for c in tchoices]
            self._choice_of.update((str(v), str(c)) for c, v in fresh_choices)
            sub = Sub(pairs + fresh_choices)
            fields = [{k: v for k, v in o.fields.items() if v is not ECHO and isinstance(v, (z3.ExprRef, list, tuple))}
                      for o in touts]
            guard, applies, post, conds, members, fields = sub.tree(
                (tguard, tapplies, twritten, [o.cond for o in touts], [o.member for o in touts], fields))
            guards.append(applies)
            if z3.is_false(z3.simplify(guard)):
                continue         # false with what the step fixes (a completion's kind, the coordinator)
            outs = [SymOutput(o.kind, o.api, cond, member, {**o.fields, **f}, o.timer)
                    for o, cond, member, f in zip(touts, conds, members, fields)]
            res.append(_SymOutcome(r, guard, post, outs))
        if not TRIGGER_BY_NAME[trigger].total:
            res.append(_NoRow(z3.Not(z3.Or(guards)) if guards else z3.BoolVal(True)))
        return res

    def _param(self, name: str, v):
        """A trigger parameter as a Z3 value (a concrete one in the type's encoding)."""
        if isinstance(v, (z3.ExprRef, list)) or (isinstance(v, tuple) and v and isinstance(v[0], z3.ExprRef)):
            return v
        return concrete_to_z3(v, PARAM_TYPES[name], self.sizes)

    def fork(self, p: Path) -> Path:
        return p.copy()

    def enter(self, p: Path, o, params: dict) -> None:
        p.pc.append(o.guard)
        if o.row is None:
            return
        p.state = {**p.state, **o.state}
        p.rows.append(o.row.name)
        sub = Sub(self._pairs(p.state, {}, {}))
        pc = conj(p.pc)
        for (name, _), broken in zip(self.row_invariants, sub.many([b for _, b in self.row_invariants])):
            p.bad.append((name, conj([pc, broken])))

    def route(self, p: Path, out) -> None:
        self._effect(p, ROUTE_EFFECTS[(out.kind, out.api)], out.cond, out.fields,
                     out.member if out.kind == "answer" else p.echo, out.member)

    def append(self, p: Path, out) -> list:
        if not z3.is_true(z3.simplify(out.cond)):
            raise NotImplementedError(f"a conditional append ({out.api}): the symbolic world writes appends "
                                      f"unconditionally")
        errors = append_errors(out.api, self.cfg)
        res = []
        for error in errors:
            q = p if error == errors[-1] else p.copy()
            if error == "NONE":
                self._effect(q, ROUTE_EFFECTS[("append", out.api)], out.cond, out.fields, NONE, NONE)
            res.append((q, error))
        return res

    def tombstones(self, p: Path, outs: list) -> None:
        stones = [o.cond for o in outs if o.kind == "tombstone"]
        if stones:
            self._effect(p, ROUTE_EFFECTS[("tombstone", "")], z3.Or(stones), {}, NONE, NONE)

    def routed(self, p: Path, trigger: str) -> None:
        self._effect(p, ISSUED, z3.BoolVal(True), {}, NONE, NONE)

    def in_state(self, p: Path, state: int) -> list:
        inside = z3.simplify(p.state["state"] == state)
        if z3.is_false(inside):
            return [(p, False)]
        if p.eager >= EAGER_LIMIT:
            sub = Sub(self._pairs(p.state, self.TP, self.base_values))
            enabled = [sub(self._row(r)[1]) for r in self.rows[self.eager.trigger]]
            p.bad.append((BOUND_BROKEN, z3.And(*p.pc, inside, z3.Or(enabled))))
            p.pc.append(z3.Not(z3.And(inside, z3.Or(enabled))))
            return [(p, False)]
        if z3.is_true(inside):
            p.eager += 1
            return [(p, True)]
        q = p.copy()
        p.pc.append(inside)
        p.state = {**p.state, "state": z3.IntVal(state)}     # on this branch it is
        p.eager += 1
        q.pc.append(z3.Not(inside))
        return [(p, True), (q, False)]

    def _effect(self, p: Path, effect, cond, fields: dict, echo, member, client=None) -> None:
        got = self._effects_tpl.get(id(effect))
        if got is None:
            env = self._env(self.T, self.TE)
            got = self._effects_tpl[id(effect)] = (to_z3(effect.when, env),
                                                   {v: to_z3(t, env) for v, t in effect.updates.items()})
        twhen, tnew = got
        params = {"sender": z3.IntVal(p.sender), "at": _z3(NONE if member is None else member)}
        if client is not None:
            params["client"] = z3.IntVal(client)
        for k, v in fields.items():
            if "out." + k in _OUT_NAMES:
                params["out." + k] = _z3(echo) if v is ECHO else v
            if k in RECORD_FIELDS:
                params["rec." + k] = v
        sub = Sub(self._pairs(p.state, self.TE, params))
        when, new = sub.tree((twhen, tnew))
        when = conj([cond, when])
        p.state = {**p.state, **{v: _ite_all(when, x, p.state[v]) for v, x in new.items()}}

    # -- the host of spec/world_step.py: a world step over Z3 values ------------------------------

    def step(self, s: dict) -> list[Path]:
        """Every path of one world step from symbolic state `s` (spec/world_step.py's Next).  What a
        path a bound cut broke on its way is kept in `cut_bad`: it is reported as the explicit checker
        reports it, though the path is no step."""
        paths: list[Path] = []
        self.cut_bad: list = []
        self.cut_paths: list[Path] = []
        for d in disjuncts(self.cfg):
            if d.over == "client":
                args = [c for c in range(self.cfg.clients) if takes(d, self.cfg, c)]
            else:
                args = range(self.sizes[MEMBER]) if d.over == "member" else [None]
            for arg in args:
                paths += world_step(self, Path(dict(s)), d, arg)
        return paths

    def _z3_params(self, params: dict) -> dict:
        return {k: (z3.IntVal(v) if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in params.items()}

    def split(self, p: Path, cond, params: dict) -> list:
        v = z3.simplify(self.value(p, cond, params))
        if z3.is_true(v):
            return [(p, True)]
        if z3.is_false(v):
            return [(p, False)]
        q = p.copy()
        p.pc.append(v)
        q.pc.append(z3.Not(v))
        return [(p, True), (q, False)]

    def value(self, p: Path, term, params: dict):
        return to_z3(term, self._env(p.state, self._z3_params(params)))

    def effect(self, p: Path, effect, params: dict) -> None:
        self._effect(p, effect, z3.BoolVal(True), {}, NONE, NONE, client=params.get("client"))

    def request(self, p: Path, slot, c: int, what: str) -> tuple[dict, object]:
        req = {t.data: p.state[v][c] for t, v in zip(REQ.values(), slot.vars[1:])}
        inst = instance_of(self.cfg, c)
        req["client_instance"] = z3.IntVal(NONE if inst is None else inst)
        return req, inst

    def fire_client(self, p: Path, trigger: str, c: int) -> list:
        res = []
        for r in self.client_rows.get(trigger, ()):
            guard, post, _ = row_relation(r, p.state, {**self.base, "client": z3.IntVal(c)}, self.sizes, {})
            q = p.copy()
            q.state = dict(post)
            q.pc.append(guard)
            q.rows.append(r.name)
            res.append((q, r))
        return res

    def answer_to(self, p: Path, sender: int, echo) -> None:
        p.sender, p.echo = sender, echo

    def label(self, p: Path, text: str) -> None:
        p.label = text

    def cut(self, p: Path) -> None:
        self.cut_bad += p.bad
        self.cut_paths.append(p)

    # -- states and properties ---------------------------------------------------------------

    def initial(self) -> dict:
        return self.valued(self.model.flat(self.model.init_states()[0]))

    def valued(self, flat: tuple) -> dict:
        """A concrete flat state (the world model's view) as Z3 values of the state's variables."""
        return {v.name: concrete_to_z3(x, v.type, self.sizes) for v, x in zip(ALL_VARS, flat)}

    def fresh_state(self, k) -> tuple[dict, list]:
        s = {v.name: fresh(f"d{k}.{v.name}", v.type, self.sizes) for v in ALL_VARS}
        wf = [c for v in ALL_VARS for c in well_formed(s[v.name], v.type, self.sizes)]
        return s, wf

    def violations(self, s: dict) -> list[tuple[str, object]]:
        """(invariant, the condition that it is broken) for every state invariant at `s`."""
        env = self._env(s, {})
        out = [(i.name, z3.Not(to_z3(i.formula, env))) for i in self.state_invariants]
        wenv = SymEnv(self.sizes, s, {**dict(zip(WORLD_INVARIANT_PARAMS, [z3.IntVal(self.cfg.max_generation)]))})
        out += [(i.name, z3.Not(to_z3(i.formula, wenv))) for i in self.world_invariants]
        return out

    def concrete(self, model: z3.ModelRef, s: dict) -> tuple:
        """The concrete flat state a Z3 model gives symbolic state `s`."""
        return tuple(_concrete(model, s[v.name], v.type) for v in ALL_VARS)


_VAR_NAMES = [v.name for v in ALL_VARS]
_VAR_TYPE = {v.name: v.type for v in ALL_VARS}
_OUT_NAMES = {t.data for t in OUT.values()}
_ROUTE_PARAM_TYPES = {"sender": Dom(CLIENT), "at": Dom(MEMBER), "client": Dom(CLIENT), **{t.data: t.type for t in OUT.values()},
                      **{t.data: t.type for t in REC.values()}}


def _leaves(v) -> list:
    """The Z3 terms of a value (a map is a list, a record a tuple), in order."""
    if not isinstance(v, (list, tuple)):
        return [v]
    out = []
    for e in v:
        if isinstance(e, (list, tuple)):
            out += _leaves(e)
        else:
            out.append(e)
    return out


def _ite_all(c, x, y):
    """If(c, x, y) leaf by leaf (of maps and records)."""
    if isinstance(x, (list, tuple)):
        return type(x)(_ite_all(c, a, b) for a, b in zip(x, y))
    return ite(c, x, y)


def _z3(v):
    if isinstance(v, bool):
        return z3.BoolVal(v)
    if isinstance(v, int):
        return z3.IntVal(v)
    return v


def _choices(row) -> dict[str, str]:
    """The row's choices: name -> the domain its set is of."""
    from groupspec.spec.engine import _row_terms
    from groupspec.spec.lang import choices_in
    doms = {}
    for t in _row_terms(row):
        doms.update((n, ch.type.name) for n, ch in choices_in(t).items())
    return dict(sorted(doms.items()))


def _concrete(model, v, t):
    if t.kind == "record":
        return tuple(_concrete(model, x, ft) for x, ft in zip(v, t.args))
    if t.kind == "map":
        return tuple(_concrete(model, x, t.value) for x in v)
    x = model.eval(v, model_completion=True)
    if t.kind == "bool":
        return z3.is_true(x)
    return x.as_long() if t.kind == "set" else x.as_long()


# -- the search ----------------------------------------------------------------------------

@dataclass
class BmcResult:
    result: str                  # ok (no violation up to the depth), violation, disagreement, unknown, stopped
    depth: int                   # the depth searched, or of the violation
    violation: str = ""
    path: list = field(default_factory=list)      # [(Step | None, flat state)] replayed concretely
    states: list = field(default_factory=list)    # the model's states, as Z3 gave them
    seconds_per_depth: list = field(default_factory=list)
    cpu_seconds_per_depth: list = field(default_factory=list)     # this process's (Z3 runs in it)
    paths_per_step: int = 0           # the paths of one world step (the relation's disjuncts)
    steps: list = field(default_factory=list)     # [(label, rows)] of each step, as BMC took it
    build_seconds: float = 0.0        # building the step relation, once
    detail: str = ""
    shortest: bool = True             # a violation: no state fewer steps deep breaks an invariant
    solve_seconds: float = 0.0        # a leap's one question (bmc_sat `_Search.leap`): wall and CPU seconds
    solve_cpu_seconds: float = 0.0
    prefix_states: int = 0            # from breadth-first search's level (`bmc(after=)`): the states it kept
    prefix_depth: int = 0             # its last level's depth, where BMC starts
    prefix_level: int = 0             # the states of that level
    prefix_seconds: float = 0.0


class StepRelation:
    """The world's step as one relation from template state X to X', built once.

    A Boolean per path (`picks`) says it is taken: then its condition holds and X' is its
    post-state; some path is taken.  (Measured on the tiny world: Booleans answer depth 6 in
    about 13 s of CPU, an integer selector compared with each path's number in 24 s.)
    `inside` says, per invariant, on which paths (and under what condition) a row of the step
    breaks it on its way."""

    def __init__(self, cfg: WorldConfig, rows: list | None = None, eager: Eager = EAGER):
        t0 = time.perf_counter()
        self.cfg = cfg
        self.world = W = SymbolicWorld(cfg, rows, eager)
        self.X, _ = W.fresh_state("x")
        self.X2, _ = W.fresh_state("y")
        self.paths = W.step(self.X)
        self.picks = picks = _picks("pick", len(self.paths))
        self.trans = _paths_relation(self.X2, self.paths, picks)
        inside: dict = {n: [] for n, _ in W.row_invariants}      # in the catalog's order
        for i, p in enumerate(self.paths):
            for name, cond in p.bad:
                inside.setdefault(name, []).append(conj([picks[i], cond]))
        for name, cond in W.cut_bad:      # broken on the way of a step a bound then cut
            inside.setdefault(name, []).append(cond)
        self.inside = {n: disj(cs) for n, cs in inside.items() if cs}
        # A row's choice (a fresh element of its set) is a variable of the step: each depth's copy
        # gets its own, or a path taken at two depths would have to choose the same element twice.
        self.choices = _choice_vars([self.trans, *self.inside.values()])
        self.build_seconds = time.perf_counter() - t0


class Unrolling:
    """Copies of a step relation from the initial state on: `extend()` adds a step, `bad()` says
    how the last state, or the step into it, breaks an invariant.  Depth k's copy substitutes
    depth k's variables for X, k+1's for X' and `pick<k>.<i>` for the paths' Booleans."""

    def __init__(self, rel: StepRelation):
        self.rel = rel
        self.world = rel.world
        self.states = [rel.world.initial()]
        self.pending: list = []       # (invariant, condition) broken inside the step into the last state

    @property
    def depth(self) -> int:
        return len(self.states) - 1

    def extend(self) -> list:
        """The constraints of one more step (from the last state to a new one)."""
        k, rel = self.depth, self.rel
        nxt, wf = self.world.fresh_state(k + 1)
        sub = Sub(_between(rel.X, self.states[k]) + _between(rel.X2, nxt)
                  + list(zip(rel.picks, _picks(f"pick{k}.", len(rel.picks))))
                  + [(c, z3.Int(f"d{k}.{c}")) for c in rel.choices])
        self.pending = [(n, sub(c)) for n, c in rel.inside.items()]
        self.states.append(nxt)
        return [*wf, sub(rel.trans)]

    def bad(self) -> list:
        """(invariant, the condition that it is broken) inside the step into the last state or at
        it: in the explicit checker's order (a row breaking an invariant on its way is reported
        before the state it leads to)."""
        return self.pending + self.world.violations(self.states[-1])

    def trace(self, m: z3.ModelRef, upto: int | None = None) -> list:
        """The concrete flat states of a model, from the initial state to depth `upto` (the last)."""
        return [self.world.concrete(m, st) for st in self.states[:None if upto is None else upto + 1]]

    def taken(self, m: z3.ModelRef) -> list:
        """[(label, rows)] of each step, as the model's selectors pick them."""
        paths = self.rel.paths
        taken = []
        for j in range(self.depth):
            picked = _picks(f"pick{j}.", len(paths))
            i = next(i for i, b in enumerate(picked) if z3.is_true(m.eval(b, model_completion=True)))
            taken.append((paths[i].label, paths[i].rows))
        return taken


def _choice_vars(terms: list) -> list:
    """The choice variables (`choice#<n>`, SymbolicWorld.outcomes) the terms mention.  Walked through Z3's C
    API on the ASTs themselves: z3py's `children()` makes a Python object of every child, which took half
    the time of building tiny's step relation.  A child needs no reference of its own: its parent holds it."""
    if not terms:
        return []
    ctx = terms[0].ctx
    c = ctx.ref()
    seen, out, stack = set(), [], [t.as_ast() for t in terms]
    while stack:
        a = stack.pop()
        i = z3.Z3_get_ast_id(c, a)
        if i in seen:
            continue
        seen.add(i)
        kind = z3.Z3_get_ast_kind(c, a)
        if kind == z3.Z3_APP_AST:
            n = z3.Z3_get_app_num_args(c, a)
            if n:
                stack.extend(z3.Z3_get_app_arg(c, a, j) for j in range(n))
                continue
            d = z3.Z3_get_app_decl(c, a)
            if z3.Z3_get_decl_kind(c, d) == z3.Z3_OP_UNINTERPRETED and \
                    z3.Z3_get_symbol_string(c, z3.Z3_get_decl_name(c, d)).startswith("choice"):
                out.append(_to_expr_ref(a, ctx))
        elif kind == z3.Z3_QUANTIFIER_AST:
            stack.append(z3.Z3_get_quantifier_body(c, a))
    return sorted(out, key=lambda e: e.decl().name())


def _picks(prefix: str, n: int) -> list:
    """One Boolean per path of the step: the path is taken (more than one may be true only where
    their post-states agree, so any true one names the step)."""
    return [z3.Bool(f"{prefix}{i}") for i in range(n)]


def _paths_relation(X2: dict, paths: list, picks: list):
    """One disjunct per path: it is taken, its condition holds, and X2 is its post-state.
    (Measured: defining each variable of X2 instead as an if-then-else over the paths that
    change it is a smaller term but makes depth 3 of the tiny world thirty times slower.)"""
    ys = _flat(X2)
    eqs: list = [{} for _ in ys]      # per leaf: equalities made, by their term (most are shared)

    def equal(j, v):
        got = eqs[j].get(id(v))
        if got is None:
            got = eqs[j][id(v)] = eq(ys[j], v)
        return got
    return disj([conj([picks[i], *p.pc, *(equal(j, v) for j, v in enumerate(_flat(p.state)))])
                 for i, p in enumerate(paths)])


def _flat(state: dict) -> list:
    return [x for n in _VAR_NAMES for x in _leaves(state[n])]


Z3_MODES = ("push", "assume", "fresh")


def bmc_z3(rel: StepRelation, depth: int, timeout_ms: int = 0, progress=None, mode: str = "push",
           budget_s: float | None = None, only: set | None = None) -> BmcResult:
    """`bmc_search.bmc` with Z3 asked at each depth, in one of `Z3_MODES` (its docstring says what each
    option means)."""
    t0 = time.perf_counter()
    U = Unrolling(rel)
    n_paths, built = len(rel.paths), rel.build_seconds
    if progress:
        progress(0, n_paths, built)
    solver, steps = _solver(timeout_ms), []
    secs: list = []
    cpu: list = []

    def result(kind: str, k: int, **kw) -> BmcResult:
        return BmcResult(kind, k, seconds_per_depth=secs, cpu_seconds_per_depth=cpu, paths_per_step=n_paths,
                         build_seconds=built, **kw)

    def took():
        secs.append(time.perf_counter() - t1)
        cpu.append(time.process_time() - c1)
    for k in range(depth + 1):
        t1, c1 = time.perf_counter(), time.process_time()
        if budget_s is not None:
            left = budget_s - (t1 - t0)
            if left <= 0:
                return result("stopped", k - 1, detail=f"the budget of {budget_s:g} s was spent")
            solver.set("timeout", int(left * 1000) if not timeout_ms else min(timeout_ms, int(left * 1000)))
        bad = [(n, cond) for n, cond in U.bad() if only is None or n in only]
        query = disj([cond for _, cond in bad])
        if mode == "fresh":
            solver = _solver(timeout_ms if budget_s is None else int(left * 1000))
            solver.add(*steps, query)
            verdict = solver.check()
        elif mode == "assume":
            lit = z3.Bool(f"query{k}")
            solver.add(z3.Implies(lit, query))
            verdict = solver.check(lit)
        else:
            solver.push()
            solver.add(query)
            verdict = solver.check()
        if verdict == z3.sat:
            m = solver.model()
            name = next(n for n, cond in bad if z3.is_true(m.eval(cond, model_completion=True)))
            took()
            res = _replayed(U.world, U.trace(m), name, k)
            res.steps, res.seconds_per_depth, res.cpu_seconds_per_depth = U.taken(m), secs, cpu
            res.paths_per_step, res.build_seconds = n_paths, built
            return res
        if mode == "push":
            solver.pop()
        if verdict == z3.unknown:
            why = solver.reason_unknown()
            if budget_s is not None and time.perf_counter() - t0 >= budget_s:
                return result("stopped", k - 1, detail=f"the budget of {budget_s:g} s was spent in depth {k}")
            return result("unknown", k, detail=f"Z3 gave up at depth {k}: {why}")
        if k == depth:
            took()
            break
        step = U.extend()
        steps += step
        if mode != "fresh":
            solver.add(*step)
        took()
        if progress:
            progress(k + 1, n_paths, secs[-1])
    return result("ok", depth)


def reachable(cfg: WorldConfig | StepRelation, depth: int, rows: list | None = None) -> list[set]:
    """The concrete states reachable in exactly j steps of the world, for j = 0 .. depth, each
    enumerated by Z3 over the unrolled relation: a state found is excluded (a blocking clause
    over all its variables) and the query asked again until none is left.  The sets, not only
    their sizes, so a caller can compare them with another interpretation's."""
    rel = cfg if isinstance(cfg, StepRelation) else StepRelation(cfg, rows)
    U = Unrolling(rel)
    solver = z3.Solver()
    levels = []
    for j in range(depth + 1):
        if j:
            solver.add(*U.extend())
        leaves = _flat(U.states[j])
        found: set = set()
        solver.push()
        while (verdict := solver.check()) == z3.sat:
            m = solver.model()
            found.add(U.world.concrete(m, U.states[j]))
            solver.add(z3.Not(conj([eq(x, m.eval(x, model_completion=True)) for x in leaves])))
        solver.pop()
        if verdict != z3.sat and verdict != z3.unsat:
            raise RuntimeError(f"Z3 gave up enumerating the states at depth {j}: {solver.reason_unknown()}")
        levels.append(found)
    return levels


def _solver(timeout_ms: int) -> z3.Solver:
    s = z3.Solver()
    if timeout_ms:
        s.set("timeout", timeout_ms)
    return s


def _between(A: dict, B: dict) -> list:
    return [(a, b) for n in _VAR_NAMES for a, b in zip(_leaves(A[n]), _leaves(B[n]))]


def _replayed(W: SymbolicWorld, trace: list, violation: str, k: int, earliest: bool = False) -> BmcResult:
    """Replay a BMC trace through the explicit checker's world model: each state must be a
    successor of the one before, and the last must break an invariant (or be reached by a
    step that breaks one on its way, as the explicit checker reports it).  `earliest`: the
    depths before k were not shown clean (a leap), so a violation met on the way is the
    counterexample, cut there, rather than a disagreement."""
    model = W.model
    cur = model.init_states()[0]
    path = [(None, model.flat(cur))]
    first = model.violated(cur) if earliest else None
    if first is not None:
        return BmcResult("violation", 0, first, path, trace[:1])
    for i, want in enumerate(trace[1:], 1):
        try:
            succ, _ = model.successors(cur)
        except InvariantViolation as e:
            if i == len(trace) - 1 or earliest:
                path.append((model.failing_step(e), model.flat(cur)))     # as the explicit checker ends it
                return BmcResult("violation", i, e.invariant.name if earliest else violation, path, trace[:i + 1],
                                 detail=f"replayed: a row of the last step breaks {e.invariant.name} on its way")
            return BmcResult("disagreement", k, violation, path, trace,
                             detail=f"the concrete world breaks {e.invariant.name} from state {i - 1}, before the "
                                    f"depth BMC found: the symbolic and concrete interpretations disagree")
        step = next((st for st, t in succ if model.flat(t) == want), None)
        if step is None:
            return BmcResult("disagreement", k, violation, path, trace,
                             detail=f"BMC's state {i} is no successor of state {i - 1} in the concrete world "
                                    f"model: the symbolic and concrete interpretations disagree")
        cur = next(t for st, t in succ if st is step)
        path.append((step, model.flat(cur)))
        first = model.violated(cur) if earliest else None
        if first is not None:
            return BmcResult("violation", i, first, path, trace[:i + 1])
    if model.violated(cur) is None:
        return BmcResult("disagreement", k, violation, path, trace,
                         detail=f"the concrete world model finds no violation of {violation} in BMC's last state")
    return BmcResult("violation", k, violation, path, trace)
