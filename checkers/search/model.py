"""The interface the checkers' engines search: a model of a transition system.

After stateright's `Model` (DESIGN.md §5): a model is its initial states, the
successors of a state, the properties every state must satisfy (values:
`Property`), and a few answers an engine needs to search it well, each with
a default.  The engines (breadth-first,
sequential and parallel, and the liveness search in `explicit.py`; mutation
testing in `mutate.py`) are given a model and use nothing else of it; the
closed world (`world.state_space.WorldModel`) is one.  An engine never builds a
model: a parallel worker rebuilds the one it was given from `recipe()`.

Successors come as (step, next state) pairs in one call rather than as
stateright's `actions` then `next_state` per action: the world computes a
whole set of moves at once and memoizes it (world/state_space.py), and one call
per state is what keeps the search fast.  A step is the model's own object
(the world's `Step`: its label, the rows that decided it, its messages),
hashable; an engine only counts it, shows it, and asks the model about it
(what it covers, its fairness, whether it is a fault).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, Literal, TypeVar

State = TypeVar("State", bound=Hashable)
Fairness = Literal["weak", "strong", "none"]
"""How a liveness search treats an action, as TLA+ writes WF_vars(A) and SF_vars(A) (the
values of spec/world.py's WEAK, STRONG and UNFAIR): "weak", taken eventually if it stays
enabled; "strong", taken eventually if it is enabled again and again; "none", the
environment's free choice (it may never be taken)."""


@dataclass(frozen=True)
class Property(Generic[State]):
    """A property every reachable state must satisfy (stateright's `Property::always`): its name, and
    whether it holds of a state."""
    name: str
    holds: Callable[[State], bool]


class Model(ABC, Generic[State]):
    """A transition system to search.  Three methods are required (`init_states`, `successors`,
    `properties`); the rest have the defaults of a model without symmetry, independence, fairness, faults or
    ends, which a model overrides where it has them (the closed world overrides them all, and `violated` with a
    memo)."""

    @abstractmethod
    def init_states(self) -> list[State]:
        """The states a behaviour may start in."""

    @abstractmethod
    def successors(self, s: State) -> tuple[list[tuple[object, State]], int]:
        """Every (step, next state) from `s`, and how many successors the model's boundary cut
        off (a bound of the model, not a behaviour: no deadlock where one was cut, and a liveness
        verdict through such a state would prove nothing).  Raises
        `groupspec.spec.invariants.InvariantViolation`, with the breaking row as `e.row`, if a
        step breaks a property of steps (the counterexample ends with that step)."""

    @abstractmethod
    def properties(self) -> list[Property[State]]:
        """The properties of states, in the order `violated` tries them."""

    def invariants(self) -> list[str]:
        """The names of the properties checked (those of states, and any the steps check)."""
        return [p.name for p in self.properties()]

    def violated(self, s: State) -> str | None:
        """The name of the first property state `s` breaks, or None."""
        return next((p.name for p in self.properties() if not p.holds(s)), None)

    def is_end(self, s: State) -> bool:
        """A legitimate end: a state without successors that is not a deadlock.  Default: none is."""
        return False

    def representative(self, s: State) -> State:
        """The canonical member of `s`'s symmetry class: states with one representative behave
        alike, so a search with symmetry reduction keeps only representatives.  Default: no symmetry."""
        return s

    def orbit(self, s: State) -> int:
        """How many states `s`'s symmetry class holds (`s` a representative): the states the
        reduced search stands for.  Default: one."""
        return 1

    def transient(self, s: State) -> bool:
        """A state the system must not stay among forever under fairness (liveness: a fair cycle
        through transient states only is a violation).  Default: none is."""
        return False

    def progress(self, s: State) -> bool:
        """A state where the system has made progress (liveness: a state from which no progress
        and no end is reachable, other than through a fault, is a violation).  Default: every one."""
        return True

    def action_class(self, step) -> tuple[Hashable, Fairness]:
        """The fairness class a step belongs to (the steps of one class are one action for
        fairness: one fairness condition), and that action's fairness.  Default: each step its own
        class, the environment's free choice."""
        return step, "none"

    def ample(self, s: State, succ: list) -> list | None:
        """A part of `succ` (s's successors, as `successors` gave them) that a search may take alone
        (partial-order reduction): every step one process has enabled, where each is independent of
        every step the others can take before that process moves (C1), and invisible (it changes
        nothing the properties read: C2); never empty (C0).  The engine adds the cycle proviso (C3)
        and takes every successor where the part would close a cycle.  None: take them all.  Default:
        None (no reduction)."""
        return None

    def covered(self, step) -> tuple[str, ...]:
        """What a step exercises, counted as coverage (the closed world: the names of the table rows that
        decided it).  Default: nothing."""
        return ()

    def is_fault(self, step) -> bool:
        """A fault (a crash): progress that depends on one does not count.  Default: no step is."""
        return False

    def failing_step(self, e) -> object:
        """The step a counterexample ends with when `successors` raised `e` (InvariantViolation).
        Default: the violation itself (a model that checks steps names its own step)."""
        return e

    def shard_key(self, s: State) -> Hashable:
        """The part of a state a parallel search shards by: states with equal keys go to one
        worker (the part the model's memo tables are keyed by, so each worker's stay small).
        Default: the whole state."""
        return s

    def flat(self, s: State) -> tuple:
        """The state as counterexamples show it (ITF, the step table): one value per variable.
        Default: the state's own tuple, or the state alone."""
        return s if isinstance(s, tuple) else (s,)

    def recipe(self) -> Callable[[], "Model[State]"]:
        """How to build this model again, picklable and cheap (its configuration, not its memo
        tables): a parallel worker builds its own model from it.  Default: none (the search runs in
        one process)."""
        raise NotImplementedError(f"{type(self).__name__} has no recipe: a parallel search builds the model again "
                                  f"in each worker from one; search it in one process, or give it a recipe")
