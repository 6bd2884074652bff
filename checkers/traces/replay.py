"""Checking a complete trace: replay it through the spec's rows.

Each step of the trace (a lead record and what it caused, impl/trace.py) is
run in a *world*: a coordinator that fires the table's rows and runs each
step through `spec/handling.handle` (it is the runtime coordinator class,
as the scenario runner's spec target uses it: the host that turns request
values into the rows' parameters), with every append held until the trace
says how it completed.  Where the table leaves a choice open (who leads
after the leader is removed, a tied vote) every outcome is followed in a
world of its own, and the trace decides: a world survives a step if the
spec, in it, answers exactly as the trace says (the request's response,
the parked requests answered, the appends that completed within the
step, the timer that fired being armed and due).  A trace is explained
while some world survives; the first step no world survives is the
violation: the record, the row the spec fired there and what it answered
instead, and the states the surviving worlds were in just before.
"""
from __future__ import annotations

import copy
import heapq
from collections import deque
from typing import Any

from groupspec.checkers.scenarios.runner import distinct_worlds
from groupspec.impl.clock import Timers
from groupspec.impl.coordinator import Group, GroupCoordinator
from groupspec.impl.requests import InvalidRequest
from groupspec.impl.storage import InMemoryLog, encode
from groupspec.impl.storage import replay as replay_log
from groupspec.spec import engine as E
from groupspec.spec.kafka import ConfigError, brief
from groupspec.spec.lang import NONE
from groupspec.spec.schema import MEMBER, STATE_VARS, STATES
from groupspec.spec.table import ROWS, TIMERS

MAX_WORLDS = 64
COMPACT_AT = 64          # batches a replay's log holds before it is compacted (CompactLog)
_MAPS = [(i, v.type.key, v.initial) for i, v in enumerate(STATE_VARS) if v.type.kind == "map"]
PREPARING = STATES.index("PreparingRebalance")
# Steps that never meet a choice the table leaves open: their rows make none, and the eager
# join re-check (the only other way to a choice) runs only in PreparingRebalance
_CHOICE_TRIGGERS = {r.trigger for r in ROWS if E.makes_choices(r)}
PLAIN_APIS = {"Heartbeat", "OffsetCommit", "OffsetFetch", "DescribeGroups", "ListGroups"}
assert not {"Heartbeat", "OffsetFetch", "DescribeGroup", "ListGroups"} & _CHOICE_TRIGGERS


class Violation(Exception):
    def __init__(self, rule: str, detail: str, rows: list[str] | None = None):
        super().__init__(detail)
        self.rule, self.detail, self.rows = rule, detail, rows or []


class CompactLog(InMemoryLog):
    """The group-metadata log, compacted as Kafka's log cleaner compacts it (each key's last value): every
    COMPACT_AT batches, and before it is read, its batches become one, the records a replay of them loads
    (each group's last record and live offsets, `storage.replay`).  A load (the coordinator replays the
    log), a world's saved state and its copy then cost at most COMPACT_AT batches and the group's size,
    not the number of appends before them: with the whole log kept, a trace with a load every few hundred
    records was checked in time quadratic in its length."""

    def append(self, batch: list[dict]) -> None:
        super().append(batch)
        if len(self._batches) >= COMPACT_AT:
            self._compact()

    def records(self) -> list[dict]:
        self._compact()
        return super().records()

    def _compact(self) -> None:
        if len(self._batches) > 1:
            folded = replay_log(_Records(super().records()))
            kept = [r for lg in folded.values() for r in lg.records()]
            self._batches = [encode(kept)] if kept else []

    def __deepcopy__(self, memo) -> "CompactLog":
        new = CompactLog()
        new._batches = list(self._batches)
        return new


class _Records:
    """Records as `storage.replay` reads a log."""

    def __init__(self, records: list[dict]):
        self._records = records

    def records(self) -> list[dict]:
        return self._records


class ReplayTimers(Timers):
    """The coordinator's timers as a replay uses them: a timer fires when the trace says (the replay
    cancels it and fires it), never by advancing the clock, so the heap entries a re-armed or cancelled
    timer leaves behind are never popped off.  Rebuilt from the armed timers once stale entries outnumber
    them, the heap stays the size of what is armed; it grew by one entry a heartbeat, and each step that
    saves its world copies it (quadratic in the trace's length)."""

    def arm(self, key, delay_ms: int) -> None:
        super().arm(key, delay_ms)
        if len(self._heap) > 2 * len(self._live) + 16:
            self._heap = [(deadline, seq, k) for k, (deadline, seq) in self._live.items()]
            heapq.heapify(self._heap)


class ReplayCoordinator(GroupCoordinator):
    """The spec's coordinator for replaying one group: appends wait for the trace to complete them."""

    def __init__(self, config: dict | None, engine: E.Engine | None = None):
        super().__init__(config, log=CompactLog(), lifecycle=False, debug=False, engine=engine)
        self.timers = ReplayTimers(self.clock)
        self.hold = True
        self.at_once: deque = deque()
        self.issue: str | None = None
        self.id_source = self._issued      # a bound method: a deep copy issues from its own `issue`

    def _issued(self, client: str) -> str:
        return self.issue if self.issue is not None else f"{client}-?"

    def _widen(self, g) -> None:
        """GroupCoordinator._widen in one pass over the map variables (it runs before every row)."""
        sizes = {d: max(1, len(i.values)) for d, i in self.domains.items()}
        sizes[MEMBER] = max(1, len(g.ids))
        st = g.state
        short = [(i, sizes[dom], init) for i, dom, init in _MAPS if len(st[i]) < sizes[dom]]
        if short:
            st = list(st)
            for i, n, init in short:
                st[i] = st[i] + (init,) * (n - len(st[i]))
            g.state = tuple(st)

    def save(self) -> tuple:
        """What a step may change, copied shallowly (far cheaper than a deep copy: a world's values are
        tuples, strings and ints, and its containers are rebuilt on restore)."""
        t = self.timers
        groups = {gid: (g.state, list(g.ids), dict(g.slot_of), dict(g.client), dict(g.parked), g.state_ts,
                        dict(g.commit_ts)) for gid, g in self.groups.items()}
        return (groups, list(t._heap), dict(t._live), copy.copy(t._seq), deque(self.appends),
                list(self.log._batches), self.clock.now_ms, self.coord, self.hold, self.fail_next)

    def restore(self, saved: tuple) -> None:
        groups, heap, live, seq, appends, batches, now, coord, hold, fail_next = saved
        self.groups = {gid: Group(gid, st, list(ids), dict(slot_of), dict(client), dict(parked), state_ts,
                                  dict(commit_ts))
                       for gid, (st, ids, slot_of, client, parked, state_ts, commit_ts) in groups.items()}
        self._shared = set()      # fresh groups: no copy shares them
        t = self.timers
        t._heap, t._live, t._seq = list(heap), dict(live), copy.copy(seq)
        self.appends = deque(appends)
        self.log._batches = list(batches)
        self.clock.now_ms, self.coord, self.hold, self.fail_next = now, coord, hold, fail_next

    def append(self, g, o):
        if self.at_once:                   # the trace says this write completed within the step
            err = self.at_once.popleft()
            self.hold, self.fail_next = False, (None if err == "NONE" else err)
            try:
                return super().append(g, o)
            finally:
                self.hold = True
        return super().append(g, o)


class World:
    """One behaviour of the spec that explains the trace so far."""

    def __init__(self, coord: ReplayCoordinator):
        self.coord = coord
        self.answers: dict = {}            # request id -> response, answered in the current step

    def __deepcopy__(self, memo) -> "World":
        new = World.__new__(World)
        memo[id(self)] = new
        new.coord = copy.deepcopy(self.coord, memo)
        new.answers = dict(self.answers)
        return new

    def fingerprint(self):
        c = self.coord
        return (tuple(sorted((gid, g.state, tuple(g.ids), tuple(sorted(map(str, g.parked))))
                             for gid, g in c.groups.items())),
                tuple(sorted(map(str, c.timers._live.items()))), c.coord, len(c.appends))


class _Answer:
    def __init__(self, world: World, rid: Any):
        self.world, self.rid = world, rid

    def __call__(self, response: dict) -> None:
        self.world.answers[self.rid] = response


# -- comparing responses --------------------------------------------------------------

def _norm(v: Any, key: str = "") -> Any:
    if isinstance(v, dict):
        return {k: _norm(x, k) for k, x in v.items()}
    if isinstance(v, list):
        items = [_norm(x) for x in v]
        if key == "errors":
            return items
        try:
            return sorted(items, key=lambda x: repr(x))
        except TypeError:
            return items
    return v


def differences(spec: dict, trace: dict) -> list[str]:
    """Fields where the trace's response differs from the spec's (fields the trace leaves out are
    not compared)."""
    out = []
    for k, tv in trace.items():
        sv = spec.get(k)
        if k not in spec and tv is None:
            continue
        if _norm(sv, k) != _norm(tv, k):
            out.append(f"{k}: spec {brief(sv, 120)}, trace {brief(tv, 120)}")
    return out


def snapshot_of(c: GroupCoordinator, gid: str) -> dict:
    snap = c.snapshot(gid)
    if snap is None:
        return {"state": None, "coordinator": c.coord}
    keep = {k: snap[k] for k in ("state", "generation", "leader", "members", "protocol")}
    keep["timers"] = sorted(f"{name}{'' if slot == NONE else ':' + c._id(c.groups[gid], slot)}"
                            for (g, name, slot) in c.timers.keys() if g == gid)
    if c.appends:
        keep["appends_in_flight"] = len(c.appends)
    if c.coord != "active":
        keep["coordinator"] = c.coord
    return keep


# -- one step ------------------------------------------------------------------------------

def run_step(w: World, gid: str, lead: dict, effects: list[dict], check_deadlines: bool) -> None:
    """Run one step of the trace in world `w`; Violation if the spec does not answer as the trace says."""
    c = w.coord
    c.fired.clear()
    w.answers = {}
    ts = lead["ts_ms"]
    if ts > c.clock.now_ms:
        c.clock.now_ms = ts
    c.at_once = deque(r["result"] for r in effects if r["kind"] == "storage" and not r.get("after_held"))
    kind = lead["kind"]
    if kind == "request":
        _request(w, gid, lead)
    elif kind == "timer":
        _timer(c, gid, lead, check_deadlines)
    elif kind == "storage":
        if not c.appends:
            raise Violation("no-append-in-flight", "a write completed, but the spec has no append of this "
                            "group in flight")
        c.storage_complete(lead["result"], lead.get("cause"))
        # the Java coordinator's writes made behind it, committed with it (its appends here are all held)
        for r in effects:
            if r["kind"] == "storage" and r.get("after_held") and not c.storage_complete(r["result"]):
                raise Violation("no-append-in-flight", "a write made behind a held one completed, but the spec "
                                "has no append of this group in flight")
    elif kind == "coordinator":
        ev = lead["event"]
        if ev == "load" and lead.get("loaded") and gid not in replay_log(c.log):
            # a trace that begins at a load (a restart): the group is what the log held, as the record says
            c.log.append(lead["loaded"])
        if ev == "mark_dead":
            c.mark_dead(gid)
        else:
            getattr(c, ev)()
    elif kind == "observe":
        _observe(c, gid, lead)
    rows = list(c.fired)
    if c.at_once:
        raise Violation("append-not-made", f"{len(c.at_once)} write(s) completed within the step that the spec "
                        f"never made", rows)
    # the parked requests answered in the step
    said = {r["id"]: r for r in effects if r["kind"] == "response"}
    for rid, rec in said.items():
        got = w.answers.get(rid)
        if got is None:
            raise Violation(rows[-1] if rows else "no-row",
                            f"the trace answers parked request {rid!r} here; the spec does not answer it in this "
                            f"step", rows)
        diff = differences(got, rec["response"])
        if diff:
            raise Violation(rows[-1] if rows else "no-row", f"answer to request {rid!r}: " + "; ".join(diff), rows)
    for rid in w.answers:
        if rid not in said:
            raise Violation(rows[-1] if rows else "no-row",
                            f"the spec answers parked request {rid!r} in this step; the trace does not", rows)


def _request(w: World, gid: str, rec: dict) -> None:
    c = w.coord
    api, req, rid = rec["api"], rec["request"], rec["id"]
    issued = rec.get("issued")
    if issued is None and api == "JoinGroup" and not req.get("member") and isinstance(rec.get("response"), dict):
        issued = rec["response"].get("member") or None
    c.issue = issued
    try:
        reply = c.send(api, req, on_response=_Answer(w, rid), request_id=rid)
    except InvalidRequest as e:
        raise Violation("bad-request", f"a request Kafka could not decode: {e}") from None
    finally:
        c.issue = None
    rows = list(c.fired)
    rule = rows[0] if rows else f"{api}: no row"
    said = rec.get("response")
    if said is None and reply is not None:
        raise Violation(rule, f"the spec answers {api} at once ({brief(reply, 160)}); the trace parks it", rows)
    if said is not None and reply is None:
        raise Violation(rule, f"the spec parks {api} (no answer yet); the trace answers {brief(said, 160)}", rows)
    if said is not None:
        diff = differences(reply, said)
        if diff:
            raise Violation(rule, f"{api} response: " + "; ".join(diff), rows)


def _timer(c: ReplayCoordinator, gid: str, rec: dict, check_deadlines: bool) -> None:
    name = rec["timer"]
    g = c.groups.get(gid)
    slot = NONE
    member = rec.get("member")
    if member is not None:
        slot = g.slot_of.get(member, NONE) if g is not None else NONE
        if slot == NONE and g is not None:
            slot = next((i for i, m in enumerate(g.ids) if m == member), NONE)
    key = (gid, name, slot)
    trig = TIMERS[name][0]
    if not c.timers.armed(key):
        who = f" of member {member}" if member is not None else ""
        raise Violation(f"{trig}: timer not armed",
                        f"the {name} timer{who} fires, but the spec has no such timer armed (table.TIMERS: it "
                        f"fires only while armed)")
    due = c.timers.deadline(key)
    if check_deadlines and due is not None and rec["ts_ms"] < due:
        raise Violation(f"{trig}: timer fired early",
                        f"the {name} timer fires at {rec['ts_ms']} ms, before its deadline {due} ms")
    c.timers.cancel(key)
    c._timer_fired(key)


def _observe(c: ReplayCoordinator, gid: str, rec: dict) -> None:
    snap = c.snapshot(gid)
    for k in ("state", "generation", "leader", "members", "protocol"):
        if k in rec and rec[k] is not None:
            got = None if snap is None else snap.get(k)
            if _norm(got, k) != _norm(rec[k], k):
                raise Violation(f"observed {k}", f"observed {k} {brief(rec[k], 80)}; the spec has {brief(got, 80)}")


def may_choose(c: ReplayCoordinator, gid: str, lead: dict) -> bool:
    """Whether a step can meet a choice the table leaves open (then each outcome is followed)."""
    if lead["kind"] != "request" or lead["api"] not in PLAIN_APIS:
        return True
    g = c.groups.get(gid)
    return g is not None and g.state[E.STATE_I] == PREPARING


def steps_of(records: list[dict]) -> list[tuple[dict, list[dict]]]:
    """(lead record, the records of what it caused) for each step of the trace."""
    steps: list = []
    for r in records:
        if r["kind"] == "response" or (r["kind"] == "storage" and r.get("at_once")):
            if not steps:
                raise Violation("orphan-record", f"record seq {r['seq']}: a {r['kind']} record before any "
                                "request, timer or event")
            steps[-1][1].append(r)
        else:
            steps.append((r, []))
    return steps


def _first(outcomes) -> int:
    return 0


def _recorder(prefix: list, decisions: list):
    def choose(outcomes):
        i = len(decisions)
        decisions.append(len(outcomes))
        return prefix[i] if i < len(prefix) else 0
    return choose


def _alternatives(prefix: list, decisions: list) -> list:
    return [prefix + [0] * (i - len(prefix)) + [alt]
            for i in range(len(prefix), len(decisions)) for alt in range(1, decisions[i])]


class Replay:
    """The set of worlds that explain the trace so far."""

    def __init__(self, gid: str, config: dict | None, engine: E.Engine | None = None):
        self.gid = gid
        self.check_deadlines = config is not None
        try:
            self.worlds = [World(ReplayCoordinator(config, engine))]
        except ConfigError as e:
            raise Violation("bad-config", f"the trace's config: {e}") from None
        self.rebalances = 0
        self.started: int | None = None

    def step(self, lead: dict, effects: list[dict]) -> None:
        if self.started is None:
            # the spec's clock starts at the trace's first time, not at 0: it moves only forward, and a
            # trace written before 1970 (negative times) would leave it at 0, every timer early
            self.started = lead["ts_ms"]
            for w in self.worlds:
                w.coord.clock.now_ms = self.started
        survivors: list[World] = []
        first: Violation | None = None
        for w in self.worlds:
            for run in self._runs(w, lead):
                try:
                    run_step(run, self.gid, lead, effects, self.check_deadlines)
                except Violation as v:
                    first = first or v
                    continue
                survivors.append(run)
        if not survivors:
            raise first
        if len(survivors) > 1:
            survivors = distinct_worlds(survivors)[:MAX_WORLDS]
        if any("join completes, next generation" in r for r in survivors[0].coord.fired):
            self.rebalances += 1
        self.worlds = survivors

    def _runs(self, w: World, lead: dict):
        """The world after each combination of choices the step meets: the first in `w` itself, the others
        (rare) each in a copy of `w` as it was before the step."""
        c = w.coord
        if not may_choose(c, self.gid, lead):
            yield w
            return
        before = c.save()
        decisions: list[int] = []
        c.choose = _recorder([], decisions)
        yield w
        c.choose = _first
        stack = _alternatives([], decisions)
        if not stack:
            return
        after = c.save()
        while stack:
            prefix = stack.pop()
            c.restore(before)
            run = copy.deepcopy(w)
            more: list[int] = []
            run.coord.choose = _recorder(prefix, more)
            yield run
            run.coord.choose = _first
            stack += _alternatives(prefix, more)
        c.restore(after)

    def states(self) -> list[dict]:
        return [snapshot_of(w.coord, self.gid) for w in self.worlds]
