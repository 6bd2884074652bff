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

`LIVE[S]` is the least solution (a fixpoint over the rows).  `fill(m, v)` reads nothing of `m` (the map
with every entry `v`), so `reset` reads none of what it clears.  The reading is per variable (a map read at
one key counts as read whole) and a row counts wherever its states say it may fire: an over-approximation,
so a variable outside `LIVE[S]` is read by nothing from S on.

Why comparing only `LIVE` is enough (checkers/search/equivalence.py): call two states alike if they have the
same group state S and agree on `LIVE[S]`.  From alike states every row selects alike, outputs alike and leads
to alike states (what it depends on, `needs(row, LIVE[T])`, is in `LIVE[S]`).  By induction, alike states give
the same outputs and snapshots after any sequence of steps.  A mutated row joins that induction only if it too
depends on nothing outside `LIVE[S]` (`keeps_alike`: a dropped update whose variable is read in T and not in S
does not).  Not counted as reads: the invariants (claims about the table, not behaviour; `groupspec lint` and
the searches check them, and judge a mutant by them before this argument is used), and the runtime's own
bookkeeping of member slots and parked callbacks (impl/coordinator.py `_slots_in_use`, `_drop_orphans`), which
decides no answer: a parked request is answered only by a row's output.
"""
from __future__ import annotations

from .lang import Term
from .rows import Out, Row, Set_
from .schema import STATES
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


def live_sets(rows: list[Row]) -> dict[str, frozenset]:
    """The least fixpoint: for each state, the variables some step from there on may read."""
    always = {"state"}
    for t in ENABLED.values():
        reads(t, always)
    live = {s: set(always) | (set(SNAPSHOT) if s != "Absent" else set()) for s in STATES}
    fires = [(r, list(r.states)) for r in rows]
    changed = True
    while changed:
        changed = False
        for r, states in fires:
            for s in states:
                new = needs(r, live[targets(r, s)])
                if not new <= live[s]:
                    live[s] |= new
                    changed = True
    return {s: frozenset(v) for s, v in live.items()}


LIVE: dict[str, frozenset] = live_sets(ROWS)


def keeps_alike(row: Row) -> list[str]:
    """Why a replacement `row` (of a row of the table) may break the induction above, or [] if it cannot:
    it reads what is not live where it fires, or leaves unwritten what is live where it leads and not where
    it fired (a dropped update)."""
    why = []
    for s in row.states:
        extra = needs(row, LIVE[targets(row, s)]) - LIVE[s]
        if extra:
            why.append(f"in {s} it depends on {', '.join(sorted(extra))}, which nothing else reads there")
    return why
