"""Explicit-state checker throughput: distinct states per second and total time, per preset,
with and without symmetry reduction.

    .venv/bin/python benchmarks/checker.py [--presets tiny,small] [--max-states N]

Prints one JSON object.  The yardstick (DESIGN.md §3a): TLC explores a toy model of this
protocol at 28-38k distinct states/s with 2 workers on this kind of machine.
"""
from __future__ import annotations

import argparse
import json
import platform

from groupspec.checkers.explicit import PRESETS, check


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="tiny,small")
    ap.add_argument("--max-states", type=int, default=None)
    args = ap.parse_args()
    runs = []
    for name in args.presets.split(","):
        for symmetry in (True, False):
            r = check(PRESETS[name], symmetry=symmetry, max_states=args.max_states)
            runs.append({"preset": name, "symmetry": symmetry, "result": r.result, "complete": r.complete,
                         "distinct_states": r.distinct_states, "generated_states": r.generated,
                         "seconds": round(r.seconds, 2), "states_per_second": round(r.states_per_second),
                         "depth": r.depth})
    by = {(r["preset"], r["symmetry"]): r for r in runs}
    reduction = {name: round(by[(name, False)]["distinct_states"] / by[(name, True)]["distinct_states"], 2)
                 for name in args.presets.split(",")}
    print(json.dumps({"benchmark": "checker", "python": platform.python_version(), "workers": 1,
                      "runs": runs, "symmetry_reduction_factor": reduction}, indent=2))


if __name__ == "__main__":
    main()
