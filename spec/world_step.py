"""The world's step, written once: `Next`, the disjunction over the world's declared actions.

spec/world.py declares what the closed world is (its variables, the clients' rows, the messages,
what each route of a row does to it) and every way it can move (`ACTIONS`, each with what it does,
`how`).  This module says once what a step of each action is, as spec/handling.py says once what a
coordinator step is: a few functions over a host protocol (`WorldHost`, which extends handling's
`Host`).  The explicit checker (checkers/world/state_space.py), BMC (checkers/world/bmc.py) and the
TLA+ export (checkers/tla/export.py) are its hosts: each implements only the primitives, in its own
dialect (tuples, Z3 terms, TLA+ text), and none of them writes a rule of the world again.

The rules around a step, each written here only:

- a client's action fires its rows of the action's trigger; one that closes the connection
  (`forgets`) loses the answers to its parked requests (FORGOTTEN);
- the network loses what is in a slot (`Lose`);
- a delivery (`Deliver`): the request's parameters are WHO, the message's fixed parameters and its
  fields, and for JoinGroup the fresh member id and whether the member must be known; a JoinGroup
  without an id once the member ids are spent is cut (ID_BUDGET_SPENT, a bound); LeaveGroup goes
  through handling.leave with the identity the request names; then what becomes of the request in
  the network (`then`: emptied, or a copy stays in flight);
- a timer fires only where the table arms it (world.armed), per member for a member's timer;
- the coordinator moves only while it holds the group (FAILOVER.enabled): unload, forget the
  parked requests, load the log's last record if the log holds one;
- every coordinator step ends within the generation bound, or is cut (within_bound).

A step of one action is `step(host, ctx, disjunct, arg)`; `disjuncts(cfg)` lists the actions a
world switches on, a delivery once per message kind (each is its own fair action: fairness is per
message).  A host runs every disjunct over every value of its argument (`over`: a client, a member,
or nothing) and takes every branch returned as a successor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .handling import Host, handle, leave, require_known_member_id
from .kafka import NEWEST_VERSION
from .lang import NONE, Or, Term
from .world import (ACTIONS, FORGOTTEN, FRESH, ID_BUDGET_SPENT, LEAVE_TRIGGERS, MESSAGES, TIMER_LABELS, WHO, Action,
                    Deliver, Effect, Failover, FireClient, FireTimer, Lose, Move, Slot, armed, fixed_params,
                    switched_on, within_bound)

LOADED = "coordinator failover: unload, load the last record"
NOT_LOADED = "coordinator failover: unload (no record to load)"


class WorldHost(Host, Protocol):
    """What runs the world's step (and, through handling.Host, a coordinator step in it)."""

    cfg: Any       # the world's configuration (checkers/world/presets.py WorldConfig)
    sizes: dict    # its domains' sizes

    def split(self, ctx, cond: Term, params: dict) -> list[tuple[Any, bool]]:
        """[(branch, whether `cond` holds there)], over the branch's world and `params` (host
        values; the host supplies the world's own parameters, such as `max_generation`).  One
        branch for a concrete host, both for a symbolic one."""

    def value(self, ctx, term: Term, params: dict) -> Any:
        """`term`'s value in the branch's world, as a host value."""

    def effect(self, ctx, effect: Effect, params: dict) -> None:
        """Apply an effect (simultaneous updates, where its condition holds) to the branch."""

    def request(self, ctx, slot: Slot, client, what: str) -> tuple[dict, Any]:
        """The request in the client's `slot`, as the coordinator receives it: REQ's parameters
        (`req.member`, ...) and `client_instance`, as host values; and the client's configured
        group.instance.id as a Python value (None: a dynamic member).  `what` names it."""

    def fire_client(self, ctx, trigger: str, client) -> list[tuple[Any, Any]]:
        """[(branch, row)] for each client row of `trigger` the client may fire (CLIENT_ROWS)."""

    def answer_to(self, ctx, sender, echo) -> None:
        """The request about to be handled is answered to client `sender` (NONE: nobody waits
        for the answer), its reply echoing member id `echo`."""

    def label(self, ctx, text: str) -> None:
        """How the step is named (counterexamples, traces)."""

    def cut(self, ctx) -> None:
        """A bound of the search cuts this branch: it is no step of the world (whatever it broke
        on the way is still reported)."""


@dataclass(frozen=True)
class Disjunct:
    """One disjunct of Next: an action, and for a delivery the kind of message it delivers."""
    action: Action
    kind: str | None = None

    @property
    def name(self) -> str:
        return self.action.name if self.kind is None else f"{self.action.name}_{self.kind}"

    @property
    def over(self) -> str:
        """What its argument ranges over: "client", "member" or "" (none)."""
        if self.action.how.scope in ("client", "message"):
            return "client"
        return "member" if self.action.per == "member" else ""


def disjuncts(cfg) -> list[Disjunct]:
    """The world's Next: every action its switches turn on (a timer only where the table arms
    it in this world), a delivery once per message kind, in ACTIONS' order."""
    out = []
    for a in ACTIONS:
        if not switched_on(a, cfg):
            continue
        if isinstance(a.how, Deliver):
            out += [Disjunct(a, kind) for kind in MESSAGES]
        elif not isinstance(a.how, FireTimer) or armed(a.trigger, cfg.timely):
            out.append(Disjunct(a))
    return out


def instance_of(cfg, client: int):
    """Client `client`'s configured group.instance.id (None: a dynamic member)."""
    return cfg.instances[client] if cfg.instances else None


def takes(d: Disjunct, cfg, client: int) -> bool:
    """Whether client `client` takes part in disjunct `d`: a static member (group.instance.id)
    never sends LeaveGroup (LEAVE_TRIGGERS)."""
    return not (instance_of(cfg, client) is not None and d.action.trigger in LEAVE_TRIGGERS)


def step(host: WorldHost, ctx, d: Disjunct, arg=None) -> list:
    """Every branch of disjunct `d` taken from branch `ctx`, with argument `arg` (its client or
    member, as a host value; None for a group timer or the failover)."""
    how = d.action.how
    if isinstance(how, FireClient):
        return client_step(host, ctx, d.action, arg)
    if isinstance(how, Lose):
        return lose(host, ctx, how, arg)
    if isinstance(how, Deliver):
        return deliver(host, ctx, how, d.kind, arg)
    if isinstance(how, FireTimer):
        return fire_timer(host, ctx, d.action, arg)
    if isinstance(how, Move):
        return failover(host, ctx, how.failover)
    raise TypeError(f"action {d.action.name}: no step for {how!r}")


def client_step(host: WorldHost, ctx, action: Action, client) -> list:
    """The client fires its rows of the action's trigger."""
    out = []
    for b, row in host.fire_client(ctx, action.trigger, client):
        host.label(b, FireClient.label.format(client=client, row=row.name))
        if action.forgets:
            host.effect(b, FORGOTTEN, {"client": client})
        out.append(b)
    return out


def lose(host: WorldHost, ctx, how: Lose, client) -> list:
    """The network loses what is in the client's slot."""
    out = []
    for b, on in host.split(ctx, how.slot.occupied, {"client": client}):
        if on:
            host.label(b, how.label.format(client=client))
            host.effect(b, how.slot.emptied, {"client": client})
            out.append(b)
    return out


def deliver(host: WorldHost, ctx, how: Deliver, kind: str, client) -> list:
    """The client's request of `kind` in the delivery's slot reaches the coordinator."""
    msg = MESSAGES[kind]
    what = how.what.format(kind=kind)
    handled = []
    for b, on in host.split(ctx, how.offered(kind), {"client": client}):
        if not on:
            continue
        host.label(b, how.label.format(client=client, what=what))
        req, instance = host.request(b, how.slot, client, what)
        host.effect(b, how.then, {"client": client})
        params = {**{k: host.value(b, t, req) for k, t in WHO.items()}, **_fixed(host.sizes)[kind],
                  **{k: host.value(b, t, req) for k, t in msg.fields.items()}}
        host.answer_to(b, client if how.answered and msg.answered else NONE, req["req.member"])
        if msg.api != "JoinGroup":
            handled.append((b, params))
            continue
        params["fresh"] = host.value(b, FRESH, req)
        params["require_known"] = require_known_member_id(NEWEST_VERSION["JoinGroup"], instance)
        for b2, spent in host.split(b, ID_BUDGET_SPENT, {**req, "fresh": params["fresh"]}):
            if spent:
                host.cut(b2)
            else:
                handled.append((b2, params))
    ends = []
    for b, params in handled:
        if msg.api == "LeaveGroup":
            who = {k: params[k] for k in ("member", "member_empty", "instance")}
            ends += [b2 for b2, _, _ in leave(host, b, {}, [who])]
        else:
            ends += [b2 for b2, _ in handle(host, b, msg.api, params)]
    return bounded(host, ends)


def fire_timer(host: WorldHost, ctx, action: Action, member) -> list:
    """The coordinator's timer of the action's trigger fires (a member's, for `member`), where armed."""
    ends = []
    for b, on in host.split(ctx, _armed(action.trigger, host.cfg.timely),
                            {"timer_member": NONE if member is None else member}):
        if on:
            host.label(b, TIMER_LABELS[action.trigger].format(member=member))
            ends += [b2 for b2, _ in handle(host, b, action.trigger, {} if member is None else
                                            {"timer_member": member})]
    return bounded(host, ends)


def failover(host: WorldHost, ctx, F: Failover) -> list:
    """The coordinator moves: unloaded here, loaded from the log there."""
    ends = []
    for b, on in host.split(ctx, F.enabled, {}):
        if not on:
            continue
        for b2, _ in handle(host, b, F.unload, {}):
            host.effect(b2, F.forget, {})
            for b3, loads in host.split(b2, F.when, {}):
                if loads:
                    host.label(b3, LOADED)
                    ends += [b4 for b4, _ in handle(host, b3, F.load, {"record": host.value(b3, F.record, {})})]
                else:
                    host.label(b3, NOT_LOADED)
                    ends.append(b3)
    return bounded(host, ends)


def bounded(host: WorldHost, ends: list) -> list:
    """The ends of a coordinator step within the world's generation bound; the others are cut."""
    out = []
    for b in ends:
        for b2, within in host.split(b, within_bound(host.cfg), {}):
            if within:
                out.append(b2)
            else:
                host.cut(b2)
    return out


_ARMED: dict = {}
_FIXED: dict = {}


def _armed(trigger: str, timely: bool) -> Term:
    """When a timer of `trigger` may fire (world.armed), as one term made once."""
    got = _ARMED.get((trigger, timely))
    if got is None:
        got = _ARMED[(trigger, timely)] = Or(*armed(trigger, timely))
    return got


def _fixed(sizes: dict) -> dict:
    key = tuple(sorted(sizes.items()))
    got = _FIXED.get(key)
    if got is None:
        got = _FIXED[key] = fixed_params(sizes)
    return got
