"""The closed world as a transition system for the explicit-state checker.

`WorldModel(cfg).successors(state)` gives every (action, next state, rows
fired) from a world state.  Protocol decisions are made by the table's
rows only: the coordinator's (spec/table.py) and the clients'
(spec/world.py).  What this module adds is the network: a request is
delivered by firing the coordinator trigger of its kind with the request's
fields as parameters; a reply goes back to the sender, a parked request's
answer to the client whose request was parked.

Time is abstract: an armed timer may fire at any moment (a timeout can
always be reached under delays), so every timing of the protocol is
explored.  Log appends complete at once, successfully or (with the
append-failure fault) with an error.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from groupspec.spec import engine as E
from groupspec.spec.assignors import range_assign
from groupspec.spec.invariants import InvariantViolation, compiled as compiled_invariants
from groupspec.spec.kafka import ERRORS
from groupspec.spec.lang import Layout, NONE, compile_term, iter_bits
from groupspec.spec.rows import ECHO
from groupspec.spec.schema import INSTANCE, MEMBER, PARTITION, PROTOCOL, PROTOLIST, PTYPE, STATE_VARS, STATES
from groupspec.spec.table import completion
from groupspec.spec.world import (ALL_VARS, CLIENT, CLIENT_ROWS, CLIENT_TRIGGERS, N_GROUP, WORLD_INDEX,
                                  WORLD_INVARIANTS, WORLD_PARAMS, Kind, Phase)

NONE_ERR = ERRORS.index("NONE")
KIND = {name: i for i, name in enumerate(Kind.values)}
API_KIND = {"JoinGroup": KIND["join"], "SyncGroup": KIND["sync"], "Heartbeat": KIND["heartbeat"],
            "OffsetCommit": KIND["commit"], "LeaveGroup": KIND["leave"], "LeaveMember": KIND["leave"]}
PHASE = {name: i for i, name in enumerate(Phase.values)}
I = WORLD_INDEX


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

    def sizes(self) -> dict:
        n_inst = max(1, len({i for i in (self.instances or ()) if i is not None}))
        return {MEMBER: self.member_ids, INSTANCE: n_inst, PARTITION: self.topics * self.partitions, PROTOCOL: 1,
                PROTOLIST: 1, PTYPE: 1, CLIENT: self.clients}


@dataclass
class Step:
    """One transition: what happened, and which rows decided it."""
    action: str
    rows: tuple
    messages: tuple = ()     # (from, to, label) for sequence diagrams


class WorldModel:
    def __init__(self, cfg: WorldConfig, rows: list | None = None):
        """`rows`: the coordinator's table (default: the spec's; a mutant's when testing the checker)."""
        self.cfg = cfg
        self.sizes = cfg.sizes()
        # time is abstract here: timer deadlines (arm/cancel outputs) are not needed
        self.group = E.Engine(rows, skip_outputs=("arm", "cancel", "cancel_all", "delete_offsets"))
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
        self.n_params = len(names)
        self._base_vector = [None] * self.n_params
        for k, v in self.base.items():
            self._base_vector[self.space.param_index[k]] = v
        self.pruned = 0      # successors of the last state cut off by a bound
        self._spent = 0
        self._gcache: dict = {}
        self._ccache: dict = {}
        _check_locality()
        self._cache: dict = {}
        waived = {name for name, _ in cfg.waive}
        self.world_invariants = [(inv, compile_term(inv.formula, Layout(WORLD_INDEX, {})))
                                 for inv in WORLD_INVARIANTS if inv.name not in waived]

    # -- the world ------------------------------------------------------------------

    def initial(self) -> tuple:
        out = []
        for v in ALL_VARS:
            out.append(_initial(v.type, v.initial, self.sizes))
        return tuple(out)

    def _assign(self, members: int) -> tuple:
        """The leader's assignor: Range over the member list (ids sorted as their slots)."""
        key = members
        got = self._cache.get(key)
        if got is None:
            names = {f"m{m:03d}": m for m in iter_bits(members)}
            topics = {f"t{t}": self.cfg.partitions for t in range(self.cfg.topics)}
            res = range_assign(topics, {n: list(topics) for n in names})
            out = [0] * self.sizes[MEMBER]
            for n, parts in res.items():
                out[names[n]] = sum(1 << self.part_index[p] for p in parts)
            got = self._cache[key] = tuple(out)
        return got

    def params(self, **kw) -> list:
        p = list(self._base_vector)
        idx = self.space.param_index
        for k, v in kw.items():
            p[idx[k]] = v
        return p

    # -- actions --------------------------------------------------------------------

    def successors(self, s: tuple) -> list[tuple[Step, tuple]]:
        out: list = []
        cfg = self.cfg
        for c in range(cfg.clients):
            for trig in CLIENT_TRIGGERS:
                if (trig == "ClientCrash" and not cfg.crash) or (trig == "ClientTimeout" and not cfg.loss) or \
                        (trig == "ClientRestart" and not cfg.restart):
                    continue
                if (trig == "ClientCommit" and not cfg.commits) or (trig == "ClientLeave" and not cfg.leaves):
                    continue
                p = self.params(client=c)
                for name, t in self._client_step(s, trig, c, p):
                    out.append((Step(f"c{c}: {name}", (name,)), t))
            if s[I["rq"]][c] != KIND["none"]:
                out += self._deliver(s, c)
                if cfg.duplication:
                    out += [(dataclasses.replace(st, action=st.action + " (a copy stays in flight)"),
                             _keep_request(t, s, c)) for st, t in self._deliver(s, c)]
                if cfg.loss:
                    w = list(s)
                    w[I["rq"]] = _put(w[I["rq"]], c, KIND["none"])
                    out.append((Step(f"the network loses c{c}'s request", ()), tuple(w)))
            if cfg.loss and s[I["rs"]][c] != KIND["none"]:
                w = list(s)
                w[I["rs"]] = _put(w[I["rs"]], c, KIND["none"])
                out.append((Step(f"the network loses the response to c{c}", ()), tuple(w)))
        g = s
        if cfg.expiry:
            for m in iter_bits(E.get(g, "hb_armed")):
                out += self._coordinator(s, "HeartbeatExpiry", {"timer_member": m}, f"session timer of m{m} fires")
            for m in iter_bits(E.get(g, "pending")):
                out += self._coordinator(s, "PendingExpiry", {"timer_member": m}, f"pending timer of m{m} fires")
        if E.get(g, "join_timer") != 0:
            out += self._coordinator(s, "JoinTimer", {}, "the delayed join expires")
        if E.get(g, "sync_timer"):
            out += self._coordinator(s, "SyncTimer", {}, "the sync timer expires")
        if cfg.failover and s[E.STATE_I] != STATES.index("Absent"):
            out += self._failover(s)
        kept = [(st, t) for st, t in out if E.get(t, "generation") <= cfg.max_generation]
        # successors beyond the bounds are the edge of the bounded world, not missing behaviour
        self.pruned = len(out) - len(kept) + self._spent
        self._spent = 0
        return kept

    def _coordinator(self, s: tuple, trigger: str, params: dict, label: str, sender: int = NONE):
        """Fire a coordinator trigger, route its outputs, complete appends, run eager rows."""
        results = []
        for state, rows, msgs in self._fire(list(s), trigger, params, sender):
            results.append((Step(label, tuple(rows), tuple(msgs)), tuple(state)))
        return results

    def _fire(self, s: list, trigger: str, params: dict, sender: int):
        """All outcomes of firing `trigger` and what it entails (appends, eager completion)."""
        p = self.params(**params)
        outcomes = self._group_fire(s, trigger, p)
        if not outcomes:
            return [(s, [], [])]
        results = []
        rest = list(s[N_GROUP:])
        for o in outcomes:
            w = list(o.state) + rest
            self._check_step(tuple(s[:N_GROUP]), o.state, p, o.outputs, o.row.name)
            msgs: list = []
            branches = [(w, [o.row.name], msgs)]
            branches = self._route(branches, o.outputs, sender, trigger)
            for w2, rows, m2 in branches:
                self._mark_ids(w2)
                results += self._eager(w2, rows, m2)
        return results

    # -- memoized steps ---------------------------------------------------------------
    # The coordinator's rows read and write only the group's variables, and a client's
    # rows only that client's entries (checked in _check_locality), so a step depends on
    # a small part of the world, which repeats across many world states.

    def _group_fire(self, s, trigger: str, p: list):
        key = (tuple(s[:N_GROUP]), trigger, tuple(p))
        got = self._gcache.get(key)
        if got is None:
            if len(self._gcache) > 400_000:
                self._gcache.clear()
            got = self._gcache[key] = self.group.fire(key[0], trigger, p)
        return got

    def _client_step(self, s: tuple, trig: str, c: int, p: list) -> list:
        local = tuple(s[i][c] for i in CLIENT_VARS)
        key = (trig, local)
        got = self._ccache.get(key)
        if got is None:
            got = []
            for o in self.clients.fire(s, trig, p):
                got.append((o.row.name, tuple(o.state[i][c] for i in CLIENT_VARS)))
            if len(self._ccache) > 400_000:
                self._ccache.clear()
            self._ccache[key] = got
        out = []
        for name, new in got:
            w = list(s)
            for i, v in zip(CLIENT_VARS, new):
                if w[i][c] != v:
                    w[i] = _put(w[i], c, v)
            out.append((name, tuple(w)))
        return out

    def _eager(self, s: list, rows: list, msgs: list):
        st = tuple(s)
        if E.get(st, "state") == STATES.index("PreparingRebalance") and \
                self.group.enabled(st, "CompleteJoin", self.params()):
            out = []
            for s2, r2, m2 in self._fire(s, "CompleteJoin", {}, NONE):
                out.append((s2, rows + r2, msgs + m2))
            return out
        return [(s, rows, msgs)]

    def _route(self, branches, outputs, sender: int, trigger: str):
        for out in outputs:
            nxt = []
            for w, rows, msgs in branches:
                k = out.kind
                if k == "reply" and sender != NONE:
                    self._respond(w, sender, API_KIND.get(out.api, KIND["none"]), out.fields, msgs,
                                  echo=w[I["rq_member"]][sender])
                elif k == "park":
                    var = "parked_join" if out.api == "JoinGroup" else "parked_sync"
                    w[I[var]] = _put(w[I[var]], out.member, sender)
                elif k == "answer":
                    var = "parked_join" if out.api == "JoinGroup" else "parked_sync"
                    client = w[I[var]][out.member]
                    if client != NONE:
                        w[I[var]] = _put(w[I[var]], out.member, NONE)
                        self._respond(w, client, API_KIND[out.api], out.fields, msgs, echo=out.member)
                elif k == "append":
                    nxt += self._append(w, rows, msgs, out, sender)
                    continue
                elif k == "tombstone":
                    w[I["log_has"]] = False
                nxt.append((w, rows, msgs))
            branches = nxt
        return branches

    def _append(self, w: list, rows: list, msgs: list, out, sender: int):
        f = out.fields
        results = []
        errors = ["NONE"] + (["NOT_ENOUGH_REPLICAS"] if self.cfg.append_failure and out.api != "offsets" else [])
        for error in errors:
            w2 = list(w)
            m2 = list(msgs)
            if error == "NONE" and out.api != "offsets":
                w2[I["log_has"]] = True
                w2[I["log"]] = (f["generation"], f["protocol_type"], f["protocol"], f["leader"], f["members"],
                                f["instance_of"], f["protos"], f["session_ms"], f["rebalance_ms"], f["assignment"],
                                E.get(tuple(w2), "offsets"))
            trig, params = completion(out.api, f)
            params["error"] = ERRORS.index(error)
            for s3, r3, m3 in self._fire(w2, trig, params, sender):
                results.append((s3, rows + r3, m2 + m3))
        return results

    def _respond(self, w: list, c: int, kind: int, fields: dict, msgs: list, echo: int) -> None:
        def val(name, default):
            v = fields.get(name, default)
            return echo if v is ECHO else v
        err = fields.get("error", fields.get("error_all", fields.get("member_error", NONE_ERR)))
        w[I["rs"]] = _put(w[I["rs"]], c, kind)
        w[I["rs_error"]] = _put(w[I["rs_error"]], c, err)
        w[I["rs_member"]] = _put(w[I["rs_member"]], c, val("member", NONE))
        w[I["rs_gen"]] = _put(w[I["rs_gen"]], c, val("generation", -1))
        w[I["rs_leader"]] = _put(w[I["rs_leader"]], c, val("leader", NONE))
        w[I["rs_members"]] = _put(w[I["rs_members"]], c, val("members", 0))
        a = fields.get("assignment", 0)
        w[I["rs_assignment"]] = _put(w[I["rs_assignment"]], c, a if isinstance(a, int) else 0)
        msgs.append(("coordinator", f"c{c}", f"{Kind.values[kind]} {ERRORS[err]}"))

    def _deliver(self, s: tuple, c: int):
        kind = s[I["rq"]][c]
        mid = s[I["rq_member"]][c]
        g = s
        known = mid != NONE and ((E.get(g, "members") | E.get(g, "pending")) >> mid) & 1
        inst = self.cfg.instances[c] if self.cfg.instances else None
        who = {"member": mid if known else NONE, "member_empty": mid == NONE,
               "instance": NONE if inst is None else inst}
        gen = s[I["rq_gen"]][c]
        w = list(s)
        w[I["rq"]] = _put(w[I["rq"]], c, KIND["none"])
        name = Kind.values[kind]
        label = f"deliver c{c}'s {name}"
        sent = [(f"c{c}", "coordinator", f"{name} m{mid}" if mid != NONE else name)]
        if kind == KIND["join"]:
            free = [m for m in range(self.sizes[MEMBER]) if not (s[I["used_ids"]] >> m) & 1]
            if mid == NONE and not free:
                self._spent += 1   # the world's member-id budget is spent: a bound, not a behaviour
                return []
            params = {**who, "fresh": free[0] if free else NONE, "require_known": True, "session_ms": 10_000,
                      "rebalance_ms": 10_000, "req_ptype": 0, "req_ptype_empty": False, "req_protos": 0}
            trig = "JoinGroup"
        elif kind == KIND["sync"]:
            params = {**who, "generation": gen, "req_ptype": NONE, "req_ptype_given": False, "req_protocol": NONE,
                      "req_protocol_given": False, "assignments": s[I["rq_assign"]][c]}
            trig = "SyncGroup"
        elif kind == KIND["heartbeat"]:
            params, trig = {**who, "generation": gen}, "Heartbeat"
        elif kind == KIND["commit"]:
            owned = s[I["c_owned"]][c]
            params = {**who, "generation": gen, "commit": tuple(1 for _ in range(self.sizes[PARTITION])),
                      "commit_parts": owned}
            trig = "OffsetCommit"
        else:
            return self._leave(w, c, who, label, sent)
        return [(Step(label, st.rows, tuple(sent) + st.messages), t)
                for st, t in self._coordinator(tuple(w), trig, params, label, sender=c)]

    def _leave(self, w: list, c: int, who: dict, label: str, sent):
        res = []
        for s1, r1, m1 in self._fire(w, "LeaveGroup", {}, NONE):
            st = tuple(s1)
            if STATES[st[E.STATE_I]] in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable"):
                for s2, r2, m2 in self._fire(s1, "LeaveMember", who, NONE):
                    res.append((Step(label, tuple(r1 + r2), tuple(sent) + tuple(m1 + m2)), tuple(s2)))
            else:
                res.append((Step(label, tuple(r1), tuple(sent) + tuple(m1)), st))
        return res

    def _failover(self, s: tuple):
        """The coordinator moves: the group is unloaded here and loaded from the log there."""
        res = []
        for s1, r1, m1 in self._fire(list(s), "Unload", {}, NONE):
            s1 = list(s1)
            for v in ("parked_join", "parked_sync"):
                s1[I[v]] = tuple(NONE for _ in s1[I[v]])
            if s1[I["log_has"]]:
                for s2, r2, m2 in self._fire(s1, "Load", {"record": s1[I["log"]]}, NONE):
                    res.append((Step("coordinator failover: unload, load the last record", tuple(r1 + r2),
                                     tuple(m1 + m2)), tuple(s2)))
            else:
                res.append((Step("coordinator failover: unload (no record to load)", tuple(r1), tuple(m1)),
                            tuple(s1)))
        return res

    def _mark_ids(self, w: list) -> None:
        w[I["used_ids"]] |= E.get(tuple(w), "members") | E.get(tuple(w), "pending")

    # -- properties -----------------------------------------------------------------

    def _check_step(self, prev: tuple, post: tuple, params: list, outputs: list, row: str) -> None:
        from groupspec.spec.invariants import check_step
        try:
            check_step(prev[:N_GROUP], post[:N_GROUP], params, outputs, where=f"after row {row!r}")
        except InvariantViolation as e:
            e.row = row      # the counterexample's last step names the row that broke it
            raise

    def violated(self, s: tuple) -> str | None:
        """The name of the first invariant state `s` breaks (coordinator and closed world)."""
        g = s[:N_GROUP]
        for inv, f in compiled_invariants():
            if inv.kind == "state" and not f(g, [], ()):
                return inv.name
        for inv, f in self.world_invariants:
            if not f(s, [], ()):
                return inv.name
        return None

    def some_stable(self, s: tuple) -> bool:
        return PHASE["stable"] in s[I["c_phase"]]

    def is_end(self, s: tuple) -> bool:
        """A legitimate end: every client has left or crashed, or is stable with nothing in flight."""
        phases = s[I["c_phase"]]
        return all(ph in (PHASE["left"], PHASE["crashed"]) for ph in phases)


def _keep_request(t: tuple, before: tuple, c: int) -> tuple:
    """The state after a delivery, with client c's request still in flight (duplicated)."""
    w = list(t)
    for v in ("rq", "rq_member", "rq_gen", "rq_assign"):
        w[I[v]] = _put(w[I[v]], c, before[I[v]][c])
    return tuple(w)


def _put(t: tuple, i: int, v) -> tuple:
    if i < 0:
        return t
    return t[:i] + (v,) + t[i + 1:]


def _initial(t, initial, sizes):
    from groupspec.spec.lang import default_of
    if t.kind == "map":
        return tuple(_initial(t.value, initial, sizes) for _ in range(sizes[t.key]))
    if t.kind == "record":
        return tuple(_initial(ft, default_of(ft) if ft.kind != "map" else (NONE if ft.value.kind == "dom" else 0),
                              sizes) for ft in t.args)
    if initial is None:
        return default_of(t)
    return initial


CLIENT_VARS = [i for i, v in enumerate(ALL_VARS) if v.type.kind == "map" and v.type.key == CLIENT]


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


