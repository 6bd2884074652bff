"""The native search of one world as two revisions of checkers/native generate it, in one run: each
revision's codegen.py and search.c (read with `git show`) write the C, gcc compiles it, and the same
driver searches it; states, transitions, compile seconds and search CPU seconds per revision.

    .venv/bin/python benchmarks/native_revs.py --world small --revs 44f55df,HEAD --repeat 3 [--opt=-O1]
"""
from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from groupspec.checkers.native.engine import MAX_ENDS, MAX_LEVELS, _int, _Result
from groupspec.checkers.world.bmc import StepRelation, _flat
from groupspec.checkers.world.presets import PRESETS


def _show(rev: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", default="small")
    ap.add_argument("--revs", default="44f55df,HEAD")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--opt", default="-O1")
    a = ap.parse_args()
    rel = StepRelation(PRESETS[a.world])
    init = np.array([_int(v) for v in _flat(rel.world.initial())], dtype=np.int64)
    ptr = lambda x: x.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))        # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        libs = {}
        for rev in a.revs.split(","):
            d = Path(tmp) / rev.replace("/", "_")
            d.mkdir()
            (d / "codegen.py").write_text(_show(rev, "checkers/native/codegen.py"))
            (d / "search.c").write_text(_show(rev, "checkers/native/search.c"))
            spec = importlib.util.spec_from_file_location(f"codegen_{len(libs)}", d / "codegen.py")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            t0 = time.perf_counter()
            (d / "step.c").write_text(mod.Generated(rel).source)
            t1 = time.perf_counter()
            subprocess.run(["gcc", a.opt, "-shared", "-fPIC", "-o", "world.so", "step.c"], cwd=d, check=True)
            libs[rev] = (ctypes.CDLL(str(d / "world.so")), round(t1 - t0, 1), round(time.perf_counter() - t1, 1))
        for run in range(a.repeat):
            for rev, (lib, gen_s, cc_s) in libs.items():
                levels = np.zeros(MAX_LEVELS, dtype=np.int64)
                ends = np.zeros((MAX_ENDS, len(init)), dtype=np.int64)
                r = _Result()
                c0 = time.process_time()
                lib.gs_search(ptr(init), ctypes.c_long(1 << 62), levels.ctypes.data_as(ctypes.POINTER(ctypes.c_long)),
                              ctypes.c_int(MAX_LEVELS), ptr(ends), ctypes.c_long(MAX_ENDS), ctypes.byref(r))
                cpu = time.process_time() - c0
                print(json.dumps({"world": a.world, "rev": rev, "run": run, "opt": a.opt, "generate_seconds": gen_s,
                                  "compile_seconds": cc_s, "states": r.states, "transitions": r.transitions,
                                  "depth": r.depth, "cpu_seconds": round(cpu, 2),
                                  "states_per_cpu_second": round(r.states / cpu)}), flush=True)


if __name__ == "__main__":
    main()
