"""`groupspec conform`: the command (registered in checkers/cli/__init__.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from groupspec.checkers.console import config_option, err, fail_input, finite, out, output_path, write_file
from groupspec.spec.kafka import brief, check_config


def conform_cmd(
    adapter: str = typer.Option("runtime", "--adapter", "-a",
                                help="runtime, spec, or module:factory (a callable taking the config, returning an "
                                     "adapter: see checkers/conform/adapter.py)"),
    profile: Optional[str] = typer.Option(None, "--profile", help="ci (about 5 s on the runtime) or nightly "
                                          "(long); --examples and --steps override it [default: ci]"),
    examples: Optional[int] = typer.Option(None, "--examples", help="examples (runs from a fresh coordinator)"),
    steps: Optional[int] = typer.Option(None, "--steps", help="at most this many steps per example"),
    seed: Optional[int] = typer.Option(None, "--seed", help="repeat a run (the seed is printed every time)"),
    config: Optional[List[str]] = typer.Option(None, "--config", help="key=value, Kafka's config keys (repeat it); "
                                                                       "fixed for every example"),
    shrink_seconds: Optional[float] = typer.Option(None, "--shrink-seconds", help="at most this long shrinking a "
                                                   "failure (0: report it as found) [default: 60]"),
    out_file: Optional[str] = typer.Option(None, "--out", help="write the failing scenario to this file"),
    walk_dir: Optional[str] = typer.Option(None, "--walkthrough", help="write the divergence step by step in "
                                           "Kafka's terms (the spec's group beside the implementation's) to this "
                                           "folder: walkthrough.md and .html (with --replay: of one file)"),
    replay: Optional[List[str]] = typer.Option(None, "--replay", help="instead: run these scenario files against "
                                                                      "the adapter, checking their expectations"),
    corpus: bool = typer.Option(True, "--corpus/--no-corpus", help="run the conformance scenarios (tests/scenarios) "
                                                                   "side by side with the spec first"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Test an implementation of the group coordinator against the spec, step by generated step.

    Random steps generated from the table run on both side by side; the first difference is shrunk to a
    scenario file that replays.  Exit 0: no divergence; 1: a divergence (or the spec failed), with its
    scenario; 2: bad input, or an adapter that cannot be used; 130 and 143 on Ctrl-C and SIGTERM (a signal
    is never a divergence: no scenario is written)."""

    from .adapter import AdapterBroken, AdapterError, load_factory, missing_methods
    from .harness import PROFILES, coverage_line, run, scenario_yaml

    if replay:      # the scenarios are run as they are written: what shapes a generated run does not apply
        given = [flag for flag, v in (("--profile", profile), ("--examples", examples), ("--steps", steps),
                                      ("--seed", seed), ("--config", config), ("--shrink-seconds", shrink_seconds),
                                      ("--out", out_file)) if v is not None]
        if given:
            fail_input(f"{', '.join(given)} with --replay: a replay runs the scenario files as written (their own "
                       f"config); leave {'it' if len(given) == 1 else 'them'} out")
    try:
        factory = load_factory(adapter)
    except AdapterError as e:
        fail_input(str(e))
    profile = "ci" if profile is None else profile
    if profile not in PROFILES:
        fail_input(f"--profile {profile!r}: unknown profile; use {' or '.join(PROFILES)}")
    n_examples = PROFILES[profile]["examples"] if examples is None else examples
    n_steps = PROFILES[profile]["steps"] if steps is None else steps
    if not 1 <= n_examples <= 10_000_000:
        fail_input(f"--examples must be from 1 to 10,000,000, got {n_examples}")
    if not 1 <= n_steps <= 10_000:
        fail_input(f"--steps must be from 1 to 10,000, got {n_steps}")
    if seed is not None and not 0 <= seed < 2**32:
        fail_input(f"--seed must be from 0 to {2**32 - 1}, got {seed}")
    if seed is None:
        import random
        seed = random.randrange(2**32)
    finite("--shrink-seconds", shrink_seconds, "a number of seconds, 0 or more")
    shrink_seconds = 60.0 if shrink_seconds is None else shrink_seconds
    if shrink_seconds < 0:
        fail_input(f"--shrink-seconds must be 0 or more, got {shrink_seconds}")
    overrides = config_option(config or [])
    out_path = output_path("--out", out_file, "file") if out_file is not None else None
    walk_path = output_path("--walkthrough", walk_dir, "dir", WALK_FILES) if walk_dir is not None else None
    if walk_path is not None and replay and (len(replay) != 1 or Path(replay[0]).is_dir()):
        fail_input(f"--walkthrough with --replay shows one scenario; give one scenario file, not "
                   f"{', '.join(replay)}")
    _check_adapter(factory, adapter, overrides, missing_methods, fail_input)

    if replay:
        failed = _replay(replay, factory, adapter, as_json, fail_input, out)
        if walk_path is not None:
            from groupspec.checkers.scenarios.model import load_file
            scenarios = load_file(Path(replay[0]))      # read already, by the replay
            if len(scenarios) != 1:
                fail_input(f"--walkthrough with --replay {replay[0]}: the file holds {len(scenarios)} scenarios; "
                           f"a walkthrough shows one (put it in a file of its own)")
            sc = scenarios[0]
            _write_walkthrough(walk_path, {"config": sc.config, "steps": [s.body for s in sc.steps]}, factory,
                               adapter, as_json)
        if failed:
            raise typer.Exit(1)
        return

    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    show = not as_json
    # shown on a terminal only: elsewhere rich's display leaves an empty line behind
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                        transient=True, disable=not show or not err.is_terminal)
    if show:
        err.print(f"conform: adapter {adapter}, seed {seed}, {n_examples} examples "
                  f"of up to {n_steps} steps", markup=False, highlight=False)
    with progress:
        task = progress.add_task("starting", total=None)

        def tick(stats: dict) -> None:
            if stats["steps"] % 25 == 0:
                phase = "shrinking a divergence" if "found_after" in stats else "searching"
                progress.update(task, description=f"{phase}: {stats.get('examples', 0):,} examples, "
                                                  f"{stats['steps']:,} steps")
        try:
            report = run(factory, adapter, n_examples, n_steps, seed, overrides, tick if show else None,
                         shrink_seconds=shrink_seconds, corpus=corpus)
        except AdapterBroken as e:
            fail_input(f"--adapter {adapter}: {e}")
    if out_path is not None and report.scenario:
        write_file("--out", out_path, report.scenario_yaml)
    if walk_path is not None and report.result == "divergence":
        _write_walkthrough(walk_path, report.scenario, factory, adapter, as_json)
    if as_json:
        print(json.dumps(report.as_json(), indent=2, default=str))
    elif report.result == "ok":
        out.print(f"ok: {report.examples:,} examples, {report.steps:,} steps, no divergence from the spec "
                  f"({report.seconds:.1f}s; seed {report.seed}: --seed {report.seed} repeats it); "
                  f"{coverage_line(report.stats['coverage'])}", markup=False, highlight=False)
    else:
        found = report.stats.get("found_after") or {}
        out.print(f"{report.result}: {report.message}", markup=False, highlight=False, soft_wrap=True)
        if found:
            out.print(f"found after {found['examples']:,} examples ({found['steps']:,} steps, {found['seconds']}s), "
                      f"shrunk to {len(report.scenario['steps'])} scenario steps; seed {report.seed} "
                      f"(--seed {report.seed} repeats it)"
                      + (f"; by the conformance scenario {found['corpus_scenario']!r}" if found.get("corpus_scenario")
                         else "")
                      + (f"; {coverage_line(report.stats['coverage'])}" if report.stats.get("coverage") else ""),
                      markup=False, highlight=False)
        out.print("\n# the scenario (contracts/scenario-format.md): save it and replay it with\n"
                  f"#   groupspec scenario run FILE       (the spec: passes)\n"
                  f"#   groupspec conform --adapter {adapter} --replay FILE   (this implementation: fails)\n",
                  markup=False, highlight=False)
        out.print(scenario_yaml(report.scenario), markup=False, highlight=False, end="")
        if out_path is not None:
            out.print(f"\n# written to {out_path}", markup=False, highlight=False)
    if report.result != "ok":
        raise typer.Exit(1)


def _check_adapter(factory, name: str, overrides: dict, missing_methods, fail_input) -> None:
    """Make one adapter before the run, so that a factory that cannot work is one line, not a divergence."""
    from groupspec.spec.kafka import ConfigError
    from .adapter import Unsupported
    fixed = getattr(factory, "fixed_config", None) or {}
    if not isinstance(fixed, dict):
        fail_input(f"--adapter {name}: its fixed_config is {brief(fixed)}, not a mapping of Kafka's config keys to "
                   f"the values its implementation fixes (adapter.py)")
    try:
        cfg = check_config({**fixed, **overrides})
    except ConfigError as e:
        fail_input(f"--adapter {name}: its fixed_config and --config together: {e}")
    try:
        impl = factory(cfg)
    except Unsupported as e:
        fail_input(f"--adapter {name}: {e}")
    except Exception as e:      # noqa: BLE001 - the user's factory: whatever it raises is said in one line
        fail_input(f"--adapter {name}: the factory raised {type(e).__name__}: {brief(str(e), 150)} when called with "
                   f"a config (a dict of Kafka's config keys); it must return an adapter")
    unsupported = getattr(impl, "unsupported", ()) or ()
    if isinstance(unsupported, str) or not isinstance(unsupported, (set, frozenset, list, tuple)) or \
            not all(isinstance(m, str) for m in unsupported):
        fail_input(f"--adapter {name}: its `unsupported` is {brief(unsupported)}; give a set of the names of the "
                   f"methods it cannot do, e.g. {{'mark_dead'}} (adapter.py)")
    missing = missing_methods(impl)
    if missing:
        fail_input(f"--adapter {name}: the adapter has no {', '.join(missing)}; implement them, or list those it "
                   f"cannot do in its `unsupported` attribute (checkers/conform/adapter.py)")
    close = getattr(impl, "close", None)
    if callable(close):
        try:
            close()
        except Exception as e:      # noqa: BLE001 - the user's adapter, as above
            fail_input(f"--adapter {name}: closing an adapter the factory had just made raised {type(e).__name__}: "
                       f"{brief(str(e), 150)}; close must release what the adapter holds, and raise only if that "
                       f"fails")


def _replay(paths: list[str], factory, name: str, as_json: bool, fail_input, out) -> bool:
    """The scenario files run against the adapter alone (as `groupspec scenario run --target` does); whether
    any failed."""
    from groupspec.checkers.scenarios.report import given_scenario_files, line, run_files

    files = given_scenario_files("--replay ", paths)
    show = None if as_json else (lambda r: out.print(f"[{name}] {line(r)}", markup=False, highlight=False,
                                                      soft_wrap=True))
    run = run_files(files, name, on_result=show, factory=factory)
    bad = [r for r in run.results if r.result == "error"]
    if bad:
        fail_input(f"{bad[0].file}: {bad[0].scenario}: {bad[0].message}")
    if as_json:
        doc = run.as_json()
        doc["adapter"] = doc.pop("target")
        print(json.dumps(doc, indent=2))
    return bool(run.failed)


WALK_FILES = ("walkthrough.md", "walkthrough.html")


def _write_walkthrough(folder: Path, scenario: dict, factory, name: str, as_json: bool) -> None:
    """The divergence's walkthrough (walkthrough.py) into `folder`."""
    from groupspec.checkers.console import write_folder
    from groupspec.checkers.review.walkthrough import html_page
    from .walkthrough import walkthrough
    md = walkthrough(scenario, factory, name)
    write_folder("--walkthrough", folder, {"walkthrough.md": md,
                                           "walkthrough.html": html_page(md, f"conform: {name} and the spec")})
    if not as_json:
        err.print(f"the divergence, step by step: {folder / 'walkthrough.html'} (and .md)", markup=False,
                  highlight=False)
