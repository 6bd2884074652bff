"""What `groupspec prove` shows: the result table, its JSON, its exit code, and the proofs run each in a
process of its own."""
from __future__ import annotations

import functools
import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

import z3

from .obligations import every_assumption, WORK_PER_SECOND
from .prover import Prover
from .results import Proof
from groupspec.spec.invariants import INVARIANTS
from multiprocessing.connection import wait
from rich.table import Table

def run_induction(names: list[str] | None, strengthen: bool = True, bound: int = 2, timeout_s: float = 3.0,
                  budget_s: float = 60.0, presets: tuple[str, ...] = ("tiny", "small"), progress=None,
                  search: str = "vocabulary", engine: str = "both", spacer_budget_s: float = 60.0,
                  jobs: int = 1):
    """Prove the invariants named (all when None).  Returns (proofs, prover).

    More than one invariant: each is proved in a fresh process of its own, `jobs` at a time.
    Z3's answers depend on what was asked before in its context, and Z3 has crashed (a
    segmentation fault inside a solver) after some histories of queries and not others: a
    proof is then the same whether asked alone (`-i NAME`) or with the others, and a crash is
    the one invariant's `unknown`, not the run's end."""
    config = dict(query_work=int(timeout_s * WORK_PER_SECOND), strengthen=strengthen, bound=bound,
                  budget_s=budget_s, presets=tuple(presets), search=search, engine=engine,
                  spacer_budget_s=spacer_budget_s)
    prover = Prover(progress=progress, **config)
    invs = [i for i in INVARIANTS if names is None or i.name in names]
    if len(invs) < 2:
        return [prover.prove(i) for i in invs], prover
    return _isolated(functools.partial(Prover, **config), invs, jobs, progress), prover


def _isolated(make, invs: list, jobs: int, progress, start: str = "forkserver") -> list:
    """Each invariant proved by `make()` (a Prover) in a process of its own, `jobs` at a time.
    The processes are forked from a server that has only imported the prover ("forkserver"):
    each starts from the same Z3 context, whatever ran before in this one."""
    import multiprocessing as mp
    ctx = mp.get_context(start)
    if start == "forkserver":
        ctx.set_forkserver_preload(["groupspec.checkers.proofs.prover"])
    todo, running, done = [(i, 0) for i in invs], {}, {}
    while todo or running:
        while todo and len(running) < jobs:
            inv, seed = todo.pop(0)
            if progress:
                progress(inv.name)
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_prove_one, args=(make, inv.name, seed, send, os.getpid()), daemon=True)
            proc.start()
            send.close()
            running[recv] = (inv, seed, proc)
        for recv in wait(list(running)):
            inv, seed, proc = running.pop(recv)
            try:
                done[inv.name] = recv.recv()
                if seed:
                    done[inv.name].reason += f" (Spacer's random seed {seed}: Z3 crashed with the seeds before it)"
            except EOFError:     # the process ended without an answer
                proc.join()
                if proc.exitcode == -11 and seed + 1 < SPACER_SEEDS:
                    # Z3 4.16's Spacer crashes on some clause sets with one seed and not another
                    todo.append((inv, seed + 1))
                else:
                    done[inv.name] = Proof(inv.name, "unknown", "none", reason=(
                        f"the prover's process ended without an answer (exit code {proc.exitcode}"
                        + (f", a segmentation fault: Z3 crashed with Spacer's random seeds 0 to {seed}"
                           if proc.exitcode == -11 else "") + ")"))
            recv.close()
            proc.join()
    return [done[i.name] for i in invs]


SPACER_SEEDS = 3      # how many of Spacer's random seeds an invariant is tried with when Z3 crashes


def _prove_one(make, name: str, seed: int, send, main: int) -> None:
    from groupspec.checkers.search.explicit import die_with
    die_with(main)      # the forkserver and its workers outlived a SIGKILL of the command by 30-60 s
    prover = make(spacer_seed=seed)
    inv = next(i for i in INVARIANTS if i.name == name)
    prover.explore_samples(inv.scope)
    send.send(prover.prove(inv))
    send.close()


@contextmanager
def z3_interruptible() -> Iterator[None]:
    """While in force, SIGTERM and Ctrl-C also interrupt Z3.  Z3 works in C, where Python cannot run a
    signal's handler until the call returns: one query of a deep `--bmc` held a SIGTERM off for as long as
    it ran (15 s and more).  The signal's byte, written by Python's C-level handler to a wakeup pipe, wakes
    a thread that interrupts Z3's context (Context.interrupt is made to be called from another thread); the
    query returns at once and the handler runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    before = signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def watch() -> None:
        while True:
            got = os.read(r, 64)
            if not got:          # the write end closed: the work is over
                return
            if signal.SIGTERM in got or signal.SIGINT in got:
                z3.main_ctx().interrupt()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(before)
        os.close(w)
        watcher.join()
        os.close(r)


def exit_code(proofs) -> int:
    """0: nothing violated; 1: an invariant is violated (unknowns are listed with their reasons)."""
    return 1 if any(p.status == "violated" for p in proofs) else 0


def _named(prover) -> dict:
    """Every lemma a proof of either scope may name, by name."""
    return {**prover.named("coordinator"), **prover.named("closed-world")}


def as_json(proofs, prover) -> dict:
    pool = _named(prover)
    used = sorted({n for p in proofs for n in p.lemmas})
    asm = every_assumption()
    return {"result": "violated" if exit_code(proofs) else "ok",
            "invariants": [p.as_json() for p in proofs],
            "lemmas": [{"name": n, "meaning": pool[n].meaning, "origin": pool[n].origin} for n in used if n in pool],
            "assumptions": [{"name": a.name, "meaning": a.meaning} for a in asm],
            "lemmas_checked_on": list(prover.presets)}


def print_table(console, proofs, prover) -> None:
    t = Table(title="groupspec prove: induction over every row of the table (both coordinators, "
                    "group.coordinator.new.enable either way)")
    for col in ("invariant", "status", "method", "lemmas", "seconds"):
        t.add_column(col)
    colour = {"proved": "green", "proved up to N": "yellow", "violated": "red", "unknown": "magenta"}
    for p in proofs:
        status = p.status if p.status != "proved up to N" else f"proved up to N={p.bound}"
        t.add_row(p.name, f"[{colour[p.status]}]{status}[/]", p.method, str(len(p.lemmas)), f"{p.seconds:.2f}")
    console.print(t)
    for p in proofs:
        if p.reason:
            console.print(f"[bold]{p.name}[/]: {p.reason}", highlight=False)
        if p.cti and p.status != "proved":
            console.print("  " + p.cti.words, markup=False, highlight=False)
            console.print("  " + p.cti.scenario.replace("\n", "\n  "), markup=False, highlight=False)
        if p.path is not None:
            console.print("  Spacer's path: " + p.path.words(), markup=False, highlight=False)
            console.print("  " + p.path.scenario().replace("\n", "\n  "), markup=False, highlight=False)
    pool = _named(prover)
    used = sorted({n for p in proofs for n in p.lemmas})
    if used:
        console.print(f"auxiliary lemmas ({len(used)}; each holds in every reachable state of "
                      f"{', '.join(prover.presets) or 'no world (not checked)'}):", highlight=False)
        for n in used:
            console.print(f"  {n}: {pool[n].meaning}" if n in pool else f"  {n}", markup=False, highlight=False)
    console.print("assumed of the environment: " + "; ".join(
        f"{a.name} ({a.meaning})" for a in every_assumption()),
        markup=False, highlight=False)
