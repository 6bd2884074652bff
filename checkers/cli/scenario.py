"""`groupspec scenario run`: the conformance scenarios against the spec, the runtime, Kafka or an adapter."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from groupspec.checkers.console import fail_input, out, output_path, write_outputs
from groupspec.checkers.paths import default_scenario_paths

from .shared import row_names


scenario_app = typer.Typer(no_args_is_help=True, help="Conformance scenarios (contracts/scenario-format.md).")


def scenario_run(
    paths: Optional[List[str]] = typer.Argument(None, help="Scenario files or folders (default: the project's suite)."),
    target: str = typer.Option("spec", "--target", "-t",
                               help="spec, runtime, both, kafka-3.9 or kafka-4.0 (Kafka's own coordinators, in "
                                    "process), kafka://host:port (a broker), or module:factory (an adapter)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    junit: Optional[str] = typer.Option(None, "--junit", help="Write JUnit XML for CI."),
    coverage: bool = typer.Option(False, "--coverage", help="Report table rows no scenario reached."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only failures and the summary."),
) -> None:
    """Run scenarios against the spec, the runtime coordinator, or any implementation (Kafka's own too)."""
    from groupspec.checkers.conform.adapter import KAFKA, AdapterError
    from groupspec.checkers.scenarios.report import given_scenario_files, line, run_files, to_json, uncovered, write_junit
    from groupspec.checkers.scenarios.runner import TARGETS
    from groupspec.checkers.scenarios.targets import factory_for

    targets = list(TARGETS) if target == "both" else [target]
    factories = {}
    for t in targets:
        if t not in TARGETS:
            if ":" not in t and t not in KAFKA:
                fail_input(f"--target {t!r}: unknown target; use spec, runtime, both, {', '.join(KAFKA)} (Kafka's own "
                           f"coordinators), kafka://host:port (a broker) or module:factory (an adapter)")
            try:
                factories[t] = factory_for(t)
            except AdapterError as e:
                fail_input(str(e).replace("--adapter", "--target", 1))
            probe_target(t, factories[t])
    junit_path = output_path("--junit", junit, "file") if junit is not None else None
    if not paths:
        paths = [str(p) for p in default_scenario_paths()]
        if not paths:
            fail_input("no scenario paths given and no default suite found (tests/scenarios)")
    files = given_scenario_files("", paths)
    if junit_path and junit_path.resolve() in {Path(f).resolve() for f in files}:
        fail_input(f"--junit {junit_path}: is one of the scenario files to run, and would be overwritten; "
                   f"give another file name")
    runs = []
    for t in targets:
        show = None if as_json else (lambda r, t=t: None if quiet and r.result == "pass" else
                                     out.print(f"[{t}] {line(r)}", markup=False, highlight=False, soft_wrap=True))
        runs.append(run_files(files, t, on_result=show, factory=factories.get(t)))
    fired = set().union(*(r.fired() for r in runs))
    missing = uncovered(fired) if coverage else []
    if as_json:
        doc = json.loads(to_json(runs))
        if coverage:
            doc["coverage"] = {"rows": len(missing) + len(fired & row_names()), "uncovered": missing}
        print(json.dumps(doc, indent=2))
    else:
        for r in runs:
            skipped = f", {r.skipped} skipped" if r.skipped else ""
            out.print(f"{r.target}: {r.passed} passed, {r.failed} failed, {r.errors} errors{skipped} "
                      f"({r.seconds:.1f}s)", markup=False, highlight=False)
        if coverage:
            total = len(row_names())
            out.print(f"row coverage: {total - len(missing)} of {total} rows reached", markup=False)
            for name in missing:
                out.print(f"  never reached: {name}", markup=False, highlight=False, soft_wrap=True)
    if junit_path:
        write_outputs("--junit", junit_path, lambda: write_junit(runs, junit_path))
    if any(r.errors for r in runs):
        raise typer.Exit(2)
    if any(r.failed for r in runs):
        raise typer.Exit(1)


def probe_target(name: str, factory) -> None:
    """Make the target once before the run, so that one that cannot start (Kafka's jars not fetched, a broker
    that does not answer) is one line and exit 2, not an error on every scenario."""
    from groupspec.spec.kafka import check_config

    from groupspec.checkers.conform.adapter import Unsupported
    try:
        impl = factory(check_config({}))
    except Unsupported:
        return                      # it can start; it cannot take the default config (a broker's own)
    except Exception as e:          # noqa: BLE001 - whatever stops it from starting, said in one line
        fail_input(f"--target {name}: it could not start: {e}")
    close = getattr(impl, "close", None)
    if callable(close):
        close()
