"""`groupspec simulate`: many groups driven through the runtime coordinator by simulated consumers,
each step written to a complete trace.

Each group runs on a coordinator of its own (one group per offsets partition), its clock manual,
driven by consumers that behave like Kafka's Java consumer: JoinGroup (v9: MEMBER_ID_REQUIRED, then
rejoin with the id), the leader runs the Range assignor, SyncGroup, heartbeats every
session/3, commits, rejoins on REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID and
retries on NOT_COORDINATOR.  The environment does to each group, at random (seeded): new members
join, members leave, crash (their session expires), come back slow (after the rebalance timeout:
removed when the join completes), static members restart (same group.instance.id, a new member id,
no rebalance), the coordinator moves (unload, then load on the next broker: the trace's `source`
changes), appends fail, and appends take time (held, then completed).

`--inject-bug NAME --fraction F` runs that fraction of the groups on a broken coordinator
(checkers/traces/bugs.py); which groups, and whether the bug fired in each, go to a separate file.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import Callable

from groupspec.impl.clock import ManualClock
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.trace import TraceWriter
from groupspec.spec.assignors import format_partition, range_assign

from .bugs import BUGS, BuggyCoordinator

EPOCH_MS = 1_760_000_000_000
CONFIG = {"group.min.session.timeout.ms": 1000, "group.initial.rebalance.delay.ms": 300}
TOPICS = {"orders": 6, "payments": 4}
RETRY = {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"}


@dataclass
class Client:
    name: str
    instance: str | None
    session_ms: int
    rebalance_ms: int
    member: str = ""
    phase: str = "join"       # join, wait-join, sync, wait-sync, stable, gone
    generation: int = -1
    leader: bool = False
    members: list = field(default_factory=list)
    next_at: int = 0
    slow: bool = False
    waiting: int = 0          # request id parked


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
        self.clients: list[Client] = []
        self.rid = 0
        self.requests = 0
        n = self.rng.randint(1, 4)
        static = self.rng.random() < 0.3
        for i in range(n):
            self._add_client(static and i % 2 == 0)
        self.next_fault = self.clock.now() + self._fault_gap()
        self.held_until: int | None = None

    def _fault_gap(self) -> int:
        return self.rng.randint(5_000, 40_000)

    def _add_client(self, static: bool) -> Client:
        i = len(self.clients)
        session = self.rng.choice([6000, 10000])
        c = Client(f"c{i}", f"{self.gid}-i{i}" if static else None, session, self.rng.choice([8000, 15000]),
                   next_at=self.clock.now() + self.rng.randint(0, 500))
        self.clients.append(c)
        return c

    # -- requests ------------------------------------------------------------------------

    def _send(self, c: Client, api: str, req: dict):
        self.rid += 1
        rid = self.rid
        self.requests += 1
        resp = self.coord.send(api, {"group": self.gid, **req}, on_response=lambda r, c=c, api=api, rid=rid:
                               self._answered(c, api, rid, r), request_id=rid)
        if resp is None:
            c.waiting = rid
            c.phase = "wait-join" if api == "JoinGroup" else "wait-sync" if api == "SyncGroup" else c.phase
        elif api in ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit"):
            self._on(c, api, resp)
        return resp

    def _answered(self, c: Client, api: str, rid: int, resp: dict) -> None:
        if c.waiting != rid or c.phase == "gone":
            return
        c.waiting = 0
        self._on(c, api, resp)

    def _on(self, c: Client, api: str, r: dict) -> None:
        now = self.clock.now()
        err = r.get("error") if api != "OffsetCommit" else next(iter((r.get("errors") or {"": "NONE"}).values()))
        if c.phase == "gone":
            return
        if err == "FENCED_INSTANCE_ID":
            c.phase = "gone"
            return
        if err in RETRY:
            c.next_at = now + self.rng.randint(100, 1000)
            if api in ("JoinGroup", "SyncGroup"):
                c.phase = "join"
            return
        if api == "JoinGroup":
            if err == "MEMBER_ID_REQUIRED":
                c.member, c.phase, c.next_at = r.get("member") or "", "join", now + 1
            elif err == "NONE":
                c.member, c.generation = r["member"], r["generation"]
                c.leader = r.get("leader") == c.member
                c.members = r.get("members") or []
                c.phase, c.next_at = "sync", now + self.rng.randint(0, 400)
            else:
                if err == "UNKNOWN_MEMBER_ID":
                    c.member = ""
                c.phase, c.next_at = "join", now + self.rng.randint(50, 500)
        elif api == "SyncGroup":
            if err == "NONE":
                c.phase, c.next_at = "stable", now + c.session_ms // 3
            else:
                if err == "UNKNOWN_MEMBER_ID":
                    c.member = ""
                c.phase, c.next_at = "join", now + self.rng.randint(0, 300)
        else:   # Heartbeat, OffsetCommit
            if err == "NONE":
                c.next_at = now + c.session_ms // 3
            elif err in ("REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"):
                if err == "UNKNOWN_MEMBER_ID":
                    c.member = ""
                c.phase = "join"
                c.next_at = now + (c.rebalance_ms + 2000 if c.slow else self.rng.randint(0, 300))
                c.slow = False
            else:
                c.next_at = now + c.session_ms // 3

    def _act(self, c: Client) -> None:
        if c.phase == "join":
            c.next_at = 1 << 62
            self._send(c, "JoinGroup", {"member": c.member, "instance": c.instance, "client": c.name,
                                        "host": "/10.0.0.1", "session_timeout_ms": c.session_ms,
                                        "rebalance_timeout_ms": c.rebalance_ms, "protocol_type": "consumer",
                                        "protocols": [{"name": "range", "metadata": "orders,payments"}]})
        elif c.phase == "sync":
            c.next_at = 1 << 62
            req = {"member": c.member, "instance": c.instance, "generation": c.generation}
            if c.leader:
                subs = {m: list(TOPICS) for m in c.members}
                req["assignments"] = {m: [format_partition(p) for p in ps]
                                      for m, ps in range_assign(TOPICS, subs).items()}
            self._send(c, "SyncGroup", req)
        elif c.phase == "stable":
            c.next_at = 1 << 62
            if self.rng.random() < 0.2:
                self._send(c, "OffsetCommit", {"member": c.member, "instance": c.instance,
                                               "generation": c.generation,
                                               "offsets": {"orders-0": self.rng.randrange(1 << 30)}})
            else:
                self._send(c, "Heartbeat", {"member": c.member, "instance": c.instance,
                                            "generation": c.generation})
        else:
            c.next_at = 1 << 62

    # -- the environment ---------------------------------------------------------------------

    def _fault(self) -> None:
        rng, now = self.rng, self.clock.now()
        live = [c for c in self.clients if c.phase != "gone"]
        k = rng.random()
        if k < 0.18 or not live:                          # a new member joins
            if len(live) < 6:
                self._add_client(rng.random() < 0.3)
        elif k < 0.32:                                     # a member leaves
            c = rng.choice(live)
            if c.member:
                self._send(c, "LeaveGroup", {"members": [{"member": c.member, "instance": c.instance}]})
            c.phase = "gone"
        elif k < 0.46:                                     # a crash: the session expires; static ones restart
            c = rng.choice(live)
            c.phase = "gone"
            if c.instance is not None and rng.random() < 0.7:
                back = Client(c.name + "r", c.instance, c.session_ms, c.rebalance_ms,
                              next_at=now + rng.randint(500, c.session_ms * 2))
                self.clients.append(back)
        elif k < 0.58:                                     # a slow member: misses the next rebalance
            rng.choice(live).slow = True
            if rng.random() < 0.5:
                self._add_client(False)
        elif k < 0.68:                                     # the coordinator moves
            self.coord.unload()
            self.broker = (self.broker + 1) % self.brokers
            self.writer.source = f"broker-{self.broker}"
            self._advance(rng.randint(0, 200))
            self.coord.begin_load()
            self._advance(rng.randint(0, 300))
            self.coord.load()
            for c in live:
                if c.phase in ("wait-join", "wait-sync"):
                    c.phase, c.waiting, c.next_at = "join", 0, now + rng.randint(100, 800)
        elif k < 0.80:                                     # the next append fails
            self.coord.storage_fail_next(rng.choice(["NOT_ENOUGH_REPLICAS", "NOT_LEADER_OR_FOLLOWER",
                                                     "KAFKA_STORAGE_ERROR"]))
        else:                                              # appends take a while
            self.coord.storage_hold(True)
            self.held_until = now + rng.randint(50, 1500)

    def _advance(self, ms: int) -> None:
        self.coord.advance(ms)

    def run(self, requests: int | None = None, until_ms: int | None = None) -> None:
        start = self.clock.now()
        while True:
            if requests is not None and self.requests >= requests:
                break
            if until_ms is not None and self.clock.now() - start >= until_ms:
                break
            live = [c for c in self.clients if c.phase != "gone"]
            t = min([c.next_at for c in live] + [self.next_fault] +
                    ([self.held_until] if self.held_until is not None else []))
            if t > self.clock.now():
                self._advance(t - self.clock.now())
            if self.held_until is not None and self.clock.now() >= self.held_until:
                self.held_until = None
                self.coord.storage_hold(False)
                while self.coord.appends:
                    self.coord.storage_complete("NONE" if self.rng.random() < 0.9 else "NOT_ENOUGH_REPLICAS")
                continue
            if self.clock.now() >= self.next_fault:
                self.next_fault = self.clock.now() + self._fault_gap()
                self._fault()
                continue
            for c in live:
                if c.next_at <= self.clock.now() and c.phase != "gone":
                    self._act(c)
                    break
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
    if not spec:
        return []
    names = list(BUGS) if spec.strip() == "all" else [b.strip() for b in spec.split(",") if b.strip()]
    unknown = [b for b in names if b not in BUGS]
    if unknown:
        raise ValueError(f"unknown bug {unknown[0]!r}; one of {', '.join(BUGS)}, or all")
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
