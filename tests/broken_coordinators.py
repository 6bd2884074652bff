"""Deliberately broken group coordinators behind the adapter interface: the conformance harness's teeth.

Each is the runtime coordinator with one real-world class of bug, put in as a
broker's author would get it wrong (not a table mutant): the harness must
catch each and shrink it to a short scenario (tests/test_conform.py;
benchmarks/conform.py measures how fast).  They run without the spec's
invariant checks, as someone else's implementation would: only what they
answer and what their snapshots show can give them away.

    groupspec conform --adapter broken_coordinators:wrong_error_code   (with tests/ on PYTHONPATH)
"""
from __future__ import annotations

import dataclasses

from groupspec.checkers.conform.adapter import CoordinatorAdapter
from groupspec.impl.clock import Timers
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.storage import InMemoryLog
from groupspec.spec.engine import Engine
from groupspec.spec.lang import walk
from groupspec.spec.rows import Set_
from groupspec.spec.table import ROWS


def _coordinator(config: dict, **kw) -> GroupCoordinator:
    return GroupCoordinator(config, log=kw.pop("log", None) or InMemoryLog(), lifecycle=True, debug=False, **kw)


class wrong_error_code(CoordinatorAdapter):
    """A Heartbeat during a rebalance answers NONE instead of REBALANCE_IN_PROGRESS: members never
    learn they must rejoin (the consumer's only signal outside a JoinGroup)."""

    def __init__(self, config: dict):
        super().__init__(_coordinator(config))

    def send(self, api, request, request_id):
        resp = super().send(api, request, request_id)
        if api == "Heartbeat" and resp and resp.get("error") == "REBALANCE_IN_PROGRESS":
            resp = {**resp, "error": "NONE"}
        return resp


class missed_generation_fence(CoordinatorAdapter):
    """An OffsetCommit from a member of the group is accepted whatever its generation: a zombie
    consumer of an old generation overwrites the new owner's offsets."""

    def __init__(self, config: dict):
        super().__init__(_coordinator(config))

    def send(self, api, request, request_id):
        if api == "OffsetCommit":
            snap = self.coord.snapshot(request.get("group") or "") or {}
            if request.get("member") in snap.get("members", []) and snap.get("generation", 0) > 0:
                request = {**request, "generation": snap["generation"]}
        return super().send(api, request, request_id)


class _KeepEarlierDeadline(Timers):
    def arm(self, key, delay_ms):
        if key[1] == "heartbeat" and self.armed(key):
            old = self.deadline(key)
            if old is not None and old <= self.clock.now() + max(0, int(delay_ms)):
                return           # the old timer was never cancelled: it fires first
        super().arm(key, delay_ms)


class timer_not_cancelled(CoordinatorAdapter):
    """A member's session timer is not cancelled when it is rescheduled (a heartbeat, a rejoin): the
    earlier deadline still fires, and a live member is expired."""

    def __init__(self, config: dict):
        coord = _coordinator(config)
        coord.timers = _KeepEarlierDeadline(coord.clock)
        super().__init__(coord)


class _SyncAnswers(CoordinatorAdapter):
    """A coordinator whose answers to SyncGroup requests go through `wrong` (None: the answer is dropped)."""

    def __init__(self, config: dict):
        super().__init__(_coordinator(config))
        self._sync_ids: set = set()

    def send(self, api, request, request_id):
        if api == "SyncGroup":
            self._sync_ids.add(request_id)
        return super().send(api, request, request_id)

    def answered(self):
        out = []
        for rid, resp in super().answered():
            resp = self.wrong(resp) if rid in self._sync_ids else resp
            if resp is not None:
                out.append((rid, resp))
        return out

    def wrong(self, resp: dict) -> dict | None:
        raise NotImplementedError


class parked_answered_never(_SyncAnswers):
    """Followers' parked SyncGroups are never answered when the leader's assignment arrives (their
    callbacks are dropped): they wait until their session times out."""

    def wrong(self, resp):
        return None if resp.get("error") == "NONE" and resp.get("assignment") == [] else resp


class parked_answered_twice(CoordinatorAdapter):
    """A parked JoinGroup is answered twice when the join completes (the callback is invoked and not
    cleared)."""

    def __init__(self, config: dict):
        super().__init__(_coordinator(config))

    def answered(self):
        out = []
        for rid, resp in super().answered():
            out.append((rid, resp))
            if "members" in resp and resp.get("error") == "NONE":
                out.append((rid, resp))
        return out


class _ForgetsOffsets(InMemoryLog):
    def records(self):
        return [r for r in super().records() if r["type"] != "offset"]


class lost_offset_on_reload(CoordinatorAdapter):
    """The offset commits in the log are not replayed when the group is loaded: a coordinator taking
    over serves no committed offsets."""

    def __init__(self, config: dict):
        super().__init__(_coordinator(config, log=_ForgetsOffsets()))


def _keeps_leader(row):
    steps = []
    for st in row.steps:
        if isinstance(st, Set_) and "leader" in st.updates and any(t.op == "choose" for t in walk(st.updates["leader"])):
            st = dataclasses.replace(st, updates={v: t for v, t in st.updates.items() if v != "leader"})
        steps.append(st)
    return dataclasses.replace(row, steps=steps)


_NO_REELECTION = None


class leader_not_reelected(CoordinatorAdapter):
    """When the leader leaves or is removed, the group keeps it as leader: nobody computes the next
    assignment."""

    def __init__(self, config: dict):
        global _NO_REELECTION
        if _NO_REELECTION is None:
            _NO_REELECTION = Engine([_keeps_leader(r) for r in ROWS])
        super().__init__(_coordinator(config, engine=_NO_REELECTION))


class session_timeout_off_by_one(CoordinatorAdapter):
    """A JoinGroup whose session timeout is exactly group.max.session.timeout.ms is refused
    (INVALID_SESSION_TIMEOUT): the bound checked with >= instead of >."""

    def __init__(self, config: dict):
        super().__init__(_coordinator(config))
        self.max = config["group.max.session.timeout.ms"]

    def send(self, api, request, request_id):
        if api == "JoinGroup" and request.get("session_timeout_ms") == self.max:
            request = {**request, "session_timeout_ms": self.max + 1}
        return super().send(api, request, request_id)


# -- six more, each a mistake at an edge the harness must steer to (issue 27, item 1) -------------------------

class _AnswersBeforeStored(GroupCoordinator):
    def append(self, g, o):
        if self.hold and o.api != "offsets":      # the group record: "written" the moment it is handed over
            self.hold = False
            try:
                return super().append(g, o)
            finally:
                self.hold = True
        return super().append(g, o)


class assignment_before_stored(CoordinatorAdapter):
    """The leader's assignment is answered to the members before the group record is stored: a write that is
    slow (held) is not waited for, so a failed or lost write leaves members with an assignment the log never
    had."""

    def __init__(self, config: dict):
        super().__init__(_AnswersBeforeStored(config, log=InMemoryLog(), lifecycle=True, debug=False))


class _JoinTimerOfLastJoiner(Timers):
    last_rebalance_ms: int | None = None

    def arm(self, key, delay_ms):
        if key[1] == "join" and self.last_rebalance_ms is not None:
            delay_ms = self.last_rebalance_ms      # not the largest of the members': the latest joiner's
        super().arm(key, delay_ms)


class rebalance_timeout_of_last_joiner(CoordinatorAdapter):
    """The rebalance waits for the rebalance timeout of the member that joined last, not the largest among
    the members: with a slow member in the group, the join completes early and drops it."""

    def __init__(self, config: dict):
        coord = _coordinator(config)
        coord.timers = _JoinTimerOfLastJoiner(coord.clock)
        super().__init__(coord)

    def send(self, api, request, request_id):
        if api == "JoinGroup":
            ms = request.get("session_timeout_ms") if request.get("version") == 0 or \
                "rebalance_timeout_ms" not in request else request["rebalance_timeout_ms"]
            if isinstance(ms, int):
                self.coord.timers.last_rebalance_ms = ms
        return super().send(api, request, request_id)


class group_max_size_off_by_one(CoordinatorAdapter):
    """group.max.size is checked with > instead of >=: a group takes one member more than its bound."""

    def __init__(self, config: dict):
        size = config["group.max.size"]
        super().__init__(_coordinator({**config, "group.max.size": min(size + 1, 2**31 - 1)}))


class heartbeat_of_previous_generation(CoordinatorAdapter):
    """A Heartbeat of the previous generation from a member of the group is accepted (the fence compares
    with the generation before the rebalance completed): a member that missed a rebalance is not told
    ILLEGAL_GENERATION."""

    def __init__(self, config: dict):
        super().__init__(_coordinator(config))

    def send(self, api, request, request_id):
        if api == "Heartbeat":
            snap = self.coord.snapshot(request.get("group") or "") or {}
            gen = snap.get("generation", 0)
            if request.get("member") in snap.get("members", []) and gen > 0 and request.get("generation") == gen - 1:
                request = {**request, "generation": gen}
        return super().send(api, request, request_id)


class _ExpiresEarly(Timers):
    def arm(self, key, delay_ms):
        if key[1] == "heartbeat":
            delay_ms = max(0, int(delay_ms) - 1)   # expired when now >= last heartbeat + timeout - 1
        super().arm(key, delay_ms)


class session_expiry_one_ms_early(CoordinatorAdapter):
    """A member's session expires 1 ms before its session timeout (the deadline compared with >= on a
    timeout less one): a member that heartbeats at the last moment is removed."""

    def __init__(self, config: dict):
        coord = _coordinator(config)
        coord.timers = _ExpiresEarly(coord.clock)
        super().__init__(coord)


class failed_store_answered_none(_SyncAnswers):
    """When the group record of the leader's assignment fails to be stored, the parked SyncGroups are
    answered NONE with no partitions instead of the store's error: the members think they synced and
    consume nothing, and never rejoin."""

    def wrong(self, resp):
        if resp.get("error") in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "UNKNOWN_SERVER_ERROR"):
            return {**resp, "error": "NONE", "assignment": []}
        return resp


BROKEN = (wrong_error_code, missed_generation_fence, timer_not_cancelled, parked_answered_never,
          parked_answered_twice, lost_offset_on_reload, leader_not_reelected, session_timeout_off_by_one,
          assignment_before_stored, rebalance_timeout_of_last_joiner, group_max_size_off_by_one,
          heartbeat_of_previous_generation, session_expiry_one_ms_early, failed_store_answered_none)
