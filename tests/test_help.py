"""`groupspec --help`: the commands grouped by what a user comes to do, each said in one line."""
from __future__ import annotations

import re

from test_cli_input import run_cli

PANELS = {"Verify the protocol": {"check", "prove", "lint", "mutate", "replay", "export"},
          "Read the protocol": {"rows", "docs", "diff"},
          "Test an implementation": {"conform", "scenario", "kafka", "serve"},
          "Validate logs": {"simulate", "traces"}}


def test_the_commands_are_grouped_by_use_and_each_is_said_in_a_line(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "160")
    code, out, _ = run_cli(monkeypatch, capsys, "--help")
    assert code == 0
    panels = re.split(r"╭─ ([^─]+?) ─", out)[1:]
    got = {}
    for title, body in zip(panels[::2], panels[1::2]):
        entries = re.findall(r"│ (\S+)\s{2,}(.*?)\s*│", body)
        got[title.strip()] = {name for name, _ in entries if name.isalpha()}
        # one line each: a wide terminal shows every command's summary without a continuation line
        lines = [ln for ln in body.splitlines() if ln.startswith("│")]
        assert all(re.match(r"│ \S", ln) for ln in lines), (title, [ln for ln in lines if not re.match(r"│ \S", ln)])
    assert {k: v for k, v in got.items() if k != "Options"} == PANELS
