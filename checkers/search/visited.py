"""A visited set that goes on when it no longer fits in memory: fingerprints spilled to disk.

The breadth-first search keeps, for every state it has seen, the state's 64-bit fingerprint and
its parent's (explicit.py: `seen[fp] = parent`, parent links rebuild a counterexample).  In a dict
that costs about 120 bytes a state.  `SpillingVisited` keeps the newest fingerprints in such a dict
and, once it holds `limit` of them, writes them out as a *run*: two int64 arrays, fingerprints
sorted and their parents beside them, 16 bytes a state, read back through the operating system's
page cache (numpy memmap).  Runs of about equal size are merged into one, as in TLC's DiskFPSet and
any log-structured merge tree, so a lookup that misses memory searches a logarithmic number of
sorted runs (a binary search each).

It answers what the search asks of a dict (`in`, `seen[fp] = parent`, `seen[fp]`, `get`, `len`), in
the same order, so a search with it visits the same states in the same order as one without: the
same counts, verdict and counterexample.  With a `level_limit` it also makes the search's
breadth-first levels (`new_level`), which spill to the same directory (frontier.py): with the
fingerprints on disk, the levels are what would outgrow memory next.

A run writes its files into a directory of its own, made afresh in the folder it is given and
removed when it is closed.  Nothing is ever read that this process did not write in this run, so a
killed run's leftovers cannot be trusted by a later one; a later run removes them (their process
is gone).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from functools import partial
from pathlib import Path

import numpy as np

from .frontier import LEVEL_BYTES_PER_STATE, SpillingLevel

# About what one entry of a Python dict from a 64-bit int to a 64-bit int costs (the entry, its
# share of the table, two int objects): measured on CPython 3.11, 100-130 bytes.
DICT_BYTES_PER_STATE = 120
_PREFIX = "groupspec-visited-"
# Values that are not a parent's fingerprint (None: a root's; the parallel search's marker of a
# state sent to the worker that owns it) are written as the lowest int64s.  A state whose parent's
# fingerprint is one of these would be read back as the marker: a chance of one in 2**63 per state,
# as small as two states sharing a fingerprint.
_LOWEST = -1 << 63
# Fingerprints of each run merged at a time: the merge's memory does not grow with the runs.
MERGE_BLOCK = 1 << 20


class SpillingVisited:
    """`seen` for the explicit search: fingerprint -> parent fingerprint or one of `markers` (None:
    a root), the newest `limit` in memory, the rest in sorted runs on disk under `folder`."""

    def __init__(self, folder: str | os.PathLike, limit: int, markers: tuple = (None,), level_limit: int | None = None):
        if limit < 1:
            raise ValueError(f"the in-memory part must hold at least one fingerprint, got {limit}")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        remove_leftovers(folder)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=folder))
        self.limit = limit
        self.code = {id(m): _LOWEST + i for i, m in enumerate(markers)}    # a marker -> the int written
        self.marker = {_LOWEST + i: m for i, m in enumerate(markers)}
        self.mem: dict = {}
        self.runs: list = []          # [(fingerprints, parents)], oldest and biggest first
        self.on_disk = 0
        self.spills = self.merges = 0
        self._names = 0
        self.level_limit = level_limit      # states of a breadth-first level kept in memory (None: all)
        self.levels = 0
        self.level_spills = 0

    def new_level(self):
        """An empty breadth-first level for the search that uses this set: a list, or with a
        `level_limit` one that spills to this set's folder too (frontier.py)."""
        if self.level_limit is None:
            return []
        self.levels += 1
        return SpillingLevel(self.dir, self.level_limit, f"level{self.levels:06d}", self._count_level_spill)

    def _count_level_spill(self) -> None:
        self.level_spills += 1

    # -- what the search asks of a dict ----------------------------------------------------------

    def __contains__(self, fp: int) -> bool:
        return fp in self.mem or self._find(fp) is not None

    def __setitem__(self, fp: int, parent: int | None) -> None:
        mem = self.mem
        mem[fp] = parent
        if len(mem) >= self.limit:
            self._spill()

    def __getitem__(self, fp: int):
        got = self.get(fp, KeyError)
        if got is KeyError:
            raise KeyError(fp)
        return got

    def get(self, fp: int, default=None):
        mem = self.mem
        if fp in mem:
            return mem[fp]
        found = self._find(fp)
        if found is None:
            return default
        parents, i = found
        p = int(parents[i])
        return self.marker.get(p, p)

    def __len__(self) -> int:
        return len(self.mem) + self.on_disk

    # -- the runs --------------------------------------------------------------------------------

    def _find(self, fp: int):
        """(the run's parents, fp's index there), or None."""
        for fps, parents in self.runs:
            i = fps.searchsorted(fp)
            if i < len(fps) and fps[i] == fp:
                return parents, i
        return None

    def _spill(self) -> None:
        mem = self.mem
        fps = np.fromiter(mem.keys(), dtype=np.int64, count=len(mem))
        code = self.code
        parents = np.fromiter((p if type(p) is int else code[id(p)] for p in mem.values()), dtype=np.int64,
                              count=len(mem))
        order = np.argsort(fps, kind="stable")
        self.runs.append(self._write(fps[order], parents[order]))
        self.on_disk += len(mem)
        mem.clear()
        self.spills += 1
        # merge while the newest run is at least half the one before: sizes stay geometric, so a
        # miss searches O(log n) runs and each fingerprint is rewritten O(log n) times
        while len(self.runs) > 1 and 2 * len(self.runs[-1][0]) >= len(self.runs[-2][0]):
            merged = self._merge(self.runs[-2], self.runs[-1])
            old = self.runs[-2:]
            self.runs[-2:] = [merged]
            for run in old:
                _remove(run)
            self.merges += 1

    def _write(self, fps: np.ndarray, parents: np.ndarray) -> tuple:
        fp_out, parent_out = self._files(len(fps))
        fp_out[:], parent_out[:] = fps, parents
        return self._done(fp_out, parent_out)

    def _merge(self, a: tuple, b: tuple) -> tuple:
        """Two sorted runs as one, written block by block: only `MERGE_BLOCK` fingerprints of each
        are in memory at once, however big the runs (a fingerprint is in one run only: no ties)."""
        (fa, pa), (fb, pb) = a, b
        fp_out, parent_out = self._files(len(fa) + len(fb))
        i = j = k = 0
        while i < len(fa) or j < len(fb):
            # a block of one run up to a pivot, and what of the other sorts below it: what is left of
            # either sorts above everything written
            i2, j2 = min(i + MERGE_BLOCK, len(fa)), len(fb)
            if i2 > i:
                j2 = j + int(fb[j:].searchsorted(fa[i2 - 1]))
            if j2 - j > MERGE_BLOCK or i2 == i:
                j2 = min(j + MERGE_BLOCK, len(fb))
                i2 = i + int(fa[i:].searchsorted(fb[j2 - 1]))
            fps = np.concatenate([fa[i:i2], fb[j:j2]])
            order = np.argsort(fps, kind="stable")
            n = len(fps)
            fp_out[k:k + n] = fps[order]
            parent_out[k:k + n] = np.concatenate([pa[i:i2], pb[j:j2]])[order]
            i, j, k = i2, j2, k + n
        return self._done(fp_out, parent_out)

    def _files(self, n: int) -> tuple:
        """Two new int64 files of `n` entries, mapped for writing: a run's fingerprints and parents."""
        self._names += 1
        return tuple(np.lib.format.open_memmap(self.dir / f"run{self._names:06d}.{kind}.npy", mode="w+",
                                               dtype=np.int64, shape=(n,)) for kind in ("fp", "parent"))

    def _done(self, *written) -> tuple:
        """The run just written, flushed and mapped again read-only."""
        out = []
        for arr in written:
            arr.flush()
            out.append(np.load(arr.filename, mmap_mode="r"))
        return tuple(out)

    def close(self) -> None:
        """Remove this run's files (the search is over: its result keeps no reference to them)."""
        self.runs = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _remove(run: tuple) -> None:
    for arr in run:
        os.unlink(arr.filename)     # a mapping still open keeps the pages until it is dropped


def remove_leftovers(folder: Path) -> None:
    """Remove the directories of earlier runs in `folder` whose process is gone (killed, crashed):
    they are never read, only in the way."""
    for d in folder.glob(f"{_PREFIX}*-*"):
        try:
            pid = int(d.name[len(_PREFIX):].split("-")[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # another user's process
        return True
    return True


def states_for(gigabytes: float) -> int:
    """How many fingerprints the in-memory part may hold within `gigabytes`."""
    return max(1, int(gigabytes * 1e9 / DICT_BYTES_PER_STATE))


def spilling(folder: str | os.PathLike, gigabytes: float, workers: int = 1):
    """What makes each search process's visited set within its share of `gigabytes`: half for the
    fingerprints in memory, half for the breadth-first levels.  A search holds up to three levels'
    worth of `level_limit` states at once: a chunk of the level it expands, that level's newest
    states, and the next level's newest."""
    share = gigabytes / workers
    return partial(SpillingVisited, folder, limit=states_for(share / 2),
                   level_limit=max(1, int(share / 2 * 1e9 / (3 * LEVEL_BYTES_PER_STATE))))
