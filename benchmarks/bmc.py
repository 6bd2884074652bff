"""Bounded model checking (checkers/world/bmc.py): seconds per depth and the depth reached within a
time budget, per world and per way of asking the solver.  Prints JSON.

    .venv/bin/python benchmarks/bmc.py [--presets tiny,small,ci] [--budget 60] [--modes push,assume,fresh]

For each world the step relation is built once (`build_seconds`, wall and CPU) and then
searched depth by depth until the budget (seconds of solving, after the build) is spent, once
per mode: "push", one incremental solver, each depth's question pushed and popped; "assume",
one solver, the question guarded by an assumed literal; "fresh", a new solver per depth given
every step again (no incremental solving); "sat", the step bit-blasted once into clauses and
unrolled in Glucose (checkers/world/bmc_sat.py; the budget is looked at between depths, so the
depth under way when it runs out is finished and counted past it).  `depth_reached` is the deepest depth answered
within the budget; `depth_within_budget_with_build` counts the build against it too.  The
machine is shared: the load average is printed before and after each run, and CPU seconds
beside wall seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

from groupspec.checkers.world.bmc import StepRelation
from groupspec.checkers.world.bmc_search import MODES, bmc
from groupspec.checkers.world.presets import PRESETS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="tiny,small,ci")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of solving per world and mode")
    ap.add_argument("--modes", default="push", help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--max-depth", type=int, default=64)
    args = ap.parse_args()
    modes = args.modes.split(",")
    for m in modes:
        if m not in MODES:
            ap.error(f"--modes: unknown mode {m!r}; use {', '.join(MODES)}")
    for name in args.presets.split(","):
        if name not in PRESETS:
            ap.error(f"--presets: unknown preset {name!r}; use {', '.join(PRESETS)}")
    runs = []
    for name in args.presets.split(","):
        load = os.getloadavg()[0]
        cpu, wall = time.process_time(), time.perf_counter()
        rel = StepRelation(PRESETS[name])
        build = {"preset": name, "paths_per_step": len(rel.paths),
                 "build_seconds": round(time.perf_counter() - wall, 2), "build_cpu_seconds": round(time.process_time() - cpu, 2), "load_before": round(load, 2),
                 "load_after": round(os.getloadavg()[0], 2)}
        print(json.dumps(build), flush=True)
        for mode in modes:
            load = os.getloadavg()[0]
            cpu = time.process_time()
            r = bmc(rel, args.max_depth, mode=mode, budget_s=args.budget)
            spent = build["build_seconds"]
            with_build = -1
            for k, s in enumerate(r.seconds_per_depth):
                spent += s
                if spent <= args.budget and k <= r.depth:
                    with_build = k
            run = {**build, "mode": mode, "budget_seconds": args.budget, "result": r.result,
                   # the mode's own build on top of the relation's (sat: the clauses), spent from its budget
                   "mode_build_seconds": round(r.build_seconds - build["build_seconds"], 2),
                   "depth_reached": r.depth, "depth_within_budget_with_build": with_build,
                   "seconds_per_depth": [round(s, 2) for s in r.seconds_per_depth[:r.depth + 1]],
                   "cpu_seconds_per_depth": [round(s, 2) for s in r.cpu_seconds_per_depth[:r.depth + 1]],
                   "solve_cpu_seconds": round(time.process_time() - cpu, 2), "detail": r.detail,
                   "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}
            runs.append(run)
            print(json.dumps(run), flush=True)
    print(json.dumps({"benchmark": "bmc", "python": platform.python_version(), "cpus": os.cpu_count(),
                      "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
