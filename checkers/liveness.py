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
# the network is the reordering fault's choice; a poll loop that hangs, what its heartbeat thread
# sends meanwhile and whether it ever leaves are the hung_poll fault's (it need never sync)
ENVIRONMENT = ("leave the group", "crash", "heartbeat", "commit offsets",
               "request timed out in the network, rejoin (it arrives late)",
               "heartbeat or commit timed out in the network (it arrives late)",
               "join: joined, then the poll loop hangs before SyncGroup", "hung: the heartbeat thread heartbeats",
               "hung past max.poll.interval.ms: the heartbeat thread leaves")


# client rows that are faults: no progress may depend on them
CLIENT_FAULTS = ("crash", "restart after a crash", "join: joined, then the poll loop hangs before SyncGroup",
                 "hung past max.poll.interval.ms: the heartbeat thread leaves")


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


def find_lasso(states: list, edges: list, bounded: set = frozenset(),
               strong: tuple = ()) -> tuple[list[int], list[int]] | None:
    """(stem, loop) of state indices, or None.  states[i] is a world tuple; edges[i] a list of (j, label).

    States in `bounded` had successors cut off by the world's bounds: a cycle through
    them proves nothing (the cut-off step might leave it), so they are left out.
    `strong`: environment rows that are strongly fair in this world (a timely client's
    heartbeat thread): taken eventually if enabled again and again, so a cycle that keeps
    passing a state where one is enabled without taking it is not fair.
    """
    stuck = [E.get(s, "state") in STUCK and i not in bounded for i, s in enumerate(states)]
    for comp, members, inner in _fair_components(len(states), edges, stuck, strong):
        return _stem(edges, comp[0]), _loop(edges, members, comp[0], inner)
    return None


def _fair_components(n: int, edges: list, keep: list, strong: tuple):
    """Strongly connected components (of the states with keep[i]) that hold a fair cycle: every
    weakly fair class enabled in all their states, and every strongly fair class enabled in any
    of them, labels an edge inside.  A component that starves a strongly fair class may still
    hold a fair cycle away from the states that enable it: those are dropped and the rest is
    searched again (the usual refinement for strong fairness)."""
    def is_strong(label: str) -> bool:
        return is_client(label) and label.split(": ", 1)[1] in strong

    yield from _fair_within(n, edges, keep, is_strong, None)


def _fair_within(n: int, edges: list, keep, is_strong, roots):
    """(component, its states, its inner edges) for each fair component among `roots`."""
    for comp in _sccs(n, edges, keep, roots):
        members = set(comp)
        inner = [(i, j, lab) for i in comp for j, lab in edges[i] if j in members]
        if not inner:
            continue
        taken = {action_class(lab)[0] for _, _, lab in inner}
        starved = {i for i in comp for _, lab in edges[i]
                   if is_strong(lab) and action_class(lab)[0] not in taken}
        if starved:
            rest = members - starved
            yield from _fair_within(n, edges, _Within(rest), is_strong, sorted(rest))
            continue
        enabled_everywhere = None
        for i in comp:
            fair_here = {action_class(lab)[0] for _, lab in edges[i] if action_class(lab)[1]}
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
            if not (is_client(label) and label.split(": ", 1)[1] in CLIENT_FAULTS):
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
