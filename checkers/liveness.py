"""Bounded liveness: can the group stay in a rebalance forever?

Over the explored graph of a bounded world, find a reachable cycle in which
the group never leaves PreparingRebalance or CompletingRebalance (whether
clients keep acting or wait on parked requests), and which is fair: every timer that stays armed, every
message that stays in flight and every response that stays unread along
the cycle is eventually taken.  Which actions are fair, and how, is
declared with the world's actions (spec/world.py ACTIONS): weakly fair
timers, network and clients' own progress; crashes, leaves, heartbeats and
commits are the environment's free choices.  Such a cycle is a lasso: a path to it, and the loop (the class of
KAFKA-12890, and of a join that never completes).

Fair cycles are found as in model checkers for weak fairness: take the
strongly connected components of the "stuck" subgraph; a component is
fair if every fair action class enabled in all its states labels some
edge inside it.  States whose successors a bound cut off are left out: a
cycle through them proves nothing.
"""
from __future__ import annotations

from collections import deque

from groupspec.spec.schema import STATES
from groupspec.spec import engine as E
from groupspec.spec.world import STRONG, UNFAIR

STUCK = {STATES.index("PreparingRebalance"), STATES.index("CompletingRebalance")}
# Edges are labelled (fairness class, fairness, fault?): the declared fairness of the step's
# action (spec/world.py ACTIONS, through world_model.action_class).  Nothing here reads a
# step's name.


def find_lasso(states: list, edges: list, bounded: set = frozenset()) -> tuple[list[int], list[int]] | None:
    """(stem, loop) of state indices, or None.  states[i] is a world tuple; edges[i] a list of
    (j, (fairness class, fairness, fault?)).

    States in `bounded` had successors cut off by the world's bounds: a cycle through
    them proves nothing (the cut-off step might leave it), so they are left out.  A
    strongly fair class (a timely client's heartbeat thread) is taken eventually if enabled
    again and again, so a cycle that keeps passing a state where one is enabled without
    taking it is not fair.
    """
    stuck = [E.get(s, "state") in STUCK and i not in bounded for i, s in enumerate(states)]
    for comp, members, inner in _fair_components(len(states), edges, stuck):
        return _stem(edges, comp[0]), _loop(edges, members, comp[0], inner)
    return None


def _fair_components(n: int, edges: list, keep: list):
    """Strongly connected components (of the states with keep[i]) that hold a fair cycle: every
    weakly fair class enabled in all their states, and every strongly fair class enabled in any
    of them, labels an edge inside.  A component that starves a strongly fair class may still
    hold a fair cycle away from the states that enable it: those are dropped and the rest is
    searched again (the usual refinement for strong fairness)."""
    yield from _fair_within(n, edges, keep, None)


def _fair_within(n: int, edges: list, keep, roots):
    """(component, its states, its inner edges) for each fair component among `roots`."""
    for comp in _sccs(n, edges, keep, roots):
        members = set(comp)
        inner = [(i, j, lab) for i in comp for j, lab in edges[i] if j in members]
        if not inner:
            continue
        taken = {lab[0] for _, _, lab in inner}
        starved = {i for i in comp for _, lab in edges[i] if lab[1] == STRONG and lab[0] not in taken}
        if starved:
            rest = members - starved
            yield from _fair_within(n, edges, _Within(rest), sorted(rest))
            continue
        enabled_everywhere = None
        for i in comp:
            fair_here = {lab[0] for _, lab in edges[i] if lab[1] != UNFAIR}
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


def _stem(edges: list, target: int) -> list[int]:
    """A shortest path from state 0 to target (breadth-first over the graph)."""
    parent = {0: None}
    q = deque([0])
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


def find_no_progress(states: list, edges: list, bounded: set, is_end, stable) -> int | None:
    """A reachable state from which no client can ever become stable again, or None.

    Good states: some client is stable, every client has stopped (`is_end`), or a bound
    cut the state's successors (what lies beyond is unknown, so it is not blamed).  A
    state that cannot reach a good state is a dead end for the group: Kafka's protocol
    promises a consumer that keeps trying eventually gets an assignment.  Paths through a
    client's crash or restart do not count: a group that gets unstuck only if its
    consumers die is stuck (otherwise crashing every client would excuse any state).
    """
    n = len(states)
    preds: list = [[] for _ in range(n)]
    for i, es in enumerate(edges):
        for j, label in es:
            if not label[2]:
                preds[j].append(i)
    good = [stable(s) or is_end(s) or i in bounded for i, s in enumerate(states)]
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
