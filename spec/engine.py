"""Executing the table: rows compiled once into closures over flat tuples.

`Engine.fire(state, trigger, params)` finds the row of `trigger` whose
states and guard hold (the table guarantees at most one, `lint` proves
it), runs its steps and returns every possible outcome: one per
combination of the nondeterministic choices the row makes (who becomes
leader, which protocol wins a tied vote).  A choice is resolved when the
step that needs it runs, over the state that step sees; a choice the step
does not read there (the `If` around it goes the other way: the leader
stays) is made once, by its first candidate, since every other candidate
gives the same outcome.

This is the only interpreter of rows.  The runtime coordinator, the spec
target of the scenario runner and the checkers all call it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .concrete import BINDERS, Layout, compile_term, iter_bits
from .lang import NONE, TRUE, And, Not, Or, Term, choices_in, walk
from .rows import ECHO, Out, Row, Set_
from .schema import PARAM_TYPES, STATE_VARS, STATES, TRIGGER_BY_NAME
from .table import ROWS

STATE_INDEX = {v.name: i for i, v in enumerate(STATE_VARS)}
STATE_I = STATE_INDEX["state"]


class EngineError(RuntimeError):
    """The table does not determine what happens (overlapping rows or a gap)."""


@dataclass(slots=True)
class Output:
    """An evaluated output of a fired row."""
    kind: str
    api: str = ""
    member: int = NONE
    fields: dict | None = None
    timer: str = ""
    duration: int = 0


@dataclass
class Outcome:
    row: Row
    state: tuple
    outputs: list[Output]
    choices: dict[str, int]


def _all_choice_names() -> list[str]:
    names: set[str] = set()
    for r in ROWS:
        for t in _row_terms(r):
            names |= set(choices_in(t))
    return sorted(names)


def makes_choices(r: Row) -> bool:
    """Whether a row leaves a choice open (the engine may give more than one outcome)."""
    return any(choices_in(t) for t in _row_terms(r))


def _row_terms(r: Row):
    yield r.guard
    for st in r.steps:
        if isinstance(st, Set_):
            yield from st.updates.values()
        else:
            yield from _out_terms(st)


def _out_terms(o: Out):
    for x in (o.member, o.duration, o.over, o.when):
        if isinstance(x, Term):
            yield x
    for v in o.fields.values():
        if isinstance(v, Term):
            yield v


CHOICES = _all_choice_names()
PARAM_NAMES = list(PARAM_TYPES) + ["choice:" + c for c in CHOICES]
PARAM_INDEX = {n: i for i, n in enumerate(PARAM_NAMES)}
LAYOUT = Layout(STATE_INDEX, PARAM_INDEX)


@dataclass
class Space:
    """Where a table's variables and parameters live: the group's, or a closed world's
    (whose state tuple starts with the group's variables, so the coordinator's rows run
    on it unchanged)."""
    layout: Layout
    param_names: list

    @property
    def param_index(self) -> dict:
        return self.layout.param_index


GROUP_SPACE = Space(LAYOUT, PARAM_NAMES)


def initial_state(sizes: dict[str, int]) -> tuple:
    """The state of a group the coordinator does not hold, for the given domain sizes."""
    out = []
    for v in STATE_VARS:
        out.append(tuple([v.initial] * sizes[v.type.key]) if v.type.kind == "map" else v.initial)
    return tuple(out)


def make_params(values: dict[str, Any]) -> list:
    """A parameter vector (a list: choices are filled in as rows run)."""
    p = [None] * len(PARAM_NAMES)
    for k, v in values.items():
        p[PARAM_INDEX[k]] = v
    return p


# -- compiled rows ---------------------------------------------------------------------

class _CStep:
    __slots__ = ("updates", "out", "choices")


def _read_when(t: Term, name: str) -> Term | None:
    """A condition, over the state and parameters, that holds whenever evaluating `t` reads choice
    `name` (None: it never does).  It may hold where the choice is not read (a binder around the
    choice, or an argument `and`/`or` may skip, count as read), never the other way."""
    if not any(n.op == "choose" and n.data == name for n in walk(t)):
        return None
    if t.op == "choose":
        # another choice's candidates are not part of the expression (run_row evaluates them apart)
        return _ALWAYS if t.data == name else None
    if t.op in BINDERS:
        return _ALWAYS
    if t.op == "ite":
        c, a, b = t.args
        parts = [_read_when(c, name), _guarded(c, _read_when(a, name)), _guarded(Not(c), _read_when(b, name))]
    else:
        parts = [_read_when(x, name) for x in t.args]
    parts = [x for x in parts if x is not None]
    if not parts:
        return None
    return _ALWAYS if any(x is _ALWAYS for x in parts) else Or(*parts)


_ALWAYS = TRUE()          # a sentinel: compared by identity


def _guarded(c: Term, inner: Term | None) -> Term | None:
    return None if inner is None else c if inner is _ALWAYS else And(c, inner)


def _lazy(row: Row, step_index: int, name: str) -> Term | None:
    """When step `step_index` of `row` reads choice `name`, if that can be told before the step runs:
    the choice is in no other step (a later step reuses the value chosen here) and in no choice's
    candidates, and the condition names no choice (the step's other choices are not made yet).  The
    condition is closed: it is made of the conditions of `If`s outside every binder of an update."""
    steps = [list(st.updates.values()) if isinstance(st, Set_) else list(_out_terms(st)) for st in row.steps]
    if not isinstance(row.steps[step_index], Set_):
        return None
    for i, terms in enumerate(steps):
        for t in terms:
            found = choices_in(t)
            if (i != step_index and name in found) or any(name in choices_in(ch.args[0]) for ch in found.values()):
                return None
    when = [w for w in (_read_when(t, name) for t in steps[step_index]) if w is not None]
    if not when or any(w is _ALWAYS for w in when):
        return None
    cond = Or(*when)
    if any(n.op == "choose" for n in walk(cond)):
        return None
    return cond


class CompiledRow:
    """`lazy=False`: every choice made over all its candidates, read or not (for a test that names the
    choices itself, as a Z3 model does)."""

    def __init__(self, row: Row, space: Space = GROUP_SPACE, lazy: bool = True):
        self.row = row
        self.space = space
        lay = space.layout
        self.state_mask = sum(1 << STATES.index(s) for s in row.states)
        self.guard = compile_term(row.guard, lay)
        # first-match dispatch tests only the row's own condition (see Engine.fire)
        self.own = compile_term(row.own, lay) if row.own is not None else self.guard
        self.target = None if row.target is None else STATES.index(row.target)
        self.steps: list[_CStep] = []
        for st in row.steps:
            c = _CStep()
            terms = list(st.updates.values()) if isinstance(st, Set_) else list(_out_terms(st))
            found: dict[str, Term] = {}
            for t in terms:
                found.update(choices_in(t))
            # (the choice's slot, its candidates, when the step reads it: None if it always may)
            c.choices = [(lay.param_index["choice:" + name], compile_term(ch.args[0], lay),
                          None if not lazy or (when := _lazy(row, len(self.steps), name)) is None
                          else compile_term(when, lay))
                         for name, ch in sorted(found.items())]
            if isinstance(st, Set_):
                c.updates = [(lay.state_index[k], compile_term(v, lay)) for k, v in st.updates.items()]
                c.out = None
            else:
                c.updates = None
                c.out = _compile_out(st, lay)
            self.steps.append(c)
        self.has_choices = any(c.choices for c in self.steps)


def _compile_out(o: Out, lay: Layout = LAYOUT):
    depth = 0
    if o.var is not None:
        o.var.data[0] = 0
        depth = 1

    def comp(t):
        if t is None or not isinstance(t, Term):
            return t
        if depth:
            o.var.data[0] = 0
        return _at_depth(t, depth, lay)
    over = compile_term(o.over, lay) if o.over is not None else None
    # (name, value, whether the value is a compiled term to call), in the output's field order
    fields = tuple((k, v, False) if v is ECHO else (k, comp(v), True) if isinstance(v, Term) else (k, v, callable(v))
                   for k, v in o.fields.items())
    return (o.kind, o.api, comp(o.member), fields, o.timer, comp(o.duration), over, comp(o.when))


def _at_depth(t: Term, depth: int, lay: Layout = LAYOUT) -> Callable:
    """Compile t where bound variables of enclosing outputs occupy b[0..depth)."""
    return compile_term(t, lay, depth)


# The spec's rows compiled once per process and layout, whichever engines hold them: a world model, a mutant's
# table and a trace checker each build an engine of mostly the spec's own rows, and compiling the 181 rows took
# 0.3-0.4 s a time (the test suite built thousands of engines).  A compiled row is closures over its terms, read
# only, so engines share it.  Only the spec's rows, which live as long as the process: another table's rows (a
# mutant's) are compiled for their engine and go with it.
_SPEC_ROWS = frozenset(id(r) for r in ROWS)
_COMPILED: dict[tuple, CompiledRow] = {}


def compiled(row: Row, space: Space = GROUP_SPACE) -> CompiledRow:
    """Row `row` compiled for `space`'s layout (a row of the spec's table: shared with every engine of this
    process that holds it)."""
    if id(row) not in _SPEC_ROWS:
        return CompiledRow(row, space)
    lay = space.layout
    key = (id(row), tuple(lay.state_index.items()), tuple(lay.param_index.items()))
    cr = _COMPILED.get(key)
    if cr is None:
        cr = _COMPILED[key] = CompiledRow(row, space)
    return cr


class Engine:
    """Fires rows.  One instance serves every group and every world."""

    def __init__(self, rows: list[Row] | None = None, space: Space = GROUP_SPACE, total: Callable | None = None,
                 skip_outputs: tuple = ()):
        rows = ROWS if rows is None else rows
        self.skip = frozenset(skip_outputs)
        self.total = total or (lambda trigger: TRIGGER_BY_NAME[trigger].total)
        self.by_trigger: dict[str, list[CompiledRow]] = {}
        for r in rows:
            self.by_trigger.setdefault(r.trigger, []).append(compiled(r, space))

    def __deepcopy__(self, memo):
        return self   # compiled once, shared by every copy of a world

    def enabled(self, state: tuple, trigger: str, params: list) -> list[CompiledRow]:
        bit = 1 << state[STATE_I]
        p = params
        return [cr for cr in self.by_trigger.get(trigger, ()) if cr.state_mask & bit and cr.guard(state, p, ())]

    def select(self, state: tuple, trigger: str, params: list) -> CompiledRow | None:
        """The row that applies, found by first match on the rows' own conditions.

        Rows of a chain come in the chain's order, and a row's full guard is its
        own condition and the negation of every earlier one, so the first row
        whose own condition holds is the row whose full guard holds (the full
        guards are exclusive: lint proves it).  `enabled` evaluates the full
        guards; a test holds the two to the same answer.
        """
        bit = 1 << state[STATE_I]
        for cr in self.by_trigger.get(trigger, ()):
            if cr.state_mask & bit and cr.own(state, params, ()):
                return cr
        return None

    def fire(self, state: tuple, trigger: str, params: list) -> list[Outcome]:
        cr = self.select(state, trigger, params)
        if cr is None:
            if self.total(trigger):
                raise EngineError(f"no row of {trigger} applies in state {STATES[state[STATE_I]]}")
            return []
        return run_row(cr, state, params, self.skip)


def run_row(cr: CompiledRow, state: tuple, params: list, skip: frozenset = frozenset()) -> list[Outcome]:
    """Run a row's steps; branch on each nondeterministic choice.

    `skip`: output kinds the caller ignores (the checker's abstract time has no use
    for timer deadlines), left unevaluated.
    """
    if not cr.has_choices:
        return [_run_plain(cr, state, params, skip)]
    # each branch: (state list, params list, outputs, choices)
    branches = [(list(state), list(params), [], {})]
    for step in cr.steps:
        if step.choices:
            nxt = []
            for s, p, outs, ch in branches:
                options = [[]]
                st = tuple(s)
                for idx, cand, read in step.choices:
                    if p[idx] is not None:
                        continue  # already chosen by an earlier step
                    elems = list(iter_bits(cand(st, p, ()))) or [NONE]
                    if read is not None and len(elems) > 1 and not read(st, p, ()):
                        elems = elems[:1]       # not read: every candidate gives the first one's outcome
                    options = [o + [(idx, e)] for o in options for e in elems]
                for opt in options:
                    p2 = list(p)
                    ch2 = dict(ch)
                    for idx, e in opt:
                        p2[idx] = e
                        ch2[cr.space.param_names[idx][7:]] = e
                    nxt.append((list(s), p2, list(outs), ch2))
            branches = nxt
        for s, p, outs, ch in branches:
            st = tuple(s)
            if step.updates is not None:
                vals = [(i, f(st, p, ())) for i, f in step.updates]
                for i, v in vals:
                    s[i] = v
            elif step.out[0] not in skip:
                outs.extend(_eval_out(step.out, st, p))
    results = []
    for s, p, outs, ch in branches:
        if cr.target is not None:
            s[STATE_I] = cr.target
        results.append(Outcome(cr.row, tuple(s), outs, ch))
    return results


def _run_plain(cr: CompiledRow, state: tuple, params: list, skip: frozenset) -> Outcome:
    """run_row for a row that makes no choice: one branch, no bookkeeping."""
    s = list(state)
    st = state
    outs: list = []
    for step in cr.steps:
        if step.updates is not None:
            vals = [(i, f(st, params, ())) for i, f in step.updates]
            for i, v in vals:
                s[i] = v
            st = tuple(s)
        elif step.out[0] not in skip:
            outs.extend(_eval_out(step.out, st, params))
    if cr.target is not None:
        s[STATE_I] = cr.target
        st = tuple(s)
    return Outcome(cr.row, st, outs, {})


def _eval_out(out, s: tuple, p: list) -> list[Output]:
    kind, api, member, fields, timer, duration, over, when = out
    envs = [()] if over is None else [(k,) for k in iter_bits(over(s, p, ()))]
    res = []
    for b in envs:
        if when is not None and not when(s, p, b):
            continue
        vals = {k: v(s, p, b) if call else v for k, v, call in fields}
        res.append(Output(kind, api, member(s, p, b) if member is not None else NONE, vals, timer,
                          duration(s, p, b) if duration is not None else 0))
    return res


def get(state: tuple, var: str):
    return state[STATE_INDEX[var]]


_MAPS_OF: dict[str, tuple[int, ...]] = {}      # domain -> the state variables that are maps keyed by it


def widen(state: tuple, dom: str, size: int) -> tuple:
    """Grow every map keyed by `dom` to `size` entries (the runtime's member slots grow); the state itself when
    none is short (the common case: it runs before every row)."""
    maps = _MAPS_OF.get(dom)
    if maps is None:
        maps = _MAPS_OF[dom] = tuple(i for i, v in enumerate(STATE_VARS) if v.type.kind == "map" and v.type.key == dom)
    short = [i for i in maps if len(state[i]) < size]
    if not short:
        return state
    out = list(state)
    for i in short:
        out[i] = state[i] + (STATE_VARS[i].initial,) * (size - len(state[i]))
    return tuple(out)

