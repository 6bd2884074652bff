"""The runtime coordinator: durable log and restart, the lifecycle guard, timers, and
arbitrary requests answered with Kafka's error codes (never an exception)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from groupspec.impl.clock import SAME_INSTANT_LIMIT, ManualClock, TimerLivelock, Timers
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.lifecycle import GroupLifecycle, IllegalMove, move
from groupspec.impl.storage import FileLog
from groupspec.spec.kafka import ERRORS, check_config

CFG = {"group.min.session.timeout.ms": 10, "group.initial.rebalance.delay.ms": 0}


def join(c, member="", client="c", **kw):
    got = {}
    r = c.send("JoinGroup", dict(group="g", member=member, client=client, session_timeout_ms=1000,
                                 rebalance_timeout_ms=1000, protocol_type="consumer",
                                 protocols=[{"name": "range", "metadata": "m1"}], **kw),
               on_response=lambda resp: got.update(resp))
    return r, got


def stable_group(c):
    r, _ = join(c)
    mid = r["member"]
    _, got = join(c, mid)
    c.advance(0)
    assert got["error"] == "NONE"
    c.send("SyncGroup", dict(group="g", member=mid, generation=1, assignments={mid: ["t-0", "t-1"]}))
    return mid


def test_a_restarted_coordinator_loads_the_group_from_its_file(tmp_path):
    log = tmp_path / "log.jsonl"
    a = GroupCoordinator(CFG, log=FileLog(log), debug=True)
    mid = stable_group(a)
    assert a.send("OffsetCommit", dict(group="g", member=mid, generation=1, offsets={"t-0": 42}))["errors"] == \
        {"t-0": "NONE"}
    a.log.close()                                               # the first coordinator goes away
    b = GroupCoordinator(CFG, log=FileLog(log), debug=True)   # a new process, the same file
    b.begin_load()
    assert b.send("Heartbeat", dict(group="g", member=mid, generation=1))["error"] == "NONE"  # loading: blind NONE
    b.load()
    snap = b.snapshot("g")
    assert snap["state"] == "Stable" and snap["generation"] == 1 and snap["members"] == [mid]
    assert snap["assignment"] == {mid: ["t-0", "t-1"]} and snap["offsets"] == {"t-0": 42}
    # its session runs again on the new coordinator
    b.advance(1000)
    assert b.snapshot("g")["state"] == "Empty"


def test_the_lifecycle_refuses_a_move_kafka_does_not_allow():
    m = GroupLifecycle()
    move(m, ["Empty", "PreparingRebalance"])
    with pytest.raises(IllegalMove):
        move(m, ["Stable"])          # PreparingRebalance -> Stable skips CompletingRebalance


def test_timers_fire_in_deadline_then_arming_order():
    clock = ManualClock()
    t = Timers(clock)
    fired = []
    t.arm("b", 10)
    t.arm("a", 10)
    t.arm("c", 5)
    t.arm("now", 0)
    t.advance(10, lambda k: fired.append((k, clock.now())))
    assert fired == [("now", 0), ("c", 5), ("b", 10), ("a", 10)]
    t.arm("zero", 0)
    t.advance(0, lambda k: fired.append((k, clock.now())))
    assert fired[-1] == ("zero", 10)


def test_a_timer_that_re_arms_itself_to_fire_at_once_is_a_livelock_raised_not_a_hang():
    clock = ManualClock()
    t = Timers(clock)
    fired = []

    def fire(k):                  # a broken coordinator: the timer re-arms itself with no delay
        fired.append(k)
        t.arm(k, 0)
    t.arm("loop", 5)
    with pytest.raises(TimerLivelock, match="at 5 ms"):
        t.advance(10, fire)
    assert len(fired) == SAME_INSTANT_LIMIT
    # many timers due at one instant are not a livelock
    t2 = Timers(ManualClock())
    for i in range(100):
        t2.arm(i, 1)
    t2.advance(1, lambda k: None)


ids = st.sampled_from(["", "x", "c-1", None])
ints = st.one_of(st.integers(-5, 5), st.integers(-2**31, 2**31 - 1))
requests = st.one_of(
    st.fixed_dictionaries({"api": st.just("JoinGroup"), "group": st.sampled_from(["g", "", None]),
                           "member": ids, "instance": st.sampled_from([None, "i1"]),
                           "session_timeout_ms": ints, "rebalance_timeout_ms": ints,
                           "protocol_type": st.sampled_from(["consumer", "", None]),
                           "protocols": st.lists(st.sampled_from(["range", "roundrobin"]), max_size=2),
                           "version": st.integers(0, 9)}),
    st.fixed_dictionaries({"api": st.just("SyncGroup"), "group": st.just("g"), "member": ids, "generation": ints,
                           "assignments": st.dictionaries(st.sampled_from(["x", "c-1"]),
                                                          st.lists(st.sampled_from(["t-0", "t-1"])))}),
    st.fixed_dictionaries({"api": st.just("Heartbeat"), "group": st.just("g"), "member": ids, "generation": ints}),
    st.fixed_dictionaries({"api": st.just("LeaveGroup"), "group": st.just("g"),
                           "members": st.lists(st.fixed_dictionaries({"member": ids}), max_size=3)}),
    st.fixed_dictionaries({"api": st.just("OffsetCommit"), "group": st.sampled_from(["g", ""]), "member": ids,
                           "generation": ints, "offsets": st.dictionaries(st.sampled_from(["t-0", "t-1"]), ints)}),
    st.fixed_dictionaries({"api": st.just("DeleteGroups"), "groups": st.just(["g"])}),
    st.fixed_dictionaries({"api": st.just("advance"), "ms": st.integers(0, 400_000)}),
)


@settings(max_examples=60)
@given(st.lists(requests, max_size=25))
def test_any_request_sequence_gets_kafka_errors_and_keeps_the_invariants(seq):
    c = GroupCoordinator(CFG, debug=True)    # debug: every coordinator invariant after every step
    members = []
    for req in seq:
        req = dict(req)
        api = req.pop("api")
        if api == "advance":
            c.advance(req["ms"])
            continue
        if req.get("member") == "x" and members:
            req["member"] = members[-1]
        resp = c.send(api, req)
        if resp is not None:
            errs = [resp.get("error")] + list((resp.get("errors") or {}).values() if isinstance(
                resp.get("errors"), dict) else resp.get("errors") or [])
            assert all(e in ERRORS for e in errs if e is not None)
            if resp.get("member"):
                members.append(resp["member"])


def test_member_details_give_each_members_metadata_for_the_selected_protocol():
    """What Kafka's JoinGroup answer gives the leader besides the member ids (a real consumer's leader assigns
    from its members' subscriptions): each member's metadata for the protocol the group selected, as the
    member last sent it; nothing while none is selected.  And its client id and host, as it joined."""
    c = GroupCoordinator(check_config({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10}))
    got: dict = {}

    def join(member: str, meta: str, rid: str) -> None:
        c.send("JoinGroup", {"group": "g", "member": member, "client": "c", "session_timeout_ms": 500,
                             "protocol_type": "consumer", "require_known_member_id": False,
                             "protocols": [{"name": "roundrobin", "metadata": "rr-" + meta},
                                           {"name": "range", "metadata": meta}]},
               on_response=lambda r: got.__setitem__(rid, r), request_id=rid)
    join("", "a", "1")
    join("", "b", "2")
    before = c.member_details("g")
    assert len(before) == 2 and all(d["metadata"] == "" for d in before.values())     # no protocol selected yet
    assert c.member_details("nobody") == {}
    c.advance(1)
    assert {r["protocol"] for r in got.values()} == {"roundrobin"}
    assert c.member_details("g") == {
        got["1"]["member"]: {"metadata": "rr-a", "instance": None, "client": "c", "host": ""},
        got["2"]["member"]: {"metadata": "rr-b", "instance": None, "client": "c", "host": ""}}


def test_the_java_coordinators_record_of_a_new_group_keeps_nothing_of_the_member_that_created_it():
    """Kafka 4.0 writes a group a JoinGroup creates as an empty group (newEmptyGroupMetadataRecord: no
    members, so no member's metadata).  The spec's record (handling.record_of, what the proofs read back
    at a Load) says so too, as the runtime's log does: it held the creating member's protocols and
    group.instance.id, metadata of no member (found by `groupspec prove`: metadata-of-members-only)."""
    from groupspec.spec import engine as E
    from groupspec.spec.handling import record_of
    from groupspec.spec.lang import NONE
    c = GroupCoordinator({**CFG, "group.initial.rebalance.delay.ms": 3000, "group.coordinator.new.enable": True})
    written, store = [], c._group_record
    c._group_record = lambda g, fields: written.append(record_of(fields, c._selected_only)) or store(g, fields)
    join(c, instance="i-1")
    [rec] = written
    assert rec["members"] == 0
    for var in ("instance_of", "protos", "session_ms", "rebalance_ms", "assignment"):
        assert set(rec[var]) <= {NONE, 0}, (var, rec[var])     # each member slot its default
    c.unload()
    c.begin_load()
    c.load()
    assert c.snapshot("g")["state"] == "Empty"
    g = c.groups["g"].state
    for var in ("instance_of", "protos", "session_ms", "rebalance_ms", "assignment"):
        assert set(E.get(g, var)) <= {NONE, 0}, (var, E.get(g, var))
