"""The explicit-state checker: exhaustive, shortest counterexamples, symmetry, and it catches planted bugs."""
from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys
from functools import partial
from itertools import permutations

import pytest

from groupspec.checkers.review.counterexample import mermaid, step_table, to_itf
from groupspec.checkers.search.explicit import check, check_parallel
from groupspec.checkers.search.model import Model, Property
from groupspec.checkers.world.state_space import WorldModel, permute
from groupspec.checkers.world.presets import PRESETS
from groupspec.spec import engine as E
from groupspec.spec import table as T
from groupspec.spec.handling import Eager

TINY = dataclasses.replace(PRESETS["small"], crash=False, expiry=False)


def test_the_protocol_holds_in_a_tiny_world():
    r = check(WorldModel(TINY))
    assert r.result == "ok" and r.complete
    assert r.distinct_states > 300          # a floor: the world is not trivially small
    assert r.coverage["sync: assignment received"] > 0
    assert r.coverage["JoinTimer: join completes, next generation"] > 0


def test_symmetry_reduction_keeps_verdict_and_shrinks_the_space():
    with_sym, without = check(WorldModel(TINY), symmetry=True), check(WorldModel(TINY), symmetry=False)
    assert with_sym.result == without.result == "ok"
    assert with_sym.distinct_states < without.distinct_states <= 2 * with_sym.distinct_states
    # the orbits of the canonical states are exactly the states of the unreduced search
    assert with_sym.unreduced_states == without.distinct_states


def test_canonical_form_is_one_representative_per_orbit():
    """Every renaming of clients of a reachable state has the same canonical form, and the
    orbit size the search adds up is the number of distinct renamings."""
    cfg = dataclasses.replace(PRESETS["small"], clients=3, member_ids=3)
    m = WorldModel(cfg)
    frontier, seen, parked = m.init_states(), set(), 0
    while frontier and len(seen) < 3000:
        s = frontier.pop()
        if s in seen:
            continue
        seen.add(s)
        c = m.representative(s)
        parked += s[0] != c[0]                 # renaming touched the parked-request references
        renamed = {permute(s, order) for order in permutations(range(3))}
        assert {m.representative(t) for t in renamed} == {c}
        # the orbit the search adds up is the number of distinct renamings
        assert m.orbit(c) == len({permute(c, order) for order in permutations(range(3))})
        frontier += [t for _, t in m.successors(s)[0]]
    assert parked > 0


def _mutated(name: str, **changes):
    """Run the checker with one row of the table changed (a planted bug)."""
    return check(WorldModel(TINY, _with(name, **changes)))


def test_a_dropped_generation_bump_is_caught_with_a_shortest_path():
    row = T.ROW_BY_NAME["JoinTimer: join completes, next generation"]
    steps = []
    for st in row.steps:
        if hasattr(st, "updates") and "generation" in st.updates:
            st = dataclasses.replace(st, updates={k: v for k, v in st.updates.items() if k != "generation"})
        steps.append(st)
    r = _mutated(row.name, steps=steps)
    assert r.result == "violation"
    assert r.violation in ("no-shared-partition", "one-leader-per-generation")
    # breadth-first: no shorter path to a violation exists in the search (depth of the last state)
    assert len(r.path) - 1 == r.depth


def test_an_assignment_handed_out_outside_stable_is_caught():
    r = _mutated("StoreGroupDone: assignment stored", target=None)
    assert r.result == "violation" and r.violation == "assignment-only-when-stable"


def test_counterexamples_render_as_itf_table_and_mermaid():
    r = _mutated("StoreGroupDone: assignment stored", target=None)
    model = WorldModel(TINY)
    itf = to_itf(r.path, model, r.violation)
    assert itf["vars"] and len(itf["states"]) == len(r.path)
    assert itf["states"][0]["#meta"]["action"] == "init"
    json.dumps(itf)
    table = step_table(r.path, model)
    assert len(table) == len(r.path) and table[0]["action"] == "initial state"
    assert table[-1]["rows"] and any("state" in t["changes"] for t in table)
    diagram = mermaid(r.path, model, r.violation)
    assert diagram.startswith("sequenceDiagram") and "coordinator" in diagram


def test_check_cli_json_and_bad_input():
    cli = [sys.executable, "-m", "groupspec.checkers.cli", "check"]
    ok = subprocess.run(cli + ["--preset", "small", "--no-crash", "--no-expiry", "--json"], capture_output=True,
                        text=True)
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    for key in ("result", "distinct_states", "states_per_second", "depth", "invariants", "coverage"):
        assert key in doc
    assert doc["result"] == "ok"
    bad = subprocess.run(cli + ["--preset", "huge"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown preset" in bad.stderr and "Traceback" not in bad.stderr


def test_bounded_liveness_holds_in_a_tiny_world():
    assert check(WorldModel(TINY), liveness=True).result == "ok"


def test_a_join_that_never_completes_is_reported_as_a_lasso():
    from groupspec.spec.lang import FALSE
    rows = []
    for r in T.ROWS:
        if r.name.startswith("CompleteJoin:"):
            r = dataclasses.replace(r, own=FALSE())                    # completion never re-checked
        elif r.name == "JoinTimer: join completes, next generation":
            r = dataclasses.replace(r, steps=[], target=None)          # and the timeout does nothing
        rows.append(r)
    r = check(WorldModel(TINY, rows), liveness=True)
    assert r.result == "lasso"
    assert 0 <= r.loop_start < len(r.path) - 1
    assert r.depth == len(r.path) - 1          # the lasso's length (stem and one lap), not the search's depth
    stuck = {E.get(s, "state") for _, s in r.path[r.loop_start:]}
    assert stuck == {E.STATES.index("PreparingRebalance")}


def test_the_parallel_search_agrees_with_the_sequential_one():
    seq, par = check(WorldModel(TINY)), check_parallel(WorldModel(TINY), workers=2)
    assert (par.result, par.distinct_states, par.generated, par.depth) == \
        (seq.result, seq.distinct_states, seq.generated, seq.depth)
    assert set(par.coverage) == set(seq.coverage)


def test_the_parallel_search_honours_every_option_of_the_sequential_one():
    """A rebalance started without arming its DelayedJoin: the clients wait for JoinGroup answers
    that no timer will ever give, a deadlock.  Both searches find it with a shortest path, and
    both pass it by when deadlocks are not looked for."""
    name = "JoinGroup: pending member rejoins and starts a rebalance (Stable)"
    steps = [dataclasses.replace(st, updates={k: v for k, v in st.updates.items() if k != "join_timer"})
             if hasattr(st, "updates") else st for st in T.ROW_BY_NAME[name].steps]
    model = WorldModel(TINY, _with(name, steps=steps))
    seq, par = check(model), check_parallel(model, workers=2)
    assert seq.result == par.result == "deadlock"
    assert len(seq.path) - 1 == seq.depth == par.depth == len(par.path) - 1
    seq, par = check(model, deadlock=False), check_parallel(model, workers=2, deadlock=False)
    assert seq.result == par.result == "ok"
    assert (par.distinct_states, par.generated, par.depth) == (seq.distinct_states, seq.generated, seq.depth)


def test_parallel_workers_search_the_model_they_were_given():
    """The workers build their model from the given one's recipe: what was planted in it (here
    Kafka's eager re-check left out after a leave, KoP's bug) reaches them, not the spec's."""
    leave = "LeaveMember: member leaves during PreparingRebalance"
    model = WorldModel(TINY, eager=Eager(skip_after=frozenset({leave})))
    seq, par = check(model), check_parallel(model, workers=2)
    assert seq.result == par.result == "violation"
    assert (par.violation, par.depth) == (seq.violation, seq.depth) == ("join-completes-once-all-rejoined", 14)
    rebuilt = pickle.loads(pickle.dumps(model.recipe()))()    # what a worker in another process would get
    assert check(rebuilt).depth == seq.depth


@dataclasses.dataclass(frozen=True)
class _Tick:
    action: str


class _Counters(Model):
    """A model that is not the closed world, for the engines: `n` interchangeable counters, each
    stepped up to `top`, from two initial states; a counter at `stuck` cannot step (a planted
    deadlock).  Its reachable states are known: every (top + 1)^n tuple, C(top + n, n) up to
    renaming.  It writes the three required methods, and what it has beyond the interface's
    defaults: ends, progress, fairness, symmetry and a recipe."""

    def __init__(self, n: int = 3, top: int = 3, stuck: int | None = None):
        self.n, self.top, self.stuck = n, top, stuck

    def init_states(self):
        return [(0,) * self.n, (1,) * self.n]

    def successors(self, s):
        return [(_Tick(f"counter {i} steps"), s[:i] + (v + 1,) + s[i + 1:]) for i, v in enumerate(s)
                if v < self.top and v != self.stuck], 0

    def properties(self):
        return []

    def is_end(self, s):
        return all(v == self.top for v in s)

    progress = is_end

    def action_class(self, step):
        return step.action, "weak"

    def representative(self, s):
        return tuple(sorted(s))

    def orbit(self, s):
        return len(set(permutations(s)))

    def recipe(self):
        return partial(_Counters, self.n, self.top, self.stuck)


def test_the_engines_search_any_model():
    from math import comb
    everything, renamed = 4 ** 3, comb(3 + 3, 3)
    for search in (check, partial(check_parallel, workers=2)):
        r = search(_Counters())
        assert (r.result, r.distinct_states, r.unreduced_states) == ("ok", renamed, everything)
        assert search(_Counters(), symmetry=False).distinct_states == everything
        # every counter stuck at 2: three steps from the second initial state, six from the first
        r = search(_Counters(stuck=2))
        assert r.result == "deadlock" and len(r.path) - 1 == r.depth == 3
        assert (r.path[0][1], r.path[-1][1]) == ((1, 1, 1), (2, 2, 2))
    assert check(_Counters(stuck=2), liveness=True, deadlock=False).result == "no-progress"


def test_the_static_zombie_window_is_found_without_the_waiver():
    cfg = dataclasses.replace(PRESETS["static"], waive=())
    r = check(WorldModel(cfg))
    assert r.result == "violation" and r.violation == "no-shared-partition"
    assert len(r.path) - 1 == r.depth <= 12
    actions = [st.action for st, _ in r.path[1:]]
    assert sum("deliver" in a and "join" in a for a in actions) >= 2   # two processes join, one instance id


def test_a_group_that_can_never_form_is_reported():
    # every JoinGroup is refused: clients retry forever and never get an assignment
    r = _mutated_live("JoinGroup: invalid group id", own=T.ROW_BY_NAME["JoinGroup: invalid group id"].own.args[0])
    assert r.result == "no-progress", r.result
    assert len(r.path) >= 1
    assert r.depth == len(r.path) - 1 == 0     # the initial state is already stuck; the search went deeper


def test_a_hung_client_is_not_a_group_that_cannot_progress():
    """A consumer whose poll loop hangs gets no assignment whatever the coordinator does: like a
    crashed one it has stopped, so a group whose other consumers have stopped too is at an end,
    not stuck (here one process crashes and the other, with the same group.instance.id, hangs)."""
    cfg = dataclasses.replace(PRESETS["tiny"], instances=(0, 0), waive=PRESETS["static"].waive, crash=True,
                              hung_poll=True)
    r = check(WorldModel(cfg), liveness=True)
    assert r.result == "ok" and r.complete
    assert any(name.startswith("hung") for name in r.coverage)


def _mutated_live(name: str, **changes):
    rows = [dataclasses.replace(r, **changes) if r.name == name else r for r in T.ROWS]
    return check(WorldModel(TINY, rows), liveness=True)


def test_surviving_mutants_are_explained_only_by_what_the_world_lacks():
    from groupspec.checkers.search.mutate import explain
    tiny, static = PRESETS["tiny"], PRESETS["static"]
    dur = {"operator": "drop-effect", "row": "JoinGroup: x", "detail": "drop the update of `session_ms` (step 0)"}
    assert "abstract" in explain(dur, tiny)
    inst = {"operator": "drop-effect", "row": "JoinGroup: x", "detail": "drop the update of `static` (step 0)"}
    assert explain(inst, tiny) and not explain(inst, static)       # static worlds do use it
    real = {"operator": "drop-effect", "row": "SyncGroup: x", "detail": "drop the update of `pending_sync` (step 0)"}
    assert explain(real, tiny) == ""


def test_reordering_finds_a_stale_sync_that_in_order_delivery_cannot():
    """Drop SyncGroup's generation check: with in-order delivery the world stays correct, but a
    request overtaken by its client's rejoin (a late JoinGroup, then that client's SyncGroup of
    the old generation) gets an empty assignment stored for the new generation."""
    from groupspec.spec.lang import FALSE
    rows = [dataclasses.replace(r, own=FALSE()) if r.name == "SyncGroup: wrong generation" else r for r in T.ROWS]
    world = dataclasses.replace(PRESETS["tiny"], max_generation=2, member_ids=3)
    assert check(WorldModel(world, rows)).result == "ok"
    r = check(WorldModel(dataclasses.replace(world, reordering=True), rows))
    assert r.result == "violation" and r.violation == "stable-assignment-covers"
    assert len(r.path) - 1 == r.depth
    actions = [st.action for st, _ in r.path[1:]]
    assert any("late" in a for a in actions) and any("timed out in the network" in a for a in actions)


@pytest.mark.slow
def test_the_table_holds_under_reordering():
    world = dataclasses.replace(PRESETS["tiny"], max_generation=2, member_ids=3, reordering=True)
    assert check(WorldModel(world)).result == "ok"


def _with(name: str, **changes):
    return [dataclasses.replace(r, **changes) if r.name == name else r for r in T.ROWS]


def test_a_rebalance_loop_breaks_the_rebalance_budget_of_a_timely_world():
    """A heartbeat in Stable answered REBALANCE_IN_PROGRESS sends a settled group round and
    round: in a timely world without faults the group would need more generations than
    membership changes."""
    from groupspec.spec.lang import lift
    from groupspec.spec.rows import Out
    from groupspec.spec.schema import Error
    row = T.ROW_BY_NAME["Heartbeat: during Stable"]
    steps = [dataclasses.replace(st, fields={**st.fields, "error": lift("REBALANCE_IN_PROGRESS", Error)})
             if isinstance(st, Out) and st.kind == "reply" else st for st in row.steps]
    settle = PRESETS["settle"]
    assert check(WorldModel(settle)).result == "ok"
    r = check(WorldModel(settle, _with(row.name, steps=steps)))
    assert r.result == "violation" and r.violation == "rebalance-budget"
    assert len(r.path) - 1 == r.depth
    assert any("rebalance in progress, rejoin" in st.action for st, _ in r.path[1:])


def test_timely_worlds_hold_their_liveness_with_a_fair_heartbeat():
    assert check(WorldModel(PRESETS["settle"]), liveness=True).result == "ok"


def test_an_acknowledged_commit_that_is_not_kept_is_caught():
    """Drop the offsets update of a stored commit: the client was told NONE, the log has the
    offsets, the coordinator's cache does not."""
    name = "StoreOffsetsDone: offsets stored"
    row = T.ROW_BY_NAME[name]
    steps = [dataclasses.replace(st, updates={k: v for k, v in st.updates.items() if k != "offsets"})
             if hasattr(st, "updates") else st for st in row.steps]
    r = check(WorldModel(PRESETS["faults"], _with(name, steps=steps)))
    assert r.result == "violation" and r.violation == "offsets-durable"


def test_the_rebalance_budget_is_refused_with_faults():
    out = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "check", "--preset", "settle", "--crash"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "--crash" in out.stderr and "Traceback" not in out.stderr


class _Counter(Model):
    """A toy model for the engines: a counter that steps up by one or two, to `top`; only the three required
    methods (everything else is the interface's default)."""

    def __init__(self, top: int, limit: int):
        self.top, self.limit = top, limit

    def init_states(self):
        return [0]

    def successors(self, s):
        return [(f"+{k}", s + k) for k in (1, 2) if s + k <= self.top], 0

    def properties(self):
        return [Property("non-negative", lambda s: s >= 0), Property(f"below-{self.limit}", lambda s: s < self.limit)]


def test_the_engine_searches_any_model_written_with_the_three_required_methods():
    found = check(_Counter(top=20, limit=7))
    assert found.result == "violation" and found.violation == "below-7"
    assert found.path[-1][1] == (7,) and len(found.path) == 5     # a shortest path (four steps), states flat
    # a state with no successor is a deadlock unless the model says it ends there (the default: it does not)
    stuck = check(_Counter(top=5, limit=100))
    assert stuck.result == "deadlock" and stuck.path[-1][1] == (5,)
    assert check(_Counter(top=5, limit=100), deadlock=False).distinct_states == 6
    with pytest.raises(NotImplementedError, match="has no recipe"):
        _Counter(1, 2).recipe()


def test_the_worlds_memoized_verdict_is_its_properties():
    """WorldModel decides `violated` from memo tables; the properties it gives as values decide the same on
    every state the tiny world reaches."""
    model = WorldModel(TINY)
    seen, frontier = set(model.init_states()), list(model.init_states())
    while frontier:
        s = frontier.pop()
        assert model.violated(s) == Model.violated(model, s) is None
        for _step, t in model.successors(s)[0]:
            if t not in seen:
                seen.add(t)
                frontier.append(t)
    assert len(seen) > 500 and [p.name for p in model.properties()] == \
        [n for n in model.invariants() if n in {p.name for p in model.properties()}]
