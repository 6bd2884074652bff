"""The closed world as a transition system for the explicit-state checker.

`WorldModel(cfg).successors(state)` gives every (step, next state) from a
world state.  Nothing of the world's step is written here: it is
spec/world_step.py's Next (a client's rows, the network's losses and
deliveries, the coordinator's timers and failover, the bounds), run with
`WorldModel` as its host, over tuples.  Protocol decisions are made by the
table's rows only: the coordinator's (spec/table.py) and the clients'
(spec/world.py).  What this module adds is the state encoding and the
memoization that make the search fast.

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
from functools import cache, partial
from math import factorial

from groupspec.spec import engine as E
from groupspec.spec.assignors import range_assign
from groupspec.spec.invariants import (INVARIANTS, InvariantViolation, check_after_row,
                                       compiled as compiled_invariants)
from groupspec.spec.concrete import Layout, compile_term, iter_bits, mask_of
from groupspec.spec.footprint import IN_FLIGHT, LOCAL, REFERENCED, VISIBLE
from groupspec.spec.handling import EAGER, RECORD_FIELDS, Eager, vote
from groupspec.spec.kafka import ERRORS
from groupspec.spec.lang import NONE, walk
from groupspec.spec.rows import ECHO
from groupspec.spec.schema import MEMBER, STATE_VARS, STATES
from groupspec.spec.table import rows_for
from groupspec.spec.world import (WORLD_COORDINATOR, ACTION_BY_NAME, ALL_VARS, CLIENT, ENDED, ISSUED, MAX_GENERATION,
                                  N_GROUP, OUT, REQ, RESPONSE_VARS, ROUTE_EFFECTS, WORLD_INDEX, WORLD_INVARIANT_PARAMS,
                                  WORLD_INVARIANTS, WORLD_PARAMS, Kind, append_errors, fairness)
from groupspec.spec.world_step import disjuncts, instance_of, step as world_step, takes

from .clients import CLIENT_VARS, CP, N_CV, PHASE, RS, ClientRows, check_touches, initial as _initial
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
_OBJECT_CACHE_LIMIT = 200_000     # G objects kept alive by the lookup by identity (a G is ~400 bytes)
# What a memo entry holds on average, what it refers to included (steps, G objects, patches): 750
# bytes measured with tracemalloc over `ci`'s memo tables after 300 k states; and how many tables
# a model keeps, each dropped when it passes its limit.
MEMO_BYTES_PER_ENTRY = 750
MEMO_TABLES = 13


def memo_limit_for(gigabytes: float) -> int:
    """The entries each memo table may hold for all of them to stay within `gigabytes`."""
    return max(1_000, int(gigabytes * 1e9 / (MEMO_BYTES_PER_ENTRY * MEMO_TABLES)))


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
    """One branch of a world step (spec/world_step.py's and spec/handling.py's `ctx`): the
    world's G being changed (None in a client's own step, which is memoized without G), the
    acting client `c` and its tuple `C` (in a delivery: what the delivery reads of it), the rows
    fired, the messages sent, the responses written {client: response}, who sent the request
    being handled (NONE: nobody waits), the member id its reply echoes, what the step writes of
    its client's tuple (`cpatch`), the effects on G a client's own step leaves for G (`later`),
    and the step's name."""
    __slots__ = ("w", "c", "C", "rows", "msgs", "resp", "sender", "echo", "cpatch", "later", "label", "g", "p")

    def __init__(self, G, c: int = NONE, C=None):
        self.w = None if G is None else list(G)
        self.c, self.C = c, C
        self.rows, self.msgs, self.resp, self.cpatch, self.later = [], [], {}, {}, []
        self.sender = self.echo = NONE
        self.label = ""
        self.g = self.p = None

    def copy(self) -> "_Branch":
        b = _Branch.__new__(_Branch)
        b.w = None if self.w is None else list(self.w)
        b.c, b.C = self.c, self.C
        b.rows, b.msgs, b.resp, b.cpatch, b.later = (list(self.rows), list(self.msgs), dict(self.resp),
                                                     dict(self.cpatch), list(self.later))
        b.sender, b.echo, b.label, b.g, b.p = self.sender, self.echo, self.label, self.g, self.p
        return b


# the closed world's one protocol list holds its one protocol
_ORDER = (0,)


def _one_protocol(pl: int, protocol: int) -> int:
    """A protocol list cut to the selected protocol: in a world of one protocol, the list itself."""
    return pl




class WorldModel(Model):
    def __init__(self, cfg: WorldConfig, rows: list | None = None, eager: Eager = EAGER,
                 client_rows: list | None = None, keep_firings: bool = False, cache_limit: int = _CACHE_LIMIT):
        """`rows`: the coordinator's table (default: the spec's; a mutant's when testing the checker).
        `eager`: the re-check after every row (spec/handling.py; another one plants a bug).
        `client_rows`: the clients' table (default: spec/world.py's).
        `keep_firings`: keep every coordinator firing the searches make, for `firings()` (mutation
        testing compares a mutant's rows with them; small worlds only: the memo is never dropped).
        `cache_limit`: the entries each memo table may hold before it is dropped (`memo_limit_for`
        a memory budget); a dropped table is filled again as the search goes: slower, same states."""
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
        self.clients = ClientRows.default() if client_rows is None else ClientRows(client_rows)
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
        _check_locality()
        # Terms and effects the world's step (spec/world_step.py) evaluates, compiled on first use over
        # one list of parameters.  A term reads G (the group's and the shared variables, where they sit
        # in G) or one client's own variables (read in a world of that one client, as its rows are);
        # never both: that is what lets a client's own step be memoized without G, and a delivery
        # with only what it reads of its client.
        self._pindex, self._wide_layout, self._client_layout, self._effects, self._issued, self._ended = \
            _step_terms()
        self._pbase = [None] * len(self._pindex)
        self._pbase[self._pindex["selected_only"]] = self.selected_only = _one_protocol
        self._pbase[self._pindex[MAX_GENERATION.data]] = cfg.max_generation
        self._compiled: dict = {}     # id(term or effect) -> (it, whether it reads a client, compiled)
        self._client_memo: dict = {}  # (id(term or effect), a client's tuple) -> its value there
        self._g_terms: dict = {}      # id(term) -> (term, whether it reads a client, compiled)
        self._last_vector = (None, None, None)    # (params, client, their vector)
        # the world's Next, by what each disjunct reads (its scope): a client's own steps, deliveries
        # (a client's request and G), the coordinator's own steps (G)
        self._disjuncts = disjuncts(cfg)
        self._own = [[d for d in self._disjuncts if d.action.how.scope == "client" and takes(d, cfg, c)]
                     for c in range(cfg.clients)]
        self._messages = [d for d in self._disjuncts if d.action.how.scope == "message"]
        self._group_steps = [d for d in self._disjuncts if d.action.how.scope == "group"]
        # a delivery is memoized on the positions of its client's tuple it reads (its slot, what it is
        # offered on, what becomes of the request)
        self._reads = [_client_positions([d.action.how.offered(d.kind), d.action.how.then.when,
                                          *d.action.how.then.updates.values()], d.action.how.slot.vars)
                       for d in self._messages]
        self._gcache: dict = {}       # group engine firings: (g, trigger, params) -> outcomes
        self._passed_rows: dict = {}  # id(outcome) -> (outcome, g, params) it passed check_after_row with
        self.keep_firings = keep_firings
        self.cache_limit = cache_limit        # entries a memo table holds before it is dropped
        self.object_cache_limit = min(cache_limit, _OBJECT_CACHE_LIMIT)
        self._moves: dict = {}        # (client, C_i) -> its own steps, and the deliveries it is offered
        self._later: dict = {}        # (G's number, client, effects) -> G after a client's own step
        self._effects_by_id: dict = {}
        # G is hashed once per state, into a number the other memo tables are keyed by (CPython does
        # not cache a tuple's hash, and G is the biggest part of a state); numbers are never reused
        self._gids: dict = {}         # G -> its number
        self._gid_of_object: dict = {}    # id(G) -> (G, its number)
        self._next_gid = 0
        self._deliveries: dict = {}   # (G's number, client, delivery, what it reads) -> deliveries
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
        self._no_park = self._init[0][PJ]
        self._blank_columns = list(self._blank[N_GROUP:N_GROUP + N_CV])
        self._blank_client = self._init[1]
        # a world of one client, where a client's own terms are read (its client is client 0)
        one = {**self.sizes, CLIENT: 1}
        blank1 = tuple(_initial(v.type, v.initial, one) for v in ALL_VARS)
        self._head1, self._tail1 = blank1[:N_GROUP], blank1[N_GROUP + N_CV:]
        # renaming clients: those configured alike (the same group.instance.id) are interchangeable
        self._classes = cfg.symmetry_classes()
        self._one_class = len(self._classes) == 1
        # partial-order reduction (spec/footprint.py): a client's own steps, where nothing else can reach it
        self._client_acts = {d.action.name for d in self._disjuncts if d.action.how.scope == "client"}
        self._visible = [CP[v] for v in sorted(VISIBLE) if v in CP]
        self._quiet: dict = {}        # (client, C_i) -> its own steps may form an ample set (C_i alone decides)
        self._referenced: dict = {}   # G's number -> for each client, whether a reference variable names it

    def recipe(self) -> partial:
        """This model again: its class, configuration, rows and eager rule (not its memo tables)."""
        return partial(type(self), self.cfg, self.rows, self.eager, self.client_rows, cache_limit=self.cache_limit)

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
        after = self._later
        for c in range(self.n):
            C = s[c + 1]
            own, offered = self._client_part(c, C)
            for step, C2, later in own:
                if later:
                    G2 = after.get((gi, c, later))
                    if G2 is None:
                        G2 = self._after(gi, G, c, later)
                    out.append((step, (G2,) + s[1:c + 1] + (C2,) + s[c + 2:]))
                else:
                    out.append((step, s[:c + 1] + (C2,) + s[c + 2:]))
            for i, key in offered:
                got, k = self._delivery(G, gi, c, i, key)
                cut += k
                for step, G2, patches, runs in got:
                    out.append((step, _apply(s, G2, c, _patched(C, runs), patches)))
        got, k = self._group_events(G, gi)
        cut += k
        for step, G2, patches in got:
            out.append((step, _apply(s, G2, -1, None, patches)))
        return out, cut

    def _client_part(self, c: int, C: tuple) -> tuple:
        key = (c, C)
        got = self._moves.get(key)
        if got is None:
            if len(self._moves) > self.cache_limit:
                self._moves.clear()
            got = self._moves[key] = (self._compute_own(c, C), self._compute_offered(c, C))
        return got

    def _compute_own(self, c: int, C: tuple) -> list:
        """Client c's own steps in local state C (its rows, the network's losses): [(step, C', the
        effects on G it leaves)]."""
        out = []
        for d in self._own[c]:
            for b in world_step(self, _Branch(None, c, C), d, c):
                later = tuple(b.later)
                self._effects_by_id.update((id(e), e) for e in later)
                # the world's effects are made once (spec/world.py): known by identity
                out.append((Step(b.label, tuple(b.rows), (), d.action.name, (c,)), b.C,
                            tuple(id(e) for e in later)))
        return out

    def _compute_offered(self, c: int, C: tuple) -> list:
        """The deliveries client c is offered in local state C: (delivery, what it reads of C)."""
        res = []
        for i, d in enumerate(self._messages):
            if takes(d, self.cfg, c) and self._client_value(d.action.how.offered(d.kind), C, {}):
                res.append((i, tuple(C[p] for p in self._reads[i])))
        return res

    def _after(self, gi: int, G: tuple, c: int, later: tuple) -> tuple:
        """G after the effects a client's own step leaves for it (FORGOTTEN), by their identities."""
        if len(self._later) > self.cache_limit:
            self._later.clear()
        w = list(G)
        for e in later:
            self._world_effect(w, self._effects_by_id[e], {"client": c})
        got = self._later[(gi, c, later)] = tuple(w)
        return got

    def _gid(self, G: tuple) -> int:
        # by identity first: a state's G is most often an object a memo table made, met again and
        # again, and hashing G (36 fields, a dozen of them tuples) was the dearest part of a lookup
        got = self._gid_of_object.get(id(G))
        if got is not None and got[0] is G:
            return got[1]
        i = self._gids.get(G)
        if i is None:
            if len(self._gids) > self.cache_limit:
                self._gids.clear()
            i = self._gids[G] = self._next_gid
            self._next_gid += 1
        if len(self._gid_of_object) > self.object_cache_limit:
            self._gid_of_object.clear()
        self._gid_of_object[id(G)] = (G, i)     # G kept alive with it: its id is not reused meanwhile
        return i

    def _delivery(self, G: tuple, gi: int, c: int, i: int, read: tuple):
        """Delivery i of client c's request: [(step, G', patches, what it writes of C)], cut."""
        key = (gi, c, i, read)
        got = self._deliveries.get(key)
        if got is None:
            if len(self._deliveries) > self.cache_limit:
                self._deliveries.clear()
            d = self._messages[i]
            C = list(self._blank_client)
            for p, v in zip(self._reads[i], read):
                C[p] = v
            self._cuts = 0
            res = [(Step(b.label, tuple(b.rows), tuple(b.msgs), d.action.name, (c, Kind.values.index(d.kind))),
                    tuple(b.w), _patches(b.resp), _runs(b.cpatch))
                   for b in world_step(self, _Branch(G, c, tuple(C)), d, c)]
            got = self._deliveries[key] = (res, self._cuts)
        return got

    def _group_events(self, G: tuple, gi: int):
        got = self._events.get(gi)
        if got is None:
            if len(self._events) > self.cache_limit:
                self._events.clear()
            got = self._events[gi] = self._compute_group_events(G)
        return got

    def _compute_group_events(self, G: tuple):
        """The coordinator's own steps (timers, failover): [(step, G', patches)], cut."""
        res = []
        self._cuts = 0
        for d in self._group_steps:
            for arg in range(self.sizes[MEMBER]) if d.over == "member" else (None,):
                # what the step's fairness is about: a timer's member (NONE: the group's timer)
                who = (NONE if arg is None else arg,) if d.action.trigger else ()
                for b in world_step(self, _Branch(G), d, arg):
                    res.append((Step(b.label, tuple(b.rows), tuple(b.msgs), d.action.name, who), tuple(b.w),
                                _patches(b.resp)))
        return res, self._cuts

    # -- the host of spec/world_step.py and spec/handling.py: a step of the closed world ----

    def split(self, b: "_Branch", cond, params: dict) -> list:
        return [(b, bool(self.value(b, cond, params)))]

    def value(self, b: "_Branch", term, params: dict):
        got = self._g_terms.get(id(term))
        if got is None:
            got = self._g_terms[id(term)] = (term, *self._compile(term))
        if got[1]:
            return self._client_value(term, b.C, params)
        # one request's parameters are read by several terms in a row: their vector is made once
        last = self._last_vector
        if last[1] != b.c or last[0] != params:
            last = self._last_vector = (dict(params), b.c, self._pvector(params, b.c))
        return got[2](b.w, last[2], ())

    def _client_value(self, term, C: tuple, params: dict):
        """A term over one client's own variables, read in a world of that one client (memoized on
        the client's tuple: the same request recurs under many G)."""
        key = (id(term), C) if params.keys() <= {"client"} else None
        got = self._client_memo.get(key, _MISSING) if key else _MISSING
        if got is _MISSING:
            _, f = self._compile(term, client=True)
            got = f(self._one(C), self._pvector({**params, "client": 0}, 0), ())
            if key:
                if len(self._client_memo) > self.cache_limit:
                    self._client_memo.clear()
                self._client_memo[key] = got
        return got

    def _one(self, C: tuple) -> tuple:
        """The flat view of a world of client C alone."""
        return self._head1 + tuple((x,) for x in C) + self._tail1

    def _compile(self, term, client: bool = False):
        key = (id(term), client)
        got = self._compiled.get(key)
        if got is None:
            read = {n.data for n in walk(term) if n.op == "var"}
            reads_client = bool(read & CP.keys())
            if reads_client and read - CP.keys():
                raise AssertionError(f"a term of the world's step reads both a client's variables and G's: {term}")
            f = compile_term(term, self._client_layout if client else self._wide_layout)
            got = self._compiled[key] = (term, reads_client, f)
        return got[1], got[2]

    def _pvector(self, params: dict, client: int) -> list:
        p = list(self._pbase)
        p[0] = client
        idx = self._pindex
        for k, v in params.items():
            p[idx[k]] = v
        return p

    def effect(self, b: "_Branch", effect, params: dict) -> None:
        if effect.updates.keys() <= CP.keys():
            # the client's own variables: evaluated in a world of that one client
            key = (id(effect), b.C) if params.keys() <= {"client"} else None
            got = self._client_memo.get(key, _MISSING) if key else _MISSING
            if got is _MISSING:
                one = self._one(b.C)
                p = self._pvector({**params, "client": 0}, 0)
                when, ups = self._compiled_effect(effect, client=True)
                got = [(CP[v], f(one, p, ())[0]) for v, f in ups] if when(one, p, ()) else []
                if key:
                    self._client_memo[key] = got
            if got:
                C = list(b.C)
                for i, v in got:
                    C[i] = b.cpatch[i] = v
                b.C = tuple(C)
        elif b.w is None:
            b.later.append(effect)      # G's, in a client's own step: applied to G by `_after`
        else:
            self._world_effect(b.w, effect, params)

    def _world_effect(self, w: list, effect, params: dict) -> None:
        when, ups = self._compiled_effect(effect, client=False)
        p = self._pvector(params, params.get("client", NONE))
        if when(w, p, ()):
            new = [(WIDE_INDEX[v], f(w, p, ())) for v, f in ups]
            for i, v in new:
                w[i] = v

    def _compiled_effect(self, effect, client: bool):
        key = (id(effect), client)
        got = self._compiled.get(key)
        if got is None:
            lay = self._client_layout if client else self._wide_layout
            read = {n.data for t in (effect.when, *effect.updates.values()) for n in walk(t) if n.op == "var"}
            if (read | set(effect.updates)) - (CP.keys() if client else GP.keys()):
                raise AssertionError(f"an effect of the world's step touches both a client's variables and G's: "
                                     f"{sorted(effect.updates)}")
            got = self._compiled[key] = (effect, compile_term(effect.when, lay),
                                         [(v, compile_term(t, lay)) for v, t in effect.updates.items()])
        return got[1], got[2]

    def request(self, b: "_Branch", slot, c: int, what: str) -> tuple[dict, object]:
        fields = [b.C[CP[v]] for v in slot.vars[1:]]
        req = {t.data: v for t, v in zip(REQ.values(), fields)}
        inst = instance_of(self.cfg, c)
        req["client_instance"] = NONE if inst is None else inst
        mid = req[REQ["member"].data]
        b.msgs.append((f"c{c}", "coordinator", f"{what} m{mid}" if mid != NONE else what))
        return req, inst

    def fire_client(self, b: "_Branch", trigger: str, c: int) -> list:
        res = []
        for row, C2 in self.clients.fire(b.C, trigger, self.assign):
            b2 = b.copy()
            b2.C = C2
            b2.rows.append(row.name)
            res.append((b2, row))
        return res

    def answer_to(self, b: "_Branch", sender: int, echo: int) -> None:
        b.sender, b.echo = sender, echo

    def label(self, b: "_Branch", text: str) -> None:
        b.label = text

    def cut(self, b: "_Branch") -> None:
        self._cuts += 1

    def outcomes(self, b: "_Branch", trigger: str, params: dict) -> list:
        b.p = p = self.params(**params)
        b.g = g = tuple(b.w[:N_GROUP])
        return self._group_fire(g, trigger, p)

    def fork(self, b: "_Branch") -> "_Branch":
        return b.copy()

    def enter(self, b: "_Branch", o, params: dict) -> None:
        # A firing's outcome (memoized in _gcache) recurs under every world G with the same group
        # part: its verdict, a function of the group before, the parameters and the outcome, is
        # asked once (it was a tenth of a search's time).
        held = self._passed_rows.get(id(o))
        if held is None or held[0] is not o or held[1] != b.g or held[2] != b.p:
            try:
                # after every row, as the runtime checks them: a world step may chain rows
                # (unload then load, an append and its completion), and a row's broken state
                # must not hide behind the next row's
                check_after_row(b.g, o.state, b.p, o.outputs, where=f"after row {o.row.name!r}")
            except InvariantViolation as e:
                e.row = o.row.name      # the counterexample's last step names the row that broke it
                raise
            if len(self._passed_rows) > self.cache_limit:
                self._passed_rows.clear()
            self._passed_rows[id(o)] = (o, b.g, b.p)     # o kept alive with it: its id is not reused
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

    def _route_vector(self, sender: int, fields: dict, echo: int, member: int) -> list:
        p = list(self._pbase)
        idx = self._pindex
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
            if len(self._gcache) > self.cache_limit and not self.keep_firings:
                self._gcache.clear()
            got = self._gcache[key] = self.group.fire(g, trigger, p)
        return got

    # -- partial-order reduction ------------------------------------------------------

    def ample(self, s: tuple, succ: list) -> list | None:
        """The steps of the client with the fewest that are all its own (LOCAL) and change nothing the
        invariants read, where the network holds no request of its and no parked request names it
        (spec/footprint.py): then no step of anyone else reads or writes its variables until it moves,
        so its steps are independent of all theirs.  None where no client qualifies, or only one
        client's steps are enabled at all."""
        G = s[0]
        gi = self._gid(G)
        named = self._referenced.get(gi)
        if named is None:
            if len(self._referenced) > self.cache_limit:
                self._referenced.clear()
            f = self._compile(REFERENCED)[1]
            named = self._referenced[gi] = tuple(bool(f(G, self._pvector({"client": c}, c), ())) for c in range(self.n))
        mine: dict = {}
        for item in succ:
            st = item[0]
            if st.act in self._client_acts:
                mine.setdefault(st.who[0], []).append(item)
        best = None
        for c, steps in mine.items():
            if named[c] or (best is not None and len(steps) >= len(best)) or len(steps) == len(succ):
                continue
            if self._quiet_client(c, s[c + 1], steps):
                best = steps
        return best

    def _quiet_client(self, c: int, C: tuple, steps: list) -> bool:
        """Client c in local state C has no request in flight, and its own steps (`steps`) are LOCAL
        and invisible: they leave G and the variables the invariants read as they are."""
        key = (c, C)
        got = self._quiet.get(key)
        if got is None:
            if len(self._quiet) > self.cache_limit:
                self._quiet.clear()
            vis = [C[p] for p in self._visible]
            got = not self._client_value(IN_FLIGHT, C, {}) and all(
                st.act in LOCAL and [t[c + 1][p] for p in self._visible] == vis for st, t in steps)
            self._quiet[key] = got
        return got

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
            if len(self._ginv) > self.cache_limit:
                self._ginv.clear()
            self._ginv[gi] = bad
        if not bad:
            f = self.flat(s)
            bad = next((inv.name for inv, ok in self.world_invariants if not ok(f, self._inv_params, ())), None)
        if len(self._winv) > self.cache_limit:
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


_MISSING = object()


def _runs(cpatch: dict) -> tuple:
    """What a step wrote of its client's tuple (`cpatch`: position -> value) as runs of consecutive
    positions, (first, the values from there, the end), to replace in the client's tuple."""
    runs: list = []
    for p in sorted(cpatch):
        if runs and runs[-1][2] == p:
            first, values, _ = runs[-1]
            runs[-1] = (first, values + (cpatch[p],), p + 1)
        else:
            runs.append((p, (cpatch[p],), p + 1))
    return tuple(runs)


def _patched(C: tuple, runs: tuple) -> tuple:
    for first, values, end in runs:
        C = C[:first] + values + C[end:]
    return C


def _client_positions(terms: list, names: tuple) -> tuple:
    """The positions in a client's tuple of the variables `names` and of those `terms` read."""
    read = {n.data for t in terms if t is not None for n in walk(t) if n.op == "var"} | set(names)
    return tuple(sorted(CP[v] for v in read if v in CP))


@cache
def _step_terms() -> tuple:
    """The parameters' places and the layouts the world step's terms are compiled over, and the routing's
    effects, ISSUED and ENDED compiled: the spec's own terms, the same for every world, so once a process
    (each world model compiled them again: ten milliseconds a model)."""
    names = ["client", "timer_member", *(t.data for t in REQ.values()), "client_instance", "fresh",
             MAX_GENERATION.data, "sender", "at", "selected_only", *(t.data for t in OUT.values()),
             *("rec." + k for k in RECORD_FIELDS)]
    pindex = {n: i for i, n in enumerate(names)}
    wide, client = Layout(WIDE_INDEX, pindex), Layout(WORLD_INDEX, pindex)
    effects = {key: (compile_term(e.when, wide), [(WIDE_INDEX[v], compile_term(t, wide)) for v, t in e.updates.items()])
               for key, e in ROUTE_EFFECTS.items()}
    assert all(WIDE_INDEX[n.data] < G_LEN for t in (ISSUED.when, *ISSUED.updates.values())
               for n in walk(t) if n.op == "var"), "ISSUED reads G only"
    issued = [(WIDE_INDEX[v], compile_term(t, Layout(WIDE_INDEX, {}))) for v, t in ISSUED.updates.items()]
    return pindex, wide, client, effects, issued, compile_term(ENDED, Layout(WORLD_INDEX, {}))


@cache
def _check_locality() -> None:
    """The memoized deliveries and timers rely on this: coordinator rows read and write only the
    group's variables (the client rows' locality: checkers/world/clients.py).  Of the spec's own table, so
    once a process (a failure is not cached: it is raised again at each model)."""
    from groupspec.spec.table import ROWS
    check_touches(ROWS, {v.name for v in STATE_VARS})
