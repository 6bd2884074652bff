"""Exhaustive breadth-first search of a bounded closed world.

Every reachable state is visited once (a set of canonical states); because
the search is breadth-first, the first violation found has a shortest path
to it.  Each state is checked against every state invariant of the
catalog and the closed world's end-to-end ones; each transition against
the step and output invariants.  A state with no enabled action that is
not a legitimate end is a deadlock.

Symmetry: clients are interchangeable, so a state is stored in a canonical
form (clients sorted by what they hold, references to clients renamed to
match); `symmetry=False` stores states as they are.
"""
from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field

from groupspec.spec.invariants import INVARIANTS, InvariantViolation
from groupspec.spec.lang import NONE
from groupspec.spec.world import ALL_VARS, CLIENT, WORLD_INVARIANTS

from .world_model import Step, WorldConfig, WorldModel

PER_CLIENT = [i for i, v in enumerate(ALL_VARS) if v.type.kind == "map" and v.type.key == CLIENT]
CLIENT_VALUED = [i for i, v in enumerate(ALL_VARS) if v.type.kind == "map" and v.type.value.kind == "dom"
                 and v.type.value.name == CLIENT]

PRESETS: dict[str, WorldConfig] = {
    "tiny": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=False,
                        expiry=False, failover=False, append_failure=False, commits=False, leaves=True),
    "small": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=True,
                         expiry=True, failover=False, append_failure=False, commits=False, leaves=True),
    # every coordinator and client fault at one generation: measured to fit CI's two minutes
    # (a second generation alone costs 15x, a third client more; see the closing note of issue 3)
    "ci": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=True, expiry=True,
                      failover=True, append_failure=True, commits=True, leaves=True),
    # static membership (KIP-345): two consumer processes configured with the same group.instance.id
    # (a zombie and its replacement), crashes and restarts
    "static": WorldConfig(clients=2, topics=1, partitions=2, max_generation=2, member_ids=4, crash=True,
                          expiry=True, failover=False, append_failure=True, commits=False, leaves=True,
                          instances=(0, 0), restart=True,
                          waive=(("no-shared-partition", "two processes share one group.instance.id: Kafka "
                                  "fences the old one only at its next heartbeat or commit (KIP-345); "
                                  "no-shared-partition-among-members is what holds"),)),
    "deep": WorldConfig(clients=3, topics=2, partitions=2, max_generation=3, member_ids=6, crash=True, expiry=True,
                        failover=True, append_failure=True, commits=True, leaves=True),
}


def permute(s: tuple, order: tuple) -> tuple:
    """Rename clients: new client k is old client order[k]."""
    new_of = {old: new for new, old in enumerate(order)}
    out = list(s)
    for i in PER_CLIENT:
        out[i] = tuple(s[i][old] for old in order)
    for i in CLIENT_VALUED:
        out[i] = tuple(NONE if v == NONE else new_of[v] for v in s[i])
    return tuple(out)


def orbit_size(s: tuple, n_clients: int) -> int:
    """How many distinct states renaming clients makes of s."""
    from itertools import permutations
    return len({permute(s, order) for order in permutations(range(n_clients))})


def canonical(s: tuple, n_clients: int) -> tuple:
    """The representative of s's orbit under renaming clients."""
    sig = sorted(range(n_clients), key=lambda c: tuple(s[i][c] for i in PER_CLIENT))
    if sig == list(range(n_clients)):
        return s
    return permute(s, tuple(sig))


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

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds else 0.0


class _Search:
    """What both searches keep: the visited canonical states with their parents, coverage, counts."""

    def __init__(self, cfg: WorldConfig, symmetry: bool, rows: list | None = None):
        self.cfg, self.symmetry = cfg, symmetry
        self.model = WorldModel(cfg, rows)
        self.canon = (lambda s: canonical(s, cfg.clients)) if symmetry else (lambda s: s)
        self.start = time.perf_counter()
        self.init = self.model.initial()
        # the visited set holds 64-bit fingerprints (Python's tuple hash, deterministic for
        # tuples of ints), each with its parent's fingerprint, the step and the depth
        c0 = self.canon(self.init)
        self.seen: dict[int, tuple] = {hash(c0): (None, None, 0)}
        self.unreduced = orbit_size(c0, cfg.clients) if symmetry else 1
        self.coverage: Counter = Counter()
        self.generated = 0
        self.depth = 0
        self.names = _checked(cfg)

    def finish(self, result: str, violation: str = "", at=None, last=None) -> "Result":
        path = _path(self.model, self.seen, self.canon, at, last) if at is not None else []
        res = Result(result, len(self.seen), self.generated, time.perf_counter() - self.start, self.depth,
                     self.symmetry, self.names, self.coverage, violation, path, complete=result != "stopped")
        res.unreduced_states = self.unreduced if self.symmetry else len(self.seen)
        return res

    def add(self, parent_fp: int, ct: tuple, step, depth: int) -> int | None:
        """Record ct if new; its fingerprint, or None if it was seen before."""
        ft = hash(ct)
        if ft in self.seen:
            return None
        self.seen[ft] = (parent_fp, step, depth)
        if self.symmetry:
            self.unreduced += orbit_size(ct, self.cfg.clients)
        return ft


def check(cfg: WorldConfig, symmetry: bool = True, progress=None, max_states: int | None = None,
          deadlock: bool = True, liveness: bool = False, rows: list | None = None) -> Result:
    """Search the world; with `liveness`, also look for a fair lasso stuck in a rebalance
    (the graph is kept, and symmetry is off so that fairness is per client)."""
    if liveness:
        symmetry = False
    S = _Search(cfg, symmetry, rows)
    model, canon, seen, coverage, init = S.model, S.canon, S.seen, S.coverage, S.init
    ids: dict = {}
    states_by_id: list = []
    edges: list = []
    bounded: set = set()      # states whose successors a bound cut off
    queue = deque([(init, hash(canon(init)), 0)])
    finish = S.finish

    bad = model.violated(init)
    if bad:
        return finish("violation", bad, hash(canon(init)))
    if liveness:
        ids[init] = 0
        states_by_id.append(init)
        edges.append([])
    last_report = S.start
    while queue:
        s, fs, d = queue.popleft()
        cs = canon(s) if liveness else None
        S.depth = max(S.depth, d)
        try:
            succ = model.successors(s)
        except InvariantViolation as e:
            return finish("violation", e.invariant.name, fs, last=_failing_step(model, s, e))
        if liveness and model.pruned:
            bounded.add(ids[cs])
        if not succ and deadlock and not model.pruned and not model.is_end(s):
            return finish("deadlock", "deadlock: no action is enabled", fs)
        for step, t in succ:
            S.generated += 1
            for r in step.rows:
                coverage[r] += 1
            ct = canon(t)
            if liveness:
                j = ids.get(ct)
                if j is None:
                    j = ids[ct] = len(states_by_id)
                    states_by_id.append(ct)
                    edges.append([])
                edges[ids[cs]].append((j, step))
            ft = S.add(fs, ct, step, d + 1)
            if ft is None:
                continue
            bad = model.violated(t)
            if bad:
                S.depth = max(S.depth, d + 1)
                return finish("violation", bad, ft)
            queue.append((t, ft, d + 1))
        if progress and time.perf_counter() - last_report > 0.5:
            last_report = time.perf_counter()
            progress(S.generated, len(seen), len(queue), S.depth, last_report - S.start)
        if max_states and len(seen) >= max_states:
            return finish("stopped")
    if liveness:
        from .liveness import _stem, find_lasso, find_no_progress
        labelled = [[(j, st.action) for j, st in es] for es in edges]
        # the more specific diagnosis first: a fair cycle stuck in a rebalance
        lasso = find_lasso(states_by_id, labelled, bounded)
        if lasso is not None:
            stem, loop = lasso
            res = finish("lasso", "a fair cycle stays in PreparingRebalance/CompletingRebalance forever")
            res.path = _lasso_path(states_by_id, edges, stem + loop[1:])
            res.loop_start = len(stem) - 1
            return res
        stuck = find_no_progress(states_by_id, labelled, bounded, model.is_end, model.some_stable)
        if stuck is not None:
            res = finish("no-progress", "no client can ever get an assignment again")
            res.path = _lasso_path(states_by_id, edges, _stem(labelled, stuck))
            return res
    return finish("ok")


def _lasso_path(states: list, edges: list, ids: list) -> list:
    path = [(None, states[ids[0]])]
    for a, b in zip(ids, ids[1:]):
        step = next(st for j, st in edges[a] if j == b)
        path.append((step, states[b]))
    return path


# -- the parallel search: workers expand frontier chunks, the main process deduplicates ----

_W: dict = {}


def _init_worker(cfg: WorldConfig, symmetry: bool) -> None:
    _W["model"] = WorldModel(cfg)
    _W["canon"] = (lambda s: canonical(s, cfg.clients)) if symmetry else (lambda s: s)
    _W["row_id"] = {name: i for i, name in enumerate(_row_names())}


def _expand(chunk: list) -> list:
    """For each state: its successors (step, state, canonical, violated invariant), or a failure."""
    model, canon = _W["model"], _W["canon"]
    out = []
    for s in chunk:
        try:
            succ = model.successors(s)
        except InvariantViolation as e:
            out.append(("step-violation", hash(canon(s)), e.invariant.name, getattr(e, "row", "")))
            continue
        if not succ and not model.pruned and not model.is_end(s):
            out.append(("deadlock", hash(canon(s)), None, None))
            continue
        rid = _W["row_id"]
        # only what the main process needs: the canonical successor (a valid state itself),
        # the step's label and rows (as indices), and the invariant it breaks
        succs = []
        for st, t in succ:
            ct = canon(t)
            succs.append((hash(ct), ct, st.action, tuple(rid.get(r, -1) for r in st.rows), model.violated(t)))
        out.append(("ok", hash(canon(s)), succs, None))
    return out


def _checked(cfg: WorldConfig) -> list[str]:
    waived = {name for name, _ in cfg.waive}
    return [i.name for i in INVARIANTS if i.kind in ("state", "step", "output")] + \
        [i.name for i in WORLD_INVARIANTS if i.name not in waived]


def _row_names() -> list[str]:
    from groupspec.spec.table import ROWS
    from groupspec.spec.world import CLIENT_ROWS
    return [r.name for r in ROWS] + [r.name for r in CLIENT_ROWS]


def check_parallel(cfg: WorldConfig, workers: int = 2, symmetry: bool = True, progress=None,
                   max_states: int | None = None) -> Result:
    """Breadth-first, level by level, the frontier's expansion spread over worker processes."""
    from concurrent.futures import ProcessPoolExecutor
    S = _Search(cfg, symmetry)
    model, canon, seen, coverage, init, finish = S.model, S.canon, S.seen, S.coverage, S.init, S.finish
    bad = model.violated(init)
    if bad:
        return finish("violation", bad, hash(canon(init)))
    row_names = _row_names()
    frontier = [canon(init)]
    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(cfg, symmetry)) as pool:
        while frontier:
            size = max(64, len(frontier) // (workers * 4) + 1)
            chunks = [frontier[i:i + size] for i in range(0, len(frontier), size)]
            nxt = []
            for results in pool.map(_expand, chunks):
                for kind, fs, succ, extra in results:
                    if kind == "step-violation":
                        return finish("violation", succ, fs, last=Step(f"row {extra!r} breaks {succ}",
                                                                         (extra,) if extra else ()))
                    if kind == "deadlock":
                        return finish("deadlock", "deadlock: no action is enabled", fs)
                    d = seen[fs][2]
                    for ft, ct, label, rows, bad in succ:
                        S.generated += 1
                        for r in rows:
                            coverage[row_names[r] if r >= 0 else label] += 1
                        if ft in seen:
                            continue
                        seen[ft] = (fs, label, d + 1)
                        if symmetry:   # only for new states: most successors were seen before
                            S.unreduced += orbit_size(ct, cfg.clients)
                        S.depth = max(S.depth, d + 1)
                        if bad:
                            return finish("violation", bad, ft)
                        nxt.append(ct)
                if progress:
                    progress(S.generated, len(seen), len(nxt), S.depth, time.perf_counter() - S.start)
                if max_states and len(seen) >= max_states:
                    return finish("stopped")
            frontier = nxt
    return finish("ok")


def _failing_step(model: WorldModel, s: tuple, e: InvariantViolation):
    row = getattr(e, "row", "")
    return Step(f"row {row!r} breaks {e.invariant.name}", (row,) if row else ())


def _path(model: WorldModel, seen: dict, canon, at: int, last=None) -> list:
    """A concrete shortest path to the state with fingerprint `at`, replayed from the initial state."""
    chain = []
    cur = at
    while cur is not None:
        parent, step, _ = seen[cur]
        chain.append(cur)
        cur = parent
    chain.reverse()
    path = [(None, model.initial())]
    state = model.initial()
    for target in chain[1:]:
        for step, t in model.successors(state):
            if hash(canon(t)) == target:
                path.append((step, t))
                state = t
                break
        else:  # pragma: no cover - the search found this edge
            raise RuntimeError("counterexample replay lost its way")
    if last is not None:
        path.append((last, state))
    return path
