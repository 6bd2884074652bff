"""Deliberately broken coordinators, to show the trace checker finds what it should.

Each bug is written as a Kafka engineer might write it: a changed row of the
table (the broken coordinator fires a copy of the table with that row
changed) or a changed host step.  Each records whether it *fired*: whether
the broken code ran in a way that changed something the coordinator
answered (a bug that ran but changed nothing visible did not fire), so a
checker that flags exactly the groups where a bug fired is exact.

| name | the bug | fires when |
|---|---|---|
| generation-not-bumped | the join completes without `generation + 1` | a join completes with members |
| sync-in-preparing | SyncGroup in PreparingRebalance is answered as in Stable (NONE and the old assignment) | such a SyncGroup arrives |
| leader-not-reelected | a removed leader stays leader (GM.remove and maybeElectNewJoinedLeader skipped) | a join completes with a leader that is not a member |
| timer-left-armed | a removed member's session timer is not cancelled | that timer fires |
| answer-before-store | the leader's assignment is answered before the group is written | the write is not complete when the leader's SyncGroup is answered |
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

from groupspec.impl.coordinator import GroupCoordinator
from groupspec.spec import engine as E
from groupspec.spec.handling import complete
from groupspec.spec.lang import NONE, choices_in
from groupspec.spec.schema import V
from groupspec.spec.rows import Out, Set_
from groupspec.spec.table import ROWS

BUGS = ("generation-not-bumped", "sync-in-preparing", "leader-not-reelected", "timer-left-armed",
        "answer-before-store")


def _copy_row(r, steps):
    return dataclasses.replace(r, steps=steps)


def _set(st: Set_, **changes) -> Set_:
    ups = dict(st.updates)
    ups.update(changes)
    return Set_(ups, st.label)


@lru_cache(maxsize=None)
def rows_for(bug: str) -> tuple[tuple, frozenset]:
    """(the broken table's rows, the names of the rows changed)."""
    rows, changed = [], set()
    stable_sync = next(r for r in ROWS if r.name == "SyncGroup: during Stable")
    for r in ROWS:
        steps = r.steps
        if bug == "generation-not-bumped" and r.name.endswith("join completes, next generation"):
            steps = [_set(st, generation=V.generation) if isinstance(st, Set_) and "generation" in st.updates
                     else st for st in steps]
        elif bug == "sync-in-preparing" and r.name == "SyncGroup: during PreparingRebalance":
            steps = list(stable_sync.steps)
        elif bug == "leader-not-reelected":
            steps = [_set(st, leader=V.leader) if isinstance(st, Set_) and "leader" in st.updates
                     and choices_in(st.updates["leader"]) else st for st in steps]
        elif bug == "timer-left-armed":
            steps = [st for st in steps if not (isinstance(st, Out) and st.kind == "cancel" and st.timer == "heartbeat"
                                                and st.over is not None and st.label.startswith("remove "))]
        if len(steps) != len(r.steps) or any(a is not b for a, b in zip(steps, r.steps)):
            changed.add(r.name)
            rows.append(_copy_row(r, steps))
        else:
            rows.append(r)
    return tuple(rows), frozenset(changed)


@lru_cache(maxsize=None)
def engine_for(bug: str) -> E.Engine:
    return E.Engine(list(rows_for(bug)[0]))


class BuggyCoordinator(GroupCoordinator):
    """A coordinator with one bug; `fired` counts the times it changed what the coordinator did."""

    def __init__(self, bug: str, config: dict | None = None, **kw):
        if bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r}; one of {', '.join(BUGS)}")
        engine = engine_for(bug) if bug not in ("answer-before-store",) else None
        super().__init__(config, lifecycle=False, debug=False, engine=engine, **kw)
        self.bug = bug
        self.changed = rows_for(bug)[1]
        self.fired = []
        self.bug_fired = 0
        self.first_fired_ms: int | None = None

    def _hit(self) -> None:
        self.bug_fired += 1
        if self.first_fired_ms is None:
            self.first_fired_ms = self.clock.now()

    def enter(self, g, out, params) -> None:
        before = g.state
        super().enter(g, out, params)
        self.fired.clear()          # the list of rows fired grows without end in a long run
        name = out.row.name
        if self.bug in ("generation-not-bumped", "sync-in-preparing") and name in self.changed:
            self._hit()
        elif self.bug == "leader-not-reelected" and name.endswith("join completes, next generation"):
            # the spec elects a leader among the members that rejoined when the leader did not (it left,
            # or it is a static member that has not rejoined); this coordinator keeps the old one
            lead = E.get(before, "leader")
            if lead == NONE or not (E.get(before, "awaiting_join") >> lead) & 1:
                self._hit()

    def _timer_fired(self, key) -> None:
        gid, name, slot = key
        g = self.groups.get(gid)
        if self.bug == "timer-left-armed" and g is not None and name == "heartbeat" and slot != NONE \
                and not (E.get(g.state, "hb_armed") >> slot) & 1:
            # the stale timer of a member already removed: Kafka's DelayedHeartbeat finds no member and
            # does nothing; the trace shows it fired
            self._hit()
            if self.trace is not None:
                self.trace.begin()
                self.trace.timer(gid, name, g.ids[slot] if slot < len(g.ids) else None)
                self.trace.end()
            return
        super()._timer_fired(key)

    def append(self, g, o):
        if self.bug == "answer-before-store" and o.api == "sync" and self.hold:
            res = super().append(g, o)          # held: written later
            a = self.appends[-1]
            a.early = True
            self._hit()
            # ... but answered now, as if written
            complete(self, g, "sync", o.fields, "NONE")
            return res
        return super().append(g, o)

    def _complete(self, a, error: str, cause: str | None = None) -> None:
        if getattr(a, "early", False):
            g = self._group(a.group)
            error = self._write(a, error)
            if self.trace is not None:
                self.trace.stored(a.group, error, at_once=False, cause=cause)
            self._settled(g)
            return
        super()._complete(a, error, cause)
