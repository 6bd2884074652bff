"""`groupspec simulate`: many groups driven through the runtime coordinator by simulated consumers,
each step written to a complete trace.

Each group runs on a coordinator of its own (one group per offsets partition), its clock manual.
Its consumers are the closed world's clients: what a consumer does when it starts, reads an answer
(MEMBER_ID_REQUIRED: rejoin with the id; the leader runs the Range assignor and syncs; a follower
syncs; REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, NOT_COORDINATOR: rejoin;
FENCED_INSTANCE_ID: stop), heartbeats, commits, leaves, crashes or restarts is a row of spec/world.py
(CLIENT_ROWS), fired by checkers/world/clients.py as the explicit checker fires it.  Each consumer holds
its client tuple; this module only translates: the request a row put in flight becomes a runtime
request (member ids and partitions as strings), and the runtime's answer is written into the
client's response slot as the world writes it (spec/world.py READS) before the client reads it.

What is the simulator's own is the environment: when each consumer's request reaches the
coordinator (a slow member's rejoin arrives after the rebalance timeout: removed when the join
completes), heartbeats every session/3, and, at random (seeded), new members join, members leave
(also during a rebalance: world switch `leaves_rebalancing`), crash (their session expires), static
members restart (same group.instance.id, a new member id, no rebalance), the coordinator moves
(unload, then load on the next broker: the trace's `source` changes), appends fail, and appends
take time (held, then completed).  The environment picks only among moves the client rows allow.

`--inject-bug NAME --fraction F` runs that fraction of the groups on a broken coordinator
(checkers/traces/bugs.py); which groups, and whether the bug fired in each, go to a separate file.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from groupspec.impl.clock import ManualClock
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.trace import TraceWriter
from groupspec.spec.assignors import format_partition, range_assign
from groupspec.spec.concrete import iter_bits
from groupspec.spec.kafka import APPEND_FAILURES, ERRORS
from groupspec.spec.lang import NONE
from groupspec.spec.schema import MEMBER
from groupspec.spec.world import ACTION_BY_NAME, MESSAGES, Kind

from groupspec.checkers.world.clients import CP, NRQ, PHASE, RQ, RS, ClientRows, client_triggers, initial_client, response_slot
from groupspec.checkers.world.presets import WorldConfig
from .bugs import BUGS, BuggyCoordinator

EPOCH_MS = 1_760_000_000_000
CONFIG = {"group.min.session.timeout.ms": 1000, "group.initial.rebalance.delay.ms": 300}
TOPICS = {"orders": 6, "payments": 4}
PARTS = [(t, p) for t, n in TOPICS.items() for p in range(n)]
PART_INDEX = {format_partition(tp): i for i, tp in enumerate(PARTS)}
# The closed world the simulated consumers live in: the switches say which client moves exist (a
# static member never leaves, spec/world.py LEAVE_TRIGGERS), as they do for the explicit checker.
SIM_WORLD = WorldConfig(clients=1, crash=True, expiry=True, failover=True, append_failure=True, commits=True,
                        leaves=True, restart=True, leaves_rebalancing=True)
# the client triggers of a dynamic member and of a static one
TRIGGERS = {static: frozenset(client_triggers(SIM_WORLD, static)) for static in (False, True)}
NEVER = 1 << 62
CLIENTS = ClientRows()
_BLANK = initial_client({MEMBER: 1})      # a leader's assignment grows with the ids it names
_NO_REQUEST = _BLANK[RQ[0]:RQ[0] + NRQ]
PH, OWNED = CP["c_phase"], CP["c_owned"]
# a runtime request's key for each parameter a world message carries from its request (MESSAGES' fields)
REQUEST_KEYS = {"generation": "generation", "assignments": "assignments", "commit_parts": "offsets"}


class Ids:
    """A group's member ids as the client rows see them: slots, in the order first seen."""

    def __init__(self):
        self.ids: list[str] = []
        self.slot_of: dict[str, int] = {}

    def slot(self, mid: str | None) -> int:
        if not mid:
            return NONE
        s = self.slot_of.get(mid)
        if s is None:
            s = self.slot_of[mid] = len(self.ids)
            self.ids.append(mid)
        return s

    def id(self, slot: int) -> str:
        return "" if slot == NONE else self.ids[slot]

    def mask(self, mids) -> int:
        return sum(1 << self.slot(m) for m in mids or ())


@dataclass
class Consumer:
    name: str
    instance: str | None
    session_ms: int
    rebalance_ms: int
    C: tuple = _BLANK         # its client tuple (checkers/world/clients.py)
    next_at: int = NEVER      # when it next acts: its request in flight reaches the coordinator, or it heartbeats
    restart_at: int = NEVER   # a crashed static member's process is started again
    slow: bool = False        # its next JoinGroup arrives after the rebalance timeout
    closing: bool = False     # it closes during its next rebalance, while its JoinGroup or SyncGroup is parked
    waiting: int | None = None    # the id of its request parked at the coordinator

    @property
    def phase(self) -> str:
        return PHASE_NAMES[self.C[PH]]

    @property
    def alive(self) -> bool:
        return self.phase not in ("left", "crashed")


PHASE_NAMES = {i: n for n, i in PHASE.items()}


class GroupSim:
    """One group, its coordinator and its consumers."""

    def __init__(self, gid: str, seed: int, sink: Callable[[dict], None], bug: str | None, brokers: int = 3):
        self.gid = gid
        self.rng = random.Random(seed)
        self.clock = ManualClock(EPOCH_MS + self.rng.randrange(0, 3_600_000))
        if bug:
            self.coord: GroupCoordinator = BuggyCoordinator(bug, CONFIG, clock=self.clock)
        else:
            self.coord = GroupCoordinator(CONFIG, clock=self.clock, lifecycle=False, debug=False)
            self.coord.fired = _NoList()
        counter = iter(range(1, 1 << 40))
        self.coord.id_source = lambda client, _c=counter: f"{client}-{next(_c):06x}{self.rng.getrandbits(32):08x}"
        self.broker = self.rng.randrange(brokers)
        self.brokers = brokers
        self.writer = TraceWriter(sink, source=f"broker-{self.broker}", config=CONFIG).attach(self.coord)
        self.ids = Ids()
        self.rows_fired: Counter = Counter()    # the client rows fired, by name
        self.clients: list[Consumer] = []
        self.rid = 0
        self.requests = 0
        n = self.rng.randint(1, 4)
        static = self.rng.random() < 0.3
        for i in range(n):
            self._add_client(static and i % 2 == 0)
        self.next_fault = self.clock.now() + self._fault_gap()
        self.slow_until: int | None = None     # a period of slow storage: each write takes `latency` ms
        self.latency = 0
        self.write_due: int | None = None       # when the oldest write in flight completes

    def _fault_gap(self) -> int:
        return self.rng.randint(3_000, 30_000)

    def _add_client(self, static: bool) -> Consumer:
        i = len(self.clients)
        session = self.rng.choice([6000, 10000])
        c = Consumer(f"c{i}", f"{self.gid}-i{i}" if static else None, session, self.rng.choice([8000, 15000]),
                     next_at=self.clock.now() + self.rng.randint(0, 500))
        self.clients.append(c)
        return c

    # -- the client rows, and what their requests and answers are to the runtime -------------------

    def _assign(self, members: int) -> tuple:
        """The leader's assignor over the member set it was given: Range, as the world's."""
        res = range_assign(TOPICS, {self.ids.id(m): list(TOPICS) for m in iter_bits(members)})
        out = [0] * len(self.ids.ids)
        for mid, parts in res.items():
            out[self.ids.slot(mid)] = sum(1 << PART_INDEX[format_partition(p)] for p in parts)
        return tuple(out)

    def _fire(self, c: Consumer, trigger: str) -> bool:
        """Fire c's rows of `trigger`; False when none applies (the move is not c's to make now)."""
        if trigger not in TRIGGERS[c.instance is not None]:
            return False
        got = CLIENTS.fire(c.C, trigger, self._assign)
        if not got:
            return False
        [(row, c.C)] = got        # the client rows leave no choice open
        self.rows_fired[row.name] += 1
        if ACTION_BY_NAME[trigger].forgets:
            c.waiting = None      # its connection is closed: an answer to its parked request is never read
        self._schedule(c)
        return True

    def _schedule(self, c: Consumer) -> None:
        """When c next acts: its request in flight reaches the coordinator after the network's delay
        (a slow member's JoinGroup after the rebalance timeout); a stable idle client heartbeats at
        session/3; otherwise it waits (for a parked answer, or for ever: it stopped)."""
        if c.closing and self._can(c, "ClientLeaveRebalancing"):
            c.closing = False
            self._fire(c, "ClientLeaveRebalancing")
            return
        now = self.clock.now()
        kind = Kind.values[c.C[RQ[0]]]
        if kind == "join":
            if c.slow:
                c.slow = False
                c.next_at = now + c.rebalance_ms + 2000
            else:
                c.next_at = now + self.rng.randint(1, 500)
        elif kind == "sync":
            # now and then a poll loop is late to SyncGroup (a slow assignor, a long batch): still within
            # the session timeout, but late enough for another member's join to start a rebalance first
            late = self.rng.random() < 0.15
            c.next_at = now + (self.rng.randint(500, 4000) if late else self.rng.randint(0, 400))
        elif kind != "none":
            c.next_at = now
        elif c.phase == "stable" and c.waiting is None and not c.C[RS]:
            c.next_at = now + c.session_ms // 3
        else:
            c.next_at = c.restart_at if c.phase == "crashed" else NEVER

    def _request(self, c: Consumer) -> tuple[str, dict]:
        """The runtime request for c's request in flight (spec/world.py MESSAGES: its API and the
        fields it carries), member ids and partitions as strings."""
        kind, mid, gen, assign, parts = c.C[RQ[0]:RQ[0] + NRQ]
        msg = MESSAGES[Kind.values[kind]]
        member = self.ids.id(mid)
        if msg.api == "LeaveGroup":
            return msg.api, {"members": [{"member": member, "instance": c.instance}]}
        req: dict = {"member": member, "instance": c.instance}
        if msg.api == "JoinGroup":
            req.update({"client": c.name, "host": "/10.0.0.1", "session_timeout_ms": c.session_ms,
                        "rebalance_timeout_ms": c.rebalance_ms, "protocol_type": "consumer",
                        "protocols": [{"name": "range", "metadata": ",".join(TOPICS)}]})
        values = {"generation": gen,
                  "assignments": {self.ids.id(m): [format_partition(PARTS[i]) for i in iter_bits(a)]
                                  for m, a in enumerate(assign) if a},
                  # what a consumer commits is its position: any offset serves
                  "commit_parts": {format_partition(PARTS[i]): self.rng.randrange(1 << 30) for i in iter_bits(parts)}}
        for param in msg.fields:
            req[REQUEST_KEYS[param]] = values[param]
        return msg.api, req

    def _fields(self, api: str, r: dict) -> dict:
        """The runtime's answer as the response fields a client reads (spec/world.py READS)."""
        if api == "OffsetCommit":
            # one error for the whole commit: every partition's is the same; nothing committed, nothing refused
            errs = list((r.get("errors") or {}).values())
            error = next((e for e in errs if e != "NONE"), "NONE")
            return {"error_all": ERRORS.index(error)}
        return {"error": ERRORS.index(r["error"]), "member": self.ids.slot(r.get("member")),
                "generation": r.get("generation", -1), "leader": self.ids.slot(r.get("leader")),
                "members": self.ids.mask(r.get("members")),
                "assignment": sum(1 << PART_INDEX[p] for p in r.get("assignment") or ())}

    def _deliver(self, c: Consumer) -> None:
        """c's request in flight reaches the coordinator; its answer, now or once parked, is read."""
        api, req = self._request(c)
        answered = MESSAGES[Kind.values[c.C[RQ[0]]]].answered
        c.C = c.C[:RQ[0]] + _NO_REQUEST + c.C[RQ[0] + NRQ:]
        self.rid += 1
        rid = self.rid
        self.requests += 1
        # waiting before it is sent: a parked request may be answered within the step that parks it
        # (the leader's SyncGroup, once its write completes at once)
        c.waiting = rid
        resp = self.coord.send(api, {"group": self.gid, **req}, request_id=rid,
                               on_response=lambda r, c=c, api=api, rid=rid: self._answered(c, api, rid, r))
        if resp is None:
            self._schedule(c)
            return
        c.waiting = None
        if answered:
            self._read(c, api, resp)
        else:
            self._schedule(c)

    def _answered(self, c: Consumer, api: str, rid: int, resp: dict) -> None:
        if c.waiting != rid:
            return                # forgotten: the client closed its connection
        c.waiting = None
        self._read(c, api, resp)

    def _read(self, c: Consumer, api: str, resp: dict) -> None:
        c.C = c.C[:RS] + response_slot(api, self._fields(api, resp))
        if not self._fire(c, "ClientReceive"):
            raise AssertionError(f"no client row reads {api}'s answer {resp} in phase {c.phase}: spec/world.py's "
                                 f"ClientReceive rows must cover every answer")

    def _act(self, c: Consumer) -> None:
        if c.C[RQ[0]]:
            self._deliver(c)
            return
        if c.phase == "crashed" and c.restart_at <= self.clock.now():
            c.restart_at = NEVER
            if self._fire(c, "ClientRestart"):
                return
        elif c.phase == "stable":
            commit = c.C[OWNED] and self.rng.random() < 0.2     # a consumer with nothing to commit sends nothing
            if self._fire(c, "ClientCommit" if commit else "ClientHeartbeat"):
                return
        elif self._fire(c, "ClientStart"):
            return
        c.next_at = c.restart_at if c.phase == "crashed" else NEVER

    def _can(self, c: Consumer, trigger: str) -> bool:
        """Whether one of c's rows of `trigger` applies now (the environment picks among these)."""
        return trigger in TRIGGERS[c.instance is not None] and \
            bool(CLIENTS.fire(c.C, trigger, self._assign))

    # -- the environment ---------------------------------------------------------------------

    def _fault(self) -> None:
        rng, now = self.rng, self.clock.now()
        live = [c for c in self.clients if c.alive]
        k = rng.random()
        if k < 0.18 or not live:                          # a new member joins
            if len(live) < 6:
                self._add_client(rng.random() < 0.3)
        elif k < 0.32:                                     # a member leaves: a stable one now, or one
            can = [c for c in live if self._can(c, "ClientLeave")]       # during its next rebalance
            later = [c for c in live if "ClientLeaveRebalancing" in TRIGGERS[c.instance is not None]]
            if can and (not later or rng.random() < 0.5):
                self._fire(rng.choice(can), "ClientLeave")
            elif later:
                rng.choice(later).closing = True
        elif k < 0.46:                                     # a crash: the session expires; static ones restart
            can = [c for c in live if self._can(c, "ClientCrash")]
            if can:
                c = rng.choice(can)
                if c.instance is not None and rng.random() < 0.7:
                    c.restart_at = now + rng.randint(500, c.session_ms * 2)
                self._fire(c, "ClientCrash")
        elif k < 0.58:                                     # a slow member: misses the next rebalance
            rng.choice(live).slow = True
            if rng.random() < 0.5:
                self._add_client(False)
        elif k < 0.68:                                     # the coordinator moves: its parked requests are
            self.coord.unload()                            # answered NOT_COORDINATOR, and their clients rejoin
            self.broker = (self.broker + 1) % self.brokers
            self.writer.source = f"broker-{self.broker}"
            self._advance(rng.randint(0, 200))
            self.coord.begin_load()
            self._advance(rng.randint(0, 300))
            self.coord.load()
        elif k < 0.80:                                     # the next append fails
            self.coord.storage_fail_next(rng.choice(APPEND_FAILURES))
        else:                                              # storage is slow for a while: each write
            self.coord.storage_hold(True)                  # completes some time after it is made
            self.slow_until = now + rng.randint(5_000, 40_000)
            self.latency = rng.randint(20, 1500)

    def _advance(self, ms: int) -> None:
        self.coord.advance(ms)

    def run(self, requests: int | None = None, until_ms: int | None = None) -> None:
        start = self.clock.now()
        spins = 0         # rounds in a row in which nothing was due: a simulator that waits on nothing
        while True:
            if requests is not None and self.requests >= requests:
                break
            if until_ms is not None and self.clock.now() - start >= until_ms:
                break
            # the clock stops at the coordinator's next timer too: an answer it releases (a join
            # completing) is read then, not at the simulator's next event, by which time the reader's
            # session may have expired
            if self.slow_until is not None and self.coord.appends and self.write_due is None:
                self.write_due = self.clock.now() + self.latency
            armed, before = self.coord.timers.schedule(), self.clock.now()
            t = min([c.next_at for c in self.clients] + [self.next_fault] + [d for _, d, _ in armed] +
                    [d for d in (self.slow_until, self.write_due) if d is not None])
            # by 0 too: a timer the coordinator armed to fire now (a zero delay) fires
            self._advance(max(0, t - before))
            now = self.clock.now()
            if self.write_due is not None and now >= self.write_due:
                self.write_due = None
                if self.coord.appends:
                    self.coord.storage_complete("NONE" if self.rng.random() < 0.9 else self.rng.choice(APPEND_FAILURES))
                continue
            if self.slow_until is not None and now >= self.slow_until:
                self.slow_until = None
                self.coord.storage_hold(False)
                while self.coord.appends:
                    self.coord.storage_complete("NONE")
                continue
            if self.clock.now() >= self.next_fault:
                self.next_fault = self.clock.now() + self._fault_gap()
                self._fault()
                continue
            for c in self.clients:
                if c.next_at <= self.clock.now():
                    self._act(c)
                    break
            else:           # nothing acted: the clock or a timer must have moved
                spins = spins + 1 if now == before and self.coord.timers.schedule() == armed else 0
                if spins > 1000:
                    raise AssertionError(f"simulate: {self.gid} waits at {now} on nothing that is due")
        # the appends still held complete, so the trace ends with nothing in flight
        self.coord.storage_hold(False)
        while self.coord.appends:
            self.coord.storage_complete("NONE")

    @property
    def bug_fired(self) -> tuple[bool, int | None]:
        c = self.coord
        return (getattr(c, "bug_fired", 0) > 0, getattr(c, "first_fired_ms", None))


class _NoList(list):
    """The rows fired, not kept (a long simulation would keep millions)."""

    def append(self, _x) -> None:
        pass


def choose_bugs(spec: str | None) -> list[str]:
    """The bugs --inject-bug names: `all`, or a comma list of BUGS, each once (ValueError otherwise: an empty
    name between commas is a typo, not "no bug", and a name twice would run that bug twice as often)."""
    if spec is None:
        return []
    if spec.strip() == "all":
        return list(BUGS)
    names = [b.strip() for b in spec.split(",")]
    if not any(names):
        raise ValueError(f"{spec!r} names no bug; give one of {', '.join(BUGS)}, a comma list, or all")
    if "" in names:
        raise ValueError(f"{spec!r} has an empty name between commas; give each bug's name once")
    unknown = [b for b in names if b not in BUGS]
    if unknown:
        raise ValueError(f"unknown bug {unknown[0]!r}; one of {', '.join(BUGS)}, or all")
    twice = sorted({b for b in names if names.count(b) > 1})
    if twice:
        raise ValueError(f"{', '.join(twice)} named more than once; name each bug once")
    return names


def simulate(groups: int, sink: Callable[[dict], None], seed: int = 0, events_per_group: int | None = 200,
             duration_ms: int | None = None, bugs: list[str] | None = None, fraction: float = 0.0,
             on_group: Callable[[int, dict], None] | None = None, first: int = 0) -> list[dict]:
    """Run `groups` groups; returns, for the groups given a bug, {group, bug, fired, first_fired_ts_ms}."""
    chosen = random.Random(f"{seed}/bugs")
    out = []
    bugs = bugs or []
    for i in range(first, first + groups):
        gid = f"group-{seed}-{i:07d}"
        bug = bugs[i % len(bugs)] if bugs and chosen.random() < fraction else None
        sim = GroupSim(gid, hash((seed, i)) & 0xFFFFFFFF, sink, bug)
        sim.run(requests=events_per_group, until_ms=duration_ms)
        if bug:
            fired, at = sim.bug_fired
            out.append({"group": gid, "bug": bug, "fired": fired, "first_fired_ts_ms": at})
        if on_group:
            on_group(i, {"group": gid, "records": sum(sim.writer.seq.values())})
    return out
