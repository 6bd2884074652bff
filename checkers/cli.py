"""`groupspec`: the command line.

Exit codes (DESIGN.md §4): 0 everything holds, 1 a property or scenario
fails, 2 bad input (with a one-line message saying what and where).
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer

from .kafka.cli import kafka_app
from .serve.cli import serve_app
from .console import err, fail_input, one_line, out, output_path, say_error, write_outputs  # noqa: F401
from .paths import REPO, default_scenario_paths

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="An executable spec of Kafka's classic consumer-group coordinator, and its checkers.")
scenario_app = typer.Typer(no_args_is_help=True, help="Conformance scenarios (contracts/scenario-format.md).")
app.add_typer(scenario_app, name="scenario")
app.add_typer(kafka_app, name="kafka")
app.add_typer(serve_app, name="serve")

class Terminated(BaseException):
    """SIGTERM: raised in the main process so that every `finally` runs (the search's workers are
    stopped, the progress display closed); not an Exception, so no `except Exception` keeps it."""


@scenario_app.command("run")
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
    from .conform.adapter import KAFKA, AdapterError
    from .scenarios.report import line, run_files, scenario_files, to_json, uncovered, write_junit
    from .scenarios.runner import TARGETS
    from .scenarios.targets import factory_for

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
            _probe_target(t, factories[t])
    junit_path = output_path("--junit", junit, "file") if junit is not None else None
    if any(not p.strip() for p in paths or ()):
        fail_input("a scenario path is empty (\"\"); give a file or folder")
    paths = [Path(p) for p in paths] if paths else default_scenario_paths()
    if not paths:
        fail_input("no scenario paths given and no default suite found (tests/scenarios)")
    for p in paths:
        if not p.exists():
            fail_input(f"{p}: no such file or folder")
    files = scenario_files(paths)
    if not files:
        fail_input(f"no scenario files (.yaml, .yml, .json) under {', '.join(map(str, paths))}")
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
            doc["coverage"] = {"rows": len(missing) + len(fired & _row_names()), "uncovered": missing}
        print(json.dumps(doc, indent=2))
    else:
        for r in runs:
            skipped = f", {r.skipped} skipped" if r.skipped else ""
            out.print(f"{r.target}: {r.passed} passed, {r.failed} failed, {r.errors} errors{skipped} "
                      f"({r.seconds:.1f}s)", markup=False, highlight=False)
        if coverage:
            total = len(_row_names())
            out.print(f"row coverage: {total - len(missing)} of {total} rows reached", markup=False)
            for name in missing:
                out.print(f"  never reached: {name}", markup=False, highlight=False, soft_wrap=True)
    if junit_path:
        write_outputs("--junit", junit_path, lambda: write_junit(runs, junit_path))
    if any(r.errors for r in runs):
        raise typer.Exit(2)
    if any(r.failed for r in runs):
        raise typer.Exit(1)


def _probe_target(name: str, factory) -> None:
    """Make the target once before the run, so that one that cannot start (Kafka's jars not fetched, a broker
    that does not answer) is one line and exit 2, not an error on every scenario."""
    from groupspec.spec.kafka import check_config

    from .conform.adapter import Unsupported
    try:
        impl = factory(check_config({}))
    except Unsupported:
        return                      # it can start; it cannot take the default config (a broker's own)
    except Exception as e:          # noqa: BLE001 - whatever stops it from starting, said in one line
        fail_input(f"--target {name}: it could not start: {e}")
    close = getattr(impl, "close", None)
    if callable(close):
        close()


@app.command("lint")
def lint_cmd(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Prove each trigger's rows exclusive, covering and reachable, and every row keeping the structural
    invariants (Z3); check the lifecycle's moves."""
    from .proofs.lint import lint
    with err.status("linting the table with Z3...") if not as_json else _null():
        res = lint()
    if as_json:
        print(json.dumps(res.as_json(), indent=2))
    else:
        for p in res.problems:
            out.print(f"{p.check}: {p.trigger}: {'; '.join(p.rows)}: {p.detail} {p.witness or ''}",
                      markup=False, highlight=False, soft_wrap=True)
        verdict = "ok" if not res.problems else f"{len(res.problems)} problem(s)"
        out.print(f"lint: {verdict} ({res.checks} Z3 checks over {len(_row_names())} rows, {res.seconds:.1f}s)",
                  markup=False)
    if res.problems:
        raise typer.Exit(1)


@app.command("docs")
def docs_cmd(out_dir: str = typer.Option(str(REPO / "docs"), "--out", help="Where to write."),
             site: Optional[str] = typer.Option(None, "--site", help="Build the browsable HTML site into this "
                                                "folder instead (MkDocs; viewable with no network)."),
             as_json: bool = typer.Option(False, "--json", help="Print the files written as JSON.")) -> None:
    """Write the design-review artifacts: state diagram, the table, the invariant catalog, the flows."""
    from .review.errors import DocsError
    from .review.docs import FILES, dot_program, write_docs
    try:
        dot_program()
        if site is not None:
            from .review.site import mermaid_js
            mermaid_js()
    except DocsError as e:
        fail_input(str(e))
    files: list = []
    if site is not None:
        from .review.site import build_site
        folder = output_path("--site", site, "dir", ("index.html",))
        if folder.is_dir() and any(folder.iterdir()) and not (folder / "index.html").is_file():
            # MkDocs empties the folder it builds into: never one that holds anything but a site
            fail_input(f"--site {folder}: the folder is not empty and holds no site (the build replaces what is "
                       f"there); give a new or empty folder, or one a previous --site built")
        try:
            write_outputs("--site", folder, lambda: files.extend(build_site(folder)), after_result=False)
        except DocsError as e:
            fail_input(str(e))
        if as_json:
            print(json.dumps({"site": str(folder), "pages": len(files)}))
        else:
            out.print(f"built the site in {folder} ({len(files)} pages): open {folder / 'index.html'}", markup=False,
                      highlight=False)
        return
    folder = output_path("--out", out_dir, "dir", FILES)
    try:
        write_outputs("--out", folder, lambda: files.extend(write_docs(folder)), after_result=False)
    except DocsError as e:
        fail_input(str(e))
    if as_json:
        print(json.dumps({"written": [str(f) for f in files]}))
    else:
        for f in files:
            out.print(f"wrote {f}", markup=False, highlight=False)


# The options that say which closed world: `groupspec check` and `groupspec export tla` take the same.
_W = dict(
    preset=typer.Option("small", "--preset", help="tiny, twogen, small, faults, static, settle, settle3, "
                                                  "hung (seconds), ci (under two minutes), deep (nightly)"),
    clients=typer.Option(None, "--clients", help="number of consumer clients"),
    topics=typer.Option(None, "--topics"),
    partitions=typer.Option(None, "--partitions", help="partitions per topic"),
    max_generation=typer.Option(None, "--max-generation"),
    member_ids=typer.Option(None, "--member-ids", help="member ids the coordinator may issue"),
    crash=typer.Option(None, "--crash/--no-crash", help="clients may crash"),
    expiry=typer.Option(None, "--expiry/--no-expiry", help="session timers may fire"),
    failover=typer.Option(None, "--failover/--no-failover", help="coordinator unload/load"),
    append_failure=typer.Option(None, "--append-failure/--no-append-failure"),
    loss=typer.Option(None, "--loss/--no-loss", help="the network may lose messages"),
    duplication=typer.Option(None, "--duplication/--no-duplication", help="the network may deliver a request twice"),
    reordering=typer.Option(None, "--reordering/--no-reordering",
                            help="a request may be overtaken by its client's later ones"),
    hung_poll=typer.Option(None, "--hung-poll/--no-hung-poll",
                           help="a client's poll loop may hang after its JoinGroup response: it never syncs while "
                                "its heartbeat thread keeps heartbeating"),
    leaves_rebalancing=typer.Option(None, "--leaves-rebalancing/--no-leaves-rebalancing",
                                    help="a dynamic member may close and leave while the group rebalances"),
    timely=typer.Option(None, "--timely/--no-timely",
                        help="clients answer within their timeouts: the DelayedJoin never expires and the sync "
                             "timeout never fires"),
    rebalance_budget=typer.Option(None, "--rebalance-budget/--no-rebalance-budget",
                                  help="the generation bound is a property (timely clients without faults only)"),
)


_W_TYPES = {"preset": str, **{n: Optional[int] for n in ("clients", "topics", "partitions", "max_generation",
                                                            "member_ids")}}


def world_options(fn=None, **defaults):
    """The command takes the world options (_W) besides its own, and gets them as one dict,
    `world`, for `_world(**world)`: every command that names a closed world names it alike.
    `@world_options(preset="tiny")` gives an option another default for one command."""
    import copy
    import functools
    import inspect
    if fn is None:
        return functools.partial(world_options, **defaults)
    opts = dict(_W)
    for name, value in defaults.items():
        opts[name] = copy.copy(_W[name])
        opts[name].default = value
    own = [p for n, p in inspect.signature(fn).parameters.items() if n != "world"]
    extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=opt,
                               annotation=_W_TYPES.get(n, Optional[bool])) for n, opt in opts.items()]

    @functools.wraps(fn)
    def command(*args, **kwargs):
        return fn(*args, world={n: kwargs.pop(n) for n in _W}, **kwargs)
    command.__signature__ = inspect.Signature(own + extra)
    del command.__wrapped__
    return command


def _world(preset: str, **overrides):
    """The world the options name (a preset with flags over it), or one line and exit 2."""
    import dataclasses
    from .world.presets import PRESETS, world_problem
    if preset not in PRESETS:
        fail_input(f"--preset {preset!r}: unknown preset; use {', '.join(PRESETS)}")
    try:
        cfg = dataclasses.replace(PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None})
    except ValueError as e:      # a world that contradicts itself (WorldConfig says which flags)
        fail_input(str(e))
    problem = world_problem(cfg)
    if problem:
        fail_input(problem)
    return cfg


@app.command("prove")
@world_options(preset="tiny")
def prove_cmd(
    invariant: List[str] = typer.Option([], "--invariant", "-i", help="Prove only these invariants (repeatable)."),
    strengthen: bool = typer.Option(True, "--strengthen/--no-strengthen",
                                    help="Search auxiliary lemmas when plain induction fails."),
    bound: int = typer.Option(2, "--bound", help="Members for the fixed-size fallback ('proved up to N')."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Z3's work per query, in seconds of this "
                                            "machine (counted in Z3's resource units, so a loaded machine gets the "
                                            "same answers; running out is 'unknown') [default: 3; with --bmc: "
                                            "wall-clock seconds, none]."),
    budget: float = typer.Option(60.0, "--budget", help="Z3's work for the strengthening search per invariant "
                                 "and reading, in seconds of this machine (resource units, as --timeout)."),
    check_lemmas: str = typer.Option("tiny,small", "--check-lemmas",
                                     help="Worlds whose reachable states every lemma found must hold in ('' for none)."),
    save: Optional[str] = typer.Option(None, "--save", help="Also write the JSON result here (docs/proofs.json: "
                                                              "the catalog page `groupspec docs` writes shows it)."),
    search: str = typer.Option("vocabulary", "--search", help="vocabulary: Houdini over the candidates "
                               "about the invariant's variables, widened by what its counterexamples to induction "
                               "break, per invariant; full: Houdini over every candidate (the largest inductive "
                               "subset), then unsat cores."),
    bmc: Optional[int] = typer.Option(None, "--bmc", help="Instead: bounded model checking of a closed world, "
                                      "K steps deep from its initial state (Z3; the same declarations the "
                                      "explicit checker compiles)."),
    out_dir: Optional[str] = typer.Option(None, "--out", help="With --bmc: where to write a counterexample (ITF, "
                                                               "table, Mermaid)."),
    engine: str = typer.Option("both", "--engine", help="houdini: induction and Houdini's search over "
                               "candidate lemmas (for every size, else for fixed sizes); spacer: Z3's Spacer on "
                               "the rows as constrained Horn clauses (fixed sizes, N=--bound); both: Spacer where "
                               "Houdini proves nothing."),
    spacer_budget: float = typer.Option(60.0, "--spacer-budget", help="Z3's work for Spacer per invariant, over "
                                        "every widening of the variables its relation reads, in seconds of this "
                                        "machine (resource units, as --budget)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", help="Invariants proved at once, each in a process of "
                                       "its own [default: the machine's cores]."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    world: Optional[dict] = None,
) -> None:
    """Prove the coordinator invariants by induction over the table's rows, for any number of members (Z3);
    with --bmc K, search a closed world (--preset and the world flags of `groupspec check`, default tiny)
    K steps deep for a state that breaks an invariant."""
    if bmc is not None:
        _bmc(bmc, world, timeout, out_dir, as_json)
        return
    flags = [n for n, v in world.items() if n != "preset" and v is not None]
    if flags or world["preset"] != "tiny":
        given = ", ".join("--" + n.replace("_", "-") for n in (flags or ["preset"]))
        fail_input(f"{given}: a closed world is for --bmc K; the induction proofs are over every group state")
    if out_dir is not None:
        fail_input("--out is for --bmc's counterexample; the proofs' result is written with --save")
    timeout = 3.0 if timeout is None else timeout
    from groupspec.spec.invariants import INVARIANTS
    from .proofs.command import as_json as proofs_json, exit_code, print_table, run_induction
    known = [i.name for i in INVARIANTS]
    for name in invariant:
        if name not in known:
            fail_input(f"--invariant {name!r}: no such invariant; use one of {', '.join(known)}")
    if search not in ("vocabulary", "full"):
        fail_input(f"--search {search!r}: use vocabulary or full")
    if engine not in ("houdini", "spacer", "both"):
        fail_input(f"--engine {engine!r}: use houdini, spacer or both")
    if not 1 <= bound <= 6:
        fail_input(f"--bound {bound}: give 1 to 6 members (the fixed-size reading grows fast)")
    if not 0 < timeout <= 600 or not 0 < budget <= 3600 or not 0 < spacer_budget <= 3600:
        fail_input("--timeout must be in (0, 600] seconds, and --budget and --spacer-budget in (0, 3600]")
    presets = tuple(p for p in check_lemmas.split(",") if p)
    if presets:
        presets = tuple(_preset_list("--check-lemmas", check_lemmas))
    target = output_path("--save", save, "file") if save else None
    progress = None if as_json else (lambda what: err.print(f"proving: {what}", markup=False, highlight=False))
    jobs = _bounded_workers("--jobs", len(os.sched_getaffinity(0)) if jobs is None else jobs)
    proofs, prover = run_induction(invariant or None, strengthen, bound, timeout, budget, presets, progress,
                                   search, engine, spacer_budget, jobs)
    result = proofs_json(proofs, prover)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print_table(out, proofs, prover)
    if target is not None:
        write_outputs("--save", target, lambda: target.write_text(json.dumps(result, indent=2) + "\n",
                                                                  encoding="utf-8"))
    if exit_code(proofs):
        raise typer.Exit(1)


@app.command("check")
@world_options
def check_cmd(
    symmetry: bool = typer.Option(True, "--symmetry/--no-symmetry", help="symmetry reduction over clients"),
    liveness: bool = typer.Option(False, "--liveness", help="also look for a fair cycle stuck in a rebalance "
                                                            "(keeps the graph; turns symmetry off)"),
    max_states: Optional[int] = typer.Option(None, "--max-states", help="stop after this many distinct states"),
    workers: Optional[int] = typer.Option(None, "--workers", help="processes expanding states (default 2; "
                                                                   "1: a single process)"),
    no_waivers: bool = typer.Option(False, "--no-waivers", help="check the invariants a preset waives, too"),
    out_dir: Optional[str] = typer.Option(None, "--out", help="where to write a counterexample (ITF, table, Mermaid)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    world: Optional[dict] = None,
) -> None:
    """Explore every reachable state of a bounded closed world; report the shortest violation.
    The depth reported is how deep the breadth-first search went or, with a counterexample,
    the counterexample's length in steps (a --liveness lasso: the path to the loop and one lap
    of it; no progress: the path to the stuck state)."""
    import dataclasses
    from .review.counterexample import step_table, to_itf
    from .search.explicit import check, check_parallel
    from .world.state_space import WorldModel
    if liveness and workers is not None and workers != 1:
        fail_input(f"--workers {workers} with --liveness: the liveness search keeps the whole state graph in one "
                   f"process; leave out --workers")
    workers = 1 if liveness else _bounded_workers("--workers", 2 if workers is None else workers)
    if max_states is not None and max_states < 1:
        fail_input(f"--max-states must be at least 1, got {max_states} (leave it out for no limit)")
    cfg = _world(**world)
    if no_waivers:
        cfg = dataclasses.replace(cfg, waive=())
    out_path = output_path("--out", out_dir, "dir", CE_FILES) if out_dir is not None else None
    from rich.live import Live
    from rich.text import Text
    live = None if as_json else Live(Text("starting"), console=err, transient=True)

    def progress(gen, distinct, queue, depth, secs):
        if live:
            live.update(Text(f"{distinct:,} distinct, {gen:,} generated, queue {queue:,}, depth {depth}, "
                             f"{distinct / max(secs, 1e-9):,.0f} states/s"))
    if live:
        live.start()
    model = WorldModel(cfg)
    try:
        if workers > 1:
            res = check_parallel(model, workers=workers, symmetry=symmetry, progress=progress, max_states=max_states)
        else:
            res = check(model, symmetry=symmetry, progress=progress, max_states=max_states, liveness=liveness)
    except RuntimeError as e:    # a search worker died (killed, out of memory) or failed
        fail_input(f"the search stopped: {e}")
    finally:
        if live:
            live.stop()
    from groupspec.spec.kafka import NEW_COORDINATOR, coordinator_name
    from groupspec.spec.table import rows_for
    from groupspec.spec.world import WORLD_COORDINATOR
    rows = rows_for(WORLD_COORDINATOR)        # the closed world describes one coordinator
    fired = dict(res.coverage)
    never = [r.name for r in rows if r.name not in fired]
    doc = {"result": "ok" if res.result == "ok" else ("stopped" if res.result == "stopped" else "violation"),
           "kind": res.result,
           "violation": res.violation or None, "preset": world["preset"], "world": dataclasses.asdict(cfg),
           "symmetry": res.symmetry, "distinct_states": res.distinct_states, "generated_states": res.generated,
           "unreduced_states": res.unreduced_states,
           "symmetry_reduction": round(res.unreduced_states / max(1, res.distinct_states), 2),
           "seconds": round(res.seconds, 2), "states_per_second": round(res.states_per_second),
           "workers": workers,
           "depth": res.depth, "complete": res.complete, "invariants": res.invariants,
           "states_first_reached_per_depth": res.levels,
           "waived": [{"invariant": n, "why": w} for n, w in cfg.waive],
           "coordinator": coordinator_name({NEW_COORDINATOR: WORLD_COORDINATOR}),
           "coverage": {"fired": fired, "never_fired": never,
                        "table_rows": len(rows), "table_rows_fired": len(rows) - len(never)}}
    if res.path:
        doc["counterexample"] = {"steps": step_table(res.path, model), "itf": to_itf(res.path, model, res.violation)}
        if res.loop_start >= 0:
            doc["counterexample"]["loop_starts_at_step"] = res.loop_start
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        out.print(f"{doc['result']}{': ' + res.violation if res.violation else ''} — {res.distinct_states:,} distinct "
                  f"states ({res.generated:,} generated), depth {res.depth}, {res.seconds:.1f}s, "
                  f"{res.states_per_second:,.0f} states/s{'' if res.complete else ' (stopped at --max-states)'}",
                  markup=False)
        for st in doc.get("counterexample", {}).get("steps", []):
            mark = " ⟲ loop from here" if st["step"] == res.loop_start else ""
            out.print(f"  {st['step']:>3}  {st['action']}{mark}", markup=False)
        out.print(f"table rows fired: {doc['coverage']['table_rows_fired']} of the {len(rows)} of "
                  f"{coordinator_name({NEW_COORDINATOR: WORLD_COORDINATOR})}, the coordinator the closed world "
                  f"describes (--json lists the rest)", markup=False)
        if res.symmetry:
            out.print(f"symmetry reduction: {doc['symmetry_reduction']}x ({res.unreduced_states:,} states "
                      f"without it)", markup=False)
        for n, w in cfg.waive:
            out.print(f"not checked in this world: {n} ({w})", markup=False)
    if res.path and out_path:
        write_counterexample(out_path, doc["counterexample"], res.path, model, res.violation, as_json,
                             res.loop_start)
    if res.result in ("violation", "deadlock", "lasso", "no-progress"):
        raise typer.Exit(1)


CE_FILES = ("counterexample.itf.json", "counterexample.mmd", "counterexample.md", "counterexample.html",
            "mermaid.min.js")


def _mermaid_js():
    from .review.errors import DocsError
    from .review.site import mermaid_js
    try:
        return mermaid_js()
    except DocsError:
        return None


def write_counterexample(out_path: Path, ce: dict, path: list, model, violation: str, as_json: bool,
                         loop_start: int = -1) -> None:
    """Write a counterexample (`ce`: its step table and ITF, as the JSON output holds them) into
    the folder `out_path` in the three formats (CE_FILES)."""
    from .review.counterexample import html_page, mermaid, violation_meaning
    sequence = mermaid(path, model, violation, loop_start)
    texts = {"counterexample.itf.json": json.dumps(ce["itf"], indent=1),
             "counterexample.mmd": sequence,
             "counterexample.md": _steps_md(ce["steps"], violation),
             "counterexample.html": html_page(ce["steps"], sequence, violation, violation_meaning(violation))}

    def write():
        out_path.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (out_path / name).write_text(text, encoding="utf-8")
        js = _mermaid_js()
        if js is not None:      # the page draws its diagram with it; without it, it shows the diagram's text
            shutil.copyfile(js, out_path / "mermaid.min.js")
    write_outputs("--out", out_path, write)
    if not as_json:
        out.print(f"counterexample written to {out_path}", markup=False)


export_app = typer.Typer(no_args_is_help=True, help="The closed world for other tools.")
app.add_typer(export_app, name="export")


@export_app.command("tla")
@world_options
def export_tla_cmd(
    out_dir: str = typer.Argument(..., help="Folder to write the module (.tla) and its TLC configuration (.cfg) in."),
    symmetry: bool = typer.Option(True, "--symmetry/--no-symmetry", help="declare SYMMETRY over clients in the .cfg"),
    liveness: bool = typer.Option(False, "--liveness", help="list the liveness PROPERTY in the .cfg (use it "
                                                            "with --no-symmetry)"),
    run_tlc: bool = typer.Option(False, "--run-tlc", help="run TLC on it and `groupspec check` on the same world, "
                                                          "and print both verdicts"),
    workers: int = typer.Option(2, "--workers", help="workers of each checker with --run-tlc"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    world: Optional[dict] = None,
) -> None:
    """Write the bounded closed world as a TLA+ module and a TLC configuration, generated from the
    spec's declarations; with --run-tlc, check it with TLC and with `groupspec check` side by side."""
    from .tla.module import export
    from .tla.export import ExportError
    from .tla.tlc import find_jar, java
    cfg = _world(**world)
    workers = _bounded_workers("--workers", workers)
    jar = None
    if run_tlc:
        jar, why = find_jar()
        if jar is None:
            fail_input(f"--run-tlc: {why}")
        if java() is None:
            fail_input("--run-tlc: no `java` on the PATH; install Java 17 (.ci/setup does)")
    try:
        exported = export(cfg, symmetry=symmetry, liveness=liveness)
    except ExportError as e:
        fail_input(f"this world cannot be exported: {e}")
    folder = output_path("OUT_DIR", out_dir, "dir", (f"{exported.name}.tla", f"{exported.name}.cfg"))

    def write():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{exported.name}.tla").write_text(exported.module, encoding="utf-8")
        (folder / f"{exported.name}.cfg").write_text(exported.config, encoding="utf-8")
    write_outputs("OUT_DIR", folder, write, after_result=False)
    doc = {"module": str(folder / f"{exported.name}.tla"), "config": str(folder / f"{exported.name}.cfg"),
           "lines": exported.module.count("\n")}
    if run_tlc:
        doc.update(_side_by_side(cfg, folder, exported, jar, workers, symmetry))
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        out.print(f"wrote {doc['module']} ({doc['lines']:,} lines) and {doc['config']}", markup=False)
        if run_tlc:
            for who in ("tlc", "groupspec"):
                r = doc[who]
                out.print(f"{who:>9}: {r['result']}{' ' + r['violation'] if r['violation'] else ''}, "
                          f"{r['distinct_states']:,} distinct states, depth {r['depth']}, {r['seconds']:.1f}s",
                          markup=False)
            out.print("they agree" if doc["agree"] else f"they DISAGREE: {doc['disagreement']}", markup=False)
            if doc.get("tlc_trace"):
                out.print(f"TLC's counterexample: {doc['tlc_trace']} (groupspec replay reads it)", markup=False)
    if run_tlc and (not doc["agree"] or doc["tlc"]["result"] != "ok"):
        raise typer.Exit(1)


def _side_by_side(cfg, folder: Path, exported, jar, workers: int, symmetry: bool) -> dict:
    """TLC and `groupspec check` on one world: verdict, invariant, distinct states, depth in steps."""
    from .search.explicit import check, check_parallel
    from .tla.tlc import run_tlc
    from .world.state_space import WorldModel
    t = run_tlc(folder, exported.name, workers=workers, jar=jar)
    if t.result == "error":
        fail_input(f"TLC failed on {folder / exported.name}.tla: {one_line(t.output[-600:])}")
    ours = (check_parallel(WorldModel(cfg), workers=workers, symmetry=symmetry) if workers > 1
            else check(WorldModel(cfg), symmetry=symmetry))
    names = dict(exported.invariants)
    tlc = {"result": t.result, "violation": names.get(t.violation, t.violation) or None,
           "distinct_states": t.distinct_states,
           "depth": len(t.trace) - 1 if t.trace else t.depth - 1, "seconds": round(t.seconds, 2)}
    mine = {"result": ours.result, "violation": ours.violation or None, "distinct_states": ours.distinct_states,
            "depth": ours.depth, "seconds": round(ours.seconds, 2)}
    why = []
    if tlc["result"] != mine["result"]:
        why.append(f"verdicts {tlc['result']} and {mine['result']}")
    elif tlc["result"] == "ok" and tlc["distinct_states"] != mine["distinct_states"]:
        why.append(f"{tlc['distinct_states']:,} and {mine['distinct_states']:,} distinct states")
    elif tlc["result"] != "ok" and tlc["depth"] != mine["depth"]:
        why.append(f"counterexamples of {tlc['depth']} and {mine['depth']} steps")
    doc = {"tlc": tlc, "groupspec": mine, "agree": not why, "disagreement": "; ".join(why)}
    if t.trace:
        path = folder / "tlc-trace.json"
        path.write_text(json.dumps({"counterexample": {"state": [[i + 1, s] for i, s in enumerate(t.trace)]}}))
        doc["tlc_trace"] = str(path)
    return doc


@app.command("replay")
@world_options
def replay_cmd(
    trace: str = typer.Argument(..., help="A TLC counterexample (-dumpTrace json) or an ITF trace."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    world: Optional[dict] = None,
) -> None:
    """Replay a trace of the closed world through the explicit checker's world: every step must be
    one of the world's own steps; the last state is judged by the invariants. Exit 0: it replays and
    breaks nothing; 1: it breaks an invariant, or leaves the world at some step."""
    from .world.itf_replay import TraceError, load_trace, replay
    from .world.state_space import WorldModel
    cfg = _world(**world)
    path = Path(trace)
    if not path.is_file():
        fail_input(f"TRACE {trace}: no such file; give a TLC -dumpTrace json file or an ITF trace")
    try:
        fmt, states = load_trace(path)
        res = replay(WorldModel(cfg), fmt, states)
    except TraceError as e:
        fail_input(f"TRACE {trace}: {e} (is it a trace of --preset {world['preset']} with these flags?)")
    doc = {"format": fmt, "states": res.states, "steps": res.steps,
           "departs_at_step": res.departs if res.departs >= 0 else None, "violation": res.violation}
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        for i, a in enumerate(res.steps, 1):
            out.print(f"  {i:>3}  {a}", markup=False)
        if res.departs >= 0:
            out.print(f"step {res.departs} is no step of this world (the state differs from every successor)"
                      if res.departs else "the first state is not the world's initial state", markup=False)
        elif res.violation:
            out.print(f"replayed {len(res.steps)} steps; the trace breaks {res.violation}", markup=False)
        else:
            out.print(f"replayed {len(res.steps)} steps; no invariant is broken", markup=False)
    if res.departs >= 0 or res.violation:
        raise typer.Exit(1)



def _bounded_workers(option: str, n: int) -> int:
    from .search.explicit import worker_limit
    if n < 1:
        fail_input(f"{option} must be at least 1, got {n}")
    if n > worker_limit():
        fail_input(f"{option} {n:,}: at most {worker_limit()} here (twice the {worker_limit() // 2} CPUs this "
                   f"process may use: each worker keeps one CPU busy, more only share them and add memory)")
    return n


@app.command("mutate")
def mutate_cmd(
    preset: str = typer.Option("tiny,twogen,small,settle,static,faults", "--preset",
                               help="the worlds each mutant is checked in, smallest first, comma-separated: a "
                                    "mutant goes on to the next only if the ones before did not kill it"),
    liveness_in: Optional[str] = typer.Option(None, "--liveness-in",
                                              help="the worlds where liveness (a fair lasso, no progress) is "
                                                   "checked too [default: those of tiny, twogen, small, settle, "
                                                   "static that --preset lists]"),
    sample: Optional[int] = typer.Option(None, "--sample", help="check a random sample of this many mutants"),
    seed: int = typer.Option(0, "--seed", help="the sample's seed"),
    jobs: int = typer.Option(2, "--jobs", help="worker processes"),
    harness_examples: int = typer.Option(100, "--harness-examples",
                                         help="examples of the conformance harness per surviving mutant (0: off)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Plant bugs in the table (mutants) and report which the checker catches, and by which invariant."""
    from functools import partial
    from .conform.mutants import BUDGET
    if not 0 <= harness_examples <= 100_000:
        fail_input(f"--harness-examples must be from 0 to 100,000, got {harness_examples}")
    BUDGET["examples"] = harness_examples
    from .search.mutate import UNFIT_WORLDS, mutants, run, summary
    from .world.state_space import WorldModel
    from .world.presets import PRESETS
    names = _preset_list("--preset", preset)
    if not names:
        fail_input(f"--preset {preset!r} names no world; give one or more of {', '.join(PRESETS)}, comma-separated")
    if liveness_in is None:
        live = [n for n in ("tiny", "twogen", "small", "settle", "static") if n in names]
    else:
        live = _preset_list("--liveness-in", liveness_in)
        if [n for n in live if n not in names]:
            fail_input(f"--liveness-in names {', '.join(n for n in live if n not in names)}, which --preset does "
                       f"not list; liveness is checked only in worlds the mutants meet")
    for name in names:
        if name in UNFIT_WORLDS:
            fail_input(f"--preset {name}: {UNFIT_WORLDS[name]}")
    worlds = [(n, partial(WorldModel, PRESETS[n]), n in live) for n in names]
    _bounded_workers("--jobs", jobs)
    total = len(mutants())
    if sample is not None and not 1 <= sample <= total:
        fail_input(f"--sample must be between 1 and the {total:,} mutants, got {sample:,} (leave it out to check "
                   f"them all)")
    with err.status(f"checking mutants (of {total})...") if not as_json else _null() as status:
        results = run(worlds, sample=sample, seed=seed, jobs=jobs,
                      progress=(lambda done, n: status.update(f"checked {done} of {n} mutants"))
                      if not as_json else None)
    summ = summary(results)
    if as_json:
        print(json.dumps({"preset": preset, **summ, "mutants_total": total, "results": results}, indent=2))
        return
    for r in results:
        if r["outcome"] == "survived" and not r.get("equivalent"):
            out.print(f"survived, unexplained  {r['operator']:<13} {r['row']}: {r['detail']}\n"
                      f"    differs {r['differs']}", markup=False)
    out.print(f"{summ['killed']} of {summ['killed'] + summ['survived']} mutants that behave differently from the "
              f"table were killed (kill rate {summ['kill_rate']}); {summ['equivalent']} are equivalent in --preset "
              f"{preset} (proved on every reachable firing; {summ['equivalent_row_never_fires']} of them never fire "
              f"their row)", markup=False)
    out.print(f"killed by: {summ['killed_by']}; in world: {summ['killed_in_world']}", markup=False)
    out.print(f"per checker: {summ['killed_by_checker']}; killed by some checker: {summ['kill_rate_any_checker']} "
              f"of those that behave differently", markup=False)
    for reason, n in sorted(summ["survivors"].items(), key=lambda kv: -kv[1]):
        out.print(f"  {n} survivors: {reason}", markup=False)


def _conform_cmd():
    from .conform.cli import conform_cmd
    return conform_cmd


app.command("conform")(_conform_cmd())


def _bmc(depth: int, world: dict, timeout: float | None, out_dir: str | None, as_json: bool) -> None:
    """prove --bmc: exit 0 when no invariant breaks within the depth, 1 on a violation (written
    with --out in the three counterexample formats, as `check` writes one), 2 when the
    interpretations disagree or Z3 gives up (the answer cannot be trusted either way)."""
    from .world.bmc import bmc
    from .review.counterexample import step_table, to_itf
    from .world.state_space import WorldModel
    if not 0 <= depth <= 64:
        fail_input(f"--bmc {depth}: give a depth from 0 to 64 (each step is a copy of the world's variables)")
    cfg = _world(**world)
    preset = world["preset"]
    if timeout is not None and not 0 < timeout <= 86_400:
        fail_input(f"--timeout {timeout:g}: give seconds in (0, 86400] per Z3 query, or leave it out for none")
    out_path = output_path("--out", out_dir, "dir", CE_FILES) if out_dir is not None else None

    def progress(k, paths, secs):
        if not as_json:
            what = "step relation built" if k == 0 else f"depth {k - 1} answered, depth {k} unrolled"
            err.print(f"bmc: {what} ({paths} paths per step) in {secs:.1f} s", markup=False, highlight=False)
    res = bmc(cfg, depth, timeout_ms=0 if timeout is None else int(timeout * 1000), progress=progress)
    model = WorldModel(cfg)
    doc = {"result": res.result, "preset": preset, "depth": res.depth, "violation": res.violation,
           "detail": res.detail, "paths_per_step": res.paths_per_step, "build_seconds": round(res.build_seconds, 2),
           "seconds_per_depth": [round(x, 2) for x in res.seconds_per_depth]}
    if res.path:
        doc["counterexample"] = {"steps": step_table(res.path, model),
                                 "itf": to_itf(res.path, model, res.violation, source="groupspec prove --bmc"),
                                 "bmc_steps": res.steps}
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        out.print(f"bmc {preset}: {res.result} at depth {res.depth}"
                  + (f": {res.violation}" if res.violation else "") + (f" ({res.detail})" if res.detail else ""),
                  markup=False, highlight=False)
        for st in doc.get("counterexample", {}).get("steps", []):
            out.print(f"  {st['step']:>3}  {st['action']}", markup=False, highlight=False)
    if res.path and out_path and res.result == "violation":
        write_counterexample(out_path, doc["counterexample"], res.path, model, res.violation, as_json)
    if res.result == "violation":
        raise typer.Exit(1)
    if res.result in ("disagreement", "unknown"):
        raise typer.Exit(2)


def _preset_list(option: str, given: str) -> list[str]:
    """A comma-separated list of presets, each known and named once."""
    from .world.presets import PRESETS
    names = [n.strip() for n in given.split(",") if n.strip()]
    for name in names:
        if name not in PRESETS:
            fail_input(f"{option}: unknown preset {name!r}; use {', '.join(PRESETS)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        fail_input(f"{option} names {', '.join(twice)} more than once; name each world once")
    return names


def _steps_md(steps: list, violation: str) -> str:
    lines = [f"# Counterexample: {violation}\n", "| step | action | rows | changes |", "|---|---|---|---|"]
    for st in steps:
        ch = "; ".join(f"{k} = {v}" for k, v in st["changes"].items())
        lines.append(f"| {st['step']} | {st['action']} | {'; '.join(st['rows'])} | {ch.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _row_names() -> set[str]:
    from groupspec.spec.table import ROWS
    return {r.name for r in ROWS}


# trace validation: `simulate`, `traces from-kafka-log`, `traces check` (checkers/traces/commands.py)
from groupspec.checkers.traces.commands import register as _register_traces  # noqa: E402

_register_traces(app)

# Click's usage errors (typer vendors click: its base class is reached through a public one)
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _on_sigterm(signum, frame):
    # a second SIGTERM (`timeout` and a supervisor both sending one) must not interrupt the cleanup or the
    # message the first one started: it would end in a traceback
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


def main() -> None:
    """Run the CLI: usage errors are one line (exit 2); SIGTERM and SIGINT stop the run cleanly
    (the search's worker processes with it) with exit codes 143 and 130."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    if sys.stdout is None:      # started with the standard output closed (`>&-`): results would vanish
        say_error("groupspec: the standard output is closed; nothing could be printed (redirect it to a file or "
                  "/dev/null)")
        sys.exit(2)
    try:
        code = app(standalone_mode=False, prog_name="groupspec")
        sys.stdout.flush()              # a full or closed stdout shows here, not at exit
    except OSError as e:                # stdout on a full device, say (a closed pipe ends quietly)
        code = 1 if e.errno == errno.EPIPE else 2
        if code == 2:
            where = f" ({e.filename})" if e.filename else " (writing the standard output)"
            say_error(f"groupspec: {e.strerror or e}{where}")
        try:
            sys.stdout = open(os.devnull, "w")      # nothing more to flush at exit
        except OSError:                 # pragma: no cover
            pass
    except _CLICK_ERROR as e:   # a usage error: an unknown option, a value of the wrong type, no command
        ctx = getattr(e, "ctx", None)
        where = ctx.command_path if ctx else "groupspec"
        if type(e).__name__ == "NoArgsIsHelpError":
            # the error made the help when it was raised: typer's rich help printed itself then (asking again
            # would print it twice) and left ""; a plain help is the message
            text = e.format_message()
            if text:
                say_error(text)
        else:
            say_error(f"{where}: {one_line(e.format_message())} (`{where} --help` lists the options)")
        code = e.exit_code
    except (KeyboardInterrupt, typer.Abort):
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C now would be a traceback
        code = 130
    except Terminated:
        say_error("groupspec: terminated (SIGTERM); the run was stopped")
        code = 143
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
