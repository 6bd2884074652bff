"""`groupspec kafka report`: the spec beside Kafka's own coordinators, and every difference with its resolution.

For each target (Kafka's coordinators in process, or a broker): the
scenario suite (passed, failed, skipped with the reasons grouped, fields a
target's responses cannot show), and a run of the conformance harness
(examples, steps, steps the target cannot be asked).  Then the differences:
those found by running Kafka and fixed in the table (each kept as a
scenario in `tests/scenarios/kafka-oracle/`, whose `about` says what Kafka
does and where), and what is left unexplained: any scenario that fails, any
divergence the harness finds.  The goal is none.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from groupspec.checkers.conform.harness import run as run_harness
from groupspec.checkers.paths import REPO, default_scenario_paths
from groupspec.checkers.scenarios.model import ScenarioError, load_file
from groupspec.checkers.scenarios.runner import Result
from groupspec.checkers.conform.adapter import BROKER_SCHEME, AdapterError
from groupspec.checkers.scenarios.report import Run, run_files, scenario_files
from groupspec.checkers.scenarios.targets import factory_for, run_on_adapter
from groupspec.spec.kafka import ConfigError, brief

from . import broker, jars
from .broker import BROKER_TIME_SCALE
from .inprocess import JAVA_LIMITS

ORACLE_FINDINGS = REPO / "tests" / "scenarios" / "kafka-oracle"
DEFAULT_TARGETS = ("kafka-3.9", "kafka-4.0")
# broker:VERSION[:COORDINATOR]: brokers this command starts, one per group config the scenarios need
FLEET_PREFIX = "broker:"


@dataclass
class TargetReport:
    target: str
    kafka: str = ""
    scenarios: dict = field(default_factory=dict)
    harness: dict = field(default_factory=dict)
    unexplained: list = field(default_factory=list)
    timing: list = field(default_factory=list)     # a broker's differences its in-process twin does not show


def findings() -> list[dict]:
    """The differences found by running Kafka and fixed in the table: one scenario each."""
    out = []
    for f in scenario_files([ORACLE_FINDINGS]) if ORACLE_FINDINGS.is_dir() else []:
        for sc in load_file(f):
            out.append({"scenario": sc.name, "file": str(Path(sc.file).relative_to(REPO)) if Path(sc.file).is_absolute()
                        else sc.file, "about": " ".join(str(sc.about or "").split())})
    return out


def report_target(target: str, examples: int, steps: int, seed: int, paths: list[Path] | None = None,
                  progress: Callable[[str], None] | None = None, time_scale: int = BROKER_TIME_SCALE) -> TargetReport:
    say = progress or (lambda _m: None)
    files = scenario_files(paths or default_scenario_paths())
    if target.startswith(FLEET_PREFIX):
        version, coordinator = _fleet_of(target)
        fleet = broker.Fleet(version, coordinator, time_scale=time_scale, progress=say)
        try:
            return _report(target, lambda: _run_grouped(files, target, fleet),
                           lambda: fleet.running(fleet.key(broker.SUITE_CONFIG)), examples, steps, seed, say,
                           twin=_twin_of(version, coordinator))
        finally:
            fleet.close()
    factory = factory_for(target)
    return _report(target, lambda: run_files(files, target, factory=factory), lambda: factory,
                   examples, steps, seed, say, twin=_twin_of_broker(getattr(factory, "broker", None)))


def _fleet_of(target: str) -> tuple[str, str | None]:
    """broker:VERSION[:COORDINATOR] -> (version, coordinator); AdapterError (one line) for anything else."""
    version, _, coordinator = target.removeprefix(FLEET_PREFIX).partition(":")
    if version not in jars.LINES or coordinator not in ("", *broker.COORDINATORS):
        raise AdapterError(f"--target {brief(target)}: give {FLEET_PREFIX}VERSION[:COORDINATOR], VERSION one of "
                           f"{', '.join(jars.LINES)}, COORDINATOR scala or java (e.g. {FLEET_PREFIX}4.0:java)")
    return version, coordinator or None


def _run_grouped(files: list[Path], target: str, fleet: "broker.Fleet") -> Run:
    """The scenarios on a fleet of brokers, grouped by the config a broker starts with (one start each)."""
    run = Run(target)
    began = time.perf_counter()
    scenarios = []
    for f in files:
        try:
            scenarios += load_file(f)
        except ScenarioError as e:
            run.results.append(Result(str(f), e.scenario or "(file)", "error", e.step, message=e.message))
    for sc in sorted(scenarios, key=lambda sc: _config_order(fleet, sc)):
        run.results.append(run_on_adapter(sc, target, fleet))
    run.seconds = time.perf_counter() - began
    return run


def _config_order(fleet: "broker.Fleet", sc) -> tuple:
    try:
        return (0, fleet.key(sc.config))
    except ConfigError:
        return (1, ())        # the spec refuses the config: the scenario says so, with no broker needed


def _report(target: str, scenarios: Callable[[], Run], harness_factory: Callable, examples: int,
            steps: int, seed: int, say: Callable[[str], None], twin: str | None = None) -> TargetReport:
    """`twin`: for a broker, the in-process target of the same Kafka line and coordinator.  A difference the
    broker shows and its twin does not comes of the wall clock alone (the same code, on a clock that moves on
    its own): a limit of the target, listed as such; any other is unexplained."""
    rep = TargetReport(target)
    say(f"{target}: the scenario suite")
    run = scenarios()
    skipped = Counter(_reason(r.message) for r in run.results if r.result == "skip")
    unobserved = Counter(f.split(".", 1)[-1] for r in run.results for f in r.unobserved)
    rep.scenarios = {"passed": run.passed, "failed": run.failed, "errors": run.errors, "skipped": run.skipped,
                     "seconds": round(run.seconds, 1),
                     "skipped_by_reason": dict(skipped.most_common()),
                     "fields_not_carried": dict(unobserved.most_common())}
    for r in run.results:
        if r.result in ("fail", "error"):
            found = {"kind": "scenario", "file": r.file, "scenario": r.scenario, "step": r.step,
                     "message": r.message, "expected": str(r.expected), "got": str(r.got)}
            if twin and r.result == "fail" and _passes_on(twin, _scenario_named(r.file, r.scenario)):
                rep.timing.append(found)
            else:
                rep.unexplained.append(found)
    if examples:
        say(f"{target}: the conformance harness, {examples} examples of up to {steps} steps (seed {seed})")
        start = time.perf_counter()
        h = run_harness(harness_factory(), target, examples, steps, seed, shrink_seconds=30)
        took = time.perf_counter() - start
        left_out: Counter = Counter()
        for why, n in (h.stats.get("unsupported") or {}).items():
            left_out[_reason(why)] += n
        rep.harness = {"result": h.result, "examples": h.examples, "steps": h.steps, "seed": seed,
                       "seconds": round(took, 1), "steps_per_second": round(h.steps / took, 1) if took else None,
                       "steps_not_supported": dict(left_out.most_common())}
        if h.result != "ok":
            found = {"kind": "harness", "message": h.message, "scenario": h.scenario}
            if twin and h.scenario and _passes_on(twin, _scenario_of(h.scenario)):
                rep.timing.append(found)
            else:
                rep.unexplained.append(found)
    rep.kafka = _kafka_release(target)
    return rep


def _difference(u: dict) -> str:
    if u["kind"] == "scenario":
        return f"`{_shown_path(u['file'])}` {u['scenario']}, step {u['step']}: {u['message']} (expected {u['expected']}, got {u['got']})"
    return f"the harness: {u['message']}"


def _shown_path(file: str) -> str:
    """A scenario file as the repository's reader finds it: relative to the repository's root."""
    return os.path.relpath(file, REPO) if Path(file).is_absolute() else file


def _twin_of(version: str, coordinator: str | None) -> str | None:
    """The in-process target running the same coordinator as a broker of this line, if there is one."""
    line_default = broker.DEFAULT_COORDINATOR[version]
    return f"kafka-{version}" if (coordinator or line_default) == line_default else None


def _twin_of_broker(b) -> str | None:
    """A kafka://host:port broker's twin: known when this project started it (its release is then known) and
    it runs its line's own coordinator."""
    version = next((name for name, ln in jars.LINES.items() if b is not None and ln.release == b.release), None)
    return _twin_of(version, b.coordinator) if version else None


def _scenario_named(file: str, name: str):
    try:
        return next((sc for sc in load_file(Path(file)) if sc.name == name), None)
    except ScenarioError:
        return None


def _scenario_of(doc: dict):
    """A scenario the harness wrote (a mapping), as the loader reads it."""
    with tempfile.TemporaryDirectory(prefix="groupspec-report-") as d:
        path = Path(d) / "divergence.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        try:
            return load_file(path)[0]
        except (ScenarioError, IndexError):
            return None


def _passes_on(target: str, sc) -> bool:
    return sc is not None and run_on_adapter(sc, target, factory_for(target)).result == "pass"


def _reason(message: str) -> str:
    """A skip's reason without what varies from one scenario to another (the target's name, a value, the
    request's version)."""
    text = message.split(": ", 1)[-1] if message.startswith("kafka") else message
    text = text.split(" = ")[0] + (" (a constant in Kafka)" if " = " in text else "")
    if "wall clock" in text or "of real time" in text or "group config is fixed" in text:
        # a broker's limits of time and config: the same limit whatever the values
        text = re.sub(r"\d+(\.\d+)?", "N", text.split(": ", 1)[0] if "group config is fixed" in text else text)
    return re.sub(r"version \d+", "version N", text)


def _kafka_release(target: str) -> str:
    name = target.removeprefix("kafka-").removeprefix(FLEET_PREFIX).split(":")[0]
    return jars.LINES[name].release if name in jars.LINES else ""


def as_json(reports: list[TargetReport]) -> dict:
    return {"targets": [vars(r) for r in reports], "fixed_in_the_table": findings(),
            "unexplained": sum(len(r.unexplained) for r in reports)}


def markdown(reports: list[TargetReport], command: str) -> str:
    """docs/kafka-conformance.md: per target, then the differences."""
    lines = ["# The spec beside Kafka's own coordinators", "",
             f"Generated by `{command}` on {time.strftime('%Y-%m-%d')}.", "",
             "Each target runs the project's whole scenario suite and a run of the conformance harness; every "
             "difference is either fixed in the table (and kept as a scenario), or a named limit of the target. "
             "Anything else is listed as unexplained.", "",
             "| target | Kafka | scenarios passed | failed | skipped | harness examples | harness steps | steps/s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in reports:
        s, h = r.scenarios, r.harness
        lines.append(f"| `{r.target}` | {r.kafka} | {s['passed']} | {s['failed'] + s['errors']} | {s['skipped']} | "
                     f"{h.get('examples', '-')} | {h.get('steps', '-')} | {h.get('steps_per_second', '-')} |")
    for r in reports:
        lines += ["", f"## `{r.target}`", ""]
        if r.scenarios["skipped_by_reason"]:
            lines += ["Scenarios skipped (what the target cannot be asked):", ""]
            lines += [f"- {n} × {why}" for why, n in r.scenarios["skipped_by_reason"].items()]
            lines.append("")
        if r.scenarios["fields_not_carried"]:
            lines += ["Expected fields not compared, because the response of the request's version does not carry "
                      "them:", ""]
            lines += [f"- {n} × `{f}`" for f, n in r.scenarios["fields_not_carried"].items()]
            lines.append("")
        left_out = r.harness.get("steps_not_supported") or {}
        untold = {why: n for why, n in left_out.items() if any(lim in why for lim in JAVA_LIMITS)}
        asked = {why: n for why, n in left_out.items() if why not in untold}
        if asked:
            lines += ["Harness steps left out (the target cannot be asked them):", ""]
            lines += [f"- {n} × {why}" for why, n in asked.items()]
            lines.append("")
        if untold:
            lines += ["Harness steps left out where the table does not yet say what this coordinator does "
                      "(below, and `spec/handling.py` JAVA_WRITES):", ""]
            lines += [f"- {n} × {why}" for why, n in untold.items()]
            lines.append("")
        if r.timing:
            lines += [f"Differences of the wall clock (a limit of this target): {len(r.timing)}. Each passes on Kafka's "
                      f"same coordinator in process, the same code with time moved only when the scenario says, so "
                      f"what differs is the broker's clock (or, not seen so far, its request layer, which the "
                      f"in-process driver stands in for):", ""]
            lines += [f"- {_difference(u)}" for u in r.timing]
            lines.append("")
        lines += ["Unexplained differences: " + (str(len(r.unexplained)) if r.unexplained else "none."), ""]
        lines += [f"- {_difference(u)}" for u in r.unexplained]
    lines += ["", "## Differences found by running Kafka, fixed in the table", "",
              "Each is a scenario in `tests/scenarios/kafka-oracle/`, which every target runs (a scenario of one "
              "coordinator runs on the other side by side with the spec's prediction for it):", ""]
    for f in findings():
        lines.append(f"- **{f['scenario']}** (`{f['file']}`): {f['about']}")
    lines += ["", "## Known differences not yet in the table", "",
              "Where Kafka 4.0's Java coordinator does what the table does not say yet.  Its in-process target "
              "leaves such a step out, naming the reason (counted above), so that the rest of a run is still "
              "compared; the Scala coordinator's target has none.", ""]
    lines += [f"- {why}" for why in JAVA_LIMITS]
    return "\n".join(lines) + "\n"


def on_wall_clock(target: str) -> bool:
    """A broker's target: its harness examples take real time."""
    return target.startswith((FLEET_PREFIX, BROKER_SCHEME))


def run_report(targets: list[str], examples: int, steps: int, seed: int,
               progress: Callable[[str], None] | None = None, time_scale: int = BROKER_TIME_SCALE,
               broker_examples: int | None = None) -> list[TargetReport]:
    return [report_target(t, broker_examples if on_wall_clock(t) and broker_examples is not None else examples,
                          steps, seed, progress=progress, time_scale=time_scale) for t in targets]


def unexplained(reports: list[TargetReport]) -> int:
    return sum(len(r.unexplained) for r in reports)

