"""The engines that search a model (checkers/search/model.py) exhaustively, breadth-first.

Every reachable state is visited once (a set of fingerprints of states);
because the search is breadth-first, the first violation found has a
shortest path to it.  Each state is checked against the model's
properties (`violated`), each transition by the model itself as it
computes it (a step that breaks a property raises).  A state with no
successor, none cut off by the model's boundary, that is not a legitimate
end is a deadlock (`deadlock=False`: not looked for).

Three searches, one expand step (`_Explorer`): `check` (one process),
`check_parallel` (worker processes that each own a share of the states) and
`check(..., liveness=True)` (the state graph kept, then `liveness.py`).
With `symmetry` a state is kept as its model's representative (for the
closed world: clients renamed into a canonical order); the liveness search
keeps states as they are, since fairness is per client.

With `reduction` (partial-order reduction, the sequential search only) a
state is expanded by its model's ample set (`Model.ample`: one process's
steps, independent of the others' and invisible to the properties) where
that set does not close a cycle: the BFS proviso is that no successor it
takes is a state already kept at this depth or above (the last state of a
cycle to be expanded has a successor expanded before it, so every cycle of
the reduced graph has a state expanded in full).  Every state the properties
can tell apart is still reached, and every deadlock and every broken step,
but a counterexample may be longer than the shortest.
"""
from __future__ import annotations

import gc
import marshal
import os
import signal
import time
from contextlib import contextmanager
from collections import Counter, deque
from dataclasses import dataclass, field

from groupspec.spec.invariants import InvariantViolation

from .model import Model


def worker_limit() -> int:
    """The most worker processes the checkers start: twice the CPUs this process may use (a
    worker is CPU-bound; more only share the same CPUs and multiply the memory)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):       # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return 2 * max(1, cpus)


def die_with_parent(parent: int) -> None:
    """In a forked worker: end when the parent process ends, however it ends.

    On Linux the kernel sends the worker SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG):
    immediate, even while the worker is deep in a search step or blocked on a pipe, and costs
    the worker nothing.  Elsewhere a daemon thread polls the parent's pid twice a second.  A
    SIGTERM to the worker itself ends it at once (the default action; the parent's handler,
    inherited by the fork, is for the parent)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0) != 0:   # PR_SET_PDEATHSIG
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError):       # pragma: no cover - not Linux
        import threading
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:              # the parent died before prctl took effect
        os._exit(1)


def _watch_parent(parent: int) -> None:     # pragma: no cover - not Linux
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def die_with(main: int) -> None:
    """In a worker that is not `main`'s child (a forkserver's: its parent is the server, which lives on as
    long as any worker does): end when `main` ends, however it ends.  A daemon thread waits on a pidfd of
    `main` (Linux 5.3), which becomes readable when it exits; elsewhere it polls `main` twice a second.  A
    SIGTERM to the worker ends it at once; a Ctrl-C, which the terminal sends to every process of the
    command, is for `main` to act on (the worker would print a traceback)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import threading
    try:
        fd = os.pidfd_open(main)
    except ProcessLookupError:              # already gone
        os._exit(1)
    except (AttributeError, OSError):       # pragma: no cover - not Linux, or an older kernel
        threading.Thread(target=_poll_process, args=(main,), daemon=True).start()
        return
    threading.Thread(target=_wait_for_exit, args=(fd,), daemon=True).start()


def _wait_for_exit(fd: int) -> None:
    import select
    select.select([fd], [], [])
    os._exit(1)


def _poll_process(pid: int) -> None:        # pragma: no cover - not Linux
    while True:
        try:
            os.kill(pid, 0)
        except OSError:                     # gone (or its pid taken by another user's process)
            os._exit(1)
        time.sleep(0.5)


@dataclass
class Result:
    result: str                         # ok | violation | deadlock
    distinct_states: int
    generated: int
    seconds: float
    depth: int
    symmetry: bool
    invariants: list[str]
    coverage: Counter
    violation: str = ""
    path: list = field(default_factory=list)    # [(Step | None, state)] from the initial state
    complete: bool = True                        # False if stopped at --max-states
    loop_start: int = -1                         # a lasso: the path's index where the loop begins
    unreduced_states: int = 0                    # with symmetry: the states the search stands for
    reduction: bool = False                      # partial-order reduction
    ample_states: int = 0                        # with it: the states expanded by an ample set
    enabled: int = 0                             # with it: the successors of the states expanded, all of them
    levels: list = field(default_factory=list)   # distinct states first reached at each depth 0, 1, ...
    stopped_because: str = ""                    # incomplete, for another reason than --max-states: which

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds else 0.0


@contextmanager
def _no_cyclic_gc():
    """The search allocates millions of tuples and creates no reference cycles; Python's cyclic
    collector would rescan all of them again and again (measured: a third of the run time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _same(s):
    return s


def _one(s) -> int:
    return 1


# Distinct steps counted before they are folded into the rows they cover: a step holds its label and
# messages, and a world of millions of states labels its transitions with hundreds of thousands of
# distinct ones (`ci`: 42 k after 300 k states), which would outgrow everything else the search keeps.
_STEPS_KEPT = 50_000


class _Explorer:
    """One search's visited set and counts, and the one expand step every search uses.

    `seen` maps each kept state's fingerprint (Python's 64-bit hash of its representative,
    deterministic for tuples of ints) to its parent's; a counterexample is replayed from an
    initial state along them (`path`).  It is a dict, or what `visited` gives in its place (a set
    that spills to disk: visited.py).
    """

    def __init__(self, model: Model, symmetry: bool, deadlock: bool, visited=None, reduction: bool = False):
        self.model, self.symmetry, self.deadlock, self.reduction = model, symmetry, deadlock, reduction
        self.rep = model.representative if symmetry else _same
        self.orbit = model.orbit if symmetry else _one
        self.violated = model.violated
        self.start = time.perf_counter()
        self.seen = {} if visited is None else visited
        # a level of the breadth-first search: a list, or one that spills with the visited set
        self.new_level = getattr(self.seen, "new_level", list)
        self.steps = Counter()         # step -> how many transitions it labels (coverage: model.covered)
        self.folded = Counter()        # what `steps` counted before it was folded into rows (`_counted`)
        self.generated = 0
        self.unreduced = 0             # the states the kept ones stand for
        self.ample_states = 0          # states expanded by an ample set (reduction)
        self.enabled = 0               # the successors of every state expanded, taken or not
        self.depth = 0
        self.levels: list = []         # distinct states first kept at each depth
        self.names = model.invariants()
        self.roots = list(dict.fromkeys((ct, hash(ct)) for ct in map(self.rep, model.init_states())))

    def successors(self, s) -> tuple[list | None, int]:
        """s's (step, next state) pairs and how many the model's boundary cut off; None for a
        deadlock.  Raises InvariantViolation if a step breaks a property."""
        succ, cut = self.model.successors(s)
        if not succ and not cut and self.deadlock and not self.model.is_end(s):
            return None, 0
        return succ, cut

    def expand(self, s, fresh: set | None = None) -> tuple[list | None, int]:
        """As `successors`, each successor as (step, representative, fingerprint), counted.  With
        reduction, only the model's ample set of `s` where none of its successors is kept already
        outside `fresh` (the states first kept at the next depth): the cycle proviso."""
        succ, cut = self.successors(s)
        if succ is None:
            return None, 0
        if not succ:
            return [], cut
        self.enabled += len(succ)
        if self.reduction:
            part = self.model.ample(s, succ)
            if part is not None:
                out = self._represented(part)
                seen = self.seen
                if all(ft not in seen or ft in fresh for _, _, ft in out):
                    self.ample_states += 1
                    return self._counted(out), cut
        return self._counted(self._represented(succ)), cut

    def _represented(self, succ: list) -> list:
        """Each successor as (step, representative, fingerprint), in loops CPython runs in C (map, zip):
        the Python-level loop over them was an eighth of a warm search."""
        steps, ts = zip(*succ)
        cts = list(map(self.rep, ts)) if self.symmetry else ts
        return list(zip(steps, cts, map(hash, cts)))

    def _counted(self, out: list) -> list:
        """`out`, its transitions counted as generated and by step (coverage)."""
        self.generated += len(out)
        steps = self.steps
        steps.update(step for step, _, _ in out)
        if len(steps) > _STEPS_KEPT:
            self.folded = self._by_row(steps, self.folded)
            steps.clear()
        return out

    def _by_row(self, steps: Counter, into: Counter) -> Counter:
        covered = self.model.covered
        for step, k in steps.items():
            for r in covered(step):
                into[r] += k
        return into

    def admit(self, ct, ft: int, parent: int | None) -> str | None:
        """Keep a state not seen before (`ft` not in `seen`); the property it breaks, or None."""
        self.seen[ft] = parent
        self.unreduced += self.orbit(ct)
        return self.violated(ct)

    def admit_roots(self) -> tuple[str, int] | None:
        """Keep the initial states: (the property one breaks, its fingerprint), or None."""
        for ct, ft in self.roots:
            bad = self.admit(ct, ft, None)
            self.count(0)
            if bad:
                return bad, ft
        return None

    coverage_override: Counter | None = None    # the parallel search counts rows in its workers

    @property
    def coverage(self) -> Counter:
        if self.coverage_override is not None:
            return self.coverage_override
        return self._by_row(self.steps, Counter(self.folded))

    def finish(self, result: str, violation: str = "", at=None, last=None, seen=None) -> Result:
        path = self.path(seen or self.seen, at, last) if at is not None else []
        return Result(result, len(self.seen), self.generated, time.perf_counter() - self.start, self.depth,
                      self.symmetry, self.names, self.coverage, violation, path, complete=result != "stopped",
                      unreduced_states=self.unreduced, levels=list(self.levels), reduction=self.reduction,
                      ample_states=self.ample_states, enabled=self.enabled)

    def count(self, depth: int, new: int = 1) -> None:
        """`new` distinct states kept at `depth` (a search that stops early leaves its last depth's
        count partial)."""
        while len(self.levels) <= depth:
            self.levels.append(0)
        self.levels[depth] += new

    def path(self, seen, at: int, last=None) -> list:
        """A concrete path to the state with fingerprint `at` (a shortest one, but with reduction),
        replayed from an initial state, in the model's flat view; `last`: the step that broke a
        property, at its end."""
        model, rep = self.model, self.rep
        chain = []
        cur = at
        while cur is not None:
            chain.append(cur)
            cur = seen[cur]
        chain.reverse()
        state = next(s for s in model.init_states() if hash(rep(s)) == chain[0])
        path = [(None, model.flat(state))]
        for target in chain[1:]:
            for step, t in model.successors(state)[0]:
                if hash(rep(t)) == target:
                    path.append((step, model.flat(t)))
                    state = t
                    break
            else:  # pragma: no cover - the search found this edge
                raise RuntimeError("counterexample replay lost its way")
        if last is not None:
            path.append((last, model.flat(state)))
        return path


def check(model: Model, symmetry: bool = True, progress=None, max_states: int | None = None,
          deadlock: bool = True, liveness: bool = False, visited=None, reduction: bool = False) -> Result:
    """Search `model` breadth-first, level by level; with `liveness`, also look for a fair
    lasso stuck among transient states and for states without progress (the graph is kept,
    and symmetry is off so that fairness is per client).  `visited`: the empty visited set to
    use instead of a dict (visited.py's, which spills to disk), for the search without liveness
    (which keeps the whole graph in memory anyway).  With `reduction`, by ample sets (not with
    `liveness`: its fairness needs a stronger proviso than this search has)."""
    if liveness and reduction:
        raise ValueError("partial-order reduction is for safety: the liveness search takes every step")
    with _no_cyclic_gc():
        if liveness:
            if visited is not None:
                raise ValueError("the liveness search keeps the state graph in memory: a visited set on disk "
                                 "would not make it fit")
            return _check_liveness(model, max_states, deadlock, progress)
        return _check(model, symmetry, progress, max_states, deadlock, visited, reduction)


def _check(model: Model, symmetry: bool, progress, max_states, deadlock: bool, visited=None,
           reduction: bool = False) -> Result:
    X = _Explorer(model, symmetry, deadlock, visited, reduction)
    seen, expand, admit, finish = X.seen, X.expand, X.admit, X.finish
    bad = X.admit_roots()
    if bad:
        return finish("violation", bad[0], bad[1])
    level = X.roots
    tick = 0
    pending = None      # a successor that breaks a state invariant, found while expanding this level
    while level:
        nxt = X.new_level()
        fresh = set() if reduction else None    # the fingerprints in nxt (the reduction's cycle proviso)
        depth = X.depth + 1
        for s, fs in level:
            # A failure of the expansion itself (a deadlock: a path of `depth - 1` steps; a row
            # breaking a step invariant: `depth` steps) is at least as short as a broken state
            # among the successors (`depth` steps), so once one of those is found the rest of the
            # level is still expanded, for the shorter failures only.
            try:
                succ, _ = X.successors(s) if pending else expand(s, fresh)
            except InvariantViolation as e:      # the failing step is the path's last: `depth` steps
                X.depth = depth
                return finish("violation", e.invariant.name, fs, last=model.failing_step(e))
            if succ is None:
                return finish("deadlock", "deadlock: no action is enabled", fs)
            if pending:
                continue
            for step, ct, ft in succ:
                if ft in seen:
                    continue
                bad = admit(ct, ft, fs)
                if bad:
                    pending = (bad, ft)
                    break
                nxt.append((ct, ft))
                if reduction:
                    fresh.add(ft)
            tick += 1
            if tick & 1023 == 0:
                if progress:
                    progress(X.generated, len(seen), len(level) + len(nxt), depth, time.perf_counter() - X.start)
                if max_states and len(seen) >= max_states:
                    return finish("stopped")
        if nxt or pending:
            X.count(depth, len(nxt) + (pending is not None))
        if pending:
            X.depth = depth
            return finish("violation", pending[0], pending[1])
        if nxt:
            X.depth = depth
        level = nxt
        if max_states and len(seen) >= max_states:
            break
    return finish("ok" if not (max_states and len(seen) >= max_states and level) else "stopped")


def _check_liveness(model: Model, max_states, deadlock: bool, progress) -> Result:
    """The search with the state graph kept, then the fair-lasso and progress checks."""
    from .liveness import find_lasso, find_no_progress, shortest_path
    X = _Explorer(model, False, deadlock)
    seen, finish = X.seen, X.finish
    bad = X.admit_roots()
    if bad:
        return finish("violation", bad[0], bad[1])
    states_by_id: list = [s for s, _ in X.roots]
    ids: dict = {s: i for i, s in enumerate(states_by_id)}
    edges: list = [[] for _ in states_by_id]       # edges[i]: [(j, step)]
    bounded: set = set()      # states whose successors a bound cut off
    queue = deque((s, fs, 0) for s, fs in X.roots)
    last_report = X.start
    while queue:
        s, fs, d = queue.popleft()
        X.depth = max(X.depth, d)
        i = ids[s]
        try:
            succ, cut = X.expand(s)
        except InvariantViolation as e:
            return finish("violation", e.invariant.name, fs, last=model.failing_step(e))
        if succ is None:
            return finish("deadlock", "deadlock: no action is enabled", fs)
        if cut:
            bounded.add(i)
        for step, t, ft in succ:
            j = ids.get(t)
            if j is None:
                j = ids[t] = len(states_by_id)
                states_by_id.append(t)
                edges.append([])
            edges[i].append((j, step))
            if ft in seen:
                continue
            bad = X.admit(t, ft, fs)
            X.count(d + 1)
            if bad:
                X.depth = max(X.depth, d + 1)
                return finish("violation", bad, ft)
            queue.append((t, ft, d + 1))
        if progress and time.perf_counter() - last_report > 0.5:
            last_report = time.perf_counter()
            progress(X.generated, len(seen), len(queue), X.depth, last_report - X.start)
        if max_states and len(seen) >= max_states:
            return finish("stopped")
    roots = range(len(X.roots))
    # the more specific diagnosis first: a fair cycle stuck in a rebalance
    lasso = find_lasso(model, states_by_id, edges, bounded, roots)
    if lasso is not None:
        stem, loop = lasso
        res = finish("lasso", "a fair cycle stays in PreparingRebalance/CompletingRebalance forever")
        res.path = _graph_path(model, states_by_id, edges, stem + loop[1:])
        res.loop_start = len(stem) - 1
        return _counterexample_depth(res)
    stuck = find_no_progress(model, states_by_id, edges, bounded)
    if stuck is not None:
        res = finish("no-progress", "no client can ever get an assignment again")
        res.path = _graph_path(model, states_by_id, edges, shortest_path(edges, roots, stuck))
        return _counterexample_depth(res)
    return finish("ok")


def _counterexample_depth(res: Result) -> Result:
    """A liveness counterexample is found after the whole graph is searched: its depth is its own
    length in steps (a lasso: the stem and one lap of the loop), as a safety counterexample's is,
    not how deep the search went."""
    res.depth = len(res.path) - 1
    return res


def _graph_path(model: Model, states: list, edges: list, ids: list) -> list:
    """The path through the kept graph's states `ids`, in the model's flat view."""
    path = [(None, model.flat(states[ids[0]]))]
    for a, b in zip(ids, ids[1:]):
        step = next(st for j, st in edges[a] if j == b)
        path.append((step, model.flat(states[b])))
    return path


# -- the parallel search ---------------------------------------------------------------------
# Each worker process owns the states whose shard key (`model.shard_key`: for the closed world
# the group part G) hashes to it: it keeps their fingerprints (the visited set is sharded),
# expands them, and sends the successors it does not own to their owner.  Sharding by G keeps a
# worker's memo tables (deliveries and timers are keyed by G) to its own share, and a client's
# step, which keeps G (unless renaming clients rewrites a parked reference), stays in the worker.
# States cross in marshal batches (so a model's states must be what marshal writes: tuples of
# ints, here; sub-tuples shared between states are written once), and a worker sends each
# foreign state once.  Breadth-first, level by level: the main process only relays the batches
# and sums the counts, so a counterexample is still a shortest one.  Each worker builds its own
# model from the given one's recipe.

_SENT = object()      # in a worker's `seen`: a foreign state already sent to its owner


class _Shard:
    """One worker's part of the search."""

    def __init__(self, wid: int, n: int, recipe, symmetry: bool, deadlock: bool, visited=None):
        self.wid, self.n = wid, n
        self.model = recipe()
        self.X = _Explorer(self.model, symmetry, deadlock, None if visited is None else visited(markers=(None, _SENT)))
        self.key = self.model.shard_key
        self.seen = self.X.seen
        self.frontier = [(ct, ft) for ct, ft in self.X.roots if hash(self.key(ct)) % n == wid]
        for _, ft in self.frontier:
            self.seen[ft] = None
        self.next = self.X.new_level()
        self.parts: dict = {}                               # received parts, one object each

    def _keep(self, ft: int, fs: int, ct: tuple, stats: dict) -> None:
        X = self.X
        before = X.unreduced
        bad = X.admit(ct, ft, fs)
        stats["new"] += 1
        stats["unreduced"] += X.unreduced - before
        if bad and stats["failure"] is None:
            stats["failure"] = ("violation", ft, bad, None)
        self.next.append((ct, ft))

    def expand(self) -> tuple[dict, list]:
        X, seen, key, wid, n = self.X, self.seen, self.key, self.wid, self.n
        expand = X.expand
        stats = {"new": 0, "unreduced": 0, "generated": 0, "failure": None}
        batches: list = [[] for _ in range(n)]
        before = X.generated
        for s, fs in self.frontier:
            try:
                succ, _ = expand(s)
            except InvariantViolation as e:
                stats["failure"] = ("violation", fs, e.invariant.name, self.model.failing_step(e))
                break
            if succ is None:
                stats["failure"] = ("deadlock", fs, "", None)
                break
            for step, ct, ft in succ:
                if ft in seen:              # kept here, or already sent to its owner
                    continue
                o = hash(key(ct)) % n
                if o == wid:
                    self._keep(ft, fs, ct, stats)
                else:
                    seen[ft] = _SENT
                    batches[o].append((ft, fs, ct))
        stats["generated"] = X.generated - before
        self.frontier = []
        return stats, [marshal.dumps(batches[o]) for o in range(n)]

    def receive(self, blobs: list) -> dict:
        stats = {"new": 0, "unreduced": 0, "generated": 0, "failure": None}
        seen, parts = self.seen, self.parts
        for blob in blobs:
            for ft, fs, ct in marshal.loads(blob):
                if ft not in seen:
                    # a state's parts as this worker's own objects: the memo tables are keyed by
                    # them, and a lookup with the very key object skips comparing its contents
                    ct = tuple([parts.setdefault(x, x) for x in ct])
                    self._keep(ft, fs, ct, stats)
        self.frontier, self.next = self.next, self.X.new_level()
        return stats

    def parent(self, fp: int) -> tuple[bool, int | None]:
        """(whether this worker keeps the state `fp`, its parent's fingerprint)."""
        got = self.seen.get(fp, _SENT)
        return (False, None) if got is _SENT else (True, got)

    def coverage(self) -> dict:
        return dict(self.X.coverage)


def _shard_main(conn, wid: int, n: int, recipe, symmetry: bool, deadlock: bool, parent: int, visited) -> None:
    gc.disable()
    die_with_parent(parent)
    shard = None
    try:
        shard = _Shard(wid, n, recipe, symmetry, deadlock, visited)
        conn.send(("ready", len(shard.seen)))
        while True:
            cmd, arg = conn.recv()
            if cmd == "expand":
                stats, blobs = shard.expand()
                conn.send(stats)
                for blob in blobs:
                    conn.send_bytes(blob)
            elif cmd == "receive":
                blobs = [conn.recv_bytes() for _ in range(arg)]
                conn.send(shard.receive(blobs))
            elif cmd == "parent":
                conn.send(shard.parent(arg))
            elif cmd == "coverage":
                conn.send(shard.coverage())
            else:
                break
    except (EOFError, KeyboardInterrupt):
        pass
    except BaseException:                       # pragma: no cover - reported by the main process
        import traceback
        conn.send(("error", traceback.format_exc()))
    finally:
        if shard is not None and hasattr(shard.seen, "close"):     # a visited set on disk: its files
            shard.seen.close()


def check_parallel(model: Model, workers: int = 2, symmetry: bool = True, progress=None,
                   max_states: int | None = None, deadlock: bool = True, visited=None) -> Result:
    """Breadth-first, level by level, over `workers` processes that each own a shard of the
    states; the options mean what they mean to `check` (liveness needs the whole graph in one
    process: `check`).  `visited`: what makes each worker's empty visited set instead of a dict,
    called in the worker with the `markers` it must keep besides parents (visited.py's)."""
    with _no_cyclic_gc():
        return _check_parallel(model, workers, symmetry, progress, max_states, deadlock, visited)


def _check_parallel(model: Model, workers: int, symmetry: bool, progress, max_states, deadlock: bool,
                    visited=None) -> Result:
    import multiprocessing as mp
    ctx = mp.get_context("fork")      # the workers inherit the compiled table
    X = _Explorer(model, symmetry, deadlock)
    finish = X.finish
    bad = X.admit_roots()
    if bad:
        return finish("violation", bad[0], bad[1])
    recipe = model.recipe()
    pipes, procs = [], []
    for wid in range(workers):
        here, there = ctx.Pipe()
        p = ctx.Process(target=_shard_main, args=(there, wid, workers, recipe, symmetry, deadlock, os.getpid(),
                                                  visited), daemon=True)
        p.start()
        pipes.append(here)
        procs.append(p)

    def ask(conn, msg):
        conn.send(msg)
        return _reply(conn)

    def recv_bytes(conn):
        try:
            return conn.recv_bytes()
        except EOFError:     # pragma: no cover
            raise RuntimeError("a search worker died") from None

    finished = False
    try:
        for conn in pipes:
            conn.recv()
        distinct, unreduced = len(X.seen), X.unreduced
        result = None
        while result is None:
            for conn in pipes:
                conn.send(("expand", None))
            stats, outbox = [], []
            for conn in pipes:
                stats.append(_reply(conn))
                outbox.append([recv_bytes(conn) for _ in range(workers)])
            for wid, conn in enumerate(pipes):
                conn.send(("receive", workers - 1))
                for o in range(workers):
                    if o != wid:
                        conn.send_bytes(outbox[o][wid])
            stats += [_reply(conn) for conn in pipes]
            X.generated += sum(st["generated"] for st in stats)
            new = sum(st["new"] for st in stats)
            distinct += new
            unreduced += sum(st["unreduced"] for st in stats)
            failures = [st["failure"] for st in stats if st["failure"]]
            if new or failures:
                X.depth += 1
            if new:
                X.count(X.depth, new)
            if progress:
                progress(X.generated, distinct, new, X.depth, time.perf_counter() - X.start)
            if failures:
                # expansion failures (a state at the previous depth) before state violations
                result = min(failures, key=lambda f: f[0] != "deadlock" and f[3] is None)
            elif not new:
                result = ("ok", None, "", None)
            elif max_states and distinct >= max_states:
                result = ("stopped", None, "", None)
        X.coverage_override = Counter()
        for conn in pipes:
            X.coverage_override.update(ask(conn, ("coverage", None)))
        kind, fp, inv, last = result
        seen = _DistributedParents(pipes, ask, {ft for _, ft in X.roots})
        if kind == "deadlock":
            X.depth -= 1
            res = finish("deadlock", "deadlock: no action is enabled", fp, seen=seen)
        elif kind == "violation":      # `last`: the step that broke a property, the path's last
            res = finish("violation", inv, fp, last=last, seen=seen)
        else:
            res = finish(kind, seen=seen)
        res.distinct_states = distinct
        res.unreduced_states = unreduced
        finished = True
        return res
    finally:
        # on the way out of an interrupt (SIGINT, SIGTERM) or a failure the workers may be in the
        # middle of a level: they are killed, not asked
        for conn in pipes if finished else ():
            try:
                conn.send(("stop", None))
            except OSError:    # pragma: no cover
                pass
        for p in procs:
            if not finished:
                p.kill()
            p.join(timeout=5)
            if p.is_alive():   # pragma: no cover
                p.kill()


def _reply(conn):
    try:
        got = conn.recv()
    except EOFError:     # pragma: no cover
        raise RuntimeError("a search worker died") from None
    if isinstance(got, tuple) and got and got[0] == "error":
        raise RuntimeError(f"a search worker failed:\n{got[1]}")
    return got


class _DistributedParents:
    """The visited set's parent links, asked of the shard that holds each fingerprint."""

    def __init__(self, pipes, ask, roots: set):
        self.pipes, self.ask, self.roots = pipes, ask, roots

    def __getitem__(self, fp):
        if fp in self.roots:
            return None
        for conn in self.pipes:
            has, parent = self.ask(conn, ("parent", fp))
            if has:
                return parent
        raise KeyError(fp)
