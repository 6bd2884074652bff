"""The native search: codegen.py's C compiled once per world (cached by its source's hash), run
through ctypes, and every counterexample replayed through the explicit checker's world model.

The C search keeps only fingerprints and parents (search.c).  A violation's path is rebuilt here:
the parents from the violating state back to the initial one, then forward from the initial state
through the compiled step, at each level the successor with the next fingerprint; its states are
read back into the world's concrete states and replayed through `WorldModel` by bmc.py's replay,
which must agree, or the result says the two interpretations disagree.  States without
successors are judged here as the explicit checker judges them (`is_end`; otherwise a deadlock).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import z3

from groupspec.checkers.interruptible import interruptible
from groupspec.checkers.search.explicit import Result

from groupspec.checkers.world.bmc import BOUND_BROKEN, StepRelation, _flat, _replayed
from groupspec.checkers.world.bmc_sat import _Values

from . import packing as _packing
from . import symmetry as _symmetry
from .codegen import MAX_SUCC, Generated

_HERE = Path(__file__).resolve().parent
OPT = "-O1"          # gcc's optimisation: what the compile costs against what the search gains (benchmarks/native.py)
COMPILERS = ("tcc", "gcc")      # the first is the CLI's default: a compile in a second (docs/benchmarks.md)
MAX_LEVELS = 4096
AT_MAX_STATES = "stopped at --max-states"
MAX_ENDS = 4096


_UNLED = "the compiled step does not lead along the search's parent links to the state it reported"


class NativeError(Exception):
    """The world cannot be searched natively here (no C compiler, a compile error): say so."""


@dataclass
class NativeResult:
    result: str                     # ok | violation | deadlock | stopped | disagreement
    distinct_states: int            # with symmetry, one state for each orbit
    unreduced_states: int           # the states they stand for
    transitions: int
    depth: int
    levels: list
    seconds: float                  # the search alone
    build_seconds: float            # the step relation, the C and its compilation (0 for a cached library)
    violation: str = ""
    path: list = field(default_factory=list)        # [(Step | None, flat state)], replayed concretely
    detail: str = ""
    coverage: dict = field(default_factory=dict)   # row name: the expansions that fired it

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds else 0.0

    def as_result(self, invariants: list[str], symmetry: bool) -> Result:
        """The search as the Python search reports one (what `groupspec check` prints); `invariants`: those
        it checked."""
        return Result(self.result, self.distinct_states, self.transitions, self.seconds, self.depth, symmetry,
                      invariants, Counter(self.coverage), self.violation, self.path,
                      complete=self.result != "stopped", unreduced_states=self.unreduced_states, levels=self.levels,
                      stopped_because=self.detail if self.result == "stopped" and self.detail != AT_MAX_STATES else "")


_PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_long, ctypes.c_long)


class _Result(ctypes.Structure):
    _fields_ = [("states", ctypes.c_long), ("transitions", ctypes.c_long), ("depth", ctypes.c_int),
                ("complete", ctypes.c_int), ("violation", ctypes.c_int), ("at", ctypes.c_uint64),
                ("parent", ctypes.c_uint64), ("bad_step_from", ctypes.c_uint64), ("ends", ctypes.c_long),
                ("unreduced", ctypes.c_long), ("leaf", ctypes.c_int), ("value", ctypes.c_int64)]


def cache_dir() -> Path:
    return Path(os.environ.get("GROUPSPEC_NATIVE_CACHE", Path.home() / ".cache" / "groupspec" / "native"))


def compile_world(gen: Generated, headers: dict[str, str], opt: str | None = None, cc: str = "gcc") -> Path:
    """The shared library of `gen`'s C with the `headers` search.c includes (name: C), compiled at most once
    for each source
    (the file's name is its hash, written under another name and renamed, so a killed compile leaves no
    library).  `cc`: gcc at `opt`, or tcc (which has no optimiser: `opt` is not given to it)."""
    if cc not in COMPILERS:
        raise NativeError(f"no compiler {cc!r} for the native search: use {' or '.join(COMPILERS)}")
    opt = opt or OPT
    flags = [opt] if cc == "gcc" else []
    search = (_HERE / "search.c").read_text()
    included = "".join(f"{name}\n{text}" for name, text in sorted(headers.items()))
    digest = hashlib.sha256((gen.source + search + included + cc + " ".join(flags)).encode()).hexdigest()[:24]
    lib = cache_dir() / f"world-{digest}.so"
    if lib.exists():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
        (Path(tmp) / "step.c").write_text(gen.source)
        (Path(tmp) / "search.c").write_text(search)
        for name, text in headers.items():
            (Path(tmp) / name).write_text(text)
        try:
            done = subprocess.run([cc, *flags, "-shared", "-fPIC", "-o", "world.so", "step.c", "-lpthread"], cwd=tmp,
                                  capture_output=True, text=True)
        except FileNotFoundError:
            raise NativeError(f"no C compiler: the native search compiles the world with {cc} (apt-get install "
                              f"{cc}, or search with --engine python)") from None
        if done.returncode:
            raise NativeError(f"{cc} could not compile the world's step: {done.stderr.strip().splitlines()[0]}")
        os.replace(Path(tmp) / "world.so", lib)
    return lib


# the step relation and its C for a world of the default table, by the world's configuration: a process that
# searches one world several times (with and without symmetry, a benchmark's repeats, the tests) builds them
# once (tiny: about 30 s of Z3 and code generation, which the compiled library's cache does not save)
_DEFAULT_TABLE: dict[str, tuple] = {}


def _generated(cfg, rows) -> tuple:
    """(the world's step relation, its generated C) for table `rows` (None: the spec's own table)."""
    if rows is not None:
        rel = StepRelation(cfg, rows)
        return rel, Generated(rel)
    key = repr(cfg)
    if key not in _DEFAULT_TABLE:
        rel = StepRelation(cfg, None)
        _DEFAULT_TABLE[key] = (rel, Generated(rel))
    return _DEFAULT_TABLE[key]


class NativeWorld:
    """One world's compiled step: `search` from the initial state, `successors` of a state.  With `symmetry`
    (as the Python search), clients configured alike are interchangeable: one state for each orbit."""

    def __init__(self, cfg, rows=None, opt: str | None = None, symmetry: bool = True, cc: str = "gcc"):
        t0 = time.perf_counter()
        self.rel, self.gen = _generated(cfg, rows)
        self.slots = _packing.layout(self.rel)
        headers = {"symmetry.h": _symmetry.source(cfg, self.gen.leaves), "packing.h": _packing.source(self.slots)}
        self.lib = ctypes.CDLL(str(compile_world(self.gen, headers, opt, cc)))
        self.lib.gs_symmetry(ctypes.c_int(int(symmetry)))
        self.symmetry = symmetry
        self.lib.gs_fp.restype = ctypes.c_uint64
        self.lib.gs_key.restype = ctypes.c_uint64
        self.build_seconds = time.perf_counter() - t0
        self.X = _flat(self.rel.X)
        self.init = np.array([_int(v) for v in _flat(self.rel.world.initial())], dtype=np.int64)

    def _ptr(self, a: np.ndarray):
        return a.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))

    def checked(self) -> list[str]:
        """The invariants the compiled step checks: the state and world invariants at every state and the
        state invariants after every row (the symbolic host's, as BMC's); not the step and output
        invariants, which the symbolic host does not state."""
        return [n for n in self.gen.invariants if n != BOUND_BROKEN]

    def key(self, x: np.ndarray) -> int:
        """The fingerprint of x's representative, as the search's parent links hold it."""
        return self.lib.gs_key(self._ptr(x))

    def successors(self, x: np.ndarray) -> tuple[np.ndarray, int, bool]:
        """(successors, the invariant a row of the last one breaks on its way or -1, a path a bound cut)."""
        out = np.zeros((MAX_SUCC, self.gen.leaves), dtype=np.int64)
        bad, cut = ctypes.c_int(-1), ctypes.c_int(0)
        k = self.lib.gs_successors(self._ptr(x), self._ptr(out), ctypes.byref(bad), ctypes.byref(cut))
        return out[:max(k, 0)], bad.value, bool(cut.value)

    def search(self, max_states: int | None = None, workers: int = 1, progress=None,
               memory: float | None = None, trail_dir: str | None = None) -> NativeResult:
        """Breadth-first from the initial state, with `workers` threads; `progress(depth, states, level)` after
        each level (the level's depth, the distinct states so far, the level's).  `memory`: the GB the visited set
        and the two levels of states may take as they grow (None: four fifths of the memory available now); past it
        the search stops, where the system would kill it.  The trail (each state's parent, 16 bytes a state) goes
        to a folder made in `trail_dir` (None: the system's temporary folder), removed when the search returns."""
        if trail_dir is not None:
            Path(trail_dir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="groupspec-trail-", dir=trail_dir) as trail:
            return self._search(trail.encode(), max_states, workers, progress, memory)

    def _search(self, trail: bytes, max_states, workers, progress, memory) -> NativeResult:
        budget = int(memory * 1e9) if memory is not None else available_bytes() * 4 // 5
        self.lib.gs_budget(ctypes.c_size_t(budget))
        levels = np.zeros(MAX_LEVELS, dtype=np.int64)
        ends = np.zeros((MAX_ENDS, self.gen.leaves), dtype=np.int64)
        r = _Result()
        # held until the search returns: the C calls it
        report = _PROGRESS(lambda d, n, level: progress(d, n, level)) if progress else None
        t0 = time.perf_counter()
        # in a thread of its own, so that Ctrl-C and SIGTERM stop it (the library's workers stop at their next chunk)
        interruptible(lambda: self.lib.gs_search(
            self._ptr(self.init), ctypes.c_long(max_states or (1 << 62)),
            levels.ctypes.data_as(ctypes.POINTER(ctypes.c_long)), ctypes.c_int(MAX_LEVELS), self._ptr(ends),
            ctypes.c_long(MAX_ENDS), ctypes.byref(r), ctypes.c_int(workers), report, ctypes.c_char_p(trail)),
            self.lib.gs_halt)
        seconds = time.perf_counter() - t0
        self.lib.gs_hits.restype = ctypes.POINTER(ctypes.c_long)
        hits = np.ctypeslib.as_array(self.lib.gs_hits(), shape=(len(self.gen.path_rows),))
        coverage: dict = {}
        for rows, n in zip(self.gen.path_rows, hits.tolist()):
            for row in rows:
                if n:
                    coverage[row] = coverage.get(row, 0) + n
        base = dict(coverage=coverage, distinct_states=r.states, unreduced_states=r.unreduced,
                    transitions=r.transitions, depth=r.depth,
                    levels=[int(v) for v in levels[:r.depth + 1]], seconds=seconds, build_seconds=self.build_seconds)
        if r.violation == -2:
            return NativeResult("stopped", **base, detail=f"a state has more than {MAX_SUCC} successors")
        if r.violation == -5:
            return NativeResult("stopped", **base, detail=f"the trail of parents could not be written in "
                                                          f"{os.path.dirname(trail.decode())}: "
                                                          f"{os.strerror(r.value)} (give --visited-dir a folder "
                                                          f"with room: 16 bytes a state)")
        if r.violation == -4:
            given = "" if memory is not None else ", four fifths of the memory available when it began"
            return NativeResult("stopped", **base, detail=f"the visited set and the levels may not grow past "
                                                          f"{_size(budget)} (--memory{given})")
        if r.violation == -3:
            slot = self.slots[r.leaf]
            return NativeResult("stopped", **base, detail=f"a state's {slot.name} = {r.value} is outside the range "
                                                          f"[{slot.lo}, {slot.hi}] the packed state holds (read off "
                                                          f"its declared type): search this world with --engine python")
        if r.violation >= 0:
            return self._counterexample(r, base, trail)
        model = self.rel.world.model
        for x in ends[:min(r.ends, MAX_ENDS)]:
            if not model.is_end(model.unflat(self._concrete(x))):
                return self._deadlock(x, base, trail)
        if r.ends > MAX_ENDS:
            return NativeResult("stopped", **base, detail=f"more than {MAX_ENDS} states without successors: "
                                                          f"not all were judged")
        return NativeResult("ok" if r.complete else "stopped", **base, detail="" if r.complete else AT_MAX_STATES)

    # -- paths, read back and replayed -------------------------------------------------------

    def _concrete(self, x: np.ndarray) -> tuple:
        values = {}
        for leaf, v in zip(self.X, x.tolist()):
            if leaf.sort() == z3.BoolSort():
                values[leaf.get_id()] = z3.BoolVal(bool(v))
            elif z3.is_bv(leaf):
                values[leaf.get_id()] = z3.BitVecVal(v, leaf.size())
            else:
                values[leaf.get_id()] = z3.IntVal(v)
        return self.rel.world.concrete(_Values(values), self.rel.X)

    def _path_to(self, trail: bytes, h: int, deepest: int) -> list[np.ndarray] | None:
        """The states from the initial one to one whose representative has fingerprint `h` (first reached at
        depth `deepest` or before), by the trail's parents and the step (each a successor of the one before, not
        its representative: a path the world takes); None if the step does not lead along the parents (the
        table and the library disagree)."""
        chain = np.zeros(deepest + 1, dtype=np.uint64)
        n = self.lib.gs_trail(ctypes.c_char_p(trail), ctypes.c_uint64(h), ctypes.c_int(deepest),
                              chain.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), ctypes.c_int(deepest + 1))
        if n < 1 or int(chain[n - 1]) != self.key(self.init):
            return None
        chain = [int(c) for c in chain[:n][::-1]]
        states = [self.init]
        for want in chain[1:]:
            succ, _, _ = self.successors(states[-1])
            nxt = next((y for y in succ if self.key(y) == want), None)
            if nxt is None:
                return None
            states.append(nxt)
        return states

    def _counterexample(self, r: _Result, base: dict, trail: bytes) -> NativeResult:
        name = self.gen.invariants[r.violation]
        if name == BOUND_BROKEN:
            return NativeResult("stopped", **base, detail="the symbolic step nests eager re-checks deeper than its "
                                                          "bound here: search this world with --engine python")
        states = self._path_to(trail, r.bad_step_from or r.at, r.depth)
        if states is None:
            return NativeResult("disagreement", **base, violation=name, detail=_UNLED)
        if r.bad_step_from:
            # the path ends in a state the search's one stands for: its steps are the same up to renaming
            # clients, and the first to break an invariant on its way may be another client's, so the
            # invariant named is the one the step breaks here
            succ, bad, _ = self.successors(states[-1])
            if bad < 0:
                return NativeResult("disagreement", **base, violation=name, detail=_UNLED)
            name = self.gen.invariants[bad]
            states.append(succ[-1] if len(succ) else states[-1])      # a cut step has no state after it
        replay = _replayed(self.rel.world, [self._concrete(x) for x in states], name, len(states) - 1)
        return NativeResult(replay.result, **base, violation=name, path=replay.path, detail=replay.detail)

    def _deadlock(self, x: np.ndarray, base: dict, trail: bytes) -> NativeResult:
        states = self._path_to(trail, self.key(x), base["depth"])
        if states is None:
            return NativeResult("disagreement", **base, detail=_UNLED)
        model, path = self.rel.world.model, []
        cur = model.init_states()[0]
        path.append((None, model.flat(cur)))
        for want in [self._concrete(y) for y in states[1:]]:
            succ, _ = model.successors(cur)
            found = next(((st, t) for st, t in succ if model.flat(t) == want), None)
            if found is None:
                return NativeResult("disagreement", **base, path=path, detail="a state the compiled step reaches "
                                                                               "is no successor in the world model")
            step, cur = found
            path.append((step, model.flat(cur)))
        ok = not model.successors(cur)[0] and not model.is_end(cur)
        return NativeResult("deadlock" if ok else "disagreement", **base, path=path,
                            detail="" if ok else "the compiled step has no successor where the world model has one")


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n:,} bytes"


def available_bytes() -> int:
    """The memory the system says is available (MemAvailable), or 0 (no limit) where it does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _int(v) -> int:
    if z3.is_true(v) or z3.is_false(v):
        return int(z3.is_true(v))
    return v.as_long()
