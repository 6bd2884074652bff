"""Mutation testing of the checker: equivalence is proved on every reachable firing, and the
proof agrees with a full search; a mutant no world reaches is not covered, never equivalent."""
from __future__ import annotations

import random
from functools import partial

import pytest

from groupspec.checkers.search import mutate as M
from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.state_space import WorldModel
from groupspec.checkers.world.presets import PRESETS

TINY = PRESETS["tiny"]


@pytest.fixture(scope="module")
def tiny_ref():
    ref = M.reference("tiny", partial(WorldModel, TINY), liveness=True)
    M._REFS["tiny"] = ref
    yield ref
    M._REFS.pop("tiny", None)


def _find(row_prefix: str, operator: str, detail: str = ""):
    for m, i, row in M.mutants():
        if m.row.startswith(row_prefix) and m.operator == operator and detail in m.detail:
            return m, i, row
    raise AssertionError(f"no {operator} mutant of {row_prefix!r} with {detail!r}")


def test_a_mutant_of_a_request_the_world_never_sends_is_not_covered_and_goes_to_the_scenarios(tiny_ref):
    m, i, row = _find("DescribeGroup", "swap-error")
    assert M.first_difference(tiny_ref, i, row) == (None, False, False)
    r = M.run_one((m.index, ["tiny"]))
    # untested by the world, not equivalent: the conformance scenarios, which send DescribeGroups, catch it
    assert r["outcome"] == "killed" and r["checker"] == "scenarios" and r["killed_by"].startswith("scenario: "), r
    assert "DescribeGroups" in r["not_covered"]


def test_a_mutant_no_world_reaches_and_nothing_concrete_catches_is_not_covered(tiny_ref, monkeypatch):
    m, i, row = _find("DescribeGroup", "swap-error")
    monkeypatch.setattr(M, "_scenarios_catch", lambda rows: ("", False))
    monkeypatch.setattr("groupspec.checkers.conform.mutants.harness_kills", lambda rows: None)
    r = M.run_one((m.index, ["tiny"]))
    assert r["outcome"] == "not covered" and not r["equivalent"] and "DescribeGroups" in r["not_covered"]
    assert M.summary([r])["kill_rate"] == 0.0


def test_a_mutant_that_changes_behaviour_is_searched_and_killed(tiny_ref):
    m, i, row = _find("StoreGroupDone: assignment stored", "redirect", "stay")
    diff, fires, new = M.first_difference(tiny_ref, i, row)
    assert fires and new and diff and "state" in diff
    r = M.run_one((m.index, ["tiny"]))
    assert r["outcome"] == "killed" and r["killed_by"] and r["counterexample_length"] > 0


def test_proved_equivalence_agrees_with_a_full_search(tiny_ref):
    """Mutants proved equivalent whose row does fire: the full search finds exactly the table's
    reachable states (the proof is by induction over the reachable firings; this holds it to
    the search it stands for)."""
    firing = []
    for m, i, row in M.mutants():
        diff, fires, _ = M.first_difference(tiny_ref, i, row)
        if diff is None and fires:
            firing.append((i, row))
    assert len(firing) > 20
    for i, row in random.Random(3).sample(firing, 6):
        rows = list(M.ROWS)
        rows[i] = row
        res = check(WorldModel(TINY, rows))
        assert res.result == "ok" and res.distinct_states == tiny_ref.states


def test_a_mutant_that_differs_is_never_reported_equivalent(tiny_ref):
    """Every mutant the search kills differs from the table on some reachable firing."""
    picked = random.Random(5).sample(M.mutants(), 40)
    for m, i, row in picked:
        diff, _, _ = M.first_difference(tiny_ref, i, row)
        if diff is not None:
            continue
        rows = list(M.ROWS)
        rows[i] = row
        res = check(WorldModel(TINY, rows))
        assert res.result == "ok" and res.distinct_states == tiny_ref.states, m


def test_a_mutant_that_only_removes_behaviour_is_recognised(tiny_ref):
    """A mutant whose outcomes are always some of the table's (here: the leader choice at join
    completion narrowed) reaches only states the table reaches."""
    found = None
    for m, i, row in M.mutants():
        diff, fires, new = M.first_difference(tiny_ref, i, row)
        if diff is not None and not new:
            found = (i, row)
            break
    assert found, "no behaviour-removing mutant in the tiny world"
    i, row = found
    rows = list(M.ROWS)
    rows[i] = row
    res = check(WorldModel(TINY, rows))
    assert res.distinct_states <= tiny_ref.states


def test_scenarios_catch_a_wrong_error_code():
    m, i, row = _find("Heartbeat: during Stable", "swap-error")
    rows = list(M.ROWS)
    rows[i] = row
    assert M._scenarios_catch(rows)[0]
    assert M._scenarios_catch(list(M.ROWS)) == ("", False)


def test_every_reviewed_survivor_names_a_mutant():
    """The hand-reviewed reasons stay attached to mutants that exist (a renamed row would leave
    its survivor unexplained again, which is what we want to see)."""
    known = {(m.row, m.operator, m.detail) for m, _, _ in M.mutants()}
    assert set(M.REVIEWED) <= known


def test_show_writes_one_mutants_counterexample_in_kafkas_terms(monkeypatch, capsys, tmp_path):
    from test_cli_input import refused, run_cli
    index = next(m.index for m, _, _ in M.mutants()
                 if m.operator == "drop-effect" and m.row == "JoinGroup: pending member rejoins and starts a rebalance "
                 "(Empty)" and "`members`" in m.detail)
    code, stdout, _ = run_cli(monkeypatch, capsys, "mutate", "--show", str(index), "--preset", "tiny",
                              "--out", str(tmp_path / "ce"))
    assert code == 0 and f"mutant {index} (drop-effect" in stdout and "breaks leader-is-member" in stdout
    md = (tmp_path / "ce" / "counterexample.md").read_text()
    assert "breaks leader-is-member" in md and "JoinGroup: pending member rejoins and starts a rebalance (Empty)" in md
    assert (tmp_path / "ce" / "counterexample.itf.json").is_file()
    # a mutant no world of --preset kills has no counterexample: said, exit 1 (an invalid group id answered to
    # every JoinGroup is no safety violation: the tiny world then never forms a group)
    survivor = next(m.index for m, _, _ in M.mutants()
                    if m.operator == "drop-conjunct" and m.row == "JoinGroup: invalid group id")
    code, _, stderr = run_cli(monkeypatch, capsys, "mutate", "--show", str(survivor), "--preset", "tiny",
                              "--out", str(tmp_path / "none"))
    assert code == 1 and "breaks nothing in tiny: no counterexample to show" in stderr
    assert "--show must be a mutant's index" in refused(monkeypatch, capsys, "mutate", "--show", "-1", "--out",
                                                         str(tmp_path / "x"))
    assert "--show N and --out DIR go together" in refused(monkeypatch, capsys, "mutate", "--show", "3")


def _mutate_cli(*args):
    from typer.testing import CliRunner
    from groupspec.checkers.cli import app
    r = CliRunner().invoke(app, ["mutate", *args])
    assert "Traceback" not in r.stdout + r.stderr and (r.exception is None or isinstance(r.exception, SystemExit))
    return r


def test_a_previous_run_judged_again_counts_a_row_no_world_reaches_as_not_covered(tmp_path):
    import json
    m, _, _ = _find("DescribeGroup", "swap-error")
    old = {"index": m.index, "operator": m.operator, "row": m.row, "detail": m.detail, "outcome": "equivalent",
           "killed_by": "", "world": "", "counterexample_length": 0, "states": 0, "fires_in": [], "differs": "",
           "equivalent": "its row never fires"}      # what a run before the honest score said of it
    f = tmp_path / "run.json"
    f.write_text(json.dumps({"preset": "tiny", "results": [old]}))
    r = _mutate_cli("--rejudge", str(f), "--jobs", "1", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    got = doc["results"][0]
    assert got["outcome"] == "killed" and got["checker"] == "scenarios" and "DescribeGroups" in got["not_covered"]
    assert doc["equivalent"] == 0 and doc["kill_rate"] == 1.0


def test_a_previous_run_judged_again_keeps_what_z3_showed_equivalent(tmp_path):
    """Z3 judges a mutant before any world, so its result names no world its row fires in; judging the run
    again must not take that for a row no world reaches."""
    import json
    m, i, row = _find("ListGroups: listed", "drop-conjunct", "coordinator")
    r = M.run_one((m.index, []))
    assert r["outcome"] == "equivalent" and r["equivalent_by"] == "z3" and r["fires_in"] == []
    f = tmp_path / "run.json"
    f.write_text(json.dumps({"preset": "tiny", "results": [r]}))
    got = _mutate_cli("--rejudge", str(f), "--jobs", "1", "--json")
    assert got.exit_code == 0, got.stdout + got.stderr
    assert json.loads(got.stdout)["results"][0] == r


@pytest.mark.parametrize("text, says", [
    ("{", "not JSON"),
    ("[]", "not the output of `groupspec mutate --json`"),
    ('{"preset": "tiny", "results": [{"index": 99999999, "outcome": "killed"}]}', "not the output"),
    ('{"preset": "tiny", "results": [{"index": true, "outcome": "killed"}]}', "not the output"),
    # a result of another table: its index names another mutant now, which must not be judged in its place
    ('{"preset": "tiny", "results": [{"index": 0, "outcome": "killed", "operator": "redirect", "row": "gone", '
     '"detail": "x"}]}', "results are of mutants this table no longer has at their index"),
])
def test_judging_again_what_is_no_previous_run_is_one_line_and_exit_2(tmp_path, text, says):
    f = tmp_path / "run.json"
    f.write_text(text)
    r = _mutate_cli("--rejudge", str(f))
    assert r.exit_code == 2 and says in r.stdout + r.stderr, r.stdout + r.stderr


# -- equivalence shown by Z3, and what the worlds cannot tell goes to the concrete checkers --------------------

def test_z3_shows_equivalent_only_what_behaves_as_the_table():
    from groupspec.checkers.search.equivalence import shown_equivalent
    m, i, row = _find("StoreGroupDone: assignment stored", "redirect", "stay")
    assert shown_equivalent(i, M.ROWS[i]).startswith("Z3: ")           # the row itself
    assert shown_equivalent(i, row) == ""                               # stays where it moves
    m, i, row = _find("Heartbeat: during Stable", "swap-error")
    assert shown_equivalent(i, row) == ""                               # another error
    # an earlier row answers while the coordinator is loading: the later row's check of it is redundant
    m, i, row = _find("ListGroups: listed", "drop-conjunct", "coordinator")
    assert shown_equivalent(i, row).startswith("Z3: ")


@pytest.mark.parametrize("sample, at_least", [(40, 5), pytest.param(200, 20, marks=pytest.mark.slow)])
def test_what_z3_shows_equivalent_the_tiny_world_cannot_tell_from_the_table(tiny_ref, sample, at_least):
    """Z3's reading of the rows agrees with the engine's: a mutant it shows equivalent gives the table's
    outcome on every firing the tiny world reaches.  (A query is about half a second, most of them on mutants
    Z3 does not show equivalent: CI asks 40 mutants, 6 of them shown; the slow run asks 200.)"""
    from groupspec.checkers.search.equivalence import shown_equivalent
    shown = [(m, i, row) for m, i, row in random.Random(11).sample(M.mutants(), sample) if shown_equivalent(i, row)]
    assert len(shown) >= at_least
    for m, i, row in shown:
        assert M.first_difference(tiny_ref, i, row)[0] is None, m


def test_a_mutant_z3_shows_equivalent_is_not_searched(tiny_ref, monkeypatch):
    m, i, row = _find("ListGroups: listed", "drop-conjunct", "coordinator")
    monkeypatch.setattr(M, "first_difference", lambda *a: pytest.fail("searched"))
    r = M.run_one((m.index, ["tiny"]))
    assert r["outcome"] == "equivalent" and r["equivalent_by"] == "z3" and r["equivalent"].startswith("Z3: ")
    assert M.summary([r])["equivalent_by"] == {"z3": 1, "state graphs": 0} and M.summary([r])["kill_rate"] is None


def test_identical_state_graphs_go_to_the_concrete_checkers_before_counting_as_equivalent(tiny_ref, monkeypatch):
    """The worlds' abstract time cannot tell a duration apart: a mutant the worlds cannot tell from the table
    is equivalent only once the scenarios and the harness cannot either."""
    from groupspec.checkers.search.equivalence import shown_equivalent
    for m, i, row in M.mutants():
        diff, fires, _ = M.first_difference(tiny_ref, i, row)
        if diff is None and fires and not shown_equivalent(i, row):
            break
    else:
        raise AssertionError("no mutant the tiny world cannot tell and Z3 does not show equivalent")
    judged = []
    monkeypatch.setattr(M, "judge_concretely", lambda out, rows: judged.append(out) or out)
    r = M.run_one((m.index, ["tiny"]))
    assert judged and r["outcome"] == "equivalent" and r["equivalent_by"] == "state graphs"


def test_a_generated_scenario_kill_is_counted_as_the_generated_suites():
    m, i, row = _find("SyncGroup: during PreparingRebalance", "swap-error")
    rows = list(M.ROWS)
    rows[i] = row
    r = M.judge_concretely({"outcome": "survived"}, rows)
    assert r["outcome"] == "killed" and r["checker"] == "generated scenarios", r
    assert "tests/scenarios/generated/" in r["killed_by"]
    assert M.summary([r])["killed_by_checker"]["generated scenarios"] == 1


def test_lint_kills_a_mutant_that_breaks_a_structural_invariant_or_a_timers_condition():
    from groupspec.checkers.search.equivalence import lint_breaks
    m, i, row = _find("JoinTimer: the group is Dead", "drop-effect", "`awaiting_sync`")
    assert lint_breaks(i, row) == "lint: the mutated row breaks awaiting-sync-only-completing (a structural invariant)"
    assert lint_breaks(i, M.ROWS[i]) == ""
    r = M.run_one((m.index, []))
    assert r["outcome"] == "killed" and r["checker"] == "lint" and M.summary([r])["killed_by_checker"]["lint"] == 1
    # the session timers the row re-arms, left out of hb_armed: armed where their condition fails
    m, i, row = _find("LeaveMember: member leaves during CompletingRebalance", "drop-effect", "`hb_armed` (step 6)")
    assert lint_breaks(i, row).startswith("lint: the mutated row leaves armed a timer its condition does not allow")

