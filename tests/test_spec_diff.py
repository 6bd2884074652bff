"""`groupspec diff REV [REV2]`: what a change does to the protocol, read by each revision's own code.

A repository of our own in a temporary folder (this tree's spec/, impl/ and checkers/ committed, then a
change committed over them), so the test needs no history of the real repository: the diff names the
row whose response changed with its before and after, the world whose state count changed, and nothing
else; a revision that is not one is refused in one line.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from groupspec.checkers.paths import REPO
from groupspec.checkers.review import spec_diff

from test_cli_input import refused, run_cli


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def changed_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    for top in ("spec", "impl", "checkers"):
        shutil.copytree(REPO / top, repo / top, ignore=shutil.ignore_patterns("__pycache__"))
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "before")
    table = repo / "spec" / "table.py"
    text = table.read_text()
    old = ('k.row("member id rejected", member_invalid, [reply("JoinGroup", **join_error(member_error))], None,\n'
           '          "GC.validateCurrentMember", response="FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID",')
    assert text.count(old) == 1      # JoinGroup's row for a member id the group does not hold
    table.write_text(text.replace(old, old.replace('response="FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID"',
                                                   'response="UNKNOWN_MEMBER_ID, whoever asks"')))
    presets = repo / "checkers" / "world" / "presets.py"
    text = presets.read_text()
    old = '"tiny": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1,'
    assert text.count(old) == 1
    presets.write_text(text.replace(old, '"tiny": WorldConfig(clients=2, topics=1, partitions=2, max_generation=2,'))
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "after")
    return repo


def test_a_changed_response_and_a_changed_world_are_all_the_diff_says(changed_repo, monkeypatch):
    monkeypatch.setattr(spec_diff, "REPO", changed_repo)
    d = spec_diff.diff("HEAD~1", "HEAD", ("tiny", "hung"))
    # the one row written there, in each state it is collected for
    assert d["rows_changed"] and all(r["name"].startswith("JoinGroup: member id rejected (") for r in d["rows_changed"])
    for r in d["rows_changed"]:
        assert r["changed"] == {"response": {"before": "FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID",
                                             "after": "UNKNOWN_MEMBER_ID, whoever asks"}}
    assert not (d["rows_added"] or d["rows_removed"] or d["invariants_added"] or d["invariants_removed"])
    [w] = d["worlds"]
    assert w["preset"] == "tiny" and w["before"]["result"] == w["after"]["result"] == "ok"
    assert w["after"]["states"] > w["before"]["states"]
    assert d["worlds_same"] == ["hung"]
    md = spec_diff.markdown(d)
    assert "### Rows changed" in md and "| response | FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID | UNKNOWN_MEMBER_ID, " \
                                         "whoever asks |" in md
    assert "| tiny | ok, 375 states | ok, " in md and "Unchanged worlds: hung." in md


def test_the_same_revision_twice_is_no_change(changed_repo, monkeypatch):
    monkeypatch.setattr(spec_diff, "REPO", changed_repo)
    d = spec_diff.diff("HEAD", "HEAD", ())
    assert "Nothing: the same rows" in spec_diff.markdown(d)


def test_a_revision_that_is_not_one_is_refused(monkeypatch, capsys):
    says = refused(monkeypatch, capsys, "diff", "no-such-revision-here", "--presets", "")
    assert "'no-such-revision-here' is not a commit of" in says and "git log --oneline" in says
    says = refused(monkeypatch, capsys, "diff", "HEAD", "--presets", "tiny,nope")
    assert "--presets: no preset nope" in says
