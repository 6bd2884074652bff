"""What it costs to build a world's derived artifacts before any search: the TLA+ export (module and
config), BMC's step relation (Z3), and the native engine's C from it.  Seconds per preset, each built
`--repeat` times in this process (the range is printed; the first build also pays Python's imports).

    .venv/bin/python benchmarks/build.py --presets tiny,small,faults --repeat 2
"""
from __future__ import annotations

import argparse
import json
import time

from groupspec.checkers.native.codegen import Generated
from groupspec.checkers.tla.module import export
from groupspec.checkers.world.bmc import StepRelation
from groupspec.checkers.world.presets import PRESETS


def _timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    got = fn()
    return time.perf_counter() - t, got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="tiny,small,faults")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    out = []
    for name in a.presets.split(","):
        cfg = PRESETS[name]
        runs: dict[str, list] = {"export_tla": [], "step_relation": [], "native_c": []}
        for _ in range(a.repeat):
            runs["export_tla"].append(_timed(lambda: export(cfg, symmetry=True))[0])
            secs, rel = _timed(lambda: StepRelation(cfg))
            runs["step_relation"].append(secs)
            runs["native_c"].append(_timed(lambda: Generated(rel))[0])
        out.append({"preset": name, **{k: [round(min(v), 2), round(max(v), 2)] for k, v in runs.items()}})
    print(json.dumps({"seconds_min_max": out, "repeat": a.repeat}, indent=1))


if __name__ == "__main__":
    main()
