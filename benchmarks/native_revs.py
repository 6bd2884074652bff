"""The native search of one world as two revisions of checkers/native generate it, in one run: each
revision's codegen.py and search.c, and the headers search.c includes (symmetry.py's tables, packing.py's
code, where the revision has them), read with `git show`, write the C; gcc or tcc compiles it, and the same
driver searches it; states, transitions, compile seconds, search CPU seconds and peak memory per revision.

    .venv/bin/python benchmarks/native_revs.py --world small --revs 44f55df,HEAD --repeat 3 [--opt=-O1] [--cc tcc]
"""
from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
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
    ap.add_argument("--cc", default="gcc", choices=["gcc", "tcc"])
    ap.add_argument("--clients", type=int, default=0, help="the preset with this many clients (0: as it is)")
    ap.add_argument("--max-states", type=int, default=1 << 62)
    ap.add_argument("--workers", type=int, default=1, help="threads (a revision before workers has one)")
    a = ap.parse_args()
    cfg = PRESETS[a.world] if not a.clients else replace(PRESETS[a.world], clients=a.clients)
    rel = StepRelation(cfg)
    init = np.array([_int(v) for v in _flat(rel.world.initial())], dtype=np.int64)
    ptr = lambda x: x.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))        # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        libs = {}
        for rev in a.revs.split(","):
            d = Path(tmp) / rev.replace("/", "_")
            d.mkdir()
            (d / "codegen.py").write_text(_show(rev, "checkers/native/codegen.py"))
            (d / "search.c").write_text(_show(rev, "checkers/native/search.c"))
            mod = _module(rev, "codegen", d, len(libs))
            t0 = time.perf_counter()
            gen = mod.Generated(rel)
            (d / "step.c").write_text(gen.source)
            if _has(rev, "checkers/native/symmetry.py"):
                (d / "symmetry.h").write_text(_module(rev, "symmetry", d, len(libs)).source(cfg, gen.leaves))
            if _has(rev, "checkers/native/packing.py"):
                packing = _module(rev, "packing", d, len(libs))
                (d / "packing.h").write_text(packing.source(packing.layout(rel)))
            t1 = time.perf_counter()
            flags = [a.opt] if a.cc == "gcc" else []
            subprocess.run([a.cc, *flags, "-shared", "-fPIC", "-o", "world.so", "step.c", "-lpthread"], cwd=d,
                           check=True)
            libs[rev] = (ctypes.CDLL(str(d / "world.so")), round(t1 - t0, 1), round(time.perf_counter() - t1, 1))
        for run in range(a.repeat):
            for rev, (lib, gen_s, cc_s) in libs.items():
                levels = np.zeros(MAX_LEVELS, dtype=np.int64)
                ends = np.zeros((MAX_ENDS, len(init)), dtype=np.int64)
                r = _Result()
                c0, w0 = time.process_time(), time.perf_counter()
                with tempfile.TemporaryDirectory(prefix="groupspec-trail-") as trail:
                    lib.gs_search(ptr(init), ctypes.c_long(a.max_states),
                                  levels.ctypes.data_as(ctypes.POINTER(ctypes.c_long)), ctypes.c_int(MAX_LEVELS),
                                  ptr(ends), ctypes.c_long(MAX_ENDS), ctypes.byref(r), ctypes.c_int(a.workers), None,
                                  trail.encode())     # (a revision before workers, or the trail, ignores them)
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                print(json.dumps({"world": a.world, "clients": cfg.clients, "rev": rev, "run": run, "cc": a.cc, "workers": a.workers,
                                  "opt": a.opt if a.cc == "gcc" else "", "generate_seconds": gen_s,
                                  "compile_seconds": cc_s, "states": r.states, "transitions": r.transitions,
                                  "depth": r.depth, "cpu_seconds": round(cpu, 2), "wall_seconds": round(wall, 2),
                                  "states_per_cpu_second": round(r.states / cpu),
                                  # the process's peak so far: run one revision alone to read its own
                                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}),
                      flush=True)


def _has(rev: str, path: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{rev}:{path}"], capture_output=True).returncode == 0


def _module(rev: str, name: str, d: Path, k: int):
    """checkers/native/<name>.py as revision `rev` has it, imported from `d`."""
    (d / f"{name}.py").write_text(_show(rev, f"checkers/native/{name}.py"))
    spec = importlib.util.spec_from_file_location(f"{name}_{k}", d / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


if __name__ == "__main__":
    main()
