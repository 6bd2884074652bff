"""`groupspec rows`: what Kafka does for a request or event in a state, answered from the table.

The question it is for, asked as a reader would, and what a reader needs of the answer: the row's full
name, its condition and effect in Kafka's names (no internal parameter or scratch names), the response,
a link into Kafka's source, and a line of spec/ that really writes the row.
"""
from __future__ import annotations

import json
import re

from groupspec.checkers.paths import REPO

from test_cli_input import refused, run_cli


def _rows(monkeypatch, capsys, *args):
    code, stdout, _ = run_cli(monkeypatch, capsys, "rows", *args, "--json")
    return code, json.loads(stdout)["rows"] if stdout.strip() else []


def test_an_unknown_member_joining_a_stable_group_is_answered_by_its_row(monkeypatch, capsys):
    code, rows = _rows(monkeypatch, capsys, "--trigger", "joingroup", "--state", "stable", "--grep", "not a member")
    assert code == 0
    assert [r["name"] for r in rows] == ["JoinGroup: member id rejected (Stable)"]
    r = rows[0]
    assert "UNKNOWN_MEMBER_ID" in r["response"] and "UNKNOWN_MEMBER_ID" in r["effect"]
    assert r["kafka"][0]["url"].startswith("https://github.com/apache/kafka/blob/3.9.0/")
    assert "GroupCoordinator.scala" in r["kafka"][0]["url"]


def test_every_rows_line_in_spec_is_where_the_row_is_written(monkeypatch, capsys):
    code, rows = _rows(monkeypatch, capsys)
    assert code == 0 and len(rows) > 150
    for r in rows:
        path, line = r["spec"].rsplit(":", 1)
        assert path.startswith("spec/"), r["spec"]
        written = (REPO / path).read_text().splitlines()[int(line) - 1]
        # the call that makes the row: Row(...), or a chain's .row(...) / .last(...)
        assert re.search(r"(\.row|\.last|\bRow)\(", written), (r["name"], r["spec"], written)


def test_the_answer_reads_in_kafkas_names(monkeypatch, capsys):
    _, rows = _rows(monkeypatch, capsys)
    for r in rows:
        for field in ("condition", "effect", "response"):
            assert not re.search(r"\bp\.\w|scratch_", r[field]), (r["name"], field, r[field])


def test_the_text_output_names_the_row_and_links_whole(monkeypatch, capsys):
    code, stdout, _ = run_cli(monkeypatch, capsys, "rows", "--trigger", "Heartbeat", "--state", "Stable", "--grep",
                              "fenced")
    assert code == 0
    assert "Heartbeat: " in stdout and "answers" in stdout and "spec/" in stdout
    links = [ln for ln in stdout.splitlines() if ln.startswith("link")]
    assert links and all(re.fullmatch(r"link\s+https://github\.com/apache/kafka/blob/3\.9\.0/\S+", ln) for ln in links)


def test_no_matching_row_is_said_and_exits_1(monkeypatch, capsys):
    code, stdout, stderr = run_cli(monkeypatch, capsys, "rows", "--trigger", "SyncGroup", "--grep",
                                   "no such words anywhere")
    assert code == 1 and "no row matches" in stderr and "leave out --grep" in stderr


def test_bad_names_are_refused_in_one_line(monkeypatch, capsys):
    for args, says in ((["--trigger", "JoinGroupX"], "--trigger 'JoinGroupX': no such name in the table; use one of"),
                       (["--state", "Rebalancing"], "--state 'Rebalancing': no such name in the table; use one of"),
                       (["--grep", "  "], "--grep is empty")):
        assert says in refused(monkeypatch, capsys, "rows", *args)
