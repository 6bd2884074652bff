"""Breadth-first search to a given depth, its last level kept: where another engine takes over.

Bounded model checking from the initial state proves every depth before a violation clean, and
that proof is what grows with depth.  Started instead from the states breadth-first search
reaches in exactly `depth` steps (`levels_to`), it answers the depths past them, counted from the
initial state: a state first reached at depth e > `depth` lies e - `depth` steps past some state
first reached at `depth` (a shortest path to it passes one), so the first depth the other engine
finds a violation at, all of them searched in order, is a shortest violation's.

With the model's symmetry, a level holds one state of each orbit, as the search of explicit.py does, but kept
as it was reached (the successor the search computed), not as its representative: each kept state
is a successor of its parent as kept, so the path to any state of the last level is concrete
(replayed from an initial state along the stored parents), and the other engine starts from real
states at the end of real paths.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from groupspec.spec.invariants import InvariantViolation

from .explicit import Result, _no_cyclic_gc
from .model import Model


@dataclass
class Prefix:
    """The search to `depth`: `ended` if it ended first (a violation, a deadlock, or no state that far:
    'ok'), else `states`, the distinct states first reached at `depth` (one of each orbit with
    symmetry), and `path(i)` to the i-th of them."""
    model: Model
    depth: int
    ended: Result | None
    states: list = field(default_factory=list)
    levels: list = field(default_factory=list)       # distinct states first reached at each depth
    distinct_states: int = 0
    seconds: float = 0.0
    _seen: dict = field(default_factory=dict, repr=False)      # key -> (parent's key, hash of the kept state)
    _keys: list = field(default_factory=list, repr=False)

    def path(self, i: int) -> list:
        """[(Step | None, flat state)] from an initial state to `states[i]`, each state the kept one."""
        return _path(self.model, self._seen, self._keys[i])


def levels_to(model: Model, depth: int, deadlock: bool = True, widest: int | None = None) -> Prefix:
    """Search `model` breadth-first, with its symmetry, until every state `depth` steps away is kept
    (`depth` >= 0), or with `widest`, until the next level would hold more states than that (the search
    stops before the first such level, at `Prefix.depth`; the first level is kept whatever its size).  As
    explicit.py's search, once a successor breaks a property the rest of its level is still expanded for
    the failures as short or shorter (a deadlock, a step breaking a property on its way)."""
    t0 = time.perf_counter()
    rep = model.representative
    seen: dict = {}
    level, keys, levels = [], [], []
    invariants = model.invariants()

    def ended(kind: str, violation: str = "", at=None, last=None, d: int = 0) -> Prefix:
        path = _path(model, seen, at, last) if at is not None else []
        res = Result(kind, len(seen), 0, time.perf_counter() - t0, d, True, invariants, Counter(),
                     violation, path, levels=list(levels))
        return Prefix(model, depth, res, levels=list(levels), distinct_states=len(seen),
                      seconds=time.perf_counter() - t0)

    def keep(t, parent) -> tuple:
        """t kept if its orbit is new: (its key, the property it breaks or None); (None, None) if seen."""
        kt = hash(rep(t))
        if kt in seen:
            return None, None
        seen[kt] = (parent, hash(t))
        return kt, model.violated(t)

    with _no_cyclic_gc():
        for s in model.init_states():
            k, bad = keep(s, None)
            if bad:
                levels.append(len(seen))
                return ended("violation", bad, k)
            if k is not None:
                level.append(s)
                keys.append(k)
        levels.append(len(level))
        for d in range(1, depth + 1):
            nxt, nkeys, pending = [], [], None
            for s, k in zip(level, keys):
                try:
                    succ, cut = model.successors(s)
                except InvariantViolation as e:
                    return ended("violation", e.invariant.name, k, model.failing_step(e), d)
                if not succ and not cut and deadlock and not model.is_end(s):
                    return ended("deadlock", "deadlock: no action is enabled", k, d=d - 1)
                for _, t in ([] if pending else succ):
                    kt, bad = keep(t, k)
                    if bad:
                        pending = (bad, kt)
                        break
                    if kt is not None:
                        nxt.append(t)
                        nkeys.append(kt)
            if pending:
                levels.append(len(nxt) + 1)
                return ended("violation", pending[0], pending[1], d=d)
            if not nxt:
                return ended("ok", d=d - 1)
            if widest is not None and len(nxt) > widest:
                depth = d - 1
                break
            levels.append(len(nxt))
            level, keys = nxt, nkeys
    return Prefix(model, depth, None, level, levels, sum(levels), time.perf_counter() - t0, seen, keys)


def _path(model: Model, seen: dict, key, last=None) -> list:
    """The kept states from an initial one to `key`'s, replayed (each a successor of the one before, found
    by its hash), in the model's flat view; `last`: a step that broke a property, at the end."""
    chain = []
    while key is not None:
        parent, h = seen[key]
        chain.append(h)
        key = parent
    chain.reverse()
    state = next(s for s in model.init_states() if hash(s) == chain[0])
    path = [(None, model.flat(state))]
    for h in chain[1:]:
        step, state = next(((st, t) for st, t in model.successors(state)[0] if hash(t) == h), (None, None))
        if step is None:         # pragma: no cover - the search kept this successor
            raise RuntimeError("the path to a state the search kept lost its way: the model's successors changed")
        path.append((step, model.flat(state)))
    if last is not None:
        path.append((last, model.flat(state)))
    return path
