"""The native search (checkers/native): the world's symbolic step compiled to C agrees with the Python
search state for state, finds a planted bug at the same depth, and its counterexample replays through
the world model.  Compiled at -O0 (speed is the benchmark's business: benchmarks/native.py)."""
from __future__ import annotations

import pytest

from test_planted_bugs import LEADER_SYNCS, TINY, plant, propagate_without_storing

from groupspec.checkers.native import codegen
from groupspec.checkers.native.engine import NativeError, NativeWorld, compile_world
from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.state_space import WorldModel


@pytest.fixture(scope="module")
def native_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GROUPSPEC_NATIVE_CACHE", str(tmp_path_factory.mktemp("native")))
        yield


@pytest.mark.parametrize("symmetry", [True, False])
def test_the_compiled_tiny_world_reaches_the_states_the_python_search_reaches_level_by_level(native_cache, symmetry):
    native = NativeWorld(TINY, opt="-O0", symmetry=symmetry).search()
    python = check(WorldModel(TINY), symmetry=symmetry)
    assert (native.result, python.result) == ("ok", "ok")
    # with symmetry, one state for each orbit: the same orbits, whichever representative each search picks
    assert native.distinct_states == python.distinct_states and native.levels == python.levels
    assert native.unreduced_states == python.unreduced_states
    assert native.depth == python.depth
    assert set(native.coverage) == set(python.coverage)        # the same rows fire
    if symmetry:
        assert native.distinct_states < native.unreduced_states


def test_a_planted_bug_is_found_at_the_python_search_s_depth_and_replays(native_cache):
    # KAFKA-2017's class: the leader's assignment propagated without storing the group
    rows = plant(propagate_without_storing, LEADER_SYNCS.__eq__)
    native = NativeWorld(TINY, rows, opt="-O0").search()
    python = check(WorldModel(TINY, rows))
    assert native.result == "violation", native.detail       # replayed through the world model
    assert (native.violation, native.depth) == (python.violation, python.depth) == ("membership-durable",
                                                                                       python.depth)
    assert len(native.path) == len(python.path)
    assert any(LEADER_SYNCS in step.rows for step, _ in native.path[1:])


def test_a_compile_error_is_one_line_naming_gcc(native_cache, monkeypatch):
    class Broken:
        source = "this is not C"
    with pytest.raises(NativeError, match="gcc could not compile the world's step: .*error"):
        compile_world(Broken(), "-O0")


def test_an_operator_with_no_c_is_refused_not_guessed():
    import z3
    x = z3.Int("x")
    terms = codegen._Terms([x], [x / 2 > 0])
    with pytest.raises(codegen.Unsupported, match="no C for the operator div"):
        terms.expr(x / 2 > 0)


def test_check_with_the_native_engine_says_what_it_found_and_what_it_did_not_check(native_cache, monkeypatch,
                                                                                   capsys):
    from test_cli_input import run_cli
    from groupspec.checkers.native import engine
    monkeypatch.setattr(engine, "OPT", "-O0")         # the library the tests above compiled
    code, out, err = run_cli(monkeypatch, capsys, "check", "--preset", "tiny", "--engine", "native")
    assert code == 0, err
    assert out.startswith("ok — 375 distinct states")       # clients configured alike reduced, as --engine python
    assert ("not checked by --engine native: one-leader-per-generation, assignment-only-when-stable, "
            "generation-monotone, max-size-after-join, commit-fenced (step and output invariants") in out
    assert "engine: native (the world's step compiled to C)" in out
    assert "symmetry reduction: 1.99x (748 states without it)" in out


@pytest.mark.parametrize("args, says", [
    (["--engine", "rust"], "--engine 'rust': use python or native"),
    (["--engine", "native", "--liveness"], "--liveness with --engine native: the native search is a breadth-first"),
    (["--engine", "native", "--workers", "2"], "--workers 2 with --engine native"),
    (["--engine", "native", "--memory", "1"], "--visited, --visited-dir and --memory with --engine native"),
])
def test_check_refuses_what_the_native_engine_does_not_do(monkeypatch, capsys, args, says):
    from test_cli_input import refused
    assert says in refused(monkeypatch, capsys, "check", "--preset", "tiny", *args)
