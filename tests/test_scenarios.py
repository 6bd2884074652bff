"""The scenario suite passes on both targets; malformed scenarios are reported, not crashed on."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groupspec.checkers.scenarios.model import ScenarioError, load_file
from groupspec.checkers.scenarios.runner import run_scenario

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "scenarios"
SUITES = [ROOT / "tests" / "scenarios"] + ([SHARED] if SHARED.is_dir() else [])
FILES = sorted(f for d in SUITES for f in d.rglob("*.yaml"))
CLI = [sys.executable, "-m", "groupspec.checkers.cli"]


@pytest.mark.parametrize("target", ["spec", "runtime"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_scenario_file_passes(path, target):
    for sc in load_file(path):
        r = run_scenario(sc, target)
        assert r.result == "pass", f"{sc.name}: step {r.step}: {r.message}: expected {r.expected!r}, got {r.got!r}"


def test_every_row_is_reached_by_some_scenario():
    from groupspec.spec.table import ROWS
    fired = set()
    for path in FILES:
        for sc in load_file(path):
            fired |= run_scenario(sc, "spec").fired
    missing = [r.name for r in ROWS if r.name not in fired]
    assert not missing, f"{len(missing)} rows no scenario reaches: {missing}"


def run_cli(*args, cwd=ROOT):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd)


BAD = {
    "unknown-api.yaml": ("scenario: s\nsteps:\n  - send: JoinGroupz\n    id: a\n    group: g\n", "unknown API"),
    "unknown-error.yaml": ("scenario: s\nsteps:\n  - send: Heartbeat\n    id: a\n    group: g\n"
                           "  - expect: a\n    error: NOT_AN_ERROR\n", "unknown error name"),
    "unbound.yaml": ("scenario: s\nsteps:\n  - send: Heartbeat\n    id: a\n    group: g\n    member: $nobody\n",
                     "$nobody"),
    "not-yaml.yaml": ("scenario: s\nsteps: [\n", "not valid YAML"),
    "no-id.yaml": ("scenario: s\nsteps:\n  - send: Heartbeat\n    group: g\n", "needs an `id`"),
    "two-kinds.yaml": ("scenario: s\nsteps:\n  - advance_ms: 5\n    snapshot: g\n", "exactly one of"),
    "var-of-wrong-type.yaml": ("scenario: s\nsteps:\n  - send: JoinGroup\n    id: a\n    group: g\n"
                               "    member: ''\n    client: c\n    session_timeout_ms: 10000\n"
                               "    protocol_type: consumer\n    protocols: [range]\n"
                               "  - expect: a\n    member: {bind: m}\n"
                               "  - send: Heartbeat\n    id: h\n    group: g\n    member: $m\n    generation: $m\n",
                               "'generation' must be an integer"),
    "bad-partition.yaml": ("scenario: s\nsteps:\n  - send: OffsetCommit\n    id: c\n    group: g\n"
                           "    generation: -1\n    offsets: {nodash: 3}\n", "partition (topic-N)"),
    "bad-config.yaml": ("scenario: s\nconfig:\n  group.max.sise: 3\nsteps:\n  - advance_ms: 1\n",
                        "unknown config key"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_malformed_scenarios_exit_2_with_one_line(tmp_path, name):
    text, needle = BAD[name]
    f = tmp_path / name
    f.write_text(text)
    r = run_cli("scenario", "run", str(f))
    assert r.returncode == 2, r.stdout + r.stderr
    assert needle in r.stdout
    assert "Traceback" not in r.stdout + r.stderr
    assert str(f) in r.stdout


def test_unreadable_path_exits_2(tmp_path):
    r = run_cli("scenario", "run", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr


def test_failing_scenario_exits_1_and_json_and_junit(tmp_path):
    f = tmp_path / "fails.yaml"
    f.write_text("scenario: heartbeat-to-nothing\nsteps:\n  - send: Heartbeat\n    id: h\n    group: g\n"
                 "    member: m\n    generation: 1\n  - expect: h\n    error: NONE\n")
    junit = tmp_path / "out.xml"
    r = run_cli("scenario", "run", str(f), "--target", "runtime", "--json", "--junit", str(junit))
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["target"] == "runtime" and doc["failed"] == 1 and doc["passed"] == 0
    s = doc["scenarios"][0]
    assert s["result"] == "fail" and s["step"] == 2 and "UNKNOWN_MEMBER_ID" in s["got"]
    assert "<failure" in junit.read_text()


def test_scenario_error_names_file_and_step(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("scenario: s\nsteps:\n  - expect: nothing\n")
    with pytest.raises(ScenarioError) as e:
        load_file(f)
    assert e.value.step == 1 and "x.yaml" in str(e.value)


def _table_with(row_name: str, operator: str):
    """The table with one row replaced by one of its mutants, as an engine the runner can fire."""
    from groupspec.checkers.search.mutate import mutants
    from groupspec.spec.engine import Engine
    from groupspec.spec.table import ROWS
    for m, i, row in mutants():
        if m.row == row_name and m.operator == operator:
            rows = list(ROWS)
            rows[i] = row
            return Engine(rows)
    raise AssertionError(f"no {operator} mutant of {row_name!r}")


@pytest.mark.parametrize("target", ["spec", "runtime"])
def test_a_table_that_breaks_an_invariant_or_leaves_a_gap_fails_the_scenario_at_that_step(target):
    sc = load_file(ROOT / "tests" / "scenarios" / "kafka" / "coordinator.yaml")[0]
    assert sc.name == "kafka-requests-while-loading" and run_scenario(sc, target).result == "pass"
    # a SyncGroup answered NONE while loading hands out an assignment outside Stable
    r = run_scenario(sc, target, _table_with("SyncGroup: coordinator loading", "swap-error"))
    assert (r.result, r.step, r.message) == ("fail", 6, "InvariantViolation")
    assert "assignment-only-when-stable" in r.got
    # a ListGroups row whose guard is negated leaves the loading coordinator with no row
    r = run_scenario(sc, target, _table_with("ListGroups: coordinator loading", "flip-compare"))
    assert (r.result, r.step, r.message) == ("fail", 14, "EngineError")
    assert "no row of ListGroups applies" in r.got


# -- the suite generated from the closed world (`groupspec scenario generate`) ------------------------------

GENERATED = ROOT / "tests" / "scenarios" / "generated"


def _ids_are_variables(v, key=""):
    """No expectation or request names a member by one side's literal id: only `$variables` and binds."""
    if isinstance(v, dict):
        return all(_ids_are_variables(x, k) for k, x in v.items()) and \
            all(not isinstance(k, str) or not re.match(r"c\d-", k) for k in v)
    if isinstance(v, list):
        return all(_ids_are_variables(x, key) for x in v)
    return not (key in ("member", "leader", "members") and isinstance(v, str) and v not in ("",) and
                not v.startswith("$"))


def test_generate_writes_a_passing_shortest_scenario_per_row_it_reaches(tmp_path):
    import yaml
    r = run_cli("scenario", "generate", "--preset", "tiny", "--out", str(tmp_path), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    files = sorted(tmp_path.glob("reach-*.yaml"))
    assert doc["generated"] == len(files) >= 15 and not doc["failed"]
    assert doc["generated"] + len(doc["unreached"]) == doc["rows"]
    unreached = (tmp_path / "UNREACHED.md").read_text()
    assert all(f"`{row}`" in unreached for row in doc["unreached"])
    for f in files:
        [sc] = load_file(f)
        row = yaml.safe_load(f.read_text())["about"].split("row '")[1].rsplit("'", 1)[0]
        for target in ("spec", "runtime"):
            got = run_scenario(sc, target)
            assert got.result == "pass" and row in got.fired, (f.name, target, got.message)
        assert _ids_are_variables(yaml.safe_load(f.read_text())["steps"]), f.name


def test_a_generated_scenario_fails_on_a_table_that_answers_its_row_otherwise():
    """The expectations are the spec's answers: the row's scenario tells a table whose row answers another
    error from the spec's."""
    import dataclasses

    from groupspec.spec.engine import Engine
    from groupspec.spec.table import ROWS
    from groupspec.checkers.search.mutate import mutants
    name = "SyncGroup: during PreparingRebalance"
    f = GENERATED / "reach-syncgroup-during-preparingrebalance.yaml"
    [sc] = load_file(f)
    [(m, i, row)] = [(m, i, row) for m, i, row in mutants() if m.row == name and m.operator == "swap-error"]
    rows = list(ROWS)
    rows[i] = row
    assert run_scenario(sc, "spec").result == "pass"
    assert run_scenario(sc, "spec", Engine(rows)).result == "fail", m


@pytest.mark.slow
def test_the_checked_in_generated_suite_is_what_generate_writes(tmp_path):
    """tests/scenarios/generated is regenerated when the table or the worlds change (about a minute)."""
    r = run_cli("scenario", "generate", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    want = {f.name: f.read_text() for f in tmp_path.iterdir()}
    have = {f.name: f.read_text() for f in GENERATED.iterdir()}
    assert sorted(want) == sorted(have)
    stale = [n for n in want if want[n] != have[n]]
    assert not stale, f"run `groupspec scenario generate --out tests/scenarios/generated`: {stale}"


def test_generate_exits_1_when_the_runtime_answers_a_translated_step_unlike_the_spec(tmp_path, monkeypatch):
    """The lockstep that writes a scenario holds the runtime to the spec: a difference is a finding (exit 1, the
    row named), never a traceback and never a scenario."""
    from typer.testing import CliRunner

    from groupspec.checkers.cli import app
    from groupspec.checkers.scenarios import generate as G

    def differs(*a, **k):
        raise G.RuntimeDiffers("the runtime and the spec differ on its translated steps: response at step 2")
    monkeypatch.setattr(G, "_translate", differs)
    r = CliRunner().invoke(app, ["scenario", "generate", "--preset", "tiny", "--out", str(tmp_path)])
    assert r.exit_code == 1, r.output
    assert "failed its check" in r.output and "response at step 2" in r.output and "Traceback" not in r.output
    assert not list(tmp_path.glob("reach-*.yaml"))
