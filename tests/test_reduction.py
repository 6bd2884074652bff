"""Partial-order reduction (spec/footprint.py, `Model.ample`, the engine's cycle proviso): the reduced
search reaches every state the invariants can tell apart, the same verdicts and the same broken
invariants as the full search, and its counterexamples replay."""
from __future__ import annotations

import dataclasses
import json
from collections import deque

import pytest

from groupspec.checkers.review.counterexample import to_itf
from groupspec.checkers.search.explicit import check
from groupspec.checkers.search.model import Model, Property
from groupspec.checkers.world.clients import CP
from groupspec.checkers.world.itf_replay import replay
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel
from groupspec.spec.footprint import IN_FLIGHT, LOCAL, REFERENCED, VISIBLE
from groupspec.spec.world import N_GROUP, WORLD_INDEX

from test_cli_input import refused, run_cli


class _Recording(WorldModel):
    """The world, recording what the invariants read of every state the search keeps (`violated`
    is asked once of each)."""

    def __init__(self, cfg, rows=None):
        super().__init__(cfg, rows)
        self.views: set = set()
        self._g = [i for name, i in WORLD_INDEX.items() if name in VISIBLE and i < N_GROUP]
        self._c = [CP[name] for name in sorted(VISIBLE) if name in CP]

    def violated(self, s):
        G = s[0]
        # what renaming clients cannot change: the clients' views as a sorted tuple
        self.views.add((tuple(G[i] for i in self._g), tuple(sorted(tuple(C[p] for p in self._c) for C in s[1:]))))
        return super().violated(s)


SMALL_PRESETS = ["tiny", "small", "twogen", "static", "hung", "settle", pytest.param("faults", marks=pytest.mark.slow)]


@pytest.mark.parametrize("preset", SMALL_PRESETS)
@pytest.mark.parametrize("symmetry", [False, True], ids=["no-symmetry", "symmetry"])
def test_the_reduced_search_sees_every_state_the_invariants_can_tell_apart(preset, symmetry):
    full, reduced = _Recording(PRESETS[preset]), _Recording(PRESETS[preset])
    a, b = check(full, symmetry=symmetry), check(reduced, symmetry=symmetry, reduction=True)
    assert (b.result, b.violation, b.complete) == (a.result, a.violation, a.complete) == ("ok", "", True)
    assert reduced.views == full.views
    assert b.distinct_states <= a.distinct_states and b.generated <= a.generated
    assert not a.reduction and b.reduction and a.ample_states == 0


def test_where_a_client_is_neither_in_flight_nor_referenced_only_its_own_steps_reach_it():
    """The independence spec/footprint.py derives, held to every reachable state of worlds with every
    fault the clients' own steps meet (crash, restart, loss, duplication, reordering, a hung poll loop,
    a leave during a rebalance): no step of another client or of the coordinator changes a client that
    has no request in flight and no parked request, nor puts one in flight or parks one for it; and
    the client's own steps, which the reduction takes alone, leave the rest of the world as it is."""
    worlds = [PRESETS["small"], dataclasses.replace(PRESETS["tiny"], loss=True, duplication=True, reordering=True,
                                                    restart=True, crash=True),
              dataclasses.replace(PRESETS["hung"], leaves_rebalancing=True, failover=True, append_failure=True)]
    for cfg in worlds:
        m = WorldModel(cfg)
        in_flight = lambda C: m._client_value(IN_FLIGHT, C, {})      # noqa: E731
        referenced = lambda G, c: m._compile(REFERENCED)[1](G, m._pvector({"client": c}, c), ())  # noqa: E731
        seen, todo, quiet = set(), deque(m.init_states()), 0
        while todo and len(seen) < 15_000:            # breadth-first, the first states of each world
            s = todo.popleft()
            if s in seen:
                continue
            seen.add(s)
            succ = m.successors(s)[0]
            todo += [t for _, t in succ]
            for c in range(m.n):
                if in_flight(s[c + 1]) or referenced(s[0], c):
                    continue
                quiet += 1
                for st, t in succ:
                    if st.act in LOCAL and st.who == (c,):
                        assert t[0] == s[0] and t[1:c + 1] + t[c + 2:] == s[1:c + 1] + s[c + 2:], st.action
                    else:
                        assert t[c + 1] == s[c + 1], (st.action, c)
                        assert not in_flight(t[c + 1]) and not referenced(t[0], c), (st.action, c)
        assert quiet > 1000, cfg


def _planted(name: str, **changes) -> list:
    from groupspec.spec import table as T
    return [dataclasses.replace(r, **changes) if r.name == name else r for r in T.ROWS]


@pytest.mark.parametrize("case", ["assignment outside Stable", "static zombie window"])
def test_a_violation_is_found_and_its_counterexample_replays(case):
    if case == "assignment outside Stable":        # a planted bug
        cfg, rows = PRESETS["tiny"], _planted("StoreGroupDone: assignment stored", target=None)
    else:                                           # what the static preset waives, and why
        cfg, rows = dataclasses.replace(PRESETS["static"], waive=()), None
    full, reduced = check(WorldModel(cfg, rows)), check(WorldModel(cfg, rows), reduction=True)
    assert full.result == "violation"
    assert (reduced.result, reduced.violation) == (full.result, full.violation)
    assert len(reduced.path) >= len(full.path)          # shortest only without reduction
    model = WorldModel(cfg, rows)
    got = replay(model, to_itf(reduced.path, model, reduced.violation)["states"])
    assert got.departs < 0 and got.violation == reduced.violation


@pytest.mark.slow
def test_mutants_get_the_same_verdict_and_broken_invariant_with_and_without_reduction():
    """Planted bugs by the mutation operators (groupspec mutate), every 25th, in the small world (crashes
    and expiry: where the reduction takes ample sets)."""
    from groupspec.checkers.search.mutate import mutants
    from groupspec.spec import engine as E
    from groupspec.spec.table import ROWS
    killed = 0
    for m, i, row in mutants()[::25]:
        rows = list(ROWS)
        rows[i] = row
        try:
            full = check(WorldModel(PRESETS["small"], rows))
        except E.EngineError:       # the mutant breaks the table itself: no search to compare
            continue
        reduced = check(WorldModel(PRESETS["small"], rows), reduction=True)
        assert (reduced.result, reduced.violation) == (full.result, full.violation), m
        killed += full.result != "ok"
    assert killed > 3


def test_check_reports_the_reduction_and_refuses_what_it_cannot_do(monkeypatch, capsys):
    code, out, _ = run_cli(monkeypatch, capsys, "check", "--preset", "small", "--reduction", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["result"] == "ok" and doc["workers"] == 1
    r = doc["reduction"]
    assert r["ample_states"] > 0 and r["taken_transitions"] == doc["generated_states"] < r["enabled_transitions"]
    assert r["transition_reduction"] > 1
    code, out, _ = run_cli(monkeypatch, capsys, "check", "--preset", "tiny")
    assert code == 0 and "partial-order" not in out
    assert "--reduction with --liveness" in refused(monkeypatch, capsys, "check", "--preset", "tiny", "--reduction",
                                                    "--liveness")
    assert "--workers 2 with --reduction" in refused(monkeypatch, capsys, "check", "--preset", "tiny", "--reduction",
                                                     "--workers", "2")


class _Toggle(Model):
    """Process A flips a bit forever; process B counts to 3, and the property is that it never gets
    there.  A's flip is independent of B's step and invisible (the property reads B's count only), so
    {A's flip} is an ample set everywhere; alone it would go round A's cycle and never let B move."""

    def init_states(self):
        return [(0, 0)]

    def successors(self, s):
        a, b = s
        return [("A flips", (1 - a, b))] + ([("B steps", (a, b + 1))] if b < 3 else []), 0

    def properties(self):
        return [Property("B below 3", lambda s: s[1] < 3)]

    def ample(self, s, succ):
        return [x for x in succ if x[0] == "A flips"]


def test_the_cycle_proviso_keeps_an_ample_set_from_going_round_a_cycle_for_ever():
    full, reduced = check(_Toggle(), symmetry=False), check(_Toggle(), symmetry=False, reduction=True)
    assert (reduced.result, reduced.violation) == (full.result, full.violation) == ("violation", "B below 3")
    assert reduced.ample_states > 0 and reduced.generated < reduced.enabled
    assert [st for st, _ in reduced.path[1:]].count("B steps") == 3


def test_a_model_without_independence_is_searched_in_full():
    from test_explicit import _Counters
    full, reduced = check(_Counters(stuck=2)), check(_Counters(stuck=2), reduction=True)
    assert (reduced.result, reduced.distinct_states, reduced.generated, reduced.ample_states) == \
        (full.result, full.distinct_states, full.generated, 0)
