"""Counterexamples in Kafka's terms from the checkers that work on concrete histories (issue 26, item 4):
a trace's violation (`traces check --group G --out DIR`) and a conformance divergence (`conform
--walkthrough DIR`), rendered by review/walkthrough.py as every other counterexample is."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groupspec.checkers.cli import app
from groupspec.checkers.review import walkthrough as W

sys.path.insert(0, str(Path(__file__).parent))

INTERNAL = re.compile(r"#map|#set|scratch_|rq_member|p\.fresh|\{'bind'")


def invoke(*args: str):
    r = CliRunner().invoke(app, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stdout + r.stderr
    return r


def steps_of(md: str) -> list[str]:
    return re.findall(r"^## Step \d+: .*$", md, re.M)


def group_table(md: str, step_heading: str) -> dict[str, list[str]]:
    """The rows of the group's table under a step: label -> its cells."""
    part = md.split(step_heading, 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in part.splitlines()
            if line.startswith("| ") and not line.startswith("| the group") and not line.startswith("| client")]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows}


# -- rendering --------------------------------------------------------------------------------------

def test_values_read_as_a_reviewer_reads_them():
    assert W.text(None) == "—" and W.text("") == "—" and W.text([]) == "∅"
    assert W.text({"#set": ["m0", "m1"]}) == "{m0, m1}" and W.text(["a"]) == "{a}"
    assert W.text({"m0": ["t-0"], "m1": []}) == "m0 → {t-0}"           # an entry holding nothing is left out
    assert W.text({"#map": [["c0", "joining"], ["c1", ""]]}) == "c0 → joining"
    assert W.snapshot_view(None) == {W.STATE: "not held by this coordinator"}


def test_what_a_step_changed_is_marked_and_a_second_side_is_compared():
    view = W.mark_changes([{"step": 0, "action": "start", "rows": [], "group": {"state": "Empty", "generation": "0"}},
                           {"step": 1, "action": "join", "rows": [], "group": {"state": "PreparingRebalance",
                                                                               "generation": "0"},
                            "beside": {"title": "mine", "group": {"state": "Stable", "generation": "0"}}}])
    assert view[0]["group_changed"] == [] and view[1]["group_changed"] == ["state"]
    md = W.to_markdown(view, "T", "what", "How.", "breaks it")
    table = group_table(md, "## Step 1: join — breaks it")
    assert table["state ≠"] == ["**PreparingRebalance**", "Stable"] and table["generation"] == ["0", "0"]
    assert "**What it violates:** what" in md


# -- a trace's violation -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def buggy_trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("trace")
    r = invoke("simulate", "--out", str(d / "t.jsonl"), "--groups", "20", "--events-per-group", "60", "--seed", "3",
               "--inject-bug", "sync-in-preparing", "--fraction", "0.5")
    assert r.exit_code == 0, r.stdout + r.stderr
    bugs = [json.loads(x) for x in (d / "t.jsonl.bugs.jsonl").read_text().splitlines()]
    fired = [b["group"] for b in bugs if b["fired"]]
    assert fired, bugs
    return d / "t.jsonl", fired[0], bugs


def test_a_trace_violation_is_walked_through_up_to_the_record_the_spec_does_not_do(buggy_trace, tmp_path):
    trace, group, _ = buggy_trace
    r = invoke("traces", "check", str(trace), "--group", group, "--out", str(tmp_path / "w"))
    assert r.exit_code == 1, r.stdout + r.stderr
    md = (tmp_path / "w" / "walkthrough.md").read_text()
    html = (tmp_path / "w" / "walkthrough.html").read_text()
    heads = steps_of(md)
    assert heads[-1].endswith("— no behaviour of the spec does this") and "SyncGroup from" in heads[-1], heads[-1]
    assert heads[0].startswith("## Step 1: JoinGroup from a new member")
    # the breaking step shows the group as the spec had it: a SyncGroup answered NONE in PreparingRebalance
    last = group_table(md, heads[-1])
    assert last["state"] == ["PreparingRebalance"], last
    assert "REBALANCE_IN_PROGRESS" in md.split(heads[-1], 1)[1]          # what the spec answers instead
    assert "`spec/table.py:" in md and "GroupCoordinator.scala" in md        # rows fired, with their sources
    assert not INTERNAL.search(md)
    assert "<table>" in html and "**" not in html and "<strong>" in html


def test_an_ok_group_is_walked_through_with_its_verdict(buggy_trace, tmp_path):
    trace, _, bugs = buggy_trace
    quiet = next(b["group"] for b in bugs if not b["fired"])      # its bug never fired: the trace is Kafka's
    r = invoke("traces", "check", str(trace), "--group", quiet, "--out", str(tmp_path / "w"))
    assert r.exit_code == 0, r.stdout + r.stderr
    md = (tmp_path / "w" / "walkthrough.md").read_text()
    assert md.startswith(f"# Trace of group {quiet}: ok") and "**Verdict:**" in md and "breaks" not in md
    assert len(steps_of(md)) > 5


# -- a conformance divergence ------------------------------------------------------------------------

def test_a_divergence_is_walked_through_with_the_spec_beside_the_implementation(tmp_path):
    r = invoke("conform", "--adapter", "broken_coordinators:leader_not_reelected", "--seed", "1",
               "--out", str(tmp_path / "new" / "s.yaml"), "--walkthrough", str(tmp_path / "w"))
    assert r.exit_code == 1, r.stdout + r.stderr
    assert (tmp_path / "new" / "s.yaml").read_text().startswith("scenario:")   # its folder made, as promised
    md = (tmp_path / "w" / "walkthrough.md").read_text()
    heads = steps_of(md)
    assert heads[-1].endswith("— the implementation parts from the spec here")
    last = group_table(md, heads[-1])
    # the bug: the leader is gone, the implementation keeps it as leader; members named by the scenario's variables
    leader = last["leader ≠"][1]
    assert re.fullmatch(r"m\d+", leader) and leader not in last["members"][1], last
    assert all(k.endswith("≠") == (v[0].strip("*") != v[1]) for k, v in last.items())
    assert not INTERNAL.search(md), INTERNAL.search(md)
    assert "(the spec's" not in md and "| the group | the spec | broken_coordinators:leader_not_reelected |" in md


def test_a_scenario_replayed_with_a_walkthrough_that_agrees_says_so(tmp_path):
    files = sorted((Path(__file__).parent / "scenarios").rglob("*.yaml"))
    one = next(f for f in files if f.read_text().count("scenario:") == 1 and "coordinator:" not in f.read_text())
    r = invoke("conform", "--replay", str(one), "--walkthrough", str(tmp_path / "w"))
    assert r.exit_code == 0, r.stdout + r.stderr
    md = (tmp_path / "w" / "walkthrough.md").read_text()
    assert "agree on every step" in md and steps_of(md)


def test_a_walkthrough_of_a_replay_of_several_files_is_refused(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for f in (a, b):
        f.write_text("scenario: x\nsteps:\n  - {advance_ms: 1}\n")
    r = invoke("conform", "--replay", str(a), "--replay", str(b), "--walkthrough", str(tmp_path / "w"))
    assert r.exit_code == 2 and "give one scenario file" in r.stdout + r.stderr


# -- a mutant the table itself catches ---------------------------------------------------------------

def test_showing_a_mutant_that_leaves_a_gap_in_the_table_says_so(tmp_path):
    from groupspec.checkers.search.mutate import mutants
    from groupspec.spec.engine import EngineError
    from groupspec.checkers.search.explicit import check
    from groupspec.checkers.world.presets import PRESETS
    from groupspec.checkers.world.state_space import WorldModel
    from groupspec.spec.table import ROWS
    # mutant 12 negates the state test of 'JoinGroup: known member id but no such group': no row is left
    # for that JoinGroup in Absent (the search stops there; mutate counts it killed by the table)
    m, i, row = mutants()[12]
    rows = list(ROWS)
    rows[i] = row
    with pytest.raises(EngineError):
        check(WorldModel(PRESETS["faults"], rows))      # the first of mutate's worlds where it shows
    r = invoke("mutate", "--show", "12", "--out", str(tmp_path / "m"))
    assert r.exit_code == 1 and "leaves a gap in the table" in r.stdout + r.stderr, r.stdout + r.stderr
