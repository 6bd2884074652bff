"""A breadth-first level that goes on when it no longer fits in memory: states spilled to disk.

Once the visited set is on disk (visited.py, 16 bytes a state), what a breadth-first search holds in
memory is its frontier: the states of the level being expanded and of the one being built, each a
state and its fingerprint.  On a world whose levels hold tens of millions of states that is more
than the machine has (TLC keeps its queue of states on disk for the same reason).

`SpillingLevel` is such a level.  It keeps the newest `limit` states in a list and writes each full
list out as one *chunk* (marshal, which writes an object that several states share, such as the
group part G, once per chunk), read back in the order written: a search over spilled levels visits
the same states in the same order as one over lists.  Reading a chunk back makes each part the
states of that chunk share one object again, as in the process that wrote it: the world's memo
tables find a part by identity before they hash it.  At most two chunks are in memory at once, the
one being expanded and the next level's newest states.

A level writes into a folder it is given (the visited set's own: it is removed with it, whatever
the search left unread, and a killed run's is removed by the next run, visited.remove_leftovers) and
removes each chunk once it has been read.  A chunk this process cannot read back is reported as an OSError naming the file,
never taken as fewer states.
"""
from __future__ import annotations

import errno
import marshal
import os
from pathlib import Path

# About what one state of a level costs in memory, beyond the parts it shares with other states
# (its tuple of parts, the (state, fingerprint) pair, the fingerprint, the list's slot): 164 bytes
# measured with tracemalloc on a level of `ci`'s (2 clients); each client more adds a pointer.
LEVEL_BYTES_PER_STATE = 170


class SpillingLevel:
    """One breadth-first level, `(state, fingerprint)` pairs: appended to, counted, then read once
    in the order appended.  Past `limit` states in memory, the oldest are written under `folder`."""

    def __init__(self, folder: str | os.PathLike, limit: int, name: str, on_spill=lambda: None):
        if limit < 1:
            raise ValueError(f"a level must hold at least one state in memory, got {limit}")
        self.folder, self.limit, self.name = Path(folder), limit, name
        self.mem: list = []
        self.chunks: list[Path] = []
        self.n = 0
        self.on_spill = on_spill      # told of each chunk written (the visited set counts them)

    def append(self, item: tuple) -> None:
        mem = self.mem
        mem.append(item)
        self.n += 1
        if len(mem) >= self.limit:
            self._spill()

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        """The level's states in the order appended, each chunk removed once read: a level is read
        once (the search moves on to the next)."""
        chunks, self.chunks = self.chunks, []
        for path in chunks:
            items = _read(path)
            path.unlink()
            yield from items
        yield from self.mem

    def _spill(self) -> None:
        path = self.folder / f"{self.name}.{len(self.chunks):06d}.level"
        with open(path, "wb") as f:
            marshal.dump(self.mem, f)
        self.chunks.append(path)
        self.mem = []
        self.on_spill()


def _read(path: Path) -> list:
    with open(path, "rb") as f:
        try:
            items = marshal.load(f)
        except (EOFError, ValueError, TypeError) as e:
            raise OSError(errno.EIO, f"a spilled level cannot be read back ({e}): it was truncated or overwritten "
                                     f"while the search ran", str(path)) from None
    if type(items) is not list:
        raise OSError(errno.EIO, f"a spilled level holds a {type(items).__name__}, not the states written", str(path))
    return items

