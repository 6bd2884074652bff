"""The native search against the Python search on the same worlds, in one run: states, CPU seconds and
states per CPU second, and the ratios.  Both reduce client symmetry by default (the same orbits, so the same
states); `--unreduced` also runs both without it.  The compile, cached per world, is reported apart (set
GROUPSPEC_NATIVE_CACHE to an empty folder to time it); `--cc tcc,gcc` runs each world compiled by each.

    .venv/bin/python benchmarks/native.py --worlds tiny,small --repeat 3 [--opt=-O2] [--cc tcc,gcc] [--unreduced]
"""
from __future__ import annotations

import argparse
import json
import time

from groupspec.checkers.native.engine import NativeWorld
from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel


def _native(nw: NativeWorld, symmetry: bool) -> dict:
    nw.lib.gs_symmetry(int(symmetry))
    c0 = time.process_time()
    n = nw.search()
    cpu = time.process_time() - c0
    return {"result": n.result, "states": n.distinct_states, "cpu_seconds": round(cpu, 2),
            "states_per_cpu_second": round(n.distinct_states / cpu)}


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
    ap.add_argument("--opt", default="-O1", help="gcc's optimisation (tcc has none)")
    ap.add_argument("--cc", default="gcc", help="the compilers, comma-separated: gcc, tcc")
    ap.add_argument("--unreduced", action="store_true", help="also both searches without symmetry")
    a = ap.parse_args()
    out = []
    for name, cc in [(n, c) for n in a.worlds.split(",") for c in a.cc.split(",")]:
        cfg = PRESETS[name]
        t0 = time.perf_counter()
        nw = NativeWorld(cfg, opt=a.opt, cc=cc)
        build = time.perf_counter() - t0
        for run in range(a.repeat):
            row = {"world": name, "run": run, "cc": cc, "opt": a.opt if cc == "gcc" else None,
                   "build_seconds": round(build, 1)}
            for symmetry, label in ((True, "symmetry"), (False, "unreduced"))[:1 + a.unreduced]:
                native, python = _native(nw, symmetry), _python(cfg, symmetry)
                assert native["states"] == python["states"], (native, python)
                row[label] = {"native": native, "python": python,
                              "ratio": round(python["cpu_seconds"] / max(native["cpu_seconds"], 1e-3), 1)}
            print(json.dumps(row), flush=True)
            out.append(row)
            build = 0.0
    print(json.dumps({"runs": out}))


if __name__ == "__main__":
    main()
