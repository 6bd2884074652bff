"""Bounded liveness: can the group stay in a rebalance forever?

Over the explored graph of a bounded world, find a reachable cycle in which
the group never leaves PreparingRebalance or CompletingRebalance (whether
clients keep acting or wait on parked requests), and which is fair: every timer that stays armed, every
message that stays in flight and every response that stays unread along
the cycle is eventually taken (weak fairness of the coordinator's timers,
of the network, and of clients reading their responses).  Crashes,
leaves, heartbeats and commits are the environment's free choices.
Such a cycle is a lasso: a path to it, and the loop (the class of
KAFKA-12890, and of a join that never completes).

Fair cycles are found as in model checkers for weak fairness: take the
strongly connected components of the "stuck" subgraph; a component is
fair if every fair action class enabled in all its states labels some
edge inside it.  States whose successors a bound cut off are left out: a
cycle through them proves nothing.
"""
from __future__ import annotations

import re
from collections import deque

from groupspec.spec.schema import STATES
from groupspec.spec import engine as E

STUCK = {STATES.index("PreparingRebalance"), STATES.index("CompletingRebalance")}
# the client rows that are the environment's free choices (a coordinator failover is one too:
# its label is no client's, so action_class leaves it unfair); giving up on a request still in
# the network is the reordering fault's choice
ENVIRONMENT = ("leave the group", "crash", "heartbeat", "commit offsets",
               "request timed out in the network, rejoin (it arrives late)",
               "heartbeat or commit timed out in the network (it arrives late)")


def action_class(label: str) -> tuple[str, bool]:
    """(class, fair?) of a step label: fairness is per client and per timer.

    A client's step is labelled `c<k>: <client row>`; the environment's choices are
    the client rows named exactly as in ENVIRONMENT (a prefix would also take
    "heartbeat or commit: ...", which is the client reading a response), and the
    coordinator's failover, whose label is no client's.
    """
    if label.startswith("deliver "):
        return label, True                       # the network delivers each client's request
    if is_client(label):
        client, what = label.split(": ", 1)
        if what in ENVIRONMENT:
            return f"{client}: {what}", False
        return f"{client}: reads its response", True
    if "timer" in label or "delayed join" in label:
        return label, True                       # an armed timer eventually fires
    return label, False


def is_client(label: str) -> bool:
    return re.match(r"c\d+: ", label) is not None


def find_lasso(states: list, edges: list, bounded: set = frozenset()) -> tuple[list[int], list[int]] | None:
    """(stem, loop) of state indices, or None.  states[i] is a world tuple; edges[i] a list of (j, label).

    States in `bounded` had successors cut off by the world's bounds: a cycle through
    them proves nothing (the cut-off step might leave it), so they are left out.
    """
    stuck = [E.get(s, "state") in STUCK and i not in bounded for i, s in enumerate(states)]
    for comp in _sccs(len(states), edges, stuck):
        members = set(comp)
        inner = [(i, j, lab) for i in comp for j, lab in edges[i] if j in members]
        if not inner:
            continue
        taken = {action_class(lab)[0] for _, _, lab in inner}
        enabled_everywhere = None
        for i in comp:
            fair_here = {action_class(lab)[0] for _, lab in edges[i] if action_class(lab)[1]}
            enabled_everywhere = fair_here if enabled_everywhere is None else enabled_everywhere & fair_here
        if enabled_everywhere and not enabled_everywhere <= taken:
            continue                               # some fair action is starved: not a fair cycle
        return _stem(edges, comp[0]), _loop(edges, members, comp[0], inner)
    return None


def _sccs(n: int, edges: list, keep: list):
    """Tarjan's algorithm, iterative, over the states with keep[i]."""
    index = [-1] * n
    low = [0] * n
    on = [False] * n
    stack: list = []
    counter = 0
    for root in range(n):
        if not keep[root] or index[root] != -1:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on[v] = True
            succ = [j for j, _ in edges[v] if keep[j]]
            if k < len(succ):
                w = succ[k]
                work.append((v, k + 1))
                if index[w] == -1:
                    work.append((w, 0))
                elif on[w]:
                    low[v] = min(low[v], index[w])
                continue
            for w in succ:
                if on[w]:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on[w] = False
                    comp.append(w)
                    if w == v:
                        break
                yield comp


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
    promises a consumer that keeps trying eventually gets an assignment.
    """
    n = len(states)
    preds: list = [[] for _ in range(n)]
    for i, es in enumerate(edges):
        for j, _ in es:
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
