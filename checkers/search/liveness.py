"""Bounded liveness: can the group stay in a rebalance forever?

Over the explored graph of a bounded world, find a reachable cycle in which
the group never leaves PreparingRebalance or CompletingRebalance (whether
clients keep acting or wait on parked requests), and which is fair: every timer that stays armed, every
message that stays in flight and every response that stays unread along
the cycle is eventually taken.  Which actions are fair, and how, is
declared with the world's actions (spec/world.py ACTIONS): weakly fair
timers, network and clients' own progress; crashes, leaves, heartbeats and
commits are the environment's free choices.  Such a cycle is a lasso: a
path to it, and the loop (the class of
KAFKA-12890, and of a join that never completes).

Fair cycles are found as in model checkers for weak fairness: take the
strongly connected components of the "stuck" subgraph; a component is
fair if every fair action class enabled in all its states labels some
edge inside it.  States whose successors a bound cut off are left out: a
cycle through them proves nothing.

What is stuck, what is progress, and each step's fairness are the model's
answers (checkers/search/model.py: `transient`, `progress`, `action_class`,
`is_fault`); this module only walks the graph, and reads no step's name.
"""
from __future__ import annotations

from collections import deque

from groupspec.spec.world import STRONG, UNFAIR

from .model import Model


def find_lasso(model: Model, states: list, edges: list, bounded: set = frozenset(),
               initial=range(1)) -> tuple[list[int], list[int]] | None:
    """(stem, loop) of state indices, or None.  states[i] is a model's state; edges[i] a list of
    (j, step); `initial` the indices of the initial states.

    States in `bounded` had successors cut off by the model's boundary: a cycle through
    them proves nothing (the cut-off step might leave it), so they are left out.  A
    strongly fair class (a timely client's heartbeat thread) is taken eventually if enabled
    again and again, so a cycle that keeps passing a state where one is enabled without
    taking it is not fair.
    """
    stuck = [model.transient(s) and i not in bounded for i, s in enumerate(states)]
    classes: dict = {}

    def action_class(step) -> tuple:      # asked per edge: one answer per step object
        got = classes.get(step)
        if got is None:
            got = classes[step] = model.action_class(step)
        return got
    for comp, members, inner in _fair_within(len(states), edges, stuck, action_class, None):
        return shortest_path(edges, initial, comp[0]), _loop(edges, members, comp[0], inner)
    return None


def _fair_within(n: int, edges: list, keep, action_class, roots):
    """Strongly connected components (of the states with keep[i], among `roots`) that hold a
    fair cycle, as (component, its states, its inner edges): every weakly fair class enabled in
    all their states, and every strongly fair class enabled in any of them, labels an edge
    inside.  A component that starves a strongly fair class may still hold a fair cycle away
    from the states that enable it: those are dropped and the rest is searched again (the usual
    refinement for strong fairness)."""
    for comp in _sccs(n, edges, keep, roots):
        members = set(comp)
        inner = [(i, j, step) for i in comp for j, step in edges[i] if j in members]
        if not inner:
            continue
        taken = {action_class(step)[0] for _, _, step in inner}
        starved = set()
        for i in comp:
            for _, step in edges[i]:
                cls, fairness = action_class(step)
                if fairness == STRONG and cls not in taken:
                    starved.add(i)
        if starved:
            rest = members - starved
            yield from _fair_within(n, edges, _Within(rest), action_class, sorted(rest))
            continue
        enabled_everywhere = None
        for i in comp:
            fair_here = {cls for cls, fairness in (action_class(step) for _, step in edges[i]) if fairness != UNFAIR}
            enabled_everywhere = fair_here if enabled_everywhere is None else enabled_everywhere & fair_here
        if enabled_everywhere and not enabled_everywhere <= taken:
            continue                               # some fair action is starved: not a fair cycle
        yield comp, members, inner


def _sccs(n: int, edges: list, keep: list, roots=None):
    """Tarjan's algorithm, iterative, over the states with keep[i] (all of them among `roots`)."""
    index: dict = {}
    low: dict = {}
    on: set = set()
    stack: list = []
    counter = 0
    for root in (range(n) if roots is None else roots):
        if not keep[root] or root in index:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            succ = [j for j, _ in edges[v] if keep[j]]
            if k < len(succ):
                w = succ[k]
                work.append((v, k + 1))
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            for w in succ:
                if w in on:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                yield comp


class _Within:
    """keep[i] for the states of a set."""
    __slots__ = ("states",)

    def __init__(self, states: set):
        self.states = states

    def __getitem__(self, i: int) -> bool:
        return i in self.states


def shortest_path(edges: list, initial, target: int) -> list[int]:
    """A shortest path from one of the states `initial` to target (breadth-first)."""
    parent = dict.fromkeys(initial)
    q = deque(initial)
    while q:
        v = q.popleft()
        if v == target:
            break
        for j, _ in edges[v]:
            if j not in parent:
                parent[j] = v
                q.append(j)
    return _back(parent, target)


def _loop(edges: list, members: set, start: int, inner: list) -> list[int]:
    """A cycle from start back to start inside the component, through a client edge."""
    parent = {start: None}
    q = deque([start])
    found = None
    while q and found is None:
        v = q.popleft()
        for j, lab in edges[v]:
            if j not in members:
                continue
            if j == start:
                found = v
                break
            if j not in parent:
                parent[j] = v
                q.append(j)
    return _back(parent, found) + [start]


def _back(parent: dict, v) -> list[int]:
    """The path to v, following parent pointers back to the root."""
    path = []
    while v is not None:
        path.append(v)
        v = parent[v]
    return path[::-1]


def find_no_progress(model: Model, states: list, edges: list, bounded: set) -> int | None:
    """A reachable state from which no progress can ever be made again, or None.

    Good states: the model's `progress` (for the world: some client is stable), a
    legitimate end (every client has stopped), or a bound cut the state's successors
    (what lies beyond is unknown, so it is not blamed).  A state that cannot reach a good
    state is a dead end for the group: Kafka's protocol promises a consumer that keeps
    trying eventually gets an assignment.  Paths through a fault (a client's crash or
    restart) do not count: a group that gets unstuck only if its consumers die is stuck
    (otherwise crashing every client would excuse any state).
    """
    n = len(states)
    preds: list = [[] for _ in range(n)]
    faults: dict = {}
    for i, es in enumerate(edges):
        for j, step in es:
            fault = faults.get(step)
            if fault is None:
                fault = faults[step] = model.is_fault(step)
            if not fault:
                preds[j].append(i)
    good = [model.progress(s) or model.is_end(s) or i in bounded for i, s in enumerate(states)]
    can = list(good)
    queue = deque(i for i in range(n) if good[i])
    while queue:
        j = queue.popleft()
        for i in preds[j]:
            if not can[i]:
                can[i] = True
                queue.append(i)
    bad = [i for i in range(n) if not can[i]]
    return min(bad) if bad else None     # the first found in breadth-first order: a shortest path
