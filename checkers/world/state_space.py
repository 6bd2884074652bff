"""The closed world as a transition system for the explicit-state checker.

`WorldModel(cfg).successors(state)` gives every (step, next state) from a
world state.  Protocol decisions are made by the table's rows only: the
coordinator's (spec/table.py) and the clients' (spec/world.py).  What this
module adds is the network: a request is delivered by firing the
coordinator trigger of its kind with the request's fields as parameters; a
reply goes back to the sender, a parked request's answer to the client
whose request was parked.

Time is abstract: an armed timer may fire at any moment (a timeout can
always be reached under delays), so every timing of the protocol is
explored.  Log appends complete at once, successfully or (with the
append-failure fault) with an error.

State representation (the hot path of the search).  The spec declares the
world variable by variable (`ALL_VARS`: the group's, then per-client maps,
then the shared network/log ones).  The checker stores it client by client
instead:

    (G, C_0, ..., C_{n-1})

`G` is the group's variables followed by the shared ones, `C_i` is client
i's entry of every per-client map.  Then a client's step replaces one
element, renaming clients is sorting the `C_i`, and every action's effect
is a function of a small part of the state that recurs across many world
states, so each is computed once (by the table's compiled rows) and
memoized:

- a client's own moves: keyed by (client, C_i);
- delivering client i's request: keyed by (G, client, the request);
- timers and failover: keyed by G.

`flat(state)` gives the spec's variable-by-variable view, which
counterexamples and invariants read.

`WorldModel` is the checkers' model (`checkers/search/model.py`): the engines in
`search/explicit.py` and `search/mutate.py` search it through that interface only.  Its
symmetry is renaming clients (`representative`, `orbit`); the fairness of
its steps is what spec/world.py declares for their actions (`action_class`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import partial
from math import factorial

from groupspec.spec import engine as E
from groupspec.spec.assignors import range_assign
from groupspec.spec.invariants import (INVARIANTS, InvariantViolation, check_after_row,
                                       compiled as compiled_invariants)
from groupspec.spec.concrete import Layout, compile_term, iter_bits, mask_of
from groupspec.spec.handling import EAGER, RECORD_FIELDS, Eager, handle, leave, require_known_member_id, vote
from groupspec.spec.kafka import ERRORS, NEWEST_VERSION
from groupspec.spec.lang import NONE, Or
from groupspec.spec.rows import ECHO
from groupspec.spec.schema import MEMBER, STATE_VARS, STATES
from groupspec.spec.table import TIMER_TRIGGERS, rows_for
from groupspec.spec.world import (WORLD_COORDINATOR, ACTION_BY_NAME, ACTIONS, ALL_VARS, ENDED, FAILOVER, FORGOTTEN, FRESH, ISSUED,
                                  MESSAGES, N_GROUP, OUT, REQ, RESPONSE_VARS, ROUTE_EFFECTS, TIMER_LABELS, WHO,
                                  WORLD_INDEX, WORLD_INVARIANT_PARAMS, WORLD_INVARIANTS, WORLD_PARAMS, Kind,
                                  append_errors, armed, fairness, fixed_params)

from .clients import (CLIENT_VARS, CP, LATE, N_CV, NRQ, PHASE, RQ, RS, ClientRows, check_touches,
                      client_triggers, enabled_by as _enabled_by, initial as _initial)
from groupspec.checkers.search.model import Model, Property
from .presets import WorldConfig

ABSENT = STATES.index("Absent")
PREPARING = STATES.index("PreparingRebalance")
# the states a fair behaviour may not stay among forever: a group in a rebalance
IN_REBALANCE = frozenset({PREPARING, STATES.index("CompletingRebalance")})

# -- the client-major layout (a client's tuple: checkers/world/clients.py) --------------------------------
SHARED_VARS = [i for i in range(N_GROUP, len(ALL_VARS)) if i not in CLIENT_VARS]
# flat() relies on the spec's order: group variables, then the per-client maps, then the shared ones
assert CLIENT_VARS == list(range(N_GROUP, N_GROUP + N_CV)) and SHARED_VARS == list(range(N_GROUP + N_CV,
                                                                                          len(ALL_VARS)))
GP = {ALL_VARS[i].name: N_GROUP + k for k, i in enumerate(SHARED_VARS)}  # position of a shared var in G
GP.update({v.name: i for i, v in enumerate(STATE_VARS)})
# The wide view a route's effect is evaluated on: G (the group's and the shared variables, where
# they sit in G) followed by the clients' columns, so that G is extended, not rebuilt.
WIDE_INDEX = {**GP, **{ALL_VARS[i].name: len(GP) + k for k, i in enumerate(CLIENT_VARS)}}
RS_VARS = [WIDE_INDEX[v] for v in RESPONSE_VARS]      # a response's variables in the wide view
RS_VAR = RS_VARS[0]
G_LEN = len(GP)
PJ, PS, LOG_HAS, LOG = (GP[n] for n in ("parked_join", "parked_sync", "log_has", "log"))
G_MEMBERS, G_PENDING, G_GEN = E.STATE_INDEX["members"], E.STATE_INDEX["pending"], E.STATE_INDEX["generation"]
C_PHASE = CP["c_phase"]
_CACHE_LIMIT = 1_500_000      # entries per memo table before it is dropped (bounds memory on huge worlds)
# time is abstract here: timer deadlines (arm/cancel outputs) are not needed
SKIPPED_OUTPUTS = ("arm", "cancel", "cancel_all", "delete_offsets")


class _Assignor:
    """The leader's assignor: Range over the member list (ids sorted as their slots), memoized."""

    def __init__(self, cfg: WorldConfig):
        self.n = cfg.sizes()[MEMBER]
        self.topics = {f"t{t}": cfg.partitions for t in range(cfg.topics)}
        parts = [(f"t{t}", p) for t in range(cfg.topics) for p in range(cfg.partitions)]
        self.part_index = {tp: i for i, tp in enumerate(parts)}
        self.cache: dict = {}

    def __call__(self, members: int) -> tuple:
        got = self.cache.get(members)
        if got is None:
            names = {f"m{m:03d}": m for m in iter_bits(members)}
            res = range_assign(self.topics, {n: list(self.topics) for n in names})
            out = [0] * self.n
            for n, parts in res.items():
                out[names[n]] = sum(1 << self.part_index[p] for p in parts)
            got = self.cache[members] = tuple(out)
        return got


@dataclass(frozen=True, eq=False)
class Step:
    """One transition: what happened, and which rows decided it.  Steps are made once per
    memoized move and compared by identity (the search counts them per transition)."""
    action: str
    rows: tuple
    messages: tuple = ()     # (from, to, label) for sequence diagrams
    act: str = ""            # the declared action it is (spec/world.py ACTIONS)
    who: tuple = ()          # what the action's fairness is about: its client, message or member


class _Branch:
    """One branch of a coordinator step in the closed world (spec/handling.py's `ctx`): the
    world's G being changed, the rows fired, the messages sent, the responses written
    {client: response}, who sent the request being handled (NONE: nobody waits) and the member
    id its reply echoes."""
    __slots__ = ("w", "rows", "msgs", "resp", "sender", "echo", "g", "p")

    def __init__(self, G, sender: int, echo: int):
        self.w, self.rows, self.msgs, self.resp, self.sender, self.echo = list(G), [], [], {}, sender, echo

    def copy(self) -> "_Branch":
        b = _Branch.__new__(_Branch)
        b.w, b.rows, b.msgs, b.resp = list(self.w), list(self.rows), list(self.msgs), dict(self.resp)
        b.sender, b.echo, b.g, b.p = self.sender, self.echo, self.g, self.p
        return b


# the closed world's one protocol list holds its one protocol
_ORDER = (0,)


def _one_protocol(pl: int, protocol: int) -> int:
    """A protocol list cut to the selected protocol: in a world of one protocol, the list itself."""
    return pl




class WorldModel(Model):
    def __init__(self, cfg: WorldConfig, rows: list | None = None, eager: Eager = EAGER,
                 client_rows: list | None = None, keep_firings: bool = False):
        """`rows`: the coordinator's table (default: the spec's; a mutant's when testing the checker).
        `eager`: the re-check after every row (spec/handling.py; another one plants a bug).
        `client_rows`: the clients' table (default: spec/world.py's).
        `keep_firings`: keep every coordinator firing the searches make, for `firings()` (mutation
        testing compares a mutant's rows with them; small worlds only: the memo is never dropped)."""
        self.cfg = cfg
        self.rows = rows                  # the world instance, read by the other interpreters (BMC, TLA+)
        self.client_rows = client_rows
        self.eager = eager
        self.n = cfg.clients
        self.sizes = cfg.sizes()
        self.group = E.Engine(rows_for(WORLD_COORDINATOR, rows), skip_outputs=SKIPPED_OUTPUTS)
        # apart from the model, so that the model is in no reference cycle and is freed at once
        self.assign = _Assignor(cfg)
        names = list(E.PARAM_NAMES) + list(WORLD_PARAMS)
        self.space = E.Space(Layout(WORLD_INDEX, {n: i for i, n in enumerate(names)}), names)
        self.clients = ClientRows(client_rows)
        self.base = {"coord": 0, "group_id_ok": True, "cfg_min_session_ms": 10, "cfg_max_session_ms": 600_000,
                     "cfg_max_size": cfg.max_size, "cfg_initial_delay_ms": 3_000,
                     "cfg_new_member_timeout_ms": 300_000,
                     # the closed world describes one coordinator (spec/world.py WORLD_COORDINATOR)
                     "cfg_new_coordinator": WORLD_COORDINATOR,
                     "proto_names": lambda pl: mask_of(_ORDER) if pl != NONE else 0,
                     "vote": lambda pl, c: vote(_ORDER, c) if pl != NONE else NONE, "supports_skip": True,
                     "assign": self.assign}
        self._base_vector = [None] * len(names)
        for k, v in self.base.items():
            self._base_vector[self.space.param_index[k]] = v
        # per client: a static member (group.instance.id) never sends LeaveGroup
        inst = cfg.instances or (None,) * cfg.clients
        self.triggers = [client_triggers(cfg, inst[c] is not None) for c in range(cfg.clients)]
        self._fixed = fixed_params(self.sizes)
        _check_locality()
        # the routes' effects, compiled over the spec's flat view of the world
        names = ["sender", "at", "selected_only", *(t.data for t in OUT.values()), *("rec." + k for k in RECORD_FIELDS)]
        self._route_index = {n: i for i, n in enumerate(names)}
        self._route_base = [None] * len(names)
        self._route_base[self._route_index["selected_only"]] = self.selected_only = _one_protocol
        lay = Layout(WIDE_INDEX, self._route_index)
        self._effects = {key: (compile_term(e.when, lay), [(WIDE_INDEX[v], compile_term(t, lay))
                                                           for v, t in e.updates.items()])
                         for key, e in {**ROUTE_EFFECTS, "forget": FAILOVER.forget}.items()}
        self._failover_when = compile_term(FAILOVER.when, lay)
        # member ids never reused, a closing client's parked answers dropped: effects on G alone
        from groupspec.spec.lang import walk
        assert all(WIDE_INDEX[n.data] < G_LEN for e in (ISSUED, FORGOTTEN) for t in (e.when, *e.updates.values())
                   for n in walk(t) if n.op == "var"), "ISSUED and FORGOTTEN read G only"
        self._issued = [(WIDE_INDEX[v], compile_term(t, Layout(WIDE_INDEX, {}))) for v, t in ISSUED.updates.items()]
        self._forgotten = [(WIDE_INDEX[v], compile_term(t, Layout(WIDE_INDEX, {"client": 0})))
                           for v, t in FORGOTTEN.updates.items()]
        self._fresh = compile_term(FRESH, lay)
        self._ended = compile_term(ENDED, Layout(WORLD_INDEX, {}))
        self._failover_record = compile_term(FAILOVER.record, lay)
        # what a request is to the coordinator (spec/world.py WHO, MESSAGES): terms over the request
        # and the group's variables (which G holds at their places in the flat view)
        req = Layout(WORLD_INDEX, {n: i for i, n in enumerate([*(t.data for t in REQ.values()), "client_instance"])})
        _reads_group_only([*WHO.values(), *(t for m in MESSAGES.values() for t in m.fields.values())])
        self._who = [(k, compile_term(t, req)) for k, t in WHO.items()]
        self._fields = {name: [(k, compile_term(t, req)) for k, t in m.fields.items()] for name, m in MESSAGES.items()}
        # the timers that may fire, when (table.TIMERS: each armed timer of a trigger), per member or not
        self._timers = []
        for a in ACTIONS:
            if a.trigger in TIMER_TRIGGERS.values() and _enabled_by(a, cfg):
                conds = armed(a.trigger, cfg.timely)
                if conds:
                    self._timers.append((a.trigger, a.per == "member", compile_term(Or(*conds), E.LAYOUT)))
        self._timer_params = {m: E.make_params({"timer_member": m}) for m in range(-1, self.sizes[MEMBER])}
        self._gcache: dict = {}       # group engine firings: (g, trigger, params) -> outcomes
        self.keep_firings = keep_firings
        self._moves: dict = {}        # (client, C_i) -> client moves
        # G is hashed once per state, into a number the other memo tables are keyed by (CPython does
        # not cache a tuple's hash, and G is the biggest part of a state); numbers are never reused
        self._gids: dict = {}         # G -> its number
        self._next_gid = 0
        self._deliveries: dict = {}   # (G's number, client, late?, request) -> deliveries
        self._events: dict = {}       # G's number -> timer and failover steps
        self._ginv: dict = {}         # G's number -> the coordinator invariant it breaks, or None
        self._winv: dict = {}         # (G's number, clients' leading variables) -> the invariant broken, or None
        self._inv_width = _invariant_width()
        self.world_invariants = [(inv, compile_term(inv.formula, Layout(WORLD_INDEX, {n: i for i, n in
                                                                           enumerate(WORLD_INVARIANT_PARAMS)})))
                                 for inv in world_invariants(cfg)]
        self._inv_params = [cfg.max_generation]
        self.group_invariants = [(inv, f) for inv, f in compiled_invariants() if inv.kind == "state"]
        self._init = self.unflat(tuple(_initial(v.type, v.initial, self.sizes) for v in ALL_VARS))
        self._blank = self.flat(self._init)
        self._no_request = self._init[1][RQ[0]:RQ[0] + NRQ]
        self._no_late = self._init[1][LATE[0]:LATE[0] + NRQ]
        self._no_park = self._init[0][PJ]
        self._blank_columns = list(self._blank[N_GROUP:N_GROUP + N_CV])
        # renaming clients: those configured alike (the same group.instance.id) are interchangeable
        self._classes = cfg.symmetry_classes()
        self._one_class = len(self._classes) == 1

    def recipe(self) -> partial:
        """This model again: its class, configuration, rows and eager rule (not its memo tables)."""
        return partial(type(self), self.cfg, self.rows, self.eager, self.client_rows)

    def invariants(self) -> list[str]:
        """What `successors` (steps and outputs, after every row) and `violated` (states) check."""
        return [i.name for i in INVARIANTS if i.kind in ("state", "step", "output")] + \
            [i.name for i in world_invariants(self.cfg)]

    def failing_step(self, e: InvariantViolation) -> Step:
        row = getattr(e, "row", "")
        return Step(f"row {row!r} breaks {e.invariant.name}", (row,) if row else ())

    def shard_key(self, s: tuple) -> tuple:
        return s[0]         # G: deliveries, timers and invariants are memoized on it

    def firings(self):
        """(g, trigger, params, outcomes) of every coordinator firing made so far (`keep_firings`)."""
        for (g, trigger, p), outcomes in self._gcache.items():
            yield g, trigger, p, outcomes

    # -- the world and its two views --------------------------------------------------

    def init_states(self) -> list[tuple]:
        return [self._init]

    def flat(self, s: tuple) -> tuple:
        """The spec's view: one value per variable of ALL_VARS (per-client maps as tuples)."""
        g = s[0]
        return g[:N_GROUP] + tuple(zip(*s[1:])) + g[N_GROUP:]

    def unflat(self, f: tuple) -> tuple:
        g = f[:N_GROUP] + f[N_GROUP + N_CV:]
        return (g,) + tuple(zip(*f[N_GROUP:N_GROUP + N_CV]))

    def params(self, **kw) -> list:
        p = list(self._base_vector)
        idx = self.space.param_index
        for k, v in kw.items():
            p[idx[k]] = v
        return p

    # -- successors -------------------------------------------------------------------

    def successors(self, s: tuple) -> tuple[list[tuple[Step, tuple]], int]:
        """Every (step, next state), and how many successors a bound cut off."""
        out: list = []
        cut = 0
        G = s[0]
        gi = self._gid(G)
        n = self.n
        for c in range(n):
            C = s[c + 1]
            for step, C2 in self._client_moves(c, C):
                if ACTION_BY_NAME[step.act].forgets and (c in G[PJ] or c in G[PS]):
                    # the client closed its connection: an answer to its parked request is
                    # never delivered to it (the coordinator still answers into nothing)
                    G2 = list(G)
                    for i, f in self._forgotten:
                        G2[i] = f(G, (c,), ())
                    out.append((step, (tuple(G2),) + s[1:c + 1] + (C2,) + s[c + 2:]))
                    continue
                out.append((step, s[:c + 1] + (C2,) + s[c + 2:]))
            if C[RQ[0]]:
                got, k = self._delivery(G, gi, c, False, C)
                cut += k
                for step, G2, patches, keep in got:
                    C2 = C if keep else C[:RQ[0]] + self._no_request + C[RQ[0] + NRQ:]
                    out.append((step, _apply(s, G2, c, C2, patches)))
            if C[LATE[0]]:
                got, k = self._delivery(G, gi, c, True, C)
                cut += k
                for step, G2, patches, keep in got:
                    C2 = C[:LATE[0]] + self._no_late + C[LATE[0] + NRQ:]
                    out.append((step, _apply(s, G2, c, C2, patches)))
        got, k = self._group_events(G, gi)
        cut += k
        for step, G2, patches in got:
            out.append((step, _apply(s, G2, -1, None, patches)))
        return out, cut

    def _client_moves(self, c: int, C: tuple) -> list:
        key = (c, C)
        got = self._moves.get(key)
        if got is None:
            if len(self._moves) > _CACHE_LIMIT:
                self._moves.clear()
            got = self._moves[key] = self._compute_client_moves(c, C)
        return got

    def _compute_client_moves(self, c: int, C: tuple) -> list:
        """Client c's own steps in local state C: its rows (checkers/world/clients.py), then the network's
        losses of what it has in flight."""
        out = []
        for trig in self.triggers[c]:
            for row, C2 in self.clients.fire(C, trig, self.assign):
                out.append((Step(f"c{c}: {row.name}", (row.name,), (), trig, (c,)), C2))
        if self._on("LoseRequest") and C[RQ[0]]:
            out.append((Step(f"the network loses c{c}'s request", (), (), "LoseRequest", (c,)),
                        C[:RQ[0]] + self._no_request + C[RQ[0] + NRQ:]))
        if self._on("LoseResponse") and C[RS]:
            out.append((Step(f"the network loses the response to c{c}", (), (), "LoseResponse", (c,)),
                        C[:RS] + self._init[1][RS:]))
        return out

    def _gid(self, G: tuple) -> int:
        i = self._gids.get(G)
        if i is None:
            if len(self._gids) > _CACHE_LIMIT:
                self._gids.clear()
            i = self._gids[G] = self._next_gid
            self._next_gid += 1
        return i

    def _delivery(self, G: tuple, gi: int, c: int, late: bool, C: tuple):
        """Delivering client c's request (or its late one): [(step, G', patches, keep in flight)], cut."""
        at = LATE[0] if late else RQ[0]
        req = C[at:at + NRQ]
        key = (gi, c, late, req)
        got = self._deliveries.get(key)
        if got is None:
            if len(self._deliveries) > _CACHE_LIMIT:
                self._deliveries.clear()
            got = self._deliveries[key] = self._compute_delivery(G, c, late, req)
        return got

    def _group_events(self, G: tuple, gi: int):
        got = self._events.get(gi)
        if got is None:
            if len(self._events) > _CACHE_LIMIT:
                self._events.clear()
            got = self._events[gi] = self._compute_group_events(G)
        return got

    # -- what the coordinator does (computed once per key) -------------------------------

    def _keep(self, results: list) -> tuple[list, int]:
        """The results within the generation bound, and how many the bound cut off.  With a
        rebalance budget the bound is a property: one generation past it is kept, for the
        invariant `rebalance-budget` to report."""
        bound = self.cfg.max_generation + (1 if self.cfg.rebalance_budget else 0)
        kept = [r for r in results if r[1][G_GEN] <= bound]
        return kept, len(results) - len(kept)

    def _compute_group_events(self, G: tuple):
        res = []
        for trigger, per_member, is_armed in self._timers:
            for m in range(self.sizes[MEMBER]) if per_member else (NONE,):
                if is_armed(G, self._timer_params[m], ()):
                    label = TIMER_LABELS[trigger].format(member=m)
                    res += self._coordinator(G, trigger, {"timer_member": m} if per_member else {}, label, m)
        if self._on("Failover") and G[E.STATE_I] != ABSENT:
            res += self._failover(G)
        return self._keep(res)

    def _coordinator(self, G: tuple, trigger: str, params: dict, label: str, who=None) -> list:
        return [(Step(label, tuple(b.rows), tuple(b.msgs), trigger, (who,)), tuple(b.w), _patches(b.resp))
                for b, _ in handle(self, _Branch(G, NONE, NONE), trigger, params)]

    def _on(self, action: str) -> bool:
        """Whether the world's switches enable a declared action (spec/world.py ACTIONS)."""
        return _enabled_by(ACTION_BY_NAME[action], self.cfg)

    # -- the host of spec/handling.py: what a step does to the closed world ----------------

    def outcomes(self, b: "_Branch", trigger: str, params: dict) -> list:
        b.p = p = self.params(**params)
        b.g = g = tuple(b.w[:N_GROUP])
        return self._group_fire(g, trigger, p)

    def fork(self, b: "_Branch") -> "_Branch":
        return b.copy()

    def enter(self, b: "_Branch", o, params: dict) -> None:
        try:
            # after every row, as the runtime checks them: a world step may chain rows
            # (unload then load, an append and its completion), and a row's broken state
            # must not hide behind the next row's
            check_after_row(b.g, o.state, b.p, o.outputs, where=f"after row {o.row.name!r}")
        except InvariantViolation as e:
            e.row = o.row.name      # the counterexample's last step names the row that broke it
            raise
        b.w[:N_GROUP] = o.state
        b.rows.append(o.row.name)

    def route(self, b: "_Branch", out) -> None:
        # timers: time is abstract here, the engine skips their outputs (SKIPPED_OUTPUTS)
        self._effect(b, (out.kind, out.api), out.fields, out.member if out.kind == "answer" else b.echo,
                     member=out.member)

    def append(self, b: "_Branch", out) -> list:
        errors = append_errors(out.api, self.cfg)
        res = []
        for error in errors:
            b2 = b.copy() if error != errors[-1] else b
            if error == "NONE":
                self._effect(b2, ("append", out.api), out.fields, NONE)
            res.append((b2, error))
        return res

    def tombstones(self, b: "_Branch", outs: list) -> None:
        if any(o.kind == "tombstone" for o in outs):
            self._effect(b, ("tombstone", ""), {}, NONE)

    def _effect(self, b: "_Branch", key: tuple, fields: dict, echo: int, member: int = NONE) -> None:
        """Apply a route's effect on the closed world (spec/world.py ROUTE_EFFECTS, compiled):
        the shared variables in G change in place, a response goes to its client's slot."""
        when, updates = self._effects[key]
        w = b.w
        wide = w + self._blank_columns
        p = self._route_vector(b.sender, fields, echo, member)
        if not when(wide, p, ()):
            return
        new = [(i, f(wide, p, ())) for i, f in updates]
        to = NONE
        for i, v in new:
            if i < G_LEN:
                w[i] = v
            elif i == RS_VAR:
                to = next(c for c, k in enumerate(v) if k)
        if to != NONE:
            cols = dict(new)
            b.resp[to] = r = tuple(cols[i][to] for i in RS_VARS)
            b.msgs.append(("coordinator", f"c{to}", f"{Kind.values[r[0]]} {ERRORS[r[1]]}"))

    def _wide(self, w) -> list:
        """G extended with blank clients' columns: what a route's effect, FRESH and FAILOVER read."""
        return list(w) + self._blank_columns

    def _route_vector(self, sender: int, fields: dict, echo: int, member: int) -> list:
        p = list(self._route_base)
        idx = self._route_index
        p[idx["sender"]] = sender
        p[idx["at"]] = member
        for k, v in fields.items():
            at = idx.get("out." + k)
            if at is not None:
                p[at] = echo if v is ECHO else v
            at = idx.get("rec." + k)
            if at is not None:
                p[at] = v
        return p

    def routed(self, b: "_Branch", trigger: str) -> None:
        w = b.w
        for i, f in self._issued:
            w[i] = f(w, (), ())

    def in_state(self, b: "_Branch", state: int) -> list:
        return [(b, b.w[E.STATE_I] == state)]

    def _group_fire(self, g: tuple, trigger: str, p: list):
        key = (g, trigger, tuple(p))
        got = self._gcache.get(key)
        if got is None:
            if len(self._gcache) > _CACHE_LIMIT and not self.keep_firings:
                self._gcache.clear()
            got = self._gcache[key] = self.group.fire(g, trigger, p)
        return got

    def _compute_delivery(self, G: tuple, c: int, late: bool, req: tuple):
        kind, mid, gen, assign, parts = req
        name = Kind.values[kind]
        msg = MESSAGES[name]
        inst = self.cfg.instances[c] if self.cfg.instances else None
        what = f"late {name}" if late else name
        label = f"deliver c{c}'s {what}"
        sent = ((f"c{c}", "coordinator", f"{what} m{mid}" if mid != NONE else what),)
        # nobody waits for the answer to a late request, nor to a LeaveGroup
        sender = NONE if late or not msg.answered else c
        p = [mid, gen, assign, parts, NONE if inst is None else inst]
        params = {**{k: f(G, p, ()) for k, f in self._who}, **self._fixed[name],
                  **{k: f(G, p, ()) for k, f in self._fields[name]}}
        if msg.api == "JoinGroup":
            params["fresh"] = fresh = self._fresh(self._wide(G), self._route_base, ())
            if mid == NONE and fresh == NONE:
                return [], 1     # the world's member-id budget is spent: a bound, not a behaviour
            params["require_known"] = require_known_member_id(NEWEST_VERSION["JoinGroup"], inst)
        start = _Branch(G, sender, mid)          # a reply's echoed member id is the request's
        if msg.api == "LeaveGroup":
            who = {k: params[k] for k in ("member", "member_empty", "instance")}
            ends = [b for b, _, _ in leave(self, start, {}, [who])]
        else:
            ends = [b for b, _ in handle(self, start, msg.api, params)]
        act = "DeliverLate" if late else "Deliver"
        res = []
        for b in ends:
            G2, rows, msgs = tuple(b.w), tuple(b.rows), sent + tuple(b.msgs)
            res.append((Step(label, rows, msgs, act, (c, kind)), G2, _patches(b.resp), False))
            if self.cfg.duplication and not late:
                res.append((Step(label + " (a copy stays in flight)", rows, msgs, "Duplicate", (c, kind)), G2,
                            _patches(b.resp), True))
        return self._keep(res)

    def _failover(self, G: tuple) -> list:
        """The coordinator moves (spec/world.py FAILOVER): unloaded here, loaded from the log there."""
        F = FAILOVER
        res = []
        for b, _ in handle(self, _Branch(G, NONE, NONE), F.unload, {}):
            self._effect(b, "forget", {}, NONE)
            wide = self._wide(b.w)
            if self._failover_when(wide, self._route_base, ()):
                for b2, _ in handle(self, b, F.load, {"record": self._failover_record(wide, self._route_base, ())}):
                    res.append((Step("coordinator failover: unload, load the last record", tuple(b2.rows),
                                     tuple(b2.msgs), "Failover"), tuple(b2.w), _patches(b2.resp)))
            else:
                res.append((Step("coordinator failover: unload (no record to load)", tuple(b.rows), tuple(b.msgs),
                                 "Failover"), tuple(b.w), _patches(b.resp)))
        return res

    # -- properties -----------------------------------------------------------------

    def violated(self, s: tuple) -> str | None:
        """The name of the first invariant state `s` breaks (coordinator and closed world).
        Both verdicts are memoized on what the invariants read: the coordinator's on G, the
        closed world's on G and each client's first `_inv_width` variables."""
        G = s[0]
        gi = self._gid(G)
        key = (gi, tuple(C[:self._inv_width] for C in s[1:]))
        bad = self._winv.get(key, 0)
        if bad != 0:
            return bad
        bad = self._ginv.get(gi, 0)
        if bad == 0:
            g = G[:N_GROUP]
            bad = next((inv.name for inv, f in self.group_invariants if not f(g, [], ())), None)
            if len(self._ginv) > _CACHE_LIMIT:
                self._ginv.clear()
            self._ginv[gi] = bad
        if not bad:
            f = self.flat(s)
            bad = next((inv.name for inv, ok in self.world_invariants if not ok(f, self._inv_params, ())), None)
        if len(self._winv) > _CACHE_LIMIT:
            self._winv.clear()
        self._winv[key] = bad
        return bad

    def properties(self) -> list[Property]:
        """The invariants of states as values (the coordinator's, then the closed world's): what `violated`
        decides, without its memo.  The invariants of steps and outputs are checked in `successors`."""
        group = [Property(inv.name, lambda s, f=f: bool(f(s[0][:N_GROUP], [], ()))) for inv, f in self.group_invariants]
        world = [Property(inv.name, lambda s, ok=ok: bool(ok(self.flat(s), self._inv_params, ())))
                 for inv, ok in self.world_invariants]
        return group + world

    def progress(self, s: tuple) -> bool:
        """Some client holds an assignment (Kafka promises a consumer that keeps trying one)."""
        return any(C[C_PHASE] == PHASE["stable"] for C in s[1:])

    def transient(self, s: tuple) -> bool:
        """The group is in a rebalance: a fair behaviour leaves it (the class of KAFKA-12890)."""
        return s[0][E.STATE_I] in IN_REBALANCE

    def is_end(self, s: tuple) -> bool:
        """A legitimate end: the world has ended (spec/world.py ENDED: every client has left,
        crashed or hangs)."""
        return self._ended(self.flat(s), (), ())

    # -- fairness, as the world's actions declare it (spec/world.py ACTIONS) ----------------

    def action_class(self, step: Step) -> tuple:
        """One class per action, or per process of actions, and per what the fairness is about
        (its client, message or member)."""
        a = ACTION_BY_NAME[step.act]
        return (a.process or a.name, *step.who), fairness(a, self.cfg.timely)

    def covered(self, step: Step) -> tuple[str, ...]:
        return step.rows

    def is_fault(self, step: Step) -> bool:
        return ACTION_BY_NAME[step.act].fault

    # -- symmetry: renaming clients ---------------------------------------------------------
    # A client's key is its own tuple plus the parked requests that refer to it; the
    # representative sorts each class of clients by key and renames the references.

    def _keys(self, s: tuple) -> list:
        G = s[0]
        pj, ps = G[PJ], G[PS]
        return [(s[c + 1], tuple(m for m, x in enumerate(pj) if x == c), tuple(m for m, x in enumerate(ps) if x == c))
                for c in range(self.n)]

    def representative(self, s: tuple) -> tuple:
        G = s[0]
        parked = G[PJ] != self._no_park or G[PS] != self._no_park
        if self._one_class and not parked:      # the common case: sort the clients' tuples
            cl = s[1:]
            srt = tuple(sorted(cl))
            return s if srt == cl else (G,) + srt
        keys = self._keys(s) if parked else [(C,) for C in s[1:]]
        order = list(range(self.n))
        for cls in self._classes:
            for pos, old in zip(cls, sorted(cls, key=keys.__getitem__)):
                order[pos] = old
        return permute(s, tuple(order))

    def orbit(self, s: tuple) -> int:
        """Per class |class|! over the stabilizer (clients with equal keys, which refer to no
        parked request, may be exchanged)."""
        if self._one_class and s[0][PJ] == self._no_park and s[0][PS] == self._no_park:
            cl = s[1:]
            if len(set(cl)) == self.n:          # the common case: every client is different
                return factorial(self.n)
            keys = cl
        else:
            keys = self._keys(s)
        size = 1
        for cls in self._classes:
            size *= factorial(len(cls))
            for k in Counter(keys[c] for c in cls).values():
                size //= factorial(k)
        return size


def permute(s: tuple, order: tuple) -> tuple:
    """Rename clients: new client k is old client order[k]."""
    if list(order) == sorted(order):
        return s
    new_of = {old: new for new, old in enumerate(order)}
    G = list(s[0])
    for at in (PJ, PS):
        G[at] = tuple(NONE if v == NONE else new_of[v] for v in G[at])
    return (tuple(G),) + tuple(s[old + 1] for old in order)


def world_invariants(cfg: WorldConfig) -> list:
    """The closed-world invariants a world checks: all but those it waives, and the rebalance
    budget only where the world makes its generation bound a property."""
    waived = {name for name, _ in cfg.waive}
    return [inv for inv in WORLD_INVARIANTS if inv.name not in waived
            and (inv.name != "rebalance-budget" or cfg.rebalance_budget)]


def _invariant_width() -> int:
    """How many of a client's leading variables the closed-world invariants read (they must
    read none of the others, so that violated() may memoize on them)."""
    from groupspec.spec.lang import walk
    read = {n.data for inv in WORLD_INVARIANTS for n in walk(inv.formula) if n.op == "var"}
    pos = sorted(CP[v] for v in read if v in CP)
    width = pos[-1] + 1 if pos else 0
    return width


def _patches(resp: dict) -> tuple:
    return tuple(sorted(resp.items()))


def _apply(s: tuple, G2: tuple, c: int, C2: tuple | None, patches: tuple) -> tuple:
    """The world after a coordinator step: G replaced, client c's tuple replaced, responses written."""
    if not patches:
        if c < 0:
            return (G2,) + s[1:]
        return (G2,) + s[1:c + 1] + (C2,) + s[c + 2:]
    cl = list(s[1:])
    if c >= 0:
        cl[c] = C2
    for j, r in patches:
        cl[j] = cl[j][:RS] + r
    return (G2, *cl)


def _put(t: tuple, i: int, v) -> tuple:
    if i < 0:
        return t
    return t[:i] + (v,) + t[i + 1:]


def _reads_group_only(terms: list) -> None:
    """Terms evaluated on G read only the group's variables (which sit at their flat-view places in G)."""
    from groupspec.spec.lang import walk
    group = {v.name for v in STATE_VARS}
    for t in terms:
        read = {n.data for n in walk(t) if n.op == "var"}
        if not read <= group:
            raise AssertionError(f"a request's parameter reads {sorted(read - group)}, not the group's variables")


def _check_locality() -> None:
    """The memoized deliveries and timers rely on this: coordinator rows read and write only the
    group's variables (the client rows' locality: checkers/world/clients.py)."""
    from groupspec.spec.table import ROWS
    check_touches(ROWS, {v.name for v in STATE_VARS})
