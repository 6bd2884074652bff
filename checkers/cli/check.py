"""`groupspec check`, `replay`, `export tla` and `mutate`: the closed world searched, replayed, exported
for TLC, and the checker itself tested on mutants of the table."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer

from groupspec.checkers.console import (err, fail_input, input_file, one_line, out, output_path, whole_or_nothing,
                                        write_outputs)

from .shared import CE_FILES, bounded_workers, no_status, preset_list, world_of, world_options, write_counterexample


export_app = typer.Typer(no_args_is_help=True, help="The closed world for other tools.")


@world_options
def check_cmd(
    symmetry: bool = typer.Option(True, "--symmetry/--no-symmetry", help="symmetry reduction over clients"),
    liveness: bool = typer.Option(False, "--liveness", help="also look for a fair cycle stuck in a rebalance "
                                                            "(keeps the graph; turns symmetry off)"),
    reduction: bool = typer.Option(False, "--reduction/--no-reduction",
                                   help="partial-order reduction: where a client's own steps commute with every "
                                        "other step and change nothing the invariants read, take only those (one "
                                        "process; a counterexample may be longer than the shortest)"),
    max_states: Optional[int] = typer.Option(None, "--max-states", help="stop after this many distinct states"),
    workers: Optional[int] = typer.Option(None, "--workers", help="processes expanding states (default 2; "
                                                                   "1: a single process; threads of one process "
                                                                   "with --engine native)"),
    visited: str = typer.Option("memory", "--visited", help="where the visited set and the search's levels live: "
                                                             "memory, or disk (past --memory, fingerprints spill "
                                                             "to sorted files and states to level files)"),
    visited_dir: Optional[str] = typer.Option(None, "--visited-dir", help="the folder --visited disk writes in "
                                                                           "(and --engine native its trail of "
                                                                           "parents; default: the system's "
                                                                           "temporary one)"),
    memory: Optional[float] = typer.Option(None, "--memory", help="GB the search may hold: past it, the visited "
                                                                  "set and the levels spill to disk and memo "
                                                                  "tables are dropped (implies --visited disk; "
                                                                  "default 2); with --engine native, the GB its "
                                                                  "fingerprints and levels may take, past which "
                                                                  "it stops (default: 4/5 of the memory "
                                                                  "available)"),
    no_waivers: bool = typer.Option(False, "--no-waivers", help="check the invariants a preset waives, too"),
    out_dir: Optional[str] = typer.Option(None, "--out", help="where to write a counterexample (ITF, table, Mermaid)"),
    engine: str = typer.Option("python", "--engine", help="python, or native: the world's step compiled to C (--cc) "
                                                          "(one process, symmetry as --symmetry says; compiled once per "
                                                          "world and cached in ~/.cache/groupspec/native)"),
    cc: Optional[str] = typer.Option(None, "--cc", help="with --engine native, the C compiler: tcc (a second to "
                                                         "compile a world) or gcc (-O1: minutes to compile, then a "
                                                         "search about twice as fast, for searches longer than that) "
                                                         "[default: tcc]"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    world: Optional[dict] = None,
) -> None:
    """Explore every reachable state of a bounded closed world; report the shortest violation.

    The depth reported is how deep the breadth-first search went or, with a counterexample,
    the counterexample's length in steps (a --liveness lasso: the path to the loop and one lap
    of it; no progress: the path to the stuck state)."""
    import dataclasses
    from groupspec.checkers.review.counterexample import step_table, to_itf
    from groupspec.checkers.search.explicit import check, check_parallel
    from groupspec.checkers.world.state_space import WorldModel
    if liveness and workers is not None and workers != 1:
        fail_input(f"--workers {workers} with --liveness: the liveness search keeps the whole state graph in one "
                   f"process; leave out --workers")
    if reduction and liveness:
        fail_input("--reduction with --liveness: the liveness search takes every step (fairness needs a stronger "
                   "cycle proviso than the reduction has); leave out --reduction")
    if reduction and workers is not None and workers != 1:
        fail_input(f"--workers {workers} with --reduction: the reduced search runs in one process (its cycle "
                   f"proviso asks the whole visited set); leave out --workers")
    if engine not in ("python", "native"):
        fail_input(f"--engine {engine!r}: use python or native")
    if engine != "native" and cc is not None:
        fail_input(f"--cc {cc} with --engine {engine}: only the native engine compiles; add --engine native")
    if engine == "native":
        _native_options(liveness, reduction, visited, memory)
        from groupspec.checkers.native.engine import COMPILERS      # (z3 and numpy: only when native)
        cc = cc or COMPILERS[0]
        if cc not in COMPILERS:
            fail_input(f"--cc {cc!r}: use {' or '.join(COMPILERS)}")
    workers = 1 if liveness or reduction else bounded_workers("--workers", 2 if workers is None else workers)
    if engine == "native":
        if visited_dir is not None and Path(visited_dir).exists() and not Path(visited_dir).is_dir():
            fail_input(f"--visited-dir {visited_dir}: not a folder; give a folder (it is made if missing)")
        on_disk = memo_limit = None
    else:
        on_disk, memo_limit = _visited_on_disk(visited, visited_dir, memory, workers, liveness)
    if max_states is not None and max_states < 1:
        fail_input(f"--max-states must be at least 1, got {max_states} (leave it out for no limit)")
    cfg = world_of(**world)
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
    model = WorldModel(cfg) if memo_limit is None else WorldModel(cfg, cache_limit=memo_limit)
    spilled = None
    try:
        if engine == "native":
            res = _native_search(cfg, max_states, live, symmetry, cc, workers, memory, visited_dir)
        elif workers > 1:
            res = check_parallel(model, workers=workers, symmetry=symmetry, progress=progress, max_states=max_states,
                                 visited=on_disk)
            if on_disk:
                spilled = {"in_memory_limit_per_worker": on_disk.keywords["limit"],
                           "level_limit_per_worker": on_disk.keywords["level_limit"], "memo_limit": memo_limit}
        elif on_disk:
            with on_disk() as seen:
                res = check(model, symmetry=symmetry, progress=progress, max_states=max_states, visited=seen,
                            reduction=reduction)
                spilled = {"in_memory_limit": seen.limit, "spills": seen.spills, "merges": seen.merges,
                           "runs_at_end": len(seen.runs), "on_disk_at_end": seen.on_disk,
                           "level_limit": seen.level_limit, "level_spills": seen.level_spills,
                           "memo_limit": memo_limit}
        else:
            res = check(model, symmetry=symmetry, progress=progress, max_states=max_states, liveness=liveness,
                        reduction=reduction)
    except RuntimeError as e:    # a search worker died (killed, out of memory) or failed
        fail_input(f"the search stopped: {e}")
    except OSError as e:         # the visited set's folder: full, unwritable, or a file in it damaged
        import errno
        fix = ("run again, and let nothing else write in that folder while a search runs" if e.errno == errno.EIO
               else "give a folder with room that this user may write")
        fail_input(f"--visited-dir {e.filename or visited_dir}: {e.strerror or e}; {fix}")
    finally:
        if live:
            live.stop()
        if on_disk:     # the workers' folders, if they were killed before they could remove them
            from groupspec.checkers.search.visited import remove_leftovers
            remove_leftovers(on_disk.args[0])
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
           "workers": workers, "visited": "memory" if spilled is None else {"disk": spilled},
           "reduction": _reduction_doc(res),
           "depth": res.depth, "complete": res.complete, "invariants": res.invariants,
           "states_first_reached_per_depth": res.levels,
           "waived": [{"invariant": n, "why": w} for n, w in cfg.waive],
           "coordinator": coordinator_name({NEW_COORDINATOR: WORLD_COORDINATOR}),
           "coverage": {"fired": fired, "never_fired": never,
                        "table_rows": len(rows), "table_rows_fired": len(rows) - len(never)}}
    unchecked = [n for n in model.invariants() if n not in res.invariants]
    if unchecked:
        doc["not_checked"] = unchecked
    if res.stopped_because:
        doc["stopped_because"] = res.stopped_because
    doc["engine"] = engine
    if engine == "native":
        doc["compiler"] = cc
    if res.path:
        doc["counterexample"] = {"steps": step_table(res.path, model), "itf": to_itf(res.path, model, res.violation)}
        if res.loop_start >= 0:
            doc["counterexample"]["loop_starts_at_step"] = res.loop_start
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        out.print(f"{doc['result']}{': ' + res.violation if res.violation else ''} — {res.distinct_states:,} distinct "
                  f"states ({res.generated:,} generated), depth {res.depth}, {res.seconds:.1f}s, "
                  f"{res.states_per_second:,.0f} states/s{_incomplete(res)}",
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
        if res.reduction:
            r = doc["reduction"]
            out.print(f"partial-order reduction: {r['transition_reduction']}x fewer transitions taken "
                      f"({res.generated:,} of {res.enabled:,}; ample sets at {res.ample_states:,} of "
                      f"{res.distinct_states:,} states); the states it saves: compare with --no-reduction"
                      + ("; the counterexample may be longer than the shortest" if res.path else ""), markup=False)
        for n, w in cfg.waive:
            out.print(f"not checked in this world: {n} ({w})", markup=False)
        if engine == "native":
            out.print(f"engine: native (the world's step compiled to C by {cc}; "
                      f"{workers} thread{'s' if workers > 1 else ''})", markup=False)
        if unchecked:
            out.print(f"not checked by --engine native: {', '.join(unchecked)} (step and output invariants: the "
                      f"compiled step has no row's before and after; --engine python checks them)", markup=False)
    if res.path and out_path:
        write_counterexample(out_path, doc["counterexample"], res.path, model, res.violation, as_json,
                             res.loop_start)
    if res.result in ("violation", "deadlock", "lasso", "no-progress"):
        raise typer.Exit(1)


def _incomplete(res) -> str:
    """What the result line adds for a search that stopped before the end: why."""
    if res.complete:
        return ""
    return f" (stopped: {res.stopped_because})" if res.stopped_because else " (stopped at --max-states)"


def _native_options(liveness: bool, reduction: bool, visited: str, memory: Optional[float]) -> None:
    """What --engine native does not do, refused by name (it would be silently ignored otherwise)."""
    for given, what in ((liveness, "--liveness"), (reduction, "--reduction"),
                        (visited != "memory", f"--visited {visited}")):
        if given:
            fail_input(f"{what} with --engine native: the native search is a breadth-first safety search in one "
                       f"process (its --workers are threads) with its fingerprints in memory (--memory bounds them) "
                       f"and its trail of parents on disk (--visited-dir); leave out {what} or use --engine python")
    if memory is not None and not 0 < memory < float("inf"):
        fail_input(f"--memory must be more than 0 GB (a finite number), got {memory}")


def _native_search(cfg, max_states: Optional[int], live, symmetry: bool, cc: str, workers: int,
                   memory: Optional[float], trail_dir: Optional[str]):
    """The native engine's search, as the Python search reports one (its path replayed concretely)."""
    from rich.text import Text
    from groupspec.checkers.native.engine import NativeError, NativeWorld
    if live:
        live.update(Text(f"compiling the world's step with {cc} (once per world) ..."))
    try:
        native = NativeWorld(cfg, symmetry=symmetry, cc=cc)
    except NativeError as e:
        fail_input(f"--engine native: {e}")
    if live:
        live.update(Text("searching ..."))
    t0 = time.perf_counter()

    def progress(depth, states, level):
        if live:
            live.update(Text(f"{states:,} distinct, depth {depth} ({level:,} new), "
                             f"{states / max(time.perf_counter() - t0, 1e-9):,.0f} states/s"))
    try:
        res = native.search(max_states, workers=workers, progress=progress, memory=memory, trail_dir=trail_dir)
    except OSError as e:         # the trail's folder: not made, not writable
        fail_input(f"--visited-dir {e.filename or trail_dir}: {e.strerror or e}; give a folder with room that this "
                   f"user may write")
    if res.result == "disagreement":
        fail_input(f"--engine native: {res.detail}; the compiled step and the world model disagree, which is a "
                   f"bug in groupspec: report it, and search with --engine python meanwhile")
    return res.as_result(native.checked(), symmetry)


def _visited_on_disk(visited: str, folder: Optional[str], memory: Optional[float], workers: int, liveness: bool):
    """What makes the visited set for --visited disk (None: a dict in memory) and the entries each memo
    table may hold (None: the model's default), the options checked."""
    if visited not in ("memory", "disk"):
        fail_input(f"--visited {visited!r}: use memory or disk")
    if visited == "memory" and memory is None:
        if folder is not None:
            fail_input("--visited-dir without --visited disk: add --visited disk (or --memory GB)")
        return None, None
    if memory is not None and not 0 < memory < float("inf"):
        fail_input(f"--memory must be more than 0 GB (a finite number), got {memory}")
    if liveness:
        fail_input("--visited disk with --liveness: the liveness search keeps the whole state graph in memory; "
                   "leave out --visited and --memory")
    import tempfile
    from groupspec.checkers.search.visited import spilling
    from groupspec.checkers.world.state_space import memo_limit_for
    where = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    if where.exists() and not where.is_dir():
        fail_input(f"--visited-dir {folder}: not a folder; give a folder (it is made if missing)")
    # the memory is shared among the workers, each with a visited set, levels and memo tables of its
    # own: a third of each one's share for its memo tables (state_space.memo_limit_for), the rest for
    # the fingerprints and levels in memory
    gigabytes = 2.0 if memory is None else memory
    return spilling(where, gigabytes * 2 / 3, workers), memo_limit_for(gigabytes / 3 / workers)


def _reduction_doc(res) -> dict | None:
    """What partial-order reduction did: the transitions it took out of those enabled, and where. How many
    states it saved is known only beside a search without it (benchmarks/reduction.py)."""
    if not res.reduction:
        return None
    return {"ample_states": res.ample_states, "enabled_transitions": res.enabled, "taken_transitions": res.generated,
            "transition_reduction": round(res.enabled / max(1, res.generated), 2),
            "counterexample_shortest": False if res.path else None}


@world_options
def export_tla_cmd(
    out_dir: str = typer.Argument(..., help="Folder to write the module (.tla) and its TLC configuration (.cfg) in."),
    symmetry: Optional[bool] = typer.Option(None, "--symmetry/--no-symmetry", help="declare SYMMETRY over clients "
                                            "in the .cfg [default: symmetry, but not with --liveness]"),
    liveness: bool = typer.Option(False, "--liveness", help="list the liveness PROPERTY in the .cfg (turns "
                                                            "symmetry off: TLC checks liveness unsoundly under it)"),
    run_tlc: bool = typer.Option(False, "--run-tlc", help="run TLC on it and `groupspec check` on the same world, "
                                                          "and print both verdicts"),
    workers: int = typer.Option(2, "--workers", help="workers of each checker with --run-tlc"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    world: Optional[dict] = None,
) -> None:
    """Write the bounded closed world as a TLA+ module and a TLC configuration, generated from the
    spec's declarations; with --run-tlc, check it with TLC and with `groupspec check` side by side."""
    from groupspec.checkers.tla.module import export
    from groupspec.checkers.tla.export import MODULE, ExportError
    from groupspec.checkers.tla.tlc import find_jar, java
    cfg = world_of(**world)
    # the folder judged before the export, which takes seconds: a wrong path is said at once
    folder = output_path("OUT_DIR", out_dir, "dir", (f"{MODULE}.tla", f"{MODULE}.cfg"))
    workers = bounded_workers("--workers", workers)
    if liveness and symmetry:
        fail_input("--liveness with --symmetry: TLC checks liveness unsoundly under SYMMETRY (it may miss a "
                   "violation); leave out --symmetry")
    symmetry = not liveness if symmetry is None else symmetry
    jar = None
    if run_tlc:
        jar, why = find_jar()
        if jar is None:
            fail_input(f"--run-tlc: {why}")
        if java() is None:
            fail_input("--run-tlc: no `java` on the PATH; install Java 17 (.ci/setup does)")
    try:
        exported = export(cfg, symmetry=symmetry, liveness=liveness, name=MODULE)
    except ExportError as e:
        fail_input(f"this world cannot be exported: {e}")

    def write():
        # both beside their places, renamed onto them once both are whole: a full disk or a signal leaves
        # the module and its configuration as they were, never one new and one old
        with whole_or_nothing(folder / f"{exported.name}.tla") as tla, \
                whole_or_nothing(folder / f"{exported.name}.cfg") as cfg_file:
            tla.write_text(exported.module, encoding="utf-8")
            cfg_file.write_text(exported.config, encoding="utf-8")
    write_outputs("OUT_DIR", folder, write, kept=True)
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
    from groupspec.checkers.search.explicit import check, check_parallel
    from groupspec.checkers.tla.tlc import run_tlc
    from groupspec.checkers.world.state_space import WorldModel
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


@world_options
def replay_cmd(
    trace: str = typer.Argument(..., help="A TLC counterexample (-dumpTrace json) or an ITF trace."),
    no_waivers: bool = typer.Option(False, "--no-waivers", help="judge the invariants the preset waives, too (as "
                                                                "`check --no-waivers` does)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    world: Optional[dict] = None,
) -> None:
    """Replay a TLC or ITF trace of the closed world through the explicit checker's world.

    Every step must be one of the world's own steps; the last state is judged by the invariants. Exit 0:
    it replays and breaks nothing; 1: it breaks an invariant, or leaves the world at some step; 2: the file
    is no trace of this world (nothing was replayed)."""
    import dataclasses
    from groupspec.checkers.world.itf_replay import TraceError, load_trace, replay
    from groupspec.checkers.world.state_space import WorldModel
    cfg = world_of(**world)
    if no_waivers:
        cfg = dataclasses.replace(cfg, waive=())
    path = input_file("TRACE", trace, "a TLC -dumpTrace json file or an ITF trace (one trace: replay reads one)")
    try:
        fmt, states = load_trace(path)
    except TraceError as e:
        fail_input(f"TRACE {trace}: {e}")
    try:
        res = replay(WorldModel(cfg), states)
    except TraceError as e:
        fail_input(f"TRACE {trace}: {e} (is it a trace of --preset {world['preset']} with these flags?)")
    doc = {"format": fmt, "states": res.states, "steps": res.steps,
           "departs_at_step": res.departs if res.departs >= 0 else None, "violation": res.violation,
           "waived": [{"invariant": n, "why": w} for n, w in cfg.waive]}
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
            for n, w in cfg.waive:
                out.print(f"not checked in this world: {n} ({w}; --no-waivers checks it)", markup=False)
    if res.departs >= 0 or res.violation:
        raise typer.Exit(1)


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
    show: Optional[int] = typer.Option(None, "--show", help="instead, check mutant N (the `index` --json gives) "
                                       "in the worlds of --preset and write its counterexample to --out"),
    out_dir: Optional[str] = typer.Option(None, "--out", help="where --show writes the counterexample (ITF, "
                                          "Markdown and HTML in Kafka's terms, Mermaid)"),
    rejudge_file: Optional[str] = typer.Option(None, "--rejudge", help="instead, judge a previous run's results "
                                               "(its --json) again with the concrete checkers: mutants no world "
                                               "reaches go to the scenarios and the harness, survivors to the "
                                               "scenarios (after scenarios were added, without searching again)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Plant bugs in the table (mutants) and report which the checker catches, and by which invariant."""
    from functools import partial
    from groupspec.checkers.conform.mutants import BUDGET
    if not 0 <= harness_examples <= 100_000:
        fail_input(f"--harness-examples must be from 0 to 100,000, got {harness_examples}")
    BUDGET["examples"] = harness_examples
    from groupspec.checkers.search.mutate import UNFIT_WORLDS, mutants, run, summary
    if rejudge_file is not None:
        previous = _previous_run(rejudge_file, len(mutants()))
        preset = previous["preset"]
        bounded_workers("--jobs", jobs)
        with err.status("judging the mutants again...") if not as_json else no_status() as status:
            from groupspec.checkers.search.mutate import rejudge
            results = rejudge(previous["results"], preset, jobs,
                              (lambda done, n: status.update(f"judged {done} of {n} mutants again"))
                              if not as_json else None)
        _print_mutants(preset, results, len(mutants()), as_json, summary)
        return
    from groupspec.checkers.world.state_space import WorldModel
    from groupspec.checkers.world.presets import PRESETS
    names = preset_list("--preset", preset)
    if not names:
        fail_input(f"--preset {preset!r} names no world; give one or more of {', '.join(PRESETS)}, comma-separated")
    if liveness_in is None:
        live = [n for n in ("tiny", "twogen", "small", "settle", "static") if n in names]
    else:
        live = preset_list("--liveness-in", liveness_in)
        if [n for n in live if n not in names]:
            fail_input(f"--liveness-in names {', '.join(n for n in live if n not in names)}, which --preset does "
                       f"not list; liveness is checked only in worlds the mutants meet")
    for name in names:
        if name in UNFIT_WORLDS:
            fail_input(f"--preset {name}: {UNFIT_WORLDS[name]}")
    total = len(mutants())
    if (show is None) != (out_dir is None):
        fail_input("--show N and --out DIR go together: the counterexample of mutant N is written to DIR")
    if show is not None:
        if not 0 <= show < total:
            fail_input(f"--show must be a mutant's index, from 0 to {total - 1:,}, got {show:,}")
        _show_mutant(show, names, output_path("--out", out_dir, "dir", CE_FILES), as_json)
        return
    worlds = [(n, partial(WorldModel, PRESETS[n]), n in live) for n in names]
    bounded_workers("--jobs", jobs)
    if sample is not None and not 1 <= sample <= total:
        fail_input(f"--sample must be between 1 and the {total:,} mutants, got {sample:,} (leave it out to check "
                   f"them all)")
    with err.status(f"checking mutants (of {total})...") if not as_json else no_status() as status:
        results = run(worlds, sample=sample, seed=seed, jobs=jobs,
                      progress=(lambda done, n: status.update(f"checked {done} of {n} mutants"))
                      if not as_json else None)
    _print_mutants(preset, results, total, as_json, summary)


def _previous_run(path: str, total: int) -> dict:
    """A previous `mutate --json`, checked enough to judge again (one line and exit 2 otherwise)."""
    from groupspec.checkers.console import input_file
    where = f"--rejudge {path}"
    text = input_file("--rejudge", path, "the output of `groupspec mutate --json`").read_text(encoding="utf-8",
                                                                                          errors="replace")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        fail_input(f"{where}: not JSON ({e}); give the output of `groupspec mutate --json`")
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not isinstance(doc.get("preset"), str) or not all(
            isinstance(r, dict) and isinstance(r.get("index"), int) and not isinstance(r.get("index"), bool)
            and 0 <= r["index"] < total and isinstance(r.get("outcome"), str)
            and isinstance(r.get("fires_in", []), list) for r in results):
        fail_input(f"{where}: not the output of `groupspec mutate --json` for this table (a 'preset' and "
                   f"'results', each with the index of one of the {total:,} mutants and its outcome); run mutate "
                   f"--json again")
    from groupspec.checkers.search.mutate import mutants
    now = mutants()
    moved = [r for r in results if (r.get("operator"), r.get("row"), r.get("detail")) !=
             (now[r["index"]][0].operator, now[r["index"]][0].row, now[r["index"]][0].detail)]
    if moved:      # an index names whichever mutant the table has there now: judging it would judge another
        r = moved[0]
        fail_input(f"{where}: {len(moved):,} of its {len(results):,} results are of mutants this table no longer "
                   f"has at their index (the table changed since: mutant {r['index']} was {r.get('operator')} in "
                   f"{r.get('row')!r}, {r.get('detail')}); run `groupspec mutate --json` again")
    return doc


def _print_mutants(preset: str, results: list, total: int, as_json: bool, summary) -> None:
    summ = summary(results)
    if as_json:
        print(json.dumps({"preset": preset, **summ, "mutants_total": total, "results": results}, indent=2))
        return
    for r in results:
        if r["outcome"] == "survived" and not r.get("equivalent"):
            out.print(f"survived, unexplained  {r['operator']:<13} {r['row']}: {r['detail']}\n"
                      f"    differs {r['differs']}", markup=False)
    judged = summ["killed"] + summ["survived"] + summ["not_covered"]
    out.print(f"{summ['killed']} of the {judged} mutants not shown equivalent were killed (kill rate "
              f"{summ['kill_rate']}); {summ['survived']} survived, {summ['not_covered']} are not covered (no world "
              f"reaches their row, and no scenario or harness run told them from the table); {summ['equivalent']} "
              f"are equivalent ({summ['equivalent_by']['z3']} shown by Z3, {summ['equivalent_by']['state graphs']} "
              f"with identical state graphs in --preset {preset} that no scenario or harness run told apart)",
              markup=False)
    out.print(f"killed by: {summ['killed_by']}; in world: {summ['killed_in_world']}", markup=False)
    out.print(f"per checker: {summ['killed_by_checker']}", markup=False)
    for reason, n in sorted(summ["survivors"].items(), key=lambda kv: -kv[1]):
        out.print(f"  {n} survivors: {reason}", markup=False)


def _show_mutant(index: int, names: list, out_path, as_json: bool) -> None:
    """Mutant `index` checked in each world of `names` in turn; the first counterexample is written to
    `out_path` (exit 0); a mutant no world kills has none to show (exit 1)."""
    from groupspec.checkers.review.counterexample import step_table, to_itf
    from groupspec.checkers.search.explicit import check
    from groupspec.checkers.search.mutate import mutants
    from groupspec.spec.engine import EngineError
    from groupspec.checkers.world.presets import PRESETS
    from groupspec.checkers.world.state_space import WorldModel
    from groupspec.spec.table import ROWS
    m, i, row = mutants()[index]
    rows = list(ROWS)
    rows[i] = row
    what = f"mutant {index} ({m.operator} in {m.row!r}: {m.detail})"
    for name in names:
        model = WorldModel(PRESETS[name], rows)
        try:
            res = check(model)
        except EngineError as e:    # the mutant left a trigger with no row for a state the world reaches
            err.print(f"groupspec: {what} leaves a gap in the table, so the {name} world stops at it: {e}. No "
                      f"row decides that step, so there is no path to show past it (mutate counts it killed by "
                      f"the table; `groupspec lint` finds such gaps in a table)", markup=False, highlight=False)
            raise typer.Exit(1)
        if res.path:
            ce = {"steps": step_table(res.path, model), "itf": to_itf(res.path, model, res.violation,
                                                                    source=f"groupspec mutate --show {index}")}
            write_counterexample(out_path, ce, res.path, model, res.violation, True, res.loop_start)
            doc = {"mutant": index, "operator": m.operator, "row": m.row, "detail": m.detail, "world": name,
                   "violation": res.violation, "steps": len(res.path) - 1, "out": str(out_path)}
            if as_json:
                print(json.dumps(doc))
            else:
                out.print(f"{what} breaks {res.violation} in the {name} world in {len(res.path) - 1} steps; "
                          f"counterexample written to {out_path}", markup=False)
            return
    if as_json:
        print(json.dumps({"mutant": index, "operator": m.operator, "row": m.row, "detail": m.detail,
                          "violation": None, "worlds": names}))
    err.print(f"groupspec: {what} breaks nothing in {', '.join(names)}: no counterexample to show (mutate --json "
              f"says which mutants are killed, and where)", markup=False, highlight=False)
    raise typer.Exit(1)
