"""The PySpark job: read traces, group records by group id, check each group, write the verdicts.

Partitioning: records are read by Spark's file splits (a gzip'ed file is one split), each tagged
with its file and its position in it, and the group id taken from the line in the JVM; a shuffle
on the group id into `spark.sql.shuffle.partitions` tasks (4 per core by default, whatever the
number of input splits) brings each group's records to one task, which orders them (input order,
then `seq` per source, then sources merged by time) and runs `check.check_group`, the function the
in-process checker runs, so both give the same verdicts.  The lines are parsed in those tasks, on
the executors; the driver reads nothing.

Three ways to run the per-group step (benchmarks/traces.py measures them; docs/guide/logs.md has the figures):
`arrow`, the default and the fastest: the shuffle and a sort by (group, file, position) stay in the
JVM, and `mapInArrow` hands each task its rows as Arrow batches, a group's rows contiguous;
`rdd` (`groupByKey` on pickled rows: Python shuffles, so every record crosses into Python twice);
`pandas` (`groupBy(group).applyInPandas`: a pandas frame per group).

What limits scaling: one group's records go to one task and are checked in order (a group is a
sequential history), so a single huge group is as slow as one core, and tasks of unequal groups
finish unevenly (more partitions than cores evens them out); the shuffle moves every record once;
the start of the JVM and of a Python worker per core (each imports the project and compiles the
table) is a fixed cost.
"""
from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .check import VERDICT_FIELDS, check_group
from .codec import GROUP_PATTERN, from_row, loads
from .records import MAX_GROUP_RECORDS, TraceInputError, file_name, is_parquet, parquet_problem, parse_line

ENGINES = ("arrow", "rdd", "pandas")
VERDICT_DDL = ("group string, verdict string, seq long, source string, rule string, detail string, records long, "
               "rebalances long, mode string, explain string")


def session(master: str = "local[*]", app: str = "groupspec-traces", partitions: int | None = None,
            relay: bool = False):
    """A Spark session (`master`: local[N], spark://host:port, yarn, ...).  Under spark-submit the
    master given there wins.  With `relay`, the JVM this starts writes its standard error through
    `JVM_ERR` (a SparkStartError if it does not start)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    settings = {"spark.app.name": app, "spark.ui.enabled": "false",
                "spark.sql.execution.arrow.pyspark.enabled": "true", "spark.sql.adaptive.enabled": "true",
                # every shuffle partition a task: coalescing them leaves cores idle behind one long group
                "spark.sql.adaptive.coalescePartitions.enabled": "false",
                "spark.driver.memory": os.environ.get("GROUPSPEC_SPARK_DRIVER_MEMORY", "2g"),
                "spark.sql.shuffle.partitions": str(partitions or 8)}
    if master:              # empty: the master spark-submit (or spark-defaults.conf) gives
        settings["spark.master"] = master
    if master.startswith("local"):
        # one JVM, short-lived, that only reads, shuffles and hands Arrow batches to Python: its C2
        # compiler threads and G1's concurrent threads took a third of its CPU, taken from the checking
        settings["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    if relay and "PYSPARK_GATEWAY_PORT" not in os.environ:     # (under spark-submit the JVM runs already)
        _launch_relayed(settings)
    b = SparkSession.builder
    for k, v in settings.items():
        b = b.config(k, v)
    sigint = signal.getsignal(signal.SIGINT)
    try:
        spark = b.getOrCreate()
    except Exception as e:
        if JVM_ERR is None:
            raise
        raise SparkStartError(first_line(e)) from e
    if relay and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, sigint)        # Spark's own (quiet_on_signals) set aside
    # log4j silent: a job that fails is one line (first_line), not the executors' stacks; Spark's stage
    # progress is not log4j's and still shows
    spark.sparkContext.setLogLevel("OFF" if relay else "ERROR")
    if JVM_ERR is not None:
        JVM_ERR.release()
    return spark


class SparkStartError(Exception):
    """The JVM did not start: what it said, in one line."""


class _Relay:
    """The JVM's standard error (and its Python workers', which inherit it), relayed to ours by a thread:
    held while Spark starts, so that a start that fails is one line rather than spark-submit's stack;
    passed through while the job runs (Spark's stage progress); dropped once the run is stopped (a
    signal): the JVM's and its workers' complaints about it are no news, and no traceback is printed."""

    HOLD_LIMIT = 1 << 20

    def __init__(self, fd: int):
        self.fd, self.mode, self.held, self.open_line = fd, "hold", bytearray(), False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="jvm-stderr", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                if self.mode == "hold":
                    self.held += chunk[:self.HOLD_LIMIT - len(self.held)]
                elif self.mode == "pass":
                    self._write(chunk)
                    self.open_line = not chunk.endswith(b"\n")

    @staticmethod
    def _write(data: bytes) -> None:
        try:
            os.write(2, data)
        except OSError:             # our standard error closed or full: nobody to tell
            pass

    def release(self) -> None:
        with self.lock:
            if self.mode == "hold":
                self._write(bytes(self.held))
                self.mode, self.held = "pass", bytearray()

    def drop(self) -> None:
        with self.lock:
            if self.mode == "pass" and self.open_line:     # Spark's progress line: ours begin on a new one
                self._write(b"\n")
            self.mode = "drop"

    def said(self) -> str:
        """What the JVM said went wrong, once it has ended, from what was held: its exception's line, or
        its last line."""
        self.thread.join(timeout=5)
        lines = [x.strip() for x in self.held.decode("utf-8", "replace").splitlines() if x.strip()]
        for x in lines:
            if x.startswith(("Exception in thread", "Error: ", "Caused by: ")) or "Exception: " in x[:200]:
                return x.split(": ", 1)[-1] if x.startswith("Exception in thread") else x
        return lines[-1] if lines else "it said nothing"


JVM_ERR: _Relay | None = None


def _launch_relayed(settings: dict) -> None:
    """Start Spark's JVM (as pyspark does) with its standard error into a pipe read by a _Relay."""
    global JVM_ERR
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False)
    conf.setAll(list(settings.items()))
    import pyspark.java_gateway as java_gateway
    read_end, write_end = os.pipe()
    JVM_ERR = _Relay(read_end)
    popen = java_gateway.Popen

    def started(*args, **kwargs):       # the JVM's process, known at once: a signal may come before its port
        global _JVM
        _JVM = popen(*args, **kwargs)
        return _JVM
    java_gateway.Popen = started
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
    except Exception as e:
        raise SparkStartError(JVM_ERR.said()) from e
    finally:
        java_gateway.Popen = popen
        os.close(write_end)
    SparkContext._ensure_initialized(gateway=gateway)


_JVM = None         # the JVM _launch_relayed started (subprocess.Popen)


@contextmanager
def quiet_on_signals() -> Iterator[None]:
    """While a job runs: SIGTERM and SIGINT stop the run as the command line's handlers do (Terminated,
    KeyboardInterrupt), but first silence what is about to complain: the JVM's standard error (dropped),
    and Python's logging, where py4j reports the call the signal interrupted (a traceback).  Spark's own
    SIGINT handler, which asks the JVM to cancel the jobs from inside the interrupted call, is set aside."""
    import logging

    def quiet(then):
        def handler(signum, frame):
            if JVM_ERR is not None:
                JVM_ERR.drop()
            logging.disable(logging.CRITICAL)
            then(signum, frame)
        return handler
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    term = before[signal.SIGTERM]
    signal.signal(signal.SIGTERM, quiet(term if callable(term) else signal.default_int_handler))
    signal.signal(signal.SIGINT, quiet(signal.default_int_handler))
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def stop_quietly() -> None:
    """After a signal or an error said in one line: the JVM killed (its Python workers end with it), and
    nothing more it or the driver's accumulator server (whose connection it was) says shown."""
    if JVM_ERR is not None:
        JVM_ERR.drop()
    from pyspark import SparkContext
    context = SparkContext._active_spark_context
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: None
    proc = _JVM or getattr(SparkContext._gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


# A Spark task's own verdicts, beside the groups': the lines of a file no group owns (bad input: how many,
# the first by position), and a group with more records than a task holds (not checked).  The driver turns
# them into one line each (exit 2); they are never a group's verdict.
UNROUTED, TOO_LONG = "unrouted", "too-long"


def group_verdict():
    """The rows of `check` that are groups' verdicts (the others are a task's own: UNROUTED, TOO_LONG)."""
    from pyspark.sql import functions as F
    return F.col("verdict").isin("ok", "violation", "invalid")


def first_line(e: BaseException) -> str:
    """What a Spark error says, in one line: the Java exception at the root of it (not its stack), or
    the first line of a Python one."""
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            while java.getCause() is not None:
                java = java.getCause()
            return _first_line(str(java.toString()))
        except Exception:       # the JVM is gone: what Python was told
            pass
    return _first_line(str(e)) or type(e).__name__


def _first_line(text: str) -> str:
    """A message in one line; of a Python traceback (a worker's, in a Java exception), its last line."""
    if "Traceback (most recent call last)" in text:
        text = text.split("Traceback (most recent call last)", 1)[1]
        lines = [x.strip() for x in text.splitlines() if x.strip() and not x.startswith((" ", "\t"))]
        return lines[-1][:300] if lines else ""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    return lines[0][:300] if lines else ""


class _Task:
    """One Spark task's work: the rows of each group (file, pos, fmt, value), a group's contiguous, checked
    as its last row is seen; the rows no group owns, counted per file."""

    def __init__(self, limit: int):
        self.limit = limit
        self.unrouted: dict[str, list] = {}         # file -> [count, first pos, its problem]
        self.names: dict[str, str] = {}             # a file URI decoded once

    def group(self, key, rows, more: int = 0) -> list[dict]:
        """The verdict rows for one key's rows (key None: rows whose line names no group); `more` rows of
        the key came past the limit and were only counted."""
        held: list = []
        n = more
        for file, pos, fmt, value in rows:
            file = self.names.get(file) or self.names.setdefault(file, file_name(file))
            group, rec = self._record(file, fmt, value)
            if group is None:
                if rec is not None:
                    got = self.unrouted.setdefault(file, [0, pos, rec])
                    got[0] += 1
                    if pos < got[1]:
                        got[1:] = [pos, rec]
                continue
            n += 1
            held.append((file, pos, rec))
        if n > self.limit:
            return [_row(key, TOO_LONG, None, None, f"{n:,} records, more than one task holds ({self.limit:,})", n)]
        if not held:
            return []
        held.sort(key=lambda r: (r[0], r[1]))      # input order
        return [check_group(key, [rec for _, _, rec in held])]

    @staticmethod
    def _record(file: str, fmt: str, value: bytes):
        """(group, record) as the in-process reader gives them; (None, what is wrong) for a line no group owns,
        (None, None) for a blank one."""
        if fmt == "parquet":
            try:
                rec = from_row(loads(value.decode("utf-8")))
            except ValueError:
                return None, f"{file}: a row that cannot be read back"
            if rec.get("group") is None:
                return None, f"{file}: a row whose `group` is null: every record names its group"
            return rec["group"], rec
        try:
            line = value.decode("utf-8")
        except UnicodeDecodeError as e:
            return None, f"{file}: a line not UTF-8 text ({e.reason} at byte {e.start + 1} of the line)"
        group, rec = parse_line(line, file)
        if group is None and rec is not None:
            return None, f"{file}: the line {line[:70]!r}: {rec}"
        return group, rec

    def problems(self) -> list[dict]:
        return [_row(None, UNROUTED, pos, file, problem, count) for file, (count, pos, problem) in self.unrouted.items()]


def _row(group, verdict_: str, seq, source, detail: str, records: int) -> dict:
    return {"group": group, "verdict": verdict_, "seq": seq, "source": source, "rule": "", "detail": detail,
            "records": records, "rebalances": 0, "mode": "", "explain": ""}


def _check_batches(batches, limit: int = MAX_GROUP_RECORDS):
    """The `arrow` engine's task: Arrow batches of rows sorted by group (then file and position),
    each group's rows contiguous, possibly across batches; one verdict per group, as batches."""
    import pyarrow as pa
    schema = _verdict_schema()
    task = _Task(limit)
    key, rows, more = _NO_GROUP, [], 0
    out: list = []
    for b in batches:
        cols = [b.column(name).to_pylist() for name in ("group", "file", "pos", "fmt", "value")]
        for g, *row in zip(*cols):
            if g != key:
                if key is not _NO_GROUP:
                    out += task.group(key, rows, more)
                key, rows, more = g, [], 0
            if key is None or len(rows) <= limit:     # past the limit a group's rows are only counted
                rows.append(row)
            else:
                more += 1
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)
            out = []
    if key is not _NO_GROUP:
        out += task.group(key, rows, more)
    out += task.problems()
    if out:
        yield pa.RecordBatch.from_pylist(out, schema=schema)


_NO_GROUP = object()      # before the first row: no group id (not even a null one) is this


def _verdict_schema():
    import pyarrow as pa
    types = {"string": pa.string(), "long": pa.int64()}
    return pa.schema([(name, types[t]) for name, t in (f.split() for f in VERDICT_DDL.split(", "))])


def _check_pdf(pdf, limit: int = MAX_GROUP_RECORDS):
    import pandas as pd
    task = _Task(limit)
    key = pdf["group"].iloc[0]
    rows = list(zip(pdf["file"], pdf["pos"], pdf["fmt"], pdf["value"]))
    out = task.group(None if pd.isna(key) else key, rows) + task.problems()
    return pd.DataFrame([{k: v[k] for k in VERDICT_FIELDS} for v in out], columns=list(VERDICT_FIELDS))


def _check_rdd_partition(groups, limit: int = MAX_GROUP_RECORDS):
    task = _Task(limit)
    for key, rows in groups:
        # groupByKey gave the group whole (ResultIterable): past the limit its rows are counted, not read
        kept = list(itertools.islice(rows, None if key is None else limit + 1))
        more = len(rows) - len(kept)
        yield from (_verdict_tuple(v) for v in task.group(key, kept, more))
    yield from (_verdict_tuple(v) for v in task.problems())


def read(spark, files: list[Path], skipped: list | None = None):
    """Every line or row as (group, file, pos, fmt, value): `group` the first `"group": "..."` of a line's
    text, as the in-process reader files it (null if there is none), `value` the line's bytes (checked as
    UTF-8 in the task, where a line that is not is named) or a row as JSON.  A local Parquet file that is
    not a trace (records.parquet_problem) is refused (TraceInputError), or skipped and named in
    `skipped`.  Parquet files are read one schema at a time: their columns' types may differ."""
    from pyspark.sql import functions as F
    text = [str(p) for p in files if not _parquet(p)]
    parquet = [p for p in files if _parquet(p)]
    frames = []
    if text:
        df = spark.read.text(text)
        found = F.regexp_extract("value", GROUP_PATTERN, 1)
        # a JSON group id may hold escapes: unescape what the regex took (null if it cannot be)
        group = F.when(found.contains("\\"),
                       F.get_json_object(F.concat(F.lit('{"g":"'), found, F.lit('"}')), "$.g")).otherwise(found)
        frames.append(df.where(F.col("value").rlike("[^ \t\r\n]"))      # blank lines are none of a group's
                      .select(F.when(F.regexp_extract("value", GROUP_PATTERN, 0) != "", group).alias("group"),
                              F.input_file_name().alias("file"), F.monotonically_increasing_id().alias("pos"),
                              F.lit("json").alias("fmt"), F.col("value").cast("binary").alias("value")))
    by_schema: dict = {}
    for p in parquet:
        if remote(p):
            by_schema.setdefault(("remote", str(p)), []).append(p)   # read by Spark only, each on its own
            continue
        problem = parquet_problem(p)
        if problem:
            if skipped is None:
                raise TraceInputError(f"{p}: {problem}")
            skipped.append(f"{p}: {problem}")
            continue
        import pyarrow.parquet as pq
        by_schema.setdefault(str(pq.read_schema(p)), []).append(p)
    if not frames and not by_schema:
        raise TraceInputError((skipped or ["no readable trace files"])[0])
    for same in by_schema.values():
        df = spark.read.parquet(*[str(p) for p in same])
        frames.append(df.select(F.col("group").cast("string").alias("group"), F.input_file_name().alias("file"),
                                F.monotonically_increasing_id().alias("pos"), F.lit("parquet").alias("fmt"),
                                F.to_json(F.struct(*[F.col(c) for c in df.columns])).cast("binary").alias("value")))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def remote(p) -> bool:
    return "://" in str(p)


def _parquet(p) -> bool:
    return str(p).endswith(".parquet") if remote(p) else is_parquet(p)


def check(spark, files: list[Path], engine: str = "arrow", skipped: list | None = None,
          limit: int = MAX_GROUP_RECORDS):
    """The verdicts DataFrame: one row per group, and the task's own rows (verdict UNROUTED: lines a file
    holds that no group owns; TOO_LONG: a group of more than `limit` records, not checked).  A local Parquet
    file that is not a trace is skipped and named in `skipped` (TraceInputError without it)."""
    from functools import partial
    df = read(spark, files, skipped)
    # one task per shuffle partition, whatever the number of input splits (one gzip file is one)
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    if engine == "arrow":
        return (df.repartition(parts, "group").sortWithinPartitions("group", "file", "pos")
                .mapInArrow(partial(_check_batches, limit=limit), schema=VERDICT_DDL))
    if engine == "pandas":
        return df.groupBy("group").applyInPandas(partial(_check_pdf, limit=limit), schema=VERDICT_DDL)
    if engine == "rdd":
        rdd = (df.rdd.map(lambda r: (r["group"], (r["file"], r["pos"], r["fmt"], bytes(r["value"]))))
               .groupByKey(numPartitions=parts)
               .mapPartitions(partial(_check_rdd_partition, limit=limit)))
        return spark.createDataFrame(rdd, schema=VERDICT_DDL)
    raise ValueError(f"unknown engine {engine!r} ({', '.join(ENGINES)})")


def _verdict_tuple(v: dict) -> tuple:
    return tuple(v[k] for k in VERDICT_FIELDS)
