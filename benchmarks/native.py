"""The native search against the Python search on the same worlds, in one run: states, seconds and
states per second per core, and the ratio.  The native search has no symmetry reduction: it is
compared with the Python search both without it (the same states) and with it (today's default,
fewer states); the compile, cached per world, is reported apart.

    .venv/bin/python benchmarks/native.py --worlds tiny,small --repeat 3 [--opt=-O2] [--no-python-unreduced]
"""
from __future__ import annotations

import argparse
import json
import time

from groupspec.checkers.native.engine import NativeWorld
from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel


def _python(cfg, symmetry: bool) -> dict:
    t0 = time.process_time()
    r = check(WorldModel(cfg), symmetry=symmetry)
    cpu = time.process_time() - t0
    return {"result": r.result, "states": r.distinct_states, "cpu_seconds": round(cpu, 2),
            "states_per_cpu_second": round(r.distinct_states / cpu)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", default="tiny,small")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--opt", default="-O1")
    ap.add_argument("--no-python-unreduced", action="store_true", help="skip the Python search without symmetry")
    a = ap.parse_args()
    out = []
    for name in a.worlds.split(","):
        cfg = PRESETS[name]
        t0 = time.perf_counter()
        nw = NativeWorld(cfg, opt=a.opt)
        build = time.perf_counter() - t0
        for run in range(a.repeat):
            c0 = time.process_time()
            n = nw.search()
            cpu = time.process_time() - c0
            row = {"world": name, "run": run, "opt": a.opt, "build_seconds": round(build, 1),
                   "native": {"result": n.result, "states": n.distinct_states, "cpu_seconds": round(cpu, 2),
                              "states_per_cpu_second": round(n.distinct_states / cpu)}}
            if not a.no_python_unreduced:
                row["python_unreduced"] = _python(cfg, symmetry=False)
                row["ratio_unreduced"] = round(row["python_unreduced"]["cpu_seconds"] / cpu, 1)
            row["python_symmetry"] = _python(cfg, symmetry=True)
            row["ratio_to_verdict"] = round(row["python_symmetry"]["cpu_seconds"] / cpu, 1)
            print(json.dumps(row), flush=True)
            out.append(row)
            build = 0.0
    print(json.dumps({"runs": out}))


if __name__ == "__main__":
    main()
