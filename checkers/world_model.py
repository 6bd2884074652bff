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
counterexamples, invariants and liveness read.
"""
from __future__ import annotations

from dataclasses import dataclass

from groupspec.spec import engine as E
from groupspec.spec.assignors import range_assign
from groupspec.spec.invariants import InvariantViolation, check_state, check_step, compiled as compiled_invariants
from groupspec.spec.kafka import ERRORS
from groupspec.spec.lang import Layout, NONE, compile_term, iter_bits
from groupspec.spec.rows import ECHO
from groupspec.spec.schema import (INSTANCE, MEMBER, PARTITION, PROTOCOL, PROTOLIST, PTYPE, STATE_VARS, STATES,
                                   JoinTimer)
from groupspec.spec.table import completion
from groupspec.spec.world import (ALL_VARS, CLIENT, CLIENT_ROWS, CLIENT_TRIGGERS, LEAVE_TRIGGERS, N_GROUP,
                                  WORLD_INDEX, WORLD_INVARIANT_PARAMS, WORLD_INVARIANTS, WORLD_PARAMS, Kind, Phase)

NONE_ERR = ERRORS.index("NONE")
KIND = {name: i for i, name in enumerate(Kind.values)}
API_KIND = {"JoinGroup": KIND["join"], "SyncGroup": KIND["sync"], "Heartbeat": KIND["heartbeat"],
            "OffsetCommit": KIND["commit"], "LeaveGroup": KIND["leave"], "LeaveMember": KIND["leave"]}
PHASE = {name: i for i, name in enumerate(Phase.values)}
ABSENT = STATES.index("Absent")
DELAYED_JOIN = JoinTimer.values.index("delayed")
PREPARING = STATES.index("PreparingRebalance")

# -- the client-major layout ---------------------------------------------------------------
CLIENT_VARS = [i for i, v in enumerate(ALL_VARS) if v.type.kind == "map" and v.type.key == CLIENT]
SHARED_VARS = [i for i in range(N_GROUP, len(ALL_VARS)) if i not in CLIENT_VARS]
N_CV = len(CLIENT_VARS)
# flat() relies on the spec's order: group variables, then the per-client maps, then the shared ones
assert CLIENT_VARS == list(range(N_GROUP, N_GROUP + N_CV)) and SHARED_VARS == list(range(N_GROUP + N_CV,
                                                                                          len(ALL_VARS)))
CP = {ALL_VARS[i].name: k for k, i in enumerate(CLIENT_VARS)}          # position in a client's tuple
GP = {ALL_VARS[i].name: N_GROUP + k for k, i in enumerate(SHARED_VARS)}  # position of a shared var in G
GP.update({v.name: i for i, v in enumerate(STATE_VARS)})
RQ = [CP[n] for n in ("rq", "rq_member", "rq_gen", "rq_assign", "rq_parts")]
LATE = [CP[n] for n in ("rq_late", "rq_late_member", "rq_late_gen", "rq_late_assign", "rq_late_parts")]
NRQ = len(RQ)         # a request's fields: kind, member id, generation, assignment, committed partitions
RS = CP["rs"]
assert list(CP)[RS:] == ["rs", "rs_error", "rs_member", "rs_gen", "rs_leader", "rs_members", "rs_assignment"]
assert RQ == list(range(RQ[0], RQ[0] + NRQ)) and LATE == list(range(LATE[0], LATE[0] + NRQ))
PJ, PS, USED, LOG_HAS, LOG = (GP[n] for n in ("parked_join", "parked_sync", "used_ids", "log_has", "log"))
G_MEMBERS, G_PENDING, G_GEN = E.STATE_INDEX["members"], E.STATE_INDEX["pending"], E.STATE_INDEX["generation"]
G_HB, G_JOIN_TIMER, G_SYNC_TIMER = (E.STATE_INDEX[n] for n in ("hb_armed", "join_timer", "sync_timer"))
C_PHASE = CP["c_phase"]
_CACHE_LIMIT = 1_500_000      # entries per memo table before it is dropped (bounds memory on huge worlds)
# coordinator triggers the closed world never fires, and why
NOT_IN_WORLD = {
    "OffsetFetch": "the clients never send OffsetFetch (it reads offsets; no protocol decision depends on it)",
    "DescribeGroup": "the clients never send DescribeGroups (an admin request)",
    "ListGroups": "the clients never send ListGroups (an admin request)",
    "ListGroupsEntry": "the clients never send ListGroups (an admin request)",
    "DeleteGroup": "the clients never send DeleteGroups (an admin request)",
    "ExpireOffsets": "offsets never expire in the closed world (no retention clock)",
    "MarkDead": "the closed world never deletes the group's partition",
}
# time is abstract here: timer deadlines (arm/cancel outputs) are not needed
SKIPPED_OUTPUTS = ("arm", "cancel", "cancel_all", "delete_offsets")
# client rows after which the client no longer reads answers to its parked requests
FORGETS = {r.name for r in CLIENT_ROWS if r.trigger in ("ClientTimeout", "ClientCrash", "ClientRestart")}


@dataclass
class WorldConfig:
    clients: int = 2
    topics: int = 1
    partitions: int = 2            # per topic
    max_generation: int = 2
    member_ids: int = 4            # how many member ids the coordinator may ever issue
    crash: bool = True
    expiry: bool = True            # session and pending-member timers fire
    failover: bool = True          # the coordinator unloads and a new one loads the last record
    append_failure: bool = True    # a group-metadata append may fail
    commits: bool = True
    leaves: bool = True
    max_size: int = 1 << 30        # group.max.size
    instances: tuple | None = None  # each client's group.instance.id (an index; equal ones: a zombie), or None
    restart: bool = False          # a crashed client may be restarted
    loss: bool = False             # the network may lose a request or response (clients time out)
    waive: tuple = ()              # ((invariant, why), ...): invariants this world does not check, and why
    duplication: bool = False      # the network may deliver a request twice
    reordering: bool = False       # a request may be overtaken by its client's later ones (spec/world.py)
    # Timely clients: every client rejoins within the rebalance timeout and syncs within the session
    # timeout, so the DelayedJoin completes when all have rejoined (it never expires) and the
    # pending-sync timer never fires (the initial delay still does).  In such a world without faults
    # the group needs one generation per membership change, and the generation bound becomes a
    # property: a successor cut by it is a rebalance no client caused (`rebalance_budget`).
    timely: bool = False
    rebalance_budget: bool = False
    # A client's poll loop may hang after its JoinGroup response: it never syncs, and its heartbeat
    # thread keeps heartbeating (spec/world.py).  Only worlds without session expiry say that the
    # heartbeats keep its session alive: under abstract time an armed session timer may fire anyway.
    hung_poll: bool = False

    FAULTS = ("crash", "expiry", "failover", "append_failure", "loss", "duplication", "reordering", "restart",
              "hung_poll")

    def __post_init__(self):
        if self.rebalance_budget:
            faults = [f for f in self.FAULTS if getattr(self, f)]
            if faults or not self.timely:
                raise ValueError(
                    "--rebalance-budget holds only for timely clients without faults (a fault or a timeout may "
                    "cause a rebalance no client asked for); turn on --timely and turn off: "
                    f"{', '.join('--' + f.replace('_', '-') for f in faults) or 'nothing else'}")

    def sizes(self) -> dict:
        n_inst = max(1, len({i for i in (self.instances or ()) if i is not None}))
        return {MEMBER: self.member_ids, INSTANCE: n_inst, PARTITION: self.topics * self.partitions, PROTOCOL: 1,
                PROTOLIST: 1, PTYPE: 1, CLIENT: self.clients}

    def symmetry_classes(self) -> list[list[int]]:
        """Clients that renaming may exchange: those configured alike (the same group.instance.id)."""
        inst = self.instances or (None,) * self.clients
        classes: dict = {}
        for c in range(self.clients):
            classes.setdefault(inst[c], []).append(c)
        return list(classes.values())


@dataclass(frozen=True, eq=False)
class Step:
    """One transition: what happened, and which rows decided it.  Steps are made once per
    memoized move and compared by identity (the search counts them per transition)."""
    action: str
    rows: tuple
    messages: tuple = ()     # (from, to, label) for sequence diagrams


class WorldModel:
    def __init__(self, cfg: WorldConfig, rows: list | None = None):
        """`rows`: the coordinator's table (default: the spec's; a mutant's when testing the checker)."""
        self.cfg = cfg
        self.n = cfg.clients
        self.sizes = cfg.sizes()
        self.group = E.Engine(rows, skip_outputs=SKIPPED_OUTPUTS)
        names = list(E.PARAM_NAMES) + list(WORLD_PARAMS)
        self.space = E.Space(Layout(WORLD_INDEX, {n: i for i, n in enumerate(names)}), names)
        self.clients = E.Engine(CLIENT_ROWS, self.space, total=lambda t: False)
        parts = [(f"t{t}", p) for t in range(cfg.topics) for p in range(cfg.partitions)]
        self.part_index = {tp: i for i, tp in enumerate(parts)}
        self.base = {"coord": 0, "group_id_ok": True, "cfg_min_session_ms": 10, "cfg_max_session_ms": 600_000,
                     "cfg_max_size": cfg.max_size, "cfg_initial_delay_ms": 3_000,
                     "cfg_new_member_timeout_ms": 300_000, "proto_names": lambda pl: 1 if pl != NONE else 0,
                     "vote": lambda pl, c: 0 if pl != NONE and c & 1 else NONE, "supports_skip": True,
                     "assign": self._assign}
        self._base_vector = [None] * len(names)
        for k, v in self.base.items():
            self._base_vector[self.space.param_index[k]] = v
        # per client: a static member (group.instance.id) never sends LeaveGroup
        inst = cfg.instances or (None,) * cfg.clients
        self.triggers = [[t for t in CLIENT_TRIGGERS if _enabled_by(t, cfg)
                          and not (t in LEAVE_TRIGGERS and inst[c] is not None)] for c in range(cfg.clients)]
        self.pruned = 0      # successors of the last state cut off by a bound
        self._echo = NONE    # the member id of the request being delivered (what a reply echoes)
        _check_locality()
        self._assign_cache: dict = {}
        self._gcache: dict = {}       # group engine firings: (g, trigger, params) -> outcomes
        # keep every firing (mutation testing compares a mutant's rows with them; small worlds only)
        self.keep_firings = False
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

    # -- the world and its two views --------------------------------------------------

    @staticmethod
    def blank_parked(cfg: WorldConfig) -> tuple:
        """`parked_join` (and `parked_sync`) when nothing is parked."""
        return (NONE,) * cfg.member_ids

    def initial(self) -> tuple:
        return self._init

    def flat(self, s: tuple) -> tuple:
        """The spec's view: one value per variable of ALL_VARS (per-client maps as tuples)."""
        g = s[0]
        return g[:N_GROUP] + tuple(zip(*s[1:])) + g[N_GROUP:]

    def unflat(self, f: tuple) -> tuple:
        g = f[:N_GROUP] + f[N_GROUP + N_CV:]
        return (g,) + tuple(zip(*f[N_GROUP:N_GROUP + N_CV]))

    def _assign(self, members: int) -> tuple:
        """The leader's assignor: Range over the member list (ids sorted as their slots)."""
        got = self._assign_cache.get(members)
        if got is None:
            names = {f"m{m:03d}": m for m in iter_bits(members)}
            topics = {f"t{t}": self.cfg.partitions for t in range(self.cfg.topics)}
            res = range_assign(topics, {n: list(topics) for n in names})
            out = [0] * self.sizes[MEMBER]
            for n, parts in res.items():
                out[names[n]] = sum(1 << self.part_index[p] for p in parts)
            got = self._assign_cache[members] = tuple(out)
        return got

    def params(self, **kw) -> list:
        p = list(self._base_vector)
        idx = self.space.param_index
        for k, v in kw.items():
            p[idx[k]] = v
        return p

    # -- successors -------------------------------------------------------------------

    def successors(self, s: tuple) -> list[tuple[Step, tuple]]:
        """Every (step, next state); `self.pruned` counts the successors a bound cut off."""
        out: list = []
        cut = 0
        G = s[0]
        gi = self._gid(G)
        n = self.n
        for c in range(n):
            C = s[c + 1]
            for step, C2 in self._client_moves(c, C):
                if step.rows and step.rows[0] in FORGETS and (c in G[PJ] or c in G[PS]):
                    # the client closed its connection: an answer to its parked request is
                    # never delivered to it (the coordinator still answers into nothing)
                    G2 = G[:PJ] + tuple(tuple(NONE if x == c else x for x in G[at]) for at in (PJ, PS)) + G[PS + 1:]
                    out.append((step, (G2,) + s[1:c + 1] + (C2,) + s[c + 2:]))
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
        self.pruned = cut
        return out

    def _client_moves(self, c: int, C: tuple) -> list:
        key = (c, C)
        got = self._moves.get(key)
        if got is None:
            if len(self._moves) > _CACHE_LIMIT:
                self._moves.clear()
            got = self._moves[key] = self._compute_client_moves(c, C)
        return got

    def _compute_client_moves(self, c: int, C: tuple) -> list:
        """Client c's own steps in local state C (its rows read and write only its own entries)."""
        blank = self._blank
        flat = list(blank)
        for k in range(N_CV):
            col = blank[N_GROUP + k]
            flat[N_GROUP + k] = col[:c] + (C[k],) + col[c + 1:]
        flat = tuple(flat)
        p = self.params(client=c)
        out = []
        for trig in self.triggers[c]:
            for o in self.clients.fire(flat, trig, p):
                C2 = tuple(o.state[N_GROUP + k][c] for k in range(N_CV))
                out.append((Step(f"c{c}: {o.row.name}", (o.row.name,)), C2))
        if self.cfg.loss:
            if C[RQ[0]]:
                out.append((Step(f"the network loses c{c}'s request", ()),
                            C[:RQ[0]] + self._no_request + C[RQ[0] + NRQ:]))
            if C[RS]:
                out.append((Step(f"the network loses the response to c{c}", ()), C[:RS] + self._init[1][RS:]))
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
        if self.cfg.expiry:
            for m in iter_bits(G[G_HB]):
                res += self._coordinator(G, "HeartbeatExpiry", {"timer_member": m}, f"session timer of m{m} fires")
            for m in iter_bits(G[G_PENDING]):
                res += self._coordinator(G, "PendingExpiry", {"timer_member": m}, f"pending timer of m{m} fires")
        if G[G_JOIN_TIMER] != 0 and not (self.cfg.timely and G[G_JOIN_TIMER] == DELAYED_JOIN):
            res += self._coordinator(G, "JoinTimer", {}, "the delayed join expires")
        if G[G_SYNC_TIMER] and not self.cfg.timely:
            res += self._coordinator(G, "SyncTimer", {}, "the sync timer expires")
        if self.cfg.failover and G[E.STATE_I] != ABSENT:
            res += self._failover(G)
        return self._keep(res)

    def _coordinator(self, G: tuple, trigger: str, params: dict, label: str) -> list:
        return [(Step(label, tuple(rows), tuple(msgs)), G2, _patches(resp))
                for G2, rows, msgs, resp in self._fire(G, trigger, params, NONE)]

    def _fire(self, G: tuple, trigger: str, params: dict, sender: int) -> list:
        """All outcomes of firing `trigger` and what it entails (appends, eager completion):
        [(G', rows fired, messages, responses {client: response fields})]."""
        p = self.params(**params)
        g = G[:N_GROUP]
        outcomes = self._group_fire(g, trigger, p)
        if not outcomes:
            return [(G, [], [], {})]
        results = []
        rest = list(G[N_GROUP:])
        for o in outcomes:
            try:
                # after every row, as the runtime checks them: a world step may chain rows
                # (unload then load, an append and its completion), and a row's broken state
                # must not hide behind the next row's
                check_step(g, o.state, p, o.outputs, where=f"after row {o.row.name!r}")
                check_state(o.state, where=f"after row {o.row.name!r}")
            except InvariantViolation as e:
                e.row = o.row.name      # the counterexample's last step names the row that broke it
                raise
            branches = self._route([(list(o.state) + rest, [o.row.name], [], {})], o.outputs, sender)
            for w, rows, msgs, resp in branches:
                w[USED] |= w[G_MEMBERS] | w[G_PENDING]     # member ids are never reused
                results += self._eager(tuple(w), rows, msgs, resp)
        return results

    def _group_fire(self, g: tuple, trigger: str, p: list):
        key = (g, trigger, tuple(p))
        got = self._gcache.get(key)
        if got is None:
            if len(self._gcache) > _CACHE_LIMIT and not self.keep_firings:
                self._gcache.clear()
            got = self._gcache[key] = self.group.fire(g, trigger, p)
        return got

    def _eager(self, G: tuple, rows: list, msgs: list, resp: dict) -> list:
        """Kafka re-checks a pending join after every change in PreparingRebalance."""
        if G[E.STATE_I] == PREPARING and self._group_fire(G[:N_GROUP], "CompleteJoin", self._base_vector):
            return [(G2, rows + r2, msgs + m2, {**resp, **resp2})
                    for G2, r2, m2, resp2 in self._fire(G, "CompleteJoin", {}, NONE)]
        return [(G, rows, msgs, resp)]

    def _route(self, branches: list, outputs: list, sender: int) -> list:
        for out in outputs:
            nxt = []
            for w, rows, msgs, resp in branches:
                k = out.kind
                if k == "reply" and sender != NONE:
                    _respond(resp, sender, API_KIND.get(out.api, KIND["none"]), out.fields, msgs,
                             echo=self._echo)
                elif k == "park":
                    at = PJ if out.api == "JoinGroup" else PS
                    w[at] = _put(w[at], out.member, sender)   # a late request parks for nobody
                elif k == "answer":
                    at = PJ if out.api == "JoinGroup" else PS
                    client = w[at][out.member]
                    if client != NONE:
                        w[at] = _put(w[at], out.member, NONE)
                        _respond(resp, client, API_KIND[out.api], out.fields, msgs, echo=out.member)
                elif k == "append":
                    nxt += self._append(w, rows, msgs, resp, out, sender)
                    continue
                elif k == "tombstone":      # the record is gone: nothing can load it again
                    w[LOG_HAS], w[LOG] = False, self._init[0][LOG]
                nxt.append((w, rows, msgs, resp))
            branches = nxt
        return branches

    def _append(self, w: list, rows: list, msgs: list, resp: dict, out, sender: int) -> list:
        f = out.fields
        results = []
        errors = ["NONE"] + (["NOT_ENOUGH_REPLICAS"] if self.cfg.append_failure and out.api != "offsets" else [])
        for error in errors:
            w2 = list(w)
            if error == "NONE":
                # The log keeps the group's last metadata record and every offset commit record: a
                # coordinator that takes over loads both (GMM.loadGroupsAndOffsets; a group with
                # offsets and no metadata loads Empty at generation 0, as a blank record does).
                w2[LOG_HAS] = True
                rec = w2[LOG]
                if out.api == "offsets":
                    parts = f["commit_parts"]
                    offsets = tuple(v if (parts >> p) & 1 else o for p, (o, v) in enumerate(zip(rec[-1], f["commit"])))
                    w2[LOG] = rec[:-1] + (offsets,)
                else:
                    w2[LOG] = (f["generation"], f["protocol_type"], f["protocol"], f["leader"], f["members"],
                               f["instance_of"], f["protos"], f["session_ms"], f["rebalance_ms"], f["assignment"],
                               rec[-1])
            trig, params = completion(out.api, f)
            params["error"] = ERRORS.index(error)
            for G3, r3, m3, resp3 in self._fire(tuple(w2), trig, params, sender):
                results.append((list(G3), rows + r3, msgs + m3, {**resp, **resp3}))
        return results

    def _compute_delivery(self, G: tuple, c: int, late: bool, req: tuple):
        kind, mid, gen, assign, parts = req
        known = mid != NONE and ((G[G_MEMBERS] | G[G_PENDING]) >> mid) & 1
        inst = self.cfg.instances[c] if self.cfg.instances else None
        who = {"member": mid if known else NONE, "member_empty": mid == NONE,
               "instance": NONE if inst is None else inst}
        name = Kind.values[kind]
        what = f"late {name}" if late else name
        label = f"deliver c{c}'s {what}"
        sent = ((f"c{c}", "coordinator", f"{what} m{mid}" if mid != NONE else what),)
        sender = NONE if late else c        # nobody waits for the answer to a late request
        self._echo = mid                    # a reply's echoed member id is the request's
        if kind == KIND["join"]:
            free = [m for m in range(self.sizes[MEMBER]) if not (G[USED] >> m) & 1]
            if mid == NONE and not free:
                return [], 1     # the world's member-id budget is spent: a bound, not a behaviour
            # KafkaApis.handleJoinGroupRequest: requireKnownMemberId = version >= 4 && no group.instance.id
            params = {**who, "fresh": free[0] if free else NONE, "require_known": inst is None, "session_ms": 10_000,
                      "rebalance_ms": 10_000, "req_ptype": 0, "req_ptype_empty": False, "req_protos": 0}
            fired = self._fire(G, "JoinGroup", params, sender)
        elif kind == KIND["sync"]:
            params = {**who, "generation": gen, "req_ptype": NONE, "req_ptype_given": False, "req_protocol": NONE,
                      "req_protocol_given": False, "assignments": assign}
            fired = self._fire(G, "SyncGroup", params, sender)
        elif kind == KIND["heartbeat"]:
            fired = self._fire(G, "Heartbeat", {**who, "generation": gen}, sender)
        elif kind == KIND["commit"]:
            params = {**who, "generation": gen, "commit": tuple(1 for _ in range(self.sizes[PARTITION])),
                      "commit_parts": parts}
            fired = self._fire(G, "OffsetCommit", params, sender)
        else:
            fired = self._leave(G, who)
        res = []
        for G2, rows, msgs, resp in fired:
            res.append((Step(label, tuple(rows), sent + tuple(msgs)), G2, _patches(resp), False))
            if self.cfg.duplication and not late:
                res.append((Step(label + " (a copy stays in flight)", tuple(rows), sent + tuple(msgs)), G2,
                            _patches(resp), True))
        return self._keep(res)

    def _leave(self, G: tuple, who: dict) -> list:
        """LeaveGroup: the group-level checks, then the member's (GC.handleLeaveGroup)."""
        res = []
        for G1, r1, m1, resp1 in self._fire(G, "LeaveGroup", {}, NONE):
            if STATES[G1[E.STATE_I]] in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable"):
                for G2, r2, m2, resp2 in self._fire(G1, "LeaveMember", who, NONE):
                    res.append((G2, r1 + r2, m1 + m2, {**resp1, **resp2}))
            else:
                res.append((G1, r1, m1, resp1))
        return res

    def _failover(self, G: tuple) -> list:
        """The coordinator moves: the group is unloaded here and loaded from the log there."""
        res = []
        for G1, r1, m1, resp1 in self._fire(G, "Unload", {}, NONE):
            w = list(G1)
            w[PJ] = w[PS] = self._no_park     # the old coordinator's parked requests are gone
            G1 = tuple(w)
            if G1[LOG_HAS]:
                for G2, r2, m2, resp2 in self._fire(G1, "Load", {"record": G1[LOG]}, NONE):
                    res.append((Step("coordinator failover: unload, load the last record", tuple(r1 + r2),
                                     tuple(m1 + m2)), G2, _patches({**resp1, **resp2})))
            else:
                res.append((Step("coordinator failover: unload (no record to load)", tuple(r1), tuple(m1)), G1,
                            _patches(resp1)))
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

    def some_stable(self, s: tuple) -> bool:
        return any(C[C_PHASE] == PHASE["stable"] for C in s[1:])

    def is_end(self, s: tuple) -> bool:
        """A legitimate end: every client has left, crashed or hangs (a hung poll loop gets no
        assignment whatever the coordinator does)."""
        return all(C[C_PHASE] in (PHASE["left"], PHASE["crashed"], PHASE["hung"]) for C in s[1:])


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


def _enabled_by(trigger: str, cfg: WorldConfig) -> bool:
    """Which client triggers the world's faults and features switch on."""
    return {"ClientCrash": cfg.crash, "ClientTimeout": cfg.loss or cfg.reordering, "ClientRestart": cfg.restart,
            "ClientCommit": cfg.commits, "ClientLeave": cfg.leaves, "ClientOvertake": cfg.reordering,
            "ClientHang": cfg.hung_poll, "ClientHungHeartbeat": cfg.hung_poll,
            "ClientPollTimeout": cfg.hung_poll}.get(trigger, True)


def _respond(resp: dict, c: int, kind: int, fields: dict, msgs: list, echo: int) -> None:
    """Client c's response slot gets this response (its tail of the client's tuple)."""
    def val(name, default):
        v = fields.get(name, default)
        return echo if v is ECHO else v
    err = fields.get("error", fields.get("error_all", fields.get("member_error", NONE_ERR)))
    a = fields.get("assignment", 0)
    resp[c] = (kind, err, val("member", NONE), val("generation", -1), val("leader", NONE), val("members", 0),
               a if isinstance(a, int) else 0)
    msgs.append(("coordinator", f"c{c}", f"{Kind.values[kind]} {ERRORS[err]}"))


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


def _initial(t, initial, sizes):
    from groupspec.spec.lang import default_of
    if t.kind == "map":
        return tuple(_initial(t.value, initial, sizes) for _ in range(sizes[t.key]))
    if t.kind == "record":
        # a record's fields mirror the group's variables of the same names (GroupRecord): they start
        # as those do (an empty log has no committed offsets: -1, as the group's `offsets`)
        group = {v.name: v.initial for v in STATE_VARS}
        return tuple(_initial(ft, group.get(name, default_of(ft) if ft.kind != "map" else
                                            (NONE if ft.value.kind == "dom" else 0)), sizes)
                     for name, ft in zip(t.values, t.args))
    if initial is None:
        return default_of(t)
    return initial


def _check_locality() -> None:
    """The memoized steps rely on this: client rows read and write only the client's own
    entries, coordinator rows only the group's variables."""
    from groupspec.spec.lang import walk
    from groupspec.spec.rows import Set_
    from groupspec.spec.table import ROWS
    client_names = {ALL_VARS[i].name for i in CLIENT_VARS}
    group_names = {v.name for v in STATE_VARS}
    for table, allowed in ((CLIENT_ROWS, client_names), (ROWS, group_names)):
        for r in table:
            terms = [r.guard] + [t for st in r.steps if isinstance(st, Set_) for t in st.updates.values()]
            written = {k for st in r.steps if isinstance(st, Set_) for k in st.updates}
            read = {n.data for t in terms for n in walk(t) if n.op == "var"}
            if not (read | written) <= allowed:
                raise AssertionError(f"row {r.name!r} touches {sorted((read | written) - allowed)}")
    for r in CLIENT_ROWS:   # every read of a client variable is at the row's own client
        for t in [r.guard] + [t for st in r.steps if isinstance(st, Set_) for t in st.updates.values()]:
            for n in walk(t):
                if n.op == "get" and n.args[0].op == "var" and n.args[0].data in client_names:
                    if not (n.args[1].op == "param" and n.args[1].data == "client"):
                        raise AssertionError(f"client row {r.name!r} reads another client's {n.args[0].data}")

