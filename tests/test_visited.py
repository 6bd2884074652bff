"""The visited set on disk (checkers/search/visited.py): the same search as in memory, and nothing a
killed run left behind is trusted."""
from __future__ import annotations

import dataclasses
import json
import marshal
import subprocess
import sys
from functools import partial

import pytest

from groupspec.checkers.search.explicit import check, check_parallel
from groupspec.checkers.search.frontier import SpillingLevel
from groupspec.checkers.search.visited import SpillingVisited
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import MEMO_TABLES, WorldModel

from test_cli_input import refused, run_cli
from test_explicit import _with

TINY = dataclasses.replace(PRESETS["small"], crash=False, expiry=False)
# small (21,420 states) again beside tiny and twogen: 20-30 s a test, outside CI (twogen is the larger of the
# two that stay, and the killed run's test searches small)
SMALL_SLOW = pytest.param("small", marks=pytest.mark.slow)


def _same_search(a, b) -> None:
    assert (a.result, a.violation, a.distinct_states, a.generated, a.depth, a.unreduced_states, a.levels) == \
           (b.result, b.violation, b.distinct_states, b.generated, b.depth, b.unreduced_states, b.levels)
    assert _shown(a.path) == _shown(b.path) and a.coverage == b.coverage


def _shown(path: list) -> list:
    """A path as it reads (steps are compared by identity, and each search has its own)."""
    return [(None if step is None else (step.action, step.rows), state) for step, state in path]


@pytest.mark.parametrize("preset", ["tiny", SMALL_SLOW, "twogen"])
def test_a_search_that_spills_is_the_search_in_memory(preset, tmp_path):
    in_memory = check(WorldModel(PRESETS[preset]))
    with SpillingVisited(tmp_path, limit=50) as seen:
        spilled = check(WorldModel(PRESETS[preset]), visited=seen)
        assert seen.spills >= in_memory.distinct_states // 50 and seen.merges > 0
        assert len(seen.runs) <= seen.spills.bit_length() + 1      # merged as it goes
    _same_search(spilled, in_memory)
    assert not any(tmp_path.iterdir())                              # closed: its files are gone


@pytest.mark.parametrize("preset", ["tiny", SMALL_SLOW, "twogen"])
def test_a_search_whose_levels_spill_is_the_search_in_memory(preset, tmp_path):
    in_memory = check(WorldModel(PRESETS[preset]))
    with SpillingVisited(tmp_path, limit=50, level_limit=7) as seen:
        spilled = check(WorldModel(PRESETS[preset]), visited=seen)
        assert seen.level_spills >= sum(n // 7 for n in in_memory.levels) > 0
    _same_search(spilled, in_memory)
    assert not any(tmp_path.iterdir())


def test_a_level_reads_back_in_order_its_parts_shared_and_its_chunks_removed(tmp_path):
    g = tuple(range(30))                    # a group part many states share
    items = [((g, (i,)), hash(i)) for i in range(25)]
    level = SpillingLevel(tmp_path, 4, "level")
    for item in items:
        level.append(item)
    assert len(level) == 25 and len(list(tmp_path.glob("*.level"))) == 6 and len(level.mem) == 1
    back = iter(level)
    first = [next(back) for _ in range(4)]
    assert len(list(tmp_path.glob("*.level"))) == 5                 # a chunk is removed once read
    got = first + list(back)
    assert got == items and not any(tmp_path.iterdir())
    assert got[0][0][0] is got[3][0][0]                             # one G object again within a chunk


@pytest.mark.parametrize("damage", ["truncated", "overwritten"])
def test_a_damaged_level_is_an_error_naming_its_file_never_fewer_states(damage, tmp_path):
    level = SpillingLevel(tmp_path, 4, "level")
    for i in range(9):
        level.append(((i,), i))
    chunk = sorted(tmp_path.glob("*.level"))[1]
    data = chunk.read_bytes()
    chunk.write_bytes(data[:len(data) // 2] if damage == "truncated" else marshal.dumps({"not": "states"}))
    with pytest.raises(OSError) as e:
        list(level)
    said = "cannot be read back" if damage == "truncated" else "holds a dict, not the states written"
    assert e.value.filename == str(chunk) and said in e.value.strerror


def test_a_counterexample_is_rebuilt_from_parent_links_on_disk(tmp_path):
    rows = _with("StoreGroupDone: assignment stored", target=None)
    in_memory = check(WorldModel(TINY, rows))
    with SpillingVisited(tmp_path, limit=7) as seen:
        spilled = check(WorldModel(TINY, rows), visited=seen)
        assert seen.spills > 0 and spilled.path[0][1] is not None
    assert in_memory.result == "violation"
    _same_search(spilled, in_memory)


@pytest.mark.parametrize("preset", [SMALL_SLOW, "twogen"])
def test_parallel_workers_that_spill_search_as_one_process_does(preset, tmp_path):
    one = check(WorldModel(PRESETS[preset]))
    two = check_parallel(WorldModel(PRESETS[preset]), workers=2,
                         visited=partial(SpillingVisited, tmp_path, limit=30, level_limit=5))
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
from groupspec.checkers.world.state_space import MEMO_TABLES, WorldModel
from groupspec.checkers.search.explicit import check

class Dies(visited.SpillingVisited):
    def _spill(self):
        super()._spill()
        if self.spills == 5:        # killed with runs on disk, as a kill -9 or the OOM killer would
            os.kill(os.getpid(), signal.SIGKILL)

check(WorldModel(PRESETS["small"]), visited=Dies(sys.argv[1], limit=40, level_limit=10))
"""


def test_a_killed_run_leaves_nothing_a_later_run_trusts(tmp_path):
    got = subprocess.run([sys.executable, "-c", _KILLED, str(tmp_path)], capture_output=True, text=True)
    assert got.returncode == -9, got.stderr
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and any(left[0].glob("*.npy")) and any(left[0].glob("*.level"))   # the killed run's
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
    # 10 kB: a third for memo tables (at least 1,000 entries each), the rest half for 27 fingerprints,
    # half for levels of 6 states (three at once); split over two workers
    disk = run("--memory", "0.00001", "--visited-dir", str(tmp_path), "--workers", "1")
    disk2 = run("--memory", "0.00001", "--visited-dir", str(tmp_path))
    memory = run("--workers", "1")
    assert disk["visited"]["disk"]["spills"] > 0 and disk["visited"]["disk"]["level_spills"] > 0
    assert [disk["visited"]["disk"][k] for k in ("in_memory_limit", "level_limit", "memo_limit")] == [27, 6, 1000]
    assert memory["visited"] == "memory"
    assert disk2["visited"]["disk"] == {"in_memory_limit_per_worker": 13, "level_limit_per_worker": 3,
                                        "memo_limit": 1000}
    for k in ("result", "distinct_states", "generated_states", "depth", "states_first_reached_per_depth"):
        assert disk[k] == memory[k] == disk2[k]
    assert not any(tmp_path.iterdir())


def test_check_cli_says_when_the_visited_folder_is_a_file(monkeypatch, capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    assert "not a folder" in refused(monkeypatch, capsys, "check", "--preset", "tiny", "--visited", "disk",
                                     "--visited-dir", str(f))


def test_check_cli_says_which_level_file_was_damaged_and_what_to_do(monkeypatch, capsys, tmp_path):
    from groupspec.checkers.search import frontier
    spill = frontier.SpillingLevel._spill

    def damaging(self):             # as another process writing in the folder would
        spill(self)
        self.chunks[-1].write_bytes(b"\x00")
    monkeypatch.setattr(frontier.SpillingLevel, "_spill", damaging)
    said = refused(monkeypatch, capsys, "check", "--preset", "tiny", "--memory", "0.00001", "--workers", "1",
                   "--visited-dir", str(tmp_path))
    assert said.startswith(f"groupspec: --visited-dir {tmp_path}/groupspec-visited-")
    assert ".level: a spilled level cannot be read back" in said
    assert said.rstrip().endswith("run again, and let nothing else write in that folder while a search runs")


@pytest.mark.parametrize("preset", [SMALL_SLOW, "twogen"])
def test_memo_tables_dropped_as_they_fill_give_the_same_search(preset):
    model = WorldModel(PRESETS[preset], cache_limit=20)
    dropped = check(model)
    assert model.object_cache_limit == 20
    _same_search(dropped, check(WorldModel(PRESETS[preset])))
    memo = ("_moves", "_later", "_gids", "_gid_of_object", "_deliveries", "_events", "_client_memo", "_passed_rows",
            "_gcache", "_referenced", "_quiet", "_ginv", "_winv")
    assert len(memo) == MEMO_TABLES and all(len(getattr(model, t)) <= 21 for t in memo)   # dropped when full


def test_steps_folded_into_their_rows_as_they_pile_up_give_the_same_coverage(monkeypatch):
    from groupspec.checkers.search import explicit
    kept = check(WorldModel(PRESETS["small"]))
    monkeypatch.setattr(explicit, "_STEPS_KEPT", 10)
    folded = check(WorldModel(PRESETS["small"]))
    assert folded.coverage == kept.coverage and sum(kept.coverage.values()) > 10 * len(kept.coverage)
    _same_search(folded, kept)


@pytest.mark.parametrize("block", [1, 3, 64])
def test_runs_merge_block_by_block_into_one_sorted_run(block, monkeypatch, tmp_path):
    from groupspec.checkers.search import visited
    monkeypatch.setattr(visited, "MERGE_BLOCK", block)
    fps = [hash((i, "merged")) for i in range(300)]
    with SpillingVisited(tmp_path, limit=7) as seen:
        for i, fp in enumerate(fps):
            seen[fp] = None if i == 0 else fps[i - 1]
        assert seen.merges > 10
        for run, _ in seen.runs:
            assert list(run) == sorted(run)
        on_disk = [int(f) for run, _ in seen.runs for f in run]
        assert sorted(on_disk + list(seen.mem)) == sorted(fps)
        assert all(seen[fp] == (None if i == 0 else fps[i - 1]) for i, fp in enumerate(fps))
