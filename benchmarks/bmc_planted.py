"""BMC against breadth-first search on the planted bugs of tests/test_planted_bugs.py: the depth
each finds, and the seconds it takes.  Prints JSON.

    .venv/bin/python benchmarks/bmc_planted.py [--tests NAME,...] [--mode sat] [--budget 300] [--only]
                                               [--leap DEPTH] [--world PRESET --clients N] [--after D]

A test's world and planted table are taken from the explicit checks it runs (its `check` is
watched, so the bug is planted exactly as the test plants it).  For each: breadth-first search
(`check`, the depth and violation of its shortest counterexample; a world it finds clean is
skipped), then `bmc` in the mode given,
deepened until it finds a violation (replayed concretely) or the budget (seconds after the step
relation is built) is spent.  `--only`: BMC asks about the invariant breadth-first search found
broken, alone.  `--leap DEPTH` (mode sat): one question for every depth to DEPTH instead (the
violation found is then not shown shortest).  `--world PRESET --clients N`: the planted table in
that world instead of the test's (as the 3-client world with faults: `--world ci --clients 3`).
`--after D` (mode sat): breadth-first search to depth D first, BMC from the states it keeps there
(the depth found is still counted from the initial state, and shortest but with `--leap`).
`--bfs-max-states N`: the breadth-first search that gives the depth to compare with stops there.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_planted_bugs as planted  # noqa: E402

from groupspec.checkers.search.explicit import check  # noqa: E402
from groupspec.checkers.world.bmc import StepRelation  # noqa: E402
from groupspec.checkers.world.bmc_search import MODES, bmc  # noqa: E402
from groupspec.checkers.world.presets import PRESETS  # noqa: E402

DEFAULT = "test_leave_group_keeps_the_session_timer,test_leave_during_preparing_rebalance_does_not_recheck"


def worlds_of(test: str) -> list:
    """The (world, rows, eager rule) of every explicit check the test runs."""
    seen = []

    def watch(model, *a, **k):
        seen.append((model.cfg, model.rows, model.eager))
        return check(model, *a, **k)
    planted.check = watch
    try:
        getattr(planted, test)()
    finally:
        planted.check = check
    return seen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", default=DEFAULT)
    ap.add_argument("--mode", default="sat", choices=MODES)
    ap.add_argument("--budget", type=float, default=300.0)
    ap.add_argument("--only", action="store_true")
    ap.add_argument("--leap", type=int, default=None)
    ap.add_argument("--world", default=None)
    ap.add_argument("--clients", type=int, default=None)
    ap.add_argument("--after", type=int, default=None)
    ap.add_argument("--bfs-max-states", type=int, default=2_000_000)
    args = ap.parse_args()
    if args.leap is not None and args.mode != "sat":
        ap.error("--leap is a question of --mode sat")
    if args.world is not None and args.world not in PRESETS:
        ap.error(f"--world {args.world!r}: use one of {', '.join(PRESETS)}")
    runs = []
    for test in args.tests.split(","):
        if not hasattr(planted, test):
            ap.error(f"--tests: no {test!r} in tests/test_planted_bugs.py")
        for cfg, rows, eager in worlds_of(test):
            from groupspec.checkers.world.state_space import WorldModel
            if args.world is not None:
                cfg = PRESETS[args.world]
            if args.clients is not None:
                cfg = dataclasses.replace(cfg, clients=args.clients)
            t = time.perf_counter()
            explicit = check(WorldModel(cfg, rows, eager), max_states=args.bfs_max_states)
            bfs_s = time.perf_counter() - t
            if explicit.result != "violation":
                continue         # a world the test checks clean (the table without its bug)
            cpu, t = time.process_time(), time.perf_counter()
            rel = StepRelation(cfg, rows, eager)
            r = bmc(rel, 64 if args.leap is None else args.leap, mode=args.mode, budget_s=args.budget,
                    only={explicit.violation} if args.only else None, leap=args.leap is not None, after=args.after)
            run = {"test": test, "world": args.world, "clients": cfg.clients, "leap": args.leap, "bfs_result": explicit.result, "bfs_depth": explicit.depth,
                   "bfs_violation": explicit.violation, "bfs_seconds": round(bfs_s, 2), "mode": args.mode,
                   "only": args.only, "bmc_result": r.result, "bmc_depth": r.depth, "bmc_violation": r.violation,
                   "bmc_shortest": r.shortest, "after": args.after, "prefix_states": r.prefix_states,
                   "prefix_level": r.prefix_level, "prefix_seconds": round(r.prefix_seconds, 2), "bmc_solve_seconds": round(r.solve_seconds, 1),
                   "bmc_solve_cpu_seconds": round(r.solve_cpu_seconds, 1), "build_seconds": round(r.build_seconds, 1),
                   "bmc_seconds": round(time.perf_counter() - t, 1), "bmc_cpu_seconds": round(time.process_time() - cpu, 1),
                   "cpu_seconds_per_depth": [round(s, 2) for s in r.cpu_seconds_per_depth],
                   "load": round(os.getloadavg()[0], 2), "detail": r.detail}
            runs.append(run)
            print(json.dumps(run), flush=True)
    print(json.dumps({"benchmark": "bmc_planted", "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
