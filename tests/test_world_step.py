"""One description of a world step (spec/handling.py, spec/world.py), read by every host.

The closed world's actions and their fairness are declared; liveness reads the declaration,
never a step's name.  The group record the log holds is RECORD's, in the runtime as in the
closed world.
"""
from __future__ import annotations

import dataclasses

import pytest

from groupspec.checkers.search.explicit import check
from groupspec.checkers.tla.tlc import run_tlc
from groupspec.checkers.world.bmc import reachable
from groupspec.checkers.world.state_space import WorldModel
from groupspec.checkers.world.presets import PRESETS, WorldConfig
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.spec import table as T
from groupspec.spec.lang import FALSE
from groupspec.spec.world import ACTION_BY_NAME, ACTIONS, CLIENT_ROWS, CLIENT_TRIGGERS, ROUTE_EFFECTS, switched_on

from test_tla_export import _write, needs_tlc

TINY = PRESETS["tiny"]


def _renamed(rows):
    return [dataclasses.replace(r, name="renamed " + r.name[::-1]) for r in rows]


def _never_completing_join():
    rows = []
    for r in T.ROWS:
        if r.name.startswith("CompleteJoin:"):
            r = dataclasses.replace(r, own=FALSE())
        elif r.name == "JoinTimer: join completes, next generation":
            r = dataclasses.replace(r, steps=[], target=None)
        rows.append(r)
    return rows


def test_renaming_every_row_changes_no_liveness_verdict():
    # the verdicts of a fair world and of one with a join that never completes (a lasso), with the
    # clients' rows and the coordinator's renamed: fairness is declared per action, not per name
    for cfg, rows in ((PRESETS["settle"], None), (TINY, _never_completing_join())):
        plain = check(WorldModel(cfg, rows), liveness=True)
        renamed_rows = None if rows is None else _renamed(rows)
        renamed = check(WorldModel(cfg, rows=renamed_rows, client_rows=_renamed(CLIENT_ROWS)), liveness=True)
        assert (renamed.result, renamed.distinct_states, len(renamed.path)) == \
            (plain.result, plain.distinct_states, len(plain.path))
    assert plain.result == "lasso"


def test_every_step_of_a_world_with_every_switch_is_a_declared_action():
    cfg = WorldConfig(clients=2, topics=1, partitions=1, max_generation=1, member_ids=3, loss=True,
                      duplication=True, reordering=True, restart=True, hung_poll=True,
                      leaves_rebalancing=True)
    model = WorldModel(cfg)
    seen, frontier, acts = {model.init_states()[0]}, [model.init_states()[0]], set()
    while frontier and len(seen) < 20_000:
        nxt = []
        for s in frontier:
            for step, t in model.successors(s)[0]:
                acts.add(step.act)
                cls, fairness = model.action_class(step)
                assert fairness in ("weak", "strong", "none") and cls[0]
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    assert acts <= set(ACTION_BY_NAME)
    # every declared action the world switches on is taken somewhere in it (none is declared for nothing);
    # EVERY_SWITCH below takes the rest
    on = {a.name for a in ACTIONS if switched_on(a, cfg)}
    assert acts >= on - {"ClientLeave"}, on - acts


# every switch of the world on, one client: every action of Next is taken, in a world TLC finishes in seconds
EVERY_SWITCH = WorldConfig(clients=1, topics=1, partitions=1, max_generation=1, member_ids=2,
                           **{f: True for f in WorldConfig.FAULTS}, commits=True, leaves=True, leaves_rebalancing=True)


def test_the_explicit_search_and_bmc_agree_on_a_world_with_every_switch():
    """The world's step is spec/world_step.py's, run by several hosts: the explicit search and BMC find the
    same states depth by depth, on a world where every action of Next is taken (TLC's agreement on it is
    the slow test below)."""
    explicit = check(WorldModel(EVERY_SWITCH), symmetry=False)
    assert explicit.result == "ok"
    assert {a.name for a in ACTIONS if switched_on(a, EVERY_SWITCH)} == {a.name for a in ACTIONS}
    k = 3
    first = []
    seen: set = set()
    for states in reachable(EVERY_SWITCH, k):
        first.append(len(states - seen))
        seen |= states
    assert first == explicit.levels[:k + 1]


@pytest.mark.slow        # TLC takes 1.5-3 minutes on this world's module (23,154 states), one core
@needs_tlc
def test_tlc_finds_the_explicit_search_s_states_on_a_world_with_every_switch(tmp_path):
    explicit = check(WorldModel(EVERY_SWITCH), symmetry=False)
    e = _write(tmp_path, EVERY_SWITCH, symmetry=False)
    t = run_tlc(tmp_path, e.name, workers=1)
    assert (t.result, t.distinct_states) == ("ok", explicit.distinct_states), t.output[-2000:]


def test_members_that_leave_during_a_rebalance_break_nothing():
    """The simulator's consumers close during rebalances (checkers/traces/simulate.py): the closed world
    has the row for it, behind a switch the presets leave off, and with it on every invariant holds."""
    off = check(WorldModel(PRESETS["small"]))
    on = check(WorldModel(dataclasses.replace(PRESETS["small"], leaves_rebalancing=True)))
    assert (off.result, on.result) == ("ok", "ok")
    assert on.distinct_states > off.distinct_states


def test_the_client_triggers_are_the_declared_client_actions():
    assert set(CLIENT_TRIGGERS) == {r.trigger for r in CLIENT_ROWS}


def test_a_timely_heartbeat_is_strongly_fair_and_otherwise_the_environments_choice():
    from groupspec.spec.world import fairness
    hb = ACTION_BY_NAME["ClientHeartbeat"]
    assert (fairness(hb, timely=True), fairness(hb, timely=False)) == ("strong", "none")


def test_every_route_a_row_can_take_in_the_world_has_an_effect():
    # a row's reply, park or answer for an API the clients send, and every append kind
    apis = {"JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "LeaveGroup", "LeaveMember"}
    needed = set()
    for r in T.ROWS:
        if r.trigger in ("OffsetFetch", "DescribeGroup", "ListGroups", "ListGroupsEntry", "DeleteGroup"):
            continue
        for st in r.steps:
            kind = getattr(st, "kind", None)
            if kind in ("reply", "park", "answer") and st.api in apis:
                needed.add((kind, st.api))
            elif kind == "append":
                needed.add((kind, st.api))
    assert needed <= set(ROUTE_EFFECTS), needed - set(ROUTE_EFFECTS)


def _join(c: GroupCoordinator, member: str, protocols: list) -> dict:
    return c.send("JoinGroup", {"group": "g", "member": member, "client": "c", "session_timeout_ms": 10_000,
                                "rebalance_timeout_ms": 10_000, "protocol_type": "consumer",
                                "protocols": protocols})


def test_the_log_keeps_each_members_selected_protocol_only():
    # GMM.groupMetadataValue writes a member's subscription for the selected protocol only; a load
    # restores the member with that one
    c = GroupCoordinator({"group.initial.rebalance.delay.ms": 0})
    protocols = [{"name": "range", "metadata": "r"}, {"name": "roundrobin", "metadata": "rr"}]
    mid = _join(c, "", protocols)["member"]
    got = []
    _join(c, mid, protocols)
    c.advance(1)
    c.send("SyncGroup", {"group": "g", "member": mid, "generation": 1, "assignments": {mid: ["t-0"]}},
           on_response=got.append)
    assert got and got[0]["error"] == "NONE"
    record = [r for r in c.log.records() if r["type"] == "group"][-1]
    assert record["protocol"] == "range"
    assert [m["protocols"] for m in record["members"]] == [[["range", "r"]]]
    c.unload()
    c.begin_load()
    c.load()
    # the reloaded member supports range only: a rejoin offering roundrobin alone is inconsistent
    assert _join(c, mid, [{"name": "roundrobin", "metadata": "rr"}])["error"] == "INCONSISTENT_GROUP_PROTOCOL"
