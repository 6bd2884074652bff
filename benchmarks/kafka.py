"""Kafka's own coordinators as targets: how fast the harness runs against them, how long a broker takes to start,
and how long setup takes with a cold and a warm Maven cache.

    .venv/bin/python benchmarks/kafka.py [--examples 100] [--steps 30] [--runs 3] [--setup] [--broker]
                                         [--broker-examples 10]

Prints one JSON object:
  harness   per target (the runtime first: the anchor, in the same run), over --runs runs of the same seed:
            harness steps per second (side by side with the spec, every answer and snapshot compared) and the
            share of the time spent in the target; the range over runs (this machine varies up to 1.5x)
  setup     (--setup) `groupspec kafka setup` into an empty cache and an empty Maven repository (cold: every
            jar from Maven Central), then again (warm: nothing fetched nor built), seconds
  broker    (--broker) seconds from `groupspec kafka broker start` to a broker answering FindCoordinator, per
            Kafka line and coordinator, and harness steps per second against it (--broker-examples)
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

from groupspec.checkers.conform.adapter import runtime
from groupspec.checkers.conform.harness import run
from groupspec.checkers.kafka import inprocess

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "groupspec.checkers.cli"]


class _Timed:
    """An adapter whose calls are timed (the target's share of a side-by-side step)."""

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


def harness(examples: int, steps: int, runs: int) -> dict:
    targets = {"runtime": runtime, "kafka-3.9": inprocess.kafka_39, "kafka-4.0": inprocess.kafka_40}
    out = {}
    for name, factory in targets.items():
        if name != "runtime":
            factory(dict(factory.fixed_config)).close()    # the JVM starts once per process: not part of a run
        rates, shares = [], []
        for _ in range(runs):
            spent = [0.0]

            def timed(cfg, f=factory, c=spent):
                return _Timed(f(cfg), c)
            timed.fixed_config = getattr(factory, "fixed_config", None)
            t = time.perf_counter()
            r = run(timed, name, examples, steps, seed=20261127, shrink_seconds=0)
            took = time.perf_counter() - t
            assert r.result == "ok", f"{name}: {r.message}"
            rates.append(r.steps / took)
            shares.append(spent[0] / took)
        out[name] = {"steps": r.steps, "steps_per_second": [round(x, 1) for x in rates],
                     "steps_per_second_best": round(max(rates), 1),
                     "target_share_of_time": round(sum(shares) / len(shares), 2)}
    return out


def setup_times() -> dict:
    """Cold: an empty cache and Maven repository (GROUPSPEC_KAFKA_HOME in a temporary folder); warm: again."""
    with tempfile.TemporaryDirectory(prefix="groupspec-kafka-home-") as home:
        env = {**os.environ, "GROUPSPEC_KAFKA_HOME": home}
        out = {}
        for kind in ("cold", "warm"):
            t = time.perf_counter()
            subprocess.run([*CLI, "kafka", "setup"], check=True, env=env, capture_output=True)
            out[f"{kind}_seconds"] = round(time.perf_counter() - t, 1)
        size = sum(f.stat().st_size for f in Path(home).rglob("*") if f.is_file())
        out["cache_megabytes"] = round(size / 2**20)
    return out


def broker_times(examples: int, steps: int) -> dict:
    """Per Kafka line and coordinator: `groupspec kafka broker start` until it answers FindCoordinator (and is
    warmed up), and harness steps per second against it at the report's time scale (real time: every advance
    sleeps)."""
    from groupspec.checkers.kafka import report, wire
    out = {}
    for version, coordinator in (("3.9", "scala"), ("3.9", "java"), ("4.0", "java"), ("4.0", "scala")):
        with tempfile.TemporaryDirectory(prefix="groupspec-broker-") as d:
            t = time.perf_counter()
            p = subprocess.run([*CLI, "kafka", "broker", "start", "--version", version, "--coordinator", coordinator,
                                "--dir", d, "--time-scale", str(report.BROKER_TIME_SCALE), "--json"],
                               capture_output=True, text=True)
            took = time.perf_counter() - t
            if p.returncode != 0:
                out[f"{version}-{coordinator}"] = {"error": p.stderr.strip()[-300:]}
                continue
            state = json.loads(p.stdout)
            try:
                factory = wire.broker_factory(state["address"])
                t = time.perf_counter()
                r = run(factory, state["address"], examples, steps, seed=20261127, shrink_seconds=0)
                ran = time.perf_counter() - t
                factory.broker.close()
            finally:
                subprocess.run([*CLI, "kafka", "broker", "stop", "--port", str(state["port"])], capture_output=True)
            out[f"{version}-{coordinator}"] = {
                "start_seconds": round(took, 1), "jvm_to_ready_seconds": state["startup_seconds"],
                "format_seconds": state["format_seconds"], "warm_up_seconds": state["warm_up_seconds"],
                "harness": {"result": r.result, "examples": r.examples, "steps": r.steps,
                            "steps_per_second": round(r.steps / ran, 1), "time_scale": report.BROKER_TIME_SCALE}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=100)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--setup", action="store_true", help="also time setup, cold and warm (fetches ~100 MB)")
    ap.add_argument("--broker", action="store_true", help="also time a broker's start-up, and the harness on it")
    ap.add_argument("--broker-examples", type=int, default=10)
    a = ap.parse_args()
    doc = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
           "command": " ".join(["benchmarks/kafka.py", *sys.argv[1:]]),
           "harness": harness(a.examples, a.steps, a.runs)}
    if a.setup:
        doc["setup"] = setup_times()
    if a.broker:
        doc["broker"] = broker_times(a.broker_examples, a.steps)
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
