"""The explicit search's step, this tree against another (a baseline checkout), in one run:
distinct states per second per core, and what the visited set on disk costs.

    .venv/bin/python benchmarks/step_speed.py --baseline /work/main [--preset ci] [--max-states 300000]
                                              [--repeat 3] [--disk]

Each measurement is a fresh process running the sequential search (one core) from a cold start,
as `groupspec check --workers 1 --max-states N` does: the baseline's with the baseline's own code
and virtualenv, this tree's with its own, taken in turn (baseline, this, baseline, this, ...) so
that a noisy machine slows both alike.  `--disk` adds this tree with the visited set on disk and
a small memory budget (every 100k fingerprints spilled).  Both searches must reach the same
states; the script stops if they do not.  Prints one JSON object: every run, the range of each
side's rate, and the ratio of each pair taken back to back.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

# run in the tree under test, by its own interpreter: only what every revision of the search has
_RUN = """
import json, resource, sys, time
from groupspec.checkers.search.explicit import check
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel
preset, n, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen = None
if folder:
    from groupspec.checkers.search.visited import SpillingVisited
    seen = SpillingVisited(folder, limit=100_000)
t, c = time.perf_counter(), time.process_time()
r = check(WorldModel(PRESETS[preset]), max_states=n, **({"visited": seen} if seen is not None else {}))
wall, cpu = time.perf_counter() - t, time.process_time() - c
if seen is not None:
    seen.close()
print(json.dumps({"distinct": r.distinct_states, "generated": r.generated, "depth": r.depth, "levels": r.levels,
                  "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def run(tree: Path, preset: str, n: int, folder: str = "") -> dict:
    got = subprocess.run([str(tree / ".venv/bin/python"), "-c", _RUN, preset, str(n), folder], cwd=tree,
                         capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if got.returncode != 0:
        sys.exit(f"step_speed: the search in {tree} failed:\n{got.stderr}")
    return json.loads(got.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="another checkout with its .venv (e.g. /work/main)")
    ap.add_argument("--preset", default="ci")
    ap.add_argument("--max-states", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--disk", action="store_true", help="also this tree with the visited set spilling to disk")
    args = ap.parse_args()
    base = Path(args.baseline).resolve()
    if not (base / ".venv/bin/python").exists():
        sys.exit(f"step_speed: --baseline {base}: no .venv/bin/python there; give a checkout that was set up")
    sides = {"baseline": (base, False), "this": (HERE, False)}
    if args.disk:
        sides["this, visited on disk"] = (HERE, True)
    runs: list = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for side, (tree, disk) in sides.items():
                r = run(tree, args.preset, args.max_states, tmp if disk else "")
                r.update(side=side, repeat=i, states_per_second=round(r["distinct"] / r["seconds"]),
                         states_per_cpu_second=round(r["distinct"] / r["cpu_seconds"]))
                runs.append(r)
                print(json.dumps({k: r[k] for k in ("side", "repeat", "distinct", "seconds", "cpu_seconds")}),
                      file=sys.stderr, flush=True)
    first = runs[0]
    for r in runs:      # the same search, or the comparison means nothing
        if (r["distinct"], r["generated"], r["levels"]) != (first["distinct"], first["generated"], first["levels"]):
            sys.exit(f"step_speed: {r['side']} reached other states than the baseline: {r['distinct']} distinct, "
                     f"{r['generated']} generated against {first['distinct']}, {first['generated']}")
    summary = {}
    for side in sides:
        mine = [r for r in runs if r["side"] == side]
        rates = [r["states_per_cpu_second"] for r in mine]
        summary[side] = {"states_per_cpu_second": [min(rates), max(rates)],
                         "seconds": [min(r["seconds"] for r in mine), max(r["seconds"] for r in mine)],
                         "max_rss_mb": max(r["max_rss_mb"] for r in mine)}
        if side != "baseline":
            pairs = [b["cpu_seconds"] / r["cpu_seconds"] for b, r in
                     zip((r for r in runs if r["side"] == "baseline"), mine)]
            summary[side]["speedup_per_pair"] = [round(p, 2) for p in pairs]
    for r in runs:
        del r["levels"]
    print(json.dumps({"benchmark": "step_speed", "preset": args.preset, "max_states": args.max_states,
                      "python": platform.python_version(), "cpus": os.cpu_count(),
                      "load_average_at_end": os.getloadavg()[0], "baseline": str(base),
                      "summary": summary, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
