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

import os
import sys
from pathlib import Path

from .check import VERDICT_FIELDS, check_group
from .codec import GROUP_PATTERN, from_row, loads
from .records import (BadRecord, TraceInputError, file_name, is_parquet, parquet_columns_missing,
                      parse_line)

ENGINES = ("arrow", "rdd", "pandas")
VERDICT_DDL = ("group string, verdict string, seq long, source string, rule string, detail string, records long, "
               "rebalances long, mode string, explain string")


def session(master: str = "local[*]", app: str = "groupspec-traces", partitions: int | None = None):
    """A Spark session (`master`: local[N], spark://host:port, yarn, ...).  Under spark-submit the
    master given there wins."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.sql.adaptive.enabled", "true")
         # every shuffle partition a task: coalescing them leaves cores idle behind one long group
         .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
         .config("spark.driver.memory", os.environ.get("GROUPSPEC_SPARK_DRIVER_MEMORY", "2g"))
         .config("spark.sql.shuffle.partitions", str(partitions or 8)))
    if master:              # empty: the master spark-submit (or spark-defaults.conf) gives
        b = b.master(master)
    if master.startswith("local"):
        # one JVM, short-lived, that only reads, shuffles and hands Arrow batches to Python: its C2
        # compiler threads and G1's concurrent threads took a third of its CPU, taken from the checking
        b = b.config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _records_of(rows) -> list:
    """One group's rows (file, pos, fmt, value) to records, in input order."""
    recs = []
    names: dict = {}            # a group's records come from a few files: each URI decoded once
    for file, pos, fmt, value in sorted(rows, key=lambda r: (r[0], r[1])):
        file = names.get(file) or names.setdefault(file, file_name(file))
        if fmt == "parquet":
            try:
                recs.append(from_row(loads(value)))
            except ValueError:
                recs.append(BadRecord(f"{file}: an unreadable row"))
        else:
            _, rec = parse_line(value, file)
            recs.append(rec)
    return recs


_NO_GROUP = object()      # before the first row: no group id (not even a null one) is this


def _check_batches(batches):
    """The `arrow` engine's task: Arrow batches of rows sorted by group (then file and position),
    each group's rows contiguous, possibly across batches; one verdict per group, as batches."""
    import pyarrow as pa
    schema = _verdict_schema()
    group, rows, out = _NO_GROUP, [], []
    for b in batches:
        cols = [b.column(name).to_pylist() for name in ("group", "file", "pos", "fmt", "value")]
        for g, *row in zip(*cols):
            if g != group:
                if rows:
                    out.append(check_group(group, _records_of(rows)))
                group, rows = g, []
            rows.append(row)
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)
            out = []
    if rows:
        yield pa.RecordBatch.from_pylist([check_group(group, _records_of(rows))], schema=schema)


def _verdict_schema():
    import pyarrow as pa
    types = {"string": pa.string(), "long": pa.int64()}
    return pa.schema([(name, types[t]) for name, t in (f.split() for f in VERDICT_DDL.split(", "))])


def _check_pdf(pdf):
    import pandas as pd
    group = pdf["group"].iloc[0]
    rows = list(zip(pdf["file"], pdf["pos"], pdf["fmt"], pdf["value"]))
    v = check_group(group, _records_of(rows))
    return pd.DataFrame([{k: v[k] for k in VERDICT_FIELDS}])


def read(spark, files: list[Path], skipped: list | None = None):
    """Every record as (group, file, pos, fmt, value); a Parquet file without the trace's columns is
    refused (TraceInputError naming the file and columns)."""
    from pyspark.sql import functions as F
    text = [str(p) for p in files if not _parquet(p)]
    parquet = [p for p in files if _parquet(p)]
    frames = []
    if text:
        df = spark.read.text(text)
        df = (df.withColumn("file", F.input_file_name()).withColumn("pos", F.monotonically_increasing_id())
              .withColumn("fmt", F.lit("json"))
              .where(F.length(F.trim("value")) > 0))
        frames.append(df.select(F.regexp_extract("value", GROUP_PATTERN, 1).alias("group"),
                                F.regexp_extract("value", r'"group"\s*:', 0).alias("has_group"),
                                "file", "pos", "fmt", "value"))
    for p in parquet:
        if _remote(p):
            continue        # read by Spark only: a missing column is Spark's error then
        try:
            missing = parquet_columns_missing(p)
        except TraceInputError as e:
            missing = [str(e)]
        if missing:
            problem = TraceInputError(f"{p}: Parquet file without the columns {', '.join(missing)} "
                                      f"(trace-format.md lists the fields every record has)")
            if skipped is None:
                raise problem
            skipped.append(str(problem))
    parquet = [p for p in parquet if _remote(p) or not any(s.startswith(f"{p}:") for s in (skipped or []))]
    if not text and not parquet:
        raise TraceInputError((skipped or ["no readable trace files"])[0])
    if parquet:
        df = spark.read.parquet(*[str(p) for p in parquet])
        cols = df.columns
        df = df.select(F.col("group").cast("string").alias("group"), F.lit("x").alias("has_group"),
                       F.input_file_name().alias("file"), F.monotonically_increasing_id().alias("pos"),
                       F.lit("parquet").alias("fmt"), F.to_json(F.struct(*[F.col(c) for c in cols])).alias("value"))
        frames.append(df)
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _remote(p) -> bool:
    return "://" in str(p)


def _parquet(p) -> bool:
    return str(p).endswith(".parquet") if _remote(p) else is_parquet(p)


def check(spark, files: list[Path], engine: str = "arrow", skipped: list | None = None):
    """The verdicts DataFrame, and the lines no group owns (count, a few examples).  A Parquet file
    without the format's columns is skipped and named in `skipped` (TraceInputError without it)."""
    from pyspark.sql import functions as F
    df = read(spark, files, skipped)
    # a JSON group id may hold escapes: unescape what the regex took
    df = df.withColumn("group", F.when(F.col("group").contains("\\"),
                                       F.get_json_object(F.concat(F.lit('{"g":"'), F.col("group"), F.lit('"}')), "$.g"))
                       .otherwise(F.col("group")))
    orphan = df.where(F.col("has_group") == "")
    owned = df.where(F.col("has_group") != "").select("group", "file", "pos", "fmt", "value")
    # one task per shuffle partition, whatever the number of input splits (one gzip file is one)
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    if engine == "arrow":
        verdicts = (owned.repartition(parts, "group").sortWithinPartitions("group", "file", "pos")
                    .mapInArrow(_check_batches, schema=VERDICT_DDL))
    elif engine == "pandas":
        verdicts = owned.groupBy("group").applyInPandas(_check_pdf, schema=VERDICT_DDL)
    elif engine == "rdd":
        rdd = (owned.rdd.map(lambda r: (r["group"], (r["file"], r["pos"], r["fmt"], r["value"])))
               .groupByKey(numPartitions=parts)
               .map(lambda kv: _verdict_tuple(check_group(kv[0], _records_of(list(kv[1]))))))
        verdicts = spark.createDataFrame(rdd, schema=VERDICT_DDL)
    else:
        raise ValueError(f"unknown engine {engine!r} ({', '.join(ENGINES)})")
    return verdicts, orphan


def _verdict_tuple(v: dict) -> tuple:
    return tuple(v[k] for k in VERDICT_FIELDS)


def orphan_lines(orphan, limit: int = 5) -> tuple[int, list[str]]:
    n = orphan.count()
    rows = orphan.select("file", "value").limit(limit).collect() if n else []
    return n, [f"{file_name(r['file'])}: the record {r['value'][:70]!r} has no string `group`" for r in rows]
