"""A consumer client's own moves: the closed world's client rows (spec/world.py CLIENT_ROWS), fired for
one client.

What a consumer does when it starts, reads an answer (rejoin, sync, stop), heartbeats, commits,
leaves or crashes is written once, as rows of spec/world.py.  Every tool that needs a consumer asks
this module to fire them: the explicit checker's world (`state_space.py`), over the bounded
domains of a world, and `groupspec simulate` (traces/simulate.py), whose consumers drive the
runtime coordinator with concrete member ids and partitions translated to and from the same
client variables.  Neither writes a consumer's reaction in Python.

A client's state is its entry of every per-client map of the world, as one tuple in the order of
spec/world.py's declarations (`CP`: a variable's position); the response slot comes last, so a
response is written by replacing the tuple's tail.  The client rows read and write only their own
client's entries (checked here), so a client's move is a function of its tuple alone: it is fired
in a world of that one client, whoever else exists.
"""
from __future__ import annotations

import functools
from typing import Callable

from groupspec.spec import engine as E
from groupspec.spec.concrete import Layout
from groupspec.spec.lang import NONE, default_of, walk
from groupspec.spec.rows import Set_
from groupspec.spec.schema import MEMBER, STATE_VARS
from groupspec.spec.world import (ACTIONS, ALL_VARS, CLIENT, CLIENT_ROWS, MESSAGE_OF, N_GROUP, READS,
                                  RESPONSE_VARS, WORLD_INDEX, WORLD_PARAMS, Kind, Phase, offered_to)

KIND = {name: i for i, name in enumerate(Kind.values)}
PHASE = {name: i for i, name in enumerate(Phase.values)}

# -- a client's tuple: its entry of every per-client map, in the spec's order ---------------------
CLIENT_VARS = [i for i, v in enumerate(ALL_VARS) if v.type.kind == "map" and v.type.key == CLIENT]
N_CV = len(CLIENT_VARS)
CP = {ALL_VARS[i].name: k for k, i in enumerate(CLIENT_VARS)}          # position in a client's tuple
RQ = [CP[n] for n in ("rq", "rq_member", "rq_gen", "rq_assign", "rq_parts")]
LATE = [CP[n] for n in ("rq_late", "rq_late_member", "rq_late_gen", "rq_late_assign", "rq_late_parts")]
NRQ = len(RQ)         # a request's fields: kind, member id, generation, assignment, committed partitions
RS = CP["rs"]
assert list(CP)[RS:] == list(RESPONSE_VARS)
assert RQ == list(range(RQ[0], RQ[0] + NRQ)) and LATE == list(range(LATE[0], LATE[0] + NRQ))


def initial(t, init, sizes: dict):
    """A variable's initial value for the domain sizes of a world (a map: one entry per key)."""
    if t.kind == "map":
        return tuple(initial(t.value, init, sizes) for _ in range(sizes[t.key]))
    if t.kind == "record":
        # a record's fields mirror the group's variables of the same names (GroupRecord): they start
        # as those do (an empty log has no committed offsets: -1, as the group's `offsets`)
        group = {v.name: v.initial for v in STATE_VARS}
        return tuple(initial(ft, group.get(name, default_of(ft) if ft.kind != "map" else
                                           (NONE if ft.value.kind == "dom" else 0)), sizes)
                     for name, ft in zip(t.values, t.args))
    if init is None:
        return default_of(t)
    return init


def initial_client(sizes: dict) -> tuple:
    """A client's tuple as every client starts: idle, no id, nothing in flight."""
    return tuple(initial(ALL_VARS[i].type.value, ALL_VARS[i].initial, sizes) for i in CLIENT_VARS)


def client_triggers(cfg, static: bool) -> list[str]:
    """The client triggers a client may fire in world `cfg` (spec/world.py offered_to)."""
    return [a.trigger for a in ACTIONS if a.trigger.startswith("Client") and offered_to(a, cfg, static)]


def response_slot(api: str, fields: dict) -> tuple:
    """A client's response slot (the tail of its tuple, from RS) holding the answer to `api`: what the
    client reads of it (spec/world.py READS: slot variable -> response field, `fields` giving the
    fields' values), the rest of the slot as it is when empty."""
    reads = READS[api]
    slot = [KIND[MESSAGE_OF[api]]]
    for var in RESPONSE_VARS[1:]:
        v = ALL_VARS[WORLD_INDEX[var]]
        slot.append(fields[reads[var]] if var in reads else initial(v.type.value, v.initial, {}))
    return tuple(slot)


class ClientRows:
    """Fires a table of client rows (default: spec/world.py's) for one client."""

    @staticmethod
    @functools.cache
    def default() -> "ClientRows":
        """The spec's client rows, made once a process: each world model of them built its own (their locality
        checked and the rows compiled again, tens of milliseconds a model), and firing keeps no state."""
        return ClientRows()

    def __init__(self, rows: list | None = None):
        rows = CLIENT_ROWS if rows is None else rows
        check_locality(rows)
        names = list(E.PARAM_NAMES) + list(WORLD_PARAMS)
        self.space = E.Space(Layout(WORLD_INDEX, {n: i for i, n in enumerate(names)}), names)
        self.engine = E.Engine(rows, self.space, total=lambda t: False)
        self._client = self.space.param_index["client"]
        self._assign = self.space.param_index["assign"]
        self._n = len(names)
        # a world of one client: what is not the client's is never read (check_locality), so any
        # sizes serve; the client is client 0
        sizes = {v.type.key: 1 for v in ALL_VARS if v.type.kind == "map"}
        sizes.update({MEMBER: 1, CLIENT: 1})
        blank = tuple(initial(v.type, v.initial, sizes) for v in ALL_VARS)
        self._head, self._tail = blank[:N_GROUP], blank[N_GROUP + N_CV:]

    def fire(self, C: tuple, trigger: str, assign: Callable[[int], tuple]) -> list[tuple]:
        """[(the row that fired, the client's tuple after it)] for client tuple `C` on `trigger`;
        empty when no row of the trigger applies.  `assign`: the leader's assignor (member set ->
        each member's partitions)."""
        flat = self._head + tuple((x,) for x in C) + self._tail
        p = [None] * self._n
        p[self._client] = 0
        p[self._assign] = assign
        return [(o.row, tuple(o.state[N_GROUP + k][0] for k in range(N_CV)))
                for o in self.engine.fire(flat, trigger, p)]


def _terms(r) -> list:
    return [r.guard] + [t for st in r.steps if isinstance(st, Set_) for t in st.updates.values()]


def check_touches(rows: list, allowed: set) -> None:
    """Rows read and write only the variables `allowed` (AssertionError naming the row if not)."""
    for r in rows:
        written = {k for st in r.steps if isinstance(st, Set_) for k in st.updates}
        read = {n.data for t in _terms(r) for n in walk(t) if n.op == "var"}
        if not (read | written) <= allowed:
            raise AssertionError(f"row {r.name!r} touches {sorted((read | written) - allowed)}")


def check_locality(client_rows: list) -> None:
    """Firing a client alone relies on this: client rows read and write only the client's own
    entries (and the world's memoized steps rely on it too)."""
    client_names = {ALL_VARS[i].name for i in CLIENT_VARS}
    check_touches(client_rows, client_names)
    for r in client_rows:
        for t in _terms(r):     # every read of a client variable is at the row's own client
            for n in walk(t):
                if n.op == "get" and n.args[0].op == "var" and n.args[0].data in client_names:
                    if not (n.args[1].op == "param" and n.args[1].data == "client"):
                        raise AssertionError(f"client row {r.name!r} reads another client's {n.args[0].data}")
