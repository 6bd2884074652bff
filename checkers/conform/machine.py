"""The Hypothesis state machine, generated from the table's triggers.

One rule per trigger of `spec/schema.py` TRIGGERS (the internal
CompleteJoin fires by itself, within the step that makes it due):

- a request trigger sends its API with the fields its parameters are read
  from (`PARAM_FIELDS`, only those the API has in `impl/requests.py`), each
  drawn from a strategy that favours the interesting values (`FIELDS`);
- a timer trigger moves the clock to one of its armed timers' deadlines,
  one millisecond before it, or one after (enabled while one is armed);
- a storage trigger completes the oldest held append of its kind with an
  append result (enabled while one is held);
- a coordinator trigger is the coordinator event that fires it (Load: the
  load completing, enabled while one is under way or the partition is away).

Beyond the triggers: holding appends, failing the next one, moving the
clock by a small step or by offsets.retention.minutes, and a load beginning.
The steps a group needs to get anywhere (join, the join completing, sync,
appends completing, a load completing) are picked more often (`WEIGHTS`)
and preferred by Hypothesis's simplest examples and shrinking (`_watched`).
Nothing here says what the coordinator answers: the spec does (the
reference's worlds), and the implementation must answer alike.  Swarm
testing: each example turns off a random subset of the other rules (and
Hypothesis's feature flags turn rules off by name too), so rare
combinations are reached.  Every invariant of the catalog is checked after
every row of every step (both sides run in debug mode where they can) and
again on the settled groups after each step (`catalog`).
"""
from __future__ import annotations

import functools
import sys
import time
from typing import Any, Callable

from hypothesis import reject, strategies as st, target
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from groupspec.impl.requests import API_FIELDS
from groupspec.spec.invariants import check_state
from groupspec.spec.handling import JAVA_WRITES
from groupspec.spec.kafka import APPEND_FAILURES, CONFIG_DEFAULTS, NEW_COORDINATOR, brief
from groupspec.spec.schema import TRIGGERS, Trigger
from groupspec.spec.table import TIMER_TRIGGERS

from .adapter import AdapterBroken, Factory, Unsupported
from .interrupts import calling, checkpoint
from .lockstep import Divergence, Lockstep, SpecFailure

GROUPS = ("g0", "g1")
INSTANCES = ("i1", "i2")
PARTITIONS = ("t0-0", "t0-1", "t1-0")
PROTOCOL_LISTS = (["range"], ["roundrobin"], ["range", "roundrobin"], ["roundrobin", "range"],
                  [{"name": "range", "metadata": "v2"}])
APPEND_RESULTS = ("NONE", "NONE", *APPEND_FAILURES)     # success drawn twice as often as any one failure
RETENTION_MINUTES = 1

# The API each request trigger arrives in (a batch's parts arrive in their batch's request).
API_OF = {"JoinGroup": "JoinGroup", "SyncGroup": "SyncGroup", "Heartbeat": "Heartbeat", "LeaveGroup": "LeaveGroup",
          "LeaveMember": "LeaveGroup", "OffsetCommit": "OffsetCommit", "OffsetFetch": "OffsetFetch",
          "DescribeGroup": "DescribeGroups", "ListGroups": "ListGroups", "ListGroupsEntry": "ListGroups",
          "DeleteGroup": "DeleteGroups"}
# The request fields a trigger parameter is read from (the runtime's decoding, impl/coordinator.py).  The
# others are the coordinator's (its state, config, the slot a new id takes) or a batch's identities.
PARAM_FIELDS = {
    "group_id_ok": ("group", "groups"), "member": ("member", "members"), "member_empty": ("member", "members"),
    "instance": ("instance", "members"), "require_known": ("version", "require_known_member_id"),
    "session_ms": ("session_timeout_ms",), "rebalance_ms": ("rebalance_timeout_ms", "version"),
    "req_ptype": ("protocol_type",), "req_ptype_empty": ("protocol_type",), "req_ptype_given": ("protocol_type",),
    "req_protos": ("protocols",), "supports_skip": ("version",), "generation": ("generation",),
    "req_protocol": ("protocol",), "req_protocol_given": ("protocol",), "assignments": ("assignments",),
    "commit": ("offsets",), "commit_parts": ("offsets",), "fetch_parts": ("partitions",),
    "fetch_all": ("partitions",), "describe_not_found": ("version",), "commit_v9": ("version",),
}
# Versions where an API's answer changes (None: the newest, the field left out).
VERSIONS = {"JoinGroup": (None, 0, 3, 4, 5, 8), "LeaveGroup": (None, 2), "DescribeGroups": (None, 6),
            "SyncGroup": (None, 3), "Heartbeat": (None,), "OffsetCommit": (None, 8), "OffsetFetch": (None,),
            "ListGroups": (None,), "DeleteGroups": (None,)}
OMIT = object()          # a field strategy's value for "leave the field out"
UNKNOWN_ID = "unknown-member-id"     # a member id no coordinator issued


def fields_of(trigger: Trigger) -> list[str]:
    """The request fields a request trigger's parameters come from, in the API's field order."""
    api = API_OF[trigger.name]
    wanted = {f for p in trigger.params for f in PARAM_FIELDS.get(p, ())}
    if trigger.name == "LeaveMember":
        wanted -= {"member", "instance"}     # the identities come as a batch
    elif trigger.name == "LeaveGroup":
        wanted |= {"member", "version"}      # the group-level checks, with the v0-2 form's one member
    return [f for f in API_FIELDS[api][0] if f in wanted]


class View:
    """What the strategies read of the spec's current behaviour (the reference's first world), in the
    harness's terms: members as `$variables`."""

    def __init__(self, lock: Lockstep):
        self.lock = lock
        self.coord = lock.ref.coord
        self.var_of = {v: k for k, v in lock.ref.env.items() if isinstance(v, str)}

    def snap(self, group: str) -> dict:
        return self.coord.snapshot(group) or {}

    def members(self, group: str) -> list[str]:
        s = self.snap(group)
        return ["$" + self.var_of[m] for m in s.get("members", []) + s.get("pending_members", []) if m in self.var_of]

    def known(self) -> list[str]:
        return ["$" + k for k in self.lock.env]

    def instance_of(self, group: str, member: str) -> str | None:
        for inst, m in self.snap(group).get("static_members", {}).items():
            if "$" + self.var_of.get(m, "") == member:
                return inst
        return None

    def leader(self, group: str) -> str:
        m = self.snap(group).get("leader")
        return "$" + self.var_of[m] if m in self.var_of else ""

    def generation(self, group: str) -> int:
        return self.snap(group).get("generation", 0)

    def rebalance_timeouts(self, group: str) -> list[int]:
        """The members' rebalance timeouts in the spec's state (read, never computed)."""
        from groupspec.spec import engine as E
        from groupspec.spec.concrete import iter_bits
        g = self.coord.groups.get(group)
        if g is None:
            return []
        try:
            return [int(E.get(g.state, "rebalance_ms")[m]) for m in iter_bits(E.get(g.state, "members"))]
        except (KeyError, IndexError, TypeError):
            return []


_WEIGHTED: dict = {}


def _weighted(*pairs) -> st.SearchStrategy:
    """One of the values, each as often as its weight says (Hypothesis shrinks towards the first).  Made once
    per distinct list of values: building a strategy costs more than drawing from it."""
    key = tuple((repr(v), w) for v, w in pairs)
    got = _WEIGHTED.get(key)
    if got is None:
        got = _WEIGHTED[key] = st.sampled_from([v for v, w in pairs for _ in range(w)])
        if len(_WEIGHTED) > 10_000:
            _WEIGHTED.clear()
    return got


def _member(view: View, group: str) -> st.SearchStrategy:
    """Mostly a current member, the leader most (or "" to join); sometimes one that left, or one no
    coordinator issued."""
    current, known = view.members(group), view.known()
    retired = [m for m in known if m not in current]
    leader = view.leader(group)
    pairs = [(m, 16 if m == leader else 8) for m in current] + [("", 4 if current else 12)] + \
        [(m, 1) for m in retired[-3:]]
    return _weighted(*pairs, (UNKNOWN_ID, 1))


def _timeouts(cfg: dict) -> st.SearchStrategy:
    """Within [group.min.session.timeout.ms, group.max.session.timeout.ms], mostly; its edges and one
    step beyond them."""
    lo, hi = cfg["group.min.session.timeout.ms"], cfg["group.max.session.timeout.ms"]
    return _weighted((lo * 3, 6), (lo, 2), (hi, 2), (lo + 1, 1), (hi + 1, 1), (max(0, lo - 1), 1))


def _rebalance_timeouts(view: View, group: str, cfg: dict) -> st.SearchStrategy:
    """As `_timeouts`, and at the edges of the members' own: below the smallest, above the largest, the
    largest itself (so that which member's timeout a rebalance waits for shows)."""
    have = view.rebalance_timeouts(group)
    if not have:
        return _timeouts(cfg)
    lo, hi = min(have), max(have)
    lo_cfg = cfg["group.min.session.timeout.ms"]
    edges = [(max(lo_cfg, lo - 1 if lo > lo_cfg else lo), 3), (hi + 1, 3), (hi, 1), (max(lo_cfg, hi // 2), 2)]
    return st.one_of(_timeouts(cfg), _weighted(*edges))


def _group(view: View) -> st.SearchStrategy:
    """Mostly g0, else g1 (more often once it exists), rarely "" (invalid for most APIs)."""
    return _weighted(("g0", 12), ("g1", 4 if view.snap("g1") else 1), ("", 1))


def _generation(view: View, group: str, member: Any) -> st.SearchStrategy:
    """The group's generation mostly, its neighbours sometimes; -1 (a commit from outside the group's
    membership) mostly for the empty member id."""
    gen = view.generation(group)
    if member == "":
        return _weighted((-1, 6), (gen, 2), (gen + 1, 1))
    return _weighted((gen, 8), (gen - 1, 1), (gen + 1, 1), (-1, 1))


def _instance(view: View, group: str, member: Any) -> st.SearchStrategy:
    """The member's own group.instance.id mostly (none for a dynamic member); sometimes another's."""
    own = view.instance_of(group, member) if member else None
    if own is None:
        return _weighted((OMIT, 6 if member else 3), (INSTANCES[0], 2), (INSTANCES[1], 1))
    return _weighted((own, 8), (OMIT, 1), *((i, 1) for i in INSTANCES if i != own))


# field -> (view, config, api, group, the request so far) -> strategy of its value (or OMIT)
FIELDS: dict[str, Callable[..., st.SearchStrategy]] = {
    "member": lambda v, cfg, api, g, req: _member(v, g),
    "instance": lambda v, cfg, api, g, req: _instance(v, g, req.get("member")),
    "session_timeout_ms": lambda v, cfg, api, g, req: _timeouts(cfg),
    "rebalance_timeout_ms": lambda v, cfg, api, g, req: _rebalance_timeouts(v, g, cfg),
    "protocol_type": lambda v, cfg, api, g, req: _weighted(("consumer", 30), ("connect", 1), ("", 1)) if api == "JoinGroup"
    else _weighted((OMIT, 6), ("consumer", 2), ("connect", 1)),
    "protocols": lambda v, cfg, api, g, req: _weighted(*((p, 12 if i == 0 else 1) for i, p in enumerate(PROTOCOL_LISTS))),
    "require_known_member_id": lambda v, cfg, api, g, req: _weighted((OMIT, 12), (True, 1), (False, 1)),
    "version": lambda v, cfg, api, g, req: _weighted(*((OMIT if x is None else x, 8 if x is None else 1)
                                                  for x in VERSIONS[api])),
    "generation": lambda v, cfg, api, g, req: _generation(v, g, req.get("member")),
    "protocol": lambda v, cfg, api, g, req: _weighted((OMIT, 6), ("range", 2), ("roundrobin", 1)),
    "assignments": lambda v, cfg, api, g, req: _assignments(v, g),
    "offsets": lambda v, cfg, api, g, req: st.dictionaries(st.sampled_from(PARTITIONS), st.integers(0, 9), min_size=1,
                                                      max_size=2),
    "partitions": lambda v, cfg, api, g, req: st.one_of(st.just(None), st.lists(st.sampled_from(PARTITIONS), min_size=1,
                                                                           max_size=2, unique=True)),
    "members": lambda v, cfg, api, g, req: st.lists(_identity(v, g), min_size=1, max_size=2),
    "groups": lambda v, cfg, api, g, req: st.lists(_weighted(("g0", 4), ("g1", 2), ("", 1)), min_size=1, max_size=2,
                                              unique=True),
}


def _identity(view: View, group: str) -> st.SearchStrategy:
    return st.one_of(st.builds(lambda m: {"member": m}, _member(view, group)),
                     st.builds(lambda m, i: {"member": m, "instance": i},
                               _weighted(("", 1), *((m, 1) for m in view.members(group))), st.sampled_from(INSTANCES)))


def _assignments(view: View, group: str) -> st.SearchStrategy:
    members = view.members(group)
    if not members:
        return st.just({})
    return st.dictionaries(st.sampled_from(members), st.lists(st.sampled_from(PARTITIONS), max_size=2, unique=True),
                           max_size=len(members))


def draw_request(trigger: Trigger, view: View, cfg: dict, data) -> dict:
    api = API_OF[trigger.name]
    fields = fields_of(trigger)
    req: dict[str, Any] = {}
    group = "g0"
    if "group" in fields:
        group = req["group"] = data.draw(_group(view), label="group")
    for f in fields:
        if f == "group":
            continue
        if trigger.name == "LeaveGroup" and f == "members":
            continue                                   # the v0-2 form: one `member`
        value = data.draw(FIELDS[f](view, cfg, api, group, req), label=f)
        if value is not OMIT:
            req[f] = value
    if trigger.name == "LeaveGroup":
        req["version"] = 2
    return req


# -- the machine --------------------------------------------------------------------------------------

CONFIGS = st.fixed_dictionaries({
    "group.min.session.timeout.ms": st.just(10),
    "group.max.session.timeout.ms": st.sampled_from((100, 1000)),
    "group.max.size": st.sampled_from((3, 2, 100)),
    "group.initial.rebalance.delay.ms": st.sampled_from((0, 30)),
    "group.new.member.join.timeout.ms": st.sampled_from((300, 50)),
    "offsets.retention.minutes": st.just(RETENTION_MINUTES),
    # both of Kafka's coordinators (an implementation of one of them fixes it: `fixed_config`)
    "group.coordinator.new.enable": st.booleans(),
})

# which adapter methods each rule needs (an adapter's `unsupported` turns the rule off)
NEEDS = {"StoreGroupDone": "storage_complete", "StoreOffsetsDone": "storage_complete", "Hold": "storage_hold",
         "FailNext": "storage_fail_next", "Unload": "unload", "Load": "load", "BeginLoad": "begin_load",
         "MarkDead": "mark_dead",
         "ExpireOffsets": "expire_offsets"}


# A rule whose effect lasts until another rule undoes it keeps that rule on in the swarm (an example
# that unloads the coordinator and can never load it again answers NOT_COORDINATOR from then on).
UNDONE_BY = {"Unload": ("Load",), "BeginLoad": ("Load",), "Hold": ("StoreGroupDone", "StoreOffsetsDone"),
             "MarkDead": ("DeleteGroup",)}


class ConformMachine(RuleBasedStateMachine):
    """Base of the generated machine (`machine_for`): the implementation against the spec."""

    factory: Factory = None          # set by machine_for
    overrides: dict = {}
    stats: dict = {}                 # examples, steps, last (the Lockstep of the latest example)
    on_step: Callable | None = None

    def __init__(self):
        super().__init__()
        self.lock: Lockstep | None = None
        self.impl = None
        self.off: frozenset = frozenset()

    @initialize(data=st.data())
    def start(self, data):
        # what the implementation has no config key for is fixed at its value (Kafka's constants)
        fixed = getattr(type(self).factory, "fixed_config", None) or {}
        cfg = {**CONFIG_DEFAULTS, **data.draw(CONFIGS, label="config"), **fixed, **self.overrides}
        swarm = [r for r in RULES if r not in WEIGHTS]
        off = set(data.draw(st.sets(st.sampled_from(swarm)), label="swarm: rules off"))
        for rule_, undo in UNDONE_BY.items():     # what a rule leaves behind must stay undoable
            if rule_ not in off:
                off -= set(undo)
        self.off = frozenset(off)
        self.impl = _made(type(self).factory, cfg, type(self).stats)
        self.off |= {r for r, m in NEEDS.items() if m in set(getattr(self.impl, "unsupported", ()) or ())}
        self.lock = Lockstep(self.impl, cfg)
        st_ = type(self).stats
        st_["examples"] = st_.get("examples", 0) + 1
        st_["last"] = self.lock
        st_.setdefault("unsupported", {})

    def on(self, name: str) -> bool:
        return self.lock is not None and name not in self.off

    def _counted(self) -> None:
        st_ = type(self).stats
        st_["steps"] = st_.get("steps", 0) + 1
        if type(self).on_step:
            type(self).on_step(st_)

    def _found(self) -> None:
        """A failure: the first one's example and step counts are what it took to find it (the rest of the
        run is shrinking)."""
        st_ = type(self).stats
        if "found_after" not in st_:
            st_["found_after"] = {"examples": st_.get("examples", 0), "steps": st_.get("steps", 0) + 1,
                                  "seconds": round(time.perf_counter() - st_.get("started", time.perf_counter()), 2)}

    @invariant()
    def catalog(self):
        """Every coordinator invariant on every settled group of every behaviour of the spec."""
        if self.lock is None:
            return
        for w in self.lock.ref.worlds:
            for gid, g in w.coord.groups.items():
                check_state(g.state, where=f"in group {gid!r} between steps", settled=True,
                            java=bool(self.lock.config.get(NEW_COORDINATOR)))

    def _covered(self) -> None:
        """The spec's rows this example fired, and pairs of rows fired one after the other, into the run's
        coverage; Hypothesis's `target` steers towards examples that fire rows and pairs the run had not."""
        st_ = type(self).stats
        rows, pairs = st_.setdefault("rows", set()), st_.setdefault("pairs", set())
        fired = list(self.lock.ref.coord.fired)
        new_rows = set(fired) - rows
        new_pairs = set(zip(fired, fired[1:])) - pairs
        rows |= new_rows
        pairs |= new_pairs
        try:
            target(float(3 * len(new_rows) + len(new_pairs)), label="rows and pairs of rows not fired before")
        except Exception:      # noqa: BLE001 - outside a Hypothesis test (a replay): nothing to steer
            pass

    def teardown(self):
        failing = sys.exc_info()[1]        # a step's divergence, or a signal, on its way out
        if self.lock is not None:
            self._covered()
        if self.lock is not None:      # the steps the implementation could not be asked, by reason
            into = type(self).stats.setdefault("unsupported", {})
            for why, n in self.lock.unsupported.items():
                into[why] = into.get(why, 0) + n
        close = getattr(self.impl, "close", None)
        if not callable(close):
            return
        if self.lock is None:              # made, but the example ended before its first step
            with calling():
                close()
        elif failing is None:
            try:
                self.lock.ask("close", close, "closed")
            except Divergence:
                self._found()
                raise
        else:
            # what the example ended with is the finding (or the stop); a close that fails after it adds
            # nothing to it and must not take its place
            try:
                self.lock.ask("close", close, "closed")
            except Divergence:
                pass


# How often a rule is picked, relative to the others: Hypothesis picks among the enabled rules alike, so a
# rule is registered this many times, each copy under a name of its own (Hypothesis's own swarm testing
# turns rules off by name: a copy keeps the rule on).  These are the steps a group needs to get anywhere
# (join, the join completing, sync, appends completing, a coordinator loading): the swarm of `start`
# leaves them on.
WEIGHTS = {"JoinGroup": 10, "SyncGroup": 10, "Heartbeat": 4, "OffsetCommit": 3, "JoinTimer": 3,
           "StoreGroupDone": 3, "StoreOffsetsDone": 3, "Load": 4,
           # appends held across other requests (a leader's SyncGroup meeting a held write) in every example
           "Hold": 2, "HeartbeatExpiry": 2}


def _made(factory: Factory, cfg: dict, stats: dict):
    """The implementation for one example.  A config it cannot take (Unsupported) is not an example: Hypothesis
    draws another (the reason is kept for when it can take none).  Any other failure of the factory on a valid
    config is no divergence (there is nothing to compare yet): the adapter cannot be used (AdapterBroken)."""
    try:
        with calling():
            return factory(cfg)
    except Unsupported as e:
        stats["refused_config"] = why = f"config: {e}"
        refused = stats.setdefault("unsupported", {})
        refused[why] = refused.get(why, 0) + 1
        reject()
    except Exception as e:      # noqa: BLE001 - the user's factory: whatever it raises is said in one line
        raise AdapterBroken(f"the factory raised {type(e).__name__}: {brief(str(e), 150)} when called with the "
                            f"config {brief(cfg, 300)}; it must return an adapter for every valid config, or raise "
                            f"Unsupported for one its implementation cannot take") from e


def _watched(fire, copy: int = 1):
    """A rule's body, noting the first failure (`_found`) and counting the step.  Named so that Hypothesis,
    which sorts rules by their functions' names and whose simplest examples (and shrinking) take the first,
    prefers the steps a group needs (a run of JoinGroups, not of clock moves); each copy of a weighted rule
    has a name of its own, so that Hypothesis's own swarm testing (feature flags by name) rarely turns all
    of them off."""
    @functools.wraps(fire)
    def run(self, data):
        checkpoint()
        try:
            fire(self, data)
        except (Divergence, SpecFailure):
            self._found()
            raise
        self._counted()
    name = fire.__name__
    order = [*WEIGHTS, *(t.name for t in TRIGGERS if t.name not in WEIGHTS), "Hold", "FailNext", "Advance",
             "BeginLoad"]
    rank = order.index(name)
    run.__name__ = f"r{rank:02d}_{name}" + (f"_{copy}" if copy > 1 else "")
    return run


def _request_rule(trigger: Trigger, copy: int = 1):
    api = API_OF[trigger.name]

    def fire(self, data):
        req = draw_request(trigger, View(self.lock), self.lock.config, data)
        self.lock.send(api, req)
    fire.__name__ = trigger.name
    fire.__doc__ = f"{trigger.meaning}: {api}"
    return precondition(lambda self, n=trigger.name: self.on(n))(rule(data=st.data())(_watched(fire, copy)))


def _armed(lock: Lockstep, trigger: str) -> list:
    timers = lock.ref.coord.timers
    return sorted((timers.deadline(k), k) for k in timers.keys() if TIMER_TRIGGERS.get(k[1]) == trigger)


def _timer_rule(trigger: Trigger, copy: int = 1):
    def fire(self, data):
        armed = _armed(self.lock, trigger.name)
        deadline, _ = data.draw(st.sampled_from(armed), label="timer")
        offset = data.draw(st.sampled_from((0, 0, -1, 1)), label="ms from its deadline")
        now = self.lock.ref.coord.clock.now()
        self.lock.act({"advance_ms": max(0, deadline - now + offset)})
    fire.__name__ = trigger.name
    fire.__doc__ = f"{trigger.meaning}: the clock moves to an armed timer's deadline, or 1 ms either side"
    return precondition(lambda self, n=trigger.name: self.on(n) and bool(_armed(self.lock, n)))(
        rule(data=st.data())(_watched(fire, copy)))


def _storage_rule(trigger: Trigger, copy: int = 1):
    offsets = trigger.name == "StoreOffsetsDone"

    def enabled(self) -> bool:
        appends = self.lock.ref.coord.appends if self.lock else ()
        return self.on(trigger.name) and bool(appends) and (appends[0].kind == "offsets") == offsets

    def fire(self, data):
        # the Java coordinator's writes, once made, do not fail (its held writes fail as the partition moves)
        java = bool(self.lock.config.get(NEW_COORDINATOR)) and not JAVA_WRITES.held_can_fail
        results = ("NONE",) if java else APPEND_RESULTS
        self.lock.act({"storage": {"complete": data.draw(st.sampled_from(results), label="append result")}})
    fire.__name__ = trigger.name
    fire.__doc__ = f"{trigger.meaning}: the oldest held append completes"
    return precondition(enabled)(rule(data=st.data())(_watched(fire, copy)))


_EVENTS = {"Unload": lambda d, c: "unload",
           "Load": lambda d, c: "load",
           "MarkDead": lambda d, c: {"mark_dead": d.draw(st.sampled_from(GROUPS), label="group")},
           "ExpireOffsets": lambda d, c: "expire_offsets"}


def _coordinator_rule(trigger: Trigger, copy: int = 1):
    # loading completes where a load is under way or the partition was unloaded (`BeginLoad` starts one)
    when = (lambda self: self.lock.ref.coord.coord != "active") if trigger.name == "Load" else (lambda self: True)

    def fire(self, data):
        self.lock.act({"coordinator": _EVENTS[trigger.name](data, self.lock.ref.coord.coord)})
    fire.__name__ = trigger.name
    fire.__doc__ = trigger.meaning
    return precondition(lambda self, n=trigger.name: self.on(n) and when(self))(rule(data=st.data())(_watched(fire, copy)))


def _extra_rules(copy: int = 1) -> dict:
    def hold(self, data):
        self.lock.act({"storage": {"hold": data.draw(_weighted((False, 2), (True, 1)), label="hold")}})

    def fail_next(self, data):
        self.lock.act({"storage": {"fail_next_append": data.draw(st.sampled_from(APPEND_FAILURES), label="error")}})

    def advance(self, data):
        ms = data.draw(_weighted((0, 3), (1, 2), (5, 1), (10, 1), (30, 1), (100, 1), (RETENTION_MINUTES * 60_000, 1)),
                       label="ms")
        self.lock.act({"advance_ms": ms})
    def begin_load(self, data):
        self.lock.act({"coordinator": "begin_load"})

    out = {}
    for name, fn in (("Hold", hold), ("FailNext", fail_next), ("Advance", advance), ("BeginLoad", begin_load)):
        fn.__name__ = name
        out[name] = precondition(lambda self, n=name: self.on(n))(rule(data=st.data())(_watched(fn, copy)))
    return out


def _rules(copy: int = 1) -> dict:
    out = {}
    for t in TRIGGERS:
        if t.kind == "internal":
            continue          # CompleteJoin: the eager re-check fires it within the step that makes it due
        make = {"request": _request_rule, "timer": _timer_rule, "storage": _storage_rule,
                "coordinator": _coordinator_rule}[t.kind]
        out[t.name] = make(t, copy)
    out.update(_extra_rules(copy))
    return out


_RULES = _rules()
RULES: tuple[str, ...] = tuple(_RULES)
def _copies() -> dict:
    out = {}
    for k in range(2, max(WEIGHTS.values()) + 1):
        fresh = _rules(k)                 # new functions, each copy named apart
        for name, n in WEIGHTS.items():
            if k <= n:
                out[f"{name}_{k}"] = fresh[name]
    return out


_COPIES = _copies()





def machine_for(factory: Factory, overrides: dict | None = None, on_step: Callable | None = None) -> type:
    """A state machine class running `factory`'s implementation against the spec."""
    return type("ConformMachine", (ConformMachine,),
                {**_RULES, **_COPIES, "factory": staticmethod(factory), "overrides": dict(overrides or {}), "stats": {},
                 "on_step": staticmethod(on_step) if on_step else None})
