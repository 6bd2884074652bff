"""TLC and `groupspec check` side by side on the same exported world (issue 13).

    .venv/bin/python benchmarks/tla.py [--presets small,settle,twogen] [--workers 2] [--engine native --cc gcc]

For each preset, with and without symmetry: the world is exported (`groupspec export tla`), TLC
checks the module and `groupspec check` the same world, each as its own process with the same
number of workers, timed from the outside (wall clock, start-up included) with GNU time's peak
resident memory (of the largest process: TLC is one JVM; ours is a parent and its workers).
Prints one JSON object: distinct states, wall seconds, distinct states per second, peak memory,
and the ratio of our states per second to TLC's.  Needs a TLC jar (GROUPSPEC_TLC_JAR, or
../shared/tools/tla2tools.jar) and Java 17.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from groupspec.checkers.tla.module import export
from groupspec.checkers.tla.tlc import find_jar, run_tlc
from groupspec.checkers.world.presets import PRESETS


def ours(preset: str, symmetry: bool, workers: int, engine: list[str]) -> dict:
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "groupspec.checkers.cli", "check", "--preset", preset,
           "--workers", str(workers), "--json", "--symmetry" if symmetry else "--no-symmetry", *engine]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    doc = json.loads(proc.stdout)
    return {"result": doc["result"], "distinct_states": doc["distinct_states"], "wall_seconds": round(wall, 2),
            "search_seconds": doc["seconds"], "states_per_second": round(doc["distinct_states"] / wall),
            "peak_rss_mb": round(int(proc.stderr.strip().splitlines()[-1]) / 1024)}


def tlc(preset: str, symmetry: bool, workers: int, jar: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="groupspec-bench-") as tmp:
        e = export(PRESETS[preset], symmetry=symmetry)
        (Path(tmp) / f"{e.name}.tla").write_text(e.module)
        (Path(tmp) / f"{e.name}.cfg").write_text(e.config)
        t = run_tlc(Path(tmp), e.name, workers=workers, jar=jar)
    return {"result": t.result, "distinct_states": t.distinct_states, "wall_seconds": round(t.seconds, 2),
            "states_per_second": round(t.distinct_states / t.seconds), "peak_rss_mb": round(t.peak_rss_kb / 1024)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="small,settle,twogen")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine", default="python", choices=["python", "native"],
                    help="ours: the Python search or the native one (wall includes building its step and C: set "
                         "GROUPSPEC_NATIVE_CACHE and run once to leave the compile out)")
    ap.add_argument("--cc", default="tcc", choices=["tcc", "gcc"], help="the native search's compiler")
    args = ap.parse_args()
    engine = ["--engine", "native", "--cc", args.cc] if args.engine == "native" else []
    jar, why = find_jar()
    if jar is None:
        print(json.dumps({"benchmark": "tla", "skipped": why}))
        return
    runs = []
    for preset in args.presets.split(","):
        for symmetry in (False, True):
            t = tlc(preset, symmetry, args.workers, jar)
            o = ours(preset, symmetry, args.workers, engine)
            runs.append({"preset": preset, "symmetry": symmetry, "workers": args.workers, "tlc": t, "groupspec": o,
                         "same_states": t["distinct_states"] == o["distinct_states"],
                         "ratio_states_per_second": round(o["states_per_second"] / max(1, t["states_per_second"]),
                                                          2)})
    print(json.dumps({"benchmark": "tla", "engine": args.engine, "python": platform.python_version(), "cpus": os.cpu_count(),
                      "aim": {"without_symmetry": 2, "with_symmetry": 5}, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
