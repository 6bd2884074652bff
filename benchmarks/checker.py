"""Explicit-state checker throughput: distinct states per second and total time, per preset,
with and without symmetry reduction, with one process and with workers.

    .venv/bin/python benchmarks/checker.py [--presets small,ci] [--workers 1,2] [--max-states N]

Prints one JSON object.  `states_per_second` counts distinct (canonical) states, TLC's
measure; `unreduced_states_per_second` counts the states those stand for, which is what a
search without symmetry reduction would have to visit to cover the same world.  The
yardstick (issue 3): TLC explores a toy model of this protocol at 30-45k distinct states/s
with 2 workers on this kind of machine, and its symmetry reduction costs it about 4x per
state.
"""
from __future__ import annotations

import argparse
import json
import os
import platform

from groupspec.checkers.search.explicit import check, check_parallel
from groupspec.checkers.world.state_space import WorldModel
from groupspec.checkers.world.presets import PRESETS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="small,ci")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (1: the sequential search)")
    ap.add_argument("--max-states", type=int, default=None)
    args = ap.parse_args()
    runs = []
    for name in args.presets.split(","):
        for workers in (int(w) for w in args.workers.split(",")):
            for symmetry in (True, False):
                model = WorldModel(PRESETS[name])       # a fresh model: its memo tables start empty
                if workers == 1:
                    r = check(model, symmetry=symmetry, max_states=args.max_states)
                else:
                    r = check_parallel(model, workers=workers, symmetry=symmetry, max_states=args.max_states)
                runs.append({"preset": name, "workers": workers, "symmetry": symmetry, "result": r.result,
                             "complete": r.complete, "distinct_states": r.distinct_states,
                             "generated_states": r.generated, "unreduced_states": r.unreduced_states,
                             "seconds": round(r.seconds, 2), "states_per_second": round(r.states_per_second),
                             "unreduced_states_per_second": round(r.unreduced_states / r.seconds),
                             "depth": r.depth})
    by = {(r["preset"], r["workers"], r["symmetry"]): r for r in runs}
    reduction = {name: round(by[(name, w, False)]["distinct_states"] / by[(name, w, True)]["distinct_states"], 2)
                 for (name, w, _) in by}
    print(json.dumps({"benchmark": "checker", "python": platform.python_version(), "cpus": os.cpu_count(),
                      "runs": runs, "symmetry_reduction_factor": reduction}, indent=2))


if __name__ == "__main__":
    main()
