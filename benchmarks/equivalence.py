"""What assuming proved invariants costs the equivalence check (checkers/search/equivalence.py): the Houdini
proof of the catalog's invariants (checkers/search/assumed.py, once per process: `proof_seconds`), then Z3's
equivalence query per dropped-update mutant of a few rows, with the proved invariants assumed.  Prints JSON.

    .venv/bin/python benchmarks/equivalence.py [--rows DeleteGroup,JoinTimer]
"""
from __future__ import annotations

import argparse
import json
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="DeleteGroup,JoinTimer: the group is Dead")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from groupspec.checkers.search import assumed, equivalence, mutate
    rel, facts = equivalence._relations()
    relations_s = time.perf_counter() - t0
    assumed.proved(rel, facts)
    picked = [(i, mu) for m, i, mu in mutate.mutants()
              if m.row.startswith(tuple(args.rows.split(","))) and "drop the update" in m.detail]
    t2 = time.perf_counter()
    shown = sum(bool(equivalence.shown_equivalent(i, mu)) for i, mu in picked)
    per_mutant_s = (time.perf_counter() - t2) / max(len(picked), 1)
    print(json.dumps({"load": os.getloadavg()[0], "relations_seconds": round(relations_s, 2),
                      **{f"proof_{k}": v for k, v in assumed.STATS.items()},
                      "mutants": len(picked), "shown_equivalent": shown,
                      "seconds_per_mutant": round(per_mutant_s, 3)}))


if __name__ == "__main__":
    main()
