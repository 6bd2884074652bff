"""Partial-order reduction: states, transitions and seconds with and without it, per preset, and in
a 3-client world with every fault but reordering and 2 generations (issue 28).

    .venv/bin/python benchmarks/reduction.py [--presets tiny,small,...] [--repeat 3]
                                             [--three-clients-max-states N]

One process (the reduced search is sequential), symmetry on for both.  Per preset and run, the full
and the reduced search run one after the other, so `seconds_ratio` (full / reduced) is measured in
one run; `state_factor` and `transition_factor` do not depend on the machine.  The 3-client world
does not finish in minutes either way: both searches stop at the same number of distinct states
and the states first reached per depth are compared level by level.  `steps` says what the
successors of the first states of each world are: a client's own step that changes nothing the
invariants read (what an ample set may hold), a client's own visible one, or a step of the
coordinator (deliveries, timers, failover), which shares the group with every other.
Prints one JSON object.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
from collections import Counter

from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.clients import CP
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel
from groupspec.spec.footprint import LOCAL, VISIBLE

THREE = dataclasses.replace(PRESETS["ci"], clients=3)       # `groupspec check --preset ci --clients 3`


def _run(cfg, reduction: bool, max_states=None) -> dict:
    r = check(WorldModel(cfg), reduction=reduction, max_states=max_states)
    return {"result": r.result, "violation": r.violation or None, "complete": r.complete,
            "distinct_states": r.distinct_states, "transitions": r.generated, "enabled": r.enabled,
            "ample_states": r.ample_states, "seconds": round(r.seconds, 2), "depth": r.depth, "levels": r.levels}


def steps(cfg, states: int = 20_000) -> dict:
    """What the successors of the first `states` states (breadth-first) are, as shares."""
    m = WorldModel(cfg)
    visible = [CP[v] for v in sorted(VISIBLE) if v in CP]
    kinds: Counter = Counter()
    seen, level = set(), m.init_states()
    while level and len(seen) < states:
        nxt = []
        for s in level:
            for st, t in m.successors(s)[0]:
                if st.act in LOCAL:
                    c = st.who[0]
                    same = all(s[c + 1][p] == t[c + 1][p] for p in visible)
                    kinds["own, invisible" if same else "own, visible"] += 1
                else:
                    kinds["coordinator"] += 1
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        level = nxt
    total = sum(kinds.values())
    return {k: round(v / total, 3) for k, v in kinds.most_common()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="tiny,small,twogen,faults,static,hung,settle")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--three-clients-max-states", type=int, default=500_000)
    args = ap.parse_args()
    presets = {}
    for name in args.presets.split(","):
        runs = [(_run(PRESETS[name], False), _run(PRESETS[name], True)) for _ in range(args.repeat)]
        full, red = runs[0]
        presets[name] = {
            "verdicts": [full["result"], red["result"]], "violations": [full["violation"], red["violation"]],
            "distinct_states": [full["distinct_states"], red["distinct_states"]],
            "state_factor": round(full["distinct_states"] / red["distinct_states"], 3),
            "transition_factor": round(full["transitions"] / red["transitions"], 3),
            "ample_states": red["ample_states"],
            "seconds_full": [min(f["seconds"] for f, _ in runs), max(f["seconds"] for f, _ in runs)],
            "seconds_reduced": [min(r["seconds"] for _, r in runs), max(r["seconds"] for _, r in runs)],
            "seconds_ratio": sorted(round(f["seconds"] / r["seconds"], 2) for f, r in runs),
            "steps": steps(PRESETS[name])}
    full = _run(THREE, False, args.three_clients_max_states)
    red = _run(THREE, True, args.three_clients_max_states)
    common = min(len(full["levels"]), len(red["levels"])) - 1       # the last level of each is partial
    three = {"world": "--preset ci --clients 3", "max_states": args.three_clients_max_states,
             "full": {k: full[k] for k in ("result", "distinct_states", "transitions", "seconds", "depth")},
             "reduced": {k: red[k] for k in ("result", "distinct_states", "transitions", "enabled", "ample_states",
                                            "seconds", "depth")},
             "complete_levels": common,
             "states_at_last_complete_level": [full["levels"][common - 1], red["levels"][common - 1]],
             "level_factor": round(full["levels"][common - 1] / red["levels"][common - 1], 3),
             "states_per_second": [round(full["distinct_states"] / full["seconds"]),
                                   round(red["distinct_states"] / red["seconds"])],
             "steps": steps(THREE)}
    print(json.dumps({"benchmark": "reduction", "python": platform.python_version(), "cpus": os.cpu_count(),
                      "presets": presets, "three_clients": three}, indent=2))


if __name__ == "__main__":
    main()
