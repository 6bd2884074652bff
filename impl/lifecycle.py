"""The group lifecycle as a python-statemachine machine, generated from the spec.

One event per target state (`to_Stable`, `to_Dead`, ...), allowed exactly
from the states the schema declares (Kafka's `validPreviousStates`, plus
the coordinator's cache moves: created, loaded, dropped).  The runtime
sends the event for every state change a row makes, so a move the
lifecycle does not allow raises instead of happening.  The state diagram
in docs/ is drawn from this same class.

It costs a fraction of a millisecond a transition, which is fine once per
group state change and far too slow for search: the checkers never use it.
"""
from __future__ import annotations

from statemachine import State, StateMachine
from statemachine.exceptions import TransitionNotAllowed

from groupspec.spec.schema import CACHE_MOVES, STATES, VALID_PREVIOUS


def _build() -> type[StateMachine]:
    states = {name: State(name, value=name, initial=(name == "Absent")) for name in STATES}
    attrs: dict = dict(states)
    attrs["__doc__"] = "Kafka's classic group lifecycle (ClassicGroupState), with the coordinator's cache moves."
    for target in STATES:
        sources = VALID_PREVIOUS.get(target, ()) + CACHE_MOVES.get(target, ())
        if not sources:
            continue
        transitions = None
        for src in sources:
            t = states[src].to(states[target])
            transitions = t if transitions is None else transitions | t
        attrs[f"to_{target}"] = transitions
    return type("GroupLifecycle", (StateMachine,), attrs)


GroupLifecycle = _build()


class IllegalMove(RuntimeError):
    """A row tried a state change Kafka's lifecycle does not allow."""


def move(machine: StateMachine, path: list[str]) -> None:
    """Follow `path` (the states a step passed through) on the machine."""
    for target in path:
        here = current(machine)
        if here == target and target != "Dead":
            continue
        try:
            machine.send(f"to_{target}")
        except TransitionNotAllowed as e:
            raise IllegalMove(f"illegal move {here} -> {target}") from e


def current(machine: StateMachine) -> str:
    """The machine's state (the lifecycle has no parallel states: one active state)."""
    (state,) = machine.configuration
    return state.id
