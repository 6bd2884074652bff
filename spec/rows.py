"""The shape of a row, and what rows are written with: outputs, updates, and `Chain`, a handler's checks in order.

A row says: its name; its trigger; the states it applies in; its guard; its
effect (a sequence of steps, each either simultaneous updates of state
variables or an output); the state it moves to; and its source (the seed or
Kafka method it comes from).

Effects are sequences so that Kafka's imperative order (remove the members
that did not rejoin, *then* elect a leader among the rest, *then* bump the
generation) is written down in that order: each step sees the state the
previous one left.  Outputs are responses to the request, answers to parked
requests, parked requests, timers armed or cancelled, and log appends.

A `Chain` writes the rows of one handler in the order Kafka checks its
conditions: each row's guard negates the conditions of the rows above it,
so the rows of a trigger are exclusive.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Union

from .lang import And, Not, Term, TRUE, _bind, lift
from .schema import STATES, TRIGGER_BY_NAME, VAR_TYPES
from .vocabulary import in_states

# An output field whose value is the request's own member id, echoed back
# (JoinGroupResult(memberId, error) answers with whatever id was sent).
ECHO = "<the request's member id>"


@dataclass
class Out:
    """One output of a row.

    kind:
      reply   answer the request being handled
      park    park the request being handled on (api, member)
      answer  answer the parked (api, member) request
      arm     arm timer `timer` for `member` (or the group) for `duration` ms
      cancel  cancel that timer
      append  append to the group-metadata log; `fields` are what it captures
      tombstone  write the group's tombstone (it is deleted)
    `over`/`var`: the output is repeated for every element of a set.
    `when`: the output happens only when this holds.
    """
    kind: str
    api: str = ""
    member: Term | None = None
    fields: dict = field(default_factory=dict)
    timer: str = ""
    duration: Term | None = None
    over: Term | None = None
    var: Term | None = None
    when: Term | None = None
    label: str = ""      # a macro's name for this step in documents


@dataclass
class Set_:
    """Simultaneous updates of state variables (each right side reads the state before)."""
    updates: dict[str, Term]
    label: str = ""      # a macro's name for this step in documents


Step = Union[Set_, Out]


@dataclass
class Row:
    name: str
    trigger: str
    states: tuple[str, ...]
    guard: Term
    steps: list[Step]
    target: str | None          # None: the state does not change
    source: str
    response: str = ""          # the response in words (docs)
    via: tuple[str, ...] = ()   # intermediate states a row passes through (Absent→Empty→PR)
    doc: str = ""               # the guard in words (docs); defaults to the rendered guard
    otherwise: tuple = ()       # conditions of earlier rows in its chain, negated in `guard`
    own: Term | None = None     # its chain's base and its own condition: what first-match dispatch tests
    # how the Java coordinator (group.coordinator.new.enable) re-checks a pending join after this row, where
    # the Scala one always runs DelayedJoin.tryComplete (never during the initial delay): "try"
    # (maybeCompleteJoinPhase: the same), "complete" (removeMemberAndUpdateClassicGroup and
    # removePendingMemberAndUpdateClassicGroup complete it once every member has rejoined, initial delay or
    # not), "none" (no re-check); "" says it as `java_recheck` derives it
    java_check: str = ""
    # the Java coordinator answers this row's reply as its write operation's result, which CoordinatorRuntime
    # releases only once every earlier write is committed (CoordinatorContext.append: waitForPendingWrites), where
    # an answer it throws (a failed validation) goes out at once; the Scala coordinator answers at once
    java_result: bool = False

    @property
    def java_recheck(self) -> str:
        """The Java coordinator's re-check after this row: as the row says, else "try" after a JoinGroup that
        adds or updates a member (it marks one awaiting the join: addMemberThenRebalanceOrCompleteJoin,
        updateMemberThenRebalanceOrCompleteJoin, updateStaticMemberThenRebalanceOrCompleteJoin end in
        maybeCompleteJoinPhase) and after a move into PreparingRebalance (prepareRebalance's
        maybeCompleteJoinElseSchedule), else none: a JoinGroup answered with an error or MEMBER_ID_REQUIRED
        returns at once.  The Java coordinator completes a join only on those paths, where the Scala one's
        DelayedJoin is checked whenever the group changes (the two agree wherever a join cannot stay
        completable, which in the Java one it can: found running Kafka 4.0.2's harness)."""
        if self.java_check:
            return self.java_check
        joins = any(isinstance(st, Set_) and "awaiting_join" in st.updates for st in self.steps)
        if (self.trigger == "JoinGroup" and joins) or (self.target == "PreparingRebalance" and
                                                       "PreparingRebalance" not in self.states):
            return "try"
        return "none"
    at: str = field(default="", compare=False)   # where it is written: "spec/table.py:123" (docs link there)

    def __post_init__(self):
        if not self.at:
            self.at = _written_at()

    def moves(self) -> list[tuple[str, str]]:
        """The (from, to) state changes this row makes, hop by hop."""
        if self.target is None:
            return []
        out = []
        for s in self.states:
            path = (s,) + self.via + (self.target,)
            out += [(a, b) for a, b in zip(path, path[1:]) if a != b or (a, b) == ("Dead", "Dead")]
        return out


_ROOT = Path(__file__).resolve().parent.parent


def _written_at() -> str:
    """The file and line of the code that wrote the row being made: the first caller outside this module (a row a
    `Chain` makes is written where its `row` is called)."""
    f = sys._getframe(1)
    while f is not None and (f.f_code.co_filename == __file__ or f.f_code.co_name == "__init__"):
        f = f.f_back
    if f is None:
        return ""
    path = Path(f.f_code.co_filename).resolve()
    return f"{path.relative_to(_ROOT) if path.is_relative_to(_ROOT) else path.name}:{f.f_lineno}"


def check_row(row: Row) -> None:
    if row.trigger not in TRIGGER_BY_NAME:
        raise ValueError(f"row {row.name}: unknown trigger {row.trigger}")
    for s in row.states + ((row.target,) if row.target else ()) + row.via:
        if s not in STATES:
            raise ValueError(f"row {row.name}: unknown state {s}")
    for step in row.steps:
        if isinstance(step, Set_):
            for var, term in list(step.updates.items()):
                if var not in VAR_TYPES:
                    raise ValueError(f"row {row.name}: unknown variable {var}")
                step.updates[var] = lift(term, VAR_TYPES[var])


# -- building outputs ---------------------------------------------------------

def reply(api: str, **fields) -> Out:
    return Out("reply", api=api, fields=fields)


def park(api: str, member: Term) -> Out:
    return Out("park", api=api, member=member)


def answer(api: str, to: Term, when: Term | None = None, **fields) -> Out:
    """Answer the request of `to` parked on `api` (if it has one)."""
    return Out("answer", api=api, member=to, fields=fields, when=when)


def answer_each(api: str, over: Term, fn: Callable[[Term], dict]) -> Out:
    """Answer the parked `api` request of every member in set `over`."""
    var, fields = _bind_fields(over, fn)
    return Out("answer", api=api, member=var, fields=fields, over=over, var=var)


def arm(timer: str, member: Term | None, duration: Term, when: Term | None = None) -> Out:
    return Out("arm", timer=timer, member=member, duration=duration, when=when)


def cancel(timer: str, member: Term | None = None, when: Term | None = None) -> Out:
    return Out("cancel", timer=timer, member=member, when=when)


def each(over: Term, fn: Callable[[Term], Out]) -> Out:
    """Repeat an output for every element of a set."""
    holder = {}

    def body(v):
        holder["out"] = fn(v)
        return TRUE()
    var, _ = _bind(_elem_type(over), body)
    out = holder["out"]
    out.over, out.var = over, var
    return out


def append(kind: str, **captured) -> Out:
    return Out("append", api=kind, fields=captured)


def _elem_type(s: Term):
    from .lang import Dom
    return Dom(s.type.key)


def _bind_fields(over: Term, fn: Callable[[Term], dict]):
    holder = {}

    def body(v):
        holder["fields"] = fn(v)
        return TRUE()
    var, _ = _bind(_elem_type(over), body)
    return var, holder["fields"]


def sets(**updates) -> Set_:
    return Set_(dict(updates))


def labelled(label: str, steps: list) -> list:
    """Mark a macro's steps so documents show one phrase for them (the steps are unchanged)."""
    for st in steps:
        if not st.label:
            st.label = label
    return steps


# -- chains: Kafka's if / else-if cascades -------------------------------------------

class Chain:
    """Rows of one trigger in Kafka's order of checks: each row's guard is its
    condition and the negation of every earlier condition in the chain."""

    def __init__(self, trigger: str, states: tuple[str, ...], base: Term | None = None, suffix: str = ""):
        self.trigger, self.states, self.suffix = trigger, states, suffix
        self.base = TRUE() if base is None else base
        self.before: list[Term] = []
        self.routing: list[Term] = []   # conditions checked without a row of their own
        self.rows: list[Row] = []

    def row(self, name: str, cond: Term, steps: list, target: str | None, source: str,
            response: str = "", doc: str = "", states: tuple[str, ...] | None = None,
            via: tuple[str, ...] = (), java_check: str = "", java_result: bool = False) -> Row:
        guard = And(self.base, *[Not(c) for c in self.before], cond) if self.before else And(self.base, cond)
        own = And(self.base, *[Not(c) for c in self.routing], cond)
        row_states = states or self.states
        r = Row(f"{self.trigger}: {name}{self.suffix}", self.trigger, states or self.states, guard, steps, target,
                source, response=response, via=via, doc=doc, otherwise=tuple(self.before), own=own,
                java_check=java_check, java_result=java_result)
        # later rows of the chain are the `else` of this one
        self.before.append(cond if row_states == self.states else And(in_states(*row_states), cond))
        self.rows.append(r)
        return r

    def check(self, cond: Term) -> None:
        """A condition that only routes: later rows see its negation."""
        if not any(c is cond for c in self.before):
            self.before.append(cond)
            self.routing.append(cond)

    def last(self, name: str, steps: list, target: str | None, source: str, **kw) -> Row:
        """The remaining case."""
        return self.row(name, TRUE(), steps, target, source, **kw)
