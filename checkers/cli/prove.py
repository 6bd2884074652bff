"""`groupspec lint` and `groupspec prove` (with --bmc, bounded model checking of a closed world)."""
from __future__ import annotations

import json
import os
import re
from typing import List, Optional

import typer

from groupspec.checkers.console import err, fail_input, finite, out, output_path, whole_or_nothing, write_outputs

from .shared import CE_FILES, bounded_workers, no_status, preset_list, world_of, world_options, write_counterexample

# --after-search auto: the search stops before the first level of more than this many states (each is a Boolean
# and a clause per bit it does not share with the others; a few thousand answer in seconds, docs/benchmarks.md)
AUTO_WIDEST = 4096


def lint_cmd(as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
             trigger: List[str] = typer.Option([], "--trigger", "-t", help="Lint only this trigger's rows "
                                               "(repeatable; the clients' rows are then left out).")) -> None:
    """Prove the table well formed (Z3): each trigger's rows exclusive, covering, reachable.

    Every row keeps the structural invariants; the lifecycle's moves are checked."""
    from groupspec.checkers.proofs.command import z3_interruptible
    from groupspec.checkers.proofs.lint import lint
    from groupspec.spec.table import ROWS
    known = sorted({r.trigger for r in ROWS})
    for t in trigger:
        if t not in known:
            fail_input(f"--trigger {t!r}: no row of the table has that trigger; use one of {', '.join(known)}")
    with err.status("linting the table with Z3...") if not as_json else no_status(), z3_interruptible():
        res = lint(triggers=set(trigger) or None)
    if as_json:
        print(json.dumps(res.as_json(), indent=2))
    else:
        for p in res.problems:
            out.print(f"{p.check}: {p.trigger}: {'; '.join(p.rows)}: {p.detail} {p.witness or ''}",
                      markup=False, highlight=False, soft_wrap=True)
        verdict = "ok" if not res.problems else f"{len(res.problems)} problem(s)"
        of = f" of {', '.join(res.triggers)}" if res.triggers else ""
        out.print(f"lint: {verdict} ({res.checks} Z3 checks over {res.rows} rows{of}, {res.seconds:.1f}s)",
                  markup=False)
    if res.problems:
        raise typer.Exit(1)


@world_options(preset="tiny")
def prove_cmd(
    invariant: List[str] = typer.Option([], "--invariant", "-i", help="Prove only these invariants (repeatable); with --bmc, ask about these "
                                                "state invariants alone."),
    strengthen: Optional[bool] = typer.Option(None, "--strengthen/--no-strengthen",
                                              help="Search auxiliary lemmas when plain induction fails [default: "
                                                   "strengthen]."),
    bound: Optional[int] = typer.Option(None, "--bound", help="Members for the fixed-size fallback ('proved up to "
                                        "N') [default: 2]."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Z3's work per query, in seconds of this "
                                            "machine (counted in Z3's resource units, so a loaded machine gets the "
                                            "same answers; running out is 'unknown') [default: 3; with --bmc: "
                                            "wall-clock seconds, none]."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Z3's work for the strengthening search per "
                                           "invariant and reading, in seconds of this machine (resource units, as "
                                           "--timeout) [default: 60]."),
    check_lemmas: Optional[str] = typer.Option(None, "--check-lemmas",
                                               help="Worlds whose reachable states every lemma found must hold in "
                                                    "('' for none) [default: tiny,small]."),
    save: Optional[str] = typer.Option(None, "--save", help="Also write the JSON result here (docs/proofs.json: "
                                                              "the catalog page `groupspec docs` writes shows it)."),
    search: Optional[str] = typer.Option(None, "--search", help="vocabulary (the default): Houdini over the "
                                         "candidates about the invariant's variables, widened by what its "
                                         "counterexamples to induction break, per invariant; full: Houdini over "
                                         "every candidate (the largest inductive subset), then unsat cores."),
    bmc: Optional[int] = typer.Option(None, "--bmc", help="Instead: bounded model checking of a closed world, "
                                      "K steps deep from its initial state (Z3, or a SAT solver: --bmc-solver; "
                                      "the same declarations the explicit checker compiles)."),
    bmc_solver: Optional[str] = typer.Option(None, "--bmc-solver", help="With --bmc: z3 (Z3 asked at each depth) "
                                             "or sat (the step bit-blasted once, unrolled in a SAT solver: "
                                             "deeper in the same time) [default: z3]."),
    leap: bool = typer.Option(False, "--leap", help="With --bmc K --bmc-solver sat: ask once for a violation "
                              "within K steps rather than depth by depth; sooner to a violation, which is then "
                              "not shown shortest."),
    after_search: Optional[str] = typer.Option(None, "--after-search", help="With --bmc K --bmc-solver sat: "
                                               "breadth-first search to depth D first (auto: to the level "
                                               f"before the first of more than {AUTO_WIDEST:,} states), then BMC "
                                               "from the states it reaches there (depths still counted from the "
                                               "initial state, "
                                               "the first violation still shortest; the search checks every "
                                               "invariant to D); proving the depths before D clean is what grows "
                                               "with depth."),
    out_dir: Optional[str] = typer.Option(None, "--out", help="With --bmc: where to write a counterexample (ITF, "
                                                               "table, Mermaid)."),
    engine: Optional[str] = typer.Option(None, "--engine", help="houdini: induction and Houdini's search over "
                                         "candidate lemmas (for every size, else for fixed sizes); spacer: Z3's "
                                         "Spacer on the rows as constrained Horn clauses (fixed sizes, N=--bound); "
                                         "both (the default): Spacer where Houdini proves nothing."),
    spacer_budget: Optional[float] = typer.Option(None, "--spacer-budget", help="Z3's work for Spacer per "
                                                  "invariant, over every widening of the variables its relation "
                                                  "reads, in seconds of this machine (resource units, as --budget) "
                                                  "[default: 60]."),
    jobs: Optional[int] = typer.Option(None, "--jobs", help="Invariants proved at once, each in a process of "
                                       "its own [default: the machine's cores]."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    world: Optional[dict] = None,
) -> None:
    """Prove the coordinator invariants for any number of members (Z3), or search K steps deep (--bmc K).

    The proofs are by induction over the table's rows; with --bmc K, a closed world (--preset and the world
    flags of `groupspec check`, default tiny) is searched K steps deep for a state that breaks an invariant."""
    from groupspec.checkers.proofs.command import z3_interruptible
    if bmc is not None:
        shaping = (("--strengthen" if strengthen else "--no-strengthen", strengthen),
                   ("--bound", bound), ("--budget", budget), ("--check-lemmas", check_lemmas), ("--save", save),
                   ("--search", search), ("--engine", engine), ("--spacer-budget", spacer_budget), ("--jobs", jobs))
        given = [flag for flag, v in shaping if v is not None]
        if given:       # they shape the induction proofs; ignored, they would look honoured
            fail_input(f"{', '.join(given)} with --bmc: {'it is' if len(given) == 1 else 'they are'} for the "
                       f"induction proofs; --bmc checks the world's state invariants (or those given with -i), "
                       f"K steps deep (--out writes its counterexample); leave {'it' if len(given) == 1 else 'them'} "
                       f"out")
        with z3_interruptible():
            run_bmc(bmc, world, timeout, out_dir, as_json, bmc_solver or "z3", leap, invariant, after_search)
        return
    flags = [n for n, v in world.items() if n != "preset" and v is not None]
    if flags or world["preset"] != "tiny":
        given = ", ".join("--" + n.replace("_", "-") for n in (flags or ["preset"]))
        fail_input(f"{given}: a closed world is for --bmc K; the induction proofs are over every group state")
    if out_dir is not None:
        fail_input("--out is for --bmc's counterexample; the proofs' result is written with --save")
    for flag, given in (("--bmc-solver", bmc_solver is not None), ("--leap", leap),
                        ("--after-search", after_search is not None)):
        if given:
            fail_input(f"{flag} is for --bmc K's search of a closed world; give --bmc K with it")
    timeout = 3.0 if timeout is None else timeout
    strengthen = True if strengthen is None else strengthen
    bound = 2 if bound is None else bound
    budget = 60.0 if budget is None else budget
    spacer_budget = 60.0 if spacer_budget is None else spacer_budget
    check_lemmas = "tiny,small" if check_lemmas is None else check_lemmas
    search = "vocabulary" if search is None else search
    engine = "both" if engine is None else engine
    from groupspec.spec.invariants import INVARIANTS
    from groupspec.checkers.proofs.command import as_json as proofs_json, exit_code, print_table, run_induction
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
    for option, value, most in (("--timeout", timeout, 600), ("--budget", budget, 3600),
                                ("--spacer-budget", spacer_budget, 3600)):
        finite(option, value, f"a number of seconds in (0, {most}]")
        if not 0 < value <= most:
            fail_input(f"{option} {value:g}: give a number of seconds in (0, {most}]")
    presets = tuple(p for p in check_lemmas.split(",") if p)
    if presets:
        presets = tuple(preset_list("--check-lemmas", check_lemmas))
    target = output_path("--save", save, "file") if save is not None else None
    progress = None if as_json else (lambda what: err.print(f"proving: {what}", markup=False, highlight=False))
    jobs = bounded_workers("--jobs", len(os.sched_getaffinity(0)) if jobs is None else jobs)
    with z3_interruptible():
        proofs, prover = run_induction(invariant or None, strengthen, bound, timeout, budget, presets, progress,
                                       search, engine, spacer_budget, jobs)
    result = proofs_json(proofs, prover)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print_table(out, proofs, prover)
    if target is not None:
        def save_result():
            with whole_or_nothing(target) as partial:
                partial.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        write_outputs("--save", target, save_result, kept=True)
    if exit_code(proofs):
        raise typer.Exit(1)


def run_bmc(depth: int, world: dict, timeout: float | None, out_dir: str | None, as_json: bool,
            solver: str = "z3", leap: bool = False, invariants: list | None = None,
            after: int | None = None) -> None:
    """prove --bmc: exit 0 when no invariant breaks within the depth, 1 on a violation (written
    with --out in the three counterexample formats, as `check` writes one), 2 when the
    interpretations disagree or the solver gives up (the answer cannot be trusted either way)."""
    from groupspec.checkers.world.bmc_search import bmc
    from groupspec.checkers.review.counterexample import step_table, to_itf
    from groupspec.checkers.world.state_space import WorldModel
    if not 0 <= depth <= 64:
        fail_input(f"--bmc {depth}: give a depth from 0 to 64 (each step is a copy of the world's variables)")
    if solver not in ("z3", "sat"):
        fail_input(f"--bmc-solver {solver!r}: use z3 or sat")
    if leap and solver != "sat":
        fail_input("--leap asks the SAT solver one question for every depth: give --bmc-solver sat with it")
    if after is not None and solver != "sat":
        fail_input(f"--after-search {after}: BMC from the search's level is the SAT solver's; give --bmc-solver "
                   f"sat with it")
    if after is not None and invariants:
        fail_input(f"--after-search with -i: the search to depth D checks every invariant (a row breaking one ends "
                   f"its step), so it cannot look past one you did not ask about; leave out -i or --after-search")
    widest = None
    if after == "auto":
        after, widest = str(depth), AUTO_WIDEST
    if after is not None and not (re.fullmatch(r"[0-9]+", after) and int(after) <= depth):
        fail_input(f"--after-search {after}: give a depth from 0 to --bmc's {depth} (the search goes that deep, "
                   f"BMC the rest of the way), or auto")
    after = None if after is None else int(after)
    cfg = world_of(**world)
    preset = world["preset"]
    only = _bmc_invariants(invariants, cfg)
    if timeout is not None and not 0 < timeout <= 86_400:
        fail_input(f"--timeout {timeout:g}: give seconds in (0, 86400] per Z3 query, or leave it out for none")
    if timeout is not None and solver == "sat":
        fail_input(f"--timeout {timeout:g} is Z3's time per query, and --bmc-solver sat asks no Z3 query; "
                   f"leave it out (stop the search with Ctrl-C)")
    out_path = output_path("--out", out_dir, "dir", CE_FILES) if out_dir is not None else None

    def progress(k, paths, secs):
        if not as_json:
            what = ("step relation built" if k == 0 else f"step {k} unrolled" if leap
                    else f"depth {k - 1} answered, depth {k} unrolled")
            err.print(f"bmc: {what} ({paths} paths per step) in {secs:.1f} s", markup=False, highlight=False)
            if leap and k == depth:
                err.print(f"bmc: asking once for a violation within {depth} steps", markup=False, highlight=False)

    def searched(pre):
        if not as_json and pre.ended is None:
            err.print(f"bmc: breadth-first search to depth {pre.depth}: {pre.distinct_states:,} states, "
                      f"{len(pre.states):,} at depth {pre.depth}, in {pre.seconds:.1f} s", markup=False, highlight=False)
    res = bmc(cfg, depth, timeout_ms=0 if timeout is None else int(timeout * 1000), progress=progress,
              mode="sat" if solver == "sat" else "push", leap=leap, only=only, after=after, widest=widest,
              searched=searched)
    model = WorldModel(cfg)
    doc = {"result": res.result, "preset": preset, "depth": res.depth, "violation": res.violation,
           "detail": res.detail, "solver": solver, "leap": leap, "invariants": sorted(only) if only else "all",
           "paths_per_step": res.paths_per_step,
           "build_seconds": round(res.build_seconds, 2), "seconds_per_depth": [round(x, 2) for x in res.seconds_per_depth]}
    if res.result == "violation":
        doc["shortest"] = res.shortest
    if leap:
        doc["solve_seconds"] = round(res.solve_seconds, 2)
    if after is not None:
        doc["after_search"] = {"depth": res.prefix_depth, "states": res.prefix_states, "last_level": res.prefix_level,
                               "seconds": round(res.prefix_seconds, 2)}
    if res.path:
        doc["counterexample"] = {"steps": step_table(res.path, model),
                                 "itf": to_itf(res.path, model, res.violation, source="groupspec prove --bmc"),
                                 "bmc_steps": res.steps}
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        unshown = ("; not shown shortest (a leap): `--bmc` without --leap finds a shortest"
                   if res.result == "violation" and not res.shortest else "")
        asked = f" (asked about {', '.join(sorted(only))} only)" if only and res.result == "ok" else ""
        out.print(f"bmc {preset}: {res.result} at depth {res.depth}"
                  + (f": {res.violation}" if res.violation else "") + (f" ({res.detail})" if res.detail else "")
                  + unshown + asked, markup=False, highlight=False)
        if after is not None:
            out.print(f"  breadth-first search to depth {res.prefix_depth} first: {res.prefix_states:,} states, "
                      + (f"BMC from the {res.prefix_level:,} at depth {res.prefix_depth}" if res.prefix_level else
                         "where it ended") + f" ({res.prefix_seconds:.1f} s)", markup=False, highlight=False)
        for st in doc.get("counterexample", {}).get("steps", []):
            out.print(f"  {st['step']:>3}  {st['action']}", markup=False, highlight=False)
    if res.path and out_path and res.result == "violation":
        write_counterexample(out_path, doc["counterexample"], res.path, model, res.violation, as_json)
    if res.result == "violation":
        raise typer.Exit(1)
    if res.result in ("disagreement", "unknown"):
        raise typer.Exit(2)


def _bmc_invariants(names: list | None, cfg) -> set | None:
    """prove --bmc -i NAME...: the state invariants BMC is to ask about alone (None: every one)."""
    if not names:
        return None
    from groupspec.spec.invariants import INVARIANTS
    from groupspec.checkers.world.state_space import world_invariants
    askable = [i.name for i in INVARIANTS if i.kind == "state"] + [i.name for i in world_invariants(cfg)]
    kinds = {i.name: i.kind for i in INVARIANTS}
    for name in names:
        if name in askable:
            continue
        if name in kinds:
            fail_input(f"--invariant {name!r} is a {kinds[name]} invariant, and BMC asks about states: "
                       f"`groupspec check` checks it in the same world")
        fail_input(f"--invariant {name!r}: no state invariant of this world; use one of {', '.join(askable)}")
    return set(names)
