"""How the check of one group grows with the group's length: is it linear (issue 25)?

    .venv/bin/python benchmarks/trace_group.py [--records 30000,90000,270000] [--folder /tmp/groupspec-bench-group]

For each length, one simulated group (a complete trace: `simulate --groups 1`) of at least that many
records is written to FOLDER (generated once, kept, not committed), then checked in process in a fresh
`groupspec traces check --in-process` (reading, ordering, replaying through the table, writing the report:
what a user waits for), and the check alone (`check.check_group` on the records already read) in this process.
Prints one JSON object: per length, the records, the wall-clock and CPU seconds of both, records per
CPU-second, and the CPU seconds per record over the shortest's (1.0 for linear).  The machine is shared,
so CPU seconds are the figures to compare; the 1-minute load average is given with them.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# about 1.4 records per client request (measured: 8,872 records from 6,429 requests of seed 1); 1.3 leaves
# a margin, so that the group holds at least the records asked for
RECORDS_PER_REQUEST = 1.3


def trace(folder: Path, records: int) -> Path:
    """One group of at least `records` records, written once."""
    path = folder / f"group-{records}.jsonl"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "simulate", "--groups", "1",
                            "--events-per-group", str(int(records / RECORDS_PER_REQUEST) + 1), "--seed", "1",
                            "--out", str(path)], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"simulate failed: {r.stderr.strip()}")
    return path


def _children_cpu() -> float:
    import resource
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def measure(path: Path) -> dict:
    from groupspec.checkers.traces.check import check_group
    from groupspec.checkers.traces.records import read_groups
    out = path.parent / f"{path.stem}.verdicts"
    t, cpu = time.perf_counter(), _children_cpu()
    r = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "traces", "check", str(path), "--in-process",
                        "--out", str(out), "--json"], capture_output=True, text=True)
    cli, cli_cpu = time.perf_counter() - t, _children_cpu() - cpu
    summary = json.loads(r.stdout)
    groups, _ = read_groups([str(path)])
    (group, recs), = groups.items()
    t, cpu = time.perf_counter(), time.process_time()
    v = check_group(group, recs)
    alone, alone_cpu = time.perf_counter() - t, time.process_time() - cpu
    return {"records": len(recs), "verdict": v["verdict"], "rebalances": v["rebalances"], "exit": r.returncode,
            "cli_seconds": round(cli, 2), "cli_cpu_seconds": round(cli_cpu, 2),
            "cli_records_per_cpu_second": int(len(recs) / cli_cpu),
            "check_seconds": round(alone, 2), "check_cpu_seconds": round(alone_cpu, 2),
            "check_records_per_cpu_second": int(len(recs) / alone_cpu),
            "summary_verdicts": summary["verdicts"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", default="30000,90000,270000")
    ap.add_argument("--folder", default="/tmp/groupspec-bench-group")
    args = ap.parse_args()
    sizes = sorted(int(x) for x in args.records.split(","))
    runs = [measure(trace(Path(args.folder), n)) for n in sizes]
    base = runs[0]["check_cpu_seconds"] / runs[0]["records"]
    for r in runs:
        r["cpu_per_record_vs_shortest"] = round(r["check_cpu_seconds"] / r["records"] / base, 2)
    print(json.dumps({"runs": runs, "load_average_1min": os.getloadavg()[0], "python": sys.version.split()[0]},
                     indent=1))


if __name__ == "__main__":
    main()
