"""How fast the conformance harness runs, and how fast it finds each broken coordinator.

    .venv/bin/python benchmarks/conform.py [--profile ci] [--seeds 10] [--shrink-seconds 0] [--no-corpus]

Prints one JSON object:
  throughput  steps per second: the harness side by side (the generated machine, the runtime against the
              spec, every answer and snapshot compared), and the same steps replayed on the runtime alone
              and on the spec alone (the scenario runner's spec target, every choice explored)
  broken      for each broken coordinator of tests/broken_coordinators.py, run with --profile's examples and
              steps and seeds 0..--seeds-1: how often it was found (and how often by the conformance
              scenarios the harness runs first), the mean seconds, examples and steps until the first
              divergence, the mean seconds of a run; with --shrink-seconds > 0 the mean length of the
              shrunk scenario.  --no-corpus: the generated examples alone
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from groupspec.checkers.conform.adapter import runtime  # noqa: E402
from groupspec.checkers.conform.harness import PROFILES, run  # noqa: E402
from groupspec.checkers.conform.reference import Reference  # noqa: E402
from broken_coordinators import BROKEN  # noqa: E402


class _Timed:
    """An adapter whose calls are timed (the implementation's share of a side-by-side step)."""

    def __init__(self, inner, clock: list):
        self.inner, self.clock = inner, clock

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return attr(*a, **kw)
            finally:
                self.clock[0] += time.perf_counter() - t
        return timed


def throughput(examples: int, steps: int, seed: int) -> dict:
    impl_s, spec_s = [0.0], [0.0]
    act = Reference.act

    def timed_act(self, body):
        t = time.perf_counter()
        try:
            return act(self, body)
        finally:
            spec_s[0] += time.perf_counter() - t
    Reference.act = timed_act
    try:
        r = run(lambda cfg: _Timed(runtime(cfg), impl_s), "runtime", examples=examples, steps=steps, seed=seed,
                corpus=False)
    finally:
        Reference.act = act
    return {"steps": r.steps, "examples": r.examples, "seconds": round(r.seconds, 2),
            "side_by_side_steps_per_s": round(r.steps / r.seconds),
            "runtime_alone_steps_per_s": round(r.steps / impl_s[0]),
            "spec_alone_steps_per_s": round(r.steps / spec_s[0]),
            "note": "alone: the steps of the side-by-side run over the time spent in that side's actions "
                    "(requests, clock, storage, coordinator events); side by side also compares every answer and "
                    "snapshot and draws the steps"}


def broken(seeds: int, examples: int, steps: int, shrink: float, corpus: bool = True,
           only: set | None = None) -> dict:
    """Each broken coordinator (those named in `only`, if given) run with seeds 0..seeds-1 under `examples` x
    `steps`: how often found, and the mean time to find (seconds to the first divergence, before shrinking)."""
    out = {}
    for b in BROKEN:
        if only and b.__name__ not in only:
            continue
        found, runs = [], []
        for seed in range(seeds):
            t = time.perf_counter()
            r = run(b, b.__name__, examples=examples, steps=steps, seed=seed, shrink_seconds=shrink, corpus=corpus)
            runs.append(time.perf_counter() - t)
            f = r.stats.get("found_after")
            if r.result != "ok" and f:
                found.append((f["examples"], f["steps"], f["seconds"], len(r.scenario["steps"]),
                              f.get("phase") == "corpus"))
        mean = (lambda i: round(statistics.mean(x[i] for x in found), 2)) if found else (lambda i: None)
        out[b.__name__] = {"found": f"{len(found)}/{seeds}", "by_corpus": sum(1 for x in found if x[4]),
                           "mean_seconds_to_find": mean(2), "mean_examples_to_find": mean(0),
                           "mean_steps_to_find": mean(1), "mean_run_seconds": round(statistics.mean(runs), 2),
                           **({"mean_shrunk_scenario_steps": mean(3)} if shrink > 0 else {})}
        print(f"{b.__name__:36s} found {len(found)}/{seeds}  mean {mean(2)} s to find  "
              f"(run {out[b.__name__]['mean_run_seconds']} s)", file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="ci", choices=sorted(PROFILES),
                    help="examples and steps of each search for a broken coordinator (and of the throughput run)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--shrink-seconds", type=float, default=0, help="0: detection only (no shrinking)")
    ap.add_argument("--no-corpus", action="store_true", help="generated examples only (no conformance scenarios first)")
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated names of tests/broken_coordinators.py's to run")
    a = ap.parse_args()
    only = {x for x in a.only.split(",") if x}
    if only - {b.__name__ for b in BROKEN}:
        ap.error(f"--only: no broken coordinator {', '.join(sorted(only - {b.__name__ for b in BROKEN}))}; "
                 f"use {', '.join(b.__name__ for b in BROKEN)}")
    p = PROFILES[a.profile]
    print(json.dumps({"machine": platform.machine(), "python": platform.python_version(), "profile": a.profile,
                      "corpus_first": not a.no_corpus,
                      **({} if a.no_throughput else {"throughput": throughput(p["examples"], p["steps"], 1)}),
                      "broken": broken(a.seeds, p["examples"], p["steps"], a.shrink_seconds, not a.no_corpus,
                                     only)},
                     indent=2))


if __name__ == "__main__":
    main()
