"""One world searched natively to its verdict, as the search goes: a JSON line per level (its depth, the states so
far, the level's, seconds and the process's peak memory), then the result.  For the worlds the Python search and
TLC do not finish (`ci` with 3 clients: issue 28's second goal world).

    .venv/bin/python benchmarks/native_verdict.py --world ci --clients 3 --workers 2 --cc gcc [--memory GB]
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from dataclasses import replace

from groupspec.checkers.native.engine import NativeWorld
from groupspec.checkers.world.presets import PRESETS


def _peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", default="ci")
    ap.add_argument("--clients", type=int, default=0, help="the preset with this many clients (0: as it is)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cc", default="gcc", choices=["gcc", "tcc"])
    ap.add_argument("--memory", type=float, default=None, help="GB for the visited set (default: 4/5 available)")
    ap.add_argument("--max-states", type=int, default=None)
    ap.add_argument("--no-symmetry", action="store_true")
    a = ap.parse_args()
    cfg = PRESETS[a.world] if not a.clients else replace(PRESETS[a.world], clients=a.clients)
    world = NativeWorld(cfg, cc=a.cc, symmetry=not a.no_symmetry)
    print(json.dumps({"world": a.world, "clients": cfg.clients, "cc": a.cc, "workers": a.workers,
                      "build_seconds": round(world.build_seconds, 1), "leaves": world.gen.leaves,
                      "packed_bytes": (world.slots[-1].word + 1) * 8}), flush=True)
    t0, c0 = time.perf_counter(), time.process_time()

    def level(depth, states, size):
        print(json.dumps({"depth": depth, "states": states, "level": size,
                          "seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb": _peak_mb()}), flush=True)
    r = world.search(a.max_states, workers=a.workers, progress=level, memory=a.memory)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"result": r.result, "violation": r.violation, "detail": r.detail,
                      "distinct_states": r.distinct_states, "unreduced_states": r.unreduced_states,
                      "transitions": r.transitions, "depth": r.depth, "search_seconds": round(wall, 1),
                      "cpu_seconds": round(cpu, 1), "states_per_second": round(r.distinct_states / wall),
                      "states_per_cpu_second": round(r.distinct_states / cpu), "peak_rss_mb": _peak_mb(),
                      "levels": r.levels}), flush=True)


if __name__ == "__main__":
    main()
