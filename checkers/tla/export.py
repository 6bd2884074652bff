"""The closed world as a TLA+ module and a TLC configuration (`groupspec export tla`).

Nothing of the protocol is written here.  The module is printed from the
declarations the explicit checker compiles:

- every row of the table and of the clients (spec/table.py, spec/world.py
  CLIENT_ROWS) becomes two operators named after it, its guard
  (`<Row>_when(w, p)`) and its effect (`<Row>(w, p)`: the world record after
  its steps and the outputs it made; a set of them where the row makes a
  choice), printed term by term by spec/tla.py, with its source as a comment;
- every disjunct of the world's Next (spec/world_step.py: an action of
  spec/world.py ACTIONS, a delivery once per message kind) becomes a TLA+
  action of that name.  The export runs the world's step itself with
  `TlaWorld` as its host, as the explicit checker (world/state_space.py) and
  BMC (world/bmc.py) do: a condition of the step becomes a conjunct (and its
  negation another way through), a client's move its rows, a coordinator
  step `handling.handle` with every row of the trigger under its guard, each
  route's effect (ROUTE_EFFECTS) on the world record, each way a write may
  complete (append_errors), the eager re-check where the group may be in
  PreparingRebalance, and a step a bound cuts a stutter.  Each way through is
  one disjunct, printed as a tree of shared prefixes;
- the state variables (schema.py STATE_VARS, world.py WORLD_VARS) become
  VARIABLES, with TypeOK from their types; the invariants of the catalog
  and of the closed world become definitions listed in the .cfg; the
  world's bounds become CONSTANTS; fairness (ACTIONS) becomes WF/SF
  conditions of `Spec`; renaming clients becomes `Permutations(Clients)`.

The functions a world supplies (the leader's assignor, a member's vote,
protocol lists) are tabulated from the explicit world's own functions over
their finite domains.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from groupspec.spec.handling import REC, RECORD_FIELDS
from groupspec.spec.invariants import CHECKED_AFTER_ROW, HANDS_OUT
from groupspec.spec.kafka import ERRORS
from groupspec.spec.lang import NONE, Term, choices_in, default_of, walk
from groupspec.spec.rows import ECHO, Out, Set_
from groupspec.spec.schema import PARAM_TYPES, STATES, TRIGGER_BY_NAME
from groupspec.spec.table import rows_for
from groupspec.spec.tla import TlaEnv, element, literal, to_tla
from groupspec.spec.world import (WORLD_COORDINATOR, ALL_VARS, AT, C, CLIENT_ROWS, ISSUED, MAX_GENERATION, OUT, REQ,
                                  ROUTE_EFFECTS, SENDER, append_errors)
from groupspec.spec.world_step import step as world_step

from groupspec.checkers.world.state_space import SKIPPED_OUTPUTS, WorldModel
from groupspec.checkers.world.presets import WorldConfig

MODULE = "ConsumerGroupWorld"
PREPARING = STATES.index("PreparingRebalance")
# How many eager re-checks one step may enter before the export gives up (as bmc.EAGER_LIMIT: the
# nesting is checked, never assumed).
EAGER_LIMIT = 4
# the functions a world supplies, and their names in the module
FUNCTIONS = {"proto_names": "ProtoNames", "vote": "Vote", "assign": "Assign", "selected_only": "SelectedOnly"}
REQUEST = ("rq", "rq_member", "rq_gen", "rq_assign", "rq_parts")
LATE = ("rq_late", "rq_late_member", "rq_late_gen", "rq_late_assign", "rq_late_parts")
VAR_TYPE = {v.name: v.type for v in ALL_VARS}
# the value of `broken_in_step` when every check after every row of a step held
NOT_BROKEN = '"none"'
# the parameters the checks after a row read (the step invariants' P.<name>)
CHECK_PARAMS = sorted({n.data for inv in CHECKED_AFTER_ROW for n in walk(inv.formula) if n.op == "param"})


class ExportError(ValueError):
    """The world cannot be exported as asked (the message says why and what to change)."""


def tla_name(text: str) -> str:
    """A row's or invariant's name as a TLA+ identifier."""
    words = re.findall(r"[A-Za-z0-9]+", text)
    return "_".join(words)


def camel(text: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in re.findall(r"[A-Za-z0-9]+", text))


class Tx(str):
    """A TLA+ expression (a value the host computed as text, not a Python value)."""


def _text(value, t) -> str:
    return str(value) if isinstance(value, Tx) else literal(value, t)


# -- rows as operators --------------------------------------------------------------------

@dataclass
class RowOp:
    """A row printed as TLA+ operators: its name, whether its effect is a set (it chooses), and its
    outputs, each (kind, api, label in the result record, fields: name -> TLA+ label or a Python
    constant or ECHO, member: label or constant, over: whether it is one of a set's)."""
    name: str
    chooses: bool
    outputs: list
    text: str
    own: str          # its own condition over (w, p), with the states it applies in: what dispatch tests


def _param_text(name: str) -> str:
    return FUNCTIONS.get(name, f"p.{name}")


def row_operator(row, sizes: dict, client: bool, names: list) -> RowOp:
    """`<Row>_when(w, p)` and `<Row>(w, p)` (for a client row: `(w, c)`)."""
    name = tla_name(row.name)
    arg = "c" if client else "p"
    env = TlaEnv(var=None, param=(lambda n: "c" if n == "client" else _param_text(n)) if client else _param_text,
                 choice=lambda n: "ch_" + n, present=frozenset({"client"}), names=names)

    def show(t: Term, at: str, bound: dict | None = None) -> str:
        env.var = lambda v: f"{at}.{v}"
        env.bound.update(bound or {})      # an output's bound variable: its set's element
        env.elements.update(bound or {})
        try:
            return to_tla(t, env)
        finally:
            for key in bound or {}:
                del env.bound[key]
                env.elements.discard(key)
    states = "" if set(row.states) == set(STATES) else \
        f"w.state \\in {{{', '.join(literal(STATES.index(s), _STATE_T) for s in row.states)}}}"
    # what first-match dispatch tests (spec/engine.py select): the row's own condition, not its
    # full guard, so that a table whose own conditions were changed (a mutant) is exported as the
    # engine runs it; for the spec's table the two agree (lint)
    own = show(row.own if row.own is not None else row.guard, "w")
    own = " /\\ ".join(x for x in (states, own) if x and x != "TRUE") or "TRUE"
    lines = [f"\\* {row.name}", f"\\* source: {_one_line(row.source)}"]
    # the effect: its steps in order, each a LET over the state the previous one left; a
    # choice is made over the state of the step that first needs it
    body, outs, chosen, cur, k = [], [], set(), "w", 0
    opens = 0
    for si, st in enumerate(row.steps):
        terms = list(st.updates.values()) if isinstance(st, Set_) else \
            [x for x in (st.member, st.over, st.when, *st.fields.values()) if isinstance(x, Term)]
        if isinstance(st, Out) and st.kind in SKIPPED_OUTPUTS:
            continue
        new = {}
        for t in terms:
            for cn, ch in choices_in(t).items():
                if cn not in chosen:
                    new[cn] = ch
        if new:
            binds = ", ".join(f"ch_{cn} \\in Options({show(ch.args[0], cur)})" for cn, ch in sorted(new.items()))
            body.append(("union", binds))
            chosen |= set(new)
            opens += 1
        if isinstance(st, Set_):
            k += 1
            ups = ", ".join(f"!.{v} = {show(t, cur)}" for v, t in st.updates.items())
            body.append(("let", f"s{k}", f"[{cur} EXCEPT {ups}]"))
            cur = f"s{k}"
        else:
            outs += _outputs(st, si, cur, show, sizes)
    if row.target is not None:
        k += 1
        body.append(("let", f"s{k}", f"[{cur} EXCEPT !.state = {literal(STATES.index(row.target), _STATE_T)}]"))
        cur = f"s{k}"
    record = "[" + ", ".join([f"w |-> {cur}"] + [f"{label} |-> {rec}" for label, rec in
                                                      ((o["label"], o["record"]) for o in outs) if rec]) + "]"
    result = f"{{{record}}}" if opens else record
    # print inside out
    text = result
    for kind, *rest in reversed(body):
        if kind == "let":
            text = f"LET {rest[0]} == {rest[1]} IN\n    {text}"
        else:
            text = f"UNION {{ {text}\n    : {rest[0]} }}"
    lines.append(f"{name}(w, {arg}) ==\n    {text}")
    return RowOp(name, bool(opens), outs, "\n".join(lines), own)


_STATE_T = next(v.type for v in ALL_VARS if v.name == "state")


def _outputs(o: Out, si: int, cur: str, show, sizes: dict) -> list[dict]:
    """One output step's outputs: per element of its set for `each`/`answer_each`."""
    res = []
    elems = [None] if o.over is None else list(range(sizes[o.var.type.name]))
    for e in elems:
        label = f"o{si}" if e is None else f"o{si}_{e}"
        parts, fields = [], {}
        bound = {} if e is None else {id(o.var): element(e, o.var.type.name)}

        def val(t):
            if not isinstance(t, Term):
                return t
            if t.op == "const":
                return t.data
            return None
        conds = []
        if o.over is not None:
            conds.append(f"{element(e, o.var.type.name)} \\in {show(o.over, cur)}")
        if isinstance(o.when, Term):
            conds.append(show(o.when, cur, bound))
        on = " /\\ ".join(c for c in conds if c != "TRUE") or "TRUE"
        if on == "FALSE":
            continue
        if on != "TRUE":
            parts.append(f"on |-> {on}")
        for fname, t in o.fields.items():
            if t is ECHO or val(t) is not None or not isinstance(t, Term):
                fields[fname] = t if t is ECHO or not isinstance(t, Term) else val(t)
            else:
                parts.append(f"{fname} |-> {show(t, cur, bound)}")
                fields[fname] = Tx(f"{{r}}.{label}.{fname}")
        member = None
        if isinstance(o.member, Term):
            if e is not None and o.member is o.var:
                member = e
            elif o.member.op == "const":
                member = o.member.data
            else:
                parts.append(f"at |-> {show(o.member, cur, bound)}")
                member = Tx(f"{{r}}.{label}.at")
        res.append({"kind": o.kind, "api": o.api, "label": label, "record": "[" + ", ".join(parts) + "]"
                    if parts else "", "fields": fields, "member": member,
                    "on": Tx(f"{{r}}.{label}.on") if on != "TRUE" else "TRUE"})
    return res


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# -- the host of spec/handling.py: ways through a step, as text --------------------------

@dataclass
class Path:
    frames: list = field(default_factory=list)
    w: str = "w0"
    n: int = 0
    sender: object = NONE
    echo: object = NONE
    known: frozenset | None = None     # the states the group may be in on this path (None: any)
    eager: int = 0
    broken: str = NOT_BROKEN           # the first check that failed after a row on this path (spec/invariants.py)

    def copy(self) -> "Path":
        return Path(list(self.frames), self.w, self.n, self.sender, self.echo, self.known, self.eager, self.broken)

    def name(self, hint: str) -> str:
        self.n += 1
        return f"{hint}{self.n}"


@dataclass
class _Outcome:
    row: object
    guard: str
    op: RowOp | None = None
    p: str = ""
    outputs: list = field(default_factory=list)
    given: frozenset = frozenset()     # the parameters the record `p` holds


@dataclass
class _Output:
    kind: str
    api: str
    fields: dict
    member: object
    on: str


class TlaWorld:
    """The closed world of `cfg` as TLA+ text: the host of spec/handling.py."""

    def __init__(self, cfg: WorldConfig, model: WorldModel | None = None):
        self.cfg = cfg
        self.model = model or WorldModel(cfg)
        self.eager = self.model.eager
        self.sizes = cfg.sizes()
        self.names = [0]
        rows = rows_for(WORLD_COORDINATOR, self.model.rows)
        self.rows: dict = {}
        for r in rows:
            self.rows.setdefault(r.trigger, []).append(r)
        self.ops: dict = {}           # id(row) -> RowOp
        self.dispatch: dict = {}      # trigger -> its First_<trigger> operator
        self.used_rows: list = []     # in the order they are first used
        self.base = {k: v for k, v in self.model.base.items() if not callable(v)}

    # the operators of a row, made once
    def op(self, r, client: bool = False) -> RowOp:
        got = self.ops.get(id(r))
        if got is None:
            got = self.ops[id(r)] = row_operator(r, self.sizes, client, self.names)
            self.used_rows.append((r, got))
        return got

    def env(self, w: str, params: dict, present=()) -> TlaEnv:
        def param(n):
            if n in FUNCTIONS:
                return FUNCTIONS[n]
            if n == MAX_GENERATION.data:
                return "MaxGeneration"
            return _text(params[n], _PARAM_T[n])
        return TlaEnv(var=lambda v: f"{w}.{v}", param=param, present=frozenset(present), names=self.names)

    # -- handling.Host ----------------------------------------------------------------

    def outcomes(self, ctx: Path, trigger: str, params: dict) -> list:
        trig = TRIGGER_BY_NAME[trigger]
        given = {**self.base, **params}
        fields = []
        for n in trig.params:
            t = PARAM_TYPES[n]
            if t.kind == "fun" or n not in given:
                continue
            fields.append(f"{n} |-> {_text(given[n], t)}")
        p = ctx.name("p")
        ctx.frames.append(("let", p, "[" + ", ".join(fields) + "]"))
        first = self.first(trigger, self.rows.get(trigger, ()))
        f = ctx.name("f")
        ctx.frames.append(("let", f, f"{first}({ctx.w}, {p})"))
        res = []
        held = frozenset(n for n in trig.params if PARAM_TYPES[n].kind != "fun" and n in given)
        for r in self.rows.get(trigger, ()):
            if ctx.known is not None and not (set(STATES.index(s) for s in r.states) & ctx.known):
                continue
            op = self.op(r)
            res.append(_Outcome(r, f'{f} = "{op.name}"', op, p, given=held))
        if not trig.total:
            res.append(_Outcome(None, f'{f} = "none"'))
        return res

    def first(self, trigger: str, rows, client: bool = False) -> str:
        """The operator naming the row of `trigger` that fires, as the engine dispatches: the first
        of the trigger's rows, in the table's order, whose own condition holds ("none" if none)."""
        name = f"First_{tla_name(trigger)}"
        if trigger not in self.dispatch:
            ops = [self.op(r, client) for r in rows if r.trigger == trigger]
            body = "".join(f'IF {op.own} THEN "{op.name}"\n    ELSE ' for op in ops)
            self.dispatch[trigger] = (f"\\* {trigger}: the first of its rows, in the table's order, whose own condition "
                                      f"holds (the engine's\n\\* first-match dispatch, spec/engine.py select), or "
                                      f'"none"\n{name}(w, {"c" if client else "p"}) ==\n    {body}"none"')
        return name

    def fork(self, ctx: Path) -> Path:
        return ctx.copy()

    def enter(self, ctx: Path, o: _Outcome, params: dict) -> None:
        if o.row is None:
            ctx.frames.append(("if", o.guard))
            return
        ctx.frames.append(("comment", o.row.name))
        ctx.frames.append(("if", o.guard))
        r = ctx.name("r")
        call = f"{o.op.name}({ctx.w}, {o.p})"
        ctx.frames.append(("exists", r, call) if o.op.chooses else ("let", r, call))
        prev, ctx.w = ctx.w, f"{r}.w"
        o.outputs = [_Output(d["kind"], d["api"], {k: (Tx(v.format(r=r)) if isinstance(v, Tx) else v)
                                                   for k, v in d["fields"].items()},
                             Tx(d["member"].format(r=r)) if isinstance(d["member"], Tx) else d["member"],
                             d["on"].format(r=r) if isinstance(d["on"], Tx) else d["on"]) for d in o.op.outputs]
        # the checks after every row (spec/invariants.py CHECKED_AFTER_ROW), as the explicit
        # checker makes them: the first that fails on this path is what the step broke
        q = "[" + ", ".join(f"{n} |-> {self._check_param(o, n)}" for n in CHECK_PARAMS) + "]"
        check = f"AfterRow({prev}, {ctx.w}, {q}, {_handed(o.outputs)})"
        b = ctx.name("b")
        ctx.frames.append(("let", b, check if ctx.broken == NOT_BROKEN else f"Then({ctx.broken}, {check})"))
        ctx.broken = b
        row = o.row
        if row.target is not None:
            ctx.known = frozenset({STATES.index(row.target)})
        else:
            own = frozenset(STATES.index(s) for s in row.states)
            ctx.known = own if ctx.known is None else ctx.known & own

    def _check_param(self, o: _Outcome, n: str) -> str:
        """A parameter a check after a row reads: the trigger's, else the world's base value; a
        trigger without it leaves it unset in the explicit checker too, where no check's premise
        reads it (commit-fenced reads the member only of a step that appends offsets)."""
        t = PARAM_TYPES[n]
        if n in o.given:
            return f"{o.p}.{n}"
        if n in self.base:
            return _text(self.base[n], t)
        return literal(default_of(t), t)

    def _effect(self, ctx: Path, effect, cond: str, fields: dict, echo, member, extra: dict | None = None) -> None:
        if not effect.updates:
            return
        params = {"sender": ctx.sender, "at": NONE if member is None else member, **(extra or {})}
        for k, v in fields.items():
            if "out." + k in _OUT_T:
                params["out." + k] = echo if v is ECHO else v
            if k in RECORD_FIELDS:
                params["rec." + k] = v
        present = {n for n in ("sender", "at", "client") if n in params and _present(params[n])}
        env = self.env(ctx.w, params, present)
        when = to_tla(effect.when, env)
        full = " /\\ ".join(x for x in (cond, when) if x != "TRUE") or "TRUE"
        if "FALSE" in (cond, when):
            return
        ups = ", ".join(f"!.{v} = {to_tla(t, env)}" for v, t in effect.updates.items())
        new = f"[{ctx.w} EXCEPT {ups}]"
        w = ctx.name("w")
        ctx.frames.append(("let", w, new if full == "TRUE" else f"IF {full} THEN {new} ELSE {ctx.w}"))
        ctx.w = w

    def route(self, ctx: Path, out: _Output) -> None:
        self._effect(ctx, ROUTE_EFFECTS[(out.kind, out.api)], out.on, out.fields,
                     out.member if out.kind == "answer" else ctx.echo, out.member)

    def append(self, ctx: Path, out: _Output) -> list:
        if out.on != "TRUE":
            raise ExportError(f"a conditional append ({out.api}): the export writes appends unconditionally")
        errors = append_errors(out.api, self.cfg)
        res = []
        for error in errors:
            q = ctx if error == errors[-1] else ctx.copy()
            if error == "NONE":
                self._effect(q, ROUTE_EFFECTS[("append", out.api)], "TRUE", out.fields, NONE, NONE)
            res.append((q, error))
        return res

    def tombstones(self, ctx: Path, outs: list) -> None:
        stones = [o.on for o in outs if o.kind == "tombstone"]
        if stones:
            cond = "TRUE" if "TRUE" in stones else "(" + " \\/ ".join(stones) + ")"
            self._effect(ctx, ROUTE_EFFECTS[("tombstone", "")], cond, {}, NONE, NONE)

    def routed(self, ctx: Path, trigger: str) -> None:
        self._effect(ctx, ISSUED, "TRUE", {}, NONE, NONE)

    def in_state(self, ctx: Path, state: int) -> list:
        if ctx.known is not None and state not in ctx.known:
            return [(ctx, False)]
        if ctx.eager >= EAGER_LIMIT:
            raise ExportError("the eager re-check nests deeper than the export's bound")
        ctx.eager += 1
        if ctx.known == frozenset({state}):
            return [(ctx, True)]
        other = ctx.copy()
        is_in = f"{ctx.w}.state = {literal(state, _STATE_T)}"
        ctx.frames.append(("if", is_in))
        ctx.known = frozenset({state})
        other.frames.append(("if", f"{other.w}.state # {literal(state, _STATE_T)}"))
        if other.known is not None:
            other.known = other.known - {state}
        return [(ctx, True), (other, False)]

    # -- the host of spec/world_step.py: the world's step as TLA+ text -------------------------

    def run(self, d, arg) -> list:
        """Every way through disjunct `d` of Next (spec/world_step.py) from the world as it is, its
        argument `arg` the action's (`c`, `m`, or None): each ends in the next state (Goto), or
        stutters where a bound of the search cuts it (Cut: unless it broke a check on its way, which
        the explicit checker reports before it cuts)."""
        self._cuts: list = []
        start = Path()
        start.frames.append(("let", "w0", "World"))
        ends = world_step(self, start, d, arg)
        for q in ends:
            q.frames.append(("goto", q.w, q.broken))
        return ends + self._cuts

    def split(self, ctx: Path, cond, params: dict) -> list:
        text = to_tla(cond, self.env(ctx.w, params, _present_params(params)))
        if text in ("TRUE", "FALSE"):
            return [(ctx, text == "TRUE")]
        other = ctx.copy()
        ctx.frames.append(("if", text))
        other.frames.append(("if", f"~({text})"))
        return [(ctx, True), (other, False)]

    def value(self, ctx: Path, term, params: dict) -> Tx:
        return Tx(to_tla(term, self.env(ctx.w, params, _present_params(params))))

    def effect(self, ctx: Path, effect, params: dict) -> None:
        self._effect(ctx, effect, "TRUE", {}, NONE, NONE, extra=params)

    def request(self, ctx: Path, slot, client, what: str) -> tuple[dict, object]:
        req = {t.data: Tx(f"{ctx.w}.{v}[{client}]") for t, v in zip(REQ.values(), slot.vars[1:])}
        inst = self.instance()
        req["client_instance"] = NONE if inst is None else inst
        return req, inst

    def fire_client(self, ctx: Path, trigger: str, client) -> list:
        rows = CLIENT_ROWS if self.model.client_rows is None else self.model.client_rows
        f = ctx.name("f")
        ctx.frames.append(("let", f, f"{self.first(trigger, rows, client=True)}({ctx.w}, {client})"))
        res = []
        for r in rows:
            if r.trigger != trigger:
                continue
            op = self.op(r, client=True)
            q = ctx.copy()
            w = q.name("w")
            q.frames += [("comment", r.name), ("if", f'{f} = "{op.name}"'), ("let", w, f"{op.name}({ctx.w}, {client}).w")]
            q.w = w
            res.append((q, r))
        return res

    def answer_to(self, ctx: Path, sender, echo) -> None:
        ctx.sender, ctx.echo = sender, echo

    def label(self, ctx: Path, text: str) -> None:
        """Steps are not named in the module: its actions are."""

    def cut(self, ctx: Path) -> None:
        ctx.frames.append(("cut", ctx.w, ctx.broken))
        self._cuts.append(ctx)

    def instance(self):
        """The clients' group.instance.id: the module declares every client alike."""
        inst = self.cfg.instances or (None,) * self.cfg.clients
        if len(set(inst)) != 1:
            raise ExportError("clients with different group.instance.ids: the export declares every client "
                              "alike (one symmetry class); give every client the same --instances")
        return inst[0]

    def blank(self, name: str):
        flat = dict(zip((v.name for v in ALL_VARS), self.model.flat(self.model.init_states()[0])))
        return flat[name][0]


def _present_params(params: dict) -> frozenset:
    return frozenset(n for n, v in params.items() if _present(v))


def _handed(outputs: list) -> str:
    """Whether a row's outputs hand out an assignment (spec/invariants.py HANDS_OUT), as TLA+."""
    ways = []
    for o in outputs:
        if o.kind not in HANDS_OUT.kinds or o.api != HANDS_OUT.api:
            continue
        err = o.fields.get("error")
        if isinstance(err, Tx):
            is_none = f'{err} = "{HANDS_OUT.error}"'
        elif err == ERRORS.index(HANDS_OUT.error):
            is_none = "TRUE"
        else:
            continue
        way = " /\\ ".join(x for x in (o.on, is_none) if x != "TRUE") or "TRUE"
        if way == "TRUE":
            return "TRUE"
        ways.append(f"({way})")
    return " \\/ ".join(ways) or "FALSE"


def _present(v) -> bool:
    if isinstance(v, Tx):
        return v in ("c", "m") or v.isdigit()
    return v is not None and v != NONE


_OUT_T = {t.data for t in OUT.values()}
# every parameter a term printed here may read: the triggers', a route effect's, the client's, a request's
_PARAM_T = {**PARAM_TYPES, "sender": SENDER.type, "at": AT.type, "client": C.type,
            **{t.data: t.type for t in OUT.values()}, **{t.data: t.type for t in REC.values()},
            **{t.data: t.type for t in REQ.values()}, "client_instance": PARAM_TYPES["instance"]}
