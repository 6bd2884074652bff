"""How fast the conformance harness runs, and how fast it finds each broken coordinator.

    .venv/bin/python benchmarks/conform.py [--examples 60] [--steps 30] [--seeds 5] [--shrink-seconds 10]

Prints one JSON object:
  throughput  steps per second: the harness side by side (the generated machine, the runtime against the
              spec, every answer and snapshot compared), and the same steps replayed on the runtime alone
              and on the spec alone (the scenario runner's spec target, every choice explored)
  broken      for each broken coordinator of tests/broken_coordinators.py, over --seeds seeds: how often it
              was found, the mean examples, steps and seconds until the first divergence, and the mean
              length of the shrunk scenario (steps of the scenario file) after --shrink-seconds of shrinking
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
from groupspec.checkers.conform.harness import run  # noqa: E402
from groupspec.checkers.conform.reference import Reference  # noqa: E402


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
        r = run(lambda cfg: _Timed(runtime(cfg), impl_s), "runtime", examples=examples, steps=steps, seed=seed)
    finally:
        Reference.act = act
    return {"steps": r.steps, "examples": r.examples, "seconds": round(r.seconds, 2),
            "side_by_side_steps_per_s": round(r.steps / r.seconds),
            "runtime_alone_steps_per_s": round(r.steps / impl_s[0]),
            "spec_alone_steps_per_s": round(r.steps / spec_s[0]),
            "note": "alone: the steps of the side-by-side run over the time spent in that side's actions "
                    "(requests, clock, storage, coordinator events); side by side also compares every answer and "
                    "snapshot and draws the steps"}


def broken(seeds: int, examples: int, steps: int, shrink: float) -> dict:
    from broken_coordinators import BROKEN
    out = {}
    for b in BROKEN:
        found = []
        for seed in range(seeds):
            r = run(b, b.__name__, examples=examples, steps=steps, seed=seed, shrink_seconds=shrink)
            f = r.stats.get("found_after")
            if r.result != "ok" and f:
                found.append((f["examples"], f["steps"], f["seconds"], len(r.scenario["steps"])))
        mean = (lambda i: round(statistics.mean(x[i] for x in found), 1)) if found else (lambda i: None)
        out[b.__name__] = {"found": f"{len(found)}/{seeds}", "mean_examples_to_find": mean(0),
                           "mean_steps_to_find": mean(1), "mean_seconds_to_find": mean(2),
                           "mean_shrunk_scenario_steps": mean(3)}
        print(b.__name__, out[b.__name__], file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=60)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--find-examples", type=int, default=1000, help="examples each search for a broken one may use")
    ap.add_argument("--shrink-seconds", type=float, default=10)
    a = ap.parse_args()
    print(json.dumps({"machine": platform.machine(), "python": platform.python_version(),
                      "throughput": throughput(a.examples, a.steps, 1),
                      "broken": broken(a.seeds, a.find_examples, a.steps, a.shrink_seconds)}, indent=2))


if __name__ == "__main__":
    main()
