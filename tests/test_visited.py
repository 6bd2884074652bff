"""The visited set on disk (checkers/search/visited.py): the same search as in memory, and nothing a
killed run left behind is trusted."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from functools import partial

import pytest

from groupspec.checkers.search.explicit import check, check_parallel
from groupspec.checkers.search.visited import SpillingVisited
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel

from test_cli_input import refused, run_cli
from test_explicit import _with

TINY = dataclasses.replace(PRESETS["small"], crash=False, expiry=False)


def _same_search(a, b) -> None:
    assert (a.result, a.violation, a.distinct_states, a.generated, a.depth, a.unreduced_states, a.levels) == \
           (b.result, b.violation, b.distinct_states, b.generated, b.depth, b.unreduced_states, b.levels)
    assert _shown(a.path) == _shown(b.path) and a.coverage == b.coverage


def _shown(path: list) -> list:
    """A path as it reads (steps are compared by identity, and each search has its own)."""
    return [(None if step is None else (step.action, step.rows), state) for step, state in path]


@pytest.mark.parametrize("preset", ["tiny", "small", "twogen"])
def test_a_search_that_spills_is_the_search_in_memory(preset, tmp_path):
    in_memory = check(WorldModel(PRESETS[preset]))
    with SpillingVisited(tmp_path, limit=50) as seen:
        spilled = check(WorldModel(PRESETS[preset]), visited=seen)
        assert seen.spills >= in_memory.distinct_states // 50 and seen.merges > 0
        assert len(seen.runs) <= seen.spills.bit_length() + 1      # merged as it goes
    _same_search(spilled, in_memory)
    assert not any(tmp_path.iterdir())                              # closed: its files are gone


def test_a_counterexample_is_rebuilt_from_parent_links_on_disk(tmp_path):
    rows = _with("StoreGroupDone: assignment stored", target=None)
    in_memory = check(WorldModel(TINY, rows))
    with SpillingVisited(tmp_path, limit=7) as seen:
        spilled = check(WorldModel(TINY, rows), visited=seen)
        assert seen.spills > 0 and spilled.path[0][1] is not None
    assert in_memory.result == "violation"
    _same_search(spilled, in_memory)


@pytest.mark.parametrize("preset", ["small", "twogen"])
def test_parallel_workers_that_spill_search_as_one_process_does(preset, tmp_path):
    one = check(WorldModel(PRESETS[preset]))
    two = check_parallel(WorldModel(PRESETS[preset]), workers=2, visited=partial(SpillingVisited, tmp_path, limit=30))
    assert (two.result, two.distinct_states, two.generated, two.depth, two.levels, two.unreduced_states) == \
           (one.result, one.distinct_states, one.generated, one.depth, one.levels, one.unreduced_states)
    assert not any(tmp_path.iterdir())                              # each worker removed its files


def test_parallel_workers_rebuild_a_counterexample_from_links_on_disk(tmp_path):
    rows = _with("StoreGroupDone: assignment stored", target=None)
    one = check_parallel(WorldModel(TINY, rows), workers=2)
    two = check_parallel(WorldModel(TINY, rows), workers=2, visited=partial(SpillingVisited, tmp_path, limit=5))
    assert one.result == "violation" and len(one.path) > 5
    _same_search(two, one)


def test_markers_other_than_parents_come_back_from_disk(tmp_path):
    sent = object()
    with SpillingVisited(tmp_path, limit=2, markers=(None, sent)) as seen:
        seen[1], seen[2], seen[3], seen[4] = None, sent, 1, 2
        assert seen.on_disk == 4 and seen[1] is None and seen[2] is sent and seen[3] == 1 and seen[4] == 2


def test_lookups_answer_from_memory_and_from_every_run(tmp_path):
    with SpillingVisited(tmp_path, limit=3) as seen:
        fps = [hash((i, "state")) for i in range(40)]
        for i, fp in enumerate(fps):
            seen[fp] = None if i == 0 else fps[i - 1]
        assert len(seen) == 40 and seen.on_disk == 39 and len(seen.mem) == 1
        assert all(fp in seen for fp in fps) and hash("another") not in seen
        assert seen[fps[0]] is None and seen[fps[17]] == fps[16] and seen.get(hash("another"), "no") == "no"
        with pytest.raises(KeyError):
            seen[hash("another")]


_KILLED = """
import os, signal, sys
from groupspec.checkers.search import visited
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel
from groupspec.checkers.search.explicit import check

class Dies(visited.SpillingVisited):
    def _spill(self):
        super()._spill()
        if self.spills == 5:        # killed with runs on disk, as a kill -9 or the OOM killer would
            os.kill(os.getpid(), signal.SIGKILL)

check(WorldModel(PRESETS["small"]), visited=Dies(sys.argv[1], limit=40))
"""


def test_a_killed_run_leaves_nothing_a_later_run_trusts(tmp_path):
    got = subprocess.run([sys.executable, "-c", _KILLED, str(tmp_path)], capture_output=True, text=True)
    assert got.returncode == -9, got.stderr
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and any(left[0].iterdir())               # the killed run's files
    expected = check(WorldModel(PRESETS["small"]))
    with SpillingVisited(tmp_path, limit=40) as seen:
        assert not left[0].exists()                                  # its process is gone: removed
        _same_search(check(WorldModel(PRESETS["small"]), visited=seen), expected)


def test_a_live_runs_files_are_left_alone(tmp_path):
    with SpillingVisited(tmp_path, limit=5) as first, SpillingVisited(tmp_path, limit=5) as second:
        assert first.dir.exists() and second.dir.exists() and first.dir != second.dir


def test_check_cli_spills_past_its_memory_and_agrees(monkeypatch, capsys, tmp_path):
    def run(*args):
        code, out, err = run_cli(monkeypatch, capsys, "check", "--preset", "tiny", "--json", *args)
        assert code in (0, None), err
        return json.loads(out)
    disk = run("--memory", "0.00001", "--visited-dir", str(tmp_path), "--workers", "1")   # 83 in memory
    disk2 = run("--memory", "0.00001", "--visited-dir", str(tmp_path))                   # 41 in each worker's
    memory = run("--workers", "1")
    assert disk["visited"]["disk"]["spills"] > 0 and memory["visited"] == "memory"
    assert disk2["visited"]["disk"] == {"in_memory_limit_per_worker": 41}
    for k in ("result", "distinct_states", "generated_states", "depth", "states_first_reached_per_depth"):
        assert disk[k] == memory[k] == disk2[k]
    assert not any(tmp_path.iterdir())


def test_check_cli_says_when_the_visited_folder_is_a_file(monkeypatch, capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    assert "not a folder" in refused(monkeypatch, capsys, "check", "--preset", "tiny", "--visited", "disk",
                                     "--visited-dir", str(f))
