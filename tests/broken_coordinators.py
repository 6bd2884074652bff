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


class parked_answered_never(CoordinatorAdapter):
    """Followers' parked SyncGroups are never answered when the leader's assignment arrives (their
    callbacks are dropped): they wait until their session times out."""

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
            if rid in self._sync_ids and resp.get("error") == "NONE" and resp.get("assignment") == []:
                continue
            out.append((rid, resp))
        return out


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


BROKEN = (wrong_error_code, missed_generation_fence, timer_not_cancelled, parked_answered_never,
          parked_answered_twice, lost_offset_on_reload, leader_not_reelected, session_timeout_off_by_one)
