"""The runtime group coordinator: Kafka's classic GroupCoordinator, driven by the table.

Every decision is a row of `groupspec.spec.table`, fired through the one
engine.  What this module adds is the part of a broker that is not
protocol: turning request values (member id strings, partitions, protocol
metadata) into the spec's finite domains and back, parking requests and
answering them later, timers on an injected clock, and the group-metadata
log with its appends (held, failed, completed).

A request is a dict of the scenario format's request fields; a response
is a dict of its response fields.  `send` returns the response, or None
when the request is parked; a parked request is answered later through
the `on_response` callback given to `send`.
"""
from __future__ import annotations

import copy
import functools
import itertools
import logging
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from groupspec.spec import engine as E
from groupspec.spec.concrete import iter_bits, mask_of
from groupspec.spec.handling import (EAGER, JAVA_WRITES, complete, handle, leave, record_of, require_known_member_id,
                                     vote)
from groupspec.spec.kafka import (BOOLEAN_KEYS, NEW_COORDINATOR, DESCRIBE_GROUP_ID_NOT_FOUND_SINCE, ERRORS, INT64_MAX, SYNC_PROTOCOL_MANDATORY_SINCE,
                                  brief, check_config, request_version)
from groupspec.spec.lang import NONE
from groupspec.spec.rows import ECHO
from groupspec.spec.schema import CONFIG_KEYS, INSTANCE, MEMBER, PARTITION, PROTOCOL, PROTOLIST, PTYPE, STATES, Coord
from groupspec.spec.table import TIMER_TRIGGERS, completion

from .clock import ManualClock, Timers
from .lifecycle import GroupLifecycle, move
from .requests import InvalidRequest, check as check_request
from .storage import InMemoryLog, MetadataLog, StorageError, replay

logger = logging.getLogger("groupspec.coordinator")

COORD = {name: i for i, name in enumerate(Coord.values)}
ERROR_INDEX = {name: i for i, name in enumerate(ERRORS)}
ABSENT = STATES.index("Absent")
EMPTY = STATES.index("Empty")


class Interner:
    """Values of one finite domain <-> small indices (grows as values appear)."""

    def __init__(self) -> None:
        self.values: list = []
        self.index: dict = {}

    def __call__(self, value) -> int:
        i = self.index.get(value)
        if i is None:
            i = self.index[value] = len(self.values)
            self.values.append(value)
        return i

    def get(self, value) -> int:
        return self.index.get(value, NONE)

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class Parked:
    request_id: Any
    api: str
    callback: Callable[[dict], None] | None
    member_id: str
    answered: bool = False


@dataclass
class PendingAppend:
    group: str
    kind: str                       # sync, empty, static_replace, create, offsets; "" for tombstones (Java)
    fields: dict                    # what the append output captured (its completion's parameters)
    record: list                    # what the log holds once it succeeds
    request: Any = None             # the request waiting on it (an OffsetCommit, a static member's JoinGroup)
    reserved: tuple = ()            # member slots it refers to
    # the Java coordinator's replies waiting behind it (JAVA_WRITES): (api, request, id, callback, reply)
    after: list = field(default_factory=list)
    # the Java coordinator's write made while earlier ones were held: it completes right after them
    # (JAVA_WRITES.in_order), not at a storage step
    rides: bool = False


class NotABehaviour(ValueError):
    """A step the table does not describe for the configured coordinator (the Java coordinator's held write
    failing, which it never does; its tombstone write failing at once, which the table does not say yet:
    spec/handling.py JAVA_WRITES); the message says why.  Raised before the step changes anything."""


@dataclass
class Group:
    """One group: its spec state, and the real values behind its member slots."""
    group_id: str
    state: tuple
    ids: list = field(default_factory=list)          # slot -> member id (None: free)
    slot_of: dict = field(default_factory=dict)      # member id -> slot
    client: dict = field(default_factory=dict)       # slot -> (client id, host)
    parked: dict = field(default_factory=dict)       # (api, slot) -> Parked
    state_ts: int = 0                                # currentStateTimestamp
    commit_ts: dict = field(default_factory=dict)    # partition index -> commit timestamp
    lifecycle: Any = None

    def clone(self, memo: dict | None = None) -> "Group":
        """A copy to change apart from this one.  `state` is a tuple of ints and tuples that nothing changes
        in place: shared, not walked.  Parked requests are copied deep with `memo` (their callbacks go to
        the copied world)."""
        # ids, slot_of, client and commit_ts hold strings, ints and tuples of them: a copy of the container does
        new = Group(self.group_id, self.state, list(self.ids), dict(self.slot_of), dict(self.client), {},
                    self.state_ts, dict(self.commit_ts))
        if memo is not None:
            memo[id(self)] = new              # before what may lead back to this group
        if self.parked:
            new.parked = copy.deepcopy(self.parked, memo)
        if self.lifecycle is not None:
            new.lifecycle = copy.deepcopy(self.lifecycle, memo)
        return new

    __deepcopy__ = clone

class GroupCoordinator:
    """Kafka's classic group coordinator for the groups of one offsets partition.

    `choose(outcomes)` picks among the outcomes of a row that leaves a choice
    open (the leader when the leader leaves, a tied protocol vote).  The
    default takes the first (lowest member slot); the spec target of the
    scenario runner explores every choice instead.
    """

    def __init__(self, config: dict | None = None, log: MetadataLog | None = None, clock: ManualClock | None = None,
                 choose: Callable[[list], int] | None = None, lifecycle: bool = True, debug: bool = False,
                 engine: E.Engine | None = None):
        self.config = check_config(config)      # or ConfigError (a ValueError) saying what is wrong
        self.clock = clock or ManualClock()
        self.timers = Timers(self.clock)
        self.log = log if log is not None else InMemoryLog()
        self.engine = engine or _default_engine()   # another table's engine: a mutant's, in mutation testing
        self.choose = choose or (lambda outcomes: 0)
        self.use_lifecycle = lifecycle
        self.debug = debug
        self.coord = "active"
        self.groups: dict[str, Group] = {}
        self._shared: set[str] = set()                 # groups a copy of this coordinator holds too (`_own`)
        self.domains = {d: Interner() for d in (INSTANCE, PARTITION, PROTOCOL, PROTOLIST, PTYPE)}
        self._protocol_lists: dict[int, tuple] = {}     # PROTOLIST index -> (PROTOCOL indices, their set)
        self._votes: dict[tuple, int] = {}              # (PROTOLIST index, candidates) -> the vote
        self.hold = False
        self.fail_next: str | None = None
        self.java = bool(self.config[NEW_COORDINATOR])   # Kafka 4.0's Java coordinator (JAVA_WRITES)
        self._result = False       # the request's reply is its operation's result (Row.java_result)
        self.appends: deque[PendingAppend] = deque()   # held appends, oldest first
        self.fired: list[str] = []                     # names of the rows fired (coverage)
        self.outcomes_worked = 0                       # outcomes the engine worked out (the work done)
        self._ids = itertools.count(1)
        self.trace = None                             # a TraceWriter (impl/trace.py) writes each step, or None
        self._current: tuple | None = None            # (request id, api, callback, member id) being handled
        self._reply: dict | None = None
        self.id_source: Callable[[str], str] = lambda client: f"{client}-{uuid.uuid4()}"
        self.cfg_params = {
            **{param: (bool if key in BOOLEAN_KEYS else int)(self.config[key]) for param, key in CONFIG_KEYS.items()},
            "proto_names": self._proto_names, "vote": self._vote,
        }
        self._cfg_vector = E.make_params(self.cfg_params)     # every row's parameters start from it

    def __deepcopy__(self, memo) -> "GroupCoordinator":
        """The spec target copies its worlds at every step.  The containers that only grow and hold
        strings, ints and tuples (rows fired, interned values, caches, the timer heap) are copied as
        containers, not element by element, else each step costs as much as all the steps before it."""
        flat = [self.fired, self._protocol_lists, self._votes, self.timers._heap, self.timers._live]
        for interner in self.domains.values():
            flat += [interner.values, interner.index]
        for c in flat:
            if id(c) not in memo:
                memo[id(c)] = copy.copy(c)
        new = object.__new__(type(self))
        memo[id(self)] = new
        # the groups too are shared, until either coordinator changes one (`_own` copies it first); not those
        # with parked requests, whose callbacks must go to the copied world
        groups = dict(self.groups)
        waiting = [gid for gid, g in groups.items() if g.parked]
        for gid in waiting:
            groups[gid] = groups[gid].clone(memo)
        shared = set(groups).difference(waiting)
        memo[id(self.groups)] = groups
        memo[id(self._shared)] = set(shared)
        self._shared |= shared
        new.__dict__.update({k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()})
        return new

    def _own(self, g: Group) -> Group:
        """Group `g` (held here) to change: a copy of its own if a copied coordinator shares it."""
        if g.group_id in self._shared:
            self._shared.discard(g.group_id)
            g = self.groups[g.group_id] = g.clone()
        return g

    # ------------------------------------------------------------------ requests

    def send(self, api: str, req: dict, on_response: Callable[[dict], None] | None = None,
             request_id: Any = None) -> dict | None:
        """Handle one request.  Returns its response, or None if it is parked.

        A request Kafka could not decode (an unknown API or field, a value of
        the wrong type or beyond its wire type, a version outside the API's)
        raises InvalidRequest; anything it can decode gets a response.
        """
        check_request(api, req)
        if on_response is not None and not callable(on_response):
            raise InvalidRequest(f"on_response must be callable or None, got {brief(on_response)}")
        handler = getattr(self, "_api_" + api)
        rid = request_id if request_id is not None else next(self._ids)
        self._current = (rid, api, on_response, req.get("member") or "")
        self._reply = None
        self._result = False
        tr = self.trace
        if tr is not None:
            tr.begin()
        try:
            handler(req)
            if self.java and self._result and self._reply is not None and self.appends:
                # the Java coordinator's operation result waits behind the writes not yet completed (JAVA_WRITES)
                self.appends[-1].after.append((api, req, rid, on_response, self._reply))
                self._reply = None
            elif self.java and self._reply is None and self.appends:
                # parked in an operation that waits behind them: answered from away if they fail first
                parked = self._parked(rid)
                if parked is not None:
                    self.appends[-1].after.append((api, req, rid, on_response, parked))
        finally:
            self._current = None
            if tr is not None:
                tr.end(tr.request(api, req, rid, self._reply))
            self._gc_groups()
        return self._reply

    def _base(self, group: Group | None, api: str, req: dict) -> dict:
        gid = req.get("group")
        ok = gid is not None and (gid != "" or api in ("OffsetCommit", "OffsetFetch", "DescribeGroups",
                                                       "DeleteGroups"))
        return {"coord": COORD[self.coord], "group_id_ok": ok}

    def _who(self, g: Group, req: dict) -> dict:
        mid = req.get("member") or ""
        inst = req.get("instance")
        return {"member": g.slot_of.get(mid, NONE) if mid else NONE, "member_empty": mid == "",
                "instance": self.domains[INSTANCE](inst) if inst is not None else NONE}

    def _api_JoinGroup(self, req: dict) -> None:
        g = self._group(req["group"])
        version = request_version("JoinGroup", req)
        rk = req.get("require_known_member_id")
        if rk is None:
            rk = require_known_member_id(version, req.get("instance"))
        protocols = [(p, "") if isinstance(p, str) else (p["name"], str(p.get("metadata", "")))
                     for p in req.get("protocols") or []]
        ptype = req.get("protocol_type") or ""
        fresh = self._fresh_slot(g)
        client = req.get("client") or ""
        inst = req.get("instance")
        new_id = self.id_source(inst if inst is not None else client)
        g.ids[fresh] = new_id   # tentative: released after the step unless used
        g.client[fresh] = (client, req.get("host") or "")
        params = {**self._base(g, "JoinGroup", req), **self._who(g, req), "fresh": fresh,
                  "require_known": bool(rk), "session_ms": int(req.get("session_timeout_ms", 0)),
                  # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout
                  "rebalance_ms": int(req.get("session_timeout_ms", 0) if version == 0 or
                                      "rebalance_timeout_ms" not in req else req["rebalance_timeout_ms"]),
                  "req_ptype": self.domains[PTYPE](ptype), "req_ptype_empty": ptype == "",
                  "req_protos": self.domains[PROTOLIST](tuple(protocols)),
                  "supports_skip": version >= 9}
        for name, _ in protocols:
            self.domains[PROTOCOL](name)
        self._fire(g, "JoinGroup", params)

    def _api_SyncGroup(self, req: dict) -> None:
        g = self._group(req["group"])
        assignments = [0] * max(1, len(g.ids))
        for mid, parts in (req.get("assignments") or {}).items():
            slot = g.slot_of.get(mid)
            if slot is not None:
                assignments[slot] = mask_of([self.domains[PARTITION](p) for p in parts])
        pt, pn = req.get("protocol_type"), req.get("protocol")
        params = {**self._base(g, "SyncGroup", req), **self._who(g, req),
                  "generation": int(req.get("generation", -1)),
                  "req_ptype": self.domains[PTYPE](pt) if pt is not None else NONE, "req_ptype_given": pt is not None,
                  "req_protocol": self.domains[PROTOCOL](pn) if pn is not None else NONE,
                  "req_protocol_given": pn is not None,
                  "sync_v5": request_version("SyncGroup", req) >= SYNC_PROTOCOL_MANDATORY_SINCE,
                  "assignments": tuple(assignments)}
        self._fire(g, "SyncGroup", params)

    def _api_Heartbeat(self, req: dict) -> None:
        g = self._group(req["group"])
        params = {**self._base(g, "Heartbeat", req), **self._who(g, req),
                  "generation": int(req.get("generation", -1))}
        self._fire(g, "Heartbeat", params)

    def _api_LeaveGroup(self, req: dict) -> None:
        g = self._group(req["group"])
        members = req.get("members")
        if members is None:   # v0-2: one member id
            members = [{"member": req.get("member") or ""}]
        base = self._base(g, "LeaveGroup", req)
        [(_, top, errors)] = leave(self, g, base, [self._who(g, ident) for ident in members])
        self._settled(g)
        errors = [ERRORS[e] for e in errors]
        version = request_version("LeaveGroup", req)
        error = ERRORS[top["error"]] if "error" in top else "NONE"
        if version < 3 and error == "NONE" and errors:
            error = errors[0]
        self._reply = {"error": error, "errors": errors}

    def _api_OffsetCommit(self, req: dict) -> None:
        g = self._group(req["group"])
        commit = [NONE] * max(1, len(self.domains[PARTITION]) + len(req.get("offsets") or {}))
        parts = []
        for p, off in (req.get("offsets") or {}).items():
            i = self.domains[PARTITION](p)
            if i >= len(commit):
                commit += [NONE] * (i + 1 - len(commit))
            commit[i] = int(off)
            parts.append(i)
        params = {**self._base(g, "OffsetCommit", req), **self._who(g, req),
                  "generation": int(req.get("generation", -1)), "commit": tuple(commit),
                  "commit_parts": mask_of(parts), "commit_v9": request_version("OffsetCommit", req) >= 9}
        self._fire(g, "OffsetCommit", params)

    def _api_OffsetFetch(self, req: dict) -> None:
        g = self._group(req["group"])
        parts = req.get("partitions")
        params = {**self._base(g, "OffsetFetch", req), "fetch_all": parts is None,
                  "fetch_parts": mask_of([self.domains[PARTITION](p) for p in parts or []])}
        self._fire(g, "OffsetFetch", params)

    def _api_DescribeGroups(self, req: dict) -> None:
        version = request_version("DescribeGroups", req)
        out = []
        for gid in req.get("groups") or []:
            g = self._group(gid)
            self._reply = None
            self._fire(g, "DescribeGroup", {**self._base(g, "DescribeGroups", {"group": gid}),
                                            "describe_not_found": version >= DESCRIBE_GROUP_ID_NOT_FOUND_SINCE})
            out.append({"group": gid, **(self._reply or {})})
        self._reply = {"error": "NONE", "groups": out}

    def _api_ListGroups(self, req: dict) -> None:
        probe = self._group("")
        self._fire(probe, "ListGroups", {"coord": COORD[self.coord]})
        error = (self._reply or {}).get("error", "NONE")
        out = []
        for gid, g in sorted(self.groups.items()):
            if g.state[E.STATE_I] == ABSENT:
                continue
            g = self._own(g)
            self._reply = None
            self._fire(g, "ListGroupsEntry", {"coord": COORD[self.coord]})
            r = self._reply or {}
            if r.get("listed"):
                out.append({"group": gid, "state": r.get("state"), "protocol_type": r.get("protocol_type")})
        self._reply = {"error": error, "groups": out}

    def _untold_tombstones(self, what: str) -> None:
        """NotABehaviour where the Java coordinator's tombstones would meet the failure set for the next write
        (JAVA_WRITES: the table does not say how it undoes the deletion)."""
        if self.java and self.fail_next and not self.hold and self.coord == "active":
            raise NotABehaviour(f"{what} with {self.fail_next} set for the next write: the Java coordinator undoes "
                                f"a deletion whose tombstones fail, which the table does not describe yet "
                                f"(spec/handling.py JAVA_WRITES)")

    def _api_DeleteGroups(self, req: dict) -> None:
        if any(self.groups.get(gid) is not None and self.groups[gid].state[E.STATE_I] == EMPTY
               for gid in req.get("groups") or []):
            self._untold_tombstones("DeleteGroups of an Empty group")
        errors = {}
        for gid in req.get("groups") or []:
            g = self._group(gid)
            self._reply = None
            self._fire(g, "DeleteGroup", self._base(g, "DeleteGroups", {"group": gid}))
            errors[gid] = (self._reply or {}).get("error")
        self._reply = {"error": "NONE", "errors": errors}

    # ------------------------------------------------------------------ time, storage, coordinator

    def advance(self, ms: int) -> None:
        _require(isinstance(ms, int) and not isinstance(ms, bool) and ms >= 0,
                 f"advance: the clock moves forward by a whole number of ms >= 0, got {brief(ms)}")
        # records carry the time as Kafka's INT64: a clock past it could write none of them
        _require(self.clock.now() + ms <= INT64_MAX,
                 f"advance: {brief(ms)} ms would take the clock from {self.clock.now()} past Kafka's INT64 time "
                 f"({INT64_MAX} ms)")
        self.timers.advance(ms, self._timer_fired)

    def _timer_fired(self, key) -> None:
        gid, name, slot = key
        g = self.groups.get(gid)
        if g is None:
            return
        g = self._own(g)
        params = {"timer_member": slot} if slot != NONE else {}
        if self.trace is not None:
            self.trace.begin()
            self.trace.timer(gid, name, g.ids[slot] if slot != NONE else None)
            try:
                self._fire(g, TIMER_TRIGGERS[name], params)
            finally:
                self.trace.end()
            return
        self._fire(g, TIMER_TRIGGERS[name], params)

    def storage_hold(self, hold: bool = True) -> None:
        _require(isinstance(hold, bool), f"storage_hold: true or false, got {brief(hold)}")
        self.hold = hold

    def storage_fail_next(self, error: str) -> None:
        _require_error("storage_fail_next", error)
        self.fail_next = error

    def storage_complete(self, error: str = "NONE", cause: str | None = None) -> bool:
        """Complete the oldest held append.  False if none is held.  `cause` "unload": it fails as the
        offsets partition moves away (how the Java coordinator's writes fail once made, JAVA_WRITES)."""
        _require_error("storage_complete", error)
        if not self.appends:
            return False
        moving_away = cause == "unload" and error == JAVA_WRITES.unload_error
        if self.java and error != "NONE" and not JAVA_WRITES.held_can_fail and not moving_away:
            raise NotABehaviour(f"storage complete: {error} on a write already made: Kafka 4.0's Java coordinator "
                                f"fails a write only as it is made (fail_next_append), or all of them as the "
                                f"partition moves away (spec/handling.py JAVA_WRITES)")
        if self.trace is not None:
            self.trace.begin()
        try:
            self._complete(self.appends.popleft(), error, cause)
            while error == "NONE" and self.appends and self.appends[0].rides:
                self._complete(self.appends.popleft(), "NONE", rode=True)
        finally:
            if self.trace is not None:
                self.trace.end()
        return True

    def _behind_held(self) -> bool:
        """A write now would be committed only after held ones (JAVA_WRITES.in_order)."""
        return self.java and JAVA_WRITES.in_order and bool(self.appends)

    def unload(self) -> None:
        """The offsets partition moves away: groups unloaded (the Java coordinator first fails every write not
        yet completed, JAVA_WRITES)."""
        while self.java and self.appends:
            self.storage_complete(JAVA_WRITES.unload_error, cause="unload")
        for gid in list(self.groups):
            self._event(gid, "unload", lambda g: self._fire(self._own(g), "Unload", {}))
        if self.trace is not None:      # groups the trace knows that are no longer held learn it too
            for gid in [k for k in self.trace.seq if k not in self.groups]:
                self._event(gid, "unload", None)
        self.coord = "not_coordinator"
        if self.trace is not None:
            self.trace.status = self.coord
        self._gc_groups()

    def begin_load(self) -> None:
        if any(g.state[E.STATE_I] != ABSENT for g in self.groups.values()):
            self.unload()
        if self.trace is not None:
            for gid in self.trace.seq:
                self._event(gid, "begin_load", None)
            self.trace.status = "loading"
        self.coord = "loading"

    def load(self) -> None:
        """Loading completes: every group in the log comes back (onGroupLoaded)."""
        self.coord = "active"
        loaded = replay(self.log)
        if self.trace is not None:
            self.trace.status = "active"
            for gid in self.trace.seq:
                if gid not in loaded:
                    self._event(gid, "load", None)
        for gid, lg in loaded.items():
            g = self._group(gid)
            held = g.state[E.STATE_I] != ABSENT
            # the trace says what was loaded: a trace that begins at a load (a restart) is checked from it
            self._event(gid, "load", lambda g: self._fire(g, "Load", {} if held else
                                                          self._record_params(g, lg)), g, loaded=lg.records())
            if not held and lg.record is not None:
                # a group keeps the time it entered its state across a reload: Kafka's record holds it
                # (GroupMetadataValue.currentStateTimestamp, read back by GMM.readGroupMessageValue), and an
                # Empty consumer group's offsets expire from it (found running Kafka 3.9.2:
                # docs/kafka-conformance.md).  Ours holds the time it was written, the same instant for the
                # one state where it matters: a group is stored as it becomes Empty, and never again while so.
                g.state_ts = lg.record["ts"]
        self._gc_groups()

    def mark_dead(self, gid: str) -> None:
        _require(isinstance(gid, str), f"mark_dead: a group id (a string), got {brief(gid)}")
        self._event(gid, "mark_dead", lambda g: self._fire(g, "MarkDead", {}), self._group(gid))

    def expire_offsets(self) -> None:
        self._untold_tombstones("offset expiry")
        now = self.clock.now()
        retention = int(self.config["offsets.retention.minutes"]) * 60_000
        for g in list(self.groups.values()):
            g = self._own(g)
            aged = mask_of([p for p, ts in g.commit_ts.items() if now - ts >= retention])
            self._event(g.group_id, "expire_offsets", lambda g: self._fire(g, "ExpireOffsets", {
                "aged": aged, "state_aged": now - g.state_ts >= retention}), g)
        self._gc_groups()

    def _event(self, gid: str, event: str, fire: Callable | None, g: Group | None = None, **fields) -> None:
        """A coordinator event on group `gid` (a step of its own in the trace, with `fields`)."""
        g = g if g is not None else self.groups.get(gid)
        if self.trace is None:
            if fire is not None:
                fire(g)
            return
        self.trace.begin()
        self.trace.event(gid, event, **fields)
        try:
            if fire is not None:
                fire(g)
        finally:
            self.trace.end()

    # ------------------------------------------------------------------ views

    def snapshot(self, gid: str) -> dict | None:
        """The coordinator's view of a group in scenario terms (None: not held)."""
        g = self.groups.get(gid)
        if g is None or g.state[E.STATE_I] == ABSENT:
            return None
        s = g.state
        get = lambda v: E.get(s, v)  # noqa: E731
        inst = self.domains[INSTANCE].values
        return {
            "state": STATES[s[E.STATE_I]], "generation": get("generation"),
            "leader": self._id(g, get("leader")),
            "protocol": self._name(PROTOCOL, get("protocol")),
            "protocol_type": self._name(PTYPE, get("protocol_type")),
            "members": [self._id(g, m) for m in iter_bits(get("members"))],
            "pending_members": [self._id(g, m) for m in iter_bits(get("pending"))],
            "static_members": {inst[i]: self._id(g, m) for i, m in enumerate(get("static")) if m != NONE},
            "assignment": {self._id(g, m): self._parts(get("assignment")[m]) for m in iter_bits(get("members"))},
            "offsets": {self.domains[PARTITION].values[i]: o for i, o in enumerate(get("offsets")) if o != NONE},
        }

    def member_details(self, gid: str) -> dict[str, dict]:
        """What Kafka keeps of each member beyond the spec's state (its MemberMetadata), which its JoinGroup answer
        gives the leader and DescribeGroups gives anyone, and a scenario's answer leaves out: `metadata` for the
        selected protocol as the member sent it (a real consumer's leader assigns from its members'
        subscriptions; "" while none is selected), `instance` (its group.instance.id, or None), `client` and
        `host` (as its JoinGroup came)."""
        g = self.groups.get(gid)
        if g is None or g.state[E.STATE_I] == ABSENT:
            return {}
        s = g.state
        protocol = self._name(PROTOCOL, E.get(s, "protocol"))
        instance = {m: self.domains[INSTANCE].values[i] for i, m in enumerate(E.get(s, "static")) if m != NONE}
        out = {}
        for m in iter_bits(E.get(s, "members")):
            pl = E.get(s, "protos")[m]
            protos = self.domains[PROTOLIST].values[pl] if pl != NONE else ()
            client, host = g.client.get(m, ("", ""))
            out[self._id(g, m)] = {"metadata": next((meta for name, meta in protos if name == protocol), ""),
                                   "instance": instance.get(m), "client": client, "host": host}
        return out

    # ------------------------------------------------------------------ the engine

    def _group(self, gid: str) -> Group:
        """Group `gid`, to change (created if not held)."""
        g = self.groups.get(gid)
        if g is None:
            g = Group(gid, E.initial_state(self._sizes(1)))
            if self.use_lifecycle:
                g.lifecycle = GroupLifecycle()
            self.groups[gid] = g
            self._shared.discard(gid)
        return self._own(g)

    def _sizes(self, members: int) -> dict:
        return {MEMBER: members, **{d: max(1, len(i)) for d, i in self.domains.items()}}

    def _widen(self, g: Group) -> None:
        sizes = self._sizes(max(1, len(g.ids)))
        s = g.state
        for dom, n in sizes.items():
            s = E.widen(s, dom, n)
        g.state = s

    def _fresh_slot(self, g: Group) -> int:
        used = self._slots_in_use(g)
        for i, mid in enumerate(g.ids):
            if mid is None and i not in used:
                return i
        g.ids.append(None)
        return len(g.ids) - 1

    def _slots_in_use(self, g: Group) -> set:
        s = g.state
        mask = 0
        for i in _SLOT_SETS:
            mask |= s[i]
        used = set(iter_bits(mask))
        used.add(s[_LEADER])
        used.update(s[_STATIC])
        used.update(slot for (_, slot) in g.parked)
        # this group's member timers, looked up by key: a scan of every group's timers at every step made a
        # request's cost grow with the coordinator's members (benchmarks/serve.py: about a fifth at 1,000)
        gid, armed = g.group_id, self.timers.armed
        used.update(i for i in range(len(g.ids)) for name in TIMER_TRIGGERS if armed((gid, name, i)))
        for a in self.appends:
            if a.group == g.group_id:
                used.update(a.reserved)
        used.discard(NONE)
        return used

    def _release_slots(self, g: Group) -> None:
        used = self._slots_in_use(g)
        for i, mid in enumerate(g.ids):
            if mid is not None and i not in used:
                g.slot_of.pop(mid, None)
                g.ids[i] = None
                g.client.pop(i, None)

    def _fire(self, g: Group, trigger: str, params: dict) -> None:
        """Fire `trigger` on group `g` and everything it entails (spec/handling.py; `outcomes` adds the
        configuration's parameters)."""
        handle(self, g, trigger, params)
        self._settled(g)

    def _settled(self, g: Group) -> None:
        """After a whole step (its rows, their writes' completions, the eager re-check)."""
        if self.debug:
            from groupspec.spec.invariants import check_settled
            check_settled(g.state, where=f"in group {g.group_id!r} after row {self.fired[-1]!r} and the "
                                         f"eager CompleteJoin", java=bool(self.config[NEW_COORDINATOR]))
        self._release_slots(g)

    # -- the host of spec/handling.py: what a step does to this coordinator ----------------

    eager = EAGER

    def outcomes(self, g: Group, trigger: str, params: dict) -> list:
        self._widen(g)
        self._p = p = list(self._cfg_vector)
        index = E.PARAM_INDEX
        for k, v in params.items():
            p[index[k]] = v
        outcomes = self.engine.fire(g.state, trigger, p)
        self.outcomes_worked += len(outcomes)
        if len(outcomes) > 1:
            outcomes = _distinct(outcomes)
            return [outcomes[self.choose(outcomes)]]
        return outcomes

    def fork(self, g: Group) -> Group:
        raise AssertionError("the runtime follows one outcome: nothing to fork")

    def enter(self, g: Group, out, params: dict) -> None:
        self.fired.append(out.row.name)
        self._result = self._result or out.row.java_result
        prev_state = g.state
        before = g.state[E.STATE_I]
        g.state = out.state
        path = [*out.row.via, out.row.target] if out.row.target else []
        if out.row.target and (before != g.state[E.STATE_I] or out.row.via):
            g.state_ts = self.clock.now()
            if g.lifecycle is not None:
                move(g.lifecycle, path)
        if self.debug:
            # the checks the closed world's checkers make after a row, in their order (the first broken is named)
            from groupspec.spec.invariants import check_after_row
            check_after_row(prev_state, g.state, self._p, out.outputs,
                            where=f"in group {g.group_id!r} after row {out.row.name!r}")

    def route(self, g: Group, o) -> None:
        k = o.kind
        if k == "reply":
            self._reply = self._render(g, o.api, o.fields)
        elif k == "park":
            rid, api, cb, mid = self._current
            g.parked[(o.api, o.member)] = Parked(rid, o.api, cb, mid)
            g.slot_of[g.ids[o.member]] = o.member
        elif k == "answer":
            parked = g.parked.pop((o.api, o.member), None)
            if parked is not None:
                parked.answered = True
            if parked is not None and (parked.callback is not None or self.trace is not None):
                response = self._render(g, o.api, o.fields, echo=parked.member_id)
                if self.trace is not None:
                    self.trace.answer(g.group_id, parked.request_id, response)
                if parked.callback is not None:
                    parked.callback(response)
        elif k == "arm":
            self.timers.arm((g.group_id, o.timer, o.member), o.duration)
            if o.member != NONE and g.ids[o.member] is not None:
                g.slot_of[g.ids[o.member]] = o.member
        elif k == "cancel":
            self.timers.cancel((g.group_id, o.timer, o.member))
        elif k == "cancel_all":
            self.timers.cancel_where(lambda key: key[0] == g.group_id)
        else:
            raise E.EngineError(f"no route for a {k!r} output (spec/handling.py ROUTES)")

    def tombstones(self, g: Group, outs: list) -> None:
        batch: list[dict] = []      # one batch, as GMM.cleanupGroupMetadata appends them
        for o in outs:
            if o.kind == "tombstone":
                batch.append({"type": "group_tombstone", "group": g.group_id})
            else:
                for i in iter_bits(o.fields["parts"]):
                    batch.append({"type": "offset_tombstone", "group": g.group_id,
                                  "partition": self.domains[PARTITION].values[i]})
                    g.commit_ts.pop(i, None)
        self._write_tombstones(batch)

    def routed(self, g: Group, trigger: str) -> None:
        self._drop_orphans(g)
        # a member's id becomes known once the member exists
        s = g.state
        for m in iter_bits(E.get(s, "members") | E.get(s, "pending")):
            if g.ids[m] is not None:
                g.slot_of[g.ids[m]] = m

    def in_state(self, g: Group, state: int) -> list:
        return [(g, g.state[E.STATE_I] == state)]

    def _write_tombstones(self, batch: list[dict]) -> None:
        """Kafka removes the group or offsets from its cache whatever the append does, and only
        logs a failed tombstone append (GMM.cleanupGroupMetadata); so do we.  The Java coordinator's are
        a write of the operation, held like any (JAVA_WRITES.tombstones_held): one with no completion row."""
        if self.java and JAVA_WRITES.tombstones_held and (self.hold or self._behind_held()):
            self.appends.append(PendingAppend(batch[0]["group"], "", {}, batch, rides=not self.hold))
            return
        try:
            self.log.append(batch)
        except StorageError as e:
            logger.warning("tombstones not written (a reload may bring them back): %s", e)

    def _drop_orphans(self, g: Group) -> None:
        """A parked request whose member stopped waiting without an answer stays unanswered
        (Kafka overwrote or dropped its callback); forget it."""
        waiting = {"JoinGroup": E.get(g.state, "awaiting_join"), "SyncGroup": E.get(g.state, "awaiting_sync")}
        for key in [k for k in g.parked if not (waiting[k[0]] >> k[1]) & 1]:
            del g.parked[key]

    # ------------------------------------------------------------------ appends

    def append(self, g: Group, o) -> list:
        f = o.fields
        request = None
        if o.api == "offsets":
            rid, api, cb, mid = self._current
            parts = list(iter_bits(f["commit_parts"]))
            record = [{"type": "offset", "group": g.group_id, "partition": self.domains[PARTITION].values[i],
                       "offset": f["commit"][i], "commit_ts": self.clock.now()} for i in parts]
            request = (rid, cb, mid)
            reserved = ()
            # the request is answered when the append completes
            self._reply = None
        else:
            record = [self._group_record(g, f)]
            _, params = completion(o.api, f)
            reserved = tuple(x for x in (params["append_member"], params["append_old"], params["append_old_leader"],
                                         params["append_leader"], *iter_bits(params["append_members"]))
                             if x != NONE)
            if o.api == "static_replace":
                rid, api, cb, mid = self._current
                request = (rid, cb, mid)
        a = PendingAppend(g.group_id, o.api, f, record, request=request, reserved=reserved)
        if self.hold:
            self.appends.append(a)
            return [(g, None)]
        error = self.fail_next or "NONE"
        self.fail_next = None
        if error == "NONE" and self._behind_held():
            a.rides = True
            self.appends.append(a)
            return [(g, None)]
        error = self._write(a, error)
        if self.trace is not None:
            self.trace.stored(g.group_id, error, at_once=True)
        return [(g, error)]

    def _write(self, a: PendingAppend, error: str) -> str:
        """Write an append that completes with `error` (a storage failure turns NONE into
        KAFKA_STORAGE_ERROR): the error its completion row sees."""
        if error == "NONE":
            try:
                if a.record:
                    self.log.append(a.record)      # one batch: a commit's partitions are written whole
            except StorageError as e:
                logger.warning("append failed, answered as Kafka's KAFKA_STORAGE_ERROR: %s", e)
                error = "KAFKA_STORAGE_ERROR"
        if a.kind == "offsets" and error == "NONE":
            g = self.groups[a.group]
            for i in iter_bits(a.fields["commit_parts"]):
                g.commit_ts[i] = a.record[0]["commit_ts"] if a.record else self.clock.now()
        return error

    def _complete(self, a: PendingAppend, error: str, cause: str | None = None, rode: bool = False) -> None:
        """A held append completes: its completion row answers the request that waits on it.  `rode`: a write
        made behind held ones, completing right after them (JAVA_WRITES.in_order), in their step."""
        g = self._group(a.group)
        error = self._write(a, error)
        if self.trace is not None:
            self.trace.stored(a.group, error, at_once=False, cause=cause, rode=rode)
        if not a.kind:      # the Java coordinator's tombstones: no row completes them
            pass
        elif a.request is None:
            complete(self, g, a.kind, a.fields, error)
        else:
            rid, cb, mid = a.request
            saved = self._current, self._reply
            self._current, self._reply = (rid, a.kind, cb, mid), None
            try:
                complete(self, g, a.kind, a.fields, error)
                reply = self._reply
            finally:
                self._current, self._reply = saved
            if reply is not None and self.trace is not None:
                self.trace.answer(a.group, rid, reply)
            if reply is not None and cb is not None:
                cb(reply)
        self._settled(g)
        for api, req, rid, cb, reply in a.after:
            # the replies waiting behind this write: theirs once it is committed; if it failed (the Java
            # coordinator's writes fail only as the partition moves away), the answer of a coordinator that no
            # longer holds the partition.  A request parked in its operation is answered so only if the write
            # fails before anything answered it (even once its member rejoined with another request)
            if isinstance(reply, Parked):
                if error != "NONE" and not reply.answered:
                    reply.answered = True
                    self._unpark(reply)
                    self._release(api, req, rid, cb, self._answer_away(api, req, rid, cb))
                continue
            self._release(api, req, rid, cb, reply if error == "NONE" else self._answer_away(api, req, rid, cb))

    def _parked(self, rid: Any) -> Parked | None:
        return next((p for g in self.groups.values() for p in g.parked.values() if p.request_id == rid), None)

    def _unpark(self, parked: Parked) -> None:
        for g in self.groups.values():
            for key in [k for k, p in g.parked.items() if p is parked]:
                del g.parked[key]

    def _release(self, api: str, req: dict, rid: Any, cb, reply: dict) -> None:
        if self.trace is not None:
            self.trace.answer_parked(api, req, rid, reply)
        if cb is not None:
            cb(reply)

    def _answer_away(self, api: str, req: dict, rid: Any, cb) -> dict | None:
        """The request answered by this coordinator as if its partition were elsewhere (the table's gate)."""
        saved = self.coord, self._current, self._reply, self._result
        self.coord, self._current, self._reply = "not_coordinator", (rid, api, cb, req.get("member") or ""), None
        try:
            getattr(self, "_api_" + api)(req)
            return self._reply
        finally:
            self.coord, self._current, self._reply, self._result = saved

    def _group_record(self, g: Group, fields: dict) -> dict:
        f = record_of(fields, self._selected_only)
        members = []
        for m in iter_bits(f["members"]):
            protos = self.domains[PROTOLIST].values[f["protos"][m]] if f["protos"][m] != NONE else ()
            inst = f["instance_of"][m]
            members.append({"member": g.ids[m], "instance": self.domains[INSTANCE].values[inst] if inst != NONE else None,
                            "client": g.client.get(m, ("", ""))[0], "host": g.client.get(m, ("", ""))[1],
                            "session_ms": f["session_ms"][m], "rebalance_ms": f["rebalance_ms"][m],
                            "protocols": [list(x) for x in protos], "assignment": self._parts(f["assignment"][m])})
        return {"type": "group", "group": g.group_id, "generation": f["generation"],
                "protocol_type": self._name(PTYPE, f["protocol_type"]), "protocol": self._name(PROTOCOL, f["protocol"]),
                "leader": self._id(g, f["leader"]) or None, "members": members, "ts": self.clock.now()}

    def _record_params(self, g: Group, lg) -> dict:
        rec = lg.record or {"generation": 0, "protocol_type": None, "protocol": None, "leader": None, "members": []}
        slots = []
        for m in rec["members"]:
            slot = self._fresh_slot(g)
            g.ids[slot] = m["member"]
            g.slot_of[m["member"]] = slot
            g.client[slot] = (m.get("client", ""), m.get("host", ""))
            slots.append((slot, m))
        self._widen(g)
        n = max(1, len(g.ids))
        inst = [NONE] * n
        protos = [NONE] * n
        sess = [0] * n
        reb = [0] * n
        assign = [0] * n
        for slot, m in slots:
            if m.get("instance") is not None:
                inst[slot] = self.domains[INSTANCE](m["instance"])
            # the record holds the member's selected protocol only (handling.record_of)
            protos[slot] = self.domains[PROTOLIST](tuple(tuple(x) for x in m["protocols"]))
            sess[slot], reb[slot] = m["session_ms"], m["rebalance_ms"]
            assign[slot] = mask_of([self.domains[PARTITION](p) for p in m["assignment"]])
        offsets = [NONE] * max(1, len(self.domains[PARTITION]) + len(lg.offsets))
        for p, o in lg.offsets.items():
            i = self.domains[PARTITION](p)
            if i >= len(offsets):
                offsets += [NONE] * (i + 1 - len(offsets))
            offsets[i] = o["offset"]
            g.commit_ts[i] = o["commit_ts"]
        self._widen(g)
        lead = g.slot_of.get(rec["leader"], NONE) if rec.get("leader") else NONE
        # a GroupRecord, in the record type's field order
        record = (rec["generation"],
                  self.domains[PTYPE](rec["protocol_type"]) if rec.get("protocol_type") else NONE,
                  self.domains[PROTOCOL](rec["protocol"]) if rec.get("protocol") else NONE,
                  lead, mask_of([s for s, _ in slots]), tuple(inst), tuple(protos), tuple(sess), tuple(reb),
                  tuple(assign), tuple(offsets))
        return {"record": record}

    def _gc_groups(self) -> None:
        """Forget groups the coordinator no longer holds (and that nothing waits on)."""
        gone = [k for k, g in self.groups.items() if g.state[E.STATE_I] == ABSENT and not g.parked]
        if not gone:           # the common case: no scan of every timer
            return
        timed = {key[0] for key in self.timers.keys()}
        for gid in [k for k in gone if k not in timed and not any(a.group == k for a in self.appends)]:
            del self.groups[gid]
            self._shared.discard(gid)

    # ------------------------------------------------------------------ rendering

    def _protocol_list(self, pl: int) -> tuple:
        """Protocol list `pl` as (its protocols' indices in the member's order, their set).  The
        table asks for a list's names once per member per candidate: interned lists never change,
        so each is translated once (else a JoinGroup is quadratic in its number of protocols)."""
        got = self._protocol_lists.get(pl)
        if got is None:
            order = tuple(self.domains[PROTOCOL](name) for name, _ in self.domains[PROTOLIST].values[pl])
            got = self._protocol_lists[pl] = (order, mask_of(order))
        return got

    def _proto_names(self, pl: int) -> int:
        return 0 if pl == NONE else self._protocol_list(pl)[1]

    def _vote(self, pl: int, candidates: int) -> int:
        if pl == NONE:
            return NONE
        got = self._votes.get((pl, candidates))
        if got is None:
            got = self._votes[(pl, candidates)] = vote(self._protocol_list(pl)[0], candidates)
        return got

    def _selected_only(self, pl: int, protocol: int) -> int:
        """Protocol list `pl` cut to `protocol` (what the log keeps of a member's protocols)."""
        name = self._name(PROTOCOL, protocol)
        return self.domains[PROTOLIST](tuple(x for x in self.domains[PROTOLIST].values[pl] if x[0] == name))

    def _id(self, g: Group, slot: int) -> str:
        if slot == NONE or slot >= len(g.ids) or g.ids[slot] is None:
            return ""
        return g.ids[slot]

    def _name(self, dom: str, i: int):
        return None if i == NONE else self.domains[dom].values[i]

    def _parts(self, mask: int) -> list[str]:
        return [self.domains[PARTITION].values[i] for i in iter_bits(mask)]

    def _render(self, g: Group, api: str, fields: dict, echo: str | None = None) -> dict:
        out: dict[str, Any] = {}
        for k, v in fields.items():
            if v is ECHO:
                out[k] = echo if echo is not None else (self._current[3] if self._current else "")
            elif k in ("error", "member_error", "error_all"):
                out[k] = ERRORS[v]
            elif k in ("member", "leader"):
                out[k] = self._id(g, v)
            elif k == "members":
                out[k] = [self._id(g, m) for m in iter_bits(v)]
            elif k == "protocol":
                out[k] = self._name(PROTOCOL, v)
            elif k == "protocol_type":
                out[k] = self._name(PTYPE, v)
            elif k == "summary_state":
                out["state"] = "" if v == ABSENT else STATES[v]
            elif k == "assignment" and isinstance(v, tuple):
                out[k] = {self._id(g, m): self._parts(v[m]) for m in iter_bits(fields.get("members", 0))
                          if m < len(v)}
            elif k == "assignment":
                out[k] = self._parts(v)
            else:
                out[k] = v
        if api == "OffsetCommit":
            err = out.pop("error_all")
            out = {"errors": {self.domains[PARTITION].values[i]: err for i in iter_bits(out.pop("partitions"))}}
        elif api == "OffsetFetch":
            offs = fields["offsets"]
            out = {"error": out["error"],
                   "offsets": {self.domains[PARTITION].values[i]: (offs[i] if i < len(offs) else NONE)
                               for i in iter_bits(fields["partitions"])}}
        elif api == "JoinGroup":
            out.setdefault("protocol_type", None)
        elif api in ("DescribeGroup", "ListGroupsEntry"):
            for k in ("protocol_type", "protocol"):
                if k in out and out[k] is None:
                    out[k] = ""
        return out


# the state's member sets, leader and static map: the slots a group's state refers to (after every step)
_SLOT_SETS = [E.STATE_INDEX[v] for v in ("members", "pending", "pending_sync", "awaiting_join", "awaiting_sync",
                                         "hb_armed", "new_members")]
_LEADER, _STATIC = E.STATE_INDEX["leader"], E.STATE_INDEX["static"]


def _distinct(outcomes: list) -> list:
    """The outcomes that differ in what they do.  A row's choices are made even where they decide nothing
    (the leader after a removal that removes no leader): outcomes alike in row, state and outputs are one
    behaviour, and the spec target, which explores every choice, would otherwise explore each of them, and
    every combination of them in one step (4,326 runs for six members joining, hours for ten)."""
    seen, out = set(), []
    for o in outcomes:
        key = (o.row.name, o.state, repr(o.outputs))
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out


def _require(ok: bool, message: str) -> None:
    """The coordinator's entry points answer a bad argument as they answer a bad request."""
    if not ok:
        raise InvalidRequest(message)


def _require_error(where: str, error) -> None:
    _require(isinstance(error, str) and error in ERROR_INDEX,
             f"{where}: one of Kafka's error names (e.g. NONE, NOT_LEADER_OR_FOLLOWER), got {brief(error)}")


@functools.cache
def _default_engine() -> E.Engine:
    """The table's engine, compiled once, when the first coordinator is made (not on import: the command line
    imports this module for every verb, `--help` included, and many never make a coordinator)."""
    return E.Engine()
