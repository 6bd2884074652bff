"""The words the table's rows are written in: a group's states and Kafka's errors as terms, the sets of
states rows apply in, the empty values, and the small terms over the group (schema.py) that many rows read.

Nothing here is a step of Kafka's: those are in `kafka_steps.py`, the responses in `responses.py`.
"""
from __future__ import annotations

from .lang import Apply, Filter, MaxOver, Or, Term, Union, empty, lift, named, none, show, singleton
from .schema import KAFKA_NAMES, Error, GroupState, MEMBER, P, PARTITION, PROTOCOL, V


def kafka_text(t: Term) -> str:
    """A term in Kafka's names (`request.member_id`, `newMemberId`), as the documents print it."""
    return show(t, params=KAFKA_NAMES)


def S(name: str) -> Term:
    return lift(name, GroupState)


def E(name: str) -> Term:
    return lift(name, Error)


def in_states(*names: str) -> Term:
    return Or(*[V.state == S(n) for n in names])


NO_MEMBER = none(MEMBER)
NO_PROTOCOL = none(PROTOCOL)
NO_PARTS = empty(PARTITION)
NO_MEMBERS = empty(MEMBER)
HELD = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
LIVE = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable")
ALL = ("Absent",) + HELD

# Kafka 4.0's Java coordinator, where it checks a request before the group sees it (rows cite it as their source)
JAVA = "Kafka 4.0 GroupCoordinatorService"

static_members = named("static members", Filter(V.members, lambda m: V.instance_of[m].is_some()))
rebalance_timeout = named("rebalanceTimeoutMs (the largest member's)",
                          MaxOver(V.members, lambda m: V.rebalance_ms[m]))  # GM.rebalanceTimeoutMs


def names_of(protos: Term) -> Term:
    return Apply(P.proto_names, protos)


def lift_single(m: Term) -> Term:
    return singleton(m)


def Filter_instances(ms: Term) -> Term:
    """The group.instance.ids mapped to a member of `ms`."""
    return named(f"the group.instance.ids of {show(ms)}",
                 Union(Filter(ms, lambda m: V.instance_of[m].is_some()), lambda m: singleton(V.instance_of[m])))


def Filter_offsets() -> Term:
    """The partitions with a committed offset (GM.allOffsets)."""
    return named("partitions with a committed offset", V.offsets.keys_where(lambda v: v >= 0))
