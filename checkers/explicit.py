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

import gc
import marshal
import os
import signal
import time
from contextlib import contextmanager
from collections import Counter, deque
from dataclasses import dataclass, field

from groupspec.spec.invariants import INVARIANTS, InvariantViolation
from groupspec.spec.lang import NONE
from .world_model import Step, WorldConfig, WorldModel, world_invariants

from math import factorial

from .world_model import PJ, PS

PRESETS: dict[str, WorldConfig] = {
    "tiny": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=False,
                        expiry=False, failover=False, append_failure=False, commits=False, leaves=True),
    "small": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=True,
                         expiry=True, failover=False, append_failure=False, commits=False, leaves=True),
    # the tiny world over two generations: stale requests of an older generation, leader re-election
    "twogen": WorldConfig(clients=2, topics=1, partitions=2, max_generation=2, member_ids=3, crash=False,
                          expiry=False, failover=False, append_failure=False, commits=False, leaves=True),
    # every fault but reordering at one generation (seconds)
    "faults": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=True,
                          expiry=True, failover=True, append_failure=True, commits=True, leaves=True),
    # every fault but reordering, two generations, two topics of two partitions: the largest world
    # measured to fit CI's two minutes (3.4M states, 80 s with 2 workers); a third client takes it
    # far past 25M states (README, "Why ci has 2 clients"): CI runs settle3 for 3 clients
    "ci": WorldConfig(clients=2, topics=2, partitions=2, max_generation=2, member_ids=4, crash=True, expiry=True,
                      failover=True, append_failure=True, commits=True, leaves=True),
    # static membership (KIP-345): two consumer processes configured with the same group.instance.id
    # (a zombie and its replacement), crashes and restarts
    "static": WorldConfig(clients=2, topics=1, partitions=2, max_generation=2, member_ids=4, crash=True,
                          expiry=True, failover=False, append_failure=True, commits=False, leaves=True,
                          instances=(0, 0), restart=True,
                          waive=(("no-shared-partition", "two processes share one group.instance.id: Kafka "
                                  "fences the old one only at its next heartbeat or commit (KIP-345); "
                                  "no-shared-partition-among-members is what holds"),)),
    # timely clients, no faults: the group needs one generation per membership change (a join and
    # a leave per client), so the generation bound is a property (rebalance-budget): a rebalance
    # loop, a rejoin no client needed, breaks it; no bound cuts these worlds, so liveness is exact
    # in them (a livelock within one generation is a lasso)
    "settle": WorldConfig(clients=2, topics=2, partitions=2, max_generation=4, member_ids=4, crash=False,
                          expiry=False, failover=False, append_failure=False, commits=True, leaves=True,
                          timely=True, rebalance_budget=True),
    "settle3": WorldConfig(clients=3, topics=2, partitions=2, max_generation=6, member_ids=6, crash=False,
                           expiry=False, failover=False, append_failure=False, commits=True, leaves=True,
                           timely=True, rebalance_budget=True),
    # KAFKA-12890's world: a client's poll loop may hang after its JoinGroup response, heartbeating
    # but never syncing; no session expiry, because the hung client's heartbeats keep its session
    # alive (so only the pending-sync timeout can remove it); two generations, for the group to
    # settle again after the timeout.  Its liveness check (seconds) is what catches a coordinator
    # that lets a heartbeat stand in for the SyncGroup.
    "hung": WorldConfig(clients=2, topics=1, partitions=2, max_generation=2, member_ids=3, crash=False,
                        expiry=False, failover=False, append_failure=False, commits=False, leaves=True,
                        hung_poll=True),
    "deep": WorldConfig(clients=3, topics=2, partitions=2, max_generation=3, member_ids=6, crash=True, expiry=True,
                        failover=True, append_failure=True, commits=True, leaves=True),
}


# What a world may ask for: the CLI refuses more, saying why (measured on this kind of machine).
WORLD_LIMITS = {
    # every client multiplies the states about sixfold per level: 3 clients with faults do not
    # finish in hours (`deep`), 4 without faults pass 500,000 states at depth 34, and 8 reach
    # only depth 23 by then
    "clients": (8, "the states grow about sixfold per client and level: 4 clients without faults "
                   "already pass 500,000 states, and 8 reach only depth 23 by then"),
    # a member id is an entry of every per-member map of every state, and a new one may be issued
    # at each join: on `small`, 64 ids run at 12k states/s against 32k with 3, and the states grow
    "member_ids": (64, "each id is an entry of every per-member map of every state and may be issued "
                       "at any join (the presets use 3 to 6; 64 already run at a third of their speed)"),
    # every state holds each partition's committed offset; the partitions do not add states
    "partitions_total": (1024, "every state holds each partition's committed offset (topics x "
                               "partitions), and more partitions add no behaviour to the world"),
    # Kafka's generationId is an int32
    "max_generation": (2**31 - 1, "Kafka's generation id is an int32"),
}


def world_problem(cfg: WorldConfig) -> str | None:
    """What in `cfg` the checker cannot serve, as a message naming the option, or None."""
    for name, least in (("clients", 1), ("topics", 1), ("partitions", 1), ("member_ids", 1),
                        ("max_generation", 1)):
        value = getattr(cfg, name)
        if value < least:
            why = " (with 0 no join can complete: the first generation is 1)" if name == "max_generation" else ""
            return f"--{name.replace('_', '-')} must be at least {least}, got {value}{why}"
    for name in ("clients", "member_ids", "max_generation"):
        limit, why = WORLD_LIMITS[name]
        if getattr(cfg, name) > limit:
            return f"--{name.replace('_', '-')} {getattr(cfg, name):,}: at most {limit:,}, because {why}"
    limit, why = WORLD_LIMITS["partitions_total"]
    if cfg.topics * cfg.partitions > limit:
        return (f"--topics {cfg.topics:,} x --partitions {cfg.partitions:,}: at most {limit:,} partitions in "
                f"all, because {why}")
    if cfg.instances is not None and len(cfg.instances) != cfg.clients:
        return (f"--clients {cfg.clients}: this preset gives its {len(cfg.instances)} clients their "
                f"group.instance.ids, so it needs exactly {len(cfg.instances)} clients")
    return None


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


class Symmetry:
    """Renaming clients: a state's canonical form and the size of its orbit.

    Clients configured alike (the same group.instance.id, or none) are interchangeable.
    A client's key is its own tuple plus the parked requests that refer to it; the
    canonical form sorts each class of clients by key and renames the references.
    """

    def __init__(self, cfg: WorldConfig):
        self.n = cfg.clients
        self.classes = cfg.symmetry_classes()
        self.single = len(self.classes) == 1
        self.no_park = WorldModel.blank_parked(cfg)

    def _keys(self, s: tuple) -> list:
        G = s[0]
        pj, ps = G[PJ], G[PS]
        return [(s[c + 1], tuple(m for m, x in enumerate(pj) if x == c), tuple(m for m, x in enumerate(ps) if x == c))
                for c in range(self.n)]

    def canon(self, s: tuple) -> tuple:
        G = s[0]
        parked = G[PJ] != self.no_park or G[PS] != self.no_park
        if self.single and not parked:          # the common case: sort the clients' tuples
            cl = s[1:]
            srt = tuple(sorted(cl))
            return s if srt == cl else (G,) + srt
        keys = self._keys(s) if parked else [(C,) for C in s[1:]]
        order = list(range(self.n))
        for cls in self.classes:
            for pos, old in zip(cls, sorted(cls, key=keys.__getitem__)):
                order[pos] = old
        return permute(s, tuple(order))

    def orbit(self, s: tuple) -> int:
        """How many states renaming makes of s: per class |class|! over the stabilizer (clients
        with equal keys, which refer to no parked request, may be exchanged)."""
        if self.single and s[0][PJ] == self.no_park and s[0][PS] == self.no_park:
            cl = s[1:]
            if len(set(cl)) == self.n:          # the common case: every client is different
                return factorial(self.n)
            keys = cl
        else:
            keys = self._keys(s)
        size = 1
        for cls in self.classes:
            size *= factorial(len(cls))
            for k in Counter(keys[c] for c in cls).values():
                size //= factorial(k)
        return size


def permute(s: tuple, order: tuple) -> tuple:
    """Rename clients: new client k is old client order[k]."""
    if list(order) == sorted(order):
        return s
    new_of = {old: new for new, old in enumerate(order)}
    G = list(s[0])
    for at in (PJ, PS):
        G[at] = tuple(NONE if v == NONE else new_of[v] for v in G[at])
    return (tuple(G),) + tuple(s[old + 1] for old in order)


def orbit_size(s: tuple, n_clients: int) -> int:
    """How many distinct states renaming clients makes of s (by enumeration; tests use it)."""
    from itertools import permutations
    return len({permute(s, order) for order in permutations(range(n_clients))})


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


class _Search:
    """What both searches keep: the visited canonical states with their parents, coverage, counts."""

    def __init__(self, cfg: WorldConfig, symmetry: bool, rows: list | None = None, model: WorldModel | None = None):
        self.cfg, self.symmetry = cfg, symmetry
        self.model = model or WorldModel(cfg, rows)
        self.sym = Symmetry(cfg)
        self.canon = self.sym.canon if symmetry else (lambda s: s)
        self.start = time.perf_counter()
        self.init = self.canon(self.model.initial())
        # the visited set: 64-bit fingerprints (Python's tuple hash, deterministic for tuples of
        # ints), each with its parent's fingerprint; a path is replayed from the initial state
        self.fp0 = hash(self.init)
        self.seen: dict[int, int | None] = {self.fp0: None}
        self.unreduced = self.sym.orbit(self.init) if symmetry else 1
        self.steps: dict = {}          # Step -> how many transitions it labels (rows: coverage)
        self.generated = 0
        self.depth = 0
        self.names = _checked(cfg)

    coverage_override: Counter | None = None    # the parallel search counts rows in its workers

    @property
    def coverage(self) -> Counter:
        if self.coverage_override is not None:
            return self.coverage_override
        cov: Counter = Counter()
        for step, k in self.steps.items():
            for r in step.rows:
                cov[r] += k
        return cov

    def finish(self, result: str, violation: str = "", at=None, last=None, seen=None) -> "Result":
        path = _path(self.model, seen or self.seen, self.canon, at, last) if at is not None else []
        res = Result(result, len(self.seen), self.generated, time.perf_counter() - self.start, self.depth,
                     self.symmetry, self.names, self.coverage, violation, path, complete=result != "stopped")
        res.unreduced_states = self.unreduced if self.symmetry else len(self.seen)
        return res


def check(cfg: WorldConfig, symmetry: bool = True, progress=None, max_states: int | None = None,
          deadlock: bool = True, liveness: bool = False, rows: list | None = None,
          model: WorldModel | None = None) -> Result:
    """Search the world breadth-first, level by level; with `liveness`, also look for a fair
    lasso stuck in a rebalance (the graph is kept, and symmetry is off so that fairness is
    per client).  `model`: a world model to search with (its memo tables stay filled)."""
    with _no_cyclic_gc():
        if liveness:
            return _check_liveness(cfg, max_states, deadlock, rows, progress)
        return _check(cfg, symmetry, progress, max_states, deadlock, rows, model)


def _check(cfg: WorldConfig, symmetry: bool, progress, max_states, deadlock: bool, rows, model=None) -> Result:
    S = _Search(cfg, symmetry, rows, model)
    model, canon, seen, steps, finish = S.model, S.canon, S.seen, S.steps, S.finish
    successors, violated, orbit = model.successors, model.violated, S.sym.orbit
    bad = violated(S.init)
    if bad:
        return finish("violation", bad, S.fp0)
    level = [(S.init, S.fp0)]
    generated = 0
    tick = 0
    pending = None      # a successor that breaks a state invariant, found while expanding this level
    while level:
        nxt = []
        depth = S.depth + 1
        for s, fs in level:
            # A failure of the expansion itself (a deadlock: a path of `depth - 1` steps; a row
            # breaking a step invariant: `depth` steps) is at least as short as a broken state
            # among the successors (`depth` steps), so once one of those is found the rest of the
            # level is still expanded, for the shorter failures only.
            try:
                succ = successors(s)
            except InvariantViolation as e:      # the failing step is the path's last: `depth` steps
                S.generated, S.depth = generated, depth
                return finish("violation", e.invariant.name, fs, last=_failing_step(e))
            if not succ and deadlock and not model.pruned and not model.is_end(s):
                S.generated = generated
                return finish("deadlock", "deadlock: no action is enabled", fs)
            if pending:
                continue
            generated += len(succ)
            for step, t in succ:
                steps[step] = steps.get(step, 0) + 1
                ct = canon(t)
                ft = hash(ct)
                if ft in seen:
                    continue
                seen[ft] = fs
                if symmetry:
                    S.unreduced += orbit(ct)
                bad = violated(ct)
                if bad:
                    pending = (bad, ft)
                    break
                nxt.append((ct, ft))
            tick += 1
            if tick & 1023 == 0:
                if progress:
                    progress(generated, len(seen), len(level) + len(nxt), depth, time.perf_counter() - S.start)
                if max_states and len(seen) >= max_states:
                    S.generated = generated
                    return finish("stopped")
        if pending:
            S.generated, S.depth = generated, depth
            return finish("violation", pending[0], pending[1])
        if nxt:
            S.depth = depth
        level = nxt
        if max_states and len(seen) >= max_states:
            break
    S.generated = generated
    return finish("ok" if not (max_states and len(seen) >= max_states and level) else "stopped")


def _check_liveness(cfg: WorldConfig, max_states, deadlock: bool, rows, progress) -> Result:
    """The search with the state graph kept, then the fair-lasso and progress checks."""
    from .liveness import _stem, find_lasso, find_no_progress
    S = _Search(cfg, False, rows)
    model, seen, steps, finish = S.model, S.seen, S.steps, S.finish
    bad = model.violated(S.init)
    if bad:
        return finish("violation", bad, S.fp0)
    ids: dict = {S.init: 0}
    states_by_id: list = [S.init]
    edges: list = [[]]
    bounded: set = set()      # states whose successors a bound cut off
    queue = deque([(S.init, S.fp0, 0)])
    last_report = S.start
    while queue:
        s, fs, d = queue.popleft()
        S.depth = max(S.depth, d)
        i = ids[s]
        try:
            succ = model.successors(s)
        except InvariantViolation as e:
            return finish("violation", e.invariant.name, fs, last=_failing_step(e))
        if model.pruned:
            bounded.add(i)
        if not succ and deadlock and not model.pruned and not model.is_end(s):
            return finish("deadlock", "deadlock: no action is enabled", fs)
        for step, t in succ:
            S.generated += 1
            steps[step] = steps.get(step, 0) + 1
            j = ids.get(t)
            if j is None:
                j = ids[t] = len(states_by_id)
                states_by_id.append(t)
                edges.append([])
            edges[i].append((j, step))
            ft = hash(t)
            if ft in seen:
                continue
            seen[ft] = fs
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
    flat = [model.flat(s) for s in states_by_id]     # liveness reads the spec's view
    labelled = [[(j, st.action) for j, st in es] for es in edges]
    # the more specific diagnosis first: a fair cycle stuck in a rebalance
    # timely clients (their heartbeat thread runs) heartbeat again and again: strongly fair
    lasso = find_lasso(flat, labelled, bounded, strong=("heartbeat",) if cfg.timely else ())
    if lasso is not None:
        stem, loop = lasso
        res = finish("lasso", "a fair cycle stays in PreparingRebalance/CompletingRebalance forever")
        res.path = _lasso_path(flat, edges, stem + loop[1:])
        res.loop_start = len(stem) - 1
        return _counterexample_depth(res)
    stuck = find_no_progress(states_by_id, labelled, bounded, model.is_end, model.some_stable)
    if stuck is not None:
        res = finish("no-progress", "no client can ever get an assignment again")
        res.path = _lasso_path(flat, edges, _stem(labelled, stuck))
        return _counterexample_depth(res)
    return finish("ok")


def _counterexample_depth(res: Result) -> Result:
    """A liveness counterexample is found after the whole graph is searched: its depth is its own
    length in steps (a lasso: the stem and one lap of the loop), as a safety counterexample's is,
    not how deep the search went."""
    res.depth = len(res.path) - 1
    return res


def _lasso_path(states: list, edges: list, ids: list) -> list:
    path = [(None, states[ids[0]])]
    for a, b in zip(ids, ids[1:]):
        step = next(st for j, st in edges[a] if j == b)
        path.append((step, states[b]))
    return path


def _checked(cfg: WorldConfig) -> list[str]:
    return [i.name for i in INVARIANTS if i.kind in ("state", "step", "output")] + \
        [i.name for i in world_invariants(cfg)]


def _failing_step(e: InvariantViolation) -> Step:
    row = getattr(e, "row", "")
    return Step(f"row {row!r} breaks {e.invariant.name}", (row,) if row else ())


def _path(model: WorldModel, seen: dict, canon, at: int, last=None) -> list:
    """A concrete shortest path to the state with fingerprint `at`, replayed from the initial
    state, in the spec's variable-by-variable view."""
    chain = []
    cur = at
    while cur is not None:
        chain.append(cur)
        cur = seen[cur]
    chain.reverse()
    state = model.initial()
    path = [(None, model.flat(state))]
    for target in chain[1:]:
        for step, t in model.successors(state):
            if hash(canon(t)) == target:
                path.append((step, model.flat(t)))
                state = t
                break
        else:  # pragma: no cover - the search found this edge
            raise RuntimeError("counterexample replay lost its way")
    if last is not None:
        path.append((last, model.flat(state)))
    return path


# -- the parallel search ---------------------------------------------------------------------
# Each worker process owns the states whose group part G hashes to it: it keeps their
# fingerprints (the visited set is sharded), expands them, and sends the successors it does not
# own to their owner.  Sharding by G keeps a worker's memo tables (deliveries and timers are
# keyed by G) to its own share, and a client's step, which keeps G (unless renaming clients
# rewrites a parked reference), stays in the worker.
# States cross in marshal batches (tuples of ints; sub-tuples shared between states are written
# once), and a worker sends each foreign state once.  Breadth-first, level by level: the main process only relays the
# batches and sums the counts, so a counterexample is still a shortest one.

def _owner(ct: tuple, n: int) -> int:
    return hash(ct[0]) % n


class _Shard:
    """One worker's part of the search."""

    def __init__(self, wid: int, n: int, cfg: WorldConfig, symmetry: bool, rows):
        self.wid, self.n = wid, n
        self.model = WorldModel(cfg, rows)
        sym = Symmetry(cfg)
        self.canon = sym.canon if symmetry else (lambda s: s)
        self.orbit = sym.orbit if symmetry else (lambda s: 1)
        init = self.canon(self.model.initial())
        self.seen: dict = {}
        self.frontier: list = []
        if _owner(init, n) == wid:
            self.seen[hash(init)] = None
            self.frontier = [(init, hash(init))]
        self.next: list = []
        self.sent: set = set()                              # foreign fingerprints already sent
        self.parts: dict = {}                               # received parts, one object each
        self.steps: dict = {}

    def _keep(self, ft: int, fs: int, ct: tuple, stats: dict) -> None:
        self.seen[ft] = fs
        stats["new"] += 1
        stats["unreduced"] += self.orbit(ct)
        if stats["failure"] is None:
            bad = self.model.violated(ct)
            if bad:
                stats["failure"] = ("violation", ft, bad, "")
        self.next.append((ct, ft))

    def expand(self) -> bytes:
        model, canon, seen, steps, wid, n = self.model, self.canon, self.seen, self.steps, self.wid, self.n
        successors, sent = model.successors, self.sent
        stats = {"new": 0, "unreduced": 0, "generated": 0, "failure": None}
        batches: list = [[] for _ in range(n)]
        generated = 0
        for s, fs in self.frontier:
            try:
                succ = successors(s)
            except InvariantViolation as e:
                stats["failure"] = ("violation", fs, e.invariant.name, getattr(e, "row", ""))
                break
            if not succ and not model.pruned and not model.is_end(s):
                stats["failure"] = ("deadlock", fs, "", "")
                break
            generated += len(succ)
            for step, t in succ:
                steps[step] = steps.get(step, 0) + 1
                ct = canon(t)
                ft = hash(ct)
                o = hash(ct[0]) % n
                if o == wid:
                    if ft not in seen:
                        self._keep(ft, fs, ct, stats)
                    continue
                if ft in sent:
                    continue
                sent.add(ft)
                batches[o].append((ft, fs, ct))
        stats["generated"] = generated
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
        self.frontier, self.next = self.next, []
        return stats

    def coverage(self) -> dict:
        cov: dict = {}
        for step, k in self.steps.items():
            for r in step.rows:
                cov[r] = cov.get(r, 0) + k
        return cov


def _shard_main(conn, wid: int, n: int, cfg: WorldConfig, symmetry: bool, rows, parent: int) -> None:
    gc.disable()
    die_with_parent(parent)
    try:
        shard = _Shard(wid, n, cfg, symmetry, rows)
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
                conn.send((arg in shard.seen, shard.seen.get(arg)))
            elif cmd == "coverage":
                conn.send(shard.coverage())
            else:
                break
    except (EOFError, KeyboardInterrupt):
        pass
    except BaseException:                       # pragma: no cover - reported by the main process
        import traceback
        conn.send(("error", traceback.format_exc()))


def check_parallel(cfg: WorldConfig, workers: int = 2, symmetry: bool = True, progress=None,
                   max_states: int | None = None, rows: list | None = None) -> Result:
    """Breadth-first, level by level, over `workers` processes that each own a shard of the states."""
    with _no_cyclic_gc():
        return _check_parallel(cfg, workers, symmetry, progress, max_states, rows)


def _check_parallel(cfg: WorldConfig, workers: int, symmetry: bool, progress, max_states, rows) -> Result:
    import multiprocessing as mp
    ctx = mp.get_context("fork")      # the workers inherit the compiled table; nothing to pickle
    S = _Search(cfg, symmetry, rows)
    model, finish = S.model, S.finish
    bad = model.violated(S.init)
    if bad:
        return finish("violation", bad, S.fp0)
    pipes, procs = [], []
    for wid in range(workers):
        here, there = ctx.Pipe()
        p = ctx.Process(target=_shard_main, args=(there, wid, workers, cfg, symmetry, rows, os.getpid()),
                        daemon=True)
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
        distinct, unreduced = 1, S.unreduced
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
            S.generated += sum(st["generated"] for st in stats)
            new = sum(st["new"] for st in stats)
            distinct += new
            unreduced += sum(st["unreduced"] for st in stats)
            failures = [st["failure"] for st in stats if st["failure"]]
            if new or failures:
                S.depth += 1
            if progress:
                progress(S.generated, distinct, new, S.depth, time.perf_counter() - S.start)
            if failures:
                # expansion failures (a state at the previous depth) before state violations
                kind, fp, inv, row = min(failures, key=lambda f: f[0] != "deadlock" and not f[3])
                result = (kind, fp, inv, row)
            elif not new:
                result = ("ok", None, "", "")
            elif max_states and distinct >= max_states:
                result = ("stopped", None, "", "")
        S.coverage_override = Counter()
        for conn in pipes:
            S.coverage_override.update(ask(conn, ("coverage", None)))
        kind, fp, inv, row = result
        seen = _DistributedParents(pipes, ask, S.fp0)
        if kind == "deadlock":
            S.depth -= 1
            res = finish("deadlock", "deadlock: no action is enabled", fp, seen=seen)
        elif kind == "violation" and row:      # the failing step is the path's last
            res = finish("violation", inv, fp, last=Step(f"row {row!r} breaks {inv}", (row,)), seen=seen)
        elif kind == "violation":
            res = finish("violation", inv, fp, seen=seen)
        else:
            res = finish(kind, seen=seen)
        res.distinct_states = distinct
        res.unreduced_states = unreduced if symmetry else distinct
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

    def __init__(self, pipes, ask, fp0):
        self.pipes, self.ask, self.fp0 = pipes, ask, fp0

    def __getitem__(self, fp):
        if fp == self.fp0:
            return None
        for conn in self.pipes:
            has, parent = self.ask(conn, ("parent", fp))
            if has:
                return parent
        raise KeyError(fp)
