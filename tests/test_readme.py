"""README.md is a door: short, its two commands first, and every command of its tour runs as written.

The tour's commands are run here (with their /tmp paths moved into the test's own folder); each must
exit 0.  The README's size is held too: what grows belongs in a guide under docs/guide/.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys

from groupspec.checkers.paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _tour() -> list[str]:
    block = README.split("## A five-minute tour", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_the_readme_is_a_door():
    assert len(README.encode()) < 8_000, "README.md has grown past a door: move the detail into docs/guide/"
    fences = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert fences[0].strip() == "bash .ci/setup && .venv/bin/groupspec check"
    assert fences[1].strip() == "bash .ci/setup && .venv/bin/python -m pytest -n 2 -q"
    for target in re.findall(r"\]\(([^)#]+)\)", README):     # every guide it points to exists
        assert (REPO / target).is_file(), target


def test_every_command_of_the_tour_runs(tmp_path):
    commands = _tour()
    assert len(commands) >= 8
    for line in commands:
        args = shlex.split(line.replace("/tmp/", f"{tmp_path}/"))
        assert args[0] == ".venv/bin/groupspec", line
        got = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", *args[1:]], cwd=REPO,
                             capture_output=True, text=True, timeout=600)
        assert got.returncode == 0, (line, got.stdout[-1500:], got.stderr[-1500:])
