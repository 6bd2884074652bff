"""Which variables of a group can still be read, in each state: what a step from there, or any later step, may
depend on (a backward liveness analysis of the table, as a compiler finds dead stores).

A group's behaviour is what its steps output (answers, parked requests, timers, appends) and what a snapshot
shows (`SNAPSHOT`: the scenario format's and the runtime's view of a held group).  A variable is *read* in state
S by:

- the snapshot of a held group (`SNAPSHOT`; nothing of an Absent group: its snapshot is None);
- when a trigger can fire at all (table.ENABLED: an armed timer);
- every row whose states include S: its guard and own condition (first-match dispatch tests them), its
  outputs' terms (a choice's candidates are terms too), and the right side of an update whose variable is
  read later (`needs`, back through the row's steps: a step sees the state the previous one left; an update
  only its own later reader needs, as a Dead group dropping members from `awaiting_sync`, reads nothing);
- and, through a row that moves S to T, whatever is read in T and the row does not write.

The analysis is per *mode*: the group state and which delayed join is armed (`join_timer`: none, the initial
delay's InitialDelayedJoin, or a DelayedJoin).  A row fires in a mode unless a conjunct of its guard or own
condition names another `join_timer` (the initial delay's extension fires only with `initial`), and leads to
the mode of its target state and the `join_timer` it writes (a literal; any, if it writes something else).
This is what makes `join_delay_ms` dead wherever the initial delay is not armed: only the extension reads
it, and every move into `initial` (prepareRebalance from Empty) writes it first.  `LIVE_BY_MODE[(S, j)]` is
the least solution (a fixpoint over the rows); `LIVE[S]` is its union over the modes of S.  `fill(m, v)`
reads nothing of `m` (the map with every entry `v`), so `reset` reads none of what it clears.  The reading is
per variable (a map read at one key counts as read whole) and a row counts in every mode its guard does not
exclude: an over-approximation, so a variable outside `LIVE_BY_MODE[(S, j)]` is read by nothing from there on.

Why comparing only `LIVE` is enough (checkers/search/equivalence.py): call two states alike if they are in the
same mode M (group state and `join_timer`) and agree on `LIVE_BY_MODE[M]`.  From alike states every row selects
alike (its guard reads only what is live in M, and one that cannot hold in M selects in neither), outputs
alike and leads to alike states (what it depends on, `needs(row, LIVE_BY_MODE[M'])`, is in
`LIVE_BY_MODE[M]`).  By induction, alike states give
the same outputs and snapshots after any sequence of steps.  A mutated row joins that induction only if it too
depends on nothing outside `LIVE_BY_MODE[M]` (`keeps_alike`: a dropped update whose variable is read in the
mode it leads to and not in the one it fired in does not).  The catalog's invariants count as reads
(`judged`): `mutate` asks this before any search, and a mutant that leaves what an invariant reads where it
reads it would be killed by the search, so it is not equivalent.  Not counted: the runtime's own
bookkeeping of member slots and parked callbacks (impl/coordinator.py `_slots_in_use`, `_drop_orphans`), which
decides no answer: a parked request is answered only by a row's output.
"""
from __future__ import annotations

from .invariants import INVARIANTS
from .lang import Term
from .rows import Out, Row, Set_
from .schema import STATES, JoinTimer
from .table import ENABLED, ROWS

# what a snapshot of a held group shows (impl/coordinator.py `snapshot` and `member_details`, which
# tests/test_observable.py holds to this list)
SNAPSHOT = frozenset({"state", "generation", "leader", "protocol", "protocol_type", "members", "pending", "static",
                      "assignment", "offsets", "protos"})


def reads(t, acc: set | None = None) -> set:
    """The state variables term `t` reads (a map `fill` overwrites does not count)."""
    acc = set() if acc is None else acc
    if not isinstance(t, Term):
        return acc
    if t.op == "var":
        acc.add(t.data)
    for a in (t.args[1:] if t.op == "fill" else t.args):
        reads(a, acc)
    return acc


def _out_terms(o: Out) -> list:
    return [o.member, o.duration, o.over, o.when, *o.fields.values()]


def needs(r: Row, after: frozenset | set) -> frozenset:
    """What a row reads that matters when `after` is what is read once it has run: back through its steps, an
    output's terms, an update's right side if what it writes is needed later (a step sees the state the
    previous one left), and its guard and own condition."""
    need = set(after)
    for st in reversed(r.steps):
        if isinstance(st, Set_):
            used = [t for k, t in st.updates.items() if k in need]
            need -= set(st.updates)
            for t in used:
                reads(t, need)
        else:
            for t in _out_terms(st):
                reads(t, need)
    for t in (r.guard, r.own):
        reads(t, need)
    return frozenset(need)


def targets(r: Row, state: str) -> str:
    """The state a row leaves a group in that it fired on in `state`."""
    return r.target or state


TIMERS = range(len(JoinTimer.values))     # the values of `join_timer`, as the terms hold them
MODES = [(s, j) for s in STATES for j in TIMERS]


def _conjuncts(t) -> list:
    return [c for a in t.args for c in _conjuncts(a)] if t.op == "and" else [t]


def _names_timer(t):
    """(value, equal) if `t` says `join_timer = value` (equal) or `join_timer ≠ value`, else None."""
    if t.op == "not":
        inner = _names_timer(t.args[0])
        return (inner[0], not inner[1]) if inner else None
    if t.op == "eq":
        var, const = sorted(t.args, key=lambda a: a.op != "var")
        if var.op == "var" and var.data == "join_timer" and const.op == "const":
            return const.data, True
    return None


def fires_with(r: Row, timer: int) -> bool:
    """Whether the row's guard and own condition may hold while `join_timer` is `timer` (no conjunct
    names another)."""
    for t in (r.guard, r.own):
        for c in (_conjuncts(t) if t is not None else []):
            named = _names_timer(c)
            if named and (named[0] == timer) != named[1]:
                return False
    return True


def timers_after(r: Row, timer: int) -> list[int]:
    """The `join_timer` values the row may leave, fired with `timer` (the last update of it decides)."""
    for st in reversed(r.steps):
        if isinstance(st, Set_) and "join_timer" in st.updates:
            t = st.updates["join_timer"]
            return [t.data] if t.op == "const" else list(TIMERS)
    return [timer]


def moves(r: Row):
    """(mode it fires in, mode it leads to) for every mode the row may fire in."""
    return [((s, j), (targets(r, s), j2)) for s in r.states for j in TIMERS if fires_with(r, j)
            for j2 in timers_after(r, j)]


def _states_tested(t) -> set[str] | None:
    """The states `t` holds in if it only tests the group state (`state = S`, or a disjunction of those)."""
    if t.op == "eq":
        var, const = sorted(t.args, key=lambda a: a.op != "var")
        if var.op == "var" and var.data == "state" and const.op == "const":
            return {STATES[const.data]}
    if t.op == "or":
        parts = [_states_tested(a) for a in t.args]
        if all(x is not None for x in parts):
            return set().union(*parts)
    return None


def judged(state: str) -> set[str]:
    """What the catalog's invariants read of a group in `state` (the checkers judge a mutant by them, so
    they observe what they read): a state invariant of the form `state in X ⇒ φ` reads φ only in X (as
    `absent-holds-nothing` reads every variable, but only in Absent); any other, everywhere."""
    out: set = set()
    for inv in INVARIANTS:
        f = inv.formula
        if f.op == "or":
            guards = [_states_tested(a.args[0]) if a.op == "not" else None for a in f.args]
            held = next((g for g in guards if g is not None), None)
            if inv.kind == "state" and held is not None:
                if state in held:
                    reads(f, out)
                continue
        reads(f, out)
    return {v.split(":", 1)[-1] for v in out}        # a step invariant's `prev:x` is x before the step


def live_modes(rows: list[Row]) -> dict[tuple, frozenset]:
    """The least fixpoint: for each mode, the variables some step from there on may read."""
    always = {"state"}
    for t in ENABLED.values():
        reads(t, always)
    live = {m: set(always) | (set(SNAPSHOT) if m[0] != "Absent" else set()) | judged(m[0]) for m in MODES}
    steps = [(r, m, to) for r in rows for m, to in moves(r)]
    changed = True
    while changed:
        changed = False
        for r, m, to in steps:
            new = needs(r, live[to])
            if not new <= live[m]:
                live[m] |= new
                changed = True
    return {m: frozenset(v) for m, v in live.items()}


LIVE_BY_MODE: dict[tuple, frozenset] = live_modes(ROWS)
LIVE: dict[str, frozenset] = {s: frozenset().union(*(LIVE_BY_MODE[(s, j)] for j in TIMERS)) for s in STATES}


def keeps_alike(row: Row) -> list[str]:
    """Why a replacement `row` (of a row of the table) may break the induction above, or [] if it cannot:
    it reads what is not live where it fires, or leaves unwritten what is live where it leads and not where
    it fired (a dropped update)."""
    extra: dict[str, set] = {}
    for m, to in moves(row):
        extra.setdefault(m[0], set()).update(needs(row, LIVE_BY_MODE[to]) - LIVE_BY_MODE[m])
    return [f"in {s} it depends on {', '.join(sorted(x))}, which nothing else reads there"
            for s, x in extra.items() if x]
