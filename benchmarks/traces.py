"""How fast traces are checked: in process, and on Spark local[1] and local[2] (Arrow batches, RDD, pandas UDFs).

    .venv/bin/python benchmarks/traces.py [--records 1000000] [--corpus DIR] [--runs 2]
        [--configs inproc,local[1]:arrow,local[2]:arrow,local[1]:rdd,local[2]:rdd,local[1]:pandas,local[2]:pandas]

Generates the corpus first if DIR has none (simulated groups, 20% with injected bugs, two gzip'ed
JSON Lines files written by two processes; it is not committed), then runs each configuration in
a fresh process, `--runs` times, the configurations of one run back to back.  Spark's fixed cost
(starting the JVM and the session, and a first job that starts a Python worker per core, each
importing the checker and compiling the table) is measured apart from the check itself, whose rate
is the steady one.

The machine is shared, so besides the wall-clock rates each run gives its CPU time (in process:
this process's; on Spark: the JVM's and every Python worker's, read from /proc) and records per
CPU-second, which another engineer's load changes far less, and the 1-minute load average.
local[2] over local[1] is taken within each run (the two ran minutes apart, not hours).  Prints one
JSON object: each run's figures, the min-max range per configuration, the ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from multiprocessing import Pool
from pathlib import Path


def _gen(args):
    path, groups, first, seed = args
    from groupspec.checkers.traces.codec import write_bugs
    from groupspec.checkers.traces.simulate import choose_bugs, simulate
    from groupspec.impl.trace import JsonLinesSink
    sink = JsonLinesSink(str(path))
    info = simulate(groups, sink, seed=seed, events_per_group=200, bugs=choose_bugs("all"), fraction=0.2, first=first)
    sink.close()
    write_bugs(Path(str(path) + ".bugs.jsonl"), info)
    return sink.count


def corpus(folder: Path, records: int) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    meta = folder / "corpus.json"
    if meta.exists():
        m = json.loads(meta.read_text())
        if m["records"] >= records:
            return m
        # never write over a corpus: another run, or another engineer, may be reading it
        print(f"{folder}: holds a corpus of {m['records']} records, fewer than --records {records}: give "
              f"--records {m['records']} (or fewer) to use it, or a folder without a corpus to generate one",
              file=sys.stderr)
        sys.exit(2)
    # about 285 records a group at 200 requests (measured: 70,967 in 250 groups of seed 1); 270 leaves a
    # margin, so that the corpus holds at least `records`
    groups = max(2, records // 270 + 1)
    t = time.perf_counter()
    half = groups // 2
    jobs = [(folder / "part-0.jsonl.gz", half, 0, 1), (folder / "part-1.jsonl.gz", groups - half, half, 1)]
    with Pool(2) as p:
        counts = p.map(_gen, jobs)
    m = {"records": sum(counts), "groups": groups, "files": [str(j[0]) for j in jobs],
         "generate_seconds": round(time.perf_counter() - t, 1)}
    meta.write_text(json.dumps(m))
    return m


def one(config: str, folder: Path) -> dict:
    """One run of one configuration (in this process)."""
    from groupspec.checkers.traces.records import expand
    files = expand([str(folder)])
    files = [f for f in files if not f.name.endswith(".bugs.jsonl") and f.name != "corpus.json"]
    if config == "inproc":
        from groupspec.checkers.traces.check import check_group
        from groupspec.checkers.traces.records import read_groups
        # one file at a time (the generated files hold disjoint groups), to bound the memory
        n = bad = 0
        read = check = 0.0
        cpu0 = time.process_time()
        for f in files:
            t0 = time.perf_counter()
            groups, _ = read_groups([str(f)])
            t1 = time.perf_counter()
            n += sum(len(r) for r in groups.values())
            bad += sum(check_group(g, r)["verdict"] != "ok" for g, r in groups.items())
            read, check = read + t1 - t0, check + time.perf_counter() - t1
            del groups
        cpu = time.process_time() - cpu0
        return {"config": config, "records": n, "violations": bad, "read_seconds": round(read, 2),
                "check_seconds": round(check, 2), "records_per_second": int(n / (read + check)),
                "cpu_seconds": round(cpu, 1), "records_per_cpu_second": int(n / cpu)}
    master, engine = config.split(":")
    from groupspec.checkers.traces import spark as S
    t0 = time.perf_counter()
    sp = S.session(master, partitions=4 * int(master[6:-1]) if master[6:-1].isdigit() else 8)
    cores = int(master[6:-1]) if master[6:-1].isdigit() else os.cpu_count() or 1
    # the Python workers start, one per core, and each imports the checker and compiles the table (a
    # fixed cost: the check's tasks reuse the workers; SQL's Python runners, arrow's and pandas', have
    # workers of their own, apart from the RDD's)
    if engine == "rdd":
        sp.sparkContext.parallelize(range(cores), cores).map(_warm).count()
    else:
        sp.range(cores, numPartitions=cores).mapInArrow(_warm_batches, "id long").collect()
    t1 = time.perf_counter()
    cpu0 = _tree_cpu()
    verdicts, _ = S.check(sp, files, engine)
    rows = verdicts.select("verdict", "records").collect()
    t2 = time.perf_counter()
    cpu = _tree_cpu() - cpu0
    n = sum(r["records"] for r in rows)
    sp.stop()
    return {"config": config, "records": n, "violations": sum(r["verdict"] != "ok" for r in rows),
            "startup_seconds": round(t1 - t0, 2), "check_seconds": round(t2 - t1, 2),
            "records_per_second": int(n / (t2 - t1)), "records_per_minute": int(60 * n / (t2 - t1)),
            "cpu_seconds": round(cpu, 1), "records_per_cpu_second": int(n / cpu) if cpu else None}


def _warm(_) -> int:
    from groupspec.checkers.traces import check  # noqa: F401 - importing it compiles the table's rows
    return 0


def _warm_batches(batches):
    _warm(None)
    yield from batches


def _tree_cpu() -> float:
    """CPU seconds (user + system) of this process's descendants: Spark's JVM, its Python daemon and
    workers (Linux /proc; live processes, and what they reaped)."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue                      # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(d))
        ticks[int(d)] = sum(int(x) for x in fields[11:15])      # utime, stime, cutime, cstime
    total, stack = 0, list(children.get(os.getpid(), []))
    while stack:
        p = stack.pop()
        total += ticks.get(p, 0)
        stack += children.get(p, [])
    return total / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--corpus", default="/tmp/groupspec-bench-traces")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--configs", default="inproc,local[1]:arrow,local[2]:arrow,local[1]:rdd,local[2]:rdd")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    folder = Path(a.corpus)
    if a.one:
        print(json.dumps(one(a.one, folder)))
        return
    load_before = os.getloadavg()
    meta = corpus(folder, a.records)
    runs = []
    for _ in range(a.runs):
        for cfg in a.configs.split(","):
            r = subprocess.run([sys.executable, __file__, "--corpus", str(folder), "--one", cfg],
                               capture_output=True, text=True)
            if r.returncode != 0:
                runs.append({"config": cfg, "error": r.stderr.strip().splitlines()[-1:]})
                continue
            res = json.loads(r.stdout.strip().splitlines()[-1])
            res["load_average_1m"] = round(os.getloadavg()[0], 2)
            runs.append(res)
            print(json.dumps(res), file=sys.stderr)
    ranges = {}
    for cfg in a.configs.split(","):
        mine = [r for r in runs if r.get("config") == cfg and "records_per_second" in r]
        if not mine:
            continue
        for r in mine:
            r.setdefault("records_per_minute", 60 * r["records_per_second"])
        ranges[cfg] = {k: [min(r[k] for r in mine), max(r[k] for r in mine)]
                       for k in ("records_per_second", "records_per_minute", "records_per_cpu_second",
                                 "startup_seconds", "load_average_1m")
                       if all(r.get(k) is not None for r in mine)}
    out = {"benchmark": "traces", "cpus": os.cpu_count(), "corpus": meta, "runs": runs, "ranges": ranges,
           "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    n_cfg = len(a.configs.split(","))
    for eng in ("arrow", "rdd", "pandas"):
        # local[2] over local[1] within each run: the pair ran back to back, at about the same load
        ratios = []
        for i in range(a.runs):
            mine = {r["config"]: r for r in runs[i * n_cfg:(i + 1) * n_cfg] if "records_per_second" in r}
            l1, l2 = mine.get(f"local[1]:{eng}"), mine.get(f"local[2]:{eng}")
            if l1 and l2:
                ratios.append(round(l2["records_per_second"] / l1["records_per_second"], 2))
        if ratios:
            out[f"speedup_local2_over_local1_{eng}"] = ratios
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
