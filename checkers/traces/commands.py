"""The CLI verbs of trace validation: `simulate`, `traces from-kafka-log`, `traces check`."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
import time
from pathlib import Path
from typing import List, Optional

import typer


from groupspec.checkers import console
from groupspec.checkers.console import (distinct_files, fail_input, finite, output_path, whole_or_nothing,
                                        write_outputs)



from .records import MAX_GROUP_RECORDS, TraceInputError

traces_app = typer.Typer(no_args_is_help=True, help="Trace validation: check what coordinators did against the spec "
                                                    "(contracts/trace-format.md).")
OUT_FILES = ("summary.md", "summary.json", "report.html")


def register(app: typer.Typer, panel: str | None = None) -> None:
    """`traces` and `simulate` on the command line, listed in `--help` under `panel`."""
    app.add_typer(traces_app, name="traces", rich_help_panel=panel)
    app.command("simulate", rich_help_panel=panel)(simulate_cmd)


def _progress(total: int, what: str):
    # shown on a terminal only: elsewhere rich's display leaves an empty line behind on the standard error
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    return Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console.err,
                    transient=True, disable=not console.err.is_terminal)


def _format_of(path: str, given: Optional[str]) -> str:
    if given:
        if given not in ("jsonl", "parquet"):
            fail_input(f"--format {given}: one of jsonl, parquet")
        return given
    return "parquet" if path.endswith(".parquet") else "jsonl"


def simulate_cmd(
    out_path: str = typer.Option(..., "--out", help="The trace file to write: .jsonl, .jsonl.gz or .parquet; written "
                                                    "whole or not at all."),
    groups: int = typer.Option(100, "--groups", help="How many groups (each on a coordinator of its own)."),
    events_per_group: Optional[int] = typer.Option(None, "--events-per-group", help="Client requests per group "
                                                   "[default: 200]."),
    duration: Optional[float] = typer.Option(None, "--duration", help="Simulated seconds per group (instead of "
                                                                      "--events-per-group)."),
    seed: int = typer.Option(0, "--seed", help="Seed: the same seed writes the same traces."),
    fmt: Optional[str] = typer.Option(None, "--format", help="jsonl or parquet (default: from the file name)."),
    inject_bug: Optional[str] = typer.Option(None, "--inject-bug", help="A bug to run some groups with: "
                                             "generation-not-bumped, sync-in-preparing, leader-not-reelected, "
                                             "timer-left-armed, answer-before-store, a comma list, or all."),
    fraction: Optional[float] = typer.Option(None, "--fraction", help="The fraction of groups run with the bug "
                                             "[default: 0.1]."),
    bugs_out: Optional[str] = typer.Option(None, "--bugs", help="Where to write which groups had a bug and whether "
                                                                "it fired (default: <out>.bugs.jsonl)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Drive many groups through the runtime coordinator with simulated consumers and write complete traces.

    Exit 0 with the trace and the bugs file written; 2 for bad input (one line naming the flag); 130 and
    143 on Ctrl-C and SIGTERM, with nothing written (a file already at --out is left as it was)."""
    from .codec import ParquetSink, write_bugs
    from .simulate import EPOCH_MS, choose_bugs, simulate
    if groups < 1 or (events_per_group is not None and events_per_group < 1):
        fail_input("--groups and --events-per-group must be at least 1")
    if duration is not None:
        if events_per_group is not None:
            fail_input("--duration and --events-per-group: give one (a group runs for so many simulated seconds, "
                       "or so many requests)")
        finite("--duration", duration, "a number of seconds")
        if not 0.001 <= duration <= (2**63 - 1 - EPOCH_MS) / 1000:
            fail_input(f"--duration {duration:g}: from 0.001 seconds (a millisecond) to {(2**63 - 1 - EPOCH_MS) / 1000:.3g}"
                       f" (Kafka's clock is a 64-bit count of milliseconds)")
    if fraction is not None:
        if inject_bug is None:
            fail_input("--fraction is the fraction of groups run with --inject-bug's bugs; give --inject-bug too")
        if not 0 <= fraction <= 1:
            fail_input(f"--fraction {fraction}: between 0 and 1")
    try:
        bugs = choose_bugs(inject_bug)
    except ValueError as e:
        fail_input(f"--inject-bug: {e}")
    kind = _format_of(out_path, fmt)
    named = "parquet" if out_path.endswith(".parquet") else "jsonl" if out_path.endswith((".jsonl", ".jsonl.gz")) \
        else None
    if named not in (None, kind):       # `traces check` reads a file by its name
        fail_input(f"--format {kind} --out {out_path}: the name says {named}; name the file .{kind} or leave out "
                   f"--format")
    path = output_path("--out", out_path, "file")
    bugs_path = output_path("--bugs", bugs_out or f"{out_path}.bugs.jsonl", "file")
    distinct_files([("--out", path), ("--bugs", bugs_path)])
    from groupspec.impl.trace import JsonLinesSink
    start = time.perf_counter()
    made: dict = {}
    with whole_or_nothing(path) as partial, whole_or_nothing(bugs_path) as bugs_partial:
        def run() -> None:
            gz = path.name.endswith(".gz")        # by --out's name: `partial`'s ends otherwise
            made["writer"] = writer = ParquetSink(partial) if kind == "parquet" else JsonLinesSink(str(partial), gz)
            try:
                with _progress(groups, "simulating groups") as bar:
                    task = bar.add_task("", total=groups)
                    made["info"] = simulate(groups, writer, seed=seed,
                                            events_per_group=None if duration else (events_per_group or 200),
                                            duration_ms=round(duration * 1000) if duration else None, bugs=bugs,
                                            fraction=0.1 if fraction is None else fraction,
                                            on_group=lambda i, g: bar.advance(task))
            finally:
                writer.close()
        write_outputs("--out", path, run, after_result=False, kept=True)
        write_outputs("--bugs", bugs_path, lambda: write_bugs(bugs_partial, made["info"]), after_result=False,
                      kept=True)
    writer, info = made["writer"], made["info"]
    took = time.perf_counter() - start
    res = {"out": str(path), "format": kind, "groups": groups, "records": writer.count,
           "buggy_groups": len(info), "bug_fired": sum(b["fired"] for b in info), "bugs_file": str(bugs_path),
           "seconds": round(took, 2), "records_per_second": int(writer.count / took) if took else None}
    if as_json:
        console.out.print_json(json.dumps(res))
    else:
        console.out.print(f"{writer.count:,} records of {groups:,} groups written to {path} in {took:.1f} s"
                  + (f"; {len(info)} groups ran a bug, it fired in {res['bug_fired']} ({bugs_path})" if bugs else ""),
                  markup=False, highlight=False)


@traces_app.command("from-kafka-log")
def from_kafka_log_cmd(
    files: List[str] = typer.Argument(..., help="Broker server.log files or folders of them (rotated, gzip'ed, "
                                                "docker-compose output, grep -r output, rows pasted from a "
                                                "terminal UI, wrapped lines)."),
    out_path: str = typer.Option(..., "--out", help="The partial trace to write (.jsonl or .jsonl.gz), whole or "
                                                    "not at all, never over one of the logs read; /dev/stdout "
                                                    "puts the summary on the standard error."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Read Kafka brokers' logs into partial traces (observe records), merged by time across brokers.

    Lines an excerpt left out (`...`, `[...]`, `N lines omitted`, grep's `--`) are a gap: each group
    gets a gap record there and is not judged across it.  Of one log entry at most 1 MiB is kept (a
    coordinator entry cut there is a gap too); both are counted in the output.  Exit 0 with the
    trace written; 2 for bad input, in one line naming the file and line (or the flag), also when
    the logs hold no group coordinator line about a group (nothing to trace); 130 and 143 on Ctrl-C
    and SIGTERM, with nothing written."""
    from .kafka_log import ENTRY_LIMIT_TEXT, input_files, read_files, summary, to_records
    try:
        inputs = input_files(files)
    except TraceInputError as e:
        fail_input(str(e))
    path, fd = _trace_out(out_path, inputs)
    try:
        if console.err.is_terminal:        # elsewhere rich's display would leave an empty line behind
            total = sum(f.stat().st_size for f in inputs)
            with _progress(total, "reading logs (bytes)") as bar:
                task = bar.add_task("", total=total)
                reading = read_files(inputs, lambda done: bar.update(task, completed=done))
        else:
            reading = read_files(inputs)
    except TraceInputError as e:
        fail_input(str(e))
    recs = to_records(reading)
    s = summary(reading, len(recs))
    if not recs:
        coord = sum(s["recognised"].values()) + s["unrecognised_coordinator_lines"] + s["coordinator_entries_cut"]
        fail_input(f"{', '.join(files)}: nothing to trace: no group coordinator line about a group among "
                   f"{s['entries']:,} log entries ({coord:,} coordinator lines); give the logs of the brokers "
                   f"that coordinate the groups, at level INFO")
    try:
        _write_trace(path, fd, recs)
    except OSError as e:
        fail_input(f"--out {path}: writing failed ({e.strerror or e}); " +
                   ("what it wrote there is incomplete" if fd is not None else "nothing was written there (a file "
                    "there is as it was)") + ": free some space or give another place")
    s["groups"] = len({r["group"] for r in recs})
    s["out"] = str(path)
    shown = console.err if fd == STDOUT else console.out      # the trace has the standard output
    if as_json:
        shown.print_json(json.dumps(s))
        return

    def say(text: str) -> None:
        shown.print(text, markup=False, highlight=False)
    say(f"{s['records']:,} observations of {s['groups']:,} groups from {s['entries']:,} log entries in "
        f"{s['files']} files -> {path}")
    for name, n in s["recognised"].items():
        say(f"  {n:>8,}  {name}")
    if s["unrecognised_coordinator_lines"]:
        say(f"  {s['unrecognised_coordinator_lines']:>8,}  coordinator lines not recognised, most common:")
        for u in s["unrecognised_top"][:5]:
            say(f"            {u['count']:,} x {u['example'][:110]}")
    say(f"  {s['other_lines']:>8,}  other lines (not the group coordinator's)")
    if s["gaps"]:
        say(f"  {s['gaps']:>8,}  gaps (lines left out, or a coordinator entry cut): no group is judged across one")
    if s["entries_cut"]:
        say(f"  {s['entries_cut']:>8,}  entries longer than {ENTRY_LIMIT_TEXT}, kept up to there "
            f"({s['coordinator_entries_cut']:,} of them the coordinator's)")


STDOUT = 1


def _trace_out(given: str, inputs: list[Path]) -> tuple[Path, Optional[int]]:
    """--out, checked before any work: a place the trace can be written that is none of the logs read
    (one line, exit 2, otherwise).  With it, the file descriptor the trace is written into when it
    goes straight there rather than into a file beside it renamed onto it (None): the standard output
    when --out is it (/dev/stdout, or the file or pipe the shell gave it: opened anew, a file would
    be written from its start over what is printed); a named pipe, opened now without waiting for
    a reader (none: refused) and kept open (opened and closed once more, it would tell its reader
    the end came); a device, or any name under /dev or /proc."""
    if given.endswith(".parquet"):
        fail_input(f"--out {given}: the trace is written as JSON Lines; name it .jsonl or .jsonl.gz")
    try:
        st: Optional[os.stat_result] = os.stat(given)
    except (OSError, ValueError):
        st = None
    path = output_path("--out", given, "file")      # a named pipe no process reads is refused here
    fd = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        pipe = console.held_pipe(path)                 # the probe's, open on a named pipe
        try:
            if os.path.samestat(st, os.fstat(STDOUT)):
                fd = STDOUT
                if pipe is not None:
                    os.close(pipe)
            elif pipe is not None:
                fd = pipe
            elif not stat.S_ISREG(st.st_mode) or Path(given).absolute().parts[1:2] in (("dev",), ("proc",)):
                fd = os.open(given, os.O_WRONLY)
        except OSError as e:
            fail_input(f"--out {given}: cannot be written ({e.strerror})")
    if st is not None:
        for f in inputs:
            if os.path.samestat(st, f.stat()):
                fail_input(f"--out {path}: is one of the logs read ({f}), and the trace would overwrite it; give "
                           f"another file")
    return path, fd


def _write_trace(path: Path, fd: Optional[int], recs: list[dict]) -> None:
    """The records as JSON Lines (gzip'ed when the name ends in .gz), into `fd` (_trace_out), or into a
    file beside --out renamed onto it when complete, so a failure or a signal leaves what was there."""
    def dump(f) -> None:
        out = gzip.GzipFile(fileobj=f, mode="wb", compresslevel=3) if path.name.endswith(".gz") else f
        for i in range(0, len(recs), 4096):
            out.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs[i:i + 4096]).encode())
        if out is not f:
            out.close()
    if fd is not None:
        with os.fdopen(fd, "wb", closefd=fd != STDOUT) as f:
            if stat.S_ISREG(os.fstat(fd).st_mode) and fd != STDOUT:
                os.ftruncate(fd, 0)
            dump(f)
        return
    with whole_or_nothing(path) as place, open(place, "wb") as f:
        dump(f)


@traces_app.command("check")
def check_cmd(
    paths: List[str] = typer.Argument(..., help="Trace files or folders: JSON Lines (.jsonl, .jsonl.gz) or Parquet."),
    group: Optional[str] = typer.Option(None, "--group", help="Check this group only, in process, and explain "
                                        "(with --out: its walkthrough, each record and the group the spec "
                                        "replays, as walkthrough.md and .html)."),
    out_dir: Optional[str] = typer.Option(None, "--out", help="Folder for verdicts.parquet, summary.md, summary.json, "
                                                              "report.html."),
    master: str = typer.Option("local[*]", "--master", help="Spark master: local[N], spark://host:7077, yarn, ..."),
    engine: str = typer.Option("arrow", "--engine", help="How Spark runs the per-group check: arrow (a shuffle "
                               "and sort in the JVM, groups checked from Arrow batches: the fastest measured), rdd "
                               "(groupByKey) or pandas (applyInPandas)."),
    in_process: bool = typer.Option(False, "--in-process", help="No Spark: check every group in this process."),
    partitions: int = typer.Option(0, "--partitions", help="Shuffle partitions (default: 4 per core)."),
    max_group_records: int = typer.Option(MAX_GROUP_RECORDS, "--max-group-records", help="On Spark, the most "
                                          "records of one group a task holds (about 2 KB of memory each); a longer "
                                          "group is named and not checked."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Check traces against the spec, group by group (on Spark, or in process).

    Exit 0 when every group is `ok`; 1 when a group is `violation` or `invalid` (a record of it breaks the
    format: named in its verdict); 2 for bad input, in one line naming the file and line: a file that
    cannot be read (a gzip cut short, a Parquet file without the format's columns), lines no group owns
    (not JSON, null, a scalar, an array, NUL bytes, no string `group`), and input in which nothing was
    checked (an empty or blank trace); the report is still written when some groups were checked.  130 and
    143 on Ctrl-C and SIGTERM."""
    from . import report
    from .check import check_group
    from .records import expand, read_groups
    from .spark import ENGINES
    if engine not in ENGINES:
        fail_input(f"--engine {engine}: one of {', '.join(ENGINES)}")
    if partitions < 0:
        fail_input(f"--partitions {partitions}: a number of shuffle partitions, at least 1 (0: 4 per core)")
    if max_group_records < 1:
        fail_input(f"--max-group-records {max_group_records}: at least 1")
    if not master.strip() and "PYSPARK_GATEWAY_PORT" not in os.environ:
        fail_input(f"--master {master!r} names no Spark master; give local[N], spark://host:7077, yarn, ... (an "
                   f"empty one is for spark-submit: checkers/traces/submit.py), or check with --in-process")
    if group is not None:
        try:
            groups, unrouted = read_groups(paths)
        except TraceInputError as e:
            fail_input(str(e))
        if group not in groups:
            if not groups:
                fail_input(_nothing_checked(paths, unrouted))
            known = ", ".join(sorted(groups)[:5])
            _say_unrouted(unrouted)
            fail_input(f"--group {group}: no records of that group in {', '.join(paths)} (groups there: {known}"
                       f"{' ...' if len(groups) > 5 else ''})")
        if out_dir is not None:
            _walk_group(group, groups[group], output_path("--out", out_dir, "dir", WALK_FILES), as_json)
        v = check_group(group, groups[group])
        if as_json:
            console.out.print_json(json.dumps(v))
        else:
            console.out.print(report.explain(v), markup=False, highlight=False)
        _say_unrouted(unrouted)
        raise typer.Exit(2 if unrouted.count else 0 if v["verdict"] == "ok" else 1)
    if out_dir is None:
        fail_input("give --out DIR for the verdicts and the summary (or --group G to check one group here)")
    # Spark writes verdicts.parquet as a folder (and over the one a run before wrote); in process, as a file
    folder = output_path("--out", out_dir, "dir", OUT_FILES + (("verdicts.parquet",) if in_process else ()))
    remote = [p for p in paths if "://" in p]          # hdfs://, s3a://, ...: Spark reads them
    if remote and in_process:
        fail_input(f"{remote[0]}: --in-process reads local files only; drop --in-process to read it on Spark")
    try:
        files = expand([p for p in paths if "://" not in p]) + remote
    except TraceInputError as e:
        fail_input(str(e))
    start = time.perf_counter()
    timing: dict = {}
    skipped: list = []
    if in_process:
        verdicts, unrouted, too_long = _in_process(paths, skipped)
        timing["check_seconds"] = round(time.perf_counter() - start, 2)
        engine_used = "in-process"
    else:
        verdicts, unrouted, too_long, timing = _on_spark(files, master, engine, partitions, max_group_records,
                                                         folder, skipped)
        engine_used = f"spark {master or 'from spark-submit'} ({engine})"
    if not verdicts:
        fail_input(_nothing_checked(paths, unrouted, skipped, too_long))
    s = report.summarize(verdicts, (unrouted.count, unrouted.examples),
                         {"engine": engine_used, "skipped_files": skipped, "groups_too_long": too_long, **timing})

    def write():
        folder.mkdir(parents=True, exist_ok=True)
        if in_process:
            import pyarrow as pa
            import pyarrow.parquet as pq
            from .check import VERDICT_FIELDS
            pq.write_table(pa.Table.from_pylist([{k: v[k] for k in VERDICT_FIELDS} for v in verdicts]),
                           str(folder / "verdicts.parquet"))
        (folder / "summary.md").write_text(report.markdown(s), encoding="utf-8")
        (folder / "summary.json").write_text(json.dumps(s, indent=1, default=str), encoding="utf-8")
        (folder / "report.html").write_text(report.html_page(s), encoding="utf-8")
    write_outputs("--out", folder, write)
    if as_json:
        console.out.print_json(json.dumps(s, default=str))
    else:
        console.out.print(report.markdown(s), markup=False, highlight=False)
        console.out.print(f"\nwritten to {folder}: verdicts.parquet, summary.md, summary.json, report.html",
                          markup=False, highlight=False)
    # bad input last, where it is seen: the verdicts above are of what could be read
    for problem in skipped:
        console.say_error(f"groupspec: skipped {problem}")
    for problem in too_long:
        console.say_error(f"groupspec: not checked: {problem}")
    _say_unrouted(unrouted)
    if skipped or too_long or unrouted.count:
        raise typer.Exit(2)
    raise typer.Exit(0 if s["verdicts"]["violation"] == 0 and s["verdicts"]["invalid"] == 0 else 1)


UNROUTED_FIX = ("every line of a trace is one JSON object naming its group as `\"group\": \"...\"` "
                "(contracts/trace-format.md): fix or remove such lines")


def _say_unrouted(unrouted) -> None:
    if unrouted.count:
        console.say_error(f"groupspec: {console.one_line(unrouted.first_line())}; {UNROUTED_FIX}")


def _nothing_checked(paths: list[str], unrouted, skipped: list = (), too_long: list = ()) -> str:
    """Why no group was checked, in one line: the first problem found, or an input with no record at all."""
    if skipped:
        return f"nothing was checked: {skipped[0]}"
    if too_long:
        return f"nothing was checked: {too_long[0]}"
    if unrouted.count:
        return f"nothing was checked: {unrouted.first_line()}; {UNROUTED_FIX}"
    return (f"nothing was checked: {', '.join(paths)} holds no trace record (empty, or blank lines only); give "
            f"the trace files the coordinators or `groupspec simulate` wrote")


WALK_FILES = ("walkthrough.md", "walkthrough.html")


def _walk_group(group: str, records: list, folder: Path, as_json: bool) -> None:
    """With --group and --out: the group's walkthrough, as a reviewer reads it (walkthrough.py)."""
    from groupspec.checkers.review.walkthrough import html_page
    from .walkthrough import walkthrough
    v, md = walkthrough(group, records)
    console.write_folder("--out", folder, {"walkthrough.md": md,
                                           "walkthrough.html": html_page(md, f"group {group}: {v['verdict']}")})
    if not as_json:
        console.say_error(f"the group's walkthrough written to {folder / 'walkthrough.html'} (and .md)")


def _in_process(paths: list[str], skipped: list):
    from .check import check_group
    from .records import read_groups
    groups, unrouted = read_groups(paths, skipped)
    verdicts = []
    with _progress(len(groups), "checking groups") as bar:
        task = bar.add_task("", total=len(groups))
        for g, recs in groups.items():
            verdicts.append(check_group(g, recs))
            bar.advance(task)
    return verdicts, unrouted, []


def _on_spark(files, master: str, engine: str, partitions: int, limit: int, folder: Path, skipped: list):
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        fail_input("Spark needs a Java runtime (17) and none is on PATH or in JAVA_HOME: run .ci/setup "
                   "(apt-get install openjdk-17-jre-headless), or check with --in-process")
    try:
        import pyspark  # noqa: F401
    except ImportError:
        fail_input("pyspark is not installed: run .ci/setup (pip install 'pyspark[sql]'), or check with --in-process")
    from rich.status import Status
    from . import spark as S
    from .records import Unrouted, first_unrouted, gzip_problem
    for f in files:             # what Spark would fail on or read otherwise, found before the JVM starts
        if S.remote(f):
            continue
        if not stat.S_ISREG(f.stat().st_mode):
            fail_input(f"{f}: {console.kind_of(f.stat())}, and Spark reads files; check it with --in-process")
        problem = gzip_problem(f)
        if problem:
            fail_input(problem)
    timing: dict = {}
    t0 = time.perf_counter()
    try:
        with S.quiet_on_signals(), Status("starting Spark ...", console=console.err) as status:
            cores = os.cpu_count() or 1
            try:
                sp = S.session(master, partitions=partitions or 4 * cores, relay=True)
            except Exception as e:          # a master Spark cannot parse or reach: what Spark said, in a line
                fail_input(f"--master {master}: Spark did not start ({S.first_line(e)}); give local[N], "
                           f"spark://host:7077, yarn, ..., or check with --in-process")
            timing["startup_seconds"] = round(time.perf_counter() - t0, 2)
            t1 = time.perf_counter()
            status.update("reading, grouping and checking (Spark's stage progress below) ...")
            sp.sparkContext.setLocalProperty("spark.job.description", "groupspec traces check")
            target = folder / "verdicts.parquet"
            try:
                rows = S.check(sp, files, engine, skipped, limit).persist()
                folder.mkdir(parents=True, exist_ok=True)
                rows.where(S.group_verdict()).write.mode("overwrite").parquet(str(target))
                problems = [r.asDict() for r in rows.where(~S.group_verdict()).collect()]
                status.update("summarising ...")
                verdicts = [r.asDict() for r in sp.read.parquet(str(target)).collect()]
            except TraceInputError as e:
                fail_input(str(e))
            except Exception as e:          # the job failed: what Spark said, not the JVM's stack
                fail_input(f"the Spark job failed: {S.first_line(e)}; check the files with --in-process, which "
                           f"names the file and line")
            timing["check_seconds"] = round(time.perf_counter() - t1, 2)
    except BaseException:       # a signal (or an error said in one line): the JVM ends now, and quietly
        S.stop_quietly()
        raise
    unrouted, too_long = Unrouted(), []
    for p in sorted(problems, key=lambda r: (r["source"] or "", r["seq"] or 0)):
        if p["verdict"] == S.TOO_LONG:
            too_long.append(f"group {p['group']}: {p['detail']}; check it with --group {p['group']} (in process), "
                            f"or raise --max-group-records if the executors' Python has the memory")
        else:       # the first line by its number, read again here (a local file)
            named = None if S.remote(p["source"]) else first_unrouted(Path(p["source"]))
            unrouted.add(named or p["detail"], p["records"])
    return verdicts, unrouted, too_long, timing
