"""The interface the checkers' engines search: a model of a transition system.

After stateright's `Model` (DESIGN.md §5): a model is its initial states, the
successors of a state, the properties every state must satisfy, and a few
answers an engine needs to search it well.  The engines (breadth-first,
sequential and parallel, and the liveness search in `explicit.py`; mutation
testing in `mutate.py`) are given a model and use nothing else of it; the
closed world (`world_model.WorldModel`) is one.  An engine never builds a
model: a parallel worker rebuilds the one it was given from `recipe()`.

Successors come as (step, next state) pairs in one call rather than as
stateright's `actions` then `next_state` per action: the world computes a
whole set of moves at once and memoizes it (world_model.py), and one call
per state is what keeps the search fast.  A step is the model's own object
(the world's `Step`: its label, the rows that decided it, its messages),
hashable, with `rows`, the names of the table rows that decided it (what
coverage counts); an engine only counts it, shows it, and asks the model
about it.
"""
from __future__ import annotations

from typing import Callable, Hashable, Literal, Protocol, TypeVar

State = TypeVar("State", bound=Hashable)
Fairness = Literal["weak", "strong", "none"]
"""How a liveness search treats an action, as TLA+ writes WF_vars(A) and SF_vars(A) (the
values of spec/world.py's WEAK, STRONG and UNFAIR): "weak", taken eventually if it stays
enabled; "strong", taken eventually if it is enabled again and again; "none", the
environment's free choice (it may never be taken)."""


class Model(Protocol[State]):
    def init_states(self) -> list[State]:
        """The states a behaviour may start in."""

    def successors(self, s: State) -> tuple[list[tuple[object, State]], int]:
        """Every (step, next state) from `s`, and how many successors the model's boundary cut
        off (a bound of the model, not a behaviour: no deadlock where one was cut, and a liveness
        verdict through such a state would prove nothing).  Raises
        `groupspec.spec.invariants.InvariantViolation`, with the breaking row as `e.row`, if a
        step breaks a property of steps (the counterexample ends with that step)."""

    def invariants(self) -> list[str]:
        """The names of the properties checked, in the order `violated` tries them."""

    def violated(self, s: State) -> str | None:
        """The name of the first property state `s` breaks, or None."""

    def is_end(self, s: State) -> bool:
        """A legitimate end: a state without successors that is not a deadlock."""

    def representative(self, s: State) -> State:
        """The canonical member of `s`'s symmetry class: states with one representative behave
        alike, so a search with symmetry reduction keeps only representatives."""

    def orbit(self, s: State) -> int:
        """How many states `s`'s symmetry class holds (`s` a representative): the states the
        reduced search stands for."""

    def transient(self, s: State) -> bool:
        """A state the system must not stay among forever under fairness (liveness: a fair cycle
        through transient states only is a violation)."""

    def progress(self, s: State) -> bool:
        """A state where the system has made progress (liveness: a state from which no progress
        and no end is reachable, other than through a fault, is a violation)."""

    def action_class(self, step) -> tuple[Hashable, Fairness]:
        """The fairness class a step belongs to (the steps of one class are one action for
        fairness: one fairness condition), and that action's fairness."""

    def is_fault(self, step) -> bool:
        """A fault (a crash): progress that depends on one does not count."""

    def failing_step(self, e) -> object:
        """The step a counterexample ends with when `successors` raised `e` (InvariantViolation)."""

    def shard_key(self, s: State) -> Hashable:
        """The part of a state a parallel search shards by: states with equal keys go to one
        worker (the part the model's memo tables are keyed by, so each worker's stay small)."""

    def flat(self, s: State) -> tuple:
        """The state as counterexamples show it (ITF, the step table): one value per variable."""

    def recipe(self) -> Callable[[], "Model[State]"]:
        """How to build this model again, picklable and cheap (its configuration, not its memo
        tables): a parallel worker builds its own model from it."""
