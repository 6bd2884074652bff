"""The TLA+ export against TLC, and traces both ways.

TLC and `groupspec check` must find the same number of distinct states in
the same exported world (with symmetry and without) and, on a planted bug,
a violation of the same invariant at the same depth; TLC's counterexample
must replay through the world model, and ours must load in an ITF reader.
Tests that run TLC are skipped, saying why, when no TLC jar (or no java) is
found (checkers/tla/tlc.py find_jar: GROUPSPEC_TLC_JAR, or ../shared/tools).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groupspec.checkers.review.counterexample import to_itf
from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.itf_replay import load_trace, replay
from groupspec.checkers.tla.export import camel
from groupspec.checkers.tla.module import export
from groupspec.checkers.tla.tlc import SHORT_RUN_JVM, find_jar, java, run_tlc
from groupspec.checkers.world.state_space import WorldModel
from groupspec.checkers.world.presets import PRESETS
from groupspec.spec.invariants import CHECKED_AFTER_ROW
from groupspec.spec.lang import FALSE, If, Lowest
from groupspec.spec.schema import P, V
from groupspec.spec.table import ROWS, rows_for
from groupspec.spec.world import ALL_VARS, ACTIONS, WORLD_COORDINATOR, switched_on

sys.path.insert(0, str(Path(__file__).parent))
from test_planted_bugs import _new_member_rows, plant, subst_row  # noqa: E402

JAR, WHY = find_jar()
needs_tlc = pytest.mark.skipif(JAR is None or java() is None,
                               reason=WHY or "no `java` on the PATH (TLC needs Java 17)")


@functools.lru_cache(maxsize=None)
def _exported(preset: str, symmetry: bool):
    """A preset's export, made once for the tests that only read it (an export is seconds, and the
    same for the same world)."""
    return export(PRESETS[preset], symmetry=symmetry)


def _write(tmp_path: Path, cfg, model=None, symmetry=True):
    named = [n for n, c in PRESETS.items() if c is cfg]
    e = _exported(named[0], symmetry) if model is None and named else export(cfg, model, symmetry=symmetry)
    (tmp_path / f"{e.name}.tla").write_text(e.module)
    (tmp_path / f"{e.name}.cfg").write_text(e.config)
    return e


def _both(tmp_path: Path, cfg, rows):
    """Our check and TLC's of one world with table `rows`, without symmetry: (ours, the export,
    TLC's result).  TLC runs one worker: then its counterexample is a shortest one (with two it
    may report a longer one), as ours is."""
    ours = check(WorldModel(cfg, rows), symmetry=False)
    e = _write(tmp_path, cfg, WorldModel(cfg, rows), symmetry=False)
    return ours, e, run_tlc(tmp_path, e.name, workers=1, short=True)


def _member_id_bug():
    """GM.generateMemberId from the client id alone (tests/test_planted_bugs.py): a new member is
    handed an id a member or pending member already holds."""
    in_use = V.members | V.pending
    return plant(lambda r: subst_row(r, P.fresh, If(in_use.is_empty(), P.fresh, Lowest(in_use))), _new_member_rows)


def test_the_module_is_generated_from_the_declarations():
    e = _exported("faults", True)
    text = e.module
    # every variable declared, TypeOK first in the configuration, every invariant listed
    for v in ALL_VARS:
        assert f"    {v.name}" in text and f"/\\ {v.name} \\in " in text
    cfg_invariants = e.config.split("INVARIANTS")[1].split()
    assert cfg_invariants[0] == "TypeOK" and [n for n, _ in e.invariants] == cfg_invariants[1:len(e.invariants) + 1]
    # each world action the world switches on is an action of the module, with its fairness
    on = [a.name for a in ACTIONS if switched_on(a, PRESETS["faults"])]
    assert len(on) > 10
    for name in on:
        assert f"\n{name}" in text, name
    assert "WF_vars(" in text and "SYMMETRY Symmetry" in e.config
    # a row's source is carried along as a comment beside its operators; the closed world describes
    # one coordinator (spec/world.py WORLD_COORDINATOR), and its rows only are exported
    for r in rows_for(WORLD_COORDINATOR):
        if r.trigger == "JoinGroup":
            assert f"\\* {r.name}\n\\* source: " in text, r.name


def test_every_variable_and_constant_carries_an_apalache_type():
    # Apalache's type checker needs a `@type:` annotation on each VARIABLE and CONSTANT (and on the
    # helper operators whose types it cannot infer alone); Apalache itself is not installable here
    # (PyPI has only an RPC client for it), so the annotations are checked for presence and form,
    # and the module for SANY parsing (below)
    text = _exported("faults", True).module
    for block, end in (("CONSTANTS", "\n\n"), ("VARIABLES", "\n\n")):
        lines = text.split(f"\n{block}\n")[1].split(end)[0].splitlines()
        assert len(lines) % 2 == 0 and len(lines) >= 16, block
        for note, decl in zip(lines[::2], lines[1::2]):
            assert re.fullmatch(r"    \\\* @type: .+;", note), (block, note, decl)
            assert re.match(r"    [A-Za-z_]+,?  \\\* ", decl), (block, decl)
    declared = re.findall(r"^    ([a-z_]+),?  \\\*", text.split("\nVARIABLES\n")[1].split("\n\n")[0], re.M)
    assert declared == [v.name for v in ALL_VARS] + ["broken_in_step"]
    for helper in ("None ==", "Get(f, k, d) ==", "Put(f, k, v) ==", "Lowest(S) ==", "Options(S) =="):
        before = text.split("\n" + helper)[0].splitlines()[-1]
        assert before.startswith("\\* @type: "), helper
    assert "ConstInit ==" in text        # Apalache's --cinit: the world's constants, clients as integers


def test_a_part_shared_by_several_ways_through_is_written_once():
    # the eager re-check after a row, a trigger's rows, an append's completion: each recurring part
    # of a step is one operator, defined before its first use and called at least twice (a part
    # called once is written inline); the tiny world's module was 6,484 lines with every way through
    # written out
    text = _exported("tiny", False).module
    shared = text.split("\\* ---- Parts of steps")[1].split("\\* ---- The closed world's actions")[0]
    names = re.findall(r"^([A-Za-z_0-9]+)(?:\(.*\))? ==$", shared, re.M)
    assert {"EagerCompleteJoin", "HandleCompleteJoin"} <= set(names) and len(names) > 10
    for name in names:
        uses = [m.start() for m in re.finditer(rf"\b{name}\b", text)]
        first_line = text[uses[0]:].split("\n")[0]
        assert text[uses[0] - 1] == "\n" and first_line.endswith(" =="), (name, first_line)   # defined first
        assert len(uses) - 1 >= 2, name
    assert text.count("\n") < 3500


@needs_tlc
def test_the_module_parses_with_sany(tmp_path):
    e = _write(tmp_path, PRESETS["faults"])
    proc = subprocess.run([java(), *SHORT_RUN_JVM, "-cp", str(JAR), "tla2sany.SANY", f"{e.name}.tla"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "Semantic errors" not in proc.stdout and "***Parse Error***" not in proc.stdout, proc.stdout[-3000:]
    assert proc.returncode == 0, proc.stdout[-3000:]


@needs_tlc
@pytest.mark.parametrize("symmetry", [False, True], ids=["no-symmetry", "symmetry"])
def test_tlc_and_ours_find_the_same_states(tmp_path, symmetry):
    cfg = PRESETS["tiny"]
    e = _write(tmp_path, cfg, symmetry=symmetry)
    t = run_tlc(tmp_path, e.name, short=True)
    ours = check(WorldModel(cfg), symmetry=symmetry)
    assert (t.result, ours.result) == ("ok", "ok"), t.output
    assert t.distinct_states == ours.distinct_states
    assert t.depth - 1 == ours.depth          # TLC counts states on the longest path, we count steps


@needs_tlc
def test_a_planted_bug_is_found_alike_and_tlcs_trace_replays(tmp_path):
    cfg = PRESETS["tiny"]
    rows = _member_id_bug()
    ours, e, t = _both(tmp_path, cfg, rows)
    names = dict(e.invariants)
    # breadth-first, both stop at the shallowest violation; which of two broken at that depth each
    # sees first depends on the order of actions (and TLC's workers)
    either = {"pending-not-members", "no-shared-member-id"}
    assert ours.result == t.result == "violation"
    assert ours.violation in either and names[t.violation] in either
    assert len(t.trace) - 1 == ours.depth
    # TLC's counterexample, written as TLC writes it, replays step by step through the world model
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"counterexample": {"state": [[i + 1, s] for i, s in enumerate(t.trace)]}}))
    fmt, states = load_trace(trace)
    r = replay(WorldModel(cfg, rows), states)
    assert fmt == "tlc" and r.departs == -1 and r.violation in either
    # and the correct table does not take the same path: the trace leaves its world at some step
    assert replay(WorldModel(cfg), states).departs > 0


@needs_tlc
def test_a_check_inside_a_step_is_found_alike(tmp_path):
    # StoreGroupDone answering the leader's assignment without moving the group to Stable
    # (tests/test_explicit.py): only the output invariant assignment-only-when-stable, checked after
    # the row that answers (spec/invariants.py CHECKED_AFTER_ROW), sees it; no state does
    cfg = PRESETS["tiny"]
    rows = [dataclasses.replace(r, target=None) if r.name == "StoreGroupDone: assignment stored" else r for r in ROWS]
    ours, e, t = _both(tmp_path, cfg, rows)
    assert ours.result == t.result == "violation"
    assert ours.violation == dict(e.invariants)[t.violation] == "assignment-only-when-stable"
    assert t.violation == "AssignmentOnlyWhenStableAfterEveryRow"     # found by broken_in_step
    assert len(t.trace) - 1 == ours.depth
    assert t.trace[-1]["broken_in_step"] == "assignment-only-when-stable"


@needs_tlc
def test_a_mutant_of_the_own_conditions_is_exported_as_the_engine_runs_it(tmp_path):
    # DelayedJoin.tryComplete always false (tests/test_planted_bugs.py): the mutant changes the
    # CompleteJoin rows' own conditions, which first-match dispatch tests (spec/engine.py select),
    # not their full guards; the module dispatches as the engine does (First_<trigger>), so TLC
    # finds the same violation at the same depth (printing the guards, it found none)
    cfg = PRESETS["tiny"]
    rows = [dataclasses.replace(r, own=FALSE()) if r.name.startswith("CompleteJoin:") else r for r in ROWS]
    ours, e, t = _both(tmp_path, cfg, rows)
    assert ours.result == t.result == "violation"
    assert ours.violation == dict(e.invariants)[t.violation] == "join-completes-once-all-rejoined"
    assert len(t.trace) - 1 == ours.depth


def _no_delayed_join():
    """A pending member's rejoin in Stable that starts a rebalance without arming its DelayedJoin
    (tests/test_explicit.py): the clients wait for JoinGroup answers no timer will ever give."""
    name = "JoinGroup: pending member rejoins and starts a rebalance (Stable)"
    return [dataclasses.replace(r, steps=[dataclasses.replace(st, updates={k: v for k, v in st.updates.items()
                                                                            if k != "join_timer"})
                                          if hasattr(st, "updates") else st for st in r.steps])
            if r.name == name else r for r in ROWS]


@needs_tlc
def test_a_deadlock_is_found_alike(tmp_path):
    # a state without a successor that is neither cut by a bound (those steps stutter) nor an ended
    # world (spec/world.py ENDED, where the module may Stop) is a deadlock to TLC as to us
    cfg = PRESETS["tiny"]
    rows = _no_delayed_join()
    ours, e, t = _both(tmp_path, cfg, rows)
    assert ours.result == t.result == "deadlock"
    assert len(t.trace) - 1 == ours.depth


@pytest.mark.slow      # a second TLC run on the world above (10-15 s of the 15-minute suite)
@needs_tlc
def test_tlc_told_not_to_look_for_deadlocks_finds_our_states(tmp_path):
    cfg = PRESETS["tiny"]
    rows = _no_delayed_join()
    e = _write(tmp_path, cfg, WorldModel(cfg, rows), symmetry=False)
    t = run_tlc(tmp_path, e.name, deadlock=False, short=True)
    assert t.result == "ok" and t.distinct_states == check(WorldModel(cfg, rows), symmetry=False,
                                                           deadlock=False).distinct_states


def test_the_checks_after_a_row_are_the_explicit_checkers_in_its_order():
    # the module's AfterRow names the checks of spec/invariants.py CHECKED_AFTER_ROW in that order,
    # the order world/state_space.py checks them in (check_after_row), so both report the same one first
    e = _exported("tiny", False)
    after_row = e.module.split("AfterRow(prev, w, q, handed) ==")[1].split("\n\\*")[0]
    named = re.findall(r'THEN "([a-z-]+)"', after_row)
    assert named == [i.name for i in CHECKED_AFTER_ROW] and len(named) > 10
    assert [n for n, _ in e.invariants if n.endswith("AfterEveryRow")] == \
        [camel(i.name) + "AfterEveryRow" for i in CHECKED_AFTER_ROW]


def test_our_counterexample_is_itf_and_replays():
    itf_py = pytest.importorskip("itf_py", reason="itf-py (the test extra) reads ITF traces")
    cfg = PRESETS["tiny"]
    rows = _member_id_bug()
    model = WorldModel(cfg, rows)
    r = check(model, symmetry=False)
    doc = json.loads(json.dumps(to_itf(r.path, model, r.violation)))
    trace = itf_py.trace_from_json(doc)         # an ITF reader of Informal Systems'
    assert len(trace.states) == len(r.path)
    back = replay(WorldModel(cfg, rows), doc["states"])
    assert back.departs == -1 and back.violation == r.violation


def test_replay_refuses_a_file_that_is_no_trace(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"hello": 1}))
    proc = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "replay", str(bad), "--preset", "tiny"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "neither a TLC trace" in proc.stderr and "Traceback" not in proc.stderr


@needs_tlc
@pytest.mark.slow
@pytest.mark.parametrize("preset", ["twogen", "settle", "small"])
def test_larger_worlds_agree(tmp_path, preset):
    for symmetry in (False, True):
        cfg = PRESETS[preset]
        e = _write(tmp_path, cfg, symmetry=symmetry)
        t = run_tlc(tmp_path, e.name)
        ours = check(WorldModel(cfg), symmetry=symmetry)
        assert t.result == ours.result == "ok" and t.distinct_states == ours.distinct_states, (preset, symmetry)
