"""`groupspec scenario run`: the conformance scenarios against the spec, the runtime, Kafka or an adapter."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from groupspec.checkers.console import err, fail_input, out, output_path, write_outputs
from groupspec.checkers.paths import default_scenario_paths

from .shared import no_status, row_names


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


def scenario_generate(
    out_dir: str = typer.Option(..., "--out", help="The folder to write the suite into (tests/scenarios/generated "
                                                   "is the project's): its reach-*.yaml files are replaced."),
    presets: Optional[List[str]] = typer.Option(None, "--preset", help="A closed world to search (repeat it; "
                                                "default: the presets but deep and settle3, smallest first, then "
                                                "three variants that reach rows none of them does)."),
    max_states: int = typer.Option(300_000, "--max-states", help="States searched in each world at most."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Write, for each row of the table, a shortest scenario that fires it, from the closed worlds' state graphs
    (expectations: the spec's answers, member ids as bound variables), checked on the spec and the runtime."""
    import tempfile

    from groupspec.checkers.scenarios.generate import checked, coordinator_rows, generate, texts, unreached_md, worlds
    from groupspec.checkers.world.presets import PRESETS

    for p in presets or ():
        if p not in PRESETS:
            fail_input(f"--preset {p!r}: no such world; use one of {', '.join(PRESETS)}")
    searched = [(p, PRESETS[p]) for p in presets] if presets else worlds()
    if max_states < 1:
        fail_input(f"--max-states must be at least 1, got {max_states}")
    folder = output_path("--out", out_dir, "dir", ("UNREACHED.md",))
    with err.status("searching...") if not as_json else no_status() as status:
        found = generate(searched, max_states, progress=(lambda text: status.update(text)) if not as_json else None)
        with tempfile.TemporaryDirectory(prefix="groupspec-generate-") as tmp:
            failed = found.failed + checked(found, tmp)

    def write() -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("reach-*.yaml"):
            old.unlink()
        for name, text in texts(found).items():
            (folder / name).write_text(text)
        (folder / "UNREACHED.md").write_text(unreached_md(found, [name for name, _ in searched]))
    write_outputs("--out", folder, write)
    total = len(coordinator_rows())
    if as_json:
        print(json.dumps({"rows": total, "generated": len(found.scenarios), "states": found.states,
                          "failed": failed, "unreached": found.untranslated}, indent=2))
    else:
        out.print(f"{len(found.scenarios)} of {total} rows have a shortest scenario, written to {folder} "
                  f"(states searched: {', '.join(f'{p} {n:,}' for p, n in found.states.items())}); the "
                  f"{len(found.untranslated)} others, with why, in {folder / 'UNREACHED.md'}",
                  markup=False, highlight=False, soft_wrap=True)
        for row in failed:
            out.print(f"  failed its check: {row}: {found.untranslated[row]}", markup=False, highlight=False,
                      soft_wrap=True)
    if failed:
        raise typer.Exit(1)
