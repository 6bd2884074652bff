"""Seconds to prove each invariant by induction, with and without the strengthening search,
and with Spacer (the second engine: Horn clauses, fixed sizes N=2) alone.

Each measurement starts from a fresh prover (the rows read again, no lemma kept from an
earlier invariant), so "with" includes the whole search for lemmas; exploring the sample
worlds that sift the candidates, and each candidate's verdict in them, is done once, first,
and timed apart, as `groupspec prove` does it once for every invariant.  Prints JSON.

    .venv/bin/python benchmarks/prove.py [--invariants a,b|all] [--budget S] [--spacer-budget S|0]
"""
from __future__ import annotations

import argparse
import json
import os
import time

from groupspec.checkers.proofs.prover import SAMPLE_WORLDS, Prover
from groupspec.spec.invariants import INVARIANTS

CARD = ("one-leader-per-generation", "assignment-only-when-stable", "assignments-disjoint")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--invariants", default=",".join(CARD), help="comma-separated, or 'all'")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--spacer-budget", type=float, default=60.0, help="seconds of Spacer per invariant (0: skip)")
    args = ap.parse_args()
    names = [i.name for i in INVARIANTS] if args.invariants == "all" else args.invariants.split(",")
    # the candidates are sifted by the states of the sample worlds, explored once per process
    # (a run of `groupspec prove` pays this once, for every invariant): timed apart
    # (and the candidate lemmas' verdicts in them, kept as the states are)
    t0 = time.perf_counter()
    Prover(presets=()).explore_samples("coordinator")
    sift = round(time.perf_counter() - t0, 3)
    print(json.dumps({"sample_worlds": list(SAMPLE_WORLDS), "exploring_them_seconds": sift}), flush=True)
    rows = []
    for name in names:
        inv = next(i for i in INVARIANTS if i.name == name)
        entry = {"invariant": name}
        runs = [("without_strengthening", dict(strengthen=False, engine="houdini")),
                ("with_strengthening", dict(strengthen=True, engine="houdini"))]
        if args.spacer_budget > 0:
            runs.append(("spacer", dict(engine="spacer", spacer_budget_s=args.spacer_budget)))
        for label, how in runs:
            t0 = time.perf_counter()
            p = Prover(presets=(), budget_s=args.budget, **how).prove(inv)
            entry[label] = {"status": p.status if p.bound is None else f"proved up to N={p.bound}",
                            "method": p.method, "lemmas": len(p.lemmas),
                            "seconds": round(time.perf_counter() - t0, 3)}
        rows.append(entry)
        print(json.dumps(entry), flush=True)
    print(json.dumps({"benchmark": "prove", "sample_worlds_seconds": sift, "results": rows,
                      "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=2))


if __name__ == "__main__":
    main()
