"""The native search (checkers/native): the world's symbolic step compiled to C agrees with the Python
search state for state, finds a planted bug at the same depth, and its counterexample replays through
the world model.  Compiled by tcc, or by gcc at -O0 (speed is the benchmark's business: benchmarks/native.py)."""
from __future__ import annotations

import os
from dataclasses import replace

import pytest
import z3
from types import SimpleNamespace

from test_planted_bugs import LEADER_SYNCS, TINY, plant, propagate_without_storing

from groupspec.checkers.native import codegen
from groupspec.checkers.native.engine import NativeError, NativeWorld, compile_world
from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.state_space import WorldModel


@pytest.fixture(scope="module")
def native_cache(tmp_path_factory):
    # one cache for the suite's workers (a worker's base is popen-gwN under the run's): a library another
    # worker compiled is used, not compiled again (compile_world writes a library whole or not at all)
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GROUPSPEC_NATIVE_CACHE", str(base / "native"))
        yield


# tcc compiles the tiny world's 4.8 MB of C in under a second, gcc -O0 in 25-30 s: CI runs the agreement with
# tcc, the slow run with gcc too (the C is the same; the two compilers' readings of it are what differ)
@pytest.mark.parametrize("cc", ["tcc", pytest.param("gcc", marks=pytest.mark.slow)])
def test_the_compiled_tiny_world_reaches_the_states_the_python_search_reaches_level_by_level(native_cache, cc):
    # with and without symmetry in one test: the second world is the first's step and library (generated once
    # for each world in a process, compiled once for each source), where a test each might run on two workers
    # and with one worker and three (threads taking the levels' states in chunks: the same levels, whoever admits)
    transitions = {}
    for symmetry, workers in ((True, 1), (False, 1), (True, 3), (False, 3)):
        reported = []
        native = NativeWorld(TINY, opt="-O0", symmetry=symmetry, cc=cc).search(
            workers=workers, progress=lambda *level: reported.append(level))
        python = check(WorldModel(TINY), symmetry=symmetry)
        assert (native.result, python.result) == ("ok", "ok")
        # with symmetry, one state for each orbit: the same orbits, whichever representative each search picks
        assert native.distinct_states == python.distinct_states and native.levels == python.levels, symmetry
        assert native.unreduced_states == python.unreduced_states
        assert native.depth == python.depth
        assert transitions.setdefault(symmetry, native.transitions) == native.transitions
        assert set(native.coverage) == set(python.coverage)        # the same rows fire
        assert (native.distinct_states < native.unreduced_states) == symmetry
        # after each level but the last (which leads nowhere): its depth, the states so far, its own
        assert reported == [(d, sum(native.levels[:d + 1]), native.levels[d]) for d in range(1, native.depth + 1)]


def test_three_clients_alike_reach_the_python_search_s_orbits_level_by_level(native_cache):
    # six renamings: canon tries each against the least so far, from the state as it was (copied when an image
    # replaces it and another is still to come), where two clients alike have one renaming and need no copy
    cfg = replace(TINY, clients=3)
    assert cfg.symmetry_classes() == [[0, 1, 2]]
    native = NativeWorld(cfg, cc="tcc").search(workers=2)
    python = check(WorldModel(cfg), symmetry=True)
    assert (native.result, python.result) == ("ok", "ok")
    assert native.levels == python.levels and native.unreduced_states == python.unreduced_states
    assert native.distinct_states < native.unreduced_states / 5          # most orbits have all six renamings


# a second world's step generated (about 20 s) and compiled: by tcc in CI, by gcc (-O0, 25-30 s more) in the slow run
@pytest.mark.parametrize("cc", ["tcc", pytest.param("gcc", marks=pytest.mark.slow)])
def test_a_planted_bug_is_found_at_the_python_search_s_depth_and_replays(native_cache, cc):
    # KAFKA-2017's class: the leader's assignment propagated without storing the group; the path rebuilt from the
    # trail's parents on disk
    rows = plant(propagate_without_storing, LEADER_SYNCS.__eq__)
    world = NativeWorld(TINY, rows, opt="-O0", cc=cc)
    python = check(WorldModel(TINY, rows))
    for workers in (1, 3):            # with threads, one of the shortest counterexamples, replayed as well
        native = world.search(workers=workers)
        assert native.result == "violation", native.detail       # replayed through the world model
        assert (native.violation, native.depth) == (python.violation, python.depth) == ("membership-durable",
                                                                                           python.depth)
        assert len(native.path) == len(python.path)
        assert any(LEADER_SYNCS in step.rows for step, _ in native.path[1:])


@pytest.mark.parametrize("cc", ["gcc", "tcc"])
def test_a_compile_error_is_one_line_naming_the_compiler(native_cache, cc):
    class Broken:
        source = "this is not C"
    with pytest.raises(NativeError, match=f"^{cc} could not compile the world's step: .*error"):
        compile_world(Broken(), {}, "-O0", cc)


def test_the_packed_state_gives_each_leaf_its_declared_range_within_one_word(native_cache):
    from groupspec.checkers.native import packing
    world = NativeWorld(TINY, cc="tcc")
    slots = world.slots
    assert len(slots) == world.gen.leaves
    assert all(s.shift + s.width <= packing.WORD for s in slots)          # no leaf straddles two words
    assert [(s.word, s.shift) for s in slots] == sorted((s.word, s.shift) for s in slots)
    by_name = {s.name: s for s in slots}
    assert (by_name["dx.state"].lo, by_name["dx.state"].hi) == (0, 7)     # the group's five states in 3 bits
    assert (by_name["dx.leader"].lo, by_name["dx.leader"].hi) == (-1, 2)  # no member, or one of tiny's 3
    assert by_name["dx.members"].width == 3                               # a set of 3 member ids
    # every state the search reached came back from its packing whole (the level-by-level test agrees with
    # the Python search); here, that a packed state is a small part of the leaves it holds
    assert slots[-1].word + 1 < world.gen.leaves / 8


def test_a_leaf_outside_its_packed_range_stops_the_search_naming_it(native_cache, monkeypatch):
    # plain integers packed as if the largest the step wrote were 1: the first timer's deadline does not fit
    from groupspec.checkers.native import packing
    monkeypatch.setattr(packing, "int_ceiling", lambda rel: 1)
    world = NativeWorld(TINY, cc="tcc")
    native = world.search()
    assert native.result == "stopped"
    assert "is outside the range [-1, 2] the packed state holds" in native.detail
    assert native.detail.endswith("search this world with --engine python")
    name, value = native.detail.split("a state's ")[1].split(" is outside")[0].split(" = ")
    assert name in {s.name for s in world.slots if (s.lo, s.hi) == (-1, 2)} and int(value) > 2


def test_an_operator_with_no_c_is_refused_not_guessed():
    import z3
    x = z3.Int("x")
    terms = codegen._Terms([x], [x / 2 > 0])
    with pytest.raises(codegen.Unsupported, match="no C for the operator div"):
        terms.expr(x / 2 > 0)


def test_check_with_the_native_engine_says_what_it_found_and_what_it_did_not_check(native_cache, monkeypatch,
                                                                                   capsys):
    from test_cli_input import run_cli
    code, out, err = run_cli(monkeypatch, capsys, "check", "--preset", "tiny", "--engine", "native")   # tcc
    assert code == 0, err
    assert out.startswith("ok — 375 distinct states")       # clients configured alike reduced, as --engine python
    assert ("not checked by --engine native: one-leader-per-generation, assignment-only-when-stable, "
            "generation-monotone, max-size-after-join, commit-fenced (step and output invariants") in out
    assert "engine: native (the world's step compiled to C by tcc; 2 threads)" in out
    assert "symmetry reduction: 1.99x (748 states without it)" in out


def test_a_search_its_memory_cannot_hold_stops_and_says_why(native_cache, monkeypatch, capsys):
    world = NativeWorld(TINY, cc="tcc")
    says = "the visited set and the levels may not grow past {} (--memory)"
    # 4,680 bytes: the visited set's first table (256 fingerprints, 2,048 bytes) and the levels' first room (17
    # states of 11 words and a fingerprint, 1,632 bytes), but not the room for a level of more than 16 states: the
    # levels stop it, before the table would need to grow (at 192 states)
    for workers in (1, 2):
        native = world.search(workers=workers, memory=4.68e-6)
        assert (native.result, native.detail) == ("stopped", says.format("4,680 bytes"))
        assert 16 < native.distinct_states < 192 and native.levels[0] == 1
    # more and more memory: the search goes as far or further, and all of it once there is room
    reached = []
    for budget in (1_000, 4_680, 6_000, 9_000, 12_000, 15_000, 20_000, 40_000):
        native = world.search(memory=budget / 1e9)
        assert native.result == ("stopped" if native.distinct_states < 375 else "ok")
        assert native.detail == ("" if native.result == "ok" else says.format(f"{budget:,} bytes"))
        reached.append(native.distinct_states)
    assert reached == sorted(reached) and reached[0] == 0 and reached[-1] == 375 and len(set(reached)) > 3
    assert world.search(memory=4.68e-6, max_states=10).detail == "stopped at --max-states"     # the first limit met
    from test_cli_input import run_cli
    code, out, err = run_cli(monkeypatch, capsys, "check", "--preset", "tiny", "--engine", "native", "--memory",
                             "4.68e-6")
    assert code == 0, err
    assert out.startswith("stopped — ")
    assert f"(stopped: {says.format('4,680 bytes')})" in out.splitlines()[0]


def test_a_trail_that_cannot_be_written_stops_the_search_and_says_where(native_cache, tmp_path):
    import shutil
    world = NativeWorld(TINY, cc="tcc")
    # the trail's folder removed after the first level: the next level's file cannot be made
    native = world.search(trail_dir=str(tmp_path), progress=lambda *level: [shutil.rmtree(made, ignore_errors=True)
                                                                             for made in tmp_path.iterdir()])
    assert native.result == "stopped" and native.depth == 1
    assert native.detail == (f"the trail of parents could not be written in {tmp_path}: No such file or directory "
                             f"(give --visited-dir a folder with room: 16 bytes a state)")
    assert list(tmp_path.iterdir()) == []                 # nothing left behind
    (tmp_path / "a-file").write_text("")
    with pytest.raises(OSError):
        world.search(trail_dir=str(tmp_path / "a-file"))


def test_a_signal_stops_the_search_in_its_next_chunk_and_its_exception_goes_on(native_cache, tmp_path):
    import signal
    import time

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop()
    world = NativeWorld(TINY, cc="tcc")
    was = signal.signal(signal.SIGUSR1, handler)
    try:
        reported = []

        def level(depth, states, size):
            reported.append(depth)
            if depth == 3:            # the handler runs in the waiting thread, while the search's thread is here
                os.kill(os.getpid(), signal.SIGUSR1)
                time.sleep(0.5)
        t0 = time.perf_counter()
        with pytest.raises(Stop):
            world.search(trail_dir=str(tmp_path), progress=level)
        assert time.perf_counter() - t0 < 5
        assert reported == [1, 2, 3]                  # no level after it: the search stopped, not ran out
    finally:
        signal.signal(signal.SIGUSR1, was)
    assert list(tmp_path.iterdir()) == []                 # the trail removed
    assert world.search().distinct_states == 375         # and the world searches again, whole


@pytest.mark.parametrize("args, says", [
    (["--engine", "rust"], "--engine 'rust': use python or native"),
    (["--engine", "native", "--cc", "clang"], "--cc 'clang': use tcc or gcc"),
    (["--cc", "tcc"], "--cc tcc with --engine python: only the native engine compiles; add --engine native"),
    (["--engine", "native", "--liveness"], "--liveness with --engine native: the native search is a breadth-first"),
    (["--engine", "native", "--workers", "0"], "--workers must be at least 1, got 0"),
    (["--engine", "native", "--visited", "disk"], "--visited disk with --engine native"),
    (["--engine", "native", "--memory", "0"], "--memory must be more than 0 GB (a finite number), got 0"),
])
def test_check_refuses_what_the_native_engine_does_not_do(monkeypatch, capsys, args, says):
    from test_cli_input import refused
    assert says in refused(monkeypatch, capsys, "check", "--preset", "tiny", *args)


def _constants():
    """Terms over constants only, of every operator the generator folds."""
    a, b = z3.IntVal(3), z3.IntVal(-2)
    p, q = z3.BitVecVal(5, 3), z3.BitVecVal(3, 3)
    return [a < b, a <= b, a > b, a >= b, a >= 3, a <= 3, a < 3, a > 3, a == b, a == 3, z3.Distinct(a, b), a + b, a - b, -a, z3.Not(a == b),
            z3.If(a > b, a, b), z3.If(a < b, a, b), z3.Implies(a > b, a == b), z3.And(a > b, b < a),
            z3.Or(a == b, a < b), p | q, p & q, ~p, z3.Extract(2, 1, p), z3.Extract(0, 0, q) == 1]


@pytest.mark.parametrize("term", _constants(), ids=str)
def test_a_term_of_constants_folds_to_what_z3_computes(term):
    value = codegen._Terms([], [term]).value(term)
    want = z3.simplify(term)
    assert value == (int(z3.is_true(want)) if z3.is_bool(want) else want.as_long())


def test_a_decided_side_leaves_only_the_undecided_one():
    x, y = z3.Int("x"), z3.Int("y")
    one = z3.IntVal(1)
    # held while the terms are read: the generator knows terms by Z3's ids, which a freed term gives up
    held = [z3.And(one == 1, x == y), z3.Or(one == 0, x < y), z3.If(one == 0, x, y), z3.And(one == 0, x == y),
            z3.Or(x == y, one == 1), x + 1]
    terms = codegen._Terms([x, y], held)
    assert [terms.expr(t) for t in held[:3]] == ["(x[0] == x[1])", "(x[0] < x[1])", "x[1]"]
    assert [terms.value(t) for t in held[3:]] == [0, 1, None]


def test_a_shared_term_is_a_memo_function_only_when_it_costs_more_than_a_lookup():
    x, y = z3.Int("x"), z3.Int("y")
    cheap, dear = x == 1, z3.And(x + y > 2, x - y < 3, y > 0)
    terms = codegen._Terms([x, y], [cheap, cheap, dear, dear])
    assert terms.expr(cheap) == "(x[0] == 1)"
    # the cache tested where the term is used; the function only computes it (and remembers it)
    assert terms.expr(dear) == "(s->m[0].f >= s->state_epoch ? s->m[0].t : m0(x, s))" and len(terms.functions) == 1
    assert "return s->m[0].t = " in terms.functions[0]


def test_a_test_s_state_only_conjunct_is_tested_before_the_loop_over_the_choice_the_rest_reads():
    x, ch = z3.Int("x"), z3.Int("choice#0")
    test = z3.And(x == 2, z3.And(ch == x, z3.IntVal(1) < 2))
    gen = codegen.Generated.__new__(codegen.Generated)
    gen.terms, gen._bound = codegen._Terms([x], [test]), set()
    gen._W = SimpleNamespace(choice_size={"row": 3}, _choice_of={"choice#0": "row"})
    lines, closed, _ = gen._test(test, "")
    assert [ln.strip()[:18] for ln in lines] == ["if ((x[0] == ((int", "for (s->ch[0] = -1", "if ((s->ch[0] == x"]
    assert len(closed) == 3 and gen._bound == {"choice#0"}


def test_a_check_on_a_path_s_way_that_is_the_state_invariant_of_where_it_ends_is_left_to_that_state(monkeypatch):
    # every state the search reaches is judged by `broken`, so such a check says nothing new; one on
    # a state the path passes (or a row's own invariant) stays
    monkeypatch.setattr(codegen, "_flat", lambda state: state)
    a, b = z3.Int("a"), z3.Int("b")
    path = SimpleNamespace(state=[a + 1, b])
    state_bad = [("negative", a < 0), ("equal", a == b)]
    bad = [("negative", a + 1 < 0), ("equal", a == b), ("row-only", a + 1 == b)]
    gen = codegen.Generated.__new__(codegen.Generated)
    gen.redundant = 0
    assert gen._not_at_the_end(path, [a, b], state_bad, bad) == bad[1:] and gen.redundant == 1
