"""What the closed world's actions read and write, derived from their terms: when a client's own
step commutes with every other step (partial-order reduction, checkers/search/explicit.py).

Nothing here says again what a step does.  Each action's variables are read off the terms
spec/world.py declares for it (the client rows of its trigger, the slot a loss empties, the
effect of closing a connection), and the ways a step of the coordinator reaches a client are
read off the routes' effects (ROUTE_EFFECTS): a route writes the variables of the client whose
request is being handled (`sender`) or of a client a *reference variable* holds (a shared map
whose values are clients: the parked requests).  From that:

- `LOCAL`: the actions that touch only their own client's variables, apart from dropping the
  references to their client (FORGOTTEN: a client that closes its connection);
- `IN_FLIGHT` (over one client's variables) and `REFERENCED` (over the shared ones): the
  conditions under which something other than the client itself may still touch it: the network
  holds a request of its that a delivery may take, or a reference variable names it.  Where
  neither holds, only the client's own steps can ever change its variables or read them (a
  reference to it is written only by handling its own request, which needs IN_FLIGHT), so its own
  steps are independent of every step the others can take until it moves, and dropping the
  references to it changes nothing;
- `VISIBLE`: the variables the invariants read.  A step that changes none of them is invisible:
  the states the invariants see are the same with it or without it.

`tests/test_reduction.py` holds the independence claim to every reachable state of the small
worlds: where a client is neither in flight nor referenced, no step of anyone else changes it.
"""
from __future__ import annotations

from .invariants import INVARIANTS
from .lang import Not, Or, Term, walk
from .world import (ACTIONS, ALL_VARS, CLIENT, CLIENT_ROWS, FAILOVER, FORGOTTEN, MESSAGES, ROUTE_EFFECTS, SENDER,
                    WORLD_INVARIANTS, C, Deliver, FireClient, Lose, W)

CLIENT_VARS = frozenset(v.name for v in ALL_VARS if v.type.kind == "map" and v.type.key == CLIENT)
# shared variables whose values are clients: how the coordinator finds whom to answer
REFERENCES = tuple(v.name for v in ALL_VARS if v.name not in CLIENT_VARS and v.type.kind == "map"
                   and v.type.value.kind == "dom" and v.type.value.name == CLIENT)


def variables(*terms) -> frozenset:
    """The variables the terms read (a step invariant's `prev:` reading is its variable)."""
    return frozenset(n.data.removeprefix("prev:") for t in terms if isinstance(t, Term) for n in walk(t)
                     if n.op == "var")


def _row_vars(row) -> frozenset:
    from .rows import Set_
    terms = [row.guard] + [t for st in row.steps if isinstance(st, Set_) for t in st.updates.values()]
    return variables(*terms) | {k for st in row.steps if isinstance(st, Set_) for k in st.updates}


def _effect_vars(effect) -> frozenset:
    return variables(effect.when, *effect.updates.values()) | set(effect.updates)


def touches(action) -> frozenset:
    """The variables a client action reads or writes (its rows, the slot it empties, and the
    references it drops when it closes its connection); every variable for a step of the
    coordinator (a delivery, a timer, the failover), which runs the table."""
    how = action.how
    if isinstance(how, FireClient):
        got = frozenset().union(*(_row_vars(r) for r in CLIENT_ROWS if r.trigger == action.trigger))
        return got | (_effect_vars(FORGOTTEN) if action.forgets else frozenset())
    if isinstance(how, Lose):
        return variables(how.slot.occupied) | _effect_vars(how.slot.emptied)
    return frozenset(v.name for v in ALL_VARS)


def _releases_only(effect) -> bool:
    """The effect writes reference variables only, and only to drop the references to its client."""
    return set(effect.updates) <= set(REFERENCES)


LOCAL = frozenset(a.name for a in ACTIONS if (touches(a) - (set(FORGOTTEN.updates) if a.forgets else set()))
                  <= CLIENT_VARS and (not a.forgets or _releases_only(FORGOTTEN)))


def _addressed_through() -> tuple:
    """The reference variables through which the routes write a client's variables; refuses a
    route that reaches a client any other way than as the sender or through one of them (the
    reduction would then rest on nothing)."""
    through = set()
    for key, effect in ROUTE_EFFECTS.items():
        for name, t in effect.updates.items():
            if name not in CLIENT_VARS:
                continue
            for n in walk(t):
                if n.op != "put" or n.args[0].op != "var" or n.args[0].data not in CLIENT_VARS:
                    continue
                at = n.args[1]
                if at.op == "param" and at.data == SENDER.data:
                    continue
                if at.op == "get" and at.args[0].op == "var" and at.args[0].data in REFERENCES:
                    through.add(at.args[0].data)
                    continue
                raise AssertionError(f"route {key} writes {name} of a client that is neither the sender nor held "
                                     f"by a reference variable: partial-order reduction cannot tell whom it reaches")
    return tuple(sorted(through))


def _only_the_sender_is_referenced() -> None:
    """A reference to a client is written only as the sender of the request being handled (a
    parked request), or dropped: so only handling a client's own request makes it referenced."""
    for effect in (*ROUTE_EFFECTS.values(), FORGOTTEN, FAILOVER.forget):
        for name, t in effect.updates.items():
            if name not in REFERENCES:
                continue
            for n in walk(t):
                if n.op in ("put", "put_all", "fill") and n.args[0].op == "var" and n.args[0].data == name:
                    value = n.args[-1]
                    if not (value.op == "const" or (value.op == "param" and value.data == SENDER.data)):
                        raise AssertionError(f"an effect writes {name} with {value!r}, neither the sender nor "
                                             f"nobody: partial-order reduction cannot tell whom it references")


ADDRESSED_THROUGH = _addressed_through()
_only_the_sender_is_referenced()
# the network holds a request of the client's that a delivery may take (any delivery of any kind)
IN_FLIGHT = Or(*(a.how.offered(kind) for a in ACTIONS if isinstance(a.how, Deliver) for kind in MESSAGES))
# a reference variable names the client (the coordinator would answer it)
REFERENCED = Or(*(Not(getattr(W, name).keys_where(lambda x: x == C).is_empty()) for name in ADDRESSED_THROUGH))

VISIBLE = variables(*(i.formula for i in INVARIANTS), *(i.formula for i in WORLD_INVARIANTS))
